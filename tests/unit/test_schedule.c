/* test_schedule.c - the `schedule` pass: a valid post order, a lower peak
 * where the traced order is bad, the current order kept where the list
 * schedule is no better, determinism, and speed on 100k instructions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hloscope/hs_buffers.h"
#include "hloscope/hs_compile.h"
#include "hloscope/hs_hlo_text.h"
#include "hloscope/hs_passes.h"
#include "hlo_test_helpers.h"

static bool run_schedule(hs_module *m)
{
    hs_pass_context ctx;
    hs_pass_context_init(&ctx);
    hs_error err;
    hs_error_clear(&err);
    bool changed = false;
    if (hs_pass_lookup("schedule")->run(m, &ctx, &changed, &err) != HS_OK)
        fail_msg("schedule: %s", err.message);
    if (hs_module_verify(m, &err) != HS_OK)
        fail_msg("invalid after schedule: %s", err.message);
    return changed;
}

static int64_t device_peak(const hs_module *m)
{
    hs_error err;
    hs_error_clear(&err);
    hs_buffer_assignment *ba = hs_assign_buffers(m, &err);
    if (!ba)
        fail_msg("assign: %s", err.message);
    int64_t peak = hs_buffers_peak(ba, HS_MEMSPACE_DEVICE).bytes;
    hs_buffers_free(ba);
    return peak;
}

/* Names of c's instructions joined by spaces, into buf. */
static const char *order(const hs_computation *c, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = 0;
    for (int k = 0; k < c->n_instrs && used < size; k++)
        used += (size_t)snprintf(buf + used, size - used, "%s%s",
                                 k ? " " : "", c->instrs[k]->name);
    return buf;
}

/* Every operand before its user, and the same instructions as before. */
static void assert_post_order(const hs_computation *c,
                              hs_instruction *const *before, int n)
{
    assert_int_equal(c->n_instrs, n);
    for (int k = 0; k < n; k++) {
        const hs_instruction *i = c->instrs[k];
        for (int o = 0; o < i->n_operands; o++) {
            int q = -1;
            for (int j = 0; j < k; j++)
                if (c->instrs[j] == i->operands[o])
                    q = j;
            if (q < 0)
                fail_msg("%s: operand %s not scheduled before it", i->name,
                         i->operands[o]->name);
        }
        bool found = false;
        for (int j = 0; j < n && !found; j++)
            found = before[j] == i;
        assert_true(found);
    }
}

/* Four broadcasts of p (256 KiB each) traced before the slices that
 * reduce each one to 1 KiB, as a tracer that emits all the layers' big
 * ops first would. (a2 and a3 differ from a0 and a1 by layout, so that
 * CSE in the default pipeline keeps all four.) */
static const char *fan_out =
    "HloModule fan\n"
    "ENTRY main {\n"
    "  p = f32[256]{0} parameter(0)\n"
    "  a0 = f32[256,256]{1,0} broadcast(p), dimensions={1}\n"
    "  a1 = f32[256,256]{1,0} broadcast(p), dimensions={0}\n"
    "  a2 = f32[256,256]{0,1} broadcast(p), dimensions={1}\n"
    "  a3 = f32[256,256]{0,1} broadcast(p), dimensions={0}\n"
    "  s0 = f32[1,256]{1,0} slice(a0), slice={[0:1], [0:256]}\n"
    "  s1 = f32[1,256]{1,0} slice(a1), slice={[1:2], [0:256]}\n"
    "  s2 = f32[1,256]{1,0} slice(a2), slice={[2:3], [0:256]}\n"
    "  s3 = f32[1,256]{1,0} slice(a3), slice={[3:4], [0:256]}\n"
    "  x1 = f32[1,256]{1,0} add(s0, s1)\n"
    "  x2 = f32[1,256]{1,0} add(x1, s2)\n"
    "  ROOT x3 = f32[1,256]{1,0} add(x2, s3)\n"
    "}\n";

static void schedule_keeps_post_order(void **state)
{
    (void)state;
    hs_module *m = parse(fan_out);
    hs_computation *c = m->entry;
    hs_instruction *before[16];
    memcpy(before, c->instrs, sizeof *before * (size_t)c->n_instrs);
    assert_true(run_schedule(m));
    assert_post_order(c, before, 12);
    assert_ptr_equal(c->root, before[11]);
    hs_module_free(m);
}

static void schedule_lowers_peak_for_fan_out_graph(void **state)
{
    (void)state;
    hs_module *m = parse(fan_out);
    /* As traced, the four broadcasts are live together when s0 runs:
     * p 1024 + 4 * 262144 + s0 1024. */
    assert_int_equal(device_peak(m), 1024 + 4 * 262144 + 1024);
    assert_true(run_schedule(m));
    /* Each broadcast is sliced as soon as it exists and each slice summed
     * as soon as possible: at most one broadcast is live, next to p, its
     * slice and the running sum (or s0). */
    assert_int_equal(device_peak(m), 1024 + 262144 + 1024 + 1024);
    char buf[256];
    assert_string_equal(order(m->entry, buf, sizeof buf),
                        "p a0 s0 a1 s1 x1 a2 s2 x2 a3 s3 x3");
    /* Running it again finds nothing better. */
    assert_false(run_schedule(m));
    hs_module_free(m);
}

static void schedule_keeps_order_when_not_better(void **state)
{
    (void)state;
    hs_module *m = parse("HloModule chain\n"
                         "ENTRY main {\n"
                         "  p = f32[256]{0} parameter(0)\n"
                         "  c = f32[] constant(1)\n"
                         "  b = f32[256]{0} broadcast(c), dimensions={}\n"
                         "  e = f32[256]{0} exponential(p)\n"
                         "  ROOT r = f32[256]{0} add(e, b)\n"
                         "}\n");
    char before[128], after[128];
    order(m->entry, before, sizeof before);
    int64_t peak = device_peak(m);
    assert_false(run_schedule(m));
    assert_string_equal(order(m->entry, after, sizeof after), before);
    assert_int_equal(device_peak(m), peak);
    hs_module_free(m);
}

static void schedule_orders_while_bodies(void **state)
{
    (void)state;
    /* The body traces two big temporaries before reducing either; the
     * schedule interleaves them, which lowers the body's peak and so the
     * module's (the peak is inside the loop). */
    hs_module *m = parse(
        "HloModule loop\n"
        "cond {\n"
        "  cp = (s32[], f32[256]{0}) parameter(0)\n"
        "  ci = s32[] get-tuple-element(cp), index=0\n"
        "  lim = s32[] constant(3)\n"
        "  ROOT lt = pred[] compare(ci, lim), direction=LT\n"
        "}\n"
        "body {\n"
        "  bp = (s32[], f32[256]{0}) parameter(0)\n"
        "  i = s32[] get-tuple-element(bp), index=0\n"
        "  x = f32[256]{0} get-tuple-element(bp), index=1\n"
        "  a = f32[256,256]{1,0} broadcast(x), dimensions={1}\n"
        "  b = f32[256,256]{1,0} broadcast(x), dimensions={0}\n"
        "  sa = f32[1,256]{1,0} slice(a), slice={[0:1], [0:256]}\n"
        "  sb = f32[1,256]{1,0} slice(b), slice={[0:1], [0:256]}\n"
        "  s = f32[1,256]{1,0} add(sa, sb)\n"
        "  y = f32[256]{0} reshape(s)\n"
        "  one = s32[] constant(1)\n"
        "  i1 = s32[] add(i, one)\n"
        "  ROOT t = (s32[], f32[256]{0}) tuple(i1, y)\n"
        "}\n"
        "ENTRY main {\n"
        "  p = f32[256]{0} parameter(0)\n"
        "  z = s32[] constant(0)\n"
        "  init = (s32[], f32[256]{0}) tuple(z, p)\n"
        "  w = (s32[], f32[256]{0}) while(init), condition=cond, body=body\n"
        "  ROOT r = f32[256]{0} get-tuple-element(w), index=1\n"
        "}\n");
    /* The entry holds p, z, init{} and the while's copies of p and z
     * (p is read-only): 1024 + 4 + 16 + 4 + 1024 = 2072. As traced, the
     * body peaks at sa with a, b and sa: 2 * 262144 + 1024. Slicing a
     * before making b leaves the peak at sb with b, sa and sb. (The list
     * schedule also computes the counter early, 4 B more; the depth-first
     * one, kept, computes it last.) */
    assert_int_equal(device_peak(m), 2072 + 2 * 262144 + 1024);
    assert_true(run_schedule(m));
    assert_int_equal(device_peak(m), 2072 + 262144 + 2 * 1024);
    char buf[256];
    const hs_computation *body = hs_module_find_computation(m, "body");
    assert_string_equal(order(body, buf, sizeof buf),
                        "bp x a sa b sb s y i one i1 t");
    hs_module_free(m);
}

/* A module of n instructions: `branches` broadcasts of p traced first,
 * then a slice of each, then a chain of adds. */
static hs_module *wide_fan_out(int branches)
{
    hs_module *m = hs_module_new("wide");
    hs_computation *c = hs_module_add_computation(m, "main", true);
    hs_shape ps = hs_shape_make(HS_F32, 1, (int64_t[]){64});
    hs_shape bs = hs_shape_make(HS_F32, 2, (int64_t[]){16, 64});
    hs_shape ss = hs_shape_make(HS_F32, 2, (int64_t[]){1, 64});
    hs_instruction *p = hs_computation_add_parameter(c, 0, &ps, "p");
    hs_instruction **big = malloc(sizeof *big * (size_t)branches);
    for (int k = 0; k < branches; k++) {
        big[k] = hs_computation_add(c, HS_OP_BROADCAST, &bs, &p, 1, NULL);
        hs_instruction_set_dims(big[k], (int64_t[]){1}, 1);
    }
    hs_instruction *sum = NULL;
    for (int k = 0; k < branches; k++) {
        hs_instruction *s =
            hs_computation_add(c, HS_OP_SLICE, &ss, &big[k], 1, NULL);
        s->slice = hs_arena_alloc(m->arena, sizeof *s->slice);
        *s->slice = (hs_slice_dims){2, {0, 0}, {1, 64}, {1, 1}};
        if (sum) {
            hs_instruction *ops[2] = {sum, s};
            sum = hs_computation_add(c, HS_OP_ADD, &ss, ops, 2, NULL);
        } else {
            sum = s;
        }
    }
    c->root = sum;
    free(big);
    return m;
}

static double seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void schedule_handles_100k_instructions_quickly(void **state)
{
    (void)state;
    hs_module *m = wide_fan_out(33334); /* 1 + 3 * 33334 - 1 instructions */
    assert_int_equal(m->entry->n_instrs, 100002);
    hs_error err;
    hs_error_clear(&err);
    assert_int_equal(hs_module_verify(m, &err), HS_OK);
    int64_t before = device_peak(m);
    double t0 = seconds();
    assert_true(run_schedule(m));
    double t = seconds() - t0;
    int64_t after = device_peak(m);
    print_message("schedule of 100002 instructions: %.3f s; device peak "
                  "%lld -> %lld bytes\n", t, (long long)before,
                  (long long)after);
    /* Every broadcast (4 KiB) was live at once; now one is. */
    assert_int_equal(before, 256 + 33334 * 4096 + 256);
    assert_true(after <= 256 + 4096 + 3 * 256);
    assert_true(t < 5.0); /* ~0.1 s in a release build */
    hs_module_free(m);
}

static void schedule_is_deterministic(void **state)
{
    (void)state;
    hs_module *a = wide_fan_out(50), *b = wide_fan_out(50);
    run_schedule(a);
    run_schedule(b);
    for (int k = 0; k < a->entry->n_instrs; k++)
        assert_string_equal(a->entry->instrs[k]->name,
                            b->entry->instrs[k]->name);
    hs_module_free(a);
    hs_module_free(b);
}

static void schedule_is_in_default_pipeline(void **state)
{
    (void)state;
    /* Last, so that it orders what the other passes produced. */
    const char *tail = ",schedule";
    size_t n = strlen(HS_DEFAULT_PIPELINE);
    assert_string_equal(HS_DEFAULT_PIPELINE + n - strlen(tail), tail);
    hs_module *m = parse(fan_out);
    hs_compile_options o;
    hs_compile_options_init(&o);
    o.pipeline = "verify,schedule";
    hs_executable *exe = NULL;
    hs_error err;
    hs_error_clear(&err);
    assert_int_equal(hs_compile(m, &o, NULL, NULL, &exe, &err), HS_OK);
    const hs_buffer_assignment *ba = hs_executable_buffers(exe);
    assert_int_equal(hs_buffers_peak(ba, HS_MEMSPACE_DEVICE).bytes,
                     1024 + 262144 + 1024 + 1024);
    hs_executable_release(exe);
    /* The default pipeline may fuse the adds; the schedule still keeps a
     * single broadcast live. */
    assert_int_equal(hs_compile(m, NULL, NULL, NULL, &exe, &err), HS_OK);
    ba = hs_executable_buffers(exe);
    assert_true(hs_buffers_peak(ba, HS_MEMSPACE_DEVICE).bytes <
                1024 + 2 * 262144);
    const hs_pass_stats *row =
        hs_compile_report_find(hs_executable_report(exe), "schedule");
    assert_non_null(row);
    assert_int_equal(row->changed_runs, 1);
    hs_executable_release(exe);
    hs_module_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(schedule_keeps_post_order),
        cmocka_unit_test(schedule_lowers_peak_for_fan_out_graph),
        cmocka_unit_test(schedule_keeps_order_when_not_better),
        cmocka_unit_test(schedule_orders_while_bodies),
        cmocka_unit_test(schedule_handles_100k_instructions_quickly),
        cmocka_unit_test(schedule_is_deterministic),
        cmocka_unit_test(schedule_is_in_default_pipeline),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
