/* json.c - a step timeline as JSON (schema in hs_steps.h). */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "hloscope/hs_steps.h"

static json_t *step_json(const hs_step_record *p)
{
    char fp[17];
    snprintf(fp, sizeof fp, "%016" PRIx64, p->fingerprint);
    const hs_step_slot *s = &p->slot;
    json_t *o = json_object();
    json_object_set_new(o, "step", json_integer(p->step));
    json_object_set_new(o, "traced_ops", json_integer(p->traced_ops));
    json_object_set_new(o, "trace_seconds", json_real(p->trace_seconds));
    json_object_set_new(o, "overhead_seconds", json_real(p->overhead_seconds));
    json_object_set_new(o, "lookup_seconds", json_real(p->lookup_seconds));
    json_object_set_new(o, "compile_seconds", json_real(p->compile_seconds));
    json_object_set_new(o, "cache_hit", json_boolean(p->cache_hit));
    json_object_set_new(o, "fingerprint", json_string(fp));
    json_object_set_new(o, "device_seconds", json_real(p->device_seconds));
    json_object_set_new(o, "device_measured", json_boolean(p->device_measured));
    json_object_set_new(o, "flops", json_real(p->flops));
    json_object_set_new(o, "host_start", json_real(s->host_start));
    json_object_set_new(o, "host_end", json_real(s->host_end));
    json_object_set_new(o, "host_wait", json_real(s->host_wait));
    json_object_set_new(o, "device_start", json_real(s->device_start));
    json_object_set_new(o, "device_end", json_real(s->device_end));
    json_object_set_new(o, "device_idle", json_real(s->device_idle));
    json_object_set_new(o, "wall_seconds", json_real(s->wall_seconds));
    json_object_set_new(o, "goodput", json_real(p->goodput));
    json_object_set_new(o, "mfu", json_real(p->mfu));
    return o;
}

char *hs_steps_json(const hs_steps_result *r)
{
    const hs_steps_summary *m = &r->summary;
    json_t *steps = json_array();
    for (int64_t k = 0; k < r->n; k++)
        json_array_append_new(steps, step_json(&r->steps[k]));
    json_t *sum = json_pack(
        "{s:I, s:I, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:s}", "steps",
        (json_int_t)m->steps, "steady_steps", (json_int_t)m->steady_steps,
        "makespan_seconds", m->makespan_seconds, "steady_wall_seconds",
        m->steady_wall_seconds, "steady_device_seconds", m->steady_device_seconds,
        "steady_idle_seconds", m->steady_idle_seconds, "steady_host_seconds",
        m->steady_host_seconds, "step_seconds", m->step_seconds, "goodput",
        m->goodput, "mfu", m->mfu, "verdict",
        m->host_bound ? "host-bound" : "device-bound");
    json_t *root = json_pack(
        "{s:s, s:s, s:f, s:s, s:s, s:{s:s, s:f, s:b}, s:i, s:{s:I, s:I}, s:o, "
        "s:o}",
        "model", r->model, "device", r->device, "peak_flops", r->peak_flops,
        "mode", r->train ? "train" : "forward", "loop",
        r->loop ? "scan" : "unrolled", "frontend", "name", r->frontend,
        "op_overhead_us", r->op_overhead_us, "model", 1, "queue_depth",
        r->queue_depth, "compile_cache", "uncached",
        (json_int_t)r->uncached_compiles, "cached", (json_int_t)r->cached_compiles,
        "summary", sum, "steps", steps);
    if (!root)
        return NULL;
    char *text = json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(9));
    json_decref(root);
    return text;
}
