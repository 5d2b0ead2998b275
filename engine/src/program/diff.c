/* diff.c - what changed between two modules, instructions matched by
 * name: added, removed, changed (opcode or shape) and unchanged, and the
 * opcode histogram of both. */
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_program.h"

typedef struct named {
    const char *name;
    const hs_instruction *in;
    int64_t order;  /* position in a's walk */
    bool matched;
} named;

static int by_name(const void *x, const void *y)
{
    const named *a = x, *b = y;
    int c = strcmp(a->name, b->name);
    return c ? c : (a->order > b->order) - (a->order < b->order);
}

static int64_t count_instructions(const hs_module *m)
{
    int64_t n = 0;
    for (int c = 0; c < m->n_comps; c++)
        n += m->comps[c]->n_instrs;
    return n;
}

/* The last of a's instructions with that name (a later one shadows an
 * earlier one, as a name -> instruction map would), or NULL. */
static named *find(named *index, int64_t n, const char *name)
{
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (strcmp(index[mid].name, name) <= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 && strcmp(index[lo - 1].name, name) == 0 ? &index[lo - 1] : NULL;
}

static int by_order(const void *x, const void *y)
{
    const named *a = x, *b = y;
    return (a->order > b->order) - (a->order < b->order);
}

hs_status hs_module_diff_compute(const hs_module *a, const hs_module *b,
                                 hs_module_diff *out, hs_error *err)
{
    memset(out, 0, sizeof *out);
    int64_t na = count_instructions(a), nb = count_instructions(b);
    named *index = malloc(sizeof *index * (size_t)(na ? na : 1));
    out->added = malloc(sizeof *out->added * (size_t)(nb ? nb : 1));
    out->removed = malloc(sizeof *out->removed * (size_t)(na ? na : 1));
    out->changed_a = malloc(sizeof *out->changed_a * (size_t)(nb ? nb : 1));
    out->changed_b = malloc(sizeof *out->changed_b * (size_t)(nb ? nb : 1));
    if (!index || !out->added || !out->removed || !out->changed_a || !out->changed_b) {
        free(index);
        hs_module_diff_free(out);
        return hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
    }
    int64_t k = 0;
    for (int c = 0; c < a->n_comps; c++)
        for (int i = 0; i < a->comps[c]->n_instrs; i++, k++) {
            const hs_instruction *in = a->comps[c]->instrs[i];
            index[k] = (named){.name = in->name, .in = in, .order = k};
            out->opcodes_a[in->opcode]++;
        }
    qsort(index, (size_t)na, sizeof *index, by_name);
    for (int c = 0; c < b->n_comps; c++)
        for (int i = 0; i < b->comps[c]->n_instrs; i++) {
            const hs_instruction *in = b->comps[c]->instrs[i];
            out->opcodes_b[in->opcode]++;
            named *match = find(index, na, in->name);
            if (!match || match->matched) {
                out->added[out->n_added++] = in;
                continue;
            }
            match->matched = true;
            const hs_instruction *old = match->in;
            if (old->opcode != in->opcode || !hs_shape_compatible(&old->shape, &in->shape)) {
                out->changed_a[out->n_changed] = old;
                out->changed_b[out->n_changed++] = in;
            } else {
                out->n_unchanged++;
            }
        }
    /* Removed: a's instructions nobody matched, in a's order, leaving out
     * those shadowed by a later one of the same name. */
    for (int64_t j = 0; j + 1 < na; j++)
        if (strcmp(index[j].name, index[j + 1].name) == 0)
            index[j].matched = true;
    qsort(index, (size_t)na, sizeof *index, by_order);
    for (int64_t j = 0; j < na; j++)
        if (!index[j].matched)
            out->removed[out->n_removed++] = index[j].in;
    free(index);
    return HS_OK;
}

void hs_module_diff_free(hs_module_diff *d)
{
    free(d->added);
    free(d->removed);
    free(d->changed_a);
    free(d->changed_b);
    memset(d, 0, sizeof *d);
}
