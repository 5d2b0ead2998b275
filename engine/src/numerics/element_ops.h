/*
 * element_ops.h - what one element of an element-wise op is: the scalar
 * semantics of hloscope, written once.
 *
 * The device's kernels (device/kernels_elementwise.c, kernels_reduce.c,
 * fused programs) and the constant folder (passes/fold.c) call these
 * functions, so a folded constant has the bits the device would compute
 * for the same op. Always inlined with a constant opcode, so each kernel
 * loop that uses one compiles to the single operation it names.
 *
 * Semantics follow XLA's evaluator where C would be undefined: integer
 * arithmetic wraps, integer division by zero gives -1, remainder by zero
 * gives the dividend, MIN / -1 gives MIN and MIN % -1 gives 0, float to
 * integer conversion saturates and maps NaN to 0, maximum and minimum
 * propagate NaN. exp and logistic are the vectorised polynomial of
 * vmath.h, lane 0 for a scalar.
 *
 * Element types: f32, s32, s64 and pred (bytes 0 or 1). *_defined says
 * which (opcode, type) pairs have a meaning; the others are errors on the
 * device and are not folded.
 */
#ifndef HS_NUMERICS_ELEMENT_OPS_H
#define HS_NUMERICS_ELEMENT_OPS_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "hloscope/hs_ir.h"
#include "numerics/vmath.h"

#define ELEM static inline __attribute__((always_inline))

/* ---- which element functions exist ---------------------------------- */

/* A unary element-wise opcode on its element type (operand and result
 * alike). */
static inline bool unary_defined(hs_opcode op, hs_dtype t)
{
    switch (t) {
    case HS_F32: return op != HS_OP_NOT;
    case HS_PRED: return op == HS_OP_NOT;
    case HS_S32: case HS_S64:
        return op == HS_OP_NOT || op == HS_OP_ABS || op == HS_OP_NEGATE ||
               op == HS_OP_SIGN;
    default: return false;
    }
}

/* A binary element-wise opcode (add ... xor) on its element type. */
static inline bool binary_defined(hs_opcode op, hs_dtype t)
{
    if (t != HS_F32 && t != HS_S32 && t != HS_S64 && t != HS_PRED)
        return false;
    switch (op) {
    case HS_OP_ADD: case HS_OP_SUBTRACT: case HS_OP_MULTIPLY:
    case HS_OP_MAXIMUM: case HS_OP_MINIMUM:
        return true;
    case HS_OP_DIVIDE: case HS_OP_POWER: case HS_OP_REMAINDER:
        return t != HS_PRED;
    case HS_OP_AND: case HS_OP_OR: case HS_OP_XOR:
        return t != HS_F32;
    default:
        return false;
    }
}

/* ---- unary ------------------------------------------------------------ */

ELEM float unary_f32(hs_opcode op, float v)
{
    switch (op) {
    case HS_OP_ABS: return fabsf(v);
    case HS_OP_NEGATE: return -v;
    case HS_OP_EXP: return hs_expf(v);
    case HS_OP_EXPM1: return expm1f(v);
    case HS_OP_LOG: return logf(v);
    case HS_OP_LOG1P: return log1pf(v);
    case HS_OP_SQRT: return sqrtf(v);
    case HS_OP_RSQRT: return 1.0f / sqrtf(v);
    case HS_OP_TANH: return tanhf(v);
    case HS_OP_LOGISTIC: return hs_logisticf(v);
    case HS_OP_ERF: return erff(v);
    case HS_OP_SIGN: return v > 0 ? 1.0f : v < 0 ? -1.0f : v;
    case HS_OP_FLOOR: return floorf(v);
    case HS_OP_CEIL: return ceilf(v);
    case HS_OP_COS: return cosf(v);
    case HS_OP_SIN: return sinf(v);
    default: return v;
    }
}

/* s32 and s64 go through int64_t and are narrowed by the caller, which
 * wraps as the narrower type would. */
ELEM int64_t unary_int(hs_opcode op, int64_t v)
{
    switch (op) {
    case HS_OP_ABS: return v < 0 ? (int64_t)(0 - (uint64_t)v) : v;
    case HS_OP_NEGATE: return (int64_t)(0 - (uint64_t)v);
    case HS_OP_SIGN: return (v > 0) - (v < 0);
    case HS_OP_NOT: return ~v;
    default: return v;
    }
}

ELEM uint8_t unary_pred(hs_opcode op, uint8_t v)
{
    return op == HS_OP_NOT ? !v : v;
}

/* ---- binary ----------------------------------------------------------- */

ELEM float binary_f32(hs_opcode op, float a, float b)
{
    switch (op) {
    case HS_OP_ADD: return a + b;
    case HS_OP_SUBTRACT: return a - b;
    case HS_OP_MULTIPLY: return a * b;
    case HS_OP_DIVIDE: return a / b;
    /* XLA's maximum and minimum propagate NaN. */
    case HS_OP_MAXIMUM: return (a > b || a != a) ? a : b;
    case HS_OP_MINIMUM: return (a < b || a != a) ? a : b;
    case HS_OP_POWER: return powf(a, b);
    case HS_OP_REMAINDER: return fmodf(a, b);
    default: return a;
    }
}

static inline int64_t ipow(int64_t base, int64_t e)
{
    if (e < 0)
        return base == 1 ? 1 : base == -1 ? ((e & 1) ? -1 : 1) : 0;
    uint64_t r = 1, b = (uint64_t)base;
    while (e) {
        if (e & 1)
            r *= b;
        b *= b;
        e >>= 1;
    }
    return (int64_t)r;
}

#define DEFINE_BINARY_INT(NAME, T, UT, TMIN)                               \
    ELEM T NAME(hs_opcode op, T a, T b)                                    \
    {                                                                      \
        switch (op) {                                                      \
        case HS_OP_ADD: return (T)((UT)a + (UT)b);                         \
        case HS_OP_SUBTRACT: return (T)((UT)a - (UT)b);                    \
        case HS_OP_MULTIPLY: return (T)((UT)a * (UT)b);                    \
        case HS_OP_DIVIDE:                                                 \
            return b == 0 ? (T)-1 : (a == TMIN && b == -1) ? a : a / b;    \
        case HS_OP_REMAINDER:                                              \
            return b == 0 ? a : (a == TMIN && b == -1) ? 0 : a % b;        \
        case HS_OP_MAXIMUM: return a > b ? a : b;                          \
        case HS_OP_MINIMUM: return a < b ? a : b;                          \
        case HS_OP_POWER: return (T)ipow(a, b);                            \
        case HS_OP_AND: return a & b;                                      \
        case HS_OP_OR: return a | b;                                       \
        case HS_OP_XOR: return a ^ b;                                      \
        default: return a;                                                 \
        }                                                                  \
    }
DEFINE_BINARY_INT(binary_s32, int32_t, uint32_t, INT32_MIN)
DEFINE_BINARY_INT(binary_s64, int64_t, uint64_t, INT64_MIN)

/* pred is arithmetic modulo 2 with max = or, min = and. */
ELEM uint8_t binary_pred(hs_opcode op, uint8_t a, uint8_t b)
{
    switch (op) {
    case HS_OP_AND: case HS_OP_MINIMUM: case HS_OP_MULTIPLY: return a & b;
    case HS_OP_OR: case HS_OP_MAXIMUM: case HS_OP_ADD: return a | b;
    case HS_OP_XOR: case HS_OP_SUBTRACT: return a ^ b;
    default: return a;
    }
}

/* ---- compare and clamp -------------------------------------------------- */

/* compare(a, b), direction=d; false for HS_DIR_NONE. Floats compare as
 * IEEE does (NaN is unordered: only NE holds). */
#define DEFINE_COMPARE(NAME, T)                                            \
    ELEM uint8_t NAME(hs_direction d, T a, T b)                            \
    {                                                                      \
        switch (d) {                                                       \
        case HS_DIR_EQ: return a == b;                                     \
        case HS_DIR_NE: return a != b;                                     \
        case HS_DIR_LT: return a < b;                                      \
        case HS_DIR_LE: return a <= b;                                     \
        case HS_DIR_GT: return a > b;                                      \
        case HS_DIR_GE: return a >= b;                                     \
        default: return 0;                                                 \
        }                                                                  \
    }
DEFINE_COMPARE(compare_elem_f32, float)
DEFINE_COMPARE(compare_elem_s32, int32_t)
DEFINE_COMPARE(compare_elem_s64, int64_t)
DEFINE_COMPARE(compare_elem_pred, uint8_t)

/* clamp(lo, v, hi): v raised to lo, then lowered to hi. A NaN v stays
 * NaN; a NaN bound is ignored (both compares fail). */
#define DEFINE_CLAMP(NAME, T)                                              \
    ELEM T NAME(T lo, T v, T hi)                                           \
    {                                                                      \
        v = v < lo ? lo : v;                                               \
        return v > hi ? hi : v;                                            \
    }
DEFINE_CLAMP(clamp_elem_f32, float)
DEFINE_CLAMP(clamp_elem_s32, int32_t)
DEFINE_CLAMP(clamp_elem_s64, int64_t)

/* ---- convert ------------------------------------------------------------ */

/* Float to integer saturates and maps NaN to 0, as XLA does. Integer to
 * float rounds to nearest ((float)v); integer narrowing wraps; anything
 * to pred is v != 0. */
ELEM int32_t f32_to_s32(float v)
{
    if (v != v)
        return 0;
    if (v >= 2147483648.0f)
        return INT32_MAX;
    if (v < -2147483648.0f)
        return INT32_MIN;
    return (int32_t)v;
}

ELEM int64_t f32_to_s64(float v)
{
    if (v != v)
        return 0;
    if (v >= 9223372036854775808.0f)
        return INT64_MAX;
    if (v < -9223372036854775808.0f)
        return INT64_MIN;
    return (int64_t)v;
}

#endif
