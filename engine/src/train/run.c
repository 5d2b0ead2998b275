/* run.c - runs training steps on the emulated device: binds the model's
 * input, target and initial parameters plus fresh optimizer state, runs the
 * step module once per step, and hands each step's updated parameters and
 * state to the next as its inputs. That hand-over is what the module's
 * input_output_alias promises: the buffers move, nothing is copied. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/train_internal.h"

static const hs_device_spec *device_for(const hs_train_step *ts,
                                        const hs_device_spec *spec)
{
    if (spec)
        return spec;
    const hs_device_spec *d =
        ts->model->device ? hs_device_find(ts->model->device) : NULL;
    return d ? d : hs_device_find(hs_device_default_name());
}

static hs_status need_data(const hs_train_step *ts, hs_error *err)
{
    const hs_model *m = ts->model;
    if (m->input && m->target)
        return HS_OK;
    return hs_error_set(err, HS_ERR_INVALID,
                        "train: the model was loaded without data "
                        "(shapes_only), so it cannot run");
}

/* The entry arguments: x, target, params, state (2 + n + n_state). */
typedef struct step_args {
    int n;
    hs_tensor **t;
    bool *owned; /* freed by us (state, and parameters after a step) */
} step_args;

static void args_free(step_args *a)
{
    for (int k = 0; a->t && k < a->n; k++)
        if (a->owned[k])
            hs_tensor_free(a->t[k]);
    free(a->t);
    free(a->owned);
    memset(a, 0, sizeof *a);
}

static hs_status args_init(const hs_train_step *ts, bool with_state,
                           step_args *a, hs_error *err)
{
    const hs_model *m = ts->model;
    int n = ts->n_params, ns = with_state ? ts->n_state : 0;
    a->n = 2 + n + ns;
    a->t = calloc((size_t)a->n, sizeof *a->t);
    a->owned = calloc((size_t)a->n, sizeof *a->owned);
    if (!a->t || !a->owned) {
        args_free(a);
        return hs_error_set(err, HS_ERR_NOMEM, "train: out of host memory");
    }
    /* The forward's entry arguments (x, then the trained values), with
     * the target after x. */
    hs_tensor **fa = calloc((size_t)n + 2, sizeof *fa);
    int got = fa ? hs_model_args(m, fa, n + 1) : -1;
    if (got != n + 1) {
        free(fa);
        args_free(a);
        return fa ? hs_error_set(err, HS_ERR_INVALID,
                                 "train: the model has %d entry arguments, "
                                 "the step expects %d",
                                 got, n + 1)
                  : hs_error_set(err, HS_ERR_NOMEM,
                                 "train: out of host memory");
    }
    a->t[0] = fa[0];
    a->t[1] = m->target;
    for (int i = 0; i < n; i++)
        a->t[2 + i] = fa[1 + i];
    free(fa);
    for (int k = 0; k < ns; k++) {
        /* Fresh state is zeros: exp_avg, exp_avg_sq and step = 0. */
        a->t[2 + n + k] = hs_tensor_new(&ts->state_shapes[k]);
        a->owned[2 + n + k] = true;
        if (!a->t[2 + n + k]) {
            args_free(a);
            return hs_error_set(err, HS_ERR_NOMEM,
                                "train: out of host memory");
        }
    }
    return HS_OK;
}

/* Replaces argument k by t (owned from now on). */
static void args_replace(step_args *a, int k, hs_tensor *t)
{
    if (a->owned[k])
        hs_tensor_free(a->t[k]);
    a->t[k] = t;
    a->owned[k] = true;
}

static void add_stats(hs_run_stats *total, const hs_run_stats *s)
{
    total->sim_seconds += s->sim_seconds;
    total->flops += s->flops;
    total->bytes_accessed += s->bytes_accessed;
    total->instructions += s->instructions;
    total->wall_seconds += s->wall_seconds;
    total->host_transfer_seconds += s->host_transfer_seconds;
    total->host_transfer_bytes += s->host_transfer_bytes;
    total->exposed_transfer_seconds += s->exposed_transfer_seconds;
    if (s->peak_device_bytes > total->peak_device_bytes)
        total->peak_device_bytes = s->peak_device_bytes;
    if (s->peak_host_bytes > total->peak_host_bytes)
        total->peak_host_bytes = s->peak_host_bytes;
}

hs_status hs_train_grads(hs_train_step *ts, const hs_device_spec *spec,
                         float *loss, hs_tensor **grads, hs_error *err)
{
    hs_error_clear(err);
    int n = ts->n_params;
    for (int i = 0; grads && i < n; i++)
        grads[i] = NULL;
    hs_status st = need_data(ts, err);
    hs_module *gm = st == HS_OK ? hs__train_grad_module(ts, err) : NULL;
    if (!gm)
        return st != HS_OK ? st : err ? err->status : HS_ERR_INVALID;
    step_args a = {0};
    if ((st = args_init(ts, false, &a, err)) != HS_OK)
        return st;
    hs_tensor **outs = NULL;
    int n_outs = 0;
    st = hs_device_run(gm, device_for(ts, spec), a.t, a.n, &outs, &n_outs,
                       NULL, err);
    args_free(&a);
    if (st != HS_OK)
        return st;
    if (n_outs != 1 + n) {
        hs_tensors_free(outs, n_outs);
        return hs_error_set(err, HS_ERR_RUNTIME,
                            "train: the gradient module returned %d values, "
                            "expected %d",
                            n_outs, 1 + n);
    }
    if (loss)
        *loss = hs_tensor_f32(outs[0])[0];
    for (int i = 0; i < n; i++) {
        if (grads) {
            grads[i] = outs[1 + i];
            outs[1 + i] = NULL;
        }
    }
    hs_tensors_free(outs, n_outs);
    return HS_OK;
}

void hs_train_result_free(hs_train_result *r)
{
    if (!r)
        return;
    free(r->losses);
    for (int i = 0; i < r->n_params; i++) {
        if (r->grads)
            hs_tensor_free(r->grads[i]);
        if (r->updated)
            hs_tensor_free(r->updated[i]);
    }
    for (int k = 0; r->state && k < r->n_state; k++)
        hs_tensor_free(r->state[k]);
    free(r->grads);
    free(r->updated);
    free(r->state);
    memset(r, 0, sizeof *r);
}

/* One step: runs mod with a's tensors and moves the updated values back
 * into a. */
static hs_status run_step(hs_train_step *ts, const hs_module *mod,
                          const hs_device_spec *spec, step_args *a,
                          const hs_train_run_options *o,
                          hs_memory_timeline *timeline, float *loss,
                          hs_run_stats *stats, hs_error *err)
{
    int n = ts->n_params, ns = ts->n_state;
    hs_tensor **outs = NULL;
    int n_outs = 0;
    hs_run_options ro = {.timeline = timeline,
                         .deadline_ns = o->deadline_ns,
                         .cancel = o->cancel};
    hs_status st = hs_device_run_ex(mod, spec, a->t, a->n, &outs, &n_outs,
                                    &ro, stats, err);
    if (st != HS_OK)
        return st;
    if (n_outs != 1 + n + ns) {
        hs_tensors_free(outs, n_outs);
        return hs_error_set(err, HS_ERR_RUNTIME,
                            "train: the step module returned %d values, "
                            "expected %d",
                            n_outs, 1 + n + ns);
    }
    *loss = hs_tensor_f32(outs[0])[0];
    for (int k = 0; k < n + ns; k++) {
        args_replace(a, 2 + k, outs[1 + k]);
        outs[1 + k] = NULL;
    }
    hs_tensors_free(outs, n_outs);
    return HS_OK;
}

hs_status hs_train_run(hs_train_step *ts, const hs_device_spec *spec,
                       const hs_train_run_options *opts, hs_train_result *out,
                       hs_error *err)
{
    hs_error_clear(err);
    memset(out, 0, sizeof *out);
    hs_train_run_options o = {0};
    if (opts)
        o = *opts;
    int64_t steps = o.steps > 0 ? o.steps : ts->config.steps;
    if (steps < 1)
        steps = 1;
    const hs_module *mod = o.module ? o.module : ts->module;
    spec = device_for(ts, spec);
    hs_status st = need_data(ts, err);
    if (st != HS_OK)
        return st;
    int n = ts->n_params, ns = ts->n_state;
    out->steps = steps;
    out->n_params = n;
    out->n_state = ns;
    out->losses = calloc((size_t)steps, sizeof *out->losses);
    out->updated = calloc((size_t)n + 1, sizeof *out->updated);
    out->state = calloc((size_t)ns + 1, sizeof *out->state);
    if (o.want_grads)
        out->grads = calloc((size_t)n + 1, sizeof *out->grads);
    if (!out->losses || !out->updated || !out->state ||
        (o.want_grads && !out->grads)) {
        hs_train_result_free(out);
        return hs_error_set(err, HS_ERR_NOMEM, "train: out of host memory");
    }
    if (o.want_grads &&
        (st = hs_train_grads(ts, spec, NULL, out->grads, err)) != HS_OK) {
        hs_train_result_free(out);
        return st;
    }
    step_args a = {0};
    if ((st = args_init(ts, true, &a, err)) != HS_OK) {
        hs_train_result_free(out);
        return st;
    }
    for (int64_t s = 0; s < steps; s++) {
        hs_run_stats rs;
        st = run_step(ts, mod, spec, &a, &o, s == 0 ? o.timeline : NULL,
                      &out->losses[s], &rs, err);
        if (st == HS_ERR_CANCELLED) {
            char why[sizeof err->message];
            snprintf(why, sizeof why, "%s", err->message);
            hs_error_set(err, HS_ERR_CANCELLED, "%s (after %lld of %lld "
                         "training steps)", why, (long long)s,
                         (long long)steps);
        }
        if (st != HS_OK)
            break;
        add_stats(&out->total, &rs);
        out->last = rs;
        if (o.on_step)
            o.on_step(s + 1, out->losses[s], &rs, o.user);
    }
    if (st == HS_OK) {
        /* Hand the final values over to the result. */
        for (int k = 0; k < n + ns; k++) {
            hs_tensor *t = a.owned[2 + k] ? a.t[2 + k]
                                          : hs_tensor_copy(a.t[2 + k]);
            a.owned[2 + k] = false;
            if (!t) {
                st = hs_error_set(err, HS_ERR_NOMEM,
                                  "train: out of host memory");
                break;
            }
            if (k < n)
                out->updated[k] = t;
            else
                out->state[k - n] = t;
        }
    }
    args_free(&a);
    if (st != HS_OK)
        hs_train_result_free(out);
    return st;
}
