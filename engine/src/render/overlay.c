/* overlay.c - nodes filled by a figure instead of their category: output
 * bytes, FLOPs or simulated seconds on a sequential scale, or the memory
 * space of their outputs, with a legend node that the plain and the
 * composed drawing both place.
 *
 * The figures are the device's cost model's (hs_device_estimate_each): the
 * render room sits beside the device and never computes a cost itself, so
 * the caller hands them in by instruction id and a node sums them over the
 * instructions it stands for (a closed group its members, a fusion its
 * fused computation through the fusion's own charge).
 *
 * The scale is logarithmic between the smallest and the largest nonzero
 * value drawn: a layer's figures span six orders of magnitude (a scalar
 * add, a 4096x4096 matmul), and a linear scale would paint all but the
 * largest few nodes alike. Zero (parameters, a reshape's FLOPs) is white. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "render/render_internal.h"

static const char *const overlay_names[] = {
    [HS_OVERLAY_NONE] = "none",
    [HS_OVERLAY_BYTES] = "bytes",
    [HS_OVERLAY_FLOPS] = "flops",
    [HS_OVERLAY_TIME] = "time",
    [HS_OVERLAY_MEMORY_SPACE] = "memory_space",
};
#define N_OVERLAYS ((int)(sizeof overlay_names / sizeof overlay_names[0]))

const char *hs_render_overlay_name(hs_render_overlay o)
{
    return (unsigned)o < (unsigned)N_OVERLAYS ? overlay_names[o] : "none";
}

hs_status hs_render_overlay_parse(const char *text, hs_render_overlay *out,
                                  hs_error *err)
{
    *out = HS_OVERLAY_NONE;
    if (!text || !*text)
        return HS_OK;
    for (int k = 0; k < N_OVERLAYS; k++)
        if (strcmp(text, overlay_names[k]) == 0) {
            *out = (hs_render_overlay)k;
            return HS_OK;
        }
    hs_buf shown = {0};
    hs__text_clean(&shown, text, 32);
    hs_error_set(err, HS_ERR_INVALID,
                 "overlay: unknown overlay '%s' (known: none, bytes, flops, "
                 "time, memory_space)",
                 shown.data ? shown.data : "");
    hs__buf_free(&shown);
    return HS_ERR_INVALID;
}

hs_status hs__overlay_check(const hs_render_options *o, hs_error *err)
{
    if ((unsigned)o->overlay >= (unsigned)N_OVERLAYS)
        return hs_error_set(err, HS_ERR_INVALID, "overlay: unknown overlay %d",
                            (int)o->overlay);
    if ((o->overlay == HS_OVERLAY_FLOPS || o->overlay == HS_OVERLAY_TIME) &&
        !o->costs)
        return hs_error_set(err, HS_ERR_INVALID,
                            "overlay: %s needs the cost model's figures "
                            "(hs_render_options.costs)",
                            hs_render_overlay_name(o->overlay));
    return HS_OK;
}

/* Memory spaces of a shape's arrays. */
static unsigned shape_spaces(const hs_shape *s)
{
    if (s->dtype != HS_TUPLE)
        return s->memory_space == HS_MEMSPACE_HOST ? HS_SPACE_HOST
                                                   : HS_SPACE_DEVICE;
    unsigned u = 0;
    for (int k = 0; k < s->n_elems; k++)
        u |= shape_spaces(&s->elems[k]);
    return u ? u : HS_SPACE_DEVICE; /* an empty tuple */
}

void hs__overlay_count(const hs_view *v, hs_vnode *n, const hs_instruction *i)
{
    n->spaces |= shape_spaces(&i->shape);
    if (v->costs && i->id >= 0 && i->id < v->n_costs) {
        n->flops += v->costs[i->id].flops;
        n->seconds += v->costs[i->id].seconds;
    }
}

const char *hs__memory_space_name(unsigned spaces)
{
    if (spaces == (HS_SPACE_DEVICE | HS_SPACE_HOST))
        return "mixed";
    return spaces == HS_SPACE_HOST ? "host" : "device";
}

static double node_value(const hs_view *v, const hs_vnode *n)
{
    switch (v->overlay) {
    case HS_OVERLAY_BYTES:
        return (double)n->bytes;
    case HS_OVERLAY_FLOPS:
        return n->flops;
    case HS_OVERLAY_TIME:
        return n->seconds;
    default:
        return 0;
    }
}

static bool is_scale(hs_render_overlay o)
{
    return o == HS_OVERLAY_BYTES || o == HS_OVERLAY_FLOPS ||
           o == HS_OVERLAY_TIME;
}

void hs__overlay_scale(hs_view *v)
{
    v->scale_lo = v->scale_hi = 0;
    if (!is_scale(v->overlay))
        return;
    for (int k = 0; k < v->n_nodes; k++) {
        double x = node_value(v, &v->nodes[k]);
        if (!(x > 0) || !isfinite(x))
            continue;
        if (v->scale_lo == 0 || x < v->scale_lo)
            v->scale_lo = x;
        if (x > v->scale_hi)
            v->scale_hi = x;
    }
}

/* ColorBrewer's YlOrRd, 9 classes (Cynthia Brewer, colorbrewer2.org): a
 * sequential scale that stays readable in grey and for the common colour
 * vision deficiencies. Text turns white on the three darkest. */
#define STEPS 9
static const char *const steps[STEPS] = {
    "#ffffcc", "#ffeda0", "#fed976", "#feb24c", "#fd8d3c",
    "#fc4e2a", "#e31a1c", "#bd0026", "#800026",
};
static const hs_node_style zero_style = {"#ffffff", "#bdbdbd", "#757575"};
static const hs_node_style space_styles[3] = {
    {"#eceff1", "#90a4ae", "black"}, /* device: quiet */
    {"#d81b60", "#880e4f", "white"}, /* host S(5): stands out */
    {"#f8bbd0", "#d81b60", "black"}, /* a group holding both */
};

static int step_of(const hs_view *v, double x)
{
    if (!(x > 0) || !isfinite(x) || v->scale_hi <= 0)
        return -1;
    if (v->scale_hi <= v->scale_lo)
        return STEPS - 1;
    double t = (log(x) - log(v->scale_lo)) /
               (log(v->scale_hi) - log(v->scale_lo));
    int k = (int)(t * STEPS);
    return k < 0 ? 0 : k >= STEPS ? STEPS - 1 : k;
}

static const hs_node_style *space_style(unsigned spaces)
{
    if (spaces == (HS_SPACE_DEVICE | HS_SPACE_HOST))
        return &space_styles[2];
    return spaces == HS_SPACE_HOST ? &space_styles[1] : &space_styles[0];
}

bool hs__overlay_style(const hs_view *v, const hs_vnode *n, hs_node_style *st)
{
    if (v->overlay == HS_OVERLAY_MEMORY_SPACE) {
        *st = *space_style(n->spaces);
        return true;
    }
    if (!is_scale(v->overlay))
        return false;
    int k = step_of(v, node_value(v, n));
    if (k < 0) {
        *st = zero_style;
        return true;
    }
    /* the border one step darker, so neighbours of a colour stay apart */
    *st = (hs_node_style){steps[k], steps[k + 1 < STEPS ? k + 1 : k],
                          k >= STEPS - 3 ? "white" : "black"};
    return true;
}

const char *hs__overlay_unit(hs_render_overlay o)
{
    switch (o) {
    case HS_OVERLAY_BYTES:
        return "B";
    case HS_OVERLAY_FLOPS:
        return "FLOP";
    case HS_OVERLAY_TIME:
        return "s";
    default:
        return NULL;
    }
}

/* A scale end in the legend's unit: MiB, GFLOP, ms. */
static void legend_value(char *buf, size_t size, hs_render_overlay o, double x)
{
    switch (o) {
    case HS_OVERLAY_BYTES:
        snprintf(buf, size, "%.3g MiB", x / (1024.0 * 1024.0));
        break;
    case HS_OVERLAY_FLOPS:
        snprintf(buf, size, "%.3g GFLOP", x / 1e9);
        break;
    default:
        snprintf(buf, size, "%.3g ms", x * 1e3);
        break;
    }
}

static const char *legend_title(hs_render_overlay o)
{
    switch (o) {
    case HS_OVERLAY_BYTES:
        return "output bytes per node (log scale)";
    case HS_OVERLAY_FLOPS:
        return "FLOPs per node, cost model (log scale)";
    case HS_OVERLAY_TIME:
        return "simulated time per node, cost model (log scale)";
    default:
        return "memory space of the outputs";
    }
}

#define CELL_W 24
#define LEGEND_W (STEPS * CELL_W)

void hs__overlay_legend_size(const hs_view *v, double *w, double *h)
{
    (void)v;
    /* the table's natural size at 10 points: four rows of about 19 points,
     * the title's width at most */
    *w = 260;
    *h = 4 * 19;
}

void hs__overlay_legend(hs_buf *b, const hs_view *v, const char *extra)
{
    if (v->overlay == HS_OVERLAY_NONE)
        return;
    hs__buf_printf(b, "  \"legend:overlay\" [id=\"legend:overlay\", "
                      "shape=plaintext, style=\"\", tooltip=\"colour by %s\", "
                      "label=<<TABLE BORDER=\"1\" COLOR=\"#9e9e9e\" "
                      "CELLBORDER=\"0\" CELLSPACING=\"0\" CELLPADDING=\"3\" "
                      "BGCOLOR=\"white\"><TR><TD COLSPAN=\"%d\">%s</TD></TR>",
                   hs_render_overlay_name(v->overlay), STEPS,
                   legend_title(v->overlay));
    if (v->overlay == HS_OVERLAY_MEMORY_SPACE) {
        static const char *const names[3] = {"device", "host S(5)", "both"};
        hs__buf_puts(b, "<TR>");
        for (int k = 0; k < 3; k++)
            hs__buf_printf(b, "<TD COLSPAN=\"3\" BGCOLOR=\"%s\">"
                              "<FONT COLOR=\"%s\">%s</FONT></TD>",
                           space_styles[k].fill, space_styles[k].font,
                           names[k]);
        hs__buf_puts(b, "</TR>");
    } else {
        hs__buf_puts(b, "<TR>");
        for (int k = 0; k < STEPS; k++)
            hs__buf_printf(b, "<TD WIDTH=\"%d\" BGCOLOR=\"%s\"> </TD>", CELL_W,
                           steps[k]);
        char lo[48], hi[48];
        legend_value(lo, sizeof lo, v->overlay, v->scale_lo);
        legend_value(hi, sizeof hi, v->overlay, v->scale_hi);
        hs__buf_printf(b, "</TR><TR><TD COLSPAN=\"4\" ALIGN=\"LEFT\">%s</TD>"
                          "<TD> </TD><TD COLSPAN=\"4\" ALIGN=\"RIGHT\">%s</TD>"
                          "</TR><TR><TD COLSPAN=\"%d\">white: 0 or not "
                          "charged</TD></TR>",
                       v->scale_hi > 0 ? lo : "-", v->scale_hi > 0 ? hi : "-",
                       STEPS);
    }
    hs__buf_puts(b, "</TABLE>>");
    if (extra)
        hs__buf_puts(b, extra);
    hs__buf_puts(b, "];\n");
}

void hs__overlay_legend_cells(const hs_view *v, hs_svg_legend *l)
{
    static const char *const names[3] = {"device", "host S(5)", "both"};
    snprintf(l->tip_buf, sizeof l->tip_buf, "colour by %s",
             hs_render_overlay_name(v->overlay));
    l->tooltip = l->tip_buf;
    l->title = legend_title(v->overlay);
    l->lo = l->hi = l->note = NULL;
    /* the cells' width, or the title's (about 5 points a character at 10
     * points), and four rows */
    double title_w = 5.0 * (double)strlen(l->title) + 8;
    l->w = title_w > LEGEND_W ? title_w + 2 : LEGEND_W + 2;
    l->h = 4 * HS_LEGEND_ROW + 2;
    if (v->overlay == HS_OVERLAY_MEMORY_SPACE) {
        l->n_cells = 3;
        for (int k = 0; k < 3; k++)
            l->cells[k] = (hs_svg_legend_cell){space_styles[k].fill,
                                               space_styles[k].font, names[k]};
        return;
    }
    l->n_cells = STEPS;
    for (int k = 0; k < STEPS; k++)
        l->cells[k] = (hs_svg_legend_cell){steps[k], NULL, NULL};
    legend_value(l->lo_buf, sizeof l->lo_buf, v->overlay, v->scale_lo);
    legend_value(l->hi_buf, sizeof l->hi_buf, v->overlay, v->scale_hi);
    l->lo = v->scale_hi > 0 ? l->lo_buf : "-";
    l->hi = v->scale_hi > 0 ? l->hi_buf : "-";
    l->note = "white: 0 or not charged";
}
