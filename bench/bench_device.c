/*
 * bench_device.c - the emulated device on the seed model: 64 x
 * Linear(1024, 1024) unrolled (dot + broadcast(bias) + add per layer) on
 * [1,1024] and [8,1024], against the same math as direct OpenBLAS calls
 * (the floor any eager framework on the same BLAS pays).
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hloscope/hs_device.h"

enum { LAYERS = 64, F = 1024, REPS = 30 };

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static hs_module *seed_model(int batch)
{
    hs_module *m = hs_module_new("seed");
    hs_computation *c = hs_module_add_computation(m, "main", true);
    hs_shape xs = hs_shape_make(HS_F32, 2, (int64_t[]){batch, F});
    hs_shape ws = hs_shape_make(HS_F32, 2, (int64_t[]){F, F});
    hs_shape bs = hs_shape_make(HS_F32, 1, (int64_t[]){F});
    hs_instruction *x = hs_computation_add_parameter(c, 0, &xs, "x");
    for (int l = 0; l < LAYERS; l++) {
        char name[64];
        snprintf(name, sizeof name, "layers.%d.weight", l);
        hs_instruction *w = hs_computation_add_parameter(c, 1 + 2 * l, &ws,
                                                         name);
        snprintf(name, sizeof name, "layers.%d.bias", l);
        hs_instruction *b = hs_computation_add_parameter(c, 2 + 2 * l, &bs,
                                                         name);
        hs_instruction *ops[] = {x, w};
        hs_instruction *d = hs_computation_add(c, HS_OP_DOT, &xs, ops, 2,
                                               NULL);
        d->dot = hs_arena_alloc(m->arena, sizeof *d->dot);
        d->dot->n_lhs_contracting = d->dot->n_rhs_contracting = 1;
        d->dot->lhs_contracting[0] = 1;
        d->dot->rhs_contracting[0] = 1;
        hs_instruction *bb = hs_computation_add(c, HS_OP_BROADCAST, &xs, &b,
                                                1, NULL);
        hs_instruction_set_dims(bb, (int64_t[]){1}, 1);
        hs_instruction *sum[] = {d, bb};
        x = hs_computation_add(c, HS_OP_ADD, &xs, sum, 2, NULL);
    }
    c->root = x;
    return m;
}

static double median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    return t[n / 2];
}

int main(void)
{
    printf("| model | hloscope run (ms) | direct OpenBLAS (ms) | ratio | "
           "sim time (us, tpu-v5e) |\n| --- | --- | --- | --- | --- |\n");
    int batches[] = {1, 8};
    for (int bi = 0; bi < 2; bi++) {
        int B = batches[bi];
        hs_module *m = seed_model(B);
        int n_args = 1 + 2 * LAYERS;
        hs_tensor **args = calloc((size_t)n_args, sizeof *args);
        hs_shape xs = hs_shape_make(HS_F32, 2, (int64_t[]){B, F});
        hs_shape ws = hs_shape_make(HS_F32, 2, (int64_t[]){F, F});
        hs_shape bs = hs_shape_make(HS_F32, 1, (int64_t[]){F});
        unsigned seed = 1;
        for (int i = 0; i < n_args; i++) {
            args[i] = hs_tensor_new(i == 0 ? &xs : (i % 2) ? &ws : &bs);
            float *d = hs_tensor_f32(args[i]);
            for (int64_t k = 0; k < hs_tensor_elements(args[i]); k++) {
                seed = seed * 1103515245u + 12345u;
                d[k] = ((float)((seed >> 16) & 0x7fff) / 32768.0f - 0.5f) *
                       0.06f;
            }
        }
        double th[REPS], tb[REPS];
        hs_run_stats st;
        for (int r = 0; r < REPS; r++) {
            hs_tensor **out;
            int n_out;
            hs_error err;
            double t0 = now();
            if (hs_device_run(m, NULL, args, n_args, &out, &n_out, &st,
                              &err)) {
                fprintf(stderr, "%s\n", err.message);
                return 1;
            }
            th[r] = now() - t0;
            hs_tensors_free(out, n_out);
        }
        float *a = aligned_alloc(64, sizeof(float) * B * F);
        float *y = aligned_alloc(64, sizeof(float) * B * F);
        for (int r = 0; r < REPS; r++) {
            double t0 = now();
            memcpy(a, args[0]->data, sizeof(float) * B * F);
            for (int l = 0; l < LAYERS; l++) {
                const float *w = hs_tensor_f32(args[1 + 2 * l]);
                const float *b = hs_tensor_f32(args[2 + 2 * l]);
                if (B == 1)
                    cblas_sgemv(CblasRowMajor, CblasNoTrans, F, F, 1.0f, w, F,
                                a, 1, 0.0f, y, 1);
                else
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, B, F,
                                F, 1.0f, a, F, w, F, 0.0f, y, F);
                for (int i = 0; i < B; i++)
                    for (int j = 0; j < F; j++)
                        y[i * F + j] += b[j];
                float *t = a;
                a = y;
                y = t;
            }
            tb[r] = now() - t0;
        }
        double mh = median(th, REPS), mb = median(tb, REPS);
        printf("| 64 x Linear(1024) on [%d,1024] | %.3f | %.3f | %.2f | "
               "%.1f |\n",
               B, mh * 1e3, mb * 1e3, mh / mb, st.sim_seconds * 1e6);
        free(a);
        free(y);
        for (int i = 0; i < n_args; i++)
            hs_tensor_free(args[i]);
        free(args);
        hs_module_free(m);
    }
    return 0;
}
