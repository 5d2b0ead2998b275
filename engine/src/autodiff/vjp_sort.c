/* vjp_sort.c - the VJP rule of sort (any number of operands, any
 * comparator), as JAX differentiates lax.sort (jax/_src/lax/lax.py,
 * _sort_jvp): sort an iota alongside the operands, with the same
 * comparator, to learn the permutation perm of every row, then hand each
 * sorted operand's cotangent back to where its elements came from:
 *
 *     y_k[..., j, ...] = x_k[..., perm[j], ...]  (along dimensions={d})
 *     dx_k             = scatter(zeros, perm, g_k) along d, batched over
 *                        every other dimension
 *
 * (the transpose of JAX's gather of the tangent by perm). The iota sort
 * runs the forward sort's kernel on the same keys, so it finds the
 * forward's permutation, ties included. Also here: that scatter along one
 * dimension, which topk's rule (vjp_topk.c) shares. */
#include <stdio.h>
#include <string.h>

#include "autodiff/autodiff_internal.h"

hs_instruction *hs__ad_scatter_along(hs_builder *b, const hs_shape *x,
                                     int dim, hs_instruction *idx,
                                     hs_instruction *g)
{
    if (!idx || !g || !hs_builder_ok(b))
        return NULL;
    if (x->rank == 0)
        return g; /* a sort of a scalar moves nothing */
    hs_dtype t = g->shape.dtype;
    hs_instruction *zeros = hs__ad_zeros(b, x);
    if (zeros && t != HS_F32)
        zeros = hs_b_convert(b, zeros, t);
    /* update_window_dims={}, inserted_window_dims={dim},
     * scatter_dims_to_operand_dims={dim}, every other dimension a batching
     * dimension of the operand and of the indices, index_vector_dim=rank
     * (one index a position) */
    hs_gather_dims d;
    memset(&d, 0, sizeof d);
    d.n_collapsed = d.n_start_index_map = 1;
    d.collapsed[0] = d.start_index_map[0] = dim;
    for (int k = 0; k < x->rank; k++)
        if (k != dim) {
            d.operand_batching[d.n_operand_batching++] = k;
            d.indices_batching[d.n_indices_batching++] = k;
        }
    d.index_vector_dim = x->rank;
    hs_attr attrs[HS_GATHER_MAX_ATTRS];
    int n_attrs = hs_scatter_attrs(&d, hs_builder_module(b)->arena, attrs);
    char name[32];
    snprintf(name, sizeof name, "add_%s", hs_dtype_name(t));
    hs_computation *add =
        hs__ad_scalar_comp(b, name, HS_OP_ADD, HS_DIR_NONE, t);
    if (n_attrs < 0 || !add) {
        hs_builder_fail(b, HS_ERR_NOMEM, "autodiff: out of host memory");
        return NULL;
    }
    hs_instruction *ops[3] = {zeros, idx, g};
    return hs__ad_emit(b, HS_OP_SCATTER, ops, 3, &add, 1, attrs, n_attrs);
}

/* A copy of comparator c with two more parameters, s32 scalars 2n and
 * 2n + 1, that it ignores: the comparator of the iota sort. */
static hs_computation *with_iota_params(hs_builder *b,
                                        const hs_computation *c)
{
    hs_module *m = hs_builder_module(b);
    char name[96];
    snprintf(name, sizeof name, "%s.with_iota", c->name);
    for (int suffix = 1; hs_module_find_computation(m, name); suffix++)
        snprintf(name, sizeof name, "%s.with_iota.%d", c->name, suffix);
    hs_computation *d = hs_module_add_computation(m, name, false);
    hs_instruction **map = d ? hs_arena_alloc(m->arena, sizeof *map *
                                              (size_t)(c->n_instrs + 1))
                             : NULL;
    if (!map)
        goto oom;
    for (int k = 0; k < c->n_params + 2; k++) {
        hs_shape s = k < c->n_params ? c->params[k]->shape
                                     : hs_shape_scalar(HS_S32);
        char pn[48];
        snprintf(pn, sizeof pn, "p%d.%d", k, m->next_id);
        hs_instruction *p = hs_computation_add_parameter(d, k, &s, pn);
        if (!p)
            goto oom;
    }
    for (int j = 0; j < c->n_instrs; j++) {
        const hs_instruction *s = c->instrs[j];
        if (s->opcode == HS_OP_PARAMETER) {
            map[j] = d->params[s->index];
            continue;
        }
        hs_instruction *ops[16], **opv = ops;
        if (s->n_operands > 16 &&
            !(opv = hs_arena_alloc(m->arena, sizeof *opv *
                                   (size_t)s->n_operands)))
            goto oom;
        for (int o = 0; o < s->n_operands; o++) {
            /* operands come before their users: find each one's copy */
            int at = -1;
            for (int q = 0; q < j && at < 0; q++)
                if (c->instrs[q] == s->operands[o])
                    at = q;
            if (at < 0) {
                hs_builder_fail(b, HS_ERR_INVALID, "autodiff: comparator %s "
                                "uses %s before defining it", c->name,
                                s->operands[o]->name);
                return NULL;
            }
            opv[o] = map[at];
        }
        map[j] = hs_computation_add(d, s->opcode, &s->shape, opv,
                                    s->n_operands, NULL);
        if (!map[j] || !hs_instruction_copy_attributes(map[j], s))
            goto oom;
        if (s->n_called)
            hs_instruction_set_called(map[j], s->called, s->n_called);
        if (s == c->root)
            d->root = map[j];
    }
    if (d->root)
        return d;
    hs_builder_fail(b, HS_ERR_INVALID, "autodiff: comparator %s has no root",
                    c->name);
    return NULL;
oom:
    hs_builder_fail(b, HS_ERR_NOMEM, "autodiff: out of host memory");
    return NULL;
}

void hs__vjp_sort(hs_vjp *v, hs_instruction *y)
{
    hs_builder *b = hs__vjp_builder(v);
    int n = y->n_operands;
    hs_instruction *g[HS_MAX_RANK];
    bool any = false;
    if (n > HS_MAX_RANK || y->n_dims != 1 || y->n_called != 1) {
        hs__vjp_fail(v, y, HS_ERR_UNSUPPORTED, "autodiff: no gradient rule "
                     "for a sort of %d operands (instruction %s%s%s)", n,
                     y->name, OP_NAME(y));
        return;
    }
    for (int k = 0; k < n; k++) {
        g[k] = NULL;
        if (hs__vjp_active(v, y->operands[k]))
            g[k] = n == 1 ? hs__vjp_cotangent(v, y)
                          : hs__vjp_cotangent_elem(v, y, k);
        any |= g[k] != NULL;
    }
    const hs_shape *x = &y->operands[0]->shape;
    if (!any)
        return;
    if (x->rank == 0) { /* nothing moves */
        for (int k = 0; k < n; k++)
            hs__vjp_acc(v, y->operands[k], g[k]);
        return;
    }
    int dim = (int)y->dims[0];
    hs_shape is = hs_shape_make(HS_S32, x->rank, x->dims);
    hs_instruction *ops[HS_MAX_RANK + 1];
    memcpy(ops, y->operands, sizeof *ops * (size_t)n);
    ops[n] = hs_b_iota(b, &is, dim);
    hs_computation *cmp = with_iota_params(b, y->called[0]);
    if (!cmp || !ops[n])
        return;
    hs_instruction proto;
    memset(&proto, 0, sizeof proto);
    proto.opcode = HS_OP_SORT;
    proto.name = y->name;
    proto.operands = ops;
    proto.n_operands = n + 1;
    proto.n_dims = 1;
    proto.dims = y->dims;
    proto.called = &cmp;
    proto.n_called = 1;
    proto.extra = y->extra; /* is_stable= as the forward sort has it */
    proto.n_extra = y->n_extra;
    hs_instruction *sorted = hs__ad_emit_proto(b, &proto);
    hs_instruction *perm = sorted ? hs_b_get_tuple_element(b, sorted, n)
                                  : NULL;
    for (int k = 0; k < n; k++)
        if (g[k])
            hs__vjp_acc(v, y->operands[k],
                        hs__ad_scatter_along(b, x, dim, perm, g[k]));
}
