/* diff.c - what changed between two modules: added, removed, changed
 * (opcode or shape) and unchanged, and the opcode histogram of both.
 *
 * Instructions of layers are matched by their place in the layer, not by
 * name: an unrolled model and its scan form name their instructions
 * differently (dot.45 in layer 3, dot.17 in the scan body), so a match by
 * name paired unrelated instructions and called nearly everything changed.
 * An instruction's layer comes from its op_name ("layers.3/mlp/up_proj":
 * layer 3 of the stem "layers.N", the scan body's "layers.N" written with a
 * star: every layer at once) or, for instructions without one (XLA dumps without
 * metadata), from the group tree's repeated layers ("run.0/layer.5", found
 * from structure, hs_groups.h). Its place is that stem, its opcode and its
 * rank among the instructions of the same stem and opcode in its layer. Two
 * places match when the layers are the same (layer 3 and layer 3), or when
 * one side has the layer once for all (a scan body): every unrolled layer
 * then matches it, so identical layers compare equal and what remains is
 * the loop's own structure (counter, tuple, stacked weights and their
 * slices). Everything else is matched by name, as before. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_groups.h"
#include "hloscope/hs_program.h"

enum { NO_LAYER = -1, EVERY_LAYER = -2 };

typedef struct named {
    const char *name;
    const hs_instruction *in;
    int64_t order; /* position in its module's walk */
    bool matched;
    /* place in a layer (layer != NO_LAYER) */
    char *stem; /* the layer path with '*' for its number, then opcode */
    int64_t layer, rank;
} named;

static int by_name(const void *x, const void *y)
{
    const named *a = x, *b = y;
    int c = strcmp(a->name, b->name);
    return c ? c : (a->order > b->order) - (a->order < b->order);
}

static int by_order(const void *x, const void *y)
{
    const named *a = x, *b = y;
    return (a->order > b->order) - (a->order < b->order);
}

/* Stem, layer and order: ranks are counted in this order. */
static int by_layer_stem(const void *x, const void *y)
{
    const named *a = x, *b = y;
    int c = strcmp(a->stem, b->stem);
    if (c)
        return c;
    if (a->layer != b->layer)
        return a->layer < b->layer ? -1 : 1;
    return (a->order > b->order) - (a->order < b->order);
}

/* Stem, rank, layer: the places two modules match on. */
static int by_place(const void *x, const void *y)
{
    const named *a = x, *b = y;
    int c = strcmp(a->stem, b->stem);
    if (c)
        return c;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    return (a->layer > b->layer) - (a->layer < b->layer);
}

static int64_t count_instructions(const hs_module *m)
{
    int64_t n = 0;
    for (int c = 0; c < m->n_comps; c++)
        n += m->comps[c]->n_instrs;
    return n;
}

/* The layer in a path: the first component that is a stem and a number
 * ("layers.3", "layers_3", "h.11", "layer.5") or a stem and '*' (a scan
 * body's scope, the stem with a star). Writes the path with that number as '*' into stem
 * (NUL-terminated, at most size) and returns the layer, EVERY_LAYER for
 * '*', or NO_LAYER. */
static int64_t layer_of_path(const char *path, char *stem, size_t size)
{
    size_t n = strlen(path);
    for (size_t start = 0; start < n;) {
        size_t end = start;
        while (end < n && path[end] != '/')
            end++;
        size_t k = end;
        while (k > start && isdigit((unsigned char)path[k - 1]))
            k--;
        bool number = k < end && k > start + 1 &&
                      (path[k - 1] == '.' || path[k - 1] == '_');
        bool star = end - start >= 3 && path[end - 1] == '*' &&
                    (path[end - 2] == '.' || path[end - 2] == '_');
        if ((number || star) && n + 2 < size) {
            size_t at = number ? k : end - 1;
            memcpy(stem, path, at);
            stem[at] = '*';
            memcpy(stem + at + 1, path + end, n - end);
            stem[at + 1 + n - end] = '\0';
            return number ? strtoll(path + k, NULL, 10) : EVERY_LAYER;
        }
        start = end + 1;
    }
    return NO_LAYER;
}

/* The place of each of m's instructions in its layer (stem, layer; ranks
 * come later). Instructions of the entry without an op_name take the path
 * of their group (the group tree finds repeated layers from structure). */
static hs_status find_layers(const hs_module *m, named *index, int64_t n,
                             hs_error *err)
{
    hs_group_tree *t = NULL;
    bool unnamed = false;
    for (int64_t k = 0; k < n && !unnamed; k++)
        unnamed = !index[k].in->op_name || !index[k].in->op_name[0];
    if (unnamed && m->entry && hs_groups_build(m, m->entry, &t, err) != HS_OK)
        return err->status;
    char stem[1024];
    hs_status st = HS_OK;
    for (int64_t k = 0; k < n && st == HS_OK; k++) {
        named *x = &index[k];
        const hs_instruction *in = x->in;
        const char *path = in->op_name && in->op_name[0] ? in->op_name : NULL;
        if (!path && t && in->id >= 0 && in->id < t->n_ids && t->group_of[in->id] > 0)
            path = t->groups[t->group_of[in->id]].path;
        x->layer = path ? layer_of_path(path, stem, sizeof stem - 40) : NO_LAYER;
        if (x->layer == NO_LAYER)
            continue;
        size_t len = strlen(stem);
        snprintf(stem + len, sizeof stem - len, "|%s", hs_opcode_name(in->opcode));
        if (!(x->stem = strdup(stem)))
            st = hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
    }
    hs_groups_free(t);
    return st;
}

static void rank_in_layers(named *index, int64_t n)
{
    qsort(index, (size_t)n, sizeof *index, by_layer_stem);
    for (int64_t k = 0; k < n; k++)
        index[k].rank = k > 0 && strcmp(index[k].stem, index[k - 1].stem) == 0 &&
                                index[k].layer == index[k - 1].layer
                            ? index[k - 1].rank + 1
                            : 0;
    qsort(index, (size_t)n, sizeof *index, by_place);
}

static void record(hs_module_diff *out, const hs_instruction *old,
                   const hs_instruction *in)
{
    if (old->opcode != in->opcode || !hs_shape_compatible(&old->shape, &in->shape)) {
        out->changed_a[out->n_changed] = old;
        out->changed_b[out->n_changed++] = in;
    } else {
        out->n_unchanged++;
    }
}

/* Matches the layered instructions of a (la, sorted by place) and b (lb):
 * the same place in the same layer, or in a layer that stands for every
 * layer. An instruction of the side with every layer at once counts once. */
static void match_layers(named *la, int64_t na, named *lb, int64_t nb,
                         hs_module_diff *out)
{
    int64_t i = 0, j = 0;
    while (i < na && j < nb) {
        int c = strcmp(la[i].stem, lb[j].stem);
        if (!c)
            c = la[i].rank < lb[j].rank ? -1 : la[i].rank > lb[j].rank;
        if (c < 0) {
            i++;
            continue;
        }
        if (c > 0) {
            j++;
            continue;
        }
        /* the same place: [i, ie) in a, [j, je) in b */
        int64_t ie = i, je = j;
        while (ie < na && strcmp(la[ie].stem, la[i].stem) == 0 &&
               la[ie].rank == la[i].rank)
            ie++;
        while (je < nb && strcmp(lb[je].stem, lb[j].stem) == 0 &&
               lb[je].rank == lb[j].rank)
            je++;
        /* EVERY_LAYER sorts first */
        named *every_a = la[i].layer == EVERY_LAYER ? &la[i] : NULL;
        named *every_b = lb[j].layer == EVERY_LAYER ? &lb[j] : NULL;
        if (every_b) {
            for (int64_t k = i; k < ie; k++) {
                la[k].matched = true;
                record(out, la[k].in, every_b->in);
            }
            every_b->matched = true;
            out->n_matched_by_layer += ie - i;
        } else if (every_a) {
            for (int64_t k = j; k < je; k++) {
                lb[k].matched = true;
                record(out, every_a->in, lb[k].in);
            }
            every_a->matched = true;
            out->n_matched_by_layer += je - j;
        } else {
            for (int64_t p = i, q = j; p < ie && q < je;) {
                if (la[p].layer < lb[q].layer) {
                    p++;
                } else if (la[p].layer > lb[q].layer) {
                    q++;
                } else {
                    la[p].matched = lb[q].matched = true;
                    record(out, la[p].in, lb[q].in);
                    out->n_matched_by_layer++;
                    p++, q++;
                }
            }
        }
        i = ie;
        j = je;
    }
}

/* The last of a's unmatched instructions with that name (a later one
 * shadows an earlier one, as a name -> instruction map would), or NULL. */
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

static void free_index(named *index, int64_t n)
{
    for (int64_t k = 0; index && k < n; k++)
        free(index[k].stem);
    free(index);
}

/* Fills index with m's instructions in order (stem NULL), counting
 * opcodes. */
static void walk(const hs_module *m, named *index, int64_t *opcodes)
{
    int64_t k = 0;
    for (int c = 0; c < m->n_comps; c++)
        for (int i = 0; i < m->comps[c]->n_instrs; i++, k++) {
            const hs_instruction *in = m->comps[c]->instrs[i];
            index[k] = (named){.name = in->name, .in = in, .order = k,
                               .layer = NO_LAYER};
            opcodes[in->opcode]++;
        }
}

/* Moves the layered entries to the front (in order); returns how many. */
static int64_t layered_first(named *index, int64_t n)
{
    qsort(index, (size_t)n, sizeof *index, by_order);
    int64_t w = 0;
    for (int64_t k = 0; k < n; k++)
        if (index[k].layer != NO_LAYER) {
            named t = index[w];
            index[w++] = index[k];
            index[k] = t;
        }
    return w;
}

hs_status hs_module_diff_compute(const hs_module *a, const hs_module *b,
                                 hs_module_diff *out, hs_error *err)
{
    memset(out, 0, sizeof *out);
    int64_t na = count_instructions(a), nb = count_instructions(b);
    int64_t most = na > nb ? na : nb;
    named *ia = calloc((size_t)(na ? na : 1), sizeof *ia);
    named *ib = calloc((size_t)(nb ? nb : 1), sizeof *ib);
    out->added = malloc(sizeof *out->added * (size_t)(nb ? nb : 1));
    out->removed = malloc(sizeof *out->removed * (size_t)(na ? na : 1));
    out->changed_a = malloc(sizeof *out->changed_a * (size_t)(most ? most : 1));
    out->changed_b = malloc(sizeof *out->changed_b * (size_t)(most ? most : 1));
    if (!ia || !ib || !out->added || !out->removed || !out->changed_a ||
        !out->changed_b) {
        free(ia);
        free(ib);
        hs_module_diff_free(out);
        return hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
    }
    walk(a, ia, out->opcodes_a);
    walk(b, ib, out->opcodes_b);
    hs_status st = find_layers(a, ia, na, err);
    if (st == HS_OK)
        st = find_layers(b, ib, nb, err);
    if (st != HS_OK) {
        free_index(ia, na);
        free_index(ib, nb);
        hs_module_diff_free(out);
        return st;
    }
    /* layered instructions by place, the rest (and the layered ones left
     * over) by name */
    int64_t la = layered_first(ia, na), lb = layered_first(ib, nb);
    rank_in_layers(ia, la);
    rank_in_layers(ib, lb);
    match_layers(ia, la, ib, lb, out);

    qsort(ia, (size_t)na, sizeof *ia, by_name);
    qsort(ib, (size_t)nb, sizeof *ib, by_order);
    /* a's instructions matched by place are not candidates by name */
    named *free_a = malloc(sizeof *free_a * (size_t)(na ? na : 1));
    if (!free_a) {
        free_index(ia, na);
        free_index(ib, nb);
        hs_module_diff_free(out);
        return hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
    }
    int64_t nf = 0;
    for (int64_t k = 0; k < na; k++)
        if (!ia[k].matched)
            free_a[nf++] = ia[k];
    for (int64_t k = 0; k < nb; k++) {
        if (ib[k].matched)
            continue;
        named *match = find(free_a, nf, ib[k].name);
        if (!match || match->matched) {
            out->added[out->n_added++] = ib[k].in;
            continue;
        }
        match->matched = true;
        record(out, match->in, ib[k].in);
    }
    /* Removed: a's instructions nobody matched, in a's order, leaving out
     * those shadowed by a later one of the same name. */
    for (int64_t j = 0; j + 1 < nf; j++)
        if (strcmp(free_a[j].name, free_a[j + 1].name) == 0)
            free_a[j].matched = true;
    qsort(free_a, (size_t)nf, sizeof *free_a, by_order);
    for (int64_t j = 0; j < nf; j++)
        if (!free_a[j].matched)
            out->removed[out->n_removed++] = free_a[j].in;
    free(free_a);
    free_index(ia, na);
    free_index(ib, nb);
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
