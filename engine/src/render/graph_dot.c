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

static void write_node(hs_buf *b, const hs_view *v, const hs_vnode *n,
                       int depth)
{
    const hs_instruction *i = n->instr;
    hs_rcat cat = i ? hs__render_category(i) : HS_RCAT_LAYER;
    hs_node_style st = hs__node_style(cat, i);
    for (int k = 0; k < depth; k++)
        hs__buf_puts(b, "  ");
    hs__buf_printf(b, "\"%s\" [id=\"%s\", label=\"", n->id, n->id);
    hs__node_label(b, v, n);
    hs__buf_puts(b, "\", tooltip=\"");
    hs__node_tooltip(b, v, n);
    hs__buf_printf(b, "\", fillcolor=\"%s\", color=\"%s\", fontcolor=\"%s\"",
                    st.fill, st.stroke, st.font);
    if (!i)
        hs__buf_puts(b, ", shape=box3d");
    else if (i->opcode == HS_OP_WHILE)
        hs__buf_puts(b, ", shape=ellipse");
    if (i && in_host_memory(&i->shape))
        hs__buf_puts(b, ", peripheries=2");
    if (n->is_root)
        hs__buf_puts(b, ", penwidth=3");
    hs__buf_puts(b, "];\n");
}

/* "condition of while.3", "body of while.3", "branch 1 of cond.2". */
static void cluster_role(hs_buf *b, const hs_vcluster *c)
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
    cluster_role(b, c);
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

static void write_edge(hs_buf *b, const hs_view *v, const hs_vedge *e)
{
    const char *from = v->nodes[e->from].id, *to = v->nodes[e->to].id;
    hs__buf_printf(b, "  \"%s\" -> \"%s\" [id=\"e:%s:%s", from, to, from, to);
    if (e->kind == HS_VEDGE_CALL) {
        const hs_vcluster *c = &v->clusters[e->ltail];
        hs__buf_printf(b, ":call:%s\", ltail=\"%s\", style=dashed, "
                           "tooltip=\"",
                        c->id, c->id);
        hs__dot_text(b, c->comp->name, 64);
        hs__buf_puts(b, " -> ");
        hs__dot_text(b, v->nodes[e->to].instr ? v->nodes[e->to].instr->name
                                              : v->nodes[e->to].layer,
                     64);
        hs__buf_puts(b, "\"];\n");
    } else if (e->operand_index >= 0) {
        hs__buf_printf(b, ":%d\", headlabel=\"%d\", labeldistance=2];\n",
                        e->operand_index, e->operand_index);
    } else {
        hs__buf_puts(b, "\"];\n");
    }
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
    hs__buf_puts(&b, "digraph G {\n  graph [rankdir=TB, compound=true, "
                      "labelloc=t, fontname=\"Helvetica\", tooltip=\" \", "
                      "label=\"");
    hs__dot_text(&b, v.title, 120);
    if (v.top != m->entry) {
        hs__buf_puts(&b, "\\ncomputation ");
        hs__dot_text(&b, v.top->name, 120);
    }
    hs__buf_puts(&b, "\"];\n  node [shape=rect, style=filled, "
                      "fontname=\"Helvetica\", fontsize=10];\n"
                      "  edge [fontname=\"Helvetica\", fontsize=9];\n");
    for (int k = 0; k < v.n_top_nodes; k++)
        write_node(&b, &v, &v.nodes[v.top_nodes[k]], 1);
    for (int k = 0; k < v.n_top_clusters; k++)
        write_cluster(&b, &v, v.top_clusters[k], 1);
    /* Edges come last: an edge out of a cluster must follow the cluster
     * and its target (as XLA's dumper notes). */
    for (int k = 0; k < v.n_edges; k++)
        write_edge(&b, &v, &v.edges[k]);
    hs__buf_puts(&b, "}\n");
    hs__view_free(&v);
    return hs__buf_finish(&b, out, out_len, "rendering", err);
}
