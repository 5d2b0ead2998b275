/*
 * buffer_assignment.c - hs_assign_buffers: runs the liveness engine over
 * every computation that owns buffers (callees first), then gathers the
 * public result: the buffer list in program order, the peak of each memory
 * space with the buffers live at it, and XLA-style memory stats. Also the
 * `buffer-assignment` pass, which runs the analysis and changes nothing.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buffers/buffers_internal.h"

struct hs_buffer_assignment {
    const hs_module *m;
    hs_arena *arena; /* names */
    int n;
    hs_logical_buffer *list;
    hs_buffer_peak peak[HS__N_SPACES];
    int n_live[HS__N_SPACES];
    const hs_logical_buffer **live[HS__N_SPACES];
    hs_memory_stats stats;
};

const char *hs_buffer_kind_name(hs_buffer_kind k)
{
    switch (k) {
    case HS_BUFFER_ARGUMENT: return "argument";
    case HS_BUFFER_OUTPUT: return "output";
    case HS_BUFFER_TEMPORARY: return "temporary";
    case HS_BUFFER_CONSTANT: return "constant";
    }
    return "?";
}

static hs_status analyse_all(hs__ba *s, hs_error *err)
{
    for (int k = 0; k < s->n_order; k++) {
        hs_status st = hs__ba_analyse(s, s->m->comps[s->order[k]], err);
        if (st != HS_OK)
            return st;
    }
    return HS_OK;
}

/* ---- names: "add.3", "tuple.5{}", "param.1{1,0}" ------------------------ */

/* Finds node `target` below sh (numbered from *node) and writes the index
 * path to it. */
static bool node_path(const hs_shape *sh, int target, int *node, int *path,
                      int depth, int *len)
{
    if (*node == target) {
        *len = depth;
        return true;
    }
    (*node)++;
    if (sh->dtype == HS_TUPLE && depth < 32)
        for (int e = 0; e < sh->n_elems; e++) {
            path[depth] = e;
            if (node_path(&sh->elems[e], target, node, path, depth + 1, len))
                return true;
        }
    return false;
}

static const char *buffer_name(hs_arena *a, const hs__buf *b)
{
    const hs_instruction *i = b->instr;
    if (i->shape.dtype != HS_TUPLE)
        return i->name;
    int path[32], len = 0, node = 0;
    node_path(&i->shape, b->node, &node, path, 0, &len);
    char idx[160];
    size_t used = 0;
    idx[0] = 0;
    for (int d = 0; d < len && used < sizeof idx - 16; d++)
        used += (size_t)snprintf(idx + used, sizeof idx - used, "%s%d",
                                 d ? "," : "", path[d]);
    return hs_arena_printf(a, "%s{%s}", i->name, idx);
}

/* ---- the public list ---------------------------------------------------- */

typedef struct order_key {
    int comp, start, id;
} order_key;

static int by_program_order(const void *pa, const void *pb)
{
    const order_key *a = pa, *b = pb;
    if (a->comp != b->comp)
        return a->comp < b->comp ? -1 : 1;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    return (a->id > b->id) - (a->id < b->id);
}

/* Fills ba->list with the counted buffers; *public_of maps internal ids to
 * list positions (-1 for buffers that are not listed). */
static hs_status build_list(hs_buffer_assignment *ba, const hs__ba *s,
                            int **public_of, hs_error *err)
{
    int n = 0;
    for (int b = 0; b < s->n_buf; b++)
        n += s->buf[b].counted;
    order_key *keys = malloc(sizeof *keys * (size_t)(n > 0 ? n : 1));
    int *map = malloc(sizeof *map * (size_t)(s->n_buf > 0 ? s->n_buf : 1));
    ba->list = calloc((size_t)(n ? n : 1), sizeof *ba->list);
    if (!keys || !map || !ba->list) {
        free(keys);
        free(map);
        return hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
    }
    int j = 0;
    for (int b = 0; b < s->n_buf; b++) {
        map[b] = -1;
        if (s->buf[b].counted)
            keys[j++] = (order_key){hs_computation_index(s->m, s->buf[b].comp),
                                    s->buf[b].start, b};
    }
    qsort(keys, (size_t)n, sizeof *keys, by_program_order);
    for (j = 0; j < n; j++) {
        const hs__buf *x = &s->buf[keys[j].id];
        hs_logical_buffer *l = &ba->list[j];
        map[keys[j].id] = j;
        l->id = j;
        l->name = buffer_name(ba->arena, x);
        l->instruction = x->instr;
        l->computation = x->comp;
        l->op_name = x->instr->op_name;
        l->shape = x->shape;
        l->bytes = x->bytes;
        l->memory_space = x->space == HS__SPACE_HOST ? HS_MEMSPACE_HOST
                                                     : HS_MEMSPACE_DEVICE;
        l->start = x->start;
        l->end = x->end;
        l->kind = x->kind;
        l->aliases_argument = x->aliases_argument;
        l->donated = x->donated;
        if (!l->name) {
            free(keys);
            free(map);
            return hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
        }
    }
    ba->n = n;
    free(keys);
    *public_of = map;
    return HS_OK;
}

/* ---- peaks -------------------------------------------------------------- */

static int by_size(const void *pa, const void *pb)
{
    const hs_logical_buffer *a = *(const hs_logical_buffer *const *)pa;
    const hs_logical_buffer *b = *(const hs_logical_buffer *const *)pb;
    if (a->bytes != b->bytes)
        return a->bytes > b->bytes ? -1 : 1;
    return (a->id > b->id) - (a->id < b->id);
}

/* The buffers live at the peak of space sp: those of computation ci live
 * at its peak position, then those of the callee its peak lies in. */
static hs_status gather_live(hs_buffer_assignment *ba, const hs__ba *s,
                             const int *public_of, int sp, hs_error *err)
{
    int cap = 0, n = 0;
    const hs_logical_buffer **live = NULL;
    const hs_instruction *inner = NULL;
    for (int ci = hs_computation_index(s->m, s->m->entry), depth = 0;
         ci >= 0 && depth <= s->n_order; depth++) {
        const hs__ba_comp *cc = &s->comps[ci];
        int pos = cc->peak_pos[sp];
        inner = s->m->comps[ci]->instrs[pos];
        for (int b = cc->first_buffer; b < cc->first_buffer + cc->n_buffers;
             b++) {
            const hs__buf *x = &s->buf[b];
            if (!x->counted || x->space != sp || x->start > pos ||
                x->end < pos || x->bytes == 0)
                continue;
            if (n == cap) {
                cap = cap ? cap * 2 : 64;
                const hs_logical_buffer **p =
                    realloc(live, sizeof *p * (size_t)cap);
                if (!p) {
                    free(live);
                    return hs_error_set(err, HS_ERR_NOMEM,
                                        "out of host memory");
                }
                live = p;
            }
            live[n++] = &ba->list[public_of[b]];
        }
        ci = cc->peak_callee[sp];
    }
    if (n > 1)
        qsort(live, (size_t)n, sizeof *live, by_size);
    ba->live[sp] = live;
    ba->n_live[sp] = n;
    const hs__ba_comp *e = &s->comps[hs_computation_index(s->m, s->m->entry)];
    ba->peak[sp] = (hs_buffer_peak){e->peak[sp], e->peak_pos[sp],
                                    s->m->entry->instrs[e->peak_pos[sp]],
                                    inner};
    return HS_OK;
}

/* ---- memory stats ------------------------------------------------------- */

/* The largest sum of live temporaries (constants and callees' peaks
 * included) in the entry, which is the computation analysed last. */
static int64_t temp_peak(const hs__ba *s, const hs__ba_comp *e, int sp)
{
    int n = e->n_instrs;
    int64_t *d = calloc((size_t)n + 1, sizeof *d);
    if (!d)
        return -1;
    for (int b = e->first_buffer; b < e->first_buffer + e->n_buffers; b++) {
        const hs__buf *x = &s->buf[b];
        if (!x->counted || x->space != sp ||
            x->kind == HS_BUFFER_ARGUMENT || x->kind == HS_BUFFER_OUTPUT)
            continue;
        d[x->start] += x->bytes;
        d[x->end + 1] -= x->bytes;
    }
    int64_t live = 0, peak = 0;
    for (int k = 0; k < n; k++) {
        live += d[k];
        int64_t t = live + s->contrib[k * HS__N_SPACES + sp];
        if (t > peak)
            peak = t;
    }
    free(d);
    return peak;
}

static hs_status memory_stats(hs_buffer_assignment *ba, const hs__ba *s,
                              hs_error *err)
{
    const hs__ba_comp *e = &s->comps[hs_computation_index(s->m, s->m->entry)];
    for (int sp = 0; sp < HS__N_SPACES; sp++) {
        hs_memory_space_stats *ms =
            sp == HS__SPACE_HOST ? &ba->stats.host : &ba->stats.device;
        for (int b = e->first_buffer; b < e->first_buffer + e->n_buffers;
             b++) {
            const hs__buf *x = &s->buf[b];
            if (!x->counted || x->space != sp)
                continue;
            if (x->kind == HS_BUFFER_ARGUMENT)
                ms->argument_bytes += x->bytes;
            if (x->kind == HS_BUFFER_OUTPUT || x->aliases_argument)
                ms->output_bytes += x->bytes;
            if (x->aliases_argument)
                ms->alias_bytes += x->bytes;
        }
        ms->peak_bytes = e->peak[sp];
        ms->temp_bytes = temp_peak(s, e, sp);
        if (ms->temp_bytes < 0)
            return hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
    }
    return HS_OK;
}

/* ---- public API --------------------------------------------------------- */

static hs_status assign(hs_buffer_assignment *ba, const hs_module *m,
                        hs_error *err)
{
    hs__ba s;
    hs_status st = hs__ba_init(&s, m, NULL, err);
    if (st != HS_OK)
        return st;
    int *public_of = NULL;
    st = analyse_all(&s, err);
    if (st == HS_OK)
        st = build_list(ba, &s, &public_of, err);
    for (int sp = 0; st == HS_OK && sp < HS__N_SPACES; sp++)
        st = gather_live(ba, &s, public_of, sp, err);
    if (st == HS_OK)
        st = memory_stats(ba, &s, err);
    free(public_of);
    hs__ba_release(&s);
    return st;
}

/* How many assignments this process has computed: a statistic only
 * (the server exports it, tests count with it), never read to decide
 * anything, so it does not make the analysis depend on global state. */
static _Atomic int64_t assignments;

int64_t hs_buffers_assignment_count(void)
{
    return atomic_load_explicit(&assignments, memory_order_relaxed);
}

hs_buffer_assignment *hs_assign_buffers(const hs_module *m, hs_error *err)
{
    if (!m)
        return NULL;
    atomic_fetch_add_explicit(&assignments, 1, memory_order_relaxed);
    hs_buffer_assignment *ba = calloc(1, sizeof *ba);
    if (ba)
        ba->arena = hs_arena_new(0);
    if (!ba || !ba->arena) {
        free(ba);
        hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
        return NULL;
    }
    ba->m = m;
    if (assign(ba, m, err) != HS_OK) {
        hs_buffers_free(ba);
        return NULL;
    }
    return ba;
}

void hs_buffers_free(hs_buffer_assignment *ba)
{
    if (!ba)
        return;
    for (int sp = 0; sp < HS__N_SPACES; sp++)
        free(ba->live[sp]);
    free(ba->list);
    hs_arena_free(ba->arena);
    free(ba);
}

hs_buffer_peak hs_buffers_peak(const hs_buffer_assignment *ba,
                               int memory_space)
{
    return ba->peak[hs__space_index(memory_space)];
}

const hs_logical_buffer *const *
hs_buffers_live_at_peak(const hs_buffer_assignment *ba, int memory_space,
                        int *n)
{
    int sp = hs__space_index(memory_space);
    *n = ba->n_live[sp];
    return ba->live[sp];
}

const hs_logical_buffer *hs_buffers_list(const hs_buffer_assignment *ba,
                                         int *n)
{
    *n = ba->n;
    return ba->list;
}

const hs_memory_stats *hs_buffers_memory_stats(const hs_buffer_assignment *ba)
{
    return &ba->stats;
}

/* ---- the pass ----------------------------------------------------------- */

hs_status hs_pass_buffer_assignment_run(hs_module *m, hs_pass_context *ctx,
                                        bool *changed, hs_error *err)
{
    *changed = false;
    if (!m->entry)
        return HS_OK;
    hs__ba s;
    hs_status st = hs__ba_init(&s, m, ctx, err);
    if (st != HS_OK)
        return st;
    st = analyse_all(&s, err);
    hs__ba_release(&s);
    return st;
}
