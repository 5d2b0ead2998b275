/* trace_scan.c - a repeat traced as one scan ("loop": "scan").
 *
 * The copies of a repeated block are layers first .. first+L-1. Their
 * parameters are learnt by tracing the block once into a throwaway module
 * (a probe), and a second time when the first copy changes the shape of x
 * (then the copies differ and scan_layers says how). Each per-layer name
 * gets one stacked entry parameter "layers.<first>-<last>.<local>" of shape
 * [L, ...]; the per-layer parameters stay in the model's list with their
 * state_dict names, drawn from the same seeds, and record the slice that
 * holds them (host-side stacking, docs/SCAN.md). The body is traced once
 * under the layer name "layers.*" with a parameter source that hands out
 * the scan's per-step slices. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_scan.h"
#include "model/params.h"
#include "model/trace_blocks.h"

/* ---- the probe -------------------------------------------------------------- */

/* Records every parameter a layer asks for (as an entry parameter of the
 * probe module, which is then thrown away). */
typedef struct probe_source {
    hs_param_source base;
    hs_param_list list;
    hs_arena *arena;
    int64_t next;
} probe_source;

static hs_instruction *probe_get(hs_param_source *self, hs_builder *b,
                                 const char *name, const hs_shape *shape,
                                 hs_init_kind kind, float bound,
                                 const float *values)
{
    probe_source *s = (probe_source *)self;
    if (!hs__param_list_add(&s->list, s->arena, name, shape, s->next, kind,
                            bound, values)) {
        hs_builder_fail(b, HS_ERR_NOMEM, "out of host memory");
        return NULL;
    }
    return hs_b_parameter(b, s->next++, shape, name);
}

/* One copy's parameters (names relative to the layer) and output shape. */
typedef struct probe {
    int n;
    hs_layer_param *params; /* in the scan's arena */
    hs_init_kind *kinds;
    float *bounds;
    const float **values; /* HS_INIT_VALUES: the description's own */
    hs_shape out;
} probe;

/* Traces layer `name` of blk on an input of shape in into a scratch module.
 * On failure the error goes to t (with the path the probe found). */
static bool probe_layer(hs_trace *t, hs_arena *a, const hs_block *blk,
                        const hs_layer_name *name, const hs_shape *in,
                        probe *out)
{
    hs_module *m = hs_module_new("probe");
    hs_builder *b = m ? hs_builder_new(m, "main", true) : NULL;
    if (!b) {
        hs_module_free(m);
        hs__trace_fail(t, blk->path, HS_ERR_NOMEM, "out of host memory");
        return false;
    }
    probe_source src = {.base = {probe_get}, .arena = a, .next = 1};
    hs_trace pt;
    hs__trace_init(&pt, b, &src.base);
    hs__trace_settings(&pt, t);
    hs_instruction *y =
        hs__trace_layer(&pt, blk, name, hs_b_parameter(b, 0, in, "x"));
    bool ok = y && hs_builder_ok(b);
    if (!ok) {
        const hs_error *e = hs_builder_error(b);
        hs__trace_fail(t, pt.fail_path[0] ? pt.fail_path : blk->path,
                       e->status ? e->status : HS_ERR_INVALID, "%s",
                       e->message[0] ? e->message : "the layer produced no "
                                                   "output");
    } else {
        char prefix[HS_LAYER_NAME_MAX + 32];
        size_t plen = hs__layer_name_format(name, prefix, sizeof prefix);
        plen += plen ? 1 : 0; /* the '.' after a non-root layer name */
        out->n = src.list.n;
        out->out = y->shape;
        out->params = hs_arena_alloc(a, sizeof *out->params *
                                            (size_t)(out->n + 1));
        out->kinds = hs_arena_alloc(a, sizeof *out->kinds *
                                           (size_t)(out->n + 1));
        out->bounds = hs_arena_alloc(a, sizeof *out->bounds *
                                            (size_t)(out->n + 1));
        out->values = hs_arena_alloc(a, sizeof *out->values *
                                            (size_t)(out->n + 1));
        ok = out->params && out->kinds && out->bounds && out->values;
        for (int j = 0; ok && j < out->n; j++) {
            const hs_model_param *p = &src.list.v[j];
            out->params[j].name = p->name + plen; /* lives in a */
            out->params[j].shape = p->shape;
            out->kinds[j] = p->init_kind;
            out->bounds[j] = p->bound;
            out->values[j] = p->values;
        }
        if (!ok)
            hs__trace_fail(t, blk->path, HS_ERR_NOMEM, "out of host memory");
    }
    hs__param_list_free(&src.list);
    hs_builder_free(b);
    hs_module_free(m);
    return ok;
}

/* ---- the body's parameter source ---------------------------------------------- */

/* The j-th parameter the body asks for is the scan's j-th slice; the names
 * are checked against the probe so that a mismatch cannot go unnoticed. */
typedef struct slice_source {
    hs_param_source base;
    const probe *pr;
    hs_instruction *const *slices;
    int n, next;
    size_t prefix_len; /* strlen("layers.*.") */
} slice_source;

static hs_instruction *slice_get(hs_param_source *self, hs_builder *b,
                                 const char *name, const hs_shape *shape,
                                 hs_init_kind kind, float bound,
                                 const float *values)
{
    (void)kind;
    (void)bound;
    (void)values;
    slice_source *s = (slice_source *)self;
    int j = s->next++;
    const char *local = strlen(name) > s->prefix_len ? name + s->prefix_len
                                                     : name;
    if (j >= s->n || strcmp(local, s->pr->params[j].name) != 0 ||
        !hs_shape_compatible(shape, &s->pr->params[j].shape)) {
        hs_builder_fail(b, HS_ERR_INVALID,
                        "scan body asked for parameter %d '%s', but the "
                        "layer had %s",
                        j, local,
                        j < s->n ? s->pr->params[j].name : "fewer");
        return NULL;
    }
    return s->slices[j];
}

typedef struct body_ctx {
    hs_trace *outer;
    const hs_block *blk;
    const probe *pr;
    const char *body_name; /* "layers.*": the one layer the body traces */
} body_ctx;

static hs_instruction *trace_body(hs_builder *body, hs_instruction *x,
                                  hs_instruction *const *params, int n,
                                  void *user)
{
    body_ctx *c = user;
    slice_source src = {.base = {slice_get}, .pr = c->pr, .slices = params,
                        .n = n,
                        .prefix_len = strlen(c->body_name) +
                                      (c->body_name[0] ? 1 : 0)};
    hs_trace bt;
    hs__trace_init(&bt, body, &src.base);
    hs__trace_settings(&bt, c->outer);
    hs_instruction *y = hs__trace_layer_named(&bt, c->blk, c->body_name, x);
    if (!y && bt.fail_path[0] && !c->outer->fail_path[0])
        snprintf(c->outer->fail_path, sizeof c->outer->fail_path, "%s",
                 bt.fail_path);
    if (y && src.next != n)
        hs_builder_fail(body, HS_ERR_INVALID,
                        "scan body used %d of the layer's %d parameters",
                        src.next, n);
    return y;
}

/* ---- stacked entry parameters ----------------------------------------------- */

/* Creates one [L, ...] entry parameter per probed name and records the
 * per-layer parameters (state_dict order: layer by layer) with their
 * slices. Returns the stacked instructions, or NULL. */
static hs_instruction **stack_params(hs_trace *t, hs_entry_params *ep,
                                     const hs_block *blk, const probe *pr,
                                     int64_t first,
                                     const hs_layer_name *first_name,
                                     int64_t count, const char *scope)
{
    const char *base = first_name->base, *dot = base[0] ? "." : "";
    int64_t i0 = first_name->index;
    int n = pr->n;
    hs_instruction **stacked = calloc((size_t)(n ? n : 1), sizeof *stacked);
    int *stack_index = calloc((size_t)(n ? n : 1), sizeof *stack_index);
    if (!stacked || !stack_index) {
        free(stacked);
        free(stack_index);
        hs__trace_fail(t, blk->path, HS_ERR_NOMEM, "out of host memory");
        return NULL;
    }
    /* Sizes first, so that errors read like the unrolled ones (no scope). */
    hs_shape *shapes = calloc((size_t)(n ? n : 1), sizeof *shapes);
    if (!shapes)
        hs__trace_fail(t, blk->path, HS_ERR_NOMEM, "out of host memory");
    for (int j = 0; shapes && j < n && hs_builder_ok(t->b); j++) {
        const hs_shape *ps = &pr->params[j].shape;
        int64_t dims[HS_MAX_RANK];
        if (ps->rank + 1 > HS_MAX_RANK) {
            hs__trace_fail(t, blk->path, HS_ERR_SHAPE,
                           "cannot scan: parameter '%s' has rank %d and "
                           "stacking adds one",
                           pr->params[j].name, ps->rank);
            break;
        }
        dims[0] = count;
        memcpy(dims + 1, ps->dims, sizeof dims[0] * (size_t)ps->rank);
        if (hs__trace_fits(t, blk->path, ps->rank + 1, dims))
            shapes[j] = hs_shape_make(ps->dtype, ps->rank + 1, dims);
    }
    hs_builder_push_scope(t->b, scope);
    for (int j = 0; j < n && hs_builder_ok(t->b); j++) {
        char name[320 + HS_LAYER_NAME_MAX];
        snprintf(name, sizeof name, "%s%s%lld-%lld.%s", base, dot,
                 (long long)i0, (long long)(i0 + count - 1),
                 pr->params[j].name);
        stacked[j] = hs_b_parameter(t->b, ep->next, &shapes[j], name);
        stack_index[j] = hs__entry_params_add_stack(
            ep, name, pr->params[j].name, ep->next, first, &shapes[j]);
        ep->next++;
        if (stack_index[j] < 0)
            hs__trace_fail(t, blk->path, HS_ERR_NOMEM, "out of host memory");
    }
    free(shapes);
    hs_builder_pop_scope(t->b);
    for (int64_t r = 0; r < count && hs_builder_ok(t->b); r++)
        for (int j = 0; j < n; j++) {
            char name[320 + HS_LAYER_NAME_MAX];
            snprintf(name, sizeof name, "%s%s%lld.%s", base, dot,
                     (long long)(i0 + r), pr->params[j].name);
            hs_param_list *l = &ep->list;
            if (!hs__param_list_add(l, ep->arena, name, &pr->params[j].shape,
                                    stacked[j]->index, pr->kinds[j],
                                    pr->bounds[j], pr->values[j])) {
                hs__trace_fail(t, blk->path, HS_ERR_NOMEM,
                               "out of host memory");
                break;
            }
            l->v[l->n - 1].slice = r;
            l->v[l->n - 1].stack = stack_index[j];
        }
    free(stack_index);
    if (!hs_builder_ok(t->b)) {
        free(stacked);
        return NULL;
    }
    return stacked;
}

/* ---- the scan ------------------------------------------------------------------ */

hs_instruction *hs__trace_scanned(hs_trace *t, hs_entry_params *ep,
                                  const hs_block *blk, int64_t first,
                                  const hs_layer_name *first_name,
                                  int64_t count, hs_instruction *x)
{
    if (!x || !hs_builder_ok(t->b))
        return NULL;
    hs_arena *a = hs_arena_new(0);
    hs_layer *layers = calloc((size_t)count, sizeof *layers);
    if (!a || !layers) {
        hs_arena_free(a);
        free(layers);
        return hs__trace_fail(t, blk->path, HS_ERR_NOMEM,
                              "out of host memory");
    }
    /* Copies see the same input shape, and so ask for the same parameters,
     * as long as the block keeps the shape of x; when it does not, copy 1
     * sees another shape and is probed too, so that scan_layers can name
     * what differs. */
    probe p0 = {0}, p1 = {0};
    hs_instruction *out = NULL;
    /* Copies are named base.<index + r> ("layers.3"); the body is the one
     * layer "base.*" and the loop's scope "base/scan". */
    const char *base = first_name->base;
    const char *dot = base[0] ? "." : "", *slash = base[0] ? "/" : "";
    hs_layer_name second = {base, first_name->index + 1};
    char *body_name = hs_arena_printf(a, "%s%s*", base, dot);
    char *scope = hs_arena_printf(a, "%s%sscan", base, slash);
    bool ok = body_name && scope;
    if (!ok)
        hs__trace_fail(t, blk->path, HS_ERR_NOMEM, "out of host memory");
    ok = ok && probe_layer(t, a, blk, first_name, &x->shape, &p0);
    bool same = ok && hs_shape_compatible(&p0.out, &x->shape);
    if (ok && !same)
        ok = probe_layer(t, a, blk, &second, &p0.out, &p1);
    for (int64_t r = 0; ok && r < count; r++) {
        const probe *pr = r == 0 || same ? &p0 : &p1;
        layers[r].name = hs_arena_printf(a, "%s%s%lld", base, dot,
                                         (long long)(first_name->index + r));
        layers[r].path = blk->path;
        layers[r].n_params = pr->n;
        layers[r].params = pr->params;
    }
    hs_error e;
    if (ok && hs_scan_layers_check(layers, (int)count, &e) != HS_OK) {
        hs__trace_fail(t, e.path, e.status, "%s", e.message);
        ok = false;
    }
    hs_instruction **stacked =
        ok ? stack_params(t, ep, blk, &p0, first, first_name, count, scope)
           : NULL;
    if (stacked) {
        body_ctx ctx = {.outer = t, .blk = blk, .pr = &p0,
                        .body_name = body_name};
        hs_scan_layers_options o = {.scope = scope, .stacked = stacked};
        out = hs_scan_layers(t->b, layers, (int)count, trace_body, &ctx, x,
                             &o);
        if (!out && !t->fail_path[0])
            snprintf(t->fail_path, sizeof t->fail_path, "%s", blk->path);
    }
    free(stacked);
    free(layers);
    hs_arena_free(a);
    return out;
}
