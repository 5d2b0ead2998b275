/* bench_layout_scale.c - graph.svg's layout at real scale, before and
 * after composed layouts, side by side in one run.
 *
 * Before: main's algorithm, the view's DOT laid out whole by Graphviz's dot
 * (hs_render_graph_dot + hs_render_layout), stopped at a limit. After:
 * hs_render_graph_composed, cold (the cache of laid-out pieces emptied
 * first) and warm (the same view again, median of 5), drawn twice:
 * with Graphviz's nop2 in a layout worker (HS_COMPOSE_SVG=graphviz, the
 * pinned DOT parsed there) and by render/svg.c in the process (the
 * default). Modules: the real Mixtral 8x7B
 * dump (../shared/hlo-real, 41,881 instructions, no metadata, layers found
 * from structure), and decoders of 50, 64 and 128 unrolled layers (our
 * tracer, op_name scopes). Views: the default (groups opened under the
 * 300-node budget), one layer opened, two layers opened, and for the
 * 50-layer decoder everything opened (3,751 nodes, past the server's
 * 2,000-node limit, lifted here). Mixtral's backward layer (one box of 345
 * nodes) is drawn twice: laid out whole with dot's defaults
 * (HS_COMPOSE_LARGE_BOX set past any box) and as compose.c draws it, cut
 * into parts of about 80 nodes.
 *
 *     build/bench/bench_layout_scale [before_limit_seconds (default 60)] [view]
 *
 * view: draw only the rows whose view contains this text ("all open": the
 * decoder fully opened, whose whole-view dot layout needs a longer limit
 * on a loaded machine).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hloscope/hs_file.h"
#include "hloscope/hs_hlo_text.h"
#include "hloscope/hs_model.h"
#include "hloscope/hs_render.h"

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int64_t limit_ms = 60000;
static const char *only; /* rows whose view contains this, or NULL */

/* Seconds for main's whole-view dot layout; < 0 when it ran past the limit. */
static double before(const hs_module *m, const hs_render_options *o)
{
    hs_error e;
    char *dot = NULL, *svg = NULL;
    double t0 = now_s();
    if (hs_render_graph_dot(m, o, &dot, NULL, &e) != HS_OK) {
        fprintf(stderr, "dot: %s\n", e.message);
        return -2;
    }
    hs_status st = hs_render_layout(dot, HS_RENDER_ENGINE_GRAPH, "svg",
                                    limit_ms, &svg, NULL, &e);
    double t = now_s() - t0;
    free(dot);
    free(svg);
    return st == HS_OK ? t : st == HS_ERR_CANCELLED ? -1 : -2;
}

static double after(const hs_module *m, const hs_render_options *o,
                    hs_render_compose_stats *s)
{
    hs_error e;
    char *svg = NULL;
    double t0 = now_s();
    hs_status st = hs_render_graph_composed(m, o, "svg", 600000, &svg, NULL, s, &e);
    double t = now_s() - t0;
    free(svg);
    if (st != HS_OK) {
        fprintf(stderr, "composed: %s\n", e.message);
        return -2;
    }
    return t;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* A warm view: the median of WARM_RUNS drawings (one is at the mercy of
 * the other jobs on a shared machine). */
#define WARM_RUNS 5
static double warm_median(const hs_module *m, const hs_render_options *o,
                          hs_render_compose_stats *s)
{
    double t[WARM_RUNS];
    for (int k = 0; k < WARM_RUNS; k++)
        t[k] = after(m, o, s);
    qsort(t, WARM_RUNS, sizeof *t, cmp_double);
    return t[WARM_RUNS / 2];
}

static void row(const char *module, const char *view, const hs_module *m,
                const char *expand, int64_t max_nodes)
{
    if (only && !strstr(view, only))
        return;
    hs_render_options o = {.expand = expand, .max_nodes = max_nodes};
    hs_render_compose_stats cold, warm;
    /* cold: nothing of this module laid out before */
    hs_render_compose_cache_clear();
    double a_cold = after(m, &o, &cold);
    double a_warm = warm_median(m, &o, &warm);
    setenv("HS_COMPOSE_SVG", "graphviz", 1);
    double a_warm_nop2 = warm_median(m, &o, &warm);
    unsetenv("HS_COMPOSE_SVG");
    double b = before(m, &o);
    char bs[32], ratio[32];
    if (b >= 0) {
        snprintf(bs, sizeof bs, "%.2f", b);
        snprintf(ratio, sizeof ratio, "%.1fx", a_cold > 0 ? b / a_cold : 0);
    } else {
        snprintf(bs, sizeof bs, b == -1 ? "> %.0f (timed out)" : "failed",
                 (double)limit_ms / 1000);
        snprintf(ratio, sizeof ratio, b == -1 ? "> %.1fx" : "-",
                 a_cold > 0 ? (double)limit_ms / 1000 / a_cold : 0);
    }
    printf("| %s | %s | %lld | %lld | %s | %.2f | %d / %d | %.3f | %.3f | %s |\n",
           module, view, (long long)cold.nodes, (long long)cold.edges, bs,
           a_cold, cold.laid_out, cold.boxes, a_warm_nop2, a_warm, ratio);
    fflush(stdout);
}

static hs_module *decoder(int layers, hs_model **keep)
{
    char json[512];
    snprintf(json, sizeof json,
             "{\"name\": \"decoder-%dx256\", \"input\": {\"shape\": [1, 128, 256]},"
             " \"layers\": [{\"repeat\": %d, \"block\": {\"type\": \"decoder\","
             " \"heads\": 4, \"hidden\": 688}}]}",
             layers, layers);
    hs_error e;
    hs_model_options mo = {.shapes_only = true};
    *keep = hs_model_load(json, strlen(json), &mo, &e);
    if (!*keep) {
        fprintf(stderr, "model: %s\n", e.message);
        exit(1);
    }
    return (*keep)->module;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        limit_ms = (int64_t)(atof(argv[1]) * 1000);
    if (argc > 2)
        only = argv[2];
    hs_error e;
    if (hs_render_init(&e) != HS_OK) {
        fprintf(stderr, "layout: %s\n", e.message);
        return 1;
    }
    printf("| module | view | nodes | edges | before s (dot, whole view) | "
           "after s (composed, cold) | laid out / boxes | warm s, drawn by nop2 | "
           "warm s, own SVG writer | before / after cold |\n"
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
    for (int layers = 50; layers <= 128; layers = layers == 50 ? 64 : layers * 2) {
        hs_model *model;
        hs_module *m = decoder(layers, &model);
        char name[64];
        snprintf(name, sizeof name, "decoder %dx256 (%lld instr.)", layers,
                 (long long)hs_module_instruction_count(m));
        row(name, "default", m, NULL, 0);
        row(name, "layers.3 open", m, "layers.3", 0);
        row(name, "layers.3, layers.7 open", m, "layers.3,layers.7", 0);
        if (layers == 50)
            row(name, "all open", m, "all", 100000);
        hs_model_free(model);
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/../shared/hlo-real/hlo_mixtral_8x7b_bf16_1x8.hlo",
             HS_SOURCE_DIR);
    size_t len;
    char *text = hs_read_file(path, &len, &e);
    if (!text) {
        fprintf(stderr, "mixtral: %s\n", e.message);
        return 1;
    }
    hs_module *m = hs_hlo_parse(text, len, &e);
    free(text);
    if (!m) {
        fprintf(stderr, "mixtral: %s\n", e.message);
        return 1;
    }
    const char *name = "Mixtral 8x7B (41,881 instr.)";
    row(name, "default", m, NULL, 0);
    row(name, "run.0/layer.5 open", m, "run.0/layer.5", 0);
    row(name, "run.0/layer.5, layer.6 open", m, "run.0/layer.5,run.0/layer.6", 0);
    /* The backward layer is one box of 345 nodes: laid out whole with
     * dot's defaults (before) and cut into parts as compose.c does for
     * boxes of more than 200 nodes (after), in the same run. */
    setenv("HS_COMPOSE_LARGE_BOX", "1000000000", 1);
    row(name, "run.1/layer.5 open (backward), one box, dot defaults", m, "run.1/layer.5", 0);
    unsetenv("HS_COMPOSE_LARGE_BOX");
    row(name, "run.1/layer.5 open (backward), cut into parts", m, "run.1/layer.5", 0);
    hs_module_free(m);
    hs_render_shutdown();
    return 0;
}
