/* compose.c - a view drawn by composing small layouts instead of one large
 * one.
 *
 * Graphviz's dot is superlinear: the ranks of a whole module and the
 * virtual nodes of its long edges (a mask or the weights' input feeding
 * every layer) make crossing minimisation cost minutes on Mixtral's 276
 * boxes. Drawn by composition, each box - the top level, every open group,
 * every called computation drawn - is laid out on its own with its child
 * boxes as single nodes of their laid-out size, and edges that cross a
 * border are cut there: in the parent they end at the box, inside it they
 * start from an entry port (or end at an exit port). A box's layout then
 * sees only its own items and the edges among them, deduplicated, so the
 * cost is the sum of small layouts, never the square of the module.
 *
 * Each box is laid out from a canonical DOT: items named by position,
 * sizes fixed from their labels (rounded up, so that layers whose names
 * differ in a digit still match), no text. Identical layers give the same
 * DOT, and compose_cache.c keeps layouts by it: a layer is laid out once,
 * and expanding one more layer lays out that layer and the (small) boxes
 * above it. The boxes are then placed from the top down and the whole
 * drawing is written as SVG here (svg.c), or as pinned DOT (positions and
 * splines given) for HS_RENDER_ENGINE_PINNED, which only draws, for other
 * formats and with HS_COMPOSE_SVG=graphviz. */
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render/compose_internal.h"
#include "render/render_internal.h"

/* Points (1/72 inch) around a box's content, and above it for its label. */
#define BOX_PAD 8.0
#define BOX_LABEL_LINE 15.0
#define BOX_FONT_SIZE 11
/* Label sizes: Graphviz's default node box (0.75 x 0.5 inch) at least; a
 * character of 10-point DejaVu Sans (what Helvetica resolves to) is 5.3
 * to 6 points for the names, digits and shapes labels hold. Widths are
 * rounded up to WIDTH_STEP so that names differing in a digit give the
 * same size, and the same canonical DOT. */
#define CHAR_W 6.0
#define LINE_H 12.5
#define WIDTH_STEP 9.0

enum { PORT_IN = -1, PORT_OUT = -2 };
/* Items beyond which a box is laid out with cheaper crossing minimisation
 * (piece_dot); HS_COMPOSE_LARGE_BOX overrides it (bench_layout_scale
 * measures dot's defaults against it in one run). */
#define LARGE_BOX_ITEMS 200
/* A large box of nodes only is cut into parts of about this many. */
#define PART_ITEMS 80

typedef struct sub {
    int box, tail, head; /* items of box, or PORT_IN / PORT_OUT */
    int edge;            /* the piece's edge, after layout */
} sub;

typedef struct box {
    int parent, depth;
    int group;   /* an open group, or -1 */
    int cluster; /* a view cluster (called computation), or -1 */
    int n_items, cap_items;
    int *items; /* node k >= 0, box b as -1 - b */
    int slot;   /* its item index in the parent */
    int label_lines;
    double w, h;   /* outer size */
    double ox, oy; /* absolute lower-left of its piece */
    hs_piece *piece;
    int part, n_parts; /* a part of its parent (split_flat_box), from 1 */
    int first, last, whole; /* a part: its nodes' positions in definition
                               order, of `whole` */
} box;

typedef struct composer {
    hs_view *v;
    hs_error *err;
    int n_boxes, cap_boxes;
    box *boxes;
    int *box_of_group;   /* per group, -1 */
    int *box_of_cluster; /* per view cluster, -1 */
    int *node_box, *node_slot;
    double *node_w, *node_h;
    int n_subs, cap_subs;
    sub *subs;
    int *slots; /* hash of subs, -1 empty */
    size_t n_slots;
    int *seg_first, *seg_n; /* per view edge: its subs in segs */
    int n_segs, cap_segs;
    int *segs;
    int64_t deadline_ms;
    long large_box; /* LARGE_BOX_ITEMS or the environment's */
    hs_render_compose_stats *stats;
} composer;

static hs_status nomem(composer *c)
{
    return hs_error_set(c->err, HS_ERR_NOMEM,
                        "out of host memory while composing a layout");
}

/* ---- boxes -------------------------------------------------------------- */

static int new_box(composer *c, int parent, int group, int cluster)
{
    if (!hs__grow_array((void **)&c->boxes, c->n_boxes, &c->cap_boxes, sizeof *c->boxes))
        return -1;
    int b = c->n_boxes++;
    c->boxes[b] = (box){.parent = parent,
                        .depth = parent < 0 ? 0 : c->boxes[parent].depth + 1,
                        .group = group, .cluster = cluster,
                        .label_lines = cluster >= 0 ? 2 : 1};
    return b;
}

static int box_of_node(composer *c, int node);

/* The box that holds what is drawn of group g's members: g's own box when
 * g is open and not its computation's group, else the box above it. */
static int box_above_group(composer *c, int g, int comp_box)
{
    const hs_group_tree *t = c->v->tree;
    for (; g >= 0 && t->groups[g].kind != HS_GROUP_COMPUTATION;
         g = t->groups[g].parent) {
        if (!c->v->open[g])
            continue;
        if (c->box_of_group[g] >= 0)
            return c->box_of_group[g];
        int parent = box_above_group(c, t->groups[g].parent, comp_box);
        if (parent < 0)
            return -1;
        int b = new_box(c, parent, g, -1);
        if (b >= 0)
            c->box_of_group[g] = b;
        return b;
    }
    return comp_box;
}

/* The box of view cluster k: inside the box of its caller's node. */
static int box_of_cluster(composer *c, int k)
{
    if (k < 0)
        return 0;
    if (c->box_of_cluster[k] >= 0)
        return c->box_of_cluster[k];
    const hs_vcluster *cl = &c->v->clusters[k];
    int parent = -1;
    for (int n = 0; n < c->v->n_nodes && parent < 0; n++)
        if (c->v->nodes[n].instr == cl->caller)
            parent = box_of_node(c, n);
    if (parent < 0)
        parent = box_of_cluster(c, cl->parent);
    if (parent < 0)
        return -1;
    int b = new_box(c, parent, -1, k);
    if (b >= 0)
        c->box_of_cluster[k] = b;
    return b;
}

static int box_of_node(composer *c, int node)
{
    if (c->node_box[node] >= 0)
        return c->node_box[node];
    const hs_vnode *n = &c->v->nodes[node];
    int comp_box = box_of_cluster(c, n->cluster);
    if (comp_box < 0)
        return -1;
    int g = n->group;
    if (g >= 0 && !n->instr)
        g = c->v->tree->groups[g].parent; /* a closed group sits in its parent */
    int b = g >= 0 ? box_above_group(c, g, comp_box) : comp_box;
    c->node_box[node] = b;
    return b;
}

static bool add_item(composer *c, int b, int item)
{
    box *x = &c->boxes[b];
    if (!hs__grow_array((void **)&x->items, x->n_items, &x->cap_items, sizeof *x->items))
        return false;
    x->items[x->n_items++] = item;
    return true;
}

/* ---- edges cut at borders ------------------------------------------------ */

static uint64_t mix3(int a, int b, int d)
{
    uint64_t z = (uint64_t)(uint32_t)a * 0x9E3779B97F4A7C15ull ^
                 (uint64_t)(uint32_t)b * 0xC2B2AE3D27D4EB4Full ^
                 (uint64_t)(uint32_t)d * 0x165667B19E3779F9ull;
    z = (z ^ (z >> 29)) * 0xBF58476D1CE4E5B9ull;
    return z ^ (z >> 32);
}

static bool rehash(composer *c)
{
    size_t n = c->n_slots ? c->n_slots * 2 : 1024;
    int *s = malloc(sizeof *s * n);
    if (!s)
        return false;
    memset(s, 0xff, sizeof *s * n);
    for (int k = 0; k < c->n_subs; k++) {
        size_t h = mix3(c->subs[k].box, c->subs[k].tail, c->subs[k].head) & (n - 1);
        while (s[h] >= 0)
            h = (h + 1) & (n - 1);
        s[h] = k;
    }
    free(c->slots);
    c->slots = s;
    c->n_slots = n;
    return true;
}

/* The sub-edge (box, tail, head), found or added; -1 on OOM. */
static int sub_edge(composer *c, int b, int tail, int head)
{
    if ((size_t)(c->n_subs + 1) * 2 > c->n_slots && !rehash(c))
        return -1;
    size_t h = mix3(b, tail, head) & (c->n_slots - 1);
    for (; c->slots[h] >= 0; h = (h + 1) & (c->n_slots - 1)) {
        const sub *s = &c->subs[c->slots[h]];
        if (s->box == b && s->tail == tail && s->head == head)
            return c->slots[h];
    }
    if (!hs__grow_array((void **)&c->subs, c->n_subs, &c->cap_subs, sizeof *c->subs))
        return -1;
    c->subs[c->n_subs] = (sub){b, tail, head, -1};
    c->slots[h] = c->n_subs;
    return c->n_subs++;
}

static bool add_seg(composer *c, int s)
{
    if (s < 0 || !hs__grow_array((void **)&c->segs, c->n_segs, &c->cap_segs, sizeof *c->segs))
        return false;
    c->segs[c->n_segs++] = s;
    return true;
}

/* Cuts view edge e at every border it crosses: up from its tail's box
 * through the exit margins, across in the lowest box holding both ends,
 * down through the entry margins to its head. */
static bool cut_edge(composer *c, int e)
{
    const hs_vedge *ve = &c->v->edges[e];
    int a = c->node_box[ve->from], ta = c->node_slot[ve->from];
    int b = c->node_box[ve->to], hb = c->node_slot[ve->to];
    int lca_a = a, lca_b = b;
    while (lca_a != lca_b) {
        if (c->boxes[lca_a].depth >= c->boxes[lca_b].depth)
            lca_a = c->boxes[lca_a].parent;
        else
            lca_b = c->boxes[lca_b].parent;
    }
    c->seg_first[e] = c->n_segs;
    for (; a != lca_a; ta = c->boxes[a].slot, a = c->boxes[a].parent)
        if (!add_seg(c, sub_edge(c, a, ta, PORT_OUT)))
            return false;
    /* the head's side innermost first, then the crossing; reversed below */
    int down = c->n_segs;
    for (; b != lca_a; hb = c->boxes[b].slot, b = c->boxes[b].parent)
        if (!add_seg(c, sub_edge(c, b, PORT_IN, hb)))
            return false;
    if (ta != hb && !add_seg(c, sub_edge(c, a, ta, hb)))
        return false;
    for (int i = down, j = c->n_segs - 1; i < j; i++, j--) {
        int t = c->segs[i];
        c->segs[i] = c->segs[j];
        c->segs[j] = t;
    }
    c->seg_n[e] = c->n_segs - c->seg_first[e];
    return true;
}

/* ---- big flat boxes cut into parts ---------------------------------------- */

/* Box b holds more than large_box nodes and no child box (Mixtral's
 * backward layer: 345 instructions, no inner group). Laid out whole, dot's
 * crossing minimisation and positioning grow faster than its size; cut
 * into parts of about PART_ITEMS nodes in definition order, each part is a
 * small layout of its own (cached like any box, so the parts of identical
 * layers are laid out once) and the box lays out its parts. The cuts fall
 * where the fewest of the box's edges cross from one side to the other,
 * within a third of a part of the even positions: the residual stream
 * between two sublayers rather than the middle of an attention block. */
static bool split_flat_box(composer *c, int b)
{
    box *x = &c->boxes[b];
    int n = x->n_items;
    for (int k = 0; k < n; k++)
        if (x->items[k] < 0)
            return true; /* child boxes would have to follow their callers */
    int *cross = calloc((size_t)n + 2, sizeof *cross);
    int parts = (n + PART_ITEMS - 1) / PART_ITEMS;
    int *cut = malloc(sizeof *cut * ((size_t)parts + 1));
    int *items = malloc(sizeof *items * ((size_t)n + 1));
    if (!cross || !cut || !items) {
        free(cross);
        free(cut);
        free(items);
        return false;
    }
    /* cross[p]: edges between slots < p and slots >= p (difference array) */
    for (int e = 0; e < c->v->n_edges; e++) {
        const hs_vedge *ve = &c->v->edges[e];
        if (c->node_box[ve->from] != b || c->node_box[ve->to] != b)
            continue;
        int lo = c->node_slot[ve->from], hi = c->node_slot[ve->to];
        if (lo > hi) {
            int t = lo;
            lo = hi;
            hi = t;
        }
        cross[lo + 1]++;
        cross[hi + 1]--;
    }
    for (int p = 1; p <= n; p++)
        cross[p] += cross[p - 1];
    cut[0] = 0;
    for (int j = 1; j < parts; j++) {
        int even = (int)((int64_t)n * j / parts), reach = n / parts / 3;
        int best = even;
        for (int p = even - reach; p <= even + reach; p++)
            if (p > cut[j - 1] && p < n &&
                (cross[p] < cross[best] ||
                 (cross[p] == cross[best] && abs(p - even) < abs(best - even))))
                best = p;
        cut[j] = best > cut[j - 1] ? best : cut[j - 1] + 1;
    }
    cut[parts] = n;
    memcpy(items, x->items, sizeof *items * (size_t)n);
    x->n_items = 0;
    bool ok = true;
    for (int j = 0; j < parts && ok; j++) {
        int pb = new_box(c, b, -1, -1);
        if (pb < 0) {
            ok = false;
            break;
        }
        x = &c->boxes[b]; /* new_box may move the boxes */
        box *part = &c->boxes[pb];
        part->part = j + 1;
        part->n_parts = parts;
        part->first = cut[j];
        part->last = cut[j + 1] - 1;
        part->whole = n;
        part->slot = x->n_items;
        ok = add_item(c, b, -1 - pb);
        for (int k = cut[j]; k < cut[j + 1] && ok; k++) {
            int node = items[k];
            c->node_box[node] = pb;
            c->node_slot[node] = c->boxes[pb].n_items;
            ok = add_item(c, pb, node);
        }
    }
    free(cross);
    free(cut);
    free(items);
    return ok;
}

/* ---- sizes --------------------------------------------------------------- */

/* The size of a node from its label (DOT-escaped, lines joined by "\n"). */
static void label_size(const char *s, double *w, double *h)
{
    int lines = 1, chars = 0, widest = 0;
    for (; *s; s++) {
        if (*s == '\\' && s[1] == 'n') {
            lines++;
            chars = 0;
            s++;
            continue;
        }
        if (*s == '\\' && s[1])
            s++;
        if (((unsigned char)*s & 0xc0) != 0x80 && ++chars > widest)
            widest = chars;
    }
    double width = widest * CHAR_W + 16.0;
    width = width < 54.0 ? 54.0 : width;
    *w = WIDTH_STEP * (double)(int64_t)((width + WIDTH_STEP - 1e-9) / WIDTH_STEP);
    double height = lines * LINE_H + 8.0;
    *h = height < 36.0 ? 36.0 : height;
}

/* ---- one piece ----------------------------------------------------------- */

static int item_of_name(const char *name, int n_items)
{
    if (name[0] != 'i')
        return -1;
    char *end;
    long k = strtol(name + 1, &end, 10);
    return *end || k < 0 || k >= n_items ? -1 : (int)k;
}

/* Reads Graphviz's JSON for a piece: the bounding box, every item's centre
 * and every edge's spline. */
static hs_piece *read_piece(const char *text, size_t len, int n_items)
{
    json_error_t je;
    json_t *root = json_loadb(text, len, 0, &je);
    hs_piece *p = calloc(1, sizeof *p);
    if (!root || !p)
        goto fail;
    p->n_items = n_items;
    p->x = calloc((size_t)n_items + 1, sizeof *p->x);
    p->y = calloc((size_t)n_items + 1, sizeof *p->y);
    json_t *objects = json_object_get(root, "objects");
    json_t *edges = json_object_get(root, "edges");
    size_t n_obj = json_array_size(objects), n_edges = json_array_size(edges);
    int *item_of_gvid = malloc(sizeof(int) * (n_obj + 1) * 2);
    p->edges = calloc(n_edges + 1, sizeof *p->edges);
    if (!p->x || !p->y || !item_of_gvid || !p->edges) {
        free(item_of_gvid);
        goto fail;
    }
    double llx = 0, lly = 0, urx = 0, ury = 0;
    const char *bb = json_string_value(json_object_get(root, "bb"));
    if (bb)
        sscanf(bb, "%lf,%lf,%lf,%lf", &llx, &lly, &urx, &ury);
    p->w = urx - llx;
    p->h = ury - lly;
    size_t n_gvid = (n_obj + 1) * 2;
    for (size_t k = 0; k < n_gvid; k++)
        item_of_gvid[k] = -1;
    for (size_t k = 0; k < n_obj; k++) {
        json_t *o = json_array_get(objects, k);
        json_int_t id = json_integer_value(json_object_get(o, "_gvid"));
        const char *name = json_string_value(json_object_get(o, "name"));
        const char *pos = json_string_value(json_object_get(o, "pos"));
        int item = name ? item_of_name(name, n_items) : -1;
        double x, y;
        if (item < 0 || !pos || sscanf(pos, "%lf,%lf", &x, &y) != 2)
            continue;
        p->x[item] = x - llx;
        p->y[item] = y - lly;
        if (id >= 0 && (size_t)id < n_gvid)
            item_of_gvid[id] = item;
    }
    int cap_points = 0;
    for (size_t k = 0; k < n_edges; k++) {
        json_t *e = json_array_get(edges, k);
        json_int_t t = json_integer_value(json_object_get(e, "tail"));
        json_int_t h = json_integer_value(json_object_get(e, "head"));
        const char *pos = json_string_value(json_object_get(e, "pos"));
        if (t < 0 || h < 0 || (size_t)t >= n_gvid || (size_t)h >= n_gvid || !pos)
            continue;
        hs_piece_edge *pe = &p->edges[p->n_edges];
        *pe = (hs_piece_edge){.tail = item_of_gvid[t], .head = item_of_gvid[h],
                              .first = p->n_points};
        for (const char *s = pos; *s;) {
            while (*s == ' ')
                s++;
            if (!*s)
                break;
            bool end = s[0] == 'e' && s[1] == ',', start = s[0] == 's' && s[1] == ',';
            if (end || start)
                s += 2;
            double x, y;
            int used = 0;
            if (sscanf(s, "%lf,%lf%n", &x, &y, &used) != 2)
                break;
            s += used;
            x -= llx;
            y -= lly;
            if (end) {
                pe->has_end = true;
                pe->ex = x;
                pe->ey = y;
            } else if (!start) {
                if (p->n_points == cap_points) {
                    cap_points = cap_points ? cap_points * 2 : 256;
                    double *q = realloc(p->points, sizeof *q * 2 * (size_t)cap_points);
                    if (!q) {
                        free(item_of_gvid);
                        goto fail;
                    }
                    p->points = q;
                }
                p->points[2 * p->n_points] = x;
                p->points[2 * p->n_points + 1] = y;
                p->n_points++;
            }
            while (*s && *s != ' ')
                s++;
        }
        pe->n = p->n_points - pe->first;
        p->n_edges++;
    }
    if (!p->points)
        p->points = malloc(sizeof *p->points * 2);
    free(item_of_gvid);
    json_decref(root);
    if (!p->points) {
        hs__piece_free(p);
        return NULL;
    }
    return p;
fail:
    json_decref(root);
    hs__piece_free(p);
    return NULL;
}

/* The canonical DOT of box b: everything its layout depends on, nothing
 * else. */
static void piece_dot(const composer *c, int b, hs_buf *d)
{
    const box *x = &c->boxes[b];
    /* A big flat box (Mixtral's backward layer: 345 nodes over 160 ranks)
     * spends its time in crossing minimisation and in the x-coordinate
     * network simplex that its crossings make harder: mclimit=0.1 does a
     * tenth of the mincross passes, 3x less CPU for about twice the
     * crossings (docs/BENCHMARKS.md); smaller boxes keep dot's default. */
    hs__buf_printf(d, "digraph P {\ngraph [rankdir=TB, nodesep=0.3, ranksep=0.4, "
                      "nslimit=2%s];\n"
                      "node [shape=box, fixedsize=true, label=\"\"];\n",
                   x->n_items > c->large_box ? ", mclimit=0.1" : "");
    for (int k = 0; k < x->n_items; k++) {
        int it = x->items[k];
        double w, h;
        const char *shape = "";
        if (it >= 0) {
            w = c->node_w[it];
            h = c->node_h[it];
            const hs_instruction *i = c->v->nodes[it].instr;
            if (i && i->opcode == HS_OP_WHILE)
                shape = ", shape=ellipse";
        } else {
            w = c->boxes[-1 - it].w;
            h = c->boxes[-1 - it].h;
        }
        hs__buf_printf(d, "i%d [width=%.3f, height=%.3f%s];\n", k, w / 72.0,
                       h / 72.0, shape);
    }
    /* Edges through the box's border are not laid out: they run along its
     * margin (edge_pos), so they add no long edges to the layout, and
     * identical layers give the same DOT whatever crosses their border. */
    for (int k = 0; k < c->n_subs; k++) {
        const sub *s = &c->subs[k];
        if (s->box == b && s->tail >= 0 && s->head >= 0)
            hs__buf_printf(d, "i%d -> i%d;\n", s->tail, s->head);
    }
    hs__buf_puts(d, "}\n");
}

/* Boxes are laid out by a few threads at once (each layout is a job for
 * its own worker process): a box is ready when its child boxes are, and a
 * box whose canonical DOT is being laid out already waits for that result
 * instead of laying it out again. */
#define COMPOSE_THREADS 3

typedef struct pool {
    composer *c;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    int *pending; /* per box: child boxes not laid out yet */
    hs_buf *dot;  /* per box: its canonical DOT, once ready */
    int *ready, n_ready;
    int *busy, n_busy; /* boxes being laid out */
    int n_done;
    hs_status status;
    hs_error err;
} pool;

/* Under the lock: box b's children are laid out, its DOT can be written. */
static void make_ready(pool *q, int b)
{
    piece_dot(q->c, b, &q->dot[b]);
    q->ready[q->n_ready++] = b;
}

static bool same_dot(const hs_buf *x, const hs_buf *y)
{
    return x->len == y->len && x->data && y->data &&
           memcmp(x->data, y->data, x->len) == 0;
}

/* Under the lock: a ready box whose DOT is not being laid out, or -1. */
static int take_ready(pool *q)
{
    for (int k = 0; k < q->n_ready; k++) {
        int b = q->ready[k];
        bool twin = false;
        for (int j = 0; j < q->n_busy && !twin; j++)
            twin = same_dot(&q->dot[b], &q->dot[q->busy[j]]);
        if (twin)
            continue;
        q->ready[k] = q->ready[--q->n_ready];
        q->busy[q->n_busy++] = b;
        return b;
    }
    return -1;
}

/* Lays out box b (or takes its layout from the cache). Without the lock:
 * it writes only b's piece, size and sub-edges. */
static hs_status lay_out_box(pool *q, int b, hs_error *err, bool *reused,
                             double *seconds)
{
    composer *c = q->c;
    box *x = &c->boxes[b];
    const hs_buf *d = &q->dot[b];
    if (d->oom)
        return hs_error_set(err, HS_ERR_NOMEM, "out of host memory while composing a layout");
    x->piece = hs__piece_cache_get(d->data, d->len);
    *reused = x->piece != NULL;
    if (!x->piece) {
        int64_t left = c->deadline_ms - hs_now_ns() / 1000000;
        if (left <= 0)
            return hs_error_set(err, HS_ERR_CANCELLED,
                                "layout timed out while composing");
        char *json = NULL;
        size_t len = 0;
        int64_t t0 = hs_now_ns();
        hs_status st = hs_render_layout(d->data, HS_RENDER_ENGINE_GRAPH, "json",
                                        left, &json, &len, err);
        *seconds = (double)(hs_now_ns() - t0) / 1e9;
        if (st != HS_OK)
            return st;
        x->piece = read_piece(json, len, x->n_items);
        free(json);
        if (!x->piece)
            return hs_error_set(err, HS_ERR_RUNTIME,
                                "layout: unreadable JSON from Graphviz");
        hs__piece_cache_put(d->data, d->len, x->piece);
    }
    /* match the piece's edges to the sub-edges (both are few per box) */
    const hs_piece *p = x->piece;
    for (int k = 0; k < c->n_subs; k++) {
        sub *s = &c->subs[k];
        if (s->box != b)
            continue;
        for (int j = 0; j < p->n_edges && s->edge < 0; j++)
            if (p->edges[j].tail == s->tail && p->edges[j].head == s->head)
                s->edge = j;
    }
    x->w = p->w + 2 * BOX_PAD;
    x->h = p->h + 2 * BOX_PAD + (b ? x->label_lines * BOX_LABEL_LINE : 0);
    return HS_OK;
}

static void *pool_worker(void *arg)
{
    pool *q = arg;
    composer *c = q->c;
    pthread_mutex_lock(&q->lock);
    for (;;) {
        if (q->status != HS_OK || q->n_done == c->n_boxes)
            break;
        int b = take_ready(q);
        if (b < 0) {
            pthread_cond_wait(&q->changed, &q->lock);
            continue;
        }
        pthread_mutex_unlock(&q->lock);
        hs_error err;
        hs_error_clear(&err);
        bool reused = false;
        double seconds = 0;
        hs_status st = lay_out_box(q, b, &err, &reused, &seconds);
        pthread_mutex_lock(&q->lock);
        for (int j = 0; j < q->n_busy; j++)
            if (q->busy[j] == b) {
                q->busy[j] = q->busy[--q->n_busy];
                break;
            }
        if (st != HS_OK) {
            if (q->status == HS_OK) {
                q->status = st;
                q->err = err;
            }
        } else {
            q->n_done++;
            c->stats->boxes++;
            c->stats->reused += reused;
            c->stats->laid_out += !reused;
            c->stats->layout_seconds += seconds;
            int parent = c->boxes[b].parent;
            if (parent >= 0 && --q->pending[parent] == 0)
                make_ready(q, parent);
        }
        pthread_cond_broadcast(&q->changed);
    }
    pthread_mutex_unlock(&q->lock);
    return NULL;
}

/* Lays out every box, children before parents. */
static hs_status lay_out_boxes(composer *c)
{
    int n = c->n_boxes;
    pool q = {.c = c, .status = HS_OK};
    q.pending = calloc((size_t)n, sizeof *q.pending);
    q.dot = calloc((size_t)n, sizeof *q.dot);
    q.ready = malloc(sizeof *q.ready * (size_t)n);
    q.busy = malloc(sizeof *q.busy * (size_t)n);
    if (!q.pending || !q.dot || !q.ready || !q.busy) {
        free(q.pending);
        free(q.dot);
        free(q.ready);
        free(q.busy);
        return nomem(c);
    }
    pthread_mutex_init(&q.lock, NULL);
    pthread_cond_init(&q.changed, NULL);
    for (int b = 1; b < n; b++)
        q.pending[c->boxes[b].parent]++;
    for (int b = n - 1; b >= 0; b--)
        if (q.pending[b] == 0)
            make_ready(&q, b);
    pthread_t threads[COMPOSE_THREADS - 1];
    int started = 0;
    for (int k = 0; k < COMPOSE_THREADS - 1 && k + 1 < n; k++)
        if (pthread_create(&threads[k], NULL, pool_worker, &q) == 0)
            started++;
    pool_worker(&q);
    for (int k = 0; k < started; k++)
        pthread_join(threads[k], NULL);
    pthread_cond_destroy(&q.changed);
    pthread_mutex_destroy(&q.lock);
    if (q.status != HS_OK && c->err)
        *c->err = q.err;
    for (int b = 0; b < n; b++)
        hs__buf_free(&q.dot[b]);
    free(q.pending);
    free(q.dot);
    free(q.ready);
    free(q.busy);
    return q.status;
}

/* ---- the drawing --------------------------------------------------------- */

static void place(composer *c)
{
    c->boxes[0].ox = BOX_PAD;
    c->boxes[0].oy = BOX_PAD;
    for (int b = 1; b < c->n_boxes; b++) {
        box *x = &c->boxes[b];
        const box *p = &c->boxes[x->parent];
        double cx = p->ox + p->piece->x[x->slot], cy = p->oy + p->piece->y[x->slot];
        x->ox = cx - x->w / 2 + BOX_PAD;
        x->oy = cy - x->h / 2 + BOX_PAD;
    }
}

/* What box b (> 0) looks like: its id, label and tooltip (into the
 * caller's buffers), style and colours, bb and label position. */
static void box_look(const composer *c, int b, hs_svg_cluster *k, hs_buf *id,
                     hs_buf *label, hs_buf *tooltip)
{
    const box *x = &c->boxes[b];
    const hs_view *v = c->v;
    if (x->cluster >= 0) {
        const hs_vcluster *cl = &v->clusters[x->cluster];
        hs__buf_puts(id, cl->id);
        hs__dot_text(label, cl->comp->name, 64);
        hs__buf_puts(label, "\\n");
        hs__dot_cluster_role(label, cl);
        hs__dot_text(tooltip, cl->comp->name, 200);
        bool fusion = cl->caller->opcode == HS_OP_FUSION;
        k->style = fusion ? "rounded,filled,bold" : "rounded";
        k->fill = fusion ? "#f5f5f5" : NULL;
        k->stroke = fusion ? "#c2c2c2" : "black";
    } else if (x->part > 0) {
        /* "part 2/5 of run.1/layer.5", id cluster_part:<parent>:<k> */
        const box *p = &c->boxes[x->parent];
        const char *whole = p->group >= 0 ? v->tree->groups[p->group].path
                            : p->cluster >= 0 ? v->clusters[p->cluster].comp->name
                                              : v->top->name;
        hs__buf_puts(id, "cluster_part:");
        hs__id_encode(id, whole);
        hs__buf_printf(id, ":%d", x->part);
        hs__buf_printf(label, "part %d/%d", x->part, x->n_parts);
        hs__dot_text(tooltip, whole, 200);
        hs__buf_printf(tooltip, ": items %d to %d of %d, cut where the fewest "
                                "edges cross",
                       x->first, x->last, x->whole);
        k->style = "rounded,dotted";
        k->fill = NULL;
        k->stroke = "#90a4ae";
    } else {
        const hs_group *g = &v->tree->groups[x->group];
        hs__buf_puts(id, "cluster_g:");
        hs__id_encode(id, g->path);
        hs__dot_text(label, g->label, 64);
        hs__dot_text(tooltip, g->path, 200);
        hs__buf_printf(tooltip, " (%lld instructions)", (long long)g->instructions);
        k->style = "rounded,dashed";
        k->fill = NULL;
        k->stroke = "#546e7a";
    }
    k->id = id->data ? id->data : "";
    k->label = label->data ? label->data : "";
    k->tooltip = tooltip->data ? tooltip->data : "";
    k->fontsize = BOX_FONT_SIZE;
    k->x0 = x->ox - BOX_PAD;
    k->y0 = x->oy - BOX_PAD;
    k->x1 = k->x0 + x->w;
    k->y1 = k->y0 + x->h;
    k->lx = k->x0 + x->w / 2;
    k->ly = k->y0 + x->h - BOX_PAD / 2 - x->label_lines * BOX_LABEL_LINE / 2;
}

static void write_box(composer *c, hs_buf *o, int b, int depth)
{
    const box *x = &c->boxes[b];
    const hs_view *v = c->v;
    if (b > 0) {
        hs_svg_cluster k;
        hs_buf id = {0}, label = {0}, tooltip = {0};
        box_look(c, b, &k, &id, &label, &tooltip);
        hs__buf_printf(o, "subgraph \"%s\" {\n  id=\"%s\";\n  label=\"%s\";\n"
                          "  tooltip=\"%s\";\n  style=\"%s\"; ",
                       k.id, k.id, k.label, k.tooltip, k.style);
        if (k.fill)
            hs__buf_printf(o, "fillcolor=\"%s\"; ", k.fill);
        hs__buf_printf(o, "color=\"%s\";\n  fontsize=%d; "
                          "bb=\"%.2f,%.2f,%.2f,%.2f\"; lp=\"%.2f,%.2f\";\n",
                       k.stroke, k.fontsize, k.x0, k.y0, k.x1, k.y1, k.lx, k.ly);
        o->oom |= id.oom || label.oom || tooltip.oom;
        hs__buf_free(&id);
        hs__buf_free(&label);
        hs__buf_free(&tooltip);
    }
    for (int k = 0; k < x->n_items; k++) {
        int it = x->items[k];
        if (it < 0)
            continue;
        char extra[160];
        snprintf(extra, sizeof extra,
                 ", pos=\"%.2f,%.2f\", width=%.3f, height=%.3f, fixedsize=true",
                 x->ox + x->piece->x[k], x->oy + x->piece->y[k],
                 c->node_w[it] / 72.0, c->node_h[it] / 72.0);
        hs__dot_node(o, v, &v->nodes[it], depth + 1, extra);
    }
    for (int k = 0; k < x->n_items; k++)
        if (x->items[k] < 0)
            write_box(c, o, -1 - x->items[k], depth + 1);
    if (b > 0)
        hs__buf_puts(o, "}\n");
}

/* The size of item k of box x. */
static void item_size(const composer *c, const box *x, int k, double *w, double *h)
{
    int it = x->items[k];
    *w = it >= 0 ? c->node_w[it] : c->boxes[-1 - it].w;
    *h = it >= 0 ? c->node_h[it] : c->boxes[-1 - it].h;
}

/* A segment's points (a B-spline of 3k + 1 points, absolute) and its
 * arrow tip. A port's segment runs along the box's margin: in from the
 * top of the left margin, down to the item's height, right to its side;
 * out from the item's right side to the right margin, down to the bottom
 * border. */
typedef struct seg_points {
    int n;
    double p[2 * 7];
    const double *piece; /* or the piece's points, relative to (ox, oy) */
    double ox, oy;
    bool has_end;
    double ex, ey;
} seg_points;

static void segment(const composer *c, const sub *s, seg_points *g)
{
    const box *x = &c->boxes[s->box];
    memset(g, 0, sizeof *g);
    if (s->tail >= 0 && s->head >= 0) {
        if (s->edge < 0)
            return;
        const hs_piece_edge *pe = &x->piece->edges[s->edge];
        g->n = pe->n;
        g->piece = x->piece->points + 2 * pe->first;
        g->ox = x->ox;
        g->oy = x->oy;
        g->has_end = pe->has_end;
        g->ex = x->ox + pe->ex;
        g->ey = x->oy + pe->ey;
        return;
    }
    int k = s->tail == PORT_IN ? s->head : s->tail;
    double w, h;
    item_size(c, x, k, &w, &h);
    double cx = x->ox + x->piece->x[k], cy = x->oy + x->piece->y[k];
    double a[2], b[2], d[2];
    if (s->tail == PORT_IN) {
        double bus = x->ox - BOX_PAD / 2;
        a[0] = bus, a[1] = x->oy + x->piece->h;
        b[0] = bus, b[1] = cy;
        d[0] = cx - w / 2 - 10, d[1] = cy; /* the arrow's 10 points */
        g->has_end = true;
        g->ex = cx - w / 2;
        g->ey = cy;
    } else {
        double bus = x->ox + x->piece->w + BOX_PAD / 2;
        a[0] = cx + w / 2, a[1] = cy;
        b[0] = bus, b[1] = cy;
        d[0] = bus, d[1] = x->oy - BOX_PAD;
    }
    /* a, b, d as two straight cubics: a a b b b d d */
    const double *order[7] = {a, a, b, b, b, d, d};
    for (int j = 0; j < 7; j++) {
        g->p[2 * j] = order[j][0];
        g->p[2 * j + 1] = order[j][1];
    }
    g->n = 7;
}

/* A view edge's drawing: a B-spline (x, y pairs), the arrow's tip when
 * it has one, where its operand number goes. */
typedef struct edge_path {
    double *p;
    int n, cap;
    bool oom, has_end, have_lp;
    double ex, ey;
    double lp[2];
} edge_path;

static void path_add(edge_path *t, double x, double y)
{
    if (t->oom || !hs__grow_array((void **)&t->p, t->n, &t->cap, 2 * sizeof(double))) {
        t->oom = true;
        return;
    }
    t->p[2 * t->n] = x;
    t->p[2 * t->n + 1] = y;
    t->n++;
}

/* The spline of view edge e: its segments joined end to start by straight
 * pieces (a cubic whose control points are its two ends), an arrow inside
 * the path drawn as a line to its tip, the last one's arrow kept. */
static void edge_path_of(const composer *c, int e, edge_path *t)
{
    bool has_end = false;
    double ex = 0, ey = 0;
    t->n = 0;
    t->have_lp = false;
    for (int k = 0; k < c->seg_n[e]; k++) {
        seg_points g;
        segment(c, &c->subs[c->segs[c->seg_first[e] + k]], &g);
        if (g.n == 0)
            continue;
        if (has_end) { /* the previous segment's arrow: on to its tip */
            double lx = t->p[2 * t->n - 2], ly = t->p[2 * t->n - 1];
            path_add(t, lx, ly);
            path_add(t, ex, ey);
            path_add(t, ex, ey);
        }
        for (int j = 0; j < g.n; j++) {
            double px = g.piece ? g.ox + g.piece[2 * j] : g.p[2 * j];
            double py = g.piece ? g.oy + g.piece[2 * j + 1] : g.p[2 * j + 1];
            if (j == 0 && t->n > 0) {
                path_add(t, t->p[2 * t->n - 2], t->p[2 * t->n - 1]);
                path_add(t, px, py);
            }
            path_add(t, px, py);
        }
        has_end = g.has_end;
        ex = g.ex;
        ey = g.ey;
    }
    t->has_end = has_end && t->n > 0;
    t->ex = ex;
    t->ey = ey;
    if (t->n > 0 && !t->oom) {
        /* Graphviz's place for a head label: 20 points (labeldistance 2)
         * from the head, 25 degrees clockwise of the edge's last piece */
        double lx = t->p[2 * t->n - 2], ly = t->p[2 * t->n - 1];
        double hx = has_end ? ex : lx, hy = has_end ? ey : ly;
        double dx = has_end ? lx - ex : -0.0, dy = has_end ? ly - ey : 1.0;
        double len = sqrt(dx * dx + dy * dy);
        if (len < 1e-6)
            dx = 0, dy = 1, len = 1;
        double ca = 0.9063, sa = -0.4226; /* cos, sin of -25 degrees */
        double ux = (dx * ca - dy * sa) / len, uy = (dx * sa + dy * ca) / len;
        t->lp[0] = hx + 20 * ux;
        t->lp[1] = hy + 20 * uy;
        t->have_lp = true;
    }
}

/* The path as a DOT pos ("e,x,y x,y x,y ...") and head_lp. */
static void edge_pos(const edge_path *t, hs_buf *pos, char *head_lp,
                     size_t lp_size)
{
    head_lp[0] = '\0';
    if (t->have_lp)
        snprintf(head_lp, lp_size, "%.2f,%.2f", t->lp[0], t->lp[1]);
    if (t->has_end)
        hs__buf_printf(pos, "e,%.2f,%.2f ", t->ex, t->ey);
    for (int k = 0; k < t->n; k++)
        hs__buf_printf(pos, k ? " %.2f,%.2f" : "%.2f,%.2f", t->p[2 * k],
                       t->p[2 * k + 1]);
}

/* ---- the drawing as SVG (svg.c) ------------------------------------------ */

/* HS_COMPOSE_SVG=graphviz draws the pinned DOT with Graphviz's nop2 in a
 * layout worker, as before svg.c (bench_layout_scale compares both in one
 * run); anything else, or unset, writes the SVG here. */
static bool own_svg(void)
{
    const char *e = getenv("HS_COMPOSE_SVG");
    return !(e && strcmp(e, "graphviz") == 0);
}

/* The overlay legend's centre: above the drawing's top-left corner, under
 * the title (hs__overlay_legend_size is the room kept for it). */
static void legend_place(const composer *c, double *x, double *y)
{
    double w, h;
    hs__overlay_legend_size(c->v, &w, &h);
    *x = BOX_PAD + w / 2;
    *y = c->boxes[0].oy + c->boxes[0].h + h / 2;
}

/* Node n's size as Graphviz draws it: the DOT's inches (3 decimals)
 * rounded to whole points (its POINTS()). */
static void node_size(const composer *c, int n, double *w, double *h)
{
    *w = round(round(c->node_w[n] / 72.0 * 1000) / 1000 * 72);
    *h = round(round(c->node_h[n] / 72.0 * 1000) / 1000 * 72);
}

static void node_place(const composer *c, int n, double *x, double *y)
{
    const box *b = &c->boxes[c->node_box[n]];
    *x = b->ox + b->piece->x[c->node_slot[n]];
    *y = b->oy + b->piece->y[c->node_slot[n]];
}

/* What Graphviz's bounding box of the drawing holds: nodes (with their
 * outer outlines), boxes, splines and arrows, operand numbers, the
 * legend, then the title above them. */
static void frame_of(const composer *c, hs_svg_frame *f, edge_path *t,
                     const char *title)
{
    const hs_view *v = c->v;
    *f = (hs_svg_frame){.empty = true};
    for (int n = 0; n < v->n_nodes; n++) {
        double x, y, w, h, m = hs__svg_node_margin(v, &v->nodes[n]);
        node_place(c, n, &x, &y);
        node_size(c, n, &w, &h);
        hs__svg_frame_add(f, x - w / 2 - m, y - h / 2 - m, x + w / 2 + m,
                          y + h / 2 + m);
    }
    for (int b = 1; b < c->n_boxes; b++) {
        const box *x = &c->boxes[b];
        hs__svg_frame_add(f, x->ox - BOX_PAD, x->oy - BOX_PAD,
                          x->ox - BOX_PAD + x->w, x->oy - BOX_PAD + x->h);
    }
    for (int e = 0; e < v->n_edges; e++) {
        edge_path_of(c, e, t);
        for (int k = 0; k < t->n; k++)
            hs__svg_frame_add(f, t->p[2 * k], t->p[2 * k + 1], t->p[2 * k],
                              t->p[2 * k + 1]);
        if (t->has_end)
            hs__svg_frame_add(f, t->ex, t->ey, t->ex, t->ey);
        if (t->have_lp && v->edges[e].kind != HS_VEDGE_CALL &&
            v->edges[e].operand_index >= 0) /* a digit or two, 9 points */
            hs__svg_frame_add(f, t->lp[0] - 5, t->lp[1] - 5, t->lp[0] + 5,
                              t->lp[1] + 5);
    }
    if (v->overlay != HS_OVERLAY_NONE) {
        /* the legend node: its table and Graphviz's 4-point margin */
        hs_svg_legend l;
        hs__overlay_legend_cells(v, &l);
        legend_place(c, &l.cx, &l.cy);
        hs__svg_frame_add(f, l.cx - l.w / 2 - 4, l.cy - l.h / 2 - 4,
                          l.cx + l.w / 2 + 4, l.cy + l.h / 2 + 4);
    }
    if (f->empty)
        hs__svg_frame_add(f, 0, 0, 0, 0);
    hs__svg_frame_title(f, title);
}

/* Boxes from the outside in, so an inner box is painted over its parent. */
static void svg_boxes(const composer *c, hs_buf *o, const hs_svg_frame *f, int b)
{
    const box *x = &c->boxes[b];
    if (b > 0) {
        hs_svg_cluster k;
        hs_buf id = {0}, label = {0}, tooltip = {0};
        box_look(c, b, &k, &id, &label, &tooltip);
        hs__svg_cluster(o, f, &k);
        o->oom |= id.oom || label.oom || tooltip.oom;
        hs__buf_free(&id);
        hs__buf_free(&label);
        hs__buf_free(&tooltip);
    }
    for (int k = 0; k < x->n_items; k++)
        if (x->items[k] < 0)
            svg_boxes(c, o, f, -1 - x->items[k]);
}

static hs_status draw_svg(composer *c, char **out, size_t *out_len)
{
    const hs_view *v = c->v;
    hs_buf o = {0}, title = {0}, scratch = {0};
    edge_path t = {0};
    hs__graph_label(&title, v);
    const char *tt = title.data ? title.data : "";
    hs_svg_frame f;
    frame_of(c, &f, &t, tt);
    hs__svg_begin(&o, &f, tt);
    svg_boxes(c, &o, &f, 0);
    for (int n = 0; n < v->n_nodes; n++) {
        double x, y, w, h;
        node_place(c, n, &x, &y);
        node_size(c, n, &w, &h);
        hs__svg_node(&o, &f, v, &v->nodes[n], x, y, w, h, &scratch);
    }
    if (v->overlay != HS_OVERLAY_NONE) {
        hs_svg_legend l;
        hs__overlay_legend_cells(v, &l);
        legend_place(c, &l.cx, &l.cy);
        hs__svg_legend(&o, &f, &l);
    }
    for (int e = 0; e < v->n_edges; e++) {
        edge_path_of(c, e, &t);
        hs__svg_edge(&o, &f, v, &v->edges[e], t.p, t.n, t.has_end, t.ex, t.ey,
                     t.have_lp ? t.lp : NULL, &scratch);
    }
    hs__svg_end(&o);
    bool oom = t.oom || title.oom || scratch.oom;
    free(t.p);
    hs__buf_free(&title);
    hs__buf_free(&scratch);
    if (oom) {
        hs__buf_free(&o);
        return nomem(c);
    }
    return hs__buf_finish(&o, out, out_len, "rendering", c->err);
}

static hs_status compose(composer *c, const char *format, char **out,
                         size_t *out_len)
{
    hs_view *v = c->v;
    int nn = v->n_nodes, nc = v->n_clusters, ng = v->tree->n_groups;
    c->box_of_group = malloc(sizeof(int) * ((size_t)ng + 1));
    c->box_of_cluster = malloc(sizeof(int) * ((size_t)nc + 1));
    c->node_box = malloc(sizeof(int) * ((size_t)nn + 1));
    c->node_slot = malloc(sizeof(int) * ((size_t)nn + 1));
    c->node_w = malloc(sizeof(double) * ((size_t)nn + 1));
    c->node_h = malloc(sizeof(double) * ((size_t)nn + 1));
    c->seg_first = calloc((size_t)v->n_edges + 1, sizeof(int));
    c->seg_n = calloc((size_t)v->n_edges + 1, sizeof(int));
    if (!c->box_of_group || !c->box_of_cluster || !c->node_box ||
        !c->node_slot || !c->node_w || !c->node_h || !c->seg_first ||
        !c->seg_n || new_box(c, -1, 0, -1) != 0)
        return nomem(c);
    memset(c->box_of_group, 0xff, sizeof(int) * ((size_t)ng + 1));
    memset(c->box_of_cluster, 0xff, sizeof(int) * ((size_t)nc + 1));
    memset(c->node_box, 0xff, sizeof(int) * ((size_t)nn + 1));
    c->box_of_group[0] = 0;
    hs_buf label = {0};
    for (int n = 0; n < nn; n++) {
        if (box_of_node(c, n) < 0)
            return nomem(c);
        label.len = 0;
        if (label.data)
            label.data[0] = '\0';
        hs__node_label(&label, v, &v->nodes[n]);
        label_size(label.data ? label.data : "", &c->node_w[n], &c->node_h[n]);
    }
    bool oom = label.oom;
    hs__buf_free(&label);
    if (oom)
        return nomem(c);
    /* items: a box's nodes in view order, then its child boxes */
    for (int n = 0; n < nn; n++) {
        c->node_slot[n] = c->boxes[c->node_box[n]].n_items;
        if (!add_item(c, c->node_box[n], n))
            return nomem(c);
    }
    for (int b = 1; b < c->n_boxes; b++) {
        c->boxes[b].slot = c->boxes[c->boxes[b].parent].n_items;
        if (!add_item(c, c->boxes[b].parent, -1 - b))
            return nomem(c);
    }
    for (int b = 0, n = c->n_boxes; b < n; b++)
        if (c->boxes[b].n_items > c->large_box && !split_flat_box(c, b))
            return nomem(c);
    for (int e = 0; e < v->n_edges; e++)
        if (!cut_edge(c, e))
            return nomem(c);
    /* children before parents: a box's size is its piece's */
    hs_status lst = lay_out_boxes(c);
    if (lst != HS_OK)
        return lst;
    place(c);
    if (strcmp(format, "svg") == 0 && own_svg())
        return draw_svg(c, out, out_len);
    hs_buf o = {0};
    hs__dot_header(&o, v, "");
    write_box(c, &o, 0, 0);
    if (v->overlay != HS_OVERLAY_NONE) {
        double lx, ly;
        legend_place(c, &lx, &ly);
        char extra[96];
        snprintf(extra, sizeof extra, ", pos=\"%.2f,%.2f\"", lx, ly);
        hs__overlay_legend(&o, v, extra);
    }
    hs_buf pos = {0};
    edge_path t = {0};
    for (int e = 0; e < v->n_edges; e++) {
        pos.len = 0;
        if (pos.data)
            pos.data[0] = '\0';
        char head_lp[64];
        edge_path_of(c, e, &t);
        edge_pos(&t, &pos, head_lp, sizeof head_lp);
        hs__dot_edge(&o, v, &v->edges[e], pos.data && pos.data[0] ? pos.data : NULL,
                     head_lp[0] ? head_lp : NULL);
    }
    hs__buf_puts(&o, "}\n");
    oom = pos.oom || t.oom;
    free(t.p);
    hs__buf_free(&pos);
    if (oom) {
        hs__buf_free(&o);
        return nomem(c);
    }
    char *dot = NULL;
    size_t dot_len = 0;
    hs_status st = hs__buf_finish(&o, &dot, &dot_len, "rendering", c->err);
    if (st != HS_OK)
        return st;
    if (strcmp(format, "dot") == 0) {
        *out = dot;
        if (out_len)
            *out_len = dot_len;
        return HS_OK;
    }
    int64_t left = c->deadline_ms - hs_now_ns() / 1000000;
    if (left <= 0) {
        free(dot);
        return hs_error_set(c->err, HS_ERR_CANCELLED,
                            "layout timed out while composing");
    }
    int64_t t0 = hs_now_ns();
    st = hs_render_layout(dot, HS_RENDER_ENGINE_PINNED, format, left, out,
                          out_len, c->err);
    c->stats->layout_seconds += (double)(hs_now_ns() - t0) / 1e9;
    free(dot);
    return st;
}

hs_status hs_render_graph_composed(const hs_module *m,
                                   const hs_render_options *o,
                                   const char *format, int64_t timeout_ms,
                                   char **out, size_t *out_len,
                                   hs_render_compose_stats *stats,
                                   hs_error *err)
{
    hs_error_clear(err);
    *out = NULL;
    if (out_len)
        *out_len = 0;
    hs_render_compose_stats own;
    if (!stats)
        stats = &own;
    memset(stats, 0, sizeof *stats);
    if (!format)
        format = "svg";
    if (timeout_ms <= 0)
        timeout_ms = HS_RENDER_DEFAULT_TIMEOUT_MS;
    hs_view v;
    hs_status st = hs__view_build(m, o, &v, err);
    if (st != HS_OK)
        return st;
    const char *large = getenv("HS_COMPOSE_LARGE_BOX");
    composer c = {.v = &v, .err = err, .stats = stats,
                  .large_box = large && *large ? atol(large) : LARGE_BOX_ITEMS,
                  .deadline_ms = hs_now_ns() / 1000000 + timeout_ms};
    stats->nodes = v.n_nodes;
    stats->edges = v.n_edges;
    st = compose(&c, format, out, out_len);
    for (int b = 0; b < c.n_boxes; b++) {
        free(c.boxes[b].items);
        hs__piece_free(c.boxes[b].piece);
    }
    free(c.boxes);
    free(c.box_of_group);
    free(c.box_of_cluster);
    free(c.node_box);
    free(c.node_slot);
    free(c.node_w);
    free(c.node_h);
    free(c.subs);
    free(c.slots);
    free(c.seg_first);
    free(c.seg_n);
    free(c.segs);
    hs__view_free(&v);
    return st;
}
