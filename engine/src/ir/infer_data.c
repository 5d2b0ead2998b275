/* infer_data.c - shape rules of data movement: iota, broadcast, reshape,
 * transpose, slice, pad, concatenate, reverse and the dynamic slices.
 * Sizes the user wrote are combined with overflow-checked arithmetic. */
#include <stdio.h>
#include <string.h>

#include "ir/infer_internal.h"

static hs_status written_array(const hs_instruction *i, hs_error *err)
{
    if (!is_array_type(i->shape.dtype) || i->shape.rank < 0 ||
        i->shape.rank > HS_MAX_RANK)
        return fail(err, "%s: result must be an array shape",
                    hs_opcode_name(i->opcode));
    for (int k = 0; k < i->shape.rank; k++)
        if (i->shape.dims[k] < 0)
            return fail(err, "%s: result dimension %d has negative size",
                        hs_opcode_name(i->opcode), k);
    return HS_OK;
}

hs_status hs__infer_iota(const hs_instruction *i, hs_arena *a,
                         hs_shape *out, hs_error *err)
{
    (void)a;
    hs_status st = written_array(i, err);
    if (st != HS_OK)
        return st;
    if (i->n_dims != 1 || !i->dims)
        return fail(err, "iota: needs exactly one iota_dimension");
    if (i->dims[0] < 0 || i->dims[0] >= i->shape.rank)
        return fail(err, "iota: iota_dimension %lld is out of range for %s",
                    (long long)i->dims[0], SHAPE_TEXT(&i->shape));
    set_array(out, i->shape.dtype, i->shape.rank, i->shape.dims);
    return HS_OK;
}

/* broadcast: operand dimension k becomes output dimension dims[k]; the
 * output dimensions come from the written shape. */
hs_status hs__infer_broadcast(const hs_instruction *i, hs_arena *a,
                              hs_shape *out, hs_error *err)
{
    (void)a;
    const hs_shape *x = NULL;
    hs_status st = hs__array_operand(i, 0, &x, err);
    if (st == HS_OK)
        st = written_array(i, err);
    if (st != HS_OK)
        return st;
    const hs_shape *o = &i->shape;
    if (i->n_dims != x->rank)
        return fail(err,
                    "broadcast: operand %s has rank %d but %d dimensions "
                    "were given",
                    SHAPE_TEXT(x), x->rank, i->n_dims);
    bool used[HS_MAX_RANK] = {false};
    st = hs__check_dim_list(i, "output dimension", i->dims, i->n_dims, o->rank,
                        o, used, err);
    if (st != HS_OK)
        return st;
    for (int k = 0; k < x->rank; k++) {
        int64_t d = i->dims[k];
        if (x->dims[k] != o->dims[d])
            return fail(err,
                        "broadcast: operand dimension %d has size %lld but "
                        "output dimension %lld has size %lld",
                        k, (long long)x->dims[k], (long long)d,
                        (long long)o->dims[d]);
    }
    set_array(out, x->dtype, o->rank, o->dims);
    return HS_OK;
}

/* Element count, or -1 when it overflows int64. */
static int64_t checked_elements(const hs_shape *s)
{
    int64_t n = 1;
    for (int k = 0; k < s->rank; k++)
        if (__builtin_mul_overflow(n, s->dims[k], &n))
            return -1;
    return n;
}

hs_status hs__infer_reshape(const hs_instruction *i, hs_arena *a,
                            hs_shape *out, hs_error *err)
{
    (void)a;
    const hs_shape *x = NULL;
    hs_status st = hs__array_operand(i, 0, &x, err);
    if (st == HS_OK)
        st = written_array(i, err);
    if (st != HS_OK)
        return st;
    int64_t from = checked_elements(x), to = checked_elements(&i->shape);
    if (from != to) {
        hs_shape target = i->shape;
        target.dtype = x->dtype;
        return fail(err,
                    "reshape: cannot reshape %s (%lld elements) to %s "
                    "(%lld elements)",
                    SHAPE_TEXT(x), (long long)from, SHAPE_TEXT(&target),
                    (long long)to);
    }
    set_array(out, x->dtype, i->shape.rank, i->shape.dims);
    return HS_OK;
}

hs_status hs__infer_transpose(const hs_instruction *i, hs_arena *a,
                              hs_shape *out, hs_error *err)
{
    (void)a;
    const hs_shape *x = NULL;
    hs_status st = hs__array_operand(i, 0, &x, err);
    if (st != HS_OK)
        return st;
    if (i->n_dims != x->rank)
        return fail(err,
                    "transpose: permutation has %d entries but the operand "
                    "%s has rank %d",
                    i->n_dims, SHAPE_TEXT(x), x->rank);
    bool used[HS_MAX_RANK] = {false};
    st = hs__check_dim_list(i, "permutation entry", i->dims, i->n_dims, x->rank,
                        x, used, err);
    if (st != HS_OK)
        return st;
    int64_t dims[HS_MAX_RANK];
    for (int k = 0; k < x->rank; k++)
        dims[k] = x->dims[i->dims[k]];
    set_array(out, x->dtype, x->rank, dims);
    return HS_OK;
}

hs_status hs__infer_slice(const hs_instruction *i, hs_arena *a,
                          hs_shape *out, hs_error *err)
{
    (void)a;
    const hs_shape *x = NULL;
    hs_status st = hs__array_operand(i, 0, &x, err);
    if (st != HS_OK)
        return st;
    const hs_slice_dims *s = i->slice;
    if (!s)
        return fail(err, "slice: missing slice={...} attribute");
    if (s->rank != x->rank)
        return fail(err,
                    "slice: %d dimensions given but the operand %s has rank "
                    "%d",
                    s->rank, SHAPE_TEXT(x), x->rank);
    int64_t dims[HS_MAX_RANK];
    for (int k = 0; k < x->rank; k++) {
        int64_t b = s->start[k], e = s->limit[k], step = s->stride[k];
        if (step < 1)
            return fail(err, "slice: dimension %d has stride %lld (must be "
                             ">= 1)",
                        k, (long long)step);
        if (b < 0 || b > e || e > x->dims[k])
            return fail(err,
                        "slice: dimension %d has start %lld and limit %lld "
                        "but the operand's size is %lld",
                        k, (long long)b, (long long)e,
                        (long long)x->dims[k]);
        dims[k] = e == b ? 0 : (e - b - 1) / step + 1;
    }
    set_array(out, x->dtype, x->rank, dims);
    return HS_OK;
}

/* pad: lo + n + (n - 1) * interior + hi per dimension, each term checked
 * (padding values are user text and may be anything int64 holds). */
hs_status hs__infer_pad(const hs_instruction *i, hs_arena *a,
                        hs_shape *out, hs_error *err)
{
    const hs_shape *x = NULL, *v = NULL;
    hs_status st = hs__array_operand(i, 0, &x, err);
    if (st == HS_OK)
        st = hs__array_operand(i, 1, &v, err);
    if (st != HS_OK)
        return st;
    if (v->rank != 0 || !same_type_ignoring_fp(v->dtype, x->dtype))
        return fail(err, "pad: padding value %s must be a scalar of the "
                         "operand's type %s",
                    SHAPE_TEXT(v), hs_dtype_name(x->dtype));
    hs_padding pad;
    if ((st = hs_instruction_padding(i, x->rank, &pad, err)) != HS_OK)
        return st;
    int64_t dims[HS_MAX_RANK];
    for (int k = 0; k < x->rank; k++) {
        int64_t n = x->dims[k], d = 0;
        bool over = n > 0 &&
                    __builtin_mul_overflow(n - 1, pad.interior[k], &d);
        over = over || __builtin_add_overflow(d, n, &d) ||
               __builtin_add_overflow(d, pad.lo[k], &d) ||
               __builtin_add_overflow(d, pad.hi[k], &d);
        if (over || d < 0)
            return fail(err,
                        "pad: dimension %d of %s padded by %lld_%lld_%lld "
                        "gives %s size",
                        k, SHAPE_TEXT(x), (long long)pad.lo[k],
                        (long long)pad.hi[k], (long long)pad.interior[k],
                        over ? "an overflowing" : "a negative");
        dims[k] = d;
    }
    set_array(out, x->dtype, x->rank, dims);
    return HS_OK;
}

hs_status hs__infer_concatenate(const hs_instruction *i, hs_arena *a,
                                hs_shape *out, hs_error *err)
{
    (void)a;
    if (i->n_operands < 1)
        return fail(err, "concatenate: needs at least one operand");
    if (i->n_dims != 1 || !i->dims)
        return fail(err, "concatenate: needs exactly one dimension");
    const hs_shape *first = NULL;
    hs_status st = hs__array_operand(i, 0, &first, err);
    if (st != HS_OK)
        return st;
    int64_t d = i->dims[0];
    if (d < 0 || d >= first->rank)
        return fail(err, "concatenate: dimension %lld is out of range for %s",
                    (long long)d, SHAPE_TEXT(first));
    int64_t dims[HS_MAX_RANK];
    memcpy(dims, first->dims, sizeof dims);
    hs_dtype t = first->dtype;
    for (int k = 1; k < i->n_operands; k++) {
        const hs_shape *x = NULL;
        if ((st = hs__array_operand(i, k, &x, err)) != HS_OK)
            return st;
        bool ok = x->rank == first->rank &&
                  same_type_ignoring_fp(x->dtype, first->dtype);
        for (int j = 0; ok && j < x->rank; j++)
            ok = j == d || x->dims[j] == first->dims[j];
        if (!ok)
            return fail(err,
                        "concatenate: operand %d %s does not match operand 0 "
                        "%s outside dimension %lld",
                        k, SHAPE_TEXT(x), SHAPE_TEXT(first), (long long)d);
        if (__builtin_add_overflow(dims[d], x->dims[d], &dims[d]))
            return fail(err, "concatenate: dimension %lld overflows after "
                             "operand %d",
                        (long long)d, k);
        t = higher_precision(t, x->dtype);
    }
    set_array(out, t, first->rank, dims);
    return HS_OK;
}

hs_status hs__infer_reverse(const hs_instruction *i, hs_arena *a,
                            hs_shape *out, hs_error *err)
{
    (void)a;
    const hs_shape *x = NULL;
    hs_status st = hs__array_operand(i, 0, &x, err);
    if (st != HS_OK)
        return st;
    bool used[HS_MAX_RANK] = {false};
    if (i->n_dims > x->rank)
        return fail(err, "reverse: %d dimensions given for %s", i->n_dims,
                    SHAPE_TEXT(x));
    st = hs__check_dim_list(i, "dimension", i->dims, i->n_dims, x->rank, x,
                        used, err);
    if (st != HS_OK)
        return st;
    set_array(out, x->dtype, x->rank, x->dims);
    return HS_OK;
}

/* Start indices of dynamic-slice / dynamic-update-slice: rank scalar
 * integers from operand first on, or (the old form) one integer vector. */
static hs_status check_start_indices(const hs_instruction *i, int first,
                                     int rank, hs_error *err)
{
    const char *name = hs_opcode_name(i->opcode);
    int n = i->n_operands - first;
    if (n == 1 && rank != 1) {
        const hs_shape *v = &i->operands[first]->shape;
        if (v->rank == 1 && v->dims[0] == rank && is_integer(v->dtype))
            return HS_OK;
    }
    if (n != rank)
        return fail(err,
                    "%s: %d start indices given for an operand of rank %d",
                    name, n, rank);
    for (int k = 0; k < n; k++) {
        const hs_shape *s = &i->operands[first + k]->shape;
        if (s->dtype == HS_TUPLE || s->rank != 0 || !is_integer(s->dtype))
            return fail(err,
                        "%s: start index %d must be an integer scalar "
                        "(s32[]), got %s",
                        name, k, SHAPE_TEXT(s));
    }
    return HS_OK;
}

hs_status hs__infer_dynamic_slice(const hs_instruction *i, hs_arena *a,
                                  hs_shape *out, hs_error *err)
{
    (void)a;
    if (i->n_operands < 1)
        return fail(err, "dynamic-slice: needs an operand");
    const hs_shape *x = NULL;
    hs_status st = hs__array_operand(i, 0, &x, err);
    if (st == HS_OK)
        st = check_start_indices(i, 1, x->rank, err);
    if (st != HS_OK)
        return st;
    if (i->n_dims != x->rank)
        return fail(err,
                    "dynamic-slice: %d slice sizes given but the operand %s "
                    "has rank %d",
                    i->n_dims, SHAPE_TEXT(x), x->rank);
    if (x->rank > 0 && !i->dims)
        return fail(err, "dynamic-slice: missing dynamic_slice_sizes");
    for (int k = 0; k < x->rank; k++)
        if (i->dims[k] < 0 || i->dims[k] > x->dims[k])
            return fail(err,
                        "dynamic-slice: slice size %lld of dimension %d does "
                        "not fit the operand's size %lld",
                        (long long)i->dims[k], k, (long long)x->dims[k]);
    set_array(out, x->dtype, x->rank, x->rank > 0 ? i->dims : x->dims);
    return HS_OK;
}

hs_status hs__infer_dynamic_update_slice(const hs_instruction *i, hs_arena *a,
                                         hs_shape *out, hs_error *err)
{
    (void)a;
    if (i->n_operands < 2)
        return fail(err, "dynamic-update-slice: needs an operand and an "
                         "update");
    const hs_shape *x = NULL, *u = NULL;
    hs_status st = hs__array_operand(i, 0, &x, err);
    if (st == HS_OK)
        st = hs__array_operand(i, 1, &u, err);
    if (st == HS_OK)
        st = check_start_indices(i, 2, x->rank, err);
    if (st != HS_OK)
        return st;
    if (u->rank != x->rank || !same_type_ignoring_fp(u->dtype, x->dtype))
        return fail(err,
                    "dynamic-update-slice: update %s does not match the "
                    "operand %s in rank or type",
                    SHAPE_TEXT(u), SHAPE_TEXT(x));
    for (int k = 0; k < x->rank; k++)
        if (u->dims[k] > x->dims[k])
            return fail(err,
                        "dynamic-update-slice: update dimension %d has size "
                        "%lld but the operand's size is %lld",
                        k, (long long)u->dims[k], (long long)x->dims[k]);
    set_array(out, x->dtype, x->rank, x->dims);
    return HS_OK;
}
