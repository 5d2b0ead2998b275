/* vjp_batch_norm.c - the VJPs of batch-norm-training and
 * batch-norm-inference.
 *
 *     training   batch-norm-grad(x, scale, mean, var, gy) gives the
 *                cotangents of x, scale and offset (what XLA and
 *                torch_xla emit); cotangents of the batch mean and
 *                variance outputs add gmean / N and gvar * 2 (x - mean) / N
 *                to x's.
 *     inference  y = (x - mean) * k + offset with k = scale * r,
 *                r = 1 / sqrt(var + eps), all per feature:
 *                gx = gy * k, goffset = sum gy, gscale = sum(gy (x - mean)) r,
 *                gmean = -goffset k, gvar = -sum(gy (x - mean)) k r^2 / 2.
 *
 * Sums run over every dimension but the feature dimension. */
#include "autodiff/autodiff_internal.h"

/* y's epsilon= and feature_index= as text attributes, and the parsed
 * values. False after recording an error. */
static bool attrs_of(hs_vjp *v, hs_instruction *y, hs_attr *attrs,
                     hs_batch_norm *bn)
{
    hs_error e;
    if (hs_instruction_batch_norm(y, y->operands[0]->shape.rank, bn, &e)) {
        hs__vjp_fail(v, y, e.status, "autodiff: %s", e.message);
        return false;
    }
    attrs[0] = (hs_attr){"epsilon", hs_instruction_attr(y, "epsilon")};
    attrs[1] = (hs_attr){"feature_index",
                         hs_instruction_attr(y, "feature_index")};
    return true;
}

/* Per-feature vector f broadcast to x's shape. */
static hs_instruction *spread(hs_builder *b, hs_instruction *f,
                              const hs_instruction *x, int fi)
{
    int64_t dim = fi;
    return hs_b_broadcast(b, f, &x->shape, &dim, 1);
}

/* t summed over every dimension but fi. */
static hs_instruction *feature_sum(hs_builder *b, hs_instruction *t, int fi)
{
    if (!t)
        return NULL;
    int64_t dims[HS_MAX_RANK];
    int n = 0;
    for (int d = 0; d < t->shape.rank; d++)
        if (d != fi)
            dims[n++] = d;
    return n ? hs_b_reduce_sum(b, t, dims, n) : t;
}

void hs__vjp_batch_norm_training(hs_vjp *v, hs_instruction *y)
{
    hs_builder *b = hs__vjp_builder(v);
    hs_attr attrs[2];
    hs_batch_norm bn;
    if (!attrs_of(v, y, attrs, &bn))
        return;
    hs_instruction *x = y->operands[0];
    hs_instruction *gy = hs__vjp_cotangent_elem(v, y, 0);
    hs_instruction *gmean = hs__vjp_cotangent_elem(v, y, 1);
    hs_instruction *gvar = hs__vjp_cotangent_elem(v, y, 2);
    hs_instruction *mean = hs_b_get_tuple_element(b, y, 1);
    if (gy) {
        hs_instruction *ops[5] = {x, y->operands[1], mean,
                                  hs_b_get_tuple_element(b, y, 2), gy};
        hs_instruction *g = hs__ad_emit(b, HS_OP_BATCH_NORM_GRAD, ops, 5,
                                        NULL, 0, attrs, 2);
        for (int k = 0; k < 3; k++)
            hs__vjp_acc(v, y->operands[k],
                        g ? hs_b_get_tuple_element(b, g, k) : NULL);
    }
    if (!hs__vjp_active(v, x) || (!gmean && !gvar))
        return;
    int64_t n = hs_shape_elements(&x->shape) / x->shape.dims[bn.feature_index];
    float inv_n = 1.0f / (float)(n ? n : 1);
    if (gmean)
        hs__vjp_acc(v, x, spread(b, hs__ad_scalar_op(b, HS_OP_MULTIPLY, gmean,
                                                     inv_n),
                                 x, bn.feature_index));
    if (gvar) {
        hs_instruction *dev = hs__ad_bin(b, HS_OP_SUBTRACT, x,
                                         spread(b, mean, x, bn.feature_index));
        hs_instruction *k = spread(b, hs__ad_scalar_op(b, HS_OP_MULTIPLY, gvar,
                                                       2.0f * inv_n),
                                   x, bn.feature_index);
        hs__vjp_acc(v, x, hs__ad_bin(b, HS_OP_MULTIPLY, dev, k));
    }
}

void hs__vjp_batch_norm_inference(hs_vjp *v, hs_instruction *y)
{
    hs_builder *b = hs__vjp_builder(v);
    hs_attr attrs[2];
    hs_batch_norm bn;
    if (!attrs_of(v, y, attrs, &bn))
        return;
    int fi = bn.feature_index;
    hs_instruction *x = y->operands[0], *scale = y->operands[1],
                   *offset = y->operands[2], *mean = y->operands[3],
                   *var = y->operands[4];
    hs_instruction *gy = hs__vjp_cotangent(v, y);
    hs_instruction *r = hs_b_unary(
        b, HS_OP_RSQRT, hs__ad_scalar_op(b, HS_OP_ADD, var, bn.epsilon));
    hs_instruction *k = hs__ad_bin(b, HS_OP_MULTIPLY, scale, r);
    hs__vjp_acc(v, x, hs__ad_bin(b, HS_OP_MULTIPLY, gy, spread(b, k, x, fi)));
    hs_instruction *goffset = NULL, *s = NULL;
    if (hs__vjp_active(v, offset) || hs__vjp_active(v, mean))
        goffset = feature_sum(b, gy, fi);
    if (hs__vjp_active(v, scale) || hs__vjp_active(v, var)) {
        hs_instruction *dev = hs__ad_bin(b, HS_OP_SUBTRACT, x,
                                         spread(b, mean, x, fi));
        s = feature_sum(b, hs__ad_bin(b, HS_OP_MULTIPLY, gy, dev), fi);
    }
    hs__vjp_acc(v, offset, goffset);
    if (s)
        hs__vjp_acc(v, scale, hs__ad_bin(b, HS_OP_MULTIPLY, s, r));
    if (goffset && hs__vjp_active(v, mean))
        hs__vjp_acc(v, mean, hs_b_unary(b, HS_OP_NEGATE,
                                        hs__ad_bin(b, HS_OP_MULTIPLY, goffset,
                                                   k)));
    if (s && hs__vjp_active(v, var)) {
        hs_instruction *kr2 = hs__ad_bin(b, HS_OP_MULTIPLY, k,
                                         hs__ad_bin(b, HS_OP_MULTIPLY, r, r));
        hs__vjp_acc(v, var, hs__ad_scalar_op(
                                b, HS_OP_MULTIPLY,
                                hs__ad_bin(b, HS_OP_MULTIPLY, s, kr2), -0.5f));
    }
}
