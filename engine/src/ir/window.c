/* window.c - the window={...} attribute of convolution, reduce-window and
 * select-and-scatter, read in one place for their shape rules, kernels,
 * cost and gradients; and the lookup of attributes kept as text. */
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "hloscope/hs_ir.h"

const char *hs_instruction_attr(const hs_instruction *i, const char *key)
{
    for (int k = 0; k < i->n_extra; k++)
        if (strcmp(i->extra[k].key, key) == 0)
            return i->extra[k].value;
    return NULL;
}

static bool read_int(const char **p, int64_t *v)
{
    char *end;
    errno = 0;
    long long n = strtoll(*p, &end, 10);
    if (end == *p || errno == ERANGE)
        return false;
    *v = n;
    *p = end;
    return true;
}

/* The fields of XLA's window text, in the order it prints them. */
enum { F_SIZE, F_STRIDE, F_PAD, F_LHS, F_RHS, F_REV, F_COUNT };
static const char *const field_name[F_COUNT] = {
    "size", "stride", "pad", "lhs_dilate", "rhs_dilate", "rhs_reversal"};

static int field_of(const char *p, size_t n)
{
    for (int f = 0; f < F_COUNT; f++)
        if (strlen(field_name[f]) == n && strncmp(p, field_name[f], n) == 0)
            return f;
    return -1;
}

/* One field's value: `rank` entries separated by 'x'; pad entries are
 * lo_hi. Returns the number of entries read, -1 when malformed. */
static int read_field(const char **pp, int f, hs_window *w)
{
    const char *p = *pp;
    int n = 0;
    for (;;) {
        if (n == HS_MAX_RANK)
            return -1;
        hs_window_dim *d = &w->dim[n];
        int64_t v;
        if (!read_int(&p, &v))
            return -1;
        switch (f) {
        case F_SIZE: d->size = v; break;
        case F_STRIDE: d->stride = v; break;
        case F_LHS: d->lhs_dilate = v; break;
        case F_RHS: d->rhs_dilate = v; break;
        case F_REV:
            if (v != 0 && v != 1)
                return -1;
            d->reversal = v == 1;
            break;
        default: /* F_PAD */
            d->pad_lo = v;
            if (*p++ != '_' || !read_int(&p, &d->pad_hi))
                return -1;
            break;
        }
        n++;
        if (*p != 'x')
            break;
        p++;
    }
    *pp = p;
    return n;
}

static hs_status bad(const hs_instruction *i, hs_error *err, const char *text,
                     const char *why)
{
    return hs_error_set(err, HS_ERR_SHAPE, "instruction %s: window=%s: %s",
                        i->name, text ? text : "(none)", why);
}

hs_status hs_instruction_window(const hs_instruction *i, int rank,
                                hs_window *out, hs_error *err)
{
    memset(out, 0, sizeof *out);
    out->rank = rank;
    for (int d = 0; d < HS_MAX_RANK; d++) {
        out->dim[d].stride = 1;
        out->dim[d].lhs_dilate = 1;
        out->dim[d].rhs_dilate = 1;
    }
    const char *text = hs_instruction_attr(i, "window");
    if (!text && rank == 0)
        return HS_OK;
    if (!text)
        return bad(i, err, NULL, "the window attribute is missing");
    const char *p = text;
    if (*p == '{')
        p++;
    bool seen[F_COUNT] = {0};
    while (*p && *p != '}') {
        while (*p == ' ')
            p++;
        const char *eq = strchr(p, '=');
        int f = eq ? field_of(p, (size_t)(eq - p)) : -1;
        if (f < 0)
            return bad(i, err, text, "expected size=, stride=, pad=, "
                                     "lhs_dilate=, rhs_dilate= or "
                                     "rhs_reversal=");
        if (seen[f])
            return bad(i, err, text, "a field is given twice");
        seen[f] = true;
        p = eq + 1;
        int n = read_field(&p, f, out);
        if (n < 0)
            return bad(i, err, text, "a field is not a list of integers "
                                     "separated by 'x' (pad: lo_hi)");
        if (n != rank) {
            char why[96];
            snprintf(why, sizeof why, "%s= has %d entries; the window has "
                                      "%d dimensions", field_name[f], n,
                     rank);
            return bad(i, err, text, why);
        }
        while (*p == ' ')
            p++;
    }
    if (*p == '}')
        p++;
    if (*p)
        return bad(i, err, text, "unexpected text after the window");
    if (!seen[F_SIZE] && rank > 0)
        return bad(i, err, text, "size= is missing");
    for (int d = 0; d < rank; d++) {
        const hs_window_dim *w = &out->dim[d];
        if (w->size < 1 || w->stride < 1 || w->lhs_dilate < 1 ||
            w->rhs_dilate < 1)
            return bad(i, err, text, "sizes, strides and dilations must be "
                                     "at least 1");
    }
    return HS_OK;
}

int64_t hs_window_padded_extent(const hs_window_dim *w, int64_t n)
{
    int64_t dilated = n > 0 ? hs_sat_add(hs_sat_mul(n - 1, w->lhs_dilate), 1)
                            : 0;
    return hs_sat_add(hs_sat_add(dilated, w->pad_lo), w->pad_hi);
}

int64_t hs_window_output_extent(const hs_window_dim *w, int64_t n)
{
    int64_t padded = hs_window_padded_extent(w, n);
    int64_t window = hs_sat_add(hs_sat_mul(w->size - 1, w->rhs_dilate), 1);
    if (padded < window)
        return 0;
    return (padded - window) / w->stride + 1;
}
