/* error.c - hs_error: what went wrong and where. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "hloscope/hs_ir.h"

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
    return s;
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
