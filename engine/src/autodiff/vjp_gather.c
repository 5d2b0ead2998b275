/* vjp_gather.c - the VJP rule of gather, the transpose of gather under
 * the same dimension numbers (as JAX writes it, jax/_src/lax/slicing.py):
 *
 *     gather(x, i)            dx = scatter-add(zeros, i', g): the
 *                             cotangent added back where each slice came
 *                             from. i' is i clamped as the gather clamped
 *                             it, so that the scatter (which skips out of
 *                             range windows) adds where the gather read.
 *
 * Scatter's rules are in vjp_scatter.c; both share the bound past which
 * a window does not fit (hs__ad_index_upper). The indices are integers
 * and get no cotangent. */
#include <stdio.h>
#include <string.h>

#include "autodiff/autodiff_internal.h"

hs_instruction *hs__ad_index_upper(hs_builder *b, hs_instruction *i,
                                   const hs_gather_dims *d,
                                   const hs_shape *x)
{
    int n = d->n_start_index_map;
    hs_instruction *hi[HS_MAX_RANK];
    int64_t one = 1;
    for (int k = 0; k < n; k++) {
        int64_t dim = d->start_index_map[k];
        hi[k] = hs_b_reshape(b, hs_b_const_s32(b, (int32_t)(
                                    x->dims[dim] - d->slice_sizes[dim])),
                             1, &one);
    }
    hs_instruction *bounds = n == 1 ? hi[0] : hs_b_concatenate(b, hi, n, 0);
    if (!bounds || !i)
        return NULL;
    if (i->shape.dtype != HS_S32)
        bounds = hs_b_convert(b, bounds, i->shape.dtype);
    int64_t ivd = d->index_vector_dim;
    if (ivd < i->shape.rank)
        return hs_b_broadcast(b, bounds, &i->shape, &ivd, 1);
    /* implicit index vector: one component, a scalar bound */
    hs_instruction *s = hs_b_reshape(b, bounds, 0, NULL);
    return hs_b_broadcast(b, s, &i->shape, NULL, 0);
}

/* i clamped per component of its index vector to [0, operand size -
 * slice size] along the operand dimension that component indexes: gather's
 * own clamping, made explicit. */
static hs_instruction *clamp_indices(hs_builder *b, hs_instruction *i,
                                     const hs_gather_dims *d,
                                     const hs_shape *x)
{
    hs_instruction *hi_b = hs__ad_index_upper(b, i, d, x);
    if (!hi_b)
        return NULL;
    hs_instruction *zero = hs_b_const_s32(b, 0);
    if (zero && i->shape.dtype != HS_S32)
        zero = hs_b_convert(b, zero, i->shape.dtype);
    hs_instruction *lo_b = hs_b_broadcast(b, zero, &i->shape, NULL, 0);
    hs_instruction *ops[3] = {lo_b, i, hi_b};
    return hs__ad_raw(b, HS_OP_CLAMP, &i->shape, ops, 3, NULL, 0);
}

static hs_computation *add_comp(hs_builder *b, hs_dtype t)
{
    char name[32];
    snprintf(name, sizeof name, "add_%s", hs_dtype_name(t));
    return hs__ad_scalar_comp(b, name, HS_OP_ADD, HS_DIR_NONE, t);
}

void hs__vjp_gather(hs_vjp *v, hs_instruction *y)
{
    hs_builder *b = hs__vjp_builder(v);
    hs_instruction *x = y->operands[0], *i = y->operands[1];
    if (!hs__vjp_active(v, x))
        return;
    hs_gather_dims d;
    hs_error e;
    if (hs_instruction_gather(y, &d, &e) != HS_OK) {
        hs__vjp_fail(v, y, e.status, "autodiff: %s", e.message);
        return;
    }
    hs_instruction *g = hs__vjp_cotangent(v, y);
    hs_dtype t = g ? g->shape.dtype : x->shape.dtype;
    hs_instruction *zeros = hs__ad_zeros(b, &x->shape);
    if (zeros && t != HS_F32)
        zeros = hs_b_convert(b, zeros, t);
    hs_attr attrs[HS_GATHER_MAX_ATTRS];
    int n_attrs = hs_scatter_attrs(&d, hs_builder_module(b)->arena, attrs);
    hs_computation *add = add_comp(b, t);
    if (n_attrs < 0 || !add) {
        hs__vjp_fail(v, y, HS_ERR_NOMEM, "autodiff: out of host memory");
        return;
    }
    hs_instruction *ops[3] = {zeros, clamp_indices(b, i, &d, &x->shape), g};
    hs__vjp_acc(v, x, hs__ad_emit(b, HS_OP_SCATTER, ops, 3, &add, 1, attrs,
                                  n_attrs));
}
