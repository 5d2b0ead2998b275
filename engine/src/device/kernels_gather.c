/*
 * kernels_gather.c - gather and scatter with XLA's full dimension numbers.
 *
 * Both walk the same geometry. The "window side" array R (gather's
 * result, scatter's updates) has batch dimensions (those not in
 * offset_dims / update_window_dims, which are the indices' dimensions but
 * index_vector_dim, in order) and window dimensions (offset_dims, mapped
 * in order onto the operand dimensions that are neither collapsed /
 * inserted nor batching). For each batch index G the operand start is
 *
 *   start[start_index_map[k]]   = indices[G with component k at
 *                                 index_vector_dim]
 *   start[operand_batching[j]]  = G's coordinate along indices dimension
 *                                 indices_batching[j]
 *
 * and the window of R at G is the operand block from start. Out of range
 * starts are handled as XLA's CPU backend does: gather clamps each start
 * to [0, operand size - slice size] (so every slice is whole); scatter
 * skips a whole update window unless 0 <= start and start + window size
 * <= operand size along every dimension (ScatterExpander's
 * CheckIndexValidity), and applies updates in index order, so with
 * duplicate indices the update computation sees them one after another.
 */
#include <stdlib.h>
#include <string.h>

#include "device/device_internal.h"
#include "numerics/element_types.h"

typedef struct gs_geom {
    hs_gather_dims d;
    const hs_shape *x, *idx, *r; /* operand, indices, window side */
    int64_t x_strides[HS_MAX_RANK], r_strides[HS_MAX_RANK];
    int n_batch;
    int64_t batch_dims[HS_MAX_RANK];   /* sizes, in R's order */
    int64_t r_batch_stride[HS_MAX_RANK];
    int64_t idx_batch_stride[HS_MAX_RANK];
    int64_t idx_vec_stride;            /* 0: implicit index vector */
    int n_window;
    int64_t win_x_dim[HS_MAX_RANK];    /* operand dimension of window j */
    int64_t win_size[HS_MAX_RANK];     /* R's size along window j */
    int64_t win_r_stride[HS_MAX_RANK], win_x_stride[HS_MAX_RANK];
    int64_t batch_pos_of_idx_dim[HS_MAX_RANK + 1];
} gs_geom;

static void geom_init(gs_geom *g, const hs_gather_dims *d, const hs_shape *x,
                      const hs_shape *idx, const hs_shape *r)
{
    memset(g, 0, sizeof *g);
    g->d = *d;
    g->x = x;
    g->idx = idx;
    g->r = r;
    dev_row_major_strides(x->dims, x->rank, g->x_strides);
    dev_row_major_strides(r->dims, r->rank, g->r_strides);
    int64_t idx_strides[HS_MAX_RANK + 1];
    dev_row_major_strides(idx->dims, idx->rank, idx_strides);
    int64_t ivd = d->index_vector_dim;
    g->idx_vec_stride = ivd < idx->rank ? idx_strides[ivd] : 0;
    bool window_x[HS_MAX_RANK];
    for (int k = 0; k < x->rank; k++)
        window_x[k] = true;
    for (int k = 0; k < d->n_collapsed; k++)
        window_x[d->collapsed[k]] = false;
    for (int k = 0; k < d->n_operand_batching; k++)
        window_x[d->operand_batching[k]] = false;
    int next_offset = 0, next_x = 0, next_idx = 0;
    for (int k = 0; k < r->rank; k++) {
        if (next_offset < d->n_offset && d->offset[next_offset] == k) {
            while (!window_x[next_x])
                next_x++;
            int j = g->n_window++;
            g->win_x_dim[j] = next_x;
            g->win_size[j] = r->dims[k];
            g->win_r_stride[j] = g->r_strides[k];
            g->win_x_stride[j] = g->x_strides[next_x];
            next_x++;
            next_offset++;
        } else {
            if (next_idx == ivd)
                next_idx++;
            int j = g->n_batch++;
            g->batch_dims[j] = r->dims[k];
            g->r_batch_stride[j] = g->r_strides[k];
            g->idx_batch_stride[j] = idx_strides[next_idx];
            g->batch_pos_of_idx_dim[next_idx] = j;
            next_idx++;
        }
    }
}

/* The operand start of batch index G (unclamped), from the indices
 * widened to int64 at iv; i_base is G's offset in the indices. */
static void start_of(const gs_geom *g, const int64_t *iv, int64_t i_base,
                     const int64_t *G, int64_t *start)
{
    for (int k = 0; k < g->x->rank; k++)
        start[k] = 0;
    for (int k = 0; k < g->d.n_start_index_map; k++)
        start[g->d.start_index_map[k]] = iv[i_base + k * g->idx_vec_stride];
    for (int j = 0; j < g->d.n_operand_batching; j++)
        start[g->d.operand_batching[j]] =
            G[g->batch_pos_of_idx_dim[g->d.indices_batching[j]]];
}

/* The indices as int64 (u64 beyond INT64_MAX saturates: out of range
 * either way). NULL on host OOM, error set. */
static int64_t *load_indices(dev_ctx *x, const dev_val *iv)
{
    int64_t n = hs_shape_elements(iv->shape);
    int64_t *out = malloc((size_t)(n ? n : 1) * sizeof *out);
    if (!out) {
        dev_oom(x);
        return NULL;
    }
    hs_dtype t = iv->shape->dtype;
    elem_load(t, iv->block->data, out, n);
    if (elem_wide(t) == HS_U64)
        for (int64_t k = 0; k < n; k++)
            if ((uint64_t)out[k] > (uint64_t)INT64_MAX)
                out[k] = INT64_MAX;
    return out;
}

/* One element: gathers of single elements (take_along_dim, the MoE
 * routing of real dumps) copy nothing else, so the copy is inlined. */
static inline void copy_element(char *dst, const char *src, int es)
{
    switch (es) {
    case 1: *dst = *src; break;
    case 2: memcpy(dst, src, 2); break;
    case 4: memcpy(dst, src, 4); break;
    case 8: memcpy(dst, src, 8); break;
    default: memcpy(dst, src, (size_t)es); break;
    }
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

hs_status dev_k_gather(dev_ctx *x, const dev_step *s, dev_val **f,
                       dev_val **out)
{
    const hs_instruction *in = s->in;
    dev_val *xv = dev_op(s, f, 0), *iv = dev_op(s, f, 1);
    if (xv->elems || iv->elems)
        return dev_unsupported(x, in, "a gather of a tuple");
    hs_gather_dims d;
    if (hs_instruction_gather(in, &d, x->err) != HS_OK)
        return x->err->status;
    gs_geom g;
    geom_init(&g, &d, xv->shape, iv->shape, &in->shape);
    int64_t *idx = load_indices(x, iv);
    if (!idx)
        return x->err->status;
    dev_val *y = dev_array_new(x, &in->shape);
    if (!y) {
        free(idx);
        return x->err->status;
    }
    int es = dev_esize(in->shape.dtype);
    const char *src = xv->block->data;
    char *dst = y->block->data;
    int64_t n_batch = 1;
    for (int j = 0; j < g.n_batch; j++)
        n_batch *= g.batch_dims[j];
    if (hs_shape_elements(&in->shape) == 0)
        n_batch = 0;
    /* The last batch dimension is walked as a run: per element only the
     * index vector is read and clamped; what the other batch dimensions
     * contribute is computed once per run. */
    int last = g.n_batch - 1;
    int64_t run = last >= 0 ? g.batch_dims[last] : 1;
    int64_t runs = run ? n_batch / run : 0;
    int64_t r_step = last >= 0 ? g.r_batch_stride[last] : 0;
    int64_t i_step = last >= 0 ? g.idx_batch_stride[last] : 0;
    int64_t x_step = 0; /* the run's own batching dimension, if any */
    for (int j = 0; j < d.n_operand_batching; j++)
        if (last >= 0 &&
            g.batch_pos_of_idx_dim[d.indices_batching[j]] == last)
            x_step = g.x_strides[d.operand_batching[j]];
    int64_t hi[HS_MAX_RANK], xs[HS_MAX_RANK];
    for (int k = 0; k < d.n_start_index_map; k++) {
        int64_t dim = d.start_index_map[k];
        hi[k] = g.x->dims[dim] - d.slice_sizes[dim];
        xs[k] = g.x_strides[dim];
    }
    int64_t G[HS_MAX_RANK] = {0}, start[HS_MAX_RANK];
    for (int64_t b = 0; b < runs; b++) {
        int64_t r_base = 0, i_base = 0, x_base = 0;
        for (int j = 0; j < last; j++) {
            r_base += G[j] * g.r_batch_stride[j];
            i_base += G[j] * g.idx_batch_stride[j];
        }
        /* batching dimensions of the outer batch index, at G[last] = 0 */
        G[last >= 0 ? last : 0] = 0;
        start_of(&g, idx, i_base, G, start);
        for (int k = 0; k < d.n_operand_batching; k++)
            x_base += start[d.operand_batching[k]] *
                      g.x_strides[d.operand_batching[k]];
        for (int64_t e = 0; e < run; e++) {
            const int64_t *iv = idx + i_base + e * i_step;
            int64_t xo = x_base + e * x_step;
            for (int k = 0; k < d.n_start_index_map; k++)
                xo += clamp64(iv[k * g.idx_vec_stride], 0, hi[k]) * xs[k];
            char *yo = dst + (r_base + e * r_step) * es;
            if (g.n_window == 0)
                copy_element(yo, src + xo * es, es);
            else
                dev_copy_strided(yo, g.win_r_stride, src + xo * es,
                                 g.win_x_stride, g.win_size, g.n_window, es);
        }
        dev_index_next(G, g.batch_dims, last);
    }
    free(idx);
    *out = y;
    return HS_OK;
}

/* ---- scatter ----------------------------------------------------------- */

/* How the update computation combines: a fast element-wise opcode, the
 * update replacing the element (root = parameter n), or interpreted. */
enum { COMBINE_INTERPRETED = -1, COMBINE_ASSIGN = -2 };

static int combine_of(const hs_computation *c, int n)
{
    if (n != 1)
        return COMBINE_INTERPRETED;
    const hs_instruction *r = c->root;
    if (r && r->opcode == HS_OP_PARAMETER && r->parent == c &&
        r->index == 1)
        return COMBINE_ASSIGN;
    int op = dev_reducer_fast_op(c);
    return op >= 0 ? op : COMBINE_INTERPRETED;
}

typedef struct scatter_run {
    dev_ctx *x;
    const hs_instruction *in;
    dev_plan *p;
    int n;
    char *ys[HS_MAX_RANK];        /* results (copies of the operands) */
    const char *us[HS_MAX_RANK];  /* updates */
    int es[HS_MAX_RANK];
    const hs_shape *scalar[HS_MAX_RANK];
} scatter_run;

/* Interpreted: ys[k][xo] = to_apply(ys[.][xo], us[.][uo])[k]. */
static hs_status combine_interpreted(scatter_run *r, int64_t xo, int64_t uo)
{
    dev_val *args[2 * HS_MAX_RANK];
    int n = r->n;
    for (int k = 0; k < 2 * n; k++) {
        const char *src = k < n ? r->ys[k] + xo * r->es[k]
                                : r->us[k - n] + uo * r->es[k - n];
        args[k] = dev_scalar_of(r->x, r->scalar[k % n], src);
        if (!args[k]) {
            for (int j = 0; j < k; j++)
                dev_release(r->x, args[j]);
            return r->x->err->status;
        }
    }
    dev_val *res = NULL;
    hs_status st = dev_eval(r->x, r->p, args, 2 * n, &res);
    if (st)
        return st;
    for (int k = 0; k < n; k++) {
        const dev_val *v = n == 1 && !res->elems ? res
                           : res->elems && res->n == n ? res->elems[k]
                                                       : NULL;
        if (!v || v->elems || v->shape->dtype != r->scalar[k]->dtype) {
            dev_release(r->x, res);
            return dev_unsupported(r->x, r->in, "an update computation that "
                                                "does not return its "
                                                "operands' types");
        }
        memcpy(r->ys[k] + xo * r->es[k], v->block->data, (size_t)r->es[k]);
    }
    dev_release(r->x, res);
    return HS_OK;
}

/* One update window at operand offset x_base and update offset u_base:
 * the last window dimension is a run, the others an odometer. */
static hs_status scatter_window(scatter_run *r, const gs_geom *g, int op,
                                int64_t x_base, int64_t u_base, void *tmp)
{
    int nw = g->n_window;
    if (nw == 0 && op == HS_OP_ADD && g->x->dtype == HS_F32) {
        /* one f32 element added: the gradient of take_along_dim and of
         * the MoE routing, one call per element */
        ((float *)r->ys[0])[x_base] += ((const float *)r->us[0])[u_base];
        return HS_OK;
    }
    if (op == COMBINE_ASSIGN) {
        dev_copy_strided(r->ys[0] + x_base * r->es[0], g->win_x_stride,
                         r->us[0] + u_base * r->es[0], g->win_r_stride,
                         g->win_size, nw, r->es[0]);
        return HS_OK;
    }
    int64_t run = nw ? g->win_size[nw - 1] : 1;
    int64_t xs = nw ? g->win_x_stride[nw - 1] : 0;
    int64_t us = nw ? g->win_r_stride[nw - 1] : 0;
    int64_t outer = 1;
    for (int j = 0; j + 1 < nw; j++)
        outer *= g->win_size[j];
    if (run == 0)
        return HS_OK;
    int64_t W[HS_MAX_RANK] = {0};
    hs_dtype t = g->x->dtype;
    int es = r->es[0];
    for (int64_t o = 0; o < outer; o++) {
        int64_t xo = x_base, uo = u_base;
        for (int j = 0; j + 1 < nw; j++) {
            xo += W[j] * g->win_x_stride[j];
            uo += W[j] * g->win_r_stride[j];
        }
        if (op >= 0 && xs == 1 && us == 1) {
            char *y = r->ys[0] + xo * es;
            dev_binary_loop((hs_opcode)op, t, y, r->us[0] + uo * es, tmp,
                            run);
            memcpy(y, tmp, (size_t)(run * es));
        } else {
            for (int64_t e = 0; e < run; e++) {
                int64_t xe = xo + e * xs, ue = uo + e * us;
                if (op >= 0) {
                    char *y = r->ys[0] + xe * es;
                    dev_binary_loop((hs_opcode)op, t, y,
                                    r->us[0] + ue * es, tmp, 1);
                    memcpy(y, tmp, (size_t)es);
                } else {
                    hs_status st = combine_interpreted(r, xe, ue);
                    if (st)
                        return st;
                }
            }
        }
        dev_index_next(W, g->win_size, nw - 1);
    }
    return HS_OK;
}

/* Whether operand k of the scatter may become result k: this is its last
 * use, nobody else sees its block, it is passed only once, and it is in
 * the result's memory space. */
static bool updatable_in_place(const dev_step *s, dev_val **f, int k,
                               const hs_shape *rs)
{
    const dev_val *v = dev_op(s, f, k);
    if (!s->op_last[k] || v->refs != 1 || v->elems ||
        dev_block_shared(v->block) ||
        dev_space_index(v->shape->memory_space) !=
            dev_space_index(rs->memory_space))
        return false;
    for (int j = 0; j < s->n_ops; j++)
        if (j != k && s->ops[j] == s->ops[k])
            return false;
    return true;
}

hs_status dev_k_scatter(dev_ctx *x, const dev_step *s, dev_val **f,
                        dev_val **out)
{
    const hs_instruction *in = s->in;
    int n = (in->n_operands - 1) / 2;
    if (n < 1 || n > HS_MAX_RANK || !s->callee[0])
        return dev_unsupported(x, in, "a scatter without operands, updates "
                                      "and an update computation");
    hs_gather_dims d;
    if (hs_instruction_scatter(in, &d, x->err) != HS_OK)
        return x->err->status;
    dev_val *iv = dev_op(s, f, n);
    for (int k = 0; k < in->n_operands; k++)
        if (dev_op(s, f, k)->elems)
            return dev_unsupported(x, in, "a scatter of a tuple");
    gs_geom g;
    geom_init(&g, &d, dev_op(s, f, 0)->shape, iv->shape,
              dev_op(s, f, n + 1)->shape);
    scatter_run r = {.x = x, .in = in, .p = s->callee[0], .n = n};
    dev_val *res[HS_MAX_RANK] = {NULL};
    dev_val *y = NULL;
    int64_t *idx = load_indices(x, iv);
    void *tmp = NULL;
    hs_status st = HS_OK;
    if (!idx)
        return x->err->status;
    for (int k = 0; k < n && !st; k++) {
        dev_val *xk = dev_op(s, f, k);
        const hs_shape *rs = n == 1 ? &in->shape : &in->shape.elems[k];
        if (updatable_in_place(s, f, k, rs)) {
            /* the operand dies here: written in place, as XLA's CPU
             * backend writes a scatter into its operand's buffer */
            res[k] = dev_take(s, f, k);
            res[k]->shape = rs;
        } else if ((res[k] = dev_array_new(x, rs))) {
            memcpy(res[k]->block->data, xk->block->data,
                   (size_t)hs_shape_bytes(rs));
        } else {
            st = x->err->status;
            break;
        }
        r.ys[k] = res[k]->block->data;
        r.us[k] = dev_op(s, f, n + 1 + k)->block->data;
        r.es[k] = dev_esize(rs->dtype);
        r.scalar[k] = &s->callee[0]->comp->params[k]->shape;
    }
    int op = combine_of(s->callee[0]->comp, n);
    int64_t n_batch = 1;
    for (int j = 0; j < g.n_batch; j++)
        n_batch *= g.batch_dims[j];
    if (hs_shape_elements(g.r) == 0)
        n_batch = 0;
    /* one window row of scratch (none for empty updates, whose window
     * may be long) */
    int64_t run = g.n_window && n_batch ? g.win_size[g.n_window - 1] : 1;
    if (!st && !(tmp = malloc((size_t)(run ? run : 1) * 8)))
        st = dev_oom(x);
    int64_t G[HS_MAX_RANK] = {0}, start[HS_MAX_RANK];
    int64_t win[HS_MAX_RANK];
    for (int k = 0; k < g.x->rank; k++)
        win[k] = 1;
    for (int j = 0; j < g.n_window; j++)
        win[g.win_x_dim[j]] = g.win_size[j];
    for (int64_t b = 0; b < n_batch && !st; b++) {
        int64_t u_base = 0, i_base = 0, x_base = 0;
        for (int j = 0; j < g.n_batch; j++) {
            u_base += G[j] * g.r_batch_stride[j];
            i_base += G[j] * g.idx_batch_stride[j];
        }
        start_of(&g, idx, i_base, G, start);
        dev_index_next(G, g.batch_dims, g.n_batch);
        /* A window that does not fit is skipped whole, as XLA's
         * ScatterExpander does; its start (any s64, e.g. -2^63) is never
         * turned into an offset. */
        bool valid = true;
        for (int k = 0; k < g.x->rank; k++)
            valid &= start[k] >= 0 && start[k] <= g.x->dims[k] - win[k];
        if (!valid)
            continue;
        for (int k = 0; k < g.x->rank; k++)
            x_base += start[k] * g.x_strides[k];
        st = scatter_window(&r, &g, op, x_base, u_base, tmp);
    }
    free(idx);
    free(tmp);
    if (!st && n > 1) {
        if (!(y = dev_tuple_new(x, &in->shape, n)))
            st = x->err->status;
        for (int k = 0; k < n && !st; k++) {
            y->elems[k] = res[k];
            res[k] = NULL;
        }
    } else if (!st) {
        y = res[0];
        res[0] = NULL;
    }
    for (int k = 0; k < n; k++)
        if (res[k])
            dev_release(x, res[k]);
    if (st)
        return st;
    *out = y;
    return HS_OK;
}
