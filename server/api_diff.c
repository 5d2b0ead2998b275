/* api_diff.c - GET /v1/results/{id}/diff/{other}: the engine's diff of
 * two compile results whole, for the explorer. /v1/compare's reply lists
 * at most 100 instructions of each kind; a graph pane needs the status of
 * every node it draws, and the HLO tab every instruction side by side. So
 * this reply has, per side, every instruction that is not the same
 * (absent: the same) and every group of the entry's group tree (the boxes
 * a view draws closed) with something inside that is not, and the
 * alignment (hs_module_diff_align): computations paired, instructions on
 * rows. ?stage= (traced | optimized, default optimized) is both sides'
 * stage, ?stage_a= and ?stage_b= each side's (a module before and after
 * its passes is one result at two stages). Cached like any artefact; the
 * other result is rebuilt from its stored request as the first is. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "hloscope/hs_groups.h"
#include "store.h"

static const char *const STATUS[] = {
    [HS_DIFF_SAME] = "same",
    [HS_DIFF_CHANGED] = "changed",
    [HS_DIFF_ADDED] = "added",
    [HS_DIFF_REMOVED] = "removed",
};

/* ?stage_a / ?stage_b, else ?stage, else optimized; NULL with e set when
 * the value is not a stage. */
static const char *stage_of(const srv_request *rq, const char *key, hs_error *e)
{
    const char *v = srv_query(rq, key);
    if (!v)
        v = srv_query(rq, "stage");
    if (!v)
        return "optimized";
    if (strcmp(v, "optimized") == 0 || strcmp(v, "traced") == 0)
        return v;
    hs_error_set(e, HS_ERR_INVALID, "unknown stage '%s' (known: traced, optimized)", v);
    snprintf(e->path, sizeof e->path, "?%s", srv_query(rq, key) ? key : "stage");
    return NULL;
}

static const hs_module *module_at(const api_program *p, const char *stage)
{
    return strcmp(stage, "traced") == 0 ? api_program_traced(p)
                                        : hs_executable_module(p->exe);
}

/* The other result's program, rebuilt from its stored request: 0, -1
 * with e set, or 1 with the reply made (404: no such result, or one with
 * no module). */
static int build_other(srv *s, const srv_request *rq, const char *other,
                       api_program *p, srv_reply *rp, hs_error *e)
{
    if (!api_id_valid(other)) {
        srv_reply_error(rp, 404, "not_found", "",
                        "'%s' is not a result id (32 hex digits)", other);
        return 1;
    }
    store_row row;
    int found = store_get(s->store, other, &row);
    if (found < 0) {
        hs_error_set(e, HS_ERR_IO, "cannot read the store");
        return -1;
    }
    if (found == 0) {
        srv_reply_error(rp, 404, "not_found", "", "no result with id %s", other);
        return 1;
    }
    int rc = 1;
    api_request ar;
    if (strcmp(row.endpoint, "compare") == 0) {
        srv_reply_error(rp, 404, "not_found", "",
                        "%s is a comparison: diff one of its sides (a.id, b.id)", other);
    } else if (row.status != 200) {
        srv_reply_error(rp, 404, "not_found", "",
                        "result %s has no module to diff (it is pending, failed or "
                        "evicted: POST its request again)",
                        other);
    } else if (api_request_from_text(row.request, &ar, e) == 0) {
        rc = api_program_build(s, json_object_get(ar.canonical, "body"),
                               json_object_get(ar.canonical, "query"), false,
                               rq->deadline_ns, p, e);
        api_request_free(&ar);
    } else {
        rc = -1;
    }
    store_row_free(&row);
    return rc;
}

/* Each instruction's status on one side (by id; SAME when matched and the
 * same everywhere it matched). */
static void statuses(const hs_module_diff *d, bool side_a, hs_diff_status *st)
{
    int64_t n = side_a ? d->n_removed : d->n_added;
    const hs_instruction **only = side_a ? d->removed : d->added;
    for (int64_t k = 0; k < n; k++)
        st[only[k]->id] = side_a ? HS_DIFF_REMOVED : HS_DIFF_ADDED;
    const hs_instruction **changed = side_a ? d->changed_a : d->changed_b;
    for (int64_t k = 0; k < d->n_changed; k++)
        st[changed[k]->id] = HS_DIFF_CHANGED;
}

/* The groups of m's entry tree with something inside that is not the
 * same: "added" / "removed" when all of it is only on this side, else
 * "changed". */
static json_t *group_statuses(const hs_module *m, const hs_diff_status *st,
                              hs_error *e)
{
    hs_group_tree *t = NULL;
    if (!m->entry || hs_groups_build(m, m->entry, &t, e) != HS_OK)
        return m->entry ? NULL : json_object();
    /* bit 0: something the same below, bit 1: something only here,
     * bit 2: something changed */
    unsigned char *seen = calloc((size_t)(t->n_groups ? t->n_groups : 1), 1);
    json_t *out = json_object();
    if (!seen || !out) {
        free(seen);
        json_decref(out);
        hs_groups_free(t);
        hs_error_set(e, HS_ERR_NOMEM, "out of host memory");
        return NULL;
    }
    for (int c = 0; c < m->n_comps; c++)
        for (int i = 0; i < m->comps[c]->n_instrs; i++) {
            const hs_instruction *in = m->comps[c]->instrs[i];
            if (in->id < 0 || in->id >= t->n_ids || t->group_of[in->id] < 0)
                continue;
            unsigned char bit = st[in->id] == HS_DIFF_SAME      ? 1
                                : st[in->id] == HS_DIFF_CHANGED ? 4
                                                                : 2;
            for (int g = t->group_of[in->id]; g >= 0 && !(seen[g] & bit);
                 g = t->groups[g].parent)
                seen[g] |= bit;
        }
    for (int g = 1; g < t->n_groups; g++) {
        if (!(seen[g] & 6))
            continue;
        bool all_only = !(seen[g] & 5);
        json_object_set_new(out, t->groups[g].path,
                            json_string(all_only ? "only" : "changed"));
    }
    free(seen);
    hs_groups_free(t);
    return out;
}

/* One side's statuses: its instructions that are not the same, and its
 * groups' ("only" becomes added or removed). */
static json_t *side_json(const char *id, const char *stage, const hs_module *m,
                         const hs_diff_status *st, bool side_a, hs_error *e)
{
    json_t *groups = group_statuses(m, st, e);
    if (!groups)
        return NULL;
    const char *only = side_a ? "removed" : "added";
    const char *key;
    json_t *v;
    json_object_foreach(groups, key, v)
        if (strcmp(json_string_value(v), "only") == 0)
            json_string_set(v, only);
    json_t *instrs = json_object();
    for (int c = 0; c < m->n_comps; c++)
        for (int i = 0; i < m->comps[c]->n_instrs; i++) {
            const hs_instruction *in = m->comps[c]->instrs[i];
            if (st[in->id] != HS_DIFF_SAME)
                json_object_set_new(instrs, in->name, json_string(STATUS[st[in->id]]));
        }
    return json_pack("{s:s, s:s, s:s, s:s, s:I, s:o, s:o}", "id", id, "stage", stage,
                     "module", m->name ? m->name : "", "entry",
                     m->entry ? m->entry->name : "", "instructions",
                     (json_int_t)hs_module_instruction_count(m), "not_same", instrs,
                     "groups", groups);
}

static json_t *name_or_null(const void *x, const char *name)
{
    return x ? json_string(name) : json_null();
}

static json_t *blocks_json(const hs_diff_alignment *al)
{
    json_t *blocks = json_array();
    for (int k = 0; blocks && k < al->n_blocks; k++) {
        const hs_diff_block *b = &al->blocks[k];
        json_t *rows = json_array();
        for (int64_t r = b->first_row; rows && r < b->first_row + b->n_rows; r++) {
            const hs_diff_row *row = &al->rows[r];
            json_array_append_new(
                rows, json_pack("[o, o, s]", name_or_null(row->a, row->a ? row->a->name : ""),
                                name_or_null(row->b, row->b ? row->b->name : ""),
                                STATUS[row->status]));
        }
        json_array_append_new(
            blocks, json_pack("{s:o, s:o, s:o}", "a",
                              name_or_null(b->a, b->a ? b->a->name : ""), "b",
                              name_or_null(b->b, b->b ? b->b->name : ""), "rows", rows));
    }
    return blocks;
}

static json_t *diff_reply(const char *ida, const char *sa, const hs_module *a,
                          const char *idb, const char *sb, const hs_module *b,
                          hs_error *e)
{
    hs_module_diff d;
    hs_diff_alignment al;
    memset(&al, 0, sizeof al);
    if (hs_module_diff_compute(a, b, &d, e) != HS_OK)
        return NULL;
    json_t *out = NULL, *ja = NULL, *jb = NULL;
    hs_diff_status *st_a = calloc((size_t)(a->next_id > 0 ? a->next_id : 1), sizeof *st_a);
    hs_diff_status *st_b = calloc((size_t)(b->next_id > 0 ? b->next_id : 1), sizeof *st_b);
    if (!st_a || !st_b) {
        hs_error_set(e, HS_ERR_NOMEM, "out of host memory");
        goto done;
    }
    if (hs_module_diff_align(a, b, &d, &al, e) != HS_OK)
        goto done;
    statuses(&d, true, st_a);
    statuses(&d, false, st_b);
    if (!(ja = side_json(ida, sa, a, st_a, true, e)) ||
        !(jb = side_json(idb, sb, b, st_b, false, e)))
        goto done;
    out = json_pack("{s:o, s:o, s:{s:I, s:I, s:I, s:I, s:I, s:I}, s:o}", "a", ja, "b", jb,
                    "counts", "added", (json_int_t)d.n_added, "removed",
                    (json_int_t)d.n_removed, "changed", (json_int_t)d.n_changed,
                    "unchanged", (json_int_t)d.n_unchanged, "matched_by_layer",
                    (json_int_t)d.n_matched_by_layer, "pairs", (json_int_t)d.n_pairs,
                    "blocks", blocks_json(&al));
    ja = jb = NULL;
    if (!out)
        hs_error_set(e, HS_ERR_NOMEM, "out of host memory");
done:
    json_decref(ja);
    json_decref(jb);
    free(st_a);
    free(st_b);
    hs_diff_alignment_free(&al);
    hs_module_diff_free(&d);
    return out;
}

static int make_diff(srv *s, const srv_request *rq, const char *id, const api_program *p,
                     const store_row *row, srv_reply *rp, hs_error *e)
{
    const char *sa = stage_of(rq, "stage_a", e), *sb = sa ? stage_of(rq, "stage_b", e) : NULL;
    if (!sb)
        return -1;
    const char *other = rq->params[1];
    api_program q;
    memset(&q, 0, sizeof q);
    bool same = strcmp(other, id) == 0;
    int rc = same ? 0 : build_other(s, rq, other, &q, rp, e);
    if (rc != 0) {
        api_program_free(&q);
        return rc < 0 ? -1 : 0;
    }
    json_t *j = diff_reply(id, sa, module_at(p, sa), other, sb,
                           module_at(same ? p : &q, sb), e);
    api_program_free(&q);
    if (!j)
        return -1;
    srv_reply_json(rp, 200, j);
    return 0;
}

srv_outcome api_result_diff(srv *s, srv_request *rq, srv_reply *rp)
{
    /* The artefact is keyed by both ids and both stages. */
    char kind[160];
    snprintf(kind, sizeof kind, "diff/%.40s?a=%.12s&b=%.12s", rq->params[1],
             srv_query(rq, "stage_a") ? srv_query(rq, "stage_a") : "",
             srv_query(rq, "stage_b") ? srv_query(rq, "stage_b") : "");
    return api_result_artefact(s, rq, rp, kind, make_diff, true);
}
