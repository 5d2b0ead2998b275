/*
 * model_desc.h - the validated model description: the block tree with
 * `repeat` expanded, and the top-level settings. Built from JSON by
 * hs__model_desc_parse; everything lives in one arena.
 *
 * Shape-dependent checks (attention needs a 3-D input, heads divide
 * features, graph ops agree on shapes) happen while tracing, where the
 * shapes are known; every block keeps its JSON path for those errors.
 */
#ifndef HLOSCOPE_MODEL_MODEL_DESC_H
#define HLOSCOPE_MODEL_MODEL_DESC_H

#include <jansson.h>

#include "hloscope/hs_model.h"
#include "model/json_schema.h"

/* X(ENUM, "type name") */
#define HS_BLOCK_LIST(X)        \
    X(LINEAR, "linear")         \
    X(RELU, "relu")             \
    X(GELU, "gelu")             \
    X(SILU, "silu")             \
    X(TANH, "tanh")             \
    X(SIGMOID, "sigmoid")       \
    X(SOFTMAX, "softmax")       \
    X(LAYERNORM, "layernorm")   \
    X(RMSNORM, "rmsnorm")       \
    X(MLP, "mlp")               \
    X(ATTENTION, "attention")   \
    X(DECODER, "decoder")       \
    X(SEQUENTIAL, "sequential") \
    X(GRAPH, "graph")           \
    /* conv2d .. hardswish: the vision blocks (hs__block_is_vision) */ \
    X(CONV2D, "conv2d")         \
    X(BATCHNORM2D, "batchnorm2d") \
    X(MAXPOOL2D, "maxpool2d")   \
    X(AVGPOOL2D, "avgpool2d")   \
    X(ADAPTIVE_AVGPOOL2D, "adaptive_avgpool2d") \
    X(FLATTEN, "flatten")       \
    X(DROPOUT, "dropout")       \
    X(RELU6, "relu6")           \
    X(HARDSWISH, "hardswish")   \
    X(RESIDUAL, "residual")

typedef enum hs_block_type {
#define HS_X(e, n) HS_BLOCK_##e,
    HS_BLOCK_LIST(HS_X)
#undef HS_X
    HS_BLOCK_COUNT
} hs_block_type;

/* a * b saturated at cap + 1 (a, b >= 0), for size checks that cannot
 * overflow. */
int64_t hs__mul_capped(int64_t a, int64_t b, int64_t cap);

const char *hs__block_type_name(hs_block_type t);
bool hs__block_is_activation(hs_block_type t);
/* conv2d, batchnorm2d, the pooling blocks, flatten, dropout, relu6 and
 * hardswish: the blocks of vision_desc.c and trace_vision.c. */
bool hs__block_is_vision(hs_block_type t);

/* ---- graph blocks ---- */

typedef struct hs_graph_param {
    const char *name; /* local name: the state_dict name is layers.k.<name> */
    hs_shape shape;
    hs_init_kind init;
    const float *values; /* init HS_INIT_VALUES: every element */
} hs_graph_param;

typedef enum hs_graph_op_kind {
    HS_GOP_HLO = 0,
    HS_GOP_PLACE_TO_HOST,
    HS_GOP_PLACE_TO_DEVICE,
    HS_GOP_SCAN /* torch_xla's scan(fn, init, xs): see hs_graph_scan */
} hs_graph_op_kind;

typedef struct hs_block hs_block;

/* A graph op "scan" (graph_scan_desc.c): scan(fn, init, xs) with fn a
 * graph of its own, the body. The op's args are the init carries then the
 * xs (n_carry + n_xs names of the enclosing graph); the body's inputs are
 * its carry names then its x names (one slice of each xs per step); its
 * params are shared by every step. The op defines the names in outputs:
 * the final carries, then the ys stacked along a new axis 0. */
/* Most names in a scan's init, xs, outputs, or its body's carry, x, y
 * lists (hs_scan's HS_SCAN_MAX_YS). */
#define HS_SCAN_MAX_NAMES 64

typedef struct hs_graph_scan {
    int n_carry, n_xs, n_ys;
    const hs_block *body;   /* a graph block whose inputs are
                               carry..., x... */
    const char **new_carry; /* n_carry body names: the carries a step
                               returns */
    const char **ys;        /* n_ys body names: what a step emits */
    const char **outputs;   /* n_carry + n_ys names of the enclosing graph */
} hs_graph_scan;

/* Parsed attributes; -1 counts mean "absent, use the default". */
typedef struct hs_graph_op {
    const char *name;
    const char *scope; /* module path for op_name ("layers.3/self_attn"),
                          NULL: the op's name */
    const char *path; /* JSON pointer of the op object */
    hs_graph_op_kind kind;
    hs_opcode opcode;
    int n_args;
    const char **args;

    hs_direction direction; /* compare */
    hs_dtype dtype;         /* convert */
    int n_shape;            /* broadcast, reshape, constant, iota: shape */
    int64_t shape[HS_MAX_RANK];
    int n_dims; /* broadcast, transpose, reduce: dimensions */
    int64_t dims[HS_MAX_RANK];
    int64_t dimension; /* concatenate, iota */
    int n_start, n_limit, n_stride; /* slice */
    int64_t start[HS_MAX_RANK], limit[HS_MAX_RANK], stride[HS_MAX_RANK];
    int n_lc, n_rc, n_lb, n_rb; /* dot */
    int64_t lc[HS_MAX_RANK], rc[HS_MAX_RANK], lb[HS_MAX_RANK],
        rb[HS_MAX_RANK];
    hs_opcode reducer; /* reduce, reduce-window */
    double value;      /* constant; epsilon of batch-norm-inference */
    /* convolution and reduce-window (vision_desc.c): per spatial (conv)
     * or per operand (reduce-window) dimension; -1 counts: absent */
    int n_win, n_wstride, n_pad_lo, n_pad_hi, n_dil;
    int64_t win[HS_MAX_RANK], wstride[HS_MAX_RANK], pad_lo[HS_MAX_RANK],
        pad_hi[HS_MAX_RANK], dil[HS_MAX_RANK];
    int64_t groups;         /* convolution: feature_group_count */
    const char *dim_labels; /* convolution, NULL: bf01_oi01->bf01 */
    const hs_graph_scan *scan; /* HS_GOP_SCAN */
} hs_graph_op;

/* The settings of the NCHW vision blocks (conv2d, pooling, batchnorm2d,
 * flatten), as torch.nn spells them; [0] is height, [1] width. */
typedef struct hs_vision {
    int64_t out_channels;    /* conv2d */
    int64_t kernel[2], stride[2], padding[2], dilation[2];
    int64_t groups;          /* conv2d */
    bool count_include_pad;  /* avgpool2d */
    int64_t output_size[2];  /* adaptive_avgpool2d */
    int64_t start_dim;       /* flatten */
    bool training;           /* batchnorm2d: batch statistics */
} hs_vision;

/* ---- blocks ---- */

struct hs_block {
    hs_block_type type;
    const char *path; /* JSON pointer of the block object */

    int64_t features;         /* linear */
    bool bias;                /* linear */
    int64_t axis;             /* softmax */
    double eps;               /* layernorm, rmsnorm */
    int64_t hidden;           /* mlp, decoder */
    hs_block_type activation; /* mlp */
    bool gated;               /* mlp */
    int64_t heads;            /* attention, decoder */
    bool causal;              /* attention */
    hs_block_type norm;       /* decoder: LAYERNORM or RMSNORM */

    int n_blocks; /* sequential, after repeat expansion */
    const hs_block **blocks;

    int n_inputs; /* graph: the names bound before its params; 0: "x" (a
                     scan body: its carries, then its slices of xs) */
    const char **inputs;
    int n_gparams; /* graph */
    hs_graph_param *gparams;
    int n_ops;
    hs_graph_op *ops;
    const char *output;
    const char *output_path;

    hs_vision vision; /* conv2d, pooling, batchnorm2d, flatten */
    int n_shortcut;   /* residual: the shortcut's blocks (0: identity) */
    const hs_block **shortcut;
};

/* Longest module name a description may give a layer. */
#define HS_LAYER_NAME_MAX 200

/* A top-level layer's module name: base "layers" and index 3 name
 * "layers.3" (the default: the position in the expanded list); index -1
 * names the base alone ("norm", or "" for the root module). */
typedef struct hs_layer_name {
    const char *base;
    int64_t index;
} hs_layer_name;

/* A module path as PyTorch names submodules and state: non-empty segments
 * of letters, digits and '_' joined by '.' ("layers.3.attn", "0.bias"), at
 * most max_len long, or "" (the root module). */
bool hs__valid_module_path(const char *s, size_t max_len);

/* Writes a layer's module name ("layers.3", "norm", "" for the root);
 * returns its length. */
size_t hs__layer_name_format(const hs_layer_name *n, char *buf, size_t size);

struct hs_model_desc {
    const char *name;
    uint64_t seed;
    const char *device;
    hs_loop_mode loop;
    hs_residuals residuals;
    const char **offload_names; /* residuals: {"offload": [...]} */
    int n_offload_names;
    hs_train_config train;
    hs_shape input_shape; /* dtype, or s32 token ids when input_ids > 0 */
    hs_dtype dtype;       /* "dtype": F32, BF16 or F16 */
    int64_t input_ids;    /* "ids": ids are drawn in [0, input_ids) */
    int n_layers; /* after expansion; copies of a repeat share one block */
    const hs_block **layers;
    hs_layer_name *layer_names; /* n_layers */
    int64_t total_blocks; /* at every nesting level, for max_layers */
};

/* Validates root and builds the description in arena a. Options override
 * loop, device and batch. false with err filled (path set) on failure. */
bool hs__model_desc_parse(const json_t *root, const hs_model_options *opts,
                          const hs_model_limits *limits, hs_arena *a,
                          hs_model_desc *out, hs_error *err);

/* Parses the keys of a vision block (vision_desc.c): conv2d, pooling,
 * batchnorm2d, flatten. */
bool hs__vision_desc_parse(js_walker *w, const json_t *obj, hs_block *blk);
/* Parses the attrs of a graph block's convolution, reduce-window and
 * batch-norm-inference ops (vision_desc.c); at is the attrs object and
 * the walker stands at it. */
bool hs__vision_attrs_parse(js_walker *w, const json_t *at, hs_arena *a,
                            hs_graph_op *g);

/* Parses the graph-specific keys of block object obj (graph_desc.c). */
bool hs__graph_desc_parse(js_walker *w, const json_t *obj, hs_arena *a,
                          const hs_model_limits *limits, hs_block *blk);

/* A scan body's graph (graph_desc.c): params and ops of obj over the
 * inputs blk->inputs (already set), then each key of result_keys (NULL
 * terminated, e.g. "new_carry", "y") a list of names of the body, read
 * into results[k] with its length in n_results[k]. The walker stands at
 * obj. */
bool hs__graph_body_parse(js_walker *w, const json_t *obj, hs_arena *a,
                          const hs_model_limits *limits, hs_block *blk,
                          const char *const *result_keys,
                          const char ***results, int *n_results);

/* A graph's own name (an op, an input of a scan body): letters, digits
 * and '_', not starting with a digit (graph_desc.c). */
bool hs__graph_identifier(const char *s);

/* The names a graph op defines in the enclosing graph: its name, or a
 * scan's outputs. */
int hs__graph_op_n_defs(const hs_graph_op *g);
const char *hs__graph_op_def(const hs_graph_op *g, int k);

/* Parses a graph op {"op": "scan", ...} at the walker's path
 * (graph_scan_desc.c): its init and xs (names of the enclosing graph,
 * checked by has_name), its body and outputs. */
bool hs__graph_scan_parse(js_walker *w, const json_t *op, hs_arena *a,
                          const hs_model_limits *limits,
                          bool (*has_name)(const void *ns, const char *s),
                          const char *const *(*known)(const void *ns),
                          const void *ns, hs_graph_op *g);

#endif
