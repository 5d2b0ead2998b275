/*
 * test_gather_sort.c - gather, scatter, sort and rng: shape rules that
 * refuse naming the instruction, the dimension numbers printed back as
 * written and as the gradients write them, the out-of-range rules (gather
 * clamps, scatter skips), an interpreted update computation agreeing with
 * the fast path, and rng's reproducible draws inside [a, b). The numerics
 * against PyTorch are tests/reference/gather_check.py's.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hloscope/hs_device.h"
#include "hloscope/hs_infer.h"
#include "hloscope/hs_tensor.h"
#include "hlo_test_helpers.h"

#define COMPUTATIONS                                                       \
    "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"          \
    "  ROOT s = f32[] add(a, b)\n}\n"                                      \
    /* the same add, written so that it is not the fast path */           \
    "add_slow {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"     \
    "  z = f32[] constant(0)\n  bz = f32[] add(b, z)\n"                    \
    "  ROOT s = f32[] add(bz, a)\n}\n"                                     \
    "lt {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"           \
    "  ROOT s = pred[] compare(a, b), direction=LT\n}\n"

static hs_module *verified(const char *entry)
{
    char text[4096];
    snprintf(text, sizeof text, "HloModule m\n%sENTRY e {\n%s}\n",
             COMPUTATIONS, entry);
    hs_module *m = parse(text);
    hs_error err;
    hs_error_clear(&err);
    if (hs_module_verify(m, &err) != HS_OK)
        fail_msg("verify: %s", err.message);
    return m;
}

static void assert_floats(const hs_tensor *t, const float *want, int n)
{
    assert_int_equal(hs_shape_elements(&t->shape), n);
    for (int k = 0; k < n; k++)
        if (hs_tensor_f32(t)[k] != want[k])
            fail_msg("element %d: got %g, want %g", k,
                     (double)hs_tensor_f32(t)[k], (double)want[k]);
}

/* The entry over the computations above must be refused naming instr. */
static void assert_refused(const char *entry, const char *instr,
                           const char *why)
{
    char text[4096];
    snprintf(text, sizeof text, "HloModule m\n%sENTRY e {\n%s}\n",
             COMPUTATIONS, entry);
    assert_verify_refuses(text, instr, why);
}

static void shape_rules_refuse_naming_the_instruction(void **state)
{
    (void)state;
    assert_refused("  x = f32[5,3] parameter(0)\n  i = s32[4] parameter(1)\n"
                   "  ROOT g1 = f32[4,3] gather(x, i), offset_dims={1}, "
                   "collapsed_slice_dims={0}, start_index_map={0}, "
                   "index_vector_dim=1, slice_sizes={1,4}\n",
                   "g1", "slice size 4 of dimension 1 does not fit");
    assert_refused("  x = f32[5,3] parameter(0)\n  i = f32[4] parameter(1)\n"
                   "  ROOT g2 = f32[4,3] gather(x, i), offset_dims={1}, "
                   "collapsed_slice_dims={0}, start_index_map={0}, "
                   "index_vector_dim=1, slice_sizes={1,3}\n",
                   "g2", "indices must be integers");
    assert_refused("  x = f32[5,3] parameter(0)\n  i = s32[4] parameter(1)\n"
                   "  ROOT g3 = f32[4,3] gather(x, i), offset_dims={1}, "
                   "collapsed_slice_dims={0}, start_index_map={0}, "
                   "slice_sizes={1,3}\n",
                   "g3", "needs index_vector_dim=");
    assert_refused("  x = f32[5,3] parameter(0)\n  i = s32[4,1] parameter(1)\n"
                   "  u = f32[4,2] parameter(2)\n"
                   "  ROOT s1 = f32[5,3] scatter(x, i, u), "
                   "update_window_dims={1}, inserted_window_dims={0}, "
                   "scatter_dims_to_operand_dims={0}, index_vector_dim=1, "
                   "to_apply=lt\n",
                   "s1", "must return the operands' element types");
    assert_refused("  x = f32[5,3] parameter(0)\n  i = s32[4,1] parameter(1)\n"
                   "  u = f32[3,3] parameter(2)\n"
                   "  ROOT s2 = f32[5,3] scatter(x, i, u), "
                   "update_window_dims={1}, inserted_window_dims={0}, "
                   "scatter_dims_to_operand_dims={0}, index_vector_dim=1, "
                   "to_apply=add\n",
                   "s2", "update scatter dimension 0 has size 3");
    assert_refused("  x = f32[5] parameter(0)\n"
                   "  ROOT so = f32[5] sort(x), dimensions={0}, "
                   "to_apply=add\n",
                   "so", "must return pred[]");
    assert_refused("  a = f32[] parameter(0)\n"
                   "  ROOT r = f32[3] rng(a, a), distribution=rng_cauchy\n",
                   "r", "neither rng_uniform nor rng_normal");
}

/* torch_xla's torch.gather(x, 1, i) as a gather with batching dimensions
 * (the Mixtral dump's form); the starts of out-of-range indices are
 * clamped, so 9 reads column 2 and -1 column 0. */
static void gather_with_batching_dimensions_clamps(void **state)
{
    (void)state;
    hs_module *m = verified(
        "  x = f32[2,3] parameter(0)\n"
        "  i = s32[2,2] constant({{2, 9}, {-1, 1}})\n"
        "  ROOT g = f32[2,2] gather(x, i), offset_dims={}, "
        "collapsed_slice_dims={1}, start_index_map={1}, "
        "operand_batching_dims={0}, start_indices_batching_dims={0}, "
        "index_vector_dim=2, slice_sizes={1,1}\n");
    char *text = print(m);
    assert_contains(text, "operand_batching_dims={0}, "
                          "start_indices_batching_dims={0}");
    free(text);
    const float x[6] = {10, 11, 12, 20, 21, 22};
    const float *args[] = {x};
    int n;
    hs_tensor **out = run_f32(m, args, 1, &n);
    assert_floats(out[0], (const float[]){12, 12, 20, 21}, 4);
    hs_tensors_free(out, n);
    hs_module_free(m);
}

/* A window that does not fit is skipped whole, even when its start is in
 * range (row 4 of 5 with a 2-row window); duplicates add up; the
 * interpreted update computation gives the fast path's result. */
static void scatter_skips_windows_out_of_range(void **state)
{
    (void)state;
    const char *fmt =
        "  x = f32[5,2] parameter(0)\n"
        "  i = s32[4,1] constant({{1}, {4}, {1}, {-1}})\n"
        "  u = f32[4,2,2] parameter(1)\n"
        "  ROOT s = f32[5,2] scatter(x, i, u), update_window_dims={1,2}, "
        "inserted_window_dims={}, scatter_dims_to_operand_dims={0}, "
        "index_vector_dim=1, to_apply=%s\n";
    const float x[10] = {0};
    float u[16];
    for (int k = 0; k < 16; k++)
        u[k] = (float)(k + 1);
    const float *args[] = {x, u};
    /* windows 0 and 2 land on rows 1..2; 1 (rows 4..5) and 3 are out */
    const float want[10] = {0, 0, 1 + 9, 2 + 10, 3 + 11, 4 + 12, 0, 0, 0, 0};
    const char *comps[] = {"add", "add_slow"};
    for (int c = 0; c < 2; c++) {
        char entry[1024];
        snprintf(entry, sizeof entry, fmt, comps[c]);
        hs_module *m = verified(entry);
        int n;
        hs_tensor **out = run_f32(m, args, 2, &n);
        assert_floats(out[0], want, 10);
        hs_tensors_free(out, n);
        hs_module_free(m);
    }
}

/* Sorting along dimension 0 of a [3,2] array sorts each column on its
 * own (the rows are strided in memory). */
static void sort_along_a_leading_dimension(void **state)
{
    (void)state;
    hs_module *m = verified("  x = f32[3,2] parameter(0)\n"
                            "  ROOT s = f32[3,2] sort(x), dimensions={0}, "
                            "to_apply=lt\n");
    const float x[6] = {3, -1, 1, -3, 2, -2};
    const float *args[] = {x};
    int n;
    hs_tensor **out = run_f32(m, args, 1, &n);
    assert_floats(out[0], (const float[]){1, -3, 2, -2, 3, -1}, 6);
    hs_tensors_free(out, n);
    hs_module_free(m);
}

/* The same module twice gives the same draws; every draw is in [a, b)
 * and they are not all equal; the mean of 4096 uniforms on [2, 4) is
 * within 0.05 of 3 (its standard error is 0.009). */
static void rng_is_reproducible_and_in_range(void **state)
{
    (void)state;
    hs_module *m = verified("  a = f32[] constant(2)\n"
                            "  b = f32[] constant(4)\n"
                            "  ROOT r = f32[4096] rng(a, b), "
                            "distribution=rng_uniform\n");
    int n1, n2;
    hs_tensor **o1 = run_f32(m, NULL, 0, &n1), **o2 = run_f32(m, NULL, 0, &n2);
    const float *v = hs_tensor_f32(o1[0]);
    assert_memory_equal(v, hs_tensor_f32(o2[0]), 4096 * sizeof(float));
    double sum = 0;
    bool varies = false;
    for (int k = 0; k < 4096; k++) {
        assert_true(v[k] >= 2.0f && v[k] < 4.0f);
        varies |= v[k] != v[0];
        sum += v[k];
    }
    assert_true(varies);
    assert_true(fabs(sum / 4096 - 3.0) < 0.05);
    hs_tensors_free(o1, n1);
    hs_tensors_free(o2, n2);
    hs_module_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(shape_rules_refuse_naming_the_instruction),
        cmocka_unit_test(gather_with_batching_dimensions_clamps),
        cmocka_unit_test(scatter_skips_windows_out_of_range),
        cmocka_unit_test(sort_along_a_leading_dimension),
        cmocka_unit_test(rng_is_reproducible_and_in_range),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
