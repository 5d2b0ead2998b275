/* api_steps.c - GET /v1/results/{id}/steps.json|svg: the tracing-bound step
 * timeline of a run result, from hs_steps_run (hs_steps.h) on the stored
 * request's model with the query's settings:
 *
 *   steps=N            1..API_STEPS_MAX (default 10)
 *   frontend=PRESET    hloscope | lazy-tensor | eager-python (the overhead
 *                      model, hs_frontend_presets), or
 *   op_overhead_us=X   a custom per-op host overhead in microseconds
 *   queue=D            0..API_STEPS_MAX_QUEUE steps in flight (default 2)
 *   mode=forward|train the forward pass (default) or the training step
 *
 * Every step re-traces the model for real, looks it up in a compile cache of
 * its own (step 1 misses and compiles, later steps hit), and step 1 runs on
 * the emulated device (later steps reuse its simulated time). Host times are
 * measured, so two computations differ a little; the reply is cached in the
 * artefact LRU under the id and the normalized settings (api_steps_key), so
 * one URL answers the same figures until it is evicted. The steps stop at
 * the request's deadline and at shutdown (hs_steps_options.deadline_ns and
 * .cancel: between steps, in step 1's compile and its device run), answered
 * 503 deadline_exceeded like any other expiry. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"

static int bad(hs_error *e, const char *param, const char *fmt, const char *value)
{
    hs_error_set(e, HS_ERR_INVALID, fmt, value);
    snprintf(e->path, sizeof e->path, "?%s", param);
    return -1;
}

static int int_param(const srv_request *rq, const char *name, int64_t lo, int64_t hi,
                     int64_t *out, hs_error *e)
{
    const char *v = srv_query(rq, name);
    if (!v)
        return 0;
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (!*v || *end || errno || x < lo || x > hi) {
        char fmt[96];
        snprintf(fmt, sizeof fmt, "%s must be an integer in [%lld, %lld], not '%%s'", name,
                 (long long)lo, (long long)hi);
        return bad(e, name, fmt, v);
    }
    *out = x;
    return 0;
}

int api_steps_params_parse(const srv_request *rq, api_steps_params *p, hs_error *e)
{
    memset(p, 0, sizeof *p);
    p->steps = API_STEPS_DEFAULT;
    int64_t queue = HS_STEPS_DEFAULT_QUEUE;
    if (int_param(rq, "steps", 1, API_STEPS_MAX, &p->steps, e) != 0 ||
        int_param(rq, "queue", 0, API_STEPS_MAX_QUEUE, &queue, e) != 0)
        return -1;
    p->queue = (int)queue;
    const char *fe = srv_query(rq, "frontend"), *us = srv_query(rq, "op_overhead_us");
    if (fe && us)
        return bad(e, "op_overhead_us",
                   "give frontend or op_overhead_us, not both (op_overhead_us=%s)", us);
    if (fe) {
        const hs_frontend_preset *f = hs_frontend_find(fe);
        if (!f)
            return bad(e, "frontend",
                       "unknown frontend '%s' (known: hloscope, lazy-tensor, eager-python)",
                       fe);
        p->frontend = f->name;
        p->op_overhead_us = f->op_overhead_us;
    } else if (us) {
        char *end;
        double x = strtod(us, &end);
        if (!*us || *end || !isfinite(x) || x < 0 || x > 1e6)
            return bad(e, "op_overhead_us",
                       "op_overhead_us must be a number of microseconds in [0, 1e6], not '%s'",
                       us);
        p->op_overhead_us = x;
        p->frontend = x == 0 ? "hloscope" : "custom";
    } else {
        p->frontend = "hloscope";
    }
    const char *mode = srv_query(rq, "mode");
    if (mode && strcmp(mode, "train") != 0 && strcmp(mode, "forward") != 0)
        return bad(e, "mode", "unknown mode '%s' (known: forward, train)", mode);
    p->train = mode && strcmp(mode, "train") == 0;
    return 0;
}

void api_steps_key(const api_steps_params *p, char *out, size_t size)
{
    snprintf(out, size, "steps=%lld&queue=%d&frontend=%s&op_overhead_us=%.17g&mode=%s",
             (long long)p->steps, p->queue, p->frontend, p->op_overhead_us,
             p->train ? "train" : "forward");
}

/* The run's model as JSON text with the residuals override folded in (the
 * steps re-trace it from text every step, as a lazy-tensor frontend
 * re-traces its Python); the other overrides go in options. */
int api_steps_run(const char *request_text, const char *summary_text,
                  const api_steps_params *p, int64_t deadline_ns,
                  atomic_bool *cancel, hs_steps_result *r, hs_error *e)
{
    json_t *sum = summary_text ? json_loads(summary_text, 0, NULL) : NULL;
    int rc = -1;
    api_request ar;
    bool have_ar = false;
    char *text = NULL;
    if (!sum || !json_object_get(sum, "run")) {
        hs_error_set(e, HS_ERR_INVALID,
                     "steps need a run result (POST /v1/run); this one was %s",
                     sum ? json_string_value(json_object_get(sum, "endpoint")) : "not finished");
        goto out;
    }
    if (p->train && !json_object_get(json_object_get(sum, "train"), "losses")) {
        json_t *te = json_object_get(json_object_get(sum, "train"), "error");
        hs_error_set(e, HS_ERR_INVALID,
                     "mode=train needs a run whose model has a train section that "
                     "trained%s%s",
                     te ? ": " : " (this model has none)",
                     te ? json_string_value(json_object_get(te, "message")) : "");
        snprintf(e->path, sizeof e->path, "?mode");
        goto out;
    }
    if (api_request_from_text(request_text, &ar, e) != 0)
        goto out;
    have_ar = true;
    json_t *body = json_object_get(ar.canonical, "body");
    json_t *q = json_object_get(ar.canonical, "query");
    if (json_object_get(body, "hlo")) {
        hs_error_set(e, HS_ERR_INVALID,
                     "the step timeline re-traces a model description every step; "
                     "an HLO module has nothing to trace");
        goto out;
    }
    json_t *copy = json_deep_copy(body);
    if (copy && json_object_get(q, "residuals"))
        json_object_set(copy, "residuals", json_object_get(q, "residuals"));
    text = copy ? json_dumps(copy, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(copy);
    if (!text) {
        hs_error_set(e, HS_ERR_NOMEM, "out of host memory");
        goto out;
    }
    if (deadline_ns > 0 && hs_now_ns() >= deadline_ns) {
        hs_error_set(e, HS_ERR_CANCELLED, "deadline exceeded before the steps");
        goto out;
    }
    hs_steps_options o;
    hs_steps_options_init(&o);
    o.steps = p->steps;
    o.queue_depth = p->queue;
    o.op_overhead_us = p->op_overhead_us;
    o.frontend = p->frontend;
    o.train = p->train;
    o.loop = json_string_value(json_object_get(q, "loop"));
    o.device = json_string_value(json_object_get(q, "device"));
    o.batch = json_integer_value(json_object_get(q, "batch"));
    o.deadline_ns = deadline_ns > 0 ? deadline_ns : 0;
    o.cancel = cancel; /* set at shutdown */
    hs_status st = hs_steps_run(text, strlen(text), &o, r, e);
    if (st == HS_ERR_CANCELLED && cancel && atomic_load(cancel)) {
        char how[sizeof e->message];
        snprintf(how, sizeof how, "%s", e->message);
        hs_error_set(e, HS_ERR_CANCELLED, "the server is shutting down (%s)", how);
    }
    if (st != HS_OK)
        goto out;
    rc = 0;
out:
    free(text);
    if (have_ar)
        api_request_free(&ar);
    json_decref(sum);
    return rc;
}

json_t *api_steps_json(const char *id, const hs_steps_result *r)
{
    char *text = hs_steps_json(r);
    json_t *j = text ? json_loads(text, 0, NULL) : NULL;
    free(text);
    if (j)
        json_object_set_new(j, "id", json_string(id));
    return j;
}

static const char *str(json_t *v)
{
    return json_is_string(v) ? json_string_value(v) : "";
}

static double num(json_t *o, const char *k)
{
    return json_number_value(json_object_get(o, k));
}

/* Back from api_steps_json's reply to a result that hs_steps_svg can draw,
 * so that a chart drawn after its JSON shows the same measured figures. */
int api_steps_from_json(const char *text, hs_steps_result *r)
{
    memset(r, 0, sizeof *r);
    json_t *j = json_loads(text, 0, NULL);
    json_t *steps = json_object_get(j, "steps"), *sum = json_object_get(j, "summary");
    size_t n = json_array_size(steps);
    if (!j || !n || !json_is_object(sum) ||
        !(r->steps = calloc(n, sizeof *r->steps))) {
        json_decref(j);
        return -1;
    }
    r->n = (int64_t)n;
    snprintf(r->model, sizeof r->model, "%s",
             str(json_object_get(j, "model")));
    snprintf(r->device, sizeof r->device, "%s",
             str(json_object_get(j, "device")));
    json_t *fe = json_object_get(j, "frontend");
    snprintf(r->frontend, sizeof r->frontend, "%s",
             str(json_object_get(fe, "name")));
    r->op_overhead_us = num(fe, "op_overhead_us");
    r->peak_flops = num(j, "peak_flops");
    r->queue_depth = (int)json_integer_value(json_object_get(j, "queue_depth"));
    const char *mode = json_string_value(json_object_get(j, "mode"));
    r->train = mode && strcmp(mode, "train") == 0;
    const char *loop = json_string_value(json_object_get(j, "loop"));
    r->loop = loop && strcmp(loop, "scan") == 0 ? HS_LOOP_SCAN : HS_LOOP_UNROLLED;
    json_t *cc = json_object_get(j, "compile_cache");
    r->uncached_compiles = json_integer_value(json_object_get(cc, "uncached"));
    r->cached_compiles = json_integer_value(json_object_get(cc, "cached"));
    hs_steps_summary *s = &r->summary;
    s->steps = json_integer_value(json_object_get(sum, "steps"));
    s->steady_steps = json_integer_value(json_object_get(sum, "steady_steps"));
    s->makespan_seconds = num(sum, "makespan_seconds");
    s->steady_wall_seconds = num(sum, "steady_wall_seconds");
    s->steady_device_seconds = num(sum, "steady_device_seconds");
    s->steady_idle_seconds = num(sum, "steady_idle_seconds");
    s->steady_host_seconds = num(sum, "steady_host_seconds");
    s->step_seconds = num(sum, "step_seconds");
    s->goodput = num(sum, "goodput");
    s->mfu = num(sum, "mfu");
    const char *verdict = json_string_value(json_object_get(sum, "verdict"));
    s->host_bound = verdict && strcmp(verdict, "host-bound") == 0;
    size_t k;
    json_t *v;
    json_array_foreach(steps, k, v)
    {
        hs_step_record *p = &r->steps[k];
        p->step = json_integer_value(json_object_get(v, "step"));
        p->traced_ops = json_integer_value(json_object_get(v, "traced_ops"));
        p->trace_seconds = num(v, "trace_seconds");
        p->overhead_seconds = num(v, "overhead_seconds");
        p->lookup_seconds = num(v, "lookup_seconds");
        p->compile_seconds = num(v, "compile_seconds");
        p->cache_hit = json_is_true(json_object_get(v, "cache_hit"));
        const char *fp = json_string_value(json_object_get(v, "fingerprint"));
        p->fingerprint = fp ? strtoull(fp, NULL, 16) : 0;
        p->device_seconds = num(v, "device_seconds");
        p->device_measured = json_is_true(json_object_get(v, "device_measured"));
        p->flops = num(v, "flops");
        p->slot.host_start = num(v, "host_start");
        p->slot.host_end = num(v, "host_end");
        p->slot.host_wait = num(v, "host_wait");
        p->slot.enqueue = p->slot.host_end + p->slot.host_wait;
        p->slot.device_start = num(v, "device_start");
        p->slot.device_end = num(v, "device_end");
        p->slot.device_idle = num(v, "device_idle");
        p->slot.wall_seconds = num(v, "wall_seconds");
        p->goodput = num(v, "goodput");
        p->mfu = num(v, "mfu");
    }
    json_decref(j);
    return 0;
}
