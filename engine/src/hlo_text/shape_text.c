/* shape_text.c - shapes as HLO text: f32[1,1024]{1,0}, f32[<=8]{0},
 * f32[2,2]{1,0:T(8,128)S(5)}, (f32[2]{0}, (s32[], pred[])), token[]. */
#include <stdlib.h>
#include <string.h>

#include "hlo_text/hlo_text_internal.h"

static bool parse_shape_at(hs_scanner *s, hs_arena *a, hs_shape *out,
                           int depth);

bool hs__at_shape(hs_scanner *s)
{
    int c = hs__scan_peek(s);
    if (c == '(')
        return true;
    size_t p = s->pos;
    while (p < s->len && ((s->text[p] >= 'a' && s->text[p] <= 'z') ||
                          (s->text[p] >= '0' && s->text[p] <= '9')))
        p++;
    hs_dtype t;
    return p > s->pos && p < s->len && s->text[p] == '[' &&
           hs_dtype_parse(s->text + s->pos, p - s->pos, &t);
}

static bool parse_tuple(hs_scanner *s, hs_arena *a, hs_shape *out, int depth)
{
    size_t open = s->pos;
    s->pos++; /* '(' */
    memset(out, 0, sizeof *out);
    out->dtype = HS_TUPLE;
    if (hs__scan_accept(s, ')'))
        return true;
    hs_shape *elems = NULL;
    int n = 0, cap = 0;
    bool ok = true;
    for (;;) {
        if (n == cap) {
            cap = cap ? cap * 2 : 8;
            hs_shape *p = realloc(elems, sizeof *elems * (size_t)cap);
            if (!p) {
                ok = hs__scan_fail(s, open, "out of host memory");
                break;
            }
            elems = p;
        }
        if (!parse_shape_at(s, a, &elems[n], depth + 1)) {
            ok = false;
            break;
        }
        n++;
        if (hs__scan_accept(s, ','))
            continue;
        ok = hs__scan_expect(s, ')', "to close the tuple shape");
        break;
    }
    if (ok) {
        *out = hs_shape_tuple(a, n, elems);
        if (out->n_elems != n)
            ok = hs__scan_fail(s, open, "out of host memory");
    }
    free(elems);
    return ok;
}

/* The part of a layout after ':' - tiles, element size, memory space ...
 * S(n) becomes memory_space; every other item is kept as text. */
static bool parse_layout_tail(hs_scanner *s, hs_arena *a, hs_shape *out)
{
    const char *t = s->text;
    size_t start = s->pos, end = start;
    int depth = 0;
    while (end < s->len && !(depth == 0 && t[end] == '}')) {
        if (t[end] == '(' || t[end] == '{') {
            if (++depth > HS_HLO_MAX_DEPTH)
                return hs__scan_fail(s, end, "layout nested deeper than %d",
                                     HS_HLO_MAX_DEPTH);
        } else if (t[end] == ')' || t[end] == '}') {
            depth--;
        }
        end++;
    }
    if (end >= s->len)
        return hs__scan_fail(s, start, "unterminated layout: expected '}'");
    char *kept = hs_arena_alloc(a, end - start + 1); /* zeroed */
    if (!kept)
        return hs__scan_fail(s, start, "out of host memory");
    size_t n_kept = 0;
    depth = 0;
    for (size_t p = start; p < end;) {
        bool item_start = p == start || t[p - 1] == ')';
        if (depth == 0 && item_start && t[p] == 'S' && p + 1 < end &&
            t[p + 1] == '(') {
            size_t q = p + 2;
            int64_t v = 0;
            while (q < end && t[q] >= '0' && t[q] <= '9' && v < 1000000)
                v = v * 10 + (t[q++] - '0');
            if (q < end && t[q] == ')' && q > p + 2) {
                out->memory_space = (int)v;
                p = q + 1;
                continue;
            }
        }
        if (t[p] == '(' || t[p] == '{')
            depth++;
        else if (t[p] == ')' || t[p] == '}')
            depth--;
        kept[n_kept++] = t[p++];
    }
    out->layout_tail = n_kept ? kept : NULL;
    s->pos = end;
    return true;
}

static bool parse_layout(hs_scanner *s, hs_arena *a, hs_shape *out)
{
    size_t open = s->pos;
    s->pos++; /* '{' */
    int n = 0;
    int64_t m2m[HS_MAX_RANK];
    if (hs__scan_peek(s) != ':' && hs__scan_peek(s) != '}') {
        for (;;) {
            int64_t v;
            if (!hs__scan_int(s, &v, "layout dimension"))
                return false;
            if (n == HS_MAX_RANK || n == out->rank)
                return hs__scan_fail(s, open, "layout has more entries than "
                                              "the shape's rank %d",
                                     out->rank);
            m2m[n++] = v;
            if (!hs__scan_accept(s, ','))
                break;
        }
    }
    if (hs__scan_accept(s, ':') && !parse_layout_tail(s, a, out))
        return false;
    if (!hs__scan_expect(s, '}', "to close the layout"))
        return false;
    if (n != 0 && n != out->rank)
        return hs__scan_fail(s, open, "layout has %d entries but the shape "
                                      "has rank %d", n, out->rank);
    if (n) {
        unsigned seen = 0;
        for (int k = 0; k < n; k++) {
            if (m2m[k] < 0 || m2m[k] >= out->rank || (seen >> m2m[k]) & 1)
                return hs__scan_fail(s, open, "layout is not a permutation "
                                              "of the dimensions");
            seen |= 1u << m2m[k];
            out->minor_to_major[k] = (int8_t)m2m[k];
        }
    }
    out->has_layout = true;
    return true;
}

static bool parse_array(hs_scanner *s, hs_arena *a, hs_shape *out)
{
    size_t at = s->pos;
    const char *w;
    size_t n = hs__scan_word(s, &w);
    hs_dtype t;
    if (!n || !hs_dtype_parse(w, n, &t) || t == HS_TUPLE) {
        s->pos = at;
        if (s->failed)
            return false;
        return hs__scan_fail(s, at, "expected a shape (an element type such "
                                    "as f32, or '(' for a tuple), found '%.*s'",
                             (int)(n ? (n > 24 ? 24 : n) : 1), s->text + at);
    }
    memset(out, 0, sizeof *out);
    out->dtype = t;
    if (s->pos >= s->len || s->text[s->pos] != '[')
        return hs__scan_expect(s, '[', "after the element type");
    s->pos++;
    if (!hs__scan_accept(s, ']')) {
        for (;;) {
            if (out->rank == HS_MAX_RANK)
                return hs__scan_fail(s, s->pos, "shape rank exceeds %d",
                                     HS_MAX_RANK);
            int d = out->rank;
            int64_t v;
            if (hs__scan_peek(s) == '?') {
                s->pos++;
                v = -1;
                out->dynamic_mask |= (uint8_t)(1u << d);
            } else {
                if (hs__scan_peek(s) == '<' && s->pos + 1 < s->len &&
                    s->text[s->pos + 1] == '=') {
                    s->pos += 2;
                    out->dynamic_mask |= (uint8_t)(1u << d);
                }
                size_t dim_at = s->pos;
                if (!hs__scan_int(s, &v, "a dimension size"))
                    return false;
                if (v < 0)
                    return hs__scan_fail(s, dim_at,
                                         "dimension size must not be "
                                         "negative");
            }
            out->dims[out->rank++] = v;
            if (hs__scan_accept(s, ','))
                continue;
            if (!hs__scan_expect(s, ']', "to close the dimensions"))
                return false;
            break;
        }
    }
    hs_shape_default_layout(out);
    hs_error size_err;
    if (hs_shape_check_size(out, &size_err) != HS_OK)
        return hs__scan_fail(s, at, "%s", size_err.message);
    /* A layout touches the dimensions; "f32[2] {" is a computation body. */
    if (s->pos < s->len && s->text[s->pos] == '{')
        return parse_layout(s, a, out);
    return true;
}

static bool parse_shape_at(hs_scanner *s, hs_arena *a, hs_shape *out,
                           int depth)
{
    if (depth > HS_HLO_MAX_DEPTH)
        return hs__scan_fail(s, s->pos, "tuple shape nested deeper than %d",
                             HS_HLO_MAX_DEPTH);
    int c = hs__scan_peek(s);
    if (c == '(')
        return parse_tuple(s, a, out, depth);
    if (c < 0 && s->failed)
        return false;
    return parse_array(s, a, out);
}

bool hs__parse_shape(hs_scanner *s, hs_arena *a, hs_shape *out)
{
    return parse_shape_at(s, a, out, 0);
}

void hs__print_shape(hs_buf *b, const hs_shape *sh, bool with_layout)
{
    if (sh->dtype == HS_TUPLE) {
        hs__buf_putc(b, '(');
        for (int k = 0; k < sh->n_elems; k++) {
            if (k)
                hs__buf_put(b, ", ", 2);
            hs__print_shape(b, &sh->elems[k], with_layout);
        }
        hs__buf_putc(b, ')');
        return;
    }
    hs__buf_puts(b, hs_dtype_name(sh->dtype));
    hs__buf_putc(b, '[');
    for (int k = 0; k < sh->rank; k++) {
        if (k)
            hs__buf_putc(b, ',');
        bool dyn = (sh->dynamic_mask >> k) & 1;
        if (dyn && sh->dims[k] < 0) {
            hs__buf_putc(b, '?');
            continue;
        }
        if (dyn)
            hs__buf_put(b, "<=", 2);
        hs__buf_put_int(b, sh->dims[k]);
    }
    hs__buf_putc(b, ']');
    if (!with_layout || sh->dtype == HS_TOKEN)
        return;
    bool tail = sh->memory_space != 0 || sh->layout_tail;
    if (sh->rank == 0 && !tail)
        return;
    hs__buf_putc(b, '{');
    for (int k = 0; k < sh->rank; k++) {
        if (k)
            hs__buf_putc(b, ',');
        hs__buf_put_int(b, sh->minor_to_major[k]);
    }
    if (tail) {
        hs__buf_putc(b, ':');
        if (sh->layout_tail)
            hs__buf_puts(b, sh->layout_tail);
        if (sh->memory_space != 0) {
            hs__buf_put(b, "S(", 2);
            hs__buf_put_int(b, sh->memory_space);
            hs__buf_putc(b, ')');
        }
    }
    hs__buf_putc(b, '}');
}
