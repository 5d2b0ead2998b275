/* vision_desc.c - the keys of the NCHW vision blocks (conv2d, batchnorm2d,
 * maxpool2d, avgpool2d, adaptive_avgpool2d, flatten, dropout) and the
 * attrs of a graph block's convolution, reduce-window and
 * batch-norm-inference ops. Sizes are spelt as torch.nn spells them: an
 * integer for both spatial dimensions or [height, width]. */
#include <string.h>

#include "model/model_desc.h"

/* obj[key] as a (height, width) pair: an integer >= min for both, or an
 * array of two; def for both when absent (def < 0 and absent: *out is
 * left as it is, for "stride defaults to kernel_size"). */
static bool get_pair(js_walker *w, const json_t *obj, const char *key,
                     bool required, int64_t def, int64_t min, int64_t *out)
{
    const json_t *v = json_object_get(obj, key);
    if (v && json_is_integer(v)) {
        int64_t one;
        if (!js_get_int(w, obj, key, true, 0, min, INT64_MAX, &one))
            return false;
        out[0] = out[1] = one;
        return true;
    }
    if (!v && !required) {
        if (def >= 0)
            out[0] = out[1] = def;
        return true;
    }
    int n = 0;
    int64_t two[HS_MAX_RANK];
    if (!js_get_int_array(w, obj, key, true, min, INT64_MAX, HS_MAX_RANK,
                          two, &n))
        return false;
    if (n != 2)
        return js_fail(w, HS_ERR_INVALID, key,
                       "expected an integer or [height, width], got %d "
                       "values",
                       n);
    out[0] = two[0];
    out[1] = two[1];
    return true;
}

bool hs__vision_desc_parse(js_walker *w, const json_t *obj, hs_block *blk)
{
    hs_vision *v = &blk->vision;
    double p;
    switch (blk->type) {
    case HS_BLOCK_CONV2D:
        return js_get_int(w, obj, "out_channels", true, 0, 1, INT64_MAX,
                          &v->out_channels) &&
               get_pair(w, obj, "kernel_size", true, 0, 1, v->kernel) &&
               get_pair(w, obj, "stride", false, 1, 1, v->stride) &&
               get_pair(w, obj, "padding", false, 0, 0, v->padding) &&
               get_pair(w, obj, "dilation", false, 1, 1, v->dilation) &&
               js_get_int(w, obj, "groups", false, 1, 1, INT64_MAX,
                          &v->groups) &&
               js_get_bool(w, obj, "bias", true, &blk->bias);
    case HS_BLOCK_BATCHNORM2D:
        return js_get_number(w, obj, "eps", false, 1e-5, true, &blk->eps) &&
               js_get_bool(w, obj, "training", false, &v->training);
    case HS_BLOCK_MAXPOOL2D:
    case HS_BLOCK_AVGPOOL2D:
        if (!get_pair(w, obj, "kernel_size", true, 0, 1, v->kernel))
            return false;
        v->stride[0] = v->kernel[0]; /* PyTorch: stride = kernel_size */
        v->stride[1] = v->kernel[1];
        v->dilation[0] = v->dilation[1] = 1;
        if (!get_pair(w, obj, "stride", false, -1, 1, v->stride) ||
            !get_pair(w, obj, "padding", false, 0, 0, v->padding))
            return false;
        if (blk->type == HS_BLOCK_MAXPOOL2D)
            return get_pair(w, obj, "dilation", false, 1, 1, v->dilation);
        return js_get_bool(w, obj, "count_include_pad", true,
                           &v->count_include_pad);
    case HS_BLOCK_ADAPTIVE_AVGPOOL2D:
        return get_pair(w, obj, "output_size", false, 1, 1, v->output_size);
    case HS_BLOCK_FLATTEN:
        return js_get_int(w, obj, "start_dim", false, 1, 0, HS_MAX_RANK - 1,
                          &v->start_dim);
    case HS_BLOCK_DROPOUT:
        if (!js_get_number(w, obj, "p", false, 0.5, false, &p))
            return false;
        if (p < 0 || p >= 1)
            return js_fail(w, HS_ERR_INVALID, "p",
                           "expected a probability in [0, 1)");
        return true;
    default:
        return true;
    }
}

static const char *const k_win_reducers[] = {"add", "max", NULL};

bool hs__vision_attrs_parse(js_walker *w, const json_t *at, hs_arena *a,
                            hs_graph_op *g)
{
    int64_t rmax = HS_MAX_RANK;
    int idx = 0;
    const char *labels = NULL;
    g->n_win = g->n_wstride = g->n_pad_lo = g->n_pad_hi = g->n_dil = -1;
    g->groups = 1;
    switch (g->opcode) {
    case HS_OP_CONVOLUTION:
        if (!js_get_int_array(w, at, "window_strides", false, 1, INT64_MAX,
                              rmax, g->wstride, &g->n_wstride) ||
            !js_get_int_array(w, at, "padding_low", false, 0, INT64_MAX,
                              rmax, g->pad_lo, &g->n_pad_lo) ||
            !js_get_int_array(w, at, "padding_high", false, 0, INT64_MAX,
                              rmax, g->pad_hi, &g->n_pad_hi) ||
            !js_get_int_array(w, at, "rhs_dilation", false, 1, INT64_MAX,
                              rmax, g->dil, &g->n_dil) ||
            !js_get_int(w, at, "feature_group_count", false, 1, 1,
                        INT64_MAX, &g->groups) ||
            !js_get_string(w, at, "dim_labels", false, NULL, &labels))
            return false;
        if (labels) {
            hs_conv_dims d;
            const char *why = "";
            if (!hs_conv_dims_parse(labels, &d, &why))
                return js_fail(w, HS_ERR_INVALID, "dim_labels",
                               "expected XLA's dim_labels such as "
                               "bf01_oi01->bf01: %s",
                               why);
            if (!(g->dim_labels = hs_arena_strdup(a, labels)))
                return js_fail(w, HS_ERR_NOMEM, NULL, "out of host memory");
        }
        return true;
    case HS_OP_REDUCE_WINDOW:
        if (!js_get_int_array(w, at, "window_dimensions", true, 1, INT64_MAX,
                              rmax, g->win, &g->n_win) ||
            !js_get_int_array(w, at, "window_strides", false, 1, INT64_MAX,
                              rmax, g->wstride, &g->n_wstride) ||
            !js_get_int_array(w, at, "padding_low", false, 0, INT64_MAX,
                              rmax, g->pad_lo, &g->n_pad_lo) ||
            !js_get_int_array(w, at, "padding_high", false, 0, INT64_MAX,
                              rmax, g->pad_hi, &g->n_pad_hi) ||
            !js_get_enum(w, at, "reducer", true, 0, k_win_reducers, &idx))
            return false;
        g->reducer = idx == 0 ? HS_OP_ADD : HS_OP_MAXIMUM;
        return true;
    case HS_OP_BATCH_NORM_INFERENCE:
        return js_get_number(w, at, "epsilon", true, 0, true, &g->value) &&
               js_get_int(w, at, "feature_index", true, 0, 0, rmax - 1,
                          &g->dimension);
    default:
        return true;
    }
}
