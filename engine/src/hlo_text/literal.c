/* literal.c - constant literals: decoding text such as { {1, 0}, {0, 1} }
 * into row-major C arrays, and printing them back. Floats print as the
 * shortest text that reads back to the same bits, so print(parse(x)) is a
 * fixed point. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hlo_text/hlo_text_internal.h"
#include "numerics/element_types.h"

/* A scalar written for an array shape (constant(0) for f32[1024,1024]) is
 * expanded only up to this many elements; larger ones stay text. */
#define FILL_LIMIT ((int64_t)1 << 22)

/* Bytes per element of the types decoded here (every executable type:
 * pred, the integers of 8 to 64 bits, f16, bf16, f32, f64 and the f8
 * types); 0 for the others. */
static int elem_size(hs_dtype t)
{
    return elem_bytes(t);
}

/* Parses one value token (NUL-terminated) into dst. */
static bool decode_value(hs_dtype t, const char *tok, void *dst)
{
    char *end;
    errno = 0;
    if (t == HS_PRED) {
        uint8_t v;
        if (strcmp(tok, "true") == 0 || strcmp(tok, "1") == 0)
            v = 1;
        else if (strcmp(tok, "false") == 0 || strcmp(tok, "0") == 0)
            v = 0;
        else
            return false;
        memcpy(dst, &v, 1);
        return true;
    }
    if (hs_dtype_is_float(t)) {
        double d = strtod(tok, &end);
        if (*end || end == tok)
            return false;
        if (t == HS_F64) {
            memcpy(dst, &d, 8);
        } else if (t == HS_F32) {
            float f = strtof(tok, NULL); /* one rounding from the text */
            memcpy(dst, &f, 4);
        } else if (hs_dtype_bits(t) == 16) {
            uint16_t h = (uint16_t)elem_small_encode(t, d);
            memcpy(dst, &h, 2);
        } else {
            uint8_t q = (uint8_t)elem_small_encode(t, d);
            memcpy(dst, &q, 1);
        }
        return true;
    }
    bool is_signed = t == HS_S8 || t == HS_S16 || t == HS_S32 || t == HS_S64;
    int bytes = elem_size(t);
    if (is_signed) {
        long long v = strtoll(tok, &end, 10);
        if (*end || end == tok || errno)
            return false;
        int64_t lo = bytes == 8 ? INT64_MIN : -((int64_t)1 << (bytes * 8 - 1));
        int64_t hi = bytes == 8 ? INT64_MAX : ((int64_t)1 << (bytes * 8 - 1)) - 1;
        if (v < lo || v > hi)
            return false;
        int8_t v8 = (int8_t)v;
        int16_t v16 = (int16_t)v;
        int32_t v32 = (int32_t)v;
        int64_t v64 = (int64_t)v;
        memcpy(dst, bytes == 1 ? (void *)&v8 : bytes == 2 ? (void *)&v16
                    : bytes == 4 ? (void *)&v32 : (void *)&v64, (size_t)bytes);
        return true;
    }
    if (tok[0] == '-')
        return false;
    unsigned long long v = strtoull(tok, &end, 10);
    if (*end || end == tok || errno)
        return false;
    if (bytes < 8 && v > ((1ull << (bytes * 8)) - 1))
        return false;
    uint8_t v8 = (uint8_t)v;
    uint16_t v16 = (uint16_t)v;
    uint32_t v32 = (uint32_t)v;
    uint64_t v64 = (uint64_t)v;
    memcpy(dst, bytes == 1 ? (void *)&v8 : bytes == 2 ? (void *)&v16
                : bytes == 4 ? (void *)&v32 : (void *)&v64, (size_t)bytes);
    return true;
}

static bool is_sep(char c)
{
    return c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r' ||
           c == '{' || c == '}';
}

void *hs__literal_decode(hs_arena *a, const hs_shape *sh, const char *text,
                         size_t len, bool *one_value)
{
    *one_value = false;
    int bytes = elem_size(sh->dtype);
    if (!bytes || sh->dtype == HS_TUPLE)
        return NULL;
    int64_t n = 1;
    for (int k = 0; k < sh->rank; k++) {
        if (sh->dims[k] < 0 || (sh->dims[k] && n > INT64_MAX / 8 / sh->dims[k]))
            return NULL;
        n *= sh->dims[k];
    }
    /* Each value takes at least one character, so a literal that lists
     * its values is never larger than its text. */
    unsigned char *data = NULL;
    if (n <= (int64_t)len + 1) {
        data = hs_arena_alloc(a, n > 0 ? (size_t)(n * bytes) : 1);
        if (!data)
            return NULL;
    }
    unsigned char first[8];
    int64_t count = 0;
    int depth = 0;
    bool braces = false;
    for (size_t p = 0; p < len;) {
        char c = text[p];
        if (c == '{') {
            if (++depth > HS_HLO_MAX_DEPTH)
                return NULL;
            braces = true;
            p++;
            continue;
        }
        if (c == '}') {
            if (--depth < 0)
                return NULL;
            p++;
            continue;
        }
        if (is_sep(c)) {
            p++;
            continue;
        }
        size_t b = p;
        while (p < len && !is_sep(text[p]))
            p++;
        char tok[64];
        if (p - b >= sizeof tok)
            return NULL;
        memcpy(tok, text + b, p - b);
        tok[p - b] = '\0';
        unsigned char *dst = count == 0 ? first
                             : data && count < n ? data + count * bytes
                                                 : NULL;
        if (!dst || !decode_value(sh->dtype, tok, dst))
            return NULL;
        if (count == 0 && data && n > 0)
            memcpy(data, first, (size_t)bytes);
        count++;
    }
    if (depth != 0)
        return NULL;
    if (count == n)
        return data;
    if (count != 1 || braces || n > FILL_LIMIT)
        return NULL;
    /* One value for an array shape: every element takes it. */
    *one_value = sh->rank > 0;
    if (!data) {
        data = hs_arena_alloc(a, n > 0 ? (size_t)(n * bytes) : 1);
        if (!data)
            return NULL;
    }
    for (int64_t k = 0; k < n; k++)
        memcpy(data + k * bytes, first, (size_t)bytes);
    return data;
}

/* Whether text s reads back to the bits of v in type t. */
static bool same_bits(hs_dtype t, const char *s, double v)
{
    switch (t) {
    case HS_F64: {
        double d = strtod(s, NULL);
        return memcmp(&d, &v, sizeof d) == 0;
    }
    case HS_F32:
        return elem_f32_bits(strtof(s, NULL)) == elem_f32_bits((float)v);
    default:
        return elem_small_encode(t, strtod(s, NULL)) ==
               elem_small_encode(t, v);
    }
}

/* Shortest "%.*g" text, from min_digits up, whose value reads back to the
 * same bits of type t. */
static void put_float(hs_buf *b, hs_dtype t, double v, int min_digits,
                      int max_digits)
{
    if (isnan(v)) {
        hs__buf_puts(b, signbit(v) ? "-nan" : "nan");
        return;
    }
    if (isinf(v)) {
        hs__buf_puts(b, v < 0 ? "-inf" : "inf");
        return;
    }
    char tmp[48];
    for (int p = min_digits; p <= max_digits; p++) {
        snprintf(tmp, sizeof tmp, "%.*g", p, v);
        if (same_bits(t, tmp, v))
            break;
    }
    hs__buf_puts(b, tmp);
}

static void put_value(hs_buf *b, hs_dtype t, const unsigned char *p)
{
    switch (t) {
    case HS_PRED: hs__buf_puts(b, *p ? "true" : "false"); break;
    case HS_S8: hs__buf_put_int(b, *(const int8_t *)p); break;
    case HS_U8: hs__buf_put_uint(b, *p); break;
    case HS_S16: { int16_t v; memcpy(&v, p, 2); hs__buf_put_int(b, v); break; }
    case HS_U16: { uint16_t v; memcpy(&v, p, 2); hs__buf_put_uint(b, v); break; }
    case HS_S32: { int32_t v; memcpy(&v, p, 4); hs__buf_put_int(b, v); break; }
    case HS_U32: { uint32_t v; memcpy(&v, p, 4); hs__buf_put_uint(b, v); break; }
    case HS_S64: { int64_t v; memcpy(&v, p, 8); hs__buf_put_int(b, v); break; }
    case HS_U64: { uint64_t v; memcpy(&v, p, 8); hs__buf_put_uint(b, v); break; }
    case HS_F32: { float v; memcpy(&v, p, 4); put_float(b, t, v, 6, 9); break; }
    case HS_F64: { double v; memcpy(&v, p, 8); put_float(b, t, v, 15, 17); break; }
    case HS_BF16: case HS_F16: { uint16_t v; memcpy(&v, p, 2);
        put_float(b, t, elem_small_decode(t, v), t == HS_F16 ? 3 : 2, 9);
        break; }
    default:
        if (elem_is_f8(t))
            put_float(b, t, elem_small_decode(t, *p), 1, 9);
        else
            hs__buf_putc(b, '?');
        break;
    }
}

/* Prints dimension `dim` of the row-major array starting at element *k. */
static void put_dim(hs_buf *b, const hs_shape *sh, const unsigned char *data,
                    int bytes, int dim, int64_t *k)
{
    int64_t n = sh->dims[dim];
    if (n == 0) {
        hs__buf_put(b, "{}", 2);
        return;
    }
    bool leaf = dim == sh->rank - 1;
    hs__buf_puts(b, leaf ? "{" : "{ ");
    for (int64_t e = 0; e < n; e++) {
        if (e)
            hs__buf_put(b, ", ", 2);
        if (leaf)
            put_value(b, sh->dtype, data + (*k)++ * bytes);
        else
            put_dim(b, sh, data, bytes, dim + 1, k);
    }
    hs__buf_puts(b, leaf ? "}" : " }");
}

bool hs__literal_uniform(const hs_shape *sh, const void *data)
{
    int bytes = elem_size(sh->dtype);
    int64_t n = hs_shape_elements(sh);
    const unsigned char *p = data;
    if (!bytes || !p)
        return false;
    for (int64_t k = 1; k < n; k++)
        if (memcmp(p + k * bytes, p, (size_t)bytes))
            return false;
    return true;
}

void hs__literal_print(hs_buf *b, const hs_shape *sh, const void *data)
{
    int bytes = elem_size(sh->dtype);
    if (!bytes) {
        hs__buf_putc(b, '?');
        return;
    }
    if (sh->rank == 0) {
        put_value(b, sh->dtype, data);
        return;
    }
    /* An array of no elements: XLA writes a "{}" for every row before its
     * first zero dimension ("{ {}, {} }" for f32[2,0]). Past 64 of them,
     * one "{}", which reads back the same, so that f64[42949672963,0]
     * does not print 43 billion. */
    int64_t rows = 1;
    for (int d = 0; d < sh->rank && sh->dims[d] != 0; d++)
        rows = hs_sat_mul(rows, sh->dims[d]);
    if (hs_shape_elements(sh) == 0 && rows > 64) {
        hs__buf_put(b, "{}", 2);
        return;
    }
    int64_t k = 0;
    put_dim(b, sh, data, bytes, 0, &k);
}
