/* gantt.c - step Gantt charts: two lanes, host above device, with one box
 * per segment (tracing, compiling, executing, transfers, idle time) on a
 * shared time axis, and the device's busy fraction - the goodput - in the
 * title line. Same pinned drawing as the memory timeline. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render/render_internal.h"

enum { LEFT = 70, RIGHT = 24, LANE_H = 34, LANE_GAP = 10, AXIS_H = 30,
       TOP = 46 };

static const struct {
    const char *kind, *fill, *stroke;
} kinds[] = {
    {"trace", "#ffe0b2", "#cbae82"},   {"compile", "#e1bee7", "#af8eb5"},
    {"execute", "#90caf9", "#5d99c6"}, {"transfer", "#ffcdd2", "#cb9ca1"},
    {"idle", "#f5f5f5", "#9e9e9e"},    {"wait", "#f5f5f5", "#9e9e9e"},
};

static bool is_idle(const char *kind)
{
    return kind && (strcmp(kind, "idle") == 0 || strcmp(kind, "wait") == 0);
}

static void style_of(const char *kind, const char **fill, const char **stroke)
{
    for (size_t k = 0; kind && k < sizeof kinds / sizeof *kinds; k++)
        if (strcmp(kind, kinds[k].kind) == 0) {
            *fill = kinds[k].fill;
            *stroke = kinds[k].stroke;
            return;
        }
    *fill = hs__key_colour(kind, kind ? strlen(kind) : 0);
    *stroke = "#607d8b";
}

typedef struct span {
    double start, end;
} span;

static int span_cmp(const void *a, const void *b)
{
    double x = ((const span *)a)->start, y = ((const span *)b)->start;
    return (x > y) - (x < y);
}

/* Length of the union of the device's busy segments. */
static double device_busy(const hs_gantt_segment *s, size_t n)
{
    span *sp = malloc(sizeof *sp * (n + 1));
    if (!sp)
        return -1;
    size_t m = 0;
    for (size_t k = 0; k < n; k++)
        if (s[k].lane == HS_GANTT_DEVICE && !is_idle(s[k].kind))
            sp[m++] = (span){s[k].start, s[k].end};
    qsort(sp, m, sizeof *sp, span_cmp);
    double busy = 0, cur_s = 0, cur_e = -INFINITY;
    for (size_t k = 0; k < m; k++) {
        if (sp[k].start > cur_e) {
            if (cur_e > cur_s)
                busy += cur_e - cur_s;
            cur_s = sp[k].start;
            cur_e = sp[k].end;
        } else if (sp[k].end > cur_e) {
            cur_e = sp[k].end;
        }
    }
    if (m && cur_e > cur_s)
        busy += cur_e - cur_s;
    free(sp);
    return busy;
}

static int by_length_desc(const void *a, const void *b, void *ctx)
{
    const hs_gantt_segment *s = ctx;
    const hs_gantt_segment *x = &s[*(const int *)a], *y = &s[*(const int *)b];
    double lx = x->end - x->start, ly = y->end - y->start;
    return (lx < ly) - (lx > ly);
}

static int by_index(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static void segment_tooltip(hs_buf *t, const hs_gantt_segment *s)
{
    char a[32], z[32], d[32];
    hs__tick_label(a, sizeof a, s->start, HS_TICK_SECONDS);
    hs__tick_label(z, sizeof z, s->end, HS_TICK_SECONDS);
    hs__tick_label(d, sizeof d, s->end - s->start, HS_TICK_SECONDS);
    hs__dot_text(t, s->label ? s->label : "segment", 200);
    hs__buf_puts(t, "\\nkind: ");
    hs__dot_text(t, s->kind ? s->kind : "-", 40);
    hs__buf_printf(t, "\\n%s .. %s (%s)", a, z, d);
}

hs_status hs_render_gantt_dot(const hs_gantt_segment *segments, size_t n,
                              const hs_gantt_options *o, char **out,
                              size_t *out_len, hs_error *err)
{
    static const hs_gantt_options defaults = {0};
    hs_error_clear(err);
    *out = NULL;
    if (out_len)
        *out_len = 0;
    if (!o)
        o = &defaults;
    if (n && !segments)
        return hs_error_set(err, HS_ERR_INVALID, "gantt: no segments");
    if (n > INT32_MAX / 4)
        return hs_error_set(err, HS_ERR_LIMIT, "gantt: too many segments");
    for (size_t k = 0; k < n; k++) {
        const hs_gantt_segment *s = &segments[k];
        if (!isfinite(s->start) || !isfinite(s->end) || s->end < s->start ||
            (s->lane != HS_GANTT_HOST && s->lane != HS_GANTT_DEVICE))
            return hs_error_set(err, HS_ERR_INVALID,
                                "gantt: segment %zu has an invalid lane or "
                                "time span [%g, %g)",
                                k, s->start, s->end);
    }
    double width = o->width_pt > 0 ? o->width_pt : 900;
    int64_t max_boxes = o->max_boxes > 0 ? o->max_boxes
                                         : HS_RENDER_DEFAULT_MAX_BOXES;
    double lo = n ? segments[0].start : 0, hi = n ? segments[0].end : 1;
    for (size_t k = 0; k < n; k++) {
        lo = fmin(lo, segments[k].start);
        hi = fmax(hi, segments[k].end);
    }
    if (!(hi > lo))
        hi = lo + 1;

    /* The longest max_boxes segments are drawn, in input order. */
    int *order = malloc(sizeof *order * (n + 1));
    if (!order)
        return hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
    for (size_t k = 0; k < n; k++)
        order[k] = (int)k;
    size_t drawn = n;
    if ((int64_t)n > max_boxes) {
        qsort_r(order, n, sizeof *order, by_length_desc, (void *)segments);
        drawn = (size_t)max_boxes;
        qsort(order, drawn, sizeof *order, by_index);
    }
    double busy = device_busy(segments, n);

    hs_buf b = {0}, tip = {0}, id = {0};
    hs_pinned pin = {.b = &b};
    double height = TOP + 2 * LANE_H + LANE_GAP + AXIS_H;
    const char *title = o->title ? o->title : "steps";
    hs__pinned_begin(&pin, title, LEFT + width + RIGHT, height);
    hs__pinned_text(&pin, LEFT, height - 14, title, 13, "#000000", 'l');
    char text[160], span_text[32];
    hs__tick_label(span_text, sizeof span_text, hi - lo, HS_TICK_SECONDS);
    if (busy >= 0)
        snprintf(text, sizeof text, "device busy %.1f%% of %s", 100 * busy / (hi - lo),
                 span_text);
    else
        snprintf(text, sizeof text, "span %s", span_text);
    hs__pinned_text(&pin, LEFT + width, height - 14, text, 10, "#1565c0", 'r');
    if (drawn < n) {
        snprintf(text, sizeof text, "%zu longest of %zu segments drawn", drawn,
                 n);
        hs__pinned_text(&pin, LEFT + width, height - 30, text, 8, "#616161",
                        'r');
    }
    double lane_y[2];
    lane_y[HS_GANTT_DEVICE] = AXIS_H;
    lane_y[HS_GANTT_HOST] = AXIS_H + LANE_H + LANE_GAP;
    static const char *const lane_names[2] = {"host", "device"};
    for (int l = 0; l < 2; l++) {
        hs__pinned_box(&pin, LEFT, lane_y[l], width, LANE_H, "#fafafa",
                       "#eceff1", NULL, NULL, NULL);
        hs__pinned_text(&pin, LEFT - 8, lane_y[l] + LANE_H / 2.0,
                        lane_names[l], 10, "#212121", 'r');
    }
    double ticks[16];
    /* Time from the first segment, in nice steps. */
    int nt = hs__nice_ticks(0, hi - lo, 10, ticks);
    for (int k = 0; k < nt; k++) {
        double x = LEFT + ticks[k] / (hi - lo) * width;
        hs__pinned_line(&pin, x, AXIS_H, x, height - TOP, 0.4, "#cfd8dc",
                        false);
        hs__pinned_line(&pin, x, AXIS_H - 4, x, AXIS_H, 0.8, "#263238", false);
        hs__tick_label(text, sizeof text, ticks[k], HS_TICK_SECONDS);
        hs__pinned_text(&pin, x, AXIS_H - 12, text, 8, "#37474f", 'c');
    }
    hs__pinned_line(&pin, LEFT, AXIS_H, LEFT + width, AXIS_H, 0.8, "#263238",
                    false);
    for (size_t k = 0; k < drawn; k++) {
        const hs_gantt_segment *s = &segments[order[k]];
        double x0 = LEFT + (s->start - lo) / (hi - lo) * width;
        double x1 = LEFT + (s->end - lo) / (hi - lo) * width;
        const char *fill, *stroke;
        style_of(s->kind, &fill, &stroke);
        tip.len = id.len = 0;
        segment_tooltip(&tip, s);
        hs__buf_printf(&id, "seg:%s:%d", lane_names[s->lane], order[k]);
        char label[64] = "";
        if (x1 - x0 >= 30 && s->label) {
            size_t fit = (size_t)((x1 - x0) / 5.5);
            snprintf(label, sizeof label, "%.*s", (int)(fit < 60 ? fit : 60),
                     s->label);
        }
        hs__pinned_box(&pin, x0, lane_y[s->lane] + 3, x1 - x0, LANE_H - 6,
                       fill, stroke, label[0] ? label : NULL,
                       tip.data ? tip.data : " ", id.data);
    }
    hs__pinned_end(&pin);
    hs__buf_free(&tip);
    hs__buf_free(&id);
    free(order);
    if (tip.oom || id.oom)
        b.oom = true;
    return hs__buf_finish(&b, out, out_len, "rendering", err);
}
