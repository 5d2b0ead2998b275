/* reroll.c - the repeats and scan section of a what-if (hs_whatif.h): the
 * inverse of unrolling. The runs of repeated layers come from the group
 * tree; every run of the entry computation that rerolls is rewritten the
 * way torch_xla's scan_layers would have traced it, each into its own
 * `while` whose body is one layer (a train step's forward layers and its
 * backward layers both). Runs are tried largest first and kept when they
 * plan (reroll_plan.c: the layers alike, their inputs carries, invariants,
 * constants or stacked inputs) and the module with them and every run
 * kept before still rewrites (reroll_rewrite.c); scan.runs says what
 * became of each run and why. Both modules are compiled and, when the
 * module is executable and small enough, run on the same drawn arguments
 * (reroll_measure.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "whatif/reroll_internal.h"

/* Each run of repeated layers in the tree, largest first. */
static hs_status list_repeats(const hs_module *m, const hs_group_tree *t,
                              hs_whatif *w, hs_error *err)
{
    int n = 0;
    for (int g = 0; g < t->n_groups; g++)
        n += t->groups[g].repeat > 1 && t->groups[g].n_children > 1;
    w->repeats = hs_arena_alloc(w->arena, sizeof *w->repeats * (size_t)(n + 1));
    if (!w->repeats)
        return hs_error_set(err, HS_ERR_NOMEM, "whatif: out of host memory");
    w->n_repeats = 0;
    for (int g = 0; g < t->n_groups; g++) {
        const hs_group *r = &t->groups[g];
        if (r->repeat <= 1 || r->n_children <= 1)
            continue;
        const hs_computation *c = r->computation;
        int first_child = r->children[0], last_child =
                                              r->children[r->n_children - 1];
        const char *first = NULL, *last = NULL;
        for (int k = 0; k < c->n_instrs; k++) {
            int gi = c->instrs[k]->id < t->n_ids ? t->group_of[c->instrs[k]->id]
                                                 : -1;
            while (gi >= 0 && gi != first_child && gi != last_child)
                gi = t->groups[gi].parent;
            if (gi == first_child && !first)
                first = c->instrs[k]->name;
            if (gi == last_child)
                last = c->instrs[k]->name;
        }
        hs_whatif_repeat *x = &w->repeats[w->n_repeats++];
        x->count = r->n_children;
        x->block_instructions = t->groups[first_child].instructions;
        x->first = hs_arena_strdup(w->arena, first ? first : "");
        x->last = hs_arena_strdup(w->arena, last ? last : "");
        x->path = hs_arena_strdup(w->arena, r->path);
        if (!x->first || !x->last || !x->path)
            return hs_error_set(err, HS_ERR_NOMEM,
                                "whatif: out of host memory");
    }
    /* largest first: instructions in the run, then the tree's order */
    for (int a = 1; a < w->n_repeats; a++)
        for (int b = a; b > 0; b--) {
            hs_whatif_repeat *x = &w->repeats[b - 1], *y = &w->repeats[b];
            if (x->count * x->block_instructions >=
                y->count * y->block_instructions)
                break;
            hs_whatif_repeat tmp = *x;
            *x = *y;
            *y = tmp;
        }
    (void)m;
    return HS_OK;
}

/* A new entry of scan.runs for group g (room for every group and
 * repeat is made beforehand). */
static hs_whatif_scan_run *add_run(hs_whatif *w, const char *path,
                                   int64_t layers, const char *note)
{
    /* The tree is freed after the analysis: the path lives in the arena. */
    hs_whatif_scan_run *r = &w->scan.runs[w->scan.n_runs++];
    *r = (hs_whatif_scan_run){.path = hs_arena_strdup(w->arena, path),
                              .layers = layers,
                              .note = note ? note : ""};
    if (!r->path)
        r->path = "";
    return r;
}

/* The runs to try: the entry's runs, largest first, then numbered sibling
 * scopes the tree did not find identical (layers.0, layers.1, ... with
 * one layer different), so that a refusal says which instruction
 * differs. The other computations' runs are said not to be tried. */
static int candidates(const hs_module *m, const hs_group_tree *t,
                      hs_whatif *w, int *cand)
{
    int n = 0;
    for (int k = 0; k < w->n_repeats; k++) {
        int g = hs_groups_find(t, w->repeats[k].path,
                               strlen(w->repeats[k].path));
        if (g >= 0 && t->groups[g].computation == m->entry)
            cand[n++] = g;
        else
            add_run(w, w->repeats[k].path, w->repeats[k].count,
                    hs_arena_printf(
                        w->arena, "in computation %s, not the entry: only "
                        "the entry's runs are rerolled (a called "
                        "computation is traced once, however often it is "
                        "called)",
                        g >= 0 ? t->groups[g].computation->name : "?"));
    }
    for (int g = 0; g < t->n_groups; g++) {
        const hs_group *x = &t->groups[g];
        bool numbered = x->repeat <= 1 && x->n_children >= 2 &&
                        x->computation == m->entry;
        for (int c = 0; numbered && c < x->n_children; c++)
            numbered = t->groups[x->children[c]].is_repeat_item;
        if (numbered)
            cand[n++] = g;
    }
    return n;
}

/* The run of plans[0..n) that holds one of q's layers' instructions, or
 * -1: runs nest (a run of experts inside each layer), and only disjoint
 * ones become loops side by side. */
static int overlapping(plan *const *plans, int n, const plan *q)
{
    for (int a = 0; a < n; a++)
        for (size_t k = 0; k < (size_t)q->L * (size_t)q->n; k++)
            if (plan_layer_of(plans[a], q->in[k]) >= 0)
                return a;
    return -1;
}

typedef struct reroll_state {
    plan **plans;               /* the runs kept, in the order tried */
    int n_plans;
    hs_module *rerolled;        /* with every kept run rewritten */
    hs__reroll_param *params;   /* its stacked parameters */
    int n_params;
    char first_reason[512];     /* the first refusal of a run */
    const char *first_path;
} reroll_state;

static void state_free(reroll_state *st)
{
    for (int k = 0; st->plans && k < st->n_plans; k++) {
        hs__reroll_plan_free(st->plans[k]);
        free(st->plans[k]);
    }
    free(st->plans);
    free(st->params);
    hs_module_free(st->rerolled);
}

/* What became of a run that does not reroll: said in its repeats entry
 * and, the first time, kept for the scan's reason. */
static void refused(hs_whatif *w, const hs_group_tree *t, int g,
                    reroll_state *st, const char *why)
{
    add_run(w, t->groups[g].path, t->groups[g].n_children,
            hs_arena_strdup(w->arena, why));
    if (!st->first_path) {
        st->first_path = hs_arena_strdup(w->arena, t->groups[g].path);
        snprintf(st->first_reason, sizeof st->first_reason, "%.500s", why);
    }
}

/* Tries run group g on top of the runs kept so far. */
static void try_run(const hs_module *m, const hs_group_tree *t, int g,
                    hs_whatif *w, reroll_state *st)
{
    plan *p = calloc(1, sizeof *p);
    if (!p) {
        refused(w, t, g, st, "out of host memory");
        return;
    }
    if (!hs__reroll_plan(p, m, t, g)) {
        refused(w, t, g, st, p->reason);
        goto drop;
    }
    int a = overlapping(st->plans, st->n_plans, p);
    if (a >= 0) {
        char why[300];
        snprintf(why, sizeof why, "its layers are inside %s, rerolled "
                 "already", t->groups[st->plans[a]->run].path);
        refused(w, t, g, st, why);
        goto drop;
    }
    st->plans[st->n_plans++] = p;
    char why[512];
    hs__reroll_param *params;
    int n_params;
    hs_module *r = hs__reroll_rewrite(m, st->plans, st->n_plans, &params,
                                      &n_params, why, sizeof why);
    if (!r) {
        st->n_plans--;
        refused(w, t, g, st, why);
        goto drop;
    }
    hs_module_free(st->rerolled);
    free(st->params);
    st->rerolled = r;
    st->params = params;
    st->n_params = n_params;
    hs_whatif_scan_run *run = add_run(
        w, t->groups[g].path, t->groups[g].n_children,
        hs_arena_strdup(w->arena, p->phase_note[0]
                                      ? p->phase_note
                                      : "every layer is in the loop"));
    run->rerolled = true;
    run->layers_rerolled = p->L;
    return;
drop:
    hs__reroll_plan_free(p);
    free(p);
}

hs_status hs__whatif_reroll(const hs_module *m, const hs__whatif_shared *sh,
                            const hs_whatif_options *o, hs_whatif *w,
                            hs_error *err)
{
    const hs_group_tree *t = sh->tree;
    hs_whatif_scan *sc = &w->scan;
    sc->equivalent = -1;
    hs_status s = list_repeats(m, t, w, err);
    if (s != HS_OK)
        return s;
    sc->runs = hs_arena_alloc(w->arena, sizeof *sc->runs *
                                            ((size_t)t->n_groups +
                                             (size_t)w->n_repeats + 1));
    if (!sc->runs)
        return hs_error_set(err, HS_ERR_NOMEM, "whatif: out of host memory");
    int *cand = malloc(sizeof(int) * (size_t)(t->n_groups + 1));
    reroll_state st = {0};
    st.plans = calloc((size_t)t->n_groups + 1, sizeof *st.plans);
    if (!cand || !st.plans) {
        free(cand);
        free(st.plans);
        return hs_error_set(err, HS_ERR_NOMEM, "whatif: out of host memory");
    }
    int n_cand = candidates(m, t, w, cand);
    for (int k = 0; k < n_cand; k++) {
        if ((s = hs__whatif_stopped(o, "the reroll", err)) != HS_OK)
            break;
        try_run(m, t, cand[k], w, &st);
    }
    free(cand);
    if (s != HS_OK || !st.rerolled) {
        sc->analysed = false;
        if (st.first_path)
            snprintf(sc->reason, sizeof sc->reason, "%.100s: %.400s",
                     st.first_path, st.first_reason);
        else
            snprintf(sc->reason, sizeof sc->reason,
                     "no repeated layers in the entry computation");
        state_free(&st);
        return s;
    }
    sc->analysed = true;
    sc->loops = st.n_plans;
    sc->path = hs_arena_strdup(w->arena, t->groups[st.plans[0]->run].path);
    for (int k = 0; k < st.n_plans; k++) {
        const plan *p = st.plans[k];
        if (p->phase_note[0])
            hs__reroll_note(sc, "%s: %s", t->groups[p->run].path,
                            p->phase_note);
        else
            hs__reroll_note(sc, "%s: %d layers rerolled",
                            t->groups[p->run].path, p->L);
    }
    for (int k = 0; k < sc->n_runs; k++)
        if (!sc->runs[k].rerolled)
            hs__reroll_note(sc, "%s not rerolled: %.200s", sc->runs[k].path,
                            sc->runs[k].note);
    sc->instructions_before = hs_module_instruction_count(m);
    sc->instructions_after = hs_module_instruction_count(st.rerolled);

    /* Before: the driver's one compile of m as given. */
    hs_executable *before = sh->exe, *after = NULL;
    sc->compile_seconds_before = sh->compile_seconds;
    if (!before) {
        hs__reroll_note(sc, "the module does not compile: %.200s",
                        sh->why.message);
    } else {
        s = hs__reroll_compile(st.rerolled, o, w->device, &after,
                               &sc->compile_seconds_after, err);
        if (s != HS_OK && s != HS_ERR_CANCELLED && s != HS_ERR_NOMEM) {
            /* A module that does not compile is a finding, not a
             * failure. */
            hs__reroll_note(sc, "the rerolled module does not compile: "
                            "%.200s", err->message);
            hs_error_clear(err);
            s = HS_OK;
        } else if (s == HS_OK) {
            s = hs__reroll_equivalence(m, st.plans, st.n_plans, st.params,
                                       st.n_params, o, w->device, before,
                                       after, sc, err);
        }
    }
    hs_executable_release(after);
    sc->rerolled = st.rerolled;
    st.rerolled = NULL;
    state_free(&st);
    return s;
}
