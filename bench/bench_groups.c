/* bench_groups.c - the group tree and the default view at real scale: for
 * each module of ../shared/hlo-real (or the files given), the time to
 * parse it, to build the group tree of its entry (first build and the
 * fastest of the next 5), what the tree found, and the default view
 * (graph.json and DOT, cold = first in this process, warm = fastest of
 * the next 5) with its nodes and edges; then, for the first module, the SVG
 * layout of that view through the layout service (one try, 10 s limit).
 *
 *     build/bench/bench_groups [module.hlo ...]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_file.h"
#include "hloscope/hs_groups.h"
#include "hloscope/hs_hlo_text.h"
#include "hloscope/hs_render.h"

#define REAL HS_SOURCE_DIR "/../shared/hlo-real/"

static double ms_since(int64_t t0)
{
    return (double)(hs_now_ns() - t0) / 1e6;
}

/* The fastest of n timings. */
static double fastest(const double *t, int n)
{
    double best = t[0];
    for (int k = 1; k < n; k++)
        if (t[k] < best)
            best = t[k];
    return best;
}

/* Builds the tree 6 times: the first time, and the fastest of the rest. */
static void time_tree(const hs_module *m, double *cold, double *warm,
                      hs_group_tree **keep)
{
    double t[5];
    hs_error err;
    for (int k = 0; k < 6; k++) {
        hs_group_tree *g = NULL;
        int64_t t0 = hs_now_ns();
        if (hs_groups_build(m, NULL, &g, &err) != HS_OK) {
            fprintf(stderr, "groups: %s\n", err.message);
            exit(1);
        }
        double ms = ms_since(t0);
        if (k == 0)
            *cold = ms;
        else
            t[k - 1] = ms;
        if (k == 5)
            *keep = g;
        else
            hs_groups_free(g);
    }
    *warm = fastest(t, 5);
}

typedef hs_status (*render_fn)(const hs_module *, const hs_render_options *,
                               char **, size_t *, hs_error *);

static void time_view(const hs_module *m, render_fn fn, double *cold,
                      double *warm, char **keep)
{
    double t[5];
    hs_error err;
    for (int k = 0; k < 6; k++) {
        char *out = NULL;
        int64_t t0 = hs_now_ns();
        if (fn(m, NULL, &out, NULL, &err) != HS_OK) {
            fprintf(stderr, "view: %s\n", err.message);
            exit(1);
        }
        double ms = ms_since(t0);
        if (k == 0)
            *cold = ms;
        else
            t[k - 1] = ms;
        if (k == 5 && keep)
            *keep = out;
        else
            free(out);
    }
    *warm = fastest(t, 5);
}

static int count(const char *s, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(s, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

int main(int argc, char **argv)
{
    static const char *const real[] = {
        REAL "hlo_mixtral_8x7b_bf16_1x8.hlo",
        REAL "hlo_llama31_70b_fp8_16x8.hlo",
        REAL "large_loop_slow_compile_time.hlo",
    };
    int n = argc > 1 ? argc - 1 : 3;
    const char *const *files = argc > 1 ? (const char *const *)argv + 1 : real;
    char *first_dot = NULL;
    printf("%-36s %8s %8s %9s %9s %6s  %s\n", "module", "entry", "parse ms",
           "tree cold", "tree warm", "groups", "found (repeats)");
    printf("%-36s %8s %8s %9s %9s %6s\n", "", "instrs", "", "ms", "ms", "");
    double views[8][6];
    int nv = 0;
    const char *names[8];
    for (int f = 0; f < n; f++) {
        size_t len;
        hs_error err;
        char *text = hs_read_file(files[f], &len, &err);
        if (!text) {
            fprintf(stderr, "%s\n", err.message);
            return 1;
        }
        int64_t t0 = hs_now_ns();
        hs_module *m = hs_hlo_parse(text, len, &err);
        double parse = ms_since(t0);
        free(text);
        if (!m) {
            fprintf(stderr, "%s: %s\n", files[f], err.message);
            return 1;
        }
        double cold, warm;
        hs_group_tree *g;
        time_tree(m, &cold, &warm, &g);
        const char *base = strrchr(files[f], '/');
        base = base ? base + 1 : files[f];
        char found[256] = "";
        size_t used = 0;
        for (int k = 0; k < g->groups[0].n_children && used + 40 < sizeof found;
             k++) {
            const hs_group *x = &g->groups[g->groups[0].children[k]];
            if (x->repeat > 1)
                used += (size_t)snprintf(found + used, sizeof found - used,
                                         "%s%s %d x %lld", used ? ", " : "",
                                         x->path, x->repeat,
                                         (long long)g->groups[x->children[0]]
                                             .instructions);
        }
        printf("%-36.36s %8d %8.1f %9.1f %9.1f %6d  %s\n", base,
               m->entry->n_instrs, parse, cold, warm, g->n_groups,
               used ? found : "-");
        hs_groups_free(g);
        names[nv] = base;
        char *dot = NULL, *json = NULL;
        time_view(m, hs_render_graph_json, &views[nv][0], &views[nv][1], &json);
        time_view(m, hs_render_graph_dot, &views[nv][2], &views[nv][3], &dot);
        views[nv][4] = count(json, "\"collapsed_count\"");
        views[nv][5] = count(dot, " -> ");
        nv++;
        free(json);
        if (f == 0)
            first_dot = dot;
        else
            free(dot);
        hs_module_free(m);
    }
    printf("\ndefault view (budget %d nodes): cold = first in this process, "
           "warm = fastest of 5 more\n",
           HS_RENDER_DEFAULT_BUDGET);
    printf("%-36s %6s %6s %10s %10s %9s %9s\n", "module", "nodes", "edges",
           "json cold", "json warm", "dot cold", "dot warm");
    for (int k = 0; k < nv; k++)
        printf("%-36.36s %6.0f %6.0f %10.1f %10.1f %9.1f %9.1f\n", names[k],
               views[k][4], views[k][5], views[k][0], views[k][1],
               views[k][2], views[k][3]);
    if (first_dot) {
        hs_error err;
        hs_render_init(&err);
        char *svg = NULL;
        size_t len = 0;
        int64_t t0 = hs_now_ns();
        hs_status st = hs_render_layout(first_dot, HS_RENDER_ENGINE_GRAPH,
                                        "svg", 10000, &svg, &len, &err);
        double ms = ms_since(t0);
        if (st == HS_OK)
            printf("\nSVG of %s's default view: %.0f ms, %zu KiB\n", names[0],
                   ms, len / 1024);
        else
            printf("\nSVG of %s's default view: %s after %.0f ms (%s)\n",
                   names[0], hs_status_name(st), ms, err.message);
        free(svg);
        free(first_dot);
        hs_render_shutdown();
    }
    return 0;
}
