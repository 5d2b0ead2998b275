/* search.c - finding instructions anywhere in a module, drawn or not: each
 * hit with its chain of groups, so a client can open exactly the groups
 * that reveal it (?expand= with the innermost path). */
#include <ctype.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "render/render_internal.h"

/* Case-insensitive substring (ASCII letters fold; other bytes match
 * exactly). */
static bool contains(const char *hay, const char *needle, size_t n)
{
    if (!hay)
        return false;
    for (const char *p = hay; *p; p++) {
        size_t k = 0;
        while (k < n && p[k] &&
               tolower((unsigned char)p[k]) == tolower((unsigned char)needle[k]))
            k++;
        if (k == n)
            return true;
    }
    return false;
}

static json_t *text(const char *s)
{
    if (!s)
        return json_null();
    hs_buf b = {0};
    hs__text_clean(&b, s, 1000);
    json_t *j = b.oom ? NULL : json_stringn(b.data ? b.data : "", b.len);
    hs__buf_free(&b);
    return j;
}

static json_t *hit_json(const hs_group_tree *t, const hs_instruction *i)
{
    json_t *j = json_object(), *chain = json_array();
    if (!j || !chain) {
        json_decref(j);
        json_decref(chain);
        return NULL;
    }
    char shape[256];
    hs__shape_text(&i->shape, shape, sizeof shape);
    int g = i->id >= 0 && i->id < t->n_ids ? t->group_of[i->id] : -1;
    int bad = 0;
    /* Outermost first, the root (the top computation) left out. */
    int depth = g >= 0 ? t->groups[g].depth : 0;
    json_t **items = calloc((size_t)depth + 1, sizeof *items);
    if (!items)
        bad = 1;
    for (int a = g, k = depth; !bad && a > 0; a = t->groups[a].parent)
        items[--k] = text(t->groups[a].path);
    for (int k = 0; !bad && k < depth; k++)
        bad |= json_array_append_new(chain, items[k]);
    free(items);
    const char *op = i->opcode == HS_OP_UNKNOWN && i->unknown_opcode
                         ? i->unknown_opcode
                         : hs_opcode_name(i->opcode);
    bad |= json_object_set_new(j, "name", text(i->name));
    bad |= json_object_set_new(j, "opcode", text(op));
    bad |= json_object_set_new(j, "computation", text(i->parent->name));
    bad |= json_object_set_new(j, "shape", text(shape));
    bad |= json_object_set_new(j, "op_name", text(i->op_name));
    bad |= json_object_set_new(j, "group",
                               g > 0 ? text(t->groups[g].path) : json_null());
    bad |= json_object_set_new(j, "groups", chain);
    if (bad) {
        json_decref(j);
        return NULL;
    }
    return j;
}

hs_status hs_render_search_json(const hs_module *m, const char *computation,
                                const char *query, int64_t max_hits,
                                char **out, size_t *out_len, hs_error *err)
{
    hs_error_clear(err);
    *out = NULL;
    if (out_len)
        *out_len = 0;
    if (!m)
        return hs_error_set(err, HS_ERR_INVALID, "no module to search");
    size_t n = query ? strlen(query) : 0;
    if (n == 0)
        return hs_error_set(err, HS_ERR_INVALID,
                            "q: give the text to search for");
    const hs_computation *top = m->entry;
    if (computation && !(top = hs_module_find_computation(m, computation))) {
        hs_buf shown = {0};
        hs__text_clean(&shown, computation, 64);
        hs_error_set(err, HS_ERR_INVALID,
                     "computation: no computation named '%s' in module",
                     shown.data ? shown.data : "");
        hs__buf_free(&shown);
        return HS_ERR_INVALID;
    }
    if (max_hits <= 0)
        max_hits = HS_RENDER_DEFAULT_SEARCH_HITS;
    hs_group_tree *t;
    hs_status st = hs_groups_build(m, top, &t, err);
    if (st != HS_OK)
        return st;
    json_t *root = json_object(), *hits = json_array();
    int bad = !root || !hits;
    int64_t count = 0;
    /* The computations of the tree, in module order (callees first). */
    for (int c = 0; !bad && c < m->n_comps; c++) {
        if (t->computation_group[c] < 0)
            continue;
        const hs_computation *comp = m->comps[c];
        for (int k = 0; !bad && k < comp->n_instrs; k++) {
            const hs_instruction *i = comp->instrs[k];
            if (!contains(i->name, query, n) &&
                !contains(hs_opcode_name(i->opcode), query, n) &&
                !contains(i->op_name, query, n))
                continue;
            if (count++ < max_hits)
                bad |= json_array_append_new(hits, hit_json(t, i));
        }
    }
    if (!bad) {
        bad |= json_object_set_new(root, "query", text(query));
        bad |= json_object_set_new(root, "computation", text(top->name));
        bad |= json_object_set_new(root, "count", json_integer(count));
        bad |= json_object_set_new(root, "truncated",
                                   json_boolean(count > max_hits));
        bad |= json_object_set(root, "hits", hits);
    }
    json_decref(hits);
    hs_groups_free(t);
    char *dumped = bad ? NULL : json_dumps(root, JSON_COMPACT);
    json_decref(root);
    hs_buf b = {0};
    if (dumped) {
        hs__buf_puts(&b, dumped);
        json_free_t free_fn = NULL;
        json_get_alloc_funcs(NULL, &free_fn);
        (free_fn ? free_fn : free)(dumped);
    } else {
        b.oom = true;
    }
    return hs__buf_finish(&b, out, out_len, "search results", err);
}
