/* report_json.h - a compilation report as JSON, shared by `compile --emit
 * json` and the REST API's metrics. */
#ifndef HLOSCOPE_REPORT_JSON_H
#define HLOSCOPE_REPORT_JSON_H

#include <jansson.h>

#include "hloscope/hs_passes.h"

/* [{"name", "runs", "changed_runs", "seconds", "instructions_before",
 *   "instructions_after"}, ...] in pipeline order. */
json_t *report_passes_json(const hs_compile_report *r);

#endif
