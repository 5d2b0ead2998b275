/* view.c - the view graph: which nodes, clusters and edges a rendering of a
 * module shows. The DOT and JSON writers print the same view, so both
 * forms always agree.
 *
 * Computations are visited breadth-first from the top one (the entry, or
 * the one the caller names); a called computation that is drawn becomes a
 * cluster nested in its caller's. Reducers (to_apply of reduce, map, sort,
 * scatter, all-reduce) are not drawn: the caller's label names them, as in
 * XLA. Within a computation, instructions whose op_name carries a layer key
 * are drawn as one node per (computation, layer) unless the layer is
 * expanded. Loop instructions (while, call, conditional) are never folded
 * into a layer, and a loop body that is itself one layer (a scan body) is
 * drawn open, so a scan stays visible as its cluster. The walk stops as
 * soon as the node budget is exceeded: a huge module costs no more than
 * the budget. */
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_sharding.h"
#include "render/render_internal.h"

/* ---- a set of indices with caller-defined hashing ---------------------- */

typedef struct index_set {
    int *slots; /* -1 empty */
    size_t cap; /* power of two */
    size_t n;
} index_set;

static bool set_init(index_set *s, size_t expected)
{
    size_t cap = 64;
    while (cap < expected * 2)
        cap *= 2;
    s->slots = malloc(sizeof *s->slots * cap);
    if (!s->slots)
        return false;
    memset(s->slots, 0xff, sizeof *s->slots * cap);
    s->cap = cap;
    s->n = 0;
    return true;
}

static void set_free(index_set *s)
{
    free(s->slots);
    s->slots = NULL;
}

typedef uint64_t (*hash_fn)(const void *ctx, int index);
typedef bool (*equal_fn)(const void *ctx, int index, const void *probe);

static bool set_grow(index_set *s, const void *ctx, hash_fn hash)
{
    index_set bigger;
    if (!set_init(&bigger, s->cap))
        return false;
    for (size_t k = 0; k < s->cap; k++) {
        if (s->slots[k] < 0)
            continue;
        size_t h = (size_t)hash(ctx, s->slots[k]) & (bigger.cap - 1);
        while (bigger.slots[h] >= 0)
            h = (h + 1) & (bigger.cap - 1);
        bigger.slots[h] = s->slots[k];
    }
    bigger.n = s->n;
    set_free(s);
    *s = bigger;
    return true;
}

/* Finds the index equal to probe (hash h); returns it, or -1 with *slot set
 * to where it would go. */
static int set_find(const index_set *s, uint64_t h, const void *ctx,
                    equal_fn eq, const void *probe, size_t *slot)
{
    size_t k = (size_t)h & (s->cap - 1);
    while (s->slots[k] >= 0) {
        if (eq(ctx, s->slots[k], probe))
            return s->slots[k];
        k = (k + 1) & (s->cap - 1);
    }
    *slot = k;
    return -1;
}

static uint64_t mix(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* ---- the builder ------------------------------------------------------- */

typedef struct call_record {
    int cluster;
    const hs_instruction *caller;
} call_record;

typedef struct builder {
    hs_view *v;
    const hs_render_options *o;
    hs_expand expand;
    int64_t max_nodes, max_edges;
    hs_group_tree *tree;
    bool *open;          /* per group: drawn open */
    int *node_of_group;  /* per group: its node when closed, -1 */
    /* per instruction id */
    int n_ids;
    int *node_of;
    const hs_instruction **instr_of;
    /* per computation (index into module->comps) */
    int *cluster_of; /* -1 not drawn, -2 the top computation */
    bool *is_loop_part;
    /* computations to visit, in order */
    int n_queue, *queue;
    int n_calls, cap_calls;
    call_record *calls;
    index_set edges;
    bool over_budget;
    hs_error *err;
} builder;

bool hs__grow_array(void **items, int n, int *cap, size_t size)
{
    if (n < *cap)
        return true;
    int new_cap = *cap ? *cap * 2 : 64;
    void *p = realloc(*items, size * (size_t)new_cap);
    if (!p)
        return false;
    *items = p;
    *cap = new_cap;
    return true;
}

static hs_status nomem(builder *b)
{
    return hs_error_set(b->err, HS_ERR_NOMEM,
                        "out of host memory while rendering");
}

static const char *encoded_id(hs_arena *a, const char *prefix,
                              const char *name, const char *suffix_name)
{
    hs_buf t = {0};
    hs__buf_puts(&t, prefix);
    hs__id_encode(&t, name ? name : "");
    if (suffix_name) {
        hs__buf_putc(&t, '@');
        hs__id_encode(&t, suffix_name);
    }
    const char *s = t.oom ? NULL : hs_arena_strdup(a, t.data ? t.data : "");
    hs__buf_free(&t);
    return s;
}

/* Adds a node; returns its index, or -1 (error set) on OOM / budget. */
static int add_node(builder *b, const hs_vnode *n)
{
    hs_view *v = b->v;
    if (v->n_nodes >= b->max_nodes) {
        b->over_budget = true;
        return -1;
    }
    if (!hs__grow_array((void **)&v->nodes, v->n_nodes, &v->cap_nodes,
                    sizeof *v->nodes)) {
        nomem(b);
        return -1;
    }
    v->nodes[v->n_nodes] = *n;
    return v->n_nodes++;
}

static void map_instr(builder *b, const hs_instruction *i, int node)
{
    if (i->id >= 0 && i->id < b->n_ids) {
        b->node_of[i->id] = node;
        b->instr_of[i->id] = i;
    }
}

static int node_of(const builder *b, const hs_instruction *i)
{
    if (!i || i->id < 0 || i->id >= b->n_ids || b->instr_of[i->id] != i)
        return -1;
    return b->node_of[i->id];
}

/* Adds i's output bytes to node n, and what one device holds of them when
 * i carries a sharding. An annotation that does not fit its shape is
 * drawn as none: the graph shows the module as written, and the sharding
 * what-if reports the error. */
static void count_bytes(const hs_view *v, hs_vnode *n, const hs_instruction *i)
{
    int64_t bytes = hs_shape_total_bytes(&i->shape);
    int64_t local = bytes, global = bytes;
    hs_shape dev, whole;
    if (i->sharding &&
        hs_instruction_sharded_shapes(i, v->partitioned, v->arena, &dev,
                                      &whole, NULL) == HS_OK) {
        local = hs_shape_total_bytes(&dev);
        global = hs_shape_total_bytes(&whole);
        n->sharded = true;
    }
    n->bytes = hs_sat_add(n->bytes, bytes);
    n->per_device_bytes = hs_sat_add(n->per_device_bytes, local);
    n->global_bytes = hs_sat_add(n->global_bytes, global);
    hs__overlay_count(v, n, i);
}

/* ---- groups: one node per closed group ----------------------------------- */

/* The node standing for closed group g (found, or created). -1 on error. */
static int group_node(builder *b, int g, int cluster)
{
    hs_view *v = b->v;
    if (b->node_of_group[g] >= 0)
        return b->node_of_group[g];
    const hs_group *x = &b->tree->groups[g];
    const hs_computation *c = x->computation;
    const char *id = encoded_id(v->arena, "layer:", x->local,
                                c == v->top ? NULL : c->name);
    if (!id) {
        nomem(b);
        return -1;
    }
    hs_vnode n = {.id = id, .comp = c, .layer = x->local,
                  .layer_len = strlen(x->local), .label = x->label,
                  .group = g, .cluster = cluster};
    int idx = add_node(b, &n);
    if (idx < 0)
        return -1;
    b->node_of_group[g] = idx;
    v->layers_collapsed++;
    return idx;
}

/* The outermost closed group holding instruction i below its
 * computation's group, or -1 when every group on the way is open. */
static int closed_group_of(const builder *b, const hs_instruction *i)
{
    const hs_group_tree *t = b->tree;
    if (i->id < 0 || i->id >= t->n_ids)
        return -1;
    int closed = -1;
    for (int g = t->group_of[i->id];
         g >= 0 && t->groups[g].kind != HS_GROUP_COMPUTATION;
         g = t->groups[g].parent)
        if (!b->open[g])
            closed = g;
    return closed;
}

/* ---- which calls are drawn --------------------------------------------- */

static bool never_folded(const hs_instruction *i)
{
    return i->opcode == HS_OP_WHILE || i->opcode == HS_OP_CALL ||
           i->opcode == HS_OP_CONDITIONAL;
}

static hs_status add_call(builder *b, int cluster, const hs_instruction *caller)
{
    if (!hs__grow_array((void **)&b->calls, b->n_calls, &b->cap_calls,
                    sizeof *b->calls))
        return nomem(b);
    b->calls[b->n_calls++] = (call_record){cluster, caller};
    return HS_OK;
}

/* The cluster of called computation c for caller i: existing, or a new one
 * queued for a visit. -1 when c is not in the module. */
static int cluster_for(builder *b, const hs_computation *c, int parent,
                       const hs_instruction *caller, hs_status *st)
{
    hs_view *v = b->v;
    int ci = hs_computation_index(v->module, c);
    *st = HS_OK;
    if (ci < 0)
        return -1;
    if (b->cluster_of[ci] == -2)
        return -1; /* the top computation calls itself: no cluster */
    if (b->cluster_of[ci] >= 0)
        return b->cluster_of[ci];
    int cg = b->tree->computation_group[ci];
    if (cg >= 0 && !b->open[cg])
        return -1; /* closed: the caller's node stands for it */
    if (!hs__grow_array((void **)&v->clusters, v->n_clusters, &v->cap_clusters,
                    sizeof *v->clusters)) {
        *st = nomem(b);
        return -1;
    }
    const char *id = encoded_id(v->arena, "cluster_", c->name, NULL);
    if (!id) {
        *st = nomem(b);
        return -1;
    }
    int k = v->n_clusters++;
    v->clusters[k] = (hs_vcluster){.id = id, .comp = c, .caller = caller,
                                   .parent = parent};
    b->cluster_of[ci] = k;
    b->queue[b->n_queue++] = ci;
    return k;
}

/* Adds the nodes of computation ci (drawn in cluster, -1 = top level) and
 * queues the computations it shows. */
static hs_status visit(builder *b, int ci, int cluster)
{
    hs_view *v = b->v;
    const hs_computation *c = v->module->comps[ci];
    for (int k = 0; k < c->n_instrs; k++) {
        const hs_instruction *i = c->instrs[k];
        int closed = never_folded(i) ? -1 : closed_group_of(b, i);
        v->instructions++;
        if (closed >= 0) {
            int g = group_node(b, closed, cluster);
            if (g < 0)
                return b->over_budget ? HS_ERR_LIMIT : HS_ERR_NOMEM;
            hs_vnode *n = &v->nodes[g];
            n->collapsed_count++;
            count_bytes(v, n, i);
            n->is_root |= c->root == i;
            map_instr(b, i, g);
            continue;
        }
        const char *id = encoded_id(v->arena, "", i->name, NULL);
        if (!id)
            return nomem(b);
        size_t own = hs__layer_key(i->op_name);
        hs_vnode n = {.id = id, .instr = i, .comp = c,
                      .layer = own ? i->op_name : NULL, .layer_len = own,
                      .group = i->id >= 0 && i->id < b->tree->n_ids
                                   ? b->tree->group_of[i->id] : -1,
                      .cluster = cluster,
                      .is_root = c->root == i};
        count_bytes(v, &n, i);
        int idx = add_node(b, &n);
        if (idx < 0)
            return b->over_budget ? HS_ERR_LIMIT : HS_ERR_NOMEM;
        map_instr(b, i, idx);
        if (!hs_groups_nests_called(i))
            continue;
        for (int j = 0; j < i->n_called; j++) {
            hs_status st;
            int cl = cluster_for(b, i->called[j], cluster, i, &st);
            if (st != HS_OK)
                return st;
            if (cl >= 0 && (st = add_call(b, cl, i)) != HS_OK)
                return st;
        }
    }
    return HS_OK;
}

/* ---- a neighbourhood --------------------------------------------------- */

static const hs_instruction *find_instruction(const hs_module *m,
                                              const char *name)
{
    for (int c = 0; c < m->n_comps; c++)
        for (int k = 0; k < m->comps[c]->n_instrs; k++)
            if (strcmp(m->comps[c]->instrs[k]->name, name) == 0)
                return m->comps[c]->instrs[k];
    return NULL;
}

/* Draws the instructions of c within `hops` operand or user edges of
 * centre, open and without clusters: a window into a computation too large
 * to draw whole (XLA's dumper offers the same). Breadth-first over
 * positions, with users gathered once: linear in c. */
static hs_status visit_around(builder *b, const hs_computation *c,
                              const hs_instruction *centre, int hops)
{
    hs_view *v = b->v;
    int n = c->n_instrs;
    int *pos = malloc(sizeof *pos * ((size_t)b->n_ids + 1));
    int *dist = malloc(sizeof *dist * ((size_t)n + 1));
    int *start = calloc((size_t)n + 2, sizeof *start);
    int *queue = malloc(sizeof *queue * ((size_t)n + 1));
    int edges = 0;
    for (int k = 0; k < n; k++)
        edges += c->instrs[k]->n_operands;
    int *users = malloc(sizeof *users * ((size_t)edges + 1));
    hs_status st = HS_OK;
    if (!pos || !dist || !start || !queue || !users) {
        st = nomem(b);
        goto done;
    }
    for (int k = 0; k < n; k++) {
        pos[c->instrs[k]->id] = k;
        dist[k] = -1;
    }
    /* users as CSR: start[q+1] counts, then prefix sums */
    for (int k = 0; k < n; k++)
        for (int o = 0; o < c->instrs[k]->n_operands; o++)
            if (c->instrs[k]->operands[o]->parent == c)
                start[pos[c->instrs[k]->operands[o]->id] + 2]++;
    for (int k = 0; k < n; k++)
        start[k + 2] += start[k + 1];
    for (int k = 0; k < n; k++)
        for (int o = 0; o < c->instrs[k]->n_operands; o++)
            if (c->instrs[k]->operands[o]->parent == c)
                users[start[pos[c->instrs[k]->operands[o]->id] + 1]++] = k;
    int head = 0, tail = 0;
    dist[pos[centre->id]] = 0;
    queue[tail++] = pos[centre->id];
    while (head < tail) {
        int p = queue[head++];
        if (dist[p] >= hops)
            continue;
        const hs_instruction *i = c->instrs[p];
        for (int o = 0; o < i->n_operands; o++) {
            if (i->operands[o]->parent != c)
                continue;
            int q = pos[i->operands[o]->id];
            if (dist[q] < 0) {
                dist[q] = dist[p] + 1;
                queue[tail++] = q;
            }
        }
        for (int u = start[p]; u < start[p + 1]; u++) {
            int q = users[u];
            if (dist[q] < 0) {
                dist[q] = dist[p] + 1;
                queue[tail++] = q;
            }
        }
    }
    for (int k = 0; k < n && st == HS_OK; k++) {
        if (dist[k] < 0)
            continue;
        const hs_instruction *i = c->instrs[k];
        const char *id = encoded_id(v->arena, "", i->name, NULL);
        if (!id) {
            st = nomem(b);
            break;
        }
        size_t own = hs__layer_key(i->op_name);
        hs_vnode node = {.id = id, .instr = i, .comp = c,
                         .layer = own ? i->op_name : NULL, .layer_len = own,
                         .group = b->tree->group_of[i->id], .cluster = -1,
                         .is_root = c->root == i};
        count_bytes(v, &node, i);
        int idx = add_node(b, &node);
        if (idx < 0) {
            st = b->over_budget ? HS_ERR_LIMIT : HS_ERR_NOMEM;
            break;
        }
        map_instr(b, i, idx);
        v->instructions++;
    }
done:
    free(pos);
    free(dist);
    free(start);
    free(queue);
    free(users);
    return st;
}

/* ---- edges ------------------------------------------------------------- */

static uint64_t edge_hash_parts(int from, int to, int opidx)
{
    return mix(((uint64_t)(uint32_t)from << 32 | (uint32_t)to) ^
               mix((uint64_t)(int64_t)opidx));
}

static uint64_t edge_hash(const void *ctx, int index)
{
    const hs_vedge *e = &((const hs_view *)ctx)->edges[index];
    int key = e->kind == HS_VEDGE_CALL ? -2 - e->ltail : e->operand_index;
    return edge_hash_parts(e->from, e->to, key);
}

static bool edge_equal(const void *ctx, int index, const void *probe)
{
    const hs_vedge *e = &((const hs_view *)ctx)->edges[index];
    const hs_vedge *p = probe;
    return e->from == p->from && e->to == p->to && e->kind == p->kind &&
           e->operand_index == p->operand_index && e->ltail == p->ltail;
}

static hs_status add_edge(builder *b, hs_vedge e)
{
    hs_view *v = b->v;
    if (e.from < 0 || e.to < 0 || e.from == e.to)
        return HS_OK;
    int key = e.kind == HS_VEDGE_CALL ? -2 - e.ltail : e.operand_index;
    size_t slot;
    int found = set_find(&b->edges, edge_hash_parts(e.from, e.to, key), v,
                         edge_equal, &e, &slot);
    if (found >= 0) {
        v->edges[found].operands++;
        return HS_OK;
    }
    e.operands = 1;
    if (v->n_edges >= b->max_edges) {
        b->over_budget = true;
        return HS_ERR_LIMIT;
    }
    if (!hs__grow_array((void **)&v->edges, v->n_edges, &v->cap_edges,
                    sizeof *v->edges))
        return nomem(b);
    v->edges[v->n_edges] = e;
    b->edges.slots[slot] = v->n_edges++;
    b->edges.n++;
    if (b->edges.n * 2 > b->edges.cap && !set_grow(&b->edges, v, edge_hash))
        return nomem(b);
    return HS_OK;
}

static hs_status add_edges(builder *b)
{
    hs_view *v = b->v;
    for (int q = 0; q < b->n_queue; q++) {
        const hs_computation *c = v->module->comps[b->queue[q]];
        for (int k = 0; k < c->n_instrs; k++) {
            const hs_instruction *i = c->instrs[k];
            int to = node_of(b, i);
            if (to < 0)
                continue;
            bool numbered = v->nodes[to].instr && i->n_operands > 1;
            for (int o = 0; o < i->n_operands; o++) {
                int from = node_of(b, i->operands[o]);
                /* Operand slots are numbered between two instructions. A
                 * closed group feeding many operands of one user (a layer
                 * run into the root tuple: 73 of Mixtral's) is one edge
                 * that counts them, not one edge per slot. */
                bool slot = numbered && from >= 0 && v->nodes[from].instr;
                hs_vedge e = {from, to, slot ? o : -1, HS_VEDGE_OPERAND, -1, 1};
                hs_status st = add_edge(b, e);
                if (st != HS_OK)
                    return st;
            }
        }
    }
    for (int k = 0; k < b->n_calls; k++) {
        const hs_vcluster *cl = &v->clusters[b->calls[k].cluster];
        hs_vedge e = {node_of(b, cl->comp->root),
                      node_of(b, b->calls[k].caller), -1, HS_VEDGE_CALL,
                      b->calls[k].cluster, 1};
        hs_status st = add_edge(b, e);
        if (st != HS_OK)
            return st;
    }
    return HS_OK;
}

/* ---- membership lists for the writers ---------------------------------- */

static hs_status index_members(hs_view *v)
{
    int *n_nodes = calloc((size_t)v->n_clusters + 1, sizeof *n_nodes);
    int *n_kids = calloc((size_t)v->n_clusters + 1, sizeof *n_kids);
    hs_status st = HS_OK;
    if (!n_nodes || !n_kids) {
        st = HS_ERR_NOMEM;
        goto done;
    }
    /* slot 0 is the top level, slot c+1 cluster c */
    for (int k = 0; k < v->n_nodes; k++)
        n_nodes[v->nodes[k].cluster + 1]++;
    for (int k = 0; k < v->n_clusters; k++)
        n_kids[v->clusters[k].parent + 1]++;
    for (int s = 0; s <= v->n_clusters; s++) {
        int *nodes = hs_arena_alloc(v->arena, sizeof(int) * (size_t)(n_nodes[s] + 1));
        int *kids = hs_arena_alloc(v->arena, sizeof(int) * (size_t)(n_kids[s] + 1));
        if (!nodes || !kids) {
            st = HS_ERR_NOMEM;
            goto done;
        }
        if (s == 0) {
            v->top_nodes = nodes;
            v->top_clusters = kids;
        } else {
            v->clusters[s - 1].nodes = nodes;
            v->clusters[s - 1].children = kids;
        }
    }
    for (int k = 0; k < v->n_nodes; k++) {
        int c = v->nodes[k].cluster;
        if (c < 0)
            v->top_nodes[v->n_top_nodes++] = k;
        else
            v->clusters[c].nodes[v->clusters[c].n_nodes++] = k;
    }
    for (int k = 0; k < v->n_clusters; k++) {
        int p = v->clusters[k].parent;
        if (p < 0)
            v->top_clusters[v->n_top_clusters++] = k;
        else
            v->clusters[p].children[v->clusters[p].n_children++] = k;
    }
done:
    free(n_nodes);
    free(n_kids);
    return st;
}

/* ---- entry point ------------------------------------------------------- */

static hs_status limit_error(builder *b)
{
    const hs_view *v = b->v;
    int64_t total = hs_module_instruction_count(v->module);
    if (v->n_edges >= b->max_edges)
        return hs_error_set(
            b->err, HS_ERR_LIMIT,
            "graph too large to render: more than %lld edges in this view "
            "(limit %lld for %lld nodes); render one computation "
            "(computation=NAME) or collapse layers (drop expand=)",
            (long long)b->max_edges, (long long)b->max_edges,
            (long long)b->max_nodes);
    return hs_error_set(
        b->err, HS_ERR_LIMIT,
        "graph too large to render: more than %lld nodes in this view (the "
        "module has %lld instructions); collapse layers (drop expand= or "
        "expand fewer layers), render one computation (computation=NAME), or "
        "raise the render node limit",
        (long long)b->max_nodes, (long long)total);
}

static hs_status build(builder *b, const hs_module *m,
                       const hs_render_options *o)
{
    hs_view *v = b->v;
    hs_status st = hs__expand_parse(v->arena, o->expand, &b->expand, b->err);
    if (st != HS_OK)
        return st;
    const hs_instruction *centre = NULL;
    int hops = o->hops > 0 ? o->hops : HS_RENDER_DEFAULT_HOPS;
    if (o->around) {
        centre = find_instruction(m, o->around);
        if (!centre) {
            hs_buf shown = {0};
            hs__text_clean(&shown, o->around, 64);
            hs_error_set(b->err, HS_ERR_INVALID,
                         "around: no instruction named '%s' in module",
                         shown.data ? shown.data : "");
            hs__buf_free(&shown);
            return HS_ERR_INVALID;
        }
        if (hops > HS_RENDER_MAX_HOPS)
            return hs_error_set(b->err, HS_ERR_INVALID,
                                "hops: %d is more than %d", hops,
                                HS_RENDER_MAX_HOPS);
        v->top = centre->parent;
    } else if (o->computation) {
        v->top = hs_module_find_computation(m, o->computation);
        if (!v->top) {
            hs_buf shown = {0};
            hs__text_clean(&shown, o->computation, 64);
            hs_error_set(b->err, HS_ERR_INVALID,
                         "computation: no computation named '%s' in module",
                         shown.data ? shown.data : "");
            hs__buf_free(&shown);
            return HS_ERR_INVALID;
        }
    } else {
        v->top = m->entry;
        if (!v->top)
            return hs_error_set(b->err, HS_ERR_INVALID,
                                "module has no entry computation");
    }
    int top = hs_computation_index(m, v->top);
    if (top < 0)
        return hs_error_set(b->err, HS_ERR_INVALID,
                            "computation is not part of the module");

    b->n_ids = 0;
    for (int c = 0; c < m->n_comps; c++)
        for (int k = 0; k < m->comps[c]->n_instrs; k++)
            if (m->comps[c]->instrs[k]->id >= b->n_ids)
                b->n_ids = m->comps[c]->instrs[k]->id + 1;
    size_t nc = (size_t)m->n_comps;
    b->node_of = malloc(sizeof *b->node_of * ((size_t)b->n_ids + 1));
    b->instr_of = calloc((size_t)b->n_ids + 1, sizeof *b->instr_of);
    b->cluster_of = malloc(sizeof *b->cluster_of * (nc + 1));
    b->is_loop_part = calloc(nc + 1, sizeof *b->is_loop_part);
    b->queue = malloc(sizeof *b->queue * (nc + 1));
    if (!b->node_of || !b->instr_of || !b->cluster_of || !b->is_loop_part ||
        !b->queue || !set_init(&b->edges, 256))
        return nomem(b);
    for (size_t c = 0; c < nc; c++)
        b->cluster_of[c] = -1;
    for (int c = 0; c < m->n_comps; c++)
        for (int k = 0; k < m->comps[c]->n_instrs; k++) {
            const hs_instruction *i = m->comps[c]->instrs[k];
            if (i->opcode != HS_OP_WHILE)
                continue;
            for (int j = 0; j < i->n_called && j < 2; j++) {
                int ci = hs_computation_index(m, i->called[j]);
                if (ci >= 0)
                    b->is_loop_part[ci] = true;
            }
        }

    st = hs_groups_build(m, v->top, &b->tree, b->err);
    if (st != HS_OK)
        return st;
    v->tree = b->tree;
    int ng = b->tree->n_groups;
    b->open = hs_arena_alloc(v->arena, sizeof *b->open * (size_t)(ng + 1));
    b->node_of_group = malloc(sizeof *b->node_of_group * (size_t)(ng + 1));
    if (!b->open || !b->node_of_group)
        return nomem(b);
    v->open = b->open;
    for (int g = 0; g < ng; g++)
        b->node_of_group[g] = -1;
    int64_t budget = o->budget > 0 ? o->budget : HS_RENDER_DEFAULT_BUDGET;
    st = hs__groups_open(b->tree, &b->expand, budget, b->is_loop_part,
                         b->open, b->err);
    if (st != HS_OK)
        return st;

    b->cluster_of[top] = -2;
    b->queue[b->n_queue++] = top;
    if (centre) {
        st = visit_around(b, v->top, centre, hops);
        if (st == HS_OK)
            st = add_edges(b);
        if (st != HS_OK)
            return b->over_budget ? limit_error(b) : st;
        return index_members(v) != HS_OK ? nomem(b) : HS_OK;
    }
    for (int q = 0; q < b->n_queue; q++) {
        int ci = b->queue[q];
        int cluster = ci == top ? -1 : b->cluster_of[ci];
        st = visit(b, ci, cluster);
        if (st != HS_OK)
            return b->over_budget ? limit_error(b) : st;
    }
    st = add_edges(b);
    if (st != HS_OK)
        return b->over_budget ? limit_error(b) : st;
    if (index_members(v) != HS_OK)
        return nomem(b);
    return HS_OK;
}

hs_status hs__view_build(const hs_module *m, const hs_render_options *o,
                         hs_view *v, hs_error *err)
{
    static const hs_render_options defaults = {0};
    if (!o)
        o = &defaults;
    memset(v, 0, sizeof *v);
    if (!m)
        return hs_error_set(err, HS_ERR_INVALID, "no module to render");
    v->module = m;
    v->arena = hs_arena_new(0);
    if (!v->arena)
        return hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
    v->title = o->title ? o->title : m->name;
    v->partitioned = hs_module_is_partitioned(m);
    v->overlay = o->overlay;
    v->costs = o->costs;
    v->n_costs = o->costs ? o->n_costs : 0;
    hs_status ost = hs__overlay_check(o, err);
    if (ost != HS_OK) {
        hs__view_free(v);
        return ost;
    }
    builder b = {.v = v, .o = o, .err = err};
    b.max_nodes = o->max_nodes > 0 ? o->max_nodes : HS_RENDER_DEFAULT_MAX_NODES;
    if (b.max_nodes > INT32_MAX / HS_RENDER_EDGES_PER_NODE)
        b.max_nodes = INT32_MAX / HS_RENDER_EDGES_PER_NODE;
    b.max_edges = b.max_nodes * HS_RENDER_EDGES_PER_NODE;
    hs_status st = build(&b, m, o);
    free(b.node_of);
    free(b.instr_of);
    free(b.cluster_of);
    free(b.is_loop_part);
    free(b.node_of_group);
    free(b.queue);
    free(b.calls);
    set_free(&b.edges);
    if (st != HS_OK)
        hs__view_free(v);
    else
        hs__overlay_scale(v);
    return st;
}

void hs__view_free(hs_view *v)
{
    hs_groups_free((hs_group_tree *)v->tree);
    free(v->nodes);
    free(v->edges);
    free(v->clusters);
    hs_arena_free(v->arena);
    memset(v, 0, sizeof *v);
}
