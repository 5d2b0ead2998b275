/* escape.c - making user text safe to draw. Names, op_names, shapes and
 * frontend attributes come from the user; here they become valid UTF-8
 * without control characters (clean), are escaped for DOT quoted strings,
 * or are encoded into ids that need no escaping at all. */
#include <stdio.h>
#include <string.h>

#include "render/render_internal.h"

/* Length of the valid, printable UTF-8 sequence at s (1..4), or 0 when the
 * byte at s must be replaced. C0 and C1 controls and DEL are replaced. */
static size_t utf8_char(const unsigned char *s)
{
    unsigned char c = s[0];
    if (c >= 0x20 && c < 0x7f)
        return 1;
    if (c < 0xc2 || c > 0xf4)
        return 0; /* controls, DEL, continuation bytes, overlong leads */
    unsigned char lo = 0x80, hi = 0xbf;
    size_t n;
    if (c < 0xe0) {
        n = 2;
        if (c == 0xc2 && s[1] < 0xa0)
            return 0; /* C1 controls U+0080..U+009F */
    } else if (c < 0xf0) {
        n = 3;
        if (c == 0xe0)
            lo = 0xa0; /* overlong */
        else if (c == 0xed)
            hi = 0x9f; /* surrogates */
    } else {
        n = 4;
        if (c == 0xf0)
            lo = 0x90; /* overlong */
        else if (c == 0xf4)
            hi = 0x8f; /* beyond U+10FFFF */
    }
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (size_t k = 2; k < n; k++)
        if (s[k] < 0x80 || s[k] > 0xbf)
            return 0;
    return n;
}

static void emit(hs_buf *b, const char *text, size_t max_chars, bool dot)
{
    if (!text)
        return;
    const unsigned char *s = (const unsigned char *)text;
    size_t chars = 0;
    while (*s) {
        if (max_chars && chars == max_chars) {
            hs__buf_puts(b, "...");
            return;
        }
        size_t n = utf8_char(s);
        if (n == 0) {
            hs__buf_putc(b, '?');
            s++;
        } else {
            if (dot && n == 1 && (*s == '"' || *s == '\\'))
                hs__buf_putc(b, '\\');
            hs__buf_put(b, (const char *)s, n);
            s += n;
        }
        chars++;
    }
}

void hs__text_clean(hs_buf *b, const char *s, size_t max_chars)
{
    emit(b, s, max_chars, false);
}

void hs__dot_text(hs_buf *b, const char *s, size_t max_chars)
{
    emit(b, s, max_chars, true);
}

void hs__dot_quoted(hs_buf *b, const char *s, size_t max_chars)
{
    hs__buf_putc(b, '"');
    emit(b, s, max_chars, true);
    hs__buf_putc(b, '"');
}

void hs__id_encode(hs_buf *b, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        unsigned char c = *p;
        bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                     (c >= '0' && c <= '9') || c == '_' || c == '.' ||
                     c == '-';
        if (plain) {
            hs__buf_putc(b, (char)c);
        } else {
            char e[3] = {'%', hex[c >> 4], hex[c & 15]};
            hs__buf_put(b, e, 3);
        }
    }
}

void hs__format_bytes(char *buf, size_t size, double bytes)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB",
                                        "PiB"};
    int u = 0;
    double v = bytes < 0 ? -bytes : bytes;
    while (v >= 1024 && u < 5) {
        v /= 1024;
        u++;
    }
    if (bytes < 0)
        v = -v;
    if (u == 0)
        snprintf(buf, size, "%.0f B", v);
    else if (v < 10 && v > -10)
        snprintf(buf, size, "%.2f %s", v, units[u]);
    else if (v < 100 && v > -100)
        snprintf(buf, size, "%.1f %s", v, units[u]);
    else
        snprintf(buf, size, "%.0f %s", v, units[u]);
}
