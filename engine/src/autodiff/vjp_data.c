/* vjp_data.c - VJP rules of data movement. Each is the transpose of a
 * linear map:
 *
 *     broadcast             reduce-sum over the added dimensions
 *     reshape, bitcast      reshape back
 *     transpose(perm)       transpose by the inverse permutation
 *     slice                 scatter into zeros: dynamic-update-slice at the
 *                           start (strides interleave zeros first)
 *     concatenate           one slice per operand
 *     reverse               reverse the same dimensions
 *     dynamic-slice         dynamic-update-slice into zeros
 *     dynamic-update-slice  operand: the cotangent with the window zeroed;
 *                           update: the window, dynamic-sliced
 */
#include <string.h>

#include "autodiff/autodiff_internal.h"

void hs__vjp_identity(hs_vjp *v, hs_instruction *y)
{
    hs__vjp_acc(v, y->operands[0], hs__vjp_cotangent(v, y));
}

void hs__vjp_broadcast(hs_vjp *v, hs_instruction *y)
{
    hs_builder *b = hs__vjp_builder(v);
    hs_instruction *x = y->operands[0], *g = hs__vjp_cotangent(v, y);
    bool kept[HS_MAX_RANK] = {false};
    for (int k = 0; k < y->n_dims; k++)
        kept[y->dims[k]] = true;
    int64_t added[HS_MAX_RANK];
    int n_added = 0;
    for (int d = 0; d < y->shape.rank; d++)
        if (!kept[d])
            added[n_added++] = d;
    if (n_added > 0)
        g = hs_b_reduce_sum(b, g, added, n_added);
    /* The sum keeps the surviving dimensions in output order; operand
     * dimension k is the one at the rank of dims[k] among them. */
    int64_t perm[HS_MAX_RANK];
    for (int k = 0; k < y->n_dims; k++) {
        int r = 0;
        for (int j = 0; j < y->n_dims; j++)
            r += y->dims[j] < y->dims[k];
        perm[k] = r;
    }
    hs__vjp_acc(v, x, hs__ad_transpose(b, g, perm));
}

void hs__vjp_reshape(hs_vjp *v, hs_instruction *y)
{
    hs_instruction *x = y->operands[0], *g = hs__vjp_cotangent(v, y);
    hs__vjp_acc(v, x, hs_b_reshape(hs__vjp_builder(v), g, x->shape.rank,
                                   x->shape.dims));
}

void hs__vjp_transpose(hs_vjp *v, hs_instruction *y)
{
    int64_t inv[HS_MAX_RANK];
    for (int k = 0; k < y->n_dims; k++)
        inv[y->dims[k]] = k;
    hs__vjp_acc(v, y->operands[0],
                hs__ad_transpose(hs__vjp_builder(v), hs__vjp_cotangent(v, y),
                                 inv));
}

/* Spreads g along dimension d by stride s: element i moves to i*s and zeros
 * fill the gaps; the result has (n-1)*s + 1 elements along d. */
static hs_instruction *interleave_zeros(hs_builder *b, hs_instruction *g,
                                        int d, int64_t s)
{
    if (!g)
        return NULL;
    const hs_shape *gs = &g->shape;
    int rank = gs->rank;
    if (rank + 1 > HS_MAX_RANK) {
        hs_builder_fail(b, HS_ERR_UNSUPPORTED,
                        "autodiff: a strided slice of rank %d (the gradient "
                        "needs rank %d)",
                        rank, rank + 1);
        return NULL;
    }
    int64_t n = gs->dims[d];
    int64_t wide[HS_MAX_RANK];
    for (int k = 0, j = 0; k < rank; k++) {
        wide[j++] = gs->dims[k];
        if (k == d)
            wide[j++] = 1;
    }
    hs_instruction *col = hs_b_reshape(b, g, rank + 1, wide);
    wide[d + 1] = s - 1;
    hs_shape zs = hs_shape_make(HS_F32, rank + 1, wide);
    hs_instruction *parts[2] = {col, hs__ad_zeros(b, &zs)};
    hs_instruction *spread = hs_b_concatenate(b, parts, 2, d + 1);
    int64_t flat[HS_MAX_RANK];
    memcpy(flat, gs->dims, sizeof flat);
    flat[d] = n * s;
    hs_instruction *r = hs_b_reshape(b, spread, rank, flat);
    int64_t start[HS_MAX_RANK] = {0}, limit[HS_MAX_RANK];
    memcpy(limit, flat, sizeof limit);
    limit[d] = (n - 1) * s + 1;
    return hs_b_slice(b, r, start, limit, NULL);
}

void hs__vjp_slice(hs_vjp *v, hs_instruction *y)
{
    hs_builder *b = hs__vjp_builder(v);
    hs_instruction *x = y->operands[0], *g = hs__vjp_cotangent(v, y);
    const hs_slice_dims *sd = y->slice;
    if (hs_shape_compatible(&x->shape, &y->shape)) {
        hs__vjp_acc(v, x, g); /* the whole operand */
        return;
    }
    for (int d = 0; d < sd->rank; d++)
        if (sd->stride[d] > 1 && y->shape.dims[d] > 1)
            g = interleave_zeros(b, g, d, sd->stride[d]);
    hs_instruction *starts[HS_MAX_RANK];
    hs__ad_s32_consts(b, sd->start, sd->rank, starts);
    hs__vjp_acc(v, x,
                hs_b_dynamic_update_slice(b, hs__ad_zeros(b, &x->shape), g,
                                          starts));
}

void hs__vjp_concatenate(hs_vjp *v, hs_instruction *y)
{
    hs_builder *b = hs__vjp_builder(v);
    hs_instruction *g = hs__vjp_cotangent(v, y);
    int64_t d = y->dims[0], off = 0;
    int rank = y->shape.rank;
    for (int k = 0; k < y->n_operands; k++) {
        hs_instruction *x = y->operands[k];
        int64_t size = x->shape.dims[d];
        if (hs__vjp_active(v, x)) {
            int64_t start[HS_MAX_RANK] = {0}, limit[HS_MAX_RANK];
            memcpy(limit, y->shape.dims, sizeof(int64_t) * (size_t)rank);
            start[d] = off;
            limit[d] = off + size;
            hs__vjp_acc(v, x, hs_b_slice(b, g, start, limit, NULL));
        }
        off += size;
    }
}

void hs__vjp_reverse(hs_vjp *v, hs_instruction *y)
{
    hs_instruction *g = hs__vjp_cotangent(v, y);
    hs__vjp_acc(v, y->operands[0],
                hs__ad_raw(hs__vjp_builder(v), HS_OP_REVERSE, &g->shape, &g, 1,
                           y->dims, y->n_dims));
}

void hs__vjp_dynamic_slice(hs_vjp *v, hs_instruction *y)
{
    hs_builder *b = hs__vjp_builder(v);
    hs_instruction *x = y->operands[0], *g = hs__vjp_cotangent(v, y);
    hs__vjp_acc(v, x,
                hs_b_dynamic_update_slice(b, hs__ad_zeros(b, &x->shape), g,
                                          y->operands + 1));
}

void hs__vjp_dynamic_update_slice(hs_vjp *v, hs_instruction *y)
{
    hs_builder *b = hs__vjp_builder(v);
    hs_instruction *x = y->operands[0], *u = y->operands[1];
    hs_instruction *g = hs__vjp_cotangent(v, y);
    hs_instruction *const *starts = y->operands + 2;
    if (hs__vjp_active(v, x))
        hs__vjp_acc(v, x,
                    hs_b_dynamic_update_slice(b, g, hs__ad_zeros(b, &u->shape),
                                              starts));
    if (hs__vjp_active(v, u))
        hs__vjp_acc(v, u, hs_b_dynamic_slice(b, g, starts, u->shape.dims));
}
