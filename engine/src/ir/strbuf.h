/*
 * strbuf.h - the engine's growable text buffer (internal). The HLO printer,
 * compile reports and metrics append to it; capacity doubles, so building a
 * text is linear in its size.
 */
#ifndef HLOSCOPE_IR_STRBUF_H
#define HLOSCOPE_IR_STRBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hloscope/hs_ir.h"

/* Appends never fail loudly: on host OOM the buffer sets oom and ignores
 * further appends, and the caller checks oom once at the end. */
typedef struct hs_buf {
    char *data; /* always NUL-terminated when len > 0 */
    size_t len, cap;
    bool oom;
} hs_buf;

void hs__buf_free(hs_buf *b);
void hs__buf_put(hs_buf *b, const char *s, size_t n);
void hs__buf_puts(hs_buf *b, const char *s);
void hs__buf_putc(hs_buf *b, char c);
void hs__buf_put_int(hs_buf *b, int64_t v);
void hs__buf_put_uint(hs_buf *b, uint64_t v);
void hs__buf_printf(hs_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Writes s between double quotes, escaping '"', '\\' and control chars. */
void hs__buf_put_quoted(hs_buf *b, const char *s);

/* Hands the text to the caller (*out, and its length in *out_len when not
 * NULL; "" for an empty buffer) and empties b, or frees it and reports
 * HS_ERR_NOMEM naming what was being written. */
hs_status hs__buf_finish(hs_buf *b, char **out, size_t *out_len,
                         const char *what, hs_error *err);

#endif
