/* trace_graph.c - the `graph` block: its params and HLO-level ops as builder
 * calls. Element-wise ops broadcast a lower-rank operand along the trailing
 * dimensions (an explicit broadcast in the HLO); everything else follows
 * HLO's own rules. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/name_index.h"
#include "model/params.h"
#include "model/trace_blocks.h"

/* The values of the block's names so far ("x", params, ops). */
typedef struct graph_env {
    int n;
    hs__name_index ix; /* name -> position in values */
    hs_instruction **values;
} graph_env;

static hs_instruction *env_get(const graph_env *env, const char *name)
{
    int i = hs__name_index_get(&env->ix, name);
    return i >= 0 ? env->values[i] : NULL;
}

static void env_put(graph_env *env, const char *name, hs_instruction *v)
{
    hs__name_index_put(&env->ix, name, env->n);
    env->values[env->n++] = v;
}

/* Makes two operands the same rank by broadcasting the lower-rank one. */
static void align_ranks(hs_builder *b, hs_instruction **x,
                        hs_instruction **y)
{
    if (!*x || !*y)
        return;
    if ((*x)->shape.rank < (*y)->shape.rank)
        *x = hs_b_broadcast_trailing(b, *x, &(*y)->shape);
    else if ((*y)->shape.rank < (*x)->shape.rank)
        *y = hs_b_broadcast_trailing(b, *y, &(*x)->shape);
}

static bool rank_matches(hs_trace *t, const hs_graph_op *g,
                         const char *what, int n, int rank)
{
    if (n == rank)
        return true;
    char p[300];
    snprintf(p, sizeof p, "%s/attrs", g->path);
    hs__trace_fail(t, p, HS_ERR_INVALID,
                   "%s needs %d entries (the operand's rank), got %d", what,
                   rank, n);
    return false;
}

static bool listed(const int64_t *v, int n, int64_t x)
{
    for (int i = 0; i < n; i++)
        if (v[i] == x)
            return true;
    return false;
}

/* The result has the batch and free dimensions of both operands; their
 * product could overflow before the builder sees it. */
static bool dot_fits(hs_trace *t, const hs_graph_op *g,
                     const hs_instruction *l, const hs_instruction *r,
                     const hs_dot_dims *d)
{
    int64_t dims[2 * HS_MAX_RANK];
    int n = 0;
    for (int i = 0; i < l->shape.rank; i++)
        if (!listed(d->lhs_contracting, d->n_lhs_contracting, i))
            dims[n++] = l->shape.dims[i];
    for (int i = 0; i < r->shape.rank; i++)
        if (!listed(d->rhs_contracting, d->n_rhs_contracting, i) &&
            !listed(d->rhs_batch, d->n_rhs_batch, i))
            dims[n++] = r->shape.dims[i];
    return hs__trace_fits(t, g->path, n, dims);
}

static hs_instruction *trace_dot(hs_trace *t, const hs_graph_op *g,
                                 hs_instruction *l, hs_instruction *r)
{
    /* Defaults: a matrix product contracting lhs's last dimension with
     * rhs's first non-batch one. */
    hs_dot_dims d;
    memset(&d, 0, sizeof d);
    d.n_lhs_batch = g->n_lb < 0 ? 0 : g->n_lb;
    d.n_rhs_batch = g->n_rb < 0 ? 0 : g->n_rb;
    memcpy(d.lhs_batch, g->lb, sizeof g->lb);
    memcpy(d.rhs_batch, g->rb, sizeof g->rb);
    if (g->n_lc < 0) {
        d.n_lhs_contracting = 1;
        d.lhs_contracting[0] = l->shape.rank - 1;
    } else {
        d.n_lhs_contracting = g->n_lc;
        memcpy(d.lhs_contracting, g->lc, sizeof g->lc);
    }
    if (g->n_rc < 0) {
        d.n_rhs_contracting = 1;
        d.rhs_contracting[0] = d.n_rhs_batch;
    } else {
        d.n_rhs_contracting = g->n_rc;
        memcpy(d.rhs_contracting, g->rc, sizeof g->rc);
    }
    if (!dot_fits(t, g, l, r, &d))
        return NULL;
    return hs_b_dot(t->b, l, r, &d);
}

static hs_instruction *trace_reduce(hs_trace *t, const hs_graph_op *g,
                                    hs_instruction *x)
{
    hs_builder *b = t->b;
    hs_shape scalar = hs_shape_scalar(x->shape.dtype);
    switch (g->reducer) {
    case HS_OP_ADD:
        if (x->shape.dtype == HS_BF16 || x->shape.dtype == HS_F16) {
            /* A sum of a bf16/f16 model accumulates in f32 and rounds
             * once, as PyTorch's reductions and XLA's (an f32 accumulator)
             * do: rounding each partial sum to 8 bits would lose the
             * small terms of a long sum. */
            hs_instruction *s = hs_b_reduce_sum(
                b, hs_b_convert(b, x, HS_F32), g->dims, g->n_dims);
            return s ? hs_b_convert(b, s, x->shape.dtype) : NULL;
        }
        return hs_b_reduce_sum(b, x, g->dims, g->n_dims);
    case HS_OP_MAXIMUM: return hs_b_reduce_max(b, x, g->dims, g->n_dims);
    case HS_OP_MINIMUM:
        return hs_b_reduce(b, x, hs__nn_fill(b, INFINITY, &scalar), g->dims,
                           g->n_dims, HS_OP_MINIMUM);
    default:
        return hs_b_reduce(b, x, hs__nn_fill(b, 1.0f, &scalar), g->dims,
                           g->n_dims, HS_OP_MULTIPLY);
    }
}

static hs_instruction *trace_placement(hs_trace *t, const hs_graph_op *g,
                                       hs_instruction *x)
{
    /* torch_xla's place_to_host / place_to_device: an annotation the
     * offload pass later turns into host buffers and copies. */
    hs_instruction *y =
        hs_b_custom_call(t->b, HS_PLACEMENT_TARGET, &x, 1, &x->shape);
    if (y)
        (void)hs_instruction_set_placement(y,
                                           g->kind == HS_GOP_PLACE_TO_HOST);
    return y;
}

static hs_instruction *trace_op(hs_trace *t, const hs_graph_op *g,
                                hs_instruction **a)
{
    hs_builder *b = t->b;
    for (int i = 0; i < g->n_args; i++)
        if (!a[i])
            return NULL;
    if (g->kind != HS_GOP_HLO)
        return trace_placement(t, g, a[0]);
    int arity = hs_opcode_arity(g->opcode);
    if (hs_opcode_is_elementwise(g->opcode) && arity == 1 &&
        g->opcode != HS_OP_CONVERT)
        return hs_b_unary(b, g->opcode, a[0]);
    switch (g->opcode) {
    case HS_OP_COMPARE:
        align_ranks(b, &a[0], &a[1]);
        return hs_b_compare(b, g->direction, a[0], a[1]);
    case HS_OP_SELECT:
        return hs_b_select(b, a[0], a[1], a[2]);
    case HS_OP_CONVERT:
        /* f32 in the description is the model's dtype. */
        return hs_b_convert(b, a[0], g->dtype == HS_F32 ? t->dtype
                                                         : g->dtype);
    case HS_OP_CONVOLUTION:
    case HS_OP_REDUCE_WINDOW:
    case HS_OP_BATCH_NORM_INFERENCE:
        return hs__trace_graph_vision(t, g, a);
    case HS_OP_BROADCAST: {
        hs_shape s = hs_shape_make(a[0]->shape.dtype, g->n_shape, g->shape);
        if (g->n_dims < 0)
            return hs_b_broadcast_trailing(b, a[0], &s);
        if (!rank_matches(t, g, "dimensions", g->n_dims, a[0]->shape.rank))
            return NULL;
        return hs_b_broadcast(b, a[0], &s, g->dims, g->n_dims);
    }
    case HS_OP_RESHAPE:
        return hs_b_reshape(b, a[0], g->n_shape, g->shape);
    case HS_OP_TRANSPOSE:
        if (!rank_matches(t, g, "dimensions", g->n_dims, a[0]->shape.rank))
            return NULL;
        return hs_b_transpose(b, a[0], g->dims);
    case HS_OP_SLICE:
        if (!rank_matches(t, g, "start", g->n_start, a[0]->shape.rank) ||
            !rank_matches(t, g, "limit", g->n_limit, a[0]->shape.rank) ||
            (g->n_stride >= 0 &&
             !rank_matches(t, g, "stride", g->n_stride, a[0]->shape.rank)))
            return NULL;
        return hs_b_slice(b, a[0], g->start, g->limit,
                          g->n_stride < 0 ? NULL : g->stride);
    case HS_OP_CONCATENATE:
        return hs_b_concatenate(b, a, g->n_args, g->dimension);
    case HS_OP_DOT:
        return trace_dot(t, g, a[0], a[1]);
    case HS_OP_REDUCE:
        return trace_reduce(t, g, a[0]);
    case HS_OP_CONSTANT: {
        hs_shape s = hs_shape_make(t->dtype, g->n_shape < 0 ? 0 : g->n_shape,
                                   g->shape);
        return hs__nn_fill(b, (float)g->value, &s);
    }
    case HS_OP_IOTA: {
        hs_shape s = hs_shape_make(t->dtype, g->n_shape, g->shape);
        if (g->dimension >= g->n_shape) {
            char p[300];
            snprintf(p, sizeof p, "%s/attrs/dimension", g->path);
            return hs__trace_fail(t, p, HS_ERR_INVALID,
                                  "dimension %lld is out of range for a %d-D "
                                  "shape",
                                  (long long)g->dimension, g->n_shape);
        }
        return hs_b_iota(b, &s, g->dimension);
    }
    default:
        if (arity == 2) {
            align_ranks(b, &a[0], &a[1]);
            return hs_b_binary(b, g->opcode, a[0], a[1]);
        }
        return hs__trace_fail(t, g->path, HS_ERR_UNSUPPORTED,
                              "op %s is not supported in a graph block",
                              hs_opcode_name(g->opcode));
    }
}

/* Pushes the op's scope: its module path, or "graph/<name>" (a graph
 * that is a layer by itself) or "<name>", or "<scope>/<name>" in a scan
 * body (scope: the loop's). Returns how many were pushed. */
static int push_op_scope(hs_builder *b, const hs_graph_op *g,
                         bool graph_scope, const char *scope)
{
    if (g->scope) {
        if (!g->scope[0])
            return 0;
        hs_builder_push_scope(b, g->scope);
        return 1;
    }
    int n = 0;
    if (scope && scope[0])
        hs_builder_push_scope(b, scope), n++;
    else if (graph_scope)
        hs_builder_push_scope(b, "graph"), n++;
    hs_builder_push_scope(b, g->name);
    return n + 1;
}

/* Every name a graph defines: its inputs, params, and what its ops
 * define. */
static size_t env_capacity(const hs_block *blk)
{
    size_t cap = 1 + (size_t)blk->n_inputs + (size_t)blk->n_gparams;
    for (int i = 0; i < blk->n_ops; i++)
        cap += (size_t)hs__graph_op_n_defs(&blk->ops[i]);
    return cap;
}

hs_instruction *hs__trace_graph_param(hs_trace *t, const hs_graph_param *p)
{
    return p->init == HS_INIT_VALUES
               ? hs__trace_param_values(t, p->name, &p->shape, p->values)
               : hs__trace_param(t, p->name, &p->shape, p->init,
                                 hs__param_fan_in_bound(&p->shape));
}

/* The graph's params: the caller's values, or requested from t->params. */
static bool bind_params(hs_trace *t, const hs_block *blk,
                        hs_instruction *const *given, graph_env *env)
{
    for (int i = 0; i < blk->n_gparams; i++) {
        const hs_graph_param *p = &blk->gparams[i];
        hs_instruction *v =
            given ? given[i] : hs__trace_graph_param(t, p);
        if (!v)
            return false;
        env_put(env, p->name, v);
    }
    return true;
}

/* For each param of a scan op's body, the enclosing graph's param of
 * that name (the same parameter: fn and the forward around the scan both
 * read it), or NULL. The env holds the inputs, then the params. */
static hs_instruction **shared_params(const hs_block *blk,
                                      const hs_graph_op *g,
                                      const graph_env *env)
{
    const hs_block *body = g->scan->body;
    hs_instruction **v = calloc((size_t)body->n_gparams + 1, sizeof *v);
    int first = blk->n_inputs ? blk->n_inputs : 1;
    for (int i = 0; v && i < body->n_gparams; i++) {
        int k = hs__name_index_get(&env->ix, body->gparams[i].name);
        if (k >= first && k < first + blk->n_gparams)
            v[i] = env->values[k];
    }
    return v;
}

/* One op: its values go into env under the names it defines. */
static bool trace_one(hs_trace *t, const hs_block *blk, const hs_graph_op *g,
                      graph_env *env, bool graph_scope, const char *scope)
{
    int n_defs = hs__graph_op_n_defs(g);
    hs_instruction **args = malloc(((size_t)g->n_args + (size_t)n_defs + 1) *
                                   sizeof *args);
    if (!args) {
        hs__trace_fail(t, g->path, HS_ERR_NOMEM, "out of host memory");
        return false;
    }
    hs_instruction **defs = args + g->n_args;
    for (int j = 0; j < g->n_args; j++)
        args[j] = env_get(env, g->args[j]);
    bool ok;
    if (g->kind == HS_GOP_SCAN) {
        hs_instruction **shared = shared_params(blk, g, env);
        ok = shared ? hs__trace_graph_scan(t, g, args, shared, graph_scope,
                                           defs)
                    : hs__trace_fail(t, g->path, HS_ERR_NOMEM,
                                     "out of host memory") != NULL;
        free(shared);
    } else {
        int pushed = push_op_scope(t->b, g, graph_scope, scope);
        defs[0] = trace_op(t, g, args);
        while (pushed-- > 0)
            hs_builder_pop_scope(t->b);
        ok = defs[0] != NULL;
    }
    if (!ok && !t->fail_path[0])
        snprintf(t->fail_path, sizeof t->fail_path, "%s", g->path);
    for (int k = 0; ok && k < n_defs; k++)
        env_put(env, hs__graph_op_def(g, k), defs[k]);
    free(args);
    return ok;
}

bool hs__trace_graph_io(hs_trace *t, const hs_block *blk,
                        const hs_graph_io *io, bool graph_scope)
{
    size_t cap = env_capacity(blk);
    graph_env env = {0, {0}, malloc(cap * sizeof(hs_instruction *))};
    bool ok = false;
    if (!hs__name_index_init(&env.ix, cap) || !env.values) {
        hs__trace_fail(t, blk->path, HS_ERR_NOMEM, "out of host memory");
        goto done;
    }
    if (blk->n_inputs == 0)
        env_put(&env, "x", io->inputs[0]);
    for (int i = 0; i < blk->n_inputs; i++)
        env_put(&env, blk->inputs[i], io->inputs[i]);
    if (!bind_params(t, blk, io->params, &env))
        goto done;
    for (int i = 0; i < blk->n_ops; i++)
        if (!trace_one(t, blk, &blk->ops[i], &env, graph_scope, io->scope))
            goto done;
    ok = true;
    for (int k = 0; k < io->n_results; k++)
        ok = (io->values[k] = env_get(&env, io->results[k])) != NULL && ok;
done:
    hs__name_index_free(&env.ix);
    free(env.values);
    return ok;
}

hs_instruction *hs__trace_graph(hs_trace *t, const hs_block *blk,
                                hs_instruction *x, bool graph_scope)
{
    hs_instruction *out = NULL;
    hs_graph_io io = {.inputs = &x, .n_results = 1,
                      .results = &blk->output, .values = &out};
    return hs__trace_graph_io(t, blk, &io, graph_scope) ? out : NULL;
}
