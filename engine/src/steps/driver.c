/* driver.c - hs_steps_run: every step re-traces the model as a lazy-tensor
 * frontend does, looks the graph up in the compile cache (a miss compiles
 * it), executes on the emulated device (or reuses step 1's simulated
 * duration), then hs_steps_reschedule lays the steps on two lanes. The
 * caller's deadline and cancel flag are checked between steps and passed
 * to the compile and the device run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_device.h"
#include "hloscope/hs_model.h"
#include "hloscope/hs_passes.h"
#include "hloscope/hs_steps.h"
#include "hloscope/hs_train.h"

void hs_steps_options_init(hs_steps_options *o)
{
    memset(o, 0, sizeof *o);
    o->steps = 10;
    o->queue_depth = HS_STEPS_DEFAULT_QUEUE;
}

void hs_steps_result_free(hs_steps_result *r)
{
    if (!r)
        return;
    free(r->steps);
    memset(r, 0, sizeof *r);
}

hs_status hs_steps_reschedule(hs_steps_result *r, hs_error *err)
{
    hs_step_timing *t = malloc(sizeof *t * (size_t)(r->n + 1));
    hs_step_slot *s = malloc(sizeof *s * (size_t)(r->n + 1));
    hs_status st = HS_OK;
    if (!t || !s) {
        st = hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
        goto out;
    }
    for (int64_t k = 0; k < r->n; k++) {
        const hs_step_record *p = &r->steps[k];
        t[k].host_seconds = p->trace_seconds + p->overhead_seconds +
                            p->lookup_seconds + p->compile_seconds;
        t[k].device_seconds = p->device_seconds;
    }
    st = hs_steps_schedule(t, r->n, r->queue_depth, s, err);
    if (st != HS_OK)
        goto out;
    for (int64_t k = 0; k < r->n; k++) {
        hs_step_record *p = &r->steps[k];
        p->slot = s[k];
        p->goodput = s[k].wall_seconds > 0 ? p->device_seconds / s[k].wall_seconds : 0;
        p->mfu = s[k].wall_seconds > 0 && r->peak_flops > 0
                     ? p->flops / (s[k].wall_seconds * r->peak_flops)
                     : 0;
    }
    double flops = r->n ? r->steps[r->n - 1].flops : 0;
    hs_steps_summarize(t, s, r->n, flops, r->peak_flops, &r->summary);
out:
    free(t);
    free(s);
    return st;
}

static double seconds_since(int64_t t0)
{
    return (double)(hs_now_ns() - t0) * 1e-9;
}

static bool cancelled(const hs_steps_options *o)
{
    return o->cancel && atomic_load(o->cancel);
}

static bool past_deadline(const hs_steps_options *o)
{
    return o->deadline_ns > 0 && hs_now_ns() >= o->deadline_ns;
}

/* HS_ERR_CANCELLED saying how far the run got (done steps completed);
 * replaces the compile's or the interpreter's own message. */
static hs_status stopped(const hs_steps_options *o, int64_t done, hs_error *err)
{
    return hs_error_set(err, HS_ERR_CANCELLED, "%s after %lld of %lld steps",
                        cancelled(o) ? "steps cancelled" : "deadline exceeded",
                        (long long)done, (long long)o->steps);
}

/* What stays loaded over the steps: the weights and input (on the device,
 * in a real run), the cache and the metrics. */
typedef struct setup {
    hs_model *data;
    hs_train_step *data_step;
    hs_tensor **args;
    int n_args;
    const hs_device_spec *spec;
    hs_compile_cache *cache;
    hs_metrics *metrics;
    bool own_cache, own_metrics;
} setup;

static void setup_free(setup *su)
{
    free(su->args);
    hs_train_step_free(su->data_step);
    hs_model_free(su->data);
    if (su->own_cache)
        hs_compile_cache_free(su->cache);
    if (su->own_metrics)
        hs_metrics_free(su->metrics);
}

static hs_status setup_load(const char *json, size_t len, const hs_steps_options *o,
                            setup *su, hs_error *err)
{
    hs_model_options mo = {.loop = o->loop, .device = o->device,
                           .residuals = o->residuals, .batch = o->batch};
    su->data = hs_model_load(json, len, &mo, err);
    if (!su->data)
        return err ? err->status : HS_ERR_INVALID;
    const char *dev = o->device ? o->device : su->data->device;
    su->spec = hs_device_find(dev);
    if (!su->spec)
        return hs_error_set(err, HS_ERR_INVALID, "unknown device '%s'", dev);
    if (o->train) {
        su->data_step = hs_train_step_build(su->data, NULL, err);
        if (!su->data_step)
            return err ? err->status : HS_ERR_INVALID;
    } else {
        su->args = malloc(sizeof *su->args * (size_t)(su->data->n_args + 1));
        if (!su->args)
            return hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
        su->n_args = hs_model_args(su->data, su->args, su->data->n_args + 1);
    }
    su->cache = o->cache;
    if (!su->cache) {
        su->cache = hs_compile_cache_new(4);
        su->own_cache = true;
    }
    su->metrics = o->metrics;
    if (!su->metrics) {
        su->metrics = hs_metrics_new();
        su->own_metrics = true;
    }
    if (!su->cache || !su->metrics)
        return hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
    return HS_OK;
}

/* Runs the compiled step on the emulator: the forward pass on the model's
 * input and weights, or one training step from the initial weights. */
static hs_status execute(const setup *su, const hs_steps_options *o,
                         const hs_executable *exe, hs_run_stats *st, hs_error *err)
{
    memset(st, 0, sizeof *st);
    if (o->train) {
        hs_train_run_options ro = {.steps = 1,
                                   .module = hs_executable_module(exe),
                                   .deadline_ns = o->deadline_ns,
                                   .cancel = o->cancel};
        hs_train_result res = {0};
        hs_status s = hs_train_run(su->data_step, su->spec, &ro, &res, err);
        if (s == HS_OK)
            *st = res.last;
        hs_train_result_free(&res);
        return s;
    }
    hs_tensor **outs = NULL;
    int n_outs = 0;
    hs_run_options ro = {.deadline_ns = o->deadline_ns, .cancel = o->cancel};
    hs_status s = hs_device_run_ex(hs_executable_module(exe), su->spec, su->args,
                                   su->n_args, &outs, &n_outs, &ro, st, err);
    hs_tensors_free(outs, n_outs);
    return s;
}

/* One step's host work, measured: trace (and autodiff), then the cache. */
static hs_status trace_and_compile(const char *json, size_t len,
                                   const hs_steps_options *o, setup *su,
                                   hs_step_record *rec, hs_executable **exe,
                                   hs_error *err)
{
    hs_model_options mo = {.loop = o->loop, .device = o->device,
                           .residuals = o->residuals, .batch = o->batch,
                           .shapes_only = true};
    int64_t t0 = hs_now_ns();
    hs_model *m = hs_model_load(json, len, &mo, err);
    hs_train_step *ts = NULL;
    if (m && o->train)
        ts = hs_train_step_build(m, NULL, err);
    rec->trace_seconds = seconds_since(t0);
    hs_status st = HS_OK;
    if (!m || (o->train && !ts)) {
        st = err ? err->status : HS_ERR_INVALID;
        goto out;
    }
    hs_metrics_record_time(su->metrics, HS_METRIC_TRACE_TIME, hs_now_ns() - t0);
    const hs_module *traced = o->train ? ts->module : m->module;
    rec->traced_ops = hs_module_instruction_count(traced);
    rec->overhead_seconds = (double)rec->traced_ops * o->op_overhead_us * 1e-6;

    hs_compile_options co;
    hs_compile_options_init(&co);
    co.device = su->spec->name;
    co.pipeline = o->pipeline;
    co.cancel = o->cancel;
    if (cancelled(o) || past_deadline(o)) {
        st = HS_ERR_CANCELLED; /* the caller says how far the run got */
        goto out;
    }
    if (o->deadline_ns > 0) /* rounded up: the compile stops no earlier */
        co.timeout_ms = (o->deadline_ns - hs_now_ns() + 999999) / 1000000;
    int64_t hits = hs_metrics_counter(su->metrics, HS_METRIC_CACHED_COMPILE);
    int64_t t1 = hs_now_ns();
    st = hs_compile(traced, &co, su->cache, su->metrics, exe, err);
    double took = seconds_since(t1);
    if (st != HS_OK)
        goto out;
    rec->cache_hit = hs_metrics_counter(su->metrics, HS_METRIC_CACHED_COMPILE) > hits;
    /* A hit costs the fingerprint and the probe; a miss's time is the
     * compile (its fingerprint and probe are a negligible part of it). */
    if (rec->cache_hit)
        rec->lookup_seconds = took;
    else
        rec->compile_seconds = took;
    rec->fingerprint = hs_executable_fingerprint(*exe);
out:
    hs_train_step_free(ts);
    hs_model_free(m);
    return st;
}

hs_status hs_steps_run(const char *json, size_t len, const hs_steps_options *o,
                       hs_steps_result *out, hs_error *err)
{
    hs_error_clear(err);
    memset(out, 0, sizeof *out);
    hs_steps_options defaults;
    if (!o) {
        hs_steps_options_init(&defaults);
        o = &defaults;
    }
    if (o->steps < 1 || o->steps > HS_STEPS_MAX_STEPS)
        return hs_error_set(err, HS_ERR_INVALID, "steps: %lld steps (1..%d)",
                            (long long)o->steps, HS_STEPS_MAX_STEPS);
    if (o->queue_depth < 0 || !(o->op_overhead_us >= 0) || o->op_overhead_us > 1e6)
        return hs_error_set(err, HS_ERR_INVALID,
                            "steps: queue depth %d and op overhead %g us "
                            "(need >= 0, overhead at most 1e6 us)",
                            o->queue_depth, o->op_overhead_us);
    if (cancelled(o) || past_deadline(o))
        return stopped(o, 0, err);
    setup su = {0};
    hs_status st = setup_load(json, len, o, &su, err);
    if (st != HS_OK)
        goto fail;
    out->steps = calloc((size_t)o->steps, sizeof *out->steps);
    if (!out->steps) {
        st = hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
        goto fail;
    }
    out->n = o->steps;
    snprintf(out->model, sizeof out->model, "%s", su.data->name);
    snprintf(out->device, sizeof out->device, "%s", su.spec->name);
    snprintf(out->frontend, sizeof out->frontend, "%s",
             o->frontend ? o->frontend : o->op_overhead_us == 0 ? "hloscope" : "custom");
    out->peak_flops = su.spec->peak_flops;
    out->op_overhead_us = o->op_overhead_us;
    out->queue_depth = o->queue_depth;
    out->train = o->train;
    out->loop = (int)su.data->loop;
    int64_t unc0 = hs_metrics_counter(su.metrics, HS_METRIC_UNCACHED_COMPILE);
    int64_t cac0 = hs_metrics_counter(su.metrics, HS_METRIC_CACHED_COMPILE);

    for (int64_t k = 0; k < o->steps; k++) {
        hs_step_record *rec = &out->steps[k];
        rec->step = k + 1;
        if (cancelled(o) || past_deadline(o)) {
            st = stopped(o, k, err);
            goto fail;
        }
        hs_executable *exe = NULL;
        st = trace_and_compile(json, len, o, &su, rec, &exe, err);
        if (st == HS_OK && (k == 0 || o->execute == HS_STEPS_EXECUTE_ALL)) {
            hs_run_stats rs;
            st = execute(&su, o, exe, &rs, err);
            rec->device_seconds = rs.sim_seconds;
            rec->flops = rs.flops;
            rec->device_measured = true;
        } else if (st == HS_OK) {
            rec->device_seconds = out->steps[0].device_seconds;
            rec->flops = out->steps[0].flops;
        }
        hs_executable_release(exe);
        if (st == HS_ERR_CANCELLED)
            st = stopped(o, k, err);
        if (st != HS_OK)
            goto fail;
    }
    out->uncached_compiles =
        hs_metrics_counter(su.metrics, HS_METRIC_UNCACHED_COMPILE) - unc0;
    out->cached_compiles = hs_metrics_counter(su.metrics, HS_METRIC_CACHED_COMPILE) - cac0;
    st = hs_steps_reschedule(out, err);
    if (st != HS_OK)
        goto fail;
    setup_free(&su);
    return HS_OK;
fail:
    setup_free(&su);
    hs_steps_result_free(out);
    return st;
}
