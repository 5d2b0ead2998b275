/* timeline.c - memory timelines: for each memory space a panel with the
 * bytes live over the axis as a step outline, every buffer as a box
 * (x = its lifetime, height = its bytes) stacked first-fit, the peak
 * marked and labelled, and axis ticks. Panels share the x axis, so the
 * device and host panels line up. The input is a plain list of buffers, so
 * any producer (buffer assignment, the device's run) can draw. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render/render_internal.h"

/* Layout of one panel, in points. */
enum { LEFT = 78, RIGHT = 24, TITLE_H = 26, AXIS_H = 30, GAP = 18, TOP = 30 };

typedef struct event {
    double t;
    int64_t delta;
} event;

static int event_cmp(const void *a, const void *b)
{
    const event *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    /* [start, end): a buffer that ends at t is freed before one that
     * starts at t is allocated. */
    return (x->delta > 0) - (y->delta > 0);
}

/* One step of the outline: level bytes from t on. */
typedef struct step {
    double t;
    int64_t level;
} step;

typedef struct placed {
    int index; /* into the buffers */
    int64_t offset;
} placed;

typedef struct panel {
    int space;
    int n;        /* buffers in this space */
    int *members; /* their indices */
    int n_steps;
    step *steps;
    int64_t peak;
    double peak_t;
    int n_boxes;
    placed *boxes;
    int64_t top; /* highest box top */
} panel;

typedef struct chart {
    const hs_timeline_buffer *b;
    const hs_timeline_options *o;
    double x_lo, x_hi;
    double width, plot_h;
    hs_tick_unit unit;
} chart;

/* ---- the numbers --------------------------------------------------------- */

static hs_status sweep(const hs_timeline_buffer *b, panel *p)
{
    event *ev = malloc(sizeof *ev * (size_t)p->n * 2 + 1);
    p->steps = malloc(sizeof *p->steps * ((size_t)p->n * 2 + 1));
    if (!ev || !p->steps) {
        free(ev);
        return HS_ERR_NOMEM;
    }
    for (int k = 0; k < p->n; k++) {
        const hs_timeline_buffer *x = &b[p->members[k]];
        ev[2 * k] = (event){x->start, x->bytes};
        ev[2 * k + 1] = (event){x->end, -x->bytes};
    }
    qsort(ev, (size_t)p->n * 2, sizeof *ev, event_cmp);
    int64_t live = 0;
    p->n_steps = 0;
    p->peak = 0;
    p->peak_t = p->n ? ev[0].t : 0;
    for (int k = 0; k < p->n * 2; k++) {
        live += ev[k].delta;
        bool last_at_t = k + 1 == p->n * 2 || ev[k + 1].t != ev[k].t;
        if (!last_at_t)
            continue;
        if (p->n_steps && p->steps[p->n_steps - 1].level == live)
            continue;
        p->steps[p->n_steps++] = (step){ev[k].t, live};
        if (live > p->peak) {
            p->peak = live;
            p->peak_t = ev[k].t;
        }
    }
    free(ev);
    return HS_OK;
}

static int by_bytes_desc(const void *a, const void *b, void *ctx)
{
    const hs_timeline_buffer *buf = ctx;
    int64_t x = buf[*(const int *)a].bytes, y = buf[*(const int *)b].bytes;
    return (x < y) - (x > y);
}

static int by_start(const void *a, const void *b, void *ctx)
{
    const hs_timeline_buffer *buf = ctx;
    const hs_timeline_buffer *x = &buf[*(const int *)a],
                             *y = &buf[*(const int *)b];
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return (x->bytes < y->bytes) - (x->bytes > y->bytes);
}

static bool overlap(const hs_timeline_buffer *x, const hs_timeline_buffer *y)
{
    return x->start < y->end && y->start < x->end;
}

/* First-fit stacking of the largest max_boxes buffers, in start order:
 * each goes at the lowest offset where it overlaps no placed buffer that
 * is live at the same time. Only buffers still live at the current start
 * can overlap it or any later one, so the others leave the active set. */
static hs_status stack(const hs_timeline_buffer *b, panel *p, int64_t max)
{
    int n = p->n < max ? p->n : (int)max;
    int *order = malloc(sizeof *order * (size_t)p->n + 1);
    placed *active = malloc(sizeof *active * (size_t)n + 1);
    p->boxes = malloc(sizeof *p->boxes * (size_t)n + 1);
    if (!order || !active || !p->boxes) {
        free(order);
        free(active);
        return HS_ERR_NOMEM;
    }
    memcpy(order, p->members, sizeof *order * (size_t)p->n);
    if (n < p->n)
        qsort_r(order, (size_t)p->n, sizeof *order, by_bytes_desc, (void *)b);
    qsort_r(order, (size_t)n, sizeof *order, by_start, (void *)b);
    int n_active = 0;
    p->top = 0;
    for (int k = 0; k < n; k++) {
        const hs_timeline_buffer *x = &b[order[k]];
        /* Drop what ended; keep the rest sorted by offset. */
        int m = 0;
        for (int j = 0; j < n_active; j++)
            if (b[active[j].index].end > x->start)
                active[m++] = active[j];
        n_active = m;
        int64_t at = 0;
        for (int j = 0; j < n_active; j++) {
            const hs_timeline_buffer *y = &b[active[j].index];
            if (!overlap(x, y))
                continue;
            int64_t lo = active[j].offset, hi = lo + y->bytes;
            if (at + x->bytes <= lo)
                break; /* fits in the gap below y */
            if (hi > at)
                at = hi;
        }
        placed here = {order[k], at};
        int ins = 0; /* keep offsets ascending */
        while (ins < n_active && active[ins].offset <= at)
            ins++;
        memmove(active + ins + 1, active + ins,
                sizeof *active * (size_t)(n_active - ins));
        active[ins] = here;
        n_active++;
        p->boxes[p->n_boxes++] = here;
        if (at + x->bytes > p->top)
            p->top = at + x->bytes;
    }
    free(order);
    free(active);
    return HS_OK;
}

/* ---- drawing ------------------------------------------------------------- */

static double px(const chart *c, double t)
{
    return LEFT + (t - c->x_lo) / (c->x_hi - c->x_lo) * c->width;
}

static void axis_value(const chart *c, char *buf, size_t size, double t)
{
    hs__tick_label(buf, size, t, c->unit);
}

static void buffer_tooltip(hs_buf *t, const chart *c,
                           const hs_timeline_buffer *x)
{
    char bytes[32], a[32], z[32];
    hs__format_bytes(bytes, sizeof bytes, (double)x->bytes);
    axis_value(c, a, sizeof a, x->start);
    axis_value(c, z, sizeof z, x->end);
    hs__dot_text(t, x->name ? x->name : "buffer", 200);
    hs__buf_printf(t, "\\n%s (%" PRId64 " bytes)\\nlive [%s, %s)", bytes,
                    x->bytes, a, z);
    if (x->instruction) {
        hs__buf_puts(t, "\\ninstruction: ");
        hs__dot_text(t, x->instruction, 200);
    }
    if (x->op_name) {
        hs__buf_puts(t, "\\nop_name: ");
        hs__dot_text(t, x->op_name, 300);
    }
}

static const char *buffer_colour(const hs_timeline_buffer *x)
{
    const char *op = x->op_name;
    if (!op || !*op)
        return hs__key_colour(x->instruction, x->instruction ? strlen(x->instruction) : 0);
    size_t len = hs__layer_key(op);
    if (!len) {
        const char *slash = strchr(op, '/');
        len = slash ? (size_t)(slash - op) : strlen(op);
    }
    return hs__key_colour(op, len);
}

static void draw_boxes(hs_pinned *pin, const chart *c, const panel *p,
                       double y0, double scale)
{
    hs_buf tip = {0}, id = {0};
    for (int k = 0; k < p->n_boxes; k++) {
        const hs_timeline_buffer *x = &c->b[p->boxes[k].index];
        double x0 = px(c, x->start), x1 = px(c, x->end);
        double h = (double)x->bytes * scale;
        tip.len = id.len = 0;
        buffer_tooltip(&tip, c, x);
        hs__buf_puts(&id, "buf:");
        hs__id_encode(&id, x->name ? x->name : "");
        hs__buf_printf(&id, ":%d", p->boxes[k].index);
        /* Names inside boxes that can hold them (about 5 points a char). */
        char label[64] = "";
        if (x1 - x0 >= 40 && h >= 11 && x->name) {
            size_t fit = (size_t)((x1 - x0) / 5.5);
            snprintf(label, sizeof label, "%.*s",
                     (int)(fit < 60 ? fit : 60), x->name);
        }
        hs__pinned_box(pin, x0, y0 + (double)p->boxes[k].offset * scale,
                       x1 - x0, h, buffer_colour(x), "#607d8b",
                       label[0] ? label : NULL, tip.data ? tip.data : " ",
                       id.data);
    }
    hs__buf_free(&tip);
    hs__buf_free(&id);
}

/* The outline, at most one step per point column: within a column the
 * level's whole range is drawn as one vertical stroke (so a peak never
 * disappears), and the outline continues at the column's last level. */
static void draw_outline(hs_pinned *pin, const chart *c, const panel *p,
                         double y0, double scale)
{
    const char *ink = "#263238";
    double cur_x = px(c, c->x_lo);
    int64_t cur = 0;
    for (int k = 0; k < p->n_steps;) {
        double x = px(c, p->steps[k].t), col = floor(x);
        int64_t lo = cur, hi = cur, last = cur;
        for (; k < p->n_steps && floor(px(c, p->steps[k].t)) == col; k++) {
            last = p->steps[k].level;
            lo = last < lo ? last : lo;
            hi = last > hi ? last : hi;
        }
        if (x > cur_x)
            hs__pinned_line(pin, cur_x, y0 + (double)cur * scale, x,
                            y0 + (double)cur * scale, 1.2, ink, false);
        hs__pinned_line(pin, x, y0 + (double)lo * scale, x,
                        y0 + (double)hi * scale, 1.2, ink, false);
        cur_x = x;
        cur = last;
    }
    double end = px(c, c->x_hi);
    if (end > cur_x)
        hs__pinned_line(pin, cur_x, y0 + (double)cur * scale, end,
                        y0 + (double)cur * scale, 1.2, ink, false);
    if (cur)
        hs__pinned_line(pin, end, y0, end, y0 + (double)cur * scale, 1.2,
                        ink, false);
}

static void draw_axes(hs_pinned *pin, const chart *c, double y0,
                      double y_top_bytes, double scale)
{
    double ticks[16];
    char text[48];
    double x_end = LEFT + c->width;
    int n = hs__byte_ticks(y_top_bytes, 6, ticks);
    for (int k = 0; k < n; k++) {
        double y = y0 + ticks[k] * scale;
        hs__pinned_line(pin, LEFT, y, x_end, y, 0.4, "#cfd8dc", false);
        hs__pinned_line(pin, LEFT - 4, y, LEFT, y, 0.8, "#263238", false);
        hs__tick_label(text, sizeof text, ticks[k], HS_TICK_BYTES);
        hs__pinned_text(pin, LEFT - 6, y, text, 8, "#37474f", 'r');
    }
    n = hs__nice_ticks(c->x_lo, c->x_hi, 10, ticks);
    for (int k = 0; k < n; k++) {
        double x = px(c, ticks[k]);
        hs__pinned_line(pin, x, y0 - 4, x, y0, 0.8, "#263238", false);
        axis_value(c, text, sizeof text, ticks[k]);
        hs__pinned_text(pin, x, y0 - 12, text, 8, "#37474f", 'c');
    }
    hs__pinned_line(pin, LEFT, y0, x_end, y0, 0.8, "#263238", false);
    hs__pinned_line(pin, LEFT, y0, LEFT, y0 + c->plot_h, 0.8, "#263238",
                    false);
}

static const char *space_name(int space)
{
    switch (space) {
    case HS_MEMSPACE_DEVICE: return "device memory";
    case HS_MEMSPACE_HOST: return "host memory";
    default: return "memory";
    }
}

static void draw_panel(hs_pinned *pin, const chart *c, const panel *p,
                       double y0)
{
    int64_t cap = p->space == HS_MEMSPACE_DEVICE && c->o->device_capacity_bytes > 0
                      ? c->o->device_capacity_bytes
                      : 0;
    double top = (double)(p->top > p->peak ? p->top : p->peak);
    bool cap_on_scale = cap > 0 && (double)cap <= top * 1.5;
    if (cap_on_scale && (double)cap > top)
        top = (double)cap;
    if (top <= 0)
        top = 1;
    /* Round the scale up to the last y tick. */
    double ticks[16];
    int nt = hs__byte_ticks(top, 6, ticks);
    if (nt && ticks[nt - 1] < top) {
        double step = nt > 1 ? ticks[1] - ticks[0] : top;
        top = ticks[nt - 1] + step;
    }
    double scale = c->plot_h / top;

    char peak[48], at[48], title[160];
    hs__format_bytes(peak, sizeof peak, (double)p->peak);
    axis_value(c, at, sizeof at, p->peak_t);
    snprintf(title, sizeof title, "%s (S(%d)): %d buffers, peak %s", space_name(p->space),
             p->space, p->n, peak);
    hs__pinned_text(pin, LEFT, y0 + c->plot_h + 14, title, 11, "#212121", 'l');
    if (p->n_boxes < p->n) {
        snprintf(title, sizeof title, "%d largest buffers drawn, %d more in "
                 "the outline", p->n_boxes, p->n - p->n_boxes);
        hs__pinned_text(pin, LEFT + c->width, y0 + c->plot_h + 14, title, 8,
                        "#616161", 'r');
    }
    draw_axes(pin, c, y0, top, scale);
    draw_boxes(pin, c, p, y0, scale);
    draw_outline(pin, c, p, y0, scale);
    if (cap > 0) {
        char text[64], b[32];
        hs__format_bytes(b, sizeof b, (double)cap);
        if (cap_on_scale) {
            double y = y0 + (double)cap * scale;
            hs__pinned_line(pin, LEFT, y, LEFT + c->width, y, 1, "#d32f2f",
                            true);
            snprintf(text, sizeof text, "capacity %s", b);
            hs__pinned_text(pin, LEFT + c->width, y + 7, text, 8, "#d32f2f",
                            'r');
        } else {
            snprintf(text, sizeof text, "capacity %s (above the plot)", b);
            hs__pinned_text(pin, LEFT + c->width, y0 + c->plot_h + 4, text, 8,
                            "#d32f2f", 'r');
        }
    }
    /* The peak: a marker on the outline and its label. */
    double x = px(c, p->peak_t), y = y0 + (double)p->peak * scale;
    hs__pinned_box(pin, x - 3, y - 3, 6, 6, "#d32f2f", NULL, NULL, " ",
                   NULL);
    char label[128];
    snprintf(label, sizeof label, "peak %s at %s", peak, at);
    bool right_half = x > LEFT + c->width * 0.6;
    hs__pinned_text(pin, right_half ? x - 6 : x + 6, y + 8, label, 9,
                    "#b71c1c", right_half ? 'r' : 'l');
}

/* ---- entry point --------------------------------------------------------- */

static hs_status check(const hs_timeline_buffer *b, size_t n, hs_error *err)
{
    for (size_t k = 0; k < n; k++) {
        const hs_timeline_buffer *x = &b[k];
        if (!isfinite(x->start) || !isfinite(x->end) || x->end < x->start ||
            x->bytes < 0) {
            hs_buf name = {0};
            hs__text_clean(&name, x->name ? x->name : "", 64);
            hs_error_set(err, HS_ERR_INVALID,
                         "timeline: buffer %zu (%s) has an invalid lifetime "
                         "or size: [%g, %g), %" PRId64 " bytes",
                         k, name.data ? name.data : "", x->start, x->end,
                         x->bytes);
            hs__buf_free(&name);
            return HS_ERR_INVALID;
        }
    }
    if (n > INT32_MAX / 4)
        return hs_error_set(err, HS_ERR_LIMIT, "timeline: too many buffers");
    return HS_OK;
}

static int int_cmp(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    /* device (0) first, then by number */
    return (x > y) - (x < y);
}

hs_status hs_render_timeline_dot(const hs_timeline_buffer *buffers, size_t n,
                                 const hs_timeline_options *o, char **out,
                                 size_t *out_len, hs_error *err)
{
    static const hs_timeline_options defaults = {0};
    hs_error_clear(err);
    *out = NULL;
    if (out_len)
        *out_len = 0;
    if (!o)
        o = &defaults;
    if (n && !buffers)
        return hs_error_set(err, HS_ERR_INVALID, "timeline: no buffers");
    hs_status st = check(buffers, n, err);
    if (st != HS_OK)
        return st;

    chart c = {.b = buffers, .o = o};
    c.width = o->width_pt > 0 ? o->width_pt : 900;
    c.plot_h = o->panel_height_pt > 0 ? o->panel_height_pt : 260;
    c.unit = o->axis == HS_TIMELINE_TIME ? HS_TICK_SECONDS : HS_TICK_COUNT;
    int64_t max_boxes = o->max_boxes > 0 ? o->max_boxes
                                         : HS_RENDER_DEFAULT_MAX_BOXES;
    c.x_lo = n ? buffers[0].start : 0;
    c.x_hi = n ? buffers[0].end : 1;
    for (size_t k = 0; k < n; k++) {
        c.x_lo = fmin(c.x_lo, buffers[k].start);
        c.x_hi = fmax(c.x_hi, buffers[k].end);
    }
    if (!(c.x_hi > c.x_lo))
        c.x_hi = c.x_lo + 1;

    /* Panels: one per memory space present; a device panel always. */
    int spaces[64], n_spaces = 0;
    spaces[n_spaces++] = HS_MEMSPACE_DEVICE;
    for (size_t k = 0; k < n; k++) {
        bool seen = false;
        for (int s = 0; s < n_spaces; s++)
            seen |= spaces[s] == buffers[k].memory_space;
        if (!seen && n_spaces < 64)
            spaces[n_spaces++] = buffers[k].memory_space;
    }
    qsort(spaces, (size_t)n_spaces, sizeof *spaces, int_cmp);
    panel panels[64];
    memset(panels, 0, sizeof panels);
    int *members = malloc(sizeof *members * (n + 1));
    if (!members)
        return hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
    int used = 0;
    for (int s = 0; s < n_spaces && st == HS_OK; s++) {
        panel *p = &panels[s];
        p->space = spaces[s];
        p->members = members + used;
        for (size_t k = 0; k < n; k++)
            if (buffers[k].memory_space == p->space)
                p->members[p->n++] = (int)k;
        used += p->n;
        st = sweep(buffers, p);
        if (st == HS_OK)
            st = stack(buffers, p, max_boxes);
    }

    hs_buf b = {0};
    if (st == HS_OK) {
        double panel_h = TITLE_H + c.plot_h + AXIS_H;
        double height = TOP + n_spaces * panel_h + (n_spaces - 1) * GAP;
        hs_pinned pin = {.b = &b};
        const char *title = o->title ? o->title : "memory timeline";
        hs__pinned_begin(&pin, title, LEFT + c.width + RIGHT, height);
        hs__pinned_text(&pin, LEFT, height - 14, title, 13, "#000000", 'l');
        const char *axis = o->axis == HS_TIMELINE_TIME
                               ? "x: simulated time"
                               : "x: program order (instruction index)";
        hs__pinned_text(&pin, LEFT + c.width, height - 14, axis, 9, "#616161",
                        'r');
        for (int s = 0; s < n_spaces; s++) {
            double y0 = height - TOP - (s + 1) * panel_h - s * GAP + AXIS_H;
            draw_panel(&pin, &c, &panels[s], y0);
        }
        hs__pinned_end(&pin);
    }
    for (int s = 0; s < n_spaces; s++) {
        free(panels[s].steps);
        free(panels[s].boxes);
    }
    free(members);
    if (st != HS_OK) {
        hs__buf_free(&b);
        return hs_error_set(err, st, "out of host memory");
    }
    return hs__buf_finish(&b, out, out_len, "rendering", err);
}
