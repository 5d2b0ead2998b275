/*
 * schedule.c - the `schedule` pass: a memory-aware order for every
 * computation that owns buffers, after XLA's ListScheduler and
 * DefaultMemoryScheduler.
 *
 * For each computation (callees first, so that a call site knows its
 * callee's peak), the list scheduler walks the graph forwards. Among the
 * ready instructions (all operands scheduled) it takes the one that frees
 * the most device bytes minus the bytes it defines, ties going to the
 * earlier instruction of the current order, so the result is
 * deterministic. A buffer is freed by its last remaining user; arguments
 * and the root's buffers are never freed. Priorities change only when a
 * buffer gets down to one remaining user, so a heap with lazily dropped
 * stale entries keeps the whole pass O((n + uses) log n).
 *
 * The depth-first scheduler (XLA's DFSMemoryScheduler) walks back from the
 * root and visits first the operands with the most extra users, then the
 * largest cumulative bytes, so that big subtrees are finished and freed
 * before their siblings start.
 *
 * Like XLA's DefaultMemoryScheduler, which keeps the best of several
 * schedulers, the pass compares the buffer-assignment peaks of the current
 * order (the tracer's post order), the list schedule and the depth-first
 * one, and keeps the current order unless another lowers the device peak
 * (or keeps it equal and lowers the host peak).
 */
#include <stdlib.h>
#include <string.h>

#include "buffers/buffers_internal.h"
#include "passes/context.h"
#include "passes/host_offload.h"

typedef struct entry {
    int64_t priority;
    int32_t pos;
    uint32_t version;
} entry;

typedef struct heap {
    entry *e;
    int n, cap;
} heap;

/* a goes before b: higher priority, then earlier position. */
static bool before(const entry *a, const entry *b)
{
    return a->priority != b->priority ? a->priority > b->priority
                                      : a->pos < b->pos;
}

static bool heap_push(heap *h, entry x)
{
    if (h->n == h->cap) {
        int cap = h->cap ? h->cap * 2 : 64;
        entry *e = realloc(h->e, sizeof *e * (size_t)cap);
        if (!e)
            return false;
        h->e = e;
        h->cap = cap;
    }
    int i = h->n++;
    while (i > 0) {
        int p = (i - 1) / 2;
        if (!before(&x, &h->e[p]))
            break;
        h->e[i] = h->e[p];
        i = p;
    }
    h->e[i] = x;
    return true;
}

static entry heap_pop(heap *h)
{
    entry top = h->e[0], x = h->e[--h->n];
    int i = 0;
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        const entry *best = &x;
        if (l < h->n && before(&h->e[l], best)) {
            m = l;
            best = &h->e[l];
        }
        if (r < h->n && before(&h->e[r], best))
            m = r;
        if (m == i)
            break;
        h->e[i] = h->e[m];
        i = m;
    }
    if (h->n > 0)
        h->e[i] = x;
    return top;
}

/* The scheduling problem of one computation, read from the tables of its
 * latest analysis (in the current order). Buffers are numbered from the
 * computation's first buffer. */
typedef struct problem {
    int n, nb;
    int64_t *defined;   /* by instruction: device bytes it allocates */
    int64_t *free_w;    /* by buffer: device bytes freed by its last user */
    int32_t *use_off, *uses;     /* instruction -> distinct buffers used */
    int32_t *user_off, *users;   /* buffer -> instructions using it */
    int32_t *remaining;          /* buffer: users not yet scheduled */
    int32_t *iuser_off, *iusers; /* instruction -> users (operand edges) */
    int32_t *indeg;              /* operand edges not yet scheduled */
    int64_t *gain;               /* bytes freed if scheduled now */
    uint32_t *version;
    uint8_t *state;              /* 0 waiting, 1 ready, 2 scheduled */
} problem;

static void problem_free(problem *p)
{
    free(p->defined);
    free(p->free_w);
    free(p->use_off);
    free(p->uses);
    free(p->user_off);
    free(p->users);
    free(p->remaining);
    free(p->iuser_off);
    free(p->iusers);
    free(p->indeg);
    free(p->gain);
    free(p->version);
    free(p->state);
}

/* Buffers each instruction uses, without repeats: all of each operand's
 * buffers, or only the index table for get-tuple-element. */
static bool collect_uses(problem *p, const hs__ba *s, const hs_computation *c,
                         int first, int32_t *stamp)
{
    int cap = 2 * p->n + 16, n_uses = 0;
    p->uses = malloc(sizeof *p->uses * (size_t)cap);
    if (!p->uses)
        return false;
    for (int k = 0; k < p->n; k++) {
        const hs_instruction *i = c->instrs[k];
        p->use_off[k] = n_uses;
        for (int o = 0; o < i->n_operands; o++) {
            const int32_t *ids;
            int nn = hs__ba_table(s, hs__ba_pos(s, i->operands[o]), &ids);
            if (i->opcode == HS_OP_GET_TUPLE_ELEMENT)
                nn = 1;
            for (int j = 0; j < nn; j++) {
                int32_t b = ids[j] - first;
                if (stamp[b] == k + 1)
                    continue;
                stamp[b] = k + 1;
                if (n_uses == cap) {
                    cap *= 2;
                    int32_t *u = realloc(p->uses, sizeof *u * (size_t)cap);
                    if (!u)
                        return false;
                    p->uses = u;
                }
                p->uses[n_uses++] = b;
            }
        }
    }
    p->use_off[p->n] = n_uses;
    return true;
}

/* CSR of the reverse relation: for each of n_to targets, the sources. */
static bool invert(int n_from, const int32_t *off, const int32_t *to,
                   int n_to, int32_t **out_off, int32_t **out)
{
    int32_t *o = calloc((size_t)n_to + 1, sizeof *o);
    int32_t *v = malloc(sizeof *v * (size_t)(off[n_from] ? off[n_from] : 1));
    if (!o || !v) {
        free(o);
        free(v);
        return false;
    }
    for (int k = 0; k < off[n_from]; k++)
        o[to[k] + 1]++;
    for (int b = 0; b < n_to; b++)
        o[b + 1] += o[b];
    int32_t *fill = malloc(sizeof *fill * (size_t)(n_to ? n_to : 1));
    if (!fill) {
        free(o);
        free(v);
        return false;
    }
    memcpy(fill, o, sizeof *fill * (size_t)n_to);
    for (int k = 0; k < n_from; k++)
        for (int j = off[k]; j < off[k + 1]; j++)
            v[fill[to[j]]++] = k;
    free(fill);
    *out_off = o;
    *out = v;
    return true;
}

static bool build(problem *p, const hs__ba *s, const hs_computation *c)
{
    const hs__ba_comp *cc = &s->comps[hs_computation_index(s->m, c)];
    int first = cc->first_buffer;
    p->n = c->n_instrs;
    p->nb = cc->n_buffers;
    size_t n = (size_t)p->n + 1, nb = (size_t)p->nb + 1;
    p->defined = calloc(n, sizeof *p->defined);
    p->free_w = calloc(nb, sizeof *p->free_w);
    p->use_off = malloc(sizeof *p->use_off * n);
    p->remaining = calloc(nb, sizeof *p->remaining);
    p->indeg = calloc(n, sizeof *p->indeg);
    p->gain = calloc(n, sizeof *p->gain);
    p->version = calloc(n, sizeof *p->version);
    p->state = calloc(n, 1);
    int32_t *stamp = calloc(nb, sizeof *stamp);
    int32_t *edges = NULL, *edge_off = malloc(sizeof *edge_off * n);
    bool ok = p->defined && p->free_w && p->use_off && p->remaining &&
              p->indeg && p->gain && p->version && p->state && stamp &&
              edge_off;
    /* Weights: device bytes of counted buffers. Arguments cost nothing
     * (they are live throughout) and the root's buffers are never freed. */
    for (int b = 0; ok && b < p->nb; b++) {
        const hs__buf *x = &s->buf[first + b];
        int64_t w = x->counted && x->space == HS__SPACE_DEVICE &&
                            x->kind != HS_BUFFER_ARGUMENT
                        ? x->bytes
                        : 0;
        p->defined[hs__ba_pos(s, x->instr)] += w;
        p->free_w[b] = w;
    }
    if (ok) {
        const int32_t *ids;
        int nr = hs__ba_table(s, hs__ba_pos(s, c->root), &ids);
        for (int j = 0; j < nr; j++)
            p->free_w[ids[j] - first] = 0;
    }
    ok = ok && collect_uses(p, s, c, first, stamp);
    ok = ok && invert(p->n, p->use_off, p->uses, p->nb, &p->user_off,
                      &p->users);
    /* Operand edges, to know when an instruction becomes ready. */
    int n_edges = 0;
    for (int k = 0; ok && k < p->n; k++)
        n_edges += c->instrs[k]->n_operands;
    if (ok && !(edges = malloc(sizeof *edges * (size_t)(n_edges + 1))))
        ok = false;
    int e = 0;
    for (int k = 0; ok && k < p->n; k++) {
        const hs_instruction *i = c->instrs[k];
        edge_off[k] = e;
        p->indeg[k] = i->n_operands;
        for (int o = 0; o < i->n_operands; o++)
            edges[e++] = hs__ba_pos(s, i->operands[o]);
    }
    if (ok)
        edge_off[p->n] = e;
    /* edges lists operands per instruction; its inverse lists users. */
    ok = ok && invert(p->n, edge_off, edges, p->n, &p->iuser_off, &p->iusers);
    for (int b = 0; ok && b < p->nb; b++)
        p->remaining[b] = p->user_off[b + 1] - p->user_off[b];
    for (int k = 0; ok && k < p->n; k++)
        for (int j = p->use_off[k]; j < p->use_off[k + 1]; j++)
            if (p->remaining[p->uses[j]] == 1)
                p->gain[k] += p->free_w[p->uses[j]];
    free(stamp);
    free(edges);
    free(edge_off);
    return ok;
}

static bool make_ready(problem *p, heap *h, int k)
{
    p->state[k] = 1;
    return heap_push(h, (entry){p->gain[k] - p->defined[k], k,
                                p->version[k]});
}

/* Schedules instruction k: its buffers lose a user; a buffer down to one
 * user raises that user's priority. */
static bool take(problem *p, heap *h, int k)
{
    p->state[k] = 2;
    for (int j = p->use_off[k]; j < p->use_off[k + 1]; j++) {
        int b = p->uses[j];
        if (--p->remaining[b] != 1 || p->free_w[b] == 0)
            continue;
        for (int u = p->user_off[b]; u < p->user_off[b + 1]; u++) {
            int v = p->users[u];
            if (p->state[v] == 2)
                continue;
            p->gain[v] += p->free_w[b];
            if (p->state[v] == 1) {
                p->version[v]++;
                if (!heap_push(h, (entry){p->gain[v] - p->defined[v], v,
                                          p->version[v]}))
                    return false;
            }
            break;
        }
    }
    for (int j = p->iuser_off[k]; j < p->iuser_off[k + 1]; j++) {
        int v = p->iusers[j];
        if (--p->indeg[v] == 0 && !make_ready(p, h, v))
            return false;
    }
    return true;
}

/* The list schedule of c (analysed last, in its current order) into out.
 * Consumes p's counters. */
static hs_status list_schedule(hs__ba *s, problem *p, hs_computation *c,
                               hs_instruction **out, hs_error *err)
{
    heap h = {0};
    bool ok = true;
    for (int k = 0; ok && k < p->n; k++)
        if (p->indeg[k] == 0)
            ok = make_ready(p, &h, k);
    int done = 0;
    hs_status st = HS_OK;
    while (ok && st == HS_OK && h.n > 0) {
        entry e = heap_pop(&h);
        if (p->state[e.pos] != 1 || e.version != p->version[e.pos])
            continue;
        out[done++] = c->instrs[e.pos];
        ok = take(p, &h, e.pos);
        if (s->ctx)
            st = hs__pass_poll(s->ctx, &s->tick, err);
    }
    free(h.e);
    if (st != HS_OK)
        return st;
    if (!ok)
        return hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
    if (done != c->n_instrs)
        return hs_error_set(err, HS_ERR_INVALID,
                            "schedule: %s has a cycle (%d of %d "
                            "instructions scheduled)",
                            c->name, done, c->n_instrs);
    return HS_OK;
}

/* ---- depth-first ---------------------------------------------------------- */

typedef struct dfs_keys {
    const int64_t *extra_users, *total_bytes;
} dfs_keys;

/* XLA's visit order: more extra users first, then larger cumulative
 * bytes, then (for determinism) the earlier instruction. */
static bool visit_first(const dfs_keys *d, int a, int b)
{
    if (d->extra_users[a] != d->extra_users[b])
        return d->extra_users[a] > d->extra_users[b];
    if (d->total_bytes[a] != d->total_bytes[b])
        return d->total_bytes[a] > d->total_bytes[b];
    return a < b;
}

/* Insertion sort: operand lists are short. */
static void sort_operands(const dfs_keys *d, int32_t *v, int n)
{
    for (int i = 1; i < n; i++) {
        int32_t x = v[i];
        int j = i - 1;
        for (; j >= 0 && visit_first(d, x, v[j]); j--)
            v[j + 1] = v[j];
        v[j + 1] = x;
    }
}

/* The depth-first schedule of c into out: a post order from the root with
 * operands visited in XLA's order, then whatever the root does not reach.
 * Iterative, so that a chain of 100k instructions needs no deep stack. */
static hs_status dfs_schedule(const hs__ba *s, const problem *p,
                              hs_computation *c, hs_instruction **out,
                              hs_error *err)
{
    int n = p->n;
    int64_t *extra = calloc((size_t)n + 1, sizeof *extra);
    int64_t *total = calloc((size_t)n + 1, sizeof *total);
    int32_t *ops = malloc(sizeof *ops * (size_t)(p->iuser_off[n] + 1));
    int32_t *op_off = malloc(sizeof *op_off * ((size_t)n + 1));
    int32_t *stack = malloc(sizeof *stack * ((size_t)n + 1));
    int32_t *next = calloc((size_t)n + 1, sizeof *next);
    uint8_t *seen = calloc((size_t)n + 1, 1);
    int32_t *stamp = calloc((size_t)n + 1, sizeof *stamp);
    bool ok = extra && total && ops && op_off && stack && next && seen &&
              stamp;
    /* Distinct operands, and the keys in definition order. The sums count
     * shared subgraphs more than once; like XLA, cap them. */
    int64_t cumulative = 0;
    int m = 0;
    for (int k = 0; ok && k < n; k++) {
        const hs_instruction *i = c->instrs[k];
        op_off[k] = m;
        int users = 0;
        for (int j = p->iuser_off[k]; j < p->iuser_off[k + 1]; j++)
            if (stamp[p->iusers[j]] != -(k + 1)) {
                stamp[p->iusers[j]] = -(k + 1);
                users++;
            }
        extra[k] = users > 0 ? users - 1 : 0;
        total[k] = p->defined[k];
        cumulative += p->defined[k];
        for (int o = 0; o < i->n_operands; o++) {
            int q = hs__ba_pos(s, i->operands[o]);
            if (stamp[q] == k + 1)
                continue;
            stamp[q] = k + 1;
            ops[m++] = q;
            extra[k] += extra[q];
            total[k] += total[q];
        }
        if (total[k] > cumulative)
            total[k] = cumulative;
        if (extra[k] > n)
            extra[k] = n;
    }
    dfs_keys keys = {extra, total};
    int done = 0;
    if (ok) {
        op_off[n] = m;
        for (int k = 0; k < n; k++)
            sort_operands(&keys, ops + op_off[k], op_off[k + 1] - op_off[k]);
        int root = hs__ba_pos(s, c->root);
        for (int r = -1; r < n; r++) {
            int start = r < 0 ? root : r;
            if (seen[start])
                continue;
            int top = 0;
            stack[top++] = start;
            seen[start] = 1;
            next[start] = op_off[start];
            while (top > 0) {
                int k = stack[top - 1];
                if (next[k] < op_off[k + 1]) {
                    int q = ops[next[k]++];
                    if (!seen[q]) {
                        seen[q] = 1;
                        next[q] = op_off[q];
                        stack[top++] = q;
                    }
                    continue;
                }
                out[done++] = c->instrs[k];
                top--;
            }
        }
    }
    free(extra);
    free(total);
    free(ops);
    free(op_off);
    free(stack);
    free(next);
    free(seen);
    free(stamp);
    if (!ok)
        return hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
    return done == n ? HS_OK
                     : hs_error_set(err, HS_ERR_INVALID,
                                    "schedule: depth-first order of %s "
                                    "covers %d of %d instructions",
                                    c->name, done, n);
}

static bool lower(const int64_t *a, const int64_t *b)
{
    return a[HS__SPACE_DEVICE] != b[HS__SPACE_DEVICE]
               ? a[HS__SPACE_DEVICE] < b[HS__SPACE_DEVICE]
               : a[HS__SPACE_HOST] < b[HS__SPACE_HOST];
}

enum { N_CANDIDATES = 3 }; /* current, list, depth-first */

/* Schedules c, analysed in its current order; keeps the best order and
 * leaves c analysed in it. */
static hs_status schedule_computation(hs__ba *s, hs_computation *c,
                                      bool *changed, hs_error *err)
{
    int n = c->n_instrs;
    const hs__ba_comp *cc = &s->comps[hs_computation_index(s->m, c)];
    hs_instruction **cand[N_CANDIDATES] = {NULL};
    int64_t peak[N_CANDIDATES][HS__N_SPACES];
    bool ok = true;
    for (int k = 0; k < N_CANDIDATES; k++)
        ok &= (cand[k] = malloc(sizeof *cand[k] * (size_t)n)) != NULL;
    problem p = {0};
    hs_status st = ok && build(&p, s, c)
                       ? HS_OK
                       : hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
    if (st == HS_OK) {
        memcpy(cand[0], c->instrs, sizeof *cand[0] * (size_t)n);
        memcpy(peak[0], cc->peak, sizeof peak[0]);
        st = dfs_schedule(s, &p, c, cand[2], err);
    }
    if (st == HS_OK)
        st = list_schedule(s, &p, c, cand[1], err);
    problem_free(&p);
    int best = 0, analysed = 0;
    for (int k = 1; st == HS_OK && k < N_CANDIDATES; k++) {
        if (memcmp(cand[k], cand[0], sizeof *cand[k] * (size_t)n) == 0)
            continue;
        memcpy(c->instrs, cand[k], sizeof *cand[k] * (size_t)n);
        st = hs__ba_analyse(s, c, err);
        analysed = k;
        memcpy(peak[k], cc->peak, sizeof peak[k]);
        if (st == HS_OK && lower(peak[k], peak[best]))
            best = k;
    }
    /* The order kept is analysed last, for the callers' call sites; on an
     * error the current order is restored. */
    if (st != HS_OK)
        best = 0;
    memcpy(c->instrs, cand[best], sizeof *cand[best] * (size_t)n);
    /* Async copies overlap what lies between start and done
     * (host_offload.c). */
    if (st == HS_OK && hs__place_async_copies(c)) {
        *changed = true;
        analysed = -1;
    }
    if (st == HS_OK && analysed != best)
        st = hs__ba_analyse(s, c, err);
    *changed |= best != 0;
    for (int k = 0; k < N_CANDIDATES; k++)
        free(cand[k]);
    return st;
}

hs_status hs_pass_schedule_run(hs_module *m, hs_pass_context *ctx,
                               bool *changed, hs_error *err)
{
    if (!m->entry) /* nothing runs, so nothing to order */
        return HS_OK;
    hs__ba s;
    hs_status st = hs__ba_init(&s, m, ctx, err);
    for (int k = 0; st == HS_OK && k < s.n_order; k++) {
        hs_computation *c = m->comps[s.order[k]];
        st = hs__ba_analyse(&s, c, err);
        if (st == HS_OK && c->n_instrs > 2)
            st = schedule_computation(&s, c, changed, err);
    }
    if (s.comps)
        hs__ba_release(&s);
    return st;
}
