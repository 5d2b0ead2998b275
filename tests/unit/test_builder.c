/* test_builder.c - the tracer (hs_builder.h): ops with shape inference,
 * the sticky first error, op_name scopes, reducer computations and the
 * order of computations in the module. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hloscope/hs_builder.h"
#include "hloscope/hs_ir.h"

#define DIMS(...) ((int64_t[]){__VA_ARGS__})
#define NDIMS(...) ((int)(sizeof(DIMS(__VA_ARGS__)) / sizeof(int64_t)))
#define SHAPE(t, ...) hs_shape_make(t, NDIMS(__VA_ARGS__), DIMS(__VA_ARGS__))

static void assert_shape(const hs_instruction *i, const char *text)
{
    assert_non_null(i);
    char buf[256];
    hs_shape_print(&i->shape, false, buf, sizeof buf);
    assert_string_equal(buf, text);
}

static void assert_verifies(const hs_module *m)
{
    hs_error e;
    hs_error_clear(&e);
    if (hs_module_verify(m, &e) != HS_OK)
        fail_msg("verify: %s", e.message);
}

static int position(const hs_module *m, const hs_computation *c)
{
    for (int k = 0; k < m->n_comps; k++)
        if (m->comps[k] == c)
            return k;
    return -1;
}

static void linear_layer_traces_to_one_dot(void **state)
{
    (void)state;
    hs_module *m = hs_module_new("linear");
    hs_builder *b = hs_builder_new(m, "main", true);
    hs_shape xs = SHAPE(HS_F32, 1, 4, 16), ws = SHAPE(HS_F32, 32, 16);
    hs_instruction *x = hs_b_parameter(b, 0, &xs, "x");
    hs_instruction *w = hs_b_parameter(b, 1, &ws, "layers.0.weight");
    hs_instruction *y = hs_b_matmul_nt(b, x, w);
    assert_shape(y, "f32[1,4,32]");
    assert_int_equal(y->opcode, HS_OP_DOT);
    assert_int_equal(y->dot->n_lhs_contracting, 1);
    assert_int_equal(y->dot->lhs_contracting[0], 2);
    assert_int_equal(y->dot->rhs_contracting[0], 1);
    hs_shape bs = SHAPE(HS_F32, 32);
    hs_instruction *bias = hs_b_parameter(b, 2, &bs, "layers.0.bias");
    hs_instruction *bb = hs_b_broadcast_trailing(b, bias, &y->shape);
    assert_shape(bb, "f32[1,4,32]");
    assert_int_equal(bb->n_dims, 1);
    assert_int_equal(bb->dims[0], 2);
    hs_instruction *z = hs_b_binary(b, HS_OP_ADD, y, bb);
    hs_error e;
    hs_computation *c = hs_builder_finish(b, z, &e);
    assert_non_null(c);
    assert_ptr_equal(c->root, z);
    assert_ptr_equal(m->entry, c);
    assert_string_equal(x->name, "x");
    assert_verifies(m);
    hs_module_free(m);
}

static void every_op_family_traces_and_verifies(void **state)
{
    (void)state;
    hs_module *m = hs_module_new("ops");
    hs_builder *b = hs_builder_new(m, "main", true);
    hs_shape xs = SHAPE(HS_F32, 4, 6);
    hs_instruction *x = hs_b_parameter(b, 0, &xs, "x");
    hs_instruction *e = hs_b_unary(b, HS_OP_EXP, x);
    hs_instruction *cmp = hs_b_compare(b, HS_DIR_GT, x, e);
    assert_shape(cmp, "pred[4,6]");
    assert_int_equal(cmp->direction, HS_DIR_GT);
    hs_instruction *sel = hs_b_select(b, cmp, x, e);
    assert_shape(hs_b_convert(b, sel, HS_BF16), "bf16[4,6]");
    hs_instruction *t = hs_b_transpose(b, sel, DIMS(1, 0));
    assert_shape(t, "f32[6,4]");
    hs_instruction *r = hs_b_reshape(b, t, 3, DIMS(2, 3, 4));
    assert_shape(r, "f32[2,3,4]");
    hs_instruction *s = hs_b_slice(b, x, DIMS(0, 1), DIMS(4, 6),
                                   DIMS(2, 2));
    assert_shape(s, "f32[2,3]");
    assert_int_equal(s->slice->stride[1], 2);
    hs_instruction *cat = hs_b_concatenate(
        b, (hs_instruction *[]){x, x, x}, 3, 1);
    assert_shape(cat, "f32[4,18]");
    hs_instruction *zero = hs_b_const_s32(b, 0);
    hs_instruction *ds = hs_b_dynamic_slice(
        b, x, (hs_instruction *[]){zero, zero}, DIMS(1, 6));
    assert_shape(ds, "f32[1,6]");
    hs_instruction *dus = hs_b_dynamic_update_slice(
        b, x, ds, (hs_instruction *[]){zero, zero});
    assert_shape(dus, "f32[4,6]");
    hs_shape is = SHAPE(HS_S32, 4, 6);
    assert_shape(hs_b_iota(b, &is, 1), "s32[4,6]");
    hs_instruction *sum = hs_b_reduce_sum(b, x, DIMS(1), 1);
    assert_shape(sum, "f32[4]");
    hs_instruction *mx = hs_b_reduce_max(b, x, DIMS(0, 1), 2);
    assert_shape(mx, "f32[]");
    assert_true(isinf(*(float *)mx->operands[1]->literal));
    hs_instruction *tup = hs_b_tuple(b, (hs_instruction *[]){sum, mx}, 2);
    assert_shape(tup, "(f32[4], f32[])");
    assert_shape(hs_b_get_tuple_element(b, tup, 1), "f32[]");
    hs_instruction *k = hs_b_const_array(b, &xs, (float[24]){1.0f});
    assert_float_equal(((float *)k->literal)[0], 1.0f, 0);
    hs_shape cs = SHAPE(HS_F32, 8);
    hs_instruction *cc = hs_b_custom_call(b, "MyKernel", &x, 1, &cs);
    assert_string_equal(cc->custom_call_target, "MyKernel");
    assert_true(hs_builder_ok(b));
    hs_error err;
    assert_non_null(hs_builder_finish(b, tup, &err));
    assert_verifies(m);
    hs_module_free(m);
}

static void first_error_is_kept_and_later_ops_return_null(void **state)
{
    (void)state;
    hs_module *m = hs_module_new("sticky");
    hs_builder *b = hs_builder_new(m, "main", true);
    hs_shape xs = SHAPE(HS_F32, 1, 1024), ws = SHAPE(HS_F32, 64, 512);
    hs_instruction *x = hs_b_parameter(b, 0, &xs, "x");
    hs_instruction *w = hs_b_parameter(b, 1, &ws, "w");
    hs_builder_push_scope(b, "layers.3");
    hs_builder_push_scope(b, "linear");
    assert_null(hs_b_matmul_nt(b, x, w));
    assert_false(hs_builder_ok(b));
    /* A later, different failure does not replace the first one. */
    assert_null(hs_b_binary(b, HS_OP_ADD, x, w));
    assert_null(hs_b_unary(b, HS_OP_EXP, x)); /* valid op, still NULL */
    const hs_error *e = hs_builder_error(b);
    assert_int_equal(e->status, HS_ERR_SHAPE);
    assert_string_equal(e->message,
                        "layers.3/linear: dot: lhs contracting dimension 1 "
                        "has size 1024 but rhs contracting dimension 1 has "
                        "size 512");
    hs_builder_pop_scope(b);
    hs_builder_pop_scope(b);
    char first[sizeof e->message];
    strcpy(first, e->message);
    hs_error out;
    assert_null(hs_builder_finish(b, x, &out));
    assert_int_equal(out.status, HS_ERR_SHAPE);
    assert_string_equal(out.message, first);
    hs_module_free(m);
}

static void null_operand_returns_null_silently(void **state)
{
    (void)state;
    hs_module *m = hs_module_new("null");
    hs_builder *b = hs_builder_new(m, "main", true);
    hs_shape xs = SHAPE(HS_F32, 2);
    hs_instruction *x = hs_b_parameter(b, 0, &xs, "x");
    assert_null(hs_b_unary(b, HS_OP_EXP, NULL));
    assert_null(hs_b_binary(b, HS_OP_ADD, x, NULL));
    assert_null(hs_b_tuple(b, (hs_instruction *[]){x, NULL}, 2));
    assert_true(hs_builder_ok(b));
    hs_error e;
    assert_null(hs_builder_finish(b, NULL, &e)); /* but a NULL root fails */
    assert_int_equal(e.status, HS_ERR_INVALID);
    hs_module_free(m);
}

static void builder_fail_records_outside_errors(void **state)
{
    (void)state;
    hs_module *m = hs_module_new("fail");
    hs_builder *b = hs_builder_new(m, "main", true);
    hs_builder_fail(b, HS_ERR_INVALID, "bad key %s", "foo");
    hs_builder_fail(b, HS_ERR_LIMIT, "second");
    assert_int_equal(hs_builder_error(b)->status, HS_ERR_INVALID);
    assert_string_equal(hs_builder_error(b)->message, "bad key foo");
    hs_builder_free(b);
    hs_module_free(m);
}

static void op_name_scopes_are_recorded_and_shared(void **state)
{
    (void)state;
    hs_module *m = hs_module_new("scopes");
    hs_builder *b = hs_builder_new(m, "main", true);
    hs_shape xs = SHAPE(HS_F32, 2);
    hs_instruction *x = hs_b_parameter(b, 0, &xs, "x");
    assert_null(x->op_name);
    assert_string_equal(hs_builder_scope(b), "");
    hs_builder_push_scope(b, "layers.12");
    hs_builder_push_scope(b, "attn");
    hs_builder_push_scope(b, "q_proj");
    hs_instruction *a = hs_b_unary(b, HS_OP_NEGATE, x);
    hs_instruction *c = hs_b_unary(b, HS_OP_ABS, a);
    assert_string_equal(a->op_name, "layers.12/attn/q_proj");
    assert_ptr_equal(a->op_name, c->op_name); /* one string per scope */
    hs_builder_pop_scope(b);
    assert_string_equal(hs_builder_scope(b), "layers.12/attn");
    hs_builder_push_scope(b, "k_proj");
    hs_instruction *d = hs_b_unary(b, HS_OP_ABS, c);
    assert_string_equal(d->op_name, "layers.12/attn/k_proj");
    hs_builder_pop_scope(b);
    hs_builder_pop_scope(b);
    hs_instruction *e = hs_b_unary(b, HS_OP_ABS, d);
    assert_string_equal(e->op_name, "layers.12");
    hs_builder_pop_scope(b);
    hs_instruction *g = hs_b_unary(b, HS_OP_ABS, e);
    assert_null(g->op_name);
    assert_string_equal(a->op_name, "layers.12/attn/q_proj"); /* unchanged */
    hs_error err;
    assert_non_null(hs_builder_finish(b, g, &err));
    hs_module_free(m);
}

static void reducer_is_created_once_before_its_users(void **state)
{
    (void)state;
    hs_module *m = hs_module_new("reducers");
    hs_builder *b = hs_builder_new(m, "main", true);
    hs_shape xs = SHAPE(HS_F32, 4, 8);
    hs_instruction *x = hs_b_parameter(b, 0, &xs, "x");
    hs_instruction *s1 = hs_b_reduce_sum(b, x, DIMS(1), 1);
    hs_instruction *s2 = hs_b_reduce_sum(b, x, DIMS(0), 1);
    hs_instruction *mx = hs_b_reduce_max(b, x, DIMS(0), 1);
    assert_ptr_equal(s1->called[0], s2->called[0]);
    hs_computation *add = hs_module_find_computation(m, "add_F32");
    hs_computation *max = hs_module_find_computation(m, "max_F32");
    assert_ptr_equal(s1->called[0], add);
    assert_ptr_equal(mx->called[0], max);
    assert_int_equal(add->n_params, 2);
    assert_int_equal(add->root->opcode, HS_OP_ADD);
    hs_computation *main = hs_builder_computation(b);

    /* A second builder (a loop body, say) made after main reuses the
     * reducer; a third one's new reducer is placed before it, and main
     * using that reducer later moves it before main as well. */
    hs_builder *body = hs_builder_new(m, "body", false);
    hs_shape ys = SHAPE(HS_F32, 3);
    hs_instruction *y = hs_b_parameter(body, 0, &ys, "y");
    hs_instruction *ys1 = hs_b_reduce_sum(body, y, DIMS(0), 1);
    hs_instruction *ymin = hs_b_reduce(body, y, ys1, DIMS(0), 1,
                                       HS_OP_MINIMUM);
    assert_ptr_equal(ys1->called[0], add);
    hs_computation *min = hs_module_find_computation(m, "min_F32");
    assert_non_null(min);
    hs_error e;
    hs_computation *bc = hs_builder_finish(body, ymin, &e);
    assert_non_null(bc);
    hs_instruction *mn = hs_b_reduce(b, x, hs_b_const_f32(b, 0), DIMS(0), 1,
                                     HS_OP_MINIMUM);
    assert_ptr_equal(mn->called[0], min);

    assert_true(position(m, add) < position(m, main));
    assert_true(position(m, max) < position(m, main));
    assert_true(position(m, min) < position(m, main));
    assert_true(position(m, min) < position(m, bc));
    assert_true(position(m, add) < position(m, bc));
    int n_add = 0;
    for (int k = 0; k < m->n_comps; k++)
        n_add += strcmp(m->comps[k]->name, "add_F32") == 0;
    assert_int_equal(n_add, 1);
    assert_non_null(hs_builder_finish(
        b, hs_b_tuple(b, (hs_instruction *[]){s1, s2, mx, mn}, 4), &e));
    assert_verifies(m);
    hs_module_free(m);
}

static void while_loop_bodies_are_ordered_before_the_caller(void **state)
{
    (void)state;
    hs_module *m = hs_module_new("loop");
    hs_shape cs = hs_shape_scalar(HS_S32), vs = SHAPE(HS_F32, 4);
    hs_shape elems[2] = {cs, vs};
    hs_shape state_shape = hs_shape_tuple(m->arena, 2, elems);

    hs_builder *b = hs_builder_new(m, "main", true);
    hs_instruction *v = hs_b_parameter(b, 0, &vs, "v");
    hs_instruction *init = hs_b_tuple(
        b, (hs_instruction *[]){hs_b_const_s32(b, 0), v}, 2);

    /* Condition and body are traced after main exists. */
    hs_builder *cb = hs_builder_new(m, "cond", false);
    hs_instruction *cp = hs_b_parameter(cb, 0, &state_shape, "cond.state");
    hs_instruction *lt = hs_b_compare(cb, HS_DIR_LT,
                                      hs_b_get_tuple_element(cb, cp, 0),
                                      hs_b_const_s32(cb, 10));
    hs_error e;
    hs_computation *cond = hs_builder_finish(cb, lt, &e);
    assert_non_null(cond);

    hs_builder *bb = hs_builder_new(m, "body", false);
    hs_instruction *bp = hs_b_parameter(bb, 0, &state_shape, "body.state");
    hs_instruction *i = hs_b_get_tuple_element(bb, bp, 0);
    hs_instruction *x = hs_b_get_tuple_element(bb, bp, 1);
    hs_instruction *next = hs_b_tuple(
        bb,
        (hs_instruction *[]){hs_b_binary(bb, HS_OP_ADD, i,
                                         hs_b_const_s32(bb, 1)),
                             hs_b_unary(bb, HS_OP_TANH, x)},
        2);
    hs_computation *body = hs_builder_finish(bb, next, &e);
    assert_non_null(body);

    hs_instruction *w = hs_b_while(b, cond, body, init);
    assert_shape(w, "(s32[], f32[4])");
    assert_ptr_equal(w->called[0], cond);
    assert_ptr_equal(w->called[1], body);
    assert_non_null(hs_builder_finish(b, hs_b_get_tuple_element(b, w, 1),
                                      &e));
    assert_true(position(m, cond) < position(m, m->entry));
    assert_true(position(m, body) < position(m, m->entry));
    assert_verifies(m);
    hs_module_free(m);
}

static void calls_are_ordered_and_checked(void **state)
{
    (void)state;
    hs_module *m = hs_module_new("call");
    hs_builder *b = hs_builder_new(m, "main", true);
    hs_shape s = SHAPE(HS_F32, 3);
    hs_instruction *x = hs_b_parameter(b, 0, &s, "x");

    hs_builder *fb = hs_builder_new(m, "f", false);
    hs_instruction *fx = hs_b_parameter(fb, 0, &s, "f.x");
    hs_instruction *fs = hs_b_reduce_sum(fb, fx, DIMS(0), 1);
    hs_error e;
    hs_computation *f = hs_builder_finish(fb, fs, &e);
    assert_non_null(f);

    hs_instruction *y = hs_b_call(b, f, &x, 1);
    assert_shape(y, "f32[]");
    /* f and the reducer it calls both precede main now. */
    hs_computation *add = hs_module_find_computation(m, "add_F32");
    assert_true(position(m, add) < position(m, f));
    assert_true(position(m, f) < position(m, m->entry));
    /* Using the callee's own instruction here is an error. */
    assert_null(hs_b_unary(b, HS_OP_EXP, fx));
    assert_non_null(strstr(hs_builder_error(b)->message, "belongs to"));
    hs_builder_free(b);
    hs_module_free(m);
}

static void broadcast_and_reshape_errors_are_reported(void **state)
{
    (void)state;
    hs_module *m = hs_module_new("errs");
    hs_builder *b = hs_builder_new(m, "main", true);
    hs_shape xs = SHAPE(HS_F32, 3);
    hs_instruction *x = hs_b_parameter(b, 0, &xs, "x");
    hs_shape out = SHAPE(HS_F32, 2, 4);
    assert_null(hs_b_broadcast_trailing(b, x, &out));
    assert_non_null(strstr(hs_builder_error(b)->message,
                           "broadcast: operand dimension 0 has size 3 but "
                           "output dimension 1 has size 4"));
    hs_builder_free(b);

    b = hs_builder_new(m, "second", false);
    x = hs_b_parameter(b, 0, &xs, "x2");
    assert_null(hs_b_reshape(b, x, 2, DIMS(2, 2)));
    assert_non_null(strstr(hs_builder_error(b)->message,
                           "(3 elements) to f32[2,2] (4 elements)"));
    hs_builder_free(b);
    hs_module_free(m);
}

static void duplicate_parameter_number_is_an_error(void **state)
{
    (void)state;
    hs_module *m = hs_module_new("params");
    hs_builder *b = hs_builder_new(m, "main", true);
    hs_shape s = SHAPE(HS_F32, 3);
    assert_non_null(hs_b_parameter(b, 0, &s, "a"));
    assert_null(hs_b_parameter(b, 0, &s, "b"));
    assert_non_null(strstr(hs_builder_error(b)->message, "defined twice"));
    hs_builder_free(b);
    hs_module_free(m);
}

/* 100k adds: no timing assertion, but print the rate for a quick look. */
static void tracing_100k_adds_works(void **state)
{
    (void)state;
    enum { N = 100000 };
    hs_module *m = hs_module_new("adds");
    hs_builder *b = hs_builder_new(m, "main", true);
    hs_shape s = SHAPE(HS_F32, 1, 1024);
    hs_instruction *x = hs_b_parameter(b, 0, &s, "x");
    hs_builder_push_scope(b, "layers.0");
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    hs_instruction *acc = x;
    for (int k = 0; k < N; k++)
        acc = hs_b_binary(b, HS_OP_ADD, acc, x);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    hs_builder_pop_scope(b);
    double sec = (double)(t1.tv_sec - t0.tv_sec) +
                 (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    printf("# traced %d adds in %.2f ms (%.0f ns/instruction)\n", N,
           sec * 1e3, sec * 1e9 / N);
    hs_error e;
    hs_computation *c = hs_builder_finish(b, acc, &e);
    assert_non_null(c);
    assert_int_equal(c->n_instrs, N + 1);
    assert_string_equal(c->root->op_name, "layers.0");
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_verifies(m);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    sec = (double)(t1.tv_sec - t0.tv_sec) +
          (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    printf("# verified in %.2f ms\n", sec * 1e3);
    hs_module_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(linear_layer_traces_to_one_dot),
        cmocka_unit_test(every_op_family_traces_and_verifies),
        cmocka_unit_test(first_error_is_kept_and_later_ops_return_null),
        cmocka_unit_test(null_operand_returns_null_silently),
        cmocka_unit_test(builder_fail_records_outside_errors),
        cmocka_unit_test(op_name_scopes_are_recorded_and_shared),
        cmocka_unit_test(reducer_is_created_once_before_its_users),
        cmocka_unit_test(while_loop_bodies_are_ordered_before_the_caller),
        cmocka_unit_test(calls_are_ordered_and_checked),
        cmocka_unit_test(broadcast_and_reshape_errors_are_reported),
        cmocka_unit_test(duplicate_parameter_number_is_an_error),
        cmocka_unit_test(tracing_100k_adds_works),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
