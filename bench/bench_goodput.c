/* bench_goodput - tracing-bound steps (hs_steps.h):
 *   (a) measured trace time per step against layer count, unrolled and
 *       scanned (128..: linear 64, batch 8, tpu-v5e): the median over the
 *       steady steps of re-tracing the model (hs_steps_run, cache hits);
 *   (b) goodput against the frontend's per-op overhead for
 *       examples/tracing_bound.json, unrolled and scanned: one run of N
 *       steps per loop mode measures trace and device times, then the
 *       overhead model is applied to those measured steps for each
 *       overhead (hs_steps_reschedule), so every column shares the same
 *       measurements.
 *
 *     build/bench/bench_goodput [steps]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_steps.h"

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_trace(const hs_steps_result *r)
{
    double v[4096];
    int n = 0;
    for (int64_t k = 1; k < r->n && n < 4096; k++)
        v[n++] = r->steps[k].trace_seconds + r->steps[k].lookup_seconds;
    qsort(v, (size_t)n, sizeof *v, cmp);
    return n ? v[n / 2] : 0;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf)
        buf[n] = '\0';
    *len = (size_t)n;
    return buf;
}

static int run(const char *json, size_t len, const hs_steps_options *o,
               hs_steps_result *r)
{
    hs_error err;
    if (hs_steps_run(json, len, o, r, &err) != HS_OK) {
        fprintf(stderr, "bench_goodput: %s\n", err.message);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    int steps = argc > 1 ? atoi(argv[1]) : 20;
    if (steps < 3)
        steps = 3;
    hs_steps_options o;
    hs_steps_options_init(&o);
    o.steps = steps;

    printf("# (a) host time per step (trace + cache lookup, median of steps "
           "2..%d) vs layers; linear 64, batch 8, tpu-v5e\n", steps);
    printf("%7s | %9s %10s %10s | %9s %10s %10s\n", "layers", "ops unrl",
           "trace ms", "dev ms", "ops scan", "trace ms", "dev ms");
    for (int layers = 16; layers <= 1024; layers *= 4) {
        char json[512];
        double t[2], d[2];
        long long ops[2];
        for (int s = 0; s < 2; s++) {
            snprintf(json, sizeof json,
                     "{\"name\": \"l%d\", \"input\": {\"shape\": [8, 64]},"
                     " \"layers\": [{\"repeat\": %d, \"block\": {\"type\":"
                     " \"linear\", \"features\": 64}}], \"loop\": \"%s\","
                     " \"device\": \"tpu-v5e\"}",
                     layers, layers, s ? "scan" : "unrolled");
            hs_steps_result r;
            if (run(json, strlen(json), &o, &r) != 0)
                return 1;
            t[s] = median_trace(&r);
            d[s] = r.steps[0].device_seconds;
            ops[s] = (long long)r.steps[1].traced_ops;
            hs_steps_result_free(&r);
        }
        printf("%7d | %9lld %10.3f %10.4f | %9lld %10.3f %10.4f\n", layers,
               ops[0], t[0] * 1e3, d[0] * 1e3, ops[1], t[1] * 1e3, d[1] * 1e3);
    }

    size_t len;
    char *tb = slurp(HS_SOURCE_DIR "/examples/tracing_bound.json", &len);
    if (!tb) {
        fprintf(stderr, "bench_goodput: cannot read examples/tracing_bound.json\n");
        return 1;
    }
    static const double us[] = {0, 0.5, 1, 2, 5, 10, 20, 50};
    enum { NU = sizeof us / sizeof us[0] };
    hs_steps_result r[2];
    for (int s = 0; s < 2; s++) {
        o.loop = s ? "scan" : "unrolled";
        if (run(tb, len, &o, &r[s]) != 0)
            return 1;
    }
    printf("\n# (b) goodput (steps 2..%d) vs frontend overhead per op (the "
           "model), examples/tracing_bound.json on %s, queue %d\n",
           steps, r[0].device, o.queue_depth);
    printf("# device %.3f ms/step (simulated); traced ops: unrolled %lld, scan "
           "%lld; measured host (trace + lookup, median) unrolled %.3f ms, "
           "scan %.3f ms\n",
           r[0].steps[0].device_seconds * 1e3, (long long)r[0].steps[1].traced_ops,
           (long long)r[1].steps[1].traced_ops, median_trace(&r[0]) * 1e3,
           median_trace(&r[1]) * 1e3);
    printf("%8s | %10s %8s %8s %-12s | %10s %8s %8s %-12s\n", "us/op",
           "host ms", "goodput", "mfu", "unrolled", "host ms", "goodput", "mfu",
           "scan");
    for (int u = 0; u < NU; u++) {
        printf("%8.1f |", us[u]);
        for (int s = 0; s < 2; s++) {
            hs_steps_result *x = &r[s];
            x->op_overhead_us = us[u];
            for (int64_t k = 0; k < x->n; k++)
                x->steps[k].overhead_seconds =
                    (double)x->steps[k].traced_ops * us[u] * 1e-6;
            hs_error err;
            if (hs_steps_reschedule(x, &err) != HS_OK)
                return 1;
            const hs_steps_summary *m = &x->summary;
            printf(" %10.3f %7.1f%% %7.2f%% %-12s |",
                   m->steady_host_seconds / (double)m->steady_steps * 1e3,
                   m->goodput * 100, m->mfu * 100,
                   m->host_bound ? "host-bound" : "device-bound");
        }
        printf("\n");
    }
    hs_steps_result_free(&r[0]);
    hs_steps_result_free(&r[1]);
    free(tb);
    return 0;
}
