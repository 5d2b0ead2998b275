/*
 * kernels_elementwise.c - unary, binary, compare, select, clamp, convert
 * and is-finite for every executable element type.
 *
 * f32, s32, s64 and pred run the fast loops below. Each family has one
 * element function (always inlined) that takes the opcode; the opcode
 * switch sits outside the loops, so every loop is a straight line over
 * restrict pointers with a constant opcode that the compiler folds and
 * vectorises where the element function allows. Every other type (and
 * the ops the fast loops do not have, such as shifts) goes through
 * numerics/element_loops.h: chunks loaded into the type's wide type,
 * computed there and stored back, rounded or wrapped at its width.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "device/device_internal.h"
#include "numerics/element_loops.h"
#include "numerics/element_ops.h"

/* ---- loops ------------------------------------------------------------ */

/* The element loops are also built for AVX2 and picked at load time: the
 * same IEEE operation per element at either width, so the same bits. GCC
 * only: clang 14 (the fuzzing build, tests/fuzz/) names the resolver of a
 * function declared in a header "<name>.ifunc", which other files cannot
 * link against; without clones the loops give the same bits. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define AVX2_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define AVX2_CLONES
#endif

/* exp and logistic through numerics/vmath.h: eight lanes where the CPU has
 * AVX2, four otherwise, the same bits either way. */
#ifdef HS_VMATH_AVX2
__attribute__((target("avx2"))) static void exp_avx2(const float *restrict a,
                                                     float *restrict y,
                                                     int64_t n)
{
    HS_VMAP8(hs_vexpf8, hs_vexpf, a, y, n);
}

__attribute__((target("avx2"))) static void
logistic_avx2(const float *restrict a, float *restrict y, int64_t n)
{
    HS_VMAP8(hs_vlogistic8, hs_vlogistic, a, y, n);
}

static bool have_avx2(void)
{
    return __builtin_cpu_supports("avx2"); /* a load from libgcc's table */
}
#endif

ELEM void exp_loop(const float *restrict a, float *restrict y, int64_t n)
{
#ifdef HS_VMATH_AVX2
    if (have_avx2()) {
        exp_avx2(a, y, n);
        return;
    }
#endif
    HS_VMAP(hs_vexpf, a, y, n);
}

ELEM void logistic_loop(const float *restrict a, float *restrict y,
                          int64_t n)
{
#ifdef HS_VMATH_AVX2
    if (have_avx2()) {
        logistic_avx2(a, y, n);
        return;
    }
#endif
    HS_VMAP(hs_vlogistic, a, y, n);
}

#define MAP1(OP, FN, TA, TY)                                               \
    case OP:                                                               \
        VLOOP(n, y[i] = (TY)FN(OP, (TA)a[i]));                             \
        break;

/* Every float unary op (numerics/element_ops.h's list): exp and logistic
 * through their vectorised loops, the others a loop of the scalar
 * function. */
#define MAP_FLOAT_UNARY(E, F32, F64) MAP1(HS_OP_##E, unary_f32, float, float)
ELEM bool unary_f32_loop(hs_opcode op, const float *restrict a,
                           float *restrict y, int64_t n)
{
    if (op == HS_OP_EXP)
        exp_loop(a, y, n);
    else if (op == HS_OP_LOGISTIC)
        logistic_loop(a, y, n);
    else
        switch (op) {
            HS_FLOAT_UNARY_FUNCTIONS(MAP_FLOAT_UNARY)
        default: return false;
        }
    return true;
}

#define DEFINE_UNARY_INT_LOOP(NAME, T)                                     \
    ELEM bool NAME(hs_opcode op, const T *restrict a, T *restrict y,       \
                     int64_t n)                                            \
    {                                                                      \
        switch (op) {                                                      \
            MAP1(HS_OP_ABS, unary_int, int64_t, T)                         \
            MAP1(HS_OP_NEGATE, unary_int, int64_t, T)                      \
            MAP1(HS_OP_SIGN, unary_int, int64_t, T)                        \
            MAP1(HS_OP_NOT, unary_int, int64_t, T)                         \
        default: return false;                                             \
        }                                                                  \
        return true;                                                       \
    }
DEFINE_UNARY_INT_LOOP(unary_s32_loop, int32_t)
DEFINE_UNARY_INT_LOOP(unary_s64_loop, int64_t)

#define MAP2(OP, FN)                                                       \
    case OP:                                                               \
        VLOOP(n, y[i] = FN(OP, a[i], b[i]));                               \
        break;

/* Every float binary op (numerics/element_ops.h's list): a loop of the
 * scalar function. */
#define MAP_FLOAT_BINARY(E, F32, F64) MAP2(HS_OP_##E, binary_f32)
ELEM bool binary_f32_loop(hs_opcode op, const float *restrict a,
                          const float *restrict b, float *restrict y,
                          int64_t n)
{
    switch (op) {
        HS_FLOAT_BINARY_FUNCTIONS(MAP_FLOAT_BINARY)
    default: return false;
    }
    return true;
}

/* The integer and pred loops: the arithmetic ops (not on pred) and the
 * bitwise ones; shifts go through the wide loops. */
#define DEFINE_BINARY_LOOP(NAME, T, FN, ARITH)                             \
    ELEM bool NAME(hs_opcode op, const T *restrict a, const T *restrict b, \
                     T *restrict y, int64_t n)                             \
    {                                                                      \
        switch (op) {                                                      \
            MAP2(HS_OP_ADD, FN)                                            \
            MAP2(HS_OP_SUBTRACT, FN)                                       \
            MAP2(HS_OP_MULTIPLY, FN)                                       \
            MAP2(HS_OP_MAXIMUM, FN)                                        \
            MAP2(HS_OP_MINIMUM, FN)                                        \
            MAP2(HS_OP_AND, FN)                                            \
            MAP2(HS_OP_OR, FN)                                             \
            MAP2(HS_OP_XOR, FN)                                            \
        case HS_OP_DIVIDE: case HS_OP_POWER: case HS_OP_REMAINDER:         \
            if (!(ARITH))                                                  \
                return false;                                              \
            switch (op) {                                                  \
                MAP2(HS_OP_DIVIDE, FN)                                     \
                MAP2(HS_OP_POWER, FN)                                      \
                MAP2(HS_OP_REMAINDER, FN)                                  \
            default: break;                                                \
            }                                                              \
            break;                                                         \
        default: return false;                                             \
        }                                                                  \
        return true;                                                       \
    }
DEFINE_BINARY_LOOP(binary_s32_loop, int32_t, binary_s32, true)
DEFINE_BINARY_LOOP(binary_s64_loop, int64_t, binary_s64, true)
DEFINE_BINARY_LOOP(binary_pred_loop, uint8_t, binary_pred, false)

/* ---- kernels ---------------------------------------------------------- */

static hs_status bad_type(dev_ctx *x, const hs_instruction *in,
                          hs_dtype t)
{
    char what[96];
    snprintf(what, sizeof what, "opcode '%s' on element type '%s'",
             hs_opcode_name(in->opcode), hs_dtype_name(t));
    return dev_unsupported(x, in, what);
}

static hs_status same_size(dev_ctx *x, const hs_instruction *in,
                           const dev_val *a, int64_t n)
{
    if (a->elems || hs_shape_elements(a->shape) != n)
        return hs_error_set(x->err, HS_ERR_SHAPE,
                            "instruction %s: operand shapes do not match "
                            "the result", in->name);
    return HS_OK;
}

bool dev_unary_supported(hs_opcode op, hs_dtype t)
{
    return unary_defined(op, t);
}

AVX2_CLONES void dev_unary_loop(hs_opcode op, hs_dtype t, const void *a,
                                void *y, int64_t n)
{
    switch (t) {
    case HS_F32:
        if (unary_f32_loop(op, a, y, n))
            return;
        break;
    case HS_S32:
        if (unary_s32_loop(op, a, y, n))
            return;
        break;
    case HS_S64:
        if (unary_s64_loop(op, a, y, n))
            return;
        break;
    case HS_PRED: {
        const uint8_t *restrict ap = a;
        uint8_t *restrict yp = y;
        VLOOP(n, yp[i] = unary_pred(HS_OP_NOT, ap[i])); /* its one op */
        return;
    }
    default: break;
    }
    elem_unary_run(op, t, a, y, n);
}

/* The kernels of one operand and one result of the same size (unary,
 * convert, is-finite, reduce-precision): `ok` says whether the operand's
 * type fits the instruction (NULL: any), `run` writes the n results. */
typedef bool (*one_operand_ok)(const hs_instruction *in, hs_dtype from);
typedef void (*one_operand_run)(const hs_instruction *in, hs_dtype from,
                                const void *a, void *y, int64_t n);

static hs_status one_operand(dev_ctx *x, const dev_step *s, dev_val **f,
                             dev_val **out, one_operand_ok ok,
                             one_operand_run run)
{
    const hs_instruction *in = s->in;
    const dev_val *a = dev_op(s, f, 0);
    int64_t n = hs_shape_elements(&in->shape);
    hs_status st = same_size(x, in, a, n);
    if (st)
        return st;
    if (ok && !ok(in, a->shape->dtype))
        return bad_type(x, in, a->shape->dtype);
    dev_val *v = dev_array_new(x, &in->shape);
    if (!v)
        return x->err->status;
    run(in, a->shape->dtype, a->block->data, v->block->data, n);
    *out = v;
    return HS_OK;
}

static bool unary_ok(const hs_instruction *in, hs_dtype from)
{
    return from == in->shape.dtype && dev_unary_supported(in->opcode, from);
}

static void unary_run(const hs_instruction *in, hs_dtype from,
                      const void *a, void *y, int64_t n)
{
    dev_unary_loop(in->opcode, from, a, y, n);
}

hs_status dev_k_unary(dev_ctx *x, const dev_step *s, dev_val **f,
                      dev_val **out)
{
    return one_operand(x, s, f, out, unary_ok, unary_run);
}

AVX2_CLONES bool dev_binary_loop(hs_opcode op, hs_dtype t, const void *a,
                                 const void *b, void *y, int64_t n)
{
    bool done = false;
    switch (t) {
    case HS_F32: done = binary_f32_loop(op, a, b, y, n); break;
    case HS_S32: done = binary_s32_loop(op, a, b, y, n); break;
    case HS_S64: done = binary_s64_loop(op, a, b, y, n); break;
    case HS_PRED: done = binary_pred_loop(op, a, b, y, n); break;
    default: break;
    }
    return done || elem_binary_run(op, t, a, b, y, n);
}

hs_status dev_k_binary(dev_ctx *x, const dev_step *s, dev_val **f,
                       dev_val **out)
{
    const hs_instruction *in = s->in;
    const dev_val *a = dev_op(s, f, 0), *b = dev_op(s, f, 1);
    int64_t n = hs_shape_elements(&in->shape);
    hs_status st = same_size(x, in, a, n);
    if (!st)
        st = same_size(x, in, b, n);
    if (st)
        return st;
    hs_dtype t = in->shape.dtype;
    if (a->shape->dtype != t || b->shape->dtype != t)
        return bad_type(x, in, a->shape->dtype);
    dev_val *v = dev_array_new(x, &in->shape);
    if (!v)
        return x->err->status;
    if (!dev_binary_loop(in->opcode, t, a->block->data, b->block->data,
                         v->block->data, n)) {
        dev_release(x, v);
        return bad_type(x, in, t);
    }
    *out = v;
    return HS_OK;
}

#define CMP_CASE(DIR, FN)                                                  \
    case DIR:                                                              \
        VLOOP(n, y[i] = FN(DIR, a[i], b[i]));                              \
        break;

#define DEFINE_COMPARE_LOOP(NAME, T, FN)                                   \
    ELEM void NAME(hs_direction d, const T *restrict a,                    \
                     const T *restrict b, uint8_t *restrict y, int64_t n)  \
    {                                                                      \
        switch (d) {                                                       \
            CMP_CASE(HS_DIR_EQ, FN)                                        \
            CMP_CASE(HS_DIR_NE, FN)                                        \
            CMP_CASE(HS_DIR_LT, FN)                                        \
            CMP_CASE(HS_DIR_LE, FN)                                        \
            CMP_CASE(HS_DIR_GT, FN)                                        \
            CMP_CASE(HS_DIR_GE, FN)                                        \
        default: memset(y, 0, (size_t)n); break;                           \
        }                                                                  \
    }
DEFINE_COMPARE_LOOP(compare_f32, float, compare_elem_f32)
DEFINE_COMPARE_LOOP(compare_s32, int32_t, compare_elem_s32)
DEFINE_COMPARE_LOOP(compare_s64, int64_t, compare_elem_s64)
DEFINE_COMPARE_LOOP(compare_pred, uint8_t, compare_elem_pred)

AVX2_CLONES void dev_compare_loop(hs_direction d, hs_dtype t,
                                  const void *a, const void *b, uint8_t *y,
                                  int64_t n)
{
    switch (t) {
    case HS_F32: compare_f32(d, a, b, y, n); break;
    case HS_S32: compare_s32(d, a, b, y, n); break;
    case HS_S64: compare_s64(d, a, b, y, n); break;
    case HS_PRED: compare_pred(d, a, b, y, n); break;
    default: elem_compare_run(d, t, a, b, y, n); break;
    }
}

hs_status dev_k_compare(dev_ctx *x, const dev_step *s, dev_val **f,
                        dev_val **out)
{
    const hs_instruction *in = s->in;
    const dev_val *a = dev_op(s, f, 0), *b = dev_op(s, f, 1);
    int64_t n = hs_shape_elements(&in->shape);
    hs_status st = same_size(x, in, a, n);
    if (!st)
        st = same_size(x, in, b, n);
    if (st)
        return st;
    hs_dtype t = a->shape->dtype;
    if (b->shape->dtype != t || in->shape.dtype != HS_PRED)
        return bad_type(x, in, t);
    if (in->direction == HS_DIR_NONE)
        return hs_error_set(x->err, HS_ERR_INVALID,
                            "instruction %s: compare without direction",
                            in->name);
    dev_val *v = dev_array_new(x, &in->shape);
    if (!v)
        return x->err->status;
    dev_compare_loop(in->direction, t, a->block->data, b->block->data,
                     v->block->data, n);
    *out = v;
    return HS_OK;
}

#define DEFINE_SELECT_LOOP(NAME, T)                                        \
    ELEM void NAME(const uint8_t *restrict p, int64_t pstep,               \
                     const T *restrict a, const T *restrict b,             \
                     T *restrict y, int64_t n)                             \
    {                                                                      \
        if (pstep == 0) {                                                  \
            memcpy(y, p[0] ? a : b, (size_t)n * sizeof(T));                \
            return;                                                        \
        }                                                                  \
        VLOOP(n, {                                                         \
            T m_ = (T)0 - (T)(p[i] != 0); /* branch-free: vectorises */    \
            y[i] = (a[i] & m_) | (b[i] & ~m_);                             \
        });                                                                \
    }
DEFINE_SELECT_LOOP(select_4, uint32_t)
DEFINE_SELECT_LOOP(select_1, uint8_t)
DEFINE_SELECT_LOOP(select_8, uint64_t)
DEFINE_SELECT_LOOP(select_2, uint16_t)

AVX2_CLONES void dev_select_loop(int esize, const uint8_t *p,
                                 int64_t pstep, const void *a, const void *b,
                                 void *y, int64_t n)
{
    switch (esize) {
    case 4: select_4(p, pstep, a, b, y, n); break;
    case 8: select_8(p, pstep, a, b, y, n); break;
    case 2: select_2(p, pstep, a, b, y, n); break;
    default: select_1(p, pstep, a, b, y, n); break;
    }
}

hs_status dev_k_select(dev_ctx *x, const dev_step *s, dev_val **f,
                       dev_val **out)
{
    const hs_instruction *in = s->in;
    const dev_val *p = dev_op(s, f, 0), *a = dev_op(s, f, 1),
                  *b = dev_op(s, f, 2);
    if (a->elems || b->elems)
        return dev_unsupported(x, in, "a select of tuples");
    int64_t n = hs_shape_elements(&in->shape);
    hs_status st = same_size(x, in, a, n);
    if (!st)
        st = same_size(x, in, b, n);
    int64_t pn = p->elems ? -1 : hs_shape_elements(p->shape);
    if (!st && pn != n && pn != 1)
        st = same_size(x, in, p, n);
    if (st)
        return st;
    if (p->shape->dtype != HS_PRED)
        return bad_type(x, in, p->shape->dtype);
    dev_val *v = dev_array_new(x, &in->shape);
    if (!v)
        return x->err->status;
    dev_select_loop(dev_esize(in->shape.dtype), p->block->data,
                    pn == n ? 1 : 0, a->block->data, b->block->data,
                    v->block->data, n);
    *out = v;
    return HS_OK;
}

#define DEFINE_CLAMP_LOOP(NAME, T, FN)                                     \
    ELEM void NAME(const T *restrict lo, int64_t lstep,                    \
                     const T *restrict a, const T *restrict hi,            \
                     int64_t hstep, T *restrict y, int64_t n)              \
    {                                                                      \
        VLOOP(n, y[i] = FN(lo[i * lstep], a[i], hi[i * hstep]));           \
    }
DEFINE_CLAMP_LOOP(clamp_f32, float, clamp_elem_f32)
DEFINE_CLAMP_LOOP(clamp_s32, int32_t, clamp_elem_s32)
DEFINE_CLAMP_LOOP(clamp_s64, int64_t, clamp_elem_s64)

AVX2_CLONES void dev_clamp_loop(hs_dtype t, const void *lo, int64_t lstep,
                                const void *a, const void *hi,
                                int64_t hstep, void *y, int64_t n)
{
    switch (t) {
    case HS_F32: clamp_f32(lo, lstep, a, hi, hstep, y, n); break;
    case HS_S32: clamp_s32(lo, lstep, a, hi, hstep, y, n); break;
    case HS_S64: clamp_s64(lo, lstep, a, hi, hstep, y, n); break;
    default: elem_clamp_run(t, lo, lstep, a, hi, hstep, y, n); break;
    }
}

hs_status dev_k_clamp(dev_ctx *x, const dev_step *s, dev_val **f,
                      dev_val **out)
{
    const hs_instruction *in = s->in;
    const dev_val *lo = dev_op(s, f, 0), *a = dev_op(s, f, 1),
                  *hi = dev_op(s, f, 2);
    int64_t n = hs_shape_elements(&in->shape);
    hs_status st = same_size(x, in, a, n);
    int64_t ln = lo->elems ? -1 : hs_shape_elements(lo->shape);
    int64_t hn = hi->elems ? -1 : hs_shape_elements(hi->shape);
    if (!st && ln != 1 && ln != n)
        st = same_size(x, in, lo, n);
    if (!st && hn != 1 && hn != n)
        st = same_size(x, in, hi, n);
    if (st)
        return st;
    hs_dtype t = a->shape->dtype;
    if (lo->shape->dtype != t || hi->shape->dtype != t || t == HS_PRED)
        return bad_type(x, in, t);
    dev_val *v = dev_array_new(x, &in->shape);
    if (!v)
        return x->err->status;
    dev_clamp_loop(t, lo->block->data, ln == n ? 1 : 0, a->block->data,
                   hi->block->data, hn == n ? 1 : 0, v->block->data, n);
    *out = v;
    return HS_OK;
}

/* ---- convert ------------------------------------------------------------ */

#define CONVERT_LOOP(TI, TO, EXPR)                                         \
    do {                                                                   \
        const TI *restrict a_ = ad;                                        \
        TO *restrict y_ = y;                                               \
        VLOOP(n, {                                                         \
            TI v = a_[i];                                                  \
            y_[i] = (TO)(EXPR);                                            \
        });                                                                \
    } while (0)

#define CONVERT_FROM(TI, TO_F32, TO_S32, TO_S64)                           \
    switch (to) {                                                          \
    case HS_F32: CONVERT_LOOP(TI, float, TO_F32); break;                   \
    case HS_S32: CONVERT_LOOP(TI, int32_t, TO_S32); break;                 \
    case HS_S64: CONVERT_LOOP(TI, int64_t, TO_S64); break;                 \
    default: CONVERT_LOOP(TI, uint8_t, v != 0); break;                     \
    }

/* The types with loops of their own here; the others convert through
 * numerics/element_types.h. */
static bool fast_type(hs_dtype t)
{
    return t == HS_F32 || t == HS_S32 || t == HS_S64 || t == HS_PRED;
}

AVX2_CLONES void dev_convert_loop(hs_dtype from, hs_dtype to,
                                  const void *ad, void *y, int64_t n)
{
    if (from == to) {
        memcpy(y, ad, (size_t)n * (size_t)dev_esize(to));
        return;
    }
    if (!fast_type(from) || !fast_type(to)) {
        elem_convert(from, to, ad, y, n);
        return;
    }
    switch (from) {
    case HS_F32: CONVERT_FROM(float, v, f32_to_s32(v), f32_to_s64(v)); break;
    case HS_S32: CONVERT_FROM(int32_t, (float)v, v, v); break;
    case HS_S64: CONVERT_FROM(int64_t, (float)v, (int32_t)v, v); break;
    default: CONVERT_FROM(uint8_t, v != 0, v != 0, v != 0); break;
    }
}

static void convert_run(const hs_instruction *in, hs_dtype from,
                        const void *a, void *y, int64_t n)
{
    dev_convert_loop(from, in->shape.dtype, a, y, n);
}

hs_status dev_k_convert(dev_ctx *x, const dev_step *s, dev_val **f,
                        dev_val **out)
{
    return one_operand(x, s, f, out, NULL, convert_run);
}

/* ---- is-finite ------------------------------------------------------------ */

static bool is_finite_ok(const hs_instruction *in, hs_dtype from)
{
    return in->shape.dtype == HS_PRED && hs_dtype_is_float(from);
}

static void is_finite_run(const hs_instruction *in, hs_dtype from,
                          const void *a, void *y, int64_t n)
{
    (void)in;
    elem_is_finite_run(from, a, y, n);
}

hs_status dev_k_is_finite(dev_ctx *x, const dev_step *s, dev_val **f,
                          dev_val **out)
{
    return one_operand(x, s, f, out, is_finite_ok, is_finite_run);
}

/* ---- reduce-precision --------------------------------------------------- */

/* Its bit counts were checked at plan time (plan.c). */
static bool reduce_precision_ok(const hs_instruction *in, hs_dtype from)
{
    return from == in->shape.dtype && hs_dtype_is_float(from);
}

static void reduce_precision_run(const hs_instruction *in, hs_dtype from,
                                 const void *a, void *y, int64_t n)
{
    elem_reduce_precision_run(from, (int)in->dims[0], (int)in->dims[1], a,
                              y, n);
}

hs_status dev_k_reduce_precision(dev_ctx *x, const dev_step *s, dev_val **f,
                                 dev_val **out)
{
    return one_operand(x, s, f, out, reduce_precision_ok,
                       reduce_precision_run);
}
