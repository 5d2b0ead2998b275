/* bench_conv - convolution forward and backward on the layer shapes of
 * ResNet-18 and MobileNetV2 (224x224 input), hloscope's device kernel side
 * by side with PyTorch eager on the same machine and thread count, in one
 * run. Layout NCHW (bf01_oi01->bf01, as torch_xla writes it); backward is
 * both gradients, the convolutions autodiff's VJP emits against
 * torch.autograd.grad. Median of `iters` after two warm-up runs.
 *
 *     build/bench/bench_conv [iters] [threads] [batch] [layer filter|all]
 *                            [wall|cpu]
 *
 * The clock: wall time (default), or the process's CPU time (`cpu`), which
 * on a shared, overloaded machine measures the work each side does rather
 * than its share of the cores; with one thread it is what wall time would
 * be on an idle machine. Needs /usr/bin/python3 with torch; without it the PyTorch columns say
 * "n/a". */
#include <cblas.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hloscope/hs_autodiff.h"
#include "hloscope/hs_device.h"
#include "hloscope/hs_hlo_text.h"

typedef struct layer {
    const char *name;
    int c, hw, o, k, stride, pad, groups;
} layer;

static const layer layers[] = {
    {"resnet18.conv1", 3, 224, 64, 7, 2, 3, 1},
    {"resnet18.layer1.conv", 64, 56, 64, 3, 1, 1, 1},
    {"resnet18.layer2.0.conv1", 64, 56, 128, 3, 2, 1, 1},
    {"resnet18.layer2.0.downsample", 64, 56, 128, 1, 2, 0, 1},
    {"resnet18.layer2.conv", 128, 28, 128, 3, 1, 1, 1},
    {"resnet18.layer3.0.conv1", 128, 28, 256, 3, 2, 1, 1},
    {"resnet18.layer3.conv", 256, 14, 256, 3, 1, 1, 1},
    {"resnet18.layer4.0.conv1", 256, 14, 512, 3, 2, 1, 1},
    {"resnet18.layer4.conv", 512, 7, 512, 3, 1, 1, 1},
    {"mobilenetv2.stem", 3, 224, 32, 3, 2, 1, 1},
    {"mobilenetv2.dw32", 32, 112, 32, 3, 1, 1, 32},
    {"mobilenetv2.project16", 32, 112, 16, 1, 1, 0, 1},
    {"mobilenetv2.expand96", 16, 112, 96, 1, 1, 0, 1},
    {"mobilenetv2.dw96.s2", 96, 112, 96, 3, 2, 1, 96},
    {"mobilenetv2.expand144", 24, 56, 144, 1, 1, 0, 1},
    {"mobilenetv2.dw144", 144, 56, 144, 3, 1, 1, 144},
    {"mobilenetv2.dw192", 192, 28, 192, 3, 1, 1, 192},
    {"mobilenetv2.dw576", 576, 14, 576, 3, 1, 1, 576},
    {"mobilenetv2.project160", 960, 7, 160, 1, 1, 0, 1},
    {"mobilenetv2.last1280", 320, 7, 1280, 1, 1, 0, 1},
};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void die(const char *what, const hs_error *e)
{
    char msg[1024];
    hs_error_format(e, msg, sizeof msg);
    fprintf(stderr, "bench_conv: %s: %s\n", what, msg);
    exit(1);
}

static int out_extent(const layer *l)
{
    return (l->hw + 2 * l->pad - l->k) / l->stride + 1;
}

static hs_module *forward(const layer *l, int n)
{
    char text[1024];
    int oh = out_extent(l);
    snprintf(text, sizeof text,
             "HloModule %s\nENTRY e {\n"
             "  x = f32[%d,%d,%d,%d] parameter(0)\n"
             "  w = f32[%d,%d,%d,%d] parameter(1)\n"
             "  ROOT y = f32[%d,%d,%d,%d] convolution(x, w), "
             "window={size=%dx%d stride=%dx%d pad=%d_%dx%d_%d}, "
             "dim_labels=bf01_oi01->bf01, feature_group_count=%d\n}\n",
             l->name, n, l->c, l->hw, l->hw, l->o, l->c / l->groups, l->k,
             l->k, n, l->o, oh, oh, l->k, l->k, l->stride, l->stride, l->pad,
             l->pad, l->pad, l->pad, l->groups);
    hs_error e;
    hs_module *m = hs_hlo_parse(text, strlen(text), &e);
    if (!m || hs_module_verify(m, &e) != HS_OK)
        die(l->name, &e);
    return m;
}

/* (gx, gw) of (x, w, gy): the convolutions of the VJP. */
static hs_module *backward(const hs_module *fwd)
{
    hs_module *m = hs_module_new("conv_backward");
    hs_builder *b = hs_builder_new(m, "main", true);
    const hs_computation *c = fwd->entry;
    hs_instruction *in[2] = {
        hs_b_parameter(b, 0, &c->params[0]->shape, "x"),
        hs_b_parameter(b, 1, &c->params[1]->shape, "w")};
    hs_instruction *y = hs_autodiff_inline(b, c, in, 2, NULL);
    hs_instruction *gy = hs_b_parameter(b, 2, &y->shape, "gy");
    hs_instruction *g[2];
    hs_error e;
    if (hs_autodiff_vjp(b, &y, &gy, 1, in, 2, NULL, g, &e) != HS_OK ||
        !hs_builder_finish(b, hs_b_tuple(b, g, 2), &e) ||
        hs_module_verify(m, &e) != HS_OK)
        die("backward", &e);
    return m;
}

static hs_tensor *random_tensor(const hs_shape *s, unsigned seed)
{
    hs_tensor *t = hs_tensor_new(s);
    float *v = hs_tensor_f32(t);
    for (int64_t i = 0; i < hs_tensor_elements(t); i++) {
        seed = seed * 1664525u + 1013904223u;
        v[i] = (float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f;
    }
    return t;
}

static bool cpu_clock;

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(cpu_clock ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double median_run(const hs_module *m, const hs_device_spec *spec,
                         hs_tensor **args, int n_args, int iters)
{
    double *t = malloc(sizeof(double) * (size_t)iters);
    for (int r = -2; r < iters; r++) {
        hs_tensor **outs = NULL;
        int n_outs = 0;
        hs_run_stats st;
        hs_error e;
        double t0 = now_seconds();
        if (hs_device_run(m, spec, args, n_args, &outs, &n_outs, &st, &e) !=
            HS_OK)
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

static void print_ratio(double ours, double theirs)
{
    if (theirs > 0)
        printf(" %6.2fx", ours / theirs);
    else
        printf(" %7s", "n/a");
}

int main(int argc, char **argv)
{
    int iters = argc > 1 ? atoi(argv[1]) : 5;
    int threads = argc > 2 ? atoi(argv[2])
                           : (int)sysconf(_SC_NPROCESSORS_ONLN);
    int n = argc > 3 ? atoi(argv[3]) : 8;
    const char *only = argc > 4 && strcmp(argv[4], "all") ? argv[4] : NULL;
    cpu_clock = argc > 5 && strcmp(argv[5], "cpu") == 0;
    if (iters < 1 || threads < 1 || n < 1) {
        fprintf(stderr, "usage: bench_conv [iters] [threads] [batch] "
                        "[layer filter|all] [wall|cpu]\n");
        return 2;
    }
    openblas_set_num_threads(threads);
    /* the largest preset, so that memory is never the limit */
    int np = 0;
    const hs_device_spec *p = hs_device_presets(&np), *spec = NULL;
    for (int k = 0; k < np; k++)
        if (!spec || p[k].hbm_bytes > spec->hbm_bytes)
            spec = &p[k];
    printf("# convolution, NCHW, batch %d, median of %d, %d threads "
           "(hloscope: OpenBLAS; PyTorch eager: torch.set_num_threads), "
           "%s time\n", n, iters, threads, cpu_clock ? "CPU" : "wall");
    printf("%-30s %9s %9s %7s %9s %9s %7s\n", "layer", "fwd ms", "torch ms",
           "ratio", "bwd ms", "torch ms", "ratio");
    double sum[4] = {0, 0, 0, 0};
    bool torch_ok = true;
    for (size_t k = 0; k < sizeof layers / sizeof layers[0]; k++) {
        const layer *l = &layers[k];
        if (only && !strstr(l->name, only))
            continue;
        hs_module *f = forward(l, n), *b = backward(f);
        const hs_computation *c = f->entry;
        hs_tensor *args[3] = {
            random_tensor(&c->params[0]->shape, 1),
            random_tensor(&c->params[1]->shape, 2),
            random_tensor(&c->root->shape, 3)};
        double ours_f = median_run(f, spec, args, 2, iters);
        double ours_b = median_run(b, spec, args, 3, iters);
        double tf = 0, tb = 0;
        char cmd[1024];
        snprintf(cmd, sizeof cmd,
                 "/usr/bin/python3 %s/bench/bench_conv_torch.py %d %d %d %d "
                 "%d %d %d %d %d %d %d %s 2>/dev/null",
                 HS_SOURCE_DIR, n, l->c, l->hw, l->hw, l->o, l->k, l->stride,
                 l->pad, l->groups, threads, iters,
                 cpu_clock ? "cpu" : "wall");
        FILE *pp = popen(cmd, "r");
        if (!pp || fscanf(pp, "%lf %lf", &tf, &tb) != 2)
            tf = tb = 0, torch_ok = false;
        if (pp)
            pclose(pp);
        printf("%-30s %9.3f", l->name, ours_f * 1e3);
        if (tf > 0)
            printf(" %9.3f", tf * 1e3);
        else
            printf(" %9s", "n/a");
        print_ratio(ours_f, tf);
        printf(" %9.3f", ours_b * 1e3);
        if (tb > 0)
            printf(" %9.3f", tb * 1e3);
        else
            printf(" %9s", "n/a");
        print_ratio(ours_b, tb);
        printf("\n");
        fflush(stdout);
        sum[0] += ours_f, sum[1] += tf, sum[2] += ours_b, sum[3] += tb;
        for (int a = 0; a < 3; a++)
            hs_tensor_free(args[a]);
        hs_module_free(b);
        hs_module_free(f);
    }
    printf("%-30s %9.3f", "total", sum[0] * 1e3);
    if (torch_ok)
        printf(" %9.3f", sum[1] * 1e3);
    else
        printf(" %9s", "n/a");
    print_ratio(sum[0], torch_ok ? sum[1] : 0);
    printf(" %9.3f", sum[2] * 1e3);
    if (torch_ok)
        printf(" %9.3f", sum[3] * 1e3);
    else
        printf(" %9s", "n/a");
    print_ratio(sum[2], torch_ok ? sum[3] : 0);
    printf("\n");
    return 0;
}
