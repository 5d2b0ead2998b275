/* graph_json.c - the view graph as JSON (jansson), for the browser: the
 * same nodes, edges and clusters as the DOT form, with the data a client
 * needs to draw or filter them itself. Strings are cleaned to valid UTF-8
 * first, since the names come from the user. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render/render_internal.h"

enum { TEXT_CHARS = 1000 };

/* A cleaned string (s may be NULL: JSON null); n bytes when n > 0. */
static json_t *jtext(const char *s, size_t n)
{
    if (!s)
        return json_null();
    hs_buf b = {0};
    if (n) {
        char *copy = strndup(s, n);
        if (!copy)
            return NULL;
        hs__text_clean(&b, copy, TEXT_CHARS);
        free(copy);
    } else {
        hs__text_clean(&b, s, TEXT_CHARS);
    }
    json_t *j = b.oom ? NULL : json_stringn(b.data ? b.data : "", b.len);
    hs__buf_free(&b);
    return j;
}

static int put(json_t *obj, const char *key, json_t *value)
{
    return value ? json_object_set_new(obj, key, value) : -1;
}

/* A cost model figure: null without costs, or when a hostile trip count
 * made it overflow (JSON has no infinity). */
static json_t *figure(const hs_view *v, double x)
{
    return v->costs && isfinite(x) ? json_real(x) : json_null();
}

static json_t *node_json(const hs_view *v, const hs_vnode *n)
{
    json_t *j = json_object();
    if (!j)
        return NULL;
    const hs_instruction *i = n->instr;
    char shape[256];
    int bad = 0;
    bad |= put(j, "id", json_string(n->id));
    if (i) {
        hs__shape_text(&i->shape, shape, sizeof shape);
        const char *op = i->opcode == HS_OP_UNKNOWN && i->unknown_opcode
                             ? i->unknown_opcode
                             : hs_opcode_name(i->opcode);
        bad |= put(j, "name", jtext(i->name, 0));
        bad |= put(j, "opcode", jtext(op, 0));
        bad |= put(j, "category", json_string(hs__rcat_name(
                                      hs__render_category(i))));
        bad |= put(j, "shape", jtext(shape, 0));
        bad |= put(j, "op_name", jtext(i->op_name, 0));
    } else {
        bad |= put(j, "name", jtext(n->layer, 0));
        bad |= put(j, "label", jtext(n->label, 0));
        bad |= put(j, "opcode", json_string("layer"));
        bad |= put(j, "category", json_string(hs__rcat_name(HS_RCAT_LAYER)));
        bad |= put(j, "shape", json_null());
        bad |= put(j, "op_name", jtext(n->layer, 0));
    }
    bad |= put(j, "bytes", json_integer(n->bytes));
    bad |= put(j, "per_device_bytes", n->sharded
                                          ? json_integer(n->per_device_bytes)
                                          : json_null());
    bad |= put(j, "global_bytes", n->sharded ? json_integer(n->global_bytes)
                                             : json_null());
    bad |= put(j, "flops", figure(v, n->flops));
    bad |= put(j, "seconds", figure(v, n->seconds));
    bad |= put(j, "memory_space",
               json_string(hs__memory_space_name(n->spaces)));
    if (v->overlay != HS_OVERLAY_NONE) {
        hs_node_style st;
        hs__overlay_style(v, n, &st);
        bad |= put(j, "fill", json_string(st.fill));
    }
    bad |= put(j, "layer", n->layer ? jtext(n->layer, n->layer_len)
                                    : json_null());
    bad |= put(j, "computation", jtext(n->comp->name, 0));
    bad |= put(j, "cluster", n->cluster >= 0
                                 ? json_string(v->clusters[n->cluster].id)
                                 : json_null());
    bad |= put(j, "group", n->group >= 0 && v->tree
                               ? jtext(v->tree->groups[n->group].path, 0)
                               : json_null());
    bad |= put(j, "is_root", json_boolean(n->is_root));
    bad |= put(j, "collapsed_count", json_integer(n->collapsed_count));
    if (bad) {
        json_decref(j);
        return NULL;
    }
    return j;
}

static json_t *edge_json(const hs_view *v, const hs_vedge *e)
{
    json_t *j = json_object();
    if (!j)
        return NULL;
    int bad = 0;
    bad |= put(j, "from", json_string(v->nodes[e->from].id));
    bad |= put(j, "to", json_string(v->nodes[e->to].id));
    bad |= put(j, "operand_index", json_integer(e->operand_index));
    bad |= put(j, "operands", json_integer(e->operands));
    bad |= put(j, "kind",
               json_string(e->kind == HS_VEDGE_CALL ? "call" : "operand"));
    if (e->kind == HS_VEDGE_CALL)
        bad |= put(j, "cluster", json_string(v->clusters[e->ltail].id));
    if (bad) {
        json_decref(j);
        return NULL;
    }
    return j;
}

static json_t *cluster_json(const hs_view *v, const hs_vcluster *c)
{
    json_t *j = json_object(), *nodes = json_array();
    if (!j || !nodes) {
        json_decref(j);
        json_decref(nodes);
        return NULL;
    }
    int bad = 0;
    for (int k = 0; k < c->n_nodes; k++)
        bad |= json_array_append_new(nodes,
                                     json_string(v->nodes[c->nodes[k]].id));
    bad |= put(j, "id", json_string(c->id));
    bad |= put(j, "computation", jtext(c->comp->name, 0));
    bad |= put(j, "parent", c->parent >= 0
                                ? json_string(v->clusters[c->parent].id)
                                : json_null());
    bad |= put(j, "caller", jtext(c->caller->name, 0));
    bad |= put(j, "nodes", nodes);
    if (bad) {
        json_decref(j);
        return NULL;
    }
    return j;
}

/* The group tree: every group with its place, counts and whether this
 * view draws it open. */
static json_t *group_json(const hs_view *v, int g)
{
    const hs_group_tree *t = v->tree;
    const hs_group *x = &t->groups[g];
    json_t *j = json_object(), *kids = json_array();
    if (!j || !kids) {
        json_decref(j);
        json_decref(kids);
        return NULL;
    }
    int bad = 0;
    for (int k = 0; k < x->n_children; k++)
        bad |= json_array_append_new(
            kids, jtext(t->groups[x->children[k]].path, 0));
    char fp[24];
    snprintf(fp, sizeof fp, "%016llx", (unsigned long long)x->fingerprint);
    bad |= put(j, "path", jtext(x->path, 0));
    bad |= put(j, "local", jtext(x->local, 0));
    bad |= put(j, "label", jtext(x->label, 0));
    bad |= put(j, "kind", json_string(hs_group_kind_name(x->kind)));
    bad |= put(j, "parent", x->parent >= 0
                                ? jtext(t->groups[x->parent].path, 0)
                                : json_null());
    bad |= put(j, "depth", json_integer(x->depth));
    bad |= put(j, "computation", jtext(x->computation->name, 0));
    bad |= put(j, "instructions", json_integer(x->instructions));
    bad |= put(j, "repeat", json_integer(x->repeat));
    bad |= put(j, "fingerprint", json_string(fp));
    bad |= put(j, "open", json_boolean(v->open[g]));
    bad |= put(j, "children", kids);
    if (bad) {
        json_decref(j);
        return NULL;
    }
    return j;
}

/* The overlay's kind and scale, or null. */
static json_t *overlay_json(const hs_view *v)
{
    if (v->overlay == HS_OVERLAY_NONE)
        return json_null();
    const char *unit = hs__overlay_unit(v->overlay);
    if (!unit)
        return json_pack("{s:s, s:n, s:n, s:n, s:n}", "kind",
                         hs_render_overlay_name(v->overlay), "unit", "min",
                         "max", "scale");
    return json_pack("{s:s, s:s, s:f, s:f, s:s}", "kind",
                     hs_render_overlay_name(v->overlay), "unit", unit, "min",
                     v->scale_lo, "max", v->scale_hi, "scale", "log");
}

static json_t *view_json(const hs_view *v)
{
    json_t *root = json_object();
    json_t *nodes = json_array(), *edges = json_array();
    json_t *clusters = json_array(), *stats = json_object();
    json_t *groups = json_array();
    int bad = !root || !nodes || !edges || !clusters || !stats || !groups;
    for (int k = 0; !bad && v->tree && k < v->tree->n_groups; k++)
        bad |= json_array_append_new(groups, group_json(v, k));
    for (int k = 0; !bad && k < v->n_nodes; k++)
        bad |= json_array_append_new(nodes, node_json(v, &v->nodes[k]));
    for (int k = 0; !bad && k < v->n_edges; k++)
        bad |= json_array_append_new(edges, edge_json(v, &v->edges[k]));
    for (int k = 0; !bad && k < v->n_clusters; k++)
        bad |= json_array_append_new(clusters,
                                     cluster_json(v, &v->clusters[k]));
    if (!bad) {
        bad |= put(stats, "instructions", json_integer(v->instructions));
        bad |= put(stats, "nodes", json_integer(v->n_nodes));
        bad |= put(stats, "edges", json_integer(v->n_edges));
        bad |= put(stats, "clusters", json_integer(v->n_clusters));
        bad |= put(stats, "layers_collapsed",
                   json_integer(v->layers_collapsed));
        bad |= put(root, "module", jtext(v->module->name, 0));
        bad |= put(root, "computation", jtext(v->top->name, 0));
        bad |= put(root, "title", jtext(v->title, 0));
        bad |= json_object_set(root, "nodes", nodes);
        bad |= json_object_set(root, "edges", edges);
        bad |= json_object_set(root, "clusters", clusters);
        bad |= json_object_set(root, "stats", stats);
        bad |= json_object_set(root, "groups", groups);
        bad |= put(root, "overlay", overlay_json(v));
    }
    json_decref(groups);
    json_decref(nodes);
    json_decref(edges);
    json_decref(clusters);
    json_decref(stats);
    if (bad) {
        json_decref(root);
        return NULL;
    }
    return root;
}

hs_status hs_render_graph_json(const hs_module *m, const hs_render_options *o,
                               char **out, size_t *out_len, hs_error *err)
{
    hs_error_clear(err);
    *out = NULL;
    if (out_len)
        *out_len = 0;
    hs_view v;
    hs_status st = hs__view_build(m, o, &v, err);
    if (st != HS_OK)
        return st;
    json_t *root = view_json(&v);
    hs__view_free(&v);
    char *text = root ? json_dumps(root, JSON_COMPACT) : NULL;
    json_decref(root);
    /* Copied so that the caller frees with free() even when jansson's
     * allocator has been replaced. */
    size_t len = text ? strlen(text) : 0;
    char *copy = text ? malloc(len + 1) : NULL;
    if (copy)
        memcpy(copy, text, len + 1);
    if (text) {
        json_free_t free_fn = NULL;
        json_get_alloc_funcs(NULL, &free_fn);
        (free_fn ? free_fn : free)(text);
    }
    if (!copy)
        return hs_error_set(err, HS_ERR_NOMEM,
                            "out of host memory while rendering");
    *out = copy;
    if (out_len)
        *out_len = len;
    return HS_OK;
}
