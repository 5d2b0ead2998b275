/* scan_layers.c - scan_layers(layers, x): identical layers stacked along a
 * new leading axis and scanned with x as the carry, as torch_xla's
 * scan_layers does. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_scan.h"

static const char *layer_label(const hs_layer *l, int k, char *buf,
                               size_t size)
{
    if (l->name && l->name[0])
        snprintf(buf, size, "%s", l->name);
    else
        snprintf(buf, size, "layer %d", k);
    return buf;
}

static hs_status mismatch(hs_error *err, const hs_layer *l, const char *fmt,
                          ...) __attribute__((format(printf, 3, 4)));

static hs_status mismatch(hs_error *err, const hs_layer *l, const char *fmt,
                          ...)
{
    char msg[sizeof err->message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    hs_error_set(err, HS_ERR_INVALID, "scan_layers: %s", msg);
    if (err && l->path)
        snprintf(err->path, sizeof err->path, "%s", l->path);
    return HS_ERR_INVALID;
}

hs_status hs_scan_layers_check(const hs_layer *layers, int n_layers,
                               hs_error *err)
{
    hs_error_clear(err);
    if (n_layers <= 0)
        return HS_OK;
    const hs_layer *l0 = &layers[0];
    char a[160], b[160], sa[128], sb[128];
    layer_label(l0, 0, b, sizeof b);
    for (int k = 1; k < n_layers; k++) {
        const hs_layer *l = &layers[k];
        layer_label(l, k, a, sizeof a);
        int n = l->n_params < l0->n_params ? l->n_params : l0->n_params;
        for (int j = 0; j < n; j++) {
            const hs_layer_param *p = &l->params[j], *p0 = &l0->params[j];
            if (strcmp(p->name, p0->name) != 0)
                return mismatch(err, l,
                                "%s has parameter '%s' where %s has '%s' "
                                "(parameter %d)",
                                a, p->name, b, p0->name, j);
            if (!hs_shape_compatible(&p->shape, &p0->shape)) {
                hs_shape_print(&p->shape, false, sa, sizeof sa);
                hs_shape_print(&p0->shape, false, sb, sizeof sb);
                return mismatch(err, l,
                                "%s has parameter '%s' of shape %s but %s "
                                "has %s",
                                a, p->name, sa, b, sb);
            }
        }
        if (l->n_params != l0->n_params) {
            const hs_layer *more = l->n_params > n ? l : l0;
            return mismatch(err, l,
                            "%s has %d parameters but %s has %d ('%s' is "
                            "not in both)",
                            a, l->n_params, b, l0->n_params,
                            more->params[n].name);
        }
    }
    return HS_OK;
}

/* ---- stacking --------------------------------------------------------------- */

/* [L, ...] from the layers' own values: reshape each to [1, ...] and
 * concatenate. */
static hs_instruction *stack_in_graph(hs_builder *b, const hs_layer *layers,
                                      int n_layers, int j)
{
    const hs_layer_param *p0 = &layers[0].params[j];
    if (p0->shape.rank + 1 > HS_MAX_RANK) {
        hs_builder_fail(b, HS_ERR_SHAPE,
                        "scan_layers: parameter '%s' has rank %d; stacking "
                        "it needs rank %d > %d",
                        p0->name, p0->shape.rank, p0->shape.rank + 1,
                        HS_MAX_RANK);
        return NULL;
    }
    int64_t dims[HS_MAX_RANK];
    dims[0] = 1;
    memcpy(dims + 1, p0->shape.dims, sizeof dims[0] * (size_t)p0->shape.rank);
    hs_instruction **parts = calloc((size_t)n_layers, sizeof *parts);
    if (!parts) {
        hs_builder_fail(b, HS_ERR_NOMEM, "scan_layers: out of host memory");
        return NULL;
    }
    char label[160];
    for (int k = 0; k < n_layers && hs_builder_ok(b); k++) {
        hs_instruction *v = layers[k].params[j].value;
        if (!v)
            hs_builder_fail(b, HS_ERR_INVALID,
                            "scan_layers: %s: parameter '%s' has no value "
                            "(and no stacked values were given)",
                            layer_label(&layers[k], k, label, sizeof label),
                            p0->name);
        parts[k] = hs_b_reshape(b, v, p0->shape.rank + 1, dims);
    }
    hs_instruction *s = hs_builder_ok(b)
                            ? hs_b_concatenate(b, parts, n_layers, 0)
                            : NULL;
    free(parts);
    return s;
}

static bool check_stacked(hs_builder *b, const hs_layer_param *p0,
                          const hs_instruction *s, int n_layers)
{
    if (!s)
        return false; /* an earlier failure, already recorded */
    const hs_shape *sh = &s->shape;
    bool ok = !hs_shape_is_tuple(sh) && sh->rank == p0->shape.rank + 1 &&
              sh->dims[0] == n_layers && sh->dtype == p0->shape.dtype;
    for (int d = 0; ok && d < p0->shape.rank; d++)
        ok = sh->dims[d + 1] == p0->shape.dims[d];
    if (!ok) {
        char a[128], e[128];
        hs_shape_print(sh, false, a, sizeof a);
        hs_shape_print(&p0->shape, false, e, sizeof e);
        hs_builder_fail(b, HS_ERR_SHAPE,
                        "scan_layers: stacked parameter '%s' is %s; %d "
                        "layers of %s need [%d, ...] of that",
                        p0->name, a, n_layers, e, n_layers);
    }
    return ok;
}

/* ---- the scan ------------------------------------------------------------------ */

typedef struct layers_call {
    hs_layer_fn fn;
    void *user;
} layers_call;

static void layer_step(hs_builder *body, hs_scan_step *s, void *user)
{
    layers_call *c = user;
    hs_instruction *x = s->carry[0];
    hs_instruction *y = c->fn(body, x, s->x, s->n_xs, c->user);
    if (y && !hs_shape_compatible(&y->shape, &x->shape)) {
        char a[128], e[128];
        hs_shape_print(&x->shape, false, a, sizeof a);
        hs_shape_print(&y->shape, false, e, sizeof e);
        hs_builder_fail(body, HS_ERR_SHAPE,
                        "scan_layers: a layer maps %s to %s; scanned layers "
                        "must keep the shape of their input",
                        a, e);
        y = NULL;
    }
    s->new_carry[0] = y;
}

hs_instruction *hs_scan_layers(hs_builder *b, const hs_layer *layers,
                               int n_layers, hs_layer_fn fn, void *user,
                               hs_instruction *x,
                               const hs_scan_layers_options *opts)
{
    if (!hs_builder_ok(b) || !x)
        return NULL;
    if (n_layers <= 0)
        return x;
    if (!fn || !layers) {
        hs_builder_fail(b, HS_ERR_INVALID,
                        "scan_layers: no layers or no layer function");
        return NULL;
    }
    hs_error e;
    if (hs_scan_layers_check(layers, n_layers, &e) != HS_OK) {
        hs_builder_fail(b, e.status, "%s", e.message);
        return NULL;
    }
    hs_scan_layers_options o = {0};
    if (opts)
        o = *opts;
    const char *scope = o.scope ? o.scope : "layers/scan";
    int np = layers[0].n_params;
    hs_instruction **xs = calloc((size_t)(np ? np : 1), sizeof *xs);
    if (!xs) {
        hs_builder_fail(b, HS_ERR_NOMEM, "scan_layers: out of host memory");
        return NULL;
    }
    hs_builder_push_scope(b, scope);
    for (int j = 0; j < np && hs_builder_ok(b); j++) {
        xs[j] = o.stacked ? o.stacked[j]
                          : stack_in_graph(b, layers, n_layers, j);
        check_stacked(b, &layers[0].params[j], xs[j], n_layers);
    }
    hs_builder_pop_scope(b);

    hs_instruction *out = NULL;
    if (hs_builder_ok(b)) {
        layers_call call = {fn, user};
        hs_scan_options so = {.scope = scope, .body_scope = o.body_scope,
                              .length = n_layers};
        hs_scan(b, layer_step, &call, &x, 1, xs, np, &so, &out, NULL, NULL);
    }
    free(xs);
    return hs_builder_ok(b) ? out : NULL;
}
