/* bench_execute - execution on the emulated device side by side with
 * PyTorch eager on the same machine, thread count, weights and input, in one
 * run. Reports the median and the best wall time of the forward pass and
 * their ratios: the best is what each side reaches when the shared machine
 * lets it, the median what it typically gets.
 *
 *     build/bench/bench_execute [iters] [threads]
 *
 * Needs /usr/bin/python3 with torch (Debian's python3-torch); without it
 * the PyTorch columns say "n/a".
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hloscope/hs_compile.h"
#include "hloscope/hs_device.h"
#include "hloscope/hs_model.h"
#include "hloscope/hs_npy.h"
#include "hloscope/hs_passes.h"

typedef struct bench_case {
    const char *label;
    const char *file; /* relative to the source tree */
    int64_t batch;    /* 0 keeps the model's */
    const char *loop;
    /* NULL keeps the model's element type; "bf16": the model run as
     * torch_xla runs a bf16 model ("dtype": "bf16", MODEL_FORMAT.md), and
     * PyTorch eager at bf16 too. */
    const char *dtype;
} bench_case;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void die(const char *what, const hs_error *e)
{
    char msg[1024];
    hs_error_format(e, msg, sizeof msg);
    fprintf(stderr, "bench_execute: %s: %s\n", what, msg);
    exit(1);
}

/* The model of file, at dtype when given: its description with a
 * "dtype" key added before the first one. */
static hs_model *load_case(const char *file, const char *dtype,
                           const hs_model_options *o, hs_error *e)
{
    if (!dtype)
        return hs_model_load_file(file, o, e);
    FILE *f = fopen(file, "rb");
    if (!f) {
        hs_error_set(e, HS_ERR_IO, "cannot open %s", file);
        return NULL;
    }
    static char text[1 << 16];
    size_t n = fread(text, 1, sizeof text - 1, f);
    bool whole = feof(f);
    fclose(f);
    text[n] = '\0';
    char *brace = strchr(text, '{');
    if (!whole || !brace) {
        hs_error_set(e, HS_ERR_INVALID, "%s: not a model description of at most 64 KiB", file);
        return NULL;
    }
    char with[(1 << 16) + 64];
    int k = snprintf(with, sizeof with, "{\"dtype\": \"%s\", %s", dtype, brace + 1);
    return hs_model_load(with, (size_t)k, o, e);
}

/* Writes input, params and hloscope's output for torch_eager.py. */
static void dump(const char *dir, const hs_model *m, const hs_tensor *out)
{
    hs_error e;
    char path[4096];
    snprintf(path, sizeof path, "%s/params", dir);
    if (hs_mkdirs(path, &e) != HS_OK)
        die(path, &e);
    snprintf(path, sizeof path, "%s/input.npy", dir);
    if (hs_npy_write(path, m->input, &e) != HS_OK)
        die(path, &e);
    snprintf(path, sizeof path, "%s/output.npy", dir);
    if (hs_npy_write(path, out, &e) != HS_OK)
        die(path, &e);
    for (int k = 0; k < m->n_params; k++) {
        snprintf(path, sizeof path, "%s/params/%s.npy", dir, m->params[k].name);
        if (hs_npy_write(path, m->params[k].value, &e) != HS_OK)
            die(path, &e);
    }
}

static double time_hloscope(const hs_model *m, const hs_module *exe_module,
                            const hs_device_spec *spec, int iters,
                            hs_tensor **first_out, double *best)
{
    hs_tensor **args = malloc(sizeof(hs_tensor *) * (size_t)(m->n_params + 1));
    int n_args = hs_model_args(m, args, m->n_params + 1);
    double *t = malloc(sizeof(double) * (size_t)iters);
    for (int r = -2; r < iters; r++) {
        hs_tensor **outs = NULL;
        int n_outs = 0;
        hs_run_stats st;
        hs_error e;
        int64_t t0 = hs_now_ns();
        if (hs_device_run(exe_module, spec, args, n_args, &outs, &n_outs, &st,
                          &e) != HS_OK)
            die("run", &e);
        int64_t dt = hs_now_ns() - t0;
        if (r >= 0)
            t[r] = (double)dt * 1e-9;
        if (r == -2 && first_out) {
            *first_out = outs[0];
            outs[0] = NULL;
        }
        hs_tensors_free(outs, n_outs);
    }
    qsort(t, (size_t)iters, sizeof *t, cmp_double);
    double median = t[iters / 2];
    *best = t[0];
    free(t);
    free(args);
    return median;
}

int main(int argc, char **argv)
{
    int iters = argc > 1 ? atoi(argv[1]) : 20;
    int threads = argc > 2 ? atoi(argv[2]) : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (iters < 1)
        iters = 1;
    openblas_set_num_threads(threads);
    const bench_case cases[] = {
        {"seed_64_linear b=1", "examples/seed_64_linear.json", 1, "unrolled", NULL},
        {"seed_64_linear b=8", "examples/seed_64_linear.json", 8, "unrolled", NULL},
        {"decoder_50x256", "examples/decoder_50x256.json", 0, "unrolled", NULL},
        {"decoder_50x256 bf16", "examples/decoder_50x256.json", 0, "unrolled", "bf16"},
    };
    const hs_device_spec *spec = hs_device_find("tpu-v5p");
    printf("# forward pass, median of %d, %d threads (hloscope: OpenBLAS; PyTorch: torch.set_num_threads,\n"
           "# best of OPENBLAS_NUM_THREADS=1 and =%d), same weights and input\n",
           iters, threads, threads);
    printf("%-20s %12s %12s %7s %12s %12s %7s %12s\n", "case", "hloscope p50",
           "pytorch p50", "ratio", "hloscope min", "pytorch min", "ratio", "max rel err");
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char file[4096];
        snprintf(file, sizeof file, "%s/%s", HS_SOURCE_DIR, cases[c].file);
        hs_model_options o = {.batch = cases[c].batch, .loop = cases[c].loop};
        hs_error e;
        hs_model *m = load_case(file, cases[c].dtype, &o, &e);
        if (!m)
            die(file, &e);
        hs_compile_options co;
        hs_compile_options_init(&co);
        hs_executable *exe = NULL;
        if (hs_compile(m->module, &co, NULL, NULL, &exe, &e) != HS_OK)
            die("compile", &e);
        hs_tensor *out = NULL;
        double ours_best = 0;
        double ours = time_hloscope(m, hs_executable_module(exe), spec, iters, &out,
                                    &ours_best);

        char dir[] = "/tmp/hs_bench_XXXXXX";
        double theirs = -1, theirs_best = -1, err = -1;
        if (mkdtemp(dir)) {
            dump(dir, m, out);
            /* torch's OpenMP threads and OpenBLAS's own threads
             * oversubscribe the cores; PyTorch gets the faster of the two
             * OpenBLAS settings. */
            int blas_threads[2] = {1, threads};
            for (int k = 0; k < (threads > 1 ? 2 : 1); k++) {
                char cmd[8192];
                snprintf(cmd, sizeof cmd,
                         "OPENBLAS_NUM_THREADS=%d /usr/bin/python3 %s/bench/torch_eager.py "
                         "%s %s %d %d %s 2>/dev/null",
                         blas_threads[k], HS_SOURCE_DIR, file, dir, iters, threads,
                         cases[c].dtype ? cases[c].dtype : "f32");
                double t = -1, tb = -1, e2 = -1;
                FILE *p = popen(cmd, "r");
                if (p) {
                    if (fscanf(p, "%lf %lf %lf", &t, &tb, &e2) != 3)
                        t = -1;
                    pclose(p);
                }
                if (t > 0 && (theirs < 0 || t < theirs)) {
                    theirs = t;
                    err = e2;
                }
                if (tb > 0 && (theirs_best < 0 || tb < theirs_best))
                    theirs_best = tb;
            }
            char rm[4200];
            snprintf(rm, sizeof rm, "rm -rf %s", dir);
            if (system(rm) != 0)
                fprintf(stderr, "bench_execute: could not remove %s\n", dir);
        }
        if (theirs > 0)
            printf("%-20s %12.3f %12.3f %7.2f %12.3f %12.3f %7.2f %12.2g\n",
                   cases[c].label, ours * 1e3, theirs * 1e3, ours / theirs,
                   ours_best * 1e3, theirs_best * 1e3, ours_best / theirs_best, err);
        else
            printf("%-20s %12.3f %12s %7s %12.3f %12s %7s %12s\n", cases[c].label,
                   ours * 1e3, "n/a", "n/a", ours_best * 1e3, "n/a", "n/a", "n/a");
        hs_tensor_free(out);
        hs_executable_release(exe);
        hs_model_free(m);
    }
    return 0;
}
