/* scopes.c - groups from op_name scopes. "a/b/c/dot_general" is the
 * operation dot_general in scope a/b/c: one group per scope prefix, nested
 * as the prefixes are. A scope component that ends in a number
 * ("layers_0", "layers.3", "h.11", "block[2]", "0") is one of numbered
 * siblings, gathered under a group named by its stem and '*'
 * ("layers_*"); a component that is itself the whole op_name and
 * numbered ("layers.3", as the model tracer names a layer's own
 * instructions) is a scope too. Chains of scopes that hold nothing but one
 * scope ("jit(train_step)" > "jit(train_step)/jit(main)") are folded into
 * their child, and a stem with one numbered child into that child. */
#include <stdlib.h>
#include <string.h>

#include "groups/groups_internal.h"

/* Fewer scoped instructions than this share (of the non-leaf ones) and the
 * names are "flat": structure decides instead. */
enum { SCOPED_SHARE_PERCENT = 25 };

/* Length of the stem of a numbered component c[0..len) including its
 * separator ("layers." of "layers.3", "block[" of "block[2]"), 0 for
 * "0"; -1 when c is not numbered. */
static int numbered_stem(const char *c, size_t len)
{
    size_t end = len;
    if (end && c[end - 1] == ']')
        end--;
    size_t d = end;
    while (d > 0 && c[d - 1] >= '0' && c[d - 1] <= '9')
        d--;
    if (d == end)
        return -1;
    if (end != len) /* "name[N]" */
        return d > 1 && c[d - 1] == '[' ? (int)d : -1;
    if (d == 0)
        return 0;
    return (c[d - 1] == '.' || c[d - 1] == '_') && d > 1 ? (int)d : -1;
}

/* Number of scope components of op_name (0: none). */
static int scope_depth(const char *op, int *n_components)
{
    int n = 1;
    const char *last = op;
    for (const char *p = op; *p; p++)
        if (*p == '/') {
            n++;
            last = p + 1;
        }
    *n_components = n;
    if (!*op)
        return 0;
    if (n == 1)
        return numbered_stem(op, strlen(op)) >= 0 ? 1 : 0;
    return numbered_stem(last, strlen(last)) >= 0 ? n : n - 1;
}

/* ---- a map from scope text to group ------------------------------------ */

typedef struct scope_map {
    size_t mask;
    const char **keys;
    size_t *lens;
    int *groups;
} scope_map;

static uint64_t text_hash(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t k = 0; k < n; k++)
        h = (h ^ (unsigned char)s[k]) * 1099511628211ull;
    return hs__gmix(h);
}

/* The slot of key: found (groups[slot] >= 0) or empty. */
static size_t map_slot(const scope_map *m, const char *key, size_t len)
{
    size_t k = (size_t)text_hash(key, len) & m->mask;
    while (m->groups[k] >= 0 &&
           !(m->lens[k] == len && memcmp(m->keys[k], key, len) == 0))
        k = (k + 1) & m->mask;
    return k;
}

typedef struct scoper {
    hs__gbuild *b;
    const hs__gcomp *gc;
    scope_map map;
    int first; /* first group this computation adds */
} scoper;

/* The group of scope text key[0..len) under parent: found or created.
 * stem: a group of numbered siblings (a repeat candidate). */
static int scope_group(scoper *s, const char *key, size_t len, int parent,
                       bool stem)
{
    size_t slot = map_slot(&s->map, key, len);
    if (s->map.groups[slot] >= 0)
        return s->map.groups[slot];
    hs__gbuild *b = s->b;
    char *local = hs_arena_strndup(b->arena, key, len);
    if (!local)
        return -1;
    const char *label = strrchr(local, '/');
    int g = hs__group_add(b, HS_GROUP_OP_NAME, parent, local, s->gc->prefix,
                          label ? label + 1 : local, s->gc->c);
    if (g < 0)
        return -1;
    if (stem)
        b->g[g].repeat = -1;
    s->map.keys[slot] = b->g[g].local;
    s->map.lens[slot] = len;
    s->map.groups[slot] = g;
    return g;
}

/* The innermost group of op_name (creating the path to it). */
static int place(scoper *s, const char *op, int depth)
{
    hs__gbuild *b = s->b;
    int parent = s->gc->group;
    const char *comp = op;
    char stem_key[512];
    for (int j = 0; j < depth; j++) {
        const char *end = strchr(comp, '/');
        size_t clen = end ? (size_t)(end - comp) : strlen(comp);
        int stem = numbered_stem(comp, clen);
        if (stem >= 0 && (size_t)(comp - op) + (size_t)stem + 3 < sizeof stem_key) {
            size_t klen = (size_t)(comp - op) + (size_t)stem;
            memcpy(stem_key, op, klen);
            stem_key[klen++] = '*';
            if (comp[clen - 1] == ']')
                stem_key[klen++] = ']'; /* "Block[*]" */
            parent = scope_group(s, stem_key, klen, parent, true);
            if (parent < 0)
                return -1;
        }
        parent = scope_group(s, op, (size_t)(comp - op) + clen, parent, false);
        if (parent < 0)
            return -1;
        (void)b;
        comp = end ? end + 1 : comp + clen;
    }
    return parent;
}

/* Folds away groups [first, b->n) that add nothing: a scope with no
 * instructions of its own and one child, a stem with one child. Their
 * instructions and children move up; indices are compacted. */
static hs_status fold_chains(hs__gbuild *b, const hs__gcomp *gc, int first)
{
    int n = b->n - first;
    if (n <= 0)
        return HS_OK;
    int *kids = calloc((size_t)n, sizeof *kids);
    int *direct = calloc((size_t)n, sizeof *direct);
    int *map = malloc(sizeof *map * (size_t)n);
    if (!kids || !direct || !map) {
        free(kids);
        free(direct);
        free(map);
        return hs_error_set(b->err, HS_ERR_NOMEM, "out of host memory");
    }
    for (int k = first; k < b->n; k++)
        if (b->g[k].parent >= first)
            kids[b->g[k].parent - first]++;
    for (int p = 0; p < gc->n; p++) {
        int g = b->group_of[gc->c->instrs[p]->id];
        if (g >= first)
            direct[g - first]++;
    }
    /* map[k]: the group that replaces k (itself when kept). Parents come
     * before children, so a parent's replacement is known first. */
    for (int k = 0; k < n; k++) {
        hs_group *g = &b->g[first + k];
        bool stem = g->repeat == -1;
        /* A numbered sibling keeps its name ("layers.3" with everything in
         * "layers.3/block" stays layers.3). */
        bool item = g->parent >= first && b->g[g->parent].repeat == -1;
        bool drop = kids[k] == 1 && (stem || (direct[k] == 0 && !item));
        map[k] = drop ? -1 : first + k;
    }
    /* A dropped group is replaced by its nearest kept ancestor for its
     * instructions, and its children hang from that ancestor. */
    int *up = malloc(sizeof *up * (size_t)n);
    if (!up) {
        free(kids);
        free(direct);
        free(map);
        return hs_error_set(b->err, HS_ERR_NOMEM, "out of host memory");
    }
    for (int k = 0; k < n; k++) {
        int par = b->g[first + k].parent;
        int kept_par = par >= first ? up[par - first] : par;
        up[k] = map[k] >= 0 ? first + k : kept_par;
        b->g[first + k].parent = kept_par;
    }
    /* Compact. */
    int w = first;
    int *newidx = map; /* reuse: old -> new index of kept groups */
    for (int k = 0; k < n; k++) {
        if (up[k] != first + k) {
            newidx[k] = -1;
            continue;
        }
        newidx[k] = w;
        b->g[w++] = b->g[first + k];
    }
    for (int k = first; k < w; k++)
        if (b->g[k].parent >= first)
            b->g[k].parent = newidx[b->g[k].parent - first];
    for (int p = 0; p < gc->n; p++) {
        int id = gc->c->instrs[p]->id;
        int g = b->group_of[id];
        if (g < first)
            continue;
        int u = up[g - first];
        b->group_of[id] = u >= first ? newidx[u - first] : u;
    }
    b->n = w;
    free(kids);
    free(direct);
    free(map);
    free(up);
    return HS_OK;
}

hs_status hs__groups_scopes(hs__gbuild *b, const hs__gcomp *gc, bool *used)
{
    const hs_computation *c = gc->c;
    *used = false;
    int nonleaf = 0, scoped = 0;
    size_t keys = 0;
    for (int p = 0; p < gc->n; p++) {
        const hs_instruction *i = c->instrs[p];
        int ncomp = 0;
        int depth = i->op_name ? scope_depth(i->op_name, &ncomp) : 0;
        keys += 2 * (size_t)depth;
        if (gc->leaf[p])
            continue;
        nonleaf++;
        scoped += depth > 0;
    }
    if (scoped == 0 || (int64_t)scoped * 100 < (int64_t)nonleaf * SCOPED_SHARE_PERCENT)
        return HS_OK;
    scoper s = {.b = b, .gc = gc, .first = b->n};
    size_t cap = 16;
    while (cap < keys * 2 + 2)
        cap *= 2;
    s.map.mask = cap - 1;
    s.map.keys = calloc(cap, sizeof *s.map.keys);
    s.map.lens = calloc(cap, sizeof *s.map.lens);
    s.map.groups = malloc(sizeof *s.map.groups * cap);
    hs_status st = HS_OK;
    if (!s.map.keys || !s.map.lens || !s.map.groups) {
        st = hs_error_set(b->err, HS_ERR_NOMEM, "out of host memory");
        goto done;
    }
    memset(s.map.groups, 0xff, sizeof *s.map.groups * cap);
    for (int p = 0; p < gc->n; p++) {
        const hs_instruction *i = c->instrs[p];
        int ncomp = 0;
        int depth = i->op_name ? scope_depth(i->op_name, &ncomp) : 0;
        if (depth == 0)
            continue;
        int g = place(&s, i->op_name, depth);
        if (g < 0) {
            st = HS_ERR_NOMEM;
            goto done;
        }
        b->group_of[i->id] = g;
    }
    st = fold_chains(b, gc, s.first);
    *used = st == HS_OK;
done:
    free(s.map.keys);
    free(s.map.lens);
    free(s.map.groups);
    return st;
}
