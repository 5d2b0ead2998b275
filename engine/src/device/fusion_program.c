/*
 * fusion_program.c - compiles a loop fusion into an element-wise program
 * (fusion_program.h) once per run, at plan time.
 *
 * The fused computation is walked from its root. Every node is visited
 * with the map from result coordinates to its own coordinates (and linear
 * index): element-wise ops pass the map to their operands unchanged,
 * broadcast / transpose / slice / reverse / reshape transform it, and the
 * leaves (parameters, constants, iota) become loads through it. A node
 * reached through two different maps (x used directly and through a
 * transposing broadcast) is emitted once per map, as XLA's loop emitter
 * does. Anything else (reduce, concatenate, dot, a non-executable element
 * type, a fused computation too large) makes the compile give up, and the
 * kernel evaluates the fused computation like a call instead.
 */
#include <stdlib.h>
#include <string.h>

#include "device/fusion_program.h"
#include "numerics/element_ops.h"

/* node coordinate k = co_base[k] + sum_d out[d] * co[k][d] (when coords),
 * node linear index = lin_base + sum_d out[d] * lin[d] (always). */
typedef struct fmap {
    int64_t coords; /* a flag; int64_t so that the struct has no padding
                       and maps compare with memcmp */
    int64_t co[HS_MAX_RANK][HS_MAX_RANK];
    int64_t co_base[HS_MAX_RANK];
    int64_t lin[HS_MAX_RANK];
    int64_t lin_base;
} fmap;

typedef struct memo_entry {
    const hs_instruction *node;
    fmap map;
    int value;
} memo_entry;

typedef struct builder {
    dev_ctx *x;
    const hs_computation *comp;
    int rank;             /* of the result */
    const int64_t *dims;  /* of the result */
    dev_fop *ops;
    int n_ops;
    memo_entry *memo;
    int n_memo, cap_memo;
    bool oom;
} builder;

enum { FAIL = -1 };

static bool executable(hs_dtype t) { return dev_dtype_executable(t); }

static void row_major(const hs_shape *s, int64_t *st)
{
    dev_row_major_strides(s->dims, s->rank, st);
}

/* Recomputes the linear map of a node of shape s from its coordinates. */
static void set_lin_from_coords(const builder *b, const hs_shape *s, fmap *m)
{
    int64_t rs[HS_MAX_RANK];
    row_major(s, rs);
    m->lin_base = 0;
    for (int k = 0; k < s->rank; k++)
        m->lin_base += m->co_base[k] * rs[k];
    for (int d = 0; d < b->rank; d++) {
        int64_t v = 0;
        for (int k = 0; k < s->rank; k++)
            v += m->co[k][d] * rs[k];
        m->lin[d] = v;
    }
}

static void zero_map(fmap *m)
{
    memset(m, 0, sizeof *m);
    m->coords = true;
}

static dev_index_map merge(const builder *b, const int64_t *lin, int64_t base)
{
    dev_index_map im;
    memset(&im, 0, sizeof im);
    im.base = base;
    for (int d = 0; d < b->rank; d++) {
        int64_t n = b->dims[d];
        if (n == 1)
            continue;
        if (im.rank > 0 && im.strides[im.rank - 1] == lin[d] * n) {
            im.dims[im.rank - 1] *= n;
            im.strides[im.rank - 1] = lin[d];
        } else {
            im.dims[im.rank] = n;
            im.strides[im.rank] = lin[d];
            im.rank++;
        }
    }
    if (im.rank == 0) {
        im.rank = 1;
        im.dims[0] = 1;
        im.strides[0] = 0;
    }
    return im;
}

static bool map_is_splat(const dev_index_map *m)
{
    return m->rank == 1 && (m->strides[0] == 0 || m->dims[0] == 1);
}

static int push(builder *b, const dev_fop *op)
{
    if (b->n_ops >= DEV_FUSION_MAX_VALUES)
        return FAIL;
    b->ops[b->n_ops] = *op;
    return b->n_ops++;
}

static int remember(builder *b, const hs_instruction *node, const fmap *m,
                    int value)
{
    if (value < 0)
        return value;
    if (b->n_memo == b->cap_memo) {
        int cap = b->cap_memo ? 2 * b->cap_memo : 32;
        memo_entry *p = realloc(b->memo, sizeof *p * (size_t)cap);
        if (!p) {
            b->oom = true;
            return FAIL;
        }
        b->memo = p;
        b->cap_memo = cap;
    }
    b->memo[b->n_memo].node = node;
    b->memo[b->n_memo].map = *m;
    b->memo[b->n_memo].value = value;
    b->n_memo++;
    return value;
}

static int recall(const builder *b, const hs_instruction *node,
                  const fmap *m)
{
    for (int k = b->n_memo - 1; k >= 0; k--)
        if (b->memo[k].node == node &&
            memcmp(&b->memo[k].map, m, sizeof *m) == 0)
            return b->memo[k].value;
    return FAIL;
}

static int emit(builder *b, const hs_instruction *in, const fmap *m,
                int depth);

/* An operand of an element-wise op: the same map when it has the op's
 * elements, the constant map when it is a scalar (select's predicate,
 * clamp's bounds). */
static int emit_elementwise_operand(builder *b, const hs_instruction *in,
                                    int k, const fmap *m, int depth,
                                    bool scalar_ok)
{
    const hs_instruction *o = in->operands[k];
    if (o->shape.dtype == HS_TUPLE)
        return FAIL;
    int64_t n = hs_shape_elements(&in->shape),
            on = hs_shape_elements(&o->shape);
    fmap om;
    if (on == n) {
        om = *m;
        if (o->shape.rank != in->shape.rank ||
            memcmp(o->shape.dims, in->shape.dims,
                   sizeof(int64_t) * (size_t)in->shape.rank) != 0)
            om.coords = false;
    } else if (on == 1 && scalar_ok) {
        zero_map(&om);
    } else {
        return FAIL;
    }
    if (!om.coords)
        memset(om.co, 0, sizeof om.co), memset(om.co_base, 0,
                                               sizeof om.co_base);
    return emit(b, o, &om, depth + 1);
}

static int emit_op(builder *b, const hs_instruction *in, const fmap *m,
                   int depth)
{
    dev_fop op;
    memset(&op, 0, sizeof op);
    op.type = in->shape.dtype;
    op.op = in->opcode;
    op.slot = -1;
    op.operand = -1;
    int n = in->n_operands;
    bool scalar_ok = in->opcode == HS_OP_SELECT || in->opcode == HS_OP_CLAMP;
    for (int k = 0; k < n && k < 3; k++) {
        bool ok = scalar_ok && (in->opcode == HS_OP_CLAMP ? k != 1 : k == 0);
        op.src[k] = emit_elementwise_operand(b, in, k, m, depth, ok);
        if (op.src[k] < 0)
            return FAIL;
    }
    op.n_src = n;
    hs_dtype t = in->shape.dtype;
    hs_dtype a = n > 0 ? in->operands[0]->shape.dtype : t;
    op.in_type = a;
    if (hs_opcode_is_unary_family(in->opcode)) {
        if (n != 1 || a != t || !dev_unary_supported(in->opcode, t))
            return FAIL;
        op.kind = DEV_FOP_UNARY;
    } else if (hs_opcode_is_binary_family(in->opcode)) {
        if (n != 2 || a != t || in->operands[1]->shape.dtype != t ||
            !binary_defined(in->opcode, t))
            return FAIL;
        op.kind = DEV_FOP_BINARY;
    } else switch (in->opcode) {
    case HS_OP_COMPARE:
        if (n != 2 || t != HS_PRED || in->operands[1]->shape.dtype != a ||
            in->direction == HS_DIR_NONE)
            return FAIL;
        op.kind = DEV_FOP_COMPARE;
        op.dir = in->direction;
        break;
    case HS_OP_SELECT:
        if (n != 3 || a != HS_PRED || in->operands[1]->shape.dtype != t ||
            in->operands[2]->shape.dtype != t)
            return FAIL;
        op.kind = DEV_FOP_SELECT;
        break;
    case HS_OP_CLAMP:
        if (n != 3 || t == HS_PRED || a != t ||
            in->operands[1]->shape.dtype != t ||
            in->operands[2]->shape.dtype != t)
            return FAIL;
        op.kind = DEV_FOP_CLAMP;
        break;
    case HS_OP_CONVERT:
        if (n != 1)
            return FAIL;
        op.kind = DEV_FOP_CONVERT;
        break;
    case HS_OP_BITCAST_CONVERT:
        if (n != 1 || dev_esize(a) != dev_esize(t))
            return FAIL;
        op.kind = DEV_FOP_BITCAST;
        break;
    default:
        return FAIL;
    }
    return push(b, &op);
}

/* The map of the operand of a data-movement node; false when it cannot
 * be expressed (the node then makes the compile give up). */
static bool movement_map(const builder *b, const hs_instruction *in,
                         const fmap *m, fmap *om)
{
    const hs_shape *s = &in->shape, *os = &in->operands[0]->shape;
    memset(om, 0, sizeof *om);
    om->coords = true;
    switch (in->opcode) {
    case HS_OP_BROADCAST:
        if (!m->coords || in->n_dims != os->rank)
            return false;
        for (int j = 0; j < os->rank; j++) {
            int64_t d = in->dims[j];
            if (d < 0 || d >= s->rank || os->dims[j] != s->dims[d])
                return false;
            memcpy(om->co[j], m->co[d], sizeof om->co[j]);
            om->co_base[j] = m->co_base[d];
        }
        break;
    case HS_OP_TRANSPOSE:
        if (!m->coords || in->n_dims != s->rank || os->rank != s->rank)
            return false;
        for (int i = 0; i < s->rank; i++) {
            int64_t p = in->dims[i];
            if (p < 0 || p >= os->rank || os->dims[p] != s->dims[i])
                return false;
            memcpy(om->co[p], m->co[i], sizeof om->co[p]);
            om->co_base[p] = m->co_base[i];
        }
        break;
    case HS_OP_SLICE:
        if (!m->coords || !in->slice || os->rank != s->rank)
            return false;
        for (int k = 0; k < s->rank; k++) {
            int64_t st = hs_slice_step(in->slice, s->dims, k);
            for (int d = 0; d < b->rank; d++)
                om->co[k][d] = m->co[k][d] * st;
            om->co_base[k] = in->slice->start[k] + m->co_base[k] * st;
        }
        break;
    case HS_OP_REVERSE:
        if (!m->coords || os->rank != s->rank)
            return false;
        memcpy(om->co, m->co, sizeof om->co);
        memcpy(om->co_base, m->co_base, sizeof om->co_base);
        for (int j = 0; j < in->n_dims; j++) {
            int64_t k = in->dims[j];
            if (k < 0 || k >= s->rank)
                return false;
            for (int d = 0; d < b->rank; d++)
                om->co[k][d] = -m->co[k][d];
            om->co_base[k] = s->dims[k] - 1 - m->co_base[k];
        }
        break;
    case HS_OP_RESHAPE: case HS_OP_BITCAST: case HS_OP_COPY: {
        if (hs_shape_elements(os) != hs_shape_elements(s))
            return false;
        /* The linear index is unchanged; coordinates carry over when only
         * unit dimensions differ. */
        int i = 0, j = 0;
        bool degenerate = m->coords;
        while (degenerate) {
            while (i < s->rank && s->dims[i] == 1)
                i++;
            while (j < os->rank && os->dims[j] == 1)
                j++;
            if (i == s->rank || j == os->rank) {
                degenerate = i == s->rank && j == os->rank;
                break;
            }
            if (s->dims[i] != os->dims[j]) {
                degenerate = false;
                break;
            }
            memcpy(om->co[j], m->co[i], sizeof om->co[j]);
            om->co_base[j] = m->co_base[i];
            i++, j++;
        }
        if (!degenerate) {
            memset(om, 0, sizeof *om);
            memcpy(om->lin, m->lin, sizeof om->lin);
            om->lin_base = m->lin_base;
            return true;
        }
        break;
    }
    default:
        return false;
    }
    set_lin_from_coords(b, os, om);
    return true;
}

static int emit(builder *b, const hs_instruction *in, const fmap *m, int depth)
{
    if (depth > DEV_FUSION_MAX_DEPTH || b->n_ops >= DEV_FUSION_MAX_VALUES ||
        b->oom)
        return FAIL;
    int v = recall(b, in, m);
    if (v >= 0)
        return v;
    if (in->parent != b->comp || in->shape.dtype == HS_TUPLE ||
        !executable(in->shape.dtype))
        return FAIL;
    dev_fop op;
    memset(&op, 0, sizeof op);
    op.type = in->shape.dtype;
    op.op = in->opcode;
    op.slot = -1;
    op.operand = -1;
    switch (in->opcode) {
    case HS_OP_PARAMETER:
        op.kind = DEV_FOP_LOAD;
        op.operand = (int)in->index;
        op.map = merge(b, m->lin, m->lin_base);
        return remember(b, in, m, push(b, &op));
    case HS_OP_CONSTANT:
        if (!in->literal)
            return FAIL;
        op.kind = DEV_FOP_LOAD;
        op.literal = in->literal;
        op.map = merge(b, m->lin, m->lin_base);
        return remember(b, in, m, push(b, &op));
    case HS_OP_IOTA: {
        int64_t zero[HS_MAX_RANK] = {0};
        if (in->shape.rank == 0) {
            op.map = merge(b, zero, 0);
        } else {
            int64_t dim = in->n_dims > 0 ? in->dims[0] : 0;
            if (!m->coords || dim < 0 || dim >= in->shape.rank)
                return FAIL;
            op.map = merge(b, m->co[dim], m->co_base[dim]);
        }
        op.kind = DEV_FOP_IOTA;
        return remember(b, in, m, push(b, &op));
    }
    case HS_OP_BROADCAST: case HS_OP_TRANSPOSE: case HS_OP_SLICE:
    case HS_OP_REVERSE: case HS_OP_RESHAPE: case HS_OP_BITCAST:
    case HS_OP_COPY: {
        if (in->n_operands != 1 ||
            in->operands[0]->shape.dtype != in->shape.dtype)
            return FAIL;
        fmap om;
        if (!movement_map(b, in, m, &om))
            return FAIL;
        return remember(b, in, m, emit(b, in->operands[0], &om, depth + 1));
    }
    default:
        if (hs_opcode_category(in->opcode) != HS_CAT_ELEMENTWISE)
            return FAIL;
        return remember(b, in, m, emit_op(b, in, m, depth));
    }
}

/* Placement of every value and the scratch slots they use. */
static bool place(dev_fusion_program *p)
{
    int n = p->n_values;
    int *last = calloc((size_t)n, sizeof *last);
    int *free_slots = calloc((size_t)n + 1, sizeof *free_slots);
    int *slot_of = calloc((size_t)n, sizeof *slot_of);
    if (!last || !free_slots || !slot_of) {
        free(last);
        free(free_slots);
        free(slot_of);
        return false;
    }
    for (int k = 0; k < n; k++) {
        dev_fop *op = &p->ops[k];
        bool invariant;
        if (op->kind == DEV_FOP_LOAD || op->kind == DEV_FOP_IOTA) {
            invariant = map_is_splat(&op->map);
            op->place = invariant ? DEV_FPLACE_INVARIANT
                        : op->kind == DEV_FOP_LOAD && op->map.rank == 1 &&
                                op->map.strides[0] == 1
                            ? DEV_FPLACE_DIRECT
                            : DEV_FPLACE_SLOT;
        } else {
            invariant = true;
            for (int s = 0; s < op->n_src; s++)
                invariant &= p->ops[op->src[s]].place == DEV_FPLACE_INVARIANT;
            op->place = invariant ? DEV_FPLACE_INVARIANT : DEV_FPLACE_SLOT;
        }
        for (int s = 0; s < op->n_src; s++)
            last[op->src[s]] = k;
    }
    dev_fop *root = &p->ops[p->root];
    if (root->place == DEV_FPLACE_SLOT && root->kind != DEV_FOP_LOAD &&
        root->kind != DEV_FOP_IOTA)
        root->place = DEV_FPLACE_OUT;
    p->has_invariants = false;
    int n_free = 0, n_slots = 0;
    for (int k = 0; k < n; k++) {
        dev_fop *op = &p->ops[k];
        if (op->place == DEV_FPLACE_INVARIANT) {
            op->slot = n_slots++;
            p->has_invariants = true;
        } else if (op->place == DEV_FPLACE_SLOT) {
            op->slot = n_free ? free_slots[--n_free] : n_slots++;
        }
        slot_of[k] = op->slot;
        /* Sources whose last use this is give their slot back, after the
         * result took one: an op never writes over its inputs. */
        for (int s = 0; s < op->n_src; s++) {
            int src = op->src[s];
            bool repeated = false;
            for (int t = 0; t < s; t++)
                repeated |= op->src[t] == src;
            if (!repeated && last[src] == k &&
                p->ops[src].place == DEV_FPLACE_SLOT)
                free_slots[n_free++] = slot_of[src];
        }
    }
    p->n_slots = n_slots;
    free(last);
    free(free_slots);
    free(slot_of);
    return true;
}

dev_fusion_program *dev_fusion_compile(dev_ctx *x, const hs_instruction *in)
{
    if (in->n_called < 1 || !in->called[0])
        return NULL;
    const hs_computation *c = in->called[0];
    const hs_instruction *root = c->root;
    if (!root || root->shape.dtype == HS_TUPLE ||
        !executable(root->shape.dtype) || c->n_instrs > DEV_FUSION_MAX_VALUES)
        return NULL;
    for (int k = 0; k < c->n_params; k++)
        if (!c->params[k] || c->params[k]->shape.dtype == HS_TUPLE)
            return NULL;
    builder b;
    memset(&b, 0, sizeof b);
    b.x = x;
    b.comp = c;
    b.rank = root->shape.rank;
    b.dims = root->shape.dims;
    b.ops = malloc(sizeof *b.ops * DEV_FUSION_MAX_VALUES);
    if (!b.ops) {
        dev_oom(x);
        return NULL;
    }
    fmap m;
    zero_map(&m);
    for (int k = 0; k < b.rank; k++)
        m.co[k][k] = 1;
    set_lin_from_coords(&b, &root->shape, &m);
    int rv = emit(&b, root, &m, 0);
    dev_fusion_program *p = NULL;
    if (b.oom) {
        dev_oom(x);
    } else if (rv >= 0) {
        p = hs_arena_alloc(x->arena, sizeof *p);
        dev_fop *ops = hs_arena_alloc(x->arena,
                                      sizeof *ops * (size_t)b.n_ops);
        if (!p || !ops) {
            dev_oom(x);
            p = NULL;
        } else {
            memcpy(ops, b.ops, sizeof *ops * (size_t)b.n_ops);
            p->ops = ops;
            p->n_values = b.n_ops;
            p->root = rv;
            p->type = root->shape.dtype;
            p->n = hs_shape_elements(&root->shape);
            p->n_operands = c->n_params;
            if (!place(p)) {
                dev_oom(x);
                p = NULL;
            }
        }
    }
    free(b.ops);
    free(b.memo);
    return p;
}
