/*
 * hs_render.h - drawing: HLO graphs as DOT or JSON, memory timelines and
 * step Gantt charts as Graphviz graphs with pinned positions, and a layout
 * step that turns DOT into SVG in an isolated worker process.
 *
 *     hs_error err;
 *     hs_render_init(&err);       // optional: warm layout workers early
 *     ...
 *     hs_render_options o = {.expand = "layers.3"};   // a group path
 *     char *dot, *svg;
 *     size_t dot_len, svg_len;
 *     if (hs_render_graph_dot(module, &o, &dot, &dot_len, &err) == HS_OK &&
 *         hs_render_layout(dot, HS_RENDER_ENGINE_GRAPH, "svg", 5000, &svg,
 *                          &svg_len, &err) == HS_OK) {
 *         ... serve svg ...
 *     }
 *     free(dot); free(svg);
 *
 * Graphs follow XLA's graph dumper (xla/service/hlo_graph_dumper.cc): one
 * node per instruction coloured by opcode category, ROOT and parameters
 * marked, operand numbers on the edges of multi-operand users, called
 * computations (while body and condition, fusion, call, conditional
 * branches) as nested clusters named after the computation. Instructions
 * are drawn by the group tree of hs_groups.h (op_name scopes, layers found
 * from structure, called computations): the default view opens it level by
 * level while the view has at most HS_RENDER_DEFAULT_BUDGET nodes, the
 * layers of a repeat staying one node each; expand opens groups by path;
 * around draws one instruction's neighbourhood. A view larger than the
 * node limit is refused with HS_ERR_LIMIT instead of being handed to
 * Graphviz. docs/RENDER.md has the palette, the views and the isolation
 * design.
 *
 * Every text that comes from the user (names, op_names, shapes, frontend
 * attributes) is sanitized and escaped; no input can break out of a DOT
 * string or produce invalid JSON.
 *
 * Reentrant: the drawing functions keep no state between calls, work on
 * objects the caller owns and only read the module; the one process-wide
 * resource is the layout server behind hs_render_layout (guarded, shared
 * by all threads). Outputs are malloc'ed, NUL-terminated and freed by the
 * caller with free().
 */
#ifndef HLOSCOPE_HS_RENDER_H
#define HLOSCOPE_HS_RENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hloscope/hs_ir.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Limits and engines                                                       */
/* ------------------------------------------------------------------------ */

/* Nodes one graph view may have (instructions plus collapsed layers). */
#define HS_RENDER_DEFAULT_MAX_NODES 2000
/* Nodes the default view aims at: groups open level by level from the top
 * while the view has at most this many nodes. */
#define HS_RENDER_DEFAULT_BUDGET 300
/* Edges are bounded at this multiple of max_nodes. */
#define HS_RENDER_EDGES_PER_NODE 8
/* Boxes a memory timeline or Gantt chart draws (more are folded). */
#define HS_RENDER_DEFAULT_MAX_BOXES 2000
/* hs_render_layout: time limit when timeout_ms <= 0, and the largest
 * output it accepts. */
#define HS_RENDER_DEFAULT_TIMEOUT_MS 10000
#define HS_RENDER_MAX_OUTPUT_BYTES ((size_t)64 << 20)

/* The layout engine for each kind of drawing: "dot" for HLO graphs, "nop2"
 * (what `neato -n2` runs: positions given, nothing moved) for the pinned
 * drawings (memory timelines, Gantt charts). */
#define HS_RENDER_ENGINE_GRAPH "dot"
#define HS_RENDER_ENGINE_PINNED "nop2"

/* ------------------------------------------------------------------------ */
/* HLO graphs                                                               */
/* ------------------------------------------------------------------------ */

/* What a graph's nodes are filled by (docs/RENDER.md, "Overlays"): their
 * category (none), or a sequential scale of their output bytes, FLOPs or
 * simulated seconds, or their memory space (device, host S(5), or both
 * inside a closed group). */
typedef enum hs_render_overlay {
    HS_OVERLAY_NONE = 0,
    HS_OVERLAY_BYTES,
    HS_OVERLAY_FLOPS,
    HS_OVERLAY_TIME,
    HS_OVERLAY_MEMORY_SPACE
} hs_render_overlay;

/* "none", "bytes", "flops", "time", "memory_space" (NULL or "" is none);
 * anything else is HS_ERR_INVALID listing the names. */
hs_status hs_render_overlay_parse(const char *text, hs_render_overlay *out,
                                  hs_error *err);
const char *hs_render_overlay_name(hs_render_overlay o);

/* What the device's cost model charged one instruction over a run
 * (hs_device_estimate_each in hs_device.h; the render module only draws
 * it): FLOPs and simulated seconds. */
typedef struct hs_render_cost {
    double flops, seconds;
} hs_render_cost;

typedef struct hs_render_options {
    /* Render this computation only (with what it calls); NULL: the entry
     * computation. An unknown name is HS_ERR_INVALID. */
    const char *computation;
    /* Groups to draw open, comma-separated paths of the group tree
     * (hs_groups.h: "layers.3", "run.0/layer.5", "@body/layers.1"; a
     * computation's own paths work without the "@name/" prefix); "all" (or
     * "*") opens every group. A path that names no group of this view is
     * ignored (the same link works for every stage); a malformed one is
     * HS_ERR_INVALID. Besides these, groups open level by level from the
     * top while the view stays within budget, the layers of a repeat
     * (identical siblings) staying closed. */
    const char *expand;
    /* The default view's node budget; 0 = HS_RENDER_DEFAULT_BUDGET. */
    int64_t budget;
    /* Draw only the neighbourhood of this instruction: every instruction
     * of its computation within `hops` operand/user edges of it (0 =
     * HS_RENDER_DEFAULT_HOPS), none collapsed, called computations not
     * drawn. An unknown name is HS_ERR_INVALID. */
    const char *around;
    int hops;
    /* Node budget; 0 = HS_RENDER_DEFAULT_MAX_NODES. Larger views give
     * HS_ERR_LIMIT with a message suggesting how to collapse. */
    int64_t max_nodes;
    /* Graph label; NULL = the module's name. */
    const char *title;
    /* Node fills (HS_OVERLAY_NONE: by category) and, with a scale, a
     * legend node "legend:overlay" with the scale's end values. */
    hs_render_overlay overlay;
    /* Per instruction id (n_costs entries, normally m->next_id): the cost
     * model's figures, which a node sums over the instructions it stands
     * for. NULL: FLOPs and seconds are unknown (null in JSON), and the
     * flops and time overlays are HS_ERR_INVALID. */
    const hs_render_cost *costs;
    int64_t n_costs;
} hs_render_options;

#define HS_RENDER_DEFAULT_HOPS 2
#define HS_RENDER_MAX_HOPS 64

/* The view as DOT text. HS_ERR_INVALID for an unknown computation or a
 * malformed expand key, HS_ERR_LIMIT over the node budget, HS_ERR_NOMEM. */
hs_status hs_render_graph_dot(const hs_module *m, const hs_render_options *o,
                              char **out, size_t *out_len, hs_error *err);

/* The same view as JSON:
 *   {"module", "computation", "title",
 *    "nodes":    [{id, name, opcode, category, shape, bytes,
 *                  per_device_bytes, global_bytes, flops, seconds,
 *                  memory_space, op_name, layer, group, computation,
 *                  is_root, collapsed_count, fill}],
 *    "overlay":  {kind, unit, min, max, scale} or null,
 *    "groups":   [{path, local, label, kind, parent, depth, computation,
 *                  instructions, repeat, fingerprint, open, children}],
 *    "edges":    [{from, to, operand_index, operands, kind}],
 *    "clusters": [{id, computation, parent, caller, nodes}],
 *    "stats":    {instructions, nodes, edges, clusters, layers_collapsed}}
 * A closed group is a node with opcode "layer", category "layer", shape
 * null, name its local path, label its label and collapsed_count = the
 * instructions it stands for (0 for an instruction node); its bytes sum
 * its instructions' output bytes. per_device_bytes and global_bytes are
 * what one device holds of a node's bytes and their global size when
 * something in it carries a sharding (hs_sharding.h), else null. group is the closed group's path, or an
 * instruction's innermost group (null at the top). groups is the whole
 * tree (hs_groups.h), open telling what this view draws open.
 * operand_index is -1 when not drawn (single-operand users, collapsed
 * targets or sources); operands counts the operand slots an edge stands
 * for (a closed group feeding several operands of one user is one edge,
 * drawn thicker); kind is "operand" or "call" (a cluster's root to the
 * caller).
 * flops and seconds sum the costs of the instructions a node stands for
 * (null without costs); memory_space is "device", "host" (S(5)) or
 * "mixed" (a closed group or tuple holding both). With an overlay, fill
 * is the node's colour and "overlay" the scale: min and max of the
 * nonzero values drawn, in unit ("B", "FLOP", "s"), scale "log". */
hs_status hs_render_graph_json(const hs_module *m, const hs_render_options *o,
                               char **out, size_t *out_len, hs_error *err);

/* The same view drawn by composition (docs/RENDER.md, "Composed layout"):
 * the top level, every open group and every called computation drawn is a
 * box laid out by Graphviz on its own, from a canonical DOT (positions for
 * names, fixed node sizes) that identical layers share, and placed as one
 * node of its laid-out size in its parent's layout; an edge that crosses a
 * box's border is routed to the border in the parent and on along the
 * box's margin inside it. Pieces are cached process-wide by that canonical DOT, so
 * identical layers are laid out once and a view that expands one more
 * layer lays out that layer's box (and the boxes above it) only. The pieces
 * are then placed and drawn: "svg" is written in the process (Graphviz's
 * SVG structure; HS_COMPOSE_SVG=graphviz draws it with
 * HS_RENDER_ENGINE_PINNED instead), another hs_render_layout format is
 * drawn with HS_RENDER_ENGINE_PINNED, "dot" gives the placed, pinned
 * DOT itself without drawing it. Node and edge ids are those of
 * hs_render_graph_dot; a box is a cluster "cluster_g:<group path>" or, for
 * a called computation, "cluster_<name>". timeout_ms (<= 0: the default)
 * bounds the whole drawing. stats may be NULL. */
typedef struct hs_render_compose_stats {
    int64_t nodes, edges;
    int boxes;    /* pieces the drawing is composed of */
    int laid_out; /* laid out by Graphviz in this call */
    int reused;   /* taken from the cache: the same structure laid out
                     before, in this call or an earlier one */
    double layout_seconds; /* waiting for Graphviz, pieces and drawing */
} hs_render_compose_stats;

hs_status hs_render_graph_composed(const hs_module *m,
                                   const hs_render_options *o,
                                   const char *format, int64_t timeout_ms,
                                   char **out, size_t *out_len,
                                   hs_render_compose_stats *stats,
                                   hs_error *err);
/* Empties the process-wide cache of laid-out pieces (benchmarks measure
 * cold layouts with it). */
void hs_render_compose_cache_clear(void);

/* Hits a search returns at most when max_hits <= 0. */
#define HS_RENDER_DEFAULT_SEARCH_HITS 1000

/* Every instruction of computation (NULL: the entry) and what it calls
 * whose name, opcode or op_name contains query (ASCII case folded), drawn
 * or inside a collapsed group, as JSON:
 *   {"query", "computation", "count", "truncated",
 *    "hits": [{name, opcode, computation, shape, op_name,
 *              group (innermost group path or null),
 *              groups (the chain of group paths, outermost first)}]}
 * count is every match; hits stops at max_hits (truncated true then).
 * ?expand=<group> opens the groups that reveal a hit. HS_ERR_INVALID for an
 * empty query or an unknown computation. */
hs_status hs_render_search_json(const hs_module *m, const char *computation,
                                const char *query, int64_t max_hits,
                                char **out, size_t *out_len, hs_error *err);

/* ------------------------------------------------------------------------ */
/* Memory timelines                                                         */
/* ------------------------------------------------------------------------ */

/* One buffer, live over [start, end) on the caller's axis (an instruction
 * index in program order, or seconds of simulated time). Strings may be
 * NULL. end < start is HS_ERR_INVALID; end == start draws a sliver. */
typedef struct hs_timeline_buffer {
    const char *name;
    const char *instruction; /* the instruction that defines it */
    const char *op_name;     /* its metadata op_name ("layers.3/mlp") */
    int64_t bytes;
    int memory_space; /* HS_MEMSPACE_DEVICE, HS_MEMSPACE_HOST, ... */
    double start, end;
} hs_timeline_buffer;

typedef enum hs_timeline_axis {
    HS_TIMELINE_PROGRAM_ORDER = 0, /* instruction index */
    HS_TIMELINE_TIME               /* seconds (simulated) */
} hs_timeline_axis;

typedef struct hs_timeline_options {
    hs_timeline_axis axis;
    const char *title;      /* NULL: "memory timeline" */
    double width_pt;        /* plot width; 0 = 900 */
    double panel_height_pt; /* plot height per memory space; 0 = 260 */
    int64_t max_boxes;      /* 0 = HS_RENDER_DEFAULT_MAX_BOXES; the
                               smallest buffers beyond it are folded into
                               the outline only */
    int64_t device_capacity_bytes; /* > 0 draws a capacity line on the
                                      device panel */
} hs_timeline_options;

/* Bytes live per memory space over the axis as a step outline, buffers as
 * boxes (x = lifetime, height = bytes, stacked first-fit), the peak
 * labelled, axis ticks; one panel per memory space, device first. Lay out
 * with HS_RENDER_ENGINE_PINNED. */
hs_status hs_render_timeline_dot(const hs_timeline_buffer *buffers, size_t n,
                                 const hs_timeline_options *o, char **out,
                                 size_t *out_len, hs_error *err);

/* ------------------------------------------------------------------------ */
/* Step Gantt charts                                                        */
/* ------------------------------------------------------------------------ */

typedef enum hs_gantt_lane { HS_GANTT_HOST = 0, HS_GANTT_DEVICE } hs_gantt_lane;

/* One segment in seconds. kind picks the colour: "trace", "compile",
 * "execute", "transfer", "idle", "wait"; others are hashed to a colour. */
typedef struct hs_gantt_segment {
    hs_gantt_lane lane;
    const char *label;
    const char *kind;
    double start, end;
} hs_gantt_segment;

typedef struct hs_gantt_options {
    const char *title;  /* NULL: "steps" */
    double width_pt;    /* 0 = 900 */
    int64_t max_boxes;  /* 0 = HS_RENDER_DEFAULT_MAX_BOXES */
} hs_gantt_options;

/* Two lanes (host above device), segments as boxes, time ticks. Lay out
 * with HS_RENDER_ENGINE_PINNED. */
hs_status hs_render_gantt_dot(const hs_gantt_segment *segments, size_t n,
                              const hs_gantt_options *o, char **out,
                              size_t *out_len, hs_error *err);

/* ------------------------------------------------------------------------ */
/* Layout                                                                   */
/* ------------------------------------------------------------------------ */

/* Lays out DOT with libgvc in a worker process and returns the rendering.
 * engine: "dot", "neato", "nop" or "nop2"; format: "svg", "xdot", "dot",
 * "json" or "plain". timeout_ms <= 0 means HS_RENDER_DEFAULT_TIMEOUT_MS;
 * the time counts from the call, except that the one-time start of the
 * layout server (when hs_render_init was not called) is not counted.
 *
 * Errors: HS_ERR_CANCELLED "layout timed out after N ms" (the worker is
 * killed and reaped), HS_ERR_RUNTIME "layout worker crashed (signal N)",
 * HS_ERR_INVALID for a DOT syntax error or an unknown engine or format,
 * HS_ERR_LIMIT when the output exceeds HS_RENDER_MAX_OUTPUT_BYTES.
 *
 * Workers are started by a layout server, one helper process per program,
 * started by hs_render_init() or by the first layout (and again if it
 * dies); both are fresh images of the program's own executable
 * (/proc/self/exe, or HS_LAYOUT_EXE), never forks of it. Safe to call from
 * many threads at once: each call gets its own worker; the caller waits on
 * sockets, never on a process, so the program's SIGCHLD handling does not
 * matter. */
hs_status hs_render_layout(const char *dot, const char *engine,
                           const char *format, int64_t timeout_ms,
                           char **out, size_t *out_len, hs_error *err);

/* Starts the layout server now, so that warm workers wait for the first
 * layout. Optional; safe from any thread at any time, as nothing is forked
 * from the program (docs/RENDER.md). Idempotent. */
hs_status hs_render_init(hs_error *err);
/* Stops the layout server (its workers are killed) and reaps it. A later
 * layout starts a new one. */
void hs_render_shutdown(void);

#ifdef __cplusplus
}
#endif
#endif
