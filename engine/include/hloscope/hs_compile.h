/*
 * hs_compile.h - compiling a module: structural fingerprint, the default
 * pass pipeline, executables, a compile cache and torch_xla-style metrics.
 *
 *     hs_compile_cache *cache = hs_compile_cache_new(64);
 *     hs_metrics *met = hs_metrics_new();
 *     hs_compile_options opts;
 *     hs_compile_options_init(&opts);
 *     opts.device = "tpu-v5e";
 *     hs_executable *exe;
 *     if (hs_compile(traced, &opts, cache, met, &exe, &err) == HS_OK) {
 *         const hs_module *optimized = hs_executable_module(exe);
 *         ...
 *         hs_executable_release(exe);
 *     }
 *     char *report = hs_metrics_format(met); // Counter: CachedCompile ...
 *
 * The caller keeps its module: hs_compile compiles a copy. When the cache
 * already holds an executable for the same fingerprint, device and
 * pipeline, that executable is shared (reference-counted) and nothing is
 * compiled. Cache and metrics are objects the caller owns; both are
 * thread-safe, and nothing here has global mutable state.
 */
#ifndef HLOSCOPE_HS_COMPILE_H
#define HLOSCOPE_HS_COMPILE_H

#include <stdatomic.h>
#include <stdint.h>

#include "hloscope/hs_buffers.h"
#include "hloscope/hs_ir.h"
#include "hloscope/hs_passes.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The cache key is hs_module_fingerprint and a compile works on
 * hs_module_clone: both are IR operations (hs_ir.h). */

/* ------------------------------------------------------------------------ */
/* Default pipeline                                                         */
/* ------------------------------------------------------------------------ */

/* Later passes (offload) are inserted before `schedule` as they land;
 * `schedule` stays last, since it orders what the others produced. Buffer
 * assignment is not a pipeline step: hs_compile runs it on the result. */
#define HS_DEFAULT_PIPELINE                                              \
    "verify,fix(simplify,cse,dce),while-loop-trip-count,host-offload,"   \
    "fusion,host-offload-async,schedule"

/* hs_compile_options.hbm_bytes: the capacity of the preset named by
 * hs_compile_options.device (hs_device_find). */
#define HS_HBM_FROM_DEVICE (-1)

typedef struct hs_compile_options {
    const char *device;   /* part of the cache key; NULL = "" */
    const char *pipeline; /* pipeline spec; NULL = HS_DEFAULT_PIPELINE */
    int64_t timeout_ms;   /* 0 = no deadline */
    atomic_bool *cancel;  /* optional */
    int64_t fold_max_elements; /* 0 = HS_FOLD_MAX_ELEMENTS */
    const void *target;   /* passed to passes as hs_pass_context.target */
    /* Device memory check, as XLA fails a compile that cannot fit: when the
     * assigned device peak exceeds this many bytes, hs_compile fails with
     * HS_ERR_OOM and an out-of-memory report (hs_buffers_oom_report).
     * 0 = no check; HS_HBM_FROM_DEVICE = the HBM of the device preset. */
    int64_t hbm_bytes;
    /* Optional: on HS_ERR_OOM receives the full report (malloc'ed; the
     * caller frees it). err->message holds its first line and as many of
     * the largest buffers as fit. */
    char **oom_report;
} hs_compile_options;

void hs_compile_options_init(hs_compile_options *o);

/* The pipeline opts name (HS_DEFAULT_PIPELINE when opts or its pipeline is
 * NULL). The caller frees it with hs_pipeline_free. */
hs_pipeline *hs_compile_default_pipeline(const hs_compile_options *opts,
                                         hs_error *err);

/* ------------------------------------------------------------------------ */
/* Executables                                                              */
/* ------------------------------------------------------------------------ */

typedef struct hs_executable hs_executable;

const hs_module *hs_executable_module(const hs_executable *e);
const hs_compile_report *hs_executable_report(const hs_executable *e);
/* Fingerprint of the module that was compiled (the cache key's). */
uint64_t hs_executable_fingerprint(const hs_executable *e);
/* The buffer assignment of the optimized module (hs_buffers.h), computed
 * after the pipeline; it lives as long as the executable. */
const hs_buffer_assignment *hs_executable_buffers(const hs_executable *e);
hs_executable *hs_executable_retain(hs_executable *e);
/* Drops one reference; the last one frees the module. NULL is fine. */
void hs_executable_release(hs_executable *e);

/* ------------------------------------------------------------------------ */
/* Metrics                                                                  */
/* ------------------------------------------------------------------------ */

#define HS_METRIC_UNCACHED_COMPILE "UncachedCompile"
#define HS_METRIC_CACHED_COMPILE "CachedCompile"
#define HS_METRIC_TRACE_TIME "TraceTime"
#define HS_METRIC_COMPILE_TIME "CompileTime"
#define HS_METRIC_EXECUTE_TIME "ExecuteTime"

#define HS_METRICS_MAX 32 /* distinct counters, and distinct timings */

typedef struct hs_metrics hs_metrics;

typedef struct hs_timing {
    int64_t count;
    int64_t total_ns, min_ns, max_ns;
} hs_timing;

hs_metrics *hs_metrics_new(void);
void hs_metrics_free(hs_metrics *m);
/* Counters and timings are created on first use; names must be at most
 * 47 characters. Beyond HS_METRICS_MAX names, new names are dropped. */
void hs_metrics_counter_add(hs_metrics *m, const char *name, int64_t delta);
int64_t hs_metrics_counter(hs_metrics *m, const char *name); /* 0 if none */
void hs_metrics_record_time(hs_metrics *m, const char *name, int64_t ns);
/* Zeroes when name has no samples. */
hs_timing hs_metrics_timing(hs_metrics *m, const char *name);
/* Mean in ns (0 without samples). */
double hs_timing_mean(const hs_timing *t);
void hs_metrics_reset(hs_metrics *m);
/* A report like torch_xla's met.metrics_report(): "Metric: <name>" blocks
 * (TotalSamples, Accumulator, Mean, Min, Max) then "Counter: <name>"
 * blocks (Value). Malloc'ed; NULL on host OOM. */
char *hs_metrics_format(hs_metrics *m);

/* ------------------------------------------------------------------------ */
/* Compile cache                                                            */
/* ------------------------------------------------------------------------ */

typedef struct hs_compile_cache hs_compile_cache;

/* capacity <= 0 gives 64 entries; least recently used is evicted. */
hs_compile_cache *hs_compile_cache_new(int capacity);
/* Drops the cache's references; executables still held elsewhere live on. */
void hs_compile_cache_free(hs_compile_cache *c);
int hs_compile_cache_size(hs_compile_cache *c);
int hs_compile_cache_capacity(const hs_compile_cache *c);
void hs_compile_cache_clear(hs_compile_cache *c);

/* ------------------------------------------------------------------------ */
/* Compile                                                                  */
/* ------------------------------------------------------------------------ */

/* Compiles a copy of m with opts' pipeline (m is not modified). cache and
 * metrics may be NULL. On a cache hit *out is the cached executable (one
 * more reference) and CachedCompile is counted; otherwise the copy is
 * compiled, UncachedCompile and CompileTime are recorded and the result is
 * inserted. The caller releases *out. */
hs_status hs_compile(const hs_module *m, const hs_compile_options *opts,
                     hs_compile_cache *cache, hs_metrics *metrics,
                     hs_executable **out, hs_error *err);

#ifdef __cplusplus
}
#endif
#endif
