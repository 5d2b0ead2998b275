/*
 * bench_offload.c - residual policies of a scanned decoder's training step
 * against depth: device peak, host peak, simulated step time and exposed
 * host-transfer time for save, remat, offload, remat_offload and auto,
 * L = 8 ... 128.
 *
 * The model is decoder_50x256's layer (hidden 256, 4 heads, gated SiLU MLP
 * of 688, sequence 128), Adam, one step, loop "scan". Every figure in the
 * table comes from compiling the step (shapes only, no data): buffer
 * assignment's peaks and hs_device_estimate's clock, which is the run's
 * clock without running. For L <= 32 the four policies' steps also run on
 * real data: losses and updated parameters must be bit-identical, the run's
 * simulated time must equal the estimate and its device peak must not
 * exceed the compiled one.
 *
 * Whether a policy's transfers can hide behind compute is judged per
 * layer: the copy of one layer's residuals (each way) against the layer's
 * forward compute (the forward model alone, compiled and estimated), the
 * shorter of the two passes a copy overlaps. Where the copy is longer, the
 * forward pass is transfer-bound: the goal (offloading's step at most
 * 1.15 x save's) applies where the copies can overlap compute.
 *
 * auto plans for a budget: by default the midpoint between offload's and
 * save's compiled peaks at each L (so that save never fits and auto has to
 * choose), or a fixed one with --budget BYTES; --device NAME (default
 * tpu-v5e).
 *
 *     build/bench/bench_offload [--device NAME] [--budget BYTES] [--no-run]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hloscope/hs_compile.h"
#include "hloscope/hs_train.h"

static const char *model_fmt =
    "{\"name\":\"bench-offload\",\"seed\":3,"
    "\"input\":{\"shape\":[1,128,%d]},"
    "\"layers\":[{\"repeat\":%d,\"block\":{\"type\":\"decoder\",\"heads\":%d,"
    "\"hidden\":%d}}],\"loop\":\"scan\",\"residuals\":\"%s\","
    "\"train\":{\"loss\":\"mse\",\"target\":\"random\","
    "\"optimizer\":{\"type\":\"adam\",\"lr\":0.001},\"steps\":1},"
    "\"device\":\"%s\"}";

enum { N_POL = 5, P_SAVE = 0, P_OFFLOAD = 2, P_REMAT_OFFLOAD = 3, P_AUTO = 4 };
static const char *const pol_name[N_POL] = {"save", "remat", "offload",
                                            "remat_offload", "auto"};

typedef struct figures {
    int64_t peak, host_peak;
    hs_run_stats est;
    int64_t params, state;   /* bytes of parameters, optimizer state */
    int64_t act_per_layer;   /* residual bytes one layer saves (save) */
    char choice[2048];
    char peak_at[160];       /* where the device peak is */
    double seconds;          /* host time to build and compile */
    double fwd_seconds;      /* the forward model alone (estimate) */
} figures;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The model's width: hidden 256, 4 heads, MLP 688 unless a wider one is
 * measured (heads of 64, MLP 2.6875 x hidden, as decoder_50x256). */
static int g_hidden = 256;

static hs_model *load(int L, int p, const char *device, bool shapes)
{
    char json[1024];
    int mlp = g_hidden == 256 ? 688 : g_hidden * 43 / 16;
    snprintf(json, sizeof json, model_fmt, g_hidden, L, g_hidden / 64, mlp,
             pol_name[p], device);
    hs_model_options mo = {.shapes_only = shapes};
    hs_error err;
    hs_model *m = hs_model_load(json, strlen(json), &mo, &err);
    if (!m) {
        fprintf(stderr, "load: %s\n", err.message);
        exit(1);
    }
    return m;
}

static hs_train_step *build(hs_model *m, int64_t budget)
{
    hs_train_options to = {.auto_hbm_bytes = budget};
    hs_error err;
    hs_train_step *ts = hs_train_step_build(m, &to, &err);
    if (!ts) {
        fprintf(stderr, "build: %s\n", err.message);
        exit(1);
    }
    return ts;
}

static hs_executable *compile_module(hs_module *module, const char *device)
{
    hs_compile_options co;
    hs_compile_options_init(&co);
    co.device = device;
    hs_executable *exe;
    hs_error err;
    if (hs_compile(module, &co, NULL, NULL, &exe, &err) != HS_OK) {
        fprintf(stderr, "compile: %s\n", err.message);
        exit(1);
    }
    return exe;
}

static hs_executable *compile(const hs_train_step *ts, const char *device)
{
    return compile_module(ts->module, device);
}

static void measure(int L, int p, const char *device, int64_t budget,
                    figures *f)
{
    double t0 = now();
    hs_model *m = load(L, p, device, true);
    hs_train_step *ts = build(m, budget);
    hs_executable *exe = compile(ts, device);
    const hs_buffer_assignment *ba = hs_executable_buffers(exe);
    memset(f, 0, sizeof *f);
    hs_buffer_peak pk = hs_buffers_peak(ba, HS_MEMSPACE_DEVICE);
    f->peak = pk.bytes;
    snprintf(f->peak_at, sizeof f->peak_at, "%s%s%s",
             pk.instruction ? pk.instruction->name : "?",
             pk.inner && pk.inner != pk.instruction ? " > " : "",
             pk.inner && pk.inner != pk.instruction
                 ? (pk.inner->op_name ? pk.inner->op_name : pk.inner->name)
                 : "");
    f->host_peak = hs_buffers_peak(ba, HS_MEMSPACE_HOST).bytes;
    hs_error err;
    if (hs_device_estimate(hs_executable_module(exe), hs_device_find(device),
                           &f->est, &err) != HS_OK) {
        fprintf(stderr, "estimate: %s\n", err.message);
        exit(1);
    }
    for (int k = 0; k < ts->n_params; k++)
        f->params += hs_shape_bytes(&ts->param_shapes[k]);
    for (int k = 0; k < ts->n_state; k++)
        f->state += hs_shape_bytes(&ts->state_shapes[k]);
    if (ts->scan_report && p == P_SAVE)
        f->act_per_layer = ts->scan_report->device_bytes / L;
    if (ts->auto_choice)
        snprintf(f->choice, sizeof f->choice, "%s", ts->auto_choice->text);
    f->seconds = now() - t0;
    hs_executable_release(exe);
    /* The forward pass alone, for what a layer's copy can hide behind. */
    hs_executable *fx = compile_module(m->module, device);
    hs_run_stats fs;
    if (hs_device_estimate(hs_executable_module(fx), hs_device_find(device),
                           &fs, &err) != HS_OK) {
        fprintf(stderr, "estimate: %s\n", err.message);
        exit(1);
    }
    f->fwd_seconds = fs.sim_seconds;
    hs_executable_release(fx);
    hs_train_step_free(ts);
    hs_model_free(m);
}

/* One real step per policy: bit-identical results, the estimate is the
 * run's clock, the compiled peak bounds the run's. */
static bool run_check(int L, const char *device, const int64_t *budget,
                      const figures *f, char *why, size_t size)
{
    float loss[N_POL];
    hs_tensor **upd[N_POL] = {0};
    int n = 0;
    bool ok = true;
    why[0] = 0;
    for (int p = 0; p < N_POL; p++) {
        hs_model *m = load(L, p, device, false);
        hs_train_step *ts = build(m, budget[p]);
        hs_executable *exe = compile(ts, device);
        hs_train_run_options ro = {.steps = 1,
                                   .module = hs_executable_module(exe)};
        hs_train_result r;
        hs_error err;
        if (hs_train_run(ts, hs_device_find(device), &ro, &r, &err) !=
            HS_OK) {
            fprintf(stderr, "run L=%d %s: %s\n", L, pol_name[p], err.message);
            exit(1);
        }
        loss[p] = r.losses[0];
        n = r.n_params;
        upd[p] = r.updated;
        r.updated = NULL;
        if (r.last.sim_seconds != f[p].est.sim_seconds ||
            r.last.exposed_transfer_seconds !=
                f[p].est.exposed_transfer_seconds) {
            ok = false;
            snprintf(why, size, "%s: run %.6f s vs estimate %.6f s",
                     pol_name[p], r.last.sim_seconds, f[p].est.sim_seconds);
        }
        /* Donated arguments leave the device at their last use and the
         * optimizer's fusions write over them, as buffer assignment
         * plans: the compiled peak bounds the run's. */
        if (r.last.peak_device_bytes > f[p].peak) {
            ok = false;
            snprintf(why, size, "%s: run peak %lld > compiled %lld",
                     pol_name[p], (long long)r.last.peak_device_bytes,
                     (long long)f[p].peak);
        }
        hs_train_result_free(&r);
        hs_executable_release(exe);
        hs_train_step_free(ts);
        hs_model_free(m);
    }
    for (int p = 1; p < N_POL; p++) {
        bool same = memcmp(&loss[0], &loss[p], sizeof loss[0]) == 0;
        for (int k = 0; same && k < n; k++)
            same = memcmp(upd[0][k]->data, upd[p][k]->data,
                          (size_t)hs_shape_bytes(&upd[0][k]->shape)) == 0;
        if (!same) {
            ok = false;
            snprintf(why, size, "%s differs from save", pol_name[p]);
        }
    }
    if (ok)
        snprintf(why, size, "loss %.9g", (double)loss[0]);
    for (int p = 0; p < N_POL; p++)
        hs_tensors_free(upd[p], n);
    return ok;
}

static const char *mib(int64_t b, char *buf)
{
    sprintf(buf, "%.2f", (double)b / (1024.0 * 1024.0));
    return buf;
}

/* Per layer: the copy of one layer's stacked values, each way, and the
 * layer's forward compute it can hide behind. */
static double copy_per_layer(const figures *f, int L)
{
    return f->est.host_transfer_seconds / (2.0 * L);
}

static void print_overlap(const char *what, const figures *s,
                          const figures *o, int L)
{
    double t = copy_per_layer(o, L), fw = o->fwd_seconds / L;
    double ratio = o->est.sim_seconds / s->est.sim_seconds;
    if (t <= fw) {
        printf("%4d  %-13s %5.2fx %-6s  copy %.4f ms <= forward %.4f ms per "
               "layer: overlappable; %.3f of %.3f ms exposed\n",
               L, what, ratio, ratio <= 1.15 ? "met" : "MISSED", t * 1e3,
               fw * 1e3, o->est.exposed_transfer_seconds * 1e3,
               o->est.host_transfer_seconds * 1e3);
    } else {
        printf("%4d  %-13s %5.2fx n/a     copy %.4f ms > forward %.4f ms per "
               "layer: transfer-bound (%.1fx); %.3f of %.3f ms exposed\n",
               L, what, ratio, t * 1e3, fw * 1e3, t / fw,
               o->est.exposed_transfer_seconds * 1e3,
               o->est.host_transfer_seconds * 1e3);
    }
}

int main(int argc, char **argv)
{
    const char *device = "tpu-v5e";
    int64_t fixed_budget = 0;
    bool run = true;
    for (int a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--device") == 0 && a + 1 < argc)
            device = argv[++a];
        else if (strcmp(argv[a], "--budget") == 0 && a + 1 < argc)
            fixed_budget = atoll(argv[++a]);
        else if (strcmp(argv[a], "--no-run") == 0)
            run = false;
        else {
            fprintf(stderr, "usage: %s [--device NAME] [--budget BYTES] "
                            "[--no-run]\n", argv[0]);
            return 2;
        }
    }
    const hs_device_spec *spec = hs_device_find(device);
    if (!spec) {
        fprintf(stderr, "unknown device %s\n", device);
        return 2;
    }
    static const int Ls[] = {8, 16, 32, 64, 128};
    enum { NL = sizeof Ls / sizeof Ls[0] };
    static figures F[NL][N_POL];
    static int64_t budget[NL];
    printf("bench_offload: decoder hidden 256, 4 heads, MLP 688, seq 128, "
           "Adam, loop scan, on %s (HBM %.0f GB/s, host link %.0f GB/s, "
           "%.0f TFLOP/s)\n",
           device, spec->hbm_bandwidth / 1e9,
           spec->host_link_bandwidth / 1e9, spec->peak_flops / 1e12);
    printf("figures from compiling each step (buffer assignment, "
           "hs_device_estimate); MiB; auto's budget: %s\n\n",
           fixed_budget ? "fixed (--budget)"
                        : "midpoint of remat_offload's and save's peaks");
    printf("%4s  %-13s %10s %10s %11s %11s %11s %8s %7s\n", "L", "policy",
           "dev peak", "host peak", "step ms", "xfer ms", "exposed ms",
           "vs save", "compile");
    for (int l = 0; l < NL; l++) {
        int L = Ls[l];
        for (int p = 0; p < P_AUTO; p++)
            measure(L, p, device, 0, &F[l][p]);
        budget[l] = fixed_budget ? fixed_budget
                                 : (F[l][P_SAVE].peak +
                                    F[l][P_REMAT_OFFLOAD].peak) / 2;
        measure(L, P_AUTO, device, budget[l], &F[l][P_AUTO]);
        for (int p = 0; p < N_POL; p++) {
            const figures *f = &F[l][p];
            char a[32], b[32];
            printf("%4d  %-13s %10s %10s %11.3f %11.3f %11.3f %7.2fx %6.2fs\n",
                   L, pol_name[p], mib(f->peak, a), mib(f->host_peak, b),
                   f->est.sim_seconds * 1e3,
                   f->est.host_transfer_seconds * 1e3,
                   f->est.exposed_transfer_seconds * 1e3,
                   f->est.sim_seconds / F[l][P_SAVE].est.sim_seconds,
                   f->seconds);
        }
        char bb[32];
        printf("      auto (budget %s MiB): %s\n", mib(budget[l], bb),
               F[l][P_AUTO].choice);
    }

    /* Goals. */
    printf("\ngoal 1: with offloading, the device peak within params + "
           "grads + Adam state + 3 layers of activations, and flat in L\n");
    printf("%4s  %-13s %10s %10s %10s %10s %7s %15s  %s\n", "L", "policy",
           "peak", "P+G+S", "3 layers", "bound", "within", "peak - (P+G+S)",
           "peak at");
    static const int off_pols[] = {P_OFFLOAD, P_REMAT_OFFLOAD};
    for (int q = 0; q < 2; q++) {
        for (int l = 0; l < NL; l++) {
            const figures *f = &F[l][off_pols[q]];
            int64_t pgs = 2 * f->params + f->state;
            int64_t three = 3 * F[l][P_SAVE].act_per_layer;
            char a[32], b[32], c[32], d[32], e[32];
            printf("%4d  %-13s %10s %10s %10s %10s %7s %15s  %s\n", Ls[l],
                   pol_name[off_pols[q]], mib(f->peak, a), mib(pgs, b),
                   mib(three, c), mib(pgs + three, d),
                   f->peak <= pgs + three ? "yes" : "NO",
                   mib(f->peak - pgs, e), f->peak_at);
        }
    }
    printf("\ngoal 2: offloading's simulated step <= 1.15 x save's where the "
           "transfers can overlap compute\n");
    for (int q = 0; q < 2; q++)
        for (int l = 0; l < NL; l++)
            print_overlap(pol_name[off_pols[q]], &F[l][P_SAVE],
                          &F[l][off_pols[q]], Ls[l]);
    /* The same for wider layers (estimates only): per token, a layer's
     * FLOPs grow with hidden^2 and its residual bytes with hidden, so the
     * copies of every residual hide behind compute from some width on. */
    printf("      wider layers, L = 8 (heads of 64, MLP 2.6875 x hidden, "
           "estimates only):\n");
    static const int widths[] = {512, 1024, 2048, 3072};
    for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++) {
        g_hidden = widths[w];
        figures s, o;
        measure(8, P_SAVE, device, 0, &s);
        for (int q = 0; q < 2; q++) {
            measure(8, off_pols[q], device, 0, &o);
            char what[48];
            snprintf(what, sizeof what, "h%d %s", widths[w],
                     q ? "rm_off" : "offload");
            print_overlap(what, &s, &o, 8);
        }
    }
    g_hidden = 256;
    printf("\ngoal 3: bit-identical results across the five policies (real "
           "steps, L <= 32)\n");
    int bad = 0;
    for (int l = 0; run && l < NL && Ls[l] <= 32; l++) {
        int64_t b[N_POL] = {0, 0, 0, 0, budget[l]};
        char why[256];
        bool ok = run_check(Ls[l], device, b, F[l], why, sizeof why);
        printf("%4d  %s (%s; run clock = estimate, run peak <= compiled)\n",
               Ls[l], ok ? "bit-identical" : "MISMATCH", why);
        bad += !ok;
    }
    if (!run)
        printf("      skipped (--no-run)\n");
    return bad ? 1 : 0;
}
