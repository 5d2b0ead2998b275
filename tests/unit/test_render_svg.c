/* test_render_svg.c - composed drawings written as SVG by hloscope itself
 * (render/svg.c) against Graphviz's nop2 SVG of the same pinned drawing
 * (HS_COMPOSE_SVG=graphviz), on views of inputs nobody here wrote as well
 * as our own: a decoder layer open, an overlay, a while loop's body and
 * condition (../shared/hlo-samples), fused computations of an XLA GPU dump,
 * and Mixtral's default view (../shared/hlo-real). Both SVGs are parsed
 * with libxml2 and must hold the same node, edge and cluster ids, the same
 * <title>s, tooltips and label strings, the same fills and strokes, node
 * outlines within 0.5 points of each other; the frame (width, height)
 * within a title's rounding. Names are never trusted: a module whose names
 * carry markup gives a well-formed SVG with the text escaped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_file.h"
#include "hloscope/hs_hlo_text.h"
#include "hloscope/hs_ir.h"
#include "hloscope/hs_model.h"
#include "hloscope/hs_render.h"
#include "hlo_test_helpers.h"

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xpath.h>
#include <libxml/xpathInternals.h>

#define MIXTRAL HS_SOURCE_DIR "/../shared/hlo-real/hlo_mixtral_8x7b_bf16_1x8.hlo"

static char *draw(const hs_module *m, const hs_render_options *o, bool graphviz,
                  size_t *len)
{
    if (graphviz)
        setenv("HS_COMPOSE_SVG", "graphviz", 1);
    else
        unsetenv("HS_COMPOSE_SVG");
    char *out = NULL;
    hs_error err;
    hs_status st = hs_render_graph_composed(m, o, "svg", 300000, &out, len,
                                            NULL, &err);
    unsetenv("HS_COMPOSE_SVG");
    if (st != HS_OK)
        fail_msg("composed (%s): %s", graphviz ? "nop2" : "own", err.message);
    return out;
}

/* ---- what the explorer reads of an item -------------------------------- */

typedef struct item {
    char *id, *cls, *title, *tooltip, *texts; /* texts joined by '|' */
    char *fill, *stroke;                       /* of the first shape */
    double x0, y0, x1, y1;                     /* its box, in SVG points */
    bool has_box;
} item;

typedef struct drawing {
    xmlDocPtr doc;
    int n;
    item *items;
    double width, height; /* pt */
    double tx, ty;        /* graph0's translation */
} drawing;

static char *prop(xmlNodePtr n, const char *name)
{
    xmlChar *v = xmlGetProp(n, (const xmlChar *)name);
    char *s = strdup(v ? (const char *)v : "");
    xmlFree(v);
    return s;
}

static bool named(xmlNodePtr n, const char *name)
{
    return n->type == XML_ELEMENT_NODE && strcmp((const char *)n->name, name) == 0;
}

static void grow_box(item *it, double x, double y)
{
    if (!it->has_box) {
        it->x0 = it->x1 = x;
        it->y0 = it->y1 = y;
        it->has_box = true;
        return;
    }
    it->x0 = fmin(it->x0, x);
    it->x1 = fmax(it->x1, x);
    it->y0 = fmin(it->y0, y);
    it->y1 = fmax(it->y1, y);
}

/* Walks an item's subtree: title, link tooltip, texts, the first shape. */
static void walk(xmlNodePtr n, item *it, bool *shape_seen, char *texts,
                 size_t size)
{
    for (xmlNodePtr c = n->children; c; c = c->next) {
        if (c->type != XML_ELEMENT_NODE)
            continue;
        if (named(c, "title")) {
            xmlChar *t = xmlNodeGetContent(c);
            free(it->title);
            it->title = strdup((const char *)t);
            xmlFree(t);
        } else if (named(c, "a")) {
            xmlChar *t = xmlGetNsProp(c, (const xmlChar *)"title",
                                      (const xmlChar *)"http://www.w3.org/1999/xlink");
            free(it->tooltip);
            it->tooltip = strdup(t ? (const char *)t : "");
            xmlFree(t);
        } else if (named(c, "text")) {
            xmlChar *t = xmlNodeGetContent(c);
            /* a blank text shows nothing (Graphviz writes one per empty
             * table cell) */
            bool blank = strspn((const char *)t, " ") == strlen((const char *)t);
            if (!blank && strlen(texts) + strlen((const char *)t) + 2 < size) {
                strcat(texts, (const char *)t);
                strcat(texts, "|");
            }
            xmlFree(t);
        } else if (!*shape_seen && (named(c, "polygon") || named(c, "ellipse"))) {
            *shape_seen = true;
            it->fill = prop(c, "fill");
            it->stroke = prop(c, "stroke");
            if (named(c, "ellipse")) {
                char *cx = prop(c, "cx"), *cy = prop(c, "cy"), *rx = prop(c, "rx"),
                     *ry = prop(c, "ry");
                grow_box(it, atof(cx) - atof(rx), atof(cy) - atof(ry));
                grow_box(it, atof(cx) + atof(rx), atof(cy) + atof(ry));
                free(cx), free(cy), free(rx), free(ry);
            } else {
                char *pts = prop(c, "points");
                for (char *p = pts; *p;) {
                    char *end;
                    double x = strtod(p, &end);
                    if (end == p || *end != ',')
                        break;
                    double y = strtod(end + 1, &end);
                    grow_box(it, x, y);
                    p = end;
                    while (*p == ' ')
                        p++;
                }
                free(pts);
            }
        } else if (!*shape_seen && named(c, "path") && !strcmp(it->cls, "cluster")) {
            *shape_seen = true;
            it->fill = prop(c, "fill");
            it->stroke = prop(c, "stroke");
        }
        walk(c, it, shape_seen, texts, size);
    }
}

static void parse_drawing(const char *svg, size_t len, drawing *d)
{
    memset(d, 0, sizeof *d);
    d->doc = xmlReadMemory(svg, (int)len, "composed.svg", NULL,
                           XML_PARSE_NONET | XML_PARSE_NOERROR);
    assert_non_null(d->doc); /* well-formed XML */
    xmlNodePtr root = xmlDocGetRootElement(d->doc);
    assert_true(named(root, "svg"));
    char *w = prop(root, "width"), *h = prop(root, "height");
    d->width = atof(w);
    d->height = atof(h);
    assert_non_null(strstr(w, "pt"));
    free(w), free(h);
    xmlXPathContextPtr x = xmlXPathNewContext(d->doc);
    xmlXPathRegisterNs(x, (const xmlChar *)"s", (const xmlChar *)"http://www.w3.org/2000/svg");
    xmlXPathObjectPtr g0 = xmlXPathEvalExpression(
        (const xmlChar *)"/s:svg/s:g[@id='graph0' and @class='graph']", x);
    assert_int_equal(g0->nodesetval ? g0->nodesetval->nodeNr : 0, 1);
    char *tf = prop(g0->nodesetval->nodeTab[0], "transform");
    const char *tr = strstr(tf, "translate(");
    assert_non_null(tr);
    assert_int_equal(sscanf(tr, "translate(%lf %lf)", &d->tx, &d->ty), 2);
    free(tf);
    xmlXPathFreeObject(g0);
    xmlXPathObjectPtr r = xmlXPathEvalExpression(
        (const xmlChar *)"//s:g[@class='node' or @class='edge' or @class='cluster']", x);
    int n = r->nodesetval ? r->nodesetval->nodeNr : 0;
    d->items = calloc((size_t)n + 1, sizeof *d->items);
    for (int k = 0; k < n; k++) {
        xmlNodePtr g = r->nodesetval->nodeTab[k];
        item *it = &d->items[d->n++];
        it->id = prop(g, "id");
        it->cls = prop(g, "class");
        char texts[4096] = "";
        bool shape = false;
        walk(g, it, &shape, texts, sizeof texts);
        it->texts = strdup(texts);
        if (!it->title)
            it->title = strdup("");
        if (!it->tooltip)
            it->tooltip = strdup("");
        if (!it->fill)
            it->fill = strdup(""), it->stroke = strdup("");
        /* in the drawing's user space: graph0's translation applied */
        it->x0 += d->tx, it->x1 += d->tx, it->y0 += d->ty, it->y1 += d->ty;
    }
    xmlXPathFreeObject(r);
    xmlXPathFreeContext(x);
}

static void free_drawing(drawing *d)
{
    for (int k = 0; k < d->n; k++) {
        item *it = &d->items[k];
        free(it->id), free(it->cls), free(it->title), free(it->tooltip);
        free(it->texts), free(it->fill), free(it->stroke);
    }
    free(d->items);
    xmlFreeDoc(d->doc);
}

static const item *find(const drawing *d, const char *id)
{
    for (int k = 0; k < d->n; k++)
        if (strcmp(d->items[k].id, id) == 0)
            return &d->items[k];
    return NULL;
}

/* Graphviz writes colour names where we may write the same colour; none
 * of ours differ, so the strings must be equal. */
static void compare(const drawing *own, const drawing *ref, const char *view)
{
    int nodes = 0, edges = 0, clusters = 0;
    assert_int_equal(own->n, ref->n);
    for (int k = 0; k < ref->n; k++) {
        const item *r = &ref->items[k];
        const item *o = find(own, r->id);
        if (!o)
            fail_msg("%s: %s %s missing from our SVG", view, r->cls, r->id);
        if (strcmp(o->cls, r->cls) || strcmp(o->title, r->title) ||
            strcmp(o->tooltip, r->tooltip) || strcmp(o->texts, r->texts))
            fail_msg("%s: %s differs:\n ours: %s %s [%s] [%s]\n nop2: %s %s [%s] [%s]",
                     view, r->id, o->cls, o->title, o->tooltip, o->texts, r->cls,
                     r->title, r->tooltip, r->texts);
        if (strcmp(o->fill, r->fill) || strcmp(o->stroke, r->stroke))
            fail_msg("%s: %s colours: ours %s/%s, nop2 %s/%s", view, r->id,
                     o->fill, o->stroke, r->fill, r->stroke);
        if (!strcmp(r->cls, "node")) {
            nodes++;
            assert_true(o->has_box && r->has_box);
            double dx = fmax(fmax(fabs(o->x0 - r->x0), fabs(o->x1 - r->x1)),
                             fmax(fabs(o->y0 - r->y0), fabs(o->y1 - r->y1)));
            if (dx > 0.5)
                fail_msg("%s: node %s at (%.2f,%.2f)-(%.2f,%.2f), nop2 "
                         "(%.2f,%.2f)-(%.2f,%.2f)",
                         view, r->id, o->x0, o->y0, o->x1, o->y1, r->x0, r->y0,
                         r->x1, r->y1);
        }
        edges += !strcmp(r->cls, "edge");
        clusters += !strcmp(r->cls, "cluster");
    }
    print_message("%s: %d nodes, %d edges, %d clusters the same; %.0fx%.0f pt "
                  "(nop2 %.0fx%.0f)\n",
                  view, nodes, edges, clusters, own->width, own->height,
                  ref->width, ref->height);
    assert_true(nodes > 0);
    /* the frame: the title's width is estimated (Graphviz measures it), so
     * the width may differ where the title is wider than the drawing */
    assert_true(fabs(own->height - ref->height) <= 1.0);
    assert_true(fabs(own->width - ref->width) <= 1.0 ||
                own->width <= ref->width * 1.1 + 8);
}

static void same_drawing(const hs_module *m, const hs_render_options *o,
                         const char *view)
{
    size_t own_len, ref_len;
    char *own = draw(m, o, false, &own_len);
    char *ref = draw(m, o, true, &ref_len);
    const char *dump = getenv("HS_SVG_DUMP"); /* a directory: both SVGs */
    if (dump) {
        char path[1024];
        for (int k = 0; k < 2; k++) {
            snprintf(path, sizeof path, "%s/%s.%s.svg", dump, view, k ? "nop2" : "own");
            FILE *f = fopen(path, "w");
            if (f) {
                fwrite(k ? ref : own, 1, k ? ref_len : own_len, f);
                fclose(f);
            }
        }
    }
    drawing a, b;
    parse_drawing(own, own_len, &a);
    parse_drawing(ref, ref_len, &b);
    compare(&a, &b, view);
    free_drawing(&a);
    free_drawing(&b);
    free(own);
    free(ref);
}

static hs_model *decoder(void)
{
    static const char json[] =
        "{\"name\": \"decoder-4x64\", \"input\": {\"shape\": [1, 16, 64]},"
        " \"layers\": [{\"repeat\": 4, \"block\": {\"type\": \"decoder\","
        " \"heads\": 4, \"hidden\": 128}}]}";
    hs_error e;
    hs_model_options mo = {.shapes_only = true};
    hs_model *m = hs_model_load(json, strlen(json), &mo, &e);
    if (!m)
        fail_msg("model: %s", e.message);
    return m;
}

static void decoder_layer_open(void **state)
{
    (void)state;
    hs_model *m = decoder();
    hs_render_options o = {.expand = "layers.1"};
    same_drawing(m->module, &o, "decoder, layers.1 open");
    o.overlay = HS_OVERLAY_BYTES;
    same_drawing(m->module, &o, "decoder, layers.1 open, bytes overlay");
    hs_model_free(m);
}

/* Modules nobody here wrote: a while loop (its condition and body as
 * boxes), GPU fusions (filled, bold boxes), Mixtral's default view (276
 * nodes, groups found from structure). */
static void dumps(void **state)
{
    (void)state;
    static const char *const paths[] = {
        HS_SAMPLES_DIR "/while_with_known_trip_count.hlo",
        HS_SAMPLES_DIR "/multiple_gemm_fusions.hlo",
        MIXTRAL,
    };
    for (size_t k = 0; k < sizeof paths / sizeof *paths; k++) {
        hs_module *m = parse_hlo_file(paths[k]);
        hs_render_options o = {0};
        same_drawing(m, &o, strrchr(paths[k], '/') + 1);
        hs_module_free(m);
    }
}

/* Markup in every name the drawing shows: the SVG stays well-formed and
 * shows the names as text (our own writer only). */
static void names_escaped(void **state)
{
    (void)state;
    hs_module *m = parse("HloModule m\nENTRY e {\n"
                         "  p = f32[2] parameter(0), metadata={op_name="
                         "\"<b>a&b</b>\\\"]]>\"}\n"
                         "  ROOT n = f32[2] negate(p)\n}\n");
    assert_non_null(m);
    hs_render_options o = {.title = "</text><script>x</script>\"'&amp;&"};
    size_t len;
    char *svg = draw(m, &o, false, &len);
    assert_null(strstr(svg, "<script"));
    drawing d;
    parse_drawing(svg, len, &d);
    xmlXPathContextPtr x = xmlXPathNewContext(d.doc);
    xmlXPathRegisterNs(x, (const xmlChar *)"s", (const xmlChar *)"http://www.w3.org/2000/svg");
    xmlXPathObjectPtr r = xmlXPathEvalExpression(
        (const xmlChar *)"string(//s:g[@id='a_graph0']//s:text[1])", x);
    assert_string_equal((const char *)r->stringval, "</text><script>x</script>\"'&amp;&");
    xmlXPathFreeObject(r);
    xmlXPathFreeContext(x);
    free_drawing(&d);
    free(svg);
    hs_module_free(m);
}

/* Every string the drawing shows tries to break out of DOT or XML: both
 * writers show the same text, and ours stays well-formed (the parse above
 * fails otherwise). Text that reads as an entity ("&amp;") is left out
 * here: Graphviz passes it through as markup and shows "&", ours shows
 * the name as written (names_escaped). */
static void hostile_names_as_nop2(void **state)
{
    (void)state;
    hs_module *m = hs_module_new("m</title><script>1</script>");
    hs_computation *c = hs_module_add_computation(m, "e\"]; x -> y; <g>", true);
    hs_shape s = hs_shape_make(HS_F32, 1, (int64_t[]){8});
    hs_instruction *a = hs_computation_add_parameter(c, 0, &s, "a\" ]; [label=\"& &#");
    hs_instruction *b = hs_computation_add_parameter(c, 1, &s, "b\\l\\x\\");
    a->op_name = "layers.0/<tspan>\"'&<</tspan> \\n -- ]]>";
    b->op_type = "\xc3\x28 bad utf-8 \x02";
    hs_instruction *ops[] = {a, b};
    c->root = hs_computation_add(c, HS_OP_MULTIPLY, &s, ops, 2, "mul<>&\n\\\"x");
    hs_render_options o = {0};
    same_drawing(m, &o, "hostile names");
    /* "\N" in a name: Graphviz's tooltip replaces it by the node's DOT
     * name (its escapes are applied after DOT's own unescaping); ours
     * shows the name */
    a->name = "a\\N\\G";
    size_t len;
    char *svg = draw(m, &o, false, &len);
    drawing d;
    parse_drawing(svg, len, &d);
    bool seen = false;
    for (int k = 0; k < d.n; k++)
        seen |= strncmp(d.items[k].tooltip, "a\\N\\G = parameter", 17) == 0;
    assert_true(seen);
    free_drawing(&d);
    free(svg);
    hs_module_free(m);
}

static int teardown(void **state)
{
    (void)state;
    hs_render_shutdown();
    xmlCleanupParser();
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(decoder_layer_open),
        cmocka_unit_test(dumps),
        cmocka_unit_test(names_escaped),
        cmocka_unit_test(hostile_names_as_nop2),
    };
    return cmocka_run_group_tests(tests, NULL, teardown);
}
