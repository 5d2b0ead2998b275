/* whatif_json.c - a what-if as JSON (docs/API.md, "What-ifs"), the one
 * form the CLI's --emit json and GET /v1/results/{id}/whatif.json print:
 *   {"module", "device", "analysis_seconds",
 *    "repeats": [{"count", "block_instructions", "first", "last", "path"}],
 *    "scan": {...}, "offload": {...}, "sharding": {...}}
 * Every field of hs_whatif.h's structs is here under its own name; a
 * section not analysed is {"analysed": false, "reason": "..."}. */
#include <jansson.h>

#include "whatif/whatif_internal.h"

static json_t *not_analysed(const char *reason)
{
    return json_pack("{s:b, s:s}", "analysed", 0, "reason", reason);
}

static json_t *repeats_json(const hs_whatif *w)
{
    json_t *a = json_array();
    for (int k = 0; a && k < w->n_repeats; k++) {
        const hs_whatif_repeat *r = &w->repeats[k];
        json_array_append_new(
            a, json_pack("{s:I, s:I, s:s, s:s, s:s}", "count",
                         (json_int_t)r->count, "block_instructions",
                         (json_int_t)r->block_instructions, "first", r->first,
                         "last", r->last, "path", r->path));
    }
    return a;
}

static json_t *runs_json(const hs_whatif_scan *s)
{
    json_t *a = json_array();
    for (int k = 0; a && k < s->n_runs; k++) {
        const hs_whatif_scan_run *r = &s->runs[k];
        json_array_append_new(
            a, json_pack("{s:s, s:I, s:b, s:I, s:s}", "path", r->path,
                         "layers", (json_int_t)r->layers, "rerolled",
                         r->rerolled, "layers_rerolled",
                         (json_int_t)r->layers_rerolled, "note",
                         r->note ? r->note : ""));
    }
    return a;
}

static json_t *scan_json(const hs_whatif_scan *s)
{
    if (!s->analysed) {
        json_t *j = not_analysed(s->reason);
        if (j && s->n_runs > 0)
            json_object_set_new(j, "runs", runs_json(s));
        return j;
    }
    json_t *j = json_pack(
        "{s:b, s:s, s:i, s:I, s:I, s:f, s:f, s:o, s:f, s:s}", "analysed", 1,
        "path", s->path ? s->path : "", "loops", s->loops,
        "instructions_before",
        (json_int_t)s->instructions_before, "instructions_after",
        (json_int_t)s->instructions_after, "compile_seconds_before",
        s->compile_seconds_before, "compile_seconds_after",
        s->compile_seconds_after, "equivalent",
        s->equivalent < 0 ? json_null() : json_boolean(s->equivalent == 1),
        "max_abs_difference", s->max_abs_difference, "note", s->note);
    if (j)
        json_object_set_new(j, "runs", runs_json(s));
    return j;
}

static json_t *not_candidates_json(const hs_whatif_offload *o)
{
    json_t *a = json_array();
    for (int k = 0; a && k < o->n_not_candidates; k++) {
        const hs_whatif_not_candidate *x = &o->not_candidates[k];
        json_array_append_new(
            a, json_pack("{s:s, s:I, s:f, s:s}", "kind", x->kind, "count",
                         (json_int_t)x->count, "bytes", x->bytes, "reason",
                         x->reason));
    }
    return a;
}

static json_t *offload_json(const hs_whatif_offload *o)
{
    if (!o->analysed) {
        json_t *j = not_analysed(o->reason);
        if (j && o->n_not_candidates > 0)
            json_object_set_new(j, "not_candidates", not_candidates_json(o));
        return j;
    }
    json_t *chosen = json_array();
    for (int k = 0; chosen && k < o->n_chosen; k++)
        json_array_append_new(chosen, json_string(o->chosen[k]));
    /* An analysed offload's reason says what the figures cannot: that the
     * step fits already, or what still needs the device when no choice
     * fits. */
    return json_pack("{s:b, s:f, s:f, s:f, s:f, s:f, s:b, s:o, s:s, s:o}",
                     "analysed", 1, "budget", o->budget, "peak_before",
                     o->peak_before, "peak_after", o->peak_after,
                     "bytes_moved", o->bytes_moved, "exposed_seconds",
                     o->exposed_seconds, "fits", o->fits, "chosen", chosen,
                     "reason", o->reason, "not_candidates",
                     not_candidates_json(o));
}

static json_t *sharding_json(const hs_whatif_sharding *s)
{
    if (!s->analysed)
        return not_analysed(s->reason);
    return json_pack("{s:b, s:i, s:I, s:f, s:f, s:s}", "analysed", 1,
                     "devices", s->devices, "annotated",
                     (json_int_t)s->annotated, "global_peak", s->global_peak,
                     "per_device_peak", s->per_device_peak, "note", s->note);
}

json_t *hs_whatif_json(const hs_whatif *w)
{
    return json_pack("{s:s, s:s, s:f, s:o, s:o, s:o, s:o}", "module",
                     w->module && w->module->name ? w->module->name : "",
                     "device", w->device ? w->device : "",
                     "analysis_seconds", w->analysis_seconds, "repeats",
                     repeats_json(w), "scan", scan_json(&w->scan), "offload",
                     offload_json(&w->offload), "sharding",
                     sharding_json(&w->sharding));
}
