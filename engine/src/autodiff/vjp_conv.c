/* vjp_conv.c - the VJP of convolution, written as XLA and JAX write it:
 * both cotangents are convolutions with swapped dimension numbers.
 *
 *   input:  gy convolved with the kernel, its input and output features
 *           swapped and its window reversed (the window's rhs_reversal
 *           flag, so a forward reversal is undone for free); the forward
 *           stride becomes lhs_dilate (a strided convolution's gradient is
 *           a transposed convolution) and lhs_dilate the stride; padding
 *           so that every input position meets every output it fed.
 *   kernel: the input convolved with gy, batch and feature roles swapped
 *           (the batch is contracted); the forward stride becomes
 *           rhs_dilate and rhs_dilate the stride.
 *
 * Groups: with feature_group_count G the kernel's output features are
 * split into G groups and moved into its input features before the input
 * gradient (which then has G feature groups), and the kernel gradient has
 * batch_group_count G; batch_group_count B is the mirror image (the input
 * gradient's B groups of features are moved back into the batch). This
 * is JAX's _conv_general_dilated_transpose_lhs/_rhs. */
#include <stdio.h>
#include <string.h>

#include "autodiff/autodiff_internal.h"
#include "hloscope/hs_infer.h"

static int64_t dilated(int64_t n, int64_t d)
{
    return n > 0 ? (n - 1) * d + 1 : 0;
}

/* Appends convolution(lhs, rhs) with the attributes of c. */
static hs_instruction *emit_conv(hs_builder *b, hs_instruction *lhs,
                                 hs_instruction *rhs, const hs_conv *c)
{
    if (!hs_builder_ok(b) || !lhs || !rhs)
        return NULL;
    char labels[40], window[512], fgc[24], bgc[24];
    if (!hs_conv_dims_print(&c->dims, labels, sizeof labels) ||
        !hs_window_print(&c->window, window, sizeof window)) {
        hs_builder_fail(b, HS_ERR_INVALID,
                        "autodiff: a convolution gradient's window does "
                        "not fit its text");
        return NULL;
    }
    snprintf(fgc, sizeof fgc, "%lld", (long long)c->feature_groups);
    snprintf(bgc, sizeof bgc, "%lld", (long long)c->batch_groups);
    hs_attr extra[4] = {{"window", window}, {"dim_labels", labels}};
    int n_extra = 2;
    if (c->feature_groups > 1)
        extra[n_extra++] = (hs_attr){"feature_group_count", fgc};
    if (c->batch_groups > 1)
        extra[n_extra++] = (hs_attr){"batch_group_count", bgc};
    hs_instruction *ops[2] = {lhs, rhs};
    hs_instruction proto;
    memset(&proto, 0, sizeof proto);
    proto.name = "convolution";
    proto.opcode = HS_OP_CONVOLUTION;
    proto.shape = hs_shape_scalar(lhs->shape.dtype);
    proto.operands = ops;
    proto.n_operands = 2;
    proto.extra = extra;
    proto.n_extra = n_extra;
    hs_shape shape;
    hs_error e;
    hs_status st = hs_infer_shape(&proto, hs_builder_module(b)->arena,
                                  &shape, &e);
    if (st != HS_OK) {
        hs_builder_fail(b, st, "autodiff: %s", e.message);
        return NULL;
    }
    hs_instruction *i = hs_computation_add(hs_builder_computation(b),
                                           HS_OP_CONVOLUTION, &shape, ops, 2,
                                           NULL);
    if (i)
        for (int k = 0; k < n_extra; k++)
            hs_instruction_add_extra(i, extra[k].key, extra[k].value);
    if (!i || i->n_extra != n_extra) {
        hs_builder_fail(b, HS_ERR_NOMEM, "autodiff: out of host memory");
        return NULL;
    }
    const char *scope = hs_builder_scope(b);
    i->op_name = scope[0] ? scope : NULL;
    return i;
}

/* JAX's _reshape_axis_out_of: dimension src of size s*k becomes [s, k]. */
static hs_instruction *axis_out_of(hs_builder *b, hs_instruction *x,
                                   int src, int64_t s)
{
    if (!x)
        return NULL;
    int64_t dims[HS_MAX_RANK];
    int n = 0;
    for (int d = 0; d < x->shape.rank; d++) {
        if (d == src) {
            dims[n++] = s;
            dims[n++] = x->shape.dims[d] / s;
        } else {
            dims[n++] = x->shape.dims[d];
        }
    }
    return hs_b_reshape(b, x, n, dims);
}

/* JAX's _reshape_axis_into: dimension src moves in front of dimension dst
 * (numbered without src) and merges with it, src major. */
static hs_instruction *axis_into(hs_builder *b, hs_instruction *x, int src,
                                 int dst)
{
    if (!x)
        return NULL;
    int rank = x->shape.rank;
    int64_t perm[HS_MAX_RANK], dims[HS_MAX_RANK];
    int n = 0;
    for (int d = 0; d < rank; d++)
        if (d != src) {
            if (n == dst)
                perm[n++] = src;
            perm[n++] = d;
        }
    if (n == dst)
        perm[n++] = src;
    int m = 0;
    for (int k = 0; k < rank; k++) {
        if (perm[k] == src)
            continue;
        dims[m] = x->shape.dims[perm[k]];
        if (k > 0 && perm[k - 1] == src)
            dims[m] *= x->shape.dims[src];
        m++;
    }
    return hs_b_reshape(b, hs__ad_transpose(b, x, perm), m, dims);
}

/* What both gradients read of forward spatial dimension s: the extents
 * of the input and the output, and of the dilated window. */
typedef struct extents {
    int64_t in, out, window;
} extents;

static extents extents_of(const hs_conv *c, const hs_instruction *lhs,
                          const hs_instruction *gy, int s)
{
    const hs_conv_dims *d = &c->dims;
    const hs_window_dim *w = &c->window.dim[s];
    return (extents){lhs->shape.dims[d->lhs_spatial[s]],
                     gy->shape.dims[d->out_spatial[s]],
                     dilated(w->size, w->rhs_dilate)};
}

/* A gradient convolution with c's spatial rank, its fields to fill. */
static hs_conv gradient_of(const hs_conv *c)
{
    hs_conv t;
    memset(&t, 0, sizeof t);
    t.dims.n_spatial = c->dims.n_spatial;
    t.window.rank = c->dims.n_spatial;
    return t;
}

static hs_instruction *grad_input(hs_builder *b, const hs_conv *c,
                                  hs_instruction *gy, hs_instruction *lhs,
                                  hs_instruction *rhs)
{
    const hs_conv_dims *d = &c->dims;
    int64_t groups = c->feature_groups > 1 ? c->feature_groups
                                           : c->batch_groups;
    hs_instruction *k = rhs;
    if (groups > 1) {
        k = axis_out_of(b, k, (int)d->rhs_output, groups);
        k = axis_into(b, k, (int)d->rhs_output, (int)d->rhs_input);
    }
    hs_conv t = gradient_of(c);
    t.feature_groups = groups;
    t.batch_groups = 1;
    t.dims.lhs_batch = d->out_batch;
    t.dims.lhs_feature = d->out_feature;
    t.dims.rhs_input = d->rhs_output;
    t.dims.rhs_output = d->rhs_input;
    t.dims.out_batch = d->lhs_batch;
    t.dims.out_feature = d->lhs_feature;
    for (int s = 0; s < d->n_spatial; s++) {
        const hs_window_dim *w = &c->window.dim[s];
        hs_window_dim *tw = &t.window.dim[s];
        extents e = extents_of(c, lhs, gy, s);
        t.dims.lhs_spatial[s] = d->out_spatial[s];
        t.dims.rhs_spatial[s] = d->rhs_spatial[s];
        t.dims.out_spatial[s] = d->lhs_spatial[s];
        tw->size = w->size;
        tw->stride = w->lhs_dilate;
        tw->lhs_dilate = w->stride;
        tw->rhs_dilate = w->rhs_dilate;
        tw->reversal = !w->reversal;
        tw->pad_lo = e.window - 1 - w->pad_lo;
        tw->pad_hi = dilated(e.in, w->lhs_dilate) + e.window - 1 -
                     dilated(e.out, w->stride) - tw->pad_lo;
    }
    hs_instruction *g = emit_conv(b, gy, k, &t);
    if (c->batch_groups > 1) {
        g = axis_out_of(b, g, (int)d->lhs_feature, c->batch_groups);
        g = axis_into(b, g, (int)d->lhs_feature, (int)d->lhs_batch);
    }
    return g;
}

static hs_instruction *grad_kernel(hs_builder *b, const hs_conv *c,
                                   hs_instruction *gy, hs_instruction *lhs,
                                   hs_instruction *rhs)
{
    const hs_conv_dims *d = &c->dims;
    if (hs_shape_elements(&gy->shape) == 0)
        return hs__ad_zeros(b, &rhs->shape);
    hs_conv t = gradient_of(c);
    /* The groups trade places: a grouped convolution's kernel gradient
     * has batch groups (each group's features are its batch) and back. */
    t.feature_groups = c->batch_groups;
    t.batch_groups = c->feature_groups;
    t.dims.lhs_batch = d->lhs_feature;
    t.dims.lhs_feature = d->lhs_batch;
    t.dims.rhs_input = d->out_batch;
    t.dims.rhs_output = d->out_feature;
    t.dims.out_batch = d->rhs_input;
    t.dims.out_feature = d->rhs_output;
    int64_t rev[HS_MAX_RANK];
    int n_rev = 0;
    for (int s = 0; s < d->n_spatial; s++) {
        const hs_window_dim *w = &c->window.dim[s];
        hs_window_dim *tw = &t.window.dim[s];
        extents e = extents_of(c, lhs, gy, s);
        t.dims.lhs_spatial[s] = d->lhs_spatial[s];
        t.dims.rhs_spatial[s] = d->out_spatial[s];
        t.dims.out_spatial[s] = d->rhs_spatial[s];
        tw->size = e.out;
        tw->stride = w->rhs_dilate;
        tw->lhs_dilate = w->lhs_dilate;
        tw->rhs_dilate = w->stride;
        tw->pad_lo = w->pad_lo;
        tw->pad_hi = dilated(e.out, w->stride) -
                     dilated(e.in, w->lhs_dilate) + e.window - w->pad_lo - 1;
        if (w->reversal)
            rev[n_rev++] = d->rhs_spatial[s];
    }
    hs_instruction *g = emit_conv(b, lhs, gy, &t);
    /* The forward read the kernel reversed: so is its gradient. */
    if (g && n_rev > 0)
        g = hs__ad_raw(b, HS_OP_REVERSE, &g->shape, &g, 1, rev, n_rev);
    return g;
}

void hs__vjp_convolution(hs_vjp *v, hs_instruction *y)
{
    hs_builder *b = hs__vjp_builder(v);
    hs_instruction *gy = hs__vjp_cotangent(v, y);
    hs_instruction *lhs = y->operands[0], *rhs = y->operands[1];
    hs_conv c;
    hs_error e;
    if (hs_instruction_conv(y, &c, &e) != HS_OK) {
        hs__vjp_fail(v, y, e.status, "%s", e.message);
        return;
    }
    if (hs__vjp_active(v, lhs))
        hs__vjp_acc(v, lhs, grad_input(b, &c, gy, lhs, rhs));
    if (hs__vjp_active(v, rhs))
        hs__vjp_acc(v, rhs, grad_kernel(b, &c, gy, lhs, rhs));
}
