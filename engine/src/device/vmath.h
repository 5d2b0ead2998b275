/*
 * vmath.h - f32 exp written on GCC vector types so that it vectorises at
 * any -march (4 lanes, an SSE register at the x86-64 baseline).
 *
 * One definition serves arrays and scalars: a scalar goes through lane 0 of
 * the same vector code, so an element has the same value whether it is
 * computed in a loop body, a loop tail or by the constant folder. Only
 * plain IEEE operations are used (no fused multiply-add: C11 mode keeps
 * -ffp-contract=off), so results do not depend on the instruction set.
 *
 * exp: x = n ln2 + r with |r| <= ln2/2 (ln2 split in two so that n * hi
 * is exact), e^r = 1 + r + r^2 q(r) with q a degree-4 minimax polynomial
 * (relative error 3e-9 before rounding), scaled by 2^n as two factors so
 * that results in the subnormal range are rounded once. Within 1 ulp of
 * the correctly rounded result for every finite float (the test in
 * tests/unit/test_device.c checks a sweep); overflows to +inf above
 * ln(FLT_MAX), underflows to +0 below about -103.97, exp(NaN) is NaN.
 */
#ifndef HS_DEVICE_VMATH_H
#define HS_DEVICE_VMATH_H

#include <stdint.h>
#include <string.h>

/* Four lanes: one SSE register at the baseline (wider GCC vectors would
 * be split, and their compares scalarised, without -mavx). */
typedef float hs_v4f __attribute__((vector_size(16)));
typedef int32_t hs_v4i __attribute__((vector_size(16)));

#define HS_VSPLAT(c) {c, c, c, c}

static inline __attribute__((always_inline)) hs_v4f hs_vsel(hs_v4i m,
                                                             hs_v4f a,
                                                             hs_v4f b)
{
    return (hs_v4f)(((hs_v4i)a & m) | ((hs_v4i)b & ~m));
}

static inline __attribute__((always_inline)) hs_v4f hs_vexpf(hs_v4f x)
{
    const hs_v4f lo = HS_VSPLAT(-104.0f), hi = HS_VSPLAT(89.0f);
    const hs_v4f log2e = HS_VSPLAT(1.44269502163f);
    const hs_v4f shifter = HS_VSPLAT(12582912.0f); /* 1.5 * 2^23 */
    const hs_v4f ln2_hi = HS_VSPLAT(0.693145751953125f); /* 16 bits */
    const hs_v4f ln2_lo = HS_VSPLAT(1.42860682030941723212e-6f);
    const hs_v4f c2 = HS_VSPLAT(0.49999993451708435f),
                 c3 = HS_VSPLAT(0.1666652068983302f),
                 c4 = HS_VSPLAT(0.04166838736126115f),
                 c5 = HS_VSPLAT(0.008368709824171195f),
                 c6 = HS_VSPLAT(0.0013814613260779772f),
                 one = HS_VSPLAT(1.0f);
    /* Clamped so that n stays in [-150, 129]; NaN fails both compares
     * and stays NaN. */
    x = hs_vsel(x < lo, lo, x);
    x = hs_vsel(x > hi, hi, x);
    hs_v4f t = x * log2e + shifter; /* round to nearest integer */
    hs_v4f n = t - shifter;
    hs_v4i ni = (hs_v4i)t - (hs_v4i)shifter;
    hs_v4f r = x - n * ln2_hi;
    r = r - n * ln2_lo;
    hs_v4f q = c6;
    q = q * r + c5;
    q = q * r + c4;
    q = q * r + c3;
    q = q * r + c2;
    hs_v4f p = one + (r + (r * r) * q);
    /* 2^n = 2^n1 * 2^n2, both factors normal. */
    hs_v4i n1 = ni >> 1, n2 = ni - n1;
    const hs_v4i bias = HS_VSPLAT(127);
    hs_v4f s1 = (hs_v4f)((n1 + bias) << 23), s2 = (hs_v4f)((n2 + bias) << 23);
    return (p * s1) * s2;
}

/* 1 / (1 + e^-x), the logistic op. */
static inline __attribute__((always_inline)) hs_v4f hs_vlogistic(hs_v4f x)
{
    const hs_v4f one = HS_VSPLAT(1.0f);
    return one / (one + hs_vexpf(-x));
}

static inline float hs_expf(float x)
{
    hs_v4f v = HS_VSPLAT(x);
    return hs_vexpf(v)[0];
}

static inline float hs_logisticf(float x)
{
    hs_v4f v = HS_VSPLAT(x);
    return hs_vlogistic(v)[0];
}

/* y[i] = F(a[i]) for i < n through hs_v4f F; the tail goes through a
 * padded vector, so every element gets the same code. */
#define HS_VMAP(F, a, y, n)                                                \
    do {                                                                   \
        int64_t i_ = 0, n_ = (n);                                          \
        for (; i_ + 8 <= n_; i_ += 8) {                                    \
            hs_v4f v0_, v1_;                                               \
            memcpy(&v0_, (a) + i_, sizeof v0_);                            \
            memcpy(&v1_, (a) + i_ + 4, sizeof v1_);                        \
            v0_ = F(v0_);                                                  \
            v1_ = F(v1_);                                                  \
            memcpy((y) + i_, &v0_, sizeof v0_);                            \
            memcpy((y) + i_ + 4, &v1_, sizeof v1_);                        \
        }                                                                  \
        for (; i_ + 4 <= n_; i_ += 4) {                                    \
            hs_v4f v_;                                                     \
            memcpy(&v_, (a) + i_, sizeof v_);                              \
            v_ = F(v_);                                                    \
            memcpy((y) + i_, &v_, sizeof v_);                              \
        }                                                                  \
        if (i_ < n_) {                                                     \
            hs_v4f v_ = HS_VSPLAT(0.0f);                                   \
            memcpy(&v_, (a) + i_, sizeof(float) * (size_t)(n_ - i_));      \
            v_ = F(v_);                                                    \
            memcpy((y) + i_, &v_, sizeof(float) * (size_t)(n_ - i_));      \
        }                                                                  \
    } while (0)

#endif
