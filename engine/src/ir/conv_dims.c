/* conv_dims.c - a convolution's attributes read in one place: dim_labels
 * (XLA's ConvolutionDimensionNumbers in its text form, "b01f_01io->b01f"),
 * the window, feature_group_count and batch_group_count; and their text
 * forms, which the convolution gradients write. The shape rule, kernel,
 * cost and VJP all read a convolution through hs_instruction_conv. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_ir.h"

/* One part of dim_labels: `n` characters, two letters (batch/feature for
 * lhs and output, i/o for the kernel) and the digits 0..n-3 once each. */
static bool parse_part(const char *p, int n, char first, char second,
                       int64_t *at_first, int64_t *at_second,
                       int64_t *spatial, const char **why)
{
    *at_first = *at_second = -1;
    for (int d = 0; d < n - 2; d++)
        spatial[d] = -1;
    for (int k = 0; k < n; k++) {
        char c = p[k];
        int64_t *slot;
        if (c == first)
            slot = at_first;
        else if (c == second)
            slot = at_second;
        else if (c >= '0' && c <= '9' && c - '0' < n - 2)
            slot = &spatial[c - '0'];
        else {
            *why = "a label is not one of the part's two letters or a "
                   "spatial digit below its number of spatial dimensions";
            return false;
        }
        if (*slot >= 0) {
            *why = "a label appears twice in one part";
            return false;
        }
        *slot = k;
    }
    if (*at_first < 0 || *at_second < 0) {
        *why = "a part lacks one of its two letters";
        return false;
    }
    return true;
}

bool hs_conv_dims_parse(const char *text, hs_conv_dims *out,
                        const char **why)
{
    memset(out, 0, sizeof *out);
    const char *us = strchr(text, '_');
    const char *arrow = us ? strstr(us, "->") : NULL;
    if (!us || !arrow) {
        *why = "expected lhs_rhs->out, e.g. b01f_01io->b01f";
        return false;
    }
    int nl = (int)(us - text), nr = (int)(arrow - us - 1);
    int no = (int)strlen(arrow + 2);
    if (nl != nr || nl != no) {
        *why = "the input, kernel and output labels have different ranks";
        return false;
    }
    if (nl < 2 || nl > HS_MAX_RANK) {
        *why = "a convolution has 2 to 8 dimensions";
        return false;
    }
    out->n_spatial = nl - 2;
    return parse_part(text, nl, 'b', 'f', &out->lhs_batch, &out->lhs_feature,
                      out->lhs_spatial, why) &&
           parse_part(us + 1, nl, 'i', 'o', &out->rhs_input,
                      &out->rhs_output, out->rhs_spatial, why) &&
           parse_part(arrow + 2, nl, 'b', 'f', &out->out_batch,
                      &out->out_feature, out->out_spatial, why);
}

static void print_part(char *p, int n, char first, char second,
                       int64_t at_first, int64_t at_second,
                       const int64_t *spatial)
{
    p[at_first] = first;
    p[at_second] = second;
    for (int d = 0; d < n - 2; d++)
        p[spatial[d]] = (char)('0' + d);
}

bool hs_conv_dims_print(const hs_conv_dims *d, char *buf, size_t size)
{
    int n = d->n_spatial + 2;
    if (size < (size_t)(3 * n + 4))
        return false;
    char *p = buf;
    print_part(p, n, 'b', 'f', d->lhs_batch, d->lhs_feature, d->lhs_spatial);
    p[n] = '_';
    p += n + 1;
    print_part(p, n, 'i', 'o', d->rhs_input, d->rhs_output, d->rhs_spatial);
    p[n] = '-';
    p[n + 1] = '>';
    p += n + 2;
    print_part(p, n, 'b', 'f', d->out_batch, d->out_feature, d->out_spatial);
    p[n] = '\0';
    return true;
}

/* Appends " name=v0xv1..." (pad: lo_hi) when some dimension is not at
 * the default. */
enum { W_SIZE, W_STRIDE, W_PAD, W_LHS, W_RHS, W_REV };

static int64_t field(const hs_window_dim *d, int f, bool hi)
{
    switch (f) {
    case W_SIZE: return d->size;
    case W_STRIDE: return d->stride;
    case W_PAD: return hi ? d->pad_hi : d->pad_lo;
    case W_LHS: return d->lhs_dilate;
    case W_RHS: return d->rhs_dilate;
    default: return d->reversal;
    }
}

bool hs_window_print(const hs_window *w, char *buf, size_t size)
{
    static const char *const name[] = {"size", "stride", "pad",
                                       "lhs_dilate", "rhs_dilate",
                                       "rhs_reversal"};
    static const int64_t dflt[] = {-1, 1, 0, 1, 1, 0};
    size_t at = 0;
    int n = snprintf(buf, size, "{");
    if (n < 0 || (size_t)n >= size)
        return false;
    at = (size_t)n;
    for (int f = W_SIZE; f <= W_REV; f++) {
        bool needed = f == W_SIZE;
        for (int d = 0; d < w->rank; d++)
            needed = needed || field(&w->dim[d], f, false) != dflt[f] ||
                     (f == W_PAD && field(&w->dim[d], f, true) != 0);
        if (!needed)
            continue;
        n = snprintf(buf + at, size - at, "%s%s=", at > 1 ? " " : "",
                     name[f]);
        for (int d = 0; n >= 0 && (size_t)n < size - at && d < w->rank;
             d++) {
            at += (size_t)n;
            const hs_window_dim *wd = &w->dim[d];
            n = f == W_PAD ? snprintf(buf + at, size - at, "%s%lld_%lld",
                                      d ? "x" : "", (long long)wd->pad_lo,
                                      (long long)wd->pad_hi)
                           : snprintf(buf + at, size - at, "%s%lld",
                                      d ? "x" : "",
                                      (long long)field(wd, f, false));
        }
        if (n < 0 || (size_t)n >= size - at)
            return false;
        at += (size_t)n;
    }
    n = snprintf(buf + at, size - at, "}");
    return n >= 0 && (size_t)n < size - at;
}

static hs_status bad(const hs_instruction *i, hs_error *err,
                     const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static hs_status bad(const hs_instruction *i, hs_error *err,
                     const char *fmt, ...)
{
    char msg[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return hs_error_set(err, HS_ERR_SHAPE, "instruction %s: %s", i->name,
                        msg);
}

/* A group count attribute: a positive integer, 1 when absent. */
static hs_status group_count(const hs_instruction *i, const char *key,
                             int64_t *out, hs_error *err)
{
    const char *text = hs_instruction_attr(i, key);
    *out = 1;
    if (!text)
        return HS_OK;
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (end == text || *end || errno == ERANGE || v < 1)
        return bad(i, err, "%s=%s: must be a positive integer", key, text);
    *out = v;
    return HS_OK;
}

hs_status hs_instruction_conv(const hs_instruction *i, hs_conv *out,
                              hs_error *err)
{
    memset(out, 0, sizeof *out);
    const char *labels = hs_instruction_attr(i, "dim_labels");
    if (!labels)
        return bad(i, err, "the dim_labels attribute is missing");
    const char *why = NULL;
    if (!hs_conv_dims_parse(labels, &out->dims, &why))
        return bad(i, err, "dim_labels=%s: %s", labels, why);
    int rank = out->dims.n_spatial + 2;
    for (int k = 0; k < i->n_operands && k < 2; k++) {
        const hs_shape *s = &i->operands[k]->shape;
        if (s->dtype == HS_TUPLE || s->rank != rank) {
            char shape[160];
            hs_shape_print(s, false, shape, sizeof shape);
            return bad(i, err, "%s is %s but dim_labels=%s has %d "
                       "dimensions", k ? "the kernel" : "the input", shape,
                       labels, rank);
        }
    }
    hs_status st = hs_instruction_window(i, out->dims.n_spatial,
                                         &out->window, err);
    if (st == HS_OK)
        st = group_count(i, "feature_group_count", &out->feature_groups,
                         err);
    if (st == HS_OK)
        st = group_count(i, "batch_group_count", &out->batch_groups, err);
    return st;
}
