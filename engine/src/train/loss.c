/* loss.c - the losses a training step can minimise, as builder ops that
 * produce an f32 scalar:
 *
 *     mse            sum((out - target)^2) / elements      (F.mse_loss)
 *     cross_entropy  sum(lse(z) - z[target]) / rows         (F.cross_entropy)
 *                    with z = logits - max(logits) per row, so exp never
 *                    overflows (a numerically stable log-softmax)
 *
 * Means divide by the element count (exact in f32 below 2^24) rather than
 * multiplying by its reciprocal, as PyTorch does. */
#include "hloscope/hs_train.h"

static hs_instruction *sum_all(hs_builder *b, hs_instruction *x)
{
    if (!x || x->shape.rank == 0)
        return x;
    int64_t all[HS_MAX_RANK];
    for (int k = 0; k < x->shape.rank; k++)
        all[k] = k;
    return hs_b_reduce_sum(b, x, all, x->shape.rank);
}

static hs_instruction *mean_of_sum(hs_builder *b, hs_instruction *sum,
                                   int64_t count)
{
    return hs_b_binary(b, HS_OP_DIVIDE, sum,
                       hs_b_const_f32(b, (float)(count > 0 ? count : 1)));
}

hs_instruction *hs_train_mse(hs_builder *b, hs_instruction *out,
                             hs_instruction *target)
{
    if (!out || !target)
        return NULL;
    hs_builder_push_scope(b, "loss");
    hs_instruction *d = hs_b_binary(b, HS_OP_SUBTRACT, out, target);
    hs_instruction *loss =
        mean_of_sum(b, sum_all(b, hs_b_binary(b, HS_OP_MULTIPLY, d, d)),
                    hs_shape_elements(&out->shape));
    hs_builder_pop_scope(b);
    return loss;
}

/* Broadcasts r (x without its last axis) back along the last axis. */
static hs_instruction *along_last(hs_builder *b, hs_instruction *r,
                                  const hs_instruction *x)
{
    if (!r)
        return NULL;
    int64_t dims[HS_MAX_RANK];
    for (int k = 0; k + 1 < x->shape.rank; k++)
        dims[k] = k;
    hs_shape s = hs_shape_make(r->shape.dtype, x->shape.rank, x->shape.dims);
    return hs_b_broadcast(b, r, &s, dims, x->shape.rank - 1);
}

hs_instruction *hs_train_cross_entropy(hs_builder *b, hs_instruction *logits,
                                       hs_instruction *target)
{
    if (!logits || !target)
        return NULL;
    const hs_shape *ls = &logits->shape, *ts = &target->shape;
    int r = ls->rank;
    bool ok = ls->dtype == HS_F32 && r >= 1 && ts->dtype == HS_S32 &&
              ts->rank == r - 1;
    for (int k = 0; ok && k < r - 1; k++)
        ok = ts->dims[k] == ls->dims[k];
    if (!ok) {
        char a[128], c[128];
        hs_shape_print(ls, false, a, sizeof a);
        hs_shape_print(ts, false, c, sizeof c);
        hs_builder_fail(b, HS_ERR_SHAPE,
                        "cross_entropy: needs f32 logits [..., classes] and "
                        "s32 class indices [...], got %s and %s",
                        a, c);
        return NULL;
    }
    hs_builder_push_scope(b, "loss");
    int64_t last = r - 1;
    hs_instruction *z = hs_b_binary(
        b, HS_OP_SUBTRACT, logits,
        along_last(b, hs_b_reduce_max(b, logits, &last, 1), logits));
    hs_instruction *lse = hs_b_unary(
        b, HS_OP_LOG,
        hs_b_reduce_sum(b, hs_b_unary(b, HS_OP_EXP, z), &last, 1));
    /* z[..., target] as a masked sum: iota over the classes == target. */
    hs_shape is = hs_shape_make(HS_S32, r, ls->dims);
    hs_instruction *hit =
        hs_b_compare(b, HS_DIR_EQ, hs_b_iota(b, &is, last),
                     along_last(b, target, logits));
    hs_instruction *zero = hs_b_broadcast(b, hs_b_const_f32(b, 0.0f), ls,
                                          NULL, 0);
    hs_instruction *picked =
        hs_b_reduce_sum(b, hs_b_select(b, hit, z, zero), &last, 1);
    hs_instruction *nll = hs_b_binary(b, HS_OP_SUBTRACT, lse, picked);
    hs_instruction *loss =
        mean_of_sum(b, sum_all(b, nll), hs_shape_elements(ts));
    hs_builder_pop_scope(b);
    return loss;
}

hs_instruction *hs_train_loss(hs_builder *b, hs_loss loss, hs_instruction *out,
                              hs_instruction *target)
{
    switch (loss) {
    case HS_LOSS_MSE:
        return hs_train_mse(b, out, target);
    case HS_LOSS_CROSS_ENTROPY:
        return hs_train_cross_entropy(b, out, target);
    }
    hs_builder_fail(b, HS_ERR_INVALID, "unknown loss %d", (int)loss);
    return NULL;
}
