/*
 * reroll_internal.h - the reroll section's parts, one concern per file:
 *   reroll_plan.c     which layer each instruction is in, whether the
 *                     layers are alike (scan_layers' homogeneity check),
 *                     and how each layer reads what is outside it (slots);
 *   reroll_rewrite.c  the module with each planned run replaced by its
 *                     own `while` (hs_scan);
 *   reroll_measure.c  both modules compiled, and run on the same inputs;
 *   reroll.c          the section: which runs to try, in which order,
 *                     and what is said about each.
 */
#ifndef HLOSCOPE_WHATIF_REROLL_INTERNAL_H
#define HLOSCOPE_WHATIF_REROLL_INTERNAL_H

#include "hloscope/hs_compile.h"
#include "hloscope/hs_device.h"
#include "hloscope/hs_scan.h"
#include "whatif/whatif_internal.h"


/* Parameters and constants are never inside a layer: they are what the
 * layers read, and the slots say how. */
typedef enum slot_kind {
    SLOT_CARRY,         /* layer j reads position p of layer j-1 */
    SLOT_INVARIANT,     /* every layer reads the same value */
    SLOT_CONSTANT,      /* constants equal in every layer: copied */
    SLOT_STACKED,       /* each its own value: stacked in the graph */
    SLOT_STACKED_PARAM  /* each its own entry parameter, read by that layer
                           only: one new [L, ...] entry parameter */
} slot_kind;

/* One value entering the body from outside the layer. */
typedef struct slot {
    slot_kind kind;
    int p;                     /* carry: position in the previous layer */
    const hs_instruction *v0;  /* layer 0's value (a carry's init) */
    int rk, ro;                /* the first reader: operand ro of position
                                  rk, so layer j's value is
                                  at(j, rk)->operands[ro] */
    int index;                 /* carry/invariant: carry index; stacked:
                                  xs index */
} slot;

typedef struct plan {
    const hs_module *m;
    const hs_computation *c; /* the entry */
    const hs_group_tree *t;
    int run;                 /* the run's group */
    int L, n;                /* layers, instructions per layer */
    const char **layer_path; /* group path of each layer */
    const hs_instruction **in; /* in[j * n + k]: instruction k of layer j */
    int *layer_of;           /* by id: layer, or -1 outside the run */
    int *pos_of;             /* by id: position in its layer */
    int n_ids;
    /* Per position of layer 0: for each operand the slot it reads (-1:
     * inside the layer). */
    int **operand_slot;
    /* by id: the one layer that reads it, -1 for after the run, -2 for
     * several readers' places, -3 for none */
    int *reader_layer;
    int n_slots, cap_slots;
    slot *slots;
    int n_carry, n_invariant, n_xs;
    /* positions read after the run: y index, or -1 */
    int *y_of;
    int n_ys;
    const hs_instruction *ys_pos[HS_SCAN_MAX_YS];
    char reason[512];
    char phase_note[512]; /* when only some of the run's layers are kept */
} plan;

static inline const hs_instruction *plan_at(const plan *p, int j, int k)
{
    return p->in[(size_t)j * p->n + k];
}

/* The layer of the run that holds i, or -1 (outside the run). */
static inline int plan_layer_of(const plan *p, const hs_instruction *i)
{
    return i && i->id >= 0 && i->id < p->n_ids ? p->layer_of[i->id] : -1;
}

/* Layer j's value of slot s. */
static inline const hs_instruction *plan_slot_value(const plan *p,
                                                          const slot *s,
                                                          int j)
{
    return plan_at(p, j, s->rk)->operands[s->ro];
}

/* Carries a slot takes: a tuple carry is carried as its elements. */
static inline int slot_carry_width(const slot *s)
{
    return s->kind == SLOT_CARRY && hs_shape_is_tuple(&s->v0->shape)
               ? s->v0->shape.n_elems
               : 1;
}

/* [L, dims of s...]: a stacked input's shape. */
static inline hs_shape plan_stacked_shape(const plan *p,
                                                const hs_shape *s)
{
    int64_t dims[HS_MAX_RANK];
    dims[0] = p->L;
    for (int d = 0; d < s->rank; d++)
        dims[d + 1] = s->dims[d];
    return hs_shape_make(s->dtype, s->rank + 1, dims);
}

/* reroll_plan.c: plans run group g of t (a run of m's entry) into p;
 * false with p->reason set when it cannot be rerolled. p is freed with
 * hs__reroll_plan_free either way. */
bool hs__reroll_plan(plan *p, const hs_module *m, const hs_group_tree *t,
                     int g);
void hs__reroll_plan_free(plan *p);

/* reroll_rewrite.c. A new entry parameter of the rerolled module: slot
 * `slot` of plans[plan], a stacked parameter. They follow the parameters
 * the module keeps, in this order. */
typedef struct hs__reroll_param {
    int plan, slot;
} hs__reroll_param;

/* m with the run of each of plans[0..n) replaced by its own while (the
 * plans' runs are disjoint runs of m's entry); NULL with the reason in
 * why. *params (malloc'd, n_params) lists the stacked parameters. */
hs_module *hs__reroll_rewrite(const hs_module *m, plan *const *plans, int n,
                              hs__reroll_param **params, int *n_params,
                              char *why, size_t size);
/* Whether entry parameter i is replaced by a stacked parameter. */
bool hs__reroll_stacked_away(plan *const *plans, int n,
                             const hs_instruction *i);

/* reroll_measure.c. Appends a sentence to the scan's note ("; " between). */
void hs__reroll_note(hs_whatif_scan *sc, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Compiles m for device as the analysis does (default pipeline, no
 * cache), timed. */
hs_status hs__reroll_compile(const hs_module *m, const hs_whatif_options *o,
                             const char *device, hs_executable **exe,
                             double *seconds, hs_error *err);
/* Runs the original (before) and the rerolled module (after) on the same
 * drawn arguments when both can run here, and fills sc's equivalent,
 * max_abs_difference and note; a run that cannot be made is said in the
 * note. */
hs_status hs__reroll_equivalence(const hs_module *m, plan *const *plans,
                                 int n, const hs__reroll_param *params,
                                 int n_params, const hs_whatif_options *o,
                                 const char *device, hs_executable *before,
                                 hs_executable *after, hs_whatif_scan *sc,
                                 hs_error *err);

#endif
