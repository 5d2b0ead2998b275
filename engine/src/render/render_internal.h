/* render_internal.h - what the files of the render module share: a text
 * buffer, escaping, the palette, and the view graph that the DOT and JSON
 * writers both print. */
#ifndef HLOSCOPE_RENDER_INTERNAL_H
#define HLOSCOPE_RENDER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hloscope/hs_groups.h"
#include "hloscope/hs_ir.h"
#include "hloscope/hs_render.h"

#include "ir/strbuf.h"

/* ---- escaping (escape.c) ----------------------------------------------- */

/* Appends s made safe to show: valid UTF-8 is kept, invalid bytes and
 * control characters become '?', and text beyond max_chars characters (0 =
 * no limit) is cut with "...". The result never contains '\0', '\n' or
 * bytes < 0x20. */
void hs__text_clean(hs_buf *b, const char *s, size_t max_chars);
/* Appends s cleaned (as above) and escaped for the inside of a DOT quoted
 * string: '"' and '\\' get a backslash. */
void hs__dot_text(hs_buf *b, const char *s, size_t max_chars);
/* Appends s as a DOT quoted string: '"' + hs__dot_text + '"'. */
void hs__dot_quoted(hs_buf *b, const char *s, size_t max_chars);
/* A stable id for a name: bytes outside [A-Za-z0-9_.-] become %HH. The
 * encoding is injective and its output needs no escaping anywhere. */
void hs__id_encode(hs_buf *b, const char *s);
/* Human bytes: "512 B", "1.5 KiB", "3.00 MiB". */
void hs__format_bytes(char *buf, size_t size, double bytes);

/* ---- palette (palette.c) ----------------------------------------------- */

/* Render categories: the opcode table's categories, plus host transfers
 * (split out of copies and custom-calls) and collapsed layers. */
typedef enum hs_rcat {
    HS_RCAT_PARAMETER,
    HS_RCAT_CONSTANT,
    HS_RCAT_ELEMENTWISE,
    HS_RCAT_DATA_MOVEMENT,
    HS_RCAT_DOT,
    HS_RCAT_REDUCTION,
    HS_RCAT_TUPLE,
    HS_RCAT_CONTROL,
    HS_RCAT_FUSION,
    HS_RCAT_CUSTOM_CALL,
    HS_RCAT_COPY,
    HS_RCAT_HOST_TRANSFER,
    HS_RCAT_COLLECTIVE,
    HS_RCAT_OTHER,
    HS_RCAT_LAYER,
    HS_RCAT_COUNT
} hs_rcat;

typedef struct hs_node_style {
    const char *fill, *stroke, *font;
} hs_node_style;

hs_rcat hs__render_category(const hs_instruction *i);
const char *hs__rcat_name(hs_rcat c);
/* Colours of a node: parameters with >= 4096 elements get the darker
 * orange and scalar element-wise ops white, as in XLA. */
hs_node_style hs__node_style(hs_rcat c, const hs_instruction *i);
/* A fill colour for buffer boxes and Gantt segments, chosen by a key. */
const char *hs__key_colour(const char *key, size_t len);

/* ---- layers (layers.c) -------------------------------------------------- */

/* The layer key of an op_name: "layers.N" when op_name is "layers.N" or
 * starts with "layers.N/". Returns its length (0 when none). */
size_t hs__layer_key(const char *op_name);

typedef struct hs_expand {
    bool all;
    int n;
    const char **keys; /* pointers into text, lengths in lens */
    size_t *lens;
} hs_expand;

/* Parses the expand list; keys live in arena a. */
hs_status hs__expand_parse(hs_arena *a, const char *text, hs_expand *out,
                           hs_error *err);
/* Which groups of t a view draws open (open[g]): all for "all"; else the
 * top levels while the visible nodes stay within budget (the layers of a
 * repeat closed), loop bodies of at most one group (scan bodies), and the
 * groups e names with their ancestors. is_loop_part is by computation
 * index. */
hs_status hs__groups_open(const hs_group_tree *t, const hs_expand *e,
                          int64_t budget, const bool *is_loop_part,
                          bool *open, hs_error *err);

/* ---- the view graph (view.c) ------------------------------------------- */

typedef struct hs_vnode {
    const char *id;               /* encoded, safe in DOT and JSON */
    const hs_instruction *instr;  /* NULL for a collapsed layer */
    const hs_computation *comp;
    const char *layer;            /* layer key, group's local path, or NULL */
    size_t layer_len;
    const char *label;            /* a closed group's label */
    int group;                    /* closed group, or instruction's innermost
                                     group; -1 none */
    int cluster;                  /* -1: top level */
    int collapsed_count;          /* 0 for an instruction node */
    int64_t bytes;
    /* sharded: something in the node carries a sharding (hs_sharding.h);
     * then what one device holds of its outputs and their global size,
     * its unsharded instructions counted whole in both. */
    bool sharded;
    int64_t per_device_bytes, global_bytes;
    bool is_root;
    /* the cost model's figures summed over the instructions the node
     * stands for (hs_render_options.costs), and the memory spaces of their
     * outputs (HS_SPACE_* bits) */
    double flops, seconds;
    unsigned spaces;
} hs_vnode;

enum { HS_SPACE_DEVICE = 1u, HS_SPACE_HOST = 2u };

typedef enum hs_vedge_kind { HS_VEDGE_OPERAND, HS_VEDGE_CALL } hs_vedge_kind;

typedef struct hs_vedge {
    int from, to;
    int operand_index; /* -1: not drawn */
    hs_vedge_kind kind;
    int ltail;         /* call edges: the cluster of from; else -1 */
    int operands;      /* operand slots this edge stands for: more than 1
                          when a closed group feeds several operands of
                          one user (drawn once, thicker) */
} hs_vedge;

typedef struct hs_vcluster {
    const char *id; /* "cluster_" + encoded computation name */
    const hs_computation *comp;
    const hs_instruction *caller; /* first visible caller */
    int parent;                   /* -1: top level */
    /* children, filled by hs__view_index: node and cluster indices */
    int n_nodes, *nodes;
    int n_children, *children;
} hs_vcluster;

typedef struct hs_view {
    hs_arena *arena; /* everything below lives here */
    const hs_module *module;
    const hs_computation *top;
    const char *title;
    bool partitioned; /* hs_module_is_partitioned: shapes are per-device */
    int n_nodes, cap_nodes;
    hs_vnode *nodes;
    int n_edges, cap_edges;
    hs_vedge *edges;
    int n_clusters, cap_clusters;
    hs_vcluster *clusters;
    /* top-level members, filled by hs__view_index */
    int n_top_nodes, *top_nodes;
    int n_top_clusters, *top_clusters;
    int64_t instructions; /* instructions the view stands for */
    int layers_collapsed;
    const hs_group_tree *tree; /* the groups of top */
    const bool *open;          /* per group */
    /* the overlay (overlay.c): its kind, the costs the nodes sum, and the
     * scale's ends (the smallest and largest nonzero value drawn) */
    hs_render_overlay overlay;
    const hs_render_cost *costs;
    int64_t n_costs;
    double scale_lo, scale_hi;
} hs_view;

/* Makes room for item n of *items (cap doubling from 64); false on OOM. */
bool hs__grow_array(void **items, int n, int *cap, size_t size);

/* Builds the view of m that o asks for. On failure the view is freed. */
hs_status hs__view_build(const hs_module *m, const hs_render_options *o,
                         hs_view *v, hs_error *err);
void hs__view_free(hs_view *v);

/* ---- overlays (overlay.c) ---------------------------------------------- */

/* Adds instruction i's cost and memory spaces to node n. */
void hs__overlay_count(const hs_view *v, hs_vnode *n, const hs_instruction *i);
/* Checks o's overlay against its costs (HS_ERR_INVALID "overlay: ...")
 * and, once the nodes are counted, finds the scale's ends. */
hs_status hs__overlay_check(const hs_render_options *o, hs_error *err);
void hs__overlay_scale(hs_view *v);
/* The node's colours under the view's overlay; false when it has none
 * (the category's colours apply). */
bool hs__overlay_style(const hs_view *v, const hs_vnode *n, hs_node_style *st);
/* "device", "host" or "mixed". */
const char *hs__memory_space_name(unsigned spaces);
/* The legend as a DOT node statement "legend:overlay" (an HTML-like
 * table: the overlay's name, its colours, the scale's ends in units), with
 * extra appended to its attributes; nothing without an overlay. Its size
 * in points, for a pinned drawing. */
void hs__overlay_legend(hs_buf *b, const hs_view *v, const char *extra);
void hs__overlay_legend_size(const hs_view *v, double *w, double *h);
/* The overlay's unit and the scale's ends in it, as text ("1.50 MiB"). */
const char *hs__overlay_unit(hs_render_overlay o);

/* ---- node text (labels.c) ---------------------------------------------- */

/* The label lines of a node, each escaped for a DOT string and joined with
 * "\\n"; the tooltip likewise. */
void hs__node_label(hs_buf *b, const hs_view *v, const hs_vnode *n);
void hs__node_tooltip(hs_buf *b, const hs_view *v, const hs_vnode *n);
/* "f32[2,16]{1,0}" (cut at max characters) into buf. */
void hs__shape_text(const hs_shape *s, char *buf, size_t size);
/* Short text for a called computation: "add", "max", ... or its name. */
const char *hs__trivial_computation(const hs_computation *c);

/* ---- DOT pieces (graph_dot.c), shared with the composer ---------------- */

/* "digraph G {", the graph's title and defaults; graph_attrs ("" or
 * "compound=true, ") go into its graph [...] line. */
void hs__dot_header(hs_buf *b, const hs_view *v, const char *graph_attrs);
/* A node statement; extra (NULL: none) is appended to its attributes,
 * starting with ", ". */
void hs__dot_node(hs_buf *b, const hs_view *v, const hs_vnode *n, int depth,
                  const char *extra);
/* An edge statement; pos (NULL: none) is its spline, already placed, and
 * head_lp (NULL: none) where its operand number goes. */
void hs__dot_edge(hs_buf *b, const hs_view *v, const hs_vedge *e,
                  const char *pos, const char *head_lp);
/* "body of while.3", "fused expression for fusion.2", ... */
void hs__dot_cluster_role(hs_buf *b, const hs_vcluster *c);
/* How a node is drawn, for the DOT and the SVG writer alike: its colours
 * (overlay included), outline, a second outline for host memory, a thick
 * pen for the root. */
typedef enum hs_node_shape { HS_SHAPE_RECT, HS_SHAPE_ELLIPSE, HS_SHAPE_BOX3D } hs_node_shape;
typedef struct hs_node_look {
    hs_node_style colours;
    hs_node_shape shape;
    int peripheries;
    double penwidth;
} hs_node_look;
hs_node_look hs__node_look(const hs_view *v, const hs_vnode *n);
/* An edge's id "e:<from>:<to>[:<operand>|:call:<cluster>]", its pen (a
 * bundle of operands is thicker) and, for a call edge, its tooltip
 * (escaped for a DOT string). */
void hs__edge_id(hs_buf *b, const hs_view *v, const hs_vedge *e);
double hs__edge_width(const hs_vedge *e);
void hs__edge_tooltip(hs_buf *b, const hs_view *v, const hs_vedge *e);
/* The graph's title (escaped for a DOT string, lines joined by "\\n"). */
void hs__graph_label(hs_buf *b, const hs_view *v);

/* ---- SVG of a composed drawing (svg.c) --------------------------------- */

/* The drawing's extent in layout points (y up); the SVG is translated so
 * that (llx, lly) is its lower-left corner, as Graphviz's is. */
typedef struct hs_svg_frame {
    bool empty; /* nothing added yet */
    double llx, lly, urx, ury;
    double title_y; /* the title's centre, set by hs__svg_frame_title */
} hs_svg_frame;
void hs__svg_frame_add(hs_svg_frame *f, double x0, double y0, double x1,
                       double y1);
/* Room for the title (DOT-escaped, as hs__graph_label writes it) above. */
void hs__svg_frame_title(hs_svg_frame *f, const char *title);

/* A box: label and tooltip DOT-escaped, style as in DOT ("rounded,dashed"). */
typedef struct hs_svg_cluster {
    const char *id, *label, *tooltip, *style, *fill, *stroke;
    double x0, y0, x1, y1; /* its bb */
    double lx, ly;         /* its label's centre */
    int fontsize;
} hs_svg_cluster;

typedef struct hs_svg_legend_cell {
    const char *fill, *font, *text; /* text may be NULL */
} hs_svg_legend_cell;
/* The legend's rows are this many points high, inside a 1-point border. */
#define HS_LEGEND_ROW 17.0
typedef struct hs_svg_legend {
    const char *tooltip, *title, *lo, *hi, *note;
    int n_cells;
    hs_svg_legend_cell cells[16];
    double cx, cy; /* its centre, set by the caller */
    double w, h;   /* the table's size */
    char lo_buf[48], hi_buf[48], tip_buf[64];
} hs_svg_legend;
/* The overlay legend's texts, colours and table size (overlay.c); v has
 * an overlay. */
void hs__overlay_legend_cells(const hs_view *v, hs_svg_legend *l);

void hs__svg_begin(hs_buf *b, const hs_svg_frame *f, const char *title);
void hs__svg_end(hs_buf *b);
void hs__svg_cluster(hs_buf *b, const hs_svg_frame *f, const hs_svg_cluster *c);
/* Node n centred at (cx, cy), w x h points; scratch is the caller's buffer
 * for its texts. */
void hs__svg_node(hs_buf *b, const hs_svg_frame *f, const hs_view *v,
                  const hs_vnode *n, double cx, double cy, double w, double h,
                  hs_buf *scratch);
/* How far a node's drawing reaches past its box (its second outline). */
double hs__svg_node_margin(const hs_view *v, const hs_vnode *n);
/* Edge e along the B-spline pts (n points, x y pairs), then an arrow to
 * (ex, ey) when has_end; head_lp (NULL: none) is where its operand number
 * goes. */
void hs__svg_edge(hs_buf *b, const hs_svg_frame *f, const hs_view *v,
                  const hs_vedge *e, const double *pts, int n, bool has_end,
                  double ex, double ey, const double *head_lp, hs_buf *scratch);
void hs__svg_legend(hs_buf *b, const hs_svg_frame *f, const hs_svg_legend *l);

/* ---- pinned drawings (pinned.c) ---------------------------------------- */

/* Helpers that write nodes at fixed positions (points, y up). */
typedef struct hs_pinned {
    hs_buf *b;
    int next_id;          /* for generated node names */
    double width, height; /* the canvas */
} hs_pinned;

void hs__pinned_begin(hs_pinned *p, const char *title, double width,
                      double height);
void hs__pinned_end(hs_pinned *p);
/* A filled box with lower-left corner (x, y). label (plain text) may be
 * NULL; tooltip_dot is text already escaped for a DOT string (NULL: none);
 * id (already safe) may be NULL. */
void hs__pinned_box(hs_pinned *p, double x, double y, double w, double h,
                    const char *fill, const char *stroke, const char *label,
                    const char *tooltip_dot, const char *id);
/* A line from (x0, y0) to (x1, y1); horizontal or vertical only. */
void hs__pinned_line(hs_pinned *p, double x0, double y0, double x1, double y1,
                     double width, const char *colour, bool dashed);
/* Text at (x, y): align 'l' starts it at x, 'r' ends it at x, else it is
 * centred on x. */
void hs__pinned_text(hs_pinned *p, double x, double y, const char *text,
                     double font_size, const char *colour, char align);
/* Up to max_ticks "nice" tick values (1, 2, 5 x 10^k) covering [lo, hi];
 * returns how many were written. */
int hs__nice_ticks(double lo, double hi, int max_ticks, double *ticks);
/* The same for bytes from 0 to hi, in steps that are nice in binary units
 * (1, 2, 5 x 10^k KiB, MiB, ...). ticks needs max_ticks + 2 slots. */
int hs__byte_ticks(double hi, int max_ticks, double *ticks);
/* Axis tick label for value v: integers for program order, "12 ms"-style
 * for seconds, "1.5 MiB" for bytes. */
typedef enum hs_tick_unit { HS_TICK_COUNT, HS_TICK_SECONDS, HS_TICK_BYTES } hs_tick_unit;
void hs__tick_label(char *buf, size_t size, double v, hs_tick_unit u);

#endif
