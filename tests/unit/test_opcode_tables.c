/*
 * test_opcode_tables.c - every per-opcode table (shape rule, device kernel,
 * cost, VJP) has a decision for every opcode of HS_OPCODE_LIST, every
 * "not handled" says why, and the reasons reach the user: the device
 * refuses an opcode it does not run with the table's reason. Prints the
 * whole matrix, so a reader sees what each opcode has.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "autodiff/autodiff_internal.h"
#include "device/device_internal.h"
#include "hloscope/hs_device.h"
#include "hloscope/hs_hlo_text.h"
#include "hloscope/hs_infer.h"
#include "hloscope/hs_tensor.h"

static const hs_opcode all[] = {
#define HS_X(e, n, a, c, f) HS_OP_##e,
    HS_OPCODE_LIST(HS_X)
#undef HS_X
};
enum { N_ALL = sizeof all / sizeof all[0] };

static void assert_reason(const char *what, hs_opcode op, const char *why)
{
    if (!why || strlen(why) < 10)
        fail_msg("%s of %s: no rule and no reason", what,
                 hs_opcode_name(op));
}

static void every_opcode_is_handled_or_says_why(void **state)
{
    (void)state;
    assert_int_equal(N_ALL, HS_OP_COUNT);
    printf("%-22s %-6s %-7s %-6s %s\n", "opcode", "shape", "kernel", "cost",
           "vjp");
    for (int k = 0; k < N_ALL; k++) {
        hs_opcode op = all[k];
        const char *written = hs_infer_written_only(op);
        const dev_kernel_entry *run = dev_kernel_entry_of(op);
        const char *not_costed = dev_cost_not_modelled(op);
        /* A shape rule or the reason the written shape is trusted. */
        if (written)
            assert_reason("shape", op, written);
        /* Exactly one of a kernel and the reason there is none. */
        if (!run->kernel)
            assert_reason("kernel", op, run->not_run);
        else
            assert_null(run->not_run);
        if (not_costed)
            assert_reason("cost", op, not_costed);
        printf("%-22s %-6s %-7s %-6s %s\n", hs_opcode_name(op),
               written ? "-" : "rule", run->kernel ? "kernel" : "-",
               not_costed ? "-" : "cost", hs__vjp_rule(op) ? "vjp" : "-");
    }
}

/* Whatever the device runs, the clock charges: a kernel without a cost
 * rule would make the estimate disagree with the run. */
static void every_executed_opcode_is_costed(void **state)
{
    (void)state;
    for (int k = 0; k < N_ALL; k++)
        if (dev_kernel_entry_of(all[k])->kernel &&
            dev_cost_not_modelled(all[k]))
            fail_msg("%s runs but is not costed: %s",
                     hs_opcode_name(all[k]), dev_cost_not_modelled(all[k]));
}

/* One instruction of opcode op over f32[2] parameters, as the root. */
static hs_module *single(hs_opcode op, hs_tensor **args, int *n_args)
{
    hs_module *m = hs_module_new("one");
    hs_computation *c = hs_module_add_computation(m, "main", true);
    hs_shape s = hs_shape_make(HS_F32, 1, (int64_t[]){2});
    int arity = hs_opcode_arity(op);
    int n = arity < 0 ? 1 : arity;
    hs_instruction *ops[4];
    for (int k = 0; k < n; k++) {
        char name[16];
        snprintf(name, sizeof name, "p%d", k);
        ops[k] = hs_computation_add_parameter(c, k, &s, name);
        args[k] = hs_tensor_new(&s);
    }
    c->root = hs_computation_add(c, op, &s, ops, n, "x");
    *n_args = n;
    return m;
}

static void unexecutable_opcode_is_refused_with_its_reason(void **state)
{
    (void)state;
    int refused = 0;
    for (int k = 0; k < N_ALL; k++) {
        hs_opcode op = all[k];
        const dev_kernel_entry *run = dev_kernel_entry_of(op);
        if (run->kernel || op == HS_OP_PARAMETER)
            continue;
        hs_tensor *args[4] = {NULL};
        int n_args = 0;
        hs_module *m = single(op, args, &n_args);
        hs_tensor **out = NULL;
        int n_out = 0;
        hs_error e;
        hs_error_clear(&e);
        hs_status st = hs_device_run(m, NULL, args, n_args, &out, &n_out,
                                     NULL, &e);
        if (st != HS_ERR_UNSUPPORTED || !strstr(e.message, run->not_run))
            fail_msg("%s: status %s, message \"%s\" lacks \"%s\"",
                     hs_opcode_name(op), hs_status_name(st), e.message,
                     run->not_run);
        assert_string_equal(e.instruction, "x");
        assert_int_equal(n_out, 0);
        for (int a = 0; a < n_args; a++)
            hs_tensor_free(args[a]);
        hs_module_free(m);
        refused++;
    }
    /* gather, scatter, convolution, ... at the time of writing */
    assert_true(refused >= 10);
}

/* Everything that blocks a run is found at once, before any argument is
 * made, counted by kind, most frequent first. */
static void device_check_lists_every_blocker_up_front(void **state)
{
    (void)state;
    const char *text =
        "HloModule blocked\n"
        "f {\n"
        "  a = f32[] parameter(0)\n"
        "  ROOT n = f32[] negate(a)\n"
        "}\n"
        "ENTRY e {\n"
        "  x = c64[8] parameter(0)\n"
        "  y = c64[8] negate(x)\n"
        "  z = f32[8] convert(y)\n"
        "  s1 = f32[8] map(z), dimensions={0}, to_apply=f\n"
        "  s2 = f32[8] map(s1), dimensions={0}, to_apply=f\n"
        "  ROOT w = f32[8] add(s2, z)\n"
        "}\n";
    hs_error e;
    hs_error_clear(&e);
    hs_module *m = hs_hlo_parse(text, strlen(text), &e);
    assert_non_null(m);
    hs_error_clear(&e);
    assert_int_equal(hs_device_check(m, &e), HS_ERR_UNSUPPORTED);
    /* x, y and z touch c64; two maps; the rest runs. */
    assert_string_equal(e.message,
                        "5 instructions cannot be executed on the emulated "
                        "device: element type 'c64' (complex types are not "
                        "executed) x3 (first: x); opcode 'map' (map has "
                        "no kernel yet) x2 (first: s1)");
    assert_string_equal(e.instruction, "x");
    hs_module_free(m);

    const char *ok = "HloModule fine\n"
                     "ENTRY e {\n"
                     "  x = f32[8] parameter(0)\n"
                     "  ROOT y = f32[8] negate(x)\n"
                     "}\n";
    m = hs_hlo_parse(ok, strlen(ok), &e);
    assert_int_equal(hs_device_check(m, &e), HS_OK);
    hs_module_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_opcode_is_handled_or_says_why),
        cmocka_unit_test(every_executed_opcode_is_costed),
        cmocka_unit_test(unexecutable_opcode_is_refused_with_its_reason),
        cmocka_unit_test(device_check_lists_every_blocker_up_front),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
