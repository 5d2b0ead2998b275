/* emit.c - builder shorthands the VJP rules share: constant fills, scalar
 * arithmetic, s32 index constants, instructions the builder has no function
 * for (with text attributes and called computations), and transposes that
 * skip the identity. */
#include <stdio.h>
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

hs_instruction *hs__ad_emit_proto(hs_builder *b, const hs_instruction *proto)
{
    return emit_proto(b, proto);
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

/* Whether c is (p0: t[], p1: t[]) -> op(p0, p1) (compare: direction d). */
static bool is_scalar_comp(const hs_computation *c, hs_opcode op,
                           hs_direction d, hs_dtype t)
{
    const hs_instruction *r = c->root;
    if (c->n_params != 2 || c->n_instrs != 3 || !r || r->opcode != op ||
        r->n_operands != 2 || (op == HS_OP_COMPARE && r->direction != d))
        return false;
    for (int k = 0; k < 2; k++)
        if (!c->params[k] || c->params[k]->shape.dtype != t ||
            c->params[k]->shape.rank != 0 || r->operands[k] != c->params[k])
            return false;
    return true;
}

/* The module's computation (lhs: t[], rhs: t[]) -> op(lhs, rhs), made on
 * first use under the name base ("ge_F32", with a suffix when that name
 * is another computation's). */
hs_computation *hs__ad_scalar_comp(hs_builder *b, const char *base,
                                   hs_opcode op, hs_direction d, hs_dtype t)
{
    hs_module *m = hs_builder_module(b);
    char name[64];
    snprintf(name, sizeof name, "%s", base);
    hs_computation *c;
    for (int suffix = 1;; suffix++) {
        c = hs_module_find_computation(m, name);
        if (!c || is_scalar_comp(c, op, d, t))
            break;
        snprintf(name, sizeof name, "%s.%d", base, suffix);
    }
    if (c)
        return c;
    c = hs_module_add_computation(m, name, false);
    hs_shape s = hs_shape_scalar(t);
    hs_instruction *p[2] = {NULL, NULL};
    for (int k = 0; c && k < 2; k++) {
        char pn[32];
        snprintf(pn, sizeof pn, "%s.%d", k ? "rhs" : "lhs", m->next_id);
        p[k] = hs_computation_add_parameter(c, k, &s, pn);
    }
    hs_shape rs = op == HS_OP_COMPARE ? hs_shape_scalar(HS_PRED) : s;
    hs_instruction *r = p[0] && p[1] ? hs_computation_add(c, op, &rs, p, 2,
                                                          NULL)
                                     : NULL;
    if (!r) {
        hs_builder_fail(b, HS_ERR_NOMEM, "autodiff: out of host memory");
        return NULL;
    }
    r->direction = d;
    c->root = r;
    return c;
}
