/* shape.c - array and tuple shapes: sizes, equality, text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_ir.h"

void hs_shape_default_layout(hs_shape *s)
{
    for (int i = 0; i < s->rank; i++)
        s->minor_to_major[i] = (int8_t)(s->rank - 1 - i);
}

hs_shape hs_shape_make(hs_dtype t, int rank, const int64_t *dims)
{
    hs_shape s;
    memset(&s, 0, sizeof s);
    s.dtype = t;
    s.rank = rank;
    for (int i = 0; i < rank; i++)
        s.dims[i] = dims[i];
    hs_shape_default_layout(&s);
    return s;
}

hs_shape hs_shape_scalar(hs_dtype t)
{
    return hs_shape_make(t, 0, NULL);
}

hs_shape hs_shape_tuple(hs_arena *a, int n, const hs_shape *elems)
{
    hs_shape s;
    memset(&s, 0, sizeof s);
    s.dtype = HS_TUPLE;
    s.n_elems = n;
    if (n > 0) {
        s.elems = hs_arena_alloc(a, sizeof(hs_shape) * (size_t)n);
        if (s.elems)
            memcpy(s.elems, elems, sizeof(hs_shape) * (size_t)n);
        else
            s.n_elems = 0;
    }
    return s;
}

bool hs_shape_is_tuple(const hs_shape *s)
{
    return s->dtype == HS_TUPLE;
}

int64_t hs_sat_add(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_add_overflow(a, b, &r))
        return b > 0 ? INT64_MAX : INT64_MIN;
    return r;
}

int64_t hs_sat_mul(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r))
        return (a < 0) != (b < 0) ? INT64_MIN : INT64_MAX;
    return r;
}

int64_t hs_shape_elements(const hs_shape *s)
{
    if (s->dtype == HS_TUPLE)
        return 0;
    int64_t n = 1;
    for (int i = 0; i < s->rank; i++)
        n = hs_sat_mul(n, s->dims[i]);
    return n;
}

/* Bytes of n elements of t, rounding bits up; saturates. */
static int64_t bytes_of(int64_t n, hs_dtype t)
{
    int bits = hs_dtype_bits(t);
    if (n < 0)
        return n * ((bits + 7) / 8); /* '?' dims: as before, not a size */
    if (bits % 8 == 0)
        return hs_sat_mul(n, bits / 8);
    /* Sub-byte types: ceil(n * bits / 8) without forming n * bits. */
    int64_t whole = hs_sat_mul(n / 8, bits);
    return hs_sat_add(whole, ((n % 8) * bits + 7) / 8);
}

int64_t hs_shape_bytes(const hs_shape *s)
{
    if (s->dtype == HS_TUPLE)
        return hs_sat_mul(8, (int64_t)s->n_elems);
    return bytes_of(hs_shape_elements(s), s->dtype);
}

int64_t hs_shape_total_bytes(const hs_shape *s)
{
    if (s->dtype != HS_TUPLE)
        return hs_shape_bytes(s);
    int64_t n = hs_shape_bytes(s);
    for (int i = 0; i < s->n_elems; i++)
        n = hs_sat_add(n, hs_shape_total_bytes(&s->elems[i]));
    return n;
}

/* "2^44" for powers of two, the number otherwise. */
static void size_text(char *buf, size_t size, int64_t n)
{
    if (n > 0 && (n & (n - 1)) == 0 && n >= 1024)
        snprintf(buf, size, "2^%d", __builtin_ctzll((unsigned long long)n));
    else
        snprintf(buf, size, "%lld", (long long)n);
}

static hs_status too_large(const hs_shape *s, hs_error *err,
                           const char *what, int64_t n, bool overflows,
                           int64_t limit)
{
    char shape[160], count[32], max[32];
    hs_shape_print(s, false, shape, sizeof shape);
    if (overflows)
        snprintf(count, sizeof count, "more than 2^63");
    else
        size_text(count, sizeof count, n);
    size_text(max, sizeof max, limit);
    return hs_error_set(err, HS_ERR_LIMIT,
                        "shape %s has %s %s; an array may have at most %s",
                        shape, count, what, max);
}

hs_status hs_shape_check_size(const hs_shape *s, hs_error *err)
{
    if (s->dtype == HS_TUPLE) {
        for (int i = 0; i < s->n_elems; i++) {
            hs_status st = hs_shape_check_size(&s->elems[i], err);
            if (st != HS_OK)
                return st;
        }
        return HS_OK;
    }
    if (s->rank < 0 || s->rank > HS_MAX_RANK)
        return hs_error_set(err, HS_ERR_INVALID, "shape of rank %d (at most "
                            "%d)", s->rank, HS_MAX_RANK);
    for (int i = 0; i < s->rank; i++) {
        if (s->dims[i] < 0 && !((s->dynamic_mask >> i) & 1)) {
            char shape[160];
            hs_shape_print(s, false, shape, sizeof shape);
            return hs_error_set(err, HS_ERR_SHAPE,
                                "shape %s has a negative dimension", shape);
        }
    }
    for (int i = 0; i < s->rank; i++)
        if (s->dims[i] == 0)
            return HS_OK; /* empty, whatever the other dimensions are */
    int64_t n = 1;
    bool overflows = false;
    for (int i = 0; i < s->rank && !overflows; i++) {
        int64_t d = s->dims[i] < 0 ? 1 : s->dims[i]; /* '?': no storage */
        overflows = __builtin_mul_overflow(n, d, &n);
    }
    if (overflows || n > HS_MAX_ARRAY_ELEMENTS)
        return too_large(s, err, "elements", n, overflows,
                         HS_MAX_ARRAY_ELEMENTS);
    int64_t bytes = bytes_of(n, s->dtype);
    if (bytes > HS_MAX_ARRAY_BYTES)
        return too_large(s, err, "bytes", bytes, bytes == INT64_MAX,
                         HS_MAX_ARRAY_BYTES);
    return HS_OK;
}

int hs_shape_leaf_count(const hs_shape *s)
{
    if (s->dtype != HS_TUPLE)
        return 1;
    int n = 0;
    for (int i = 0; i < s->n_elems; i++)
        n += hs_shape_leaf_count(&s->elems[i]);
    return n;
}

bool hs_shape_compatible(const hs_shape *a, const hs_shape *b)
{
    if (a->dtype != b->dtype)
        return false;
    if (a->dtype == HS_TUPLE) {
        if (a->n_elems != b->n_elems)
            return false;
        for (int i = 0; i < a->n_elems; i++)
            if (!hs_shape_compatible(&a->elems[i], &b->elems[i]))
                return false;
        return true;
    }
    if (a->rank != b->rank)
        return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i])
            return false;
    return true;
}

/* Appends to buf at *pos without overflowing; *pos counts the full length
 * so that the caller learns how much room the whole text needs. */
static void put(char *buf, size_t size, size_t *pos, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#include <stdarg.h>
static void put(char *buf, size_t size, size_t *pos, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *dst = *pos < size ? buf + *pos : NULL;
    size_t room = *pos < size ? size - *pos : 0;
    int n = vsnprintf(dst, room, fmt, ap);
    va_end(ap);
    if (n > 0)
        *pos += (size_t)n;
}

static void print_shape(const hs_shape *s, bool with_layout, char *buf,
                        size_t size, size_t *pos)
{
    if (s->dtype == HS_TUPLE) {
        put(buf, size, pos, "(");
        for (int i = 0; i < s->n_elems; i++) {
            if (i)
                put(buf, size, pos, ", ");
            print_shape(&s->elems[i], with_layout, buf, size, pos);
        }
        put(buf, size, pos, ")");
        return;
    }
    put(buf, size, pos, "%s[", hs_dtype_name(s->dtype));
    for (int i = 0; i < s->rank; i++) {
        bool dyn = (s->dynamic_mask >> i) & 1;
        if (dyn && s->dims[i] < 0) /* unbounded, as the HLO printer says it */
            put(buf, size, pos, "%s?", i ? "," : "");
        else
            put(buf, size, pos, "%s%s%lld", i ? "," : "", dyn ? "<=" : "",
                (long long)s->dims[i]);
    }
    put(buf, size, pos, "]");
    if (!with_layout || s->rank == 0 || s->dtype == HS_TOKEN)
        return;
    put(buf, size, pos, "{");
    for (int i = 0; i < s->rank; i++)
        put(buf, size, pos, "%s%d", i ? "," : "", s->minor_to_major[i]);
    bool tail = s->memory_space != 0 || s->layout_tail;
    if (tail) {
        put(buf, size, pos, ":");
        if (s->layout_tail)
            put(buf, size, pos, "%s", s->layout_tail);
        if (s->memory_space != 0)
            put(buf, size, pos, "S(%d)", s->memory_space);
    }
    put(buf, size, pos, "}");
}

int hs_shape_print(const hs_shape *s, bool with_layout, char *buf,
                   size_t size)
{
    size_t pos = 0;
    if (size)
        buf[0] = '\0';
    print_shape(s, with_layout, buf, size, &pos);
    return (int)pos;
}

char *hs_shape_string(const hs_shape *s, bool with_layout)
{
    int n = hs_shape_print(s, with_layout, NULL, 0);
    char *buf = malloc((size_t)n + 1);
    if (buf)
        hs_shape_print(s, with_layout, buf, (size_t)n + 1);
    return buf;
}
