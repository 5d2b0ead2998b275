/* dce.c - the `dce` pass: removes instructions the root does not reach
 * (parameters stay) and then computations that the entry no longer calls,
 * directly or through other computations. */
#include <stdlib.h>

#include "passes/passes_internal.h"

static int position(const hs_module *m, const hs_computation *c)
{
    if (c && c->id >= 0 && c->id < m->n_comps && m->comps[c->id] == c)
        return c->id;
    for (int k = 0; k < m->n_comps; k++)
        if (m->comps[k] == c)
            return k;
    return -1;
}

hs_status hs_pass_dce_run(hs_module *m, hs_pass_context *ctx, bool *changed,
                          hs_error *err)
{
    if (!m->entry) {
        /* Without an entry nothing is known to be unreachable; dead
         * instructions still go. */
        for (int c = 0; c < m->n_comps; c++)
            if (hs_computation_remove_dead(m->comps[c]) > 0)
                *changed = true;
        return HS_OK;
    }
    bool *live = calloc((size_t)m->n_comps, sizeof *live);
    int *work = malloc(sizeof *work * (size_t)m->n_comps);
    if (!live || !work) {
        free(live);
        free(work);
        return hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
    }
    /* A worklist from the entry: each live computation first loses its dead
     * instructions (their calls do not keep anything alive), then marks
     * what it still calls. Independent of the order of m->comps. */
    int n_work = 0, entry = position(m, m->entry);
    if (entry >= 0) {
        live[entry] = true;
        work[n_work++] = entry;
    }
    while (n_work > 0) {
        hs_status st = hs_pass_context_check(ctx, err);
        if (st != HS_OK) {
            free(live);
            free(work);
            return st;
        }
        hs_computation *comp = m->comps[work[--n_work]];
        if (hs_computation_remove_dead(comp) > 0)
            *changed = true;
        for (int k = 0; k < comp->n_instrs; k++) {
            const hs_instruction *i = comp->instrs[k];
            for (int j = 0; j < i->n_called; j++) {
                int p = position(m, i->called[j]);
                if (p >= 0 && !live[p]) {
                    live[p] = true;
                    work[n_work++] = p;
                }
            }
        }
    }
    free(work);
    int kept = 0;
    for (int c = 0; c < m->n_comps; c++) {
        if (live[c])
            m->comps[kept++] = m->comps[c];
        else
            *changed = true;
    }
    m->n_comps = kept;
    /* Ids stay positions, as hs_module_add_computation made them. */
    for (int c = 0; c < m->n_comps; c++)
        m->comps[c]->id = c;
    free(live);
    return HS_OK;
}
