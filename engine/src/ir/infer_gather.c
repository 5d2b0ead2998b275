/* infer_gather.c - shape rules of gather and scatter, after XLA's
 * ShapeInference::InferGatherShape and InferScatterShape.
 *
 *   gather(operand, start_indices)   batch dimensions (the indices'
 *       dimensions but index_vector_dim, in order) interleaved with the
 *       offset dimensions (slice_sizes of the operand dimensions neither
 *       collapsed nor batching) at the positions offset_dims names.
 *   scatter(operands..., indices, updates...)   the operands' shapes (a
 *       tuple when there are several); the updates are the shape the
 *       gather of the same dimension numbers would have, with window
 *       sizes that fit the operand.
 *
 * The dimension numbers are read by ir/gather_dims.c. */
#include <string.h>

#include "ir/infer_internal.h"

/* The index vector's dimensions of an indices array: index_vector_dim ==
 * rank means an implicit trailing dimension of size 1. */
static int64_t index_vector_size(const hs_shape *idx, int64_t ivd)
{
    return ivd < idx->rank ? idx->dims[ivd] : 1;
}

static hs_status check_sorted(const hs_instruction *i, const char *what,
                              const int64_t *v, int n, int bound,
                              const hs_shape *of, hs_error *err)
{
    bool used[HS_MAX_RANK + 1] = {false};
    hs_status st = hs__check_dim_list(i, what, v, n, bound, of, used, err);
    if (st)
        return st;
    for (int k = 1; k < n; k++)
        if (v[k] < v[k - 1])
            return fail(err, "%s: %ss must be sorted, got %lld before %lld",
                        hs_opcode_name(i->opcode), what,
                        (long long)v[k - 1], (long long)v[k]);
    return HS_OK;
}

/* Checks what gather and scatter share: the indices' type and
 * index_vector_dim, start_index_map, the batching dimensions, and that
 * offset + collapsed + batching dimensions partition the operand's. */
static hs_status check_common(const hs_instruction *i, const hs_shape *x,
                              const hs_shape *idx, const hs_gather_dims *d,
                              const char *const names[3], hs_error *err)
{
    const char *op = hs_opcode_name(i->opcode);
    if (!is_integer(idx->dtype))
        return fail(err, "%s: indices must be integers, got %s", op,
                    SHAPE_TEXT(idx));
    if (d->index_vector_dim > idx->rank)
        return fail(err, "%s: index_vector_dim %lld is out of range for "
                         "indices %s", op, (long long)d->index_vector_dim,
                    SHAPE_TEXT(idx));
    if (index_vector_size(idx, d->index_vector_dim) != d->n_start_index_map)
        return fail(err, "%s: the index vector has %lld components but %s "
                         "lists %d", op,
                    (long long)index_vector_size(idx, d->index_vector_dim),
                    names[1], d->n_start_index_map);
    bool used[HS_MAX_RANK] = {false}, batch_used[HS_MAX_RANK] = {false};
    hs_status st = hs__check_dim_list(i, names[0], d->collapsed,
                                      d->n_collapsed, x->rank, x, used, err);
    if (!st)
        st = hs__check_dim_list(i, "operand batching dimension",
                                d->operand_batching, d->n_operand_batching,
                                x->rank, x, used, err);
    if (st)
        return st;
    bool mapped[HS_MAX_RANK] = {false};
    if ((st = hs__check_dim_list(i, names[1], d->start_index_map,
                                 d->n_start_index_map, x->rank, x, mapped,
                                 err)))
        return st;
    for (int k = 0; k < d->n_start_index_map; k++)
        for (int j = 0; j < d->n_operand_batching; j++)
            if (d->start_index_map[k] == d->operand_batching[j])
                return fail(err, "%s: dimension %lld is both indexed and a "
                                 "batching dimension", op,
                            (long long)d->operand_batching[j]);
    if (d->n_offset + d->n_collapsed + d->n_operand_batching != x->rank)
        return fail(err, "%s: %d %ss + %d %ss + %d batching dimensions do "
                         "not make the operand's rank %d", op, d->n_offset,
                    names[2], d->n_collapsed, names[0],
                    d->n_operand_batching, x->rank);
    if (d->n_indices_batching != d->n_operand_batching)
        return fail(err, "%s: %d operand batching dimensions but %d indices "
                         "batching dimensions", op, d->n_operand_batching,
                    d->n_indices_batching);
    if ((st = hs__check_dim_list(i, "indices batching dimension",
                                 d->indices_batching, d->n_indices_batching,
                                 idx->rank, idx, batch_used, err)))
        return st;
    for (int k = 0; k < d->n_indices_batching; k++) {
        int64_t id = d->indices_batching[k], od = d->operand_batching[k];
        if (id == d->index_vector_dim)
            return fail(err, "%s: index_vector_dim %lld cannot be a batching "
                             "dimension", op, (long long)id);
        if (idx->dims[id] != x->dims[od])
            return fail(err, "%s: batching dimension %lld of the indices has "
                             "size %lld but operand dimension %lld has %lld",
                        op, (long long)id, (long long)idx->dims[id],
                        (long long)od, (long long)x->dims[od]);
    }
    return HS_OK;
}

hs_status hs__infer_gather(const hs_instruction *i, hs_arena *a,
                           hs_shape *out, hs_error *err)
{
    (void)a;
    const hs_shape *x = NULL, *idx = NULL;
    hs_gather_dims d;
    hs_status st = hs__array_operand(i, 0, &x, err);
    if (!st)
        st = hs__array_operand(i, 1, &idx, err);
    if (!st)
        st = hs_instruction_gather(i, &d, err);
    if (st)
        return st;
    static const char *const names[3] = {"collapsed slice dimension",
                                         "start_index_map",
                                         "offset dimension"};
    if ((st = check_common(i, x, idx, &d, names, err)))
        return st;
    if (d.n_slice_sizes != x->rank)
        return fail(err, "gather: %d slice sizes for an operand of rank %d",
                    d.n_slice_sizes, x->rank);
    bool window[HS_MAX_RANK];
    for (int k = 0; k < x->rank; k++) {
        if (d.slice_sizes[k] < 0 || d.slice_sizes[k] > x->dims[k])
            return fail(err, "gather: slice size %lld of dimension %d does "
                             "not fit the operand %s",
                        (long long)d.slice_sizes[k], k, SHAPE_TEXT(x));
        window[k] = true;
    }
    for (int k = 0; k < d.n_collapsed; k++)
        window[d.collapsed[k]] = false;
    for (int k = 0; k < d.n_operand_batching; k++)
        window[d.operand_batching[k]] = false;
    for (int k = 0; k < x->rank; k++)
        if (!window[k] && d.slice_sizes[k] > 1)
            return fail(err, "gather: collapsed or batching dimension %d has "
                             "slice size %lld, not 1", k,
                        (long long)d.slice_sizes[k]);
    int batch_rank = idx->rank - (d.index_vector_dim < idx->rank);
    int rank = batch_rank + d.n_offset;
    if (rank > HS_MAX_RANK)
        return fail(err, "gather: the result would have rank %d", rank);
    if ((st = check_sorted(i, "offset dimension", d.offset, d.n_offset, rank,
                           &i->shape, err)))
        return st;
    int64_t dims[HS_MAX_RANK];
    int next_offset = 0, next_window = 0, next_batch = 0;
    for (int k = 0; k < rank; k++) {
        if (next_offset < d.n_offset && d.offset[next_offset] == k) {
            while (!window[next_window])
                next_window++;
            dims[k] = d.slice_sizes[next_window++];
            next_offset++;
        } else {
            if (next_batch == d.index_vector_dim)
                next_batch++;
            dims[k] = idx->dims[next_batch++];
        }
    }
    set_array(out, x->dtype, rank, dims);
    return HS_OK;
}

/* to_apply: (T0..Tn-1 accumulators, T0..Tn-1 updates) -> T or (T...). */
static hs_status check_update_computation(const hs_instruction *i, int n,
                                          hs_error *err)
{
    if (i->n_called < 1 || !i->called[0])
        return fail(err, "scatter: missing to_apply computation");
    const hs_computation *c = i->called[0];
    if (c->n_params != 2 * n)
        return fail(err, "scatter: to_apply computation %s takes %d "
                         "parameters but %d are needed", c->name,
                    c->n_params, 2 * n);
    for (int k = 0; k < 2 * n; k++) {
        const hs_instruction *p = c->params[k];
        hs_dtype want = i->operands[k % n]->shape.dtype;
        if (!p || p->shape.dtype != want || p->shape.rank != 0)
            return fail(err, "scatter: to_apply computation %s parameter %d "
                             "must be a %s scalar", c->name, k,
                        hs_dtype_name(want));
    }
    const hs_shape *r = c->root ? &c->root->shape : NULL;
    bool ok = r && (n == 1 ? r->dtype == i->operands[0]->shape.dtype &&
                                 r->rank == 0
                           : r->dtype == HS_TUPLE && r->n_elems == n);
    for (int k = 0; ok && n > 1 && k < n; k++)
        ok = r->elems[k].dtype == i->operands[k]->shape.dtype &&
             r->elems[k].rank == 0;
    if (!ok)
        return fail(err, "scatter: to_apply computation %s must return "
                         "the operands' element types as scalars", c->name);
    return HS_OK;
}

hs_status hs__infer_scatter(const hs_instruction *i, hs_arena *a,
                            hs_shape *out, hs_error *err)
{
    if (i->n_operands < 3 || i->n_operands % 2 == 0)
        return fail(err, "scatter: needs operands, indices and as many "
                         "updates as operands, got %d operands",
                    i->n_operands);
    int n = (i->n_operands - 1) / 2;
    const hs_shape *x = NULL, *idx = NULL;
    hs_gather_dims d;
    hs_status st = hs__array_operand(i, 0, &x, err);
    if (!st)
        st = hs__array_operand(i, n, &idx, err);
    if (!st)
        st = hs_instruction_scatter(i, &d, err);
    if (st)
        return st;
    static const char *const names[3] = {"inserted window dimension",
                                         "scatter_dims_to_operand_dims",
                                         "update window dimension"};
    if ((st = check_common(i, x, idx, &d, names, err)) ||
        (st = check_update_computation(i, n, err)))
        return st;
    bool window[HS_MAX_RANK];
    for (int k = 0; k < x->rank; k++)
        window[k] = true;
    for (int k = 0; k < d.n_collapsed; k++)
        window[d.collapsed[k]] = false;
    for (int k = 0; k < d.n_operand_batching; k++)
        window[d.operand_batching[k]] = false;
    int batch_rank = idx->rank - (d.index_vector_dim < idx->rank);
    for (int j = 0; j < n; j++) {
        const hs_shape *xj = NULL, *u = NULL;
        if ((st = hs__array_operand(i, j, &xj, err)) ||
            (st = hs__array_operand(i, n + 1 + j, &u, err)))
            return st;
        if (!same_dims(xj, x))
            return fail(err, "scatter: operand %d %s does not have operand "
                             "0's dimensions %s", j, SHAPE_TEXT(xj),
                        SHAPE_TEXT(x));
        if (u->dtype != xj->dtype)
            return fail(err, "scatter: update %d %s is not of operand %d's "
                             "type %s", j, SHAPE_TEXT(u), j,
                        hs_dtype_name(xj->dtype));
        if (u->rank != batch_rank + d.n_offset)
            return fail(err, "scatter: updates %s must have rank %d (%d "
                             "scatter dimensions + %d window dimensions)",
                        SHAPE_TEXT(u), batch_rank + d.n_offset, batch_rank,
                        d.n_offset);
        if ((st = check_sorted(i, "update window dimension", d.offset,
                               d.n_offset, u->rank, u, err)))
            return st;
        int next_offset = 0, next_window = 0, next_batch = 0;
        for (int k = 0; k < u->rank; k++) {
            if (next_offset < d.n_offset && d.offset[next_offset] == k) {
                while (!window[next_window])
                    next_window++;
                if (u->dims[k] > x->dims[next_window])
                    return fail(err, "scatter: update window dimension %d "
                                     "has size %lld, more than operand "
                                     "dimension %d's %lld", k,
                                (long long)u->dims[k], next_window,
                                (long long)x->dims[next_window]);
                next_window++;
                next_offset++;
            } else {
                if (next_batch == d.index_vector_dim)
                    next_batch++;
                if (u->dims[k] != idx->dims[next_batch])
                    return fail(err, "scatter: update scatter dimension %d "
                                     "has size %lld but indices dimension "
                                     "%d has %lld", k, (long long)u->dims[k],
                                next_batch,
                                (long long)idx->dims[next_batch]);
                next_batch++;
            }
        }
    }
    return hs__set_operand_arrays(i, n, x, a, out, err);
}
