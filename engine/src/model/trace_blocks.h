/*
 * trace_blocks.h - turning blocks into builder calls.
 *
 * hs__trace_layer traces one layer (block k of the expanded list) given the
 * builder, its input and a parameter source. The unrolled model calls it
 * once per layer with a source that creates entry parameters; a scan body
 * can call it once with a source that hands out per-layer slices of stacked
 * weights. Either way a parameter is requested by its full state_dict name
 * ("layers.3.attn.q_proj.weight"), in state_dict order.
 */
#ifndef HLOSCOPE_MODEL_TRACE_BLOCKS_H
#define HLOSCOPE_MODEL_TRACE_BLOCKS_H

#include "hloscope/hs_builder.h"
#include "model/model_desc.h"

typedef struct hs_param_source hs_param_source;
struct hs_param_source {
    /* Returns the instruction that holds the parameter, or NULL after
     * recording an error on the builder. */
    hs_instruction *(*get)(hs_param_source *self, hs_builder *b,
                           const char *name, const hs_shape *shape,
                           hs_init_kind kind, float bound,
                           const float *values);
};

typedef struct hs_trace {
    hs_builder *b;
    hs_param_source *params;
    char prefix[256];      /* state_dict prefix of the current module */
    size_t prefix_len;
    char fail_path[256];   /* JSON path of the first error, "" if none */
    /* Elements a tensor may have. Values whose size multiplies up (weights,
     * projections, attention scores, graph attrs) are checked before they
     * are built, so no shape arithmetic can overflow. */
    int64_t max_elements;
    /* The model's "dtype": parameters, and every value the description
     * calls f32 (graph constants, iotas, converts), are of this type. */
    hs_dtype dtype;
    /* The model's "loop": how a graph's scan ops are traced. */
    hs_loop_mode loop;
    /* Most steps a scan op may be unrolled into (limit max_layers). */
    int64_t max_unrolled_steps;
} hs_trace;

void hs__trace_init(hs_trace *t, hs_builder *b, hs_param_source *params);
/* Copies the model's settings (element limit, dtype, loop, step limit)
 * from one trace to another (a probe's, a scan body's). */
void hs__trace_settings(hs_trace *to, const hs_trace *from);

/* Traces a top-level layer: scope "layers.3", parameters
 * "layers.3.<name>" (or the module name the description gave it; the root
 * "" has no scope and no prefix). */
hs_instruction *hs__trace_layer(hs_trace *t, const hs_block *blk,
                                const hs_layer_name *name, hs_instruction *x);
/* The same under another layer name: scope `layer`, parameters
 * "<layer>.<name>" (a scan body traces "layers.*"). */
hs_instruction *hs__trace_layer_named(hs_trace *t, const hs_block *blk,
                                      const char *layer, hs_instruction *x);

/* Traces layers first .. first+count-1, `count` copies of blk from one
 * repeat, as one scan over stacked weights (trace_scan.c): probes the
 * layer's parameters, checks that every copy has the same ones, creates
 * one stacked entry parameter per name in ep (and records the per-layer
 * parameters with their slices), and lowers through hs_scan_layers. */
struct hs_entry_params;
hs_instruction *hs__trace_scanned(hs_trace *t, struct hs_entry_params *ep,
                                  const hs_block *blk, int64_t first,
                                  const hs_layer_name *first_name,
                                  int64_t count, hs_instruction *x);

/* Traces a block inside the current module. sub names the submodule
 * ("attn", "0"): it extends the parameter prefix and the scope; NULL
 * traces the block in place under a scope named after its type. */
hs_instruction *hs__trace_block(hs_trace *t, const hs_block *blk,
                                const char *sub, hs_instruction *x);

/* Graph blocks (trace_graph.c). An op's scope is its own "scope" (a
 * module path) or its name, after "graph/" when graph_scope is set (the
 * block is a layer by itself). */
hs_instruction *hs__trace_graph(hs_trace *t, const hs_block *blk,
                                hs_instruction *x, bool graph_scope);

/* What a graph traces over and returns (trace_graph.c). */
typedef struct hs_graph_io {
    /* The values of its inputs: blk->inputs, or "x" when it has none. */
    hs_instruction *const *inputs;
    /* Its params' values when the caller holds them (a scan body's, carried
     * through the loop), in blk->gparams order; NULL: requested from
     * t->params. */
    hs_instruction *const *params;
    int n_results;
    const char *const *results; /* names of the graph */
    hs_instruction **values;    /* n_results: their values */
    /* The scope of ops that name no module path ("<scope>/<op name>"); a
     * scan body's is its loop's. NULL: "graph/<name>" or "<name>". */
    const char *scope;
} hs_graph_io;

/* A graph param's value: requested from t->params by its name, with its
 * init (or the description's values). */
hs_instruction *hs__trace_graph_param(hs_trace *t, const hs_graph_param *p);

/* Traces a graph block over io's inputs; false after an error (recorded
 * on t). */
bool hs__trace_graph_io(hs_trace *t, const hs_block *blk,
                        const hs_graph_io *io, bool graph_scope);

/* A graph op "scan" (trace_graph_scan.c): args are its init carries then
 * its xs; shared[i] is the enclosing graph's param with the name of the
 * body's param i (that parameter) or NULL (a parameter of its own). Fills
 * out with the final carries, then the stacked ys. With t->loop
 * HS_LOOP_SCAN one `while` (hs_scan: the body traced once, its params
 * passed through the loop unchanged), else the body traced once per step.
 * false after an error (recorded on t, with the JSON path). */
bool hs__trace_graph_scan(hs_trace *t, const hs_graph_op *g,
                          hs_instruction *const *args,
                          hs_instruction *const *shared, bool graph_scope,
                          hs_instruction **out);

/* Records an error found by the loader's own checks: on the builder (the
 * sticky error) and its JSON path. Returns NULL. */
hs_instruction *hs__trace_fail(hs_trace *t, const char *path, hs_status s,
                               const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* false (with an HS_ERR_LIMIT error at path) when a tensor of these
 * dimensions would exceed t->max_elements. */
bool hs__trace_fits(hs_trace *t, const char *path, int rank,
                    const int64_t *dims);

/* Requests parameter prefix+local from the source (size-checked). */
hs_instruction *hs__trace_param(hs_trace *t, const char *local,
                                const hs_shape *shape, hs_init_kind kind,
                                float bound);
/* The same with the description's own values (HS_INIT_VALUES). */
hs_instruction *hs__trace_param_values(hs_trace *t, const char *local,
                                       const hs_shape *shape,
                                       const float *values);

/* Vision blocks (trace_vision.c): conv2d, batchnorm2d, pooling, flatten,
 * dropout, relu6, hardswish, over NCHW inputs like torch.nn. */
hs_instruction *hs__trace_vision(hs_trace *t, const hs_block *blk,
                                 hs_instruction *x);
/* A graph block's convolution, reduce-window and batch-norm-inference
 * ops (trace_vision.c). */
hs_instruction *hs__trace_graph_vision(hs_trace *t, const hs_graph_op *g,
                                       hs_instruction *const *a);

/* ---- neural-network pieces (trace_ops.c), NULL-propagating ---- */

/* A scalar broadcast to shape s, of s's element type (v rounded to it). */
hs_instruction *hs__nn_fill(hs_builder *b, float v, const hs_shape *s);
/* x op y where y's shape lines up with x's trailing dimensions. */
hs_instruction *hs__nn_binary_trailing(hs_builder *b, hs_opcode op,
                                       hs_instruction *x, hs_instruction *y);
/* Reduces the last axis with reducer and broadcasts the result back (a
 * keepdim reduction). */
hs_instruction *hs__nn_reduce_keep(hs_builder *b, hs_instruction *x,
                                   int64_t axis, hs_opcode reducer);
/* x W^T (+ b). */
hs_instruction *hs__nn_linear(hs_builder *b, hs_instruction *x,
                              hs_instruction *w, hs_instruction *bias);
hs_instruction *hs__nn_activation(hs_builder *b, hs_block_type act,
                                  hs_instruction *x);
hs_instruction *hs__nn_softmax(hs_builder *b, hs_instruction *x, int64_t axis);
hs_instruction *hs__nn_layernorm(hs_builder *b, hs_instruction *x,
                                 hs_instruction *w, hs_instruction *bias,
                                 float eps);
hs_instruction *hs__nn_rmsnorm(hs_builder *b, hs_instruction *x,
                               hs_instruction *w, float eps);

#endif
