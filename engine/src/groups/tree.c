/* tree.c - hs_groups_build: the group tree of a computation and of what it
 * calls. Each computation is grouped by its op_name scopes when they say
 * something, else by structure (scopes.c, structure.c); parameters and
 * constants then join the one group that uses them; called computations
 * nest under their caller's group; last come counts, fingerprints and the
 * children lists. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "groups/groups_internal.h"

/* Computations smaller than this are not grouped by structure: a view
 * shows them whole. */
enum { STRUCTURE_MIN_INSTRUCTIONS = 24 };
/* More parameters and constants than this at a computation's level are
 * gathered into a group. */
enum { INPUTS_AT_TOP = 32 };

const char *hs_group_kind_name(hs_group_kind k)
{
    switch (k) {
    case HS_GROUP_OP_NAME:
        return "op_name";
    case HS_GROUP_STRUCTURE:
        return "structure";
    case HS_GROUP_COMPUTATION:
        return "computation";
    }
    return "?";
}

static hs_status nomem(hs__gbuild *b)
{
    return hs_error_set(b->err, HS_ERR_NOMEM,
                        "out of host memory while grouping");
}

int hs__group_add(hs__gbuild *b, hs_group_kind kind, int parent,
                  const char *local, const char *prefix, const char *label,
                  const hs_computation *c)
{
    if (b->n == b->cap) {
        int cap = b->cap ? b->cap * 2 : 64;
        hs_group *g = realloc(b->g, sizeof *g * (size_t)cap);
        if (!g) {
            nomem(b);
            return -1;
        }
        b->g = g;
        b->cap = cap;
    }
    hs_group *g = &b->g[b->n];
    memset(g, 0, sizeof *g);
    g->local = hs_arena_strdup(b->arena, local);
    g->path = prefix && *prefix ? hs_arena_printf(b->arena, "%s%s", prefix, local)
                                : g->local;
    g->label = hs_arena_strdup(b->arena, label ? label : local);
    if (!g->local || !g->path || !g->label) {
        nomem(b);
        return -1;
    }
    g->kind = kind;
    g->parent = parent;
    g->computation = c;
    return b->n++;
}

bool hs_groups_nests_called(const hs_instruction *i)
{
    switch (i->opcode) {
    case HS_OP_WHILE:
    case HS_OP_CALL:
    case HS_OP_CONDITIONAL:
    case HS_OP_FUSION:
    case HS_OP_CUSTOM_CALL:
        return true;
    default:
        return false;
    }
}

static bool is_leaf(const hs_instruction *i)
{
    return i->n_operands == 0;
}

/* Users of each position of c, as CSR arrays in the arena. */
static hs_status gcomp_init(hs__gbuild *b, hs__gcomp *gc,
                            const hs_computation *c)
{
    int n = c->n_instrs;
    gc->c = c;
    gc->n = n;
    gc->user_start = hs_arena_alloc(b->arena, sizeof(int) * (size_t)(n + 1));
    gc->leaf = hs_arena_alloc(b->arena, (size_t)n + 1);
    int edges = 0;
    for (int p = 0; p < n; p++)
        edges += c->instrs[p]->n_operands;
    gc->users = hs_arena_alloc(b->arena, sizeof(int) * (size_t)(edges + 1));
    if (!gc->user_start || !gc->leaf || !gc->users)
        return nomem(b);
    for (int p = 0; p < n; p++) {
        const hs_instruction *i = c->instrs[p];
        gc->leaf[p] = is_leaf(i);
        for (int k = 0; k < i->n_operands; k++) {
            int q = hs__gpos(b, i->operands[k]);
            if (q >= 0 && q < p && i->operands[k]->parent == c)
                gc->user_start[q + 1]++;
        }
    }
    for (int p = 0; p < n; p++)
        gc->user_start[p + 1] += gc->user_start[p];
    int *fill = calloc((size_t)n + 1, sizeof *fill);
    if (!fill)
        return nomem(b);
    for (int p = 0; p < n; p++) {
        const hs_instruction *i = c->instrs[p];
        for (int k = 0; k < i->n_operands; k++) {
            int q = hs__gpos(b, i->operands[k]);
            if (q < 0 || q >= p || i->operands[k]->parent != c)
                continue;
            /* An operand used twice by one user counts once. */
            int s = gc->user_start[q];
            if (fill[q] > 0 && gc->users[s + fill[q] - 1] == p)
                continue;
            gc->users[s + fill[q]++] = p;
        }
    }
    /* Close the gaps left by repeated operands. */
    int w = 0;
    for (int p = 0; p < n; p++) {
        int s = gc->user_start[p];
        gc->user_start[p] = w;
        for (int k = 0; k < fill[p]; k++)
            gc->users[w++] = gc->users[s + k];
    }
    gc->user_start[n] = w;
    free(fill);
    return HS_OK;
}

/* A leaf joins the innermost group of its users when they all share it. */
static void attach_leaves(hs__gbuild *b, const hs__gcomp *gc)
{
    const hs_computation *c = gc->c;
    for (int p = 0; p < gc->n; p++) {
        const hs_instruction *i = c->instrs[p];
        if (!gc->leaf[p] || b->group_of[i->id] != gc->group)
            continue;
        int common = -1;
        for (int u = gc->user_start[p]; u < gc->user_start[p + 1]; u++) {
            int g = b->group_of[c->instrs[gc->users[u]]->id];
            if (common == -1)
                common = g;
            else if (common != g)
                common = gc->group;
        }
        if (common >= 0)
            b->group_of[i->id] = common;
    }
}

/* Parameters and constants left at the computation's level (used by
 * several groups: a weight read by its forward layer, its backward layer
 * and its update) are gathered into one group "inputs" when there are
 * many, so that they do not crowd the top of a view. */
static hs_status gather_inputs(hs__gbuild *b, const hs__gcomp *gc)
{
    const hs_computation *c = gc->c;
    int n = 0;
    for (int p = 0; p < gc->n; p++)
        n += gc->leaf[p] && b->group_of[c->instrs[p]->id] == gc->group;
    if (n <= INPUTS_AT_TOP)
        return HS_OK;
    char label[64];
    snprintf(label, sizeof label, "inputs (%d shared parameters and constants)",
             n);
    int g = hs__group_add(b, HS_GROUP_STRUCTURE, gc->group, "inputs",
                          gc->prefix, label, c);
    if (g < 0)
        return HS_ERR_NOMEM;
    for (int p = 0; p < gc->n; p++)
        if (gc->leaf[p] && b->group_of[c->instrs[p]->id] == gc->group)
            b->group_of[c->instrs[p]->id] = g;
    return HS_OK;
}

/* Fingerprints of the groups [g0, g1) of computation c: each group hashes
 * the instructions below it, edges inside it followed. */
static hs_status fingerprints(hs__gbuild *b, const hs_computation *c, int g0,
                              int g1)
{
    int n = c->n_instrs, ng = g1 - g0;
    int *count = calloc((size_t)ng + 1, sizeof *count);
    int *start = calloc((size_t)ng + 2, sizeof *start);
    uint32_t *stamps = calloc((size_t)n + 1, sizeof *stamps);
    uint64_t *h = malloc(sizeof *h * ((size_t)n + 1));
    int *members = NULL;
    hs_status st = HS_OK;
    if (!count || !start || !stamps || !h) {
        st = nomem(b);
        goto done;
    }
    int64_t total = 0;
    for (int p = 0; p < n; p++)
        for (int g = b->group_of[c->instrs[p]->id]; g >= g0 && g < g1;
             g = b->g[g].parent) {
            count[g - g0]++;
            total++;
        }
    members = malloc(sizeof *members * ((size_t)total + 1));
    if (!members) {
        st = nomem(b);
        goto done;
    }
    for (int k = 0; k < ng; k++)
        start[k + 1] = start[k] + count[k];
    memset(count, 0, sizeof *count * (size_t)ng);
    for (int p = 0; p < n; p++)
        for (int g = b->group_of[c->instrs[p]->id]; g >= g0 && g < g1;
             g = b->g[g].parent)
            members[start[g - g0] + count[g - g0]++] = p;
    for (int k = 0; k < ng; k++)
        b->g[g0 + k].fingerprint = hs__ghash_members(
            b, c, members + start[k], count[k], stamps, (uint32_t)k + 1, h);
done:
    free(count);
    free(start);
    free(stamps);
    free(h);
    free(members);
    return st;
}

static hs_status build_computation(hs__gbuild *b, const hs_computation *c,
                                   int parent, const hs_instruction *caller)
{
    int ci = hs_computation_index(b->m, c);
    if (ci < 0 || b->comp_group[ci] >= 0)
        return HS_OK;
    const char *path = hs_arena_printf(b->arena, "@%s", c->name);
    const char *label =
        caller ? hs_arena_printf(b->arena, "%s (%s of %s)", c->name,
                                 hs_opcode_name(caller->opcode), caller->name)
               : c->name;
    if (!path || !label)
        return nomem(b);
    int g = hs__group_add(b, HS_GROUP_COMPUTATION, parent,
                          parent < 0 ? "" : "", path, label, c);
    if (g < 0)
        return HS_ERR_NOMEM;
    b->g[g].caller = caller;
    b->comp_group[ci] = g;

    hs__gcomp gc = {.group = g};
    gc.prefix = parent < 0 ? "" : hs_arena_printf(b->arena, "@%s/", c->name);
    if (!gc.prefix)
        return nomem(b);
    hs_status st = gcomp_init(b, &gc, c);
    if (st != HS_OK)
        return st;
    for (int p = 0; p < c->n_instrs; p++)
        b->group_of[c->instrs[p]->id] = g;
    bool scoped = false;
    st = hs__groups_scopes(b, &gc, &scoped);
    if (st == HS_OK && !scoped && c->n_instrs >= STRUCTURE_MIN_INSTRUCTIONS)
        st = hs__groups_structure(b, &gc);
    if (st != HS_OK)
        return st;
    /* Scoped names say where a parameter belongs (or that it belongs to
     * no scope); found structure does not, so its leaves join their
     * users. */
    if (!scoped)
        attach_leaves(b, &gc);
    if ((st = gather_inputs(b, &gc)) != HS_OK)
        return st;
    int g_end = b->n;

    for (int p = 0; p < c->n_instrs; p++) {
        const hs_instruction *i = c->instrs[p];
        if (!hs_groups_nests_called(i))
            continue;
        for (int k = 0; k < i->n_called; k++) {
            st = build_computation(b, i->called[k], b->group_of[i->id], i);
            if (st != HS_OK)
                return st;
        }
    }
    st = fingerprints(b, c, g, g_end);
    if (st == HS_OK)
        b->comp_fp[ci] = b->g[g].fingerprint;
    return st;
}

/* Counts, depths, repeats and children lists, once every group exists. */
static hs_status finish(hs__gbuild *b, hs_group_tree *t)
{
    for (int k = 0; k < b->n; k++)
        b->g[k].depth = b->g[k].parent < 0 ? 0 : b->g[b->g[k].parent].depth + 1;
    for (int id = 0; id < b->n_ids; id++) {
        int g = b->group_of[id];
        if (g < 0)
            continue;
        b->g[g].direct++;
        for (; g >= 0; g = b->g[g].parent)
            b->g[g].instructions++;
    }
    int *n_kids = calloc((size_t)b->n + 1, sizeof *n_kids);
    if (!n_kids)
        return nomem(b);
    for (int k = 1; k < b->n; k++)
        if (b->g[k].parent >= 0)
            n_kids[b->g[k].parent]++;
    for (int k = 0; k < b->n; k++) {
        int *kids = hs_arena_alloc(b->arena,
                                   sizeof(int) * (size_t)(n_kids[k] + 1));
        if (!kids) {
            free(n_kids);
            return nomem(b);
        }
        b->g[k].children = kids;
    }
    free(n_kids);
    for (int k = 1; k < b->n; k++) {
        hs_group *p = b->g[k].parent >= 0 ? &b->g[b->g[k].parent] : NULL;
        if (p)
            ((int *)p->children)[p->n_children++] = k;
    }
    /* Candidates (repeat == -1: numbered siblings, runs) have their
     * children drawn closed by default; they stand for identical siblings
     * when every child has the first child's fingerprint (a run's layers
     * were found alike up to a few instructions, so they count as
     * repeats). */
    for (int k = 0; k < b->n; k++) {
        hs_group *g = &b->g[k];
        if (g->repeat != -1)
            continue;
        bool same = g->n_children >= 2;
        for (int j = 0; same && j < g->n_children; j++) {
            const hs_group *c = &b->g[g->children[j]];
            same = c->kind != HS_GROUP_COMPUTATION &&
                   (g->kind == HS_GROUP_STRUCTURE ||
                    c->fingerprint == b->g[g->children[0]].fingerprint);
        }
        g->repeat = same ? g->n_children : 0;
        for (int j = 0; j < g->n_children; j++)
            b->g[g->children[j]].is_repeat_item =
                b->g[g->children[j]].kind != HS_GROUP_COMPUTATION;
        if (g->kind == HS_GROUP_STRUCTURE && g->n_children >= 1) {
            const hs_group *first = &b->g[g->children[0]];
            const char *label = hs_arena_printf(
                b->arena, "layer 0..%d (%d x %lld)", g->n_children - 1,
                g->n_children, (long long)first->instructions);
            if (!label)
                return nomem(b);
            g->label = label;
        }
    }
    t->n_groups = b->n;
    t->groups = b->g;
    t->n_ids = b->n_ids;
    t->group_of = b->group_of;
    t->computation_group = b->comp_group;
    t->arena = b->arena;
    b->g = NULL;
    return HS_OK;
}

hs_status hs_groups_build(const hs_module *m, const hs_computation *top,
                          hs_group_tree **out, hs_error *err)
{
    hs_error_clear(err);
    *out = NULL;
    if (!m)
        return hs_error_set(err, HS_ERR_INVALID, "no module to group");
    if (!top)
        top = m->entry;
    if (!top || hs_computation_index(m, top) < 0)
        return hs_error_set(err, HS_ERR_INVALID,
                            "groups: the computation is not part of the module");
    hs__gbuild b = {.m = m, .err = err};
    hs_group_tree *t = calloc(1, sizeof *t);
    b.arena = hs_arena_new(0);
    if (!t || !b.arena) {
        free(t);
        hs_arena_free(b.arena);
        return hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
    }
    t->module = m;
    t->top = top;
    for (int c = 0; c < m->n_comps; c++)
        for (int k = 0; k < m->comps[c]->n_instrs; k++)
            if (m->comps[c]->instrs[k]->id >= b.n_ids)
                b.n_ids = m->comps[c]->instrs[k]->id + 1;
    size_t nc = (size_t)m->n_comps + 1, ni = (size_t)b.n_ids + 1;
    b.group_of = hs_arena_alloc(b.arena, sizeof(int) * ni);
    b.pos_of_id = hs_arena_alloc(b.arena, sizeof(int) * ni);
    b.comp_group = hs_arena_alloc(b.arena, sizeof(int) * nc);
    b.comp_fp = hs_arena_alloc(b.arena, sizeof(uint64_t) * nc);
    hs_status st = HS_OK;
    if (!b.group_of || !b.pos_of_id || !b.comp_group || !b.comp_fp) {
        st = nomem(&b);
        goto fail;
    }
    for (size_t k = 0; k < ni; k++)
        b.group_of[k] = b.pos_of_id[k] = -1;
    for (size_t k = 0; k < nc; k++)
        b.comp_group[k] = -1;
    for (int c = 0; c < m->n_comps; c++)
        for (int k = 0; k < m->comps[c]->n_instrs; k++)
            if (m->comps[c]->instrs[k]->id >= 0)
                b.pos_of_id[m->comps[c]->instrs[k]->id] = k;
    st = build_computation(&b, top, -1, NULL);
    if (st == HS_OK)
        st = finish(&b, t);
    if (st != HS_OK)
        goto fail;
    *out = t;
    return HS_OK;
fail:
    free(b.g);
    hs_arena_free(b.arena);
    free(t);
    return st;
}

void hs_groups_free(hs_group_tree *t)
{
    if (!t)
        return;
    free(t->groups);
    hs_arena_free(t->arena);
    free(t);
}

bool hs_groups_match(const hs_group_tree *t, int g, const char *text,
                     size_t len)
{
    if (!t || g < 0 || g >= t->n_groups)
        return false;
    const hs_group *x = &t->groups[g];
    return (strlen(x->path) == len && memcmp(x->path, text, len) == 0) ||
           (*x->local && strlen(x->local) == len &&
            memcmp(x->local, text, len) == 0);
}

int hs_groups_find(const hs_group_tree *t, const char *text, size_t len)
{
    for (int g = 0; t && g < t->n_groups; g++)
        if (hs_groups_match(t, g, text, len))
            return g;
    return -1;
}

int hs_groups_of_computation(const hs_group_tree *t, const hs_computation *c)
{
    int ci = t ? hs_computation_index(t->module, c) : -1;
    return ci < 0 ? -1 : t->computation_group[ci];
}
