/*
 * prefetch.c - where the copies of an offloaded activation go in the
 * entry's schedule, as XLA's memory-space assignment times its evictions
 * and prefetches.
 *
 * The schedule pass issues every copy-start right after its operand
 * (hs__place_async_copies), which suits a scan's residuals: the body of
 * one step fetches the next step's slice. In a step's entry computation a
 * fetch issued right after the eviction would hold the device copy for
 * the whole gap and save nothing. Here, on the device's clock
 * (hs_device_estimate_clock) and with its host link:
 *   - an eviction (copy to S(5)) waits in its copy-done as soon as the link
 *     has carried it, the evictions queued one after the other on the DMA
 *     stream, so the device buffer is freed early;
 *   - a prefetch (copy from S(5)) starts as late as lets it arrive before
 *     its first use, the prefetches queued back to back from the last
 *     one, so the device copy lives only while it is needed.
 * Only copy-starts and copy-dones move, each between its operand and its
 * first user, so the order stays a post order.
 */
#include <stdlib.h>
#include <string.h>

#include "ir/invariant.h"
#include "passes/host_offload.h" /* HS_PLACED_ATTRIBUTE */
#include "whatif/offload_internal.h"

typedef struct pair {
    hs_instruction *start, *done;
    bool to_host;
    double seconds; /* on the link */
    int anchor;     /* base position the moving instruction goes before */
    int first_use;  /* base position of the copy-done's first user */
} pair;

static bool to_host(const hs_instruction *cs)
{
    return cs->shape.dtype == HS_TUPLE && cs->shape.n_elems >= 2 &&
           cs->shape.elems[0].memory_space == HS_MEMSPACE_HOST;
}

static int cmp_use_desc(const void *a, const void *b)
{
    const pair *x = a, *y = b;
    if (x->to_host != y->to_host)
        return x->to_host ? -1 : 1;
    return (x->first_use < y->first_use) - (x->first_use > y->first_use);
}

/* Adds HS_PLACED_ATTRIBUTE to x's frontend attributes (kept when the
 * arena is out of memory: the copy is then only re-placed by a compile). */
static void mark_placed(hs_instruction *x)
{
    const char *old = x->frontend_attributes;
    if (old && strstr(old, HS_PLACED_ATTRIBUTE))
        return;
    const char *attr =
        old && old[0] ? hs_arena_printf(hs_instruction_arena(x), "%s,%s",
                                        old, HS_PLACED_ATTRIBUTE)
                      : hs_arena_strdup(hs_instruction_arena(x),
                                        HS_PLACED_ATTRIBUTE);
    if (attr)
        x->frontend_attributes = attr;
}

hs_status hs__place_offload_copies(hs_module *m, const hs_device_spec *spec,
                                   const bool *ours, int n_ours,
                                   hs_error *err)
{
    hs_computation *c = m->entry;
    int n = c->n_instrs, ids = m->next_id + 1;
    double *finish = malloc(sizeof *finish * ((size_t)n + 1));
    int *pos = malloc(sizeof *pos * (size_t)ids);
    pair *pairs = calloc((size_t)n + 1, sizeof *pairs);
    bool *moving = calloc((size_t)ids, sizeof *moving);
    int *base = malloc(sizeof *base * ((size_t)n + 1)); /* base -> k */
    int *bpos = malloc(sizeof *bpos * (size_t)ids);      /* id -> base */
    double *t = malloc(sizeof *t * ((size_t)n + 2)); /* compute time */
    hs_instruction **order = malloc(sizeof *order * ((size_t)n + 1));
    int *pair_of = calloc((size_t)ids, sizeof *pair_of); /* id -> q + 1 */
    hs_status st = HS_OK;
    if (!finish || !pos || !pairs || !moving || !base || !bpos || !t ||
        !order || !pair_of) {
        st = hs_error_set(err, HS_ERR_NOMEM, "offload: out of host memory");
        goto out;
    }
    hs_run_stats est;
    st = hs_device_estimate_clock(m, spec, finish, &est, err);
    if (st != HS_OK)
        goto out;
    for (int k = 0; k < ids; k++)
        pos[k] = bpos[k] = -1;
    for (int k = 0; k < n; k++)
        pos[c->instrs[k]->id] = k;

    /* The pairs: a copy-start and the copy-done that reads it. */
    int np = 0;
    for (int k = 0; k < n; k++) {
        hs_instruction *cd = c->instrs[k];
        if (cd->opcode != HS_OP_COPY_DONE || cd->n_operands != 1 ||
            cd->operands[0]->opcode != HS_OP_COPY_START ||
            cd->operands[0]->parent != c || cd->id >= n_ours || !ours[cd->id])
            continue;
        pair *p = &pairs[np++];
        p->done = cd;
        p->start = cd->operands[0];
        /* Placed on the device's clock: a compile of the offloaded
         * module's HLO text keeps them where they are (host-offload-async
         * would issue every copy-start right after its operand). */
        mark_placed(cd);
        mark_placed(p->start);
        p->to_host = to_host(p->start);
        int64_t bytes = hs_shape_bytes(&cd->shape);
        p->seconds = spec->host_link_bandwidth > 0
                         ? (double)bytes / spec->host_link_bandwidth
                         : 0;
        /* An eviction's copy-done moves; a prefetch's copy-start does. */
        moving[p->to_host ? cd->id : p->start->id] = true;
        pair_of[cd->id] = np;
        pair_of[p->start->id] = np;
    }
    if (np == 0)
        goto out;

    /* The base order (what does not move), with the compute clock: each
     * instruction's own time, copies and waits excluded. */
    int nb = 0;
    double prev = 0, now = 0;
    t[0] = 0;
    for (int k = 0; k < n; k++) {
        hs_instruction *x = c->instrs[k];
        double own = finish[k] - prev;
        prev = finish[k];
        if (x->opcode == HS_OP_COPY_START || x->opcode == HS_OP_COPY_DONE)
            own = 0;
        now += own;
        if (moving[x->id])
            continue;
        bpos[x->id] = nb;
        base[nb++] = k;
        t[nb] = now; /* t[j + 1]: compute time when base j has finished */
    }
    /* First users in base positions; a prefetch's copy-start (which
     * moves) stands for its copy-done, before which it must stay. */
    for (int q = 0; q < np; q++)
        pairs[q].first_use = nb;
    for (int k = 0; k < n; k++) {
        const hs_instruction *x = c->instrs[k];
        int at = bpos[x->id];
        if (at < 0 && pair_of[x->id] > 0)
            at = bpos[pairs[pair_of[x->id] - 1].done->id];
        if (at < 0)
            continue;
        for (int o = 0; o < x->n_operands; o++) {
            const hs_instruction *y = x->operands[o];
            int q = pair_of[y->id] - 1;
            if (q >= 0 && pairs[q].done == y && at < pairs[q].first_use)
                pairs[q].first_use = at;
        }
    }
    /* Evictions, in order of issue: each starts when issued or when the
     * link is free, and its copy-done goes before the first instruction
     * that starts once the copy has ended. */
    qsort(pairs, (size_t)np, sizeof *pairs, cmp_use_desc);
    double dma_free = 0;
    int ns = 0;
    while (ns < np && pairs[ns].to_host)
        ns++;
    /* Evictions issue in the order of their copy-starts. */
    for (int i = 0; i < ns; i++)
        for (int j = i + 1; j < ns; j++)
            if (bpos[pairs[j].start->id] < bpos[pairs[i].start->id]) {
                pair tmp = pairs[i];
                pairs[i] = pairs[j];
                pairs[j] = tmp;
            }
    for (int q = 0; q < ns; q++) {
        pair *p = &pairs[q];
        int s = bpos[p->start->id];
        double begin = t[s + 1] > dma_free ? t[s + 1] : dma_free;
        double end = begin + p->seconds;
        dma_free = end;
        int j = s + 1;
        while (j < p->first_use && t[j] < end)
            j++;
        p->anchor = j;
    }
    /* Prefetches, from the last use backwards: each ends when its user
     * starts or when the next one's copy begins, whichever is first. */
    double next_begin = 1e300;
    for (int q = ns; q < np; q++) {
        pair *p = &pairs[q];
        int u = bpos[p->done->id];
        double deadline = t[u];
        double end = deadline < next_begin ? deadline : next_begin;
        double begin = end - p->seconds;
        next_begin = begin;
        /* The operand: an eviction's copy-done (moving) or a base one. */
        const hs_instruction *src = p->start->operands[0];
        int lo = 0;
        if (bpos[src->id] >= 0) {
            lo = bpos[src->id] + 1;
        } else {
            for (int r = 0; r < ns; r++)
                if (pairs[r].done == src)
                    lo = pairs[r].anchor;
        }
        int j = u;
        while (j > lo && t[j] > begin)
            j--;
        /* An eviction waits before its use, so the walk stops at lo. */
        HS_ASSERT(j >= lo);
        if (j < lo)
            j = lo;
        p->anchor = j;
    }

    /* Rebuild: base instructions in order, each preceded by what is
     * anchored before it (evictions' copy-dones before prefetches'
     * copy-starts, so an operand comes first). */
    int w = 0;
    for (int j = 0; j <= nb; j++) {
        for (int q = 0; q < np; q++)
            if (pairs[q].anchor == j && pairs[q].to_host)
                order[w++] = pairs[q].done;
        for (int q = 0; q < np; q++)
            if (pairs[q].anchor == j && !pairs[q].to_host)
                order[w++] = pairs[q].start;
        if (j < nb)
            order[w++] = c->instrs[base[j]];
    }
    if (w != n) {
        st = hs_error_set(err, HS_ERR_RUNTIME,
                          "offload: placing the copies lost instructions "
                          "(%d of %d)", w, n);
        goto out;
    }
    memcpy(c->instrs, order, sizeof *order * (size_t)n);
out:
    free(finish);
    free(pos);
    free(pairs);
    free(moving);
    free(base);
    free(bpos);
    free(t);
    free(order);
    free(pair_of);
    return st;
}
