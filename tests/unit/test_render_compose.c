/* test_render_compose.c - composed layouts (render/compose.c): identical
 * layers are laid out once and placed with the same relative coordinates,
 * the cache answers a view seen before without Graphviz, every node, edge
 * and box of the view is in the drawing with a well-formed spline, and
 * loop bodies stay clusters. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_hlo_text.h"
#include "hloscope/hs_model.h"
#include "hloscope/hs_render.h"
#include "hlo_test_helpers.h"

/* A loop that doubles a value until it passes a bound. */
static const char doubling_hlo[] =
    "HloModule doubling\n"
    "below {\n"
    "  state = (f32[], f32[]) parameter(0)\n"
    "  value = f32[] get-tuple-element(state), index=0\n"
    "  bound = f32[] get-tuple-element(state), index=1\n"
    "  ROOT more = pred[] compare(value, bound), direction=LT\n"
    "}\n"
    "twice {\n"
    "  state = (f32[], f32[]) parameter(0)\n"
    "  value = f32[] get-tuple-element(state), index=0\n"
    "  bound = f32[] get-tuple-element(state), index=1\n"
    "  doubled = f32[] add(value, value)\n"
    "  ROOT next = (f32[], f32[]) tuple(doubled, bound)\n"
    "}\n"
    "ENTRY main {\n"
    "  start = f32[] parameter(0)\n"
    "  limit = f32[] parameter(1)\n"
    "  init = (f32[], f32[]) tuple(start, limit)\n"
    "  ROOT loop = (f32[], f32[]) while(init), condition=below, body=twice\n"
    "}\n";

/* Eight identical blocks of two layers each, so a layer holds a dot, a
 * bias, a ReLU and their weights. */
static const char mlp8_json[] =
    "{\"name\": \"mlp8\", \"input\": {\"shape\": [2, 16]},\n"
    " \"layers\": [{\"repeat\": 8, \"block\": {\"type\": \"mlp\", "
    "\"hidden\": 32}}]}";

static char *composed(const hs_module *m, const char *expand,
                      const char *format, hs_render_compose_stats *stats)
{
    hs_render_options o = {.expand = expand};
    char *out = NULL;
    size_t len = 0;
    hs_error err;
    hs_status st = hs_render_graph_composed(m, &o, format, 30000, &out, &len,
                                            stats, &err);
    if (st != HS_OK)
        fail_msg("composed: %s: %s", hs_status_name(st), err.message);
    assert_int_equal(strlen(out), len);
    return out;
}

/* ---- reading the pinned DOT ---------------------------------------------- */

typedef struct placed {
    char id[128];
    char box[128]; /* innermost cluster, "" at the top */
    double x, y;
} placed;

typedef struct drawing {
    int n;
    placed nodes[512];
    int n_boxes;
    char box_id[64][128];
    double bb[64][4];
    int n_edges, bad_splines;
} drawing;

static bool quoted_after(const char *line, const char *key, char *out, size_t size)
{
    const char *p = strstr(line, key);
    if (!p)
        return false;
    p += strlen(key);
    size_t n = 0;
    while (*p && *p != '"' && n + 1 < size)
        out[n++] = *p++;
    out[n] = '\0';
    return true;
}

/* Nodes with their positions and clusters, cluster bounding boxes, and
 * whether every edge's spline has 3k + 1 points. */
static void read_drawing(const char *dot, drawing *d)
{
    memset(d, 0, sizeof *d);
    char stack[16][128];
    int depth = 0;
    char *copy = strdup(dot);
    for (char *line = strtok(copy, "\n"); line; line = strtok(NULL, "\n")) {
        char *s = line;
        while (*s == ' ')
            s++;
        char tmp[128];
        if (strncmp(s, "subgraph \"", 10) == 0) {
            quoted_after(s, "subgraph \"", stack[depth], sizeof stack[depth]);
            depth++;
        } else if (strcmp(s, "}") == 0 && depth > 0) {
            depth--;
        } else if (strncmp(s, "fontsize=", 9) == 0 && depth > 0 &&
                   quoted_after(s, "bb=\"", tmp, sizeof tmp)) {
            int b = d->n_boxes++;
            snprintf(d->box_id[b], sizeof d->box_id[b], "%s", stack[depth - 1]);
            sscanf(tmp, "%lf,%lf,%lf,%lf", &d->bb[b][0], &d->bb[b][1],
                   &d->bb[b][2], &d->bb[b][3]);
        } else if (s[0] == '"' && strstr(s, "\" -> \"")) {
            d->n_edges++;
            char pos[16384];
            if (!quoted_after(s, "pos=\"", pos, sizeof pos)) {
                d->bad_splines++;
                continue;
            }
            int points = 0;
            for (char *t = pos; *t;) {
                while (*t == ' ')
                    t++;
                if (!*t)
                    break;
                points += strncmp(t, "e,", 2) != 0;
                while (*t && *t != ' ')
                    t++;
            }
            if (points < 4 || (points - 1) % 3 != 0)
                d->bad_splines++;
        } else if (s[0] == '"' && strstr(s, "[id=\"") &&
                   quoted_after(s, "pos=\"", tmp, sizeof tmp)) {
            placed *p = &d->nodes[d->n++];
            quoted_after(s, "[id=\"", p->id, sizeof p->id);
            snprintf(p->box, sizeof p->box, "%s", depth ? stack[depth - 1] : "");
            sscanf(tmp, "%lf,%lf", &p->x, &p->y);
        }
    }
    free(copy);
}

static int box_index(const drawing *d, const char *id)
{
    for (int b = 0; b < d->n_boxes; b++)
        if (strcmp(d->box_id[b], id) == 0)
            return b;
    return -1;
}

/* ---- tests --------------------------------------------------------------- */

static void identical_layers_share_one_layout(void **state)
{
    (void)state;
    hs_model *model = load_model(mlp8_json, NULL);
    hs_render_compose_cache_clear();
    hs_render_compose_stats s;
    char *dot = composed(model->module, "layers.2,layers.5", "dot", &s);
    drawing d;
    read_drawing(dot, &d);
    int b2 = box_index(&d, "cluster_g:layers.2");
    int b5 = box_index(&d, "cluster_g:layers.5");
    assert_true(b2 >= 0 && b5 >= 0);
    /* The two layers' nodes, in drawing order, sit at the same place
     * relative to their boxes, and the boxes have the same size. */
    placed *in2[64], *in5[64];
    int n2 = 0, n5 = 0;
    for (int k = 0; k < d.n; k++) {
        if (strcmp(d.nodes[k].box, "cluster_g:layers.2") == 0 && n2 < 64)
            in2[n2++] = &d.nodes[k];
        if (strcmp(d.nodes[k].box, "cluster_g:layers.5") == 0 && n5 < 64)
            in5[n5++] = &d.nodes[k];
    }
    assert_true(n2 >= 4);
    assert_int_equal(n2, n5);
    assert_true(fabs((d.bb[b2][2] - d.bb[b2][0]) - (d.bb[b5][2] - d.bb[b5][0])) < 0.01);
    assert_true(fabs((d.bb[b2][3] - d.bb[b2][1]) - (d.bb[b5][3] - d.bb[b5][1])) < 0.01);
    for (int k = 0; k < n2; k++) {
        assert_string_not_equal(in2[k]->id, in5[k]->id);
        assert_true(fabs((in2[k]->x - d.bb[b2][0]) - (in5[k]->x - d.bb[b5][0])) < 0.01);
        assert_true(fabs((in2[k]->y - d.bb[b2][1]) - (in5[k]->y - d.bb[b5][1])) < 0.01);
    }
    /* ... and the second was not laid out again: from a cold cache, one
     * fewer layout than boxes at least. */
    assert_true(s.boxes >= 3);
    assert_true(s.reused >= 1);
    assert_int_equal(s.laid_out + s.reused, s.boxes);
    free(dot);

    /* The same view again: every box from the cache, the same drawing. */
    hs_render_compose_stats again;
    char *dot2 = composed(model->module, "layers.2,layers.5", "dot", &again);
    assert_int_equal(again.laid_out, 0);
    assert_int_equal(again.reused, again.boxes);
    free(dot2);

    /* One more layer opened: only what changed is laid out (the new box's
     * twin is cached; the top level changes size). */
    hs_render_compose_stats more;
    char *dot3 = composed(model->module, "layers.2,layers.5,layers.6", "dot", &more);
    assert_true(more.laid_out < more.boxes);
    assert_true(more.laid_out <= 2);
    free(dot3);
    hs_model_free(model);
}

static void drawing_has_every_node_edge_and_box(void **state)
{
    (void)state;
    hs_model *model = load_model(mlp8_json, NULL);
    hs_render_options o = {.expand = "layers.3"};
    char *text = NULL;
    hs_error err;
    assert_int_equal(hs_render_graph_json(model->module, &o, &text, NULL, &err), HS_OK);
    json_t *view = json_loads(text, 0, NULL);
    free(text);
    json_t *nodes = json_object_get(view, "nodes");
    json_t *edges = json_object_get(view, "edges");
    hs_render_compose_stats s;
    char *dot = composed(model->module, "layers.3", "dot", &s);
    drawing d;
    read_drawing(dot, &d);
    assert_int_equal(d.n, (int)json_array_size(nodes));
    assert_int_equal(d.n_edges, (int)json_array_size(edges));
    assert_int_equal(s.nodes, d.n);
    assert_int_equal(d.bad_splines, 0);
    assert_true(box_index(&d, "cluster_g:layers.3") >= 0);
    /* every node inside the box of its layer lies within it */
    int b = box_index(&d, "cluster_g:layers.3");
    for (int k = 0; k < d.n; k++)
        if (strcmp(d.nodes[k].box, "cluster_g:layers.3") == 0) {
            assert_true(d.nodes[k].x > d.bb[b][0] && d.nodes[k].x < d.bb[b][2]);
            assert_true(d.nodes[k].y > d.bb[b][1] && d.nodes[k].y < d.bb[b][3]);
        }
    free(dot);

    char *svg = composed(model->module, "layers.3", "svg", &s);
    assert_non_null(strstr(svg, "<svg"));
    size_t k;
    json_t *n;
    json_array_foreach(nodes, k, n) {
        char want[200];
        snprintf(want, sizeof want, "id=\"%s\"",
                 json_string_value(json_object_get(n, "id")));
        if (!strstr(svg, want))
            fail_msg("node %s not drawn", want);
    }
    assert_non_null(strstr(svg, "id=\"cluster_g:layers.3\""));
    free(svg);
    json_decref(view);
    hs_model_free(model);
}

static void loop_bodies_stay_clusters(void **state)
{
    (void)state;
    hs_module *m = parse(doubling_hlo);
    hs_render_compose_stats s;
    char *dot = composed(m, NULL, "dot", &s);
    drawing d;
    read_drawing(dot, &d);
    int body = box_index(&d, "cluster_twice");
    int cond = box_index(&d, "cluster_below");
    assert_true(body >= 0 && cond >= 0);
    assert_int_equal(d.n, 4 + 5 + 4);
    assert_int_equal(d.bad_splines, 0);
    /* body and condition are beside each other, not overlapping */
    assert_true(d.bb[body][2] <= d.bb[cond][0] + 0.01 ||
                d.bb[cond][2] <= d.bb[body][0] + 0.01 ||
                d.bb[body][3] <= d.bb[cond][1] + 0.01 ||
                d.bb[cond][3] <= d.bb[body][1] + 0.01);
    /* the dashed edges from each root to the while */
    assert_non_null(strstr(dot, ":call:cluster_twice\""));
    assert_null(strstr(dot, "ltail="));
    free(dot);
    char *svg = composed(m, NULL, "svg", &s);
    assert_non_null(strstr(svg, "id=\"cluster_twice\""));
    assert_non_null(strstr(svg, "id=\"doubled\""));
    free(svg);
    hs_module_free(m);
}

static void errors_name_the_view(void **state)
{
    (void)state;
    hs_model *model = load_model(mlp8_json, NULL);
    hs_render_options o = {.expand = "layers.3,\"}"};
    char *out = NULL;
    hs_error err;
    assert_int_equal(hs_render_graph_composed(model->module, &o, "svg", 0, &out,
                                              NULL, NULL, &err),
                     HS_ERR_INVALID);
    assert_null(out);
    assert_non_null(strstr(err.message, "expand"));
    o.expand = "all";
    o.max_nodes = 10;
    assert_int_equal(hs_render_graph_composed(model->module, &o, "svg", 0, &out,
                                              NULL, NULL, &err),
                     HS_ERR_LIMIT);
    hs_model_free(model);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(identical_layers_share_one_layout),
        cmocka_unit_test(drawing_has_every_node_edge_and_box),
        cmocka_unit_test(loop_bodies_stay_clusters),
        cmocka_unit_test(errors_name_the_view),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    hs_render_shutdown();
    return rc;
}
