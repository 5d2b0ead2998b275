/* vjp_reduce.c - the VJP of reduce with a scalar reducer.
 *
 *     sum       the cotangent broadcast back over the reduced dimensions
 *               (and summed into an active init value)
 *     max, min  the cotangent goes to the elements equal to the result,
 *               split evenly between ties (as PyTorch's amax and JAX)
 *
 * A product reducer, a variadic reduce or an unknown reducer is an error
 * naming the instruction. */
#include "autodiff/autodiff_internal.h"

int hs__vjp_reducer_op(const hs_instruction *y)
{
    if (y->n_called < 1 || !y->called[0])
        return -1;
    const hs_computation *c = y->called[0];
    const hs_instruction *r = c->root;
    if (c->n_params != 2 || !r || r->n_operands != 2)
        return -1;
    bool plain = (r->operands[0] == c->params[0] &&
                  r->operands[1] == c->params[1]) ||
                 (r->operands[0] == c->params[1] &&
                  r->operands[1] == c->params[0]);
    return plain ? (int)r->opcode : -1;
}

/* Broadcasts r (x's shape without the reduced dimensions) back to x. */
static hs_instruction *broadcast_back(hs_builder *b, hs_instruction *r,
                                      const hs_instruction *y,
                                      const hs_instruction *x)
{
    bool reduced[HS_MAX_RANK] = {false};
    for (int k = 0; k < y->n_dims; k++)
        reduced[y->dims[k]] = true;
    int64_t dims[HS_MAX_RANK];
    int n = 0;
    for (int d = 0; d < x->shape.rank; d++)
        if (!reduced[d])
            dims[n++] = d;
    hs_shape s = hs_shape_make(r->shape.dtype, x->shape.rank, x->shape.dims);
    return hs_b_broadcast(b, r, &s, dims, n);
}

static void vjp_sum(hs_vjp *v, hs_instruction *y, hs_instruction *gy)
{
    hs_builder *b = hs__vjp_builder(v);
    hs_instruction *x = y->operands[0], *init = y->operands[1];
    if (hs__vjp_active(v, x))
        hs__vjp_acc(v, x, broadcast_back(b, gy, y, x));
    if (hs__vjp_active(v, init)) {
        /* init is added once per output element. */
        int64_t all[HS_MAX_RANK];
        for (int k = 0; k < gy->shape.rank; k++)
            all[k] = k;
        hs__vjp_acc(v, init,
                    gy->shape.rank ? hs_b_reduce_sum(b, gy, all, gy->shape.rank)
                                   : gy);
    }
}

static void vjp_extremum(hs_vjp *v, hs_instruction *y, hs_instruction *gy)
{
    hs_builder *b = hs__vjp_builder(v);
    hs_instruction *x = y->operands[0];
    if (hs__vjp_active(v, y->operands[1])) {
        hs__vjp_fail(v, y, HS_ERR_UNSUPPORTED,
                     "autodiff: the init value of a max/min reduce (%s) is "
                     "not differentiated",
                     y->name);
        return;
    }
    if (!hs__vjp_active(v, x))
        return;
    hs_instruction *hit =
        hs_b_compare(b, HS_DIR_EQ, x, broadcast_back(b, y, y, x));
    hs_instruction *ones = hs__ad_fill(b, 1.0f, &x->shape);
    hs_instruction *zeros = hs__ad_zeros(b, &x->shape);
    hs_instruction *count = hs_b_reduce_sum(b, hs_b_select(b, hit, ones, zeros),
                                            y->dims, y->n_dims);
    hs_instruction *share = hs__ad_bin(b, HS_OP_DIVIDE, gy, count);
    hs__vjp_acc(v, x, hs_b_select(b, hit, broadcast_back(b, share, y, x),
                                  zeros));
}

void hs__vjp_reduce(hs_vjp *v, hs_instruction *y)
{
    if (y->n_operands != 2 || y->shape.dtype == HS_TUPLE) {
        hs__vjp_fail(v, y, HS_ERR_UNSUPPORTED,
                     "autodiff: no gradient rule for a variadic reduce "
                     "(instruction %s)",
                     y->name);
        return;
    }
    hs_instruction *gy = hs__vjp_cotangent(v, y);
    switch (hs__vjp_reducer_op(y)) {
    case HS_OP_ADD:
        vjp_sum(v, y, gy);
        return;
    case HS_OP_MAXIMUM:
    case HS_OP_MINIMUM:
        vjp_extremum(v, y, gy);
        return;
    default:
        hs__vjp_fail(v, y, HS_ERR_UNSUPPORTED,
                     "autodiff: no gradient rule for reduce with reducer %s "
                     "(instruction %s); sum, max and min are differentiated",
                     y->n_called ? y->called[0]->name : "?", y->name);
    }
}
