/* infer_conv.c - the shape rule of convolution, with the checks of XLA's
 * ShapeInference::InferConvolveShape: dim_labels that fit both operands,
 * one window dimension per spatial dimension of the size of the kernel's,
 * feature groups (depthwise: one input feature per group) and batch
 * groups (the kernel gradient of a grouped convolution), never both.
 *
 * The result has the output batch (input batch / batch_group_count), the
 * kernel's output features and the window's output extent at the places
 * the output labels give. Its element type is the written one when given
 * (preferred_element_type), as for dot. */
#include <stdio.h>

#include "ir/infer_internal.h"

hs_status hs__infer_convolution(const hs_instruction *i, hs_arena *a,
                                hs_shape *out, hs_error *err)
{
    (void)a;
    const hs_shape *l = NULL, *r = NULL;
    hs_status st = hs__array_operand(i, 0, &l, err);
    if (st == HS_OK)
        st = hs__array_operand(i, 1, &r, err);
    if (st != HS_OK)
        return st;
    hs_conv c;
    if ((st = hs_instruction_conv(i, &c, err)) != HS_OK)
        return st;
    if (!same_type_ignoring_fp(l->dtype, r->dtype))
        return fail(err, "convolution: input %s and kernel %s have different "
                         "element types", SHAPE_TEXT(l), SHAPE_TEXT(r));
    const hs_conv_dims *d = &c.dims;
    int64_t G = c.feature_groups, B = c.batch_groups;
    if (G > 1 && B > 1)
        return fail(err, "convolution: feature_group_count=%lld and "
                         "batch_group_count=%lld; at most one may exceed 1",
                    (long long)G, (long long)B);
    int64_t in_batch = l->dims[d->lhs_batch];
    int64_t in_features = l->dims[d->lhs_feature];
    int64_t k_in = r->dims[d->rhs_input], k_out = r->dims[d->rhs_output];
    if (in_features % G != 0)
        return fail(err, "convolution: input feature dimension (%lld) is not "
                         "a multiple of feature_group_count=%lld",
                    (long long)in_features, (long long)G);
    if (in_features / G != k_in)
        return fail(err, "convolution: input feature dimension (%lld) / "
                         "feature_group_count=%lld is %lld but the kernel's "
                         "input feature dimension is %lld",
                    (long long)in_features, (long long)G,
                    (long long)(in_features / G), (long long)k_in);
    if (k_out % G != 0)
        return fail(err, "convolution: kernel output feature dimension "
                         "(%lld) is not a multiple of feature_group_count="
                         "%lld", (long long)k_out, (long long)G);
    if (k_out % B != 0)
        return fail(err, "convolution: kernel output feature dimension "
                         "(%lld) is not a multiple of batch_group_count="
                         "%lld", (long long)k_out, (long long)B);
    if (in_batch % B != 0)
        return fail(err, "convolution: input batch dimension (%lld) is not "
                         "a multiple of batch_group_count=%lld",
                    (long long)in_batch, (long long)B);
    int64_t dims[HS_MAX_RANK];
    dims[d->out_batch] = in_batch / B;
    dims[d->out_feature] = k_out;
    for (int s = 0; s < d->n_spatial; s++) {
        const hs_window_dim *w = &c.window.dim[s];
        int64_t ksize = r->dims[d->rhs_spatial[s]];
        if (w->size != ksize)
            return fail(err, "convolution: window size %lld of spatial "
                             "dimension %d differs from the kernel's %lld",
                        (long long)w->size, s, (long long)ksize);
        dims[d->out_spatial[s]] =
            hs_window_output_extent(w, l->dims[d->lhs_spatial[s]]);
    }
    hs_dtype t = i->shape.dtype;
    if (!is_array_type(t) || t == HS_PRED)
        t = higher_precision(l->dtype, r->dtype);
    set_array(out, t, d->n_spatial + 2, dims);
    return HS_OK;
}
