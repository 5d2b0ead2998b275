/*
 * infer_internal.h - what the shape rules share: the rule type, the rules
 * of every family (infer_elementwise.c, infer_data.c, infer_dot.c,
 * infer_conv.c, infer_control.c), error helpers and element-type
 * predicates. The table that picks a rule per opcode is in infer.c.
 */
#ifndef HLOSCOPE_IR_INFER_INTERNAL_H
#define HLOSCOPE_IR_INFER_INTERNAL_H

#include "hloscope/hs_infer.h"

/* A rule infers i's shape from its operands and attributes into *out
 * (tuples in arena a); an error names what disagrees. */
typedef hs_status (*hs__shape_rule)(const hs_instruction *i, hs_arena *a,
                                    hs_shape *out, hs_error *err);

/* A shape rendered for an error message. Returned by value so that it can
 * be used inline as a printf argument (the temporary lives until the end
 * of the full expression). */
typedef struct hs__shape_text {
    char s[160];
} hs__shape_text;
hs__shape_text hs__shape_text_of(const hs_shape *s);
#define SHAPE_TEXT(shape) (hs__shape_text_of(shape).s)

/* Sets HS_ERR_SHAPE with the message; returns HS_ERR_SHAPE. The rules
 * call it as fail(). */
hs_status hs__infer_fail(hs_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
#define fail hs__infer_fail
/* HS_ERR_UNSUPPORTED: no rule for this case; the written shape is trusted. */
hs_status hs__infer_unsupported(const hs_instruction *i, hs_error *err);
/* Operand k as an array, or an error naming the operand. */
hs_status hs__array_operand(const hs_instruction *i, int k,
                            const hs_shape **s, hs_error *err);
/* Checks that dimension numbers are in [0, rank) and distinct. what names
 * them in messages ("dimension", "contracting dimension", ...). */
hs_status hs__check_dim_list(const hs_instruction *i, const char *what,
                             const int64_t *dims, int n, int rank,
                             const hs_shape *of, bool *used, hs_error *err);

/* Checks i's to_apply computation (called[0]) against n inputs
 * (operands 0..n) and n init values (operands n..2n): reduce and
 * reduce-window (infer_dot.c). */
hs_status hs__check_reducer(const hs_instruction *i, int n, hs_error *err);

/* *out = operand 0's type at like's dimensions when n == 1, otherwise
 * the tuple of operands 0..n's types at like's dimensions (elements in
 * arena a): the result of scatter and sort. */
hs_status hs__set_operand_arrays(const hs_instruction *i, int n,
                                 const hs_shape *like, hs_arena *a,
                                 hs_shape *out, hs_error *err);

static inline bool same_dims(const hs_shape *a, const hs_shape *b)
{
    if (a->rank != b->rank)
        return false;
    for (int k = 0; k < a->rank; k++)
        if (a->dims[k] != b->dims[k])
            return false;
    return true;
}

static inline bool is_integer(hs_dtype t)
{
    return t >= HS_S1 && t <= HS_U64;
}

static inline bool is_real_float(hs_dtype t)
{
    return t >= HS_F4E2M1FN && t <= HS_F64;
}

static inline bool is_float_or_complex(hs_dtype t)
{
    return is_real_float(t) || t == HS_C64 || t == HS_C128;
}

static inline bool is_array_type(hs_dtype t)
{
    return (int)t >= 0 && (int)t < (int)HS_TUPLE && t != HS_TOKEN;
}

/* XLA's SameElementTypeIgnoringFpPrecision. */
static inline bool same_type_ignoring_fp(hs_dtype a, hs_dtype b)
{
    return a == b || (is_real_float(a) && is_real_float(b));
}

/* XLA's HigherPrecisionElementType for two types that passed the check
 * above. */
static inline hs_dtype higher_precision(hs_dtype a, hs_dtype b)
{
    return hs_dtype_bits(b) > hs_dtype_bits(a) ? b : a;
}

static inline void set_array(hs_shape *out, hs_dtype t, int rank,
                             const int64_t *dims)
{
    *out = hs_shape_make(t, rank, dims);
}

/* The rules, by family. */
#define HS__RULE(name)                                                      \
    hs_status hs__infer_##name(const hs_instruction *i, hs_arena *a,        \
                               hs_shape *out, hs_error *err);
HS__RULE(unary_any)
HS__RULE(unary_float)
HS__RULE(unary_logical)
HS__RULE(convert)
HS__RULE(binary_any)
HS__RULE(binary_logical)
HS__RULE(select)
HS__RULE(clamp)
HS__RULE(is_finite)
HS__RULE(iota)
HS__RULE(broadcast)
HS__RULE(reshape)
HS__RULE(transpose)
HS__RULE(slice)
HS__RULE(pad)
HS__RULE(concatenate)
HS__RULE(reverse)
HS__RULE(dynamic_slice)
HS__RULE(dynamic_update_slice)
HS__RULE(gather)
HS__RULE(scatter)
HS__RULE(sort)
HS__RULE(topk)
HS__RULE(rng)
HS__RULE(rng_bit_generator)
HS__RULE(dot)
HS__RULE(convolution)
HS__RULE(reduce)
HS__RULE(reduce_window)
HS__RULE(select_and_scatter)
HS__RULE(batch_norm_training)
HS__RULE(batch_norm_inference)
HS__RULE(batch_norm_grad)
HS__RULE(tuple)
HS__RULE(get_tuple_element)
HS__RULE(while)
HS__RULE(call)
HS__RULE(copy)
HS__RULE(token)
HS__RULE(u32_scalar)
#undef HS__RULE

#endif
