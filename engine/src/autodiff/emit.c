/* emit.c - builder shorthands the VJP rules share: constant fills, scalar
 * arithmetic, s32 index constants, instructions the builder has no function
 * for, and transposes that skip the identity. */
#include <string.h>

#include "autodiff/autodiff_internal.h"
#include "hloscope/hs_infer.h"

hs_instruction *hs__ad_fill(hs_builder *b, float v, const hs_shape *like)
{
    hs_instruction *c = hs_b_const_f32(b, v);
    if (!c || !like || like->rank == 0)
        return c;
    hs_shape s = hs_shape_make(HS_F32, like->rank, like->dims);
    return hs_b_broadcast(b, c, &s, NULL, 0);
}

hs_instruction *hs__ad_zeros(hs_builder *b, const hs_shape *like)
{
    return hs__ad_fill(b, 0.0f, like);
}

hs_instruction *hs__ad_scalar_op(hs_builder *b, hs_opcode op,
                                 hs_instruction *x, float c)
{
    if (!x)
        return NULL;
    return hs_b_binary(b, op, x, hs__ad_fill(b, c, &x->shape));
}

hs_instruction *hs__ad_bin(hs_builder *b, hs_opcode op, hs_instruction *x,
                           hs_instruction *y)
{
    return hs_b_binary(b, op, x, y);
}

void hs__ad_s32_consts(hs_builder *b, const int64_t *start, int n,
                       hs_instruction **out)
{
    for (int k = 0; k < n; k++)
        out[k] = hs_b_const_s32(b, (int32_t)start[k]);
}

hs_instruction *hs__ad_raw(hs_builder *b, hs_opcode op, const hs_shape *shape,
                           hs_instruction *const *ops, int n,
                           const int64_t *dims, int n_dims)
{
    if (!hs_builder_ok(b))
        return NULL;
    for (int k = 0; k < n; k++)
        if (!ops[k])
            return NULL;
    hs_instruction proto;
    memset(&proto, 0, sizeof proto);
    proto.opcode = op;
    proto.shape = *shape;
    proto.operands = (hs_instruction **)ops;
    proto.n_operands = n;
    proto.dims = (int64_t *)dims;
    proto.n_dims = n_dims;
    hs_shape inferred;
    hs_error e;
    hs_status st = hs_infer_shape(&proto, hs_builder_module(b)->arena,
                                  &inferred, &e);
    if (st != HS_OK) {
        hs_builder_fail(b, st, "%s", e.message);
        return NULL;
    }
    hs_instruction *i = hs_computation_add(hs_builder_computation(b), op,
                                           &inferred, ops, n, NULL);
    if (i && n_dims > 0)
        hs_instruction_set_dims(i, dims, n_dims);
    if (!i || (n_dims > 0 && i->n_dims != n_dims)) {
        hs_builder_fail(b, HS_ERR_NOMEM, "autodiff: out of host memory");
        return NULL;
    }
    const char *scope = hs_builder_scope(b);
    i->op_name = scope[0] ? scope : NULL;
    return i;
}

hs_instruction *hs__ad_transpose(hs_builder *b, hs_instruction *x,
                                 const int64_t *perm)
{
    if (!x)
        return NULL;
    for (int k = 0; k < x->shape.rank; k++)
        if (perm[k] != k)
            return hs_b_transpose(b, x, perm);
    return x;
}
