/* shape.c - array and tuple shapes: sizes, equality, text. */
#include <stdio.h>
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

int64_t hs_shape_elements(const hs_shape *s)
{
    if (s->dtype == HS_TUPLE)
        return 0;
    int64_t n = 1;
    for (int i = 0; i < s->rank; i++)
        n *= s->dims[i];
    return n;
}

int64_t hs_shape_bytes(const hs_shape *s)
{
    if (s->dtype == HS_TUPLE)
        return 8 * (int64_t)s->n_elems;
    return (hs_shape_elements(s) * hs_dtype_bits(s->dtype) + 7) / 8;
}

int64_t hs_shape_total_bytes(const hs_shape *s)
{
    if (s->dtype != HS_TUPLE)
        return hs_shape_bytes(s);
    int64_t n = hs_shape_bytes(s);
    for (int i = 0; i < s->n_elems; i++)
        n += hs_shape_total_bytes(&s->elems[i]);
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
    for (int i = 0; i < s->rank; i++)
        put(buf, size, pos, "%s%s%lld", i ? "," : "",
            (s->dynamic_mask >> i) & 1 ? "<=" : "", (long long)s->dims[i]);
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
