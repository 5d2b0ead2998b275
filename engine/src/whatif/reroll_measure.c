/* reroll_measure.c - the rerolled module measured against the module as
 * given (reroll_internal.h): compiled (the default pipeline, no cache,
 * timed), and run on the same drawn arguments when both can run on the
 * emulated device: the original's arguments are drawn as `run` draws an
 * HLO module's (hs_model_hlo_args); the rerolled module's are the kept
 * parameters' own, then each stacked parameter its layers' arguments
 * concatenated in layer order. Every output is compared bit for bit. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_model.h"
#include "whatif/reroll_internal.h"

void hs__reroll_note(hs_whatif_scan *sc, const char *fmt, ...)
{
    size_t n = strlen(sc->note);
    if (n > 0 && n + 2 < sizeof sc->note) {
        memcpy(sc->note + n, "; ", 3);
        n += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sc->note + n, sizeof sc->note - n, fmt, ap);
    va_end(ap);
}

hs_status hs__reroll_compile(const hs_module *m, const hs_whatif_options *o,
                             const char *device, hs_executable **exe,
                             double *seconds, hs_error *err)
{
    hs_compile_options co;
    hs__whatif_compile_options(o, device, NULL, &co);
    int64_t t0 = hs_now_ns();
    hs_status s = hs_compile(m, &co, NULL, NULL, exe, err);
    *seconds = (double)(hs_now_ns() - t0) / 1e9;
    return s;
}

static int64_t run_bytes(const hs_executable *exe)
{
    const hs_module *m = hs_executable_module(exe);
    int64_t bytes = 0;
    for (int k = 0; k < m->entry->n_params; k++)
        bytes = hs_sat_add(bytes,
                           hs_shape_total_bytes(&m->entry->params[k]->shape));
    const hs_buffer_assignment *ba = hs_executable_buffers(exe);
    for (int space = 0; ba && space <= HS_MEMSPACE_HOST;
         space += HS_MEMSPACE_HOST)
        bytes = hs_sat_add(bytes, hs_buffers_peak(ba, space).bytes);
    return bytes;
}

/* Whether both can run here; otherwise why, in note. */
static bool runnable(const hs_module *m, const hs_whatif_options *o,
                     hs_executable *before, hs_executable *after, char *note,
                     size_t size)
{
    hs_error e;
    if (!o->run_equivalence) {
        snprintf(note, size, "compile only was asked");
        return false;
    }
    for (int k = 0; k < m->entry->n_params; k++)
        if (hs_shape_is_tuple(&m->entry->params[k]->shape)) {
            snprintf(note, size, "entry parameter %s is a tuple",
                     m->entry->params[k]->name);
            return false;
        }
    if (hs_device_check(hs_executable_module(before), &e) != HS_OK ||
        hs_device_check(hs_executable_module(after), &e) != HS_OK) {
        snprintf(note, size, "%.200s", e.message);
        return false;
    }
    int64_t need = run_bytes(before) > run_bytes(after) ? run_bytes(before)
                                                         : run_bytes(after);
    if (o->max_run_bytes > 0 && (double)need > o->max_run_bytes) {
        snprintf(note, size,
                 "arguments and peak need %" PRId64
                 " bytes, more than the run limit of %.0f",
                 need, o->max_run_bytes);
        return false;
    }
    return true;
}

/* The rerolled module's arguments from the original's: the kept
 * parameters' own, then each stacked parameter as its layers' arguments
 * concatenated in layer order. Tensors of args are borrowed (owned[k]
 * false); stacked ones are new. */
static hs_tensor **rerolled_args(const hs_module *m, plan *const *plans,
                                 int n_plans, const hs__reroll_param *params,
                                 int n_params, hs_tensor **args, int *n_out,
                                 bool **owned_out)
{
    const hs_computation *c = m->entry;
    int n = 0, cap = c->n_params + n_params + 1;
    hs_tensor **r = calloc((size_t)cap, sizeof *r);
    bool *owned = calloc((size_t)cap, sizeof *owned);
    if (!r || !owned)
        goto fail;
    for (int k = 0; k < c->n_params; k++)
        if (!hs__reroll_stacked_away(plans, n_plans, c->params[k]))
            r[n++] = args[k];
    for (int q = 0; q < n_params; q++) {
        const plan *p = plans[params[q].plan];
        const slot *x = &p->slots[params[q].slot];
        hs_shape sh = plan_stacked_shape(p, &x->v0->shape);
        hs_tensor *t = hs_tensor_new(&sh);
        if (!t)
            goto fail;
        owned[n] = true;
        r[n++] = t;
        size_t bytes = (size_t)hs_shape_bytes(&x->v0->shape);
        for (int j = 0; j < p->L; j++)
            memcpy((char *)t->data + (size_t)j * bytes,
                   args[plan_slot_value(p, x, j)->index]->data, bytes);
    }
    *n_out = n;
    *owned_out = owned;
    return r;
fail:
    for (int k = 0; r && k < n; k++)
        if (owned[k])
            hs_tensor_free(r[k]);
    free(r);
    free(owned);
    return NULL;
}

static double max_abs_difference(const hs_tensor *a, const hs_tensor *b)
{
    if (a->shape.dtype != HS_F32)
        return -1;
    double worst = 0;
    const float *x = hs_tensor_f32(a), *y = hs_tensor_f32(b);
    for (int64_t k = 0; k < hs_tensor_elements(a); k++) {
        double d = (double)x[k] - (double)y[k];
        d = d < 0 ? -d : d;
        if (d > worst || d != d)
            worst = d;
    }
    return worst;
}

/* Runs both on the same drawn arguments and compares every output. */
static hs_status run_both(const hs_module *m, plan *const *plans, int n_plans,
                          const hs__reroll_param *params, int n_params,
                          const hs_whatif_options *o,
                          const hs_device_spec *spec, hs_executable *before,
                          hs_executable *after, hs_whatif_scan *sc,
                          hs_error *err)
{
    int n_args = 0, n_new = 0, n_a = 0, n_b = 0;
    bool *owned = NULL;
    hs_tensor **args = hs_model_hlo_args(m, &n_args, err);
    hs_tensor **new_args = NULL, **outs_a = NULL, **outs_b = NULL;
    hs_run_options ro = {.deadline_ns = o->deadline_ns, .cancel = o->cancel};
    hs_status s = args ? HS_OK : err->status;
    if (s == HS_OK &&
        !(new_args = rerolled_args(m, plans, n_plans, params, n_params,
                                     args, &n_new, &owned)))
        s = hs_error_set(err, HS_ERR_NOMEM, "reroll: out of host memory");
    if (s == HS_OK)
        s = hs_device_run_ex(hs_executable_module(before), spec, args,
                             n_args, &outs_a, &n_a, &ro, NULL, err);
    if (s == HS_OK)
        s = hs_device_run_ex(hs_executable_module(after), spec, new_args,
                             n_new, &outs_b, &n_b, &ro, NULL, err);
    if (s == HS_OK) {
        sc->equivalent = n_a == n_b;
        sc->max_abs_difference = 0;
        for (int k = 0; k < n_a && k < n_b; k++) {
            bool same = hs_shape_compatible(&outs_a[k]->shape,
                                            &outs_b[k]->shape) &&
                        memcmp(outs_a[k]->data, outs_b[k]->data,
                               (size_t)hs_shape_bytes(&outs_a[k]->shape)) ==
                            0;
            if (!same) {
                sc->equivalent = 0;
                double d = max_abs_difference(outs_a[k], outs_b[k]);
                if (d > sc->max_abs_difference || d < 0)
                    sc->max_abs_difference = d;
            }
        }
        hs__reroll_note(sc, "ran both on the same drawn arguments (%d outputs): %s",
                 n_a, sc->equivalent ? "bit-identical" : "they differ");
    } else if (s != HS_ERR_CANCELLED && s != HS_ERR_NOMEM) {
        /* A run the device refuses is a fact about the module, not a
         * failure of the what-if. */
        hs__reroll_note(sc, "the device refused the run: %.200s", err->message);
        s = HS_OK;
    }
    hs_tensors_free(outs_a, n_a);
    hs_tensors_free(outs_b, n_b);
    for (int k = 0; new_args && k < n_new; k++)
        if (owned[k])
            hs_tensor_free(new_args[k]);
    free(new_args);
    free(owned);
    for (int k = 0; args && k < n_args; k++)
        hs_tensor_free(args[k]);
    free(args);
    return s;
}


hs_status hs__reroll_equivalence(const hs_module *m, plan *const *plans,
                                 int n, const hs__reroll_param *params,
                                 int n_params, const hs_whatif_options *o,
                                 const char *device, hs_executable *before,
                                 hs_executable *after, hs_whatif_scan *sc,
                                 hs_error *err)
{
    char why[256];
    if (!runnable(m, o, before, after, why, sizeof why)) {
        hs__reroll_note(sc, "not run: %s", why);
        return HS_OK;
    }
    return run_both(m, plans, n, params, n_params, o, hs_device_find(device),
                    before, after, sc, err);
}
