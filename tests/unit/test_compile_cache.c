/* test_compile_cache.c - compiling through the cache: fingerprints as
 * keys, shared executables, LRU eviction, metrics, threads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_compile.h"
#include "hloscope/hs_hlo_text.h"
#include "hlo_test_helpers.h"

/* The same small graph under different names: x * 1 + 0 folds away. */
static hs_module *traced(const char *prefix, float scale)
{
    char text[1024];
    snprintf(text, sizeof text,
             "HloModule %s_module\n"
             "ENTRY %s_main {\n"
             "  %s_x = f32[2,3] parameter(0)\n"
             "  %s_one = f32[] constant(1)\n"
             "  %s_b = f32[2,3] broadcast(%s_one), dimensions={}\n"
             "  %s_y = f32[2,3] multiply(%s_x, %s_b)\n"
             "  %s_s = f32[] constant(%g)\n"
             "  %s_c = f32[2,3] broadcast(%s_s), dimensions={}\n"
             "  ROOT %s_z = f32[2,3] add(%s_y, %s_c)\n"
             "}\n",
             prefix, prefix, prefix, prefix, prefix, prefix, prefix, prefix,
             prefix, prefix, (double)scale, prefix, prefix, prefix, prefix,
             prefix);
    return parse(text);
}

static hs_executable *compile(const hs_module *m, const char *device,
                              hs_compile_cache *cache, hs_metrics *met)
{
    hs_compile_options o;
    hs_compile_options_init(&o);
    o.device = device;
    hs_error err;
    hs_error_clear(&err);
    hs_executable *exe = NULL;
    if (hs_compile(m, &o, cache, met, &exe, &err) != HS_OK)
        fail_msg("compile: %s", err.message);
    assert_non_null(exe);
    return exe;
}

static void compile_three_times_gives_one_uncached_two_cached(void **state)
{
    (void)state;
    hs_compile_cache *cache = hs_compile_cache_new(8);
    hs_metrics *met = hs_metrics_new();
    /* The "same model traced three times": new names every time. */
    hs_module *m1 = traced("a", 0.5f), *m2 = traced("b", 0.5f),
              *m3 = traced("c", 0.5f);
    int64_t n_before = hs_module_instruction_count(m1);
    hs_executable *e1 = compile(m1, "tpu-v5e", cache, met);
    hs_executable *e2 = compile(m2, "tpu-v5e", cache, met);
    hs_executable *e3 = compile(m3, "tpu-v5e", cache, met);
    assert_int_equal(hs_metrics_counter(met, HS_METRIC_UNCACHED_COMPILE), 1);
    assert_int_equal(hs_metrics_counter(met, HS_METRIC_CACHED_COMPILE), 2);
    assert_ptr_equal(e1, e2);
    assert_ptr_equal(e1, e3);
    assert_int_equal(hs_compile_cache_size(cache), 1);
    assert_int_equal(hs_metrics_timing(met, HS_METRIC_COMPILE_TIME).count, 1);
    /* The caller's module is untouched; the executable holds the
     * optimized copy (multiply by one gone). */
    assert_int_equal(hs_module_instruction_count(m1), n_before);
    const hs_module *opt = hs_executable_module(e1);
    assert_true(hs_module_instruction_count(opt) < n_before);
    assert_int_equal(hs_module_verify(opt, NULL), HS_OK);
    assert_true(hs_executable_fingerprint(e1) == hs_module_fingerprint(m1));
    assert_true(hs_compile_report_find(hs_executable_report(e1),
                                       "simplify") != NULL);
    hs_executable_release(e1);
    hs_executable_release(e2);
    hs_executable_release(e3);
    hs_module_free(m1);
    hs_module_free(m2);
    hs_module_free(m3);
    hs_metrics_free(met);
    hs_compile_cache_free(cache);
}

static void cache_key_includes_device_and_pipeline(void **state)
{
    (void)state;
    hs_compile_cache *cache = hs_compile_cache_new(8);
    hs_metrics *met = hs_metrics_new();
    hs_module *m = traced("a", 2.0f), *other = traced("a", 3.0f);
    hs_executable *e[4];
    e[0] = compile(m, "tpu-v5e", cache, met);
    e[1] = compile(m, "gpu-h100", cache, met);
    e[2] = compile(other, "tpu-v5e", cache, met);
    hs_compile_options o;
    hs_compile_options_init(&o);
    o.device = "tpu-v5e";
    o.pipeline = "dce";
    hs_error err;
    assert_int_equal(hs_compile(m, &o, cache, met, &e[3], &err), HS_OK);
    assert_int_equal(hs_metrics_counter(met, HS_METRIC_UNCACHED_COMPILE), 4);
    assert_int_equal(hs_metrics_counter(met, HS_METRIC_CACHED_COMPILE), 0);
    /* The same pipeline written with other spacing is the same key. */
    o.pipeline = " dce ";
    hs_executable *again;
    assert_int_equal(hs_compile(m, &o, cache, met, &again, &err), HS_OK);
    assert_ptr_equal(again, e[3]);
    hs_executable_release(again);
    for (int k = 0; k < 4; k++)
        hs_executable_release(e[k]);
    hs_module_free(m);
    hs_module_free(other);
    hs_metrics_free(met);
    hs_compile_cache_free(cache);
}

static void cache_evicts_least_recently_used(void **state)
{
    (void)state;
    hs_compile_cache *cache = hs_compile_cache_new(2);
    hs_metrics *met = hs_metrics_new();
    hs_module *a = traced("a", 1.5f), *b = traced("b", 2.5f),
              *c = traced("c", 3.5f);
    hs_executable_release(compile(a, "d", cache, met)); /* a */
    hs_executable_release(compile(b, "d", cache, met)); /* a b */
    hs_executable_release(compile(a, "d", cache, met)); /* hit: b a */
    hs_executable_release(compile(c, "d", cache, met)); /* evicts b */
    assert_int_equal(hs_compile_cache_size(cache), 2);
    assert_int_equal(hs_metrics_counter(met, HS_METRIC_UNCACHED_COMPILE), 3);
    hs_executable_release(compile(a, "d", cache, met)); /* hit */
    hs_executable_release(compile(b, "d", cache, met)); /* miss again */
    assert_int_equal(hs_metrics_counter(met, HS_METRIC_CACHED_COMPILE), 2);
    assert_int_equal(hs_metrics_counter(met, HS_METRIC_UNCACHED_COMPILE), 4);
    hs_module_free(a);
    hs_module_free(b);
    hs_module_free(c);
    hs_metrics_free(met);
    hs_compile_cache_free(cache);
}

static void executable_outlives_its_cache(void **state)
{
    (void)state;
    hs_compile_cache *cache = hs_compile_cache_new(0);
    assert_int_equal(hs_compile_cache_capacity(cache), 64);
    hs_module *m = traced("a", 1.0f);
    hs_executable *e = compile(m, "cpu", cache, NULL);
    hs_compile_cache_free(cache);
    char *s = hs_hlo_print(hs_executable_module(e));
    assert_non_null(strstr(s, "ENTRY"));
    free(s);
    hs_executable_release(e);
    hs_module_free(m);
}

static void compile_without_cache_always_compiles(void **state)
{
    (void)state;
    hs_metrics *met = hs_metrics_new();
    hs_module *m = traced("a", 1.0f);
    hs_executable *e1 = compile(m, NULL, NULL, met);
    hs_executable *e2 = compile(m, NULL, NULL, met);
    assert_ptr_not_equal(e1, e2);
    assert_int_equal(hs_metrics_counter(met, HS_METRIC_UNCACHED_COMPILE), 2);
    hs_executable_release(e1);
    hs_executable_release(e2);
    hs_module_free(m);
    hs_metrics_free(met);
}

static void failed_compile_caches_nothing(void **state)
{
    (void)state;
    hs_compile_cache *cache = hs_compile_cache_new(4);
    hs_metrics *met = hs_metrics_new();
    hs_module *m = traced("a", 1.0f);
    hs_compile_options o;
    hs_compile_options_init(&o);
    o.pipeline = "simplify,no-such-pass";
    hs_error err;
    hs_error_clear(&err);
    hs_executable *e = NULL;
    assert_int_equal(hs_compile(m, &o, cache, met, &e, &err),
                     HS_ERR_INVALID);
    assert_null(e);
    assert_non_null(strstr(err.message, "no-such-pass"));
    /* Cancelled before it starts. */
    atomic_bool cancel;
    atomic_init(&cancel, true);
    o.pipeline = NULL;
    o.cancel = &cancel;
    assert_int_equal(hs_compile(m, &o, cache, met, &e, &err),
                     HS_ERR_CANCELLED);
    assert_int_equal(hs_compile_cache_size(cache), 0);
    assert_int_equal(hs_metrics_counter(met, HS_METRIC_UNCACHED_COMPILE), 0);
    hs_module_free(m);
    hs_metrics_free(met);
    hs_compile_cache_free(cache);
}

static void metrics_report_reads_like_torch_xla(void **state)
{
    (void)state;
    hs_metrics *met = hs_metrics_new();
    hs_metrics_record_time(met, HS_METRIC_TRACE_TIME, 1500000);     /* 1.5ms */
    hs_metrics_record_time(met, HS_METRIC_TRACE_TIME, 2500000000LL); /* 2.5s */
    hs_metrics_record_time(met, HS_METRIC_EXECUTE_TIME, 42000);
    hs_metrics_counter_add(met, HS_METRIC_CACHED_COMPILE, 2);
    hs_metrics_counter_add(met, HS_METRIC_UNCACHED_COMPILE, 1);
    hs_timing t = hs_metrics_timing(met, HS_METRIC_TRACE_TIME);
    assert_int_equal(t.count, 2);
    assert_int_equal(t.min_ns, 1500000);
    assert_int_equal(t.max_ns, 2500000000LL);
    assert_int_equal((int64_t)hs_timing_mean(&t), 1250750000);
    char *r = hs_metrics_format(met);
    assert_non_null(r);
    assert_non_null(strstr(r, "Metric: TraceTime\n  TotalSamples: 2\n"
                              "  Accumulator: 02s501ms500.000us\n"));
    assert_non_null(strstr(r, "  Min: 001ms500.000us\n"));
    assert_non_null(strstr(r, "Metric: ExecuteTime\n  TotalSamples: 1\n"
                              "  Accumulator: 42.000us\n"));
    assert_non_null(strstr(r, "Counter: CachedCompile\n  Value: 2\n"));
    assert_non_null(strstr(r, "Counter: UncachedCompile\n  Value: 1\n"));
    free(r);
    assert_int_equal(hs_metrics_counter(met, "NoSuchCounter"), 0);
    hs_metrics_reset(met);
    assert_int_equal(hs_metrics_counter(met, HS_METRIC_CACHED_COMPILE), 0);
    hs_metrics_free(met);
}

typedef struct worker {
    const hs_module *m;
    hs_compile_cache *cache;
    hs_metrics *met;
    hs_executable *exe[10];
} worker;

static void *work(void *arg)
{
    worker *w = arg;
    for (int k = 0; k < 10; k++) {
        hs_error err;
        if (hs_compile(w->m, NULL, w->cache, w->met, &w->exe[k], &err) !=
            HS_OK)
            w->exe[k] = NULL;
    }
    return NULL;
}

static void concurrent_compiles_share_one_executable(void **state)
{
    (void)state;
    hs_compile_cache *cache = hs_compile_cache_new(4);
    hs_metrics *met = hs_metrics_new();
    hs_module *m = traced("a", 1.0f);
    worker w[4];
    pthread_t th[4];
    for (int k = 0; k < 4; k++) {
        w[k] = (worker){.m = m, .cache = cache, .met = met};
        assert_int_equal(pthread_create(&th[k], NULL, work, &w[k]), 0);
    }
    for (int k = 0; k < 4; k++)
        pthread_join(th[k], NULL);
    int64_t unc = hs_metrics_counter(met, HS_METRIC_UNCACHED_COMPILE);
    int64_t cac = hs_metrics_counter(met, HS_METRIC_CACHED_COMPILE);
    assert_int_equal(unc + cac, 40);
    assert_true(unc >= 1);
    assert_int_equal(hs_compile_cache_size(cache), 1);
    /* Threads that raced on the first compile all got the one cached. */
    for (int k = 0; k < 4; k++)
        for (int j = 0; j < 10; j++) {
            assert_ptr_equal(w[k].exe[j], w[0].exe[0]);
            hs_executable_release(w[k].exe[j]);
        }
    hs_module_free(m);
    hs_metrics_free(met);
    hs_compile_cache_free(cache);
}

/* The compile copies the module: every sample clones to the same text. */
static void clone_prints_like_the_original(void **state)
{
    (void)state;
    const char *files[] = {"add.hlo", "cpu_hlo.hlo",
                           "multiple_gemm_fusions.hlo",
                           "while_with_known_trip_count.hlo"};
    for (size_t k = 0; k < sizeof files / sizeof files[0]; k++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", HS_SAMPLES_DIR, files[k]);
        FILE *f = fopen(path, "rb");
        if (!f)
            continue;
        static char text[1 << 16];
        size_t n = fread(text, 1, sizeof text - 1, f);
        fclose(f);
        text[n] = '\0';
        hs_module *m = parse(text);
        hs_module *c = hs_module_clone(m);
        assert_non_null(c);
        char *a = hs_hlo_print(m), *b = hs_hlo_print(c);
        assert_string_equal(a, b);
        assert_true(hs_module_fingerprint(m) == hs_module_fingerprint(c));
        free(a);
        free(b);
        hs_module_free(m); /* the clone owns all of its memory */
        assert_int_equal(hs_module_verify(c, NULL), HS_OK);
        hs_module_free(c);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(compile_three_times_gives_one_uncached_two_cached),
        cmocka_unit_test(cache_key_includes_device_and_pipeline),
        cmocka_unit_test(cache_evicts_least_recently_used),
        cmocka_unit_test(executable_outlives_its_cache),
        cmocka_unit_test(compile_without_cache_always_compiles),
        cmocka_unit_test(failed_compile_caches_nothing),
        cmocka_unit_test(metrics_report_reads_like_torch_xla),
        cmocka_unit_test(concurrent_compiles_share_one_executable),
        cmocka_unit_test(clone_prints_like_the_original),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
