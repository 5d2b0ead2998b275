/* trace_ops.c - the neural-network pieces blocks are made of (linear,
 * activations, softmax, norms) as builder calls. Every function returns
 * NULL when an input is NULL, like the builder's own ops. */
#include <math.h>

#include "model/trace_blocks.h"

hs_instruction *hs__nn_fill(hs_builder *b, float v, const hs_shape *s)
{
    hs_instruction *c = hs_b_const_f32(b, v);
    if (c && s->dtype != HS_F32)
        c = hs_b_convert(b, c, s->dtype); /* folded by the passes */
    if (!c || s->rank == 0)
        return c;
    return hs_b_broadcast(b, c, s, NULL, 0);
}

hs_instruction *hs__nn_binary_trailing(hs_builder *b, hs_opcode op,
                                       hs_instruction *x, hs_instruction *y)
{
    if (!x || !y)
        return NULL;
    if (y->shape.rank < x->shape.rank)
        y = hs_b_broadcast_trailing(b, y, &x->shape);
    else if (x->shape.rank < y->shape.rank)
        x = hs_b_broadcast_trailing(b, x, &y->shape);
    return hs_b_binary(b, op, x, y);
}

static int64_t norm_axis(const hs_instruction *x, int64_t axis)
{
    return axis < 0 ? axis + x->shape.rank : axis;
}

/* Reduces one axis (the result drops it). */
static hs_instruction *reduce_axis(hs_builder *b, hs_instruction *x,
                                   int64_t axis, hs_opcode reducer)
{
    if (!x)
        return NULL;
    return reducer == HS_OP_MAXIMUM ? hs_b_reduce_max(b, x, &axis, 1)
                                    : hs_b_reduce_sum(b, x, &axis, 1);
}

/* Broadcasts r (x's shape without axis) back to x's shape. */
static hs_instruction *broadcast_back(hs_builder *b, hs_instruction *r,
                                      const hs_instruction *x, int64_t axis)
{
    if (!r || !x)
        return NULL;
    int64_t dims[HS_MAX_RANK];
    int n = 0;
    for (int i = 0; i < x->shape.rank; i++)
        if (i != axis)
            dims[n++] = i;
    return hs_b_broadcast(b, r, &x->shape, dims, n);
}

hs_instruction *hs__nn_reduce_keep(hs_builder *b, hs_instruction *x,
                                   int64_t axis, hs_opcode reducer)
{
    if (!x)
        return NULL;
    axis = norm_axis(x, axis);
    return broadcast_back(b, reduce_axis(b, x, axis, reducer), x, axis);
}

/* The mean over the last axis, not yet broadcast back. */
static hs_instruction *mean_last(hs_builder *b, hs_instruction *x)
{
    if (!x)
        return NULL;
    int64_t axis = x->shape.rank - 1;
    hs_instruction *s = reduce_axis(b, x, axis, HS_OP_ADD);
    if (!s)
        return NULL;
    float inv_n = 1.0f / (float)x->shape.dims[axis];
    return hs_b_binary(b, HS_OP_MULTIPLY, s, hs__nn_fill(b, inv_n, &s->shape));
}

hs_instruction *hs__nn_linear(hs_builder *b, hs_instruction *x,
                              hs_instruction *w, hs_instruction *bias)
{
    hs_instruction *y = hs_b_matmul_nt(b, x, w);
    return bias ? hs__nn_binary_trailing(b, HS_OP_ADD, y, bias) : y;
}

hs_instruction *hs__nn_activation(hs_builder *b, hs_block_type act,
                                  hs_instruction *x)
{
    if (!x)
        return NULL;
    switch (act) {
    case HS_BLOCK_RELU:
        return hs_b_binary(b, HS_OP_MAXIMUM, x, hs__nn_fill(b, 0, &x->shape));
    case HS_BLOCK_GELU: {
        /* The exact form, PyTorch's default: x/2 * (1 + erf(x/sqrt(2))). */
        hs_instruction *e = hs_b_unary(
            b, HS_OP_ERF,
            hs_b_binary(b, HS_OP_MULTIPLY, x,
                        hs__nn_fill(b, (float)M_SQRT1_2, &x->shape)));
        hs_instruction *one_e =
            hs_b_binary(b, HS_OP_ADD, e, hs__nn_fill(b, 1, &x->shape));
        hs_instruction *half_x = hs_b_binary(b, HS_OP_MULTIPLY, x,
                                             hs__nn_fill(b, 0.5f, &x->shape));
        return hs_b_binary(b, HS_OP_MULTIPLY, half_x, one_e);
    }
    case HS_BLOCK_SILU:
        return hs_b_binary(b, HS_OP_MULTIPLY, x,
                           hs_b_unary(b, HS_OP_LOGISTIC, x));
    case HS_BLOCK_TANH:
        return hs_b_unary(b, HS_OP_TANH, x);
    case HS_BLOCK_SIGMOID:
        return hs_b_unary(b, HS_OP_LOGISTIC, x);
    default:
        hs_builder_fail(b, HS_ERR_INVALID, "%s is not an activation",
                        hs__block_type_name(act));
        return NULL;
    }
}

hs_instruction *hs__nn_softmax(hs_builder *b, hs_instruction *x, int64_t axis)
{
    if (!x)
        return NULL;
    axis = norm_axis(x, axis);
    /* Subtracting the maximum keeps exp from overflowing; the result is
     * the same softmax. */
    hs_instruction *m = hs__nn_reduce_keep(b, x, axis, HS_OP_MAXIMUM);
    hs_instruction *e = hs_b_unary(b, HS_OP_EXP,
                                   hs_b_binary(b, HS_OP_SUBTRACT, x, m));
    hs_instruction *s = hs__nn_reduce_keep(b, e, axis, HS_OP_ADD);
    return hs_b_binary(b, HS_OP_DIVIDE, e, s);
}

hs_instruction *hs__nn_layernorm(hs_builder *b, hs_instruction *x,
                                 hs_instruction *w, hs_instruction *bias,
                                 float eps)
{
    if (!x)
        return NULL;
    int64_t axis = x->shape.rank - 1;
    hs_instruction *mean = broadcast_back(b, mean_last(b, x), x, axis);
    hs_instruction *xc = hs_b_binary(b, HS_OP_SUBTRACT, x, mean);
    /* Biased variance (divide by n), as torch.nn.LayerNorm. */
    hs_instruction *var = mean_last(b, hs_b_binary(b, HS_OP_MULTIPLY, xc, xc));
    hs_instruction *inv = NULL;
    if (var)
        inv = hs_b_unary(b, HS_OP_RSQRT,
                         hs_b_binary(b, HS_OP_ADD, var,
                                     hs__nn_fill(b, eps, &var->shape)));
    hs_instruction *y = hs_b_binary(b, HS_OP_MULTIPLY, xc,
                                    broadcast_back(b, inv, x, axis));
    y = hs__nn_binary_trailing(b, HS_OP_MULTIPLY, y, w);
    return bias ? hs__nn_binary_trailing(b, HS_OP_ADD, y, bias) : y;
}

hs_instruction *hs__nn_rmsnorm(hs_builder *b, hs_instruction *x,
                               hs_instruction *w, float eps)
{
    if (!x)
        return NULL;
    int64_t axis = x->shape.rank - 1;
    /* torch.nn.RMSNorm: x * rsqrt(mean(x^2, -1) + eps) * weight. */
    hs_instruction *ms = mean_last(b, hs_b_binary(b, HS_OP_MULTIPLY, x, x));
    hs_instruction *inv = NULL;
    if (ms)
        inv = hs_b_unary(b, HS_OP_RSQRT,
                         hs_b_binary(b, HS_OP_ADD, ms,
                                     hs__nn_fill(b, eps, &ms->shape)));
    hs_instruction *y = hs_b_binary(b, HS_OP_MULTIPLY, x,
                                    broadcast_back(b, inv, x, axis));
    return hs__nn_binary_trailing(b, HS_OP_MULTIPLY, y, w);
}
