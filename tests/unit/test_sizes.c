/*
 * test_sizes.c - element counts and byte sizes cannot overflow: shapes
 * beyond the array limit (HS_MAX_ARRAY_ELEMENTS / HS_MAX_ARRAY_BYTES) are
 * refused where they are written (parser, builder) or made (shape rules,
 * verifier), with the instruction and the shape in the message; the size
 * functions saturate instead of wrapping.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hloscope/hs_builder.h"
#include "hloscope/hs_device.h"
#include "hloscope/hs_ir.h"
#include "hloscope/hs_tensor.h"
#include "hlo_test_helpers.h"

/* Parses text expecting an error at line:column naming instruction, with
 * fragment in the message. */
static void assert_parse_refuses(const char *text, int line, int column,
                                 const char *instruction,
                                 const char *fragment)
{
    hs_error err;
    hs_error_clear(&err);
    hs_module *m = hs_hlo_parse(text, strlen(text), &err);
    if (m)
        fail_msg("parsed, expected \"%s\"\n%s", fragment, text);
    assert_contains(err.message, fragment);
    assert_int_equal(err.line, line);
    assert_int_equal(err.column, column);
    if (instruction)
        assert_string_equal(err.instruction, instruction);
}

static void size_functions_saturate_instead_of_wrapping(void **state)
{
    (void)state;
    /* 2^32 x 2^32 wraps to 0 in int64 arithmetic; 2^32 x 2^32 x 4 bytes
     * also wraps to 0, which once let such a module "fit" in 4 bytes. */
    hs_shape s = hs_shape_make(HS_F32, 2,
                               (int64_t[]){INT64_C(1) << 32,
                                           INT64_C(1) << 32});
    assert_true(hs_shape_elements(&s) == INT64_MAX);
    assert_true(hs_shape_bytes(&s) == INT64_MAX);
    hs_shape big = hs_shape_make(HS_C128, 1, (int64_t[]){INT64_C(1) << 60});
    assert_true(hs_shape_elements(&big) == INT64_C(1) << 60);
    assert_true(hs_shape_bytes(&big) == INT64_MAX);
    /* Sub-byte types round bits up without forming n * bits. */
    hs_shape s4 = hs_shape_make(HS_S4, 1, (int64_t[]){INT64_MAX});
    assert_true(hs_shape_bytes(&s4) == INT64_MAX / 8 * 4 + 4);
    hs_shape odd = hs_shape_make(HS_S4, 1, (int64_t[]){3});
    assert_int_equal(hs_shape_bytes(&odd), 2);
    assert_true(hs_sat_add(INT64_MAX, 1) == INT64_MAX);
    assert_true(hs_sat_add(INT64_MIN, -1) == INT64_MIN);
    assert_true(hs_sat_mul(INT64_C(1) << 40, -(INT64_C(1) << 40)) ==
                INT64_MIN);
}

static void check_size_accepts_the_limit_and_refuses_beyond(void **state)
{
    (void)state;
    hs_error e;
    hs_shape at = hs_shape_make(HS_U8, 2, (int64_t[]){INT64_C(1) << 22,
                                                      INT64_C(1) << 22});
    assert_int_equal(hs_shape_check_size(&at, &e), HS_OK);
    /* Same elements, four times the bytes. */
    hs_shape f32 = at;
    f32.dtype = HS_F32;
    assert_int_equal(hs_shape_check_size(&f32, &e), HS_ERR_LIMIT);
    assert_contains(e.message, "f32[4194304,4194304] has 2^46 bytes");
    assert_contains(e.message, "at most 2^44");
    /* An empty dimension makes any other dimension harmless. */
    hs_shape empty = hs_shape_make(HS_F32, 3,
                                   (int64_t[]){INT64_MAX, 0, INT64_MAX});
    assert_int_equal(hs_shape_check_size(&empty, &e), HS_OK);
    hs_shape neg = hs_shape_make(HS_F32, 1, (int64_t[]){-3});
    assert_int_equal(hs_shape_check_size(&neg, &e), HS_ERR_SHAPE);
    assert_contains(e.message, "negative");
    /* Tuples: every leaf. */
    hs_arena *a = hs_arena_new(0);
    hs_shape leaves[2] = {at, f32};
    hs_shape t = hs_shape_tuple(a, 2, leaves);
    assert_int_equal(hs_shape_check_size(&t, &e), HS_ERR_LIMIT);
    hs_arena_free(a);
}

static void parser_refuses_overflowing_shape_where_written(void **state)
{
    (void)state;
    assert_parse_refuses("HloModule m\n"
                         "ENTRY e {\n"
                         "  p = f32[4294967296,4294967296]{1,0} parameter(0)\n"
                         "  ROOT n = f32[4294967296,4294967296]{1,0} "
                         "negate(p)\n"
                         "}\n",
                         3, 7, "p", "more than 2^63 elements");
    /* Inside a tuple shape, on a later line. */
    assert_parse_refuses("HloModule m\n"
                         "ENTRY e {\n"
                         "  p = f32[2] parameter(0)\n"
                         "  ROOT t = (f32[2], s8[70000000,70000000,70000000]) "
                         "tuple(p, p)\n"
                         "}\n",
                         4, 21, "t", "elements; an array may have at most");
}

/* parameter(16000000) in a 60-byte module once made 16 M empty slots
 * before the verifier said the parameters were not contiguous. */
static void parser_refuses_a_parameter_number_the_text_cannot_hold(void **state)
{
    (void)state;
    assert_parse_refuses("HloModule m\n"
                         "ENTRY e {\n"
                         "  ROOT p = f32[2] parameter(16000000)\n"
                         "}\n",
                         3, 29, "p", "62 bytes of text hold at most 3 parameters");
    /* The shortest parameters there are, as many as the bound allows. */
    const char *tight = "ENTRY e{a=()parameter(0)\nb=()parameter(1)\n"
                        "ROOT t=((),()) tuple(a,b)}";
    hs_error err;
    hs_module *m = hs_hlo_parse(tight, strlen(tight), &err);
    assert_non_null(m);
    assert_int_equal(m->entry->n_params, 2);
    hs_module_free(m);
}

static void verifier_refuses_a_pad_whose_padding_overflows(void **state)
{
    (void)state;
    /* The written shape is small; the padding would make it 2^63 + 5. */
    hs_module *m = parse("HloModule m\n"
                         "ENTRY e {\n"
                         "  x = f32[5] parameter(0)\n"
                         "  c = f32[] constant(0)\n"
                         "  ROOT p = f32[8] pad(x, c), "
                         "padding=9223372036854775807_1\n"
                         "}\n");
    hs_error e;
    hs_error_clear(&e);
    assert_int_equal(hs_module_verify(m, &e), HS_ERR_SHAPE);
    assert_string_equal(e.instruction, "p");
    assert_contains(e.message, "overflowing size");
    hs_module_free(m);

    /* A padding that gives another shape than the written one. */
    m = parse("HloModule m\n"
              "ENTRY e {\n"
              "  x = f32[5] parameter(0)\n"
              "  c = f32[] constant(0)\n"
              "  ROOT p = f32[8] pad(x, c), padding=1_1_1\n"
              "}\n");
    hs_error_clear(&e);
    assert_int_equal(hs_module_verify(m, &e), HS_ERR_SHAPE);
    assert_contains(e.message, "has shape f32[8] but its operands give "
                               "f32[11]");
    hs_module_free(m);

    /* Negative padding crops; cropping below zero is refused. */
    m = parse("HloModule m\n"
              "ENTRY e {\n"
              "  x = f32[5] parameter(0)\n"
              "  c = f32[] constant(0)\n"
              "  ROOT p = f32[0] pad(x, c), padding=-3_-3\n"
              "}\n");
    hs_error_clear(&e);
    assert_int_equal(hs_module_verify(m, &e), HS_ERR_SHAPE);
    assert_contains(e.message, "negative size");
    hs_module_free(m);
}

static void slice_with_huge_stride_has_one_element(void **state)
{
    (void)state;
    /* (limit - start + stride - 1) / stride overflows with this stride. */
    hs_module *m = parse("HloModule m\n"
                         "ENTRY e {\n"
                         "  x = f32[7] parameter(0)\n"
                         "  ROOT s = f32[1] slice(x), "
                         "slice={[2:7:9223372036854775807]}\n"
                         "}\n");
    hs_error e;
    hs_error_clear(&e);
    assert_int_equal(hs_module_verify(m, &e), HS_OK);
    /* The device never multiplies by the unused stride (UBSan once caught
     * ostr * stride overflowing here), plain and fused. */
    hs_shape xs = hs_shape_make(HS_F32, 1, (int64_t[]){7});
    hs_tensor *x = hs_tensor_new(&xs);
    float *xd = x->data;
    for (int k = 0; k < 7; k++)
        xd[k] = (float)k;
    hs_tensor **out = NULL;
    int n = 0;
    assert_int_equal(hs_device_run(m, NULL, &x, 1, &out, &n, NULL, &e),
                     HS_OK);
    assert_true(((float *)out[0]->data)[0] == 2.0f);
    hs_tensors_free(out, n);
    hs_module_free(m);
    m = parse("HloModule m\n"
              "fused {\n"
              "  p = f32[7] parameter(0)\n"
              "  s = f32[1] slice(p), slice={[3:7:9223372036854775807]}\n"
              "  ROOT n = f32[1] negate(s)\n"
              "}\n"
              "ENTRY e {\n"
              "  x = f32[7] parameter(0)\n"
              "  ROOT f = f32[1] fusion(x), kind=kLoop, calls=fused\n"
              "}\n");
    assert_int_equal(hs_device_run(m, NULL, &x, 1, &out, &n, NULL, &e),
                     HS_OK);
    assert_true(((float *)out[0]->data)[0] == -3.0f);
    hs_tensors_free(out, n);
    hs_tensor_free(x);
    hs_module_free(m);
}

static void builder_refuses_a_product_beyond_the_limit(void **state)
{
    (void)state;
    /* Each operand is 2^42 elements, their outer product 2^46. */
    hs_module *m = hs_module_new("dot");
    hs_builder *b = hs_builder_new(m, "main", true);
    hs_shape ls = hs_shape_make(HS_F32, 2, (int64_t[]){INT64_C(1) << 23,
                                                       INT64_C(1) << 19});
    hs_shape rs = hs_shape_make(HS_F32, 2, (int64_t[]){INT64_C(1) << 19,
                                                       INT64_C(1) << 23});
    hs_instruction *l = hs_b_parameter(b, 0, &ls, "l");
    hs_instruction *r = hs_b_parameter(b, 1, &rs, "r");
    assert_non_null(l);
    assert_non_null(r);
    hs_dot_dims d = {0};
    d.n_lhs_contracting = d.n_rhs_contracting = 1;
    d.lhs_contracting[0] = 1;
    d.rhs_contracting[0] = 0;
    assert_null(hs_b_dot(b, l, r, &d));
    assert_false(hs_builder_ok(b));
    assert_contains(hs_builder_error(b)->message,
                    "dot: result shape f32[8388608,8388608] has 2^46 "
                    "elements");
    hs_builder_free(b);
    hs_module_free(m);

    /* A parameter the user wrote too large. */
    m = hs_module_new("param");
    b = hs_builder_new(m, "main", true);
    hs_shape huge = hs_shape_make(HS_F32, 1, (int64_t[]){INT64_MAX});
    assert_null(hs_b_parameter(b, 0, &huge, "x"));
    assert_contains(hs_builder_error(b)->message, "parameter: shape f32[");
    hs_builder_free(b);
    hs_module_free(m);
}

static void run_of_an_overflowing_module_is_refused_not_crashed(void **state)
{
    (void)state;
    /* Built by hand, skipping parser and builder: the device must still
     * refuse it rather than allocate 0 bytes and write 2^64 elements. */
    hs_module *m = hs_module_new("raw");
    hs_computation *c = hs_module_add_computation(m, "main", true);
    hs_shape s = hs_shape_make(HS_F32, 2, (int64_t[]){INT64_C(1) << 32,
                                                      INT64_C(1) << 32});
    hs_instruction *io = hs_computation_add(c, HS_OP_IOTA, &s, NULL, 0,
                                            "io");
    hs_instruction_set_dims(io, (int64_t[]){0}, 1);
    c->root = hs_computation_add(c, HS_OP_NEGATE, &s, &io, 1, "n");
    hs_error e;
    hs_error_clear(&e);
    assert_int_equal(hs_module_verify(m, &e), HS_ERR_LIMIT);
    assert_string_equal(e.instruction, "io");
    hs_tensor **out = NULL;
    int n = 0;
    hs_error_clear(&e);
    assert_int_equal(hs_device_run(m, NULL, NULL, 0, &out, &n, NULL, &e),
                     HS_ERR_LIMIT);
    assert_string_equal(e.instruction, "io");
    assert_contains(e.message, "more than 2^63 elements");
    assert_int_equal(n, 0);
    hs_module_free(m);
}

/* Found by the run fuzzer (tests/fuzz/regressions/run/
 * unbounded_dynamic_dimension_returned): an entry returning a parameter
 * of f32[2,?] copied -8 bytes into a 64-byte tensor and corrupted the
 * heap. A '?' dimension has no size: no tensor has it, the device
 * refuses it by name. */
static void run_of_an_unbounded_dynamic_dimension_is_refused(void **state)
{
    (void)state;
    const char *text = "ENTRY f {\n  t = (f32[2,?]{1,0}) parameter(0)\n}\n";
    hs_error e;
    hs_module *m = hs_hlo_parse(text, strlen(text), &e);
    assert_non_null(m);
    hs_tensor *t = hs_tensor_new(&m->entry->root->shape.elems[0]);
    assert_null(t);
    hs_error_clear(&e);
    assert_int_equal(hs_device_check(m, &e), HS_ERR_UNSUPPORTED);
    assert_string_equal(e.instruction, "t");
    assert_contains(e.message, "an unbounded dynamic dimension (f32[2,?]: '?' has no "
                               "size to run at");
    hs_module_free(m);
}

/* Found by the run fuzzer (tests/fuzz/regressions/run/
 * empty_iota_with_a_huge_dimension): s16[42949672966,48,8,848,4,0,8] has
 * no elements, but the iota kernel looped over its leading dimensions,
 * 4.3e10 times before the first empty inner loop (here 2^62 times: it
 * would never return). An array of no elements
 * runs as an empty one (XLA's ZeroSizedHloElimination); results built
 * from empty operands (a reduction, a dot over an empty contraction, a
 * negative pad) still hold their values. */
static void run_of_empty_arrays_with_huge_dimensions_is_immediate(void **state)
{
    (void)state;
    const char *text =
        "HloModule empty\n"
        "add { a = f32[] parameter(0)  b = f32[] parameter(1)\n"
        "      ROOT s = f32[] add(a, b) }\n"
        "ENTRY e {\n"
        "  io = s16[4611686018427387904,0,8] iota(), iota_dimension=0\n"
        "  one = f32[] constant(1)\n"
        "  b = f32[4294967296,0] broadcast(one), dimensions={}\n"
        "  t = f32[0,4294967296] transpose(b), dimensions={1,0}\n"
        "  r = f32[] reduce(t, one), dimensions={0,1}, to_apply=add\n"
        "  l = f32[2,4294967296,0] broadcast(one), dimensions={}\n"
        "  d = f32[2,2] dot(l, l), lhs_batch_dims={}, lhs_contracting_dims={1,2},\n"
        "      rhs_contracting_dims={1,2}\n"
        "  p = f32[3,2] pad(b, one), padding=-4294967293_0x0_2\n"
        "  ROOT out = (s16[4611686018427387904,0,8], f32[], f32[2,2], f32[3,2])\n"
        "      tuple(io, r, d, p)\n"
        "}\n";
    hs_module *m = parse(text);
    hs_error e;
    hs_error_clear(&e);
    assert_int_equal(hs_module_verify(m, &e), HS_OK);
    int n = 0;
    hs_tensor **out = run_f32(m, NULL, 0, &n);
    assert_int_equal(n, 4);
    assert_int_equal(hs_tensor_elements(out[0]), 0);
    assert_float_equal(hs_tensor_f32(out[1])[0], 1, 0);
    for (int i = 0; i < 4; i++)
        assert_float_equal(hs_tensor_f32(out[2])[i], 0, 0);
    for (int i = 0; i < 6; i++)
        assert_float_equal(hs_tensor_f32(out[3])[i], 1, 0);
    for (int i = 0; i < n; i++)
        hs_tensor_free(out[i]);
    free(out);
    hs_module_free(m);
}

static void verifier_bounds_the_bytes_of_a_whole_module(void **state)
{
    (void)state;
    /* 16^5 = 2^20 leaves of 2^44 bytes each (sharing their element
     * arrays): every leaf is legal, their sum 2^64 is not. */
    hs_module *m = hs_module_new("wide");
    hs_computation *c = hs_module_add_computation(m, "main", true);
    hs_shape leaf = hs_shape_make(HS_U8, 1, (int64_t[]){INT64_C(1) << 44});
    hs_shape level[16];
    for (int k = 0; k < 16; k++)
        level[k] = leaf;
    hs_shape t = leaf;
    for (int depth = 0; depth < 5; depth++) {
        t = hs_shape_tuple(m->arena, 16, level);
        for (int k = 0; k < 16; k++)
            level[k] = t;
    }
    hs_instruction *p = hs_computation_add_parameter(c, 0, &t, "p");
    c->root = p;
    hs_error e;
    hs_error_clear(&e);
    assert_int_equal(hs_module_verify(m, &e), HS_ERR_LIMIT);
    assert_contains(e.message, "more than 2^62 bytes");
    hs_module_free(m);
}

/* A counted loop of f32[4] adds with the given known trip count. */
static hs_module *counted_loop(const char *trip)
{
    char text[1200];
    snprintf(text, sizeof text,
             "HloModule loop\n"
             "cond {\n"
             "  p = (s32[], f32[4]) parameter(0)\n"
             "  i = s32[] get-tuple-element(p), index=0\n"
             "  n = s32[] constant(7)\n"
             "  ROOT lt = pred[] compare(i, n), direction=LT\n"
             "}\n"
             "body {\n"
             "  p = (s32[], f32[4]) parameter(0)\n"
             "  i = s32[] get-tuple-element(p), index=0\n"
             "  one = s32[] constant(1)\n"
             "  j = s32[] add(i, one)\n"
             "  x = f32[4] get-tuple-element(p), index=1\n"
             "  y = f32[4] add(x, x)\n"
             "  ROOT t = (s32[], f32[4]) tuple(j, y)\n"
             "}\n"
             "ENTRY e {\n"
             "  z = s32[] constant(0)\n"
             "  x = f32[4] parameter(0)\n"
             "  t = (s32[], f32[4]) tuple(z, x)\n"
             "  ROOT w = (s32[], f32[4]) while(t), condition=cond, "
             "body=body, backend_config={\"known_trip_count\":{\"n\":"
             "\"%s\"}}\n"
             "}\n",
             trip);
    return parse(text);
}

static double estimated_flops(const char *trip, int64_t *instructions)
{
    hs_module *m = counted_loop(trip);
    hs_run_stats st;
    hs_error e;
    hs_error_clear(&e);
    assert_int_equal(hs_device_estimate(m, NULL, &st, &e), HS_OK);
    hs_module_free(m);
    *instructions = st.instructions;
    return st.flops;
}

static void estimate_of_a_huge_trip_count_is_extrapolated(void **state)
{
    (void)state;
    /* Walked exactly: 10 and 11 iterations differ by one iteration. */
    int64_t n10, n11, n_huge;
    double f10 = estimated_flops("10", &n10);
    double f11 = estimated_flops("11", &n11);
    double per = f11 - f10;
    int64_t per_n = n11 - n10;
    assert_true(per > 0 && per_n > 0);
    /* 10^15 iterations would never finish walked one by one; the steady
     * iteration is repeated instead, and the totals stay linear. */
    double huge = estimated_flops("1000000000000000", &n_huge);
    double want = f10 + (1e15 - 10) * per;
    assert_true(huge > want * (1 - 1e-9) && huge < want * (1 + 1e-9));
    assert_true(n_huge == n10 + (INT64_C(1000000000000000) - 10) * per_n);
    /* The largest trip count: counts saturate, nothing overflows (UBSan
     * once caught the instruction count wrapping here). */
    double top = estimated_flops("4611686018427387904", &n_huge); /* 2^62 */
    assert_true(top > 4.6e18 * per);
    assert_true(n_huge == INT64_MAX);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(size_functions_saturate_instead_of_wrapping),
        cmocka_unit_test(check_size_accepts_the_limit_and_refuses_beyond),
        cmocka_unit_test(parser_refuses_overflowing_shape_where_written),
        cmocka_unit_test(parser_refuses_a_parameter_number_the_text_cannot_hold),
        cmocka_unit_test(verifier_refuses_a_pad_whose_padding_overflows),
        cmocka_unit_test(slice_with_huge_stride_has_one_element),
        cmocka_unit_test(builder_refuses_a_product_beyond_the_limit),
        cmocka_unit_test(run_of_an_overflowing_module_is_refused_not_crashed),
        cmocka_unit_test(run_of_an_unbounded_dynamic_dimension_is_refused),
        cmocka_unit_test(run_of_empty_arrays_with_huge_dimensions_is_immediate),
        cmocka_unit_test(verifier_bounds_the_bytes_of_a_whole_module),
        cmocka_unit_test(estimate_of_a_huge_trip_count_is_extrapolated),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
