/* svg.c - a composed drawing written as SVG here, in the process, instead
 * of as pinned DOT that a layout worker parses (agread) and Graphviz's nop2
 * draws. Everything is placed already (compose.c), so drawing is printing:
 * on Mixtral's default view the worker's round trip was most of a warm
 * view's time (see docs/RENDER.md "Composed layout").
 *
 * The output follows Graphviz's SVG (version 2.43, what nop2 wrote before)
 * element for element where the explorer looks (web/src/graph.js,
 * overlay.js, style.css): a <g id=ID class="node|edge|cluster"> per item
 * with a <title> (its DOT name), a <g id="a_ID"><a xlink:title=TOOLTIP>
 * around what has a tooltip, the node's outline as the first polygon (or
 * ellipse), text in Helvetica at the DOT's font sizes, one
 * <g id="graph0" class="graph"> translated so that y runs up as in the
 * layout, and width, height and viewBox in points. Text is taken from the
 * same producers as the DOT (already cleaned and DOT-escaped), unescaped
 * and escaped again for XML. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "render/render_internal.h"

#define FONT "Helvetica,sans-Serif"
/* Graphviz's text metrics for its built-in Helvetica estimate: a line is
 * fontsize + 1 points high and its baseline 0.8 fontsize below the line's
 * top (measured on nop2's output at 9, 10, 11 and 14 points). */
#define LINE_GAP 1.0
#define BASELINE 0.8
/* The graph's title: 14 points, with 4 points above and below. */
#define TITLE_FONT 14.0
#define TITLE_PAD 8.0
/* An arrowhead: 10 points long, 7 wide (Graphviz's "normal" at arrowsize 1). */
#define ARROW_LEN 10.0
#define ARROW_HALF 3.5
/* Extra outlines (peripheries) are 4 points apart. */
#define PERIPHERY_GAP 4.0

/* Appends s, DOT-escaped text as the producers write it, as XML: one call
 * per line (a line break is "\n", "\l" or "\r" in DOT); returns where the
 * next line starts, or NULL after the last. Graphviz drops the backslash
 * of any other escape; '-' is written as &#45; as Graphviz does. */
static const char *xml_line(hs_buf *b, const char *s)
{
    for (; *s; s++) {
        char c = *s;
        if (c == '\\' && s[1]) {
            s++;
            if (*s == 'n' || *s == 'l' || *s == 'r')
                return s + 1;
            c = *s;
        }
        switch (c) {
        case '&': hs__buf_puts(b, "&amp;"); break;
        case '<': hs__buf_puts(b, "&lt;"); break;
        case '>': hs__buf_puts(b, "&gt;"); break;
        case '"': hs__buf_puts(b, "&quot;"); break;
        case '\'': hs__buf_puts(b, "&#39;"); break;
        case '-': hs__buf_puts(b, "&#45;"); break;
        default: hs__buf_putc(b, c); break;
        }
    }
    return NULL;
}

/* All of s on one line (a tooltip keeps its line breaks as "&#10;"). */
static void xml_text(hs_buf *b, const char *s)
{
    while (s && *s) {
        s = xml_line(b, s);
        if (s && *s)
            hs__buf_puts(b, "&#10;");
    }
}

static int count_lines(const char *s)
{
    int n = 1;
    for (; s && *s; s++)
        if (*s == '\\' && s[1]) {
            s++;
            if (*s == 'n' || *s == 'l' || *s == 'r')
                n += s[1] != '\0';
        }
    return n;
}

static double sx(const hs_svg_frame *f, double x) { return x - f->llx; }
static double sy(const hs_svg_frame *f, double y) { return -(y - f->lly); }

/* x to two decimals, trailing zeros dropped ("-130.5", "36"), as Graphviz
 * prints coordinates; by hand, since printf's %f was a fifth of a warm
 * view's time. */
static void num(hs_buf *b, double x)
{
    if (!(fabs(x) < 1e15)) {
        hs__buf_printf(b, "%.2f", isfinite(x) ? x : 0.0);
        return;
    }
    long long v = llround(x * 100);
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    char s[32], *p = s + sizeof s;
    unsigned frac = (unsigned)(u % 100);
    u /= 100;
    if (frac % 10)
        *--p = (char)('0' + frac % 10);
    if (frac)
        *--p = (char)('0' + frac / 10), *--p = '.';
    do
        *--p = (char)('0' + u % 10);
    while (u /= 10);
    if (v < 0)
        *--p = '-';
    hs__buf_put(b, p, (size_t)(s + sizeof s - p));
}

/* "x,y" of a layout point, in the SVG's frame. */
static void point(hs_buf *b, const hs_svg_frame *f, double x, double y)
{
    num(b, sx(f, x));
    hs__buf_putc(b, ',');
    num(b, sy(f, y));
}

/* attr="x" */
static void attr_num(hs_buf *b, const char *attr, double x)
{
    hs__buf_printf(b, " %s=\"", attr);
    num(b, x);
    hs__buf_putc(b, '"');
}

/* Lines of text centred on (x, y), y up, as Graphviz places a label. */
static void text_block(hs_buf *b, const hs_svg_frame *f, const char *label,
                       double x, double y, double size, const char *colour)
{
    int n = count_lines(label);
    double lh = size + LINE_GAP;
    double top = sy(f, y) - n * lh / 2; /* svg y grows down */
    const char *s = label ? label : "";
    for (int k = 0; k < n && s; k++) {
        hs__buf_puts(b, "<text text-anchor=\"middle\"");
        attr_num(b, "x", sx(f, x));
        attr_num(b, "y", top + k * lh + BASELINE * size);
        hs__buf_printf(b, " font-family=\"" FONT "\" font-size=\"%.2f\"", size);
        if (colour && strcmp(colour, "black") != 0)
            hs__buf_printf(b, " fill=\"%s\"", colour);
        hs__buf_putc(b, '>');
        s = xml_line(b, s);
        hs__buf_puts(b, "</text>\n");
    }
}

/* The size of the graph's title block (0 x 0 without a title). */
static void title_size(const char *title, double *w, double *h)
{
    size_t longest = 0, len = 0;
    for (const char *s = title; s && *s; s++) {
        if (*s == '\\' && s[1] && strchr("nlr", s[1])) {
            s++;
            len = 0;
            continue;
        }
        if ((*s & 0xc0) != 0x80 && ++len > longest)
            longest = len;
    }
    if (!title || !*title) {
        *w = *h = 0;
        return;
    }
    /* Helvetica's average advance, about 0.55 em */
    *w = (double)longest * 0.55 * TITLE_FONT + TITLE_PAD * 2;
    *h = count_lines(title) * (TITLE_FONT + LINE_GAP) + TITLE_PAD;
}

void hs__svg_frame_title(hs_svg_frame *f, const char *title)
{
    double tw, th;
    title_size(title, &tw, &th);
    double cw = f->urx - f->llx;
    if (tw > cw) {
        f->llx -= (tw - cw) / 2;
        f->urx += (tw - cw) / 2;
    }
    f->title_y = f->ury + th / 2;
    f->ury += th;
}

void hs__svg_frame_add(hs_svg_frame *f, double x0, double y0, double x1,
                       double y1)
{
    if (f->empty) {
        f->llx = x0, f->lly = y0, f->urx = x1, f->ury = y1;
        f->empty = false;
        return;
    }
    f->llx = fmin(f->llx, x0);
    f->lly = fmin(f->lly, y0);
    f->urx = fmax(f->urx, x1);
    f->ury = fmax(f->ury, y1);
}

void hs__svg_begin(hs_buf *b, const hs_svg_frame *f, const char *title)
{
    double w = f->urx - f->llx, h = f->ury - f->lly;
    hs__buf_printf(b,
                   "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
                   "<!-- Generated by hloscope (compose.c, svg.c) -->\n"
                   "<svg width=\"%.0fpt\" height=\"%.0fpt\"\n"
                   " viewBox=\"0.00 0.00 %.2f %.2f\" "
                   "xmlns=\"http://www.w3.org/2000/svg\" "
                   "xmlns:xlink=\"http://www.w3.org/1999/xlink\">\n"
                   "<g id=\"graph0\" class=\"graph\" transform=\"scale(1 1) "
                   "rotate(0) translate(4 %.2f)\">\n<title>G</title>\n"
                   "<g id=\"a_graph0\"><a xlink:title=\" \">\n"
                   "<polygon fill=\"white\" stroke=\"transparent\" "
                   "points=\"-4,4 -4,%.2f %.2f,%.2f %.2f,4 -4,4\"/>\n",
                   ceil(w + 8), ceil(h + 8), w + 8, h + 8, h + 4, -(h + 4),
                   w + 4, -(h + 4), w + 4);
    if (title && *title)
        text_block(b, f, title, (f->llx + f->urx) / 2, f->title_y, TITLE_FONT,
                   NULL);
    hs__buf_puts(b, "</a>\n</g>\n");
}

void hs__svg_end(hs_buf *b) { hs__buf_puts(b, "</g>\n</svg>\n"); }

/* <g id=ID class=CLASS><title>NAME</title> and, with a tooltip, the link
 * around its shapes. */
static void open_item(hs_buf *b, const char *id, const char *cls,
                      const char *name, const char *tooltip)
{
    hs__buf_puts(b, "<g id=\"");
    xml_text(b, id);
    hs__buf_printf(b, "\" class=\"%s\">\n<title>", cls);
    xml_text(b, name);
    hs__buf_puts(b, "</title>\n");
    if (tooltip) {
        hs__buf_puts(b, "<g id=\"a_");
        xml_text(b, id);
        hs__buf_puts(b, "\"><a xlink:title=\"");
        xml_text(b, tooltip);
        hs__buf_puts(b, "\">\n");
    }
}

static void close_item(hs_buf *b, bool tooltip)
{
    hs__buf_puts(b, tooltip ? "</a>\n</g>\n</g>\n" : "</g>\n");
}

static void pen(hs_buf *b, double width, const char *dash)
{
    if (dash)
        hs__buf_printf(b, " stroke-dasharray=\"%s\"", dash);
    if (width != 1)
        hs__buf_printf(b, " stroke-width=\"%g\"", width);
}

/* A rectangle as Graphviz writes it: from the top right, anticlockwise on
 * screen, closed. */
static void rect(hs_buf *b, const hs_svg_frame *f, const char *fill,
                 const char *stroke, double width, double x0, double y0,
                 double x1, double y1)
{
    hs__buf_printf(b, "<polygon fill=\"%s\" stroke=\"%s\"", fill, stroke);
    pen(b, width, NULL);
    hs__buf_puts(b, " points=\"");
    const double corner[5][2] = {{x1, y1}, {x0, y1}, {x0, y0}, {x1, y0}, {x1, y1}};
    for (int k = 0; k < 5; k++) {
        if (k)
            hs__buf_putc(b, ' ');
        point(b, f, corner[k][0], corner[k][1]);
    }
    hs__buf_puts(b, "\"/>\n");
}

void hs__svg_cluster(hs_buf *b, const hs_svg_frame *f, const hs_svg_cluster *c)
{
    open_item(b, c->id, "cluster", c->id, c->tooltip);
    double l = sx(f, c->x0), r = sx(f, c->x1), t = sy(f, c->y1), d = sy(f, c->y0);
    double rad = fmin(12.0, fmin((r - l) / 2, (d - t) / 2));
    bool filled = strstr(c->style, "filled") != NULL;
    const char *dash = strstr(c->style, "dashed") ? "5,2"
                       : strstr(c->style, "dotted") ? "1,5" : NULL;
    hs__buf_printf(b, "<path fill=\"%s\" stroke=\"%s\"",
                   filled && c->fill ? c->fill : "none", c->stroke);
    pen(b, strstr(c->style, "bold") ? 2 : 1, dash);
    /* Graphviz's rounded box: straight sides as degenerate cubics, corners
     * as quarter curves, from the bottom-left corner's end, anticlockwise */
    hs__buf_printf(b, " d=\"M%.2f,%.2f"
                      "C%.2f,%.2f %.2f,%.2f %.2f,%.2f %.2f,%.2f %.2f,%.2f %.2f,%.2f "
                      "%.2f,%.2f %.2f,%.2f %.2f,%.2f %.2f,%.2f %.2f,%.2f %.2f,%.2f "
                      "%.2f,%.2f %.2f,%.2f %.2f,%.2f %.2f,%.2f %.2f,%.2f %.2f,%.2f "
                      "%.2f,%.2f %.2f,%.2f %.2f,%.2f %.2f,%.2f %.2f,%.2f %.2f,%.2f\"/>\n",
                   l + rad, d,
                   l + rad, d, r - rad, d, r - rad, d, r - rad / 2, d, r, d - rad / 2, r, d - rad,
                   r, d - rad, r, t + rad, r, t + rad, r, t + rad / 2, r - rad / 2, t, r - rad, t,
                   r - rad, t, l + rad, t, l + rad, t, l + rad / 2, t, l, t + rad / 2, l, t + rad,
                   l, t + rad, l, d - rad, l, d - rad, l, d - rad / 2, l + rad / 2, d, l + rad, d);
    text_block(b, f, c->label, c->lx, c->ly, c->fontsize, NULL);
    close_item(b, c->tooltip != NULL);
}

void hs__svg_node(hs_buf *b, const hs_svg_frame *f, const hs_view *v,
                  const hs_vnode *n, double cx, double cy, double w, double h,
                  hs_buf *scratch)
{
    hs_node_look look = hs__node_look(v, n);
    scratch->len = 0;
    hs__node_tooltip(scratch, v, n);
    size_t label_at = scratch->len;
    hs__buf_putc(scratch, '\0');
    hs__node_label(scratch, v, n);
    hs__buf_putc(scratch, '\0');
    if (scratch->oom)
        return; /* the caller sees the output's own failure */
    const char *tooltip = scratch->data, *label = scratch->data + label_at + 1;
    open_item(b, n->id, "node", n->id, tooltip);
    double x0 = cx - w / 2, x1 = cx + w / 2, y0 = cy - h / 2, y1 = cy + h / 2;
    const char *fill = look.colours.fill, *stroke = look.colours.stroke;
    if (look.shape == HS_SHAPE_ELLIPSE) {
        for (int k = 0; k < look.peripheries; k++) {
            hs__buf_printf(b, "<ellipse fill=\"%s\" stroke=\"%s\"",
                           k == 0 ? fill : "none", stroke);
            pen(b, look.penwidth, NULL);
            attr_num(b, "cx", sx(f, cx));
            attr_num(b, "cy", sy(f, cy));
            attr_num(b, "rx", w / 2 + k * PERIPHERY_GAP);
            attr_num(b, "ry", h / 2 + k * PERIPHERY_GAP);
            hs__buf_puts(b, "/>\n");
        }
    } else if (look.shape == HS_SHAPE_BOX3D) {
        /* a box with its back 4 points up and right, as Graphviz's box3d */
        const double d = 4;
        double l = sx(f, x0), r = sx(f, x1), t = sy(f, y1), u = sy(f, y0);
        hs__buf_printf(b, "<polygon fill=\"%s\" stroke=\"%s\"", fill, stroke);
        pen(b, look.penwidth, NULL);
        hs__buf_printf(b, " points=\"%.2f,%.2f %.2f,%.2f %.2f,%.2f %.2f,%.2f "
                          "%.2f,%.2f %.2f,%.2f %.2f,%.2f\"/>\n",
                       r, t, l + d, t, l, t + d, l, u, r - d, u, r, u - d, r, t);
        const double seg[3][4] = {{r - d, t + d, l, t + d},
                                  {r - d, t + d, r - d, u},
                                  {r - d, t + d, r, t}};
        for (int k = 0; k < 3; k++) {
            hs__buf_printf(b, "<polyline fill=\"none\" stroke=\"%s\"", stroke);
            pen(b, look.penwidth, NULL);
            hs__buf_printf(b, " points=\"%.2f,%.2f %.2f,%.2f \"/>\n", seg[k][0],
                           seg[k][1], seg[k][2], seg[k][3]);
        }
    } else {
        for (int k = 0; k < look.peripheries; k++) {
            double g = k * PERIPHERY_GAP;
            rect(b, f, k == 0 ? fill : "none", stroke, look.penwidth, x0 - g,
                 y0 - g, x1 + g, y1 + g);
        }
    }
    text_block(b, f, label, cx, cy, 10, look.colours.font);
    close_item(b, true);
}

double hs__svg_node_margin(const hs_view *v, const hs_vnode *n)
{
    hs_node_look look = hs__node_look(v, n);
    return (look.peripheries - 1) * PERIPHERY_GAP;
}

void hs__svg_edge(hs_buf *b, const hs_svg_frame *f, const hs_view *v,
                  const hs_vedge *e, const double *pts, int n, bool has_end,
                  double ex, double ey, const double *head_lp, hs_buf *scratch)
{
    scratch->len = 0;
    hs__edge_id(scratch, v, e);
    size_t name_at = scratch->len;
    hs__buf_putc(scratch, '\0');
    hs__buf_printf(scratch, "%s->%s", v->nodes[e->from].id, v->nodes[e->to].id);
    size_t tip_at = scratch->len;
    hs__buf_putc(scratch, '\0');
    bool call = e->kind == HS_VEDGE_CALL;
    if (call)
        hs__edge_tooltip(scratch, v, e);
    hs__buf_putc(scratch, '\0');
    if (scratch->oom)
        return;
    const char *id = scratch->data, *name = scratch->data + name_at + 1;
    open_item(b, id, "edge", name, call ? scratch->data + tip_at + 1 : NULL);
    double width = hs__edge_width(e);
    if (n > 0) {
        hs__buf_puts(b, "<path fill=\"none\" stroke=\"black\"");
        pen(b, width, call ? "5,2" : NULL);
        hs__buf_puts(b, " d=\"M");
        for (int k = 0; k < n; k++) {
            if (k)
                hs__buf_putc(b, k == 1 ? 'C' : ' ');
            point(b, f, pts[2 * k], pts[2 * k + 1]);
        }
        hs__buf_puts(b, "\"/>\n");
    }
    if (n > 0 && has_end) {
        /* the head: from 10 points back along the last piece to the tip */
        double px = pts[2 * (n - 1)], py = pts[2 * (n - 1) + 1];
        double dx = ex - px, dy = ey - py, len = sqrt(dx * dx + dy * dy);
        if (len < 1e-9)
            dx = 0, dy = -1, len = 1;
        double ux = dx / len, uy = dy / len;
        double bx = ex - ARROW_LEN * ux, by = ey - ARROW_LEN * uy;
        double wx = -uy * ARROW_HALF, wy = ux * ARROW_HALF;
        hs__buf_puts(b, "<polygon fill=\"black\" stroke=\"black\"");
        pen(b, width, NULL);
        const double head[4][2] = {{bx + wx, by + wy}, {ex, ey}, {bx - wx, by - wy},
                                   {bx + wx, by + wy}};
        hs__buf_puts(b, " points=\"");
        for (int k = 0; k < 4; k++) {
            if (k)
                hs__buf_putc(b, ' ');
            point(b, f, head[k][0], head[k][1]);
        }
        hs__buf_puts(b, "\"/>\n");
    }
    if (!call && e->operand_index >= 0 && head_lp) {
        char num[16];
        snprintf(num, sizeof num, "%d", e->operand_index);
        text_block(b, f, num, head_lp[0], head_lp[1], 9, NULL);
    }
    close_item(b, call);
}

/* One line of text with its baseline at y (up), anchored at x. */
static void text_at(hs_buf *b, const hs_svg_frame *f, const char *text,
                    const char *anchor, double x, double y, const char *colour)
{
    hs__buf_printf(b, "<text text-anchor=\"%s\"", anchor);
    attr_num(b, "x", sx(f, x));
    attr_num(b, "y", sy(f, y));
    hs__buf_puts(b, " font-family=\"" FONT "\" font-size=\"10.00\"");
    if (colour && strcmp(colour, "black") != 0)
        hs__buf_printf(b, " fill=\"%s\"", colour);
    hs__buf_putc(b, '>');
    xml_text(b, text);
    hs__buf_puts(b, "</text>\n");
}

/* The legend of an overlay, drawn as Graphviz draws its HTML table: rows
 * of LEGEND_ROW points inside a 1-point grey border on white: the title,
 * the colour steps (or memory spaces) as cells, the scale's ends, a note. */
void hs__svg_legend(hs_buf *b, const hs_svg_frame *f, const hs_svg_legend *l)
{
    open_item(b, "legend:overlay", "node", "legend:overlay", l->tooltip);
    double x0 = l->cx - l->w / 2, y0 = l->cy - l->h / 2;
    double x1 = x0 + l->w, y1 = y0 + l->h;
    rect(b, f, "white", "transparent", 1, x0, y0, x1, y1);
    double top = y1 - 1, row = HS_LEGEND_ROW, base = row - 6;
    text_at(b, f, l->title, "middle", l->cx, top - base, NULL);
    double cw = (l->w - 2) / l->n_cells;
    for (int k = 0; k < l->n_cells; k++) {
        double cx0 = x0 + 1 + k * cw;
        rect(b, f, l->cells[k].fill, "transparent", 1, cx0, top - 2 * row,
             cx0 + cw, top - row);
        if (l->cells[k].text)
            text_at(b, f, l->cells[k].text, "middle", cx0 + cw / 2,
                    top - row - base, l->cells[k].font);
    }
    if (l->lo)
        text_at(b, f, l->lo, "start", x0 + 4, top - 2 * row - base, NULL);
    if (l->hi)
        text_at(b, f, l->hi, "end", x1 - 4, top - 2 * row - base, NULL);
    if (l->note)
        text_at(b, f, l->note, "middle", l->cx, top - 3 * row - base, NULL);
    rect(b, f, "none", "#9e9e9e", 1, x0, y0, x1, y1);
    close_item(b, true);
}
