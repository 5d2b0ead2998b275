/*
 * vmath.h - f32 exp written on GCC vector types so that it vectorises at
 * any -march (4 lanes, an SSE register at the x86-64 baseline; 8 with
 * AVX2, picked at run time).
 *
 * One definition serves arrays and scalars: a scalar goes through lane 0 of
 * the same vector code, so an element has the same value whether it is
 * computed in a loop body, a loop tail or by the constant folder
 * (passes/fold.c calls the element functions of element_ops.h, which call
 * these). Only plain IEEE operations are used (no fused multiply-add: C11
 * mode keeps -ffp-contract=off), so results do not depend on the
 * instruction set.
 *
 * exp: x = n ln2 + r with |r| <= ln2/2 (ln2 split in two so that n * hi
 * is exact), e^r = 1 + r + r^2 q(r) with q a degree-4 minimax polynomial
 * (relative error 3e-9 before rounding), scaled by 2^n as two factors so
 * that results in the subnormal range are rounded once. Within 1 ulp of
 * the correctly rounded result for every finite float (the test in
 * tests/unit/test_device.c checks a sweep); overflows to +inf above
 * ln(FLT_MAX), underflows to +0 below about -103.97, exp(NaN) is NaN.
 */
#ifndef HS_NUMERICS_VMATH_H
#define HS_NUMERICS_VMATH_H

#include <stdint.h>
#include <string.h>

/* Four lanes: one SSE register at the baseline (wider GCC vectors would
 * be split, and their compares scalarised, without -mavx). Eight lanes
 * (hs_v8f) only inside functions built for AVX2, chosen at run time by
 * device/kernels_elementwise.c; both widths run the same operations per lane, so they give
 * the same bits. */
typedef float hs_v4f __attribute__((vector_size(16)));
typedef int32_t hs_v4i __attribute__((vector_size(16)));
typedef float hs_v8f __attribute__((vector_size(32)));
typedef int32_t hs_v8i __attribute__((vector_size(32)));

#define HS_VSPLAT(c) {c, c, c, c}
#define HS_VSPLAT8(c) {c, c, c, c, c, c, c, c}

#define HS_DEFINE_VMATH(SFX, VF, VI, SPLAT, ATTR)                          \
    static inline __attribute__((always_inline)) ATTR VF hs_vsel##SFX(    \
        VI m, VF a, VF b)                                                  \
    {                                                                      \
        return (VF)(((VI)a & m) | ((VI)b & ~m));                           \
    }                                                                      \
                                                                           \
    static inline __attribute__((always_inline)) ATTR VF hs_vexpf##SFX(   \
        VF x)                                                              \
    {                                                                      \
        const VF lo = SPLAT(-104.0f), hi = SPLAT(89.0f);                   \
        const VF log2e = SPLAT(1.44269502163f);                            \
        const VF shifter = SPLAT(12582912.0f); /* 1.5 * 2^23 */            \
        const VF ln2_hi = SPLAT(0.693145751953125f); /* 16 bits */         \
        const VF ln2_lo = SPLAT(1.42860682030941723212e-6f);               \
        const VF c2 = SPLAT(0.49999993451708435f),                         \
                 c3 = SPLAT(0.1666652068983302f),                          \
                 c4 = SPLAT(0.04166838736126115f),                         \
                 c5 = SPLAT(0.008368709824171195f),                        \
                 c6 = SPLAT(0.0013814613260779772f), one = SPLAT(1.0f);    \
        /* Clamped so that n stays in [-150, 129]; NaN fails both          \
         * compares and stays NaN. */                                      \
        x = hs_vsel##SFX(x < lo, lo, x);                                   \
        x = hs_vsel##SFX(x > hi, hi, x);                                   \
        VF t = x * log2e + shifter; /* round to nearest integer */         \
        VF n = t - shifter;                                                \
        VI ni = (VI)t - (VI)shifter;                                       \
        VF r = x - n * ln2_hi;                                             \
        r = r - n * ln2_lo;                                                \
        VF q = c6;                                                         \
        q = q * r + c5;                                                    \
        q = q * r + c4;                                                    \
        q = q * r + c3;                                                    \
        q = q * r + c2;                                                    \
        VF p = one + (r + (r * r) * q);                                    \
        /* 2^n = 2^n1 * 2^n2, both factors normal. */                      \
        VI n1 = ni >> 1, n2 = ni - n1;                                     \
        const VI bias = SPLAT(127);                                        \
        VF s1 = (VF)((n1 + bias) << 23), s2 = (VF)((n2 + bias) << 23);     \
        return (p * s1) * s2;                                              \
    }                                                                      \
                                                                           \
    /* 1 / (1 + e^-x), the logistic op. */                                 \
    static inline __attribute__((always_inline)) ATTR VF hs_vlogistic##SFX( \
        VF x)                                                              \
    {                                                                      \
        const VF one = SPLAT(1.0f);                                        \
        return one / (one + hs_vexpf##SFX(-x));                            \
    }

HS_DEFINE_VMATH(, hs_v4f, hs_v4i, HS_VSPLAT, )
#if defined(__x86_64__) && defined(__GNUC__)
#define HS_VMATH_AVX2 1
HS_DEFINE_VMATH(8, hs_v8f, hs_v8i, HS_VSPLAT8, __attribute__((target("avx2"))))
#endif

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

/* HS_VMAP with eight lanes (F8) for the blocks, F for what is left; only
 * inside a function built for AVX2. */
#define HS_VMAP8(F8, F, a, y, n)                                           \
    do {                                                                   \
        int64_t j_ = 0, m_ = (n);                                          \
        for (; j_ + 8 <= m_; j_ += 8) {                                    \
            hs_v8f w_;                                                     \
            memcpy(&w_, (a) + j_, sizeof w_);                              \
            w_ = F8(w_);                                                   \
            memcpy((y) + j_, &w_, sizeof w_);                              \
        }                                                                  \
        HS_VMAP(F, (a) + j_, (y) + j_, m_ - j_);                           \
    } while (0)

#endif
