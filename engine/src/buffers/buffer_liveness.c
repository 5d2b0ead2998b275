/*
 * buffer_liveness.c - logical buffers, aliasing and liveness of one
 * computation at a time, in its current order, with the peak bytes of each
 * memory space. The rules follow XLA's dataflow analysis, copy insertion
 * and sequential heap simulation; docs/PASSES.md ("buffer-assignment")
 * states them for users.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buffers/buffers_internal.h"
#include "passes/context.h"

enum { MAX_CALL_DEPTH = 256 };

int hs__shape_nodes(const hs_shape *s)
{
    if (s->dtype != HS_TUPLE)
        return 1;
    int n = 1;
    for (int i = 0; i < s->n_elems; i++)
        n += hs__shape_nodes(&s->elems[i]);
    return n;
}

int hs__index_node(const hs_shape *s, const int *path, int len)
{
    int node = 0;
    for (int d = 0; d < len; d++) {
        if (s->dtype != HS_TUPLE || path[d] < 0 || path[d] >= s->n_elems)
            return -1;
        node++;
        for (int e = 0; e < path[d]; e++)
            node += hs__shape_nodes(&s->elems[e]);
        s = &s->elems[path[d]];
    }
    return node;
}

static hs_status nomem(hs_error *err)
{
    return hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
}

/* ---- which computations own buffers ------------------------------------- */

/* Called computations that run as sequential code: while condition and
 * body, call targets, conditional branches. Fusion and reducer
 * computations run inside one instruction and own no buffers (as in XLA). */
static int control_callees(const hs_instruction *i)
{
    switch (i->opcode) {
    case HS_OP_WHILE: return i->n_called < 2 ? i->n_called : 2;
    case HS_OP_CALL: return i->n_called < 1 ? i->n_called : 1;
    case HS_OP_CONDITIONAL: return i->n_called;
    default: return 0;
    }
}

static uint8_t callee_role(const hs_instruction *i, int j)
{
    if (i->opcode == HS_OP_WHILE)
        return j == 0 ? HS__ROLE_CONDITION : HS__ROLE_BODY;
    return HS__ROLE_CALLEE;
}

/* Depth-first from the entry; computations join s->order after their
 * callees. state: 0 new, 1 on the stack, 2 done. */
static hs_status visit(hs__ba *s, int ci, uint8_t *state, int depth,
                       hs_error *err)
{
    const hs_computation *c = s->m->comps[ci];
    if (depth > MAX_CALL_DEPTH)
        return hs_error_set(err, HS_ERR_LIMIT,
                            "computations nested more than %d deep at %s",
                            MAX_CALL_DEPTH, c->name);
    state[ci] = 1;
    for (int k = 0; k < c->n_instrs; k++) {
        const hs_instruction *i = c->instrs[k];
        for (int j = 0; j < control_callees(i); j++) {
            int cj = hs_computation_index(s->m, i->called[j]);
            if (cj < 0)
                return hs_error_set(err, HS_ERR_INVALID,
                                    "instruction %s: calls a computation "
                                    "that is not in the module",
                                    i->name);
            s->roles[cj] |= callee_role(i, j);
            if (state[cj] == 1)
                return hs_error_set(err, HS_ERR_INVALID,
                                    "computation %s calls itself (through "
                                    "%s)", s->m->comps[cj]->name, i->name);
            if (state[cj] == 0) {
                hs_status st = visit(s, cj, state, depth + 1, err);
                if (st != HS_OK)
                    return st;
            }
        }
    }
    state[ci] = 2;
    s->order[s->n_order++] = ci;
    return HS_OK;
}

hs_status hs__ba_init(hs__ba *s, const hs_module *m,
                      const hs_pass_context *ctx, hs_error *err)
{
    memset(s, 0, sizeof *s);
    s->m = m;
    s->ctx = ctx;
    int nc = m->n_comps > 0 ? m->n_comps : 1;
    s->comps = calloc((size_t)nc, sizeof *s->comps);
    s->roles = calloc((size_t)nc, 1);
    s->order = malloc(sizeof *s->order * (size_t)nc);
    uint8_t *state = calloc((size_t)nc, 1);
    int ids = m->next_id > 0 ? m->next_id : 1;
    s->pos_by_id = malloc(sizeof *s->pos_by_id * (size_t)ids);
    if (!s->comps || !s->roles || !s->order || !state || !s->pos_by_id) {
        free(state);
        hs__ba_release(s);
        return nomem(err);
    }
    for (int k = 0; k < ids; k++)
        s->pos_by_id[k] = -1;
    hs_status st = HS_OK;
    int entry = hs_computation_index(m, m->entry);
    if (entry < 0)
        st = hs_error_set(err, HS_ERR_INVALID,
                          "module has no entry computation");
    if (st == HS_OK) {
        s->roles[entry] |= HS__ROLE_ENTRY;
        st = visit(s, entry, state, 0, err);
    }
    if (st == HS_OK && (s->roles[entry] & ~HS__ROLE_ENTRY))
        st = hs_error_set(err, HS_ERR_INVALID,
                          "the entry computation %s is also called",
                          m->entry->name);
    free(state);
    s->donations = m->io_aliases;
    s->n_donations = m->n_io_aliases;
    if (st != HS_OK)
        hs__ba_release(s);
    return st;
}

void hs__ba_release(hs__ba *s)
{
    if (s->comps)
        for (int k = 0; k < s->m->n_comps; k++) {
            free(s->comps[k].root_param);
            free(s->comps[k].root_param_node);
            free(s->comps[k].root_written);
        }
    free(s->buf);
    free(s->comps);
    free(s->roles);
    free(s->order);
    free(s->pos_by_id);
    free(s->table_off);
    free(s->tables);
    free(s->last_all);
    free(s->last_table);
    free(s->mark);
    free(s->contrib);
    free(s->contrib_comp);
    free(s->delta);
    memset(s, 0, sizeof *s);
}

/* ---- growing arrays ----------------------------------------------------- */

static bool reserve_positions(hs__ba *s, int n)
{
    if (n + 1 <= s->cap_n)
        return true;
    int cap = s->cap_n ? s->cap_n : 64;
    while (cap < n + 1)
        cap *= 2;
    int32_t *off = realloc(s->table_off, sizeof *off * (size_t)cap);
    if (off)
        s->table_off = off;
    int32_t *la = realloc(s->last_all, sizeof *la * (size_t)cap);
    if (la)
        s->last_all = la;
    int32_t *lt = realloc(s->last_table, sizeof *lt * (size_t)cap);
    if (lt)
        s->last_table = lt;
    int64_t *cb = realloc(s->contrib,
                          sizeof *cb * (size_t)cap * HS__N_SPACES);
    if (cb)
        s->contrib = cb;
    int32_t *cc = realloc(s->contrib_comp,
                          sizeof *cc * (size_t)cap * HS__N_SPACES);
    if (cc)
        s->contrib_comp = cc;
    int64_t *d = realloc(s->delta, sizeof *d * (size_t)cap * HS__N_SPACES);
    if (d)
        s->delta = d;
    if (!off || !la || !lt || !cb || !cc || !d)
        return false;
    s->cap_n = cap;
    return true;
}

static bool push_id(hs__ba *s, int32_t id)
{
    if (s->n_tables == s->cap_tables) {
        int cap = s->cap_tables ? s->cap_tables * 2 : 256;
        int32_t *t = realloc(s->tables, sizeof *t * (size_t)cap);
        if (!t)
            return false;
        s->tables = t;
        s->cap_tables = cap;
    }
    s->tables[s->n_tables++] = id;
    return true;
}

/* A fresh buffer for node `node` (of shape sh) of instruction i, defined
 * at position k. Returns its id, or -1 on host OOM. */
static int32_t new_buffer(hs__ba *s, const hs_instruction *i,
                          const hs_shape *sh, int node, int k)
{
    if (s->n_buf == s->cap_buf) {
        int cap = s->cap_buf ? s->cap_buf * 2 : 256;
        hs__buf *b = realloc(s->buf, sizeof *b * (size_t)cap);
        int32_t *mk = realloc(s->mark, sizeof *mk * (size_t)cap);
        if (b)
            s->buf = b;
        if (mk)
            s->mark = mk;
        if (!b || !mk)
            return -1;
        for (int j = s->cap_buf; j < cap; j++)
            s->mark[j] = 0;
        s->cap_buf = cap;
    }
    int32_t id = s->n_buf++;
    hs__buf *b = &s->buf[id];
    memset(b, 0, sizeof *b);
    b->instr = i;
    b->comp = s->cur;
    b->shape = sh;
    b->node = node;
    b->bytes = hs_shape_bytes(sh);
    b->space = hs__space_index(sh->memory_space);
    b->start = b->end = k;
    b->kind = HS_BUFFER_TEMPORARY;
    b->counted = true;
    b->param_number = -1;
    s->mark[id] = 0;
    return id;
}

/* ---- tables ------------------------------------------------------------- */

/* How fresh buffers of a parameter or constant are marked. */
typedef struct fresh_opts {
    hs_buffer_kind kind;
    bool read_only, external;
    int param_number;
    int end; /* > start: live at least to here (entry parameters) */
} fresh_opts;

/* Appends fresh buffers for every node of sh (pre-order), numbering them
 * from *node. */
static bool fresh_tree(hs__ba *s, const hs_instruction *i, const hs_shape *sh,
                       int *node, int k, const fresh_opts *o)
{
    int32_t id = new_buffer(s, i, sh, *node, k);
    if (id < 0 || !push_id(s, id))
        return false;
    if (o) {
        hs__buf *b = &s->buf[id];
        b->kind = o->kind;
        b->read_only = o->read_only;
        b->external = o->external;
        b->counted = !o->external;
        b->param_number = o->param_number;
        b->param_node = *node;
        if (o->end > b->end)
            b->end = o->end;
    }
    (*node)++;
    if (sh->dtype == HS_TUPLE)
        for (int e = 0; e < sh->n_elems; e++)
            if (!fresh_tree(s, i, &sh->elems[e], node, k, o))
                return false;
    return true;
}

static bool fresh_all(hs__ba *s, const hs_instruction *i, int k,
                      const fresh_opts *o)
{
    int node = 0;
    return fresh_tree(s, i, &i->shape, &node, k, o);
}

/* Appends n ids of the table at offset off (which may move as we push). */
static bool copy_ids(hs__ba *s, int off, int n)
{
    for (int j = 0; j < n; j++)
        if (!push_id(s, s->tables[off + j]))
            return false;
    return true;
}

/* Offset of element e's subtree inside a tuple's node list of n nodes. */
static int element_offset(const hs_shape *t, int n, int64_t e)
{
    if (n == 1 + t->n_elems) /* a flat tuple */
        return 1 + (int)e;
    int off = 1;
    for (int64_t j = 0; j < e; j++)
        off += hs__shape_nodes(&t->elems[j]);
    return off;
}

/* Same buffers: same tuple structure, and every node of the same size in
 * the same memory space, so that a can reuse b's buffers. */
static bool same_buffers(const hs_shape *a, const hs_shape *b)
{
    if ((a->dtype == HS_TUPLE) != (b->dtype == HS_TUPLE) ||
        hs_shape_bytes(a) != hs_shape_bytes(b) ||
        hs__space_index(a->memory_space) != hs__space_index(b->memory_space))
        return false;
    if (a->dtype != HS_TUPLE)
        return true;
    if (a->n_elems != b->n_elems)
        return false;
    for (int e = 0; e < a->n_elems; e++)
        if (!same_buffers(&a->elems[e], &b->elems[e]))
            return false;
    return true;
}

static bool placement_call(const hs_instruction *i)
{
    const char *t = i->custom_call_target;
    return t && (strcmp(t, "annotate_device_placement") == 0 ||
                 strcmp(t, "MoveToHost") == 0 ||
                 strcmp(t, "MoveToDevice") == 0 ||
                 strcmp(t, "Sharding") == 0);
}

/* A dynamic-slice of a contiguous window of its operand (the start moves
 * only along the leading dimensions, like one layer of stacked weights):
 * the device reads it in place (a view), as XLA's backends do by fusing
 * such a slice into its consumer. The same rule as the device's. */
static bool contiguous_window(const hs_instruction *i)
{
    const hs_shape *o = &i->operands[0]->shape, *r = &i->shape;
    if (o->dtype == HS_TUPLE || r->dtype != o->dtype || r->rank != o->rank ||
        hs__space_index(o->memory_space) != hs__space_index(r->memory_space))
        return false;
    int d = r->rank - 1;
    while (d >= 0 && r->dims[d] == o->dims[d])
        d--;
    for (int k = 0; k < d; k++)
        if (r->dims[k] != 1)
            return false;
    return true;
}

/* Instructions whose result is their operand's buffers. A placement
 * custom-call that changes the memory space, or a reshape that changes the
 * bytes, makes a copy instead. */
static bool aliases_operand(const hs_instruction *i)
{
    if (i->n_operands < 1)
        return false;
    switch (i->opcode) {
    case HS_OP_BITCAST:
    case HS_OP_RESHAPE:
    case HS_OP_BITCAST_CONVERT:
    case HS_OP_OPTIMIZATION_BARRIER:
        break;
    case HS_OP_CUSTOM_CALL:
        if (!placement_call(i))
            return false;
        break;
    case HS_OP_DYNAMIC_SLICE:
        return contiguous_window(i);
    default:
        return false;
    }
    return same_buffers(&i->shape, &i->operands[0]->shape);
}

/* A buffer that instruction at position k may take over: not read-only,
 * not used after k, and of the node's size and memory space. */
static bool can_take(const hs__ba *s, int32_t b, const hs_shape *node, int k)
{
    const hs__buf *x = &s->buf[b];
    return !x->read_only && x->end <= k && x->bytes == hs_shape_bytes(node) &&
           x->space == hs__space_index(node->memory_space);
}

/* Whether buffer b of operand o of i reaches i through another operand
 * too (a reshape or bitcast of it), which i may read in any order. */
static bool read_otherwise(const hs__ba *s, const hs_instruction *i, int o,
                           int32_t b)
{
    for (int o2 = 0; o2 < i->n_operands; o2++) {
        /* The same value again: hs_reads_elementwise decides. */
        const hs_instruction *x = i->operands[o2];
        int q = x && x != i->operands[o] ? hs__ba_pos(s, x) : -1;
        if (q < 0)
            continue;
        for (int j = s->table_off[q]; j < s->table_off[q + 1]; j++)
            if (s->tables[j] == b)
                return true;
    }
    return false;
}

/* Whether i is the output that input_output_alias donates the argument
 * buffer x to (an element of the entry's root tuple, or the root). */
static bool donated_to(const hs__ba *s, const hs_instruction *i,
                       const hs__buf *x)
{
    const hs_instruction *root = s->cur->root;
    for (int d = 0; root && d < s->n_donations; d++) {
        const hs_io_alias *dn = &s->donations[d];
        if (dn->param != x->param_number || dn->param_index_len != 0)
            continue;
        if (dn->output_len == 0 && root == i)
            return true;
        if (dn->output_len == 1 && root->opcode == HS_OP_TUPLE &&
            dn->output[0] >= 0 && dn->output[0] < root->n_operands &&
            root->operands[dn->output[0]] == i)
            return true;
    }
    return false;
}

/* A loop fusion writes its result over an operand that dies here and that
 * it reads element by element (XLA's CanShareOperandBufferWithUser): the
 * operand's buffer, or -1. A donated argument is taken only by the output
 * input_output_alias gives it to, as XLA colocates the two. The device
 * writes such fusions in place over its temporaries (device/values.c
 * dev_result) and releases a donated argument before the result is
 * allocated. Unfused element-wise ops still get a buffer of their own. */
static int32_t in_place_operand(const hs__ba *s, const hs_instruction *i,
                                int k)
{
    if (i->shape.dtype == HS_TUPLE || i->opcode != HS_OP_FUSION)
        return -1;
    for (int o = 0; o < i->n_operands; o++) {
        int q = i->operands[o] ? hs__ba_pos(s, i->operands[o]) : -1;
        if (q < 0 || s->table_off[q + 1] - s->table_off[q] != 1)
            continue;
        int32_t b = s->tables[s->table_off[q]];
        const hs__buf *x = &s->buf[b];
        if ((x->read_only && !(x->donated && donated_to(s, i, x))) ||
            x->external || x->end > k ||
            x->bytes != hs_shape_bytes(&i->shape) ||
            x->space != hs__space_index(i->shape.memory_space) ||
            !hs_reads_elementwise(i, o) || read_otherwise(s, i, o, b))
            continue;
        return b;
    }
    return -1;
}

/* Whether the body returns node j of its parameter unchanged: a loop
 * invariant, such as the stacked weights of a scan. A node the body
 * updates in place (a scan's stacked residuals, written one slice per
 * step by a dynamic-update-slice) is the parameter's buffer too, but is
 * not an invariant: the loop writes it, so it needs a buffer of its own. */
static bool invariant(const hs__ba_comp *body, int j)
{
    return body && j < body->n_root_nodes && body->root_param[j] == 0 &&
           body->root_param_node[j] == j && !body->root_written[j];
}

/* While: the loop-carried buffers are the init's when the loop may update
 * them in place, or never writes them (loop invariants); otherwise the
 * while defines a copy, as XLA's copy insertion adds one for a read-only
 * or still-used init. */
static bool while_tree(hs__ba *s, const hs_instruction *w,
                       const hs__ba_comp *body, const hs_shape *sh,
                       int *node, int init_off, int k, int stamp)
{
    int32_t b = s->tables[init_off + *node];
    if (invariant(body, *node) ||
        (can_take(s, b, sh, k) && s->mark[b] != stamp)) {
        if (!invariant(body, *node))
            s->buf[b].written = true;
        s->mark[b] = stamp;
        if (!push_id(s, b))
            return false;
    } else {
        int32_t id = new_buffer(s, w, sh, *node, k);
        if (id < 0 || !push_id(s, id))
            return false;
    }
    (*node)++;
    if (sh->dtype == HS_TUPLE)
        for (int e = 0; e < sh->n_elems; e++)
            if (!while_tree(s, w, body, &sh->elems[e], node, init_off, k,
                            stamp))
                return false;
    return true;
}

/* Call: a root node that passes a parameter through is the operand's
 * buffer; the others are fresh (the callee's returned buffers). */
static bool call_tree(hs__ba *s, const hs_instruction *c,
                      const hs__ba_comp *callee, const hs_shape *sh,
                      int *node, int k)
{
    int j = *node;
    int32_t id = -1;
    if (j < callee->n_root_nodes) {
        int p = callee->root_param[j], pn = callee->root_param_node[j];
        if (p >= 0 && p < c->n_operands) {
            int q = hs__ba_pos(s, c->operands[p]);
            int off = s->table_off[q];
            if (pn < s->table_off[q + 1] - off)
                id = s->tables[off + pn];
        }
    }
    if (id < 0)
        id = new_buffer(s, c, sh, j, k);
    if (id < 0 || !push_id(s, id))
        return false;
    (*node)++;
    if (sh->dtype == HS_TUPLE)
        for (int e = 0; e < sh->n_elems; e++)
            if (!call_tree(s, c, callee, &sh->elems[e], node, k))
                return false;
    return true;
}

/* Adds the peak of a called computation at position k (the larger one
 * when several may run there, like a while's condition and body). */
static hs_status add_callee_peak(hs__ba *s, const hs_instruction *i, int k,
                                 int first, int n, hs_error *err)
{
    for (int j = first; j < first + n && j < i->n_called; j++) {
        int ci = hs_computation_index(s->m, i->called[j]);
        if (ci < 0 || !s->comps[ci].analysed)
            return hs_error_set(err, HS_ERR_INVALID,
                                "instruction %s: computation %s was not "
                                "analysed before its caller",
                                i->name,
                                i->called[j] ? i->called[j]->name : "?");
        for (int sp = 0; sp < HS__N_SPACES; sp++) {
            int64_t v = s->comps[ci].peak[sp];
            if (v > s->contrib[k * HS__N_SPACES + sp]) {
                s->contrib[k * HS__N_SPACES + sp] = v;
                s->contrib_comp[k * HS__N_SPACES + sp] = ci;
            }
        }
    }
    return HS_OK;
}

/* Marks the buffers of entry parameter i (table at off) that
 * input_output_alias donates: they end at their last use. */
static void donate(hs__ba *s, const hs_instruction *i, int off)
{
    for (int d = 0; d < s->n_donations; d++) {
        const hs_io_alias *x = &s->donations[d];
        int node = x->param == i->index
                       ? hs__index_node(&i->shape, x->param_index,
                                        x->param_index_len)
                       : -1;
        if (node < 0)
            continue;
        hs__buf *b = &s->buf[s->tables[off + node]];
        b->donated = true;
        b->end = b->start;
    }
}

/* Builds the table of the instruction at position k. */
static hs_status table_for(hs__ba *s, int k, bool entry, hs_error *err)
{
    const hs_instruction *i = s->cur->instrs[k];
    const hs_instruction *op0 = i->n_operands > 0 ? i->operands[0] : NULL;
    int q0 = op0 ? hs__ba_pos(s, op0) : -1;
    int off0 = q0 >= 0 ? s->table_off[q0] : 0;
    int n0 = q0 >= 0 ? s->table_off[q0 + 1] - off0 : 0;
    int nn = hs__shape_nodes(&i->shape);
    bool ok = true;
    switch (i->opcode) {
    case HS_OP_PARAMETER: {
        fresh_opts o = {entry ? HS_BUFFER_ARGUMENT : HS_BUFFER_TEMPORARY,
                        entry, !entry, (int)i->index,
                        entry ? s->cur->n_instrs - 1 : 0};
        ok = fresh_all(s, i, k, &o);
        /* Arguments are live for the whole program, except those donated
         * to an output: their memory is free after their last use. */
        if (ok && entry) {
            for (int j = s->n_tables - nn; j < s->n_tables; j++)
                s->buf[s->tables[j]].start = 0;
            donate(s, i, s->n_tables - nn);
        }
        break;
    }
    case HS_OP_CONSTANT: {
        fresh_opts o = {HS_BUFFER_CONSTANT, true, false, -1, 0};
        ok = fresh_all(s, i, k, &o);
        break;
    }
    case HS_OP_GET_TUPLE_ELEMENT: {
        const hs_shape *t = op0 ? &op0->shape : NULL;
        if (t && t->dtype == HS_TUPLE && i->index >= 0 &&
            i->index < t->n_elems &&
            hs__shape_nodes(&t->elems[i->index]) == nn)
            ok = copy_ids(s, off0 + element_offset(t, n0, i->index), nn);
        else
            ok = fresh_all(s, i, k, NULL);
        break;
    }
    case HS_OP_TUPLE: {
        int32_t id = new_buffer(s, i, &i->shape, 0, k);
        ok = id >= 0 && push_id(s, id);
        bool fits = i->shape.dtype == HS_TUPLE &&
                    i->shape.n_elems == i->n_operands;
        for (int e = 0; ok && fits && e < i->n_operands; e++) {
            int q = hs__ba_pos(s, i->operands[e]);
            int n = s->table_off[q + 1] - s->table_off[q];
            if (n != hs__shape_nodes(&i->shape.elems[e])) {
                fits = false;
                break;
            }
            ok = copy_ids(s, s->table_off[q], n);
        }
        if (ok && !fits) {
            s->n_tables = s->table_off[k];
            ok = fresh_all(s, i, k, NULL);
        }
        break;
    }
    case HS_OP_WHILE: {
        if (op0 && n0 == nn && same_buffers(&i->shape, &op0->shape)) {
            int bi = i->n_called > 1 ? hs_computation_index(s->m, i->called[1])
                                     : -1;
            const hs__ba_comp *body =
                bi >= 0 && s->comps[bi].analysed ? &s->comps[bi] : NULL;
            int node = 0;
            ok = while_tree(s, i, body, &i->shape, &node, off0, k, k + 1);
        } else {
            ok = fresh_all(s, i, k, NULL);
        }
        if (ok) {
            hs_status st = add_callee_peak(s, i, k, 0, 2, err);
            if (st != HS_OK)
                return st;
        }
        break;
    }
    case HS_OP_CALL: {
        int ci = i->n_called > 0 ? hs_computation_index(s->m, i->called[0])
                                 : -1;
        if (ci >= 0 && s->comps[ci].analysed &&
            s->comps[ci].n_root_nodes == nn) {
            int node = 0;
            ok = call_tree(s, i, &s->comps[ci], &i->shape, &node, k);
        } else {
            ok = fresh_all(s, i, k, NULL);
        }
        if (ok) {
            hs_status st = add_callee_peak(s, i, k, 0, 1, err);
            if (st != HS_OK)
                return st;
        }
        break;
    }
    case HS_OP_CONDITIONAL: {
        ok = fresh_all(s, i, k, NULL);
        if (ok) {
            hs_status st = add_callee_peak(s, i, k, 0, i->n_called, err);
            if (st != HS_OK)
                return st;
        }
        break;
    }
    case HS_OP_DYNAMIC_UPDATE_SLICE: {
        /* In place, as XLA and the device do, when the operand's buffer
         * dies here. */
        if (op0 && nn == 1 && n0 == 1 &&
            can_take(s, s->tables[off0], &i->shape, k)) {
            s->buf[s->tables[off0]].written = true;
            ok = push_id(s, s->tables[off0]);
        }
        else
            ok = fresh_all(s, i, k, NULL);
        break;
    }
    case HS_OP_COPY_START: {
        /* (destination, source, context): the source is the operand's
         * buffer, the others are new (XLA's dataflow for copy-start). */
        const hs_shape *sh = &i->shape;
        if (op0 && sh->dtype == HS_TUPLE && sh->n_elems >= 2 &&
            same_buffers(&sh->elems[1], &op0->shape) &&
            hs__shape_nodes(&sh->elems[1]) == n0) {
            int32_t id = new_buffer(s, i, sh, 0, k);
            ok = id >= 0 && push_id(s, id);
            int node = 1;
            for (int e = 0; ok && e < sh->n_elems; e++) {
                if (e == 1) {
                    ok = copy_ids(s, off0, n0);
                    node += n0;
                } else {
                    ok = fresh_tree(s, i, &sh->elems[e], &node, k, NULL);
                }
            }
        } else {
            ok = fresh_all(s, i, k, NULL);
        }
        break;
    }
    case HS_OP_COPY_DONE: {
        const hs_shape *t = op0 ? &op0->shape : NULL;
        if (t && t->dtype == HS_TUPLE && t->n_elems >= 1 &&
            same_buffers(&i->shape, &t->elems[0]))
            ok = copy_ids(s, off0 + 1, nn);
        else
            ok = fresh_all(s, i, k, NULL);
        break;
    }
    default: {
        int32_t b;
        if (aliases_operand(i) && n0 == nn)
            ok = copy_ids(s, off0, nn);
        else if ((b = in_place_operand(s, i, k)) >= 0) {
            s->buf[b].written = true;
            ok = push_id(s, b);
        } else
            ok = fresh_all(s, i, k, NULL);
        break;
    }
    }
    return ok ? HS_OK : nomem(err);
}

/* ---- one computation ---------------------------------------------------- */

static hs_status bad_operand(const hs_computation *c, const hs_instruction *i,
                             int o, hs_error *err)
{
    hs_error_set(err, HS_ERR_INVALID,
                 "instruction %s: operand %d is not defined before it in %s",
                 i->name, o, c->name);
    if (err)
        snprintf(err->instruction, sizeof err->instruction, "%s", i->name);
    return HS_ERR_INVALID;
}

/* Positions and last uses. A get-tuple-element uses only its operand's
 * index table (node 0); every other user uses all of its operand's
 * buffers. The root is used at the end. */
static hs_status index_uses(hs__ba *s, const hs_computation *c, int *root,
                            hs_error *err)
{
    int n = c->n_instrs;
    for (int k = 0; k < n; k++) {
        const hs_instruction *i = c->instrs[k];
        if (i->id < 0 || i->id >= s->m->next_id)
            return hs_error_set(err, HS_ERR_INVALID,
                                "instruction %s: id %d out of range",
                                i->name, i->id);
        s->pos_by_id[i->id] = k;
        s->last_all[k] = s->last_table[k] = -1;
    }
    for (int k = 0; k < n; k++) {
        const hs_instruction *i = c->instrs[k];
        if (hs__ba_pos(s, i) != k)
            return hs_error_set(err, HS_ERR_INVALID,
                                "instruction %s appears twice in %s",
                                i->name, c->name);
        for (int o = 0; o < i->n_operands; o++) {
            int q = i->operands[o] ? hs__ba_pos(s, i->operands[o]) : -1;
            if (q < 0 || q >= k)
                return bad_operand(c, i, o, err);
            s->last_table[q] = k;
            if (i->opcode != HS_OP_GET_TUPLE_ELEMENT)
                s->last_all[q] = k;
        }
    }
    *root = c->root ? hs__ba_pos(s, c->root) : -1;
    if (*root < 0)
        return hs_error_set(err, HS_ERR_INVALID,
                            "computation %s has no root among its "
                            "instructions", c->name);
    s->last_all[*root] = s->last_table[*root] = n - 1;
    return HS_OK;
}

/* Extends the live ranges of the buffers in k's table by k's uses. */
static void extend(hs__ba *s, int k)
{
    const int32_t *ids;
    int n = hs__ba_table(s, k, &ids);
    for (int j = 0; j < n; j++) {
        int u = j == 0 ? s->last_table[k] : s->last_all[k];
        hs__buf *b = &s->buf[ids[j]];
        if (u > b->end)
            b->end = u;
    }
}

/* What the root means for the computation's role: the entry's root is the
 * output; a call's root is returned (the caller's call instruction holds
 * it); a while body's root flows back into the loop-carried buffers, and
 * a node the body makes after the parameter's buffer at that node died is
 * written in place (XLA's copy insertion needs no copy there), so it does
 * not count twice. */
static hs_status finish_root(hs__ba *s, hs__ba_comp *cc, uint8_t role,
                             int root, hs_error *err)
{
    const int32_t *rt;
    int nr = hs__ba_table(s, root, &rt);
    free(cc->root_param);
    free(cc->root_param_node);
    free(cc->root_written);
    cc->root_param = malloc(sizeof(int32_t) * (size_t)(nr ? nr : 1));
    cc->root_param_node = malloc(sizeof(int32_t) * (size_t)(nr ? nr : 1));
    cc->root_written = malloc((size_t)(nr ? nr : 1));
    if (!cc->root_param || !cc->root_param_node || !cc->root_written)
        return nomem(err);
    cc->n_root_nodes = nr;
    for (int j = 0; j < nr; j++) {
        const hs__buf *b = &s->buf[rt[j]];
        cc->root_param[j] = b->external ? b->param_number : -1;
        cc->root_param_node[j] = b->external ? b->param_node : -1;
        cc->root_written[j] = b->external && b->written;
    }
    if (role & HS__ROLE_ENTRY) {
        for (int j = 0; j < nr; j++) {
            hs__buf *b = &s->buf[rt[j]];
            if (b->kind == HS_BUFFER_ARGUMENT)
                b->aliases_argument = true;
            else
                b->kind = HS_BUFFER_OUTPUT;
        }
        /* A donated output is written into its parameter's buffer. */
        const hs_shape *rs = &s->cur->instrs[root]->shape;
        for (int d = 0; d < s->n_donations; d++) {
            const hs_io_alias *x = &s->donations[d];
            int node = hs__index_node(rs, x->output, x->output_len);
            if (node >= 0 && node < nr)
                s->buf[rt[node]].aliases_argument = true;
        }
    } else if (role & HS__ROLE_CALLEE) {
        for (int j = 0; j < nr; j++)
            s->buf[rt[j]].counted = false;
    } else if (role & HS__ROLE_BODY) {
        const hs_computation *c = s->cur;
        int p = c->n_params > 0 && c->params[0] ? hs__ba_pos(s, c->params[0])
                                                : -1;
        const int32_t *pt;
        if (p < 0 || hs__ba_table(s, p, &pt) != nr)
            return HS_OK;
        int stamp = -(root + 2); /* distinct from while stamps (k + 1) */
        for (int j = 0; j < nr; j++) {
            hs__buf *r = &s->buf[rt[j]], *e = &s->buf[pt[j]];
            if (r->external || !r->counted || !e->external ||
                s->mark[pt[j]] == stamp || e->end >= r->start)
                continue;
            s->mark[pt[j]] = stamp;
            r->counted = false;
        }
    }
    return HS_OK;
}

/* Peak of each memory space: counted buffers by their live ranges, plus
 * the peaks of called computations at their call sites. */
static void sweep(hs__ba *s, hs__ba_comp *cc, int n)
{
    int64_t *d = s->delta;
    memset(d, 0, sizeof *d * (size_t)(n + 1) * HS__N_SPACES);
    for (int b = cc->first_buffer; b < s->n_buf; b++) {
        const hs__buf *x = &s->buf[b];
        if (!x->counted)
            continue;
        d[x->start * HS__N_SPACES + x->space] += x->bytes;
        d[(x->end + 1) * HS__N_SPACES + x->space] -= x->bytes;
    }
    for (int sp = 0; sp < HS__N_SPACES; sp++) {
        int64_t live = 0;
        cc->peak[sp] = -1;
        for (int k = 0; k < n; k++) {
            live += d[k * HS__N_SPACES + sp];
            int64_t total = live + s->contrib[k * HS__N_SPACES + sp];
            if (total > cc->peak[sp]) {
                cc->peak[sp] = total;
                cc->peak_pos[sp] = k;
                cc->peak_callee[sp] = s->contrib[k * HS__N_SPACES + sp] > 0
                                          ? s->contrib_comp[k * HS__N_SPACES +
                                                            sp]
                                          : -1;
            }
        }
        if (cc->peak[sp] < 0) {
            cc->peak[sp] = 0;
            cc->peak_pos[sp] = 0;
            cc->peak_callee[sp] = -1;
        }
    }
}

hs_status hs__ba_analyse(hs__ba *s, const hs_computation *c, hs_error *err)
{
    int ci = hs_computation_index(s->m, c);
    if (ci < 0)
        return hs_error_set(err, HS_ERR_INVALID,
                            "computation %s is not in the module", c->name);
    hs__ba_comp *cc = &s->comps[ci];
    if (cc->analysed) {
        /* Only the latest analysis can be redone: its buffers are last. */
        if (cc->first_buffer + cc->n_buffers != s->n_buf)
            return hs_error_set(err, HS_ERR_INVALID,
                                "computation %s analysed out of order",
                                c->name);
        s->n_buf = cc->first_buffer;
        cc->analysed = false;
    }
    int n = c->n_instrs;
    if (!reserve_positions(s, n))
        return nomem(err);
    s->cur = c;
    int root;
    hs_status st = index_uses(s, c, &root, err);
    if (st != HS_OK)
        return st;
    cc->first_buffer = s->n_buf;
    cc->n_instrs = n;
    s->n_tables = 0;
    for (int k = 0; k < n * HS__N_SPACES; k++) {
        s->contrib[k] = 0;
        s->contrib_comp[k] = -1;
    }
    bool entry = (s->roles[ci] & HS__ROLE_ENTRY) != 0;
    for (int k = 0; k < n; k++) {
        if (s->ctx && (st = hs__pass_poll(s->ctx, &s->tick, err)) != HS_OK)
            return st;
        s->table_off[k] = s->n_tables;
        st = table_for(s, k, entry, err);
        if (st != HS_OK)
            return st;
        s->table_off[k + 1] = s->n_tables;
        extend(s, k);
    }
    st = finish_root(s, cc, s->roles[ci], root, err);
    if (st != HS_OK)
        return st;
    sweep(s, cc, n);
    cc->n_buffers = s->n_buf - cc->first_buffer;
    cc->analysed = true;
    return HS_OK;
}
