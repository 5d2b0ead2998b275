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

/* Uses an instruction of the caller's computation inside the body. */
static void closure_step(hs_builder *body, hs_scan_step *s, void *user)
{
    hs_instruction *outer = user;
    s->new_carry[0] = hs_b_binary(body, HS_OP_ADD, s->carry[0], outer);
}

static void closing_over_a_caller_value_is_an_error(void **state)
{
    (void)state;
    hs_module *m = hs_module_new("closure");
    hs_builder *b = hs_builder_new(m, "main", true);
    hs_shape row = f32(1, 3);
    hs_instruction *init = hs_b_parameter(b, 0, &row, "init");
    hs_instruction *bias = hs_b_parameter(b, 1, &row, "bias");
    hs_scan_options o = {.length = 2};
    assert_null(hs_scan(b, closure_step, bias, &init, 1, NULL, 0, &o, NULL,
                        NULL, NULL));
    expect_trace_error(b, "operand 1 (bias) belongs to computation main, "
                          "not scan_body");
    hs_module_free(m);
}

/* ---- scan_layers through the API ------------------------------------------ */

/* y = x W^T + b: one Linear layer on the body's slices. */
static hs_instruction *linear_layer(hs_builder *body, hs_instruction *x,
                                    hs_instruction *const *p, int n,
                                    void *user)
{
    (void)user;
    assert_int_equal(n, 2);
    hs_instruction *y = hs_b_matmul_nt(body, x, p[0]);
    return hs_b_binary(body, HS_OP_ADD, y,
                       hs_b_broadcast_trailing(body, p[1], &y->shape));
}

/* L Linear layers of width F: entry parameters x, then w_k, b_k per
 * layer. stacked: pass them through scan_layers (in-graph stacking);
 * else chain them unrolled. */
static hs_module *linear_chain(int L, int F, bool scanned)
{
    hs_module *m = hs_module_new(scanned ? "scanned" : "unrolled");
    hs_builder *b = hs_builder_new(m, "main", true);
    hs_shape xs = f32(2, 2, F), ws = f32(2, F, F), bs = f32(1, F);
    hs_instruction *x = hs_b_parameter(b, 0, &xs, "x");
    hs_layer *layers = calloc((size_t)L, sizeof *layers);
    hs_layer_param *lp = calloc((size_t)(2 * L), sizeof *lp);
    for (int k = 0; k < L; k++) {
        char wn[32], bn[32];
        snprintf(wn, sizeof wn, "layers.%d.weight", k);
        snprintf(bn, sizeof bn, "layers.%d.bias", k);
        lp[2 * k] = (hs_layer_param){"weight", ws,
                                     hs_b_parameter(b, 1 + 2 * k, &ws, wn)};
        lp[2 * k + 1] = (hs_layer_param){"bias", bs,
                                         hs_b_parameter(b, 2 + 2 * k, &bs, bn)};
        layers[k] = (hs_layer){NULL, NULL, 2, &lp[2 * k]};
    }
    if (scanned) {
        x = hs_scan_layers(b, layers, L, linear_layer, NULL, x, NULL);
    } else {
        for (int k = 0; k < L; k++) {
            hs_instruction *p[2] = {lp[2 * k].value, lp[2 * k + 1].value};
            x = linear_layer(b, x, p, 2, NULL);
        }
    }
    finish(b, x);
    free(layers);
    free(lp);
    return m;
}

static hs_tensor **chain_args(int L, int F)
{
    hs_tensor **a = calloc((size_t)(1 + 2 * L), sizeof *a);
    hs_shape xs = f32(2, 2, F), ws = f32(2, F, F), bs = f32(1, F);
    a[0] = hs_tensor_new(&xs);
    for (int k = 0; k < L; k++) {
        a[1 + 2 * k] = hs_tensor_new(&ws);
        a[2 + 2 * k] = hs_tensor_new(&bs);
    }
    for (int i = 0; i < 1 + 2 * L; i++) {
        float *d = hs_tensor_f32(a[i]);
        for (int64_t e = 0; e < hs_tensor_elements(a[i]); e++)
            d[e] = (float)((e * 7 + i * 13) % 17) / 17.0f - 0.5f;
    }
    return a;
}

static void scan_layers_stacks_in_graph_like_unrolled(void **state)
{
    (void)state;
    enum { L = 5, F = 16 };
    hs_module *s = linear_chain(L, F, true), *u = linear_chain(L, F, false);
    assert_non_null(find_opcode(s, HS_OP_CONCATENATE));
    assert_non_null(find_opcode(s, HS_OP_WHILE));
    hs_tensor **a = chain_args(L, F);
    int ns, nu;
    hs_tensor **os = run(s, a, 1 + 2 * L, &ns, NULL);
    hs_tensor **ou = run(u, a, 1 + 2 * L, &nu, NULL);
    assert_memory_equal(os[0]->data, ou[0]->data, 2 * F * sizeof(float));
    hs_tensors_free(os, ns);
    hs_tensors_free(ou, nu);
    hs_tensors_free(a, 1 + 2 * L);
    hs_module_free(s);
    hs_module_free(u);
}

static void empty_layers_returns_input(void **state)
{
    (void)state;
    hs_module *m = hs_module_new("empty");
    hs_builder *b = hs_builder_new(m, "main", true);
    hs_shape xs = f32(1, 4);
    hs_instruction *x = hs_b_parameter(b, 0, &xs, "x");
    assert_ptr_equal(hs_scan_layers(b, NULL, 0, linear_layer, NULL, x, NULL),
                     x);
    finish(b, x);
    assert_null(find_opcode(m, HS_OP_WHILE));
    hs_module_free(m);
}

static void scan_layers_rejects_heterogeneous_layers(void **state)
{
    (void)state;
    hs_shape small = f32(2, 128, 256), big = f32(2, 256, 256), v = f32(1, 4);
    hs_layer_param p0[2] = {{"attn.q_proj.weight", small, NULL},
                            {"attn.k_proj.weight", small, NULL}};
    hs_layer_param p3[2] = {{"attn.q_proj.weight", big, NULL},
                            {"attn.k_proj.weight", small, NULL}};
    hs_layer layers[4] = {{NULL, "/layers/0", 2, p0},
                          {NULL, "/layers/1", 2, p0},
                          {NULL, "/layers/2", 2, p0},
                          {NULL, "/layers/3", 2, p3}};
    hs_error err;
    assert_int_equal(hs_scan_layers_check(layers, 4, &err), HS_ERR_INVALID);
    assert_string_equal(err.message,
                        "scan_layers: layer 3 has parameter "
                        "'attn.q_proj.weight' of shape f32[256,256] but "
                        "layer 0 has f32[128,256]");
    assert_string_equal(err.path, "/layers/3");

    /* Another name at the same position. */
    hs_layer_param renamed[2] = {{"attn.q_proj.weight", small, NULL},
                                 {"attn.v_proj.weight", small, NULL}};
    layers[3].params = renamed;
    layers[3].name = "layers.7";
    assert_int_equal(hs_scan_layers_check(layers, 4, &err), HS_ERR_INVALID);
    assert_string_equal(err.message,
                        "scan_layers: layers.7 has parameter "
                        "'attn.v_proj.weight' where layer 0 has "
                        "'attn.k_proj.weight' (parameter 1)");
    /* A parameter too many. */
    hs_layer_param more[3] = {p0[0], p0[1], {"bias", v, NULL}};
    layers[3] = (hs_layer){NULL, NULL, 3, more};
    assert_int_equal(hs_scan_layers_check(layers, 4, &err), HS_ERR_INVALID);
    assert_string_equal(err.message,
                        "scan_layers: layer 3 has 3 parameters but layer 0 "
                        "has 2 ('bias' is not in both)");
    assert_string_equal(err.path, "");
    layers[3] = layers[0];
    assert_int_equal(hs_scan_layers_check(layers, 4, &err), HS_OK);

    /* hs_scan_layers reports it on the builder. */
    hs_module *m = hs_module_new("hetero");
    hs_builder *b = hs_builder_new(m, "main", true);
    hs_shape xs = f32(1, 4);
    hs_instruction *x = hs_b_parameter(b, 0, &xs, "x");
    layers[2].params = p3;
    assert_null(hs_scan_layers(b, layers, 4, linear_layer, NULL, x, NULL));
    expect_trace_error(b, "scan_layers: layer 2 has parameter "
                          "'attn.q_proj.weight' of shape f32[256,256]");
    hs_module_free(m);
}

static hs_instruction *widening_layer(hs_builder *body, hs_instruction *x,
                                      hs_instruction *const *p, int n,
                                      void *user)
{
    (void)p;
    (void)n;
    (void)user;
    hs_instruction *both[2] = {x, x};
    return hs_b_concatenate(body, both, 2, 0);
}

static void scan_layers_needs_shape_preserving_layers(void **state)
{
    (void)state;
    hs_module *m = hs_module_new("widen");
    hs_builder *b = hs_builder_new(m, "main", true);
    hs_shape xs = f32(1, 4);
    hs_instruction *x = hs_b_parameter(b, 0, &xs, "x");
    hs_layer layers[3] = {{0}};
    assert_null(hs_scan_layers(b, layers, 3, widening_layer, NULL, x, NULL));
    expect_trace_error(b, "scan_layers: a layer maps f32[4] to f32[8]; "
                          "scanned layers must keep the shape of their "
                          "input");
    hs_module_free(m);
}

/* ---- models: "loop": "scan" ------------------------------------------------------ */

static hs_model *load(const char *json, const char *loop)
{
    hs_model_options o = {.loop = loop};
    hs_error err;
    hs_model *m = hs_model_load(json, strlen(json), &o, &err);
    if (!m) {
        char buf[1024];
        hs_error_format(&err, buf, sizeof buf);
        fail_msg("load (%s) failed: %s", loop, buf);
    }
    hs_error verr;
    assert_int_equal(hs_module_verify(m->module, &verr), HS_OK);
    return m;
}

static hs_model *load_file(const char *rel, const char *loop)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", HS_SOURCE_DIR, rel);
    hs_model_options o = {.loop = loop};
    hs_error err;
    hs_model *m = hs_model_load_file(path, &o, &err);
    if (!m)
        fail_msg("load %s (%s): %s", rel, loop, err.message);
    return m;
}

static hs_error load_error(const char *json, const char *loop)
{
    hs_model_options o = {.loop = loop};
    hs_error err;
    assert_null(hs_model_load(json, strlen(json), &o, &err));
    return err;
}

/* Runs the model's module (the traced one, or the compiled copy) on its
 * own arguments; returns its single output. */
static hs_tensor *run_model(const hs_model *m, bool compiled,
                            hs_run_stats *st)
{
    hs_tensor *args[4096];
    int n = hs_model_args(m, args, 4096);
    assert_int_equal(n, m->n_args);
    assert_int_equal(n, m->module->entry->n_params);
    hs_executable *exe = NULL;
    const hs_module *mod = m->module;
    if (compiled) {
        hs_compile_options o;
        hs_compile_options_init(&o);
        hs_error err;
        if (hs_compile(m->module, &o, NULL, NULL, &exe, &err) != HS_OK)
            fail_msg("compile: %s", err.message);
        mod = hs_executable_module(exe);
    }
    int n_out;
    hs_tensor **outs = run(mod, args, n, &n_out, st);
    assert_int_equal(n_out, 1);
    hs_tensor *y = outs[0];
    free(outs);
    hs_executable_release(exe);
    return y;
}

/* Both loop modes give the same bits, traced and compiled. */
static void expect_same_outputs(const char *json)
{
    hs_model *u = load(json, "unrolled"), *s = load(json, "scan");
    assert_true(s->n_stacks > 0);
    assert_non_null(find_opcode(s->module, HS_OP_WHILE));
    assert_null(find_opcode(u->module, HS_OP_WHILE));
    for (int compiled = 0; compiled < 2; compiled++) {
        hs_tensor *yu = run_model(u, compiled, NULL);
        hs_tensor *ys = run_model(s, compiled, NULL);
        assert_true(hs_shape_compatible(&yu->shape, &ys->shape));
        assert_memory_equal(yu->data, ys->data,
                            (size_t)hs_shape_bytes(&yu->shape));
        hs_tensor_free(yu);
        hs_tensor_free(ys);
    }
    hs_model_free(u);
    hs_model_free(s);
}

static const char *k_linear_stack =
    "{\"seed\": 0, \"input\": {\"shape\": [1, 64]},"
    " \"layers\": [{\"repeat\": 8, \"block\": {\"type\": \"linear\","
    " \"features\": 64}}]}";

static const char *k_decoders =
    "{\"seed\": 5, \"input\": {\"shape\": [2, 16, 64]},"
    " \"layers\": [{\"type\": \"linear\", \"features\": 64},"
    "  {\"repeat\": 3, \"block\": {\"type\": \"decoder\", \"heads\": 4,"
    "   \"hidden\": 96}},"
    "  {\"type\": \"rmsnorm\"}]}";

static void scan_matches_unrolled(void **state)
{
    (void)state;
    expect_same_outputs(k_linear_stack);
    expect_same_outputs(k_decoders);
    /* A sequential block, and two scanned repeats in one model. */
    expect_same_outputs(
        "{\"seed\": 1, \"input\": {\"shape\": [8, 32]},"
        " \"layers\": [{\"repeat\": 3, \"block\": {\"type\": \"sequential\","
        "   \"blocks\": [{\"type\": \"rmsnorm\"}, {\"type\": \"mlp\","
        "   \"hidden\": 48}]}},"
        "  {\"type\": \"linear\", \"features\": 16},"
        "  {\"repeat\": 2, \"block\": {\"type\": \"linear\", \"features\": 16,"
        "   \"bias\": false}}, {\"type\": \"tanh\"}]}");
}

static void scan_over_decoder_blocks(void **state)
{
    (void)state;
    hs_model *u = load(k_decoders, "unrolled"), *s = load(k_decoders, "scan");
    /* The same per-layer parameters, names and values. */
    assert_int_equal(s->n_params, u->n_params);
    for (int i = 0; i < s->n_params; i++) {
        assert_string_equal(s->params[i].name, u->params[i].name);
        assert_memory_equal(s->params[i].init, u->params[i].init,
                            (size_t)hs_shape_bytes(&u->params[i].shape));
    }
    /* x, the first linear's 2, 9 stacks of the decoders, the norm's 1. */
    assert_int_equal(s->n_stacks, 9);
    assert_int_equal(s->n_args, 1 + 2 + 9 + 1);
    assert_int_equal(u->n_args, 1 + u->n_params);
    const hs_model_stack *q = NULL;
    for (int k = 0; k < s->n_stacks; k++)
        if (strcmp(s->stacks[k].local, "attn.q_proj.weight") == 0)
            q = &s->stacks[k];
    assert_non_null(q);
    assert_string_equal(q->name, "layers.1-3.attn.q_proj.weight");
    assert_int_equal(q->first_layer, 1);
    assert_int_equal(q->shape.rank, 3);
    assert_int_equal(q->shape.dims[0], 3);
    assert_string_equal(s->module->entry->params[q->number]->name, q->name);
    /* layers.2.attn.q_proj.weight is slice 1 of that stack, and a view of
     * it: the values exist once. */
    int i2 = hs_model_find_param(s, "layers.2.attn.q_proj.weight");
    assert_true(i2 >= 0);
    const hs_model_param *p2 = &s->params[i2];
    assert_int_equal(p2->number, q->number);
    assert_int_equal(p2->slice, 1);
    assert_ptr_equal(&s->stacks[p2->stack], q);
    assert_ptr_equal(p2->init, hs_tensor_f32(q->value) + 64 * 64);
    int i0 = hs_model_find_param(s, "layers.0.weight");
    assert_int_equal(s->params[i0].slice, -1);
    assert_int_equal(s->params[i0].stack, -1);
    assert_int_equal(s->params[i0].number, 1);

    /* One body: per-layer ops under "layers.*", the loop under
     * "layers/scan"; 50 layers or 3, the module is the same size. */
    char *text = print(s->module);
    assert_non_null(strstr(text, "op_name=\"layers.*/attn/q_proj\""));
    assert_non_null(strstr(text, "op_name=\"layers.*/mlp/down_proj\""));
    assert_non_null(strstr(text, "op_name=\"layers/scan\""));
    assert_non_null(strstr(text, "op_name=\"layers.0/linear\""));
    assert_non_null(strstr(text, "op_name=\"layers.4/rmsnorm\""));
    assert_null(strstr(text, "layers.2/"));
    /* The text parses back to the same module. */
    hs_error perr;
    hs_module *back = hs_hlo_parse(text, strlen(text), &perr);
    if (!back)
        fail_msg("parse: %s", perr.message);
    char *again = print(back);
    assert_string_equal(text, again);
    free(again);
    hs_module_free(back);
    free(text);

    /* Writing a per-layer value changes what the scan computes. */
    hs_tensor *before = run_model(s, false, NULL);
    for (int64_t e = 0; e < hs_shape_elements(&p2->shape); e++)
        p2->init[e] = 0;
    hs_tensor *after = run_model(s, false, NULL);
    assert_memory_not_equal(before->data, after->data,
                            (size_t)hs_shape_bytes(&before->shape));
    hs_tensor_free(before);
    hs_tensor_free(after);
    hs_model_free(u);
    hs_model_free(s);
}

static void scan_body_appears_once_whatever_L(void **state)
{
    (void)state;
    int64_t counts[3], optimized[3];
    const int Ls[3] = {2, 8, 64};
    for (int i = 0; i < 3; i++) {
        char json[512];
        snprintf(json, sizeof json,
                 "{\"input\": {\"shape\": [2, 32]}, \"layers\": [{\"repeat\":"
                 " %d, \"block\": {\"type\": \"linear\", \"features\": 32}}]}",
                 Ls[i]);
        hs_model *m = load(json, "scan");
        counts[i] = hs_module_instruction_count(m->module);
        assert_int_equal(m->n_params, 2 * Ls[i]);
        assert_int_equal(m->module->entry->n_params, 3);
        hs_compile_options o;
        hs_compile_options_init(&o);
        hs_executable *exe;
        hs_error err;
        assert_int_equal(hs_compile(m->module, &o, NULL, NULL, &exe, &err),
                         HS_OK);
        optimized[i] = hs_module_instruction_count(hs_executable_module(exe));
        hs_executable_release(exe);
        hs_model_free(m);
    }
    assert_int_equal(counts[0], counts[1]);
    assert_int_equal(counts[0], counts[2]);
    assert_int_equal(optimized[0], optimized[1]);
    assert_int_equal(optimized[0], optimized[2]);
}

static void scan_over_graph_block(void **state)
{
    (void)state;
    const char *json =
        "{\"seed\": 2, \"input\": {\"shape\": [4, 32]},"
        " \"layers\": [{\"repeat\": 4, \"block\": {\"type\": \"graph\","
        "  \"params\": {\"weight\": {\"shape\": [32, 32]},"
        "              \"bias\": {\"shape\": [32], \"init\": \"zeros\"}},"
        "  \"ops\": ["
        "   {\"name\": \"y\", \"op\": \"dot\", \"args\": [\"x\", \"weight\"],"
        "    \"attrs\": {\"lhs_contracting_dims\": [1],"
        "                \"rhs_contracting_dims\": [1]}},"
        "   {\"name\": \"z\", \"op\": \"add\", \"args\": [\"y\", \"bias\"]},"
        "   {\"name\": \"h\", \"op\": \"tanh\", \"args\": [\"z\"]},"
        "   {\"name\": \"saved\", \"op\": \"place_to_host\", \"args\": [\"h\"]},"
        "   {\"name\": \"back\", \"op\": \"place_to_device\","
        "    \"args\": [\"saved\"]}],"
        "  \"output\": \"back\"}}]}";
    expect_same_outputs(json);
    hs_model *s = load(json, "scan");
    char *text = print(s->module);
    assert_non_null(strstr(text, "op_name=\"layers.*/graph/saved\""));
    assert_non_null(strstr(text, "ENTRY %main (x: f32[4,32], "
                                 "layers.0-3.weight: f32[4,32,32], "
                                 "layers.0-3.bias: f32[4,32])"));
    free(text);
    hs_model_free(s);
    /* The example file scans too. */
    hs_model *u = load_file("examples/graph_offload.json", "unrolled");
    s = load_file("examples/graph_offload.json", "scan");
    hs_tensor *yu = run_model(u, true, NULL), *ys = run_model(s, true, NULL);
    assert_memory_equal(yu->data, ys->data,
                        (size_t)hs_shape_bytes(&yu->shape));
    hs_tensor_free(yu);
    hs_tensor_free(ys);
    hs_model_free(u);
    hs_model_free(s);
}

static void parameterless_repeat_scans_by_length(void **state)
{
    (void)state;
    const char *json = "{\"input\": {\"shape\": [2, 8]}, \"layers\": ["
                       "{\"repeat\": 3, \"block\": {\"type\": \"tanh\"}}]}";
    hs_model *u = load(json, "unrolled"), *s = load(json, "scan");
    assert_int_equal(s->n_stacks, 0);
    assert_int_equal(s->n_args, 1);
    const hs_instruction *w = find_opcode(s->module, HS_OP_WHILE);
    assert_non_null(w);
    assert_int_equal(w->known_trip_count, 3);
    hs_tensor *yu = run_model(u, false, NULL), *ys = run_model(s, false, NULL);
    assert_memory_equal(yu->data, ys->data,
                        (size_t)hs_shape_bytes(&yu->shape));
    hs_tensor_free(yu);
    hs_tensor_free(ys);
    hs_model_free(u);
    hs_model_free(s);
}

static void single_copy_and_nested_repeats_stay_unrolled(void **state)
{
    (void)state;
    hs_model *m = load(
        "{\"input\": {\"shape\": [2, 8]}, \"layers\": ["
        " {\"repeat\": 1, \"block\": {\"type\": \"linear\", \"features\": 8}},"
        " {\"type\": \"sequential\", \"blocks\": [{\"repeat\": 3, \"block\":"
        "  {\"type\": \"linear\", \"features\": 8}}]}]}",
        "scan");
    assert_null(find_opcode(m->module, HS_OP_WHILE));
    assert_int_equal(m->n_stacks, 0);
    assert_int_equal(m->n_args, 1 + m->n_params);
    hs_model_free(m);
}

static void model_rejects_heterogeneous_repeat(void **state)
{
    (void)state;
    /* The first copy maps 32 features to 16, so the second one has a
     * [16, 16] weight where the first has [16, 32]. */
    const char *json =
        "{\"input\": {\"shape\": [2, 32]}, \"layers\": ["
        " {\"type\": \"relu\"},"
        " {\"repeat\": 3, \"block\": {\"type\": \"linear\", \"features\": 16}}]}";
    hs_model_free(load(json, "unrolled"));
    hs_error err = load_error(json, "scan");
    assert_int_equal(err.status, HS_ERR_INVALID);
    assert_string_equal(err.message,
                        "scan_layers: layers.2 has parameter 'weight' of "
                        "shape f32[16,16] but layers.1 has f32[16,32]");
    assert_string_equal(err.path, "/layers/1/block");

    /* Same parameters, but the block changes the shape of x. */
    err = load_error(
        "{\"input\": {\"shape\": [2, 32]}, \"layers\": [{\"repeat\": 2,"
        " \"block\": {\"type\": \"graph\", \"params\": {},"
        "  \"ops\": [{\"name\": \"s\", \"op\": \"slice\", \"args\": [\"x\"],"
        "   \"attrs\": {\"start\": [0, 0], \"limit\": [2, 8]}}],"
        "  \"output\": \"s\"}}]}",
        "scan");
    assert_non_null(strstr(err.message, "scan_layers: a layer maps f32[2,32] "
                                        "to f32[2,8]"));
    assert_string_equal(err.path, "/layers/0/block");

    /* A tracing error inside the layer keeps its path and layer name. */
    err = load_error("{\"input\": {\"shape\": [2, 32]}, \"layers\": ["
                     "{\"repeat\": 2, \"block\": {\"type\": \"attention\","
                     " \"heads\": 4}}]}",
                     "scan");
    assert_non_null(strstr(err.message, "attention needs a 3-D input"));
    assert_string_equal(err.path, "/layers/0/block");
}

static void stacked_weights_count_against_the_tensor_limit(void **state)
{
    (void)state;
    const char *json = "{\"input\": {\"shape\": [2, 8]}, \"layers\": ["
                       "{\"repeat\": 20, \"block\": {\"type\": \"linear\","
                       " \"features\": 8}}]}";
    hs_model_options o = {.loop = "unrolled",
                          .limits = {.max_tensor_elements = 1000}};
    hs_error err;
    hs_model *m = hs_model_load(json, strlen(json), &o, &err);
    assert_non_null(m);
    hs_model_free(m);
    o.loop = "scan";
    assert_null(hs_model_load(json, strlen(json), &o, &err));
    assert_int_equal(err.status, HS_ERR_LIMIT);
    assert_string_equal(err.message,
                        "a tensor of shape [20,8,8] would have more than "
                        "1000 elements (limit max_tensor_elements)");
    assert_string_equal(err.path, "/layers/0/block");
}

static void scan_trip_count_pass_recognises_scan_loop(void **state)
{
    (void)state;
    for (int reverse = 0; reverse < 2; reverse++) {
        hs_module *m = cumsum_module(7, reverse);
        hs_instruction *w = find_opcode(m, HS_OP_WHILE);
        w->known_trip_count = -1;
        w->backend_config = NULL;
        hs_error err;
        hs_pipeline *p = hs_pipeline_parse("while-loop-trip-count", &err);
        hs_pass_context ctx;
        hs_pass_context_init(&ctx);
        hs_compile_report rep;
        assert_int_equal(hs_pipeline_run(p, m, &ctx, &rep, &err), HS_OK);
        assert_int_equal(w->known_trip_count, 7);
        assert_string_equal(w->backend_config,
                            "{\"known_trip_count\":{\"n\":\"7\"}}");
        assert_int_equal(
            hs_compile_report_find(&rep, "while-loop-trip-count")->changed_runs,
            1);
        hs_pipeline_free(p);
        hs_module_free(m);
    }
    /* Through the default pipeline the annotation survives unchanged. */
    hs_model *s = load(k_linear_stack, "scan");
    hs_compile_options o;
    hs_compile_options_init(&o);
    hs_executable *exe;
    hs_error err;
    assert_int_equal(hs_compile(s->module, &o, NULL, NULL, &exe, &err), HS_OK);
    const hs_instruction *w = find_opcode(hs_executable_module(exe),
                                          HS_OP_WHILE);
    assert_non_null(w);
    assert_int_equal(w->known_trip_count, 8);
    hs_executable_release(exe);
    hs_model_free(s);
}

static void compile_three_times_gives_one_uncached_two_cached(void **state)
{
    (void)state;
    hs_compile_cache *cache = hs_compile_cache_new(8);
    hs_metrics *met = hs_metrics_new();
    hs_executable *e[3];
    for (int i = 0; i < 3; i++) {
        hs_model *m = load(k_decoders, "scan"); /* traced afresh each time */
        hs_compile_options o;
        hs_compile_options_init(&o);
        o.device = "tpu-v5e";
        hs_error err;
        assert_int_equal(hs_compile(m->module, &o, cache, met, &e[i], &err),
                         HS_OK);
        hs_model_free(m);
    }
    assert_int_equal(hs_metrics_counter(met, HS_METRIC_UNCACHED_COMPILE), 1);
    assert_int_equal(hs_metrics_counter(met, HS_METRIC_CACHED_COMPILE), 2);
    assert_ptr_equal(e[0], e[1]);
    assert_ptr_equal(e[0], e[2]);
    for (int i = 0; i < 3; i++)
        hs_executable_release(e[i]);
    hs_metrics_free(met);
    hs_compile_cache_free(cache);
}

/* examples/decoder_50x256.json both ways: same output bits; the scanned
 * module is one layer's worth of instructions. */
static void decoder_50x256_runs_both_ways(void **state)
{
    (void)state;
    hs_model *u = load_file("examples/decoder_50x256.json", "unrolled");
    hs_model *s = load_file("examples/decoder_50x256.json", "scan");
    int64_t nu = hs_module_instruction_count(u->module);
    int64_t ns = hs_module_instruction_count(s->module);
    assert_true(ns * 20 < nu);
    hs_run_stats su, ss;
    hs_tensor *yu = run_model(u, true, &su), *ys = run_model(s, true, &ss);
    assert_memory_equal(yu->data, ys->data,
                        (size_t)hs_shape_bytes(&yu->shape));
    print_message("decoder_50x256: %lld instructions unrolled, %lld scanned; "
                  "execute %.1f ms / %.1f ms host, %.3f ms / %.3f ms "
                  "simulated\n",
                  (long long)nu, (long long)ns, su.wall_seconds * 1e3,
                  ss.wall_seconds * 1e3, su.sim_seconds * 1e3,
                  ss.sim_seconds * 1e3);
    hs_tensor_free(yu);
    hs_tensor_free(ys);
    hs_model_free(u);
    hs_model_free(s);
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
        cmocka_unit_test(closing_over_a_caller_value_is_an_error),
        cmocka_unit_test(scan_layers_stacks_in_graph_like_unrolled),
        cmocka_unit_test(empty_layers_returns_input),
        cmocka_unit_test(scan_layers_rejects_heterogeneous_layers),
        cmocka_unit_test(scan_layers_needs_shape_preserving_layers),
        cmocka_unit_test(scan_matches_unrolled),
        cmocka_unit_test(scan_over_decoder_blocks),
        cmocka_unit_test(scan_body_appears_once_whatever_L),
        cmocka_unit_test(scan_over_graph_block),
        cmocka_unit_test(parameterless_repeat_scans_by_length),
        cmocka_unit_test(single_copy_and_nested_repeats_stay_unrolled),
        cmocka_unit_test(model_rejects_heterogeneous_repeat),
        cmocka_unit_test(stacked_weights_count_against_the_tensor_limit),
        cmocka_unit_test(scan_trip_count_pass_recognises_scan_loop),
        cmocka_unit_test(compile_three_times_gives_one_uncached_two_cached),
        cmocka_unit_test(decoder_50x256_runs_both_ways),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
