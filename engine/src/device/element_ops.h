/*
 * element_ops.h - binary element functions shared by the element-wise and
 * reduce kernels. Always inlined with a constant opcode, so each loop that
 * uses one compiles to the single operation it names.
 */
#ifndef HS_DEVICE_ELEMENT_OPS_H
#define HS_DEVICE_ELEMENT_OPS_H

#include <math.h>
#include <stdint.h>

#include "hloscope/hs_opcode.h"

#define ELEM static inline __attribute__((always_inline))

/* for (i = 0; i < n; i++) STMT, written as blocks of 8 with a constant
 * inner trip count: at -O2 GCC's "very cheap" vectoriser skips plain loops
 * of unknown length but fully unrolls and SLP-vectorises these blocks. */
#define VLOOP(n, ...)                                                      \
    do {                                                                   \
        int64_t b_ = 0, n_ = (n);                                          \
        for (; b_ + 8 <= n_; b_ += 8)                                      \
            for (int j_ = 0; j_ < 8; j_++) {                               \
                int64_t i = b_ + j_;                                       \
                __VA_ARGS__;                                               \
            }                                                              \
        for (int64_t i = b_; i < n_; i++) {                                \
            __VA_ARGS__;                                                   \
        }                                                                  \
    } while (0)

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

/* Integer semantics as XLA defines them: wrap-around arithmetic, x/0 = -1,
 * x%0 = x, MIN/-1 = MIN and MIN%-1 = 0. */
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

ELEM uint8_t binary_pred(hs_opcode op, uint8_t a, uint8_t b)
{
    switch (op) {
    case HS_OP_AND: case HS_OP_MINIMUM: case HS_OP_MULTIPLY: return a & b;
    case HS_OP_OR: case HS_OP_MAXIMUM: case HS_OP_ADD: return a | b;
    case HS_OP_XOR: case HS_OP_SUBTRACT: return a ^ b;
    default: return a;
    }
}

#endif
