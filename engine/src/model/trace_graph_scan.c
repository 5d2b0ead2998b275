/* trace_graph_scan.c - a graph op "scan": torch_xla's scan(fn, init, xs)
 * with fn the op's body graph.
 *
 * The body's params are the model's parameters, requested once where the
 * op stands (their state_dict names, in the enclosing layer) and shared by
 * every step, as fn's weights are in PyTorch. The model's "loop" says how
 * the steps are traced:
 *
 * - "scan": one `while` through hs_scan, the body traced once. The params
 *   ride in the loop state as carries the body returns unchanged (hs_scan
 *   takes no closed-over values), which the reverse scan treats as
 *   invariants and sums their gradients over the steps.
 * - "unrolled": the body traced once per step on slice i of every xs, the
 *   ys reshaped to [1, ...] and concatenated along axis 0.
 *
 * Both forms compute the same instructions on the same operands; what
 * differs is data movement (slice vs dynamic-slice, concatenate vs
 * dynamic-update-slice), so their outputs agree bit for bit. Shape errors
 * name the JSON path of what is wrong (/layers/0/ops/3/xs/1,
 * /layers/0/ops/3/body/new_carry/0). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_scan.h"
#include "model/trace_blocks.h"

/* One scan op being traced. */
typedef struct scan_op {
    hs_trace *t;
    const hs_graph_op *g;
    const hs_graph_scan *sc;
    hs_instruction *const *init; /* n_carry values of the enclosing graph */
    hs_instruction *const *xs;   /* n_xs */
    hs_instruction **params;     /* the body's params, in the outer graph */
    const char **results;        /* new_carry names, then ys names */
    int64_t n;                   /* steps */
    hs_dtype y_types[HS_SCAN_MAX_NAMES]; /* each y's type in the body */
    char scope[320];             /* the loop's op_name, under the layer */
} scan_op;

static const char *shape_text(const hs_shape *s, char *buf, size_t size)
{
    hs_shape_print(s, false, buf, size);
    return buf;
}

/* Fails on trace t at the op's path extended by "/<key>/<index>". */
static bool fail_at(scan_op *s, hs_trace *t, const char *key, int index,
                    hs_status st, const char *msg)
{
    char path[400];
    if (index >= 0)
        snprintf(path, sizeof path, "%s/%s/%d", s->g->path, key, index);
    else
        snprintf(path, sizeof path, "%s/%s", s->g->path, key);
    hs__trace_fail(t, path, st, "%s", msg);
    return false;
}

/* Every xs has a leading axis of one length N >= 1 (the step count). */
static bool check_xs(scan_op *s)
{
    char msg[400], t0[128];
    for (int j = 0; j < s->sc->n_xs; j++) {
        const hs_shape *x = &s->xs[j]->shape;
        if (hs_shape_is_tuple(x) || x->rank < 1) {
            snprintf(msg, sizeof msg,
                     "xs %d (\"%s\") is %s; xs need a leading axis to scan "
                     "over",
                     j, s->g->args[s->sc->n_carry + j],
                     shape_text(x, t0, sizeof t0));
            return fail_at(s, s->t, "xs", j, HS_ERR_SHAPE, msg);
        }
        if (j == 0)
            s->n = x->dims[0];
        else if (x->dims[0] != s->n) {
            snprintf(msg, sizeof msg,
                     "leading length %lld, expected %lld (the leading "
                     "length of xs 0, \"%s\")",
                     (long long)x->dims[0], (long long)s->n,
                     s->g->args[s->sc->n_carry]);
            return fail_at(s, s->t, "xs", j, HS_ERR_SHAPE, msg);
        }
    }
    if (s->n < 1 || s->n > INT32_MAX) {
        snprintf(msg, sizeof msg,
                 "%lld steps; a scan needs 1 to 2^31-1 steps (its counter "
                 "is s32)",
                 (long long)s->n);
        return fail_at(s, s->t, "xs", 0, HS_ERR_SHAPE, msg);
    }
    return true;
}

/* A step's carries keep their init's shape and type; its ys can be
 * stacked. Errors on t (the body's trace in a while). */
static bool check_step(scan_op *s, hs_trace *t, hs_instruction *const *res)
{
    char msg[400], t0[128], t1[128];
    for (int k = 0; k < s->sc->n_carry; k++)
        if (!hs_shape_compatible(&res[k]->shape, &s->init[k]->shape)) {
            snprintf(msg, sizeof msg,
                     "carry %d enters the step as %s (init \"%s\") and "
                     "leaves it as %s (\"%s\"); a carry keeps its shape "
                     "and element type",
                     k, shape_text(&s->init[k]->shape, t0, sizeof t0),
                     s->g->args[k], shape_text(&res[k]->shape, t1, sizeof t1),
                     s->sc->new_carry[k]);
            return fail_at(s, t, "body/new_carry", k, HS_ERR_SHAPE, msg);
        }
    for (int i = 0; i < s->sc->n_ys; i++) {
        const hs_shape *y = &res[s->sc->n_carry + i]->shape;
        if (hs_shape_is_tuple(y) || y->rank + 1 > HS_MAX_RANK) {
            snprintf(msg, sizeof msg,
                     "y %d (\"%s\") is %s; stacking it adds an axis to at "
                     "most %d",
                     i, s->sc->ys[i], shape_text(y, t0, sizeof t0),
                     HS_MAX_RANK);
            return fail_at(s, t, "body/y", i, HS_ERR_SHAPE, msg);
        }
    }
    return true;
}

/* Traces the body once on t: carries and slices in, new carries and ys
 * (res, n_carry + n_ys) out. */
static bool trace_step(scan_op *s, hs_trace *t, hs_instruction *const *carry,
                       hs_instruction *const *x, hs_instruction *const *params,
                       hs_instruction **res)
{
    const hs_graph_scan *sc = s->sc;
    hs_instruction **in = malloc(((size_t)sc->n_carry + (size_t)sc->n_xs + 1) *
                                 sizeof *in);
    if (!in) {
        hs__trace_fail(t, s->g->path, HS_ERR_NOMEM, "out of host memory");
        return false;
    }
    memcpy(in, carry, (size_t)sc->n_carry * sizeof *in);
    memcpy(in + sc->n_carry, x, (size_t)sc->n_xs * sizeof *in);
    hs_graph_io io = {.inputs = in, .params = params,
                      .n_results = sc->n_carry + sc->n_ys,
                      .results = s->results, .values = res,
                      .scope = s->scope};
    bool ok = hs__trace_graph_io(t, sc->body, &io, false) &&
              check_step(s, t, res);
    free(in);
    return ok;
}

/* The element type a y is stacked in: hs_scan's accumulators are f32, s32
 * or pred; a bf16 or f16 y is stacked as f32 (exactly) and rounded back
 * after the loop. */
static bool is_narrow(hs_dtype t)
{
    return t == HS_BF16 || t == HS_F16;
}

/* ---- "loop": "scan" ------------------------------------------------------ */

static void scan_step(hs_builder *body, hs_scan_step *st, void *user)
{
    scan_op *s = user;
    const hs_graph_scan *sc = s->sc;
    int nc = sc->n_carry;
    hs_trace bt;
    hs__trace_init(&bt, body, s->t->params);
    hs__trace_settings(&bt, s->t);
    hs_instruction **res = calloc((size_t)(nc + sc->n_ys + 1), sizeof *res);
    if (!res) {
        hs_builder_fail(body, HS_ERR_NOMEM, "out of host memory");
        return;
    }
    /* The params enter as the carries after the scan's own. */
    if (trace_step(s, &bt, st->carry, st->x, st->carry + nc, res)) {
        for (int k = 0; k < nc; k++)
            st->new_carry[k] = res[k];
        for (int j = nc; j < st->n_carry; j++)
            st->new_carry[j] = st->carry[j];
        for (int i = 0; i < sc->n_ys; i++) {
            hs_instruction *y = res[nc + i];
            s->y_types[i] = y->shape.dtype;
            st->ys[i] = is_narrow(y->shape.dtype)
                            ? hs_b_convert(body, y, HS_F32)
                            : y;
        }
        st->n_ys = sc->n_ys;
    }
    if (bt.fail_path[0] && !s->t->fail_path[0])
        snprintf(s->t->fail_path, sizeof s->t->fail_path, "%s",
                 bt.fail_path);
    free(res);
}

static bool trace_as_while(scan_op *s, hs_instruction **out)
{
    const hs_graph_scan *sc = s->sc;
    int nc = sc->n_carry, np = sc->body->n_gparams;
    hs_builder *b = s->t->b;
    hs_instruction **init = calloc((size_t)(2 * (nc + np) + 1), sizeof *init);
    hs_instruction *ys[HS_SCAN_MAX_YS];
    if (!init) {
        hs__trace_fail(s->t, s->g->path, HS_ERR_NOMEM, "out of host memory");
        return false;
    }
    hs_instruction **carry_out = init + nc + np;
    memcpy(init, s->init, (size_t)nc * sizeof *init);
    memcpy(init + nc, s->params, (size_t)np * sizeof *init);
    hs_scan_options o = {.scope = s->scope};
    int n_ys = 0;
    hs_instruction *w = hs_scan(b, scan_step, s, init, nc + np, s->xs,
                                sc->n_xs, &o, carry_out, ys, &n_ys);
    bool ok = w != NULL && n_ys == sc->n_ys;
    if (ok) {
        /* a narrow y was stacked as f32 (scan_step): round it back */
        memcpy(out, carry_out, (size_t)nc * sizeof *out);
        hs_builder_push_scope(b, s->scope);
        for (int i = 0; i < sc->n_ys; i++)
            out[nc + i] = is_narrow(s->y_types[i])
                              ? hs_b_convert(b, ys[i], s->y_types[i])
                              : ys[i];
        hs_builder_pop_scope(b);
    }
    free(init);
    return ok;
}

/* ---- "loop": "unrolled" -------------------------------------------------- */

/* Slice i of x along axis 0, the axis dropped. */
static hs_instruction *slice_step(hs_builder *b, hs_instruction *x, int64_t i)
{
    int64_t start[HS_MAX_RANK] = {0}, limit[HS_MAX_RANK];
    const hs_shape *s = &x->shape;
    memcpy(limit, s->dims, sizeof limit[0] * (size_t)s->rank);
    start[0] = i;
    limit[0] = i + 1;
    return hs_b_reshape(b, hs_b_slice(b, x, start, limit, NULL), s->rank - 1,
                        s->dims + 1);
}

/* y as [1, ...y]: one row of its stack. */
static hs_instruction *as_row(hs_builder *b, hs_instruction *y)
{
    int64_t dims[HS_MAX_RANK];
    dims[0] = 1;
    memcpy(dims + 1, y->shape.dims, sizeof dims[0] * (size_t)y->shape.rank);
    return hs_b_reshape(b, y, y->shape.rank + 1, dims);
}

static bool trace_unrolled(scan_op *s, hs_instruction **out)
{
    const hs_graph_scan *sc = s->sc;
    hs_trace *t = s->t;
    hs_builder *b = t->b;
    int nc = sc->n_carry, nx = sc->n_xs, ny = sc->n_ys;
    if (s->n > t->max_unrolled_steps) {
        char msg[300];
        snprintf(msg, sizeof msg,
                 "the scan has %lld steps; unrolled (\"loop\": "
                 "\"unrolled\") it may have at most %lld (limit "
                 "max_layers); use \"loop\": \"scan\"",
                 (long long)s->n, (long long)t->max_unrolled_steps);
        return fail_at(s, t, "xs", 0, HS_ERR_LIMIT, msg);
    }
    size_t per = (size_t)(nc + nx + nc + ny + 1);
    hs_instruction **v = calloc(per + (size_t)ny * (size_t)s->n, sizeof *v);
    if (!v) {
        hs__trace_fail(t, s->g->path, HS_ERR_NOMEM, "out of host memory");
        return false;
    }
    hs_instruction **carry = v, **x = v + nc, **res = v + nc + nx;
    hs_instruction **rows = v + per; /* rows[k * n + i]: y k of step i */
    memcpy(carry, s->init, (size_t)nc * sizeof *carry);
    bool ok = true;
    for (int64_t i = 0; ok && i < s->n; i++) {
        hs_builder_push_scope(b, s->scope);
        for (int j = 0; j < nx; j++)
            x[j] = slice_step(b, s->xs[j], i);
        hs_builder_pop_scope(b);
        ok = hs_builder_ok(b) && trace_step(s, t, carry, x, s->params, res);
        if (!ok)
            break;
        memcpy(carry, res, (size_t)nc * sizeof *carry);
        hs_builder_push_scope(b, s->scope);
        for (int k = 0; k < ny; k++)
            rows[(int64_t)k * s->n + i] = as_row(b, res[nc + k]);
        hs_builder_pop_scope(b);
    }
    if (ok) {
        memcpy(out, carry, (size_t)nc * sizeof *out);
        hs_builder_push_scope(b, s->scope);
        for (int k = 0; k < ny; k++)
            out[nc + k] = s->n == 1 ? rows[(int64_t)k * s->n]
                                    : hs_b_concatenate(
                                          b, rows + (int64_t)k * s->n,
                                          (int)s->n, 0);
        hs_builder_pop_scope(b);
        ok = hs_builder_ok(b);
    }
    free(v);
    return ok;
}

/* ---- the op ---------------------------------------------------------------- */

/* Body param i: the enclosing graph's param of its name (of its shape),
 * or a parameter of the model requested here. */
static hs_instruction *body_param(scan_op *s, int i,
                                  hs_instruction *const *shared)
{
    const hs_graph_param *p = &s->sc->body->gparams[i];
    if (!shared[i])
        return hs__trace_graph_param(s->t, p);
    hs_shape want = p->shape;
    if (want.dtype == HS_F32)
        want.dtype = s->t->dtype;
    if (hs_shape_compatible(&shared[i]->shape, &want))
        return shared[i];
    char msg[400], t0[128], t1[128], key[300];
    snprintf(msg, sizeof msg,
             "the enclosing graph's param \"%s\" is %s; the body's param of "
             "that name is that parameter, and is declared %s",
             p->name, shape_text(&shared[i]->shape, t0, sizeof t0),
             shape_text(&want, t1, sizeof t1));
    snprintf(key, sizeof key, "body/params/%s", p->name);
    fail_at(s, s->t, key, -1, HS_ERR_SHAPE, msg);
    return NULL;
}

bool hs__trace_graph_scan(hs_trace *t, const hs_graph_op *g,
                          hs_instruction *const *args,
                          hs_instruction *const *shared, bool graph_scope,
                          hs_instruction **out)
{
    const hs_graph_scan *sc = g->scan;
    for (int i = 0; i < g->n_args; i++)
        if (!args[i])
            return false;
    scan_op s = {.t = t, .g = g, .sc = sc, .init = args,
                 .xs = args + sc->n_carry};
    /* The loop's op_name: the op's module path and name ("rnn/scan"), or
     * "graph/<name>" in a graph that is a layer by itself. */
    const char *mod = g->scope ? g->scope : graph_scope ? "graph" : "";
    snprintf(s.scope, sizeof s.scope, "%s%s%s", mod, mod[0] ? "/" : "",
             g->name);
    if (!check_xs(&s))
        return false;
    int np = sc->body->n_gparams;
    s.params = calloc((size_t)np + 1, sizeof *s.params);
    s.results = calloc((size_t)(sc->n_carry + sc->n_ys) + 1,
                       sizeof *s.results);
    bool ok = s.params && s.results;
    if (!ok)
        hs__trace_fail(t, g->path, HS_ERR_NOMEM, "out of host memory");
    for (int i = 0; ok && i < np; i++)
        ok = (s.params[i] = body_param(&s, i, shared)) != NULL;
    if (ok) {
        memcpy(s.results, sc->new_carry,
               (size_t)sc->n_carry * sizeof *s.results);
        memcpy(s.results + sc->n_carry, sc->ys,
               (size_t)sc->n_ys * sizeof *s.results);
        ok = t->loop == HS_LOOP_SCAN ? trace_as_while(&s, out)
                                     : trace_unrolled(&s, out);
    }
    free(s.params);
    free(s.results);
    return ok;
}
