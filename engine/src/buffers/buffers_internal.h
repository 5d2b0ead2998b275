/*
 * buffers_internal.h - the buffer-assignment engine shared by the
 * `buffer-assignment` analysis (buffer_assignment.c), its reports
 * (buffer_report.c) and the `schedule` pass (schedule.c).
 *
 * Computations are analysed one at a time, callees before callers, each in
 * its current instruction order. The analysis of a computation gives every
 * instruction a table: one logical buffer per node of its shape, the nodes
 * in pre-order (a tuple's own index table, then each element's subtree).
 * Aliasing instructions reuse their operand's buffers in their table; the
 * others define fresh ones. The scheduler reads these tables to know which
 * buffers an instruction defines and uses, and analyses a computation again
 * after reordering it to compare peaks.
 */
#ifndef HLOSCOPE_BUFFERS_INTERNAL_H
#define HLOSCOPE_BUFFERS_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "hloscope/hs_buffers.h"
#include "hloscope/hs_ir.h"
#include "hloscope/hs_passes.h"

/* Accounting index of a memory space: 0 device, 1 host (S(5)). */
enum { HS__SPACE_DEVICE = 0, HS__SPACE_HOST = 1, HS__N_SPACES = 2 };

static inline int hs__space_index(int memory_space)
{
    return memory_space == HS_MEMSPACE_HOST ? HS__SPACE_HOST
                                            : HS__SPACE_DEVICE;
}

/* Pre-order node of index path in s, or -1 when the path is not in s. */
int hs__index_node(const hs_shape *s, const int *path, int len);

typedef struct hs__buf {
    const hs_instruction *instr; /* defining instruction */
    const hs_computation *comp;
    const hs_shape *shape;       /* the node's shape */
    int node;                    /* node index in instr's shape tree */
    int64_t bytes;
    int space;                   /* HS__SPACE_* */
    int start, end;              /* inclusive positions in comp */
    hs_buffer_kind kind;
    bool read_only;  /* entry parameter or constant: never updated in place */
    bool external;   /* a parameter of a called computation: the caller's */
    bool counted;    /* counts in this computation's live bytes */
    bool aliases_argument;
    bool donated;    /* an argument that input_output_alias lets go */
    /* Updated in place (a dynamic-update-slice, a loop that carries it):
     * a parameter the body returns after writing it is not a loop
     * invariant. */
    bool written;
    int param_number, param_node; /* external buffers: where they come from */
} hs__buf;

typedef struct hs__ba_comp {
    bool analysed;
    int first_buffer, n_buffers; /* range in hs__ba.buf */
    int n_instrs;
    int64_t peak[HS__N_SPACES];  /* counted buffers + callees' peaks */
    int peak_pos[HS__N_SPACES];
    /* The called computation (position in the module) whose peak is part
     * of the peak, or -1. */
    int peak_callee[HS__N_SPACES];
    /* For each node of the root: the parameter (number, node) it passes
     * through unchanged, or -1 (number) when the computation makes it. */
    int n_root_nodes;
    int32_t *root_param, *root_param_node;
    /* For each node of the root: the parameter's buffer it passes through
     * was written in place on the way (a scan's stacked residuals): the
     * node is not returned unchanged. */
    uint8_t *root_written;
} hs__ba_comp;

typedef struct hs__ba {
    const hs_module *m;
    const hs_pass_context *ctx; /* may be NULL */
    int64_t tick;
    hs__buf *buf;
    int n_buf, cap_buf;
    hs__ba_comp *comps;     /* by position in m->comps */
    uint8_t *roles;         /* by position: HS__ROLE_* bits */
    int *order;             /* computations owning buffers, callees first */
    int n_order;
    /* The module's input_output_alias (m->io_aliases). */
    const hs_io_alias *donations;
    int n_donations;
    /* The computation analysed last; tables are by position in it. */
    const hs_computation *cur;
    int32_t *pos_by_id;     /* instruction id -> position in cur */
    int32_t *table_off;     /* position -> offset in tables (n + 1) */
    int32_t *tables;
    int n_tables, cap_tables;
    int32_t *last_all, *last_table; /* position -> last use (-1 none) */
    int32_t *mark;          /* by buffer: scratch stamp */
    int64_t *contrib;       /* position x space: callees' peak */
    int32_t *contrib_comp;  /* position x space: which callee */
    int64_t *delta;         /* (position + 1) x space: live-bytes changes */
    int cap_n;              /* capacity of the by-position arrays */
} hs__ba;

enum {
    HS__ROLE_ENTRY = 1,
    HS__ROLE_BODY = 2,      /* while body: root flows back to the parameter */
    HS__ROLE_CONDITION = 4,
    HS__ROLE_CALLEE = 8     /* call / conditional branch: root is returned */
};

/* Finds the computations that own buffers (reachable from the entry
 * through while, call and conditional) in callee-first order. */
hs_status hs__ba_init(hs__ba *s, const hs_module *m,
                      const hs_pass_context *ctx, hs_error *err);
void hs__ba_release(hs__ba *s);

/* Analyses c in its current order; its callees must have been analysed.
 * When c was the computation analysed last, its earlier buffers are
 * dropped first (the scheduler analyses a computation several times). */
hs_status hs__ba_analyse(hs__ba *s, const hs_computation *c, hs_error *err);

/* Position of i in the computation analysed last, or -1. */
static inline int hs__ba_pos(const hs__ba *s, const hs_instruction *i)
{
    int id = i->id;
    if (id < 0 || id >= s->m->next_id)
        return -1;
    int p = s->pos_by_id[id];
    return p >= 0 && p < s->cur->n_instrs && s->cur->instrs[p] == i ? p : -1;
}

/* The table of the instruction at position k of the computation analysed
 * last: *ids gets its buffer ids; returns the node count. */
static inline int hs__ba_table(const hs__ba *s, int k, const int32_t **ids)
{
    *ids = s->tables + s->table_off[k];
    return s->table_off[k + 1] - s->table_off[k];
}

/* Node count of a shape: 1 for arrays, 1 + the elements' for tuples. */
int hs__shape_nodes(const hs_shape *s);

#endif
