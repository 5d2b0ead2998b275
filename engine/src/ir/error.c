/* error.c - hs_error: what went wrong and where, in well-formed UTF-8. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "hloscope/hs_ir.h"
#include "ir/utf8.h"

const char *hs_status_name(hs_status s)
{
    switch (s) {
    case HS_OK: return "ok";
    case HS_ERR_INVALID: return "invalid";
    case HS_ERR_PARSE: return "parse";
    case HS_ERR_SHAPE: return "shape";
    case HS_ERR_UNSUPPORTED: return "unsupported";
    case HS_ERR_OOM: return "out_of_memory";
    case HS_ERR_LIMIT: return "limit";
    case HS_ERR_IO: return "io";
    case HS_ERR_RUNTIME: return "runtime";
    case HS_ERR_CANCELLED: return "cancelled";
    case HS_ERR_NOMEM: return "host_out_of_memory";
    }
    return "unknown";
}

void hs_error_clear(hs_error *e)
{
    if (e)
        memset(e, 0, sizeof *e);
}

hs_status hs_error_set(hs_error *e, hs_status s, const char *fmt, ...)
{
    if (!e)
        return s;
    e->status = s;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    hs__utf8_clean(e->message, sizeof e->message);
    return s;
}

size_t hs__utf8_len(const unsigned char *p, size_t avail)
{
    static const unsigned char k_len[16] = {1, 1, 1, 1, 1, 1, 1, 1,
                                            0, 0, 0, 0, 2, 2, 3, 4};
    size_t n = avail ? k_len[p[0] >> 4] : 0;
    if (n == 0 || n > avail || (n == 4 && (p[0] & 0x08)))
        return 0;
    uint32_t cp = n == 1 ? p[0] : p[0] & (0x7Fu >> n);
    for (size_t k = 1; k < n; k++) {
        if ((p[k] & 0xC0) != 0x80)
            return 0;
        cp = cp << 6 | (p[k] & 0x3Fu);
    }
    static const uint32_t k_min[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < k_min[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

void hs__utf8_clean(char *s, size_t size)
{
    char out[512];
    size_t o = 0, len = strlen(s);
    if (size > sizeof out)
        size = sizeof out;
    for (size_t i = 0; i < len;) {
        size_t n = hs__utf8_len((const unsigned char *)s + i, len - i);
        if (n == 0) {
            if (o + 4 >= size)
                break;
            snprintf(out + o, 5, "\\x%02X", (unsigned char)s[i]);
            o += 4, i++;
            continue;
        }
        if (o + n >= size)
            break;
        memcpy(out + o, s + i, n);
        o += n, i += n;
    }
    out[o] = '\0';
    memcpy(s, out, o + 1);
}

int hs_error_format(const hs_error *e, char *buf, size_t size)
{
    int n = 0;
    char tmp[1024];
    tmp[0] = '\0';
    if (e->line > 0)
        n += snprintf(tmp + n, sizeof tmp - (size_t)n, "%d:%d: ", e->line,
                      e->column);
    if (e->path[0])
        n += snprintf(tmp + n, sizeof tmp - (size_t)n, "%s: ", e->path);
    if (e->instruction[0])
        n += snprintf(tmp + n, sizeof tmp - (size_t)n, "%s: ",
                      e->instruction);
    if (n > (int)sizeof tmp)
        n = (int)sizeof tmp - 1;
    snprintf(tmp + n, sizeof tmp - (size_t)n, "%s", e->message);
    return snprintf(buf, size, "%s", tmp);
}
