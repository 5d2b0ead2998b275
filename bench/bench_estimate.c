/*
 * bench_estimate.c - hs_device_estimate on long loops: the run server's
 * FLOP and byte check walks a loop's body up to WALK_BUDGET instructions
 * before it extrapolates, so what one walked iteration costs is what a
 * hostile trip count can make a request cost before it runs.
 *
 *   build/bench/bench_estimate [REPS]    (default 5; median and min, ms)
 *
 * Cases (HLO text made here, estimated as parsed):
 *   dead_20k   a loop of 10 instructions per trip, 1,500,000 trips (walked,
 *              not extrapolated: under the budget), in a
 *              module of 20,000 other (dead) instructions
 *   fusion_500 a loop body holding one fusion of 500 adds, trip count
 *              1,000,000
 *   small      the same fusion loop, trip count 10 (the common case)
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_device.h"
#include "hloscope/hs_hlo_text.h"

typedef struct text {
    char *s;
    size_t n, cap;
} text;

static void put(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(text *t, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int k = vsnprintf(t->s + t->n, t->cap - t->n, fmt, ap);
        va_end(ap);
        if (t->n + (size_t)k < t->cap) {
            t->n += (size_t)k;
            return;
        }
        t->cap = 2 * t->cap + (size_t)k + 64;
        t->s = realloc(t->s, t->cap);
    }
}

/* A counted loop over (s32[], f32[64]) whose body runs `fused` adds in one
 * fusion (none: a plain add), with `dead` unused negates in the entry. */
static char *loop_module(long trip, int fused, int dead)
{
    text t = {0};
    put(&t, "HloModule bench\n\n");
    if (fused) {
        put(&t, "fused {\n  p = f32[64] parameter(0)\n  a0 = f32[64] add(p, p)\n");
        for (int k = 1; k < fused; k++)
            put(&t, "  a%d = f32[64] add(a%d, p)\n", k, k - 1);
        put(&t, "  ROOT r = f32[64] negate(a%d)\n}\n\n", fused - 1);
    }
    put(&t, "cond {\n  p = (s32[], f32[64]) parameter(0)\n"
            "  i = s32[] get-tuple-element(p), index=0\n"
            "  n = s32[] constant(%ld)\n"
            "  ROOT lt = pred[] compare(i, n), direction=LT\n}\n\n", trip);
    put(&t, "body {\n  p = (s32[], f32[64]) parameter(0)\n"
            "  i = s32[] get-tuple-element(p), index=0\n"
            "  x = f32[64] get-tuple-element(p), index=1\n"
            "  one = s32[] constant(1)\n  j = s32[] add(i, one)\n");
    if (fused)
        put(&t, "  y = f32[64] fusion(x), kind=kLoop, calls=fused\n");
    else
        put(&t, "  y = f32[64] add(x, x)\n");
    put(&t, "  ROOT t = (s32[], f32[64]) tuple(j, y)\n}\n\n");
    put(&t, "ENTRY main {\n  x = f32[64] parameter(0)\n");
    for (int k = 0; k < dead; k++)
        put(&t, "  d%d = f32[64] negate(x)\n", k);
    put(&t, "  z = s32[] constant(0)\n  t = (s32[], f32[64]) tuple(z, x)\n"
            "  ROOT w = (s32[], f32[64]) while(t), condition=cond, body=body, "
            "backend_config={\"known_trip_count\":{\"n\":\"%ld\"}}\n}\n", trip);
    return t.s;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 5;
    if (reps < 1 || reps > 1000)
        reps = 5;
    struct {
        const char *name;
        long trip;
        int fused, dead;
    } cases[] = {
        {"dead_20k", 1500000, 0, 20000},
        {"fusion_500", 1000000, 500, 0},
        {"small", 10, 500, 0},
    };
    printf("| case | instructions | trip count | estimate p50 ms | min ms | FLOPs |\n");
    printf("| --- | ---: | ---: | ---: | ---: | ---: |\n");
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char *src = loop_module(cases[c].trip, cases[c].fused, cases[c].dead);
        hs_error e;
        hs_module *m = hs_hlo_parse(src, strlen(src), &e);
        free(src);
        if (!m) {
            fprintf(stderr, "%s: %s\n", cases[c].name, e.message);
            return 1;
        }
        double *ms = malloc(sizeof *ms * (size_t)reps);
        hs_run_stats st;
        for (int r = 0; r < reps; r++) {
            int64_t t0 = hs_now_ns();
            if (hs_device_estimate(m, NULL, &st, &e) != HS_OK) {
                fprintf(stderr, "%s: %s\n", cases[c].name, e.message);
                return 1;
            }
            ms[r] = (double)(hs_now_ns() - t0) / 1e6;
        }
        qsort(ms, (size_t)reps, sizeof *ms, cmp_double);
        printf("| %s | %d | %ld | %.2f | %.2f | %.3g |\n", cases[c].name, m->next_id,
               cases[c].trip, ms[reps / 2], ms[0], st.flops);
        free(ms);
        hs_module_free(m);
    }
    return 0;
}
