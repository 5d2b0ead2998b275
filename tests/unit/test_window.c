/*
 * test_window.c - the window={...} attribute reader shared by convolution,
 * reduce-window and select-and-scatter: XLA's defaults, its text forms
 * (as real dumps print them), the output extent arithmetic of XLA's
 * window_util, and refusals that name the instruction.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "hloscope/hs_ir.h"
#include "hlo_test_helpers.h"

static const char module_text[] =
    "HloModule m\n"
    "add {\n"
    "  a = f32[] parameter(0)\n"
    "  b = f32[] parameter(1)\n"
    "  ROOT s = f32[] add(a, b)\n"
    "}\n"
    "ENTRY e {\n"
    "  x = f32[1,8,8,3] parameter(0)\n"
    "  k = f32[3,3,3,4] parameter(1)\n"
    "  conv = f32[1,4,4,4] convolution(x, k), window={size=3x3 stride=2x2 "
    "pad=1_1x0_1 lhs_dilate=1x1 rhs_dilate=1x2 rhs_reversal=0x1}, "
    "dim_labels=b01f_01io->b01f\n"
    "  z = f32[] constant(0)\n"
    "  pool = f32[1,2,2,4] reduce-window(conv, z), "
    "window={size=1x2x2x1 stride=1x2x2x1}, to_apply=add\n"
    "  ROOT scalar = f32[] reduce-window(z, z), window={}, to_apply=add\n"
    "}\n";

static void reads_every_field_and_defaults(void **state)
{
    (void)state;
    hs_module *m = parse(module_text);
    hs_error err;
    hs_error_clear(&err);
    hs_window w;
    assert_int_equal(hs_instruction_window(find_instr(m, "conv"), 2, &w,
                                           &err),
                     HS_OK);
    assert_int_equal(w.dim[0].size, 3);
    assert_int_equal(w.dim[1].stride, 2);
    assert_int_equal(w.dim[0].pad_lo, 1);
    assert_int_equal(w.dim[1].pad_lo, 0);
    assert_int_equal(w.dim[1].pad_hi, 1);
    assert_int_equal(w.dim[1].rhs_dilate, 2);
    assert_false(w.dim[0].reversal);
    assert_true(w.dim[1].reversal);

    assert_int_equal(hs_instruction_window(find_instr(m, "pool"), 4, &w,
                                           &err),
                     HS_OK);
    /* Fields left out take XLA's defaults. */
    for (int d = 0; d < 4; d++) {
        assert_int_equal(w.dim[d].lhs_dilate, 1);
        assert_int_equal(w.dim[d].rhs_dilate, 1);
        assert_int_equal(w.dim[d].pad_lo, 0);
        assert_int_equal(w.dim[d].pad_hi, 0);
    }
    assert_int_equal(w.dim[1].size, 2);
    assert_int_equal(w.dim[1].stride, 2);
    /* window={} is a rank-0 window. */
    assert_int_equal(hs_instruction_window(find_instr(m, "scalar"), 0, &w,
                                           &err),
                     HS_OK);
    assert_string_equal(hs_instruction_attr(find_instr(m, "conv"),
                                            "dim_labels"),
                        "b01f_01io->b01f");
    assert_null(hs_instruction_attr(find_instr(m, "pool"), "dim_labels"));
    hs_module_free(m);
}

static void output_extent_is_xlas_strided_bound(void **state)
{
    (void)state;
    /* 8 elements, window 3, stride 2, pad 1/1: (10 - 3) / 2 + 1 = 4. */
    hs_window_dim w = {.size = 3, .stride = 2, .pad_lo = 1, .pad_hi = 1,
                       .lhs_dilate = 1, .rhs_dilate = 1};
    assert_int_equal(hs_window_padded_extent(&w, 8), 10);
    assert_int_equal(hs_window_output_extent(&w, 8), 4);
    /* Base dilation 2 spreads 8 elements over 15; window dilation 2 makes
     * a window of 3 span 5: (15 + 2 - 5) / 2 + 1 = 7. */
    w.lhs_dilate = 2;
    w.rhs_dilate = 2;
    assert_int_equal(hs_window_padded_extent(&w, 8), 17);
    assert_int_equal(hs_window_output_extent(&w, 8), 7);
    /* A window wider than the padded input has no position; negative
     * padding may shrink the input below zero. */
    hs_window_dim wide = {.size = 5, .stride = 1, .lhs_dilate = 1,
                          .rhs_dilate = 1, .pad_lo = -3, .pad_hi = -3};
    assert_int_equal(hs_window_padded_extent(&wide, 4), -2);
    assert_int_equal(hs_window_output_extent(&wide, 4), 0);
    assert_int_equal(hs_window_output_extent(&wide, 0), 0);
    /* Absurd dilations saturate instead of wrapping. */
    hs_window_dim huge = {.size = 2, .stride = 1, .lhs_dilate = INT64_MAX,
                          .rhs_dilate = 1};
    assert_true(hs_window_padded_extent(&huge, 3) == INT64_MAX);
    assert_true(hs_window_output_extent(&huge, 3) == INT64_MAX - 1);
}

static void refuse(const char *attr, int rank, const char *fragment)
{
    char text[512];
    snprintf(text, sizeof text,
             "HloModule m\nadd {\n  a = f32[] parameter(0)\n"
             "  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n"
             "ENTRY e {\n  x = f32[4,4] parameter(0)\n"
             "  z = f32[] constant(0)\n"
             "  ROOT rw = f32[2,2] reduce-window(x, z)%s, to_apply=add\n}\n",
             attr);
    hs_module *m = parse(text);
    hs_error err;
    hs_error_clear(&err);
    hs_window w;
    assert_int_equal(hs_instruction_window(find_instr(m, "rw"), rank, &w,
                                           &err),
                     HS_ERR_SHAPE);
    assert_contains(err.message, "instruction rw");
    assert_contains(err.message, fragment);
    hs_module_free(m);
}

static void malformed_windows_are_refused_naming_the_instruction(void **s)
{
    (void)s;
    refuse("", 2, "the window attribute is missing");
    refuse(", window={size=2x2x2}", 2, "size= has 3 entries; the window "
                                       "has 2 dimensions");
    refuse(", window={size=2x0}", 2, "at least 1");
    refuse(", window={size=2x2 stride=0x1}", 2, "at least 1");
    refuse(", window={size=2x2 pad=1x1}", 2, "pad: lo_hi");
    refuse(", window={size=2x2 size=2x2}", 2, "given twice");
    refuse(", window={stride=2x2}", 2, "size= is missing");
    refuse(", window={size=2x2 rhs_reversal=2x0}", 2, "separated by 'x'");
    refuse(", window={size=2x2 bogus=1x1}", 2, "expected size=");
    refuse(", window={size=99999999999999999999x2}", 2, "separated by 'x'");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reads_every_field_and_defaults),
        cmocka_unit_test(output_extent_is_xlas_strided_bound),
        cmocka_unit_test(malformed_windows_are_refused_naming_the_instruction),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
