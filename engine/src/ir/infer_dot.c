/* infer_dot.c - shape rules of dot (XLA's dimension numbers and
 * preferred element type) and reduce (variadic, with its reducer's
 * signature checked). */
#include <stdio.h>
#include <string.h>

#include "ir/infer_internal.h"

hs_status hs__infer_dot(const hs_instruction *i, hs_arena *a,
                        hs_shape *out, hs_error *err)
{
    const hs_shape *l = NULL, *r = NULL;
    hs_status st = hs__array_operand(i, 0, &l, err);
    if (st == HS_OK)
        st = hs__array_operand(i, 1, &r, err);
    if (st != HS_OK)
        return st;
    static const hs_dot_dims none;
    const hs_dot_dims *d = i->dot ? i->dot : &none;
    if (d->n_lhs_batch != d->n_rhs_batch)
        return fail(err, "dot: lhs has %d batch dimensions but rhs has %d",
                    d->n_lhs_batch, d->n_rhs_batch);
    if (d->n_lhs_contracting != d->n_rhs_contracting)
        return fail(err,
                    "dot: lhs has %d contracting dimensions but rhs has %d",
                    d->n_lhs_contracting, d->n_rhs_contracting);
    int nb = d->n_lhs_batch, nc = d->n_lhs_contracting;
    if (nb < 0 || nc < 0 || nb + nc > l->rank || nb + nc > r->rank)
        return fail(err,
                    "dot: %d batch and %d contracting dimensions do not fit "
                    "lhs %s and rhs %s",
                    nb, nc, SHAPE_TEXT(l), SHAPE_TEXT(r));
    bool lused[HS_MAX_RANK] = {false}, rused[HS_MAX_RANK] = {false};
    if ((st = hs__check_dim_list(i, "lhs batch dimension", d->lhs_batch, nb,
                             l->rank, l, lused, err)) != HS_OK ||
        (st = hs__check_dim_list(i, "lhs contracting dimension",
                             d->lhs_contracting, nc, l->rank, l, lused,
                             err)) != HS_OK ||
        (st = hs__check_dim_list(i, "rhs batch dimension", d->rhs_batch, nb,
                             r->rank, r, rused, err)) != HS_OK ||
        (st = hs__check_dim_list(i, "rhs contracting dimension",
                             d->rhs_contracting, nc, r->rank, r, rused,
                             err)) != HS_OK)
        return st;
    for (int k = 0; k < nb; k++) {
        int64_t a = l->dims[d->lhs_batch[k]], b = r->dims[d->rhs_batch[k]];
        if (a != b)
            return fail(err,
                        "dot: lhs batch dimension %lld has size %lld but rhs "
                        "batch dimension %lld has size %lld",
                        (long long)d->lhs_batch[k], (long long)a,
                        (long long)d->rhs_batch[k], (long long)b);
    }
    for (int k = 0; k < nc; k++) {
        int64_t a = l->dims[d->lhs_contracting[k]];
        int64_t b = r->dims[d->rhs_contracting[k]];
        if (a != b)
            return fail(err,
                        "dot: lhs contracting dimension %lld has size %lld "
                        "but rhs contracting dimension %lld has size %lld",
                        (long long)d->lhs_contracting[k], (long long)a,
                        (long long)d->rhs_contracting[k], (long long)b);
    }
    int rank = nb + (l->rank - nb - nc) + (r->rank - nb - nc);
    if (rank > HS_MAX_RANK)
        return fail(err, "dot: result rank %d exceeds the maximum of %d",
                    rank, HS_MAX_RANK);
    /* XLA's result order: batch dimensions, then lhs free, then rhs free. */
    int64_t dims[HS_MAX_RANK];
    int n = 0;
    for (int k = 0; k < nb; k++)
        dims[n++] = l->dims[d->lhs_batch[k]];
    for (int k = 0; k < l->rank; k++)
        if (!lused[k])
            dims[n++] = l->dims[k];
    for (int k = 0; k < r->rank; k++)
        if (!rused[k])
            dims[n++] = r->dims[k];
    /* preferred_element_type: the written type wins (bf16 x bf16 -> f32).
     * pred is what a zeroed prototype holds, so it means "not given". */
    hs_dtype t = i->shape.dtype;
    if (!is_array_type(t) || t == HS_PRED)
        t = l->dtype;
    set_array(out, t, rank, dims);
    return HS_OK;
}

/* The reducer's signature: (acc_0..acc_{n-1}, x_0..x_{n-1}) -> acc tuple,
 * with scalar accumulators of the init types. */
hs_status hs__check_reducer(const hs_instruction *i, int n, hs_error *err)
{
    const char *name = hs_opcode_name(i->opcode);
    if (i->n_called < 1 || !i->called || !i->called[0])
        return fail(err, "%s: missing to_apply computation", name);
    const hs_computation *c = i->called[0];
    if (c->n_params != 2 * n)
        return fail(err,
                    "%s: to_apply computation %s takes %d parameters but %d "
                    "are needed",
                    name, c->name, c->n_params, 2 * n);
    for (int k = 0; k < 2 * n; k++) {
        const hs_instruction *p = c->params[k];
        if (!p)
            return fail(err, "%s: to_apply computation %s has no parameter %d",
                        name, c->name, k);
        const hs_shape *want = &i->operands[n + k % n]->shape;
        const hs_shape *input = &i->operands[k % n]->shape;
        bool ok = p->shape.dtype != HS_TUPLE && p->shape.rank == 0 &&
                  (k < n ? p->shape.dtype == want->dtype
                         : same_type_ignoring_fp(p->shape.dtype,
                                                 input->dtype));
        if (!ok)
            return fail(err,
                        "%s: to_apply computation %s parameter %d is %s but "
                        "a scalar of the %s type %s is needed",
                        name, c->name, k, SHAPE_TEXT(&p->shape),
                        k < n ? "init value" : "input",
                        hs_dtype_name(k < n ? want->dtype : input->dtype));
    }
    if (!c->root)
        return fail(err, "%s: to_apply computation %s has no root", name,
                    c->name);
    const hs_shape *rs = &c->root->shape;
    bool ok;
    if (n == 1) {
        ok = rs->dtype == i->operands[1]->shape.dtype && rs->rank == 0;
    } else {
        ok = rs->dtype == HS_TUPLE && rs->n_elems == n;
        for (int k = 0; ok && k < n; k++)
            ok = rs->elems[k].dtype == i->operands[n + k]->shape.dtype &&
                 rs->elems[k].rank == 0;
    }
    if (!ok)
        return fail(err,
                    "%s: to_apply computation %s returns %s, which does not "
                    "match the init values",
                    name, c->name, SHAPE_TEXT(rs));
    return HS_OK;
}

hs_status hs__infer_reduce(const hs_instruction *i, hs_arena *a,
                           hs_shape *out, hs_error *err)
{
    if (i->n_operands < 2 || i->n_operands % 2 != 0)
        return fail(err,
                    "reduce: expects inputs then as many init values, got %d "
                    "operands",
                    i->n_operands);
    int n = i->n_operands / 2;
    const hs_shape *x0 = NULL;
    hs_status st = hs__array_operand(i, 0, &x0, err);
    if (st != HS_OK)
        return st;
    for (int k = 0; k < n; k++) {
        const hs_shape *x = NULL, *init = NULL;
        if ((st = hs__array_operand(i, k, &x, err)) != HS_OK ||
            (st = hs__array_operand(i, n + k, &init, err)) != HS_OK)
            return st;
        if (!same_dims(x, x0))
            return fail(err, "reduce: input %d %s does not match input 0 %s",
                        k, SHAPE_TEXT(x), SHAPE_TEXT(x0));
        if (init->rank != 0)
            return fail(err, "reduce: init value %d must be a scalar, got %s",
                        k, SHAPE_TEXT(init));
    }
    bool used[HS_MAX_RANK] = {false};
    if (i->n_dims > x0->rank)
        return fail(err, "reduce: %d dimensions given for %s", i->n_dims,
                    SHAPE_TEXT(x0));
    st = hs__check_dim_list(i, "dimension", i->dims, i->n_dims, x0->rank, x0,
                        used, err);
    if (st == HS_OK)
        st = hs__check_reducer(i, n, err);
    if (st != HS_OK)
        return st;
    int64_t dims[HS_MAX_RANK];
    int rank = 0;
    for (int k = 0; k < x0->rank; k++)
        if (!used[k])
            dims[rank++] = x0->dims[k];
    if (n == 1) {
        set_array(out, i->operands[1]->shape.dtype, rank, dims);
        return HS_OK;
    }
    hs_shape *elems = a ? hs_arena_alloc(a, (size_t)n * sizeof *elems) : NULL;
    if (!elems)
        return hs_error_set(err, HS_ERR_NOMEM, "reduce: out of memory");
    for (int k = 0; k < n; k++)
        set_array(&elems[k], i->operands[n + k]->shape.dtype, rank, dims);
    memset(out, 0, sizeof *out);
    out->dtype = HS_TUPLE;
    out->n_elems = n;
    out->elems = elems;
    return HS_OK;
}
