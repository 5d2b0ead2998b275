/* bench_render.c - rendering examples/decoder_50x256.json (50 unrolled
 * decoder layers, traced with shapes_only): DOT generation and layout of
 * the fully expanded graph against the collapsed views, side by side with
 * plain `dot -Tsvg` (the Graphviz CLI) on the full DOT; then the cost of
 * the layout service itself on a trivial graph: hs_render_layout with a
 * warm worker waiting, back to back, 8 callers at once, with a fresh
 * worker for every job (HS_LAYOUT_WORKER_JOBS=1), and with no pool at all
 * (an exec and Graphviz's start per layout), with the CPU all layout
 * processes spent per layout; against workers forked from this process
 * (Graphviz cold, or warm and inherited) and an in-process layout with no
 * isolation.
 *
 *     build/bench/bench_render [model.json | --service]
 *
 * The service rows use the public API only, so this file built against an
 * older engine measures that engine the same way (docs/BENCHMARKS.md).
 */
#include <gvc.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hloscope/hs_model.h"
#include "hloscope/hs_render.h"

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* CPU time of this process. */
static double cpu_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Graphviz's own work for a DOT text: CPU time of the same layout done in
 * this process (the workers' CPU is not visible from here). */
static double graphviz_cpu_ms(GVC_t *gvc, const char *dot)
{
    double c0 = cpu_ms();
    Agraph_t *g = agmemread(dot);
    char *data = NULL;
    unsigned int len = 0;
    gvLayout(gvc, g, "dot");
    gvRenderData(gvc, g, "svg", &data, &len);
    gvFreeRenderData(data);
    gvFreeLayout(gvc, g);
    agclose(g);
    return cpu_ms() - c0;
}

/* CPU time of the children reaped so far (the dot CLI). */
static double children_cpu_ms(void)
{
    struct rusage u;
    getrusage(RUSAGE_CHILDREN, &u);
    return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3 +
           (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

static void die(const char *what, const hs_error *e)
{
    fprintf(stderr, "bench_render: %s: %s\n", what, e->message);
    exit(1);
}

typedef struct row {
    const char *view;
    long long nodes, edges;
    double dot_ms, layout_ms, layout_cpu_ms;
    size_t svg_bytes;
} row;

static long long stat_of(const char *json, const char *key)
{
    char needle[64];
    snprintf(needle, sizeof needle, "\"%s\":", key);
    const char *p = strstr(json, "\"stats\":");
    p = p ? strstr(p, needle) : NULL;
    return p ? atoll(p + strlen(needle)) : -1;
}

/* Median of reps runs of DOT generation and of layout. */
static GVC_t *bench_gvc; /* for graphviz_cpu_ms */

static row measure(const char *view, const hs_module *m,
                   const hs_render_options *o, int reps, char **keep_dot)
{
    row r = {.view = view};
    double dot_t[16], lay_t[16];
    hs_error e;
    char *json = NULL;
    if (hs_render_graph_json(m, o, &json, NULL, &e) != HS_OK)
        die(view, &e);
    r.nodes = stat_of(json, "nodes");
    r.edges = stat_of(json, "edges");
    free(json);
    for (int k = 0; k < reps; k++) {
        char *dot = NULL, *svg = NULL;
        size_t dl = 0;
        double t0 = now_ms();
        if (hs_render_graph_dot(m, o, &dot, &dl, &e) != HS_OK)
            die(view, &e);
        double t1 = now_ms();
        if (hs_render_layout(dot, HS_RENDER_ENGINE_GRAPH, "svg", 600000, &svg,
                             &r.svg_bytes, &e) != HS_OK)
            die(view, &e);
        double t2 = now_ms();
        dot_t[k] = t1 - t0;
        lay_t[k] = t2 - t1;
        free(svg);
        if (k == reps - 1)
            r.layout_cpu_ms = graphviz_cpu_ms(bench_gvc, dot);
        if (keep_dot && k == reps - 1)
            *keep_dot = dot;
        else
            free(dot);
    }
    r.dot_ms = median(dot_t, reps);
    r.layout_ms = median(lay_t, reps);
    return r;
}

/* `dot -Tsvg` on a file: wall clock (and CPU in *cpu), or -1 when the
 * CLI is missing. */
static double dot_cli_ms(const char *dot, double *cpu)
{
    char path[] = "/tmp/bench_render_XXXXXX.dot";
    int fd = mkstemps(path, 4);
    if (fd < 0)
        return -1;
    size_t n = strlen(dot);
    if (write(fd, dot, n) != (ssize_t)n) {
        close(fd);
        unlink(path);
        return -1;
    }
    close(fd);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "dot -Tsvg '%s' -o /dev/null 2>/dev/null", path);
    double t0 = now_ms(), c0 = children_cpu_ms();
    int st = system(cmd);
    double t = now_ms() - t0;
    *cpu = children_cpu_ms() - c0;
    unlink(path);
    return st == 0 ? t : -1;
}

/* ---- worker overhead ------------------------------------------------------ */

static const char tiny[] = "digraph G { a -> b; }";

static void tiny_layout(void)
{
    hs_error e;
    char *svg = NULL;
    if (hs_render_layout(tiny, "dot", "svg", 10000, &svg, NULL, &e) != HS_OK)
        die("tiny layout", &e);
    free(svg);
}

static void sleep_ms(int ms)
{
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000};
    nanosleep(&t, NULL);
}

/* Starts a new layout server; its workers' CPU reaches this process's
 * RUSAGE_CHILDREN when it is stopped (it reaps them, we reap it). */
static void restart_service(void)
{
    hs_error e;
    hs_render_shutdown();
    if (hs_render_init(&e) != HS_OK)
        die("layout server", &e);
    tiny_layout(); /* the first layout may wait for the first warm-up */
    sleep_ms(500);
}

/* One layout at a time with a pause before each (so that a warm worker is
 * waiting): the median latency. */
static double paced_ms(int reps)
{
    double t[64];
    for (int k = 0; k < reps && k < 64; k++) {
        sleep_ms(100);
        double t0 = now_ms();
        tiny_layout();
        t[k] = now_ms() - t0;
    }
    return median(t, reps < 64 ? reps : 64);
}

/* Back to back: the mean latency, and in *cpu the CPU time of all layout
 * processes (server, workers, spares warmed) per layout. */
static double back_to_back_ms(int reps, double *cpu)
{
    restart_service();
    double c0 = children_cpu_ms();
    double t0 = now_ms();
    for (int k = 0; k < reps; k++)
        tiny_layout();
    double t = (now_ms() - t0) / reps;
    hs_render_shutdown();
    *cpu = (children_cpu_ms() - c0) / reps;
    return t;
}

enum { CALLERS = 8, PER_CALLER = 5 };

static void *caller(void *p)
{
    double *sum = p;
    for (int k = 0; k < PER_CALLER; k++) {
        double t0 = now_ms();
        tiny_layout();
        *sum += now_ms() - t0;
    }
    return NULL;
}

/* CALLERS threads at once: the mean latency per layout. */
static double concurrent_ms(void)
{
    pthread_t t[CALLERS];
    double sum[CALLERS] = {0};
    for (int k = 0; k < CALLERS; k++)
        if (pthread_create(&t[k], NULL, caller, &sum[k]) != 0) {
            fprintf(stderr, "bench_render: pthread_create failed\n");
            exit(1);
        }
    double total = 0;
    for (int k = 0; k < CALLERS; k++) {
        pthread_join(t[k], NULL);
        total += sum[k];
    }
    return total / (CALLERS * PER_CALLER);
}

/* Designs not taken: a worker forked from this process per layout, with
 * Graphviz started cold in the worker, or with a context warmed in this
 * process and inherited (gvc non-NULL). */
static double forked_worker_ms(int reps, GVC_t *warm)
{
    double t0 = now_ms();
    for (int k = 0; k < reps; k++) {
        int fds[2];
        if (pipe(fds) != 0)
            return -1;
        pid_t pid = fork();
        if (pid == 0) {
            close(fds[0]);
            GVC_t *gvc = warm ? warm : gvContext();
            Agraph_t *g = agmemread(tiny);
            char *data = NULL;
            unsigned int len = 0;
            gvLayout(gvc, g, "dot");
            gvRenderData(gvc, g, "svg", &data, &len);
            ssize_t w = write(fds[1], data, len);
            _exit(w == (ssize_t)len ? 0 : 1);
        }
        close(fds[1]);
        char buf[4096];
        while (read(fds[0], buf, sizeof buf) > 0) {
        }
        close(fds[0]);
        waitpid(pid, NULL, 0);
    }
    return (now_ms() - t0) / reps;
}

/* Warm layouts in this process (the context is kept in *keep). */
static double in_process_ms(int reps, GVC_t **keep)
{
    GVC_t *gvc = gvContext();
    double t0 = 0;
    for (int k = 0; k <= reps; k++) {
        if (k == 1)
            t0 = now_ms(); /* the first run loads the plugins */
        Agraph_t *g = agmemread(tiny);
        char *data = NULL;
        unsigned int len = 0;
        gvLayout(gvc, g, "dot");
        gvRenderData(gvc, g, "svg", &data, &len);
        gvFreeRenderData(data);
        gvFreeLayout(gvc, g);
        agclose(g);
    }
    *keep = gvc;
    return (now_ms() - t0) / reps;
}

typedef struct service_figures {
    double paced, b2b, b2b_cpu, concurrent, fresh, fresh_cpu, nopool,
        nopool_cpu, cold, warm, inproc;
} service_figures;

static void print_service(const service_figures *f)
{
    printf("\nlayout of a 2-node graph to SVG (ms per layout; CPU of all "
           "layout processes):\n");
    printf("  %-60s %7.2f ms\n",
           "hs_render_layout, a warm worker waiting (median of 40)", f->paced);
    printf("  %-60s %7.2f ms  (CPU %.2f ms)\n",
           "hs_render_layout, back to back (mean of 40)", f->b2b, f->b2b_cpu);
    printf("  %-60s %7.2f ms\n",
           "hs_render_layout, 8 callers at once (mean of 8 x 5)", f->concurrent);
    printf("  %-60s %7.2f ms  (CPU %.2f ms)\n",
           "  a fresh worker per job, back to back (mean of 40)", f->fresh,
           f->fresh_cpu);
    printf("  %-60s %7.2f ms  (CPU %.2f ms)\n",
           "  no pool: exec + warm-up per layout (mean of 20)", f->nopool,
           f->nopool_cpu);
    printf("  %-60s %7.2f ms\n",
           "fork from this process, Graphviz started in the worker", f->cold);
    printf("  %-60s %7.2f ms\n",
           "fork from this process, warm context inherited", f->warm);
    printf("  %-60s %7.2f ms\n", "in this process, no isolation", f->inproc);
    printf("  isolation overhead of hs_render_layout: %.2f ms per layout\n",
           f->paced - f->inproc);
}

int main(int argc, char **argv)
{
    /* --service: the layout service's rows only (quick to alternate with
     * another engine's build). */
    bool service_only = argc > 1 && strcmp(argv[1], "--service") == 0;
    const char *path = argc > 1 && !service_only
                           ? argv[1]
                           : HS_SOURCE_DIR "/examples/decoder_50x256.json";
    hs_error e;
    /* The layout server and its spares start before the measurements. */
    if (hs_render_init(&e) != HS_OK)
        die("layout server", &e);
    /* The worker's cost first, while Graphviz is not loaded in this process
     * (so that "started in the worker" is a cold start). */
    enum { REPS = 40 };
    restart_service();
    double paced = paced_ms(REPS);
    double concurrent = concurrent_ms();
    double b2b_cpu, b2b = back_to_back_ms(REPS, &b2b_cpu);
    /* The pool's settings (an engine without a pool ignores them): a fresh
     * worker per job, then no spare either, so that every layout waits for
     * an exec and Graphviz's start. */
    setenv("HS_LAYOUT_WORKER_JOBS", "1", 1);
    double fresh_cpu, fresh = back_to_back_ms(REPS, &fresh_cpu);
    setenv("HS_LAYOUT_SPARE", "0", 1);
    double nopool_cpu, nopool = back_to_back_ms(REPS / 2, &nopool_cpu);
    unsetenv("HS_LAYOUT_SPARE");
    unsetenv("HS_LAYOUT_WORKER_JOBS");
    restart_service();
    double cold = forked_worker_ms(REPS, NULL);
    GVC_t *gvc = NULL;
    double inproc = in_process_ms(REPS, &gvc);
    double warm = forked_worker_ms(REPS, gvc);
    service_figures sv = {paced, b2b, b2b_cpu, concurrent, fresh, fresh_cpu,
                          nopool, nopool_cpu, cold, warm, inproc};
    if (service_only) {
        print_service(&sv);
        gvFreeContext(gvc);
        hs_render_shutdown();
        return 0;
    }

    bench_gvc = gvContext();
    hs_model_options mo = {.shapes_only = true, .loop = "unrolled"};
    double t0 = now_ms();
    hs_model *model = hs_model_load_file(path, &mo, &e);
    if (!model)
        die(path, &e);
    printf("model %s: %lld instructions, traced in %.1f ms (shapes only)\n\n",
           model->name, (long long)hs_module_instruction_count(model->module),
           now_ms() - t0);

    row rows[8];
    int n = 0;
    char *full_dot = NULL;
    hs_render_options full = {.expand = "all", .max_nodes = 1000000};
    rows[n++] = measure("full (expand=all)", model->module, &full, 1,
                        &full_dot);
    hs_render_options collapsed = {0};
    rows[n++] = measure("collapsed (default)", model->module, &collapsed, 5,
                        NULL);
    hs_render_options one = {.expand = "layers.3"};
    rows[n++] = measure("collapsed, expand=layers.3", model->module, &one, 5,
                        NULL);
    hs_render_options three = {.expand = "layers.0,layers.24,layers.49"};
    rows[n++] = measure("collapsed, expand=3 layers", model->module, &three, 5,
                        NULL);

    mo.loop = "scan";
    hs_model *scan = hs_model_load_file(path, &mo, &e);
    if (!scan)
        die("scan model", &e);
    rows[n++] = measure("loop=scan (body open)", scan->module, &collapsed, 5,
                        NULL);

    double cli_cpu = 0, cli = dot_cli_ms(full_dot, &cli_cpu);
    printf("%-28s %6s %6s %8s %10s %10s %10s %8s %8s\n", "view", "nodes",
           "edges", "DOT ms", "layout ms", "(CPU ms)", "total ms", "SVG KiB",
           "vs CLI");
    for (int k = 0; k < n; k++) {
        double total = rows[k].dot_ms + rows[k].layout_ms;
        printf("%-28s %6lld %6lld %8.2f %10.1f %10.1f %10.1f %8.0f %7.1fx\n",
               rows[k].view, rows[k].nodes, rows[k].edges, rows[k].dot_ms,
               rows[k].layout_ms, rows[k].layout_cpu_ms, total,
               rows[k].svg_bytes / 1024.0, cli > 0 ? cli / total : 0.0);
    }
    if (cli > 0)
        printf("%-28s %6lld %6lld %8s %10.1f %10.1f %10.1f %8s %7.1fx\n",
               "dot -Tsvg CLI, full DOT", rows[0].nodes, rows[0].edges, "-",
               cli, cli_cpu, cli, "-", 1.0);
    else
        printf("dot -Tsvg CLI: not available\n");
    printf("(ms are wall clock, medians of 5 runs for the collapsed views; "
           "CPU ms is Graphviz's CPU time\n for the same layout in process)\n");

    print_service(&sv);
    gvFreeContext(gvc);
    gvFreeContext(bench_gvc);

    free(full_dot);
    hs_model_free(scan);
    hs_model_free(model);
    hs_render_shutdown();
    return 0;
}
