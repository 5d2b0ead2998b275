/*
 * element_ops.h - what one element of an element-wise op is: the scalar
 * semantics of hloscope, written once.
 *
 * The device's kernels (device/kernels_elementwise.c, kernels_reduce.c,
 * fused programs), the wide loops of every other element type
 * (numerics/element_loops.c) and the constant folder (passes/fold.c) call
 * these functions, so a folded constant has the bits the device would
 * compute for the same op. Always inlined with a constant opcode, so each
 * kernel loop that uses one compiles to the single operation it names.
 *
 * Semantics follow XLA's evaluator where C would be undefined: integer
 * arithmetic wraps, integer division by zero gives -1 (all ones for
 * unsigned types), remainder by zero gives the dividend, MIN / -1 gives
 * MIN and MIN % -1 gives 0, a shift by an amount outside [0, width) gives
 * 0 (shift-left, shift-right-logical) or the sign (shift-right-arithmetic),
 * float to integer conversion saturates and maps NaN to 0, maximum and
 * minimum propagate NaN. exp and logistic are the vectorised polynomial of
 * vmath.h, lane 0 for a scalar.
 *
 * Element types: every type computes in its wide type
 * (numerics/element_types.h): f32, f64, int64_t (signed integers,
 * sign-extended), uint64_t (unsigned, zero-extended) or pred (bytes 0 or
 * 1); the narrower integer types are truncated when stored, which wraps
 * as the narrower type would. Shifts, popcnt and count-leading-zeros are
 * the only operations that need the width itself (`bits`). *_defined says
 * which (opcode, type) pairs have a meaning; the others are errors on the
 * device and are not folded.
 */
#ifndef HS_NUMERICS_ELEMENT_OPS_H
#define HS_NUMERICS_ELEMENT_OPS_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "hloscope/hs_ir.h"
#include "numerics/element_types.h"
#include "numerics/vmath.h"

#define ELEM static inline __attribute__((always_inline))

/* ---- which element functions exist ---------------------------------- */

/* A unary element-wise opcode on its element type (operand and result
 * alike). */
static inline bool unary_defined(hs_opcode op, hs_dtype t)
{
    switch (elem_class_of(t)) {
    case ELEM_F32: case ELEM_F64:
        return op != HS_OP_NOT && op != HS_OP_POPCNT && op != HS_OP_CLZ;
    case ELEM_PRED: return op == HS_OP_NOT;
    case ELEM_SINT: case ELEM_UINT:
        return op == HS_OP_NOT || op == HS_OP_ABS || op == HS_OP_NEGATE ||
               op == HS_OP_SIGN || op == HS_OP_POPCNT || op == HS_OP_CLZ;
    default: return false;
    }
}

/* ---- unary ------------------------------------------------------------ */

/* The float functions of every float unary op (hs_opcode.h's families
 * UNARY_FLOAT and UNARY_ANY), one line each: X(E, f32 of v, f64 of v).
 * f32 is what the device computes (exp and logistic: vmath.h's vectorised
 * polynomial, lane 0 for a scalar); f64 computes in double with the C
 * library's functions (XLA's CPU backend calls LLVM's f64 intrinsics or
 * libm). unary_f32 / unary_f64 below, the device's f32 loops
 * (device/kernels_elementwise.c) and the wide loops of every other type
 * (numerics/element_loops.c) are generated from this list, so a new op
 * takes this one line here; forgetting it, naming an op of another
 * family or naming one twice does not compile. */
#define HS_FLOAT_UNARY_FUNCTIONS(X)                                        \
    X(ABS, fabsf(v), fabs(v))                                              \
    X(NEGATE, -v, -v)                                                      \
    X(EXP, hs_expf(v), exp(v))                                             \
    X(EXPM1, expm1f(v), expm1(v))                                          \
    X(LOG, logf(v), log(v))                                                \
    X(LOG1P, log1pf(v), log1p(v))                                          \
    X(SQRT, sqrtf(v), sqrt(v))                                             \
    X(RSQRT, 1.0f / sqrtf(v), 1.0 / sqrt(v))                               \
    X(TANH, tanhf(v), tanh(v))                                             \
    X(LOGISTIC, hs_logisticf(v), 1.0 / (1.0 + exp(-v)))                    \
    X(ERF, erff(v), erf(v))                                                \
    X(SIGN, v > 0 ? 1.0f : v < 0 ? -1.0f : v, v > 0 ? 1.0 : v < 0 ? -1.0 : v) \
    X(FLOOR, floorf(v), floor(v))                                          \
    X(CEIL, ceilf(v), ceil(v))                                             \
    X(COS, cosf(v), cos(v))                                                \
    X(SIN, sinf(v), sin(v))                                                \
    X(TAN, tanf(v), tan(v))                                                \
    X(CBRT, cbrtf(v), cbrt(v))                                             \
    X(ROUND_NEAREST_EVEN, rintf(v), rint(v)) /* the default mode */        \
    X(ROUND_NEAREST_AFZ, roundf(v), round(v))

/* Every entry is a float unary op, and every float unary op has an entry
 * (a duplicate is a duplicate case in unary_f32). */
#define HS__FLOAT_UNARY_ONE(E, F32, F64) +1
_Static_assert(0 HS_FLOAT_UNARY_FUNCTIONS(HS__FLOAT_UNARY_ONE) ==
                   HS_N_FLOAT_UNARY,
               "a float unary op of hs_opcode.h (family UNARY_FLOAT or "
               "UNARY_ANY) has no line in HS_FLOAT_UNARY_FUNCTIONS");
#define HS__FLOAT_UNARY_MEMBER(E, F32, F64)                                \
    _Static_assert(HS_IS_FLOAT_UNARY_FAMILY(HS_FAMILY_OF_##E),             \
                   #E " is in HS_FLOAT_UNARY_FUNCTIONS but its family in " \
                   "hs_opcode.h is not UNARY_FLOAT or UNARY_ANY");
HS_FLOAT_UNARY_FUNCTIONS(HS__FLOAT_UNARY_MEMBER)
#undef HS__FLOAT_UNARY_ONE
#undef HS__FLOAT_UNARY_MEMBER

ELEM float unary_f32(hs_opcode op, float v)
{
    switch (op) {
#define HS__CASE(E, F32, F64)                                              \
    case HS_OP_##E: return F32;
        HS_FLOAT_UNARY_FUNCTIONS(HS__CASE)
#undef HS__CASE
    default: return v; /* not a float op: unary_defined says so */
    }
}

ELEM double unary_f64(hs_opcode op, double v)
{
    switch (op) {
#define HS__CASE(E, F32, F64)                                              \
    case HS_OP_##E: return F64;
        HS_FLOAT_UNARY_FUNCTIONS(HS__CASE)
#undef HS__CASE
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

/* The low `bits` bits of v. */
ELEM uint64_t low_bits(uint64_t v, int bits)
{
    return bits >= 64 ? v : v & ((UINT64_C(1) << bits) - 1);
}

/* popcnt and count-leading-zeros of the `bits`-bit pattern in the low bits
 * of v (sign- or zero-extended alike). */
ELEM uint64_t bit_count(hs_opcode op, uint64_t v, int bits)
{
    v = low_bits(v, bits);
    if (op == HS_OP_POPCNT)
        return (uint64_t)__builtin_popcountll(v);
    return v ? (uint64_t)(__builtin_clzll(v) - (64 - bits)) : (uint64_t)bits;
}

/* Signed integers of any width: unary_int, plus the width-dependent ops. */
ELEM int64_t unary_sint(hs_opcode op, int64_t v, int bits)
{
    if (op == HS_OP_POPCNT || op == HS_OP_CLZ)
        return (int64_t)bit_count(op, (uint64_t)v, bits);
    return unary_int(op, v);
}

/* Unsigned integers: abs is the identity, sign is 0 or 1, negate wraps. */
ELEM uint64_t unary_uint(hs_opcode op, uint64_t v, int bits)
{
    switch (op) {
    case HS_OP_NEGATE: return 0 - v;
    case HS_OP_SIGN: return v != 0;
    case HS_OP_NOT: return ~v;
    case HS_OP_POPCNT: case HS_OP_CLZ: return bit_count(op, v, bits);
    default: return v;
    }
}

/* shift-left, shift-right-logical and shift-right-arithmetic of the
 * `bits`-bit pattern in the low bits of a by b, as XLA's evaluator does:
 * an amount that is not in [0, bits) as an unsigned `bits`-bit number
 * shifts everything out (0, or the sign for the arithmetic shift). a and
 * b may be sign- or zero-extended; the result's bits above `bits` are
 * not meaningful (the store truncates). */
ELEM uint64_t shift_elem(hs_opcode op, uint64_t a, uint64_t b, int bits)
{
    uint64_t amount = low_bits(b, bits);
    bool out = amount >= (uint64_t)bits;
    int up = 64 - bits;
    int64_t sa = (int64_t)(a << up) >> up; /* sign-extended from bits */
    switch (op) {
    case HS_OP_SHIFT_LEFT: return out ? 0 : a << amount;
    case HS_OP_SHIFT_RIGHT_LOGICAL:
        return out ? 0 : low_bits(a, bits) >> amount;
    default: /* HS_OP_SHIFT_RIGHT_ARITHMETIC */
        return (uint64_t)(out ? (sa < 0 ? -1 : 0) : sa >> amount);
    }
}

ELEM uint8_t unary_pred(hs_opcode op, uint8_t v)
{
    return op == HS_OP_NOT ? !v : v;
}

/* ---- binary ----------------------------------------------------------- */

/* The float functions of every float binary op (hs_opcode.h's family
 * BINARY_ANY), one line each: X(E, f32 of a and b, f64 of a and b), the
 * same C expression at both widths where it can be. XLA's maximum and
 * minimum propagate NaN. binary_f32 / binary_f64 below (the folder's and
 * every loop's element function), the device's f32 loops
 * (device/kernels_elementwise.c) and the wide loops of every other float
 * type (numerics/element_loops.c) are generated from this list, so a new
 * op takes this one line here; forgetting it, naming an op of another
 * family or naming one twice does not compile. */
#define HS_FLOAT_BINARY_FUNCTIONS(X)                                       \
    X(ADD, a + b, a + b)                                                   \
    X(SUBTRACT, a - b, a - b)                                              \
    X(MULTIPLY, a * b, a * b)                                              \
    X(DIVIDE, a / b, a / b)                                                \
    X(MAXIMUM, (a > b || a != a) ? a : b, (a > b || a != a) ? a : b)       \
    X(MINIMUM, (a < b || a != a) ? a : b, (a < b || a != a) ? a : b)       \
    X(POWER, powf(a, b), pow(a, b))                                        \
    X(REMAINDER, fmodf(a, b), fmod(a, b))                                  \
    X(ATAN2, atan2f(a, b), atan2(a, b))

#define HS__FLOAT_BINARY_ONE(E, F32, F64) +1
_Static_assert(0 HS_FLOAT_BINARY_FUNCTIONS(HS__FLOAT_BINARY_ONE) ==
                   HS_N_FLOAT_BINARY,
               "a float binary op of hs_opcode.h (family BINARY_ANY) has "
               "no line in HS_FLOAT_BINARY_FUNCTIONS");
#define HS__FLOAT_BINARY_MEMBER(E, F32, F64)                               \
    _Static_assert(HS_IS_FLOAT_BINARY_FAMILY(HS_FAMILY_OF_##E),            \
                   #E " is in HS_FLOAT_BINARY_FUNCTIONS but its family in " \
                   "hs_opcode.h is not BINARY_ANY");
HS_FLOAT_BINARY_FUNCTIONS(HS__FLOAT_BINARY_MEMBER)
#undef HS__FLOAT_BINARY_ONE
#undef HS__FLOAT_BINARY_MEMBER

/* A binary element-wise opcode (add ... xor, the shifts, atan2) on its
 * element type: on floats, the ops of HS_FLOAT_BINARY_FUNCTIONS above;
 * on integers and pred, the ops their functions (binary_s32 ...
 * binary_pred, shift_elem) have a case for. */
static inline bool binary_defined(hs_opcode op, hs_dtype t)
{
    elem_class c = elem_class_of(t);
    if (c == ELEM_F32 || c == ELEM_F64) {
        switch (op) {
#define HS__CASE(E, F32, F64) case HS_OP_##E:
            HS_FLOAT_BINARY_FUNCTIONS(HS__CASE)
#undef HS__CASE
            return true;
        default: return false;
        }
    }
    if (c == ELEM_NONE)
        return false;
    bool is_int = c == ELEM_SINT || c == ELEM_UINT;
    switch (op) {
    case HS_OP_ADD: case HS_OP_SUBTRACT: case HS_OP_MULTIPLY:
    case HS_OP_MAXIMUM: case HS_OP_MINIMUM:
    case HS_OP_AND: case HS_OP_OR: case HS_OP_XOR:
        return true;
    case HS_OP_DIVIDE: case HS_OP_POWER: case HS_OP_REMAINDER:
    case HS_OP_SHIFT_LEFT: case HS_OP_SHIFT_RIGHT_LOGICAL:
    case HS_OP_SHIFT_RIGHT_ARITHMETIC:
        return is_int;
    default:
        return false;
    }
}

ELEM float binary_f32(hs_opcode op, float a, float b)
{
    switch (op) {
#define HS__CASE(E, F32, F64)                                              \
    case HS_OP_##E: return F32;
        HS_FLOAT_BINARY_FUNCTIONS(HS__CASE)
#undef HS__CASE
    default: return a; /* not a float op: binary_defined says so */
    }
}

ELEM double binary_f64(hs_opcode op, double a, double b)
{
    switch (op) {
#define HS__CASE(E, F32, F64)                                              \
    case HS_OP_##E: return F64;
        HS_FLOAT_BINARY_FUNCTIONS(HS__CASE)
#undef HS__CASE
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

static inline uint64_t upow(uint64_t b, uint64_t e)
{
    uint64_t r = 1;
    while (e) {
        if (e & 1)
            r *= b;
        b *= b;
        e >>= 1;
    }
    return r;
}

/* Unsigned integers, zero-extended: division by zero gives all ones (the
 * store keeps the low bits, all ones at any width). */
ELEM uint64_t binary_u64(hs_opcode op, uint64_t a, uint64_t b)
{
    switch (op) {
    case HS_OP_ADD: return a + b;
    case HS_OP_SUBTRACT: return a - b;
    case HS_OP_MULTIPLY: return a * b;
    case HS_OP_DIVIDE: return b == 0 ? UINT64_MAX : a / b;
    case HS_OP_REMAINDER: return b == 0 ? a : a % b;
    case HS_OP_MAXIMUM: return a > b ? a : b;
    case HS_OP_MINIMUM: return a < b ? a : b;
    case HS_OP_POWER: return upow(a, b);
    case HS_OP_AND: return a & b;
    case HS_OP_OR: return a | b;
    case HS_OP_XOR: return a ^ b;
    default: return a;
    }
}

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
DEFINE_COMPARE(compare_elem_f64, double)
DEFINE_COMPARE(compare_elem_u64, uint64_t)

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
DEFINE_CLAMP(clamp_elem_f64, double)
DEFINE_CLAMP(clamp_elem_u64, uint64_t)

/* ---- reduce-precision -------------------------------------------------- */

/* reduce-precision of the float with bits x (src_e exponent and src_m
 * mantissa bits, sign on top): the mantissa rounded to m bits (nearest,
 * ties to even), then exponents outside what e bits hold overflow to inf
 * and underflow to zero (keeping the sign), as XLA's emitter does;
 * subnormals of the reduced format are not kept. A NaN stays the NaN it
 * was. */
ELEM uint64_t reduce_precision_bits(uint64_t x, int src_e, int src_m, int e,
                                    int m)
{
    int nbits = 1 + src_e + src_m;
    uint64_t exp_mask = ((UINT64_C(1) << src_e) - 1) << src_m;
    uint64_t sign = x & (UINT64_C(1) << (nbits - 1));
    bool nan = (x & exp_mask) == exp_mask && (x & ((UINT64_C(1) << src_m) -
                                                   1));
    uint64_t r = x;
    if (m < src_m) {
        uint64_t last = UINT64_C(1) << (src_m - m);
        uint64_t bias = ((last >> 1) - 1) + ((r & last) >> (src_m - m));
        r = (r + bias) & ~(last - 1);
    }
    if (e < src_e) {
        uint64_t src_bias = (UINT64_C(1) << (src_e - 1)) - 1;
        uint64_t red_bias = (UINT64_C(1) << (e - 1)) - 1;
        uint64_t ex = r & exp_mask;
        if (ex > (src_bias + red_bias) << src_m)
            r = sign | exp_mask;
        else if (ex <= (src_bias - red_bias) << src_m)
            r = sign;
    }
    return nan ? x : r;
}

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
