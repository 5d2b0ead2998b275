/* report_json.c - a compilation report as JSON. */
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
