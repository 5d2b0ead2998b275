/* groups_internal.h - what the files of the group tree share: the tree
 * under construction, the per-computation facts both groupings read
 * (positions, users), and the structural hash of a set of instructions. */
#ifndef HLOSCOPE_GROUPS_INTERNAL_H
#define HLOSCOPE_GROUPS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hloscope/hs_groups.h"
#include "hloscope/hs_ir.h"

/* The tree being built. Groups are appended; children lists are made at
 * the end from the parents. */
typedef struct hs__gbuild {
    hs_arena *arena;
    const hs_module *m;
    int n, cap;
    hs_group *g;
    int n_ids;
    int *group_of;  /* by instruction id */
    int *pos_of_id; /* position of an instruction in its computation */
    int *comp_group; /* by computation index: its group, -1 none */
    uint64_t *comp_fp; /* by computation index: fingerprint once known */
    hs_error *err;
} hs__gbuild;

/* One computation's facts: users of each position (CSR), and which
 * positions are leaves (parameters, constants, iotas: values that depend on
 * nothing in the computation). */
typedef struct hs__gcomp {
    const hs_computation *c;
    int group;          /* its computation group */
    const char *prefix; /* "" in the top computation, else "@name/" */
    int n;
    int *user_start, *users; /* users of p: users[user_start[p] .. [p+1]) */
    bool *leaf;
} hs__gcomp;

/* Appends a group (parent -1 for the root); its strings are copied.
 * Returns its index, or -1 on host OOM (error set). */
int hs__group_add(hs__gbuild *b, hs_group_kind kind, int parent,
                  const char *local, const char *prefix, const char *label,
                  const hs_computation *c);

static inline int hs__gpos(const hs__gbuild *b, const hs_instruction *i)
{
    return i && i->id >= 0 && i->id < b->n_ids ? b->pos_of_id[i->id] : -1;
}

/* Groups the instructions of gc by their op_name scopes, setting group_of
 * for the instructions that have a scope. *used is false (and nothing is
 * set) when the op_names are missing or flat. */
hs_status hs__groups_scopes(hs__gbuild *b, const hs__gcomp *gc, bool *used);
/* Groups the non-leaf instructions of gc by structure (cut points, then
 * runs of repeating blocks). */
hs_status hs__groups_structure(hs__gbuild *b, const hs__gcomp *gc);

/* The structural hash of one instruction: opcode, shape, attributes that
 * change what it computes (not names, not parameter numbers), the
 * fingerprints of the computations it calls, and for each operand either
 * its hash (inside: stamps[pos] == stamp) or its opcode and shape. */
uint64_t hs__ghash_instruction(const hs__gbuild *b, const hs_instruction *i,
                               const uint32_t *stamps, uint32_t stamp,
                               const uint64_t *h);
/* The order-independent hash of the positions members[0..n) of c
 * (increasing): each instruction hashed over the edges inside the set.
 * Uses stamps/h (sized c->n_instrs) as scratch; stamp must be fresh. */
uint64_t hs__ghash_members(const hs__gbuild *b, const hs_computation *c,
                           const int *members, int n, uint32_t *stamps,
                           uint32_t stamp, uint64_t *h);

uint64_t hs__gmix(uint64_t z);

#endif
