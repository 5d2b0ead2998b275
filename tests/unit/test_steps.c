/* test_steps.c - tracing-bound steps: the two-lane schedule and its queue
 * bound, goodput and MFU on synthetic timings, the frontend overhead
 * model, and the driver on real models (re-tracing every step through the
 * compile cache, device idle for a tracing-bound and a device-bound model,
 * stopping at a deadline or a cancel flag). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_passes.h"
#include "hloscope/hs_render.h"
#include "hloscope/hs_steps.h"

#define EPS 1e-12

static void schedule(const hs_step_timing *t, int64_t n, int depth, hs_step_slot *s)
{
    hs_error err;
    assert_int_equal(hs_steps_schedule(t, n, depth, s, &err), HS_OK);
}

/* Host 1 s (step 1: 10 s with its compile), device 2 s: the device never
 * waits after step 1, goodput 1. */
static void device_bound_goodput_is_one(void **state)
{
    (void)state;
    hs_step_timing t[6];
    for (int k = 0; k < 6; k++)
        t[k] = (hs_step_timing){k == 0 ? 10 : 1, 2};
    hs_step_slot s[6];
    schedule(t, 6, 2, s);
    assert_true(fabs(s[0].device_start - 10) < EPS);
    assert_true(fabs(s[0].device_idle - 10) < EPS);
    for (int k = 1; k < 6; k++) {
        assert_true(s[k].device_idle == 0);
        assert_true(fabs(s[k].device_start - s[k - 1].device_end) < EPS);
        assert_true(fabs(s[k].wall_seconds - 2) < EPS);
    }
    hs_steps_summary sum;
    hs_steps_summarize(t, s, 6, 4e12, 1e13, &sum);
    assert_int_equal(sum.steady_steps, 5);
    assert_true(fabs(sum.steady_wall_seconds - 10) < EPS);
    assert_true(fabs(sum.goodput - 1) < EPS);
    assert_true(sum.steady_idle_seconds == 0);
    /* MFU = 4e12 FLOP / (2 s x 1e13 FLOP/s) */
    assert_true(fabs(sum.mfu - 0.2) < EPS);
    assert_false(sum.host_bound);
    assert_true(fabs(sum.makespan_seconds - 22) < EPS);
}

/* Host 3 s, device 1 s: every steady step takes 3 s of wall time, the
 * device idles 2 s of them; goodput 1/3, step 1's compile excluded. */
static void tracing_bound_goodput_is_device_over_host(void **state)
{
    (void)state;
    hs_step_timing t[5];
    for (int k = 0; k < 5; k++)
        t[k] = (hs_step_timing){k == 0 ? 30 : 3, 1};
    hs_step_slot s[5];
    schedule(t, 5, 2, s);
    for (int k = 1; k < 5; k++) {
        assert_true(fabs(s[k].device_idle - 2) < EPS);
        assert_true(fabs(s[k].wall_seconds - 3) < EPS);
        assert_true(s[k].host_wait == 0); /* the host never waits */
    }
    hs_steps_summary sum;
    hs_steps_summarize(t, s, 5, 1e12, 1e12, &sum);
    assert_true(fabs(sum.goodput - 1.0 / 3) < 1e-9);
    assert_true(fabs(sum.steady_idle_seconds - 8) < 1e-9);
    assert_true(fabs(sum.mfu - 1.0 / 3) < 1e-9);
    assert_true(sum.host_bound);
    /* over all steps the compile would weigh in: 5 / 43 */
    assert_true(fabs(s[4].device_end - 43) < 1e-9);
}

static uint64_t rng = 88172645463325252ull;
static double uniform(double lo, double hi)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return lo + (hi - lo) * (double)(rng >> 11) * 0x1p-53;
}

/* At every hand-over at most D steps are in flight (dispatched, not done
 * on the device), whatever the timings; the device runs steps in order,
 * one at a time, never before they are handed over. */
static void host_never_more_than_depth_ahead(void **state)
{
    (void)state;
    enum { N = 200 };
    hs_step_timing t[N];
    hs_step_slot s[N];
    for (int depth = 1; depth <= 4; depth++) {
        for (int k = 0; k < N; k++)
            t[k] = (hs_step_timing){uniform(0, 2), uniform(0, 2)};
        schedule(t, N, depth, s);
        for (int k = 0; k < N; k++) {
            int in_flight = 1; /* step k itself */
            for (int j = 0; j < k; j++)
                if (s[j].device_end > s[k].enqueue + EPS)
                    in_flight++;
            assert_true(in_flight <= depth);
            assert_true(s[k].device_start >= s[k].enqueue - EPS);
            assert_true(fabs(s[k].enqueue - s[k].host_end - s[k].host_wait) < 1e-9);
            if (k) {
                assert_true(s[k].device_start >= s[k - 1].device_end - EPS);
                assert_true(fabs(s[k].host_start - s[k - 1].enqueue) < EPS);
            }
        }
    }
    /* depth 0: synchronous, the host waits for every step */
    for (int k = 0; k < N; k++)
        t[k] = (hs_step_timing){uniform(0, 2), uniform(0, 2)};
    schedule(t, N, 0, s);
    for (int k = 1; k < N; k++) {
        assert_true(fabs(s[k].host_start - s[k - 1].device_end) < EPS);
        assert_true(fabs(s[k].device_idle - t[k].host_seconds) < 1e-9);
    }
}

/* A deeper queue hides a burst of slow traces that a shallow one cannot:
 * host 0.5 s except every fourth step 2 s, device 1 s. */
static void deeper_queue_absorbs_bursts(void **state)
{
    (void)state;
    enum { N = 41 };
    hs_step_timing t[N];
    for (int k = 0; k < N; k++)
        t[k] = (hs_step_timing){k % 4 == 3 ? 2.0 : 0.5, 1};
    hs_step_slot s[N];
    hs_steps_summary g1, g4;
    schedule(t, N, 1, s);
    hs_steps_summarize(t, s, N, 0, 0, &g1);
    schedule(t, N, 4, s);
    hs_steps_summarize(t, s, N, 0, 0, &g4);
    assert_true(g1.goodput < 0.95);
    assert_true(g4.goodput > g1.goodput);
    assert_true(g4.goodput > 0.999);
}

static void schedule_rejects_bad_timings(void **state)
{
    (void)state;
    hs_step_timing t[2] = {{1, 1}, {-1, 1}};
    hs_step_slot s[2];
    hs_error err;
    assert_int_equal(hs_steps_schedule(t, 2, 2, s, &err), HS_ERR_INVALID);
    assert_non_null(strstr(err.message, "step 2"));
    t[1] = (hs_step_timing){1, NAN};
    assert_int_equal(hs_steps_schedule(t, 2, 2, s, &err), HS_ERR_INVALID);
    assert_int_equal(hs_steps_schedule(t, 1, -1, s, &err), HS_ERR_INVALID);
    assert_int_equal(hs_steps_schedule(NULL, 0, 2, NULL, &err), HS_OK);
}

static void frontend_presets_are_labelled(void **state)
{
    (void)state;
    int n;
    const hs_frontend_preset *p = hs_frontend_presets(&n);
    assert_true(n >= 3);
    assert_true(hs_frontend_find("hloscope")->op_overhead_us == 0);
    assert_true(hs_frontend_find("lazy-tensor")->op_overhead_us > 0);
    assert_true(hs_frontend_find("eager-python")->op_overhead_us >
                hs_frontend_find("lazy-tensor")->op_overhead_us);
    assert_null(hs_frontend_find("jax"));
    for (int k = 0; k < n; k++)
        assert_true(p[k].basis && strlen(p[k].basis) > 10);
}

/* ---- the driver on real models ------------------------------------------ */

/* 128 linear layers of 64 on a batch of 2048, on the slow teaching device:
 * ~35 ms of simulated device time per step, little real work. */
static const char *model_json(const char *loop)
{
    static char buf[512];
    snprintf(buf, sizeof buf,
             "{\"name\": \"steps-test\", \"input\": {\"shape\": [2048, 64]},"
             " \"layers\": [{\"repeat\": 128, \"block\": {\"type\": \"linear\","
             " \"features\": 64}}], \"loop\": \"%s\", \"device\": \"teach-64m\","
             " \"train\": {\"loss\": \"mse\", \"optimizer\": {\"type\": \"sgd\","
             " \"lr\": 0.01}}}",
             loop);
    return buf;
}

static void run(const char *json, const hs_steps_options *o, hs_steps_result *r)
{
    hs_error err;
    hs_error_clear(&err);
    if (hs_steps_run(json, strlen(json), o, r, &err) != HS_OK)
        fail_msg("hs_steps_run: %s", err.message);
}

/* Over N steps the graph is traced N times and compiled once: one
 * UncachedCompile, N-1 CachedCompile, one fingerprint. */
static void compile_cache_counts_one_miss_then_hits(void **state)
{
    (void)state;
    hs_metrics *met = hs_metrics_new();
    hs_steps_options o;
    hs_steps_options_init(&o);
    o.steps = 6;
    o.metrics = met;
    hs_steps_result r;
    run(model_json("scan"), &o, &r);
    assert_int_equal(hs_metrics_counter(met, HS_METRIC_UNCACHED_COMPILE), 1);
    assert_int_equal(hs_metrics_counter(met, HS_METRIC_CACHED_COMPILE), 5);
    assert_int_equal(hs_metrics_timing(met, HS_METRIC_TRACE_TIME).count, 6);
    assert_int_equal(r.uncached_compiles, 1);
    assert_int_equal(r.cached_compiles, 5);
    assert_false(r.steps[0].cache_hit);
    assert_true(r.steps[0].compile_seconds > 0);
    assert_true(r.steps[0].device_measured);
    for (int k = 1; k < 6; k++) {
        assert_true(r.steps[k].cache_hit);
        assert_true(r.steps[k].compile_seconds == 0);
        assert_true(r.steps[k].lookup_seconds > 0);
        assert_true(r.steps[k].trace_seconds > 0);
        assert_true(r.steps[k].fingerprint == r.steps[0].fingerprint);
        assert_false(r.steps[k].device_measured);
        assert_true(r.steps[k].device_seconds == r.steps[0].device_seconds);
    }
    hs_steps_result_free(&r);
    hs_metrics_free(met);
}

/* Scanned, with hloscope's own tracing: the host is far ahead, the device
 * never idles after step 1. Unrolled with a 100 us/op frontend: the host
 * takes ~64 ms per step for ~35 ms of device work, the device idles. */
static void device_idles_only_when_tracing_bound(void **state)
{
    (void)state;
    hs_steps_options o;
    hs_steps_options_init(&o);
    o.steps = 6;
    hs_steps_result fast, slow;
    run(model_json("scan"), &o, &fast);
    assert_true(fast.steps[0].device_seconds > 0.01);
    assert_true(fast.steps[1].traced_ops < 64);
    assert_true(fast.summary.steady_idle_seconds == 0);
    assert_true(fabs(fast.summary.goodput - 1) < 1e-9);
    assert_false(fast.summary.host_bound);
    assert_true(fast.summary.mfu > 0 && fast.summary.mfu < 1);

    o.op_overhead_us = 100;
    o.execute = HS_STEPS_EXECUTE_ALL;
    run(model_json("unrolled"), &o, &slow);
    assert_true(slow.steps[1].traced_ops > 128 * 4);
    assert_true(slow.steps[1].device_measured);
    assert_true(fabs(slow.steps[1].overhead_seconds -
                     (double)slow.steps[1].traced_ops * 100e-6) < 1e-12);
    assert_true(slow.summary.steady_idle_seconds > 0);
    assert_true(slow.summary.goodput < 0.95);
    assert_true(slow.summary.host_bound);
    for (int k = 1; k < 6; k++)
        assert_true(slow.steps[k].slot.device_idle > 0);
    /* the same FLOPs either way; MFU follows goodput */
    assert_true(fabs(slow.steps[1].flops - fast.steps[1].flops) <=
                1e-6 * fast.steps[1].flops);
    assert_true(slow.summary.mfu < fast.summary.mfu);
    hs_steps_result_free(&fast);
    hs_steps_result_free(&slow);
}

/* The training step re-traced (forward, autodiff, optimizer) each step,
 * and the outputs: JSON and the Gantt chart. */
static void training_steps_json_and_chart(void **state)
{
    (void)state;
    hs_steps_options o;
    hs_steps_options_init(&o);
    o.steps = 3;
    o.train = true;
    o.batch = 64;
    o.frontend = "lazy-tensor";
    o.op_overhead_us = 5;
    hs_steps_result r;
    run(model_json("scan"), &o, &r);
    assert_true(r.train);
    assert_int_equal(r.uncached_compiles, 1);
    assert_int_equal(r.cached_compiles, 2);
    char *text = hs_steps_json(&r);
    assert_non_null(text);
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "mode")), "train");
    assert_string_equal(json_string_value(json_object_get(j, "loop")), "scan");
    json_t *fe = json_object_get(j, "frontend");
    assert_string_equal(json_string_value(json_object_get(fe, "name")), "lazy-tensor");
    assert_true(json_is_true(json_object_get(fe, "model")));
    assert_int_equal(json_array_size(json_object_get(j, "steps")), 3);
    json_t *s1 = json_array_get(json_object_get(j, "steps"), 1);
    assert_true(json_is_true(json_object_get(s1, "cache_hit")));
    assert_int_equal(strlen(json_string_value(json_object_get(s1, "fingerprint"))), 16);
    assert_non_null(json_object_get(json_object_get(j, "summary"), "verdict"));
    json_decref(j);
    free(text);

    hs_gantt_segment *seg;
    char *labels;
    int64_t n = hs_steps_gantt_segments(&r, &seg, &labels);
    assert_true(n >= 3 * 3); /* trace, overhead, execute at least */
    int compiles = 0, executes = 0;
    for (int64_t k = 0; k < n; k++) {
        compiles += strcmp(seg[k].kind, "compile") == 0;
        executes += seg[k].lane == HS_GANTT_DEVICE && strcmp(seg[k].kind, "execute") == 0;
    }
    assert_int_equal(compiles, 1);
    assert_int_equal(executes, 3);
    free(seg);
    free(labels);
    char *dot = NULL;
    hs_error err;
    assert_int_equal(hs_steps_dot(&r, &dot, NULL, &err), HS_OK);
    assert_non_null(strstr(dot, "goodput"));
    free(dot);
    char *svg = NULL;
    assert_int_equal(hs_steps_svg(&r, 0, &svg, NULL, &err), HS_OK);
    assert_non_null(strstr(svg, "<svg"));
    free(svg);
    hs_steps_result_free(&r);
}

static void driver_rejects_bad_options(void **state)
{
    (void)state;
    hs_steps_options o;
    hs_steps_options_init(&o);
    hs_steps_result r;
    hs_error err;
    const char *json = model_json("scan");
    o.steps = 0;
    assert_int_equal(hs_steps_run(json, strlen(json), &o, &r, &err), HS_ERR_INVALID);
    o.steps = 2;
    o.op_overhead_us = -1;
    assert_int_equal(hs_steps_run(json, strlen(json), &o, &r, &err), HS_ERR_INVALID);
    o.op_overhead_us = 0;
    o.device = "tpu-v9";
    assert_int_equal(hs_steps_run(json, strlen(json), &o, &r, &err), HS_ERR_INVALID);
    o.device = NULL;
    const char *no_train = "{\"input\": {\"shape\": [2, 4]}, \"layers\": "
                           "[{\"type\": \"linear\", \"features\": 4}]}";
    o.train = true;
    assert_int_not_equal(hs_steps_run(no_train, strlen(no_train), &o, &r, &err), HS_OK);
    assert_null(r.steps);
}

/* "<what> after K of N steps": K, or -1 when the message has another form. */
static long long steps_done(const char *message, const char *what, long long n)
{
    char want[128];
    long long k = -1, of = -1;
    snprintf(want, sizeof want, "%s after %%lld of %%lld steps", what);
    if (sscanf(message, want, &k, &of) != 2 || of != n)
        return -1;
    return k;
}

/* A deadline already past, or a cancel flag already set: nothing is run
 * (no step completes), the result is empty, the message says 0 of N. */
static void stopped_before_the_first_step(void **state)
{
    (void)state;
    const char *json = model_json("scan");
    hs_steps_options o;
    hs_steps_options_init(&o);
    o.steps = 5;
    o.deadline_ns = hs_now_ns() - 1;
    hs_steps_result r;
    hs_error err;
    hs_error_clear(&err);
    assert_int_equal(hs_steps_run(json, strlen(json), &o, &r, &err), HS_ERR_CANCELLED);
    assert_int_equal(steps_done(err.message, "deadline exceeded", 5), 0);
    assert_null(r.steps);
    assert_int_equal(r.n, 0);

    atomic_bool cancel = true;
    o.deadline_ns = 0;
    o.cancel = &cancel;
    hs_error_clear(&err);
    assert_int_equal(hs_steps_run(json, strlen(json), &o, &r, &err), HS_ERR_CANCELLED);
    assert_int_equal(steps_done(err.message, "steps cancelled", 5), 0);
    assert_null(r.steps);

    /* The flag clear and a deadline far off: every step runs. */
    atomic_store(&cancel, false);
    o.deadline_ns = hs_now_ns() + 600 * (int64_t)1000000000;
    run(json, &o, &r);
    assert_int_equal(r.n, 5);
    for (int k = 0; k < 5; k++)
        assert_int_equal(r.steps[k].step, k + 1);
    assert_int_equal(r.uncached_compiles + r.cached_compiles, 5);
    hs_steps_result_free(&r);
}

/* HS_STEPS_MAX_STEPS steps of a small batch take far longer (~0.1 ms of
 * host work each, more under a sanitizer) than the deadline: the driver
 * stops between steps, after step 1 and before the last, soon after the
 * deadline. */
static void deadline_stops_between_steps(void **state)
{
    (void)state;
    const char *json = model_json("scan");
    hs_steps_options o;
    hs_steps_options_init(&o);
    o.steps = HS_STEPS_MAX_STEPS;
    o.batch = 8;
    int64_t t0 = hs_now_ns();
    o.deadline_ns = t0 + 500 * 1000000;
    hs_steps_result r;
    hs_error err;
    hs_error_clear(&err);
    assert_int_equal(hs_steps_run(json, strlen(json), &o, &r, &err), HS_ERR_CANCELLED);
    double took = (double)(hs_now_ns() - t0) * 1e-9;
    long long k = steps_done(err.message, "deadline exceeded", HS_STEPS_MAX_STEPS);
    if (k < 1 || k >= HS_STEPS_MAX_STEPS || took > 5)
        fail_msg("stopped after %.2f s: %s", took, err.message);
    assert_true(hs_now_ns() >= o.deadline_ns);
    assert_null(r.steps);
}

typedef struct canceller {
    atomic_bool *flag;
    int64_t after_ns;
} canceller;

static void *cancel_later(void *arg)
{
    const canceller *c = arg;
    struct timespec ts = {(time_t)(c->after_ns / 1000000000), (long)(c->after_ns % 1000000000)};
    nanosleep(&ts, NULL);
    atomic_store(c->flag, true);
    return NULL;
}

/* The cancel flag set from another thread while the steps run. */
static void cancel_flag_stops_between_steps(void **state)
{
    (void)state;
    const char *json = model_json("scan");
    atomic_bool flag = false;
    hs_steps_options o;
    hs_steps_options_init(&o);
    o.steps = HS_STEPS_MAX_STEPS;
    o.batch = 8;
    o.cancel = &flag;
    canceller c = {&flag, 500 * 1000000};
    pthread_t th;
    int64_t t0 = hs_now_ns();
    assert_int_equal(pthread_create(&th, NULL, cancel_later, &c), 0);
    hs_steps_result r;
    hs_error err;
    hs_error_clear(&err);
    hs_status st = hs_steps_run(json, strlen(json), &o, &r, &err);
    double took = (double)(hs_now_ns() - t0) * 1e-9;
    pthread_join(th, NULL);
    assert_int_equal(st, HS_ERR_CANCELLED);
    long long k = steps_done(err.message, "steps cancelled", HS_STEPS_MAX_STEPS);
    if (k < 1 || k >= HS_STEPS_MAX_STEPS || took > 5)
        fail_msg("stopped after %.2f s: %s", took, err.message);
    assert_null(r.steps);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(device_bound_goodput_is_one),
        cmocka_unit_test(tracing_bound_goodput_is_device_over_host),
        cmocka_unit_test(host_never_more_than_depth_ahead),
        cmocka_unit_test(deeper_queue_absorbs_bursts),
        cmocka_unit_test(schedule_rejects_bad_timings),
        cmocka_unit_test(frontend_presets_are_labelled),
        cmocka_unit_test(compile_cache_counts_one_miss_then_hits),
        cmocka_unit_test(device_idles_only_when_tracing_bound),
        cmocka_unit_test(training_steps_json_and_chart),
        cmocka_unit_test(driver_rejects_bad_options),
        cmocka_unit_test(stopped_before_the_first_step),
        cmocka_unit_test(deadline_stops_between_steps),
        cmocka_unit_test(cancel_flag_stops_between_steps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
