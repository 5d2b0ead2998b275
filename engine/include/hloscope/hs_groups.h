/*
 * hs_groups.h - the group tree of a computation: which instructions belong
 * together (a layer, an attention block, a loop body), so that a view of a
 * module with 40,000 instructions can show 30 boxes and open one.
 *
 *     hs_group_tree *t;
 *     if (hs_groups_build(module, NULL, &t, &err) == HS_OK) {   // the entry
 *         for (int k = 0; k < t->n_groups; k++)
 *             printf("%s %lld\n", t->groups[k].path,
 *                    (long long)t->groups[k].instructions);
 *         hs_groups_free(t);
 *     }
 *
 * Groups come from three sources, in this order of trust:
 *   - op_name scopes (kind HS_GROUP_OP_NAME): JAX's
 *     "jit(train_step)/jit(main)/layers_0/attention/dot_general", torch_xla's
 *     scoped names, the model tracer's "layers.3/linear". The last component
 *     names the operation, the ones before it are scopes; numbered siblings
 *     ("layers_0", "layers.3", "h.11", "layer[2]") are gathered under one
 *     group whose path is the stem with '*' ("layers.*").
 *   - structure (HS_GROUP_STRUCTURE), for a computation whose op_names are
 *     missing or flat: the computation is cut at its cut points (values that
 *     every path to the root passes through: the post-dominators of its
 *     first instruction, such as the residual stream between layers), each
 *     block is hashed by structure (opcodes, shapes, edges inside it; names
 *     ignored), and runs of structurally repeating consecutive blocks become
 *     a group "run.K" whose children "run.K/layer.J" are the repeats. A
 *     training step has no such cuts (every weight flows to the root through
 *     its update), so when the cuts leave one block holding most of the
 *     computation the blocks are its instructions in definition order, the
 *     repeats are found there, and each run is cut into layers where the
 *     fewest values cross. Stretches outside any run are "part.K".
 *   - computations (HS_GROUP_COMPUTATION): a while body and condition, a
 *     conditional branch, a call or fusion computation nests under the
 *     group of its calling instruction, with its own groups inside; its
 *     path is "@<name>" and its groups' paths are prefixed "@<name>/".
 *
 * In a computation grouped by structure, parameters and constants feeding
 * one group only belong to it; with scopes they stay where their own
 * op_name puts them. More than 32 left at a computation's level are
 * gathered into a group "inputs". The tree is deterministic: the same
 * module gives the same paths, counts and fingerprints. Cost: linear in the
 * instructions for the scopes and the repeats, near-linear for the cuts
 * (the post-dominator tree is found by walking to common ancestors).
 */
#ifndef HLOSCOPE_HS_GROUPS_H
#define HLOSCOPE_HS_GROUPS_H

#include <stdbool.h>
#include <stdint.h>

#include "hloscope/hs_ir.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum hs_group_kind {
    HS_GROUP_OP_NAME,
    HS_GROUP_STRUCTURE,
    HS_GROUP_COMPUTATION
} hs_group_kind;

const char *hs_group_kind_name(hs_group_kind k); /* "op_name", ... */

typedef struct hs_group {
    /* Unique in the tree, stable for the same module, usable in a URL
     * query: the op_name scope ("layers.3", "jit(main)/layers_*"), "run.0",
     * "run.0/layer.5", "part.2", "@body.3", "@body.3/layers.1". */
    const char *path;
    /* The path within its computation (path without "@<name>/"); equal to
     * path in the top computation. */
    const char *local;
    /* For people: "layers.3", "layer 0..31 (32 x 154)", "while.3 body". */
    const char *label;
    hs_group_kind kind;
    int parent; /* -1 for the root (the top computation) */
    int depth;  /* 0 for the root */
    int n_children;
    const int *children; /* in the order they were found */
    /* Instructions below it, nested computations included. */
    int64_t instructions;
    /* Instructions of its own computation directly in it (not in a child). */
    int64_t direct;
    /* > 1 when its children are `repeat` structurally identical siblings
     * (the layers of an unrolled model); 0 otherwise. */
    int repeat;
    /* One of numbered siblings ("layers.3" under "layers.*") or of a run's
     * layers: a view draws it closed unless asked to open it. */
    bool is_repeat_item;
    /* Structural hash of what it contains: opcodes, shapes and the edges
     * between its instructions; names and metadata ignored. Equal for the
     * identical layers of a run. */
    uint64_t fingerprint;
    const hs_computation *computation; /* where its instructions live */
    const hs_instruction *caller;      /* computation groups: the caller */
} hs_group;

typedef struct hs_group_tree {
    const hs_module *module;
    const hs_computation *top;
    int n_groups;
    hs_group *groups; /* groups[0] is the root, the top computation */
    /* The innermost group of each instruction, by instruction id
     * (0 <= id < n_ids); -1 for instructions of computations not in the
     * tree (reducers, computations the top one does not call). */
    int n_ids;
    const int *group_of;
    /* The computation group of each computation, by its index in
     * module->comps; -1 for computations not in the tree. */
    const int *computation_group;
    struct hs_arena *arena; /* everything above lives here */
} hs_group_tree;

/* The tree of computation top (NULL: the entry) and what it calls.
 * HS_ERR_INVALID when top is not in m, HS_ERR_NOMEM. */
hs_status hs_groups_build(const hs_module *m, const hs_computation *top,
                          hs_group_tree **out, hs_error *err);
void hs_groups_free(hs_group_tree *t);

/* The group whose path, or whose local path, is text[0..len); -1 when
 * none. A local path can name groups in several computations: the first
 * in tree order is returned (hs_groups_match lists them all). */
int hs_groups_find(const hs_group_tree *t, const char *text, size_t len);
/* Whether group g is named by text[0..len) (its path or local path). */
bool hs_groups_match(const hs_group_tree *t, int g, const char *text,
                     size_t len);
/* Whether the computations i calls are drawn (and grouped) under it: a
 * while's body and condition, a conditional's branches, a call's, a
 * fusion's and a custom-call's computations. Reducers and comparators
 * (to_apply) are named in their caller's label instead. */
bool hs_groups_nests_called(const hs_instruction *i);

/* The computation group of computation c, or -1 when c is not in the tree. */
int hs_groups_of_computation(const hs_group_tree *t, const hs_computation *c);

#ifdef __cplusplus
}
#endif
#endif
