/* test_passes.c - the compile pipeline and its passes, written as HLO text:
 * parse, run a pass, check the printed result. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_compile.h"
#include "hloscope/hs_device.h"
#include "hloscope/hs_hlo_text.h"
#include "hloscope/hs_passes.h"
#include "device/device_internal.h"
#include "passes/passes_internal.h"
#include "hlo_test_helpers.h"

/* Runs one built-in pass; returns whether it changed the module, and
 * checks that the module still verifies. */
static bool run(hs_module *m, const char *pass_name)
{
    const hs_pass *pass = hs_pass_lookup(pass_name);
    assert_non_null(pass);
    hs_pass_context ctx;
    hs_pass_context_init(&ctx);
    hs_error err;
    hs_error_clear(&err);
    bool changed = false;
    hs_status st = pass->run(m, &ctx, &changed, &err);
    if (st != HS_OK)
        fail_msg("%s: %s", pass_name, err.message);
    st = hs_module_verify(m, &err);
    if (st != HS_OK)
        fail_msg("invalid after %s: %s", pass_name, err.message);
    return changed;
}

/* ---- simplify ----------------------------------------------------------- */

static void simplify_folds_add_zero(void **state)
{
    (void)state;
    hs_module *m = parse("HloModule m\n"
                         "ENTRY main {\n"
                         "  x = f32[4] parameter(0)\n"
                         "  zero = f32[] constant(0)\n"
                         "  z = f32[4] broadcast(zero), dimensions={}\n"
                         "  a = f32[4] add(x, z)\n"
                         "  ROOT b = f32[4] add(z, a)\n"
                         "}\n");
    assert_true(run(m, "simplify"));
    char *s = print(m);
    assert_contains(s, "ROOT %x = f32[4]{0} parameter(0)");
    assert_lacks(s, "add(");
    assert_int_equal(hs_module_instruction_count(m), 1);
    assert_false(run(m, "simplify"));
    free(s);
    hs_module_free(m);
}

static void simplify_removes_multiply_by_one_and_subtract_zero(void **state)
{
    (void)state;
    hs_module *m = parse("HloModule m\n"
                         "ENTRY main {\n"
                         "  x = f32[2,3] parameter(0)\n"
                         "  one = f32[] constant(1)\n"
                         "  ones = f32[2,3] broadcast(one), dimensions={}\n"
                         "  zeros = f32[2,3] constant({{0,0,0},{0,0,0}})\n"
                         "  a = f32[2,3] multiply(ones, x)\n"
                         "  b = f32[2,3] subtract(a, zeros)\n"
                         "  ROOT c = f32[2,3] divide(b, ones)\n"
                         "}\n");
    assert_true(run(m, "simplify"));
    assert_int_equal(hs_module_instruction_count(m), 1);
    hs_module_free(m);
}

/* 0 * NaN is NaN: XLA keeps float multiplies by zero, and folds integer
 * ones. */
static void simplify_keeps_float_multiply_by_zero(void **state)
{
    (void)state;
    hs_module *m = parse("HloModule m\n"
                         "ENTRY main {\n"
                         "  x = f32[4] parameter(0)\n"
                         "  i = s32[4] parameter(1)\n"
                         "  zf = f32[] constant(0)\n"
                         "  zi = s32[] constant(0)\n"
                         "  bf = f32[4] broadcast(zf), dimensions={}\n"
                         "  bi = s32[4] broadcast(zi), dimensions={}\n"
                         "  mf = f32[4] multiply(x, bf)\n"
                         "  mi = s32[4] multiply(i, bi)\n"
                         "  ROOT t = (f32[4], s32[4]) tuple(mf, mi)\n"
                         "}\n");
    assert_true(run(m, "simplify"));
    char *s = print(m);
    assert_contains(s, "multiply(f32[4]{0} %x, f32[4]{0} %bf)");
    assert_lacks(s, "%mi");
    assert_contains(s, "tuple(f32[4]{0} %mf, s32[4]{0} %bi)");
    free(s);
    hs_module_free(m);
}

static void simplify_collapses_negates_reshapes_and_transposes(void **state)
{
    (void)state;
    hs_module *m = parse(
        "HloModule m\n"
        "ENTRY main {\n"
        "  x = f32[2,3,4] parameter(0)\n"
        "  n1 = f32[2,3,4] negate(x)\n"
        "  n2 = f32[2,3,4] negate(n1)\n"
        "  r1 = f32[6,4] reshape(n2)\n"
        "  r2 = f32[24] reshape(r1)\n"
        "  r3 = f32[24] reshape(r2)\n"
        "  t1 = f32[3,4,2] transpose(x), dimensions={1,2,0}\n"
        "  t2 = f32[2,3,4] transpose(t1), dimensions={2,0,1}\n"
        "  t3 = f32[4,2,3] transpose(x), dimensions={2,0,1}\n"
        "  t4 = f32[3,2,4] transpose(t3), dimensions={2,1,0}\n"
        "  ROOT t = (f32[24], f32[2,3,4], f32[3,2,4]) tuple(r3, t2, t4)\n"
        "}\n");
    assert_true(run(m, "simplify"));
    char *s = print(m);
    /* negate(negate(x)) is x; three reshapes are one; the first pair of
     * transposes cancels; the second composes into one. */
    assert_lacks(s, "negate");
    assert_int_equal(count(s, "reshape("), 1);
    assert_contains(s, "f32[24]{0} reshape(f32[2,3,4]{2,1,0} %x)");
    assert_contains(s, "f32[3,2,4]{2,1,0} transpose(f32[2,3,4]{2,1,0} %x), "
                       "dimensions={1,0,2}");
    assert_int_equal(count(s, "transpose("), 1);
    assert_contains(s, "tuple(f32[24]{0} %r3, f32[2,3,4]{2,1,0} %x, "
                       "f32[3,2,4]{2,1,0} %t4)");
    free(s);
    hs_module_free(m);
}

static void simplify_folds_small_constants(void **state)
{
    (void)state;
    hs_module *m = parse("HloModule m\n"
                         "ENTRY main {\n"
                         "  a = f32[2] constant({1, 2})\n"
                         "  b = f32[2] constant({3, 4.5})\n"
                         "  c = f32[2] add(a, b)\n"
                         "  r = f32[1,2] reshape(c)\n"
                         "  t = f32[2,1] transpose(r), dimensions={1,0}\n"
                         "  bc = f32[2,1,2] broadcast(c), dimensions={2}\n"
                         "  k = s32[] constant(7)\n"
                         "  d = s32[] constant(0)\n"
                         "  q = s32[] divide(k, d)\n"
                         "  lt = pred[] compare(k, d), direction=LT\n"
                         "  ROOT out = (f32[2,1], f32[2,1,2], s32[], pred[]) "
                         "tuple(t, bc, q, lt)\n"
                         "}\n");
    assert_true(run(m, "simplify"));
    char *s = print(m);
    assert_contains(s, "f32[2,1]{1,0} constant({ {4}, {6.5} })");
    assert_contains(s, "f32[2,1,2]{2,1,0} constant({ { {4, 6.5} }, "
                       "{ {4, 6.5} } })");
    /* XLA: integer division by zero is -1. */
    assert_contains(s, "s32[] constant(-1)");
    assert_contains(s, "pred[] constant(false)");
    assert_lacks(s, "add(");
    assert_int_equal(hs_module_instruction_count(m), 5);
    free(s);
    hs_module_free(m);
}

/* A folded constant has the bits the device computes for the same
 * instruction: both call the element functions of numerics/. Each case is
 * run unoptimised on the device and folded by simplify, over values where
 * semantics differ (NaN, infinities, -0, INT_MIN, division by zero). */
static void folded_constants_have_the_executed_bits(void **state)
{
    (void)state;
    static const char *f32a =
        "{0, -0, 1, -1.5, 0.5, 88.8, -104, nan, inf, -inf, 3.4e+38, 1e-45, "
        "2.5, -2.5, 100, 7}";
    static const char *f32b =
        "{nan, 1, -0, 2, 0.25, -3, nan, 0, inf, 2, -1, 3, -2.5, 2.5, 7, 0}";
    static const char *s32a =
        "{0, 1, -1, 2147483647, -2147483648, 7, -7, 100, -2147483648, 5, 3, "
        "-9, 31, 0, 2, -2}";
    static const char *s32b =
        "{0, 0, -1, 1, -1, 3, 2, 0, 0, -2, 30, 4, 2, -1, 31, 3}";
    static const char *preda =
        "{true, false, true, false, true, false, true, false, true, false, "
        "true, false, true, false, true, false}";
    static const char *predb =
        "{true, true, false, false, true, true, false, false, true, true, "
        "false, false, true, true, false, false}";
    static const char *unary[] = {
        "f32 abs", "f32 negate", "f32 exponential",
        "f32 exponential-minus-one", "f32 log", "f32 log-plus-one",
        "f32 sqrt", "f32 rsqrt", "f32 tanh", "f32 logistic", "f32 erf",
        "f32 sign", "f32 floor", "f32 ceil", "f32 cosine", "f32 sine",
        "s32 abs", "s32 negate", "s32 sign", "s32 not", "pred not"};
    static const char *binary[] = {
        "f32 add", "f32 subtract", "f32 multiply", "f32 divide",
        "f32 maximum", "f32 minimum", "f32 power", "f32 remainder",
        "s32 add", "s32 subtract", "s32 multiply", "s32 divide",
        "s32 maximum", "s32 minimum", "s32 power", "s32 remainder",
        "s32 and", "s32 or", "s32 xor", "pred and", "pred or", "pred xor",
        "pred maximum", "pred minimum", "pred add", "pred multiply"};
    static const char *other[] = {
        "ROOT r = pred[16] compare(a, b), direction=LT",
        "ROOT r = pred[16] compare(a, b), direction=NE",
        "ROOT r = pred[16] compare(a, b), direction=GE",
        "ROOT r = pred[16] compare(i, j), direction=LE",
        "ROOT r = pred[16] compare(i, j), direction=EQ",
        "ROOT r = f32[16] clamp(b, a, b)",
        "ROOT r = f32[16] clamp(a, b, a)",
        "c = f32[] constant(2)\n  ROOT r = f32[16] clamp(c, a, c)",
        "ROOT r = s32[16] clamp(j, i, j)",
        "ROOT r = f32[16] select(p, a, b)",
        "ROOT r = s32[16] select(q, i, j)",
        "ROOT r = s32[16] convert(a)",
        "ROOT r = pred[16] convert(a)",
        "ROOT r = f32[16] convert(i)",
        "ROOT r = pred[16] convert(i)",
        "ROOT r = f32[16] convert(p)",
        "ROOT r = s32[16] convert(p)"};
    int n_cases = (int)(sizeof unary / sizeof *unary +
                        sizeof binary / sizeof *binary +
                        sizeof other / sizeof *other);
    for (int k = 0; k < n_cases; k++) {
        char root[160], text[1024];
        int nu = (int)(sizeof unary / sizeof *unary),
            nb = (int)(sizeof binary / sizeof *binary);
        if (k < nu + nb) {
            const char *c = k < nu ? unary[k] : binary[k - nu];
            char type[8], op[40];
            assert_int_equal(sscanf(c, "%7s %39s", type, op), 2);
            bool f = type[0] == 'f', p = type[0] == 'p';
            snprintf(root, sizeof root, "ROOT r = %s[16] %s(%s%s)", type,
                     op, f ? "a" : p ? "p" : "i",
                     k < nu ? "" : f ? ", b" : p ? ", q" : ", j");
        } else {
            snprintf(root, sizeof root, "%s", other[k - nu - nb]);
        }
        snprintf(text, sizeof text,
                 "HloModule m\nENTRY main {\n"
                 "  a = f32[16] constant(%s)\n  b = f32[16] constant(%s)\n"
                 "  i = s32[16] constant(%s)\n  j = s32[16] constant(%s)\n"
                 "  p = pred[16] constant(%s)\n  q = pred[16] constant(%s)\n"
                 "  %s\n}\n",
                 f32a, f32b, s32a, s32b, preda, predb, root);
        hs_module *run_m = parse(text), *fold_m = parse(text);
        hs_tensor **out = NULL;
        int n_out = 0;
        hs_error err;
        hs_error_clear(&err);
        if (hs_device_run(run_m, NULL, NULL, 0, &out, &n_out, NULL, &err))
            fail_msg("%s: %s", root, err.message);
        assert_true(run(fold_m, "simplify"));
        const hs_instruction *r = fold_m->entry->root;
        if (r->opcode != HS_OP_CONSTANT)
            fail_msg("not folded: %s", root);
        assert_int_equal(n_out, 1);
        size_t bytes = (size_t)hs_shape_bytes(&r->shape);
        if (memcmp(out[0]->data, r->literal, bytes) != 0)
            fail_msg("folded and executed bits differ: %s", root);
        hs_tensors_free(out, n_out);
        hs_module_free(run_m);
        hs_module_free(fold_m);
    }
}

/* The folding table (passes/fold.c) folds only what the device runs: a
 * folded value is an executed value, so there must be a kernel to agree
 * with. Walks HS_OPCODE_LIST. */
static void every_folded_opcode_runs_on_the_device(void **state)
{
    (void)state;
    int folded = 0;
#define HS_X(e, n, a, c, f)                                                \
    if (hs__fold_has_rule(HS_OP_##e)) {                                    \
        if (!dev_kernel_entry_of(HS_OP_##e)->kernel)                       \
            fail_msg("%s folds but the device does not run it: %s", n,     \
                     dev_kernel_entry_of(HS_OP_##e)->not_run);             \
        folded++;                                                          \
    }
    HS_OPCODE_LIST(HS_X)
#undef HS_X
    /* the element-wise ops, reshape, transpose and broadcast */
    assert_true(folded >= 30);
}

static void simplify_keeps_broadcast_of_scalar_constant(void **state)
{
    (void)state;
    hs_module *m = parse("HloModule m\n"
                         "ENTRY main {\n"
                         "  x = f32[8,256] parameter(0)\n"
                         "  two = f32[] constant(2)\n"
                         "  b = f32[8,256] broadcast(two), dimensions={}\n"
                         "  three = f32[] constant(3)\n"
                         "  c = f32[8,256] broadcast(three), dimensions={}\n"
                         "  big = f32[8,256] add(b, c)\n"
                         "  y = f32[8,256] multiply(x, big)\n"
                         "  ROOT z = f32[8,256] multiply(y, b)\n"
                         "}\n");
    /* 2048 elements: over the folding limit, so nothing changes. */
    assert_false(run(m, "simplify"));
    char *s = print(m);
    assert_contains(s, "broadcast(f32[] %two)");
    assert_contains(s, "add(");
    free(s);
    hs_module_free(m);
}

/* ---- cse ---------------------------------------------------------------- */

static void cse_merges_identical_dots(void **state)
{
    (void)state;
    hs_module *m = parse(
        "HloModule m\n"
        "ENTRY main {\n"
        "  x = f32[2,4] parameter(0)\n"
        "  w = f32[3,4] parameter(1)\n"
        "  d1 = f32[2,3] dot(x, w), lhs_contracting_dims={1}, "
        "rhs_contracting_dims={1}\n"
        "  d2 = f32[2,3] dot(x, w), lhs_contracting_dims={1}, "
        "rhs_contracting_dims={1}\n"
        "  e1 = f32[2,3] exponential(d1)\n"
        "  e2 = f32[2,3] exponential(d2)\n"
        "  ROOT s = f32[2,3] add(e1, e2)\n"
        "}\n");
    assert_true(run(m, "cse"));
    char *s = print(m);
    assert_int_equal(count(s, " dot("), 1);
    assert_int_equal(count(s, " exponential("), 1);
    assert_contains(s, "add(f32[2,3]{1,0} %e1, f32[2,3]{1,0} %e1)");
    assert_false(run(m, "cse"));
    free(s);
    hs_module_free(m);
}

static void cse_keeps_different_attributes_and_rng(void **state)
{
    (void)state;
    hs_module *m = parse(
        "HloModule m\n"
        "ENTRY main {\n"
        "  x = f32[4,4] parameter(0)\n"
        "  a = f32[4,4] transpose(x), dimensions={1,0}\n"
        "  b = f32[4,4] transpose(x), dimensions={0,1}\n"
        "  lo = f32[] constant(0)\n"
        "  hi = f32[] constant(1)\n"
        "  r1 = f32[4,4] rng(lo, hi), distribution=rng_uniform\n"
        "  r2 = f32[4,4] rng(lo, hi), distribution=rng_uniform\n"
        "  ROOT t = (f32[4,4], f32[4,4], f32[4,4], f32[4,4]) "
        "tuple(a, b, r1, r2)\n"
        "}\n");
    assert_false(run(m, "cse"));
    hs_module_free(m);
}

/* ---- dce ---------------------------------------------------------------- */

static void dce_removes_unused_computation(void **state)
{
    (void)state;
    hs_module *m = parse("HloModule m\n"
                         "helper {\n"
                         "  a = f32[] parameter(0)\n"
                         "  ROOT n = f32[] negate(a)\n"
                         "}\n"
                         "unused {\n"
                         "  b = f32[] parameter(0)\n"
                         "  ROOT e = f32[] exponential(b)\n"
                         "}\n"
                         "ENTRY main {\n"
                         "  x = f32[] parameter(0)\n"
                         "  dead = f32[] call(x), to_apply=helper\n"
                         "  y = f32[] add(x, x)\n"
                         "  ROOT z = f32[] multiply(y, y)\n"
                         "}\n");
    assert_int_equal(m->n_comps, 3);
    assert_true(run(m, "dce"));
    char *s = print(m);
    assert_int_equal(m->n_comps, 1);
    assert_lacks(s, "helper");
    assert_lacks(s, "unused");
    assert_lacks(s, "%dead");
    assert_contains(s, "ROOT %z = f32[] multiply(f32[] %y, f32[] %y)");
    assert_false(run(m, "dce"));
    free(s);
    hs_module_free(m);
}

/* ---- while-loop-trip-count ---------------------------------------------- */

static const char counter_loop[] =
    "HloModule loop\n"
    "condition {\n"
    "  p = (s32[], f32[4]) parameter(0)\n"
    "  cond = s32[] get-tuple-element(p), index=0\n"
    "  trip_count = s32[] constant(7)\n"
    "  ROOT done = pred[] compare(cond, trip_count), direction=LT\n"
    "}\n"
    "body {\n"
    "  p = (s32[], f32[4]) parameter(0)\n"
    "  cond = s32[] get-tuple-element(p), index=0\n"
    "  one = s32[] constant(1)\n"
    "  cond_plus_1 = s32[] add(cond, one)\n"
    "  v = f32[4] get-tuple-element(p), index=1\n"
    "  v2 = f32[4] exponential(v)\n"
    "  ROOT t = (s32[], f32[4]) tuple(cond_plus_1, v2)\n"
    "}\n"
    "ENTRY main {\n"
    "  x = f32[4] parameter(0)\n"
    "  c0 = s32[] constant(%d)\n"
    "  t = (s32[], f32[4]) tuple(c0, x)\n"
    "  ROOT w = (s32[], f32[4]) while(t), condition=condition, body=body\n"
    "}\n";

static hs_instruction *entry_root(hs_module *m)
{
    return m->entry->root;
}

static void trip_count_annotates_counter_loop(void **state)
{
    (void)state;
    char text[2048];
    snprintf(text, sizeof text, counter_loop, 0);
    hs_module *m = parse(text);
    assert_int_equal(entry_root(m)->known_trip_count, -1);
    assert_true(run(m, "while-loop-trip-count"));
    assert_int_equal(entry_root(m)->known_trip_count, 7);
    char *s = print(m);
    assert_contains(s, "condition=%condition, body=%body, "
                       "backend_config={\"known_trip_count\":{\"n\":\"7\"}}");
    assert_false(run(m, "while-loop-trip-count"));
    free(s);
    hs_module_free(m);

    /* Counting from 2 to 7 is 5 trips. */
    snprintf(text, sizeof text, counter_loop, 2);
    m = parse(text);
    assert_true(run(m, "while-loop-trip-count"));
    assert_int_equal(entry_root(m)->known_trip_count, 5);
    hs_module_free(m);
}

/* The sample from XLA itself (no header, no ROOT): annotating it gives
 * back exactly the backend_config XLA wrote. */
static void trip_count_matches_xla_sample(void **state)
{
    (void)state;
    char path[1024];
    snprintf(path, sizeof path, "%s/while_with_known_trip_count.hlo",
             HS_SAMPLES_DIR);
    FILE *f = fopen(path, "rb");
    if (!f)
        skip();
    char text[4096];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    hs_module *with = parse(text);
    char *expected = print(with);
    char *bc = strstr(text, ", backend_config=");
    assert_non_null(bc);
    strcpy(bc, "\n}\n"); /* drop it and close main again */
    hs_module *without = parse(text);
    assert_true(run(without, "while-loop-trip-count"));
    char *got = print(without);
    assert_string_equal(got, expected);
    free(expected);
    free(got);
    hs_module_free(with);
    hs_module_free(without);
}

static void trip_count_ignores_other_loops(void **state)
{
    (void)state;
    char text[2048];
    snprintf(text, sizeof text, counter_loop, 0);
    /* Step 2 instead of 1: not the counter pattern. */
    char *one = strstr(text, "constant(1)");
    one[9] = '2';
    hs_module *m = parse(text);
    assert_false(run(m, "while-loop-trip-count"));
    assert_int_equal(entry_root(m)->known_trip_count, -1);
    hs_module_free(m);
}

/* ---- fingerprint -------------------------------------------------------- */

static const char fp_a[] = "HloModule a\n"
                           "ENTRY main {\n"
                           "  x = f32[2,3] parameter(0)\n"
                           "  c = f32[] constant(2)\n"
                           "  b = f32[2,3] broadcast(c), dimensions={}\n"
                           "  ROOT y = f32[2,3] multiply(x, b)\n"
                           "}\n";

static void fingerprint_ignores_names(void **state)
{
    (void)state;
    hs_module *a = parse(fp_a);
    hs_module *b = parse("HloModule other_name\n"
                         "ENTRY entry_fn {\n"
                         "  input = f32[2,3] parameter(0)\n"
                         "  two = f32[] constant(2), "
                         "metadata={op_name=\"layers.0/scale\"}\n"
                         "  bcast = f32[2,3] broadcast(two), dimensions={}\n"
                         "  ROOT out = f32[2,3] multiply(input, bcast)\n"
                         "}\n");
    assert_true(hs_module_fingerprint(a) == hs_module_fingerprint(b));
    assert_true(hs_module_fingerprint(a) != 0);
    hs_module_free(a);
    hs_module_free(b);
}

static void fingerprint_sees_constants_layouts_and_memory_spaces(void **state)
{
    (void)state;
    hs_module *a = parse(fp_a);
    uint64_t fa = hs_module_fingerprint(a);
    const char *variants[] = {"constant(3)", "f32[2,3]{0,1} parameter(0)",
                              "f32[2,3]{1,0:S(5)} parameter(0)",
                              "dimensions={}\n  ROOT y = f32[2,3] add"};
    const char *originals[] = {"constant(2)", "f32[2,3] parameter(0)",
                               "f32[2,3] parameter(0)",
                               "dimensions={}\n  ROOT y = f32[2,3] multiply"};
    for (int k = 0; k < 4; k++) {
        char text[1024];
        const char *at = strstr(fp_a, originals[k]);
        assert_non_null(at);
        snprintf(text, sizeof text, "%.*s%s%s", (int)(at - fp_a), fp_a,
                 variants[k], at + strlen(originals[k]));
        hs_module *b = parse(text);
        if (hs_module_fingerprint(b) == fa)
            fail_msg("same fingerprint for variant %d:\n%s", k, text);
        hs_module_free(b);
    }
    hs_module_free(a);
}

/* ---- pipeline ----------------------------------------------------------- */

static void pipeline_reports_each_pass(void **state)
{
    (void)state;
    char text[2048];
    snprintf(text, sizeof text, counter_loop, 0);
    hs_module *m = parse(text);
    int64_t before = hs_module_instruction_count(m);
    hs_error err;
    hs_error_clear(&err);
    hs_pipeline *p = hs_compile_default_pipeline(NULL, &err);
    assert_non_null(p);
    assert_string_equal(hs_pipeline_spec(p), HS_DEFAULT_PIPELINE);
    hs_pass_context ctx;
    hs_pass_context_init(&ctx);
    hs_compile_report rep;
    assert_int_equal(hs_pipeline_run(p, m, &ctx, &rep, &err), HS_OK);
    assert_string_equal(rep.pipeline, HS_DEFAULT_PIPELINE);
    const char *names[] = {"verify", "simplify", "cse", "dce",
                           "while-loop-trip-count"};
    for (int k = 0; k < 5; k++) {
        const hs_pass_stats *row = hs_compile_report_find(&rep, names[k]);
        assert_non_null(row);
        assert_string_equal(rep.passes[k].name, names[k]);
        assert_true(row->runs >= 1);
        assert_true(row->total_ns >= 0);
    }
    const hs_pass_stats *tc =
        hs_compile_report_find(&rep, "while-loop-trip-count");
    assert_int_equal(tc->changed_runs, 1);
    assert_int_equal(hs_compile_report_find(&rep, "verify")->changed_runs, 0);
    assert_int_equal(rep.instructions_before, before);
    assert_int_equal(rep.instructions_after, hs_module_instruction_count(m));
    assert_int_equal(entry_root(m)->known_trip_count, 7);
    char *table = hs_compile_report_format(&rep);
    assert_non_null(table);
    assert_contains(table, "while-loop-trip-count");
    assert_contains(table, "instrs before");
    assert_contains(table, "yes");
    free(table);
    hs_pipeline_free(p);
    hs_module_free(m);
}

static void pipeline_fix_runs_until_nothing_changes(void **state)
{
    (void)state;
    /* CSE exposes x - 0 twice; simplify then exposes dead code. */
    hs_module *m = parse("HloModule m\n"
                         "ENTRY main {\n"
                         "  x = f32[4] parameter(0)\n"
                         "  z1 = f32[] constant(0)\n"
                         "  z2 = f32[] constant(0)\n"
                         "  b1 = f32[4] broadcast(z1), dimensions={}\n"
                         "  b2 = f32[4] broadcast(z2), dimensions={}\n"
                         "  s1 = f32[4] subtract(x, b1)\n"
                         "  s2 = f32[4] subtract(x, b2)\n"
                         "  ROOT m = f32[4] multiply(s1, s2)\n"
                         "}\n");
    hs_error err;
    hs_pipeline *p = hs_pipeline_parse(" fix( cse , simplify ), dce ", &err);
    assert_non_null(p);
    assert_string_equal(hs_pipeline_spec(p), "fix(cse,simplify),dce");
    hs_compile_report rep;
    assert_int_equal(hs_pipeline_run(p, m, NULL, &rep, &err), HS_OK);
    char *s = print(m);
    assert_contains(s, "ROOT %m = f32[4]{0} multiply(f32[4]{0} %x, "
                       "f32[4]{0} %x)");
    assert_int_equal(hs_module_instruction_count(m), 2);
    /* The last round of the group changes nothing. */
    const hs_pass_stats *cse = hs_compile_report_find(&rep, "cse");
    assert_true(cse->runs >= 2);
    assert_true(cse->changed_runs < cse->runs);
    free(s);
    hs_pipeline_free(p);
    hs_module_free(m);
}

static void pipeline_parse_rejects_unknown_pass(void **state)
{
    (void)state;
    hs_error err;
    hs_error_clear(&err);
    assert_null(hs_pipeline_parse("simplify,fusion-of-doom", &err));
    assert_int_equal(err.status, HS_ERR_INVALID);
    assert_contains(err.message, "fusion-of-doom");
    assert_contains(err.message, "while-loop-trip-count");
    assert_null(hs_pipeline_parse("fix(simplify", &err));
    assert_null(hs_pipeline_parse("", &err));
    assert_null(hs_pipeline_parse("cse,,dce", &err));
}

static hs_status breaking_pass(hs_module *m, hs_pass_context *ctx,
                               bool *changed, hs_error *err)
{
    (void)ctx;
    (void)err;
    /* A pass with a bug: the root now has the wrong shape. */
    hs_instruction *r = m->entry->root;
    r->shape = hs_shape_make(HS_F32, 1, (int64_t[]){5});
    *changed = true;
    return HS_OK;
}

static void pipeline_verifies_after_a_changing_pass(void **state)
{
    (void)state;
    hs_module *m = parse(fp_a);
    hs_pipeline *p = hs_pipeline_new();
    hs_error err;
    hs_error_clear(&err);
    hs_pass bad = {"breaker", breaking_pass, "breaks the module"};
    assert_int_equal(hs_pipeline_add(p, &bad, &err), HS_OK);
    assert_int_equal(hs_pipeline_add_named(p, "dce", &err), HS_OK);
    hs_compile_report rep;
    assert_int_not_equal(hs_pipeline_run(p, m, NULL, &rep, &err), HS_OK);
    assert_contains(err.message, "after pass breaker");
    /* dce did not run; the report still shows the failing pass. */
    assert_int_equal(rep.n_passes, 1);
    assert_string_equal(rep.passes[0].name, "breaker");
    hs_pipeline_free(p);
    hs_module_free(m);
}

static void cancelled_pipeline_stops(void **state)
{
    (void)state;
    hs_module *m = parse(fp_a);
    hs_error err;
    hs_error_clear(&err);
    hs_pipeline *p = hs_compile_default_pipeline(NULL, &err);
    hs_pass_context ctx;
    hs_pass_context_init(&ctx);
    atomic_bool cancel;
    atomic_init(&cancel, true);
    ctx.cancel = &cancel;
    hs_compile_report rep;
    assert_int_equal(hs_pipeline_run(p, m, &ctx, &rep, &err),
                     HS_ERR_CANCELLED);
    assert_int_equal(err.status, HS_ERR_CANCELLED);
    assert_int_equal(rep.n_passes, 0);

    /* A deadline in the past stops it the same way. */
    atomic_store(&cancel, false);
    ctx.deadline_ns = hs_now_ns() - 1;
    hs_error_clear(&err);
    assert_int_equal(hs_pipeline_run(p, m, &ctx, &rep, &err),
                     HS_ERR_CANCELLED);
    assert_contains(err.message, "deadline");

    /* Without either, it runs. */
    ctx.deadline_ns = 0;
    assert_int_equal(hs_pipeline_run(p, m, &ctx, &rep, &err), HS_OK);
    hs_pipeline_free(p);
    hs_module_free(m);
}

/* A long pass polls the context: cancelling between two computations of a
 * big module stops it mid-pass with a consistent module. */
static void cancel_inside_a_pass_leaves_a_valid_module(void **state)
{
    (void)state;
    hs_module *m = hs_module_new("big");
    hs_computation *c = hs_module_add_computation(m, "main", true);
    hs_shape s = hs_shape_scalar(HS_F32);
    hs_instruction *x = hs_computation_add_parameter(c, 0, &s, "x");
    for (int k = 0; k < 5000; k++) {
        hs_instruction *ops[] = {x};
        x = hs_computation_add(c, HS_OP_NEGATE, &s, ops, 1, NULL);
    }
    c->root = x;
    hs_pass_context ctx;
    hs_pass_context_init(&ctx);
    ctx.deadline_ns = hs_now_ns() - 1;
    hs_error err;
    bool changed = false;
    assert_int_equal(hs_pass_simplify_run(m, &ctx, &changed, &err),
                     HS_ERR_CANCELLED);
    assert_int_equal(hs_module_verify(m, &err), HS_OK);
    /* Allowed to finish, it removes every pair of negates. */
    ctx.deadline_ns = 0;
    assert_int_equal(hs_pass_simplify_run(m, &ctx, &changed, &err), HS_OK);
    assert_int_equal(hs_module_verify(m, &err), HS_OK);
    assert_int_equal(hs_module_instruction_count(m), 1);
    hs_module_free(m);
}

/* Every sample XLA's developers wrote still verifies after the default
 * pipeline, and its printed form parses again. */
static void default_pipeline_keeps_samples_valid(void **state)
{
    (void)state;
    const char *files[] = {"add.hlo", "cpu_hlo.hlo", "gpu_hlo_pass.hlo",
                           "multiple_gemm_fusions.hlo",
                           "single_device_tupled.hlo",
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
        hs_error err;
        hs_error_clear(&err);
        hs_pipeline *p = hs_compile_default_pipeline(NULL, &err);
        if (hs_pipeline_run(p, m, NULL, NULL, &err) != HS_OK)
            fail_msg("%s: %s", files[k], err.message);
        char *s = print(m);
        hs_module *again = parse(s);
        hs_module_free(again);
        free(s);
        hs_pipeline_free(p);
        hs_module_free(m);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(simplify_folds_add_zero),
        cmocka_unit_test(simplify_removes_multiply_by_one_and_subtract_zero),
        cmocka_unit_test(simplify_keeps_float_multiply_by_zero),
        cmocka_unit_test(simplify_collapses_negates_reshapes_and_transposes),
        cmocka_unit_test(simplify_folds_small_constants),
        cmocka_unit_test(folded_constants_have_the_executed_bits),
        cmocka_unit_test(every_folded_opcode_runs_on_the_device),
        cmocka_unit_test(simplify_keeps_broadcast_of_scalar_constant),
        cmocka_unit_test(cse_merges_identical_dots),
        cmocka_unit_test(cse_keeps_different_attributes_and_rng),
        cmocka_unit_test(dce_removes_unused_computation),
        cmocka_unit_test(trip_count_annotates_counter_loop),
        cmocka_unit_test(trip_count_matches_xla_sample),
        cmocka_unit_test(trip_count_ignores_other_loops),
        cmocka_unit_test(fingerprint_ignores_names),
        cmocka_unit_test(fingerprint_sees_constants_layouts_and_memory_spaces),
        cmocka_unit_test(pipeline_reports_each_pass),
        cmocka_unit_test(pipeline_fix_runs_until_nothing_changes),
        cmocka_unit_test(pipeline_parse_rejects_unknown_pass),
        cmocka_unit_test(pipeline_verifies_after_a_changing_pass),
        cmocka_unit_test(cancelled_pipeline_stops),
        cmocka_unit_test(cancel_inside_a_pass_leaves_a_valid_module),
        cmocka_unit_test(default_pipeline_keeps_samples_valid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
