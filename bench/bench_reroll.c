/* bench_reroll.c - reroll as scan (hs_whatif.h) measured on modules nobody
 * wrote for it: examples/decoder_50x256.json traced unrolled and dumped as
 * HLO text by hloscope, and the real Mixtral 8x7B train step of
 * ../shared/hlo-real (or the .hlo files given). For each: the layers found
 * (the largest run), instructions before and after, compile seconds before
 * and after (the default pipeline, no cache, the fastest of 10 compiles)
 * and their ratio, and the time of the analysis itself, wall and CPU (the
 * fastest of 3; it compiles the module as given once, shared by the
 * reroll, offload and sharding sections, and the rerolled module once; no
 * equivalence run). Every run of repeated layers is rerolled into its own
 * while; the runs are listed under the row. The first row is
 * the reference the goal is stated against: the same decoder traced by
 * hloscope with "loop": "scan" vs unrolled.
 *
 *     build/bench/bench_reroll [module.hlo ...]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hloscope/hs_compile.h"
#include "hloscope/hs_file.h"
#include "hloscope/hs_hlo_text.h"
#include "hloscope/hs_program.h"
#include "hloscope/hs_whatif.h"

#define DECODER HS_SOURCE_DIR "/examples/decoder_50x256.json"
#define MIXTRAL HS_SOURCE_DIR "/../shared/hlo-real/hlo_mixtral_8x7b_bf16_1x8.hlo"
#define TRIES 3
#define COMPILE_TRIES 10 /* sub-millisecond compiles need more to settle */

static void die(const char *what, const hs_error *e)
{
    fprintf(stderr, "bench_reroll: %s: %s\n", what, e->message);
    exit(1);
}

/* The decoder traced with the given loop, printed and parsed back. */
static hs_module *decoder(const char *loop)
{
    size_t len;
    hs_error e;
    char *json = hs_read_file(DECODER, &len, &e);
    if (!json)
        die(DECODER, &e);
    hs_program_options o;
    hs_program_options_init(&o);
    o.model.loop = loop;
    hs_program_source src = {.kind = HS_SOURCE_MODEL, .text = json,
                             .len = len};
    hs_program *p = hs_program_trace(&src, &o, &e);
    free(json);
    if (!p)
        die("trace", &e);
    char *text = hs_hlo_print(p->traced);
    hs_program_free(p);
    hs_module *m = hs_hlo_parse(text, strlen(text), &e);
    free(text);
    if (!m)
        die("parse", &e);
    return m;
}

static double compile_seconds(const hs_module *m)
{
    double best = 0;
    for (int k = 0; k < COMPILE_TRIES; k++) {
        hs_compile_options co;
        hs_compile_options_init(&co);
        co.device = hs_device_default_name();
        hs_executable *exe;
        hs_error e;
        int64_t t0 = hs_now_ns();
        if (hs_compile(m, &co, NULL, NULL, &exe, &e) != HS_OK)
            die("compile", &e);
        double s = (double)(hs_now_ns() - t0) / 1e9;
        hs_executable_release(exe);
        best = k == 0 || s < best ? s : best;
    }
    return best;
}

/* CPU seconds of the process: on a machine other jobs share, the wall
 * time of the analysis says how loaded it was as much as what it cost. */
static double cpu_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void row(const char *name, const hs_module *m)
{
    hs_whatif best = {0};
    double best_cpu = 0;
    for (int k = 0; k < TRIES; k++) {
        hs_whatif_options o;
        hs_whatif_options_init(&o);
        o.run_equivalence = false;
        hs_whatif w;
        hs_error e;
        double c0 = cpu_seconds();
        if (hs_whatif_analyse(m, &o, &w, &e) != HS_OK)
            die("whatif", &e);
        double cpu = cpu_seconds() - c0;
        best_cpu = k == 0 || cpu < best_cpu ? cpu : best_cpu;
        if (k == 0 || w.analysis_seconds < best.analysis_seconds) {
            if (k > 0)
                hs_whatif_free(&best);
            best = w;
        } else {
            hs_whatif_free(&w);
        }
    }
    const hs_whatif_scan *s = &best.scan;
    char layers[64] = "none";
    if (best.n_repeats > 0)
        snprintf(layers, sizeof layers, "%lld x %lld (%s)",
                 (long long)best.repeats[0].count,
                 (long long)best.repeats[0].block_instructions,
                 best.repeats[0].path);
    if (s->analysed) {
        double before = compile_seconds(m), after = compile_seconds(s->rerolled);
        printf("| %s | %s | %d | %lld | %lld | %.4f | %.4f | %.1f | %.3f | "
               "%.3f |\n",
               name, layers, s->loops, (long long)s->instructions_before,
               (long long)s->instructions_after, before, after, before / after,
               best.analysis_seconds, best_cpu);
        printf("\n");
        for (int k = 0; k < s->n_runs; k++)
            printf("  %s (%lld layers): %s %lld; %s\n", s->runs[k].path,
                   (long long)s->runs[k].layers,
                   s->runs[k].rerolled ? "rerolled" : "not rerolled",
                   (long long)s->runs[k].layers_rerolled, s->runs[k].note);
        printf("\n");
    }
    else
        printf("| %s | %s | 0 | %lld | not rerolled | | | | %.3f | %.3f |\n"
               "\n  why: %s\n\n",
               name, layers, (long long)hs_module_instruction_count(m),
               best.analysis_seconds, best_cpu, s->reason);
    hs_whatif_free(&best);
}

int main(int argc, char **argv)
{
    hs_module *unrolled = decoder("unrolled"), *scan = decoder("scan");
    double cu = compile_seconds(unrolled), cs = compile_seconds(scan);
    printf("reference: decoder_50x256 traced by hloscope, unrolled %lld "
           "instructions compile %.4f s, \"loop\": \"scan\" %lld "
           "instructions compile %.4f s, ratio %.0f\n\n",
           (long long)hs_module_instruction_count(unrolled), cu,
           (long long)hs_module_instruction_count(scan), cs, cu / cs);
    printf("| module | layers found (largest run) | loops | instructions "
           "before | after | compile s before | after | ratio | analysis s "
           "| analysis CPU s |\n"
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
    row("decoder_50x256 (dumped unrolled)", unrolled);
    hs_module_free(unrolled);
    hs_module_free(scan);
    const char *files[64];
    int n = 0;
    for (int k = 1; k < argc && n < 64; k++)
        files[n++] = argv[k];
    if (n == 0)
        files[n++] = MIXTRAL;
    for (int k = 0; k < n; k++) {
        size_t len;
        hs_error e;
        char *text = hs_read_file(files[k], &len, &e);
        if (!text)
            die(files[k], &e);
        hs_module *m = hs_hlo_parse(text, len, &e);
        free(text);
        if (!m)
            die(files[k], &e);
        const char *base = strrchr(files[k], '/');
        row(base ? base + 1 : files[k], m);
        hs_module_free(m);
    }
    return 0;
}
