/* pinned.c - drawing with pinned positions: charts written as Graphviz
 * nodes whose positions are fixed (pos="x,y!", points, y up), for the
 * "nop2" engine (neato -n2), which moves nothing. Boxes are fixed-size
 * filled nodes, lines are thin boxes, text is a plaintext node whose label
 * is justified inside a fixed-width box. Nodes are painted in the order
 * they are written, so later ones are on top. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "render/render_internal.h"

/* Graphviz's smallest node: 0.01 x 0.02 inches. */
static const double MIN_W = 0.72, MIN_H = 1.44;

void hs__pinned_begin(hs_pinned *p, const char *title, double width,
                      double height)
{
    hs__buf_puts(p->b, "digraph G {\n  graph [bgcolor=white, margin=0, "
                        "pad=0.1, splines=false, inputscale=72, "
                        "fontname=\"Helvetica\", tooltip=\"");
    hs__dot_text(p->b, title, 200);
    hs__buf_puts(p->b, "\"];\n  node [shape=box, fixedsize=true, "
                        "style=filled, penwidth=0, label=\"\", "
                        "fontname=\"Helvetica\", fontsize=9, margin=0];\n");
    p->width = width;
    p->height = height;
    /* The canvas: fixes the bounding box, so positions stay as written. */
    hs__buf_printf(p->b,
                    "  canvas [pos=\"%.2f,%.2f!\", width=%.4f, height=%.4f, "
                    "fillcolor=white, tooltip=\" \"];\n",
                    width / 2, height / 2, width / 72, height / 72);
}

void hs__pinned_end(hs_pinned *p)
{
    hs__buf_puts(p->b, "}\n");
}

void hs__pinned_box(hs_pinned *p, double x, double y, double w, double h,
                    const char *fill, const char *stroke, const char *label,
                    const char *tooltip_dot, const char *id)
{
    if (w < MIN_W) {
        x -= (MIN_W - w) / 2;
        w = MIN_W;
    }
    if (h < MIN_H) {
        y -= (MIN_H - h) / 2;
        h = MIN_H;
    }
    hs__buf_printf(p->b,
                    "  n%d [pos=\"%.2f,%.2f!\", width=%.4f, height=%.4f, "
                    "fillcolor=\"%s\"",
                    p->next_id++, x + w / 2, y + h / 2, w / 72, h / 72, fill);
    if (stroke)
        hs__buf_printf(p->b, ", color=\"%s\", penwidth=0.5", stroke);
    if (id)
        hs__buf_printf(p->b, ", id=\"%s\"", id);
    if (label) {
        hs__buf_puts(p->b, ", label=\"");
        hs__dot_text(p->b, label, 0);
        hs__buf_putc(p->b, '"');
    }
    hs__buf_puts(p->b, ", tooltip=\"");
    if (tooltip_dot)
        hs__buf_puts(p->b, tooltip_dot);
    else
        hs__buf_putc(p->b, ' ');
    hs__buf_puts(p->b, "\"];\n");
}

void hs__pinned_line(hs_pinned *p, double x0, double y0, double x1, double y1,
                     double width, const char *colour, bool dashed)
{
    double lx = fmin(x0, x1), ly = fmin(y0, y1);
    double w = fabs(x1 - x0), h = fabs(y1 - y0);
    if (w < width)
        w = width;
    if (h < width)
        h = width;
    if (!dashed) {
        hs__pinned_box(p, lx, ly, w, h, colour, NULL, NULL, NULL, NULL);
        return;
    }
    /* Dashes: 6 points on, 4 off. */
    bool horizontal = w >= h;
    double len = horizontal ? w : h;
    for (double t = 0; t < len; t += 10) {
        double d = fmin(6, len - t);
        if (horizontal)
            hs__pinned_box(p, lx + t, ly, d, h, colour, NULL, NULL, NULL,
                           NULL);
        else
            hs__pinned_box(p, lx, ly + t, w, d, colour, NULL, NULL, NULL,
                           NULL);
    }
}

void hs__pinned_text(hs_pinned *p, double x, double y, const char *text,
                     double font_size, const char *colour, char align)
{
    /* The label is justified in a fixed box: '\l' against its left edge
     * (at x), '\r' against its right edge (at x). The box stays inside
     * the canvas, which keeps the bounding box (and so every position)
     * as written. */
    double room = align == 'l' ? p->width - x
                  : align == 'r' ? x
                                 : 2 * fmin(x, p->width - x);
    double box = fmax(fmin(room, 400), 1);
    double cx = align == 'l' ? x + box / 2 : align == 'r' ? x - box / 2 : x;
    hs__buf_printf(p->b,
                    "  n%d [shape=plaintext, style=\"\", pos=\"%.2f,%.2f!\", "
                    "width=%.4f, height=%.4f, fontsize=%.1f, fontcolor=\"%s\", "
                    "tooltip=\" \", label=\"",
                    p->next_id++, cx, y, box / 72, (font_size + 4) / 72,
                    font_size, colour);
    hs__dot_text(p->b, text, 200);
    if (align == 'l')
        hs__buf_puts(p->b, "\\l");
    else if (align == 'r')
        hs__buf_puts(p->b, "\\r");
    hs__buf_puts(p->b, "\"];\n");
}

int hs__nice_ticks(double lo, double hi, int max_ticks, double *ticks)
{
    if (!(hi > lo) || max_ticks < 2)
        return 0;
    double raw = (hi - lo) / (max_ticks - 1);
    double mag = pow(10, floor(log10(raw)));
    double step = mag;
    if (raw > 5 * mag)
        step = 10 * mag;
    else if (raw > 2 * mag)
        step = 5 * mag;
    else if (raw > mag)
        step = 2 * mag;
    int n = 0;
    for (double v = ceil(lo / step) * step; v <= hi + step * 1e-9 &&
                                            n < max_ticks + 1;
         v += step)
        ticks[n++] = fabs(v) < step * 1e-9 ? 0 : v;
    return n;
}

int hs__byte_ticks(double hi, int max_ticks, double *ticks)
{
    double unit = 1;
    while (hi / unit >= 1024)
        unit *= 1024;
    int n = hs__nice_ticks(0, hi / unit, max_ticks, ticks);
    for (int k = 0; k < n; k++)
        ticks[k] *= unit;
    return n;
}

void hs__tick_label(char *buf, size_t size, double v, hs_tick_unit u)
{
    switch (u) {
    case HS_TICK_BYTES:
        hs__format_bytes(buf, size, v);
        return;
    case HS_TICK_SECONDS: {
        double a = fabs(v);
        if (a == 0)
            snprintf(buf, size, "0 s");
        else if (a >= 1)
            snprintf(buf, size, "%.4g s", v);
        else if (a >= 1e-3)
            snprintf(buf, size, "%.4g ms", v * 1e3);
        else if (a >= 1e-6)
            snprintf(buf, size, "%.4g us", v * 1e6);
        else
            snprintf(buf, size, "%.4g ns", v * 1e9);
        return;
    }
    case HS_TICK_COUNT:
    default:
        snprintf(buf, size, "%.0f", v);
        return;
    }
}
