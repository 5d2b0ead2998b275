/*
 * test_conv.c - convolution: dim_labels read and printed back, XLA's
 * shape checks (each refusal names the instruction and what disagrees),
 * small convolutions checked by hand for every part of the window and
 * both group counts, the kernel's layouts agreeing with each other and
 * with themselves run to run, the FLOP count, the refusal of element
 * types other than f32, and the VJP: JAX's convolutions with swapped
 * dimension numbers, checked against central differences.
 * (tests/reference/conv_check.py compares with PyTorch.)
 */
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
#include "hloscope/hs_ir.h"
#include "hlo_test_helpers.h"

/* ---- dim_labels ------------------------------------------------------ */

static void dim_labels_parse_and_print_back(void **state)
{
    (void)state;
    static const char *const forms[] = {
        "b01f_01io->b01f", "bf01_oi01->bf01", "b0f_0io->b0f",
        "bf012_oi012->bf012", "bf_io->bf", "f0b1_1o0i->0fb1",
        "1fb0_i01o->b1f0"};
    for (size_t k = 0; k < sizeof forms / sizeof forms[0]; k++) {
        hs_conv_dims d;
        const char *why = NULL;
        assert_true(hs_conv_dims_parse(forms[k], &d, &why));
        char back[40];
        assert_true(hs_conv_dims_print(&d, back, sizeof back));
        assert_string_equal(back, forms[k]);
    }
    hs_conv_dims d;
    const char *why = NULL;
    assert_true(hs_conv_dims_parse("f0b1_1o0i->0fb1", &d, &why));
    assert_int_equal(d.n_spatial, 2);
    assert_int_equal(d.lhs_batch, 2);
    assert_int_equal(d.lhs_feature, 0);
    assert_int_equal(d.lhs_spatial[0], 1);
    assert_int_equal(d.lhs_spatial[1], 3);
    assert_int_equal(d.rhs_output, 1);
    assert_int_equal(d.rhs_input, 3);
    assert_int_equal(d.rhs_spatial[0], 2);
    assert_int_equal(d.rhs_spatial[1], 0);
    assert_int_equal(d.out_spatial[0], 0);
    assert_int_equal(d.out_feature, 1);
    assert_int_equal(d.out_batch, 2);

    static const char *const bad[] = {
        "b01f_01io",       /* no output */
        "b01f_01i->b01f",  /* ranks differ */
        "b01f_01io->b0f1x", "bb1f_01io->b01f", /* repeated label */
        "b01f_01xo->b01f", /* unknown letter */
        "b02f_01io->b01f", /* digit beyond the spatial rank */
        "b01_01io->b01f"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        why = NULL;
        assert_false(hs_conv_dims_parse(bad[k], &d, &why));
        assert_non_null(why);
    }
}

static void window_prints_what_xla_prints(void **state)
{
    (void)state;
    hs_window w;
    memset(&w, 0, sizeof w);
    w.rank = 2;
    for (int d = 0; d < 2; d++) {
        w.dim[d].size = 3;
        w.dim[d].stride = 1;
        w.dim[d].lhs_dilate = 1;
        w.dim[d].rhs_dilate = 1;
    }
    char buf[128];
    assert_true(hs_window_print(&w, buf, sizeof buf));
    assert_string_equal(buf, "{size=3x3}");
    w.dim[1].stride = 2;
    w.dim[0].pad_lo = -1;
    w.dim[1].pad_hi = 2;
    w.dim[0].reversal = true;
    assert_true(hs_window_print(&w, buf, sizeof buf));
    assert_string_equal(buf, "{size=3x3 stride=1x2 pad=-1_0x0_2 "
                             "rhs_reversal=1x0}");
    assert_false(hs_window_print(&w, buf, 12));
}

/* ---- shape rule ------------------------------------------------------ */

/* A module with one convolution y of x and k, written with `attrs`. */
static char *conv_module(const char *x, const char *k, const char *y,
                         const char *attrs)
{
    char *text = malloc(1024);
    snprintf(text, 1024,
             "HloModule m\nENTRY e {\n  x = %s parameter(0)\n"
             "  k = %s parameter(1)\n  ROOT y = %s convolution(x, k), %s\n}\n",
             x, k, y, attrs);
    return text;
}

/* Verifies the module; returns the error message ("" when it verifies). */
static const char *verify_text(const char *text, hs_error *err)
{
    hs_error_clear(err);
    hs_module *m = hs_hlo_parse(text, strlen(text), err);
    if (m) {
        hs_status st = hs_module_verify(m, err);
        hs_module_free(m);
        if (st == HS_OK)
            err->message[0] = '\0';
    }
    return err->message;
}

static void infers_xla_shapes(void **state)
{
    (void)state;
    static const struct {
        const char *x, *k, *y, *attrs;
    } ok[] = {
        /* ResNet's stem, NCHW and NHWC */
        {"f32[2,3,224,224]", "f32[64,3,7,7]", "f32[2,64,112,112]",
         "window={size=7x7 stride=2x2 pad=3_3x3_3}, "
         "dim_labels=bf01_oi01->bf01"},
        {"f32[2,224,224,3]", "f32[7,7,3,64]", "f32[2,112,112,64]",
         "window={size=7x7 stride=2x2 pad=3_3x3_3}, "
         "dim_labels=b01f_01io->b01f"},
        /* depthwise with a channel multiplier */
        {"f32[1,32,10,10]", "f32[64,1,3,3]", "f32[1,64,10,10]",
         "window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01, "
         "feature_group_count=32"},
        /* batch groups: the output batch is the input's / 4 */
        {"f32[8,6,5]", "f32[12,6,3]", "f32[2,12,3]",
         "window={size=3}, dim_labels=bf0_oi0->bf0, batch_group_count=4"},
        /* transposed (lhs_dilate), atrous, negative padding */
        {"f32[1,4,7]", "f32[2,4,3]", "f32[1,2,12]",
         "window={size=3 pad=-1_2 lhs_dilate=2 rhs_dilate=1}, "
         "dim_labels=bf0_oi0->bf0"},
        {"f32[1,4,9]", "f32[2,4,3]", "f32[1,2,5]",
         "window={size=3 rhs_dilate=2}, dim_labels=bf0_oi0->bf0"},
        /* no spatial dimension: a matrix product */
        {"f32[3,4]", "f32[4,5]", "f32[3,5]", "dim_labels=bf_io->bf"},
    };
    hs_error err;
    for (size_t k = 0; k < sizeof ok / sizeof ok[0]; k++) {
        char *t = conv_module(ok[k].x, ok[k].k, ok[k].y, ok[k].attrs);
        const char *msg = verify_text(t, &err);
        if (msg[0])
            fail_msg("%s\n%s", msg, t);
        free(t);
    }
}

static void refusals_name_the_instruction(void **state)
{
    (void)state;
    static const struct {
        const char *x, *k, *y, *attrs, *says;
    } bad[] = {
        {"f32[1,4,8,8]", "f32[6,3,3,3]", "f32[1,6,6,6]",
         "window={size=3x3}, dim_labels=bf01_oi01->bf01",
         "kernel's input feature dimension is 3"},
        {"f32[1,4,8,8]", "f32[6,2,3,3]", "f32[1,6,6,6]",
         "window={size=3x3}, dim_labels=bf01_oi01->bf01, "
         "feature_group_count=3",
         "not a multiple of feature_group_count=3"},
        {"f32[1,4,8,8]", "f32[6,1,3,3]", "f32[1,6,6,6]",
         "window={size=3x3}, dim_labels=bf01_oi01->bf01, "
         "feature_group_count=4",
         "kernel output feature dimension (6) is not a multiple of "
         "feature_group_count=4"},
        {"f32[3,4,8,8]", "f32[6,4,3,3]", "f32[1,6,6,6]",
         "window={size=3x3}, dim_labels=bf01_oi01->bf01, "
         "batch_group_count=2",
         "input batch dimension (3) is not a multiple of "
         "batch_group_count=2"},
        {"f32[4,4,8,8]", "f32[6,4,3,3]", "f32[1,6,6,6]",
         "window={size=3x3}, dim_labels=bf01_oi01->bf01, "
         "batch_group_count=4",
         "kernel output feature dimension (6) is not a multiple of "
         "batch_group_count=4"},
        {"f32[2,4,8,8]", "f32[4,2,3,3]", "f32[1,4,6,6]",
         "window={size=3x3}, dim_labels=bf01_oi01->bf01, "
         "batch_group_count=2, feature_group_count=2",
         "at most one may exceed 1"},
        {"f32[1,4,8,8]", "f32[6,4,3,3]", "f32[1,6,6,6]",
         "window={size=3x2}, dim_labels=bf01_oi01->bf01",
         "window size 2 of spatial dimension 1 differs from the "
         "kernel's 3"},
        {"f32[1,4,8,8]", "f32[6,4,3,3]", "f32[1,6,6,6]",
         "window={size=3}, dim_labels=bf01_oi01->bf01",
         "size= has 1 entries; the window has 2 dimensions"},
        {"f32[1,4,8,8]", "f32[6,4,3,3]", "f32[1,6,6,6]",
         "window={size=3x3}, dim_labels=bf0_oi0->bf0",
         "the input is f32[1,4,8,8] but dim_labels=bf0_oi0->bf0 has 3 "
         "dimensions"},
        {"f32[1,4,8,8]", "f32[6,4,3,3]", "f32[1,6,6,6]",
         "window={size=3x3}, dim_labels=bf01_oi0x->bf01",
         "dim_labels=bf01_oi0x->bf01: a label is not one of"},
        {"f32[1,4,8,8]", "f32[6,4,3,3]", "f32[1,6,6,6]",
         "window={size=3x3}", "the dim_labels attribute is missing"},
        {"f32[1,4,8,8]", "f32[6,4,3,3]", "f32[1,6,6,6]",
         "window={size=3x3}, dim_labels=bf01_oi01->bf01, "
         "feature_group_count=0",
         "feature_group_count=0: must be a positive integer"},
        {"f32[1,4,8,8]", "s32[6,4,3,3]", "f32[1,6,6,6]",
         "window={size=3x3}, dim_labels=bf01_oi01->bf01",
         "different element types"},
        /* the written shape disagrees with the window's arithmetic */
        {"f32[1,4,8,8]", "f32[6,4,3,3]", "f32[1,6,4,4]",
         "window={size=3x3 stride=2x2}, dim_labels=bf01_oi01->bf01",
         "operands give f32[1,6,3,3]"},
    };
    hs_error err;
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        char *t = conv_module(bad[k].x, bad[k].k, bad[k].y, bad[k].attrs);
        const char *msg = verify_text(t, &err);
        char full[1024];
        hs_error_format(&err, full, sizeof full);
        if (!strstr(full, bad[k].says) || !strstr(full, "y"))
            fail_msg("case %zu: expected \"%s\" in \"%s\"", k, bad[k].says,
                     full);
        /* where: the instruction's name */
        if (strcmp(err.instruction, "y") != 0 &&
            !strstr(msg, "instruction y"))
            fail_msg("case %zu: the error does not name y: %s", k, full);
        free(t);
    }
}

/* ---- hand-checked results ------------------------------------------- */

/* Runs the (parameterless) module and returns output 0's floats. */
static float *run_text(const char *text, int64_t *n)
{
    hs_module *m = parse(text);
    hs_error err;
    hs_error_clear(&err);
    if (hs_module_verify(m, &err) != HS_OK)
        fail_msg("verify: %s\n%s", err.message, text);
    hs_tensor **out = NULL;
    int n_out = 0;
    hs_run_stats st;
    if (hs_device_run(m, hs_device_find(hs_device_default_name()), NULL, 0,
                      &out, &n_out, &st, &err) != HS_OK)
        fail_msg("run: %s\n%s", err.message, text);
    *n = hs_tensor_elements(out[0]);
    float *v = malloc((size_t)(*n > 0 ? *n : 1) * sizeof *v);
    memcpy(v, out[0]->data, (size_t)*n * sizeof *v);
    hs_tensors_free(out, n_out);
    hs_module_free(m);
    return v;
}

static void expect(const char *body, const float *want, int64_t n)
{
    char text[2048];
    snprintf(text, sizeof text, "HloModule m\nENTRY e {\n%s}\n", body);
    int64_t got_n = 0;
    float *got = run_text(text, &got_n);
    if (got_n != n)
        fail_msg("%lld elements, expected %lld\n%s", (long long)got_n,
                 (long long)n, text);
    for (int64_t i = 0; i < n; i++)
        if (got[i] != want[i])
            fail_msg("element %lld is %g, expected %g\n%s", (long long)i,
                     got[i], want[i], text);
    free(got);
}

/* x = 1..5 along one spatial dimension, kernel (1, 0, -1). */
#define X5 "  x = f32[1,1,5] constant({{{1,2,3,4,5}}})\n"
#define K3 "  k = f32[1,1,3] constant({{{1,0,-1}}})\n"
#define CONV1(out, window)                                                  \
    X5 K3 "  ROOT y = f32[1,1," out "] convolution(x, k), window={" window  \
          "}, dim_labels=bf0_oi0->bf0\n"

static void one_dimensional_windows(void **state)
{
    (void)state;
    /* y[i] = x[i] - x[i+2] */
    expect(CONV1("3", "size=3"), (const float[]){-2, -2, -2}, 3);
    /* reversed kernel (-1, 0, 1) */
    expect(CONV1("3", "size=3 rhs_reversal=1"),
           (const float[]){2, 2, 2}, 3);
    /* zeros on both sides: 0 1 2 3 4 5 0 */
    expect(CONV1("5", "size=3 pad=1_1"),
           (const float[]){-2, -2, -2, -2, 4}, 5);
    expect(CONV1("2", "size=3 stride=2"), (const float[]){-2, -2}, 2);
    /* atrous: taps 4 apart, y = x[0] - x[4] */
    expect(CONV1("1", "size=3 rhs_dilate=2"), (const float[]){-4}, 1);
    /* transposed: 1 0 2 0 3 0 4 0 5 */
    expect(CONV1("7", "size=3 lhs_dilate=2"),
           (const float[]){-1, 0, -1, 0, -1, 0, -1}, 7);
    /* negative padding drops x[0]: 2 3 4 5 */
    expect(CONV1("2", "size=3 pad=-1_0"), (const float[]){-2, -2}, 2);
    /* all at once: 0 0 | 1 0 2 0 3 0 4 0 5 minus its last two, reversed
     * dilated taps (-1, 0, 1) two apart */
    expect(CONV1("3", "size=3 stride=2 pad=2_-2 lhs_dilate=2 rhs_dilate=2 "
                      "rhs_reversal=1"),
           (const float[]){2, 2, 2}, 3);
}

static void groups(void **state)
{
    (void)state;
    /* Two feature groups, one input feature each: out f = w[f] * x[f]. */
    expect("  x = f32[1,2,3] constant({{{1,2,3},{10,20,30}}})\n"
           "  k = f32[2,1,1] constant({{{2}},{{3}}})\n"
           "  ROOT y = f32[1,2,3] convolution(x, k), window={size=1}, "
           "dim_labels=bf0_oi0->bf0, feature_group_count=2\n",
           (const float[]){2, 4, 6, 30, 60, 90}, 6);
    /* Two batch groups: output feature f reads batch group f. */
    expect("  x = f32[2,1,3] constant({{{1,2,3}},{{10,20,30}}})\n"
           "  k = f32[2,1,1] constant({{{2}},{{3}}})\n"
           "  ROOT y = f32[1,2,3] convolution(x, k), window={size=1}, "
           "dim_labels=bf0_oi0->bf0, batch_group_count=2\n",
           (const float[]){2, 4, 6, 30, 60, 90}, 6);
    /* Depthwise 2-D in NHWC with a 2x2 box: sums of each 2x2 block per
     * channel (channel 1 is channel 0 times 10). */
    expect("  x = f32[1,3,3,2] constant({{{{1,10},{2,20},{3,30}},"
           "{{4,40},{5,50},{6,60}},{{7,70},{8,80},{9,90}}}})\n"
           "  k = f32[2,2,1,2] constant({{{{1,1}},{{1,1}}},"
           "{{{1,1}},{{1,1}}}})\n"
           "  ROOT y = f32[1,2,2,2] convolution(x, k), window={size=2x2}, "
           "dim_labels=b01f_01io->b01f, feature_group_count=2\n",
           (const float[]){12, 120, 16, 160, 24, 240, 28, 280}, 8);
}

/* ---- layouts agree --------------------------------------------------- */

/* Deterministic values in [-1, 1). */
static void fill(float *v, int64_t n, uint32_t seed)
{
    uint32_t s = seed * 2654435761u + 1;
    for (int64_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        v[i] = (float)((s >> 8) & 0xffff) / 32768.0f - 1.0f;
    }
}

static hs_tensor *tensor(int rank, const int64_t *dims, uint32_t seed)
{
    hs_shape s = hs_shape_make(HS_F32, rank, dims);
    hs_tensor *t = hs_tensor_new(&s);
    fill(hs_tensor_f32(t), hs_tensor_elements(t), seed);
    return t;
}

/* Transposes canonical [a0, a1, a2, a3] data into the order perm. */
static hs_tensor *permuted(const hs_tensor *t, const int *perm)
{
    int64_t dims[4], st[4] = {1, 1, 1, 1};
    for (int d = 2; d >= 0; d--)
        st[d] = st[d + 1] * t->shape.dims[d + 1];
    for (int d = 0; d < 4; d++)
        dims[d] = t->shape.dims[perm[d]];
    hs_shape s = hs_shape_make(HS_F32, 4, dims);
    hs_tensor *o = hs_tensor_new(&s);
    const float *src = hs_tensor_f32(t);
    float *dst = hs_tensor_f32(o);
    int64_t i = 0;
    for (int64_t a = 0; a < dims[0]; a++)
        for (int64_t b = 0; b < dims[1]; b++)
            for (int64_t c = 0; c < dims[2]; c++)
                for (int64_t d = 0; d < dims[3]; d++)
                    dst[i++] = src[a * st[perm[0]] + b * st[perm[1]] +
                                   c * st[perm[2]] + d * st[perm[3]]];
    return o;
}

static int perm_of(const char *label, const char *canon, int *perm)
{
    for (int d = 0; d < 4; d++)
        perm[d] = (int)(strchr(canon, label[d]) - canon);
    return 0;
}

/* Runs y = conv(x, w) with the given labels on canonical (bf01, oi01)
 * data and returns y in bf01 order. */
static hs_tensor *conv_in_layout(const hs_tensor *x, const hs_tensor *w,
                                 const char *labels, const char *window,
                                 int fgc, const int64_t *ydims)
{
    char lhs[5], rhs[5], out[5];
    memcpy(lhs, labels, 4);
    memcpy(rhs, labels + 5, 4);
    memcpy(out, labels + 11, 4);
    lhs[4] = rhs[4] = out[4] = '\0';
    int pl[4], pr[4], po[4];
    perm_of(lhs, "bf01", pl);
    perm_of(rhs, "oi01", pr);
    perm_of(out, "bf01", po);
    hs_tensor *args[2] = {permuted(x, pl), permuted(w, pr)};
    int64_t yd[4];
    for (int d = 0; d < 4; d++)
        yd[d] = ydims[po[d]];
    char sx[64], sw[64], sy[64], text[1024];
    hs_shape_print(&args[0]->shape, false, sx, sizeof sx);
    hs_shape_print(&args[1]->shape, false, sw, sizeof sw);
    hs_shape ys = hs_shape_make(HS_F32, 4, yd);
    hs_shape_print(&ys, false, sy, sizeof sy);
    snprintf(text, sizeof text,
             "HloModule m\nENTRY e {\n  x = %s parameter(0)\n"
             "  w = %s parameter(1)\n  ROOT y = %s convolution(x, w), "
             "window={%s}, dim_labels=%s, feature_group_count=%d\n}\n",
             sx, sw, sy, window, labels, fgc);
    hs_module *m = parse(text);
    hs_error err;
    hs_error_clear(&err);
    if (hs_module_verify(m, &err) != HS_OK)
        fail_msg("verify: %s\n%s", err.message, text);
    hs_tensor **outs = NULL;
    int n_out = 0;
    hs_run_stats st;
    if (hs_device_run(m, hs_device_find(hs_device_default_name()), args, 2,
                      &outs, &n_out, &st, &err) != HS_OK)
        fail_msg("run: %s\n%s", err.message, text);
    /* back to bf01: canonical dim d sits at out position po^-1 */
    int inv[4];
    for (int d = 0; d < 4; d++)
        inv[po[d]] = d;
    hs_tensor *y = permuted(outs[0], inv);
    hs_tensors_free(outs, n_out);
    hs_tensor_free(args[0]);
    hs_tensor_free(args[1]);
    hs_module_free(m);
    return y;
}

static void layouts_agree_and_runs_repeat(void **state)
{
    (void)state;
    static const struct {
        int64_t x[4], w[4], y[4];
        const char *window;
        int fgc;
    } shapes[] = {
        {{2, 6, 9, 8}, {4, 6, 3, 3}, {2, 4, 5, 4},
         "size=3x3 stride=2x2 pad=1_1x1_0", 1},
        {{2, 6, 7, 7}, {6, 1, 3, 3}, {2, 6, 7, 7}, "size=3x3 pad=1_1x1_1",
         6},
        {{2, 8, 5, 6}, {12, 2, 1, 1}, {2, 12, 5, 6}, "size=1x1", 4},
        {{3, 5, 6, 6}, {7, 5, 1, 1}, {3, 7, 6, 6}, "size=1x1", 1},
        /* a window longer than the output (a kernel gradient's shape) */
        {{2, 4, 9, 8}, {3, 4, 7, 6}, {2, 3, 3, 3}, "size=7x6", 1},
        /* ... with two outputs per group: direct dot products */
        {{2, 4, 9, 8}, {4, 2, 7, 6}, {2, 4, 4, 4}, "size=7x6 pad=1_0x0_1",
         2},
        /* transposed (col2im), strided and reversed, with groups */
        {{2, 6, 5, 4}, {4, 3, 3, 3}, {2, 4, 11, 4},
         "size=3x3 stride=1x2 pad=2_2x1_2 lhs_dilate=2x2 rhs_reversal=1x0",
         2},
    };
    static const char *const labels[] = {
        "bf01_oi01->bf01", "b01f_01io->b01f", "f0b1_1o0i->0fb1",
        "b01f_oi01->bf01", "bf01_01io->b01f", "fb01_io01->fb01"};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        hs_tensor *x = tensor(4, shapes[s].x, 1 + (uint32_t)s);
        hs_tensor *w = tensor(4, shapes[s].w, 7 + (uint32_t)s);
        hs_tensor *ref = conv_in_layout(x, w, labels[0], shapes[s].window,
                                        shapes[s].fgc, shapes[s].y);
        int64_t n = hs_tensor_elements(ref);
        const float *r = hs_tensor_f32(ref);
        /* The same layout again: the same bits. */
        hs_tensor *again = conv_in_layout(x, w, labels[0], shapes[s].window,
                                          shapes[s].fgc, shapes[s].y);
        assert_memory_equal(r, hs_tensor_f32(again),
                            (size_t)n * sizeof(float));
        hs_tensor_free(again);
        double scale = 0;
        for (int64_t i = 0; i < n; i++)
            scale = r[i] > scale ? r[i] : (-r[i] > scale ? -r[i] : scale);
        assert_true(scale > 0);
        for (size_t l = 1; l < sizeof labels / sizeof labels[0]; l++) {
            hs_tensor *y = conv_in_layout(x, w, labels[l], shapes[s].window,
                                          shapes[s].fgc, shapes[s].y);
            const float *v = hs_tensor_f32(y);
            for (int64_t i = 0; i < n; i++)
                if ((v[i] - r[i]) > 1e-5 * scale ||
                    (r[i] - v[i]) > 1e-5 * scale)
                    fail_msg("shape %zu, %s: element %lld is %g, %s gives "
                             "%g", s, labels[l], (long long)i, v[i],
                             labels[0], r[i]);
            hs_tensor_free(y);
        }
        hs_tensor_free(ref);
        hs_tensor_free(x);
        hs_tensor_free(w);
    }
}

/* ---- cost and element types ----------------------------------------- */

static void flops_count_the_window(void **state)
{
    (void)state;
    static const struct {
        const char *x, *k, *y, *attrs;
        double flops;
    } cases[] = {
        /* 2 * outputs * taps * input features */
        {"f32[2,64,56,56]", "f32[64,64,3,3]", "f32[2,64,56,56]",
         "window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01",
         2.0 * 2 * 64 * 56 * 56 * 9 * 64},
        /* depthwise: one input feature per group */
        {"f32[2,96,56,56]", "f32[96,1,3,3]", "f32[2,96,28,28]",
         "window={size=3x3 stride=2x2 pad=1_1x1_1}, "
         "dim_labels=bf01_oi01->bf01, feature_group_count=96",
         2.0 * 2 * 96 * 28 * 28 * 9},
        /* batch groups: every input feature */
        {"f32[8,6,5]", "f32[12,6,3]", "f32[2,12,3]",
         "window={size=3}, dim_labels=bf0_oi0->bf0, batch_group_count=4",
         2.0 * 2 * 12 * 3 * 3 * 6},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char *t = conv_module(cases[k].x, cases[k].k, cases[k].y,
                              cases[k].attrs);
        hs_module *m = parse(t);
        hs_run_stats st;
        hs_error err;
        assert_int_equal(hs_device_estimate(m, NULL, &st, &err), HS_OK);
        assert_true(st.flops == cases[k].flops);
        hs_module_free(m);
        free(t);
    }
}

static void other_types_are_refused_by_name(void **state)
{
    (void)state;
    char *t = conv_module("s32[1,2,5]", "s32[3,2,3]", "s32[1,3,3]",
                          "window={size=3}, dim_labels=bf0_oi0->bf0");
    hs_module *m = parse(t);
    hs_error err;
    hs_error_clear(&err);
    hs_shape xs = m->entry->params[0]->shape, ws = m->entry->params[1]->shape;
    hs_tensor *args[2] = {hs_tensor_new(&xs), hs_tensor_new(&ws)};
    hs_tensor **out = NULL;
    int n_out = 0;
    hs_run_stats st;
    hs_status s = hs_device_run(m, hs_device_find(hs_device_default_name()),
                                args, 2, &out, &n_out, &st, &err);
    assert_int_not_equal(s, HS_OK);
    char full[1024];
    hs_error_format(&err, full, sizeof full);
    if (!strstr(full, "instruction y") || !strstr(full, "s32"))
        fail_msg("the refusal names neither the instruction nor the "
                 "type: %s", full);
    hs_tensors_free(out, n_out);
    hs_tensor_free(args[0]);
    hs_tensor_free(args[1]);
    hs_module_free(m);
    free(t);
}

/* ---- VJP ------------------------------------------------------------- */

/* The gradient module of a forward convolution module: (gx, gw) of
 * (x, w, gy). */
static hs_module *grad_module(const hs_module *fwd)
{
    hs_module *m = hs_module_new("g");
    hs_builder *b = hs_builder_new(m, "main", true);
    const hs_computation *e = fwd->entry;
    hs_instruction *in[2] = {
        hs_b_parameter(b, 0, &e->params[0]->shape, "x"),
        hs_b_parameter(b, 1, &e->params[1]->shape, "w")};
    hs_instruction *y = hs_autodiff_inline(b, e, in, 2, NULL);
    hs_instruction *gy = hs_b_parameter(b, 2, &y->shape, "gy");
    hs_instruction *g[2];
    hs_error err;
    if (hs_autodiff_vjp(b, &y, &gy, 1, in, 2, NULL, g, &err) != HS_OK)
        fail_msg("vjp: %s", err.message);
    if (!hs_builder_finish(b, hs_b_tuple(b, g, 2), &err) ||
        hs_module_verify(m, &err) != HS_OK)
        fail_msg("gradient module: %s", err.message);
    return m;
}

static void vjp_is_jax_convolutions(void **state)
{
    (void)state;
    char *t = conv_module("f32[2,8,9,9]", "f32[8,1,3,3]", "f32[2,8,5,5]",
                          "window={size=3x3 stride=2x2 pad=1_1x1_1}, "
                          "dim_labels=bf01_oi01->bf01, feature_group_count=8");
    hs_module *fwd = parse(t);
    hs_module *m = grad_module(fwd);
    char *s = print(m);
    /* input: gy against the kernel with features swapped and the window
     * reversed; the stride became lhs_dilate */
    assert_contains(s, "window={size=3x3 pad=1_1x1_1 lhs_dilate=2x2 "
                       "rhs_reversal=1x1}, dim_labels=bf01_io01->bf01, "
                       "feature_group_count=8");
    /* kernel: the batch contracted, the stride became rhs_dilate */
    assert_contains(s, "window={size=5x5 pad=1_1x1_1 rhs_dilate=2x2}, "
                       "dim_labels=fb01_io01->fb01, batch_group_count=8");
    /* printed gradients parse back to the same text */
    hs_module *back = parse(s);
    char *s2 = print(back);
    assert_string_equal(s, s2);
    free(s2);
    free(s);
    hs_module_free(back);
    hs_module_free(m);
    hs_module_free(fwd);
    free(t);
}

/* <gy, conv(x, w)> differentiated by central differences in double, on
 * the device's own forward results. */
static double objective(const hs_module *fwd, hs_tensor *x, hs_tensor *w,
                        const hs_tensor *gy)
{
    hs_tensor *args[2] = {x, w}, **out = NULL;
    int n_out = 0;
    hs_run_stats st;
    hs_error err;
    if (hs_device_run(fwd, hs_device_find(hs_device_default_name()), args, 2,
                      &out, &n_out, &st, &err) != HS_OK)
        fail_msg("run: %s", err.message);
    double s = 0;
    for (int64_t i = 0; i < hs_tensor_elements(gy); i++)
        s += (double)hs_tensor_f32(out[0])[i] * hs_tensor_f32(gy)[i];
    hs_tensors_free(out, n_out);
    return s;
}

static void vjp_matches_differences(void **state)
{
    (void)state;
    static const char *const attrs[] = {
        "window={size=3x2 stride=2x1 pad=1_0x-1_1 lhs_dilate=1x2 "
        "rhs_dilate=2x1 rhs_reversal=1x0}, dim_labels=b01f_01io->b01f, "
        "feature_group_count=2",
        "window={size=2x2 pad=0_1x1_0}, dim_labels=b01f_01io->b01f, "
        "batch_group_count=2"};
    static const char *const ys[] = {"f32[2,1,8,4]", "f32[1,5,5,4]"};
    for (int c = 0; c < 2; c++) {
        char *t = conv_module("f32[2,5,5,4]",
                              c == 0 ? "f32[3,2,2,4]" : "f32[2,2,4,4]",
                              ys[c], attrs[c]);
        hs_module *fwd = parse(t);
        hs_error err;
        if (hs_module_verify(fwd, &err) != HS_OK)
            fail_msg("%s", err.message);
        hs_module *g = grad_module(fwd);
        const hs_computation *e = fwd->entry;
        hs_tensor *x = tensor(4, e->params[0]->shape.dims, 3);
        hs_tensor *w = tensor(4, e->params[1]->shape.dims, 4);
        hs_tensor *gy = tensor(e->root->shape.rank, e->root->shape.dims, 5);
        hs_tensor *args[3] = {x, w, gy}, **out = NULL;
        int n_out = 0;
        hs_run_stats st;
        if (hs_device_run(g, hs_device_find(hs_device_default_name()), args,
                          3, &out, &n_out, &st, &err) != HS_OK)
            fail_msg("run: %s", err.message);
        hs_tensor *wrt[2] = {x, w};
        for (int k = 0; k < 2; k++) {
            float *v = hs_tensor_f32(wrt[k]);
            for (int64_t i = 0; i < hs_tensor_elements(wrt[k]); i += 7) {
                float keep = v[i], h = 1.0f / 64;
                v[i] = keep + h;
                double up = objective(fwd, x, w, gy);
                v[i] = keep - h;
                double down = objective(fwd, x, w, gy);
                v[i] = keep;
                /* linear in each element: the difference is exact up to
                 * f32 rounding of the sums */
                double want = (up - down) / (2 * h);
                double got = hs_tensor_f32(out[k])[i];
                if (got - want > 1e-3 || want - got > 1e-3)
                    fail_msg("case %d, d/d%s[%lld]: VJP %g, differences %g",
                             c, k ? "w" : "x", (long long)i, got, want);
            }
        }
        hs_tensors_free(out, n_out);
        hs_tensor_free(x);
        hs_tensor_free(w);
        hs_tensor_free(gy);
        hs_module_free(g);
        hs_module_free(fwd);
        free(t);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(dim_labels_parse_and_print_back),
        cmocka_unit_test(window_prints_what_xla_prints),
        cmocka_unit_test(infers_xla_shapes),
        cmocka_unit_test(refusals_name_the_instruction),
        cmocka_unit_test(one_dimensional_windows),
        cmocka_unit_test(groups),
        cmocka_unit_test(layouts_agree_and_runs_repeat),
        cmocka_unit_test(flops_count_the_window),
        cmocka_unit_test(other_types_are_refused_by_name),
        cmocka_unit_test(vjp_is_jax_convolutions),
        cmocka_unit_test(vjp_matches_differences),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
