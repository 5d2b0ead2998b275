/* bench_trace - tracing throughput: instructions traced per second for
 * decoder models of 8..128 layers (hidden 256), shapes only (no weights
 * drawn), best of several repetitions.
 *
 *     build/bench/bench_trace [reps]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "hloscope/hs_model.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 5;
    if (reps < 1)
        reps = 1;
    printf("# tracing throughput, decoder blocks (hidden 256, heads 4, mlp 1024), "
           "input [1,128,256], best of %d\n", reps);
    printf("%7s %13s %12s %14s %12s\n", "layers", "instructions", "trace ms",
           "instr/s (M)", "ns/instr");
    for (int layers = 8; layers <= 128; layers *= 2) {
        char json[512];
        int n = snprintf(json, sizeof json,
                         "{\"name\": \"decoder_%d\", \"input\": {\"shape\": [1, 128, 256]},"
                         " \"layers\": [{\"repeat\": %d, \"block\": {\"type\": \"decoder\","
                         " \"heads\": 4, \"hidden\": 1024}}]}",
                         layers, layers);
        hs_model_options o = {.shapes_only = true};
        double best = 1e30;
        long long instrs = 0;
        for (int r = 0; r < reps; r++) {
            hs_error e;
            double t0 = now();
            hs_model *m = hs_model_load(json, (size_t)n, &o, &e);
            double t = now() - t0;
            if (!m) {
                char msg[1024];
                hs_error_format(&e, msg, sizeof msg);
                fprintf(stderr, "bench_trace: %s\n", msg);
                return 1;
            }
            instrs = (long long)hs_module_instruction_count(m->module);
            hs_model_free(m);
            if (t < best)
                best = t;
        }
        printf("%7d %13lld %12.3f %14.2f %12.1f\n", layers, instrs, best * 1e3,
               (double)instrs / best / 1e6, best * 1e9 / (double)instrs);
    }
    return 0;
}
