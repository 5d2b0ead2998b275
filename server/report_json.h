/* report_json.h - what a compile reports, as JSON, shared by `compile
 * --emit json` and the REST API's summaries and metrics. */
#ifndef HLOSCOPE_REPORT_JSON_H
#define HLOSCOPE_REPORT_JSON_H

#include <jansson.h>

#include "hloscope/hs_buffers.h"
#include "hloscope/hs_device.h"
#include "hloscope/hs_passes.h"

/* [{"name", "runs", "changed_runs", "seconds", "instructions_before",
 *   "instructions_after"}, ...] in pipeline order. */
json_t *report_passes_json(const hs_compile_report *r);

/* A shape's text with its layout, whole however long (a tuple of a
 * thousand leaves is never cut mid-token). */
json_t *report_shape_json(const hs_shape *s);

/* XLA's compiled memory stats per memory space and the device's
 * capacity: {"capacity": {"device_bytes", "host_bytes"} (when spec),
 * "source": "buffer_assignment", "peak_device_bytes", "peak_host_bytes",
 * "stats": {"device": {argument_bytes, output_bytes, alias_bytes,
 * temp_bytes, peak_bytes}, "host": {...}}}. */
json_t *report_memory_json(const hs_memory_stats *ms, const hs_device_spec *spec);

#endif
