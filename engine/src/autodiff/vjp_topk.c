/* vjp_topk.c - the VJP rule of topk(x), k=K and of the TopK custom-call
 * (torch.topk's backward, and what JAX's lax.top_k transposes to):
 *
 *     (values, indices) = topk(x)   along x's last dimension
 *     dx = scatter(zeros, indices, g_values) along the last dimension,
 *          batched over the others
 *
 * The indices are integers and get no cotangent. */
#include <string.h>

#include "autodiff/autodiff_internal.h"

void hs__vjp_topk(hs_vjp *v, hs_instruction *y)
{
    hs_instruction *x = y->n_operands == 1 ? y->operands[0] : NULL;
    const hs_shape *s = &y->shape;
    if (!x || x->shape.rank < 1 || s->dtype != HS_TUPLE || s->n_elems != 2 ||
        s->elems[1].dtype != HS_S32 || s->elems[1].rank != x->shape.rank) {
        hs__vjp_fail(v, y, HS_ERR_UNSUPPORTED,
                     "autodiff: no gradient rule for a top-k that is not "
                     "(values, s32 indices) of one operand of rank >= 1 "
                     "(instruction %s%s%s)", y->name, OP_NAME(y));
        return;
    }
    if (!hs__vjp_active(v, x))
        return;
    hs_instruction *g = hs__vjp_cotangent_elem(v, y, 0);
    if (!g)
        return;
    hs_builder *b = hs__vjp_builder(v);
    hs_instruction *idx = hs_b_get_tuple_element(b, y, 1);
    hs__vjp_acc(v, x, hs__ad_scatter_along(b, &x->shape, x->shape.rank - 1,
                                           idx, g));
}
