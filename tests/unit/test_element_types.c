/*
 * test_element_types.c - every executable element type against references
 * that do not come from hloscope's own code: the compiler's _Float16
 * conversions (libgcc), bf16 rounding by distance, the f8 formats' values
 * from their definitions (ml_dtypes' table of formats), integer semantics
 * from the width alone, and runs of HLO on the device.
 */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hlo_test_helpers.h"
#include "hloscope/hs_compile.h"
#include "hloscope/hs_device.h"
#include "hloscope/hs_passes.h"
#include "hloscope/hs_tensor.h"
#include "numerics/element_loops.h"
#include "numerics/element_types.h"

static uint32_t fbits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float bitsf(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* ---- f16 against the compiler ---------------------------------------------- */

#ifdef __FLT16_MAX__
static uint16_t ref_f16(float f)
{
    _Float16 h = (_Float16)f; /* libgcc's __truncsfhf2 */
    uint16_t u;
    memcpy(&u, &h, 2);
    return u;
}

static void f16_matches_the_compilers_conversions(void **state)
{
    (void)state;
    /* Every 65521st f32 bit pattern, plus the edges. */
    uint32_t extra[] = {0x477fefff, 0x477ff000, 0x477ff001, /* 65520 */
                        0x33000000, 0x33000001, 0x337fffff, /* 2^-25 */
                        0x38800000, 0x387fe000, 0x387ff000, 0x00000001,
                        0x80000000, 0x7f800000, 0xff800000, 0x3f801000,
                        0x3f803000, 0x3f802fff};
    int n_extra = (int)(sizeof extra / sizeof extra[0]);
    for (uint64_t k = 0; k < (UINT64_C(1) << 32) / 65521 + (uint64_t)n_extra;
         k++) {
        uint32_t b = k < (UINT64_C(1) << 32) / 65521
                         ? (uint32_t)(k * 65521)
                         : extra[k - (UINT64_C(1) << 32) / 65521];
        float f = bitsf(b);
        if (isnan(f))
            continue;
        uint16_t want = ref_f16(f);
        if (elem_f32_to_f16(f) != want ||
            elem_small_encode(HS_F16, (double)f) != want)
            fail_msg("f16 of %08x: %04x and %04x, want %04x", b,
                     elem_f32_to_f16(f),
                     elem_small_encode(HS_F16, (double)f), want);
    }
    for (uint32_t h = 0; h < 65536; h++) {
        _Float16 x;
        uint16_t hb = (uint16_t)h;
        memcpy(&x, &hb, 2);
        float want = (float)x;
        float got = elem_f16_to_f32(hb);
        if (isnan(want) ? !isnan(got) : fbits(got) != fbits(want))
            fail_msg("f16 %04x decodes to %g, want %g", h, got, want);
        assert_true(isnan(want) ? isnan(elem_small_decode(HS_F16, h))
                                : elem_small_decode(HS_F16, h) == want);
    }
    assert_int_equal(elem_f32_to_f16(NAN) & 0x7c00, 0x7c00);
    assert_int_not_equal(elem_f32_to_f16(NAN) & 0x3ff, 0);
}
#endif

/* ---- bf16 by distance -------------------------------------------------------- */

/* The nearest bf16 to f by distance in double; ties to the even one;
 * past the largest finite bf16's halfway point: inf. */
static uint16_t ref_bf16(float f)
{
    uint32_t b = fbits(f);
    uint16_t lo = (uint16_t)(b >> 16), hi = (uint16_t)(lo + 1);
    double dlo = fabs((double)f - (double)bitsf((uint32_t)lo << 16));
    uint32_t hb = (uint32_t)hi << 16;
    if ((hb & 0x7f800000) == 0x7f800000) { /* hi is inf: the halfway mark */
        double half = 0.5 * ldexp(1.0, 127 - 7);
        return dlo < half ? lo : hi;
    }
    double dhi = fabs((double)bitsf(hb) - (double)f);
    if (dlo != dhi)
        return dlo < dhi ? lo : hi;
    return (lo & 1) ? hi : lo;
}

static void bf16_rounds_to_nearest_even(void **state)
{
    (void)state;
    for (uint64_t b = 0; b < (UINT64_C(1) << 32); b += 4099) {
        float f = bitsf((uint32_t)b);
        if (isnan(f) || isinf(f))
            continue;
        uint16_t want = ref_bf16(f);
        if (elem_f32_to_bf16(f) != want ||
            elem_small_encode(HS_BF16, (double)f) != want)
            fail_msg("bf16 of %08x: %04x / %04x, want %04x", (uint32_t)b,
                     elem_f32_to_bf16(f), elem_small_encode(HS_BF16, f), want);
    }
    /* Ties, subnormals, overflow, NaN, signed zero. */
    assert_int_equal(elem_f32_to_bf16(bitsf(0x3f808000)), 0x3f80);
    assert_int_equal(elem_f32_to_bf16(bitsf(0x3f818000)), 0x3f82);
    assert_int_equal(elem_f32_to_bf16(bitsf(0x00008000)), 0x0000);
    assert_int_equal(elem_f32_to_bf16(bitsf(0x00018000)), 0x0002);
    assert_int_equal(elem_f32_to_bf16(FLT_MAX), 0x7f80);
    assert_int_equal(elem_f32_to_bf16(-0.0f), 0x8000);
    uint16_t q = elem_f32_to_bf16(-NAN);
    assert_int_equal(q & 0xff80, 0xff80);
    assert_int_not_equal(q & 0x7f, 0);
    for (uint32_t h = 0; h < 65536; h++) {
        float v = elem_bf16_to_f32((uint16_t)h);
        assert_int_equal(fbits(v), h << 16);
    }
    /* From f64, one rounding: 1 + 2^-8 + 2^-40 is above the tie that an
     * f32 rounding first would make of it. */
    assert_int_equal(elem_small_encode(HS_BF16, 1.0 + ldexp(1, -8) +
                                                    ldexp(1, -40)),
                     0x3f81);
    assert_int_equal(elem_f32_to_bf16((float)(1.0 + ldexp(1, -8) +
                                              ldexp(1, -40))),
                     0x3f80);
}

/* ---- the f8 formats from their definitions -------------------------------- */

typedef struct f8_def {
    hs_dtype t;
    int ebits, mbits, bias;
    bool ieee;   /* inf = exponent all ones, mantissa 0 */
    bool fnuz;   /* 0x80 is the NaN, no -0 */
    bool fn;     /* S.1111.111 is NaN, no inf */
    bool e8m0;
    double max;  /* the largest finite value */
} f8_def;

static const f8_def f8_defs[] = {
    {HS_F8E5M2, 5, 2, 15, true, false, false, false, 57344},
    {HS_F8E4M3, 4, 3, 7, true, false, false, false, 240},
    {HS_F8E3M4, 3, 4, 3, true, false, false, false, 15.5},
    {HS_F8E4M3FN, 4, 3, 7, false, false, true, false, 448},
    {HS_F8E4M3FNUZ, 4, 3, 8, false, true, false, false, 240},
    {HS_F8E5M2FNUZ, 5, 2, 16, false, true, false, false, 57344},
    {HS_F8E4M3B11FNUZ, 4, 3, 11, false, true, false, false, 30},
    {HS_F8E8M0FNU, 8, 0, 127, false, false, false, true, 0x1p127},
};
enum { N_F8_DEFS = sizeof f8_defs / sizeof f8_defs[0] };

/* The value of byte b by the format's definition (what the test trusts):
 * (-1)^s 2^(e - bias) (1 + m / 2^mbits), or 2^(1 - bias) m / 2^mbits
 * when e = 0, with each format's special encodings. */
static double def_value(const f8_def *d, unsigned b)
{
    if (d->e8m0)
        return b == 0xff ? NAN : pow(2.0, (double)b - 127);
    if (d->fnuz && b == 0x80)
        return NAN;
    unsigned s = b >> 7, e = (b >> d->mbits) & ((1u << d->ebits) - 1),
             m = b & ((1u << d->mbits) - 1);
    unsigned emax = (1u << d->ebits) - 1, mmax = (1u << d->mbits) - 1;
    double v;
    if (d->ieee && e == emax)
        v = m ? NAN : INFINITY;
    else if (d->fn && e == emax && m == mmax)
        v = NAN;
    else if (e == 0)
        v = pow(2.0, 1.0 - d->bias) * m / (double)(1u << d->mbits);
    else
        v = pow(2.0, (double)e - d->bias) * (1 + m / (double)(1u << d->mbits));
    return s ? -v : v;
}

static void f8_decode_matches_the_definitions(void **state)
{
    (void)state;
    for (int k = 0; k < N_F8_DEFS; k++) {
        const f8_def *d = &f8_defs[k];
        double largest = 0;
        for (unsigned b = 0; b < 256; b++) {
            double want = def_value(d, b), got = elem_small_decode(d->t, b);
            if (isnan(want) ? !isnan(got) : got != want)
                fail_msg("%s %02x: %g, want %g", hs_dtype_name(d->t), b, got,
                         want);
            if (isfinite(want) && want > largest)
                largest = want;
        }
        assert_true(largest == d->max);
    }
    /* A few values stated in the formats' papers and ml_dtypes' README. */
    assert_true(elem_small_decode(HS_F8E4M3FN, 0x7e) == 448);
    assert_true(isnan(elem_small_decode(HS_F8E4M3FN, 0x7f)));
    assert_true(isinf(elem_small_decode(HS_F8E5M2, 0x7c)));
    assert_true(elem_small_decode(HS_F8E4M3FN, 0x01) == 0x1p-9);
    assert_true(elem_small_decode(HS_F8E8M0FNU, 0x7f) == 1.0);
}

/* The byte of the nearest value to v, ties to an even mantissa, by
 * search over the definition's values (finite, same sign). */
static void f8_encode_rounds_to_nearest_even(void **state)
{
    (void)state;
    for (int k = 0; k < N_F8_DEFS; k++) {
        const f8_def *d = &f8_defs[k];
        hs_dtype t = d->t;
        /* Positive finite bytes in increasing order. */
        unsigned order[256];
        int n = 0;
        for (unsigned b = 0; b < 128 || (d->e8m0 && b < 255); b++)
            if (isfinite(def_value(d, b)))
                order[n++] = b;
        for (int i = 0; i < n; i++) {
            double v = def_value(d, order[i]);
            assert_int_equal(elem_small_encode(t, v), order[i]);
            if (!d->e8m0 && !d->fnuz)
                assert_int_equal(elem_small_encode(t, -v), order[i] | 0x80);
            if (i + 1 == n)
                break;
            double w = def_value(d, order[i + 1]);
            double mid = (v + w) / 2;
            /* The even one of the two: the one whose lowest mantissa bit
             * is 0 (e8m0 has none: its ties go to the larger power). */
            unsigned even = d->e8m0 ? order[i + 1]
                            : (order[i] & 1) ? order[i + 1] : order[i];
            if (elem_small_encode(t, mid) != even)
                fail_msg("%s: tie %g -> %02x, want %02x", hs_dtype_name(t),
                         mid, elem_small_encode(t, mid), even);
            assert_int_equal(elem_small_encode(t, mid + (w - v) / 1024),
                             order[i + 1]);
            assert_int_equal(elem_small_encode(t, mid - (w - v) / 1024),
                             order[i]);
        }
        /* What does not fit, by the format's rules. */
        unsigned over = d->ieee ? (((1u << d->ebits) - 1) << d->mbits)
                        : d->fn ? 0x7f
                        : d->fnuz ? 0x80
                                  : 0xff;
        assert_int_equal(elem_small_encode(t, d->max * 2), over);
        assert_int_equal(elem_small_encode(t, INFINITY), over);
        assert_true(isnan(elem_small_decode(t, elem_small_encode(t, NAN))));
        assert_int_equal(elem_small_encode(t, -0.0),
                         d->fnuz ? 0x00 : d->e8m0 ? 0xff : 0x80);
        if (!d->e8m0) {
            /* Half the smallest subnormal is a tie with zero: zero. */
            double tiny = def_value(d, 1);
            assert_int_equal(elem_small_encode(t, tiny / 2), 0);
            assert_int_equal(elem_small_encode(t, tiny * 0.75), 1);
        }
    }
}

/* ---- integers at each width ------------------------------------------------- */

static const hs_dtype sints[] = {HS_S8, HS_S16, HS_S32, HS_S64};
static const hs_dtype uints[] = {HS_U8, HS_U16, HS_U32, HS_U64};

/* op(a, b) at type t: the values are put at t's width by hand. */
static int64_t bin(hs_opcode op, hs_dtype t, int64_t a, int64_t b)
{
    unsigned char x[8], y[8], r[8];
    int w = hs_dtype_bits(t) / 8;
    memcpy(x, &a, (size_t)w); /* little-endian: the low bytes */
    memcpy(y, &b, (size_t)w);
    if (!elem_binary_run(op, t, x, y, r, 1))
        fail_msg("%s not defined on %s", hs_opcode_name(op),
                 hs_dtype_name(t));
    uint64_t u = 0;
    memcpy(&u, r, (size_t)w);
    if (elem_class_of(t) == ELEM_SINT && w < 8 && (u >> (8 * w - 1)) & 1)
        u |= ~UINT64_C(0) << (8 * w); /* sign-extend */
    return (int64_t)u;
}

static int64_t un(hs_opcode op, hs_dtype t, int64_t a)
{
    unsigned char x[8], r[8];
    int w = hs_dtype_bits(t) / 8;
    memcpy(x, &a, (size_t)w);
    assert_true(elem_unary_run(op, t, x, r, 1));
    uint64_t u = 0;
    memcpy(&u, r, (size_t)w);
    if (elem_class_of(t) == ELEM_SINT && w < 8 && (u >> (8 * w - 1)) & 1)
        u |= ~UINT64_C(0) << (8 * w);
    return (int64_t)u;
}

static void signed_integers_wrap_and_follow_xla_at_each_width(void **state)
{
    (void)state;
    for (int k = 0; k < 4; k++) {
        hs_dtype t = sints[k];
        int bits = hs_dtype_bits(t);
        int64_t min = bits == 64 ? INT64_MIN : -((int64_t)1 << (bits - 1));
        int64_t max = bits == 64 ? INT64_MAX : ((int64_t)1 << (bits - 1)) - 1;
        assert_int_equal(bin(HS_OP_ADD, t, max, 1), min);
        assert_int_equal(bin(HS_OP_SUBTRACT, t, min, 1), max);
        assert_int_equal(bin(HS_OP_MULTIPLY, t, max, 2), -2);
        assert_int_equal(bin(HS_OP_DIVIDE, t, min, -1), min);
        assert_int_equal(bin(HS_OP_REMAINDER, t, min, -1), 0);
        assert_int_equal(bin(HS_OP_DIVIDE, t, 7, 0), -1);
        assert_int_equal(bin(HS_OP_REMAINDER, t, 7, 0), 7);
        assert_int_equal(bin(HS_OP_DIVIDE, t, -7, 2), -3);
        assert_int_equal(bin(HS_OP_REMAINDER, t, -7, 2), -1);
        assert_int_equal(bin(HS_OP_POWER, t, 2, bits - 1), min);
        assert_int_equal(bin(HS_OP_MAXIMUM, t, min, max), max);
        assert_int_equal(bin(HS_OP_SHIFT_LEFT, t, 1, bits - 1), min);
        assert_int_equal(bin(HS_OP_SHIFT_LEFT, t, 1, bits), 0);
        assert_int_equal(bin(HS_OP_SHIFT_LEFT, t, 1, -1), 0);
        assert_int_equal(bin(HS_OP_SHIFT_RIGHT_ARITHMETIC, t, min, bits - 1),
                         -1);
        assert_int_equal(bin(HS_OP_SHIFT_RIGHT_ARITHMETIC, t, -5, bits), -1);
        assert_int_equal(bin(HS_OP_SHIFT_RIGHT_ARITHMETIC, t, 5, bits), 0);
        assert_int_equal(bin(HS_OP_SHIFT_RIGHT_ARITHMETIC, t, -5, -1), -1);
        assert_int_equal(bin(HS_OP_SHIFT_RIGHT_LOGICAL, t, -1, 1), max);
        assert_int_equal(bin(HS_OP_SHIFT_RIGHT_LOGICAL, t, -1, bits), 0);
        assert_int_equal(bin(HS_OP_SHIFT_RIGHT_LOGICAL, t, min, bits - 1), 1);
        assert_int_equal(un(HS_OP_POPCNT, t, -1), bits);
        assert_int_equal(un(HS_OP_POPCNT, t, min), 1);
        assert_int_equal(un(HS_OP_CLZ, t, 1), bits - 1);
        assert_int_equal(un(HS_OP_CLZ, t, 0), bits);
        assert_int_equal(un(HS_OP_CLZ, t, -1), 0);
        assert_int_equal(un(HS_OP_NOT, t, 0), -1);
        assert_int_equal(un(HS_OP_NEGATE, t, min), min);
        assert_int_equal(un(HS_OP_ABS, t, min), min);
        assert_int_equal(un(HS_OP_SIGN, t, -9), -1);
    }
}

static void unsigned_integers_wrap_and_follow_xla_at_each_width(void **state)
{
    (void)state;
    for (int k = 0; k < 4; k++) {
        hs_dtype t = uints[k];
        int bits = hs_dtype_bits(t);
        int64_t max = bits == 64 ? -1 : (int64_t)((UINT64_C(1) << bits) - 1);
        int64_t top = (int64_t)(UINT64_C(1) << (bits - 1));
        assert_int_equal(bin(HS_OP_ADD, t, max, 1), 0);
        assert_int_equal(bin(HS_OP_SUBTRACT, t, 0, 1), max);
        assert_int_equal(bin(HS_OP_DIVIDE, t, 7, 0), max);
        assert_int_equal(bin(HS_OP_REMAINDER, t, 7, 0), 7);
        assert_int_equal(bin(HS_OP_DIVIDE, t, max, 2), max ^ top);
        assert_int_equal(bin(HS_OP_MAXIMUM, t, max, 1), max);
        assert_int_equal(bin(HS_OP_MINIMUM, t, max, 1), 1);
        assert_int_equal(bin(HS_OP_SHIFT_LEFT, t, 1, bits - 1), top);
        assert_int_equal(bin(HS_OP_SHIFT_LEFT, t, 1, bits), 0);
        assert_int_equal(bin(HS_OP_SHIFT_RIGHT_LOGICAL, t, max, bits - 1), 1);
        assert_int_equal(bin(HS_OP_SHIFT_RIGHT_LOGICAL, t, max, bits), 0);
        /* the arithmetic shift reads the pattern as signed */
        assert_int_equal(bin(HS_OP_SHIFT_RIGHT_ARITHMETIC, t, top, bits - 1),
                         max);
        assert_int_equal(bin(HS_OP_SHIFT_RIGHT_ARITHMETIC, t, top, bits), max);
        assert_int_equal(bin(HS_OP_SHIFT_RIGHT_ARITHMETIC, t, 4, 1), 2);
        assert_int_equal(un(HS_OP_POPCNT, t, max), bits);
        assert_int_equal(un(HS_OP_CLZ, t, 1), bits - 1);
        assert_int_equal(un(HS_OP_NEGATE, t, 1), max);
        assert_int_equal(un(HS_OP_NOT, t, 0), max);
        assert_int_equal(un(HS_OP_SIGN, t, 5), 1);
        assert_int_equal(un(HS_OP_ABS, t, max), max);
        uint8_t y;
        unsigned char a[8] = {0}, b[8] = {0};
        memset(a, 0xff, sizeof a); /* max > 1 unsigned, though -1 signed */
        b[0] = 1;
        assert_true(elem_compare_run(HS_DIR_GT, t, a, b, &y, 1));
        assert_int_equal(y, 1);
    }
}

/* ---- convert ----------------------------------------------------------------- */

static void convert_saturates_wraps_and_rounds(void **state)
{
    (void)state;
    float f[] = {300.0f, -300.0f, NAN, -0.75f, 127.9f, INFINITY, -INFINITY};
    int8_t s8[7];
    uint8_t u8[7];
    elem_convert(HS_F32, HS_S8, f, s8, 7);
    elem_convert(HS_F32, HS_U8, f, u8, 7);
    int8_t want_s8[] = {127, -128, 0, 0, 127, 127, -128};
    uint8_t want_u8[] = {255, 0, 0, 0, 127, 255, 0};
    assert_memory_equal(s8, want_s8, 7);
    assert_memory_equal(u8, want_u8, 7);

    int32_t wide[] = {259, -1, 65536 + 7};
    uint8_t w8[3];
    int16_t w16[3];
    elem_convert(HS_S32, HS_U8, wide, w8, 3);
    elem_convert(HS_S32, HS_S16, wide, w16, 3);
    assert_int_equal(w8[0], 3);
    assert_int_equal(w8[1], 255);
    assert_int_equal(w16[2], 7);

    uint64_t big = UINT64_MAX;
    float bf;
    int64_t bs;
    elem_convert(HS_U64, HS_F32, &big, &bf, 1);
    elem_convert(HS_U64, HS_S64, &big, &bs, 1);
    assert_true(bf == 0x1p64f);
    assert_int_equal(bs, -1);

    double d[] = {1e300, -1e300, 0x1p63, 0.5};
    int64_t d64[4];
    uint64_t du[4];
    elem_convert(HS_F64, HS_S64, d, d64, 4);
    elem_convert(HS_F64, HS_U64, d, du, 4);
    assert_true(d64[0] == INT64_MAX && d64[1] == INT64_MIN &&
                d64[2] == INT64_MAX && d64[3] == 0);
    assert_true(du[0] == UINT64_MAX && du[1] == 0 &&
                du[2] == UINT64_C(1) << 63);

    /* f16 <-> bf16 through f32: each value rounded once. */
    uint16_t h = 0x3c01; /* 1 + 2^-10 */
    uint16_t b16;
    elem_convert(HS_F16, HS_BF16, &h, &b16, 1);
    assert_int_equal(b16, 0x3f80); /* 1 + 2^-10 -> 1 (below half of 2^-7) */
    uint8_t p[] = {0, 1};
    uint16_t ph[2];
    elem_convert(HS_PRED, HS_F16, p, ph, 2);
    assert_int_equal(ph[0], 0x0000);
    assert_int_equal(ph[1], 0x3c00);
    double nan = NAN;
    uint8_t pn;
    elem_convert(HS_F64, HS_PRED, &nan, &pn, 1);
    assert_int_equal(pn, 1); /* NaN != 0 */

    /* f32 -> f8e4m3fn overflow is NaN, not the largest value. */
    float o[] = {448.0f, 464.0f, 465.0f, -1e6f};
    uint8_t q[4];
    elem_convert(HS_F32, HS_F8E4M3FN, o, q, 4);
    assert_int_equal(q[0], 0x7e);
    assert_int_equal(q[1], 0x7e); /* the tie goes to the even 448 */
    assert_int_equal(q[2], 0x7f);
    assert_int_equal(q[3], 0xff);
}

/* ---- on the device ------------------------------------------------------------ */

typedef struct outs {
    hs_tensor **t;
    int n;
} outs;

static outs run_text(const char *text, hs_tensor **args, int n_args)
{
    hs_module *m = parse(text);
    outs o = {0};
    hs_error err;
    hs_error_clear(&err);
    if (hs_device_run(m, NULL, args, n_args, &o.t, &o.n, NULL, &err) != HS_OK)
        fail_msg("run: %s (%s)", err.message, err.instruction);
    hs_module_free(m);
    return o;
}

static void outs_free(outs *o)
{
    for (int k = 0; k < o->n; k++)
        hs_tensor_free(o->t[k]);
    free(o->t);
}

static hs_tensor *tensor_of(hs_dtype t, int n, const void *data)
{
    int64_t d[1] = {n};
    hs_shape s = hs_shape_make(t, 1, d);
    hs_tensor *x = hs_tensor_new(&s);
    memcpy(x->data, data, (size_t)hs_shape_bytes(&s));
    return x;
}

static void bf16_ops_round_every_result_and_reduce_in_bf16(void **state)
{
    (void)state;
    const char *text =
        "HloModule m\n"
        "sum {\n"
        "  a = bf16[] parameter(0)\n"
        "  b = bf16[] parameter(1)\n"
        "  ROOT s = bf16[] add(a, b)\n"
        "}\n"
        "ENTRY e {\n"
        "  x = bf16[5] parameter(0)\n"
        "  y = bf16[5] parameter(1)\n"
        "  m = bf16[5] multiply(x, y)\n"
        "  z = bf16[] constant(0)\n"
        "  r = bf16[] reduce(x, z), dimensions={0}, to_apply=sum\n"
        "  c = f32[5] convert(m)\n"
        "  ROOT t = (bf16[5], bf16[], f32[5]) tuple(m, r, c)\n"
        "}\n";
    /* x = {1, 2^-8 x 4}, y = {3, 1.00390625 x4 as bf16 = 1 + 2^-7 } */
    float xf[] = {1.0f, 0x1p-8f, 0x1p-8f, 0x1p-8f, 0x1p-8f};
    float yf[] = {3.0f, 1.0078125f, 1.0078125f, 1.0078125f, 1.0078125f};
    uint16_t xb[5], yb[5];
    for (int i = 0; i < 5; i++) {
        xb[i] = ref_bf16(xf[i]);
        yb[i] = ref_bf16(yf[i]);
    }
    hs_tensor *args[] = {tensor_of(HS_BF16, 5, xb), tensor_of(HS_BF16, 5, yb)};
    outs o = run_text(text, args, 2);
    assert_int_equal(o.n, 3);
    const uint16_t *m = o.t[0]->data;
    for (int i = 0; i < 5; i++) {
        float want = elem_bf16_to_f32(ref_bf16(xf[i] * yf[i]));
        assert_true(elem_bf16_to_f32(m[i]) == want);
        assert_true(((const float *)o.t[2]->data)[i] == want);
    }
    /* Accumulating in bf16: 1 + 2^-8 rounds back to 1 at every step (an
     * f32 accumulator would give 1 + 2^-6). */
    assert_int_equal(*(const uint16_t *)o.t[1]->data, 0x3f80);
    outs_free(&o);
    hs_tensor_free(args[0]);
    hs_tensor_free(args[1]);
}

/* The reduce loops of the other types (kernels_reduce.c, reduce_wide)
 * give the bits of the interpreted reducer, which computes in the
 * reducer's type, for rows and columns. */
static void reduce_loops_match_the_interpreted_reducer(void **state)
{
    (void)state;
    static const char *types[] = {"bf16", "f16", "f64", "s8", "u16",
                                  "f8e4m3fn"};
    static const char *ops[] = {"add", "multiply", "maximum", "minimum"};
    for (int ti = 0; ti < 6; ti++)
        for (int oi = 0; oi < 4; oi++) {
            const char *t = types[ti], *op = ops[oi];
            char text[2048];
            snprintf(text, sizeof text,
                     "HloModule m\n"
                     "fast {\n  a = %s[] parameter(0)\n"
                     "  b = %s[] parameter(1)\n"
                     "  ROOT s = %s[] %s(a, b)\n}\n"
                     "slow {\n  a = %s[] parameter(0)\n"
                     "  b = %s[] parameter(1)\n  c = %s[] copy(a)\n"
                     "  ROOT s = %s[] %s(c, b)\n}\n"
                     "ENTRY e {\n  x = f32[64,50] parameter(0)\n"
                     "  k = f32[] constant(0.37)\n"
                     "  kb = f32[64,50] broadcast(k), dimensions={}\n"
                     "  w = f32[64,50] add(x, kb)\n"
                     "  xt = %s[64,50] convert(w)\n"
                     "  z = %s[] constant(1)\n"
                     "  r1 = %s[64] reduce(xt, z), dimensions={1}, "
                     "to_apply=fast\n"
                     "  r2 = %s[64] reduce(xt, z), dimensions={1}, "
                     "to_apply=slow\n"
                     "  c1 = %s[50] reduce(xt, z), dimensions={0}, "
                     "to_apply=fast\n"
                     "  c2 = %s[50] reduce(xt, z), dimensions={0}, "
                     "to_apply=slow\n"
                     "  ROOT t = (%s[64], %s[64], %s[50], %s[50]) "
                     "tuple(r1, r2, c1, c2)\n}\n",
                     t, t, t, op, t, t, t, t, op, t, t, t, t, t, t, t, t, t,
                     t);
            float x[64 * 50];
            for (int i = 0; i < 64 * 50; i++)
                x[i] = (float)((i * 37) % 101) / 50.0f - 1.0f;
            int64_t d[2] = {64, 50};
            hs_shape sx = hs_shape_make(HS_F32, 2, d);
            hs_tensor *args[] = {hs_tensor_new(&sx)};
            memcpy(args[0]->data, x, sizeof x);
            outs o = run_text(text, args, 1);
            int es = elem_bytes(o.t[0]->shape.dtype);
            if (memcmp(o.t[0]->data, o.t[1]->data, (size_t)(64 * es)) ||
                memcmp(o.t[2]->data, o.t[3]->data, (size_t)(50 * es)))
                fail_msg("%s %s: the loop and the interpreted reducer "
                         "differ", t, op);
            outs_free(&o);
            hs_tensor_free(args[0]);
        }
}

static void narrow_dots_use_f32_and_integers_wrap(void **state)
{
    (void)state;
    const char *text =
        "HloModule m\n"
        "ENTRY e {\n"
        "  a = f16[2,3] parameter(0)\n"
        "  b = s8[3,2] parameter(1)\n"
        "  c = f16[3,2] convert(b)\n"
        "  d = f32[2,2] dot(a, c), lhs_contracting_dims={1}, "
        "rhs_contracting_dims={0}\n"
        "  h = f16[2,2] dot(a, c), lhs_contracting_dims={1}, "
        "rhs_contracting_dims={0}\n"
        "  i = s8[2,2] dot(b, b), lhs_contracting_dims={0}, "
        "rhs_contracting_dims={0}\n"
        "  g = f64[2,2] convert(d)\n"
        "  k = f64[2,2] dot(g, g), lhs_contracting_dims={1}, "
        "rhs_contracting_dims={0}\n"
        "  ROOT t = (f32[2,2], f16[2,2], s8[2,2], f64[2,2]) tuple(d, h, i, k)\n"
        "}\n";
    float af[6] = {1, 2, 3, 4, 5, 6};
    uint16_t ah[6];
    for (int i = 0; i < 6; i++)
        ah[i] = elem_f32_to_f16(af[i]);
    int8_t b[6] = {100, -1, 100, 2, 100, 3};
    int64_t dims_a[2] = {2, 3}, dims_b[2] = {3, 2};
    hs_shape sa = hs_shape_make(HS_F16, 2, dims_a),
             sb = hs_shape_make(HS_S8, 2, dims_b);
    hs_tensor *args[] = {hs_tensor_new(&sa), hs_tensor_new(&sb)};
    memcpy(args[0]->data, ah, sizeof ah);
    memcpy(args[1]->data, b, sizeof b);
    outs o = run_text(text, args, 2);
    const float *d = o.t[0]->data;
    double want[4];
    for (int r = 0; r < 2; r++)
        for (int c = 0; c < 2; c++) {
            double s = 0;
            for (int k = 0; k < 3; k++)
                s += af[r * 3 + k] * b[k * 2 + c];
            want[r * 2 + c] = s;
            assert_true(d[r * 2 + c] == (float)s);
            assert_true(elem_f16_to_f32(((const uint16_t *)o.t[1]->data)
                                            [r * 2 + c]) ==
                        (float)(_Float16)s);
        }
    /* s8: (100*100 * 3) wraps at 8 bits; b^T b */
    const int8_t *i8 = o.t[2]->data;
    for (int r = 0; r < 2; r++)
        for (int c = 0; c < 2; c++) {
            int64_t s = 0;
            for (int k = 0; k < 3; k++)
                s += b[k * 2 + r] * b[k * 2 + c];
            assert_int_equal(i8[r * 2 + c], (int8_t)(uint8_t)(s & 0xff));
        }
    const double *k64 = o.t[3]->data;
    for (int r = 0; r < 2; r++)
        for (int c = 0; c < 2; c++)
            assert_true(k64[r * 2 + c] == want[r * 2] * want[c] +
                                              want[r * 2 + 1] * want[2 + c]);
    outs_free(&o);
    hs_tensor_free(args[0]);
    hs_tensor_free(args[1]);
}

static void unsigned_shifts_and_data_movement_run(void **state)
{
    (void)state;
    /* A Philox-like step in u32 and u64, fused by nothing: the kernels and
     * the data-movement ops at 1, 2 and 8 bytes. */
    const char *text =
        "HloModule m\n"
        "ENTRY e {\n"
        "  x = u64[4] parameter(0)\n"
        "  i = u64[4] iota(), iota_dimension=0\n"
        "  a = u64[4] add(x, i)\n"
        "  c32 = u64[] constant(32)\n"
        "  b32 = u64[4] broadcast(c32), dimensions={}\n"
        "  hi = u64[4] shift-right-logical(a, b32)\n"
        "  h = u32[4] convert(hi)\n"
        "  l = u32[4] convert(a)\n"
        "  c13 = u32[] constant(13)\n"
        "  b13 = u32[4] broadcast(c13), dimensions={}\n"
        "  sl = u32[4] shift-left(l, b13)\n"
        "  x2 = u32[4] xor(sl, h)\n"
        "  r = u32[4] reverse(x2), dimensions={0}\n"
        "  s16 = s16[4] convert(r)\n"
        "  c16 = s16[] constant(-7)\n"
        "  p = s16[6] pad(s16, c16), padding=1_1\n"
        "  cat = s16[10] concatenate(p, s16), dimensions={0}\n"
        "  ROOT t = (u32[4], s16[10]) tuple(r, cat)\n"
        "}\n";
    uint64_t x[4] = {UINT64_C(0x123456789abcdef0), UINT64_MAX, 0,
                     UINT64_C(0xfffffffffffffffe)};
    hs_tensor *args[] = {tensor_of(HS_U64, 4, x)};
    outs o = run_text(text, args, 1);
    const uint32_t *r = o.t[0]->data;
    uint32_t want[4];
    for (int k = 0; k < 4; k++) {
        uint64_t a = x[k] + (uint64_t)k;
        want[k] = ((uint32_t)a << 13) ^ (uint32_t)(a >> 32);
    }
    for (int k = 0; k < 4; k++)
        assert_int_equal(r[k], want[3 - k]);
    const int16_t *cat = o.t[1]->data;
    assert_int_equal(cat[0], -7);
    assert_int_equal(cat[5], -7);
    for (int k = 0; k < 4; k++) {
        assert_int_equal(cat[1 + k], (int16_t)want[3 - k]);
        assert_int_equal(cat[6 + k], (int16_t)want[3 - k]);
    }
    outs_free(&o);
    hs_tensor_free(args[0]);
}

static void f64_and_new_float_ops_run(void **state)
{
    (void)state;
    const char *text =
        "HloModule m\n"
        "ENTRY e {\n"
        "  x = f64[4] parameter(0)\n"
        "  e = f64[4] exponential(x)\n"
        "  t = f64[4] tan(x)\n"
        "  c = f64[4] cbrt(x)\n"
        "  a = f64[4] atan2(x, e)\n"
        "  r = f64[4] round-nearest-even(x)\n"
        "  z = f64[4] round-nearest-afz(x)\n"
        "  d = f64[4] divide(x, r)\n"
        "  f = pred[4] is-finite(d)\n"
        "  ROOT o = (f64[4], f64[4], f64[4], f64[4], f64[4], f64[4], pred[4]) "
        "tuple(e, t, c, a, r, z, f)\n"
        "}\n";
    double x[4] = {2.5, -0.5, 1e-3, 3.5};
    hs_tensor *args[] = {tensor_of(HS_F64, 4, x)};
    outs o = run_text(text, args, 1);
    for (int k = 0; k < 4; k++) {
        assert_true(((double *)o.t[0]->data)[k] == exp(x[k]));
        assert_true(((double *)o.t[1]->data)[k] == tan(x[k]));
        assert_true(((double *)o.t[2]->data)[k] == cbrt(x[k]));
        assert_true(((double *)o.t[3]->data)[k] == atan2(x[k], exp(x[k])));
    }
    double even[4] = {2, -0.0, 0, 4}, afz[4] = {3, -1, 0, 4};
    for (int k = 0; k < 4; k++) {
        assert_true(((double *)o.t[4]->data)[k] == even[k]);
        assert_true(((double *)o.t[5]->data)[k] == afz[k]);
    }
    uint8_t fin[4] = {1, 0, 0, 1}; /* -0.5 / -0 = inf, 1e-3 / 0 = inf */
    assert_memory_equal(o.t[6]->data, fin, 4);
    outs_free(&o);
    hs_tensor_free(args[0]);
}

static void bitcast_convert_adds_or_removes_a_minor_dimension(void **state)
{
    (void)state;
    const char *text =
        "HloModule m\n"
        "ENTRY e {\n"
        "  x = f32[2] parameter(0)\n"
        "  b = u8[2,4] bitcast-convert(x)\n"
        "  h = bf16[2,2] bitcast-convert(x)\n"
        "  w = f64[] bitcast-convert(h)\n"
        "  s = s32[2] bitcast-convert(x)\n"
        "  ROOT t = (u8[2,4], bf16[2,2], f64[], s32[2]) tuple(b, h, w, s)\n"
        "}\n";
    float x[2] = {1.5f, -0x1p-130f};
    hs_tensor *args[] = {tensor_of(HS_F32, 2, x)};
    outs o = run_text(text, args, 1);
    assert_int_equal(o.n, 4);
    for (int k = 0; k < 4; k++)
        assert_memory_equal(o.t[k]->data, x, sizeof x);
    assert_int_equal(o.t[0]->shape.rank, 2);
    assert_int_equal(o.t[0]->shape.dims[1], 4);
    assert_int_equal(o.t[2]->shape.rank, 0);
    outs_free(&o);
    hs_tensor_free(args[0]);
    /* A wider target needs the minor dimension of the ratio. */
    hs_error err;
    hs_error_clear(&err);
    const char *bad = "HloModule m\nENTRY e {\n  x = u8[3] parameter(0)\n"
                      "  ROOT b = u16[] bitcast-convert(x)\n}\n";
    hs_module *m = hs_hlo_parse(bad, strlen(bad), &err);
    if (m) {
        assert_int_not_equal(hs_module_verify(m, &err), HS_OK);
        hs_module_free(m);
    }
    assert_non_null(strstr(err.message, "minor dimension of 2"));
}

/* reduce-precision to (8, 7) is bf16 rounding; to (5, 10) it is f16
 * rounding in f16's normal range, with overflow to inf and everything
 * below f16's smallest normal flushed to zero (XLA keeps no subnormals). */
static void reduce_precision_matches_bf16_and_f16_rounding(void **state)
{
    (void)state;
    const char *text =
        "HloModule m\n"
        "ENTRY e {\n"
        "  x = f32[4096] parameter(0)\n"
        "  b = f32[4096] reduce-precision(x), exponent_bits=8, mantissa_bits=7\n"
        "  h = f32[4096] reduce-precision(x), exponent_bits=5, "
        "mantissa_bits=10\n"
        "  ROOT t = (f32[4096], f32[4096]) tuple(b, h)\n"
        "}\n";
    hs_module *m = parse(text);
    char *s = print(m);
    assert_contains(s, "reduce-precision(f32[4096]{0} %x), exponent_bits=5, "
                       "mantissa_bits=10");
    free(s);
    hs_module_free(m);
    float x[4096];
    uint32_t seed = 12345;
    for (int i = 0; i < 4096; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = bitsf(seed); /* every exponent, sign and mantissa */
    }
    x[0] = NAN;
    x[1] = 65519.0f;  /* rounds to 65504 in f16 */
    x[2] = 65520.0f;  /* overflows f16 */
    x[3] = 0x1p-14f;  /* f16's smallest normal */
    x[4] = 0x1p-15f;  /* an f16 subnormal: flushed */
    hs_tensor *args[] = {tensor_of(HS_F32, 4096, x)};
    outs o = run_text(text, args, 1);
    const float *b = o.t[0]->data, *h = o.t[1]->data;
    for (int i = 0; i < 4096; i++) {
        if (isnan(x[i])) {
            assert_true(isnan(b[i]) && isnan(h[i]));
            continue;
        }
        assert_int_equal(fbits(b[i]), (uint32_t)ref_bf16(x[i]) << 16);
        float want;
#ifdef __FLT16_MAX__
        want = (float)(_Float16)x[i];
#else
        want = elem_f16_to_f32(elem_f32_to_f16(x[i]));
#endif
        if (fabsf(want) < 0x1p-14f)
            want = copysignf(0.0f, x[i]);
        if (fbits(h[i]) != fbits(want))
            fail_msg("reduce-precision(5, 10) of %a: %a, want %a", x[i],
                     h[i], want);
    }
    assert_true(h[1] == 65504.0f && isinf(h[2]) && h[3] == 0x1p-14f &&
                h[4] == 0.0f);
    outs_free(&o);
    hs_tensor_free(args[0]);
}

/* ---- constant folding ------------------------------------------------------ */

/* A folded constant has the bits the device computes for the same
 * instruction, at the new types and opcodes too (both call numerics/). */
static void folded_constants_of_every_type_have_the_executed_bits(void **state)
{
    (void)state;
    static const struct {
        const char *type, *a, *b, *root;
    } cases[] = {
        {"bf16", "{1.5, -0, 3.3e38, nan}", "{0.1, 3, 3.3e38, 1}",
         "ROOT r = bf16[4] multiply(a, b)"},
        {"bf16", "{1.5, -0, 3.3e38, nan}", "{0.1, 3, 3.3e38, 1}",
         "ROOT r = bf16[4] add(a, b)"},
        {"f16", "{1, 65504, 6e-08, -2}", "{3, 0.5, 2, 0}",
         "ROOT r = f16[4] divide(a, b)"},
        {"f64", "{0.5, -1, 1e300, 2}", "{3, 2, 1e300, 0}",
         "ROOT r = f64[4] tan(a)"},
        {"f64", "{0.5, -1, 1e300, 2}", "{3, 2, 1e300, 0}",
         "ROOT r = f64[4] atan2(a, b)"},
        {"s8", "{-128, 127, 7, -7}", "{-1, 1, 0, 2}",
         "ROOT r = s8[4] divide(a, b)"},
        {"u8", "{255, 1, 7, 128}", "{1, 255, 0, 2}",
         "ROOT r = u8[4] add(a, b)"},
        {"u32", "{1, 4294967295, 7, 2147483648}", "{31, 32, 1, 4294967295}",
         "ROOT r = u32[4] shift-left(a, b)"},
        {"s16", "{-32768, 5, -5, 1}", "{15, 16, 1, -1}",
         "ROOT r = s16[4] shift-right-arithmetic(a, b)"},
        {"u64", "{18446744073709551615, 0, 1, 255}", "{0, 0, 0, 0}",
         "ROOT r = u64[4] popcnt(a)"},
        {"s32", "{0, 1, -1, 65536}", "{0, 0, 0, 0}",
         "ROOT r = s32[4] count-leading-zeros(a)"},
        {"bf16", "{1.5, -0, 3.3e38, nan}", "{0.1, 3, 3.3e38, 1}",
         "ROOT r = pred[4] is-finite(b)"},
        {"f16", "{1, 65504, 6e-08, -2}", "{3, 0.5, 2, 0}",
         "ROOT r = u8[4] convert(a)"},
        {"f64", "{0.5, -1, 1e300, 2}", "{3, 2, 1e300, 0}",
         "ROOT r = bf16[4] convert(a)"},
        {"u8", "{255, 1, 7, 128}", "{1, 255, 0, 2}",
         "ROOT r = pred[4] compare(a, b), direction=GT"},
        {"s8", "{-128, 127, 7, -7}", "{-1, 1, 0, 2}",
         "ROOT r = s8[4] clamp(b, a, b)"},
        {"bf16", "{1.5, -0, 3.3e38, nan}", "{0.1, 3, 3.3e38, 1}",
         "ROOT r = bf16[4] reduce-precision(b), exponent_bits=5, "
         "mantissa_bits=2"},
        {"f64", "{0.5, -1, 1e300, 2}", "{3, 2, 1e300, 0}",
         "ROOT r = f64[4] reduce-precision(a), exponent_bits=8, "
         "mantissa_bits=23"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char text[1024];
        snprintf(text, sizeof text,
                 "HloModule m\nENTRY main {\n"
                 "  a = %s[4] constant(%s)\n  b = %s[4] constant(%s)\n"
                 "  %s\n}\n",
                 cases[k].type, cases[k].a, cases[k].type, cases[k].b,
                 cases[k].root);
        hs_module *run_m = parse(text), *fold_m = parse(text);
        hs_tensor **out = NULL;
        int n_out = 0;
        hs_error err;
        hs_error_clear(&err);
        if (hs_device_run(run_m, NULL, NULL, 0, &out, &n_out, NULL, &err))
            fail_msg("%s: %s", cases[k].root, err.message);
        const hs_pass *pass = hs_pass_lookup("simplify");
        hs_pass_context ctx;
        hs_pass_context_init(&ctx);
        bool changed = false;
        assert_int_equal(pass->run(fold_m, &ctx, &changed, &err), HS_OK);
        const hs_instruction *r = fold_m->entry->root;
        if (r->opcode != HS_OP_CONSTANT)
            fail_msg("not folded: %s", cases[k].root);
        assert_int_equal(n_out, 1);
        if (memcmp(out[0]->data, r->literal,
                   (size_t)hs_shape_bytes(&r->shape)) != 0)
            fail_msg("folded and executed bits differ: %s",
                     cases[k].root);
        hs_tensors_free(out, n_out);
        hs_module_free(run_m);
        hs_module_free(fold_m);
    }
}

/* Complex and sub-byte types are refused before anything runs, saying
 * why. */
static void complex_and_sub_byte_types_are_refused_up_front(void **state)
{
    (void)state;
    const char *text = "HloModule m\nENTRY e {\n"
                       "  x = s4[8] parameter(0)\n"
                       "  y = s4[8] add(x, x)\n"
                       "  c = c128[2] parameter(1)\n"
                       "  d = c128[2] negate(c)\n"
                       "  ROOT t = (s4[8], c128[2]) tuple(y, d)\n}\n";
    hs_module *m = parse(text);
    hs_error err;
    hs_error_clear(&err);
    assert_int_equal(hs_device_check(m, &err), HS_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.message, "element type 's4' (sub-byte types "
                                        "are not executed yet)"));
    assert_non_null(strstr(err.message, "element type 'c128' (complex "
                                        "types are not executed)"));
    hs_module_free(m);
}

/* ---- fusion -------------------------------------------------------------------- */

/* The fusion pass's element-wise programs at 1-, 2- and 8-byte types
 * (loads through index maps, iota, select, converts, shifts) give the bits
 * of the unfused kernels. */
static void fused_programs_at_every_width_match_unfused(void **state)
{
    (void)state;
    const char *text =
        "HloModule m\n"
        "ENTRY e {\n"
        "  x = f32[32,48] parameter(0)\n"
        "  xb = bf16[32,48] convert(x)\n"
        "  t = bf16[48,32] transpose(xb), dimensions={1,0}\n"
        "  i = bf16[48,32] iota(), iota_dimension=1\n"
        "  m = bf16[48,32] multiply(t, i)\n"
        "  z = bf16[] constant(0)\n"
        "  zb = bf16[48,32] broadcast(z), dimensions={}\n"
        "  p = pred[48,32] compare(m, zb), direction=GT\n"
        "  s = bf16[48,32] select(p, m, t)\n"
        "  h = f16[48,32] convert(s)\n"
        "  e = f16[48,32] exponential(h)\n"
        "  u = u8[48,32] convert(e)\n"
        "  one = u8[] constant(1)\n"
        "  ob = u8[48,32] broadcast(one), dimensions={}\n"
        "  sh = u8[48,32] shift-left(u, ob)\n"
        "  r = u8[48,32] reverse(sh), dimensions={0}\n"
        "  w = u64[48,32] convert(r)\n"
        "  k = u64[] constant(40)\n"
        "  kb = u64[48,32] broadcast(k), dimensions={}\n"
        "  q = u64[48,32] shift-left(w, kb)\n"
        "  d = f64[48,32] convert(q)\n"
        "  ROOT o = (f16[48,32], u8[48,32], f64[48,32]) tuple(e, r, d)\n"
        "}\n";
    hs_module *m = parse(text);
    float x[32 * 48];
    for (int i = 0; i < 32 * 48; i++)
        x[i] = (float)((i * 29) % 97) / 24.0f - 2.0f;
    int64_t dims[2] = {32, 48};
    hs_shape sx = hs_shape_make(HS_F32, 2, dims);
    hs_tensor *args[] = {hs_tensor_new(&sx)};
    memcpy(args[0]->data, x, sizeof x);
    const char *pipelines[] = {"verify", "verify,fusion"};
    hs_tensor **out[2];
    int n[2];
    hs_executable *exe[2];
    for (int k = 0; k < 2; k++) {
        hs_compile_options o;
        hs_compile_options_init(&o);
        o.pipeline = pipelines[k];
        hs_error err;
        hs_error_clear(&err);
        if (hs_compile(m, &o, NULL, NULL, &exe[k], &err) != HS_OK)
            fail_msg("compile: %s", err.message);
        if (hs_device_run(hs_executable_module(exe[k]), NULL, args, 1,
                          &out[k], &n[k], NULL, &err) != HS_OK)
            fail_msg("run (%s): %s", pipelines[k], err.message);
    }
    const hs_module *fused = hs_executable_module(exe[1]);
    int fusions = 0;
    for (int k = 0; k < fused->entry->n_instrs; k++)
        fusions += fused->entry->instrs[k]->opcode == HS_OP_FUSION;
    assert_true(fusions >= 1);
    assert_int_equal(n[0], n[1]);
    for (int k = 0; k < n[0]; k++)
        if (memcmp(out[0][k]->data, out[1][k]->data,
                   (size_t)hs_shape_bytes(&out[0][k]->shape)) != 0)
            fail_msg("output %d: fused and unfused bits differ", k);
    for (int k = 0; k < 2; k++) {
        hs_tensors_free(out[k], n[k]);
        hs_executable_release(exe[k]);
    }
    hs_tensor_free(args[0]);
    hs_module_free(m);
}

/* ---- literals ------------------------------------------------------------------ */

static void literals_of_every_type_print_back(void **state)
{
    (void)state;
    const char *text =
        "HloModule m\n"
        "ENTRY e {\n"
        "  a = bf16[3] constant({1.5, -0.1, 3.38953e+38})\n"
        "  b = f16[3] constant({65504, 6e-08, -0})\n"
        "  c = u64[2] constant({18446744073709551615, 9223372036854775808})\n"
        "  d = f8e4m3fn[3] constant({448, -nan, 0.001953125})\n"
        "  e = f8e5m2[2] constant({57344, -inf})\n"
        "  f = s8[2] constant({-128, 127})\n"
        "  g = f64[1] constant({0.1})\n"
        "  h = f8e8m0fnu[1] constant({0.25})\n"
        "  ROOT t = (bf16[3], f16[3], u64[2], f8e4m3fn[3], f8e5m2[2], s8[2], "
        "f64[1], f8e8m0fnu[1]) tuple(a, b, c, d, e, f, g, h)\n"
        "}\n";
    hs_module *m = parse(text);
    char *s = print(m);
    /* The shortest text that reads back to the same bits. */
    assert_contains(s, "constant({1.5, -0.1, 3.39e+38})");
    assert_contains(s, "constant({6.55e+04, 5.96e-08, -0})");
    assert_contains(s, "{18446744073709551615, 9223372036854775808}");
    assert_contains(s, "constant({4.5e+02, -nan, 0.002})");
    assert_contains(s, "constant({6e+04, -inf})");
    assert_contains(s, "constant({-128, 127})");
    assert_contains(s, "constant({0.1})");
    /* and the printed text is a fixed point with the same bits */
    hs_module *m2 = parse(s);
    char *s2 = print(m2);
    assert_string_equal(s, s2);
    const char *names[] = {"a", "b", "c", "d", "e", "f", "g", "h"};
    for (int k = 0; k < 8; k++) {
        const hs_instruction *x = find_instr(m, names[k]),
                             *y = find_instr(m2, names[k]);
        assert_non_null(x->literal);
        assert_memory_equal(x->literal, y->literal,
                            (size_t)hs_shape_bytes(&x->shape));
    }
    assert_int_equal(*(const uint8_t *)find_instr(m, "h")->literal, 125);
    const uint16_t *b = find_instr(m, "b")->literal;
    assert_int_equal(b[0], 0x7bff); /* 65504 */
    assert_int_equal(b[1], 0x0001); /* 6e-08 -> the smallest subnormal */
    assert_int_equal(b[2], 0x8000);
    const uint8_t *d = find_instr(m, "d")->literal;
    assert_int_equal(d[0], 0x7e);
    assert_int_equal(d[1], 0xff);
    assert_int_equal(d[2], 0x01);
    free(s);
    free(s2);
    hs_module_free(m);
    hs_module_free(m2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#ifdef __FLT16_MAX__
        cmocka_unit_test(f16_matches_the_compilers_conversions),
#endif
        cmocka_unit_test(bf16_rounds_to_nearest_even),
        cmocka_unit_test(f8_decode_matches_the_definitions),
        cmocka_unit_test(f8_encode_rounds_to_nearest_even),
        cmocka_unit_test(signed_integers_wrap_and_follow_xla_at_each_width),
        cmocka_unit_test(unsigned_integers_wrap_and_follow_xla_at_each_width),
        cmocka_unit_test(convert_saturates_wraps_and_rounds),
        cmocka_unit_test(bf16_ops_round_every_result_and_reduce_in_bf16),
        cmocka_unit_test(reduce_loops_match_the_interpreted_reducer),
        cmocka_unit_test(narrow_dots_use_f32_and_integers_wrap),
        cmocka_unit_test(unsigned_shifts_and_data_movement_run),
        cmocka_unit_test(f64_and_new_float_ops_run),
        cmocka_unit_test(bitcast_convert_adds_or_removes_a_minor_dimension),
        cmocka_unit_test(reduce_precision_matches_bf16_and_f16_rounding),
        cmocka_unit_test(folded_constants_of_every_type_have_the_executed_bits),
        cmocka_unit_test(complex_and_sub_byte_types_are_refused_up_front),
        cmocka_unit_test(fused_programs_at_every_width_match_unfused),
        cmocka_unit_test(literals_of_every_type_print_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
