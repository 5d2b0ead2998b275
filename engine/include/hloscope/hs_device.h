/*
 * hs_device.h - the emulated accelerator.
 *
 * A device is a spec (memory capacities, peak FLOP/s, bandwidths). Running a
 * module computes real f32 results on the CPU (OpenBLAS for dot) while a
 * simulated clock charges every instruction by a roofline:
 *     t = max(flops / peak_flops, bytes / hbm_bandwidth)
 * and device memory is accounted per buffer (allocated when an instruction
 * produces it, released after its last use).
 */
#ifndef HLOSCOPE_HS_DEVICE_H
#define HLOSCOPE_HS_DEVICE_H

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
} hs_run_stats;

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
void hs_tensors_free(hs_tensor **ts, int n);

#ifdef __cplusplus
}
#endif
#endif
