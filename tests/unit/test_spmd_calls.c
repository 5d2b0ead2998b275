/*
 * test_spmd_calls.c - the custom-calls of XLA's SPMD partitioner on the
 * one emulated device, which plays partition 0: Sharding is the
 * identity, SPMDFullToShardShape gives device 0's tile (zero past an
 * uneven end), SPMDShardToFullShape puts it back at its place with zeros
 * where the other devices' tiles would be. Checked on hand-made modules
 * whose device 0 holds a tile other than the first (explicit device
 * lists, 2-d tiles, a replicated subgroup), on a shard_map module from
 * XLA's own tests, and for the refusals: a shard of the wrong shape and a
 * target the device does not run, each named before anything runs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hloscope/hs_device.h"
#include "hloscope/hs_program.h"
#include "hlo_test_helpers.h"

/* x[k] = k + 1 for the n elements of a parameter. */
static float *counting(int n)
{
    float *x = malloc(sizeof *x * (size_t)n);
    assert_non_null(x);
    for (int k = 0; k < n; k++)
        x[k] = (float)(k + 1);
    return x;
}

/* Runs text (one f32 parameter of n elements, counting) and returns its
 * outputs. */
static hs_tensor **run_counting(const char *text, int n, int *n_out)
{
    hs_module *m = parse(text);
    hs_error err;
    hs_error_clear(&err);
    if (hs_module_verify(m, &err) != HS_OK)
        fail_msg("verify: %s", err.message);
    float *x = counting(n);
    const float *args[1] = {x};
    hs_tensor **out = run_f32(m, args, 1, n_out);
    free(x);
    hs_module_free(m);
    return out;
}

/* f32[5,4] over devices=[2,1]1,0: device 0 holds tile 1, rows 3..5, of
 * which row 5 is past the end (zero). Into the manual region and back:
 * rows 3 and 4 negated at their place, the rest zero. */
static void device_0s_tile_goes_in_and_comes_back(void **state)
{
    (void)state;
    const char *text =
        "HloModule m\nENTRY e {\n"
        "  p = f32[5,4] parameter(0)\n"
        "  s = f32[5,4] custom-call(p), custom_call_target=\"Sharding\", "
        "sharding={devices=[2,1]1,0}\n"
        "  m = f32[3,4] custom-call(s), "
        "custom_call_target=\"SPMDFullToShardShape\", sharding={manual}\n"
        "  n = f32[3,4] negate(m)\n"
        "  r = f32[3,4] custom-call(n), custom_call_target=\"Sharding\", "
        "sharding={manual}\n"
        "  y = f32[5,4] custom-call(r), "
        "custom_call_target=\"SPMDShardToFullShape\", "
        "sharding={devices=[2,1]1,0}\n"
        "  ROOT t = (f32[3,4], f32[5,4]) tuple(m, y)\n}\n";
    int n;
    hs_tensor **out = run_counting(text, 20, &n);
    assert_int_equal(n, 2);
    const float *m = hs_tensor_f32(out[0]), *y = hs_tensor_f32(out[1]);
    for (int k = 0; k < 12; k++)
        assert_true(m[k] == (k < 8 ? (float)(13 + k) : 0.0f));
    for (int k = 0; k < 20; k++)
        assert_true(y[k] == (k >= 12 ? -(float)(k + 1) : 0.0f));
    hs_tensors_free(out, n);
}

/* f32[5] over four devices in reverse: tiles of 2, device 0's the
 * fourth, which starts past the end (elements 6 and 7): all padding, and
 * nothing of it comes back. */
static void a_tile_past_the_end_is_all_padding(void **state)
{
    (void)state;
    const char *text =
        "HloModule m\nENTRY e {\n"
        "  p = f32[5] parameter(0)\n"
        "  s = f32[5] custom-call(p), custom_call_target=\"Sharding\", "
        "sharding={devices=[4]3,2,1,0}\n"
        "  m = f32[2] custom-call(s), "
        "custom_call_target=\"SPMDFullToShardShape\", sharding={manual}\n"
        "  o = f32[2] constant({7, 8})\n"
        "  a = f32[2] add(m, o)\n"
        "  y = f32[5] custom-call(a), "
        "custom_call_target=\"SPMDShardToFullShape\", "
        "sharding={devices=[4]3,2,1,0}\n"
        "  ROOT t = (f32[2], f32[5]) tuple(m, y)\n}\n";
    int n;
    hs_tensor **out = run_counting(text, 5, &n);
    const float *m = hs_tensor_f32(out[0]), *y = hs_tensor_f32(out[1]);
    assert_true(m[0] == 0.0f && m[1] == 0.0f);
    for (int k = 0; k < 5; k++)
        assert_true(y[k] == 0.0f);
    hs_tensors_free(out, n);
}

/* 2-d tiles: f32[4,6] as [2,2] tiles of [2,3]; the device list and a
 * replicated subgroup put device 0 on the last tile, or on tile (0, 1). */
static void two_dimensional_tiles_and_subgroups(void **state)
{
    (void)state;
    static const struct {
        const char *sharding;
        int r0, c0; /* device 0's tile origin */
    } cases[] = {
        {"devices=[2,2]3,2,1,0", 2, 3},
        {"devices=[2,2]<=[4]", 0, 0},
        {"devices=[1,2,2]2,3,0,1 last_tile_dim_replicate", 0, 3},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        bool rows_split = strncmp(cases[k].sharding, "devices=[2", 10) == 0;
        int h = rows_split ? 2 : 4;
        char text[1024];
        snprintf(text, sizeof text,
                 "HloModule m\nENTRY e {\n"
                 "  p = f32[4,6] parameter(0)\n"
                 "  s = f32[4,6] custom-call(p), "
                 "custom_call_target=\"Sharding\", sharding={%s}\n"
                 "  ROOT m = f32[%d,3] custom-call(s), "
                 "custom_call_target=\"SPMDFullToShardShape\", "
                 "sharding={manual}\n}\n",
                 cases[k].sharding, h);
        int n;
        hs_tensor **out = run_counting(text, 24, &n);
        const float *m = hs_tensor_f32(out[0]);
        for (int r = 0; r < h; r++)
            for (int c = 0; c < 3; c++) {
                float want = (float)((cases[k].r0 + r) * 6 + cases[k].c0 +
                                     c + 1);
                if (m[r * 3 + c] != want)
                    fail_msg("%s: element (%d, %d) is %g, want %g",
                             cases[k].sharding, r, c, (double)m[r * 3 + c],
                             (double)want);
            }
        hs_tensors_free(out, n);
    }
}

/* A shard_map module as JAX writes it, copied from XLA's
 * xla/service/spmd/shardy/shardy_call_inliner_test.cc
 * (MhloToHloShmapBodyNotInlined; openxla/xla, Apache License 2.0): rows
 * over 8 devices, each doubling its row. Device 0's row comes back
 * doubled at row 0; the others' rows are zero. It compiles and prints
 * back as a fixed point at both stages. */
#define SHARD_MAP_MODULE                                                    \
    "HloModule jit_f, entry_computation_layout={(f32[8,8]{1,0})->f32[8,8]{1,0}}\n" \
    "\n"                                                                    \
    "%prefix_shmap_body_suffix.4 (Arg_0.5: f32[1,8]) -> f32[1,8] {\n"      \
    "  %Arg_0.5 = f32[1,8]{1,0} parameter(0)\n"                            \
    "  ROOT %add.6 = f32[1,8]{1,0} add(f32[1,8]{1,0} %Arg_0.5, "           \
    "f32[1,8]{1,0} %Arg_0.5), metadata={source_file=\"-\" source_line=11}\n" \
    "}\n"                                                                   \
    "\n"                                                                    \
    "ENTRY %main.10 (Arg_0.1: f32[8,8]) -> f32[8,8] {\n"                   \
    "  %Arg_0.1 = f32[8,8]{1,0} parameter(0)\n"                            \
    "  %custom-call.2 = f32[8,8]{1,0} custom-call(f32[8,8]{1,0} %Arg_0.1), " \
    "custom_call_target=\"Sharding\", sharding={devices=[8,1]<=[8]}, "     \
    "metadata={source_file=\"-\" source_line=3}\n"                         \
    "  %custom-call.3 = f32[1,8]{1,0} custom-call(f32[8,8]{1,0} "          \
    "%custom-call.2), custom_call_target=\"SPMDFullToShardShape\", "       \
    "sharding={manual}, metadata={source_file=\"-\" source_line=4}\n"      \
    "  %call.7 = f32[1,8]{1,0} call(f32[1,8]{1,0} %custom-call.3), "       \
    "to_apply=%prefix_shmap_body_suffix.4\n"                               \
    "  %custom-call.8 = f32[1,8]{1,0} custom-call(f32[1,8]{1,0} %call.7), " \
    "custom_call_target=\"Sharding\", sharding={manual}, "                 \
    "metadata={source_file=\"-\" source_line=6}\n"                         \
    "  ROOT %custom-call.9 = f32[8,8]{1,0} custom-call(f32[1,8]{1,0} "     \
    "%custom-call.8), custom_call_target=\"SPMDShardToFullShape\", "       \
    "sharding={devices=[8,1]<=[8]}, metadata={source_file=\"-\" "          \
    "source_line=7}\n"                                                      \
    "}\n"

static void a_shard_map_module_from_xla_runs(void **state)
{
    (void)state;
    int n;
    hs_tensor **out = run_counting(SHARD_MAP_MODULE, 64, &n);
    assert_int_equal(n, 1);
    const float *y = hs_tensor_f32(out[0]);
    for (int k = 0; k < 64; k++)
        assert_true(y[k] == (k < 8 ? 2.0f * (float)(k + 1) : 0.0f));
    hs_tensors_free(out, n);

    static const char *const needles[] = {"SPMDFullToShardShape",
                                          "SPMDShardToFullShape"};
    assert_compiles_and_prints_back(SHARD_MAP_MODULE, needles, 2);
}

/* Refused by the check before a run, naming the instruction and why. */
static void assert_check_refuses(const char *text, const char *instr,
                                 const char *why)
{
    hs_module *m = parse(text);
    hs_error err;
    hs_error_clear(&err);
    assert_int_not_equal(hs_device_check(m, &err), HS_OK);
    if (!strstr(err.message, instr) || !strstr(err.message, why))
        fail_msg("expected '%s' and '%s' in: %s", instr, why, err.message);
    hs_module_free(m);
}

static void misfits_and_other_targets_are_refused_up_front(void **state)
{
    (void)state;
    assert_check_refuses(
        "HloModule m\nENTRY e {\n  p = f32[5,4] parameter(0)\n"
        "  s = f32[5,4] custom-call(p), custom_call_target=\"Sharding\", "
        "sharding={devices=[2,1]0,1}\n"
        "  ROOT m = f32[2,4] custom-call(s), "
        "custom_call_target=\"SPMDFullToShardShape\", sharding={manual}\n}\n",
        "m", "the shard is f32[2,4]");
    assert_check_refuses(
        "HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n"
        "  ROOT m = f32[2] custom-call(p), "
        "custom_call_target=\"SPMDFullToShardShape\", sharding={manual}\n}\n",
        "m", "operand has no sharding");
    assert_check_refuses(
        "HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n"
        "  ROOT m = f32[4] custom-call(p), "
        "custom_call_target=\"te_fused_attn_forward_ffi\"\n}\n",
        "te_fused_attn_forward_ffi", "custom-call target");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(device_0s_tile_goes_in_and_comes_back),
        cmocka_unit_test(a_tile_past_the_end_is_all_padding),
        cmocka_unit_test(two_dimensional_tiles_and_subgroups),
        cmocka_unit_test(a_shard_map_module_from_xla_runs),
        cmocka_unit_test(misfits_and_other_targets_are_refused_up_front),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
