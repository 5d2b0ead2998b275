/*
 * element_types.c - loads and stores of every executable element type
 * (element_types.h), and the small float formats.
 *
 * The small formats follow ml_dtypes (the library behind JAX's and XLA's
 * f8 types), without its saturating variant:
 *
 *   style  types                              inf    NaN             -0
 *   IEEE   f16, bf16, f8e5m2, f8e4m3, f8e3m4  yes    exp all ones    yes
 *   FN     f8e4m3fn                           no     S.1111.111      yes
 *   FNUZ   f8e4m3fnuz, f8e5m2fnuz,            no     0x80 only       no
 *          f8e4m3b11fnuz
 *   E8M0   f8e8m0fnu (2^(e-127), unsigned)    no     0xff            no zero
 *   F4     f4e2m1fn                           no     none            yes
 *
 * Encoding rounds once to nearest even. What does not fit: IEEE formats
 * overflow to inf; FN and FNUZ give their NaN (infinities too); E8M0 gives
 * NaN for zero, negative values, infinities and overflow, and values below
 * 2^-127 round to 2^-127 or 2^-126 as if 0x00 were next to zero; F4
 * overflows and infinities saturate to +-6, and a NaN encodes as 0x8
 * (-0), -NaN as 0x0, ml_dtypes' choice for a format without NaN.
 */
#include <math.h>
#include <pthread.h>

#include "numerics/element_ops.h"
#include "numerics/element_types.h"

/* ---- f16 ----------------------------------------------------------------- */

float elem_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    if (exp == 0) {
        float v = ldexpf((float)mant, -24);
        return sign ? -v : v;
    }
    if (exp == 31)
        return elem_bits_f32(sign | 0x7f800000 | (mant << 13));
    return elem_bits_f32(sign | ((exp + 112) << 23) | (mant << 13));
}

uint16_t elem_f32_to_f16(float f)
{
    uint32_t x = elem_f32_bits(f);
    uint32_t sign = (x >> 16) & 0x8000;
    uint32_t exp = (x >> 23) & 0xff, mant = x & 0x7fffff;
    if (exp == 0xff)
        return (uint16_t)(sign | 0x7c00 | (mant ? 0x200 | (mant >> 13) : 0));
    int e = (int)exp - 127 + 15;
    if (e >= 31)
        return (uint16_t)(sign | 0x7c00);
    if (e <= 0) {
        if (e < -10)
            return (uint16_t)sign;
        mant |= 0x800000;
        int shift = 14 - e;
        uint32_t h = mant >> shift, rem = mant & ((1u << shift) - 1);
        uint32_t mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (h & 1)))
            h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = sign | ((uint32_t)e << 10) | (mant >> 13);
    uint32_t rem = mant & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (h & 1)))
        h++; /* a carry into the exponent correctly gives inf */
    return (uint16_t)h;
}

/* ---- the small float formats ------------------------------------------- */

typedef enum { IEEE, FN, FNUZ, E8M0, F4 } style;

typedef struct format {
    int bits, ebits, mbits, bias;
    style style;
} format;

static bool format_of(hs_dtype t, format *f)
{
    switch (t) {
    case HS_F16: *f = (format){16, 5, 10, 15, IEEE}; return true;
    case HS_BF16: *f = (format){16, 8, 7, 127, IEEE}; return true;
    case HS_F8E5M2: *f = (format){8, 5, 2, 15, IEEE}; return true;
    case HS_F8E4M3: *f = (format){8, 4, 3, 7, IEEE}; return true;
    case HS_F8E3M4: *f = (format){8, 3, 4, 3, IEEE}; return true;
    case HS_F8E4M3FN: *f = (format){8, 4, 3, 7, FN}; return true;
    case HS_F8E4M3FNUZ: *f = (format){8, 4, 3, 8, FNUZ}; return true;
    case HS_F8E5M2FNUZ: *f = (format){8, 5, 2, 16, FNUZ}; return true;
    case HS_F8E4M3B11FNUZ: *f = (format){8, 4, 3, 11, FNUZ}; return true;
    case HS_F8E8M0FNU: *f = (format){8, 8, 0, 127, E8M0}; return true;
    case HS_F4E2M1FN: *f = (format){4, 2, 1, 1, F4}; return true;
    default: return false;
    }
}

static uint32_t field_ones(int n) { return (1u << n) - 1; }

/* The largest finite value's encoding (positive). */
static uint32_t max_finite_bits(const format *f)
{
    uint32_t e = field_ones(f->ebits), m = field_ones(f->mbits);
    switch (f->style) {
    case IEEE: return ((e - 1) << f->mbits) | m;
    case FN: return (e << f->mbits) | (m - 1);
    case E8M0: return e - 1;
    default: return (e << f->mbits) | m; /* FNUZ, F4 */
    }
}

double elem_small_decode(hs_dtype t, uint32_t bits)
{
    format f;
    if (!format_of(t, &f))
        return NAN;
    uint32_t e_ones = field_ones(f.ebits), m_ones = field_ones(f.mbits);
    if (f.style == E8M0)
        return bits == 0xff ? NAN : ldexp(1.0, (int)bits - 127);
    bool neg = (bits >> (f.bits - 1)) & 1;
    uint32_t exp = (bits >> f.mbits) & e_ones, mant = bits & m_ones;
    double v;
    if (f.style == FNUZ && bits == 0x80)
        return NAN;
    if (f.style == IEEE && exp == e_ones)
        v = mant ? NAN : INFINITY;
    else if (f.style == FN && exp == e_ones && mant == m_ones)
        v = NAN;
    else if (exp == 0)
        v = ldexp((double)mant, 1 - f.bias - f.mbits);
    else
        v = ldexp(1.0 + ldexp((double)mant, -f.mbits), (int)exp - f.bias);
    return neg ? -v : v;
}

/* The encoding of NaN (sign: the value's sign bit) in format f. */
static uint32_t nan_bits(const format *f, bool sign)
{
    uint32_t s = sign ? 1u << (f->bits - 1) : 0;
    switch (f->style) {
    case IEEE:
        return s | (field_ones(f->ebits) << f->mbits) |
               (1u << (f->mbits - 1)); /* quiet */
    case FN: return s | field_ones(f->bits - 1);
    case FNUZ: return 0x80;
    case E8M0: return 0xff;
    default: return sign ? 0x0 : 0x8; /* F4: ml_dtypes' "NaN" is -0 */
    }
}

/* What a value too large for format f (or an infinity) becomes. */
static uint32_t overflow_bits(const format *f, bool sign)
{
    uint32_t s = sign ? 1u << (f->bits - 1) : 0;
    switch (f->style) {
    case IEEE: return s | (field_ones(f->ebits) << f->mbits);
    case F4: return s | max_finite_bits(f);
    default: return nan_bits(f, sign);
    }
}

uint32_t elem_small_encode(hs_dtype t, double v)
{
    format f;
    if (!format_of(t, &f))
        return 0;
    bool sign = signbit(v) != 0;
    uint32_t s = sign ? 1u << (f.bits - 1) : 0;
    if (isnan(v))
        return nan_bits(&f, sign);
    if (f.style == E8M0 && (v == 0 || sign))
        return 0xff; /* no zero, no sign */
    if (isinf(v))
        return overflow_bits(&f, sign);
    double a = fabs(v);
    if (a == 0)
        return f.style == FNUZ ? 0 : s;
    /* The quantum at a's exponent (at the smallest normal one below it),
     * then one rounding to a multiple of it: exact in double, since a has
     * at most 53 significant bits and the scaling is by a power of two. */
    int emin = f.style == E8M0 ? -127 : 1 - f.bias, e;
    frexp(a, &e);
    int ex = e - 1 < emin ? emin : e - 1;
    double r = rint(ldexp(a, f.mbits - ex)); /* nearest, ties to even */
    double rounded = ldexp(r, ex - f.mbits);
    if (rounded > elem_small_decode(t, max_finite_bits(&f)))
        return overflow_bits(&f, sign);
    if (rounded == 0)
        return f.style == FNUZ || f.style == E8M0 ? 0 : s;
    if (f.style == E8M0) {
        frexp(rounded, &e);
        return (uint32_t)(e - 1 + 127);
    }
    if (rounded < ldexp(1.0, emin)) /* subnormal: exponent field 0 */
        return s | (uint32_t)r;
    frexp(rounded, &e);
    uint32_t mant =
        (uint32_t)(ldexp(rounded, -(e - 1)) * (double)(1u << f.mbits)) -
        (1u << f.mbits);
    return s | ((uint32_t)(e - 1 + f.bias) << f.mbits) | mant;
}

/* ---- 8-bit decode tables -------------------------------------------------- */

enum { N_F8 = HS_F8E8M0FNU - HS_F8E3M4 + 1 };

static float f8_table[N_F8][256];
static float f4_table[16];
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static void build_tables(void)
{
    for (int t = 0; t < N_F8; t++)
        for (uint32_t b = 0; b < 256; b++)
            f8_table[t][b] =
                (float)elem_small_decode((hs_dtype)(HS_F8E3M4 + t), b);
    for (uint32_t b = 0; b < 16; b++)
        f4_table[b] = (float)elem_small_decode(HS_F4E2M1FN, b);
}

/* The decode table of an 8-bit (or f4, one element per byte) float. */
static const float *decode_table(hs_dtype t)
{
    pthread_once(&tables_once, build_tables);
    if (t == HS_F4E2M1FN)
        return f4_table;
    return f8_table[t - HS_F8E3M4];
}

/* ---- integers: saturating conversion from floats -------------------------- */

/* d toward zero, saturated to a signed `bits`-bit integer; NaN gives 0. */
static int64_t float_to_sint(double d, int bits)
{
    double hi = ldexp(1.0, bits - 1);
    if (d != d)
        return 0;
    if (d >= hi)
        return bits == 64 ? INT64_MAX : ((int64_t)1 << (bits - 1)) - 1;
    if (d < -hi)
        return bits == 64 ? INT64_MIN : -((int64_t)1 << (bits - 1));
    return (int64_t)d;
}

/* The same for an unsigned `bits`-bit integer: negative values give 0. */
static uint64_t float_to_uint(double d, int bits)
{
    double hi = ldexp(1.0, bits);
    if (d != d || d <= -1.0)
        return 0;
    if (d >= hi)
        return bits == 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1;
    return (uint64_t)d;
}

/* ---- loads ----------------------------------------------------------------- */

#define WIDEN(TS, TW)                                                      \
    do {                                                                   \
        const TS *restrict s_ = src;                                       \
        TW *restrict w_ = wide;                                            \
        for (int64_t i = 0; i < n; i++)                                    \
            w_[i] = (TW)s_[i];                                             \
    } while (0)

void elem_load(hs_dtype t, const void *src, void *wide, int64_t n)
{
    switch (t) {
    case HS_PRED: case HS_F32: case HS_S64: case HS_U64: case HS_F64:
        memcpy(wide, src, (size_t)n * (size_t)elem_bytes(t));
        break;
    case HS_S8: WIDEN(int8_t, int64_t); break;
    case HS_S16: WIDEN(int16_t, int64_t); break;
    case HS_S32: WIDEN(int32_t, int64_t); break;
    case HS_U8: WIDEN(uint8_t, uint64_t); break;
    case HS_U16: WIDEN(uint16_t, uint64_t); break;
    case HS_U32: WIDEN(uint32_t, uint64_t); break;
    case HS_BF16: {
        const uint16_t *restrict s = src;
        float *restrict w = wide;
        for (int64_t i = 0; i < n; i++)
            w[i] = elem_bf16_to_f32(s[i]);
        break;
    }
    case HS_F16: {
        const uint16_t *restrict s = src;
        float *restrict w = wide;
        for (int64_t i = 0; i < n; i++)
            w[i] = elem_f16_to_f32(s[i]);
        break;
    }
    default: { /* the 8-bit floats */
        const float *table = decode_table(t);
        const uint8_t *restrict s = src;
        float *restrict w = wide;
        for (int64_t i = 0; i < n; i++)
            w[i] = table[s[i]];
        break;
    }
    }
}

/* ---- stores ---------------------------------------------------------------- */

/* Each store reads the wide type W of its source and writes type TD. */
#define STORE_FROM(TD, EXPR)                                               \
    do {                                                                   \
        TD *restrict d_ = dst;                                             \
        switch (w) {                                                       \
        case HS_F32: {                                                     \
            const float *restrict s_ = wide;                               \
            for (int64_t i = 0; i < n; i++) {                              \
                float v = s_[i];                                           \
                d_[i] = (TD)(EXPR);                                        \
            }                                                              \
            break;                                                         \
        }                                                                  \
        case HS_F64: {                                                     \
            const double *restrict s_ = wide;                              \
            for (int64_t i = 0; i < n; i++) {                              \
                double v = s_[i];                                          \
                d_[i] = (TD)(EXPR);                                        \
            }                                                              \
            break;                                                         \
        }                                                                  \
        case HS_S64: {                                                     \
            const int64_t *restrict s_ = wide;                             \
            for (int64_t i = 0; i < n; i++) {                              \
                int64_t v = s_[i];                                         \
                d_[i] = (TD)(EXPR);                                        \
            }                                                              \
            break;                                                         \
        }                                                                  \
        case HS_U64: {                                                     \
            const uint64_t *restrict s_ = wide;                            \
            for (int64_t i = 0; i < n; i++) {                              \
                uint64_t v = s_[i];                                        \
                d_[i] = (TD)(EXPR);                                        \
            }                                                              \
            break;                                                         \
        }                                                                  \
        default: {                                                         \
            const uint8_t *restrict s_ = wide;                             \
            for (int64_t i = 0; i < n; i++) {                              \
                uint8_t v = s_[i];                                         \
                d_[i] = (TD)(EXPR);                                        \
            }                                                              \
            break;                                                         \
        }                                                                  \
        }                                                                  \
    } while (0)

static bool wide_is_float(hs_dtype w) { return w == HS_F32 || w == HS_F64; }

/* An integer store: saturating from floats, truncating from integers. */
#define STORE_INT(TD, BITS, SAT)                                           \
    do {                                                                   \
        if (wide_is_float(w))                                              \
            STORE_FROM(TD, SAT((double)v, BITS));                          \
        else                                                               \
            STORE_FROM(TD, v);                                             \
    } while (0)

void elem_store(hs_dtype t, hs_dtype w, const void *wide, void *dst,
                int64_t n)
{
    if (t == w) {
        memcpy(dst, wide, (size_t)n * (size_t)elem_bytes(t));
        return;
    }
    switch (t) {
    case HS_PRED: STORE_FROM(uint8_t, v != 0); break;
    case HS_S8: STORE_INT(int8_t, 8, float_to_sint); break;
    case HS_S16: STORE_INT(int16_t, 16, float_to_sint); break;
    case HS_S32: STORE_INT(int32_t, 32, float_to_sint); break;
    case HS_S64: STORE_INT(int64_t, 64, float_to_sint); break;
    case HS_U8: STORE_INT(uint8_t, 8, float_to_uint); break;
    case HS_U16: STORE_INT(uint16_t, 16, float_to_uint); break;
    case HS_U32: STORE_INT(uint32_t, 32, float_to_uint); break;
    case HS_U64: STORE_INT(uint64_t, 64, float_to_uint); break;
    case HS_F64: STORE_FROM(double, v); break;
    case HS_F32: STORE_FROM(float, v); break;
    case HS_BF16:
        if (w == HS_F32)
            STORE_FROM(uint16_t, elem_f32_to_bf16((float)v));
        else /* one rounding from the wider value */
            STORE_FROM(uint16_t, elem_small_encode(t, (double)v));
        break;
    case HS_F16:
        if (w == HS_F32)
            STORE_FROM(uint16_t, elem_f32_to_f16((float)v));
        else
            STORE_FROM(uint16_t, elem_small_encode(t, (double)v));
        break;
    default: /* the 8-bit floats */
        STORE_FROM(uint8_t, elem_small_encode(t, (double)v));
        break;
    }
}

/* ---- convert ---------------------------------------------------------------- */

void elem_convert(hs_dtype from, hs_dtype to, const void *a, void *y,
                  int64_t n)
{
    int in = elem_bytes(from), out = elem_bytes(to);
    if (from == to) {
        memcpy(y, a, (size_t)n * (size_t)in);
        return;
    }
    hs_dtype w = elem_wide(from);
    if (from == w) { /* already wide: store straight from the source */
        elem_store(to, w, a, y, n);
        return;
    }
    _Alignas(64) uint64_t buf[ELEM_CHUNK];
    for (int64_t at = 0; at < n; at += ELEM_CHUNK) {
        int64_t m = n - at < ELEM_CHUNK ? n - at : ELEM_CHUNK;
        elem_load(from, (const char *)a + at * in, buf, m);
        elem_store(to, w, buf, (char *)y + at * out, m);
    }
}
