/*
 * hs_whatif.h - what scan, host offloading and sharding would do to a
 * user's own module (issue 15): the module a user dumped is analysed as it
 * is, then rewritten the way scan_layers / place_to_host / a partitioner
 * would have written it, and both are compiled and measured.
 *
 *     hs_whatif_options o;
 *     hs_whatif_options_init(&o);
 *     o.device = "tpu-v5e";
 *     hs_whatif w;
 *     if (hs_whatif_analyse(module, &o, &w, &err) == HS_OK) {
 *         json_t *j = hs_whatif_json(&w);   // the CLI's and REST's answer
 *         ...
 *         hs_whatif_free(&w);
 *     }
 *
 * Four sections, each computed by its own file under engine/src/whatif/:
 *   - repeats + scan (reroll*.c): runs of structurally identical
 *     consecutive blocks from the group tree (hs_groups.h), each rewritten
 *     into its own `while` over stacked per-layer parameters; both modules
 *     compiled, and run on the same inputs when the module is executable.
 *   - offload (offload.c): activations produced in the forward part and
 *     consumed much later placed in host memory with the offload passes.
 *   - sharding (sharding.c): `sharding={...}` annotations applied to give
 *     per-device shapes and a per-device peak.
 * A section that cannot be analysed on this module is not an error of the
 * whole: it says so (analysed = false) and why (reason), and the others
 * still answer. hs_whatif_analyse fails only on what stops every section
 * (an unknown device, out of memory, a deadline).
 */
#ifndef HLOSCOPE_HS_WHATIF_H
#define HLOSCOPE_HS_WHATIF_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "hloscope/hs_groups.h"
#include "hloscope/hs_ir.h"

#ifdef __cplusplus
extern "C" {
#endif

struct json_t;

typedef struct hs_whatif_options {
    const char *device;   /* preset name; NULL: the default preset */
    /* offload: the device memory the step must fit in, bytes; <= 0: the
     * device's HBM. */
    double budget;
    /* scan: run the module and its reroll on the same drawn inputs when
     * they are executable and their arguments + peak fit max_run_bytes
     * (<= 0: no limit); false: compile only. */
    bool run_equivalence;
    double max_run_bytes;
    /* Absolute hs_now_ns() time after which the analysis stops with
     * HS_ERR_CANCELLED (0: none), and a flag that stops it (may be NULL). */
    int64_t deadline_ns;
    atomic_bool *cancel;
} hs_whatif_options;

void hs_whatif_options_init(hs_whatif_options *o);

/* One run of repeated layers. */
typedef struct hs_whatif_repeat {
    int64_t count;              /* layers in the run */
    int64_t block_instructions; /* instructions in each layer */
    const char *first;          /* first instruction of the first layer */
    const char *last;           /* last instruction of the last layer */
    const char *path;           /* its group path ("run.0", "layers.*") */
} hs_whatif_repeat;

/* What the reroll made of one run: every run of repeated layers, and
 * every numbered sibling scope of the entry (layers.0, layers.1, ... that
 * the tree did not find identical), in the order they were tried. Each
 * run that rerolls becomes its own while. */
typedef struct hs_whatif_scan_run {
    const char *path;        /* its group path */
    int64_t layers;          /* layers in the run */
    bool rerolled;
    int64_t layers_rerolled; /* in the loop; those unlike the others stay
                                unrolled, and note says which and why */
    const char *note;        /* why not, or which layers were kept out */
} hs_whatif_scan_run;

typedef struct hs_whatif_scan {
    bool analysed;
    char reason[512]; /* !analysed: why (e.g. which instruction differs
                         between two blocks, as scan_layers' check says) */
    const char *path; /* the largest run that was rerolled (every one
                         rerolled says so in its repeats entry) */
    int loops;        /* runs rerolled, each its own while */
    int n_runs;
    hs_whatif_scan_run *runs; /* every run, what became of it and why */
    int64_t instructions_before, instructions_after;
    double compile_seconds_before, compile_seconds_after;
    /* 1: both ran and every output is bit-identical; 0: they differ
     * (max_abs_difference says by how much); -1: not run (note says why). */
    int equivalent;
    double max_abs_difference;
    char note[512];
    hs_module *rerolled; /* the rewritten module (owned) */
} hs_whatif_scan;

/* Device values the offload what-if leaves out, and why. */
typedef struct hs_whatif_not_candidate {
    const char *kind;   /* "called_computation", "shared_tuple_element" */
    int64_t count;
    double bytes;       /* their device bytes, summed */
    const char *reason;
} hs_whatif_not_candidate;

typedef struct hs_whatif_offload {
    bool analysed;
    char reason[512];
    double budget;           /* what the step had to fit, bytes */
    double peak_before, peak_after; /* device peak, bytes */
    double bytes_moved;      /* device -> host and back, bytes */
    double exposed_seconds;  /* transfer time not hidden behind compute */
    bool fits;               /* peak_after <= budget */
    int n_chosen;
    const char **chosen;     /* names of the values placed on the host */
    hs_module *offloaded;    /* the rewritten module (owned) */
    int n_not_candidates;
    hs_whatif_not_candidate not_candidates[2];
} hs_whatif_offload;

typedef struct hs_whatif_sharding {
    bool analysed;
    char reason[512];
    int devices;             /* largest device count the annotations name */
    int64_t annotated;       /* instructions carrying a sharding */
    double global_peak;      /* peak at the global shapes, bytes */
    double per_device_peak;  /* peak at the per-device shapes, bytes */
    char note[512];          /* what is approximated */
} hs_whatif_sharding;

typedef struct hs_whatif {
    const hs_module *module; /* borrowed: what was analysed */
    const char *device;      /* the preset used */
    int n_repeats;
    hs_whatif_repeat *repeats; /* every run found, largest first */
    hs_whatif_scan scan;
    hs_whatif_offload offload;
    hs_whatif_sharding sharding;
    double analysis_seconds;   /* wall time of hs_whatif_analyse */
    struct hs_arena *arena;    /* strings and arrays above live here */
} hs_whatif;

hs_status hs_whatif_analyse(const hs_module *m, const hs_whatif_options *o,
                            hs_whatif *out, hs_error *err);
/* The answer as JSON (docs/API.md, "What-ifs"): {"repeats": [...],
 * "scan": {...}, "offload": {...}, "sharding": {...}}; a section that was
 * not analysed is {"analysed": false, "reason": "..."}. New reference. */
struct json_t *hs_whatif_json(const hs_whatif *w);
void hs_whatif_free(hs_whatif *w);

#ifdef __cplusplus
}
#endif
#endif
