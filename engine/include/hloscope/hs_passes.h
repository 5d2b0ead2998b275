/*
 * hs_passes.h - the compile pipeline: named passes run in order, each one
 * timed, counted and followed by the verifier when it changed the module,
 * as XLA's HloPassPipeline does.
 *
 *     hs_error err;
 *     hs_pipeline *p = hs_pipeline_parse("verify,fix(simplify,cse,dce)",
 *                                        &err);
 *     hs_pass_context ctx;
 *     hs_pass_context_init(&ctx);
 *     hs_pass_context_set_timeout(&ctx, 5000);     // optional deadline
 *     hs_compile_report rep;
 *     if (hs_pipeline_run(p, m, &ctx, &rep, &err) != HS_OK) ...
 *     char *text = hs_compile_report_format(&rep); // one row per pass
 *     free(text);
 *     hs_pipeline_free(p);
 *
 * A pass is a name and a run function with XLA's contract: rewrite the
 * module in place and say whether anything changed. Built-in passes are
 * listed once in HS_PASS_LIST (the single source of truth, like the opcode
 * table): adding a pass is adding a row there and a file under
 * engine/src/passes/. Pipelines are written as text, so that a pipeline can
 * be named in a request, printed in a report and hashed into a cache key:
 *
 *     spec  := item (',' item)*
 *     item  := pass-name | 'fix(' spec ')'
 *
 * fix(...) runs its passes again and again until none of them changes the
 * module (at most HS_PIPELINE_MAX_FIX_ITERATIONS rounds), as HloPassFix.
 */
#ifndef HLOSCOPE_HS_PASSES_H
#define HLOSCOPE_HS_PASSES_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "hloscope/hs_ir.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Pass context: deadline, cancellation, options                            */
/* ------------------------------------------------------------------------ */

/* Constant folding never creates a literal larger than this by default. */
#define HS_FOLD_MAX_ELEMENTS 1024

typedef struct hs_pass_context {
    /* Absolute CLOCK_MONOTONIC time in ns after which the pipeline stops
     * with HS_ERR_CANCELLED; 0 = no deadline. */
    int64_t deadline_ns;
    /* Set to true (from any thread) to stop the pipeline; may be NULL. */
    atomic_bool *cancel;
    /* Re-verify the module after each pass that changed it (default on). */
    bool verify;
    /* Largest constant (elements) that folding may create. */
    int64_t fold_max_elements;
    /* Opaque data for target-specific passes (scheduling, buffer
     * assignment, offload); the built-in passes ignore it. */
    const void *target;
} hs_pass_context;

void hs_pass_context_init(hs_pass_context *ctx);
/* Sets the deadline to now + ms (ms <= 0 clears it). */
void hs_pass_context_set_timeout(hs_pass_context *ctx, int64_t ms);
/* HS_OK, or HS_ERR_CANCELLED (with a message) when the cancel flag is set
 * or the deadline has passed. Passes call it inside long loops. */
hs_status hs_pass_context_check(const hs_pass_context *ctx, hs_error *err);

/* ------------------------------------------------------------------------ */
/* Passes                                                                   */
/* ------------------------------------------------------------------------ */

/* Rewrites m in place; sets *changed when it modified anything. Returns
 * HS_OK or an error (HS_ERR_CANCELLED when ctx says stop). */
typedef hs_status (*hs_pass_fn)(hs_module *m, hs_pass_context *ctx,
                                bool *changed, hs_error *err);

typedef struct hs_pass {
    const char *name;        /* as in XLA dumps: "simplify", "cse", ... */
    hs_pass_fn run;
    const char *description; /* one line, for docs and --help */
} hs_pass;

/* X(C identifier, "name", "description"): the built-in passes. Each row
 * has a function hs_pass_<identifier>_run in engine/src/passes/ (schedule
 * and buffer-assignment, which run the buffer analysis, in
 * engine/src/buffers/). */
#define HS_PASS_LIST(X)                                                     \
    X(verify, "verify", "checks the module; never changes it")             \
    X(simplify, "simplify",                                                \
      "algebraic simplification and constant folding of small literals")   \
    X(cse, "cse", "merges identical instructions within a computation")    \
    X(dce, "dce",                                                          \
      "removes dead instructions and computations unreachable from entry") \
    X(while_loop_trip_count, "while-loop-trip-count",                      \
      "annotates counted while loops with known_trip_count")               \
    X(host_offload, "host-offload",                                        \
      "annotate_device_placement -> MoveToHost/MoveToDevice, S(5) buffers") \
    X(fusion, "fusion",                                                    \
      "fuses element-wise producers into consumers (kLoop fusions)")       \
    X(host_offload_async, "host-offload-async",                            \
      "MoveToHost/MoveToDevice -> async copy-start/copy-done pairs")       \
    X(schedule, "schedule",                                                \
      "orders each computation to lower its peak live bytes")             \
    X(buffer_assignment, "buffer-assignment",                              \
      "assigns buffers and computes peak memory; never changes the module")

#define HS_X(id, name, desc)                                                \
    hs_status hs_pass_##id##_run(hs_module *m, hs_pass_context *ctx,        \
                                 bool *changed, hs_error *err);
HS_PASS_LIST(HS_X)
#undef HS_X

/* The built-in pass called name, or NULL. */
const hs_pass *hs_pass_lookup(const char *name);
int hs_pass_count(void);
const hs_pass *hs_pass_at(int index);

/* ------------------------------------------------------------------------ */
/* Compilation report                                                       */
/* ------------------------------------------------------------------------ */

#define HS_REPORT_MAX_PASSES 48

/* One row per distinct pass name, in the order passes first ran. */
typedef struct hs_pass_stats {
    char name[48];
    int runs;                    /* times the pass ran */
    int changed_runs;            /* runs that changed the module */
    int64_t total_ns;            /* wall time of all runs */
    int64_t instructions_before; /* before the first run */
    int64_t instructions_after;  /* after the last run */
} hs_pass_stats;

typedef struct hs_compile_report {
    char pipeline[256]; /* the pipeline spec that ran */
    int n_passes;
    hs_pass_stats passes[HS_REPORT_MAX_PASSES];
    int64_t total_ns; /* whole pipeline, verification included */
    int64_t verify_ns; /* time spent re-verifying after changed passes */
    int64_t instructions_before, instructions_after;
} hs_compile_report;

/* A table like XLA's pass timing dump:
 *   pass                   runs    time(ms)  instrs before  after  changed
 * Returns a malloc'ed string (NULL on host OOM). */
char *hs_compile_report_format(const hs_compile_report *r);
/* The row of pass name, or NULL when it did not run. */
const hs_pass_stats *hs_compile_report_find(const hs_compile_report *r,
                                            const char *name);

/* ------------------------------------------------------------------------ */
/* Pipelines                                                                */
/* ------------------------------------------------------------------------ */

#define HS_PIPELINE_MAX_FIX_ITERATIONS 8

typedef struct hs_pipeline hs_pipeline;

hs_pipeline *hs_pipeline_new(void);
void hs_pipeline_free(hs_pipeline *p);
/* Appends a pass (the struct is copied; name and run must stay valid). */
hs_status hs_pipeline_add(hs_pipeline *p, const hs_pass *pass, hs_error *err);
/* Appends a built-in pass by name; HS_ERR_INVALID naming it if unknown. */
hs_status hs_pipeline_add_named(hs_pipeline *p, const char *name,
                                hs_error *err);
/* Appends sub as a fixed-point group; p takes ownership of sub. */
hs_status hs_pipeline_add_fix(hs_pipeline *p, hs_pipeline *sub,
                              int max_iterations, hs_error *err);
/* Builds a pipeline from its text (grammar above); NULL with *err set. */
hs_pipeline *hs_pipeline_parse(const char *spec, hs_error *err);
/* The pipeline as text, in the grammar above. Valid until p changes. */
const char *hs_pipeline_spec(const hs_pipeline *p);

/* Runs every pass in order on m. report (may be NULL) is filled even when
 * a pass fails or the run is cancelled, with what ran up to that point.
 * On error the module may be partly rewritten but is never left with
 * dangling pointers. */
hs_status hs_pipeline_run(const hs_pipeline *p, hs_module *m,
                          hs_pass_context *ctx, hs_compile_report *report,
                          hs_error *err);

#ifdef __cplusplus
}
#endif
#endif
