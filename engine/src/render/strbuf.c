/* strbuf.c - the growable text buffer every render writer appends to.
 * Capacity doubles, so writing a graph is linear in its text size, and a
 * failed allocation is remembered instead of checked at every append. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render/render_internal.h"

static bool reserve(hs_rbuf *b, size_t extra)
{
    if (b->oom)
        return false;
    if (extra > SIZE_MAX / 4 || b->len + extra + 1 > SIZE_MAX / 4) {
        b->oom = true;
        return false;
    }
    if (b->len + extra + 1 <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 1024;
    while (cap < b->len + extra + 1)
        cap *= 2;
    char *p = realloc(b->data, cap);
    if (!p) {
        b->oom = true;
        return false;
    }
    b->data = p;
    b->cap = cap;
    return true;
}

void hs__rbuf_put(hs_rbuf *b, const char *s, size_t n)
{
    if (!reserve(b, n))
        return;
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void hs__rbuf_puts(hs_rbuf *b, const char *s)
{
    hs__rbuf_put(b, s, strlen(s));
}

void hs__rbuf_putc(hs_rbuf *b, char c)
{
    if (!reserve(b, 1))
        return;
    b->data[b->len++] = c;
    b->data[b->len] = '\0';
}

void hs__rbuf_printf(hs_rbuf *b, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof small) {
        hs__rbuf_put(b, small, (size_t)n);
        return;
    }
    if (!reserve(b, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void hs__rbuf_free(hs_rbuf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

hs_status hs__rbuf_finish(hs_rbuf *b, char **out, size_t *out_len,
                          hs_error *err)
{
    if (!b->oom && !b->data)
        hs__rbuf_put(b, "", 0);
    if (b->oom) {
        hs__rbuf_free(b);
        return hs_error_set(err, HS_ERR_NOMEM, "out of host memory while "
                                               "rendering");
    }
    *out = b->data;
    if (out_len)
        *out_len = b->len;
    b->data = NULL;
    b->len = b->cap = 0;
    return HS_OK;
}
