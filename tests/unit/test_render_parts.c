/* test_render_parts.c - big flat boxes of a composed layout cut into parts
 * (render/compose.c, split_flat_box): Mixtral's backward layer (345
 * instructions, no inner group, a real XLA dump nobody here wrote) opened is
 * drawn as parts of about 80 nodes, each node inside its part's box, the
 * parts of identical layers laid out once; below the threshold nothing is
 * cut. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_file.h"
#include "hloscope/hs_render.h"
#include "hlo_test_helpers.h"

#define MIXTRAL HS_SOURCE_DIR "/../shared/hlo-real/hlo_mixtral_8x7b_bf16_1x8.hlo"

static hs_module *mixtral;

static int load_mixtral(void **state)
{
    (void)state;
    hs_error err;
    size_t len;
    char *text = hs_read_file(MIXTRAL, &len, &err);
    if (!text)
        return -1;
    mixtral = hs_hlo_parse(text, len, &err);
    free(text);
    return mixtral ? 0 : -1;
}

static int free_mixtral(void **state)
{
    (void)state;
    hs_module_free(mixtral);
    hs_render_shutdown();
    return 0;
}

static char *composed(const char *expand, hs_render_compose_stats *stats)
{
    hs_render_options o = {.expand = expand};
    char *out = NULL;
    hs_error err;
    hs_status st = hs_render_graph_composed(mixtral, &o, "dot", 120000, &out,
                                            NULL, stats, &err);
    if (st != HS_OK)
        fail_msg("composed %s: %s", expand, err.message);
    return out;
}

/* Checks every part of group path `layer` in the pinned DOT: returns how
 * many parts, after checking that each holds between 20 and 120 nodes and
 * that every node is inside the part's bounding box. */
static int check_parts(const char *dot, const char *layer_id)
{
    char head[160];
    snprintf(head, sizeof head, "subgraph \"cluster_part:%s:", layer_id);
    int parts = 0, nodes = 0;
    for (const char *p = strstr(dot, head); p; p = strstr(p + 1, head)) {
        parts++;
        const char *end = strstr(p, "\n}\n");
        assert_non_null(end);
        double x0, y0, x1, y1;
        const char *bb = strstr(p, "bb=\"");
        assert_true(bb && bb < end);
        assert_int_equal(sscanf(bb, "bb=\"%lf,%lf,%lf,%lf\"", &x0, &y0, &x1, &y1), 4);
        int in_part = 0;
        for (const char *q = strstr(p, ", pos=\""); q && q < end;
             q = strstr(q + 1, ", pos=\"")) {
            double x, y;
            assert_int_equal(sscanf(q, ", pos=\"%lf,%lf\"", &x, &y), 2);
            assert_true(x > x0 && x < x1 && y > y0 && y < y1);
            in_part++;
        }
        assert_true(in_part >= 20 && in_part <= 120);
        nodes += in_part;
    }
    if (parts)
        assert_true(nodes >= 300); /* the layer's instructions, all in parts */
    return parts;
}

static void backward_layer_is_cut_into_parts(void **state)
{
    (void)state;
    hs_render_compose_cache_clear();
    hs_render_compose_stats one, two;
    char *dot = composed("run.1/layer.5", &one);
    int parts = check_parts(dot, "run.1%2Flayer.5");
    assert_true(parts >= 3 && parts <= 6);
    assert_contains(dot, "label=\"part 1/");
    free(dot);
    /* a second identical layer: its parts are the first's layouts */
    dot = composed("run.1/layer.5,run.1/layer.6", &two);
    assert_int_equal(check_parts(dot, "run.1%2Flayer.6"), parts);
    assert_true(two.reused >= parts);
    free(dot);
}

static void threshold_keeps_a_box_whole(void **state)
{
    (void)state;
    setenv("HS_COMPOSE_LARGE_BOX", "1000000", 1);
    hs_render_compose_stats st;
    char *dot = composed("run.1/layer.5", &st);
    unsetenv("HS_COMPOSE_LARGE_BOX");
    assert_lacks(dot, "cluster_part:");
    free(dot);
    /* the forward layers (about 160 nodes) are never cut */
    dot = composed("run.0/layer.5", &st);
    assert_lacks(dot, "cluster_part:");
    free(dot);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(backward_layer_is_cut_into_parts),
        cmocka_unit_test(threshold_keeps_a_box_whole),
    };
    return cmocka_run_group_tests(tests, load_mixtral, free_mixtral);
}
