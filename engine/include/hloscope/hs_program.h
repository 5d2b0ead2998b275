/*
 * hs_program.h - a program: one source (a model description or HLO text)
 * traced, compiled for one device, with everything the compile knows about
 * it computed once: the executable, its buffer assignment, the device's
 * cost estimate and the out-of-memory check. The CLI and every REST
 * handler build their programs here.
 *
 *     hs_program_options o;
 *     hs_program_options_init(&o);
 *     o.device = "tpu-v5e";       // NULL: the model's "device", else the default
 *     o.check_memory = true;      // a peak above HBM fails like XLA (HS_ERR_OOM)
 *     hs_program_source src = {.kind = HS_SOURCE_MODEL, .text = json, .len = n};
 *     hs_error err;
 *     hs_program *p = hs_program_build(&src, &o, &err);  // trace + compile
 *     if (!p) { char msg[1024]; hs_error_format(&err, msg, sizeof msg); ... }
 *     // p->traced: what was compiled (the forward pass, or with o.train the
 *     //            training step); p->optimized: the pipeline's result;
 *     // p->buffers: its buffer assignment (peaks, live buffers)
 *     hs_run_stats est;
 *     hs_program_estimate(p, &est, &err);   // FLOPs, bytes, simulated time
 *     if (est.flops < budget &&                         // refuse before any
 *         hs_program_materialize(p, &err) == HS_OK) {   // weights, input
 *         hs_tensor **outs;
 *         int n_outs;
 *         hs_run_stats st;   // st.flops == est.flops for counted loops
 *         if (hs_program_run(p, NULL, &outs, &n_outs, &st, &err) == HS_OK)
 *             hs_tensors_free(outs, n_outs);
 *     }
 *     hs_program_free(p);
 *
 * A model is traced with shapes only: nothing is allocated for weights or
 * inputs until hs_program_materialize, so a program of any size can be
 * analysed, and a run can be refused on its estimate before a byte of
 * tensor data exists. Tracing and compiling are also available as two
 * steps (hs_program_trace, hs_program_compile) for callers that check the
 * traced module against a policy of their own in between (a server's
 * instruction limit).
 *
 * There is one cost model (the device's: hs_device_estimate), one memory
 * check (hs_compile's, against the device's HBM) and one buffer
 * assignment (the executable's, hs_executable_buffers). A program owns
 * what it made and frees it with hs_program_free; it is not shared between
 * threads, and building programs from many threads at once is safe (the
 * compile cache is the only shared object, and it is thread-safe).
 */
#ifndef HLOSCOPE_HS_PROGRAM_H
#define HLOSCOPE_HS_PROGRAM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hloscope/hs_buffers.h"
#include "hloscope/hs_compile.h"
#include "hloscope/hs_device.h"
#include "hloscope/hs_ir.h"
#include "hloscope/hs_model.h"

#ifdef __cplusplus
extern "C" {
#endif

struct json_t;
struct hs_train_step;

/* ------------------------------------------------------------------------ */
/* Source and options                                                       */
/* ------------------------------------------------------------------------ */

typedef enum hs_source_kind {
    HS_SOURCE_MODEL = 0, /* a model description (docs/MODEL_FORMAT.md) */
    HS_SOURCE_HLO        /* HLO text: one module, or several separated
                            by '// -----' (hs_program_options.module) */
} hs_source_kind;

typedef struct hs_program_source {
    hs_source_kind kind;
    const char *text; /* the description or HLO text, len bytes */
    size_t len;
    /* HS_SOURCE_MODEL only: the description already parsed (borrowed);
     * when set, text is not read. A server passes the body it parsed. */
    const struct json_t *json;
} hs_program_source;

typedef struct hs_program_options {
    /* The model loader's overrides and limits (loop, residuals, batch,
     * limits; device and shapes_only are set by the program). */
    hs_model_options model;
    /* The device preset: NULL keeps the model's "device" (HLO: the
     * default preset). Unknown names are HS_ERR_INVALID, path "/device". */
    const char *device;
    /* Compile the model's training step (hs_train_step_build: forward,
     * backward and optimizer update) instead of its forward pass. */
    bool train;
    const char *pipeline;     /* NULL: HS_DEFAULT_PIPELINE */
    hs_compile_cache *cache;  /* shared compile cache; may be NULL */
    /* Absolute hs_now_ns() time after which compiling stops with
     * HS_ERR_CANCELLED (0: none), and a flag that stops it (may be NULL). */
    int64_t deadline_ns;
    atomic_bool *cancel;
    /* Fail like XLA when the device peak exceeds the device's HBM:
     * HS_ERR_OOM, err->message the report's first line (for a training
     * step, what its scans stack) and the largest buffers;
     * hs_program.oom_report the whole report. */
    bool check_memory;
    /* Optional: on HS_ERR_OOM receives that whole report (malloc'ed; the
     * caller frees it). */
    char **oom_report;
    /* HLO text written for XLA's --split-input-file (modules separated by
     * a line '// -----'): the index, from 0, of the module to compile.
     * -1 (hs_program_options_init's): the text must hold one module, else
     * HS_ERR_INVALID saying how many it holds (path "/module"); an index
     * past the last is HS_ERR_INVALID too. hs_program.n_modules tells a
     * caller that compiles each how many there are. */
    int module;
    /* What a run may take of the host, checked before anything is drawn
     * (hs_program_check_run): the entry arguments plus the peak of the
     * buffer assignment, every memory space. <= 0: no limit.
     * max_run_bytes_name is how the user sets it, quoted in the refusal
     * (e.g. "--max-run-bytes"); NULL: "the run limit". */
    double max_run_bytes;
    const char *max_run_bytes_name;
    /* HLO source: the run's arguments are read from args_dir/<leaf>.npy
     * (hs_model_hlo_args_read) instead of drawn. NULL: drawn. */
    const char *args_dir;
} hs_program_options;

void hs_program_options_init(hs_program_options *o);

/* ------------------------------------------------------------------------ */
/* The program                                                              */
/* ------------------------------------------------------------------------ */

typedef struct hs_program {
    hs_source_kind kind;
    /* Model source: the loaded model (shapes only until materialized).
     * Owned, except in a training-step program made by
     * hs_program_train_step, which borrows its forward program's. */
    hs_model *model;
    /* options.train: the training step built from model (owned); its
     * module is what was compiled. */
    struct hs_train_step *train;
    hs_module *hlo;       /* HLO source: the compiled module (owned) */
    /* HLO source: how many modules the text holds (a split file holds
     * several) and the index of hlo among them. */
    int n_modules, module;
    const hs_module *traced;   /* train->module, model->module or hlo */
    const hs_device_spec *device;

    /* After compiling: */
    hs_executable *exe;
    const hs_module *optimized;           /* hs_executable_module(exe) */
    const hs_buffer_assignment *buffers;  /* hs_executable_buffers(exe) */
    bool cache_hit;                       /* the compile cache answered */
    /* HS_ERR_OOM: XLA's whole report (owned), for a training step with
     * what its scans stack after the first line; err->message holds what
     * fits of it, front doors show this. */
    char *oom_report;
    /* A run refused by hs_program_check_run: the whole refusal (owned;
     * every blocker, however many kinds), of which err->message holds
     * what fits. Front doors show this. */
    char *refusal;

    /* TraceTime, CompileTime, ExecuteTime, CachedCompile, UncachedCompile
     * of this program (owned). */
    hs_metrics *metrics;

    /* After hs_program_materialize: the entry arguments in parameter
     * order (a model's are its tensors; an HLO module's are drawn as `run`
     * draws them, hs_model_hlo_args). */
    hs_tensor **args;
    int n_args;

    /* internal */
    hs_program_options options;
    bool owns_model, has_estimate;
    hs_run_stats estimate;
} hs_program;

/* Source -> traced module (and training step): loads the model with shapes
 * only, or parses and verifies the HLO text; resolves the device. Errors
 * say where (model: JSON pointer or line/column; HLO: line/column, path
 * "/hlo"). TraceTime is recorded. */
hs_program *hs_program_trace(const hs_program_source *src,
                             const hs_program_options *opts, hs_error *err);
/* Traced -> executable, through the options' cache, pipeline, deadline
 * and memory check. On success p->exe, optimized and buffers are set. */
hs_status hs_program_compile(hs_program *p, hs_error *err);
/* hs_program_trace then hs_program_compile. */
hs_program *hs_program_build(const hs_program_source *src,
                             const hs_program_options *opts, hs_error *err);

/* The training step of a compiled forward program's model (which needs a
 * "train" section, else HS_ERR_INVALID path "/train"), compiled for the
 * same device with opts (NULL: fwd's options); the model is borrowed, so
 * fwd must outlive the result. */
hs_program *hs_program_train_step(const hs_program *fwd,
                                  const hs_program_options *opts,
                                  hs_error *err);

/* The device's estimate of one execution of the optimized module
 * (hs_device_estimate: every instruction charged the roofline cost the
 * interpreter charges, while bodies once per iteration of their known
 * trip count): FLOPs, bytes accessed, simulated seconds. Computed on the
 * first call and kept; needs no tensor data. */
hs_status hs_program_estimate(hs_program *p, hs_run_stats *out, hs_error *err);

/* Whether a run may go ahead, decided on shapes alone in one walk of the
 * optimized module (well under a second for 40,000 instructions): every
 * instruction and element type is executable (hs_device_check) and the
 * entry arguments plus the assigned peak fit options.max_run_bytes.
 * Every blocker is in the message, the bytes first (HS_ERR_UNSUPPORTED when
 * something cannot be executed, else HS_ERR_LIMIT), e.g. "arguments need 12.05G > --max-run-bytes
 * 9.31G; 41014 instructions cannot be executed on the emulated device:
 * element type 'bf16' x38341 (first: p.0.lhs.64) ...". */
hs_status hs_program_check_run(hs_program *p, hs_error *err);
/* Bytes of the entry arguments a run draws on the host: every leaf of
 * every entry parameter of the compiled module. */
int64_t hs_program_argument_bytes(const hs_program *p);

/* Draws what a run needs: a model's weights, input (and target), in place
 * (the compiled module still fits), or an HLO module's arguments (one
 * tensor per leaf of a tuple-shaped parameter, in order). Checks the run
 * first (hs_program_check_run). Sets p->args. */
hs_status hs_program_materialize(hs_program *p, hs_error *err);

/* Runs the optimized module on p->device with p->args (materialized
 * first); records ExecuteTime. opts as hs_device_run_ex (may be NULL). */
hs_status hs_program_run(hs_program *p, const hs_run_options *opts,
                         hs_tensor ***outputs, int *n_outputs,
                         hs_run_stats *stats, hs_error *err);

void hs_program_free(hs_program *p);

/* ------------------------------------------------------------------------ */
/* Comparing two modules                                                    */
/* ------------------------------------------------------------------------ */

/* What changed from a to b: added (only in b, in b's order), removed (only
 * in a, in a's order), changed (matched, different opcode or shape) and
 * unchanged, and how many instructions of each opcode either has. The
 * instructions of layers (op_name "layers.3/mlp", a scan body's
 * "layers." with a star for the number, or the group tree's repeated layers where there is no
 * op_name) are matched by their place in the layer - the same place in the
 * same layer, or in a scan body that stands for every layer - so an
 * unrolled model and its scan form differ only by the loop's structure;
 * the others are matched by name across all computations. The lists point
 * into a and b. */
typedef struct hs_module_diff {
    int64_t n_added, n_removed, n_changed, n_unchanged;
    /* of the changed and unchanged: matched by their place in a layer (or
     * by use in one) */
    int64_t n_matched_by_layer;
    const hs_instruction **added;
    const hs_instruction **removed;
    const hs_instruction **changed_a, **changed_b;
    /* Every match (the changed and the unchanged), in a's order, then
     * b's: an instruction of a scan body stands in one pair per unrolled
     * layer it matched. Called computations (reducers, fusions) of matched
     * instructions are matched by structure, instruction by instruction,
     * whatever their names ("add.clone.3" and "region_0.12"). A weight an
     * unrolled layer reads as a parameter of its own matches the scan
     * body's slice of the stacked weight at the same operand ("matched by
     * use"): the same value, the same when the shapes are. pair_changed:
     * whether the pair is among the changed. */
    int64_t n_pairs;
    const hs_instruction **pair_a, **pair_b;
    bool *pair_changed;
    int64_t opcodes_a[HS_OP_COUNT], opcodes_b[HS_OP_COUNT];
} hs_module_diff;

hs_status hs_module_diff_compute(const hs_module *a, const hs_module *b,
                                 hs_module_diff *out, hs_error *err);
void hs_module_diff_free(hs_module_diff *d);

/* The diff laid out side by side (diff_align.c): blocks of a computation
 * of a and the computation of b it is matched to (the one most of its
 * instructions matched; either may be NULL for a computation only one
 * side has), each a list of rows: a matched pair on one row, an
 * instruction only one side has opposite a gap (NULL). Rows follow a's
 * order; b's unmatched instructions come before the first pair that
 * follows them in b. Every instruction of both modules is on at least one
 * row (a scan body's on one row per layer it matched). */
typedef enum hs_diff_status {
    HS_DIFF_SAME,
    HS_DIFF_CHANGED, /* opcode or shape */
    HS_DIFF_ADDED,   /* only in b */
    HS_DIFF_REMOVED  /* only in a */
} hs_diff_status;

typedef struct hs_diff_row {
    const hs_instruction *a, *b;
    hs_diff_status status;
} hs_diff_row;

typedef struct hs_diff_block {
    const hs_computation *a, *b;
    int64_t first_row, n_rows;
} hs_diff_block;

typedef struct hs_diff_alignment {
    int n_blocks;
    hs_diff_block *blocks;
    int64_t n_rows;
    hs_diff_row *rows;
} hs_diff_alignment;

hs_status hs_module_diff_align(const hs_module *a, const hs_module *b,
                               const hs_module_diff *d, hs_diff_alignment *out,
                               hs_error *err);
void hs_diff_alignment_free(hs_diff_alignment *al);

#ifdef __cplusplus
}
#endif
#endif
