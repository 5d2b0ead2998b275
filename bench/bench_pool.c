/*
 * bench_pool.c - ResNet's stem pooling and batch norm on the emulated
 * device: max-pool 3x3 stride 2 pad 1 forward (reduce-window) and backward
 * (select-and-scatter), batch-norm-training and batch-norm-grad, on
 * [8,64,112,112] f32. Median of REPS runs of hs_device_run (host wall
 * time, one thread). bench/torch_pool.py times PyTorch eager on the same
 * shapes; docs/BENCHMARKS.md has both.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hloscope/hs_device.h"
#include "hloscope/hs_hlo_text.h"

enum { REPS = 11 };

static const char reducers[] =
    "HloModule pool\n"
    "max {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
    "  ROOT s = f32[] maximum(a, b)\n}\n"
    "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
    "  ROOT s = f32[] add(a, b)\n}\n"
    "ge {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
    "  ROOT s = pred[] compare(a, b), direction=GE\n}\n";

#define X "f32[8,64,112,112]"
#define Y "f32[8,64,56,56]"
#define WINDOW "window={size=1x1x3x3 stride=1x1x2x2 pad=0_0x0_0x1_1x1_1}"

static const struct {
    const char *name, *entry;
} cases[] = {
    {"negate (baseline: one read, one write)",
     "ENTRY e {\n  x = " X " parameter(0)\n"
     "  ROOT y = " X " negate(x)\n}\n"},
    {"max_pool2d forward (reduce-window)",
     "ENTRY e {\n  x = " X " parameter(0)\n  ninf = f32[] constant(-inf)\n"
     "  ROOT y = " Y " reduce-window(x, ninf), " WINDOW ", to_apply=max\n}\n"},
    {"max_pool2d backward (select-and-scatter)",
     "ENTRY e {\n  x = " X " parameter(0)\n  g = " Y " parameter(1)\n"
     "  zero = f32[] constant(0)\n"
     "  ROOT gx = " X " select-and-scatter(x, g, zero), " WINDOW
     ", select=%ge, scatter=%add\n}\n"},
    {"batch_norm training forward",
     "ENTRY e {\n  x = " X " parameter(0)\n  w = f32[64] parameter(1)\n"
     "  b = f32[64] parameter(2)\n"
     "  ROOT t = (" X ", f32[64], f32[64]) batch-norm-training(x, w, b), "
     "epsilon=1e-05, feature_index=1\n}\n"},
    {"batch_norm backward (batch-norm-grad)",
     "ENTRY e {\n  x = " X " parameter(0)\n  w = f32[64] parameter(1)\n"
     "  m = f32[64] parameter(2)\n  v = f32[64] parameter(3)\n"
     "  g = " X " parameter(4)\n"
     "  ROOT t = (" X ", f32[64], f32[64]) batch-norm-grad(x, w, m, v, g), "
     "epsilon=1e-05, feature_index=1\n}\n"},
};

static double now(void)
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

int main(void)
{
    printf("# ResNet stem shapes, [8,64,112,112] f32, median of %d, 1 thread\n",
           REPS);
    printf("%-42s %10s\n", "op", "ms");
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char text[4096];
        snprintf(text, sizeof text, "%s%s", reducers, cases[c].entry);
        hs_error err;
        hs_error_clear(&err);
        hs_module *m = hs_hlo_parse(text, strlen(text), &err);
        if (!m) {
            fprintf(stderr, "%s: %s\n", cases[c].name, err.message);
            return 1;
        }
        hs_tensor *args[8];
        int n = m->entry->n_params;
        unsigned seed = 13;
        for (int k = 0; k < n; k++) {
            args[k] = hs_tensor_new(&m->entry->params[k]->shape);
            float *d = (float *)args[k]->data;
            int64_t e = hs_shape_elements(&args[k]->shape);
            for (int64_t i = 0; i < e; i++) {
                seed = seed * 1103515245u + 12345u;
                d[i] = (float)(seed >> 8) / (float)(1u << 24) + 0.5f;
            }
        }
        double t[REPS];
        for (int r = 0; r < REPS; r++) {
            hs_tensor **outs = NULL;
            int n_outs = 0;
            double t0 = now();
            if (hs_device_run(m, NULL, args, n, &outs, &n_outs, NULL, &err)) {
                fprintf(stderr, "%s: %s\n", cases[c].name, err.message);
                return 1;
            }
            t[r] = now() - t0;
            hs_tensors_free(outs, n_outs);
        }
        qsort(t, REPS, sizeof t[0], cmp_double);
        printf("%-42s %10.2f\n", cases[c].name, t[REPS / 2] * 1e3);
        for (int k = 0; k < n; k++)
            hs_tensor_free(args[k]);
        hs_module_free(m);
    }
    return 0;
}
