/* test_render_overlay.c - graphs coloured by the cost model's figures
 * (render/overlay.c): every node's FLOPs and seconds are what
 * hs_device_estimate_each charged the instructions it stands for, so the
 * top level of any view (closed groups included) adds up to the
 * estimate's totals; the colour scale and legend span the nonzero values
 * drawn; host memory (S(5)) has its own colour. On XLA's own samples
 * (../shared/hlo-samples), Mixtral's real dump and the offload example. */
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

#include "hloscope/hs_device.h"
#include "hloscope/hs_file.h"
#include "hloscope/hs_program.h"
#include "hloscope/hs_render.h"
#include "hlo_test_helpers.h"

#define WHILE_SAMPLE HS_SAMPLES_DIR "/while_with_known_trip_count.hlo"
#define GEMM_SAMPLE HS_SAMPLES_DIR "/multiple_gemm_fusions.hlo"
#define MIXTRAL HS_SOURCE_DIR "/../shared/hlo-real/hlo_mixtral_8x7b_bf16_1x8.hlo"
#define OFFLOAD HS_SOURCE_DIR "/examples/graph_offload.json"

/* The cost model's figures for m, by instruction id, in both forms. */
typedef struct costs {
    hs_instruction_cost *each;
    hs_render_cost *render;
    int64_t n;
    hs_run_stats stats;
} costs;

static costs costs_of(const hs_module *m)
{
    costs c = {.n = m->next_id};
    c.each = calloc((size_t)c.n + 1, sizeof *c.each);
    c.render = calloc((size_t)c.n + 1, sizeof *c.render);
    assert_non_null(c.each);
    assert_non_null(c.render);
    hs_error err;
    assert_int_equal(hs_device_estimate_each(m, NULL, c.each, &c.stats, &err),
                     HS_OK);
    for (int64_t k = 0; k < c.n; k++)
        c.render[k] = (hs_render_cost){c.each[k].flops, c.each[k].seconds};
    /* the per-instruction walk is the estimate's own: same totals */
    hs_run_stats plain;
    assert_int_equal(hs_device_estimate(m, NULL, &plain, &err), HS_OK);
    assert_true(plain.flops == c.stats.flops);
    assert_true(plain.sim_seconds == c.stats.sim_seconds);
    return c;
}

static void costs_free(costs *c)
{
    free(c->each);
    free(c->render);
}

static json_t *graph_json(const hs_module *m, const costs *c,
                          hs_render_overlay overlay, const char *expand)
{
    hs_render_options o = {.expand = expand, .overlay = overlay,
                           .costs = c ? c->render : NULL,
                           .n_costs = c ? c->n : 0, .max_nodes = 5000};
    char *out = NULL;
    size_t len = 0;
    hs_error err;
    hs_status st = hs_render_graph_json(m, &o, &out, &len, &err);
    if (st != HS_OK)
        fail_msg("graph json: %s", err.message);
    json_error_t je;
    json_t *j = json_loadb(out, len, 0, &je);
    free(out);
    assert_non_null(j);
    return j;
}

static bool close_to(double a, double b)
{
    return fabs(a - b) <= 1e-9 * (fabs(a) > fabs(b) ? fabs(a) : fabs(b)) + 1e-300;
}

/* Sums of the top level's FLOPs and seconds (nodes of the drawn
 * computation outside every cluster). */
static void top_sums(json_t *g, double *flops, double *seconds)
{
    const char *top = json_string_value(json_object_get(g, "computation"));
    *flops = *seconds = 0;
    size_t k;
    json_t *n;
    json_array_foreach(json_object_get(g, "nodes"), k, n) {
        if (!json_is_null(json_object_get(n, "cluster")) ||
            strcmp(json_string_value(json_object_get(n, "computation")), top))
            continue;
        *flops += json_real_value(json_object_get(n, "flops"));
        *seconds += json_real_value(json_object_get(n, "seconds"));
    }
}

/* The sum of the charges to instructions (sim_seconds less the overlap of
 * transfers with compute, none in these modules). */
static double charged_seconds(const costs *c, const hs_module *m)
{
    double s = 0;
    for (int k = 0; k < m->entry->n_instrs; k++)
        s += c->each[m->entry->instrs[k]->id].seconds;
    return s;
}

/* Each instruction node carries exactly its instruction's figures; a
 * loop's body instruction is charged once per iteration; the entry's
 * nodes add up to the estimate. */
static void per_node_figures_are_the_cost_models(void **state)
{
    (void)state;
    hs_module *m = parse_hlo_file(WHILE_SAMPLE);
    costs c = costs_of(m);
    json_t *g = graph_json(m, &c, HS_OVERLAY_FLOPS, "all");
    size_t k;
    json_t *n;
    int checked = 0;
    json_array_foreach(json_object_get(g, "nodes"), k, n) {
        const char *name = json_string_value(json_object_get(n, "name"));
        if (strcmp(json_string_value(json_object_get(n, "opcode")), "layer") == 0)
            continue;
        hs_instruction *i = find_instr(m, name);
        assert_non_null(i);
        assert_true(json_real_value(json_object_get(n, "flops")) ==
                    c.each[i->id].flops);
        assert_true(json_real_value(json_object_get(n, "seconds")) ==
                    c.each[i->id].seconds);
        assert_string_equal(json_string_value(json_object_get(n, "memory_space")),
                            "device");
        assert_non_null(json_string_value(json_object_get(n, "fill")));
        checked++;
    }
    assert_true(checked > 5);
    /* the loop: its body's instructions ran trip-count times */
    const hs_instruction *loop = NULL;
    for (int j = 0; j < m->entry->n_instrs; j++)
        if (m->entry->instrs[j]->opcode == HS_OP_WHILE)
            loop = m->entry->instrs[j];
    assert_non_null(loop);
    assert_true(loop->known_trip_count > 1);
    const hs_computation *body = loop->called[1];
    bool charged = false;
    for (int j = 0; j < body->n_instrs; j++) {
        const hs_instruction_cost *x = &c.each[body->instrs[j]->id];
        if (x->executions > 0) {
            assert_true(x->executions == (double)loop->known_trip_count);
            charged = true;
        }
    }
    assert_true(charged);
    assert_true(c.each[loop->id].flops > 0);
    double flops, seconds;
    top_sums(g, &flops, &seconds);
    assert_true(close_to(flops, c.stats.flops));
    assert_true(close_to(seconds, charged_seconds(&c, m)));
    assert_true(close_to(seconds, c.stats.sim_seconds));
    json_decref(g);
    costs_free(&c);
    hs_module_free(m);
}

/* The scale spans the nonzero values drawn, the largest node gets the
 * darkest colour, and the legend is drawn with the ends in GFLOP. */
static void scale_and_legend(void **state)
{
    (void)state;
    hs_module *m = parse_hlo_file(GEMM_SAMPLE);
    costs c = costs_of(m);
    json_t *g = graph_json(m, &c, HS_OVERLAY_FLOPS, NULL);
    json_t *ov = json_object_get(g, "overlay");
    assert_string_equal(json_string_value(json_object_get(ov, "kind")), "flops");
    assert_string_equal(json_string_value(json_object_get(ov, "unit")), "FLOP");
    double lo = INFINITY, hi = 0;
    const char *hottest = NULL;
    size_t k;
    json_t *n;
    json_array_foreach(json_object_get(g, "nodes"), k, n) {
        double f = json_real_value(json_object_get(n, "flops"));
        if (f > 0 && f < lo)
            lo = f;
        if (f > hi) {
            hi = f;
            hottest = json_string_value(json_object_get(n, "fill"));
        }
        if (f == 0)
            assert_string_equal(json_string_value(json_object_get(n, "fill")),
                                "#ffffff");
    }
    assert_true(hi > lo && lo > 0);
    assert_true(json_real_value(json_object_get(ov, "min")) == lo);
    assert_true(json_real_value(json_object_get(ov, "max")) == hi);
    assert_string_equal(hottest, "#800026");
    json_decref(g);

    hs_render_options o = {.overlay = HS_OVERLAY_FLOPS, .costs = c.render,
                           .n_costs = c.n};
    char *dot = NULL, *svg = NULL;
    hs_error err;
    assert_int_equal(hs_render_graph_dot(m, &o, &dot, NULL, &err), HS_OK);
    assert_contains(dot, "\"legend:overlay\" [id=\"legend:overlay\"");
    char end[64];
    snprintf(end, sizeof end, "%.3g GFLOP", hi / 1e9);
    assert_contains(dot, end);
    assert_contains(dot, "fillcolor=\"#800026\"");
    free(dot);
    hs_status st = hs_render_graph_composed(m, &o, "svg", 30000, &svg, NULL,
                                            NULL, &err);
    if (st != HS_OK)
        fail_msg("composed: %s", err.message);
    assert_contains(svg, "id=\"legend:overlay\"");
    assert_contains(svg, end);
    assert_contains(svg, "fill=\"#800026\"");
    free(svg);
    /* without an overlay: the category colours, no legend */
    o.overlay = HS_OVERLAY_NONE;
    assert_int_equal(hs_render_graph_dot(m, &o, &dot, NULL, &err), HS_OK);
    assert_lacks(dot, "legend:overlay");
    assert_lacks(dot, "#800026");
    free(dot);
    costs_free(&c);
    hs_module_free(m);
}

/* Mixtral (no metadata, layers found from structure): in the default view
 * almost everything is inside closed groups, and the top level still adds
 * up to the estimate, so a closed group carries the sum of its members;
 * bytes are the output bytes the node already reports. */
static void closed_groups_sum_their_members(void **state)
{
    (void)state;
    hs_module *m = parse_hlo_file(MIXTRAL);
    costs c = costs_of(m);
    assert_true(c.stats.flops > 1e9);
    const char *views[] = {NULL, "run.1/layer.3"};
    for (int v = 0; v < 2; v++) {
        json_t *g = graph_json(m, &c, HS_OVERLAY_TIME, views[v]);
        double flops, seconds;
        top_sums(g, &flops, &seconds);
        assert_true(close_to(flops, c.stats.flops));
        assert_true(close_to(seconds, charged_seconds(&c, m)));
        int layers = 0;
        size_t k;
        json_t *n;
        json_array_foreach(json_object_get(g, "nodes"), k, n) {
            if (strcmp(json_string_value(json_object_get(n, "opcode")), "layer"))
                continue;
            layers++;
            assert_true(json_integer_value(json_object_get(n, "bytes")) > 0);
        }
        assert_true(layers > 30);
        json_decref(g);
    }
    costs_free(&c);
    hs_module_free(m);
}

/* The offload example parks activations in host memory: compiled, those
 * buffers are S(5) (the traced module only annotates them), and their
 * nodes are "host" with the host colour, the rest "device". */
static void host_memory_has_its_own_colour(void **state)
{
    (void)state;
    char *json = read_text_file(OFFLOAD);
    hs_program_options po;
    hs_program_options_init(&po);
    hs_program_source src = {.kind = HS_SOURCE_MODEL, .text = json,
                             .len = strlen(json)};
    hs_error err;
    hs_program *p = hs_program_build(&src, &po, &err);
    free(json);
    if (!p)
        fail_msg("offload example: %s", err.message);
    const hs_module *m = p->optimized;
    json_t *g = graph_json(m, NULL, HS_OVERLAY_MEMORY_SPACE, "all");
    int host = 0, device = 0;
    size_t k;
    json_t *n;
    json_array_foreach(json_object_get(g, "nodes"), k, n) {
        const char *space = json_string_value(json_object_get(n, "memory_space"));
        const char *fill = json_string_value(json_object_get(n, "fill"));
        assert_true(json_is_null(json_object_get(n, "flops")));
        const char *shape = json_string_value(json_object_get(n, "shape"));
        bool s5 = shape && strstr(shape, "S(5)");
        if (strcmp(space, "host") == 0) {
            assert_string_equal(fill, "#d81b60");
            assert_true(s5);
            host++;
        } else if (strcmp(space, "mixed") == 0) { /* a tuple of both */
            assert_string_equal(fill, "#f8bbd0");
            assert_true(s5 && shape[0] == '(');
        } else {
            assert_string_equal(space, "device");
            assert_string_equal(fill, "#eceff1");
            assert_false(s5);
            device++;
        }
    }
    assert_true(host >= 4); /* one parked activation per layer at least */
    assert_true(device > host);
    json_decref(g);
    hs_render_options o = {.overlay = HS_OVERLAY_MEMORY_SPACE, .expand = "all"};
    char *dot = NULL;
    assert_int_equal(hs_render_graph_dot(m, &o, &dot, NULL, &err), HS_OK);
    assert_contains(dot, "fillcolor=\"#d81b60\"");
    assert_contains(dot, "host S(5)");
    free(dot);
    /* closed, each layer holds both spaces: "mixed" */
    o.expand = NULL;
    assert_int_equal(hs_render_graph_dot(m, &o, &dot, NULL, &err), HS_OK);
    assert_true(count(dot, "shape=box3d") >= 4);
    assert_int_equal(count(dot, "fillcolor=\"#f8bbd0\""),
                     count(dot, "shape=box3d"));
    free(dot);
    hs_program_free(p);
}

static void bad_overlays_say_why(void **state)
{
    (void)state;
    hs_render_overlay ov;
    hs_error err;
    assert_int_equal(hs_render_overlay_parse("heat", &ov, &err), HS_ERR_INVALID);
    assert_contains(err.message, "overlay: unknown overlay 'heat'");
    assert_contains(err.message, "memory_space");
    assert_int_equal(hs_render_overlay_parse("time", &ov, &err), HS_OK);
    assert_int_equal(ov, HS_OVERLAY_TIME);
    assert_int_equal(hs_render_overlay_parse(NULL, &ov, &err), HS_OK);
    assert_int_equal(ov, HS_OVERLAY_NONE);
    hs_module *m = parse_hlo_file(GEMM_SAMPLE);
    hs_render_options o = {.overlay = HS_OVERLAY_TIME};
    char *dot = NULL;
    assert_int_equal(hs_render_graph_dot(m, &o, &dot, NULL, &err), HS_ERR_INVALID);
    assert_null(dot);
    assert_contains(err.message, "overlay: time needs the cost model");
    hs_module_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(per_node_figures_are_the_cost_models),
        cmocka_unit_test(scale_and_legend),
        cmocka_unit_test(closed_groups_sum_their_members),
        cmocka_unit_test(host_memory_has_its_own_colour),
        cmocka_unit_test(bad_overlays_say_why),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    hs_render_shutdown();
    return rc;
}
