/* infer_elementwise.c - shape rules of the element-wise ops: unary,
 * convert, binary (no implicit broadcasting), select and clamp. */
#include <stdio.h>
#include <string.h>

#include "ir/infer_internal.h"

typedef enum operand_kind {
    KIND_ANY,     /* any array type */
    KIND_FLOAT,   /* floating point or complex */
    KIND_LOGICAL, /* pred or integer */
} operand_kind;

static hs_status check_kind(const hs_instruction *i, const hs_shape *s,
                            operand_kind kind, hs_error *err)
{
    if (kind == KIND_FLOAT && !is_float_or_complex(s->dtype))
        return fail(err, "%s: expects a floating-point operand, got %s",
                    hs_opcode_name(i->opcode), SHAPE_TEXT(s));
    if (kind == KIND_LOGICAL && s->dtype != HS_PRED && !is_integer(s->dtype))
        return fail(err, "%s: expects pred or integer operands, got %s",
                    hs_opcode_name(i->opcode), SHAPE_TEXT(s));
    return HS_OK;
}

static hs_status infer_unary(const hs_instruction *i, operand_kind kind,
                             hs_shape *out, hs_error *err)
{
    const hs_shape *x = NULL;
    hs_status st = hs__array_operand(i, 0, &x, err);
    if (st == HS_OK)
        st = check_kind(i, x, kind, err);
    if (st != HS_OK)
        return st;
    set_array(out, x->dtype, x->rank, x->dims);
    return HS_OK;
}

hs_status hs__infer_convert(const hs_instruction *i, hs_arena *a,
                            hs_shape *out, hs_error *err)
{
    const hs_shape *x = NULL;
    hs_status st = hs__array_operand(i, 0, &x, err);
    if (st != HS_OK)
        return st;
    hs_dtype to = i->shape.dtype;
    if (!is_array_type(to))
        return fail(err, "%s: target element type must be an array type",
                    hs_opcode_name(i->opcode));
    int from_bits = hs_dtype_bits(x->dtype), to_bits = hs_dtype_bits(to);
    if (i->opcode == HS_OP_BITCAST_CONVERT && from_bits != to_bits) {
        /* XLA adds a minor dimension of from/to elements when the target
         * is narrower, and removes one of to/from when it is wider. */
        int64_t dims[HS_MAX_RANK];
        memcpy(dims, x->dims, sizeof dims);
        if (from_bits <= 0 || to_bits <= 0 ||
            (from_bits > to_bits ? from_bits % to_bits : to_bits % from_bits))
            return hs__infer_unsupported(i, err);
        if (from_bits > to_bits) {
            if (x->rank == HS_MAX_RANK)
                return hs__infer_unsupported(i, err);
            dims[x->rank] = from_bits / to_bits;
            set_array(out, to, x->rank + 1, dims);
            return HS_OK;
        }
        if (x->rank == 0 || x->dims[x->rank - 1] != to_bits / from_bits)
            return fail(err, "bitcast-convert: %s to %s needs a minor "
                        "dimension of %d", SHAPE_TEXT(x),
                        hs_dtype_name(to), to_bits / from_bits);
        set_array(out, to, x->rank - 1, dims);
        return HS_OK;
    }
    set_array(out, to, x->rank, x->dims);
    return HS_OK;
}

/* Binary element-wise ops: dimensions must match exactly (HLO has no
 * implicit broadcasting). */
static hs_status infer_binary(const hs_instruction *i, operand_kind kind,
                              hs_shape *out, hs_error *err)
{
    const hs_shape *x = NULL, *y = NULL;
    hs_status st = hs__array_operand(i, 0, &x, err);
    if (st == HS_OK)
        st = hs__array_operand(i, 1, &y, err);
    if (st != HS_OK)
        return st;
    const char *name = hs_opcode_name(i->opcode);
    if (!same_dims(x, y))
        return fail(err, "%s: operand shapes %s and %s differ", name,
                    SHAPE_TEXT(x), SHAPE_TEXT(y));
    if (kind == KIND_LOGICAL ? x->dtype != y->dtype
                             : !same_type_ignoring_fp(x->dtype, y->dtype))
        return fail(err, "%s: operand element types differ: %s and %s",
                    name, SHAPE_TEXT(x), SHAPE_TEXT(y));
    if ((st = check_kind(i, x, kind, err)) != HS_OK)
        return st;
    hs_dtype t = i->opcode == HS_OP_COMPARE
                     ? HS_PRED
                     : higher_precision(x->dtype, y->dtype);
    set_array(out, t, x->rank, x->dims);
    return HS_OK;
}

hs_status hs__infer_select(const hs_instruction *i, hs_arena *a,
                           hs_shape *out, hs_error *err)
{
    (void)a;
    const hs_shape *p = NULL, *t = NULL, *f = NULL;
    hs_status st = hs__array_operand(i, 0, &p, err);
    if (st == HS_OK)
        st = hs__array_operand(i, 1, &t, err);
    if (st == HS_OK)
        st = hs__array_operand(i, 2, &f, err);
    if (st != HS_OK)
        return st;
    if (p->dtype != HS_PRED)
        return fail(err, "select: predicate must be pred, got %s",
                    SHAPE_TEXT(p));
    if (!same_dims(t, f) || !same_type_ignoring_fp(t->dtype, f->dtype))
        return fail(err, "select: on_true %s and on_false %s differ",
                    SHAPE_TEXT(t), SHAPE_TEXT(f));
    /* A scalar predicate is the old form, still found in dumps. */
    if (p->rank != 0 && !same_dims(p, t))
        return fail(err,
                    "select: predicate %s does not match the operands' "
                    "shape %s",
                    SHAPE_TEXT(p), SHAPE_TEXT(t));
    set_array(out, higher_precision(t->dtype, f->dtype), t->rank, t->dims);
    return HS_OK;
}

hs_status hs__infer_clamp(const hs_instruction *i, hs_arena *a,
                          hs_shape *out, hs_error *err)
{
    const hs_shape *lo = NULL, *x = NULL, *hi = NULL;
    hs_status st = hs__array_operand(i, 0, &lo, err);
    if (st == HS_OK)
        st = hs__array_operand(i, 1, &x, err);
    if (st == HS_OK)
        st = hs__array_operand(i, 2, &hi, err);
    if (st != HS_OK)
        return st;
    const hs_shape *bounds[2] = {lo, hi};
    static const char *const names[2] = {"min", "max"};
    for (int k = 0; k < 2; k++) {
        const hs_shape *b = bounds[k];
        if (b->rank != 0 && !same_dims(b, x))
            return fail(err,
                        "clamp: %s %s must be a scalar or match the "
                        "operand %s",
                        names[k], SHAPE_TEXT(b), SHAPE_TEXT(x));
        if (!same_type_ignoring_fp(b->dtype, x->dtype))
            return fail(err, "clamp: %s %s and operand %s differ in type",
                        names[k], SHAPE_TEXT(b), SHAPE_TEXT(x));
    }
    set_array(out, x->dtype, x->rank, x->dims);
    return HS_OK;
}

/* The rules of the table (infer.c): one per kind of operand. */
#define UNARY_RULE(name, kind)                                              \
    hs_status hs__infer_unary_##name(const hs_instruction *i, hs_arena *a,  \
                                     hs_shape *out, hs_error *err)          \
    {                                                                       \
        (void)a;                                                            \
        return infer_unary(i, kind, out, err);                              \
    }
#define BINARY_RULE(name, kind)                                             \
    hs_status hs__infer_binary_##name(const hs_instruction *i, hs_arena *a, \
                                      hs_shape *out, hs_error *err)         \
    {                                                                       \
        (void)a;                                                            \
        return infer_binary(i, kind, out, err);                             \
    }
UNARY_RULE(any, KIND_ANY)
UNARY_RULE(float, KIND_FLOAT)
UNARY_RULE(logical, KIND_LOGICAL)
BINARY_RULE(any, KIND_ANY)
BINARY_RULE(logical, KIND_LOGICAL)

/* is-finite: a float operand, a pred result of the same dimensions. */
hs_status hs__infer_is_finite(const hs_instruction *i, hs_arena *a,
                              hs_shape *out, hs_error *err)
{
    (void)a;
    hs_status st = infer_unary(i, KIND_FLOAT, out, err);
    if (st == HS_OK)
        out->dtype = HS_PRED;
    return st;
}
