/*
 * lifetimes.c - the values a step saves for later: for each device buffer
 * that an entry instruction defines, its uses in the schedule split at the
 * longest idle gap (measured in compute time on the device's clock); an
 * element of a tuple-shaped result (a loop's carried-out values, a
 * multi-output fusion's) counts through the get-tuple-element that reads
 * it, and a value a tuple or a loop takes is used where they run. A
 * value idle for at least a quarter of the step is saved for later; a step
 * whose saved values nest (one defined earlier and used again later than
 * another) has a backward pass consuming what its forward pass saved in
 * reverse order, which is what host offloading of activations is for. A
 * forward-only module has at most a chain of residuals one after the
 * other, none nested.
 */
#include <stdlib.h>
#include <string.h>

#include "whatif/offload_internal.h"

/* Reads its operand's buffer as it is, defining no bytes of its own. */
static bool is_view(const hs_instruction *i, const bool *defines)
{
    return (i->opcode == HS_OP_BITCAST || i->opcode == HS_OP_RESHAPE) &&
           !defines[i->id];
}

/* Stretches of the schedule where a value is held by a tuple that holds
 * it (from the tuple to its last use): no idle gap may fall inside one,
 * whatever the value's own uses. */
#define MAX_PINS 8
typedef struct pins {
    int n;
    int from[MAX_PINS], to[MAX_PINS];
} pins;

static bool pinned(const pins *p, int from, int to)
{
    for (int k = 0; k < p->n; k++)
        if (from >= p->from[k] && to <= p->to[k])
            return true;
    return false;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static int cmp_size(const void *a, const void *b)
{
    const hs__saved_value *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes < y->bytes ? 1 : -1;
    return (x->def > y->def) - (x->def < y->def);
}

static int cmp_from(const void *a, const void *b)
{
    const hs__saved_value *x = *(const hs__saved_value *const *)a;
    const hs__saved_value *y = *(const hs__saved_value *const *)b;
    return (x->idle_from > y->idle_from) - (x->idle_from < y->idle_from);
}

/* Positions where v is read, through views and tuples, into buf (at most
 * cap); -1 when v is returned (it is the root, or a tuple or view of it
 * is) or held by more
 * tuples than pins keeps. A tuple that takes v is a use where it is
 * built and holds v until its own last use (a pin); a loop, call or
 * conditional reads v where it runs, a use there as any other (v must be
 * on the device when the loop starts, and may be on the host before). */
static int collect(const hs_computation *c, const hs_instruction *v,
                   const int *user_off, const hs_instruction **users,
                   const int *pos, const bool *defines, int *buf, int cap,
                   int n, int depth, pins *pn)
{
    if (v == c->root)
        return -1;
    for (int u = user_off[v->id]; u < user_off[v->id + 1]; u++) {
        /* The root reading v computes from it (a use); a root tuple or
         * view of v returns it (the recursion below says so). */
        const hs_instruction *x = users[u];
        bool through = (is_view(x, defines) || x->opcode == HS_OP_TUPLE) &&
                       depth < 8;
        if (!through) {
            if (n < cap)
                buf[n++] = pos[x->id];
            continue;
        }
        int n0 = n;
        n = collect(c, x, user_off, users, pos, defines, buf, cap, n,
                    depth + 1, pn);
        if (n < 0)
            return -1;
        if (x->opcode != HS_OP_TUPLE)
            continue;
        int last = pos[x->id];
        for (int k = n0; k < n; k++)
            last = buf[k] > last ? buf[k] : last;
        if (pn->n == MAX_PINS)
            return -1;
        pn->from[pn->n] = pos[x->id];
        pn->to[pn->n++] = last;
        if (n < cap)
            buf[n++] = pos[x->id];
    }
    return n;
}

/* The element of tuple-shaped v that buffer lb is (a loop's or a
 * multi-output fusion's result), and the one get-tuple-element of the
 * entry that reads it: what is offloaded for it. NULL when lb is v's
 * index table, a nested element, or read by several get-tuple-elements
 * (*shared set). */
static const hs_instruction *element_reader(const hs_computation *c,
                                            const hs_logical_buffer *lb,
                                            const int *user_off,
                                            const hs_instruction **users,
                                            bool *shared)
{
    const hs_instruction *v = lb->instruction;
    int e = -1;
    for (int k = 0; k < v->shape.n_elems && e < 0; k++)
        if (lb->shape == &v->shape.elems[k] &&
            v->shape.elems[k].dtype != HS_TUPLE)
            e = k;
    if (e < 0)
        return NULL;
    const hs_instruction *g = NULL;
    for (int u = user_off[v->id]; u < user_off[v->id + 1]; u++) {
        const hs_instruction *x = users[u];
        if (x->opcode != HS_OP_GET_TUPLE_ELEMENT || x->index != e ||
            x == g || x->parent != c)
            continue;
        if (g) {
            *shared = true;
            return NULL;
        }
        g = x;
    }
    return g;
}

hs_status hs__find_saved_values(const hs_module *m,
                                const hs_buffer_assignment *ba,
                                const double *finish, hs__lifetimes *out,
                                hs_error *err)
{
    memset(out, 0, sizeof *out);
    const hs_computation *c = m->entry;
    int n = c->n_instrs, ids = m->next_id + 1;
    int nb = 0;
    const hs_logical_buffer *bufs = hs_buffers_list(ba, &nb);
    int *pos = malloc(sizeof *pos * (size_t)ids);
    int *user_off = calloc((size_t)ids + 1, sizeof *user_off);
    bool *defines = calloc((size_t)ids, sizeof *defines);
    out->live = calloc((size_t)n + 1, sizeof *out->live);
    out->values = calloc((size_t)nb + 1, sizeof *out->values);
    const hs_instruction **users = NULL;
    int *buf = NULL;
    hs_status st = HS_OK;
    if (!pos || !user_off || !defines || !out->live || !out->values)
        goto nomem;
    out->n_positions = n;
    out->step_seconds = n > 0 ? finish[n - 1] : 0;
    for (int k = 0; k < ids; k++)
        pos[k] = -1;
    for (int k = 0; k < n; k++)
        pos[c->instrs[k]->id] = k;

    /* Users within the entry, as compressed rows by id. */
    int64_t n_uses = 0;
    for (int k = 0; k < n; k++)
        for (int o = 0; o < c->instrs[k]->n_operands; o++) {
            const hs_instruction *x = c->instrs[k]->operands[o];
            if (x->parent == c) {
                user_off[x->id + 1]++;
                n_uses++;
            }
        }
    for (int k = 0; k < ids; k++)
        user_off[k + 1] += user_off[k];
    users = malloc(sizeof *users * ((size_t)n_uses + 1));
    buf = malloc(sizeof *buf * ((size_t)n_uses + 1));
    int *fill = malloc(sizeof *fill * (size_t)ids);
    if (!users || !buf || !fill) {
        free(fill);
        goto nomem;
    }
    memcpy(fill, user_off, sizeof *fill * (size_t)ids);
    for (int k = 0; k < n; k++)
        for (int o = 0; o < c->instrs[k]->n_operands; o++) {
            const hs_instruction *x = c->instrs[k]->operands[o];
            if (x->parent == c)
                users[fill[x->id]++] = c->instrs[k];
        }
    free(fill);

    /* The predicted profile: every device buffer of the entry over its
     * live range, as a difference array. */
    for (int b = 0; b < nb; b++) {
        const hs_logical_buffer *lb = &bufs[b];
        if (lb->computation != c || lb->memory_space == HS_MEMSPACE_HOST)
            continue;
        if (lb->instruction->id >= 0 && lb->instruction->id < ids)
            defines[lb->instruction->id] = true;
        int s = lb->start < 0 ? 0 : lb->start;
        int e = lb->end < 0 || lb->end >= n ? n - 1 : lb->end;
        if (s > e)
            continue;
        out->live[s] += lb->bytes;
        out->live[e + 1] -= lb->bytes;
    }
    for (int k = 1; k <= n; k++)
        out->live[k] += out->live[k - 1];
    /* What the computations called at the peak add there. */
    hs_buffer_peak pk = hs_buffers_peak(ba, HS_MEMSPACE_DEVICE);
    if (pk.position >= 0 && pk.position < n &&
        pk.bytes > out->live[pk.position])
        out->live[pk.position] = pk.bytes;

    double min_idle = HS_OFFLOAD_IDLE_FRACTION * out->step_seconds;
    for (int b = 0; b < nb; b++) {
        const hs_logical_buffer *lb = &bufs[b];
        const hs_instruction *v = lb->instruction;
        if (lb->memory_space == HS_MEMSPACE_HOST ||
            lb->kind != HS_BUFFER_TEMPORARY || lb->bytes <= 0)
            continue;
        if (lb->computation != c) {
            /* A loop body's or a called computation's own value lives for
             * one run of it, inside the call site's instruction of the
             * entry: counted, not a candidate (docs/WHATIF.md). */
            out->called.count++;
            out->called.bytes += lb->bytes;
            continue;
        }
        if (v->opcode == HS_OP_PARAMETER || v->opcode == HS_OP_CONSTANT ||
            pos[v->id] < 0)
            continue;
        /* Where the bytes are defined: an element's producer, however late
         * the schedule reads it (a get-tuple-element is free, and is often
         * placed right before its first use). */
        int def = pos[v->id];
        if (v->shape.dtype == HS_TUPLE) {
            bool shared = false;
            v = element_reader(c, lb, user_off, users, &shared);
            if (shared) {
                out->shared_elements.count++;
                out->shared_elements.bytes += lb->bytes;
            }
            if (!v || pos[v->id] < 0)
                continue;
        }
        pins pn = {0};
        int k = collect(c, v, user_off, users, pos, defines, buf,
                        (int)n_uses + 1, 0, 0, &pn);
        if (k <= 0)
            continue;
        qsort(buf, (size_t)k, sizeof *buf, cmp_int);
        int prev = def, from = -1, to = -1;
        double best = -1;
        for (int u = 0; u < k; u++) {
            if (buf[u] <= prev)
                continue;
            if (pinned(&pn, prev, buf[u])) {
                prev = buf[u];
                continue;
            }
            double idle = finish[buf[u] - 1] - finish[prev];
            if (idle > best) {
                best = idle;
                from = prev;
                to = buf[u];
            }
            prev = buf[u];
        }
        if (from < 0 || best < min_idle || best <= 0)
            continue;
        hs__saved_value *sv = &out->values[out->n++];
        sv->value = v;
        sv->bytes = lb->bytes;
        sv->def = def;
        sv->idle_from = from;
        sv->idle_to = to;
        sv->idle_seconds = best;
        out->idle_values_bytes += lb->bytes;
    }
    qsort(out->values, (size_t)out->n, sizeof *out->values, cmp_size);

    /* Nesting: in the order of the gaps' starts, a gap that ends before
     * one that started strictly earlier. */
    if (out->n > 1) {
        hs__saved_value **by = malloc(sizeof *by * (size_t)out->n);
        if (!by)
            goto nomem;
        for (int k = 0; k < out->n; k++)
            by[k] = &out->values[k];
        qsort(by, (size_t)out->n, sizeof *by, cmp_from);
        int max_to = -1;
        for (int k = 0; k < out->n && !out->nested;) {
            int j = k;
            while (j < out->n && by[j]->idle_from == by[k]->idle_from) {
                if (by[j]->idle_to < max_to)
                    out->nested = true;
                j++;
            }
            for (; k < j; k++)
                if (by[k]->idle_to > max_to)
                    max_to = by[k]->idle_to;
        }
        free(by);
    }
    goto out;
nomem:
    st = hs_error_set(err, HS_ERR_NOMEM, "offload: out of host memory");
    hs__lifetimes_free(out);
out:
    free(pos);
    free(user_off);
    free(defines);
    free(users);
    free(buf);
    return st;
}

void hs__lifetimes_free(hs__lifetimes *l)
{
    free(l->live);
    free(l->values);
    memset(l, 0, sizeof *l);
}

/* The bytes a chosen value stops holding: strictly inside its gap. */
static void account(hs__lifetimes *l, const hs__saved_value *v, int64_t sign)
{
    for (int p = v->idle_from + 1; p < v->idle_to; p++)
        l->live[p] += sign * v->bytes;
}

static int argmax(const int64_t *a, int n)
{
    int best = 0;
    for (int k = 1; k < n; k++)
        if (a[k] > a[best])
            best = k;
    return best;
}

int64_t hs__choose_saved_values(hs__lifetimes *l, int64_t target)
{
    int n = l->n_positions;
    if (n <= 0)
        return 0;
    /* Which values this call chose (only those are trimmed); without it
     * (host OOM) the choice stays as the greedy made it. */
    bool *fresh = calloc((size_t)l->n + 1, sizeof *fresh);
    for (;;) {
        int p = argmax(l->live, n);
        if (l->live[p] <= target)
            break;
        /* The largest value idle across the peak (values are sorted
         * largest first). */
        hs__saved_value *pick = NULL;
        for (int k = 0; k < l->n && !pick; k++)
            if (!l->values[k].chosen && l->values[k].idle_from < p &&
                p < l->values[k].idle_to)
                pick = &l->values[k];
        if (!pick)
            break;
        pick->chosen = true;
        if (fresh)
            fresh[pick - l->values] = true;
        account(l, pick, -1);
    }
    /* Trim, smallest first: a value chosen in this call whose bytes fit
     * back under the target stays on the device. */
    for (int k = l->n - 1; fresh && k >= 0; k--) {
        hs__saved_value *v = &l->values[k];
        if (!fresh[k])
            continue;
        bool fits = true;
        for (int p = v->idle_from + 1; p < v->idle_to && fits; p++)
            fits = l->live[p] + v->bytes <= target;
        if (fits && l->live[argmax(l->live, n)] <= target) {
            v->chosen = false;
            account(l, v, +1);
        }
    }
    free(fresh);
    return l->live[argmax(l->live, n)];
}
