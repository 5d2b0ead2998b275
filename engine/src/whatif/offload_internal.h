/*
 * offload_internal.h - the pieces of the offload what-if (offload.c):
 * which values a step saves for later (lifetimes.c) and where the copies
 * that move them go in the compiled schedule (prefetch.c).
 * docs/WHATIF.md, "Host offload".
 */
#ifndef HLOSCOPE_OFFLOAD_INTERNAL_H
#define HLOSCOPE_OFFLOAD_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "hloscope/hs_buffers.h"
#include "hloscope/hs_device.h"
#include "hloscope/hs_ir.h"

/* A value idle for a long time between two of its uses. Positions are in
 * the entry computation's schedule. */
typedef struct hs__saved_value {
    /* defines its own device buffer, or the get-tuple-element that reads
     * an element of a tuple-shaped result */
    const hs_instruction *value;
    int64_t bytes;
    int def;           /* where it is defined (an element: where its
                          tuple-shaped producer is) */
    int idle_from;     /* the last use before the idle gap (or def) */
    int idle_to;       /* the first use after it */
    double idle_seconds; /* compute time strictly inside the gap */
    bool chosen;
} hs__saved_value;

typedef struct hs__lifetimes {
    int n_positions;
    double step_seconds;     /* compute time of the whole entry */
    int64_t *live;           /* predicted device bytes live per position */
    int n;                   /* values idle for a quarter of the step */
    hs__saved_value *values; /* largest first */
    /* Two of them nest (one defined earlier and used again later than the
     * other): a backward pass consumes what the forward saved in reverse
     * order. */
    bool nested;
    int64_t idle_values_bytes;
    /* Device values that are not candidates, counted: those of loop
     * bodies and called computations, and tuple elements read by several
     * get-tuple-elements. */
    struct hs__not_candidate {
        int64_t count, bytes;
    } called, shared_elements;
} hs__lifetimes;

/* Fraction of the step's compute time a value must stay idle to count as
 * saved for later. */
#define HS_OFFLOAD_IDLE_FRACTION 0.25

/* The saved values of m (compiled and scheduled; ba its buffer assignment,
 * finish the entry's clock from hs_device_estimate_clock). */
hs_status hs__find_saved_values(const hs_module *m,
                                const hs_buffer_assignment *ba,
                                const double *finish, hs__lifetimes *out,
                                hs_error *err);
void hs__lifetimes_free(hs__lifetimes *l);

/* Marks values chosen, largest first, until the predicted device peak is at
 * most target, then unmarks those the rest make unnecessary (smallest
 * first). Values already chosen stay chosen. Returns the predicted peak. */
int64_t hs__choose_saved_values(hs__lifetimes *l, int64_t target);

/* Places the copy-start / copy-done pairs of the entry of m (compiled with
 * host-offload-async and scheduled) whose copy-done's id is marked in
 * ours[0..n_ours): an eviction to the host waits in its copy-done as soon
 * as the link has carried it, a prefetch from the host starts as late as
 * lets it arrive before its use. */
hs_status hs__place_offload_copies(hs_module *m, const hs_device_spec *spec,
                                   const bool *ours, int n_ours,
                                   hs_error *err);

#endif
