/* trace_vision.c - the NCHW vision blocks (conv2d, batchnorm2d, maxpool2d,
 * avgpool2d, adaptive_avgpool2d, flatten, dropout, relu6, hardswish) and a
 * graph block's convolution, reduce-window and batch-norm-inference ops,
 * lowered as torch_xla lowers torch.nn's modules: one `convolution`
 * (dim_labels bf01_oi01->bf01, PyTorch's layouts), `reduce-window` for
 * pooling, `batch-norm-inference` / `batch-norm-training` for batch norm.
 *
 * Element types: at a bf16 or f16 "dtype" the convolution and batch norm
 * read and write the model's type but compute in f32 (convert, op at f32,
 * convert back), which is the arithmetic XLA uses for them (an f32
 * accumulator, rounded once when stored) and keeps to the device's f32
 * convolution and batch-norm kernels. Average pooling sums in f32 for the
 * same reason (PyTorch's bf16 pooling accumulates in float too); max
 * pooling and the activations run at the model's type. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model/params.h"
#include "model/trace_blocks.h"

/* ---- shape checks ------------------------------------------------------- */

static bool require_nchw(hs_trace *t, const hs_block *blk, hs_instruction *x)
{
    if (x->shape.rank == 4)
        return true;
    char s[128];
    hs_shape_print(&x->shape, false, s, sizeof s);
    hs__trace_fail(t, blk->path, HS_ERR_INVALID,
                   "%s needs a 4-D input [batch, channels, height, width] "
                   "(NCHW, as PyTorch), got %s",
                   hs__block_type_name(blk->type), s);
    return false;
}

/* The window of a 2-D op over height and width, checked to give at least
 * one output position; key names the JSON key blamed otherwise. */
static bool spatial_window(hs_trace *t, const hs_block *blk,
                           const hs_instruction *x, hs_window *w)
{
    const hs_vision *v = &blk->vision;
    w->rank = 2;
    for (int d = 0; d < 2; d++) {
        w->dim[d] = (hs_window_dim){.size = v->kernel[d],
                                    .stride = v->stride[d],
                                    .pad_lo = v->padding[d],
                                    .pad_hi = v->padding[d],
                                    .lhs_dilate = 1,
                                    .rhs_dilate = v->dilation[d]};
        int64_t n = x->shape.dims[2 + d];
        if (hs_window_output_extent(&w->dim[d], n) < 1) {
            char p[300];
            snprintf(p, sizeof p, "%s/kernel_size", blk->path);
            hs__trace_fail(t, p, HS_ERR_INVALID,
                           "a kernel of %lld (dilation %lld) does not fit the "
                           "%s of %lld padded by %lld on each side",
                           (long long)v->kernel[d], (long long)v->dilation[d],
                           d ? "width" : "height", (long long)n,
                           (long long)v->padding[d]);
            return false;
        }
    }
    return true;
}

/* ---- the ops, shared by blocks and graph ops ---------------------------- */

/* f32 for a computation the model runs in f32 whatever its dtype. */
static hs_instruction *to_f32(hs_builder *b, hs_instruction *x)
{
    return x && x->shape.dtype != HS_F32 ? hs_b_convert(b, x, HS_F32) : x;
}

static hs_instruction *to_type(hs_builder *b, hs_instruction *x, hs_dtype t)
{
    return x && x->shape.dtype != t ? hs_b_convert(b, x, t) : x;
}

/* convolution(x, w) with conv's attributes, at f32 inside. */
static hs_instruction *emit_conv(hs_trace *t, hs_instruction *x,
                                 hs_instruction *w, const hs_window *win,
                                 const char *labels, int64_t groups)
{
    if (!x || !w)
        return NULL;
    char window[512], fgc[24];
    if (!hs_window_print(win, window, sizeof window))
        return hs__trace_fail(t, NULL, HS_ERR_INVALID,
                              "the convolution's window does not fit its "
                              "text");
    snprintf(fgc, sizeof fgc, "%lld", (long long)groups);
    hs_attr attrs[3] = {{"window", window},
                        {"dim_labels", labels},
                        {"feature_group_count", fgc}};
    hs_dtype type = x->shape.dtype;
    hs_instruction *ops[2] = {to_f32(t->b, x), to_f32(t->b, w)};
    hs_instruction *y = hs_b_generic(t->b, HS_OP_CONVOLUTION, ops, 2, attrs,
                                     groups > 1 ? 3 : 2, NULL, 0);
    return to_type(t->b, y, type);
}

/* reduce-window(x, init) with reducer add or maximum at x's type. */
static hs_instruction *emit_window(hs_trace *t, hs_instruction *x,
                                   const hs_window *win, hs_opcode reducer)
{
    if (!x)
        return NULL;
    char window[512];
    if (!hs_window_print(win, window, sizeof window))
        return hs__trace_fail(t, NULL, HS_ERR_INVALID,
                              "the pooling window does not fit its text");
    hs_attr attr = {"window", window};
    hs_shape scalar = hs_shape_scalar(x->shape.dtype);
    hs_instruction *ops[2] = {
        x, hs__nn_fill(t->b, reducer == HS_OP_MAXIMUM ? -INFINITY : 0.0f,
                       &scalar)};
    hs_computation *to_apply = hs_b_reducer(t->b, reducer, x->shape.dtype);
    return hs_b_generic(t->b, HS_OP_REDUCE_WINDOW, ops, 2, &attr, 1,
                        &to_apply, 1);
}

/* The batch-norm attributes: epsilon and feature_index. */
static int bn_attrs(hs_attr *attrs, char *eps, char *fi, double epsilon,
                    int64_t feature)
{
    snprintf(eps, 32, "%.9g", epsilon);
    snprintf(fi, 24, "%lld", (long long)feature);
    attrs[0] = (hs_attr){"epsilon", eps};
    attrs[1] = (hs_attr){"feature_index", fi};
    return 2;
}

/* batch-norm-inference(x, scale, offset, mean, variance) at f32 inside. */
static hs_instruction *emit_bn_inference(hs_trace *t, hs_instruction *const *a,
                                         double epsilon, int64_t feature)
{
    char eps[32], fi[24];
    hs_attr attrs[2];
    int n = bn_attrs(attrs, eps, fi, epsilon, feature);
    hs_instruction *ops[5];
    for (int k = 0; k < 5; k++)
        if (!(ops[k] = to_f32(t->b, a[k])))
            return NULL;
    hs_instruction *y = hs_b_generic(t->b, HS_OP_BATCH_NORM_INFERENCE, ops, 5,
                                     attrs, n, NULL, 0);
    return to_type(t->b, y, a[0]->shape.dtype);
}

/* ---- blocks --------------------------------------------------------------- */

static hs_instruction *trace_conv2d(hs_trace *t, const hs_block *blk,
                                    hs_instruction *x)
{
    const hs_vision *v = &blk->vision;
    int64_t cin = x->shape.dims[1], g = v->groups;
    char p[300];
    if (cin % g != 0 || v->out_channels % g != 0) {
        snprintf(p, sizeof p, "%s/groups", blk->path);
        return hs__trace_fail(t, p, HS_ERR_INVALID,
                              "groups (%lld) must divide the input channels "
                              "(%lld) and out_channels (%lld)",
                              (long long)g, (long long)cin,
                              (long long)v->out_channels);
    }
    hs_window win;
    if (!spatial_window(t, blk, x, &win))
        return NULL;
    int64_t out_dims[4] = {x->shape.dims[0], v->out_channels,
                           hs_window_output_extent(&win.dim[0],
                                                   x->shape.dims[2]),
                           hs_window_output_extent(&win.dim[1],
                                                   x->shape.dims[3])};
    if (!hs__trace_fits(t, blk->path, 4, out_dims))
        return NULL;
    /* PyTorch's Conv2d: weight [out, in / groups, kh, kw], bias [out],
     * both U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = in/groups*kh*kw. */
    hs_shape ws = hs_shape_make(HS_F32, 4,
                                (int64_t[]){v->out_channels, cin / g,
                                            v->kernel[0], v->kernel[1]});
    float bound = hs__param_fan_in_bound(&ws);
    hs_instruction *w =
        hs__trace_param(t, "weight", &ws, HS_INIT_UNIFORM, bound);
    hs_instruction *bias = NULL;
    if (blk->bias) {
        hs_shape bs = hs_shape_make(HS_F32, 1, &v->out_channels);
        if (!(bias = hs__trace_param(t, "bias", &bs, HS_INIT_UNIFORM, bound)))
            return NULL;
    }
    hs_instruction *y = emit_conv(t, x, w, &win, "bf01_oi01->bf01", g);
    if (!bias || !y)
        return y;
    return hs_b_binary(t->b, HS_OP_ADD, y,
                       hs_b_broadcast(t->b, bias, &y->shape,
                                      (int64_t[]){1}, 1));
}

/* Eval: the running statistics (parameters running_mean, running_var);
 * training: the batch's, as nn.BatchNorm2d in train() (the running
 * statistics' update is not part of the forward value, so it is not
 * traced and they are not parameters). */
static hs_instruction *trace_batchnorm(hs_trace *t, const hs_block *blk,
                                       hs_instruction *x)
{
    int64_t c = x->shape.dims[1];
    hs_shape s = hs_shape_make(HS_F32, 1, &c);
    hs_instruction *a[5] = {
        x, hs__trace_param(t, "weight", &s, HS_INIT_ONES, 0),
        hs__trace_param(t, "bias", &s, HS_INIT_ZEROS, 0), NULL, NULL};
    if (!blk->vision.training) {
        a[3] = hs__trace_param(t, "running_mean", &s, HS_INIT_ZEROS, 0);
        a[4] = hs__trace_param(t, "running_var", &s, HS_INIT_ONES, 0);
        if (!a[1] || !a[2] || !a[3] || !a[4])
            return NULL;
        return emit_bn_inference(t, a, blk->eps, 1);
    }
    if (!a[1] || !a[2])
        return NULL;
    char eps[32], fi[24];
    hs_attr attrs[2];
    int n = bn_attrs(attrs, eps, fi, blk->eps, 1);
    hs_instruction *ops[3] = {to_f32(t->b, a[0]), to_f32(t->b, a[1]),
                              to_f32(t->b, a[2])};
    hs_instruction *y = hs_b_generic(t->b, HS_OP_BATCH_NORM_TRAINING, ops, 3,
                                     attrs, n, NULL, 0);
    return to_type(t->b, y ? hs_b_get_tuple_element(t->b, y, 0) : NULL,
                   x->shape.dtype);
}

/* The 4-D window of a pooling op: 1 over batch and channels. */
static hs_window pool_window(const hs_window *spatial)
{
    hs_window w = {.rank = 4};
    for (int d = 0; d < 2; d++)
        w.dim[d] = (hs_window_dim){.size = 1, .stride = 1, .lhs_dilate = 1,
                                   .rhs_dilate = 1};
    w.dim[2] = spatial->dim[0];
    w.dim[3] = spatial->dim[1];
    return w;
}

/* Average pooling of x over win: the f32 sum of each window divided by
 * its size, or (count_include_pad false) by how many of its elements are
 * not padding, a constant the passes fold. */
static hs_instruction *average(hs_trace *t, hs_instruction *x,
                               const hs_window *win, bool count_pad)
{
    hs_builder *b = t->b;
    hs_dtype type = x->shape.dtype;
    hs_instruction *sum = emit_window(t, to_f32(b, x), win, HS_OP_ADD);
    if (!sum)
        return NULL;
    hs_instruction *count;
    if (count_pad) {
        int64_t n = 1;
        for (int d = 0; d < win->rank; d++)
            n *= win->dim[d].size;
        count = hs__nn_fill(b, (float)n, &sum->shape);
    } else {
        hs_shape ones = hs_shape_make(HS_F32, x->shape.rank, x->shape.dims);
        count = emit_window(t, hs__nn_fill(b, 1.0f, &ones), win, HS_OP_ADD);
    }
    return to_type(b, hs_b_binary(b, HS_OP_DIVIDE, sum, count), type);
}

static hs_instruction *trace_pool(hs_trace *t, const hs_block *blk,
                                  hs_instruction *x)
{
    hs_window spatial;
    if (!spatial_window(t, blk, x, &spatial))
        return NULL;
    /* PyTorch pads a max pool with -inf and requires padding <= half the
     * kernel, so that no window is padding only. */
    for (int d = 0; d < 2; d++)
        if (2 * blk->vision.padding[d] > blk->vision.kernel[d]) {
            char p[300];
            snprintf(p, sizeof p, "%s/padding", blk->path);
            return hs__trace_fail(t, p, HS_ERR_INVALID,
                                  "padding (%lld) must be at most half the "
                                  "kernel size (%lld), as in PyTorch",
                                  (long long)blk->vision.padding[d],
                                  (long long)blk->vision.kernel[d]);
        }
    hs_window w = pool_window(&spatial);
    if (blk->type == HS_BLOCK_MAXPOOL2D)
        return emit_window(t, x, &w, HS_OP_MAXIMUM);
    return average(t, x, &w, blk->vision.count_include_pad);
}

/* PyTorch's adaptive average pooling divides the input into output_size
 * windows; when the input is a multiple of output_size they are equal,
 * the case traced here (to 1x1: a mean, as in ResNet and MobileNet). */
static hs_instruction *trace_adaptive(hs_trace *t, const hs_block *blk,
                                      hs_instruction *x)
{
    const int64_t *out = blk->vision.output_size;
    hs_window spatial = {.rank = 2};
    for (int d = 0; d < 2; d++) {
        int64_t n = x->shape.dims[2 + d];
        if (n % out[d] != 0) {
            char p[300];
            snprintf(p, sizeof p, "%s/output_size", blk->path);
            return hs__trace_fail(
                t, p, HS_ERR_UNSUPPORTED,
                "adaptive_avgpool2d to %lldx%lld needs the input's height "
                "and width to be multiples of it (equal windows), got "
                "%lldx%lld",
                (long long)out[0], (long long)out[1],
                (long long)x->shape.dims[2], (long long)x->shape.dims[3]);
        }
        spatial.dim[d] = (hs_window_dim){.size = n / out[d],
                                         .stride = n / out[d],
                                         .lhs_dilate = 1, .rhs_dilate = 1};
    }
    hs_window w = pool_window(&spatial);
    return average(t, x, &w, true);
}

static hs_instruction *trace_flatten(hs_trace *t, const hs_block *blk,
                                     hs_instruction *x)
{
    int64_t sd = blk->vision.start_dim, rank = x->shape.rank;
    if (sd >= rank) {
        char p[300];
        snprintf(p, sizeof p, "%s/start_dim", blk->path);
        return hs__trace_fail(t, p, HS_ERR_INVALID,
                              "start_dim %lld is out of range for a %lld-D "
                              "input",
                              (long long)sd, (long long)rank);
    }
    int64_t dims[HS_MAX_RANK], n = 1;
    for (int64_t d = 0; d < sd; d++)
        dims[d] = x->shape.dims[d];
    for (int64_t d = sd; d < rank; d++)
        n *= x->shape.dims[d];
    dims[sd] = n;
    return hs_b_reshape(t->b, x, (int)sd + 1, dims);
}

/* min(max(x, 0), 6), as F.relu6 (hardtanh(0, 6)). */
static hs_instruction *relu6(hs_builder *b, hs_instruction *x)
{
    if (!x)
        return NULL;
    hs_instruction *y =
        hs_b_binary(b, HS_OP_MAXIMUM, x, hs__nn_fill(b, 0.0f, &x->shape));
    return hs_b_binary(b, HS_OP_MINIMUM, y, hs__nn_fill(b, 6.0f, &x->shape));
}

/* x * relu6(x + 3) / 6, in PyTorch's order of operations. */
static hs_instruction *hardswish(hs_builder *b, hs_instruction *x)
{
    hs_instruction *r = relu6(
        b, hs_b_binary(b, HS_OP_ADD, x, hs__nn_fill(b, 3.0f, &x->shape)));
    return hs_b_binary(b, HS_OP_DIVIDE, hs_b_binary(b, HS_OP_MULTIPLY, x, r),
                       hs__nn_fill(b, 6.0f, &x->shape));
}

hs_instruction *hs__trace_vision(hs_trace *t, const hs_block *blk,
                                 hs_instruction *x)
{
    switch (blk->type) {
    case HS_BLOCK_FLATTEN: return trace_flatten(t, blk, x);
    case HS_BLOCK_DROPOUT: return x; /* eval: the identity */
    case HS_BLOCK_RELU6: return relu6(t->b, x);
    case HS_BLOCK_HARDSWISH: return hardswish(t->b, x);
    default: break;
    }
    if (!require_nchw(t, blk, x))
        return NULL;
    switch (blk->type) {
    case HS_BLOCK_CONV2D: return trace_conv2d(t, blk, x);
    case HS_BLOCK_BATCHNORM2D: return trace_batchnorm(t, blk, x);
    case HS_BLOCK_MAXPOOL2D:
    case HS_BLOCK_AVGPOOL2D: return trace_pool(t, blk, x);
    case HS_BLOCK_ADAPTIVE_AVGPOOL2D: return trace_adaptive(t, blk, x);
    default:
        return hs__trace_fail(t, blk->path, HS_ERR_INVALID,
                              "not a vision block");
    }
}

/* ---- graph ops ------------------------------------------------------------ */

/* A window list attr of n entries (or absent: def) for `what`. */
static bool window_list(hs_trace *t, const hs_graph_op *g, const char *key,
                        int n_given, const int64_t *given, int n,
                        int64_t def, int64_t *out)
{
    if (n_given >= 0 && n_given != n) {
        char p[300];
        snprintf(p, sizeof p, "%s/attrs/%s", g->path, key);
        hs__trace_fail(t, p, HS_ERR_INVALID,
                       "%s needs %d entries (one per window dimension), got "
                       "%d",
                       key, n, n_given);
        return false;
    }
    for (int d = 0; d < n; d++)
        out[d] = n_given >= 0 ? given[d] : def;
    return true;
}

static bool graph_window(hs_trace *t, const hs_graph_op *g, int n,
                         const int64_t *sizes, hs_window *w)
{
    int64_t st[HS_MAX_RANK], lo[HS_MAX_RANK], hi[HS_MAX_RANK],
        dil[HS_MAX_RANK];
    if (!window_list(t, g, "window_strides", g->n_wstride, g->wstride, n, 1,
                     st) ||
        !window_list(t, g, "padding_low", g->n_pad_lo, g->pad_lo, n, 0, lo) ||
        !window_list(t, g, "padding_high", g->n_pad_hi, g->pad_hi, n, 0,
                     hi) ||
        !window_list(t, g, "rhs_dilation", g->n_dil, g->dil, n, 1, dil))
        return false;
    w->rank = n;
    for (int d = 0; d < n; d++)
        w->dim[d] = (hs_window_dim){.size = sizes[d], .stride = st[d],
                                    .pad_lo = lo[d], .pad_hi = hi[d],
                                    .lhs_dilate = 1, .rhs_dilate = dil[d]};
    return true;
}

hs_instruction *hs__trace_graph_vision(hs_trace *t, const hs_graph_op *g,
                                       hs_instruction *const *a)
{
    if (g->opcode == HS_OP_BATCH_NORM_INFERENCE)
        return emit_bn_inference(t, a, g->value, g->dimension);
    if (g->opcode == HS_OP_REDUCE_WINDOW) {
        hs_window w;
        int64_t sizes[HS_MAX_RANK];
        if (!window_list(t, g, "window_dimensions", g->n_win, g->win,
                         a[0]->shape.rank, 1, sizes) ||
            !graph_window(t, g, a[0]->shape.rank, sizes, &w))
            return NULL;
        if (g->reducer == HS_OP_ADD)
            return to_type(t->b, emit_window(t, to_f32(t->b, a[0]), &w,
                                             HS_OP_ADD),
                           a[0]->shape.dtype);
        return emit_window(t, a[0], &w, HS_OP_MAXIMUM);
    }
    const char *labels = g->dim_labels ? g->dim_labels : "bf01_oi01->bf01";
    hs_conv_dims cd;
    const char *why = "";
    if (!hs_conv_dims_parse(labels, &cd, &why) ||
        cd.n_spatial + 2 != a[1]->shape.rank) {
        char s[128];
        hs_shape_print(&a[1]->shape, false, s, sizeof s);
        return hs__trace_fail(t, g->path, HS_ERR_INVALID,
                              "the kernel %s does not have the rank of "
                              "dim_labels %s",
                              s, labels);
    }
    int64_t sizes[HS_MAX_RANK];
    for (int d = 0; d < cd.n_spatial; d++)
        sizes[d] = a[1]->shape.dims[cd.rhs_spatial[d]];
    hs_window w;
    if (!graph_window(t, g, cd.n_spatial, sizes, &w))
        return NULL;
    return emit_conv(t, a[0], a[1], &w, labels, g->groups);
}
