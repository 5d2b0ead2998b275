/* strbuf.c - the engine's growable text buffer (see strbuf.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/strbuf.h"

void hs__buf_free(hs_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

static bool reserve(hs_buf *b, size_t extra)
{
    if (b->oom)
        return false;
    if (b->len + extra + 1 <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1) {
        if (cap > SIZE_MAX / 2) {
            b->oom = true;
            return false;
        }
        cap *= 2;
    }
    char *p = realloc(b->data, cap);
    if (!p) {
        b->oom = true;
        return false;
    }
    b->data = p;
    b->cap = cap;
    return true;
}

void hs__buf_put(hs_buf *b, const char *s, size_t n)
{
    if (!reserve(b, n))
        return;
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void hs__buf_puts(hs_buf *b, const char *s)
{
    hs__buf_put(b, s, strlen(s));
}

void hs__buf_putc(hs_buf *b, char c)
{
    if (!reserve(b, 1))
        return;
    b->data[b->len++] = c;
    b->data[b->len] = '\0';
}

void hs__buf_put_uint(hs_buf *b, uint64_t v)
{
    char tmp[24];
    int n = 0;
    do {
        tmp[sizeof tmp - 1 - n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    hs__buf_put(b, tmp + sizeof tmp - n, (size_t)n);
}

void hs__buf_put_int(hs_buf *b, int64_t v)
{
    if (v < 0) {
        hs__buf_putc(b, '-');
        hs__buf_put_uint(b, (uint64_t)0 - (uint64_t)v);
    } else {
        hs__buf_put_uint(b, (uint64_t)v);
    }
}

void hs__buf_printf(hs_buf *b, const char *fmt, ...)
{
    char small[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof small) {
        hs__buf_put(b, small, (size_t)n);
        return;
    }
    if (!reserve(b, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void hs__buf_put_quoted(hs_buf *b, const char *s)
{
    hs__buf_putc(b, '"');
    const char *run = s;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        const char *esc = NULL;
        switch (c) {
        case '"': esc = "\\\""; break;
        case '\\': esc = "\\\\"; break;
        case '\n': esc = "\\n"; break;
        case '\t': esc = "\\t"; break;
        case '\r': esc = "\\r"; break;
        default: break;
        }
        if (!esc)
            continue;
        hs__buf_put(b, run, (size_t)(s - run));
        hs__buf_puts(b, esc);
        run = s + 1;
    }
    hs__buf_put(b, run, (size_t)(s - run));
    hs__buf_putc(b, '"');
}

bool hs__vec_reserve(void **items, size_t elem_size, size_t n, size_t *cap)
{
    if (n < *cap)
        return true;
    size_t new_cap = *cap ? *cap * 2 : 16;
    if (new_cap > SIZE_MAX / elem_size)
        return false;
    void *p = realloc(*items, new_cap * elem_size);
    if (!p)
        return false;
    *items = p;
    *cap = new_cap;
    return true;
}

hs_status hs__buf_finish(hs_buf *b, char **out, size_t *out_len,
                         const char *what, hs_error *err)
{
    if (!b->oom && !b->data)
        hs__buf_put(b, "", 0);
    if (b->oom) {
        hs__buf_free(b);
        return hs_error_set(err, HS_ERR_NOMEM, "out of host memory while %s",
                            what);
    }
    *out = b->data;
    if (out_len)
        *out_len = b->len;
    b->data = NULL;
    b->len = b->cap = 0;
    return HS_OK;
}
