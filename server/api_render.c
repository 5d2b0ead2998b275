/* api_render.c - the results endpoints' drawings. Graphs go through the
 * render module (DOT from the IR, Graphviz layout in an isolated worker
 * process with a time limit); the memory timeline is a step chart of live
 * bytes per program position, from buffer assignment. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "api_render.h"
#include "hloscope/hs_device.h"
#include "hloscope/hs_buffers.h"

#include "hloscope/hs_render.h"

static int draw_graph(const hs_module *m, const hs_render_options *o,
                      const srv_request *rq, api_graph_format fmt,
                      srv_reply *rp, hs_error *e);

/* Layout time: the render module's own limit, or less when the request's
 * deadline is nearer. */
static int64_t layout_timeout_ms(const srv_request *rq, hs_error *e)
{
    int64_t ms = HS_RENDER_DEFAULT_TIMEOUT_MS;
    if (rq && rq->deadline_ns > 0) {
        int64_t left = (rq->deadline_ns - hs_now_ns()) / 1000000;
        if (left <= 0) {
            hs_error_set(e, HS_ERR_CANCELLED, "deadline exceeded before layout");
            return -1;
        }
        if (left < ms)
            ms = left;
    }
    return ms;
}

/* DOT through Graphviz (in the render module's worker process) to SVG. */
static int layout_svg(const srv_request *rq, char *dot, const char *engine,
                      srv_reply *rp, hs_error *e)
{
    int64_t ms = layout_timeout_ms(rq, e);
    char *svg = NULL;
    size_t len = 0;
    if (ms < 0 || hs_render_layout(dot, engine, "svg", ms, &svg, &len, e) != HS_OK) {
        free(dot);
        return -1;
    }
    free(dot);
    srv_reply_text(rp, 200, "image/svg+xml", svg, len);
    return 0;
}

/* What the device's cost model charges each instruction of m, in the
 * render module's terms (by instruction id); NULL with *e set on failure. */
static hs_render_cost *graph_costs(const hs_module *m, const char *device,
                                   hs_error *e)
{
    size_t n = (size_t)m->next_id + 1;
    hs_instruction_cost *each = calloc(n, sizeof *each);
    hs_render_cost *costs = calloc(n, sizeof *costs);
    hs_run_stats st;
    if (!each || !costs) {
        hs_error_set(e, HS_ERR_NOMEM, "out of host memory");
    } else if (hs_device_estimate_each(m, hs_device_find(device), each, &st,
                                       e) == HS_OK) {
        for (size_t k = 0; k < n; k++)
            costs[k] = (hs_render_cost){each[k].flops, each[k].seconds};
        free(each);
        return costs;
    }
    free(each);
    free(costs);
    return NULL;
}

int api_render_graph(srv *s, const hs_module *m, const char *device,
                     const srv_request *rq, api_graph_format fmt,
                     srv_reply *rp, hs_error *e)
{
    hs_render_options o;
    memset(&o, 0, sizeof o);
    if (hs_render_overlay_parse(srv_query(rq, "overlay"), &o.overlay, e) !=
        HS_OK) {
        snprintf(e->path, sizeof e->path, "?overlay");
        return -1;
    }
    o.computation = srv_query(rq, "computation");
    o.expand = srv_query(rq, "expand");
    o.around = srv_query(rq, "around");
    o.max_nodes = s->cfg.limits.max_render_nodes;
    const char *hops = srv_query(rq, "hops");
    if (hops) {
        char *end = NULL;
        long k = strtol(hops, &end, 10);
        if (!*hops || *end || k < 1 || k > HS_RENDER_MAX_HOPS) {
            hs_error_set(e, HS_ERR_INVALID,
                         "hops: expected a whole number from 1 to %d",
                         HS_RENDER_MAX_HOPS);
            snprintf(e->path, sizeof e->path, "?hops");
            return -1;
        }
        o.hops = (int)k;
    }
    /* graph.json always carries each node's FLOPs and seconds; a drawing
     * needs them only to colour by them. */
    hs_render_cost *costs = NULL;
    if (fmt == API_GRAPH_JSON || o.overlay == HS_OVERLAY_FLOPS ||
        o.overlay == HS_OVERLAY_TIME) {
        if (!(costs = graph_costs(m, device, e)))
            return -1;
        o.costs = costs;
        o.n_costs = m->next_id + 1;
    }
    int rc = draw_graph(m, &o, rq, fmt, rp, e);
    free(costs);
    return rc;
}

static int draw_graph(const hs_module *m, const hs_render_options *ro,
                      const srv_request *rq, api_graph_format fmt,
                      srv_reply *rp, hs_error *e)
{
    const hs_render_options o = *ro;
    char *out = NULL;
    size_t len = 0;
    hs_status st;
    if (fmt == API_GRAPH_SVG) {
        /* Composed from per-box layouts cached across requests, so a view
         * of a 40,000-instruction module answers in about a second (one
         * dot layout of the same view takes minutes; docs/RENDER.md). */
        int64_t ms = layout_timeout_ms(rq, e);
        if (ms < 0)
            return -1;
        st = hs_render_graph_composed(m, &o, "svg", ms, &out, &len, NULL, e);
        if (st == HS_OK) {
            srv_reply_text(rp, 200, "image/svg+xml", out, len);
            return 0;
        }
    } else {
        st = fmt == API_GRAPH_JSON ? hs_render_graph_json(m, &o, &out, &len, e)
                                   : hs_render_graph_dot(m, &o, &out, &len, e);
    }
    if (st != HS_OK) {
        if (st == HS_ERR_LIMIT)
            snprintf(e->path, sizeof e->path, "?expand");
        else if (st == HS_ERR_INVALID && strncmp(e->message, "around", 6) == 0)
            snprintf(e->path, sizeof e->path, "?around");
        else if (st == HS_ERR_INVALID && strncmp(e->message, "hops", 4) == 0)
            snprintf(e->path, sizeof e->path, "?hops");
        else if (st == HS_ERR_INVALID && strncmp(e->message, "overlay", 7) == 0)
            snprintf(e->path, sizeof e->path, "?overlay");
        else if (st == HS_ERR_INVALID && strncmp(e->message, "expand", 6) == 0)
            snprintf(e->path, sizeof e->path, "?expand");
        else if (st == HS_ERR_INVALID && o.computation &&
                 !hs_module_find_computation(m, o.computation))
            snprintf(e->path, sizeof e->path, "?computation");
        return -1;
    }
    srv_reply_text(rp, 200,
                   fmt == API_GRAPH_JSON ? "application/json" : "text/vnd.graphviz",
                   out, len);
    return 0;
}

int api_render_search(srv *s, const hs_module *m, const srv_request *rq,
                      srv_reply *rp, hs_error *e)
{
    (void)s;
    const char *q = srv_query(rq, "q");
    const char *computation = srv_query(rq, "computation");
    char *out = NULL;
    size_t len = 0;
    if (hs_render_search_json(m, computation, q, 0, &out, &len, e) != HS_OK) {
        snprintf(e->path, sizeof e->path, "%s",
                 strncmp(e->message, "computation", 11) == 0 ? "?computation"
                                                             : "?q");
        return -1;
    }
    srv_reply_text(rp, 200, "application/json", out, len);
    return 0;
}

/* ---- memory timeline ------------------------------------------------------ */

typedef struct sb {
    char *p;
    size_t n, cap;
} sb;

static void sb_add(sb *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), unused));
static void sb_add(sb *b, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int need = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? b->cap - b->n : 0,
                             fmt, ap);
        va_end(ap);
        if (need < 0)
            return;
        if (b->p && b->n + (size_t)need < b->cap) {
            b->n += (size_t)need;
            return;
        }
        size_t cap = b->cap ? b->cap * 2 : 8192;
        while (cap < b->n + (size_t)need + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p)
            return;
        b->p = p, b->cap = cap;
    }
}

/* Text for SVG: &, <, >, " escaped; cut at size. */
__attribute__((unused)) static const char *xml_escape(const char *in, char *out,
                                                   size_t size)
{
    size_t n = 0;
    for (; *in && n + 7 < size; in++) {
        const char *rep = *in == '&' ? "&amp;" : *in == '<' ? "&lt;"
                        : *in == '>' ? "&gt;" : *in == '"' ? "&quot;" : NULL;
        if (rep) {
            memcpy(out + n, rep, strlen(rep));
            n += strlen(rep);
        } else {
            out[n++] = *in;
        }
    }
    out[n] = '\0';
    return out;
}


/* Entry-computation buffers on the program-order axis, drawn by the render
 * module's timeline (boxes per buffer, outline, peak, capacity line). */
int api_render_memory(srv *s, const hs_module *m, const char *device,
                      const srv_request *rq, srv_reply *rp, hs_error *e)
{
    (void)s;
    hs_buffer_assignment *ba = hs_assign_buffers(m, e);
    if (!ba)
        return -1;
    int n = 0;
    const hs_logical_buffer *list = hs_buffers_list(ba, &n);
    hs_timeline_buffer *tb = calloc((size_t)(n ? n : 1), sizeof *tb);
    if (!tb) {
        hs_buffers_free(ba);
        return hs_error_set(e, HS_ERR_NOMEM, "out of host memory"), -1;
    }
    size_t k = 0;
    for (int i = 0; i < n; i++) {
        const hs_logical_buffer *b = &list[i];
        if (b->computation != m->entry)
            continue;
        tb[k].name = b->name;
        tb[k].instruction = b->instruction->name;
        tb[k].op_name = b->op_name;
        tb[k].bytes = b->bytes;
        tb[k].memory_space = b->memory_space;
        tb[k].start = b->start;
        tb[k].end = b->end + 1; /* inclusive position -> [start, end) */
        k++;
    }
    const hs_device_spec *spec = hs_device_find(device);
    char title[300];
    snprintf(title, sizeof title, "%s on %s: live buffers of the entry computation",
             m->name, device);
    hs_timeline_options o;
    memset(&o, 0, sizeof o);
    o.axis = HS_TIMELINE_PROGRAM_ORDER;
    o.title = title;
    o.device_capacity_bytes = spec ? (int64_t)spec->hbm_bytes : 0;
    char *dot = NULL;
    size_t len = 0;
    hs_status st = hs_render_timeline_dot(tb, k, &o, &dot, &len, e);
    free(tb);
    hs_buffers_free(ba);
    if (st != HS_OK)
        return -1;
    return layout_svg(rq, dot, HS_RENDER_ENGINE_PINNED, rp, e);
}

/* ---- step timeline ------------------------------------------------------- */

int api_render_steps(srv *s, const hs_steps_result *r, const srv_request *rq,
                     srv_reply *rp, hs_error *e)
{
    (void)s;
    int64_t ms = layout_timeout_ms(rq, e);
    char *svg = NULL;
    size_t len = 0;
    if (ms < 0 || hs_steps_svg(r, ms, &svg, &len, e) != HS_OK)
        return -1;
    srv_reply_text(rp, 200, "image/svg+xml", svg, len);
    return 0;
}
