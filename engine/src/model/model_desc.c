/* model_desc.c - validates a model description and builds the block tree
 * with `repeat` expanded. */
#include "model/model_desc.h"

#include <stdio.h>
#include <string.h>

#include "model/name_index.h"

static const char *const k_block_names[] = {
#define HS_X(e, n) n,
    HS_BLOCK_LIST(HS_X)
#undef HS_X
    NULL};

const char *hs__block_type_name(hs_block_type t)
{
    return (t >= 0 && t < HS_BLOCK_COUNT) ? k_block_names[t] : "?";
}

bool hs__block_is_activation(hs_block_type t)
{
    return t == HS_BLOCK_RELU || t == HS_BLOCK_GELU || t == HS_BLOCK_SILU ||
           t == HS_BLOCK_TANH || t == HS_BLOCK_SIGMOID;
}

bool hs__block_is_vision(hs_block_type t)
{
    return t >= HS_BLOCK_CONV2D && t <= HS_BLOCK_HARDSWISH;
}

/* State shared by the recursive block parser. */
typedef struct desc_parser {
    js_walker w;
    hs_arena *a;
    const hs_model_limits *limits;
    int depth; /* 0 while parsing the top-level `layers` */
    hs_dtype dtype; /* the model's "dtype" */
} desc_parser;

static bool nomem(desc_parser *p)
{
    return js_fail(&p->w, HS_ERR_NOMEM, NULL, "out of host memory");
}

int64_t hs__mul_capped(int64_t a, int64_t b, int64_t cap)
{
    if (a == 0 || b == 0)
        return 0;
    if (a > (cap + 1) / b)
        return cap + 1;
    int64_t r = a * b;
    return r > cap ? cap + 1 : r;
}

static bool parse_block_list(desc_parser *p, const json_t *arr,
                             const hs_block ***out, int *n_out,
                             int64_t *count, hs_layer_name **names);

size_t hs__layer_name_format(const hs_layer_name *n, char *buf, size_t size)
{
    int len;
    if (n->index < 0)
        len = snprintf(buf, size, "%s", n->base);
    else
        len = snprintf(buf, size, "%s%s%lld", n->base, n->base[0] ? "." : "",
                       (long long)n->index);
    return len < 0 ? 0 : (size_t)len;
}

/* ---- one block ---------------------------------------------------------- */

static const char *const k_linear_keys[] = {"type", "features", "bias", NULL};
static const char *const k_plain_keys[] = {"type", NULL};
static const char *const k_softmax_keys[] = {"type", "axis", NULL};
static const char *const k_norm_keys[] = {"type", "eps", NULL};
static const char *const k_mlp_keys[] = {"type", "hidden", "activation",
                                         "gated", NULL};
static const char *const k_attention_keys[] = {"type", "heads", "causal",
                                               NULL};
static const char *const k_decoder_keys[] = {"type", "heads", "hidden",
                                             "norm", NULL};
static const char *const k_sequential_keys[] = {"type", "blocks", NULL};
static const char *const k_graph_keys[] = {"type", "params", "ops", "output",
                                           NULL};
static const char *const k_conv2d_keys[] = {
    "type",     "out_channels", "kernel_size", "stride", "padding",
    "dilation", "groups",       "bias",        NULL};
static const char *const k_batchnorm_keys[] = {"type", "eps", "training",
                                               NULL};
static const char *const k_maxpool_keys[] = {"type", "kernel_size", "stride",
                                             "padding", "dilation", NULL};
static const char *const k_avgpool_keys[] = {"type", "kernel_size", "stride",
                                             "padding", "count_include_pad",
                                             NULL};
static const char *const k_adaptive_keys[] = {"type", "output_size", NULL};
static const char *const k_flatten_keys[] = {"type", "start_dim", NULL};
static const char *const k_dropout_keys[] = {"type", "p", NULL};
static const char *const k_residual_keys[] = {"type", "blocks", "shortcut",
                                              "activation", NULL};

static const char *const *keys_of(hs_block_type t)
{
    switch (t) {
    case HS_BLOCK_LINEAR: return k_linear_keys;
    case HS_BLOCK_SOFTMAX: return k_softmax_keys;
    case HS_BLOCK_LAYERNORM:
    case HS_BLOCK_RMSNORM: return k_norm_keys;
    case HS_BLOCK_MLP: return k_mlp_keys;
    case HS_BLOCK_ATTENTION: return k_attention_keys;
    case HS_BLOCK_DECODER: return k_decoder_keys;
    case HS_BLOCK_SEQUENTIAL: return k_sequential_keys;
    case HS_BLOCK_GRAPH: return k_graph_keys;
    case HS_BLOCK_CONV2D: return k_conv2d_keys;
    case HS_BLOCK_BATCHNORM2D: return k_batchnorm_keys;
    case HS_BLOCK_MAXPOOL2D: return k_maxpool_keys;
    case HS_BLOCK_AVGPOOL2D: return k_avgpool_keys;
    case HS_BLOCK_ADAPTIVE_AVGPOOL2D: return k_adaptive_keys;
    case HS_BLOCK_FLATTEN: return k_flatten_keys;
    case HS_BLOCK_DROPOUT: return k_dropout_keys;
    case HS_BLOCK_RESIDUAL: return k_residual_keys;
    default: return k_plain_keys;
    }
}

static const char *const k_activations[] = {"relu", "gelu", "silu", "tanh",
                                            "sigmoid", NULL};
static const hs_block_type k_activation_types[] = {
    HS_BLOCK_RELU, HS_BLOCK_GELU, HS_BLOCK_SILU, HS_BLOCK_TANH,
    HS_BLOCK_SIGMOID};
static const char *const k_norms[] = {"rmsnorm", "layernorm", NULL};
static const char *const k_residual_acts[] = {"none", "relu", NULL};

/* A nested block list at obj[key] (a sequential's blocks, a residual's
 * blocks and shortcut); *count gains its blocks. */
static bool parse_nested(desc_parser *p, const json_t *obj, const char *key,
                         const hs_block ***out, int *n, int64_t *count)
{
    const json_t *arr = json_object_get(obj, key);
    if (!arr)
        return js_fail(&p->w, HS_ERR_INVALID, key,
                       "missing required key '%s'", key);
    size_t mark = js_push_key(&p->w, key);
    int64_t inner = 0;
    p->depth++;
    bool ok = parse_block_list(p, arr, out, n, &inner, NULL);
    p->depth--;
    js_pop(&p->w, mark);
    *count += inner;
    return ok;
}

static bool parse_block_fields(desc_parser *p, const json_t *obj,
                               hs_block *blk, int64_t *count)
{
    js_walker *w = &p->w;
    int idx;
    *count = 1;
    switch (blk->type) {
    case HS_BLOCK_LINEAR:
        return js_get_int(w, obj, "features", true, 0, 1, INT64_MAX,
                          &blk->features) &&
               js_get_bool(w, obj, "bias", true, &blk->bias);
    case HS_BLOCK_SOFTMAX:
        return js_get_int(w, obj, "axis", false, -1, -HS_MAX_RANK,
                          HS_MAX_RANK - 1, &blk->axis);
    case HS_BLOCK_LAYERNORM:
        return js_get_number(w, obj, "eps", false, 1e-5, true, &blk->eps);
    case HS_BLOCK_RMSNORM:
        return js_get_number(w, obj, "eps", false, 1e-6, true, &blk->eps);
    case HS_BLOCK_MLP:
        if (!js_get_int(w, obj, "hidden", true, 0, 1, INT64_MAX,
                        &blk->hidden) ||
            !js_get_enum(w, obj, "activation", false, 2, k_activations,
                         &idx) ||
            !js_get_bool(w, obj, "gated", true, &blk->gated))
            return false;
        blk->activation = k_activation_types[idx];
        return true;
    case HS_BLOCK_ATTENTION:
        return js_get_int(w, obj, "heads", true, 0, 1, INT64_MAX,
                          &blk->heads) &&
               js_get_bool(w, obj, "causal", true, &blk->causal);
    case HS_BLOCK_DECODER:
        if (!js_get_int(w, obj, "heads", true, 0, 1, INT64_MAX,
                        &blk->heads) ||
            !js_get_int(w, obj, "hidden", true, 0, 1, INT64_MAX,
                        &blk->hidden) ||
            !js_get_enum(w, obj, "norm", false, 0, k_norms, &idx))
            return false;
        blk->norm = idx == 0 ? HS_BLOCK_RMSNORM : HS_BLOCK_LAYERNORM;
        blk->causal = true;
        blk->gated = true;
        blk->activation = HS_BLOCK_SILU;
        blk->eps = idx == 0 ? 1e-6 : 1e-5;
        return true;
    case HS_BLOCK_SEQUENTIAL:
        return parse_nested(p, obj, "blocks", &blk->blocks, &blk->n_blocks,
                            count);
    case HS_BLOCK_RESIDUAL:
        /* act(blocks(x) + shortcut(x)); activation "relu" is the ReLU
         * after the add of a ResNet block. */
        if (!parse_nested(p, obj, "blocks", &blk->blocks, &blk->n_blocks,
                          count) ||
            (json_object_get(obj, "shortcut") &&
             !parse_nested(p, obj, "shortcut", &blk->shortcut,
                           &blk->n_shortcut, count)) ||
            !js_get_enum(w, obj, "activation", false, 0, k_residual_acts,
                         &idx))
            return false;
        blk->activation = idx == 1 ? HS_BLOCK_RELU : HS_BLOCK_COUNT;
        return true;
    case HS_BLOCK_GRAPH:
        return hs__graph_desc_parse(w, obj, p->a, p->limits, blk);
    default:
        return hs__block_is_vision(blk->type)
                   ? hs__vision_desc_parse(w, obj, blk)
                   : true;
    }
}

/* Parses a block object (with "type") at the walker's current path. */
static const hs_block *parse_block(desc_parser *p, const json_t *obj,
                                   int64_t *count)
{
    js_walker *w = &p->w;
    if (!js_expect_object(w, obj, "a block"))
        return NULL;
    if (!json_object_get(obj, "type")) {
        js_fail(w, HS_ERR_INVALID, NULL,
                "expected a block: an object with \"type\" (one of linear, "
                "relu, gelu, silu, tanh, sigmoid, softmax, layernorm, "
                "rmsnorm, mlp, attention, decoder, sequential, graph, "
                "conv2d, batchnorm2d, maxpool2d, avgpool2d, "
                "adaptive_avgpool2d, flatten, dropout, relu6, hardswish, "
                "residual), or {\"repeat\": N, \"block\": B}");
        return NULL;
    }
    int type;
    if (!js_get_enum(w, obj, "type", true, 0, k_block_names, &type))
        return NULL;
    hs_block *blk = hs_arena_alloc(p->a, sizeof *blk);
    if (!blk) {
        nomem(p);
        return NULL;
    }
    blk->type = (hs_block_type)type;
    blk->path = hs_arena_strdup(p->a, w->path);
    /* A top-level block may name its module ("module"); the key list
     * gains it there only, so a nested one is reported as unknown. */
    const char *known[16] = {NULL};
    const char *const *own = keys_of(blk->type);
    int nk = 0;
    while (own[nk] && nk < 14) {
        known[nk] = own[nk];
        nk++;
    }
    if (p->depth == 0)
        known[nk] = "module";
    if (!js_check_keys(w, obj, known) ||
        !parse_block_fields(p, obj, blk, count))
        return NULL;
    return blk;
}

static const char *const k_repeat_keys[] = {"repeat", "block", "module",
                                            NULL};
static const char *const k_nested_repeat_keys[] = {"repeat", "block", NULL};

bool hs__valid_module_path(const char *s, size_t max_len)
{
    if (strlen(s) > max_len)
        return false;
    if (!*s)
        return true; /* the root */
    bool seg_empty = true;
    for (; *s; s++) {
        if (*s == '.') {
            if (seg_empty)
                return false;
            seg_empty = true;
        } else if (*s == '_' || (*s >= 'a' && *s <= 'z') ||
                   (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9')) {
            seg_empty = false;
        } else {
            return false;
        }
    }
    return !seg_empty;
}

/* The "module" key of a top-level entry: NULL when absent (the layer is
 * then named by its position), *ok false after an error. */
static const char *parse_module(desc_parser *p, const json_t *e, bool *ok)
{
    const char *m = NULL;
    *ok = true;
    if (p->depth != 0 || !json_is_object(e))
        return NULL;
    if (!js_get_string(&p->w, e, "module", false, NULL, &m)) {
        *ok = false;
        return NULL;
    }
    if (m && !hs__valid_module_path(m, HS_LAYER_NAME_MAX)) {
        *ok = js_fail(&p->w, HS_ERR_INVALID, "module",
                      "expected a module path (names of letters, digits and "
                      "'_' joined by '.', at most %d long, or \"\" for the "
                      "root module), got \"%s\"",
                      HS_LAYER_NAME_MAX, m);
        return NULL;
    }
    return m ? hs_arena_strdup(p->a, m) : NULL;
}

/* One entry of a block list: a block, or {"repeat": N, "block": B}. Sets
 * *copies to N (1 for a plain block). */
static const hs_block *parse_entry(desc_parser *p, const json_t *e,
                                   int64_t *copies, int64_t *count)
{
    js_walker *w = &p->w;
    *copies = 1;
    if (!json_is_object(e) || !json_object_get(e, "repeat"))
        return parse_block(p, e, count);
    if (!js_check_keys(w, e, p->depth == 0 ? k_repeat_keys
                                           : k_nested_repeat_keys) ||
        !js_get_int(w, e, "repeat", true, 0, 1, INT64_MAX, copies))
        return NULL;
    const json_t *inner = json_object_get(e, "block");
    if (!inner) {
        js_fail(w, HS_ERR_INVALID, "block", "missing required key 'block'");
        return NULL;
    }
    size_t mark = js_push_key(w, "block");
    const hs_block *blk = NULL;
    if (json_is_object(inner) && json_object_get(inner, "repeat"))
        js_fail(w, HS_ERR_INVALID, NULL,
                "a repeated block cannot itself be a repeat; use a "
                "sequential block or multiply the counts");
    else
        blk = parse_block(p, inner, count);
    js_pop(w, mark);
    return blk;
}

/* Names the expanded top-level layers: "layers.<k>" by position, the
 * entry's "module" for a block, "<module>.<i>" for the i-th copy of a
 * repeat. Two layers with one name would share parameter names, so that
 * is an error at the later entry's "module" (except the root, ""). */
static bool name_layers(desc_parser *p, const json_t *arr,
                        const hs_block **entries, const int64_t *copies,
                        const char **modules, size_t n, int n_expanded,
                        hs_layer_name **names)
{
    (void)entries;
    hs_layer_name *v = hs_arena_alloc(p->a, ((size_t)n_expanded + 1) *
                                                sizeof *v);
    hs__name_index ix;
    if (!v || !hs__name_index_init(&ix, (size_t)n_expanded + 1))
        return nomem(p);
    bool ok = true;
    int k = 0;
    for (size_t i = 0; i < n && ok; i++)
        for (int64_t c = 0; c < copies[i] && ok; c++, k++) {
            bool repeat = json_object_get(json_array_get(arr, i), "repeat");
            if (!modules[i])
                v[k] = (hs_layer_name){"layers", k};
            else
                v[k] = (hs_layer_name){modules[i], repeat ? c : -1};
            char full[HS_LAYER_NAME_MAX + 32];
            hs__layer_name_format(&v[k], full, sizeof full);
            /* The root module may appear around a scan (its blocks have
             * their own parameter names); any other name only once. */
            if (full[0] && hs__name_index_get(&ix, full) >= 0) {
                size_t mark = js_push_index(&p->w, i);
                ok = js_fail(&p->w, HS_ERR_INVALID,
                             modules[i] ? "module" : NULL,
                             "a second layer named \"%s\" (layer %d): its "
                             "parameters would have the same names",
                             full, k);
                js_pop(&p->w, mark);
            } else {
                char *kept = hs_arena_strdup(p->a, full);
                if (!kept)
                    ok = nomem(p);
                else
                    hs__name_index_put(&ix, kept, k);
            }
        }
    hs__name_index_free(&ix);
    *names = v;
    return ok;
}

static bool parse_block_list(desc_parser *p, const json_t *arr,
                             const hs_block ***out, int *n_out,
                             int64_t *count, hs_layer_name **names)
{
    js_walker *w = &p->w;
    int64_t max = p->limits->max_layers;
    if (!json_is_array(arr))
        return js_fail(w, HS_ERR_INVALID, NULL,
                       "expected an array of blocks");
    if (json_array_size(arr) == 0)
        return js_fail(w, HS_ERR_INVALID, NULL,
                       "expected at least one block");

    /* First pass: validate and count, so the expanded array is sized once
     * and bounded by the limit before it is allocated. */
    size_t n = json_array_size(arr);
    const hs_block **entries = hs_arena_alloc(p->a, n * sizeof *entries);
    int64_t *copies = hs_arena_alloc(p->a, n * sizeof *copies);
    const char **modules = hs_arena_alloc(p->a, n * sizeof *modules);
    if (!entries || !copies || !modules)
        return nomem(p);
    int64_t n_expanded = 0, total = 0;
    for (size_t i = 0; i < n; i++) {
        size_t mark = js_push_index(w, i);
        int64_t each = 0;
        const json_t *e = json_array_get(arr, i);
        bool ok = true;
        modules[i] = parse_module(p, e, &ok);
        entries[i] = ok ? parse_entry(p, e, &copies[i], &each) : NULL;
        if (!entries[i]) {
            js_pop(w, mark);
            return false;
        }
        n_expanded += copies[i] > max ? max + 1 : copies[i];
        total += hs__mul_capped(copies[i], each, max);
        if (total > max || n_expanded > max) {
            js_fail(w, HS_ERR_LIMIT, json_object_get(e, "repeat") ? "repeat"
                                                                  : NULL,
                    "the model has more than %lld blocks after expanding "
                    "repeat (limit max_layers)",
                    (long long)max);
            js_pop(w, mark);
            return false;
        }
        js_pop(w, mark);
    }

    const hs_block **list =
        hs_arena_alloc(p->a, (size_t)n_expanded * sizeof *list);
    if (!list)
        return nomem(p);
    int k = 0;
    for (size_t i = 0; i < n; i++)
        for (int64_t c = 0; c < copies[i]; c++)
            list[k++] = entries[i];
    if (names && !name_layers(p, arr, entries, copies, modules, n, k, names))
        return false;
    *out = list;
    *n_out = k;
    *count = total;
    return true;
}

/* ---- top level ---------------------------------------------------------- */

static const char *const k_top_keys[] = {
    "name",  "description", "seed",  "input",  "layers",
    "loop",  "residuals",   "train", "device", "dtype", NULL};
/* The model's floating-point type, in hs_dtype order below. */
static const char *const k_model_dtypes[] = {"f32", "bf16", "f16", NULL};
static const hs_dtype k_model_dtype_vals[] = {HS_F32, HS_BF16, HS_F16};
static const char *const k_input_keys[] = {"shape", "ids", NULL};
static const char *const k_train_keys[] = {"loss", "target", "optimizer",
                                           "steps", NULL};
static const char *const k_sgd_keys[] = {"type", "lr", NULL};
static const char *const k_adam_keys[] = {"type", "lr", "beta1", "beta2",
                                          "eps", NULL};
static const char *const k_loops[] = {"unrolled", "scan", NULL};
/* In hs_residuals order. */
static const char *const k_residuals[] = {"save", "remat", "offload", "auto",
                                          "remat_offload", NULL};

const char *hs_residuals_name(hs_residuals r)
{
    return (int)r >= 0 && (size_t)r < sizeof k_residuals / sizeof *k_residuals
               ? k_residuals[r]
               : NULL;
}

bool hs_residuals_parse(const char *name, hs_residuals *out)
{
    for (int k = 0; name && k_residuals[k]; k++)
        if (strcmp(name, k_residuals[k]) == 0) {
            *out = (hs_residuals)k;
            return true;
        }
    return false;
}

const char *hs_residuals_known(void)
{
    return "save, remat, offload, auto, remat_offload";
}

/* "residuals": "save" | "remat" | "offload" | "auto" | "remat_offload", or
 * {"offload": ["attn/q_proj", ...]}: those residuals on the host, the rest
 * saved on the device. */
static bool parse_residuals(desc_parser *p, const json_t *root,
                            const hs_model_options *opts, hs_model_desc *out)
{
    if (opts && opts->residuals) {
        if (!hs_residuals_parse(opts->residuals, &out->residuals))
            return js_fail(&p->w, HS_ERR_INVALID, "residuals",
                           "unknown residual policy \"%s\" (option); "
                           "expected one of %s", opts->residuals,
                           hs_residuals_known());
        return true;
    }
    const json_t *r = json_object_get(root, "residuals");
    if (!json_is_object(r)) {
        int v = 0;
        if (!js_get_enum(&p->w, root, "residuals", false, 0, k_residuals, &v))
            return false;
        out->residuals = (hs_residuals)v;
        return true;
    }
    static const char *const keys[] = {"offload", NULL};
    size_t mark = js_push_key(&p->w, "residuals");
    const json_t *names = json_object_get(r, "offload");
    if (!js_check_keys(&p->w, r, keys))
        return false;
    if (!json_is_array(names) || json_array_size(names) == 0 ||
        json_array_size(names) > 256)
        return js_fail(&p->w, HS_ERR_INVALID, "offload",
                       "expected a list of 1 to 256 residual names (op_name "
                       "paths such as \"attn/q_proj\" or \"mlp\")");
    size_t n = json_array_size(names);
    out->offload_names = hs_arena_alloc(p->a, sizeof(char *) * n);
    if (!out->offload_names)
        return js_fail(&p->w, HS_ERR_NOMEM, NULL, "out of host memory");
    for (size_t k = 0; k < n; k++) {
        const json_t *v = json_array_get(names, k);
        if (!json_is_string(v) || !json_string_value(v)[0]) {
            size_t m2 = js_push_key(&p->w, "offload");
            js_push_index(&p->w, k);
            js_fail(&p->w, HS_ERR_INVALID, NULL,
                    "expected a residual name (a non-empty string)");
            js_pop(&p->w, m2);
            return false;
        }
        out->offload_names[k] = hs_arena_strdup(p->a, json_string_value(v));
    }
    out->n_offload_names = (int)n;
    out->residuals = HS_RESIDUALS_SAVE;
    js_pop(&p->w, mark);
    return true;
}
static const char *const k_losses[] = {"mse", "cross_entropy", NULL};
static const char *const k_targets[] = {"zeros", "random", NULL};
static const char *const k_optimizers[] = {"sgd", "adam", NULL};

static bool parse_input(desc_parser *p, const json_t *root,
                        const hs_model_options *opts, hs_shape *out,
                        int64_t *ids)
{
    js_walker *w = &p->w;
    const json_t *in = json_object_get(root, "input");
    if (!in)
        return js_fail(w, HS_ERR_INVALID, "input",
                       "missing required key 'input' ({\"shape\": [batch, "
                       "features]} or [batch, seq, features])");
    size_t mark = js_push_key(w, "input");
    int64_t dims[HS_MAX_RANK];
    int rank = 0;
    bool ok = js_expect_object(w, in, "the input") &&
              js_check_keys(w, in, k_input_keys) &&
              js_get_int_array(w, in, "shape", true, 1, INT64_MAX,
                               HS_MAX_RANK, dims, &rank) &&
              /* Token ids for an embedding: s32 in [0, ids); f32 is exact
               * for them up to 2^24, which a one-hot lowering relies on. */
              js_get_int(w, in, "ids", false, 0, 1, INT64_C(1) << 24, ids);
    if (ok && (rank < 2 || rank > 4))
        ok = js_fail(w, HS_ERR_INVALID, "shape",
                     "expected [batch, features], [batch, seq, features] or "
                     "[batch, channels, height, width], got %d dimensions",
                     rank);
    if (ok && opts && opts->batch > 0)
        dims[0] = opts->batch;
    if (ok) {
        int64_t n = 1;
        for (int i = 0; i < rank; i++)
            n = hs__mul_capped(n, dims[i], p->limits->max_tensor_elements);
        if (n > p->limits->max_tensor_elements)
            ok = js_fail(w, HS_ERR_LIMIT, "shape",
                         "the input has more than %lld elements (limit "
                         "max_tensor_elements)",
                         (long long)p->limits->max_tensor_elements);
    }
    if (ok)
        *out = hs_shape_make(*ids > 0 ? HS_S32 : p->dtype, rank, dims);
    js_pop(w, mark);
    return ok;
}

static bool parse_optimizer(desc_parser *p, const json_t *opt,
                            hs_train_config *t)
{
    js_walker *w = &p->w;
    int kind;
    if (!js_expect_object(w, opt, "an optimizer") ||
        !js_get_enum(w, opt, "type", true, 0, k_optimizers, &kind))
        return false;
    t->optimizer = (hs_optimizer_kind)kind;
    if (!js_check_keys(w, opt, kind == HS_OPT_SGD ? k_sgd_keys : k_adam_keys)
        || !js_get_number(w, opt, "lr", true, 0, true, &t->lr))
        return false;
    if (kind == HS_OPT_SGD)
        return true;
    if (!js_get_number(w, opt, "beta1", false, 0.9, false, &t->beta1) ||
        !js_get_number(w, opt, "beta2", false, 0.999, false, &t->beta2) ||
        !js_get_number(w, opt, "eps", false, 1e-8, true, &t->eps))
        return false;
    if (t->beta1 < 0 || t->beta1 >= 1)
        return js_fail(w, HS_ERR_INVALID, "beta1",
                       "expected a number in [0, 1)");
    if (t->beta2 < 0 || t->beta2 >= 1)
        return js_fail(w, HS_ERR_INVALID, "beta2",
                       "expected a number in [0, 1)");
    return true;
}

static bool parse_train(desc_parser *p, const json_t *root,
                        hs_train_config *t)
{
    js_walker *w = &p->w;
    const json_t *tr = json_object_get(root, "train");
    memset(t, 0, sizeof *t);
    if (!tr)
        return true;
    size_t mark = js_push_key(w, "train");
    int loss = 0, target = 0;
    bool ok = js_expect_object(w, tr, "the training settings") &&
              js_check_keys(w, tr, k_train_keys) &&
              js_get_enum(w, tr, "loss", false, 0, k_losses, &loss) &&
              js_get_enum(w, tr, "target", false, 0, k_targets, &target) &&
              js_get_int(w, tr, "steps", false, 1, 1, INT64_MAX, &t->steps);
    const json_t *opt = json_object_get(tr, "optimizer");
    if (ok && !opt)
        ok = js_fail(w, HS_ERR_INVALID, "optimizer",
                     "missing required key 'optimizer' ({\"type\": \"sgd\", "
                     "\"lr\": 0.01} or {\"type\": \"adam\", \"lr\": ...})");
    if (ok) {
        size_t m2 = js_push_key(w, "optimizer");
        ok = parse_optimizer(p, opt, t);
        js_pop(w, m2);
    }
    t->enabled = ok;
    t->loss = (hs_loss)loss;
    t->target = (hs_target_kind)target;
    js_pop(w, mark);
    return ok;
}

/* An option that overrides a JSON value is checked like the JSON value. */
static bool parse_loop(desc_parser *p, const json_t *root,
                       const hs_model_options *opts, hs_loop_mode *out)
{
    int idx = 0;
    if (opts && opts->loop) {
        for (idx = 0; k_loops[idx]; idx++)
            if (strcmp(opts->loop, k_loops[idx]) == 0)
                break;
        if (!k_loops[idx])
            return js_fail(&p->w, HS_ERR_INVALID, "loop",
                           "unknown loop mode \"%s\" (option); expected "
                           "\"unrolled\" or \"scan\"",
                           opts->loop);
    } else if (!js_get_enum(&p->w, root, "loop", false, 0, k_loops, &idx)) {
        return false;
    }
    *out = (hs_loop_mode)idx;
    return true;
}

/* "dtype": the type of the parameters, the input and every activation
 * (docs/MODEL_FORMAT.md, "Element type"). */
static bool parse_dtype(desc_parser *p, const json_t *root, hs_model_desc *d)
{
    int idx = 0;
    if (!js_get_enum(&p->w, root, "dtype", false, 0, k_model_dtypes, &idx))
        return false;
    d->dtype = p->dtype = k_model_dtype_vals[idx];
    if (d->dtype != HS_F32 && json_object_get(root, "train"))
        return js_fail(&p->w, HS_ERR_UNSUPPORTED, "dtype",
                       "training a %s model is not supported (the loss and "
                       "optimizer are f32); drop \"train\" or use \"f32\"",
                       k_model_dtypes[idx]);
    return true;
}

static bool parse_names(desc_parser *p, const json_t *root,
                        const hs_model_options *opts, hs_model_desc *d)
{
    js_walker *w = &p->w;
    const char *name, *device, *descr;
    int64_t seed;
    if (!js_get_string(w, root, "name", false, "model", &name) ||
        !js_get_string(w, root, "description", false, "", &descr) ||
        !js_get_string(w, root, "device", false, HS_MODEL_DEFAULT_DEVICE,
                       &device) ||
        !js_get_int(w, root, "seed", false, 0, 0, INT64_MAX, &seed))
        return false;
    if (!name[0] || strlen(name) > 128)
        return js_fail(w, HS_ERR_INVALID, "name",
                       "expected a name of 1 to 128 characters");
    if (opts && opts->device)
        device = opts->device;
    if (!device[0] || strlen(device) > 64)
        return js_fail(w, HS_ERR_INVALID, "device",
                       "expected a device name of 1 to 64 characters");
    d->name = hs_arena_strdup(p->a, name);
    d->device = hs_arena_strdup(p->a, device);
    d->seed = (uint64_t)seed;
    return d->name && d->device ? true : nomem(p);
}

bool hs__model_desc_parse(const json_t *root, const hs_model_options *opts,
                          const hs_model_limits *limits, hs_arena *a,
                          hs_model_desc *out, hs_error *err)
{
    desc_parser p = {.a = a, .limits = limits};
    js_init(&p.w, err);
    memset(out, 0, sizeof *out);
    if (!json_is_object(root))
        return js_fail(&p.w, HS_ERR_INVALID, NULL,
                       "expected a model description (a JSON object with "
                       "\"input\" and \"layers\")");
    if (!js_check_keys(&p.w, root, k_top_keys) ||
        !parse_names(&p, root, opts, out) ||
        !parse_loop(&p, root, opts, &out->loop) ||
        !parse_dtype(&p, root, out) ||
        !parse_residuals(&p, root, opts, out) ||
        !parse_input(&p, root, opts, &out->input_shape, &out->input_ids) ||
        !parse_train(&p, root, &out->train))
        return false;

    const json_t *layers = json_object_get(root, "layers");
    if (!layers)
        return js_fail(&p.w, HS_ERR_INVALID, "layers",
                       "missing required key 'layers' (a list of blocks)");
    size_t mark = js_push_key(&p.w, "layers");
    bool ok = parse_block_list(&p, layers, &out->layers, &out->n_layers,
                               &out->total_blocks, &out->layer_names);
    js_pop(&p.w, mark);
    return ok;
}
