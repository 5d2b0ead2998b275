/* vjp_scatter.c - the VJP rules of scatter(x, i, u), by its update
 * computation, after JAX's rules (jax/_src/lax/slicing.py). G(a) below
 * is the gather that reads, from a (shaped like x), the window each update
 * element was scattered to: scatter's dimension numbers as gather's, with
 * window-sized slices. A window that does not fit in x is skipped by the
 * scatter (XLA's semantics), so its update gets no cotangent: `applied`
 * is the mask of update elements whose window fits.
 *
 *     add        x + S(u) is linear: dx = g; du = applied ? G(g) : 0
 *                (_scatter_add_transpose_rule)
 *     overwrite  (p0, p1) -> p1. Which update wins where several write the
 *                same element is the kernel's choice, so the rule asks the
 *                kernel, as JAX's _scatter_jvp does: scatter the ids 1..N
 *                of the updates the same way into zeros; an update element
 *                gets G(g) where G(ids) reads its own id back, else zero
 *                (it was overwritten, or skipped: a skipped window's id is
 *                nowhere), and x gets g where the id array is 0 (nothing
 *                was written there)
 *     keep       (p0, p1) -> p0: dx = g, u gets nothing
 *     multiply   dx = scatter-multiply(g, i, u) (each element of x is
 *                multiplied by the updates scattered to it);
 *                du = applied ? G(g * x) : 0, which holds only when no two
 *                updates meet, so, as in JAX's _scatter_mul_transpose_rule,
 *                it needs unique_indices=true and is refused otherwise
 *
 *     maximum,   JAX's _scatter_extremal_jvp transposed: the cotangent
 *     minimum    of an element shared evenly between the operand and the
 *                updates equal to the result (extremal_rule)
 *
 * Any other update computation, and variadic scatters, have no rule: the
 * gradient fails naming the instruction and the computation. The indices
 * are integers and get no cotangent. */
#include <stdio.h>
#include <string.h>

#include "autodiff/autodiff_internal.h"

typedef enum combiner {
    COMB_ADD,
    COMB_OVERWRITE,
    COMB_KEEP,
    COMB_MULTIPLY,
    COMB_EXTREMAL, /* maximum, minimum */
    COMB_OTHER,
} combiner;

/* What y's update computation (p0, p1) -> ... does; *what names it for
 * an error. */
static combiner combiner_of(const hs_instruction *y, const char **what)
{
    const hs_computation *c = y->n_called ? y->called[0] : NULL;
    const hs_instruction *r = c ? c->root : NULL;
    *what = "a computation with no root";
    if (!r || c->n_params != 2)
        return COMB_OTHER;
    if (r->opcode == HS_OP_PARAMETER) {
        *what = r->index ? "overwrite" : "keep";
        return r->index ? COMB_OVERWRITE : COMB_KEEP;
    }
    *what = hs_opcode_name(r->opcode);
    bool params = r->n_operands == 2 && r->operands[0] != r->operands[1] &&
                  r->operands[0]->opcode == HS_OP_PARAMETER &&
                  r->operands[1]->opcode == HS_OP_PARAMETER;
    if (!params)
        return COMB_OTHER;
    if (r->opcode == HS_OP_ADD)
        return COMB_ADD;
    if (r->opcode == HS_OP_MULTIPLY)
        return COMB_MULTIPLY;
    if (r->opcode == HS_OP_MAXIMUM || r->opcode == HS_OP_MINIMUM)
        return COMB_EXTREMAL;
    return COMB_OTHER;
}

typedef struct scatter_vjp {
    hs_vjp *v;
    hs_builder *b;
    hs_instruction *y, *x, *i, *u, *g;
    hs_gather_dims d;       /* scatter's numbers */
    hs_gather_dims gd;      /* the same as gather's, with window slices */
    int64_t scat[HS_MAX_RANK]; /* u's dimensions that walk the indices */
    int n_scat;
} scatter_vjp;

/* G(a): the windows of a that the updates were scattered to. */
static hs_instruction *gather_windows(scatter_vjp *s, hs_instruction *a)
{
    hs_attr attrs[HS_GATHER_MAX_ATTRS];
    int n = hs_gather_attrs(&s->gd, hs_builder_module(s->b)->arena, attrs);
    if (n < 0) {
        hs_builder_fail(s->b, HS_ERR_NOMEM, "autodiff: out of host memory");
        return NULL;
    }
    hs_instruction *ops[2] = {a, s->i};
    return hs__ad_emit(s->b, HS_OP_GATHER, ops, 2, NULL, 0, attrs, n);
}

static hs_instruction *zeros_like(hs_builder *b, const hs_instruction *a)
{
    if (!a)
        return NULL;
    hs_instruction *z = hs__ad_zeros(b, &a->shape);
    return z && a->shape.dtype != HS_F32 ? hs_b_convert(b, z, a->shape.dtype)
                                         : z;
}

/* pred at u's dimensions: the window of this update element fits in x
 * (0 <= each index component <= x's size - the window's). */
static hs_instruction *applied(scatter_vjp *s)
{
    hs_builder *b = s->b;
    hs_instruction *i = s->i;
    hs_instruction *hi = hs__ad_index_upper(b, i, &s->gd, &s->x->shape);
    hs_instruction *zero = hs_b_const_s32(b, 0);
    if (zero && i->shape.dtype != HS_S32)
        zero = hs_b_convert(b, zero, i->shape.dtype);
    hs_instruction *lo = hs_b_broadcast(b, zero, &i->shape, NULL, 0);
    hs_instruction *ok = hs_b_binary(b, HS_OP_AND,
                                     hs_b_compare(b, HS_DIR_GE, i, lo),
                                     hs_b_compare(b, HS_DIR_LE, i, hi));
    int64_t ivd = s->d.index_vector_dim;
    if (ok && ivd < i->shape.rank) {
        /* every component in range: the minimum over the index vector */
        hs_instruction *one = hs_b_const_s32(b, 1);
        ok = hs_b_convert(b, hs_b_reduce(b, hs_b_convert(b, ok, HS_S32), one,
                                         &ivd, 1, HS_OP_MINIMUM),
                          HS_PRED);
    }
    hs_shape us = hs_shape_make(HS_PRED, s->u->shape.rank,
                                s->u->shape.dims);
    return ok ? hs_b_broadcast(b, ok, &us, s->scat, s->n_scat) : NULL;
}

/* where(mask, a, 0) */
static hs_instruction *keep_where(hs_builder *b, hs_instruction *mask,
                                  hs_instruction *a)
{
    return mask && a ? hs_b_select(b, mask, a, zeros_like(b, a)) : NULL;
}

/* (p0: t[], p1: t[]) -> p1, made once per module and type. */
static hs_computation *overwrite_comp(hs_builder *b, hs_dtype t)
{
    hs_module *m = hs_builder_module(b);
    char name[48];
    snprintf(name, sizeof name, "overwrite_%s", hs_dtype_name(t));
    hs_computation *c = hs_module_find_computation(m, name);
    for (int suffix = 1; c; suffix++) {
        if (c->n_params == 2 && c->root == c->params[1] &&
            c->params[1]->shape.dtype == t)
            return c;
        snprintf(name, sizeof name, "overwrite_%s.%d", hs_dtype_name(t),
                 suffix);
        c = hs_module_find_computation(m, name);
    }
    c = hs_module_add_computation(m, name, false);
    hs_shape sc = hs_shape_scalar(t);
    for (int k = 0; c && k < 2; k++) {
        char pn[32];
        snprintf(pn, sizeof pn, "%s.%d", k ? "new" : "old", m->next_id);
        if (!hs_computation_add_parameter(c, k, &sc, pn))
            c = NULL;
    }
    if (!c) {
        hs_builder_fail(b, HS_ERR_NOMEM, "autodiff: out of host memory");
        return NULL;
    }
    c->root = c->params[1];
    return c;
}

static void overwrite_rule(scatter_vjp *s)
{
    hs_builder *b = s->b;
    const hs_shape *us = &s->u->shape;
    /* ids 1..N, one per update window, broadcast over its elements */
    int64_t bdims[HS_MAX_RANK], n_ids = 1;
    for (int k = 0; k < s->n_scat; k++)
        n_ids *= bdims[k] = us->dims[s->scat[k]];
    if (n_ids >= INT32_MAX) {
        hs__vjp_fail(s->v, s->y, HS_ERR_UNSUPPORTED, "autodiff: scatter "
                     "%s%s%s has %lld update windows, more than s32 ids "
                     "count", s->y->name, OP_NAME(s->y), (long long)n_ids);
        return;
    }
    hs_shape flat = hs_shape_make(HS_S32, 1, &n_ids);
    hs_instruction *ids = hs__ad_bin(
        b, HS_OP_ADD, hs_b_iota(b, &flat, 0),
        hs_b_broadcast(b, hs_b_const_s32(b, 1), &flat, NULL, 0));
    hs_shape ius = hs_shape_make(HS_S32, us->rank, us->dims);
    ids = hs_b_broadcast(b, hs_b_reshape(b, ids, s->n_scat, bdims), &ius,
                         s->scat, s->n_scat);
    hs_shape xs = hs_shape_make(HS_S32, s->x->shape.rank, s->x->shape.dims);
    hs_instruction *none = hs_b_broadcast(b, hs_b_const_s32(b, 0), &xs,
                                          NULL, 0);
    hs_attr attrs[HS_GATHER_MAX_ATTRS];
    int n_attrs = hs_scatter_attrs(&s->d, hs_builder_module(b)->arena,
                                   attrs);
    hs_computation *put = overwrite_comp(b, HS_S32);
    if (n_attrs < 0 || !put) {
        hs_builder_fail(b, HS_ERR_NOMEM, "autodiff: out of host memory");
        return;
    }
    hs_instruction *ops[3] = {none, s->i, ids};
    hs_instruction *written = hs__ad_emit(b, HS_OP_SCATTER, ops, 3, &put, 1,
                                          attrs, n_attrs);
    hs__vjp_acc(s->v, s->x,
                keep_where(b, hs_b_compare(b, HS_DIR_EQ, written, none),
                           s->g));
    if (!hs__vjp_active(s->v, s->u))
        return;
    hs_instruction *won = hs_b_compare(b, HS_DIR_EQ, ids,
                                       gather_windows(s, written));
    hs__vjp_acc(s->v, s->u, keep_where(b, won, gather_windows(s, s->g)));
}

static void multiply_rule(scatter_vjp *s)
{
    hs_builder *b = s->b;
    hs_dtype t = s->g->shape.dtype;
    hs_instruction *u = s->u;
    if (u->shape.dtype != t)
        u = hs_b_convert(b, u, t);
    hs_attr attrs[HS_GATHER_MAX_ATTRS];
    int n_attrs = hs_scatter_attrs(&s->d, hs_builder_module(b)->arena,
                                   attrs);
    hs_computation *mul = hs_b_reducer(b, HS_OP_MULTIPLY, t);
    if (n_attrs < 0 || !mul) {
        hs_builder_fail(b, HS_ERR_NOMEM, "autodiff: out of host memory");
        return;
    }
    hs_instruction *ops[3] = {s->g, s->i, u};
    hs__vjp_acc(s->v, s->x, hs__ad_emit(b, HS_OP_SCATTER, ops, 3, &mul, 1,
                                        attrs, n_attrs));
    if (!hs__vjp_active(s->v, s->u))
        return;
    const char *unique = hs_instruction_attr(s->y, "unique_indices");
    if (!unique || strcmp(unique, "true") != 0) {
        hs__vjp_fail(s->v, s->y, HS_ERR_UNSUPPORTED,
                     "autodiff: the gradient of a multiply scatter's updates "
                     "needs unique_indices=true (instruction %s%s%s: updates "
                     "that meet multiply each other)", s->y->name,
                     OP_NAME(s->y));
        return;
    }
    hs_instruction *x = s->x;
    hs_instruction *xt = x->shape.dtype != t ? hs_b_convert(b, x, t) : x;
    hs__vjp_acc(s->v, s->u,
                keep_where(b, applied(s),
                           gather_windows(s, hs__ad_bin(b, HS_OP_MULTIPLY,
                                                        s->g, xt))));
}

/* scatter-add of a (u's dimensions) into zeros shaped like x, under y's
 * dimension numbers. */
static hs_instruction *scatter_add(scatter_vjp *s, hs_instruction *a)
{
    hs_builder *b = s->b;
    hs_attr attrs[HS_GATHER_MAX_ATTRS];
    int n_attrs = hs_scatter_attrs(&s->d, hs_builder_module(b)->arena,
                                   attrs);
    hs_computation *add = hs__ad_scalar_comp(b, "add_f32", HS_OP_ADD,
                                             HS_DIR_NONE, HS_F32);
    if (n_attrs < 0 || !add) {
        hs_builder_fail(b, HS_ERR_NOMEM, "autodiff: out of host memory");
        return NULL;
    }
    hs_instruction *ops[3] = {hs__ad_zeros(b, &s->x->shape), s->i, a};
    return hs__ad_emit(b, HS_OP_SCATTER, ops, 3, &add, 1, attrs, n_attrs);
}

/* maximum, minimum: JAX's _scatter_extremal_jvp, transposed. Where the
 * result equals the operand (kept) and n updates equal it too (won),
 * each of the n + 1 gets an equal share of the cotangent (PyTorch's
 * scatter_reduce amax/amin do the same); without the operand, each
 * winning update gets 1/n. With G the window gather and c the result's
 * cotangent:
 *     du = applied ? u_coef · G(c) : 0
 *     dx = c + S(applied ? x_coef · G(c) : 0)
 * u_coef = won ? (kept ? 1/(n_won + 1) : 1/n_won) : 0 and x_coef =
 * ((kept ? 1/(n_won + 1) : 0) − 1) / n_refs, so the n_refs updates of an
 * element together leave the operand its share. f32, as autodiff is. */
static void extremal_rule(scatter_vjp *s)
{
    hs_builder *b = s->b;
    if (s->x->shape.dtype != HS_F32 || s->u->shape.dtype != HS_F32) {
        hs__vjp_fail(s->v, s->y, HS_ERR_UNSUPPORTED, "autodiff: scatter "
                     "%s%s%s: a maximum or minimum scatter is differentiated "
                     "at f32 only", s->y->name, OP_NAME(s->y));
        return;
    }
    const hs_shape *us = &s->u->shape;
    hs_instruction *one = hs__ad_fill(b, 1.0f, us), *zero = hs__ad_zeros(b,
                                                                         us);
    hs_instruction *target = gather_windows(s, s->y);
    hs_instruction *won = hs_b_compare(b, HS_DIR_EQ, s->u, target);
    hs_instruction *kept =
        hs_b_compare(b, HS_DIR_EQ, gather_windows(s, s->x), target);
    hs_instruction *n_won = gather_windows(
        s, scatter_add(s, hs_b_select(b, won, one, zero)));
    hs_instruction *n_refs = gather_windows(s, scatter_add(s, one));
    hs_instruction *share_kept =
        hs__ad_bin(b, HS_OP_DIVIDE, one, hs__ad_bin(b, HS_OP_ADD, n_won, one));
    hs_instruction *u_coef = hs_b_select(
        b, won,
        hs_b_select(b, kept, share_kept,
                    hs__ad_bin(b, HS_OP_DIVIDE, one, n_won)),
        zero);
    hs_instruction *x_coef = hs__ad_bin(
        b, HS_OP_DIVIDE,
        hs__ad_bin(b, HS_OP_SUBTRACT, hs_b_select(b, kept, share_kept, zero),
                   one),
        n_refs);
    hs_instruction *mask = applied(s);
    hs_instruction *gc = gather_windows(s, s->g);
    hs__vjp_acc(s->v, s->x,
                hs__ad_bin(b, HS_OP_ADD, s->g,
                           scatter_add(s, keep_where(b, mask,
                                                     hs__ad_bin(b,
                                                                HS_OP_MULTIPLY,
                                                                x_coef, gc)))));
    if (hs__vjp_active(s->v, s->u))
        hs__vjp_acc(s->v, s->u,
                    keep_where(b, mask,
                               hs__ad_bin(b, HS_OP_MULTIPLY, u_coef, gc)));
}

void hs__vjp_scatter(hs_vjp *v, hs_instruction *y)
{
    const char *what;
    combiner c = combiner_of(y, &what);
    if (y->n_operands != 3 || c == COMB_OTHER) {
        const hs_computation *comp = y->n_called ? y->called[0] : NULL;
        hs__vjp_fail(v, y, HS_ERR_UNSUPPORTED,
                     "autodiff: no gradient rule for scatter %s%s%s: %s "
                     "(update computation %s: %s; add, overwrite, keep, "
                     "multiply, maximum and minimum have rules)", y->name, OP_NAME(y),
                     y->n_operands != 3 ? "a variadic scatter"
                                        : "its update computation",
                     comp ? comp->name : "(none)", what);
        return;
    }
    scatter_vjp s = {.v = v, .b = hs__vjp_builder(v), .y = y,
                     .x = y->operands[0], .i = y->operands[1],
                     .u = y->operands[2], .g = hs__vjp_cotangent(v, y)};
    if (c == COMB_ADD || c == COMB_KEEP)
        hs__vjp_acc(v, s.x, s.g);
    if (c == COMB_KEEP || !s.g)
        return;
    hs_error e;
    if (hs_instruction_scatter(y, &s.d, &e) != HS_OK) {
        hs__vjp_fail(v, y, e.status, "autodiff: %s", e.message);
        return;
    }
    /* gather's numbers: the slice sizes are 1 on inserted and batching
     * dimensions, the update window's sizes on the others, in order */
    s.gd = s.d;
    bool window[HS_MAX_RANK];
    const hs_shape *xs = &s.x->shape, *us = &s.u->shape;
    for (int k = 0; k < xs->rank; k++)
        window[k] = true;
    for (int k = 0; k < s.d.n_collapsed; k++)
        window[s.d.collapsed[k]] = false;
    for (int k = 0; k < s.d.n_operand_batching; k++)
        window[s.d.operand_batching[k]] = false;
    s.gd.n_slice_sizes = xs->rank;
    for (int k = 0, j = 0; k < xs->rank; k++)
        s.gd.slice_sizes[k] = window[k] ? us->dims[s.d.offset[j++]] : 1;
    bool offset[HS_MAX_RANK] = {false};
    for (int k = 0; k < s.d.n_offset; k++)
        offset[s.d.offset[k]] = true;
    for (int k = 0; k < us->rank; k++)
        if (!offset[k])
            s.scat[s.n_scat++] = k;
    switch (c) {
    case COMB_ADD:
        if (hs__vjp_active(v, s.u))
            hs__vjp_acc(v, s.u, keep_where(s.b, applied(&s),
                                           gather_windows(&s, s.g)));
        break;
    case COMB_OVERWRITE: overwrite_rule(&s); break;
    case COMB_MULTIPLY: multiply_rule(&s); break;
    case COMB_EXTREMAL: extremal_rule(&s); break;
    default: break;
    }
}
