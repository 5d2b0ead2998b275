/*
 * element_loops.c - element-wise ops at any executable element type, in
 * chunks through the wide types (element_loops.h).
 *
 * Each wide loop is written once per class with the element function of
 * element_ops.h, and specialised per opcode by a switch outside the loop
 * (ELEM functions are always inlined), so each case is a straight loop
 * the compiler can vectorise where the function allows.
 */
#include <math.h>

#include "numerics/element_loops.h"
#include "numerics/element_ops.h"
#include "numerics/element_types.h"

/* Every opcode of the unary (binary) element-wise families, generated
 * from hs_opcode.h's list, to specialise a loop per opcode:
 * SPECIALISE_UNARY(CALL) expands to a switch calling CALL(constant
 * opcode), so a new op of a family is specialised without a line here
 * (CALL is the macro each use defines before expanding it). */
#define SPECIALISE_CASE(E, CALL)                                           \
    case HS_OP_##E:                                                        \
        CALL(HS_OP_##E);                                                   \
        break;
#define SPECIALISE_OF_OWN(E, CALL)
#define SPECIALISE_OF_UNARY_ANY(E, CALL) SPECIALISE_CASE(E, CALL)
#define SPECIALISE_OF_UNARY_FLOAT(E, CALL) SPECIALISE_CASE(E, CALL)
#define SPECIALISE_OF_UNARY_LOGICAL(E, CALL) SPECIALISE_CASE(E, CALL)
#define SPECIALISE_OF_BINARY_ANY(E, CALL)
#define SPECIALISE_OF_BINARY_LOGICAL(E, CALL)
#define SPECIALISE_UNARY_OP(e, n, a, c, f) SPECIALISE_OF_##f(e, CALL)
#define SPECIALISE_UNARY(CALL)                                             \
    switch (op) {                                                          \
        HS_OPCODE_LIST(SPECIALISE_UNARY_OP)                                \
    default: CALL(op); break;                                              \
    }
#define SPECIALISE_BINARY_OF_OWN(E, CALL)
#define SPECIALISE_BINARY_OF_UNARY_ANY(E, CALL)
#define SPECIALISE_BINARY_OF_UNARY_FLOAT(E, CALL)
#define SPECIALISE_BINARY_OF_UNARY_LOGICAL(E, CALL)
#define SPECIALISE_BINARY_OF_BINARY_ANY(E, CALL) SPECIALISE_CASE(E, CALL)
#define SPECIALISE_BINARY_OF_BINARY_LOGICAL(E, CALL) SPECIALISE_CASE(E, CALL)
#define SPECIALISE_BINARY_OP(e, n, a, c, f) SPECIALISE_BINARY_OF_##f(e, CALL)
#define SPECIALISE_BINARY(CALL)                                            \
    switch (op) {                                                          \
        HS_OPCODE_LIST(SPECIALISE_BINARY_OP)                               \
    default: CALL(op); break;                                              \
    }

static bool is_shift(hs_opcode op)
{
    return op == HS_OP_SHIFT_LEFT || op == HS_OP_SHIFT_RIGHT_LOGICAL ||
           op == HS_OP_SHIFT_RIGHT_ARITHMETIC;
}

/* ---- wide loops ------------------------------------------------------------ */

#define DEFINE_WIDE_UNARY(NAME, T, EXPR)                                   \
    ELEM void NAME(hs_opcode op, int bits, const T *restrict a,            \
                   T *restrict y, int64_t n)                               \
    {                                                                      \
        (void)bits;                                                        \
        for (int64_t i = 0; i < n; i++)                                    \
            y[i] = (EXPR);                                                 \
    }
DEFINE_WIDE_UNARY(unary_wide_f32, float, unary_f32(op, a[i]))
DEFINE_WIDE_UNARY(unary_wide_f64, double, unary_f64(op, a[i]))
DEFINE_WIDE_UNARY(unary_wide_sint, int64_t, unary_sint(op, a[i], bits))
DEFINE_WIDE_UNARY(unary_wide_uint, uint64_t, unary_uint(op, a[i], bits))
DEFINE_WIDE_UNARY(unary_wide_pred, uint8_t, unary_pred(op, a[i]))

static void unary_wide(hs_opcode op, hs_dtype w, int bits, const void *a,
                       void *y, int64_t n)
{
    switch (w) {
#define CALL(o) unary_wide_f32(o, bits, a, y, n)
    case HS_F32: SPECIALISE_UNARY(CALL) break;
#undef CALL
#define CALL(o) unary_wide_f64(o, bits, a, y, n)
    case HS_F64: SPECIALISE_UNARY(CALL) break;
#undef CALL
#define CALL(o) unary_wide_sint(o, bits, a, y, n)
    case HS_S64: SPECIALISE_UNARY(CALL) break;
#undef CALL
#define CALL(o) unary_wide_uint(o, bits, a, y, n)
    case HS_U64: SPECIALISE_UNARY(CALL) break;
#undef CALL
    default: unary_wide_pred(op, bits, a, y, n); break;
    }
}

#define DEFINE_WIDE_BINARY(NAME, T, EXPR)                                  \
    ELEM void NAME(hs_opcode op, int bits, const T *restrict a,            \
                   const T *restrict b, T *restrict y, int64_t n)          \
    {                                                                      \
        (void)bits;                                                        \
        for (int64_t i = 0; i < n; i++)                                    \
            y[i] = (EXPR);                                                 \
    }
DEFINE_WIDE_BINARY(binary_wide_f32, float, binary_f32(op, a[i], b[i]))
DEFINE_WIDE_BINARY(binary_wide_f64, double, binary_f64(op, a[i], b[i]))
DEFINE_WIDE_BINARY(binary_wide_sint, int64_t,
                   is_shift(op) ? (int64_t)shift_elem(op, (uint64_t)a[i],
                                                      (uint64_t)b[i], bits)
                                : binary_s64(op, a[i], b[i]))
DEFINE_WIDE_BINARY(binary_wide_uint, uint64_t,
                   is_shift(op) ? shift_elem(op, a[i], b[i], bits)
                                : binary_u64(op, a[i], b[i]))
DEFINE_WIDE_BINARY(binary_wide_pred, uint8_t, binary_pred(op, a[i], b[i]))

static void binary_wide(hs_opcode op, hs_dtype w, int bits, const void *a,
                        const void *b, void *y, int64_t n)
{
    switch (w) {
#define CALL(o) binary_wide_f32(o, bits, a, b, y, n)
    case HS_F32: SPECIALISE_BINARY(CALL) break;
#undef CALL
#define CALL(o) binary_wide_f64(o, bits, a, b, y, n)
    case HS_F64: SPECIALISE_BINARY(CALL) break;
#undef CALL
#define CALL(o) binary_wide_sint(o, bits, a, b, y, n)
    case HS_S64: SPECIALISE_BINARY(CALL) break;
#undef CALL
#define CALL(o) binary_wide_uint(o, bits, a, b, y, n)
    case HS_U64: SPECIALISE_BINARY(CALL) break;
#undef CALL
    default: binary_wide_pred(op, bits, a, b, y, n); break;
    }
}

#define COMPARE_WIDE(T, FN)                                                \
    do {                                                                   \
        const T *restrict a_ = a, *restrict b_ = b;                        \
        for (int64_t i = 0; i < n; i++)                                    \
            y[i] = FN(d, a_[i], b_[i]);                                    \
    } while (0)

static void compare_wide(hs_direction d, hs_dtype w, const void *a,
                         const void *b, uint8_t *restrict y, int64_t n)
{
    switch (w) {
    case HS_F32: COMPARE_WIDE(float, compare_elem_f32); break;
    case HS_F64: COMPARE_WIDE(double, compare_elem_f64); break;
    case HS_S64: COMPARE_WIDE(int64_t, compare_elem_s64); break;
    case HS_U64: COMPARE_WIDE(uint64_t, compare_elem_u64); break;
    default: COMPARE_WIDE(uint8_t, compare_elem_pred); break;
    }
}

#define CLAMP_WIDE(T, FN)                                                  \
    do {                                                                   \
        const T *restrict l_ = lo, *restrict a_ = a, *restrict h_ = hi;    \
        T *restrict y_ = y;                                                \
        for (int64_t i = 0; i < n; i++)                                    \
            y_[i] = FN(l_[i * ls], a_[i], h_[i * hs]);                     \
    } while (0)

static void clamp_wide(hs_dtype w, const void *lo, int64_t ls, const void *a,
                       const void *hi, int64_t hs, void *y, int64_t n)
{
    switch (w) {
    case HS_F32: CLAMP_WIDE(float, clamp_elem_f32); break;
    case HS_F64: CLAMP_WIDE(double, clamp_elem_f64); break;
    case HS_S64: CLAMP_WIDE(int64_t, clamp_elem_s64); break;
    default: CLAMP_WIDE(uint64_t, clamp_elem_u64); break;
    }
}

/* ---- the chunked drivers ----------------------------------------------------- */

/* Operand k of a chunk: the data itself when it is already wide,
 * otherwise widened into buf. */
static const void *chunk_in(hs_dtype t, const void *data, int64_t at,
                            int64_t m, uint64_t *buf)
{
    const char *p = (const char *)data + at * elem_bytes(t);
    if (t == elem_wide(t))
        return p;
    elem_load(t, p, buf, m);
    return buf;
}

#define CHUNKS(n, BODY)                                                    \
    for (int64_t at = 0; at < (n); at += ELEM_CHUNK) {                     \
        int64_t m = (n) - at < ELEM_CHUNK ? (n) - at : ELEM_CHUNK;         \
        BODY;                                                              \
    }

bool elem_unary_run(hs_opcode op, hs_dtype t, const void *a, void *y,
                    int64_t n)
{
    if (!unary_defined(op, t))
        return false;
    hs_dtype w = elem_wide(t);
    int es = elem_bytes(t), bits = hs_dtype_bits(t);
    if (t == w) {
        unary_wide(op, w, bits, a, y, n);
        return true;
    }
    _Alignas(64) uint64_t ba[ELEM_CHUNK], by[ELEM_CHUNK];
    CHUNKS(n, {
        unary_wide(op, w, bits, chunk_in(t, a, at, m, ba), by, m);
        elem_store(t, w, by, (char *)y + at * es, m);
    })
    return true;
}

bool elem_binary_run(hs_opcode op, hs_dtype t, const void *a,
                     const void *b, void *y, int64_t n)
{
    if (!binary_defined(op, t))
        return false;
    hs_dtype w = elem_wide(t);
    int es = elem_bytes(t), bits = hs_dtype_bits(t);
    if (t == w) {
        binary_wide(op, w, bits, a, b, y, n);
        return true;
    }
    _Alignas(64) uint64_t ba[ELEM_CHUNK], bb[ELEM_CHUNK], by[ELEM_CHUNK];
    CHUNKS(n, {
        binary_wide(op, w, bits, chunk_in(t, a, at, m, ba),
                    chunk_in(t, b, at, m, bb), by, m);
        elem_store(t, w, by, (char *)y + at * es, m);
    })
    return true;
}

bool elem_compare_run(hs_direction d, hs_dtype t, const void *a,
                      const void *b, uint8_t *y, int64_t n)
{
    if (elem_class_of(t) == ELEM_NONE)
        return false;
    hs_dtype w = elem_wide(t);
    _Alignas(64) uint64_t ba[ELEM_CHUNK], bb[ELEM_CHUNK];
    CHUNKS(n, compare_wide(d, w, chunk_in(t, a, at, m, ba),
                           chunk_in(t, b, at, m, bb), y + at, m))
    return true;
}

bool elem_clamp_run(hs_dtype t, const void *lo, int64_t lstep,
                    const void *a, const void *hi, int64_t hstep, void *y,
                    int64_t n)
{
    elem_class c = elem_class_of(t);
    if (c == ELEM_NONE || c == ELEM_PRED)
        return false;
    hs_dtype w = elem_wide(t);
    int es = elem_bytes(t);
    _Alignas(64) uint64_t bl[ELEM_CHUNK], ba[ELEM_CHUNK], bh[ELEM_CHUNK],
        by[ELEM_CHUNK];
    CHUNKS(n, {
        /* A scalar bound (step 0) is its element 0 in every chunk. */
        const void *l = chunk_in(t, lo, lstep ? at : 0, lstep ? m : 1, bl);
        const void *h = chunk_in(t, hi, hstep ? at : 0, hstep ? m : 1, bh);
        void *out = t == w ? (char *)y + at * es : (void *)by;
        clamp_wide(w, l, lstep, chunk_in(t, a, at, m, ba), h, hstep, out, m);
        if (t != w)
            elem_store(t, w, by, (char *)y + at * es, m);
    })
    return true;
}

bool elem_is_finite_run(hs_dtype t, const void *a, uint8_t *y, int64_t n)
{
    hs_dtype w = elem_wide(t);
    if (w != HS_F32 && w != HS_F64)
        return false;
    _Alignas(64) uint64_t ba[ELEM_CHUNK];
    CHUNKS(n, {
        const void *p = chunk_in(t, a, at, m, ba);
        if (w == HS_F32)
            for (int64_t i = 0; i < m; i++)
                y[at + i] = isfinite(((const float *)p)[i]) != 0;
        else
            for (int64_t i = 0; i < m; i++)
                y[at + i] = isfinite(((const double *)p)[i]) != 0;
    })
    return true;
}

bool elem_reduce_precision_run(hs_dtype t, int e, int m, const void *a,
                               void *y, int64_t n)
{
    hs_dtype w = elem_wide(t);
    if ((w != HS_F32 && w != HS_F64) || e < 1 || m < 0)
        return false;
    int es = elem_bytes(t), exp_bits = e, mant_bits = m;
    bool f32 = w == HS_F32;
    _Alignas(64) uint64_t ba[ELEM_CHUNK], by[ELEM_CHUNK];
    CHUNKS(n, {
        const void *p = chunk_in(t, a, at, m, ba);
        void *out = t == w ? (char *)y + at * es : (void *)by;
        if (f32)
            for (int64_t i = 0; i < m; i++)
                ((uint32_t *)out)[i] = (uint32_t)reduce_precision_bits(
                    ((const uint32_t *)p)[i], 8, 23, exp_bits, mant_bits);
        else
            for (int64_t i = 0; i < m; i++)
                ((uint64_t *)out)[i] = reduce_precision_bits(
                    ((const uint64_t *)p)[i], 11, 52, exp_bits, mant_bits);
        if (t != w)
            elem_store(t, w, by, (char *)y + at * es, m);
    })
    return true;
}
