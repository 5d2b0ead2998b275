/* report_json.c - what a compile reports, as JSON. */
#include <stdlib.h>

#include "report_json.h"

json_t *report_passes_json(const hs_compile_report *r)
{
    json_t *passes = json_array();
    for (int k = 0; passes && k < r->n_passes; k++)
        json_array_append_new(
            passes,
            json_pack("{s:s, s:i, s:i, s:f, s:I, s:I}", "name", r->passes[k].name,
                      "runs", r->passes[k].runs, "changed_runs",
                      r->passes[k].changed_runs, "seconds",
                      (double)r->passes[k].total_ns * 1e-9, "instructions_before",
                      (json_int_t)r->passes[k].instructions_before,
                      "instructions_after",
                      (json_int_t)r->passes[k].instructions_after));
    return passes;
}

json_t *report_shape_json(const hs_shape *s)
{
    char small[256];
    int n = hs_shape_print(s, true, small, sizeof small);
    if (n < (int)sizeof small)
        return json_string(small);
    /* hs_shape_print says how long the whole text is. */
    char *big = malloc((size_t)n + 1);
    if (!big)
        return NULL;
    hs_shape_print(s, true, big, (size_t)n + 1);
    json_t *j = json_string(big);
    free(big);
    return j;
}

static json_t *space_json(const hs_memory_space_stats *s)
{
    return json_pack("{s:I, s:I, s:I, s:I, s:I}", "argument_bytes",
                     (json_int_t)s->argument_bytes, "output_bytes",
                     (json_int_t)s->output_bytes, "alias_bytes",
                     (json_int_t)s->alias_bytes, "temp_bytes",
                     (json_int_t)s->temp_bytes, "peak_bytes",
                     (json_int_t)s->peak_bytes);
}

json_t *report_memory_json(const hs_memory_stats *ms, const hs_device_spec *spec)
{
    json_t *o = json_object();
    if (spec)
        json_object_set_new(o, "capacity",
                            json_pack("{s:f, s:f}", "device_bytes", spec->hbm_bytes,
                                      "host_bytes", spec->host_bytes));
    json_object_set_new(o, "source", json_string("buffer_assignment"));
    json_object_set_new(o, "peak_device_bytes", json_integer(ms->device.peak_bytes));
    json_object_set_new(o, "peak_host_bytes", json_integer(ms->host.peak_bytes));
    json_object_set_new(o, "stats", json_pack("{s:o, s:o}", "device",
                                              space_json(&ms->device), "host",
                                              space_json(&ms->host)));
    return o;
}
