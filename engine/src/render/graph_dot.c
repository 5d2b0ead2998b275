/* graph_dot.c - the view graph as DOT, in the conventions of XLA's graph
 * dumper: filled rectangles coloured by category, while as an ellipse,
 * operand numbers as head labels on edges into multi-operand users, called
 * computations as clusters with a dashed edge from their root to the
 * caller (ltail, compound=true), inter-cluster edges last. Every node,
 * cluster and edge carries an `id` attribute, which becomes the SVG
 * element id, so that a browser can find an instruction by its name. */
#include <stdlib.h>
#include <string.h>

#include "render/render_internal.h"

static bool in_host_memory(const hs_shape *s)
{
    if (s->dtype == HS_TUPLE)
        return false;
    return s->memory_space == HS_MEMSPACE_HOST;
}

hs_node_look hs__node_look(const hs_view *v, const hs_vnode *n)
{
    const hs_instruction *i = n->instr;
    hs_rcat cat = i ? hs__render_category(i) : HS_RCAT_LAYER;
    hs_node_look look = {.colours = hs__node_style(cat, i),
                         .shape = !i ? HS_SHAPE_BOX3D
                                  : i->opcode == HS_OP_WHILE ? HS_SHAPE_ELLIPSE
                                                             : HS_SHAPE_RECT,
                         .peripheries = i && in_host_memory(&i->shape) ? 2 : 1,
                         .penwidth = n->is_root ? 3 : 1};
    hs__overlay_style(v, n, &look.colours);
    return look;
}

void hs__dot_node(hs_buf *b, const hs_view *v, const hs_vnode *n, int depth,
                  const char *extra)
{
    hs_node_look look = hs__node_look(v, n);
    for (int k = 0; k < depth; k++)
        hs__buf_puts(b, "  ");
    hs__buf_printf(b, "\"%s\" [id=\"%s\", label=\"", n->id, n->id);
    hs__node_label(b, v, n);
    hs__buf_puts(b, "\", tooltip=\"");
    hs__node_tooltip(b, v, n);
    hs__buf_printf(b, "\", fillcolor=\"%s\", color=\"%s\", fontcolor=\"%s\"",
                    look.colours.fill, look.colours.stroke, look.colours.font);
    if (look.shape == HS_SHAPE_BOX3D)
        hs__buf_puts(b, ", shape=box3d");
    else if (look.shape == HS_SHAPE_ELLIPSE)
        hs__buf_puts(b, ", shape=ellipse");
    if (look.peripheries == 2)
        hs__buf_puts(b, ", peripheries=2");
    if (look.penwidth != 1)
        hs__buf_puts(b, ", penwidth=3");
    if (extra)
        hs__buf_puts(b, extra);
    hs__buf_puts(b, "];\n");
}

static void write_node(hs_buf *b, const hs_view *v, const hs_vnode *n,
                       int depth)
{
    hs__dot_node(b, v, n, depth, NULL);
}

/* "condition of while.3", "body of while.3", "branch 1 of cond.2". */
void hs__dot_cluster_role(hs_buf *b, const hs_vcluster *c)
{
    const hs_instruction *i = c->caller;
    int slot = 0;
    for (int k = 0; k < i->n_called; k++)
        if (i->called[k] == c->comp) {
            slot = k;
            break;
        }
    switch (i->opcode) {
    case HS_OP_WHILE:
        hs__buf_puts(b, slot == 0 ? "condition of " : "body of ");
        break;
    case HS_OP_CONDITIONAL:
        hs__buf_printf(b, "branch %d of ", slot);
        break;
    case HS_OP_FUSION:
        hs__buf_puts(b, "fused expression for ");
        break;
    default:
        hs__buf_puts(b, "called by ");
        break;
    }
    hs__dot_text(b, i->name, 64);
}

static void write_cluster(hs_buf *b, const hs_view *v, int ci, int depth)
{
    const hs_vcluster *c = &v->clusters[ci];
    char pad[64];
    int np = depth * 2 < (int)sizeof pad - 1 ? depth * 2 : (int)sizeof pad - 1;
    memset(pad, ' ', (size_t)np);
    pad[np] = '\0';
    hs__buf_printf(b, "%ssubgraph \"%s\" {\n%s  id=\"%s\";\n%s  label=\"",
                    pad, c->id, pad, c->id, pad);
    hs__dot_text(b, c->comp->name, 64);
    hs__buf_puts(b, "\\n");
    hs__dot_cluster_role(b, c);
    hs__buf_printf(b, "\";\n%s  tooltip=\"", pad);
    hs__dot_text(b, c->comp->name, 200);
    if (c->caller->opcode == HS_OP_FUSION)
        hs__buf_printf(b, "\";\n%s  style=\"rounded,filled,bold\"; "
                           "fillcolor=\"#f5f5f5\"; color=\"#c2c2c2\";\n",
                        pad);
    else
        hs__buf_printf(b, "\";\n%s  style=rounded; color=black;\n", pad);
    for (int k = 0; k < c->n_nodes; k++)
        write_node(b, v, &v->nodes[c->nodes[k]], depth + 1);
    for (int k = 0; k < c->n_children; k++)
        write_cluster(b, v, c->children[k], depth + 1);
    hs__buf_printf(b, "%s}\n", pad);
}

/* A bundle's pen: 1 for one operand, growing with the log of the count
 * (2 operands 1.5, 8 operands 2.5, 64 and more 4). */
double hs__edge_width(const hs_vedge *e)
{
    double w = 1.0;
    if (e->kind == HS_VEDGE_CALL || e->operand_index >= 0)
        return w;
    for (int n = e->operands; n > 1 && w < 4.0; n >>= 1)
        w += 0.5;
    return w;
}

void hs__edge_id(hs_buf *b, const hs_view *v, const hs_vedge *e)
{
    hs__buf_printf(b, "e:%s:%s", v->nodes[e->from].id, v->nodes[e->to].id);
    if (e->kind == HS_VEDGE_CALL)
        hs__buf_printf(b, ":call:%s", v->clusters[e->ltail].id);
    else if (e->operand_index >= 0)
        hs__buf_printf(b, ":%d", e->operand_index);
}

void hs__edge_tooltip(hs_buf *b, const hs_view *v, const hs_vedge *e)
{
    const hs_vcluster *c = &v->clusters[e->ltail];
    hs__dot_text(b, c->comp->name, 64);
    hs__buf_puts(b, " -> ");
    hs__dot_text(b, v->nodes[e->to].instr ? v->nodes[e->to].instr->name
                                          : v->nodes[e->to].layer,
                 64);
}

void hs__dot_edge(hs_buf *b, const hs_view *v, const hs_vedge *e,
                  const char *pos, const char *head_lp)
{
    const char *from = v->nodes[e->from].id, *to = v->nodes[e->to].id;
    hs__buf_printf(b, "  \"%s\" -> \"%s\" [", from, to);
    if (pos)
        hs__buf_printf(b, "pos=\"%s\", ", pos);
    hs__buf_puts(b, "id=\"");
    hs__edge_id(b, v, e);
    if (e->kind == HS_VEDGE_CALL) {
        const hs_vcluster *c = &v->clusters[e->ltail];
        hs__buf_puts(b, "\", ");
        if (!pos) /* a composed drawing routes it through the border itself */
            hs__buf_printf(b, "ltail=\"%s\", ", c->id);
        hs__buf_puts(b, "style=dashed, tooltip=\"");
        hs__edge_tooltip(b, v, e);
        hs__buf_puts(b, "\"];\n");
    } else if (e->operand_index >= 0) {
        hs__buf_printf(b, "\", headlabel=\"%d\", labeldistance=2",
                        e->operand_index);
        if (head_lp) /* placed: Graphviz's own placement of many head
                        labels on pinned edges is quadratic */
            hs__buf_printf(b, ", head_lp=\"%s\"", head_lp);
        hs__buf_puts(b, "];\n");
    } else if (e->operands > 1) {
        /* a bundle: a closed group into several operands of one user */
        hs__buf_printf(b, "\", penwidth=%.1f];\n", hs__edge_width(e));
    } else {
        hs__buf_puts(b, "\"];\n");
    }
}

static void write_edge(hs_buf *b, const hs_view *v, const hs_vedge *e)
{
    hs__dot_edge(b, v, e, NULL, NULL);
}

void hs__graph_label(hs_buf *b, const hs_view *v)
{
    hs__dot_text(b, v->title, 120);
    if (v->top != v->module->entry) {
        hs__buf_puts(b, "\\ncomputation ");
        hs__dot_text(b, v->top->name, 120);
    }
}

void hs__dot_header(hs_buf *b, const hs_view *v, const char *graph_attrs)
{
    hs__buf_printf(b, "digraph G {\n  graph [rankdir=TB, %slabelloc=t, "
                      "fontname=\"Helvetica\", tooltip=\" \", label=\"",
                   graph_attrs);
    hs__graph_label(b, v);
    hs__buf_puts(b, "\"];\n  node [shape=rect, style=filled, "
                    "fontname=\"Helvetica\", fontsize=10];\n"
                    "  edge [fontname=\"Helvetica\", fontsize=9];\n");
}

hs_status hs_render_graph_dot(const hs_module *m, const hs_render_options *o,
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
    hs_buf b = {0};
    hs__dot_header(&b, &v, "compound=true, ");
    for (int k = 0; k < v.n_top_nodes; k++)
        write_node(&b, &v, &v.nodes[v.top_nodes[k]], 1);
    for (int k = 0; k < v.n_top_clusters; k++)
        write_cluster(&b, &v, v.top_clusters[k], 1);
    hs__overlay_legend(&b, &v, NULL);
    /* Edges come last: an edge out of a cluster must follow the cluster
     * and its target (as XLA's dumper notes). */
    for (int k = 0; k < v.n_edges; k++)
        write_edge(&b, &v, &v.edges[k]);
    hs__buf_puts(&b, "}\n");
    hs__view_free(&v);
    return hs__buf_finish(&b, out, out_len, "rendering", err);
}
