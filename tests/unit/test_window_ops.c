/*
 * test_window_ops.c - reduce-window, select-and-scatter and the batch-norm
 * opcodes: shape rules and refusals that name the instruction, small
 * hand-checked runs on the device (padding, stride, base and window
 * dilation, any reducer, variadic, ties), their fast and interpreted paths
 * agreeing, and the VJPs (max pooling's select-and-scatter, sum pooling's
 * pad + reduce-window, batch-norm-training's batch-norm-grad) against
 * finite differences. Written in HLO text.
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

#include "hloscope/hs_autodiff.h"
#include "hloscope/hs_device.h"
#include "hloscope/hs_infer.h"
#include "hloscope/hs_tensor.h"
#include "hlo_test_helpers.h"

#define COMPUTATIONS                                                       \
    "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"          \
    "  ROOT s = f32[] add(a, b)\n}\n"                                      \
    "mul {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"          \
    "  ROOT s = f32[] multiply(a, b)\n}\n"                                 \
    "max {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"          \
    "  ROOT s = f32[] maximum(a, b)\n}\n"                                  \
    "ge {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"           \
    "  ROOT s = pred[] compare(a, b), direction=GE\n}\n"                   \
    /* the same select written the other way round: not the fast path */  \
    "ge_slow {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"      \
    "  ROOT s = pred[] compare(b, a), direction=LE\n}\n"

static void assert_floats(const hs_tensor *t, const float *want, int n)
{
    assert_int_equal(hs_shape_elements(&t->shape), n);
    for (int k = 0; k < n; k++)
        if (!(fabsf(hs_tensor_f32(t)[k] - want[k]) <=
              1e-6f * (1 + fabsf(want[k]))))
            fail_msg("element %d: got %g, want %g", k,
                     (double)hs_tensor_f32(t)[k], (double)want[k]);
}

/* Parses and verifies an entry over the computations above, runs it on
 * args and checks its one output against want. */
static void assert_runs_to(const char *entry, const float *const *args,
                           int n_args, const float *want, int n_want)
{
    char text[4096];
    snprintf(text, sizeof text, "HloModule m\n%sENTRY e {\n%s}\n",
             COMPUTATIONS, entry);
    hs_module *m = parse(text);
    hs_error err;
    hs_error_clear(&err);
    if (hs_module_verify(m, &err) != HS_OK)
        fail_msg("verify: %s", err.message);
    int n;
    hs_tensor **out = run_f32(m, args, n_args, &n);
    assert_floats(out[0], want, n_want);
    hs_tensors_free(out, n);
    hs_module_free(m);
}

static const float x4x4[16] = {0,  1,  2,  3,  4,  5,  6,  7,
                               8,  9,  10, 11, 12, 13, 14, 15};

/* ResNet's stem pooling on a 4x4 image: 3x3 windows at stride 2 with one
 * element of padding; the padding never wins. */
static void max_pool_pads_and_strides(void **state)
{
    (void)state;
    assert_runs_to("  x = f32[1,1,4,4] parameter(0)\n"
                   "  ninf = f32[] constant(-inf)\n"
                   "  ROOT p = f32[1,1,2,2] reduce-window(x, ninf), "
                   "window={size=1x1x3x3 stride=1x1x2x2 "
                   "pad=0_0x0_0x1_1x1_1}, to_apply=max\n",
                   (const float *[]){x4x4}, 1,
                   (const float[]){5, 7, 13, 15}, 4);
}

/* Base dilation puts holes between the elements, window dilation spreads
 * the window; holes and padding are skipped, so a window of only holes is
 * the init value (10 here: not an identity, so a skipped element shows). */
static void sum_over_dilations_skips_holes(void **state)
{
    (void)state;
    /* dilated x: 1 _ 2 _ 3 | pad; windows {k, k + 2} */
    assert_runs_to("  x = f32[3] parameter(0)\n"
                   "  ten = f32[] constant(10)\n"
                   "  ROOT s = f32[4] reduce-window(x, ten), window={size=2 "
                   "pad=0_1 lhs_dilate=2 rhs_dilate=2}, to_apply=add\n",
                   (const float *[]){(const float[]){1, 2, 3}}, 1,
                   (const float[]){13, 10, 15, 10}, 4);
}

/* A reducer without a fast path (multiply) is interpreted. */
static void any_reducer_is_interpreted(void **state)
{
    (void)state;
    assert_runs_to("  x = f32[4] parameter(0)\n"
                   "  one = f32[] constant(1)\n"
                   "  ROOT s = f32[3] reduce-window(x, one), window={size=2}, "
                   "to_apply=mul\n",
                   (const float *[]){(const float[]){1, 2, 3, 4}}, 1,
                   (const float[]){2, 6, 12}, 3);
}

/* Variadic reduce-window: the arg-max of each window, first index on
 * ties. */
static void variadic_reduce_window_gives_argmax(void **state)
{
    (void)state;
    hs_module *m = parse(
        "HloModule m\n"
        "argmax {\n  av = f32[] parameter(0)\n  ai = s32[] parameter(1)\n"
        "  bv = f32[] parameter(2)\n  bi = s32[] parameter(3)\n"
        "  ge = pred[] compare(av, bv), direction=GE\n"
        "  v = f32[] select(ge, av, bv)\n  i = s32[] select(ge, ai, bi)\n"
        "  ROOT t = (f32[], s32[]) tuple(v, i)\n}\n"
        "ENTRY e {\n  x = f32[5] parameter(0)\n"
        "  idx = s32[5] iota(), iota_dimension=0\n"
        "  ninf = f32[] constant(-inf)\n  zero = s32[] constant(0)\n"
        "  ROOT r = (f32[4], s32[4]) reduce-window(x, idx, ninf, zero), "
        "window={size=2}, to_apply=argmax\n}\n");
    hs_error err;
    assert_int_equal(hs_module_verify(m, &err), HS_OK);
    int n;
    hs_tensor **out = run_f32(
        m, (const float *[]){(const float[]){3, 1, 4, 4, 5}}, 1, &n);
    assert_int_equal(n, 2);
    assert_floats(out[0], (const float[]){3, 4, 4, 5}, 4);
    const int32_t *idx = (const int32_t *)out[1]->data;
    assert_int_equal(idx[0], 0);
    assert_int_equal(idx[1], 2);
    assert_int_equal(idx[2], 2); /* a tie: the first of the window */
    assert_int_equal(idx[3], 4);
    hs_tensors_free(out, n);
    hs_module_free(m);
}

static const char sas_text[] =
    "HloModule m\n" COMPUTATIONS "ENTRY e {\n"
    "  x = f32[4] parameter(0)\n  s = f32[3] parameter(1)\n"
    "  zero = f32[] constant(0)\n"
    "  ROOT r = f32[4] select-and-scatter(x, s, zero), window={size=2}, "
    "select=%%%s, scatter=%%add\n}\n";

/* Ties go to the first element of the window in window order, as XLA's
 * select loop keeps its choice while select(chosen, next) holds; the fast
 * path and the interpreted select agree. */
static void select_and_scatter_ties_go_to_the_first(void **state)
{
    (void)state;
    const char *selects[] = {"ge", "ge_slow"};
    for (int k = 0; k < 2; k++) {
        char text[2048];
        snprintf(text, sizeof text, sas_text, selects[k]);
        hs_module *m = parse(text);
        hs_error err;
        assert_int_equal(hs_module_verify(m, &err), HS_OK);
        /* Printing gives back what was parsed. */
        char *printed = print(m);
        assert_contains(printed, "select=%");
        assert_contains(printed, ", scatter=%add");
        free(printed);
        int n;
        hs_tensor **out = run_f32(m,
                              (const float *[]){(const float[]){1, 1, 1, 1},
                                                (const float[]){1, 2, 4}},
                              2, &n);
        assert_floats(out[0], (const float[]){1, 2, 4, 0}, 4);
        hs_tensors_free(out, n);
        hs_module_free(m);
    }
}

/* select= and scatter= are the first and second called computation
 * whatever order the text gives them in; the printer writes XLA's order,
 * and a missing one is a parse error that says which. */
static void select_and_scatter_computations_by_key(void **state)
{
    (void)state;
    hs_module *m = parse("HloModule m\n" COMPUTATIONS "ENTRY e {\n"
                         "  x = f32[4] parameter(0)\n"
                         "  s = f32[3] parameter(1)\n"
                         "  z = f32[] constant(0)\n"
                         "  ROOT r = f32[4] select-and-scatter(x, s, z), "
                         "window={size=2}, scatter=%add, select=%ge\n}\n");
    hs_computation *sel, *sca;
    assert_true(hs_select_and_scatter_computations(m->entry->root, &sel,
                                                   &sca));
    assert_string_equal(sel->name, "ge");
    assert_string_equal(sca->name, "add");
    hs_error err;
    assert_int_equal(hs_module_verify(m, &err), HS_OK);
    char *printed = print(m);
    assert_contains(printed, "window={size=2}, select=%ge, scatter=%add");
    free(printed);
    hs_module_free(m);
    const char *text = "HloModule m\n" COMPUTATIONS "ENTRY e {\n"
                       "  x = f32[4] parameter(0)\n"
                       "  s = f32[3] parameter(1)\n"
                       "  z = f32[] constant(0)\n"
                       "  ROOT r = f32[4] select-and-scatter(x, s, z), "
                       "window={size=2}, scatter=%add\n}\n";
    hs_error_clear(&err);
    assert_null(hs_hlo_parse(text, strlen(text), &err));
    assert_non_null(strstr(err.message, "select-and-scatter needs both "
                                        "select= and scatter="));
}

/* Twelve elements with ties and NaNs under windows of three: the fast
 * path (four outputs side by side, then one by one) and the interpreted
 * select walk each window the same way, so they give the same bits. */
static void select_and_scatter_fast_path_matches_interpreted(void **state)
{
    (void)state;
    const float x[12] = {1, 1, 2, 2, NAN, 3, 3, 1, NAN, NAN, 0, 0};
    const float src[10] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512};
    float got[2][12];
    const char *selects[] = {"ge", "ge_slow"};
    for (int k = 0; k < 2; k++) {
        char text[2048];
        snprintf(text, sizeof text,
                 "HloModule m\n" COMPUTATIONS "ENTRY e {\n"
                 "  x = f32[12] parameter(0)\n  s = f32[10] parameter(1)\n"
                 "  zero = f32[] constant(0)\n"
                 "  ROOT r = f32[12] select-and-scatter(x, s, zero), "
                 "window={size=3}, select=%%%s, scatter=%%add\n}\n",
                 selects[k]);
        hs_module *m = parse(text);
        int n;
        hs_tensor **out = run_f32(m, (const float *[]){x, src}, 2, &n);
        memcpy(got[k], out[0]->data, sizeof got[k]);
        hs_tensors_free(out, n);
        hs_module_free(m);
    }
    assert_memory_equal(got[0], got[1], sizeof got[0]);
    /* windows 0 and 1: the first 2 (element 2) wins over the ties before
     * it; no source is lost */
    assert_true(got[0][2] == 1 + 2);
    float total = 0;
    for (int k = 0; k < 12; k++)
        total += got[0][k];
    assert_true(total == 1023);
}

/* 2-D max-pool gradient on the stem's window: each window's maximum gets
 * its source value; padding is never selected. */
static void select_and_scatter_pads_and_strides(void **state)
{
    (void)state;
    float want[16] = {0};
    want[5] = 1, want[7] = 2, want[13] = 3, want[15] = 4;
    assert_runs_to("  x = f32[4,4] parameter(0)\n  s = f32[2,2] parameter(1)\n"
                   "  zero = f32[] constant(0)\n"
                   "  ROOT r = f32[4,4] select-and-scatter(x, s, zero), "
                   "window={size=3x3 stride=2x2 pad=1_1x1_1}, select=%ge, "
                   "scatter=%add\n",
                   (const float *[]){x4x4, (const float[]){1, 2, 3, 4}}, 2,
                   want, 16);
}

/* Zero-sized operands, however large their other dimensions: the
 * kernels walk nothing (f32[0,2^63-1] once overflowed the index tables). */
static void empty_operands_walk_nothing(void **state)
{
    (void)state;
    hs_module *m = parse(
        "HloModule m\n" COMPUTATIONS "ENTRY e {\n"
        "  x = f32[0,9223372036854775807] parameter(0)\n"
        "  s = f32[0,4611686018427387903] parameter(1)\n"
        "  c = f32[0] parameter(2)\n"
        "  z = f32[] constant(0)\n"
        "  rw = f32[0,4611686018427387903] reduce-window(x, z), "
        "window={size=1x2 stride=1x2}, to_apply=max\n"
        "  sas = f32[0,9223372036854775807] select-and-scatter(x, s, z), "
        "window={size=1x2 stride=1x2}, select=%ge, scatter=%add\n"
        "  bn = (f32[0,9223372036854775807], f32[0], f32[0]) "
        "batch-norm-training(x, c, c), epsilon=0.001, feature_index=0\n"
        "  y = f32[0,9223372036854775807] get-tuple-element(bn), index=0\n"
        "  ROOT t = (f32[0,4611686018427387903], f32[0,9223372036854775807], "
        "f32[0,9223372036854775807]) tuple(rw, sas, y)\n}\n");
    hs_error err;
    hs_error_clear(&err);
    if (hs_module_verify(m, &err) != HS_OK)
        fail_msg("verify: %s", err.message);
    static const float none[1];
    int n;
    hs_tensor **out = run_f32(m, (const float *[]){none, none, none}, 3, &n);
    assert_int_equal(n, 3);
    for (int k = 0; k < 3; k++)
        assert_int_equal(hs_shape_elements(&out[k]->shape), 0);
    hs_tensors_free(out, n);
    hs_module_free(m);
}

/* The clock charges one reducer application per window element per
 * output, one select per window element and a scatter per source element,
 * and batch norm's element-wise work per operand element. */
static void costs_count_window_elements(void **state)
{
    (void)state;
    struct {
        const char *entry;
        double flops;
    } cases[] = {
        {"  x = f32[1,1,4,4] parameter(0)\n  ninf = f32[] constant(-inf)\n"
         "  ROOT p = f32[1,1,2,2] reduce-window(x, ninf), "
         "window={size=1x1x3x3 stride=1x1x2x2 pad=0_0x0_0x1_1x1_1}, "
         "to_apply=max\n",
         4 * 9},
        {"  x = f32[4,4] parameter(0)\n  s = f32[2,2] parameter(1)\n"
         "  zero = f32[] constant(0)\n"
         "  ROOT r = f32[4,4] select-and-scatter(x, s, zero), "
         "window={size=3x3 stride=2x2 pad=1_1x1_1}, select=%ge, "
         "scatter=%add\n",
         4 * (9 + 1)},
        {"  x = f32[4,4] parameter(0)\n  c = f32[4] parameter(1)\n"
         "  ROOT t = (f32[4,4], f32[4], f32[4]) batch-norm-training(x, c, "
         "c), epsilon=0.001, feature_index=1\n",
         16 * 7},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char text[4096];
        snprintf(text, sizeof text, "HloModule m\n%sENTRY e {\n%s}\n",
                 COMPUTATIONS, cases[k].entry);
        hs_module *m = parse(text);
        hs_tensor *args[2];
        for (int p = 0; p < m->entry->n_params; p++) {
            args[p] = hs_tensor_new(&m->entry->params[p]->shape);
            memset(args[p]->data, 0, (size_t)hs_shape_bytes(&args[p]->shape));
        }
        hs_tensor **out = NULL;
        int n = 0;
        hs_run_stats stats;
        hs_error err;
        hs_error_clear(&err);
        if (hs_device_run(m, NULL, args, m->entry->n_params, &out, &n,
                          &stats, &err) != HS_OK)
            fail_msg("run: %s", err.message);
        assert_true(stats.flops == cases[k].flops);
        assert_true(stats.bytes_accessed > 0);
        hs_tensors_free(out, n);
        for (int p = 0; p < m->entry->n_params; p++)
            hs_tensor_free(args[p]);
        hs_module_free(m);
    }
}

static void shape_rules_refuse_naming_the_instruction(void **state)
{
    (void)state;
    assert_verify_refuses("HloModule m\n" COMPUTATIONS "ENTRY e {\n"
                   "  x = f32[4,4] parameter(0)\n  z = f32[] constant(0)\n"
                   "  ROOT bad_rank = f32[2] reduce-window(x, z), "
                   "window={size=2 stride=2}, to_apply=add\n}\n",
                   "bad_rank", "size= has 1 entries");
    assert_verify_refuses("HloModule m\n" COMPUTATIONS "ENTRY e {\n"
                   "  x = f32[4] parameter(0)\n  z = f32[] constant(0)\n"
                   "  ROOT wrong = f32[3] reduce-window(x, z), "
                   "window={size=2 stride=2}, to_apply=add\n}\n",
                   "wrong", "f32[2]");
    assert_verify_refuses("HloModule m\n" COMPUTATIONS "ENTRY e {\n"
                   "  x = f32[4] parameter(0)\n  s = f32[2] parameter(1)\n"
                   "  z = f32[] constant(0)\n"
                   "  ROOT sas = f32[4] select-and-scatter(x, s, z), "
                   "window={size=2}, select=%ge, scatter=%add\n}\n",
                   "sas", "shape of the operand's windows");
    assert_verify_refuses("HloModule m\n" COMPUTATIONS "ENTRY e {\n"
                   "  x = f32[4] parameter(0)\n  s = f32[3] parameter(1)\n"
                   "  z = f32[] constant(0)\n"
                   "  ROOT sel = f32[4] select-and-scatter(x, s, z), "
                   "window={size=2}, select=%add, scatter=%add\n}\n",
                   "sel", "must take two f32[] and return pred[]");
    assert_verify_refuses("HloModule m\nENTRY e {\n"
                   "  x = f32[2,3] parameter(0)\n  c = f32[3] parameter(1)\n"
                   "  ROOT bn = (f32[2,3], f32[3], f32[3]) "
                   "batch-norm-training(x, c, c), epsilon=0.001, "
                   "feature_index=2\n}\n",
                   "bn", "feature_index=2 is not a dimension");
    assert_verify_refuses("HloModule m\nENTRY e {\n"
                   "  x = f32[2,3] parameter(0)\n  c = f32[2] parameter(1)\n"
                   "  ROOT bn2 = (f32[2,3], f32[3], f32[3]) "
                   "batch-norm-training(x, c, c), epsilon=0.001, "
                   "feature_index=1\n}\n",
                   "bn2", "scale f32[2] must be f32[3]");
    assert_verify_refuses("HloModule m\nENTRY e {\n"
                   "  x = f32[2,3] parameter(0)\n  c = f32[3] parameter(1)\n"
                   "  ROOT noeps = f32[2,3] batch-norm-inference(x, c, c, c, "
                   "c), feature_index=1\n}\n",
                   "noeps", "needs epsilon= and feature_index=");
}

static const char bn_text[] =
    "HloModule m\nENTRY e {\n"
    "  x = f32[2,2] parameter(0)\n  scale = f32[2] parameter(1)\n"
    "  offset = f32[2] parameter(2)\n"
    "  t = (f32[2,2], f32[2], f32[2]) batch-norm-training(x, scale, "
    "offset), epsilon=0, feature_index=1\n"
    "  mean = f32[2] get-tuple-element(t), index=1\n"
    "  var = f32[2] get-tuple-element(t), index=2\n"
    "  inf = f32[2,2] batch-norm-inference(x, scale, offset, mean, var), "
    "epsilon=0, feature_index=1\n"
    "  y = f32[2,2] get-tuple-element(t), index=0\n"
    "  ROOT r = (f32[2,2], f32[2], f32[2], f32[2,2]) tuple(y, mean, var, "
    "inf)\n}\n";

/* Two examples per feature: mean and (biased) variance by hand, the
 * output +-1 scaled and shifted; inference with those statistics gives
 * the same output. Attributes print back as written. */
static void batch_norm_training_and_inference_by_hand(void **state)
{
    (void)state;
    hs_module *m = parse(bn_text);
    hs_error err;
    assert_int_equal(hs_module_verify(m, &err), HS_OK);
    char *printed = print(m);
    assert_contains(printed, "batch-norm-training(f32[2,2]{1,0} %x, "
                             "f32[2]{0} %scale, f32[2]{0} %offset), "
                             "epsilon=0, feature_index=1");
    free(printed);
    int n;
    hs_tensor **out = run_f32(m,
                          (const float *[]){(const float[]){1, 2, 3, 6},
                                            (const float[]){2, 1},
                                            (const float[]){0, 10}},
                          3, &n);
    assert_floats(out[1], (const float[]){2, 4}, 2);
    assert_floats(out[2], (const float[]){1, 4}, 2);
    const float y[4] = {-2, 9, 2, 11};
    assert_floats(out[0], y, 4);
    assert_floats(out[3], y, 4);
    hs_tensors_free(out, n);
    hs_module_free(m);
}

/* A feature whose mean is 1e4 times its spread: the two-pass variance
 * keeps it (E[x^2] - E[x]^2 in f32 would lose every digit). */
static void batch_norm_variance_survives_a_large_mean(void **state)
{
    (void)state;
    hs_module *m = parse(bn_text);
    int n;
    hs_tensor **out = run_f32(m,
                          (const float *[]){(const float[]){10000, 0, 10002,
                                                            0},
                                            (const float[]){1, 1},
                                            (const float[]){0, 0}},
                          3, &n);
    assert_floats(out[2], (const float[]){1, 0}, 2);
    hs_tensors_free(out, n);
    hs_module_free(m);
}

/* The gradient of sum(f(x, params) * g) with respect to parameter `wrt`
 * of fwd (parameters: x, ..., g), run on data; returns it. */
static hs_tensor **grad_of(const char *fwd_text, int wrt,
                           const float *const *data, int n_args,
                           int *n_out)
{
    hs_module *fm = parse(fwd_text);
    hs_module *m = hs_module_new("grad");
    hs_builder *b = hs_builder_new(m, "main", true);
    hs_instruction *p[8];
    for (int k = 0; k < n_args; k++)
        p[k] = hs_b_parameter(b, k, &fm->entry->params[k]->shape, NULL);
    hs_instruction *value = NULL, *g = NULL;
    hs_error err;
    hs_error_clear(&err);
    if (hs_autodiff_computation(b, fm->entry, p, n_args, &wrt, 1, NULL,
                                &value, &g, &err) != HS_OK)
        fail_msg("autodiff: %s", err.message);
    assert_non_null(hs_builder_finish(b, g, &err));
    hs_error_clear(&err);
    if (hs_module_verify(m, &err) != HS_OK)
        fail_msg("verify: %s", err.message);
    /* The gradient module prints and parses back to the same text. */
    char *text = print(m);
    hs_module *again = parse(text);
    char *text2 = print(again);
    assert_string_equal(text, text2);
    free(text);
    free(text2);
    hs_module_free(again);
    hs_tensor **out = run_f32(m, data, n_args, n_out);
    hs_module_free(m);
    hs_module_free(fm);
    return out;
}

/* The same loss on the device, for finite differences. */
static double loss_of(const char *fwd_text, const float *const *data,
                      int n_args)
{
    hs_module *fm = parse(fwd_text);
    int n;
    hs_tensor **out = run_f32(fm, data, n_args, &n);
    double v = hs_tensor_f32(out[0])[0];
    hs_tensors_free(out, n);
    hs_module_free(fm);
    return v;
}

/* Central differences of the loss in every element of parameter wrt
 * (values chosen so that no maximum is tied and steps never reorder). */
static void assert_matches_differences(const char *fwd, int wrt,
                                       float **data, int n_args, int n,
                                       const hs_tensor *g, double tol)
{
    for (int k = 0; k < n; k++) {
        float keep = data[wrt][k], h = 1e-2f;
        data[wrt][k] = keep + h;
        double up = loss_of(fwd, (const float *const *)data, n_args);
        data[wrt][k] = keep - h;
        double down = loss_of(fwd, (const float *const *)data, n_args);
        data[wrt][k] = keep;
        double want = (up - down) / (2 * h);
        if (fabs(hs_tensor_f32(g)[k] - want) > tol * (1 + fabs(want)))
            fail_msg("d loss / d p%d[%d]: got %g, differences give %g", wrt,
                     k, (double)hs_tensor_f32(g)[k], want);
    }
}

static const char pool_loss[] =
    "HloModule f\n" COMPUTATIONS "ENTRY fwd {\n"
    "  x = f32[1,1,5,5] parameter(0)\n  g = f32[1,1,%d,%d] parameter(1)\n"
    "  init = f32[] constant(%s)\n"
    "  pool = f32[1,1,%d,%d] reduce-window(x, init), window={size=1x1x%s "
    "stride=1x1x%s pad=%s}, to_apply=%s\n"
    "  prod = f32[1,1,%d,%d] multiply(pool, g)\n"
    "  zero = f32[] constant(0)\n"
    "  ROOT loss = f32[] reduce(prod, zero), dimensions={0,1,2,3}, "
    "to_apply=add\n}\n";

static void pooling_gradients_match_differences(void **state)
{
    (void)state;
    struct {
        const char *init, *size, *stride, *pad, *reducer;
        int out;
    } cases[] = {
        {"-inf", "3x3", "2x2", "0_0x0_0x1_1x1_1", "max", 3},
        {"0", "3x3", "2x2", "0_0x0_0x1_1x1_1", "add", 3},
        {"0", "2x3", "1x2", "0_0x0_0x0_0x1_0", "add", 4},
    };
    float x[25], g[16];
    for (int k = 0; k < 25; k++)
        x[k] = (float)((k * 7) % 25) * 0.5f; /* distinct: no ties */
    for (int k = 0; k < 16; k++)
        g[k] = 1.0f + 0.25f * (float)k;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int o = cases[c].out, o2 = c == 2 ? 2 : o;
        char text[4096];
        snprintf(text, sizeof text, pool_loss, o, o2, cases[c].init, o, o2,
                 cases[c].size, cases[c].stride, cases[c].pad,
                 cases[c].reducer, o, o2);
        float *data[2] = {x, g};
        int n;
        hs_tensor **gx = grad_of(text, 0, (const float *const *)data, 2, &n);
        assert_matches_differences(text, 0, data, 2, 25, gx[0], 1e-3);
        hs_tensors_free(gx, n);
    }
}

static const char bn_loss[] =
    "HloModule f\n" COMPUTATIONS "ENTRY fwd {\n"
    "  x = f32[3,2,2] parameter(0)\n  scale = f32[2] parameter(1)\n"
    "  offset = f32[2] parameter(2)\n  g = f32[3,2,2] parameter(3)\n"
    "  t = (f32[3,2,2], f32[2], f32[2]) batch-norm-training(x, scale, "
    "offset), epsilon=0.001, feature_index=1\n"
    "  y = f32[3,2,2] get-tuple-element(t), index=0\n"
    "  prod = f32[3,2,2] multiply(y, g)\n  zero = f32[] constant(0)\n"
    "  ROOT loss = f32[] reduce(prod, zero), dimensions={0,1,2}, "
    "to_apply=add\n}\n";

/* batch-norm-training's VJP is batch-norm-grad: input, scale and offset
 * gradients agree with finite differences. */
static void batch_norm_gradients_match_differences(void **state)
{
    (void)state;
    float x[12], scale[2] = {1.5f, -0.5f}, offset[2] = {0.25f, 2},
                 g[12];
    for (int k = 0; k < 12; k++) {
        x[k] = (float)((k * 5) % 12) * 0.3f - 1.0f;
        g[k] = (float)((k * 7) % 12) * 0.1f - 0.5f;
    }
    float *data[4] = {x, scale, offset, g};
    for (int wrt = 0; wrt < 3; wrt++) {
        int n;
        hs_tensor **gr = grad_of(bn_loss, wrt, (const float *const *)data, 4,
                                 &n);
        assert_matches_differences(bn_loss, wrt, data, 4,
                                   wrt == 0 ? 12 : 2, gr[0], 2e-2);
        hs_tensors_free(gr, n);
    }
}

/* A reducer without a gradient rule is refused naming the instruction. */
static void other_reducers_have_no_gradient(void **state)
{
    (void)state;
    char text[4096];
    snprintf(text, sizeof text, pool_loss, 3, 3, "1", 3, 3, "3x3", "2x2",
             "0_0x0_0x1_1x1_1", "mul", 3, 3);
    hs_module *fm = parse(text);
    hs_module *m = hs_module_new("grad");
    hs_builder *b = hs_builder_new(m, "main", true);
    hs_instruction *p[2];
    for (int k = 0; k < 2; k++)
        p[k] = hs_b_parameter(b, k, &fm->entry->params[k]->shape, NULL);
    hs_instruction *value = NULL, *g = NULL;
    hs_error err;
    hs_error_clear(&err);
    assert_int_equal(hs_autodiff_computation(b, fm->entry, p, 2, (int[]){0},
                                             1, NULL, &value, &g, &err),
                     HS_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.message, "reduce-window with reducer mul"));
    if (!strstr(err.message, "(instruction reduce-window"))
        fail_msg("%s", err.message);
    hs_builder_free(b);
    hs_module_free(m);
    hs_module_free(fm);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(max_pool_pads_and_strides),
        cmocka_unit_test(sum_over_dilations_skips_holes),
        cmocka_unit_test(any_reducer_is_interpreted),
        cmocka_unit_test(variadic_reduce_window_gives_argmax),
        cmocka_unit_test(select_and_scatter_ties_go_to_the_first),
        cmocka_unit_test(select_and_scatter_computations_by_key),
        cmocka_unit_test(select_and_scatter_fast_path_matches_interpreted),
        cmocka_unit_test(select_and_scatter_pads_and_strides),
        cmocka_unit_test(empty_operands_walk_nothing),
        cmocka_unit_test(costs_count_window_elements),
        cmocka_unit_test(shape_rules_refuse_naming_the_instruction),
        cmocka_unit_test(batch_norm_training_and_inference_by_hand),
        cmocka_unit_test(batch_norm_variance_survives_a_large_mean),
        cmocka_unit_test(pooling_gradients_match_differences),
        cmocka_unit_test(batch_norm_gradients_match_differences),
        cmocka_unit_test(other_reducers_have_no_gradient),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
