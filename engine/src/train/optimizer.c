/* optimizer.c - parameter updates as builder ops, following PyTorch's
 * torch.optim without weight decay, momentum or amsgrad:
 *
 *   sgd   p' = p - lr * g
 *   adam  t' = t + 1
 *         m' = beta1 * m + (1 - beta1) * g
 *         v' = beta2 * v + (1 - beta2) * g^2
 *         p' = p - (lr / bc1) * m' / (sqrt(v') / sqrt(bc2) + eps)
 *         bc1 = 1 - beta1^t',  bc2 = 1 - beta2^t'
 *
 * The bias corrections are computed in the graph from the s32 step count
 * as bc = -expm1(t' * log(beta)) with log(beta) folded on the host in
 * double: 1 - beta^t in f32 directly would lose most of its digits for
 * beta2 = 0.999 (0.999 itself is off by 1.3e-5 relative to 1 - 0.999 in
 * f32). */
#include <math.h>

#include "hloscope/hs_train.h"

int hs_train_state_count(const hs_train_config *c, int n_params)
{
    return c->optimizer == HS_OPT_ADAM ? 2 * n_params + 1 : 0;
}

hs_shape hs_train_state_shape(const hs_train_config *c, int n_params,
                              const hs_shape *params, int k)
{
    (void)c;
    if (k == 2 * n_params)
        return hs_shape_scalar(HS_S32);
    const hs_shape *p = &params[k % (n_params > 0 ? n_params : 1)];
    return hs_shape_make(HS_F32, p->rank, p->dims);
}

static hs_instruction *fill_like(hs_builder *b, hs_instruction *scalar,
                                 const hs_instruction *x)
{
    if (!scalar || !x || x->shape.rank == 0)
        return scalar;
    hs_shape s = hs_shape_make(scalar->shape.dtype, x->shape.rank,
                               x->shape.dims);
    return hs_b_broadcast(b, scalar, &s, NULL, 0);
}

static void sgd(hs_builder *b, const hs_train_config *c, int n,
                hs_instruction *const *params, hs_instruction *const *grads,
                hs_instruction **new_params)
{
    hs_instruction *lr = hs_b_const_f32(b, (float)c->lr);
    for (int i = 0; i < n; i++) {
        hs_builder_push_scope(b, params[i] && params[i]->name ? params[i]->name
                                                              : "param");
        hs_instruction *step =
            hs_b_binary(b, HS_OP_MULTIPLY, grads[i], fill_like(b, lr, grads[i]));
        new_params[i] = hs_b_binary(b, HS_OP_SUBTRACT, params[i], step);
        hs_builder_pop_scope(b);
    }
}

/* 1 - beta^t for the f32 step count tf, as -expm1(tf * log(beta)). */
static hs_instruction *bias_correction(hs_builder *b, hs_instruction *tf,
                                       double beta)
{
    if (beta == 0.0)
        return hs_b_const_f32(b, 1.0f);
    hs_instruction *e = hs_b_unary(
        b, HS_OP_EXPM1,
        hs_b_binary(b, HS_OP_MULTIPLY, tf,
                    hs_b_const_f32(b, (float)log(beta))));
    return hs_b_unary(b, HS_OP_NEGATE, e);
}

static void adam(hs_builder *b, const hs_train_config *c, int n,
                 hs_instruction *const *params, hs_instruction *const *grads,
                 hs_instruction *const *state, hs_instruction **new_params,
                 hs_instruction **new_state)
{
    hs_instruction *t1 = hs_b_binary(b, HS_OP_ADD, state[2 * n],
                                     hs_b_const_s32(b, 1));
    new_state[2 * n] = t1;
    hs_instruction *tf = hs_b_convert(b, t1, HS_F32);
    hs_instruction *bc1 = bias_correction(b, tf, c->beta1);
    hs_instruction *bc2 = bias_correction(b, tf, c->beta2);
    /* Scalars shared by every parameter, as PyTorch computes them once;
     * each parameter only broadcasts them. */
    hs_instruction *step_size =
        hs_b_binary(b, HS_OP_DIVIDE, hs_b_const_f32(b, (float)c->lr), bc1);
    hs_instruction *bc2_sqrt = hs_b_unary(b, HS_OP_SQRT, bc2);
    hs_instruction *beta1 = hs_b_const_f32(b, (float)c->beta1);
    hs_instruction *one_m_beta1 = hs_b_const_f32(b, (float)(1.0 - c->beta1));
    hs_instruction *beta2 = hs_b_const_f32(b, (float)c->beta2);
    hs_instruction *one_m_beta2 = hs_b_const_f32(b, (float)(1.0 - c->beta2));
    hs_instruction *eps = hs_b_const_f32(b, (float)c->eps);
    for (int i = 0; i < n; i++) {
        hs_builder_push_scope(b, params[i] && params[i]->name ? params[i]->name
                                                              : "param");
        hs_instruction *g = grads[i];
#define MUL(x, s) hs_b_binary(b, HS_OP_MULTIPLY, x, fill_like(b, s, x))
        hs_instruction *m = hs_b_binary(b, HS_OP_ADD, MUL(state[i], beta1),
                                        MUL(g, one_m_beta1));
        hs_instruction *v = hs_b_binary(
            b, HS_OP_ADD, MUL(state[n + i], beta2),
            MUL(hs_b_binary(b, HS_OP_MULTIPLY, g, g), one_m_beta2));
        hs_instruction *denom = hs_b_binary(
            b, HS_OP_ADD,
            hs_b_binary(b, HS_OP_DIVIDE, hs_b_unary(b, HS_OP_SQRT, v),
                        fill_like(b, bc2_sqrt, v)),
            fill_like(b, eps, v));
        hs_instruction *upd =
            MUL(hs_b_binary(b, HS_OP_DIVIDE, m, denom), step_size);
#undef MUL
        new_params[i] = hs_b_binary(b, HS_OP_SUBTRACT, params[i], upd);
        new_state[i] = m;
        new_state[n + i] = v;
        hs_builder_pop_scope(b);
    }
}

void hs_train_optimizer_update(hs_builder *b, const hs_train_config *c,
                               int n_params, hs_instruction *const *params,
                               hs_instruction *const *grads,
                               hs_instruction *const *state,
                               hs_instruction **new_params,
                               hs_instruction **new_state)
{
    hs_builder_push_scope(b, "optimizer");
    switch (c->optimizer) {
    case HS_OPT_SGD:
        sgd(b, c, n_params, params, grads, new_params);
        break;
    case HS_OPT_ADAM:
        adam(b, c, n_params, params, grads, state, new_params, new_state);
        break;
    default:
        hs_builder_fail(b, HS_ERR_INVALID, "unknown optimizer %d",
                        (int)c->optimizer);
    }
    hs_builder_pop_scope(b);
}
