/*
 * module_order.c - keeps m->comps in "callees before callers" order when a
 * computation starts calling one that was created after it (a tracer that
 * builds the entry first and a scan body or reducer later).
 */
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_ir.h"
#include "ir/hashset.h"

static int position_of(const hs_module *m, const hs_computation *c)
{
    for (int k = 0; k < m->n_comps; k++)
        if (m->comps[k] == c)
            return k;
    return -1;
}

/* Marks in in_s every computation after position `from` that callee reaches
 * (callee included). Returns false when the caller at `from` is reachable:
 * the calls would form a cycle. */
static bool mark_reachable(const hs_module *m, int callee_pos, int from,
                           const hs__ptrmap *pos, bool *in_s, int *work)
{
    int n_work = 0;
    in_s[callee_pos] = true;
    work[n_work++] = callee_pos;
    while (n_work > 0) {
        const hs_computation *c = m->comps[work[--n_work]];
        for (int k = 0; k < c->n_instrs; k++) {
            const hs_instruction *i = c->instrs[k];
            for (int j = 0; i && j < i->n_called; j++) {
                int64_t p;
                if (!i->called[j] || !hs__ptrmap_get(pos, i->called[j], &p))
                    continue;
                if (p == from)
                    return false;
                if (p > from && !in_s[p]) {
                    in_s[p] = true;
                    work[n_work++] = (int)p;
                }
            }
        }
    }
    return true;
}

hs_status hs_module_move_computation_before(hs_module *m,
                                            hs_computation *callee,
                                            const hs_computation *caller)
{
    int to = position_of(m, caller), from = position_of(m, callee);
    if (to < 0 || from < 0 || to == from)
        return HS_ERR_INVALID;
    if (from < to)
        return HS_OK;

    int n = m->n_comps;
    hs__ptrmap pos = {0};
    bool *in_s = calloc((size_t)n, sizeof *in_s);
    int *work = malloc((size_t)n * sizeof *work);
    hs_computation **moved = malloc((size_t)n * sizeof *moved);
    hs_status st = HS_ERR_NOMEM;
    if (!in_s || !work || !moved || !hs__ptrmap_init(&pos, (size_t)n))
        goto done;
    for (int k = 0; k < n; k++)
        hs__ptrmap_put(&pos, m->comps[k], k);
    st = HS_ERR_INVALID;
    if (!mark_reachable(m, from, to, &pos, in_s, work))
        goto done;
    /* Stable partition of comps[to..n): the reached ones first. */
    int out = 0;
    for (int k = to; k < n; k++)
        if (in_s[k])
            moved[out++] = m->comps[k];
    for (int k = to; k < n; k++)
        if (!in_s[k])
            moved[out++] = m->comps[k];
    memcpy(m->comps + to, moved, (size_t)(n - to) * sizeof *moved);
    st = HS_OK;
done:
    hs__ptrmap_free(&pos);
    free(in_s);
    free(work);
    free(moved);
    return st;
}
