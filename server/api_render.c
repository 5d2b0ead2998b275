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
#if __has_include("hloscope/hs_buffers.h")
#include "hloscope/hs_buffers.h"
#define API_HAVE_BUFFERS 1
#endif

#if __has_include("hloscope/hs_render.h")
#include "hloscope/hs_render.h"
#define API_HAVE_RENDER 1
#endif

#ifdef API_HAVE_RENDER
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
#endif

int api_render_graph(srv *s, const hs_module *m, const srv_request *rq,
                     api_graph_format fmt, srv_reply *rp, hs_error *e)
{
#ifdef API_HAVE_RENDER
    hs_render_options o;
    memset(&o, 0, sizeof o);
    o.computation = srv_query(rq, "computation");
    o.expand = srv_query(rq, "expand");
    o.max_nodes = s->cfg.limits.max_render_nodes;
    char *out = NULL;
    size_t len = 0;
    hs_status st = fmt == API_GRAPH_JSON ? hs_render_graph_json(m, &o, &out, &len, e)
                                         : hs_render_graph_dot(m, &o, &out, &len, e);
    if (st != HS_OK) {
        if (st == HS_ERR_LIMIT)
            snprintf(e->path, sizeof e->path, "?expand");
        else if (st == HS_ERR_INVALID && o.computation &&
                 !hs_module_find_computation(m, o.computation))
            snprintf(e->path, sizeof e->path, "?computation");
        return -1;
    }
    if (fmt == API_GRAPH_SVG)
        return layout_svg(rq, out, HS_RENDER_ENGINE_GRAPH, rp, e);
    srv_reply_text(rp, 200,
                   fmt == API_GRAPH_JSON ? "application/json" : "text/vnd.graphviz",
                   out, len);
    return 0;
#else
    (void)s, (void)m, (void)rq, (void)fmt, (void)e;
    srv_reply_error(rp, 501, "unsupported", "",
                    "this build has no render module (engine/src/render)");
    return 0;
#endif
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

#if defined(API_HAVE_BUFFERS) && !defined(API_HAVE_RENDER)
/* Live bytes of each memory space at each position of the entry
 * computation (called computations appear in memory.json's peaks). */
static void live_curve(const hs_buffer_assignment *ba, const hs_module *m,
                       int space, double *live, int n_pos)
{
    int n = 0;
    const hs_logical_buffer *list = hs_buffers_list(ba, &n);
    for (int k = 0; k < n; k++) {
        const hs_logical_buffer *b = &list[k];
        if (b->computation != m->entry || b->memory_space != space)
            continue;
        for (int p = b->start < 0 ? 0 : b->start; p <= b->end && p < n_pos; p++)
            live[p] += (double)b->bytes;
    }
}

static void polyline(sb *b, const double *live, int n_pos, double ymax,
                     const char *colour, int x0, int y0, int w, int h)
{
    sb_add(b, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"", colour);
    for (int p = 0; p < n_pos; p++) {
        double x1 = x0 + (double)w * p / n_pos, x2 = x0 + (double)w * (p + 1) / n_pos;
        double y = y0 + h - (ymax > 0 ? h * live[p] / ymax : 0);
        sb_add(b, "%.1f,%.1f %.1f,%.1f ", x1, y, x2, y);
    }
    sb_add(b, "\"/>\n");
}
#endif

#if defined(API_HAVE_RENDER) && defined(API_HAVE_BUFFERS)
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
#else
int api_render_memory(srv *s, const hs_module *m, const char *device,
                      const srv_request *rq, srv_reply *rp, hs_error *e)
{
    (void)s, (void)rq;
#ifdef API_HAVE_BUFFERS
    hs_buffer_assignment *ba = hs_assign_buffers(m, e);
    if (!ba)
        return -1;
    int n_pos = m->entry->n_instrs > 0 ? m->entry->n_instrs : 1;
    double *dev = calloc((size_t)n_pos, sizeof(double));
    double *host = calloc((size_t)n_pos, sizeof(double));
    if (!dev || !host) {
        free(dev), free(host);
        hs_buffers_free(ba);
        return hs_error_set(e, HS_ERR_NOMEM, "out of host memory"), -1;
    }
    live_curve(ba, m, HS_MEMSPACE_DEVICE, dev, n_pos);
    live_curve(ba, m, HS_MEMSPACE_HOST, host, n_pos);
    const hs_memory_stats *ms = hs_buffers_memory_stats(ba);
    double ymax = 1;
    for (int p = 0; p < n_pos; p++) {
        if (dev[p] > ymax) ymax = dev[p];
        if (host[p] > ymax) ymax = host[p];
    }
    if ((double)ms->device.peak_bytes > ymax)
        ymax = (double)ms->device.peak_bytes;
    ymax *= 1.1;
    const hs_device_spec *spec = hs_device_find(device);
    char peak_dev[32], peak_host[32], top[32];
    hs_format_bytes(ms->device.peak_bytes, peak_dev, sizeof peak_dev);
    hs_format_bytes(ms->host.peak_bytes, peak_host, sizeof peak_host);
    hs_format_bytes((int64_t)ymax, top, sizeof top);
    char name[256], dev_name[128];
    xml_escape(m->name, name, sizeof name);
    xml_escape(device, dev_name, sizeof dev_name);
    const int W = 900, H = 360, x0 = 70, y0 = 40, w = 800, h = 260;
    sb b = {0};
    sb_add(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
               "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n",
           W, H, W, H);
    sb_add(&b, "<title>memory timeline of %s on %s</title>\n", name, dev_name);
    sb_add(&b, "<text x=\"%d\" y=\"20\" font-size=\"14\">%s on %s: device peak %s, "
               "host peak %s (entry computation, program order)</text>\n",
           x0, name, dev_name, peak_dev, peak_host);
    sb_add(&b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#fafafa\" "
               "stroke=\"#999\"/>\n", x0, y0, w, h);
    sb_add(&b, "<text x=\"5\" y=\"%d\">%s</text><text x=\"5\" y=\"%d\">0</text>\n",
           y0 + 10, top, y0 + h);
    sb_add(&b, "<text x=\"%d\" y=\"%d\">instruction position (0 .. %d)</text>\n",
           x0 + w / 2 - 80, y0 + h + 20, n_pos - 1);
    if (spec && spec->hbm_bytes < ymax) {
        double y = y0 + h - h * spec->hbm_bytes / ymax;
        sb_add(&b, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#d62728\" "
                   "stroke-dasharray=\"6,3\"/><text x=\"%d\" y=\"%.1f\" fill=\"#d62728\">"
                   "HBM capacity</text>\n",
               x0, y, x0 + w, y, x0 + 5, y - 3);
    }
    polyline(&b, dev, n_pos, ymax, "#1f77b4", x0, y0, w, h);
    polyline(&b, host, n_pos, ymax, "#ff7f0e", x0, y0, w, h);
    sb_add(&b, "<g><rect x=\"%d\" y=\"%d\" width=\"12\" height=\"4\" fill=\"#1f77b4\"/>"
               "<text x=\"%d\" y=\"%d\">device (HBM)</text>"
               "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"4\" fill=\"#ff7f0e\"/>"
               "<text x=\"%d\" y=\"%d\">host (S(5))</text></g>\n</svg>\n",
           x0, H - 22, x0 + 16, H - 16, x0 + 130, H - 22, x0 + 146, H - 16);
    free(dev);
    free(host);
    hs_buffers_free(ba);
    srv_reply_text(rp, 200, "image/svg+xml", b.p, b.p ? b.n : 0);
    return 0;
#else
    (void)m, (void)device, (void)e;
    srv_reply_error(rp, 501, "unsupported", "",
                    "this build has no buffer assignment (hs_buffers.h)");
    return 0;
#endif
}
#endif

/* ---- step timeline ------------------------------------------------------- */

int api_render_steps(srv *s, const hs_steps_result *r, const srv_request *rq,
                     srv_reply *rp, hs_error *e)
{
    (void)s;
#ifdef API_HAVE_RENDER
    int64_t ms = layout_timeout_ms(rq, e);
    char *svg = NULL;
    size_t len = 0;
    if (ms < 0 || hs_steps_svg(r, ms, &svg, &len, e) != HS_OK)
        return -1;
    srv_reply_text(rp, 200, "image/svg+xml", svg, len);
    return 0;
#else
    (void)r, (void)rq, (void)e;
    srv_reply_error(rp, 501, "unsupported", "",
                    "this build has no render module (engine/src/render)");
    return 0;
#endif
}
