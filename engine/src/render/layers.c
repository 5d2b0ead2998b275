/* layers.c - which groups a view draws open: the expand list (group
 * paths, "layers.3" among them), the default opening under a node budget,
 * and the layer key of an op_name ("layers.N/..." is layer N of an unrolled
 * model, as the model tracer scopes it) that memory timelines colour by. */
#include <stdlib.h>
#include <string.h>

#include "render/render_internal.h"

size_t hs__layer_key(const char *op_name)
{
    static const char prefix[] = "layers.";
    const size_t np = sizeof prefix - 1;
    if (!op_name || strncmp(op_name, prefix, np) != 0)
        return 0;
    size_t k = np;
    while (op_name[k] >= '0' && op_name[k] <= '9')
        k++;
    if (k == np || (op_name[k] != '\0' && op_name[k] != '/'))
        return 0;
    return k;
}

/* A group path as a client writes it: printable ASCII without quotes,
 * backslashes or braces (JAX scopes use parentheses, brackets, '/', '*'
 * and '@'), at most 1000 bytes. */
static bool is_group_path(const char *s, size_t len)
{
    if (len == 0 || len > 1000)
        return false;
    for (size_t k = 0; k < len; k++) {
        unsigned char ch = (unsigned char)s[k];
        if (ch <= 0x20 || ch >= 0x7f || ch == '"' || ch == '\\' ||
            ch == '{' || ch == '}' || ch == '=' || ch == '<' || ch == '>')
            return false;
    }
    return true;
}

hs_status hs__expand_parse(hs_arena *a, const char *text, hs_expand *out,
                           hs_error *err)
{
    memset(out, 0, sizeof *out);
    if (!text || !*text)
        return HS_OK;
    int cap = 1;
    for (const char *p = text; *p; p++)
        cap += *p == ',';
    out->keys = hs_arena_alloc(a, sizeof *out->keys * (size_t)cap);
    out->lens = hs_arena_alloc(a, sizeof *out->lens * (size_t)cap);
    if (!out->keys || !out->lens)
        return hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
    const char *p = text;
    for (;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        /* Tolerate blanks around keys ("layers.1, layers.2"). */
        while (len && *p == ' ') {
            p++;
            len--;
        }
        while (len && p[len - 1] == ' ')
            len--;
        if (len == 0) {
            /* empty items ("a,,b", trailing comma) are skipped */
        } else if ((len == 3 && memcmp(p, "all", 3) == 0) ||
                   (len == 1 && *p == '*')) {
            out->all = true;
        } else if (is_group_path(p, len)) {
            out->keys[out->n] = p;
            out->lens[out->n] = len;
            out->n++;
        } else {
            hs_buf shown = {0};
            char *copy = hs_arena_strndup(a, p, len < 64 ? len : 64);
            hs__text_clean(&shown, copy ? copy : "", 0);
            hs_error_set(err, HS_ERR_INVALID,
                         "expand: '%s' is not a group path; expected "
                         "paths from graph.json's groups (e.g. layers.3 or "
                         "run.0/layer.5), comma-separated, or all",
                         shown.data ? shown.data : "");
            hs__buf_free(&shown);
            return HS_ERR_INVALID;
        }
        if (!end)
            break;
        p = end + 1;
    }
    return HS_OK;
}

/* ---- the open groups of a view ------------------------------------------ */

/* Nodes group g shows when open, its closed children one each (a closed
 * computation shows none: its caller stands for it). */
static int64_t open_cost(const hs_group_tree *t, int g)
{
    const hs_group *x = &t->groups[g];
    int64_t n = x->direct;
    for (int k = 0; k < x->n_children; k++)
        n += t->groups[x->children[k]].kind != HS_GROUP_COMPUTATION;
    return n - (x->kind != HS_GROUP_COMPUTATION);
}

typedef struct costed {
    int64_t cost;
    int group;
} costed;

static int cmp_cost(const void *a, const void *b)
{
    const costed *x = a, *y = b;
    if (x->cost != y->cost)
        return x->cost < y->cost ? -1 : 1;
    return (x->group > y->group) - (x->group < y->group);
}

/* Orders items by the cost of opening them, then by index. */
static bool sort_by_cost(const hs_group_tree *t, int *items, int n)
{
    costed *c = malloc(sizeof *c * (size_t)(n + 1));
    if (!c)
        return false;
    for (int k = 0; k < n; k++)
        c[k] = (costed){open_cost(t, items[k]), items[k]};
    qsort(c, (size_t)n, sizeof *c, cmp_cost);
    for (int k = 0; k < n; k++)
        items[k] = c[k].group;
    free(c);
    return true;
}

static void open_subtree(const hs_group_tree *t, int g, bool *open)
{
    const hs_group *x = &t->groups[g];
    open[g] = true;
    for (int k = 0; k < x->n_children; k++)
        if (t->groups[x->children[k]].kind != HS_GROUP_COMPUTATION)
            open_subtree(t, x->children[k], open);
}

/* Opens the levels below group `from` (already open), the cheapest groups
 * of a level first, while the nodes shown stay within budget. The layers
 * of a repeat stay closed (one box per layer, as a model's layers always
 * were) unless asked for. */
static bool open_levels(const hs_group_tree *t, int from, int64_t budget,
                        bool *open)
{
    int n = t->n_groups;
    int *level = malloc(sizeof *level * (size_t)(n + 1));
    int *next = malloc(sizeof *next * (size_t)(n + 1));
    if (!level || !next) {
        free(level);
        free(next);
        return false;
    }
    int64_t visible = open_cost(t, from) + 1;
    int n_level = 0;
    for (int k = 0; k < t->groups[from].n_children; k++)
        level[n_level++] = t->groups[from].children[k];
    bool ok = true;
    while (n_level > 0 && ok) {
        int n_next = 0;
        ok = sort_by_cost(t, level, n_level);
        for (int k = 0; ok && k < n_level; k++) {
            const hs_group *x = &t->groups[level[k]];
            if (x->is_repeat_item || open[level[k]])
                continue;
            int64_t cost = open_cost(t, level[k]);
            if (visible + cost > budget)
                break;
            visible += cost;
            open[level[k]] = true;
            for (int j = 0; j < x->n_children; j++)
                next[n_next++] = x->children[j];
        }
        int *swap = level;
        level = next;
        next = swap;
        n_level = n_next;
    }
    free(level);
    free(next);
    return ok;
}

hs_status hs__groups_open(const hs_group_tree *t, const hs_expand *e,
                          int64_t budget, const bool *is_loop_part,
                          bool *open, hs_error *err)
{
    int n = t->n_groups;
    if (e->all) {
        for (int g = 0; g < n; g++)
            open[g] = true;
        return HS_OK;
    }
    memset(open, 0, sizeof *open * (size_t)n);
    open[0] = true;
    if (!open_levels(t, 0, budget, open))
        return hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
    /* A loop body or condition that is one group (or none) - a scan body,
     * one layer traced once - is drawn open, so a scan stays visible. */
    for (int g = 0; g < n; g++) {
        const hs_group *x = &t->groups[g];
        if (x->kind != HS_GROUP_COMPUTATION || !open[g])
            continue;
        int ci = hs_computation_index(t->module, x->computation);
        if (ci < 0 || !is_loop_part[ci])
            continue;
        int holding = 0;
        for (int h = g + 1; h < n && holding <= 1; h++)
            holding += t->groups[h].computation == x->computation &&
                       t->groups[h].direct > 0;
        if (holding <= 1)
            open_subtree(t, g, open);
    }
    /* What the caller names, the groups around it, and below it as much
     * as another budget shows (layers.3 of a model with scopes inside its
     * layers shows its instructions, not one box per scope). */
    for (int k = 0; k < e->n; k++)
        for (int g = 0; g < n; g++) {
            if (!hs_groups_match(t, g, e->keys[k], e->lens[k]))
                continue;
            for (int a = g; a >= 0 && !open[a]; a = t->groups[a].parent)
                open[a] = true;
            if (!open_levels(t, g, budget, open))
                return hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
        }
    return HS_OK;
}
