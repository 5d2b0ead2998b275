/* bench_gather - gather and scatter-add on hloscope's device side by side
 * with PyTorch eager on the same machine and thread count, in one run:
 * an embedding lookup and its gradient (the scatter-add of 4096 rows of
 * 512 into a 32000-row table), and torch.gather / scatter_add along
 * dimension 1 (XLA's gather and scatter with batching dimensions, as
 * torch_xla and JAX write them). Median of `iters` after two warm-ups;
 * each side includes making its result (the scatter copies its operand,
 * PyTorch fills zeros).
 *
 *     build/bench/bench_gather [iters] [threads] [wall|cpu]
 *
 * Needs /usr/bin/python3 with torch (bench/bench_gather_torch.py);
 * without it the PyTorch column says "n/a". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hloscope/hs_device.h"
#include "hloscope/hs_hlo_text.h"

#define ADD "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n" \
            "  ROOT s = f32[] add(a, b)\n}\n"

typedef struct bench_case {
    const char *name;
    const char *hlo;
    int32_t index_bound; /* the indices are drawn from [0, index_bound) */
} bench_case;

static const bench_case cases[] = {
    {"embedding",
     "HloModule embedding\nENTRY e {\n"
     "  table = f32[32000,512] parameter(0)\n  ids = s32[4096] parameter(1)\n"
     "  ROOT rows = f32[4096,512] gather(table, ids), offset_dims={1}, "
     "collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, "
     "slice_sizes={1,512}\n}\n", 32000},
    {"embedding_backward",
     "HloModule embedding_backward\n" ADD "ENTRY e {\n"
     "  rows = f32[4096,512] parameter(0)\n  ids = s32[4096] parameter(1)\n"
     "  z = f32[] constant(0)\n"
     "  zeros = f32[32000,512] broadcast(z), dimensions={}\n"
     "  ROOT g = f32[32000,512] scatter(zeros, ids, rows), "
     "update_window_dims={1}, inserted_window_dims={0}, "
     "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add\n"
     "}\n", 32000},
    {"take_along_dim",
     "HloModule take_along_dim\nENTRY e {\n"
     "  x = f32[4096,1024] parameter(0)\n  idx = s32[4096,64] parameter(1)\n"
     "  ROOT g = f32[4096,64] gather(x, idx), offset_dims={}, "
     "collapsed_slice_dims={1}, start_index_map={1}, "
     "operand_batching_dims={0}, start_indices_batching_dims={0}, "
     "index_vector_dim=2, slice_sizes={1,1}\n}\n", 1024},
    {"scatter_add",
     "HloModule scatter_add\n" ADD "ENTRY e {\n"
     "  src = f32[4096,64] parameter(0)\n  idx = s32[4096,64] parameter(1)\n"
     "  z = f32[] constant(0)\n"
     "  zeros = f32[4096,1024] broadcast(z), dimensions={}\n"
     "  ROOT s = f32[4096,1024] scatter(zeros, idx, src), "
     "update_window_dims={}, inserted_window_dims={1}, "
     "scatter_dims_to_operand_dims={1}, input_batching_dims={0}, "
     "scatter_indices_batching_dims={0}, index_vector_dim=2, "
     "to_apply=add\n}\n", 1024},
};

static bool cpu_clock;

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(cpu_clock ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void die(const char *what, const hs_error *e)
{
    char msg[1024];
    hs_error_format(e, msg, sizeof msg);
    fprintf(stderr, "bench_gather: %s: %s\n", what, msg);
    exit(1);
}

/* Parameter 0 f32 in [-1, 1), parameter 1 s32 in [0, bound). */
static hs_tensor *draw(const hs_shape *s, int32_t bound, unsigned seed)
{
    hs_tensor *t = hs_tensor_new(s);
    for (int64_t i = 0; i < hs_tensor_elements(t); i++) {
        seed = seed * 1664525u + 1013904223u;
        if (s->dtype == HS_S32)
            ((int32_t *)t->data)[i] = (int32_t)((seed >> 4) % (unsigned)bound);
        else
            hs_tensor_f32(t)[i] = (float)((seed >> 8) & 0xffff) / 32768.0f - 1;
    }
    return t;
}

static double median_run(const hs_module *m, hs_tensor **args, int iters)
{
    double *t = malloc(sizeof(double) * (size_t)iters);
    for (int r = -2; r < iters; r++) {
        hs_tensor **outs = NULL;
        int n_outs = 0;
        hs_error e;
        double t0 = now_seconds();
        if (hs_device_run(m, NULL, args, 2, &outs, &n_outs, NULL, &e) != HS_OK)
            die("run", &e);
        if (r >= 0)
            t[r] = now_seconds() - t0;
        hs_tensors_free(outs, n_outs);
    }
    qsort(t, (size_t)iters, sizeof *t, cmp_double);
    double med = t[iters / 2];
    free(t);
    return med;
}

int main(int argc, char **argv)
{
    int iters = argc > 1 ? atoi(argv[1]) : 9;
    int threads = argc > 2 ? atoi(argv[2]) : 1;
    cpu_clock = argc > 3 && strcmp(argv[3], "cpu") == 0;
    if (iters < 1 || threads < 1) {
        fprintf(stderr, "usage: bench_gather [iters] [threads] [wall|cpu]\n");
        return 2;
    }
    printf("# gather / scatter-add, median of %d, PyTorch eager with %d "
           "threads (hloscope's kernels run on one), %s time\n", iters,
           threads, cpu_clock ? "CPU" : "wall");
    printf("%-20s %10s %10s %7s\n", "case", "ms", "torch ms", "ratio");
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const bench_case *c = &cases[k];
        hs_error e;
        hs_module *m = hs_hlo_parse(c->hlo, strlen(c->hlo), &e);
        if (!m || hs_module_verify(m, &e) != HS_OK)
            die(c->name, &e);
        hs_tensor *args[2] = {
            draw(&m->entry->params[0]->shape, c->index_bound, 1),
            draw(&m->entry->params[1]->shape, c->index_bound, 2)};
        double ours = median_run(m, args, iters), theirs = 0;
        char cmd[1024];
        snprintf(cmd, sizeof cmd,
                 "/usr/bin/python3 %s/bench/bench_gather_torch.py %s %d %d "
                 "%s 2>/dev/null", HS_SOURCE_DIR, c->name, threads, iters,
                 cpu_clock ? "cpu" : "wall");
        FILE *pp = popen(cmd, "r");
        if (!pp || fscanf(pp, "%lf", &theirs) != 1)
            theirs = 0;
        if (pp)
            pclose(pp);
        printf("%-20s %10.3f", c->name, ours * 1e3);
        if (theirs > 0)
            printf(" %10.3f %6.2fx\n", theirs * 1e3, ours / theirs);
        else
            printf(" %10s %7s\n", "n/a", "n/a");
        fflush(stdout);
        hs_tensor_free(args[0]);
        hs_tensor_free(args[1]);
        hs_module_free(m);
    }
    return 0;
}
