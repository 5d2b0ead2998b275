/* trace_blocks.c - one function per block type, emitting builder calls.
 *
 * Scopes (metadata op_name) follow the PyTorch module path with '/':
 * "layers.3/attn/q_proj". A leaf block that is a layer by itself adds its
 * type name ("layers.3/linear"); composite blocks (mlp, attention, decoder,
 * sequential) add nothing, so their submodules sit right under the layer. */
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "model/params.h"
#include "model/trace_blocks.h"

void hs__trace_init(hs_trace *t, hs_builder *b, hs_param_source *params)
{
    memset(t, 0, sizeof *t);
    t->b = b;
    t->params = params;
    t->max_elements = HS_MODEL_DEFAULT_MAX_TENSOR_ELEMENTS;
    t->dtype = HS_F32;
    t->loop = HS_LOOP_UNROLLED;
    t->max_unrolled_steps = HS_MODEL_DEFAULT_MAX_LAYERS;
}

void hs__trace_settings(hs_trace *to, const hs_trace *from)
{
    to->max_elements = from->max_elements;
    to->dtype = from->dtype;
    to->loop = from->loop;
    to->max_unrolled_steps = from->max_unrolled_steps;
}

bool hs__trace_fits(hs_trace *t, const char *path, int rank,
                    const int64_t *dims)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n = hs__mul_capped(n, dims[i], t->max_elements);
    if (n <= t->max_elements)
        return true;
    char s[160] = "";
    size_t k = 0;
    for (int i = 0; i < rank && k < sizeof s - 24; i++)
        k += (size_t)snprintf(s + k, sizeof s - k, "%s%lld", i ? "," : "",
                              (long long)dims[i]);
    hs__trace_fail(t, path, HS_ERR_LIMIT,
                   "a tensor of shape [%s] would have more than %lld elements "
                   "(limit max_tensor_elements)",
                   s, (long long)t->max_elements);
    return false;
}

hs_instruction *hs__trace_fail(hs_trace *t, const char *path, hs_status s,
                               const char *fmt, ...)
{
    if (!hs_builder_ok(t->b))
        return NULL;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    hs_builder_fail(t->b, s, "%s", msg);
    snprintf(t->fail_path, sizeof t->fail_path, "%s", path ? path : "");
    return NULL;
}

/* Attributes a builder failure (a shape error) to the block being traced
 * unless a more precise path was already recorded. */
static void note_path(hs_trace *t, const char *path)
{
    if (!hs_builder_ok(t->b) && !t->fail_path[0] && path)
        snprintf(t->fail_path, sizeof t->fail_path, "%s", path);
}

static size_t push_prefix(hs_trace *t, const char *sub)
{
    size_t mark = t->prefix_len;
    int n = snprintf(t->prefix + mark, sizeof t->prefix - mark, "%s.", sub);
    if (n > 0 && (size_t)n < sizeof t->prefix - mark)
        t->prefix_len += (size_t)n;
    return mark;
}

static void pop_prefix(hs_trace *t, size_t mark)
{
    t->prefix_len = mark;
    t->prefix[mark] = '\0';
}

static hs_instruction *request_param(hs_trace *t, const char *local,
                                     const hs_shape *shape,
                                     hs_init_kind kind, float bound,
                                     const float *values)
{
    if (!hs_builder_ok(t->b))
        return NULL;
    /* "%s%s" truncated to the buffer, without printf (one per weight). */
    char name[320];
    size_t np = strlen(t->prefix), nl = strlen(local);
    if (np > sizeof name - 1)
        np = sizeof name - 1;
    if (nl > sizeof name - 1 - np)
        nl = sizeof name - 1 - np;
    memcpy(name, t->prefix, np);
    memcpy(name + np, local, nl);
    name[np + nl] = '\0';
    if (!hs__trace_fits(t, NULL, shape->rank, shape->dims))
        return NULL;
    hs_shape typed = *shape;
    if (typed.dtype == HS_F32)
        typed.dtype = t->dtype;
    return t->params->get(t->params, t->b, name, &typed, kind, bound,
                          values);
}

hs_instruction *hs__trace_param(hs_trace *t, const char *local,
                                const hs_shape *shape, hs_init_kind kind,
                                float bound)
{
    return request_param(t, local, shape, kind, bound, NULL);
}

hs_instruction *hs__trace_param_values(hs_trace *t, const char *local,
                                       const hs_shape *shape,
                                       const float *values)
{
    return request_param(t, local, shape, HS_INIT_VALUES, 0, values);
}

static int64_t last_dim(const hs_instruction *x)
{
    return x->shape.rank ? x->shape.dims[x->shape.rank - 1] : 1;
}

/* Checks the size of x with its last axis resized to out. */
static bool output_fits(hs_trace *t, const hs_instruction *x, int64_t out)
{
    int64_t dims[HS_MAX_RANK];
    int rank = x->shape.rank ? x->shape.rank : 1;
    memcpy(dims, x->shape.dims, sizeof dims);
    dims[rank - 1] = out;
    return hs__trace_fits(t, NULL, rank, dims);
}

/* A bias-free projection submodule: scope and parameter `sub`. */
static hs_instruction *projection(hs_trace *t, const char *sub,
                                  hs_instruction *x, int64_t out)
{
    if (!x || !output_fits(t, x, out))
        return NULL;
    int64_t in = last_dim(x);
    hs_shape ws = hs_shape_make(HS_F32, 2, (int64_t[]){out, in});
    char local[64];
    snprintf(local, sizeof local, "%s.weight", sub);
    hs_builder_push_scope(t->b, sub);
    hs_instruction *w = hs__trace_param(t, local, &ws, HS_INIT_UNIFORM,
                                        hs__param_fan_in_bound(&ws));
    hs_instruction *y = hs__nn_linear(t->b, x, w, NULL);
    hs_builder_pop_scope(t->b);
    return y;
}

/* ---- blocks --------------------------------------------------------------- */

static hs_instruction *trace_linear(hs_trace *t, const hs_block *blk,
                                    hs_instruction *x)
{
    if (!output_fits(t, x, blk->features))
        return NULL;
    int64_t in = last_dim(x);
    hs_shape ws = hs_shape_make(HS_F32, 2, (int64_t[]){blk->features, in});
    hs_shape bs = hs_shape_make(HS_F32, 1, &blk->features);
    float bound = hs__param_fan_in_bound(&ws);
    hs_instruction *w =
        hs__trace_param(t, "weight", &ws, HS_INIT_UNIFORM, bound);
    hs_instruction *bias =
        blk->bias ? hs__trace_param(t, "bias", &bs, HS_INIT_UNIFORM, bound)
                  : NULL;
    if (blk->bias && !bias)
        return NULL;
    return hs__nn_linear(t->b, x, w, bias);
}

static hs_instruction *trace_softmax(hs_trace *t, const hs_block *blk,
                                     hs_instruction *x)
{
    int rank = x->shape.rank;
    if (blk->axis < -rank || blk->axis >= rank) {
        char p[300];
        snprintf(p, sizeof p, "%s/axis", blk->path);
        return hs__trace_fail(t, p, HS_ERR_INVALID,
                              "axis %lld is out of range for a %d-D input",
                              (long long)blk->axis, rank);
    }
    return hs__nn_softmax(t->b, x, blk->axis);
}

static hs_instruction *trace_norm(hs_trace *t, const hs_block *blk,
                                  hs_instruction *x)
{
    int64_t f = last_dim(x);
    hs_shape s = hs_shape_make(HS_F32, 1, &f);
    hs_instruction *w = hs__trace_param(t, "weight", &s, HS_INIT_ONES, 0);
    if (blk->type == HS_BLOCK_RMSNORM)
        return hs__nn_rmsnorm(t->b, x, w, (float)blk->eps);
    hs_instruction *bias = hs__trace_param(t, "bias", &s, HS_INIT_ZEROS, 0);
    return hs__nn_layernorm(t->b, x, w, bias, (float)blk->eps);
}

/* Llama-style MLP: down(act(gate(x)) * up(x)), or down(act(up(x))) when not
 * gated (then there is no gate_proj). */
static hs_instruction *trace_mlp(hs_trace *t, const hs_block *blk,
                                 hs_instruction *x)
{
    int64_t f = last_dim(x);
    hs_instruction *h;
    if (blk->gated) {
        hs_instruction *g = projection(t, "gate_proj", x, blk->hidden);
        hs_instruction *u = projection(t, "up_proj", x, blk->hidden);
        h = hs_b_binary(t->b, HS_OP_MULTIPLY,
                        hs__nn_activation(t->b, blk->activation, g), u);
    } else {
        h = hs__nn_activation(t->b, blk->activation,
                              projection(t, "up_proj", x, blk->hidden));
    }
    return projection(t, "down_proj", h, f);
}

static hs_instruction *require_3d(hs_trace *t, const hs_block *blk,
                                  hs_instruction *x)
{
    if (x->shape.rank == 3)
        return x;
    char s[128];
    hs_shape_print(&x->shape, false, s, sizeof s);
    return hs__trace_fail(
        t, blk->path, HS_ERR_INVALID,
        "%s needs a 3-D input [batch, seq, features], got %s; set "
        "input.shape to [batch, seq, features]",
        hs__block_type_name(blk->type), s);
}

/* Multi-head scaled dot-product attention over [B, S, F] with F = H * D:
 * softmax(q k^T / sqrt(D) + causal mask) v, then o_proj. The dots contract
 * per head directly on [B, S, H, D], so only the result is transposed. */
static hs_instruction *trace_attention(hs_trace *t, const hs_block *blk,
                                       hs_instruction *x)
{
    hs_builder *b = t->b;
    if (!require_3d(t, blk, x))
        return NULL;
    int64_t B = x->shape.dims[0], S = x->shape.dims[1], F = x->shape.dims[2];
    int64_t H = blk->heads;
    if (F % H != 0) {
        char p[300];
        snprintf(p, sizeof p, "%s/heads", blk->path);
        return hs__trace_fail(t, p, HS_ERR_INVALID,
                              "heads (%lld) must divide the features (%lld)",
                              (long long)H, (long long)F);
    }
    int64_t D = F / H;
    if (!hs__trace_fits(t, blk->path, 4, (int64_t[]){B, H, S, S}))
        return NULL;
    int64_t bshd[4] = {B, S, H, D};
    hs_instruction *q = hs_b_reshape(b, projection(t, "q_proj", x, F), 4, bshd);
    hs_instruction *k = hs_b_reshape(b, projection(t, "k_proj", x, F), 4, bshd);
    hs_instruction *v = hs_b_reshape(b, projection(t, "v_proj", x, F), 4, bshd);

    hs_dot_dims qk = {.n_lhs_batch = 2, .n_rhs_batch = 2,
                      .n_lhs_contracting = 1, .n_rhs_contracting = 1,
                      .lhs_batch = {0, 2}, .rhs_batch = {0, 2},
                      .lhs_contracting = {3}, .rhs_contracting = {3}};
    hs_instruction *scores = hs_b_dot(b, q, k, &qk); /* [B, H, S, S] */
    if (!scores)
        return NULL;
    scores = hs_b_binary(b, HS_OP_MULTIPLY, scores,
                         hs__nn_fill(b, (float)(1.0 / sqrt((double)D)),
                                     &scores->shape));
    if (blk->causal && scores) {
        /* Query i sees keys j <= i; the others get the lowest float, which
         * softmax turns into exactly 0 as -inf would. */
        hs_shape ss = hs_shape_make(HS_S32, 2, (int64_t[]){S, S});
        hs_instruction *row = hs_b_iota(b, &ss, 0);
        hs_instruction *col = hs_b_iota(b, &ss, 1);
        hs_instruction *keep = hs_b_compare(b, HS_DIR_LE, col, row);
        hs_shape ps = scores->shape;
        ps.dtype = HS_PRED;
        keep = hs_b_broadcast(b, keep, &ps, (int64_t[]){2, 3}, 2);
        scores = hs_b_select(b, keep, scores,
                             hs__nn_fill(b, -FLT_MAX, &scores->shape));
    }
    hs_instruction *probs = hs__nn_softmax(b, scores, 3);
    hs_dot_dims pv = {.n_lhs_batch = 2, .n_rhs_batch = 2,
                      .n_lhs_contracting = 1, .n_rhs_contracting = 1,
                      .lhs_batch = {0, 1}, .rhs_batch = {0, 2},
                      .lhs_contracting = {3}, .rhs_contracting = {1}};
    hs_instruction *ctx = hs_b_dot(b, probs, v, &pv); /* [B, H, S, D] */
    ctx = hs_b_transpose(b, ctx, (int64_t[]){0, 2, 1, 3});
    ctx = hs_b_reshape(b, ctx, 3, (int64_t[]){B, S, F});
    return projection(t, "o_proj", ctx, F);
}

/* Pre-norm Llama decoder layer:
 *     h   = x + attn(input_norm(x))
 *     out = h + mlp(post_norm(h))      (gated SiLU MLP) */
static hs_instruction *trace_decoder(hs_trace *t, const hs_block *blk,
                                     hs_instruction *x)
{
    if (!require_3d(t, blk, x))
        return NULL;
    hs_block norm = {.type = blk->norm, .path = blk->path, .eps = blk->eps};
    hs_block attn = {.type = HS_BLOCK_ATTENTION, .path = blk->path,
                     .heads = blk->heads, .causal = true};
    hs_block mlp = {.type = HS_BLOCK_MLP, .path = blk->path,
                    .hidden = blk->hidden, .activation = HS_BLOCK_SILU,
                    .gated = true};
    hs_instruction *a = hs__trace_block(
        t, &attn, "attn", hs__trace_block(t, &norm, "input_norm", x));
    hs_instruction *h = hs_b_binary(t->b, HS_OP_ADD, x, a);
    hs_instruction *m = hs__trace_block(
        t, &mlp, "mlp", hs__trace_block(t, &norm, "post_norm", h));
    return hs_b_binary(t->b, HS_OP_ADD, h, m);
}

/* Blocks in order, the i-th the submodule "<base><i>". */
static hs_instruction *trace_list(hs_trace *t, const hs_block *const *blocks,
                                  int n, const char *base, hs_instruction *x)
{
    for (int i = 0; i < n && x; i++) {
        char sub[40];
        snprintf(sub, sizeof sub, "%s%d", base, i);
        x = hs__trace_block(t, blocks[i], sub, x);
    }
    return x;
}

/* act(blocks(x) + shortcut(x)): the blocks are submodules "0", "1", ...,
 * the shortcut's "shortcut.0", ... (a ResNet block's downsample). */
static hs_instruction *trace_residual(hs_trace *t, const hs_block *blk,
                                      hs_instruction *x)
{
    hs_instruction *y = trace_list(t, blk->blocks, blk->n_blocks, "", x);
    hs_instruction *s =
        trace_list(t, blk->shortcut, blk->n_shortcut, "shortcut.", x);
    if (y && s && !hs_shape_compatible(&y->shape, &s->shape)) {
        char ys[128], ss[128];
        hs_shape_print(&y->shape, false, ys, sizeof ys);
        hs_shape_print(&s->shape, false, ss, sizeof ss);
        return hs__trace_fail(t, blk->path, HS_ERR_SHAPE,
                              "the residual's blocks give %s but its "
                              "shortcut gives %s; they are added, so they "
                              "must agree (a shortcut with a strided 1x1 "
                              "conv2d matches a strided block)",
                              ys, ss);
    }
    y = hs_b_binary(t->b, HS_OP_ADD, y, s);
    return blk->activation == HS_BLOCK_RELU
               ? hs__nn_activation(t->b, HS_BLOCK_RELU, y)
               : y;
}

static bool is_composite(hs_block_type type)
{
    return type == HS_BLOCK_MLP || type == HS_BLOCK_ATTENTION ||
           type == HS_BLOCK_DECODER || type == HS_BLOCK_SEQUENTIAL ||
           type == HS_BLOCK_RESIDUAL;
}

static hs_instruction *trace_body(hs_trace *t, const hs_block *blk,
                                  hs_instruction *x)
{
    switch (blk->type) {
    case HS_BLOCK_LINEAR: return trace_linear(t, blk, x);
    case HS_BLOCK_RELU:
    case HS_BLOCK_GELU:
    case HS_BLOCK_SILU:
    case HS_BLOCK_TANH:
    case HS_BLOCK_SIGMOID: return hs__nn_activation(t->b, blk->type, x);
    case HS_BLOCK_SOFTMAX: return trace_softmax(t, blk, x);
    case HS_BLOCK_LAYERNORM:
    case HS_BLOCK_RMSNORM: return trace_norm(t, blk, x);
    case HS_BLOCK_MLP: return trace_mlp(t, blk, x);
    case HS_BLOCK_ATTENTION: return trace_attention(t, blk, x);
    case HS_BLOCK_DECODER: return trace_decoder(t, blk, x);
    case HS_BLOCK_SEQUENTIAL:
        return trace_list(t, blk->blocks, blk->n_blocks, "", x);
    case HS_BLOCK_RESIDUAL: return trace_residual(t, blk, x);
    case HS_BLOCK_GRAPH: return hs__trace_graph(t, blk, x, false);
    default:
        if (hs__block_is_vision(blk->type))
            return hs__trace_vision(t, blk, x);
        break;
    }
    return hs__trace_fail(t, blk->path, HS_ERR_INVALID, "unknown block type");
}

hs_instruction *hs__trace_block(hs_trace *t, const hs_block *blk,
                                const char *sub, hs_instruction *x)
{
    if (!x || !hs_builder_ok(t->b))
        return NULL;
    const char *scope =
        sub ? sub
            : is_composite(blk->type) ? NULL : hs__block_type_name(blk->type);
    size_t mark = sub ? push_prefix(t, sub) : t->prefix_len;
    /* A graph block that is a layer by itself puts its "graph" scope in
     * front of each op, unless the op names its own module path. */
    bool graph_leaf = blk->type == HS_BLOCK_GRAPH && !sub;
    if (graph_leaf)
        scope = NULL;
    if (scope)
        hs_builder_push_scope(t->b, scope);
    hs_instruction *y = graph_leaf ? hs__trace_graph(t, blk, x, true)
                                   : trace_body(t, blk, x);
    if (scope)
        hs_builder_pop_scope(t->b);
    pop_prefix(t, mark);
    note_path(t, blk->path);
    return y;
}

hs_instruction *hs__trace_layer(hs_trace *t, const hs_block *blk,
                                const hs_layer_name *name, hs_instruction *x)
{
    char layer[HS_LAYER_NAME_MAX + 32];
    hs__layer_name_format(name, layer, sizeof layer);
    return hs__trace_layer_named(t, blk, layer, x);
}

hs_instruction *hs__trace_layer_named(hs_trace *t, const hs_block *blk,
                                      const char *layer, hs_instruction *x)
{
    /* The root module ("") has neither a scope nor a prefix: its
     * parameters are named as the module's own state_dict. */
    if (!layer[0])
        return hs__trace_block(t, blk, NULL, x);
    hs_builder_push_scope(t->b, layer);
    size_t mark = push_prefix(t, layer);
    hs_instruction *y = hs__trace_block(t, blk, NULL, x);
    pop_prefix(t, mark);
    hs_builder_pop_scope(t->b);
    return y;
}
