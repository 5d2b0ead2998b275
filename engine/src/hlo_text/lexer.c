/* lexer.c - a bounds-checked scanner over HLO text. The grammar is context
 * dependent (names contain '.' and '-', literals contain "-inf"), so the
 * parser asks for the token it expects instead of reading a token stream.
 * Every read checks the end of input; errors carry line and column. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "hlo_text/hlo_text_internal.h"
#include "ir/utf8.h"

void hs__scan_init(hs_scanner *s, const char *text, size_t len,
                   hs_error *err)
{
    memset(s, 0, sizeof *s);
    s->text = text ? text : "";
    s->len = text ? len : 0;
    s->err = err;
}

void hs__scan_line_col(const char *text, size_t len, size_t pos, int *line,
                       int *col)
{
    int l = 1, c = 1;
    if (pos > len)
        pos = len;
    for (size_t k = 0; k < pos; k++) {
        if (text[k] == '\n') {
            l++;
            c = 1;
        } else {
            c++;
        }
    }
    *line = l;
    *col = c;
}

bool hs__scan_fail(hs_scanner *s, size_t pos, const char *fmt, ...)
{
    if (s->failed)
        return false;
    s->failed = true;
    if (!s->err)
        return false;
    hs_error_clear(s->err);
    s->err->status = HS_ERR_PARSE;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->err->message, sizeof s->err->message, fmt, ap);
    va_end(ap);
    hs__utf8_clean(s->err->message, sizeof s->err->message);
    hs__scan_line_col(s->text, s->len, pos, &s->err->line,
                      &s->err->column);
    if (s->instr) {
        size_t n = s->instr_len;
        if (n >= sizeof s->err->instruction)
            n = sizeof s->err->instruction - 1;
        memcpy(s->err->instruction, s->instr, n);
        s->err->instruction[n] = '\0';
    }
    return false;
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' ||
           c == '\v';
}

static bool is_name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

bool hs__scan_skip(hs_scanner *s)
{
    if (s->failed)
        return false;
    const char *t = s->text;
    size_t p = s->pos, n = s->len;
    while (p < n) {
        if (is_space(t[p])) {
            p++;
        } else if (t[p] == '/' && p + 1 < n && t[p + 1] == '/') {
            while (p < n && t[p] != '\n')
                p++;
        } else if (t[p] == '/' && p + 1 < n && t[p + 1] == '*') {
            size_t open = p;
            p += 2;
            while (p + 1 < n && !(t[p] == '*' && t[p + 1] == '/'))
                p++;
            if (p + 1 >= n) {
                s->pos = open;
                return hs__scan_fail(s, open, "unterminated comment: "
                                              "expected '*/'");
            }
            p += 2;
        } else {
            break;
        }
    }
    s->pos = p;
    return true;
}

int hs__scan_peek(hs_scanner *s)
{
    if (!hs__scan_skip(s) || s->pos >= s->len)
        return -1;
    return (unsigned char)s->text[s->pos];
}

bool hs__scan_accept(hs_scanner *s, char c)
{
    if (hs__scan_peek(s) != (unsigned char)c)
        return false;
    s->pos++;
    return true;
}

/* Describes the text at pos for "expected X, found Y" messages. */
static void describe(const hs_scanner *s, char *out, size_t size)
{
    if (s->pos >= s->len) {
        snprintf(out, size, "end of input");
        return;
    }
    size_t n = 0;
    while (s->pos + n < s->len && n < 24 && is_name_char(s->text[s->pos + n]))
        n++;
    unsigned char c = (unsigned char)s->text[s->pos];
    if (n == 0 && (c == '\n' || c == '\r'))
        snprintf(out, size, "end of line");
    else if (n == 0 && (c < 0x20 || c == 0x7F))
        snprintf(out, size, "byte 0x%02X", c);
    else if (n == 0 && !(n = hs__utf8_len((const unsigned char *)s->text + s->pos,
                                      s->len - s->pos)))
        snprintf(out, size, "byte 0x%02X (not UTF-8)", c);
    else
        snprintf(out, size, "'%.*s'", (int)n, s->text + s->pos);
}

bool hs__scan_expect(hs_scanner *s, char c, const char *what)
{
    if (hs__scan_accept(s, c))
        return true;
    if (s->failed)
        return false;
    char found[40];
    describe(s, found, sizeof found);
    return hs__scan_fail(s, s->pos, "expected '%c' %s, found %s", c, what,
                         found);
}

bool hs__scan_accept_word(hs_scanner *s, const char *w)
{
    if (hs__scan_peek(s) < 0)
        return false;
    size_t n = strlen(w);
    if (s->len - s->pos < n || memcmp(s->text + s->pos, w, n) != 0)
        return false;
    if (s->pos + n < s->len && is_name_char(s->text[s->pos + n]))
        return false;
    s->pos += n;
    return true;
}

size_t hs__scan_name(hs_scanner *s, const char **start)
{
    if (hs__scan_peek(s) < 0)
        return 0;
    size_t p = s->pos;
    if (s->text[p] == '%')
        p++;
    size_t b = p;
    while (p < s->len && is_name_char(s->text[p]))
        p++;
    if (p == b)
        return 0;
    *start = s->text + b;
    s->pos = p;
    return p - b;
}

size_t hs__scan_word(hs_scanner *s, const char **start)
{
    if (hs__scan_peek(s) < 0)
        return 0;
    size_t p = s->pos;
    while (p < s->len && s->text[p] != '.' && is_name_char(s->text[p]))
        p++;
    if (p == s->pos)
        return 0;
    *start = s->text + s->pos;
    size_t n = p - s->pos;
    s->pos = p;
    return n;
}

bool hs__scan_int(hs_scanner *s, int64_t *out, const char *what)
{
    if (hs__scan_peek(s) < 0 && s->failed)
        return false;
    size_t p = s->pos;
    bool neg = false;
    if (p < s->len && (s->text[p] == '-' || s->text[p] == '+')) {
        neg = s->text[p] == '-';
        p++;
    }
    if (p >= s->len || s->text[p] < '0' || s->text[p] > '9') {
        char found[40];
        describe(s, found, sizeof found);
        return hs__scan_fail(s, s->pos, "expected %s, found %s", what, found);
    }
    uint64_t v = 0;
    while (p < s->len && s->text[p] >= '0' && s->text[p] <= '9') {
        unsigned d = (unsigned)(s->text[p] - '0');
        if (v > ((uint64_t)INT64_MAX - d) / 10)
            return hs__scan_fail(s, s->pos, "%s out of range", what);
        v = v * 10 + d;
        p++;
    }
    *out = neg ? -(int64_t)v : (int64_t)v;
    s->pos = p;
    return true;
}

/* Returns the offset just past the closing quote of the string opening at
 * p, or 0 when it is unterminated. */
static size_t skip_quoted(const hs_scanner *s, size_t p)
{
    p++;
    while (p < s->len) {
        if (s->text[p] == '\\')
            p += 2;
        else if (s->text[p] == '"')
            return p + 1;
        else
            p++;
    }
    return 0;
}

bool hs__scan_string(hs_scanner *s, hs_arena *a, const char **out)
{
    if (hs__scan_peek(s) != '"') {
        if (s->failed)
            return false;
        char found[40];
        describe(s, found, sizeof found);
        return hs__scan_fail(s, s->pos, "expected a quoted string, found %s",
                             found);
    }
    size_t open = s->pos, end = skip_quoted(s, open);
    if (!end)
        return hs__scan_fail(s, open, "unterminated string: expected '\"'");
    /* Unescaping only shrinks, so the raw length bounds the result. */
    char *dst = hs_arena_alloc(a, end - open);
    if (!dst)
        return hs__scan_fail(s, open, "out of host memory");
    size_t n = 0;
    for (size_t p = open + 1; p < end - 1; p++) {
        char c = s->text[p];
        if (c == '\\' && p + 1 < end - 1) {
            char e = s->text[++p];
            switch (e) {
            case 'n': c = '\n'; break;
            case 't': c = '\t'; break;
            case 'r': c = '\r'; break;
            case '"': c = '"'; break;
            case '\\': c = '\\'; break;
            default: /* kept as written */
                dst[n++] = '\\';
                c = e;
                break;
            }
        }
        dst[n++] = c;
    }
    dst[n] = '\0';
    *out = dst;
    s->pos = end;
    return true;
}

static char closer_of(char open)
{
    return open == '{' ? '}' : open == '[' ? ']' : ')';
}

/* Scans from p; stops at an unmatched closer, or (when stop_at_top) at a
 * ',' or whitespace at depth 0. With stop_at_top false, p must be an opener
 * and the scan ends just past its closer. Returns false on an error. */
static bool scan_group(hs_scanner *s, size_t p, bool stop_at_top,
                       size_t *endp)
{
    char want[HS_HLO_MAX_DEPTH];
    size_t opened[HS_HLO_MAX_DEPTH];
    int depth = 0;
    while (p < s->len) {
        char c = s->text[p];
        if (c == '"') {
            size_t e = skip_quoted(s, p);
            if (!e)
                return hs__scan_fail(s, p,
                                     "unterminated string: expected '\"'");
            p = e;
            continue;
        }
        if (c == '{' || c == '[' || c == '(') {
            if (depth == HS_HLO_MAX_DEPTH)
                return hs__scan_fail(s, p, "nesting deeper than %d levels",
                                     HS_HLO_MAX_DEPTH);
            want[depth] = closer_of(c);
            opened[depth++] = p++;
            continue;
        }
        if (c == '}' || c == ']' || c == ')') {
            if (depth == 0)
                break;
            if (c != want[depth - 1]) {
                int l, col;
                hs__scan_line_col(s->text, s->len, opened[depth - 1], &l,
                                  &col);
                return hs__scan_fail(s, p,
                                     "unbalanced brackets: expected '%c' to "
                                     "close '%c' opened at %d:%d, found '%c'",
                                     want[depth - 1],
                                     s->text[opened[depth - 1]], l, col, c);
            }
            depth--;
            p++;
            if (depth == 0 && !stop_at_top)
                break;
            continue;
        }
        if (depth == 0 && stop_at_top && (c == ',' || is_space(c)))
            break;
        p++;
    }
    if (depth > 0) {
        size_t o = opened[depth - 1];
        return hs__scan_fail(s, o, "unbalanced '%c': no matching '%c'",
                             s->text[o], want[depth - 1]);
    }
    *endp = p;
    return true;
}

bool hs__scan_raw_value(hs_scanner *s, size_t *start, size_t *end,
                        const char *what)
{
    if (hs__scan_peek(s) < 0 && s->failed)
        return false;
    size_t e;
    if (!scan_group(s, s->pos, true, &e))
        return false;
    if (e == s->pos) {
        char found[40];
        describe(s, found, sizeof found);
        return hs__scan_fail(s, s->pos, "expected a value for %s, found %s",
                             what, found);
    }
    *start = s->pos;
    *end = e;
    s->pos = e;
    return true;
}

bool hs__scan_balanced(hs_scanner *s, char open, size_t *start, size_t *end)
{
    if (hs__scan_peek(s) != (unsigned char)open) {
        if (s->failed)
            return false;
        char found[40];
        describe(s, found, sizeof found);
        return hs__scan_fail(s, s->pos, "expected '%c', found %s", open,
                             found);
    }
    size_t e;
    if (!scan_group(s, s->pos, false, &e))
        return false;
    *start = s->pos + 1;
    *end = e - 1;
    s->pos = e;
    return true;
}
