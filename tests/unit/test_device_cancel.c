/* test_device_cancel.c - a run stops at its deadline or when cancelled. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>
#include <time.h>

#include "hloscope/hs_device.h"
#include "hloscope/hs_hlo_text.h"

/* A counted loop of a billion iterations: minutes on the emulator. */
static const char *const endless =
    "HloModule endless\n"
    "cond {\n"
    "  p = (s32[]) parameter(0)\n"
    "  i = s32[] get-tuple-element(p), index=0\n"
    "  n = s32[] constant(1000000000)\n"
    "  ROOT lt = pred[] compare(i, n), direction=LT\n"
    "}\n"
    "body {\n"
    "  p = (s32[]) parameter(0)\n"
    "  i = s32[] get-tuple-element(p), index=0\n"
    "  one = s32[] constant(1)\n"
    "  next = s32[] add(i, one)\n"
    "  ROOT t = (s32[]) tuple(next)\n"
    "}\n"
    "ENTRY main {\n"
    "  zero = s32[] constant(0)\n"
    "  init = (s32[]) tuple(zero)\n"
    "  w = (s32[]) while(init), condition=cond, body=body\n"
    "  ROOT r = s32[] get-tuple-element(w), index=0\n"
    "}\n";

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void run_stops_at_its_deadline(void **state)
{
    (void)state;
    hs_error e;
    hs_module *m = hs_hlo_parse(endless, strlen(endless), &e);
    assert_non_null(m);
    hs_run_options o = {.deadline_ns = now_ns() + 50 * 1000000LL};
    hs_tensor **outs = NULL;
    int n_outs = 0;
    hs_run_stats st;
    int64_t t0 = now_ns();
    assert_int_equal(hs_device_run_ex(m, NULL, NULL, 0, &outs, &n_outs, &o, &st, &e),
                     HS_ERR_CANCELLED);
    int64_t took_ms = (now_ns() - t0) / 1000000;
    assert_true(took_ms < 5000); /* not the minutes the loop would take */
    assert_non_null(strstr(e.message, "deadline"));
    assert_null(outs);
    assert_int_equal(n_outs, 0);
    hs_module_free(m);
}

static void cancel_flag_stops_a_run(void **state)
{
    (void)state;
    hs_error e;
    hs_module *m = hs_hlo_parse(endless, strlen(endless), &e);
    assert_non_null(m);
    atomic_bool cancel = true;
    hs_run_options o = {.cancel = &cancel};
    hs_tensor **outs = NULL;
    int n_outs = 0;
    hs_run_stats st;
    assert_int_equal(hs_device_run_ex(m, NULL, NULL, 0, &outs, &n_outs, &o, &st, &e),
                     HS_ERR_CANCELLED);
    assert_string_equal(e.message, "run cancelled");
    hs_module_free(m);
}

static void run_without_deadline_finishes(void **state)
{
    (void)state;
    const char *small = "HloModule s\nENTRY e {\n  a = f32[4] constant({1, 2, 3, 4})\n"
                        "  ROOT b = f32[4] add(a, a)\n}\n";
    hs_error e;
    hs_module *m = hs_hlo_parse(small, strlen(small), &e);
    assert_non_null(m);
    atomic_bool cancel = false;
    hs_run_options o = {.deadline_ns = now_ns() + 10LL * 1000000000, .cancel = &cancel};
    hs_tensor **outs = NULL;
    int n_outs = 0;
    hs_run_stats st;
    assert_int_equal(hs_device_run_ex(m, NULL, NULL, 0, &outs, &n_outs, &o, &st, &e), HS_OK);
    assert_int_equal(n_outs, 1);
    assert_true(hs_tensor_f32(outs[0])[3] == 8.0f);
    hs_tensors_free(outs, n_outs);
    hs_module_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(run_stops_at_its_deadline),
        cmocka_unit_test(cancel_flag_stops_a_run),
        cmocka_unit_test(run_without_deadline_finishes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
