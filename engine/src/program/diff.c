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
 * slices). Everything else is matched by name, as before. The
 * computations matched instructions call (reducers, fusions) are then
 * matched by structure, position by position, whatever their names. */
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

/* The matches found so far, by walk order (an instruction's position in
 * its module's walk: computations in order, instructions in order). An
 * instruction has at most one live pair, except one that stands for
 * several (a scan body's for every layer, a reducer shared by the layers
 * of one side): count > 1. */
typedef struct match_pair {
    int64_t a, b;
    bool by_layer, dead;
    bool by_use; /* operands of a layer's matched pair (match_uses) */
} match_pair;

typedef struct side {
    const hs_module *m;
    int64_t n;
    const hs_instruction **seq; /* by walk order */
    int64_t *order;             /* instruction id -> walk order */
    int64_t *count;             /* live pairs of each */
    int64_t *uses;              /* of those, matched by use */
    int64_t *last;              /* its last pair */
    int *comp;                  /* computation index -> partner's, -1 */
    int *comp_at;               /* walk order -> its computation's index */
} side;

typedef struct matching {
    side a, b;
    match_pair *pairs;
    int64_t n_pairs, cap_pairs;
} matching;

static int side_init(side *s, const hs_module *m, int64_t n)
{
    memset(s, 0, sizeof *s);
    s->m = m;
    s->n = n;
    size_t ids = (size_t)(m->next_id > 0 ? m->next_id : 1), k = (size_t)(n ? n : 1);
    s->seq = calloc(k, sizeof *s->seq);
    s->order = malloc(ids * sizeof *s->order);
    s->count = calloc(k, sizeof *s->count);
    s->uses = calloc(k, sizeof *s->uses);
    s->last = malloc(k * sizeof *s->last);
    s->comp = malloc((size_t)(m->n_comps ? m->n_comps : 1) * sizeof *s->comp);
    s->comp_at = malloc(k * sizeof *s->comp_at);
    if (!s->seq || !s->order || !s->count || !s->uses || !s->last || !s->comp ||
        !s->comp_at)
        return -1;
    for (int c = 0; c < m->n_comps; c++)
        s->comp[c] = -1;
    int64_t o = 0;
    for (int c = 0; c < m->n_comps; c++)
        for (int i = 0; i < m->comps[c]->n_instrs; i++, o++) {
            const hs_instruction *in = m->comps[c]->instrs[i];
            s->seq[o] = in;
            s->comp_at[o] = c;
            if (in->id >= 0 && in->id < m->next_id)
                s->order[in->id] = o;
        }
    return 0;
}

static void side_free(side *s)
{
    free(s->seq);
    free(s->order);
    free(s->count);
    free(s->uses);
    free(s->last);
    free(s->comp);
    free(s->comp_at);
}

static int64_t order_of(const side *s, const hs_instruction *in)
{
    return s->order[in->id];
}

static int pair(matching *mt, int64_t a, int64_t b, bool by_layer)
{
    if (mt->n_pairs == mt->cap_pairs) {
        int64_t cap = mt->cap_pairs ? 2 * mt->cap_pairs : 1024;
        match_pair *p = realloc(mt->pairs, (size_t)cap * sizeof *p);
        if (!p)
            return -1;
        mt->pairs = p;
        mt->cap_pairs = cap;
    }
    mt->pairs[mt->n_pairs] = (match_pair){.a = a, .b = b, .by_layer = by_layer};
    mt->a.count[a]++;
    mt->b.count[b]++;
    mt->a.last[a] = mt->b.last[b] = mt->n_pairs++;
    return 0;
}

static void kill_pair(matching *mt, match_pair *p)
{
    if (p->dead)
        return;
    p->dead = true;
    mt->a.count[p->a]--;
    mt->b.count[p->b]--;
    mt->a.uses[p->a] -= p->by_use;
    mt->b.uses[p->b] -= p->by_use;
}

/* Drops every live pair of a's instruction oa (on_a) or b's ob. One pair
 * is found at once; an instruction standing for several is looked for. */
static void unpair(matching *mt, bool on_a, int64_t o)
{
    side *s = on_a ? &mt->a : &mt->b;
    if (s->count[o] == 0)
        return;
    if (s->count[o] == 1 && !mt->pairs[s->last[o]].dead &&
        (on_a ? mt->pairs[s->last[o]].a : mt->pairs[s->last[o]].b) == o) {
        kill_pair(mt, &mt->pairs[s->last[o]]);
        return;
    }
    for (int64_t k = 0; k < mt->n_pairs && s->count[o] > 0; k++)
        if ((on_a ? mt->pairs[k].a : mt->pairs[k].b) == o)
            kill_pair(mt, &mt->pairs[k]);
}

/* Matches the layered instructions of a (la, sorted by place) and b (lb):
 * the same place in the same layer, or in a layer that stands for every
 * layer. */
static int match_layers(matching *mt, named *la, int64_t na, named *lb, int64_t nb)
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
        int rc = 0;
        if (every_b) {
            for (int64_t k = i; k < ie && !rc; k++)
                rc = pair(mt, la[k].order, every_b->order, true);
        } else if (every_a) {
            for (int64_t k = j; k < je && !rc; k++)
                rc = pair(mt, every_a->order, lb[k].order, true);
        } else {
            for (int64_t p = i, q = j; p < ie && q < je && !rc;) {
                if (la[p].layer < lb[q].layer) {
                    p++;
                } else if (la[p].layer > lb[q].layer) {
                    q++;
                } else {
                    rc = pair(mt, la[p].order, lb[q].order, true);
                    p++, q++;
                }
            }
        }
        if (rc)
            return -1;
        i = ie;
        j = je;
    }
    return 0;
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

/* The instructions left unmatched by place, by name across the module. */
static int match_names(matching *mt, named *ia, int64_t na)
{
    qsort(ia, (size_t)na, sizeof *ia, by_name);
    for (int64_t k = 0; k < mt->b.n; k++) {
        if (mt->b.count[k])
            continue;
        named *match = find(ia, na, mt->b.seq[k]->name);
        if (match && !mt->a.count[match->order] && pair(mt, match->order, k, false))
            return -1;
    }
    return 0;
}

/* Whether two computations are the same up to names: the same opcodes and
 * shapes at the same positions, wired the same way. */
static bool same_structure(const side *sa, const hs_computation *ca, const side *sb,
                           const hs_computation *cb)
{
    if (ca->n_instrs != cb->n_instrs || ca->n_params != cb->n_params || !ca->n_instrs)
        return false;
    int64_t base_a = order_of(sa, ca->instrs[0]), base_b = order_of(sb, cb->instrs[0]);
    for (int i = 0; i < ca->n_instrs; i++) {
        const hs_instruction *x = ca->instrs[i], *y = cb->instrs[i];
        if (x->opcode != y->opcode || x->n_operands != y->n_operands ||
            x->n_called != y->n_called || x->index != y->index ||
            !hs_shape_compatible(&x->shape, &y->shape))
            return false;
        for (int k = 0; k < x->n_operands; k++)
            if (order_of(sa, x->operands[k]) - base_a != order_of(sb, y->operands[k]) - base_b)
                return false;
    }
    return (ca->root ? order_of(sa, ca->root) - base_a : -1) ==
           (cb->root ? order_of(sb, cb->root) - base_b : -1);
}

/* Two called computations that are not the same still read the same
 * operands of their matched callers: their parameters, by number, match
 * where they are unmatched and their shapes agree (a fusion that also
 * took in the slice of a stacked weight still reads the layer's input as
 * param_0). */
static int match_parameters(matching *mt, const hs_computation *ca,
                            const hs_computation *cb)
{
    for (int k = 0; k < ca->n_params && k < cb->n_params; k++) {
        const hs_instruction *u = ca->params[k], *v = cb->params[k];
        if (!u || !v)
            continue;
        int64_t ou = order_of(&mt->a, u), ov = order_of(&mt->b, v);
        if (mt->a.count[ou] || (mt->b.count[ov] && !ca->is_fusion) ||
            !hs_shape_compatible(&u->shape, &v->shape))
            continue;
        if (pair(mt, ou, ov, false))
            return -1;
    }
    return 0;
}

/* The computations matched instructions call (reducers, comparators,
 * fusions, bodies), matched position by position when they are the same
 * up to names: a reducer is "add.clone.3" in one module and "region_0.12"
 * in the other, and matching by name paired its instructions with
 * strangers. A computation already matched to another keeps that match;
 * the pairs found here replace those its instructions had by name. Pairs
 * found here are visited in turn (a fusion's reducer). */
static int match_callees(matching *mt)
{
    for (int64_t p = 0; p < mt->n_pairs; p++) {
        if (mt->pairs[p].dead)
            continue;
        const hs_instruction *x = mt->a.seq[mt->pairs[p].a], *y = mt->b.seq[mt->pairs[p].b];
        for (int k = 0; k < x->n_called && k < y->n_called; k++) {
            const hs_computation *ca = x->called[k], *cb = y->called[k];
            /* by their first instructions: hs_computation_index searches
             * once passes renumbered the computations */
            int ka = ca->n_instrs ? mt->a.comp_at[order_of(&mt->a, ca->instrs[0])] : -1;
            int kb = cb->n_instrs ? mt->b.comp_at[order_of(&mt->b, cb->instrs[0])] : -1;
            if (ka < 0 || kb < 0 || mt->a.comp[ka] == kb ||
                (mt->a.comp[ka] >= 0 && mt->b.comp[kb] >= 0))
                continue;
            if (!same_structure(&mt->a, ca, &mt->b, cb)) {
                if (match_parameters(mt, ca, cb))
                    return -1;
                continue;
            }
            if (mt->a.comp[ka] < 0)
                mt->a.comp[ka] = kb;
            if (mt->b.comp[kb] < 0)
                mt->b.comp[kb] = ka;
            for (int i = 0; i < ca->n_instrs; i++) {
                int64_t oa = order_of(&mt->a, ca->instrs[i]);
                int64_t ob = order_of(&mt->b, cb->instrs[i]);
                bool already = mt->a.count[oa] == 1 && mt->b.count[ob] >= 1 &&
                               mt->pairs[mt->a.last[oa]].b == ob &&
                               !mt->pairs[mt->a.last[oa]].dead;
                if (already)
                    continue;
                /* a computation standing for several keeps its other
                 * pairs: only a name match is replaced, and in a fusion
                 * a match by layer (a fused instruction keeps the op_name
                 * it was fused from, shared by the layers after CSE:
                 * "layers.0/input_norm" in layer 5's fusion) */
                bool fused = ca->is_fusion && cb->is_fusion;
                if (mt->a.count[oa] && (fused || !mt->pairs[mt->a.last[oa]].by_layer))
                    unpair(mt, true, oa);
                if (mt->b.count[ob] && (fused || !mt->pairs[mt->b.last[ob]].by_layer) &&
                    mt->a.comp[ka] == kb && mt->b.comp[kb] == ka)
                    unpair(mt, false, ob);
                if (pair(mt, oa, ob, false))
                    return -1;
            }
        }
    }
    return 0;
}

/* Whether the instruction at o is free for a match by use: unmatched, or
 * matched by use only (a scan body's slice of a stacked weight stands for
 * that weight in every layer). */
static bool free_for_use(const side *s, int64_t o)
{
    return s->count[o] == s->uses[o];
}

/* The operands of instructions matched by their place in a layer, where
 * they are unmatched and one of them is a parameter: an unrolled layer
 * reads its weight as a parameter of its own ("layers.3.up_proj.weight"),
 * a scan body as its slice of the stacked weight, and both are the value
 * the layer reads at that operand. Such a pair is the same when the
 * shapes are (the opcodes differ by construction); without it every
 * unrolled layer showed its weights removed, and so itself changed. */
static int match_uses(matching *mt)
{
    for (int64_t p = 0; p < mt->n_pairs; p++) {
        if (mt->pairs[p].dead || !mt->pairs[p].by_layer)
            continue;
        const hs_instruction *x = mt->a.seq[mt->pairs[p].a], *y = mt->b.seq[mt->pairs[p].b];
        if (x->opcode != y->opcode || x->n_operands != y->n_operands)
            continue;
        for (int k = 0; k < x->n_operands; k++) {
            const hs_instruction *u = x->operands[k], *v = y->operands[k];
            int64_t ou = order_of(&mt->a, u), ov = order_of(&mt->b, v);
            if ((u->opcode != HS_OP_PARAMETER && v->opcode != HS_OP_PARAMETER) ||
                !free_for_use(&mt->a, ou) || !free_for_use(&mt->b, ov) ||
                !hs_shape_compatible(&u->shape, &v->shape))
                continue;
            if (pair(mt, ou, ov, false))
                return -1;
            mt->pairs[mt->n_pairs - 1].by_use = true;
            mt->a.uses[ou]++;
            mt->b.uses[ov]++;
        }
    }
    return 0;
}

static int by_pair_order(const void *x, const void *y)
{
    const match_pair *a = x, *b = y;
    if (a->a != b->a)
        return a->a < b->a ? -1 : 1;
    return (a->b > b->b) - (a->b < b->b);
}

/* The live pairs, added and removed into out, with the counts. */
static int collect(matching *mt, hs_module_diff *out)
{
    int64_t live = 0;
    for (int64_t k = 0; k < mt->n_pairs; k++)
        if (!mt->pairs[k].dead)
            mt->pairs[live++] = mt->pairs[k];
    mt->n_pairs = live;
    qsort(mt->pairs, (size_t)live, sizeof *mt->pairs, by_pair_order);
    size_t n = (size_t)(live ? live : 1);
    out->pair_a = malloc(n * sizeof *out->pair_a);
    out->pair_b = malloc(n * sizeof *out->pair_b);
    out->pair_changed = malloc(n * sizeof *out->pair_changed);
    out->changed_a = malloc(n * sizeof *out->changed_a);
    out->changed_b = malloc(n * sizeof *out->changed_b);
    out->added = malloc((size_t)(mt->b.n ? mt->b.n : 1) * sizeof *out->added);
    out->removed = malloc((size_t)(mt->a.n ? mt->a.n : 1) * sizeof *out->removed);
    if (!out->pair_a || !out->pair_b || !out->pair_changed || !out->changed_a || !out->changed_b ||
        !out->added || !out->removed)
        return -1;
    for (int64_t k = 0; k < live; k++) {
        const hs_instruction *x = mt->a.seq[mt->pairs[k].a], *y = mt->b.seq[mt->pairs[k].b];
        out->pair_a[out->n_pairs] = x;
        out->pair_b[out->n_pairs++] = y;
        out->n_matched_by_layer += mt->pairs[k].by_layer || mt->pairs[k].by_use;
        bool changed = !hs_shape_compatible(&x->shape, &y->shape) ||
                       (x->opcode != y->opcode && !mt->pairs[k].by_use);
        out->pair_changed[k] = changed;
        if (changed) {
            out->changed_a[out->n_changed] = x;
            out->changed_b[out->n_changed++] = y;
        } else {
            out->n_unchanged++;
        }
    }
    for (int64_t k = 0; k < mt->a.n; k++)
        if (!mt->a.count[k])
            out->removed[out->n_removed++] = mt->a.seq[k];
    for (int64_t k = 0; k < mt->b.n; k++)
        if (!mt->b.count[k])
            out->added[out->n_added++] = mt->b.seq[k];
    return 0;
}

/* Fills index with m's instructions in walk order, counting opcodes. */
static void walk(const side *s, named *index, int64_t *opcodes)
{
    for (int64_t k = 0; k < s->n; k++) {
        const hs_instruction *in = s->seq[k];
        index[k] = (named){.name = in->name, .in = in, .order = k, .layer = NO_LAYER};
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

static void free_index(named *index, int64_t n)
{
    for (int64_t k = 0; index && k < n; k++)
        free(index[k].stem);
    free(index);
}

hs_status hs_module_diff_compute(const hs_module *a, const hs_module *b,
                                 hs_module_diff *out, hs_error *err)
{
    memset(out, 0, sizeof *out);
    matching mt;
    memset(&mt, 0, sizeof mt);
    int64_t na = count_instructions(a), nb = count_instructions(b);
    named *ia = calloc((size_t)(na ? na : 1), sizeof *ia);
    named *ib = calloc((size_t)(nb ? nb : 1), sizeof *ib);
    hs_status st = HS_OK;
    if (!ia || !ib || side_init(&mt.a, a, na) || side_init(&mt.b, b, nb)) {
        st = hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
        goto done;
    }
    walk(&mt.a, ia, out->opcodes_a);
    walk(&mt.b, ib, out->opcodes_b);
    st = find_layers(a, ia, na, err);
    if (st == HS_OK)
        st = find_layers(b, ib, nb, err);
    if (st != HS_OK)
        goto done;
    /* layered instructions by place; what they call by structure; the
     * rest by name, and what those call by structure */
    int64_t la = layered_first(ia, na), lb = layered_first(ib, nb);
    rank_in_layers(ia, la);
    rank_in_layers(ib, lb);
    if (match_layers(&mt, ia, la, ib, lb) || match_callees(&mt) ||
        match_names(&mt, ia, na) || match_callees(&mt) || match_uses(&mt) ||
        collect(&mt, out))
        st = hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
done:
    if (st != HS_OK)
        hs_module_diff_free(out);
    free(mt.pairs);
    side_free(&mt.a);
    side_free(&mt.b);
    free_index(ia, na);
    free_index(ib, nb);
    return st;
}

void hs_module_diff_free(hs_module_diff *d)
{
    free(d->added);
    free(d->removed);
    free(d->changed_a);
    free(d->changed_b);
    free(d->pair_a);
    free(d->pair_b);
    free(d->pair_changed);
    memset(d, 0, sizeof *d);
}
