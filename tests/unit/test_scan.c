/* test_scan.c - scan and scan_layers, after torch_xla's scan tests: the loop
 * is traced once whatever its length, lowers to while/condition/body with a
 * known trip count, runs on the device with the numbers an unrolled loop
 * gives, and refuses what it cannot scan with errors that say where. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_builder.h"
#include "hloscope/hs_compile.h"
#include "hloscope/hs_device.h"
#include "hloscope/hs_hlo_text.h"
#include "hloscope/hs_model.h"
#include "hloscope/hs_passes.h"
#include "hloscope/hs_scan.h"

/* ---- helpers ---------------------------------------------------------------- */

static hs_shape f32(int rank, ...)
{
    int64_t d[HS_MAX_RANK] = {0};
    va_list ap;
    va_start(ap, rank);
    for (int i = 0; i < rank; i++)
        d[i] = va_arg(ap, int);
    va_end(ap);
    return hs_shape_make(HS_F32, rank, d);
}

static hs_computation *finish(hs_builder *b, hs_instruction *root)
{
    hs_error err;
    hs_computation *c = hs_builder_finish(b, root, &err);
    if (!c)
        fail_msg("trace failed: %s", err.message);
    hs_error verr;
    if (hs_module_verify(c->module, &verr) != HS_OK)
        fail_msg("verify: %s: %s", verr.instruction, verr.message);
    return c;
}

/* The builder's sticky error after a failed trace; frees the builder. */
static void expect_trace_error(hs_builder *b, const char *needle)
{
    hs_error err;
    hs_computation *c = hs_builder_finish(b, NULL, &err);
    assert_null(c);
    if (!strstr(err.message, needle))
        fail_msg("error '%s' does not mention '%s'", err.message, needle);
}

static hs_tensor *tensor(hs_shape s, const float *v)
{
    hs_tensor *t = hs_tensor_new(&s);
    if (v)
        memcpy(t->data, v, (size_t)hs_shape_bytes(&s));
    return t;
}

static hs_tensor **run(const hs_module *m, hs_tensor **args, int n_args,
                       int *n_out, hs_run_stats *st)
{
    hs_tensor **outs = NULL;
    hs_error err;
    hs_run_stats local;
    if (hs_device_run(m, hs_device_find("tpu-v5e"), args, n_args, &outs,
                      n_out, st ? st : &local, &err) != HS_OK)
        fail_msg("run: %s: %s", err.instruction, err.message);
    return outs;
}

static char *print(const hs_module *m)
{
    char *text = hs_hlo_print(m);
    assert_non_null(text);
    return text;
}

static hs_instruction *find_opcode(const hs_module *m, hs_opcode op)
{
    for (int c = 0; c < m->n_comps; c++)
        for (int i = 0; i < m->comps[c]->n_instrs; i++)
            if (m->comps[c]->instrs[i]->opcode == op)
                return m->comps[c]->instrs[i];
    return NULL;
}

/* ---- step functions ---------------------------------------------------------- */

/* carry += x; y = carry (a cumulative sum). */
static void cumsum_step(hs_builder *body, hs_scan_step *s, void *user)
{
    (void)user;
    s->new_carry[0] = hs_b_binary(body, HS_OP_ADD, s->carry[0], s->x[0]);
    s->ys[s->n_ys++] = s->new_carry[0];
}

/* Traces cumsum over xs [n, 3]; returns the module with root
 * tuple(final carry, ys). */
static hs_module *cumsum_module(int n, bool reverse)
{
    hs_module *m = hs_module_new("cumsum");
    hs_builder *b = hs_builder_new(m, "main", true);
    hs_shape xs_s = f32(2, n, 3), row = f32(1, 3);
    hs_instruction *xs = hs_b_parameter(b, 0, &xs_s, "xs");
    hs_instruction *init = hs_b_parameter(b, 1, &row, "init");
    hs_instruction *carry, *ys[HS_SCAN_MAX_YS];
    int n_ys = -1;
    hs_scan_options o = {.reverse = reverse};
    assert_non_null(hs_scan(b, cumsum_step, NULL, &init, 1, &xs, 1, &o,
                            &carry, ys, &n_ys));
    assert_int_equal(n_ys, 1);
    hs_instruction *outs[2] = {carry, ys[0]};
    finish(b, hs_b_tuple(b, outs, 2));
    return m;
}

/* ---- lowering ------------------------------------------------------------------- */

static void scan_hlo_has_while_condition_body(void **state)
{
    (void)state;
    hs_module *m = cumsum_module(4, false);
    char *text = print(m);
    assert_non_null(strstr(text, " while("));
    assert_non_null(strstr(text, "condition=%scan_cond"));
    assert_non_null(strstr(text, "body=%scan_body"));
    assert_non_null(strstr(text, "dynamic-slice("));
    assert_non_null(strstr(text, "dynamic-update-slice("));
    assert_non_null(strstr(text, "direction=LT"));
    assert_non_null(strstr(text, "backend_config={\"known_trip_count\":{\"n\":\"4\"}}"));
    /* Machinery sits under the scan's scope. */
    assert_non_null(strstr(text, "op_name=\"scan\""));
    const hs_instruction *w = find_opcode(m, HS_OP_WHILE);
    assert_int_equal(w->known_trip_count, 4);
    /* Round trip through the parser keeps the loop. */
    hs_error err;
    hs_module *back = hs_hlo_parse(text, strlen(text), &err);
    assert_non_null(back);
    char *again = print(back);
    assert_string_equal(text, again);
    free(again);
    hs_module_free(back);
    free(text);
    hs_module_free(m);
}

static void cumulative_sum_matches_expected(void **state)
{
    (void)state;
    hs_module *m = cumsum_module(4, false);
    float xv[12], iv[3] = {100, 200, 300};
    for (int i = 0; i < 12; i++)
        xv[i] = (float)(i + 1);
    hs_tensor *args[2] = {tensor(f32(2, 4, 3), xv), tensor(f32(1, 3), iv)};
    int n_out;
    hs_tensor **outs = run(m, args, 2, &n_out, NULL);
    assert_int_equal(n_out, 2);
    const float *carry = hs_tensor_f32(outs[0]), *ys = hs_tensor_f32(outs[1]);
    for (int c = 0; c < 3; c++) {
        float acc = iv[c];
        for (int i = 0; i < 4; i++) {
            acc += xv[i * 3 + c];
            assert_float_equal(ys[i * 3 + c], acc, 0);
        }
        assert_float_equal(carry[c], acc, 0);
    }
    hs_tensors_free(outs, n_out);
    hs_tensor_free(args[0]);
    hs_tensor_free(args[1]);
    hs_module_free(m);
}

static void reverse_scan(void **state)
{
    (void)state;
    hs_module *m = cumsum_module(5, true);
    float xv[15], iv[3] = {0, 0, 0};
    for (int i = 0; i < 15; i++)
        xv[i] = (float)(i * i % 7) + 0.5f;
    hs_tensor *args[2] = {tensor(f32(2, 5, 3), xv), tensor(f32(1, 3), iv)};
    int n_out;
    hs_tensor **outs = run(m, args, 2, &n_out, NULL);
    const float *carry = hs_tensor_f32(outs[0]), *ys = hs_tensor_f32(outs[1]);
    /* ys[i] = sum of xs[i..n): the reversed cumulative sum, written at the
     * slice it belongs to. */
    for (int c = 0; c < 3; c++) {
        float acc = 0;
        for (int i = 4; i >= 0; i--) {
            acc += xv[i * 3 + c];
            assert_float_equal(ys[i * 3 + c], acc, 0);
        }
        assert_float_equal(carry[c], acc, 0);
    }
    hs_tensors_free(outs, n_out);
    hs_tensor_free(args[0]);
    hs_tensor_free(args[1]);
    hs_module_free(m);
}

/* Carries (sum [2], count s32[], product [2]) over xs a [n,2] and b [n];
 * ys: the running sum, a * b[i] broadcast, and the index. */
static void several_step(hs_builder *body, hs_scan_step *s, void *user)
{
    (void)user;
    hs_shape row = f32(1, 2);
    hs_instruction *bi = hs_b_broadcast(body, s->x[1], &row, NULL, 0);
    s->new_carry[0] = hs_b_binary(body, HS_OP_ADD, s->carry[0], s->x[0]);
    s->new_carry[1] = hs_b_binary(body, HS_OP_ADD, s->carry[1],
                                  hs_b_const_s32(body, 1));
    s->new_carry[2] = hs_b_binary(body, HS_OP_MULTIPLY, s->carry[2], bi);
    s->ys[s->n_ys++] = s->new_carry[0];
    s->ys[s->n_ys++] = hs_b_binary(body, HS_OP_MULTIPLY, s->x[0], bi);
    s->ys[s->n_ys++] = s->index;
}

static void scan_with_several_carries_and_ys(void **state)
{
    (void)state;
    enum { N = 6 };
    hs_module *m = hs_module_new("several");
    hs_builder *b = hs_builder_new(m, "main", true);
    hs_shape as = f32(2, N, 2), bs = f32(1, N);
    hs_instruction *xs[2] = {hs_b_parameter(b, 0, &as, "a"),
                             hs_b_parameter(b, 1, &bs, "b")};
    hs_shape row = f32(1, 2);
    hs_instruction *init[3] = {
        hs_b_broadcast(b, hs_b_const_f32(b, 0), &row, NULL, 0),
        hs_b_const_s32(b, 10),
        hs_b_broadcast(b, hs_b_const_f32(b, 1), &row, NULL, 0)};
    hs_instruction *carry[3], *ys[HS_SCAN_MAX_YS];
    int n_ys;
    assert_non_null(hs_scan(b, several_step, NULL, init, 3, xs, 2, NULL,
                            carry, ys, &n_ys));
    assert_int_equal(n_ys, 3);
    assert_int_equal(ys[2]->shape.dtype, HS_S32);
    assert_int_equal(ys[2]->shape.rank, 1);
    hs_instruction *outs[6] = {carry[0], carry[1], carry[2],
                               ys[0],    ys[1],    ys[2]};
    finish(b, hs_b_tuple(b, outs, 6));

    float av[2 * N], bv[N];
    for (int i = 0; i < N; i++) {
        av[2 * i] = (float)i;
        av[2 * i + 1] = (float)(10 - i);
        bv[i] = 0.5f * (float)(i + 1);
    }
    hs_tensor *args[2] = {tensor(as, av), tensor(bs, bv)};
    int n_out;
    hs_tensor **o = run(m, args, 2, &n_out, NULL);
    assert_int_equal(n_out, 6);
    float sum[2] = {0, 0}, prod[2] = {1, 1};
    for (int i = 0; i < N; i++)
        for (int c = 0; c < 2; c++) {
            sum[c] += av[2 * i + c];
            prod[c] *= bv[i];
            assert_float_equal(hs_tensor_f32(o[3])[2 * i + c], sum[c], 0);
            assert_float_equal(hs_tensor_f32(o[4])[2 * i + c],
                               av[2 * i + c] * bv[i], 0);
        }
    for (int c = 0; c < 2; c++) {
        assert_float_equal(hs_tensor_f32(o[0])[c], sum[c], 0);
        assert_float_equal(hs_tensor_f32(o[2])[c], prod[c], 0);
    }
    assert_int_equal(*(int32_t *)o[1]->data, 10 + N);
    for (int i = 0; i < N; i++)
        assert_int_equal(((int32_t *)o[5]->data)[i], i);
    hs_tensors_free(o, n_out);
    hs_tensor_free(args[0]);
    hs_tensor_free(args[1]);
    hs_module_free(m);
}

/* No xs: a counted loop with a length, carry doubled each step. */
static void double_step(hs_builder *body, hs_scan_step *s, void *user)
{
    (void)user;
    s->new_carry[0] = hs_b_binary(body, HS_OP_ADD, s->carry[0], s->carry[0]);
}

static void scan_without_xs_uses_length(void **state)
{
    (void)state;
    hs_module *m = hs_module_new("pow2");
    hs_builder *b = hs_builder_new(m, "main", true);
    hs_instruction *one = hs_b_const_f32(b, 1), *carry;
    hs_scan_options o = {.length = 10};
    assert_non_null(hs_scan(b, double_step, NULL, &one, 1, NULL, 0, &o,
                            &carry, NULL, NULL));
    finish(b, carry);
    int n_out;
    hs_tensor **outs = run(m, NULL, 0, &n_out, NULL);
    assert_float_equal(hs_tensor_f32(outs[0])[0], 1024, 0);
    hs_tensors_free(outs, n_out);
    hs_module_free(m);
}

/* ---- errors ------------------------------------------------------------------------ */

static void grow_step(hs_builder *body, hs_scan_step *s, void *user)
{
    (void)user;
    hs_instruction *c = s->carry[0];
    hs_instruction *both[2] = {c, c};
    s->new_carry[0] = hs_b_concatenate(body, both, 2, 0);
}

static void carry_whose_shape_changes_is_an_error(void **state)
{
    (void)state;
    hs_module *m = hs_module_new("grow");
    hs_builder *b = hs_builder_new(m, "main", true);
    hs_shape row = f32(1, 3), xs_s = f32(2, 4, 3);
    hs_instruction *init[2] = {hs_b_parameter(b, 0, &row, "a"),
                               hs_b_parameter(b, 1, &row, "c")};
    hs_instruction *xs = hs_b_parameter(b, 2, &xs_s, "xs");
    hs_scan_options o = {.scope = "grower"};
    assert_null(hs_scan(b, grow_step, NULL, init, 1, &xs, 1, &o, NULL, NULL,
                        NULL));
    expect_trace_error(b, "scan grower: carry 0 changes shape in the body: "
                          "it enters as f32[3] and leaves as f32[6]");
    hs_module_free(m);
}

static void xs_with_different_leading_sizes_is_an_error(void **state)
{
    (void)state;
    hs_module *m = hs_module_new("xs");
    hs_builder *b = hs_builder_new(m, "main", true);
    hs_shape a = f32(2, 4, 3), c = f32(1, 5), row = f32(1, 3);
    hs_instruction *xs[2] = {hs_b_parameter(b, 0, &a, "a"),
                             hs_b_parameter(b, 1, &c, "c")};
    hs_instruction *init = hs_b_parameter(b, 2, &row, "init");
    assert_null(hs_scan(b, cumsum_step, NULL, &init, 1, xs, 2, NULL, NULL,
                        NULL, NULL));
    expect_trace_error(b, "scan scan: xs 1 (c) has leading size 5 (f32[5]) "
                          "but xs 0 (a) has 4 (f32[4,3])");
    hs_module_free(m);
}

static void no_xs_and_no_length_is_an_error(void **state)
{
    (void)state;
    hs_module *m = hs_module_new("nolen");
    hs_builder *b = hs_builder_new(m, "main", true);
    hs_instruction *one = hs_b_const_f32(b, 1);
    assert_null(hs_scan(b, double_step, NULL, &one, 1, NULL, 0, NULL, NULL,
                        NULL, NULL));
    expect_trace_error(b, "no xs and no length");
    hs_module_free(m);
}

static void zero_length_is_an_error(void **state)
{
    (void)state;
    hs_module *m = hs_module_new("zero");
    hs_builder *b = hs_builder_new(m, "main", true);
    hs_shape e = f32(2, 0, 3), row = f32(1, 3);
    hs_instruction *xs = hs_b_parameter(b, 0, &e, "xs");
    hs_instruction *init = hs_b_parameter(b, 1, &row, "init");
    assert_null(hs_scan(b, cumsum_step, NULL, &init, 1, &xs, 1, NULL, NULL,
                        NULL, NULL));
    expect_trace_error(b, "scan scan: 0 steps");
    hs_module_free(m);
}

static void bad_step(hs_builder *body, hs_scan_step *s, void *user)
{
    (void)user;
    /* [3] + [4]: a shape error inside the body. */
    hs_shape four = f32(1, 4);
    s->new_carry[0] = hs_b_binary(
        body, HS_OP_ADD, s->carry[0],
        hs_b_broadcast(body, hs_b_const_f32(body, 1), &four, NULL, 0));
}

static void body_error_reaches_the_caller(void **state)
{
    (void)state;
    hs_module *m = hs_module_new("bad");
    hs_builder *b = hs_builder_new(m, "main", true);
    hs_shape row = f32(1, 3), xs_s = f32(2, 2, 3);
    hs_instruction *init = hs_b_parameter(b, 0, &row, "init");
    hs_instruction *xs = hs_b_parameter(b, 1, &xs_s, "xs");
    hs_builder_push_scope(b, "outer");
    hs_scan_options o = {.body_scope = "step"};
    assert_null(hs_scan(b, bad_step, NULL, &init, 1, &xs, 1, &o, NULL, NULL,
                        NULL));
    /* The body's error names the scope it happened in. */
    expect_trace_error(b, "outer/step: ");
    hs_module_free(m);
}

static void forgetful_step(hs_builder *body, hs_scan_step *s, void *user)
{
    (void)body;
    (void)s;
    (void)user;
}

static void missing_carry_is_an_error(void **state)
{
    (void)state;
    hs_module *m = hs_module_new("none");
    hs_builder *b = hs_builder_new(m, "main", true);
    hs_instruction *one = hs_b_const_f32(b, 1);
    hs_scan_options o = {.length = 3};
    assert_null(hs_scan(b, forgetful_step, NULL, &one, 1, NULL, 0, &o, NULL,
                        NULL, NULL));
    expect_trace_error(b, "scan scan: the body returned no carry 0");
    hs_module_free(m);
}

/* ---- main ----------------------------------------------------------------------------- */

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(scan_hlo_has_while_condition_body),
        cmocka_unit_test(cumulative_sum_matches_expected),
        cmocka_unit_test(reverse_scan),
        cmocka_unit_test(scan_with_several_carries_and_ys),
        cmocka_unit_test(scan_without_xs_uses_length),
        cmocka_unit_test(carry_whose_shape_changes_is_an_error),
        cmocka_unit_test(xs_with_different_leading_sizes_is_an_error),
        cmocka_unit_test(no_xs_and_no_length_is_an_error),
        cmocka_unit_test(zero_length_is_an_error),
        cmocka_unit_test(body_error_reaches_the_caller),
        cmocka_unit_test(missing_carry_is_an_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
