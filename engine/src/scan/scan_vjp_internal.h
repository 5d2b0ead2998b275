/*
 * scan_vjp_internal.h - what the three parts of the reverse scan share:
 * the loop being differentiated and its reverse state (loopinfo), filled
 * in order by scan_vjp_analyse.c (the loop's elements and which body
 * values depend on a carry), scan_vjp_residuals.c (which values the
 * backward step reads and where each is kept: the reverse state's slots)
 * and scan_vjp_emit.c (the forward loop that saves them, the reverse loop,
 * and the hook hs_scan_while_vjp that runs the three). docs/TRAINING.md
 * describes the state layouts and the residual report.
 */
#ifndef HLOSCOPE_SCAN_VJP_INTERNAL_H
#define HLOSCOPE_SCAN_VJP_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "hloscope/hs_autodiff.h"
#include "hloscope/hs_scan.h"

typedef enum { E_COUNTER, E_CARRY, E_XS, E_INV, E_ACC } ekind;

typedef struct loopinfo {
    hs_builder *b; /* the caller's (autodiff's) builder */
    hs_module *m;
    hs_autodiff_while *w;
    const hs_scan_vjp_options *opts;
    hs_instruction *loop;
    hs_computation *body, *cond;
    int n;
    int64_t N;
    ekind *kind;
    int *idx_by_id; /* body instruction id -> position in body->instrs */
    bool *dep;      /* by body position: depends on a carry (or acc) */
    /* xs-like elements: the body's dynamic-slices of them */
    int n_ds, *ds_pos, *ds_elem;
    /* residuals (body positions) and where each goes */
    int n_res, *res;
    /* cheap data movement (broadcast, reshape, transpose, ...) recomputed
     * in the backward step from residuals rather than saved: by body
     * position */
    bool *keep;
    bool *res_host;
    /* every residual in report order (save's list), and which of them are
     * recomputed instead of stacked (placement HS_SCAN_REMAT) */
    int n_all, *all_pos;
    bool *all_remat, *all_host;
    /* reverse-state layout */
    int n_slots;
    int *slot_ct;   /* by element: slot of its cotangent (carry, xs, inv acc), -1 */
    int *slot_val;  /* by element: slot of its forward value (xs, inv), -1 */
    int *slot_acc;  /* by element: slot of an acc's cotangent, -1 */
    int slot_stack0; /* first stack slot */
    int n_stacks;    /* residual stacks (save/offload) or carries (remat) */
    int *stack_src;  /* body position (residual) or element (remat carry) */
    int slot_pre0;   /* first prefetch slot (offload), -1 */
    int *stack_pre;  /* by stack: prefetch slot or -1 */
    hs_shape *stack_shape; /* per-step shape of each stack */
    /* Offloaded stacks stored one step late: the last step's residuals,
     * still on the device after the forward loop (they are the reverse
     * loop's first prefetched values, never stored), or NULL. */
    hs_instruction **final_stack;
    char scope[256];
} loopinfo;

/* "scan VJP (LOOP): message" in err; returns s. */
hs_status hs__svjp_fail(loopinfo *L, hs_error *err, hs_status s,
                        const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* remat and remat_offload: the forward loop stacks only the carries
 * entering each step (on the device, or in host memory), and the backward
 * step recomputes the body from them. */
static inline bool remat_policy(const loopinfo *L)
{
    return L->opts->policy == HS_SCAN_REMAT ||
           L->opts->policy == HS_SCAN_REMAT_OFFLOAD;
}

/* The shape of n steps of s stacked: [n, s...]. */
static inline hs_shape stacked(const hs_shape *s, int64_t n)
{
    int64_t d[HS_MAX_RANK];
    d[0] = n;
    for (int k = 0; k < s->rank && k + 1 < HS_MAX_RANK; k++)
        d[k + 1] = s->dims[k];
    return hs_shape_make(s->dtype, s->rank + 1, d);
}

/* scan_vjp_analyse.c: the loop's elements (counter, carries, xs, invariants,
 * accumulators) and which body values depend on a carry. */
hs_status hs__svjp_analyse(loopinfo *L, hs_error *err);
/* scan_vjp_residuals.c: the residuals and their placement, the reverse
 * state's layout, and the report the caller asked for. */
hs_status hs__svjp_find_residuals(loopinfo *L, hs_error *err);
bool hs__svjp_layout(loopinfo *L);
hs_shape hs__svjp_slot_shape(const loopinfo *L, int s);
void hs__svjp_report(loopinfo *L);
/* scan_vjp_emit.c: one backward step (also built once in a scratch
 * module to find the residuals). */
bool hs__svjp_reverse_step(loopinfo *L, hs_builder *rb, hs_instruction **slot,
                           hs_instruction **reads, hs_instruction **next,
                           hs_instruction **map, int *fwd_hi);

#endif
