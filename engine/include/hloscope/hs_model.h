/*
 * hs_model.h - the model description (JSON v1) loader and model tracer.
 *
 * A model description names an input shape and a list of blocks (linear,
 * attention, decoder, ...; see docs/MODEL_FORMAT.md). Loading validates it,
 * expands `repeat`, traces the forward pass into an HLO module with the
 * builder, and draws deterministic initial weights and input data from the
 * seed:
 *
 *     hs_error err;
 *     hs_model *m = hs_model_load_file("examples/mlp.json", NULL, &err);
 *     if (!m) { char msg[1024]; hs_error_format(&err, msg, sizeof msg); ... }
 *     // m->module: ENTRY parameters 0 = x, 1..n = m->params in state_dict
 *     // order (with "loop": "scan", a repeat's parameters are stacked:
 *     // one [L, ...] entry parameter per name, see hs_model_stack),
 *     // ROOT = the output.
 *     hs_tensor *args[256];
 *     int n = hs_model_args(m, args, 256);   // x, then every parameter
 *     hs_model_free(m);
 *
 * Errors say where: syntax errors carry err->line / err->column, schema
 * errors carry the JSON pointer of the offending value in err->path
 * ("/layers/0/block/features") and a message that suggests the closest known
 * key or value. Everything the loader allocates belongs to the hs_model and
 * is freed with it. The loader has no global state and is reentrant.
 */
#ifndef HLOSCOPE_HS_MODEL_H
#define HLOSCOPE_HS_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hloscope/hs_ir.h"
#include "hloscope/hs_tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Options                                                                  */
/* ------------------------------------------------------------------------ */

/* Documented defaults of the loader's limits (a 0 field in
 * hs_model_limits means "use the default"). */
#define HS_MODEL_DEFAULT_MAX_LAYERS 4096            /* blocks after repeat */
#define HS_MODEL_DEFAULT_MAX_TENSOR_ELEMENTS (INT64_C(1) << 28) /* 1 GiB f32 */
#define HS_MODEL_DEFAULT_MAX_JSON_DEPTH 32
/* max_tensor_elements is clamped to this (2^40), which keeps every shape
 * product the tracer forms inside int64. */
#define HS_MODEL_MAX_TENSOR_ELEMENTS_CAP (INT64_C(1) << 40)
#define HS_MODEL_DEFAULT_DEVICE "tpu-v5e"

typedef struct hs_model_limits {
    /* Blocks after expanding repeat, counted at every nesting level (a
     * sequential of 3 blocks counts 4). */
    int64_t max_layers;
    /* Elements of any one tensor: the input, a parameter, or any value the
     * traced module computes (attention scores, MLP hidden, ...). */
    int64_t max_tensor_elements;
    /* Nesting of JSON arrays and objects, checked before parsing. */
    int max_json_depth;
} hs_model_limits;

typedef struct hs_model_options {
    const char *loop;   /* "unrolled" | "scan"; NULL keeps the JSON's.
                           "scan" traces every top-level repeat of 2 or
                           more copies once, as a while loop over stacked
                           weights (docs/SCAN.md) */
    const char *device; /* device name; NULL keeps the JSON's */
    const char *residuals; /* "save" | "remat" | "offload" | "remat_offload"
                              | "auto"; NULL keeps the JSON's (an offload
                              list is dropped when this replaces it) */
    int64_t batch;      /* > 0 replaces input.shape[0]; 0 keeps it */
    hs_model_limits limits;
    /* Trace and size only: no initial weights, input or target are drawn
     * (params[i].value, input and target stay NULL). For analysis of models
     * too large to hold in host memory. */
    bool shapes_only;
} hs_model_options;

/* ------------------------------------------------------------------------ */
/* The loaded model                                                         */
/* ------------------------------------------------------------------------ */

typedef enum hs_loop_mode { HS_LOOP_UNROLLED = 0, HS_LOOP_SCAN } hs_loop_mode;

typedef enum hs_residuals {
    HS_RESIDUALS_SAVE = 0, /* keep activations for the backward pass */
    HS_RESIDUALS_REMAT,    /* recompute them */
    HS_RESIDUALS_OFFLOAD,  /* keep them in host memory */
    HS_RESIDUALS_AUTO,     /* offload what must go so that the step fits
                              HBM, with the least exposed transfer time */
    HS_RESIDUALS_REMAT_OFFLOAD /* keep only each layer's input, in host
                                  memory, and recompute the rest */
} hs_residuals;

/* The JSON's spelling of a policy ("save", "remat_offload", ...), NULL
 * past the last one; hs_residuals_parse is its inverse. */
const char *hs_residuals_name(hs_residuals r);
bool hs_residuals_parse(const char *name, hs_residuals *out);
/* "save, remat, offload, auto, remat_offload", for error messages. */
const char *hs_residuals_known(void);

typedef enum hs_loss { HS_LOSS_MSE = 0, HS_LOSS_CROSS_ENTROPY } hs_loss;
typedef enum hs_target_kind { HS_TARGET_ZEROS = 0, HS_TARGET_RANDOM } hs_target_kind;
typedef enum hs_optimizer_kind { HS_OPT_SGD = 0, HS_OPT_ADAM } hs_optimizer_kind;

typedef struct hs_train_config {
    bool enabled; /* the description has a "train" section */
    hs_loss loss;
    hs_target_kind target;
    hs_optimizer_kind optimizer;
    double lr;
    double beta1, beta2, eps; /* adam only: 0.9, 0.999, 1e-8 by default */
    int64_t steps;            /* >= 1 */
} hs_train_config;

/* How a parameter's initial values are drawn (see hs_model_fill). */
typedef enum hs_init_kind {
    HS_INIT_UNIFORM = 0, /* U(-bound, bound) */
    HS_INIT_ZEROS,
    HS_INIT_ONES,
    HS_INIT_VALUES /* the description's own values (a graph param's
                      "values": an exported buffer such as a running mean) */
} hs_init_kind;

typedef struct hs_model_param {
    const char *name; /* PyTorch state_dict name: "layers.2.attn.q_proj.weight" */
    hs_shape shape;   /* f32 */
    /* The entry parameter that holds it (1..n_args-1; 0 is the input):
     * this parameter itself when slice is -1, else the stacked parameter
     * m->stacks[stack], whose slice `slice` along the leading axis it is. */
    int64_t number;
    int64_t slice;    /* -1, or the index of the layer within its stack */
    int stack;        /* index into m->stacks, or -1 */
    hs_init_kind init_kind;
    float bound;      /* HS_INIT_UNIFORM: 1/sqrt(fan_in) */
    const float *values; /* HS_INIT_VALUES: the elements (the model owns
                            them), else NULL */
    /* Initial values; NULL when shapes_only. For a parameter of a stack,
     * a view of its slice of the stack's tensor (the values exist once;
     * writing through either is seen by both; the data is only 4-byte
     * aligned). Either way the model owns it. */
    hs_tensor *value;
    float *init;      /* = hs_tensor_f32(value), or NULL */
} hs_model_param;

/* A stacked entry parameter of a scanned repeat (loop "scan"): one per
 * per-layer parameter name of the repeated block, shape [L, ...]. Slice k
 * holds the values of "layers.<first_layer + k>.<local>"; the per-layer
 * parameters keep their names and values in m->params (see docs/SCAN.md). */
typedef struct hs_model_stack {
    const char *name;    /* entry parameter name: "layers.0-49.attn.q_proj.weight" */
    const char *local;   /* name within the layer: "attn.q_proj.weight" */
    int64_t number;      /* entry parameter number */
    int64_t first_layer; /* layer of slice 0 */
    hs_shape shape;      /* f32 [L, ...the per-layer shape] */
    hs_tensor *value;    /* owned (its slices are the per-layer values);
                            NULL when shapes_only */
} hs_model_stack;

typedef struct hs_model_desc hs_model_desc; /* the validated block tree */

typedef struct hs_model {
    const char *name;   /* "model" when absent */
    uint64_t seed;      /* 0 when absent */
    const char *device; /* HS_MODEL_DEFAULT_DEVICE when absent */
    hs_loop_mode loop;
    hs_residuals residuals;
    /* "residuals": {"offload": [names]}: these residuals (op_name paths)
     * go to host memory, the others are saved (residuals = SAVE). */
    const char *const *offload_names;
    int n_offload_names;
    hs_train_config train;

    hs_shape input_shape;  /* f32 [batch, features] or [batch, seq, features];
                              s32 token ids with "input": {"ids": N} */
    hs_shape output_shape; /* f32, shape of the module's root */
    int n_layers;          /* top-level blocks after repeat expansion */

    hs_module *module; /* the traced forward pass (owned) */
    int n_params;
    hs_model_param *params; /* state_dict order (= entry parameters 1..n
                               when nothing is scanned) */
    int64_t param_elements; /* sum of all parameter elements */
    /* Entry parameters, the input included: 1 + n_params unrolled; fewer
     * when scanned repeats feed stacked parameters. */
    int n_args;
    int n_stacks;
    hs_model_stack *stacks; /* entry parameters of scanned repeats */

    hs_tensor *input;  /* x ~ U(-1, 1), stream "input"; NULL if shapes_only */
    /* train only (else NULL): mse: f32 of output_shape, zeros or U(-1,1)
     * from stream "target"; cross_entropy: s32 class indices in
     * [0, classes) of output_shape without its last axis. */
    hs_tensor *target;

    hs_model_desc *desc; /* internal */
    hs_arena *arena;     /* internal: names, params, desc */
} hs_model;

/* Loads a model description from JSON text (len bytes, need not be
 * NUL-terminated). opts may be NULL. Returns NULL and fills *err (which may
 * be NULL) on failure: HS_ERR_PARSE for syntax (line/column set),
 * HS_ERR_INVALID for schema and semantic errors (path set), HS_ERR_LIMIT when
 * a limit is exceeded, HS_ERR_NOMEM on host OOM. */
hs_model *hs_model_load(const char *json_text, size_t len,
                        const hs_model_options *opts, hs_error *err);
/* hs_model_load on a description already parsed with jansson (a server
 * that read it from a request body): the same checks, limits and errors,
 * without printing and parsing it again. root is borrowed. Syntax errors
 * cannot occur; HS_ERR_LIMIT when it nests deeper than
 * limits.max_json_depth. */
struct json_t;
hs_model *hs_model_load_json(const struct json_t *root,
                             const hs_model_options *opts, hs_error *err);
/* Draws the initial weights, input and target of a model loaded with
 * shapes_only, in place: m->module is untouched, so whatever was compiled
 * from it still fits. Nothing happens when they are drawn already. */
hs_status hs_model_materialize(hs_model *m, hs_error *err);
/* Reads path and calls hs_model_load. HS_ERR_IO when it cannot be read. */
hs_model *hs_model_load_file(const char *path, const hs_model_options *opts,
                             hs_error *err);
void hs_model_free(hs_model *m);

/* Fills args[0..] with the entry arguments in parameter order (input, then
 * each entry parameter's value: a parameter's own tensor, or for a scanned
 * repeat the stacked tensor); returns how many there are (m->n_args, which
 * is 1 + n_params when nothing is scanned and never more), or -1 when
 * shapes_only was set or cap is too small. The tensors still belong to the
 * model. Reads only: safe to call from several threads. */
int hs_model_args(const hs_model *m, hs_tensor **args, int cap);

/* Arguments for an imported HLO module's entry parameters, as `run` makes
 * them for a .hlo file: one tensor per array leaf (a tuple-shaped
 * parameter gives one per leaf, depth first, as hs_device_run binds them);
 * float leaves (f16, bf16, f32, f64, the f8 types) ~ U(-1, 1) drawn in f32
 * from seed 0 and stream <leaf name>, then rounded once to their type;
 * integer and pred leaves zeros. Returns a malloc'ed array of *n new tensors (free each with
 * hs_tensor_free, then the array), or NULL with *err (host OOM). */
hs_tensor **hs_model_hlo_args(const hs_module *m, int *n, hs_error *err);
/* The same arguments given instead of drawn: leaf L read from
 * dir/<name of L>.npy (as `run --dump DIR` writes them under params/),
 * which must hold the leaf's element type and dims. NULL with *err naming
 * the leaf and the file when one is missing, unreadable or of another
 * shape. dir NULL: hs_model_hlo_args. */
hs_tensor **hs_model_hlo_args_read(const hs_module *m, const char *dir, int *n,
                                   hs_error *err);
/* The name of argument leaf `leaf` of hs_model_hlo_args: the parameter's
 * name, then ".i" per tuple index ("arg_tuple.1" is the second element of
 * parameter arg_tuple). false when there is no such leaf. */
bool hs_model_hlo_arg_name(const hs_module *m, int leaf, char *buf,
                           size_t size);

/* Index of the parameter with that state_dict name, or -1. */
int hs_model_find_param(const hs_model *m, const char *name);

/* Effective limits: every 0 field of in (which may be NULL) replaced by its
 * default. */
hs_model_limits hs_model_limits_resolve(const hs_model_limits *in);

/* ---- deterministic random numbers ------------------------------------- */

/* The counter-based generator behind every initial value: element i of the
 * stream named `stream` under `seed` is
 *     key  = splitmix64(splitmix64(seed) ^ fnv1a64(stream))
 *     bits = splitmix64(key + i * 0x9E3779B97F4A7C15)
 *     u    = (bits >> 40) * 2^-24                       in [0, 1)
 *     out  = lo + (hi - lo) * u                         (float arithmetic)
 * where splitmix64(z) is Vigna's step: z += 0x9E3779B97F4A7C15, then
 * z = (z ^ z>>30) * 0xBF58476D1CE4E5B9, z = (z ^ z>>27) * 0x94D049BB133111EB,
 * z ^ z>>31; and fnv1a64 is 64-bit FNV-1a over the name's bytes
 * so a value depends only on (seed, stream name, index): a parameter gets
 * the same values whether the model is unrolled or scanned. */
void hs_model_fill_uniform(uint64_t seed, const char *stream, float lo,
                           float hi, float *out, int64_t n);
/* Fills out with a parameter's initial values by its init kind. */
void hs_model_fill_param(uint64_t seed, const hs_model_param *p, float *out);

#ifdef __cplusplus
}
#endif
#endif
