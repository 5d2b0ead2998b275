/*
 * hs_device.h - the emulated accelerator.
 *
 * A device is a spec (memory capacities, peak FLOP/s, bandwidths). Running a
 * module computes real f32 results on the CPU (OpenBLAS for dot) while a
 * simulated clock charges every instruction by a roofline:
 *     t = max(flops / peak_flops, bytes / hbm_bandwidth)
 * and device memory is accounted per buffer (allocated when an instruction
 * produces it, released after its last use). Host transfers run on a
 * separate DMA stream: an async copy-start overlaps the compute that
 * follows it until its copy-done.
 */
#ifndef HLOSCOPE_HS_DEVICE_H
#define HLOSCOPE_HS_DEVICE_H

#include <stdatomic.h>

#include "hloscope/hs_ir.h"
#include "hloscope/hs_tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hs_device_spec {
    const char *name;        /* "tpu-v5e", "teach-16m", ... */
    const char *kind;        /* "tpu", "gpu" or "teaching" */
    double hbm_bytes;        /* device memory capacity */
    double peak_flops;       /* dense bf16/f32 peak the roofline uses */
    double hbm_bandwidth;    /* bytes/s */
    double host_link_bandwidth; /* bytes/s, one direction */
    double host_bytes;       /* host memory capacity for offloaded buffers */
    const char *source;      /* where the figures come from */
} hs_device_spec;

/* The presets, in a stable order. */
const hs_device_spec *hs_device_presets(int *count);
/* NULL when no preset has that name. */
const hs_device_spec *hs_device_find(const char *name);
const char *hs_device_default_name(void); /* "tpu-v5e" */

typedef struct hs_run_stats {
    double sim_seconds;      /* simulated device time */
    double flops;            /* floating-point operations executed */
    double bytes_accessed;   /* operand + result bytes touched */
    int64_t instructions;    /* instructions executed (loops counted) */
    int64_t peak_device_bytes; /* peak of live device buffers */
    int64_t peak_host_bytes;   /* peak of live host (S(5)) buffers */
    double wall_seconds;     /* host time the emulation took */
    /* Copies between device and host (MoveToHost/MoveToDevice, copy and
     * copy-start across memory spaces): part of sim_seconds for now, kept
     * apart so that a DMA stream can overlap them with compute. */
    double host_transfer_seconds;
    double host_transfer_bytes;
    /* The part of the transfers the compute stream waited for: synchronous
     * MoveToHost/MoveToDevice/copy take their whole time (and wait for the
     * DMA stream to be free); an async copy-start runs on the DMA stream
     * and only the wait in its copy-done, if the copy is not finished by
     * then, is exposed. */
    double exposed_transfer_seconds;
} hs_run_stats;

/* ---- memory timeline (docs/MEMORY_TIMELINE.md) --------------------------- */

/* One buffer: allocated when an instruction produces it, released when its
 * last reference dies. Steps count executed instructions in program order
 * (a loop body's instructions once per iteration), from 0. Strings point
 * into the module that ran. */
typedef struct hs_buffer_record {
    const char *instruction; /* producing instruction, or the entry
                                parameter for an argument */
    const char *op_name;     /* its metadata op_name, or NULL */
    const char *computation; /* where the instruction lives */
    int64_t bytes;
    int memory_space;        /* HS_MEMSPACE_DEVICE or HS_MEMSPACE_HOST */
    bool argument;           /* an entry argument (live for the whole run) */
    int64_t alloc_step, free_step; /* free_step -1: live at the end */
    double alloc_time, free_time;  /* simulated seconds; free_time -1 */
} hs_buffer_record;

/* One host-link transfer on the DMA stream. */
typedef struct hs_transfer_record {
    const char *instruction; /* copy-start, MoveToHost, MoveToDevice, copy */
    const char *op_name;
    int64_t bytes;
    int to_memory_space;     /* destination space */
    bool async;              /* copy-start (waited for in its copy-done) */
    int64_t issue_step;
    double issue_time;       /* when the compute stream issued it */
    double start_time, end_time; /* on the DMA stream */
    double exposed_seconds;  /* compute-stream wait caused by it */
} hs_transfer_record;

typedef struct hs_memory_timeline {
    int n_buffers, cap_buffers;
    hs_buffer_record *buffers;     /* in allocation order */
    int n_transfers, cap_transfers;
    hs_transfer_record *transfers; /* in issue order */
    int64_t steps;                 /* instructions executed */
    double end_time;               /* simulated seconds of the run */
} hs_memory_timeline;

void hs_memory_timeline_free(hs_memory_timeline *t); /* frees the arrays */
/* JSON text of t (schema: docs/MEMORY_TIMELINE.md); malloc'ed, NULL on
 * host OOM. spec and stats may be NULL. */
char *hs_memory_timeline_json(const hs_memory_timeline *t,
                              const hs_device_spec *spec,
                              const hs_run_stats *stats);

typedef struct hs_run_options {
    /* When set, receives every buffer and transfer of the run (emptied
     * first; free with hs_memory_timeline_free). */
    hs_memory_timeline *timeline;
    /* Absolute CLOCK_MONOTONIC time in ns after which the run stops with
     * HS_ERR_CANCELLED (checked before every instruction of more than 1e6
     * FLOPs + bytes and every 64 others, loop iterations included); 0 = no
     * deadline. */
    int64_t deadline_ns;
    /* Set to true from any thread to stop the run (HS_ERR_CANCELLED); may
     * be NULL. */
    atomic_bool *cancel;
} hs_run_options;

/* Everything in m the device cannot execute, found without allocating
 * anything, so a caller can refuse a run before it makes the arguments:
 * HS_OK, or the status of the most frequent blocker with a message that
 * counts each kind, most frequent first ("2006 instructions cannot be
 * executed on the emulated device: element type 'bf16' x1980 (first:
 * param.1); opcode 'sort' (sort has no kernel yet) x2 (first: sort.7)")
 * and err->instruction naming the first instruction of that kind. */
hs_status hs_device_check(const hs_module *m, hs_error *err);
/* hs_device_check, and on a refusal *report (when not NULL) receives the
 * whole message (malloc'ed; the caller frees it), which err's fixed
 * message may not hold. */
hs_status hs_device_check_report(const hs_module *m, char **report,
                                 hs_error *err);

/* Runs the entry computation of m with args[i] bound to parameter(i).
 * Outputs are the leaves of the root's (possibly tuple) shape in order,
 * returned as newly allocated tensors in *outputs (an array of *n_outputs
 * that the caller frees with hs_tensors_free). An opcode or element type
 * the interpreter cannot execute gives HS_ERR_UNSUPPORTED naming the
 * instruction; a peak beyond spec->hbm_bytes gives HS_ERR_OOM. */
hs_status hs_device_run(const hs_module *m, const hs_device_spec *spec,
                        hs_tensor *const *args, int n_args,
                        hs_tensor ***outputs, int *n_outputs,
                        hs_run_stats *stats, hs_error *err);
/* hs_device_run with options (opts may be NULL). */
hs_status hs_device_run_ex(const hs_module *m, const hs_device_spec *spec,
                           hs_tensor *const *args, int n_args,
                           hs_tensor ***outputs, int *n_outputs,
                           const hs_run_options *opts, hs_run_stats *stats,
                           hs_error *err);
void hs_tensors_free(hs_tensor **ts, int n);

/* Has the BLAS library take its work buffer now, with one small product.
 * OpenBLAS allocates that buffer (tens of MiB) on its first product and,
 * when the allocation fails, retries for ever: a process that limits its
 * own address space (the server's workers, RLIMIT_AS) calls this before,
 * so that a later product reuses the buffer instead of hanging. */
void hs_device_warm_up(void);

/* The clock of a run of m on spec (NULL: the default preset) without
 * running it: every live instruction in schedule order charged the
 * roofline cost the interpreter charges, a while's condition and body once
 * per iteration of its known_trip_count (once when unknown), host
 * transfers on the same DMA-stream model (async copy-start overlapped
 * until its copy-done). Needs no data, so shapes-only modules can be
 * timed. Fills sim_seconds, flops, bytes_accessed, instructions and the
 * transfer fields of *stats (peaks are 0: buffer assignment gives them,
 * hs_buffers.h). For counted loops and no conditionals, equal to the run's
 * figures. */
hs_status hs_device_estimate(const hs_module *m, const hs_device_spec *spec,
                             hs_run_stats *stats, hs_error *err);
/* hs_device_estimate, and the compute stream's clock along the entry
 * computation: finish[k] (m->entry->n_instrs elements) is the simulated
 * time at which instruction k of the entry, in schedule order, has
 * finished (an instruction that is not charged: the time before it).
 * The offload what-if places its copies by this clock, so that they are
 * timed by the one cost model. finish may be NULL. */
hs_status hs_device_estimate_clock(const hs_module *m,
                                   const hs_device_spec *spec,
                                   double *finish, hs_run_stats *stats,
                                   hs_error *err);

/* What the estimate charged one instruction over the whole run: every
 * execution (a loop body's instruction once per iteration, as the totals
 * count it), the roofline seconds of its own cost (host transfers: on the
 * host link). A fused instruction is charged through its fusion and gets
 * nothing; a while, call or conditional gets what its computations were
 * charged, so the entry's instructions add up to the totals (seconds: to
 * the sum of charges, which is sim_seconds when no transfer overlaps
 * compute). Dead instructions and parameters get zeros. */
typedef struct hs_instruction_cost {
    double flops, bytes_accessed, seconds;
    double executions;
} hs_instruction_cost;

/* hs_device_estimate, and each[id] (m->next_id elements, by instruction
 * id; zeroed first) what it charged each instruction: the per-instruction
 * figures of the one cost model, for the graph overlays. */
hs_status hs_device_estimate_each(const hs_module *m,
                                  const hs_device_spec *spec,
                                  hs_instruction_cost *each,
                                  hs_run_stats *stats, hs_error *err);

#ifdef __cplusplus
}
#endif
#endif
