/*
 * bench_fusion.c - what the fusion pass and the device's fused programs buy:
 * each model compiled with the default pipeline and with the same pipeline
 * minus `fusion`, run on the emulated device (tpu-v5e). Prints host wall
 * time (median and best of REPS runs, the variants of a model run in
 * turn) and process CPU time (best), executed instructions, simulated
 * time, device peak and bytes accessed. Also scan against unrolled for the seed model (64 x
 * Linear(1024)), where dynamic-slice views keep the scanned loop from
 * copying a layer's weights per iteration.
 *
 *     build/bench/bench_fusion [REPS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hloscope/hs_compile.h"
#include "hloscope/hs_file.h"
#include "hloscope/hs_device.h"
#include "hloscope/hs_hlo_text.h"
#include "hloscope/hs_model.h"

#define NO_FUSION "verify,fix(simplify,cse,dce),while-loop-trip-count,schedule"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* CPU time of the process (all threads): less sensitive than wall time to
 * other work on a busy host. */
static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct figures {
    double median, best; /* wall seconds */
    double cpu_best;     /* CPU seconds */
    hs_run_stats st;
} figures;

typedef struct variant {
    const char *label;
    const char *pipeline;
    hs_executable *exe;
    double *t, *cpu;
    figures f;
} variant;

/* Compiles every variant, then runs them in turn (a, b, a, b, ...) so that
 * a busy host slows all of them alike. */
static int measure(const hs_module *traced, variant *v, int n_v,
                   hs_tensor **args, int n_args, int reps)
{
    hs_error err;
    hs_error_clear(&err);
    for (int k = 0; k < n_v; k++) {
        hs_compile_options o;
        hs_compile_options_init(&o);
        o.pipeline = v[k].pipeline;
        o.device = "tpu-v5e";
        if (hs_compile(traced, &o, NULL, NULL, &v[k].exe, &err) != HS_OK) {
            fprintf(stderr, "compile: %s\n", err.message);
            return 1;
        }
        v[k].t = calloc((size_t)reps, sizeof(double));
        v[k].cpu = calloc((size_t)reps, sizeof(double));
    }
    for (int r = 0; r < reps; r++)
        for (int k = 0; k < n_v; k++) {
            hs_tensor **outs;
            int n_outs;
            double t0 = now(), c0 = cpu_now();
            if (hs_device_run(hs_executable_module(v[k].exe),
                              hs_device_find("tpu-v5e"), args, n_args, &outs,
                              &n_outs, &v[k].f.st, &err) != HS_OK) {
                fprintf(stderr, "run: %s\n", err.message);
                return 1;
            }
            v[k].t[r] = now() - t0;
            v[k].cpu[r] = cpu_now() - c0;
            hs_tensors_free(outs, n_outs);
        }
    for (int k = 0; k < n_v; k++) {
        qsort(v[k].t, (size_t)reps, sizeof(double), cmp_double);
        v[k].f.median = v[k].t[reps / 2];
        v[k].f.best = v[k].t[0];
        qsort(v[k].cpu, (size_t)reps, sizeof(double), cmp_double);
        v[k].f.cpu_best = v[k].cpu[0];
        free(v[k].t);
        free(v[k].cpu);
        hs_executable_release(v[k].exe);
    }
    return 0;
}

static void row(const char *model, const variant *v)
{
    const figures *f = &v->f;
    printf("| %s | %s | %lld | %.2f | %.2f | %.2f | %.1f | %.2f | %.1f |\n",
           model, v->label, (long long)f->st.instructions, f->median * 1e3,
           f->best * 1e3, f->cpu_best * 1e3, f->st.sim_seconds * 1e6,
           (double)f->st.peak_device_bytes / (1 << 20),
           f->st.bytes_accessed / (1 << 20));
}

static int model_rows(const char *name, const char *loop, int reps,
                      bool both_pipelines)
{
    char path[512];
    snprintf(path, sizeof path, "%s/examples/%s.json", HS_SOURCE_DIR, name);
    hs_model_options mo;
    memset(&mo, 0, sizeof mo);
    mo.loop = loop;
    hs_error err;
    hs_model *model = hs_model_load_file(path, &mo, &err);
    if (!model) {
        fprintf(stderr, "%s: %s\n", path, err.message);
        return 1;
    }
    hs_tensor *args[4096];
    int n_args = hs_model_args(model, args, 4096);
    char label[128];
    snprintf(label, sizeof label, "%s (%s)", name, loop);
    variant v[2] = {
        {.label = "default (with fusion)", .pipeline = HS_DEFAULT_PIPELINE},
        {.label = "without fusion", .pipeline = NO_FUSION}};
    int n_v = both_pipelines ? 2 : 1;
    if (measure(model->module, v, n_v, args, n_args, reps))
        return 1;
    for (int k = n_v - 1; k >= 0; k--)
        row(label, &v[k]);
    hs_model_free(model);
    return 0;
}


int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 15;
    if (reps < 1)
        reps = 1;
    printf("| model | pipeline | executed instructions | wall median (ms) | "
           "wall best (ms) | CPU best (ms) | sim (us) | device peak (MiB) | "
           "bytes accessed (MiB) |\n"
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
    hs_error err;
    size_t gelu_len = 0;
    char *gelu = hs_read_file(HS_SOURCE_DIR "/tests/data/hlo/gelu_tanh.hlo", &gelu_len, &err);
    hs_module *g = gelu ? hs_hlo_parse(gelu, gelu_len, &err) : NULL;
    free(gelu);
    if (!g) {
        fprintf(stderr, "bench_fusion: gelu_tanh.hlo: %s\n", err.message);
        return 1;
    }
    hs_shape xs = g->entry->params[0]->shape;
    hs_tensor *x = hs_tensor_new(&xs);
    float *xd = x->data;
    for (int64_t i = 0; i < hs_shape_elements(&xs); i++)
        xd[i] = (float)(i % 2001) * 0.001f - 1.0f;
    variant v[2] = {
        {.label = "default (with fusion)", .pipeline = HS_DEFAULT_PIPELINE},
        {.label = "without fusion", .pipeline = NO_FUSION}};
    if (measure(g, v, 2, &x, 1, reps))
        return 1;
    row("gelu [256,1024]", &v[1]);
    row("gelu [256,1024]", &v[0]);
    hs_tensor_free(x);
    hs_module_free(g);
    if (model_rows("decoder_50x256", "unrolled", reps, true) ||
        model_rows("decoder_50x256", "scan", reps, true) ||
        model_rows("seed_64_linear", "unrolled", reps, false) ||
        model_rows("seed_64_linear", "scan", reps, false))
        return 1;
    return 0;
}
