/* emit.c - builder shorthands the VJP rules share: constant fills, scalar
 * arithmetic, s32 index constants, instructions the builder has no function
 * for (with text attributes and called computations), and transposes that
 * skip the identity. */
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

/* Appends the instruction that proto describes (its shape inferred; dims,
 * text attributes and called computations copied, the latter moved
 * before the builder's computation). */
static hs_instruction *emit_proto(hs_builder *b, const hs_instruction *proto)
{
    if (!hs_builder_ok(b))
        return NULL;
    for (int k = 0; k < proto->n_operands; k++)
        if (!proto->operands[k])
            return NULL;
    hs_shape inferred;
    hs_error e;
    hs_module *m = hs_builder_module(b);
    hs_status st = hs_infer_shape(proto, m->arena, &inferred, &e);
    if (st != HS_OK) {
        hs_builder_fail(b, st, "%s", e.message);
        return NULL;
    }
    hs_computation *c = hs_builder_computation(b);
    bool ok = true;
    for (int k = 0; k < proto->n_called; k++)
        ok = ok && hs_module_move_computation_before(m, proto->called[k],
                                                     c) == HS_OK;
    hs_instruction *i = ok ? hs_computation_add(c, proto->opcode, &inferred,
                                                proto->operands,
                                                proto->n_operands, NULL)
                           : NULL;
    if (i && proto->n_dims > 0)
        hs_instruction_set_dims(i, proto->dims, proto->n_dims);
    for (int k = 0; i && k < proto->n_extra; k++)
        hs_instruction_add_extra(i, proto->extra[k].key,
                                 proto->extra[k].value);
    if (i && proto->n_called > 0)
        hs_instruction_set_called(i, proto->called, proto->n_called);
    if (!i || i->n_dims != proto->n_dims || i->n_extra != proto->n_extra ||
        i->n_called != proto->n_called) {
        hs_builder_fail(b, HS_ERR_NOMEM, "autodiff: out of host memory");
        return NULL;
    }
    const char *scope = hs_builder_scope(b);
    i->op_name = scope[0] ? scope : NULL;
    return i;
}

hs_instruction *hs__ad_raw(hs_builder *b, hs_opcode op, const hs_shape *shape,
                           hs_instruction *const *ops, int n,
                           const int64_t *dims, int n_dims)
{
    hs_instruction proto;
    memset(&proto, 0, sizeof proto);
    proto.opcode = op;
    proto.shape = *shape;
    proto.operands = (hs_instruction **)ops;
    proto.n_operands = n;
    proto.dims = (int64_t *)dims;
    proto.n_dims = n_dims;
    return emit_proto(b, &proto);
}

hs_instruction *hs__ad_emit(hs_builder *b, hs_opcode op,
                            hs_instruction *const *ops, int n,
                            hs_computation *const *called, int n_called,
                            const hs_attr *attrs, int n_attrs)
{
    hs_instruction proto;
    memset(&proto, 0, sizeof proto);
    proto.opcode = op;
    proto.name = hs_opcode_name(op);
    proto.operands = (hs_instruction **)ops;
    proto.n_operands = n;
    proto.called = (hs_computation **)called;
    proto.n_called = n_called;
    proto.extra = (hs_attr *)attrs;
    proto.n_extra = n_attrs;
    return emit_proto(b, &proto);
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
