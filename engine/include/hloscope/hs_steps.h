/*
 * hs_steps.h - tracing-bound steps and goodput.
 *
 * A lazy-tensor frontend (PyTorch/XLA) traces the whole step on the host
 * every step, looks the traced graph up in the compile cache by its
 * fingerprint (a miss compiles it: the first step), and hands the
 * executable to the device asynchronously: the host traces step k+1 while
 * the device runs step k, until a bounded queue of in-flight steps is full.
 * When tracing a step takes longer than running it, the device idles and
 * goodput (device busy time / wall time) falls below 1.
 *
 *     hs_steps_options o;
 *     hs_steps_options_init(&o);
 *     o.steps = 10;
 *     o.op_overhead_us = hs_frontend_find("lazy-tensor")->op_overhead_us;
 *     hs_steps_result r;
 *     if (hs_steps_run(json, len, &o, &r, &err) == HS_OK) {
 *         printf("goodput %.2f\n", r.summary.goodput);
 *         char *svg; size_t n;
 *         hs_steps_svg(&r, 0, &svg, &n, &err);
 *         hs_steps_result_free(&r);
 *     }
 *
 * Three parts, one concern each:
 *   - hs_steps_schedule: a pure function from per-step host and device
 *     durations and the queue depth to the two-lane timeline (unit-testable
 *     on synthetic timings), and hs_steps_summarize for goodput and MFU;
 *   - hs_frontend_*: the frontend overhead model - a per-op host cost added
 *     to the measured trace time (a model, labelled as one);
 *   - hs_steps_run: the driver that re-traces the model every step for
 *     real, measures trace, cache lookup and compile, takes device times from
 *     the emulator's simulated clock, and schedules them.
 *
 * Host times are measured on this machine (plus the overhead model); device
 * times are simulated (hs_run_stats.sim_seconds). The driver does its host
 * work and device runs one after the other; the overlap between the lanes
 * is what hs_steps_schedule computes from their durations, not threads.
 * docs/STEPS.md describes the model. Reentrant; no global state.
 */
#ifndef HLOSCOPE_HS_STEPS_H
#define HLOSCOPE_HS_STEPS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hloscope/hs_compile.h"
#include "hloscope/hs_ir.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HS_STEPS_DEFAULT_QUEUE 2
#define HS_STEPS_MAX_STEPS 100000

/* ------------------------------------------------------------------------ */
/* Scheduling (pure)                                                        */
/* ------------------------------------------------------------------------ */

/* What one step costs, in seconds. */
typedef struct hs_step_timing {
    double host_seconds;   /* host work before the step can be dispatched:
                              trace (+ overhead model), cache lookup,
                              compile on a miss */
    double device_seconds; /* device execution */
} hs_step_timing;

/* Where one step lands on the two lanes (seconds from the start of step 1's
 * host work). */
typedef struct hs_step_slot {
    double host_start, host_end; /* the step's host work */
    double enqueue;      /* handed to the device queue */
    double host_wait;    /* enqueue - host_end: the queue was full */
    double device_start, device_end;
    double device_idle;  /* device_start - the previous step's device_end
                            (step 1: from 0) */
    double wall_seconds; /* device_end - the previous device_end (step 1:
                            device_end): the step's share of wall time */
} hs_step_slot;

/* queue_depth D >= 1: at most D steps are in flight (dispatched and not
 * finished on the device), so the host hands step k over no earlier than
 * the end of step k-D on the device, then starts tracing step k+1 at once:
 *     enqueue[k]      = max(host_end[k], device_end[k-D])
 *     host_start[k+1] = enqueue[k]
 *     device_start[k] = max(enqueue[k], device_end[k-1])
 * D = 0 is synchronous dispatch: the host waits for step k to finish on
 * the device before tracing step k+1 (enqueue[k] = host_end[k],
 * host_start[k+1] = device_end[k]; host_wait[k] is that wait).
 * out has room for n slots. HS_ERR_INVALID for a negative or non-finite
 * duration, a negative depth or n < 0. */
hs_status hs_steps_schedule(const hs_step_timing *t, int64_t n, int queue_depth,
                            hs_step_slot *out, hs_error *err);

typedef struct hs_steps_summary {
    int64_t steps;
    int64_t steady_steps;        /* steps 2..n (all n when n == 1) */
    double makespan_seconds;     /* device_end of the last step */
    double steady_wall_seconds;  /* device_end[n] - device_end[1] */
    double steady_device_seconds;/* device busy over the steady steps */
    double steady_idle_seconds;  /* device idle over the steady steps */
    double steady_host_seconds;  /* host work over the steady steps */
    double step_seconds;         /* steady_wall / steady_steps */
    /* steady_device / steady_wall (0 when the wall is 0). Step 1 and its
     * compile are excluded. */
    double goodput;
    /* flops per step x steady steps / (steady_wall x peak FLOP/s). */
    double mfu;
    /* In most steady steps (more than half) the device idles more than
     * 1% of the step's wall time waiting for the host: the steps are
     * host-bound (tracing-bound); else device-bound. A median, so that
     * one slow trace does not decide it; goodput counts every step. */
    bool host_bound;
} hs_steps_summary;

/* Goodput and MFU over steps 2..n of a schedule (over the one step when
 * n == 1). flops_per_step and peak_flops may be 0 (mfu is then 0). */
void hs_steps_summarize(const hs_step_timing *t, const hs_step_slot *s,
                        int64_t n, double flops_per_step, double peak_flops,
                        hs_steps_summary *out);

/* ------------------------------------------------------------------------ */
/* Frontend overhead model                                                  */
/* ------------------------------------------------------------------------ */

/* A MODEL of what a real frontend adds per traced op on the host (Python,
 * the dispatcher, IR node creation), on top of hloscope's own measured
 * tracing. Figures are illustrative; docs/STEPS.md says what they rest on. */
typedef struct hs_frontend_preset {
    const char *name;      /* "hloscope", "lazy-tensor", "eager-python" */
    double op_overhead_us; /* host microseconds per traced op */
    const char *basis;     /* where the figure comes from */
} hs_frontend_preset;

const hs_frontend_preset *hs_frontend_presets(int *count);
const hs_frontend_preset *hs_frontend_find(const char *name); /* or NULL */

/* ------------------------------------------------------------------------ */
/* Driver                                                                   */
/* ------------------------------------------------------------------------ */

typedef enum hs_steps_execute {
    /* Execute step 1 on the emulator; later steps reuse its simulated
     * duration (hs_step_record.device_measured is false for them). */
    HS_STEPS_EXECUTE_FIRST = 0,
    /* Execute every step on the emulator. */
    HS_STEPS_EXECUTE_ALL
} hs_steps_execute;

typedef struct hs_steps_options {
    int64_t steps;          /* >= 1; default 10 */
    int queue_depth;        /* >= 0; default HS_STEPS_DEFAULT_QUEUE */
    double op_overhead_us;  /* >= 0; the frontend model; default 0 */
    const char *frontend;   /* label for reports; NULL = "custom" unless
                               op_overhead_us is 0 ("hloscope") */
    bool train;             /* the step is the training step (the model
                               needs a "train" section), else the forward
                               pass */
    const char *loop;       /* hs_model_options.loop */
    const char *residuals;  /* hs_model_options.residuals (with train) */
    const char *device;     /* NULL: the model's */
    int64_t batch;          /* hs_model_options.batch */
    const char *pipeline;   /* NULL: the default pipeline */
    hs_steps_execute execute;
    /* Optional: a cache and metrics the caller owns (NULL: the driver
     * makes its own for the run, so step 1 misses). */
    hs_compile_cache *cache;
    hs_metrics *metrics;
    /* Absolute CLOCK_MONOTONIC time in ns (hs_now_ns) after which the run
     * stops with HS_ERR_CANCELLED, "deadline exceeded after K of N steps";
     * 0 = no deadline. Checked before setup, before every step and between
     * a step's trace and its compile, and passed down to the compile
     * (hs_compile_options.timeout_ms, between passes) and the forward
     * device run (hs_run_options.deadline_ns, inside the interpreter). The
     * training step's device run (hs_train_run) has no deadline of its
     * own: the deadline is checked before it and before the next step. */
    int64_t deadline_ns;
    /* Set to true from any thread to stop the run the same way
     * (HS_ERR_CANCELLED, "steps cancelled after K of N steps"); passed to
     * the compile and the forward device run too. May be NULL. */
    atomic_bool *cancel;
} hs_steps_options;

void hs_steps_options_init(hs_steps_options *o);

typedef struct hs_step_record {
    int64_t step;            /* 1-based */
    int64_t traced_ops;      /* instructions the step's trace produced */
    double trace_seconds;    /* measured: model trace (+ autodiff for train) */
    double overhead_seconds; /* the model: traced_ops x op_overhead_us */
    double lookup_seconds;   /* measured: fingerprint + cache probe (hit) */
    double compile_seconds;  /* measured: compile on a miss, else 0 */
    bool cache_hit;
    uint64_t fingerprint;
    double device_seconds;   /* simulated */
    bool device_measured;    /* executed on the emulator this step, else
                                the simulated duration of step 1 reused */
    double flops;
    hs_step_slot slot;
    double goodput;          /* device_seconds / slot.wall_seconds */
    double mfu;              /* flops / (slot.wall_seconds x peak) */
} hs_step_record;

typedef struct hs_steps_result {
    int64_t n;
    hs_step_record *steps;   /* [n] */
    hs_steps_summary summary;
    char model[128];         /* model name */
    char device[64];         /* device preset */
    double peak_flops;
    char frontend[64];
    double op_overhead_us;
    int queue_depth;
    bool train;
    int loop;                /* hs_loop_mode */
    int64_t uncached_compiles, cached_compiles; /* counted over the run */
} hs_steps_result;

/* Runs o->steps steps of the model in json (len bytes): each step traces
 * the model again (hs_model_load shapes_only, and the training step build
 * when o->train), compiles through the cache (a miss on step 1, hits after
 * when the graph is stable), and executes on the emulated device per
 * o->execute (the model's weights and input are loaded once, outside the
 * steps, as they would already be on the device). Then schedules and
 * summarizes. Fills *out (free with hs_steps_result_free). Past
 * o->deadline_ns or once *o->cancel is set, returns HS_ERR_CANCELLED
 * with the number of steps completed in err's message and *out empty
 * (everything the run allocated is freed). */
hs_status hs_steps_run(const char *json, size_t len, const hs_steps_options *o,
                       hs_steps_result *out, hs_error *err);
void hs_steps_result_free(hs_steps_result *r);

/* hs_steps_schedule + hs_steps_summarize over records whose durations are
 * filled in (host = trace + overhead + lookup + compile), filling their
 * slots, per-step goodput and MFU, and r->summary. */
hs_status hs_steps_reschedule(hs_steps_result *r, hs_error *err);

/* ------------------------------------------------------------------------ */
/* Output                                                                   */
/* ------------------------------------------------------------------------ */

/* JSON text (malloc'ed; NULL on host OOM):
 *   {"model", "device", "peak_flops", "mode": "forward"|"train",
 *    "loop", "frontend": {"name", "op_overhead_us", "model": true},
 *    "queue_depth", "compile_cache": {"uncached", "cached"},
 *    "summary": {steps, steady_steps, makespan_seconds, steady_wall_seconds,
 *                steady_device_seconds, steady_idle_seconds,
 *                steady_host_seconds, step_seconds, goodput, mfu, verdict},
 *    "steps": [{step, traced_ops, trace_seconds, overhead_seconds,
 *               lookup_seconds, compile_seconds, cache_hit, fingerprint,
 *               device_seconds, device_measured, flops, host_start,
 *               host_end, host_wait, device_start, device_end, device_idle,
 *               wall_seconds, goodput, mfu}]}
 * verdict is "host-bound" or "device-bound"; fingerprint is 16 hex digits. */
char *hs_steps_json(const hs_steps_result *r);

/* The two-lane Gantt chart (hs_render_gantt_dot): host segments trace,
 * overhead (the model), lookup, compile and wait; device segments idle and
 * execute. *segments is malloc'ed (labels point into *labels, one malloc'ed
 * block); the caller frees both. Returns the segment count or -1 on OOM. */
struct hs_gantt_segment;
int64_t hs_steps_gantt_segments(const hs_steps_result *r,
                                struct hs_gantt_segment **segments,
                                char **labels);

/* The chart as DOT (title = model, frontend, goodput), and laid out as SVG
 * by hs_render_layout (timeout_ms <= 0: the default). */
hs_status hs_steps_dot(const hs_steps_result *r, char **out, size_t *out_len,
                       hs_error *err);
hs_status hs_steps_svg(const hs_steps_result *r, int64_t timeout_ms, char **out,
                       size_t *out_len, hs_error *err);

#ifdef __cplusplus
}
#endif
#endif
