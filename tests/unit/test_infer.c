/* test_infer.c - shape inference rules (hs_infer.h), one family at a time,
 * including the messages a user sees when shapes disagree. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_infer.h"
#include "hloscope/hs_ir.h"

#define DIMS(...) ((int64_t[]){__VA_ARGS__})
#define NDIMS(...) ((int)(sizeof(DIMS(__VA_ARGS__)) / sizeof(int64_t)))
#define SHAPE(t, ...) hs_shape_make(t, NDIMS(__VA_ARGS__), DIMS(__VA_ARGS__))

/* A module with one computation to hang operands on. */
typedef struct fixture {
    hs_module *m;
    hs_computation *c;
    int n_params;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->m = hs_module_new("infer");
    f->c = hs_module_add_computation(f->m, "main", true);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    hs_module_free(f->m);
    free(f);
    return 0;
}

static hs_instruction *param(fixture *f, hs_shape s)
{
    return hs_computation_add_parameter(f->c, f->n_params++, &s, NULL);
}

/* A prototype instruction, as the tracer makes them. */
static hs_instruction proto(hs_opcode op, hs_instruction **ops, int n)
{
    hs_instruction p;
    memset(&p, 0, sizeof p);
    p.opcode = op;
    p.operands = ops;
    p.n_operands = n;
    return p;
}

static hs_status infer(fixture *f, const hs_instruction *p, hs_shape *out,
                       hs_error *e)
{
    hs_error_clear(e);
    return hs_infer_shape(p, f->m->arena, out, e);
}

static void assert_shape(const hs_shape *s, const char *text)
{
    char buf[256];
    hs_shape_print(s, false, buf, sizeof buf);
    assert_string_equal(buf, text);
}

static void assert_fails(fixture *f, const hs_instruction *p,
                         const char *message)
{
    hs_shape out;
    hs_error e;
    assert_int_equal(infer(f, p, &out, &e), HS_ERR_SHAPE);
    if (!strstr(e.message, message))
        fail_msg("message \"%s\" lacks \"%s\"", e.message, message);
}

static void assert_infers(fixture *f, const hs_instruction *p,
                          const char *text)
{
    hs_shape out;
    hs_error e;
    hs_status st = infer(f, p, &out, &e);
    if (st != HS_OK)
        fail_msg("inference failed: %s", e.message);
    assert_shape(&out, text);
}

/* ---- element-wise ---- */

static void binary_ops_keep_the_operand_shape(void **state)
{
    fixture *f = *state;
    hs_instruction *ops[2] = {param(f, SHAPE(HS_F32, 2, 3)),
                              param(f, SHAPE(HS_F32, 2, 3))};
    hs_instruction p = proto(HS_OP_ADD, ops, 2);
    assert_infers(f, &p, "f32[2,3]");
    p.opcode = HS_OP_COMPARE;
    assert_infers(f, &p, "pred[2,3]");
}

static void binary_shape_mismatch_names_both_shapes(void **state)
{
    fixture *f = *state;
    hs_instruction *ops[2] = {param(f, SHAPE(HS_F32, 2, 3)),
                              param(f, SHAPE(HS_F32, 3, 2))};
    hs_instruction p = proto(HS_OP_MULTIPLY, ops, 2);
    assert_fails(f, &p, "multiply: operand shapes f32[2,3] and f32[3,2] "
                        "differ");
}

static void mixed_float_precision_is_allowed_like_xla(void **state)
{
    fixture *f = *state;
    hs_instruction *ops[2] = {param(f, SHAPE(HS_BF16, 4)),
                              param(f, SHAPE(HS_F32, 4))};
    hs_instruction p = proto(HS_OP_ADD, ops, 2);
    assert_infers(f, &p, "f32[4]");
    hs_instruction *mixed[2] = {ops[1], param(f, SHAPE(HS_S32, 4))};
    p = proto(HS_OP_ADD, mixed, 2);
    assert_fails(f, &p, "element types differ");
}

static void logical_ops_need_pred_or_integers(void **state)
{
    fixture *f = *state;
    hs_instruction *b[2] = {param(f, SHAPE(HS_PRED, 4)),
                            param(f, SHAPE(HS_PRED, 4))};
    hs_instruction p = proto(HS_OP_AND, b, 2);
    assert_infers(f, &p, "pred[4]");
    hs_instruction *x[2] = {param(f, SHAPE(HS_F32, 4)),
                            param(f, SHAPE(HS_F32, 4))};
    p = proto(HS_OP_XOR, x, 2);
    assert_fails(f, &p, "xor: expects pred or integer operands");
    p = proto(HS_OP_NOT, x, 1);
    assert_fails(f, &p, "not: expects pred or integer");
}

static void float_unary_rejects_integers(void **state)
{
    fixture *f = *state;
    hs_instruction *x = param(f, SHAPE(HS_S32, 4));
    hs_instruction p = proto(HS_OP_EXP, &x, 1);
    assert_fails(f, &p, "exponential: expects a floating-point operand, "
                        "got s32[4]");
    p = proto(HS_OP_NEGATE, &x, 1);
    assert_infers(f, &p, "s32[4]");
}

static void convert_takes_dims_from_operand_and_type_from_shape(void **state)
{
    fixture *f = *state;
    hs_instruction *x = param(f, SHAPE(HS_F32, 2, 5));
    hs_instruction p = proto(HS_OP_CONVERT, &x, 1);
    p.shape = SHAPE(HS_BF16, 7); /* only the type is read */
    assert_infers(f, &p, "bf16[2,5]");
}

static void select_accepts_scalar_predicate(void **state)
{
    fixture *f = *state;
    hs_instruction *t = param(f, SHAPE(HS_F32, 3));
    hs_instruction *ops[3] = {param(f, SHAPE(HS_PRED, 3)), t, t};
    hs_instruction p = proto(HS_OP_SELECT, ops, 3);
    assert_infers(f, &p, "f32[3]");
    ops[0] = param(f, hs_shape_scalar(HS_PRED));
    assert_infers(f, &p, "f32[3]");
    ops[0] = param(f, SHAPE(HS_S32, 3));
    assert_fails(f, &p, "select: predicate must be pred, got s32[3]");
}

static void clamp_allows_scalar_bounds(void **state)
{
    fixture *f = *state;
    hs_instruction *lo = param(f, hs_shape_scalar(HS_F32));
    hs_instruction *x = param(f, SHAPE(HS_F32, 2, 2));
    hs_instruction *ops[3] = {lo, x, lo};
    hs_instruction p = proto(HS_OP_CLAMP, ops, 3);
    assert_infers(f, &p, "f32[2,2]");
    ops[2] = param(f, SHAPE(HS_F32, 2));
    assert_fails(f, &p, "clamp: max f32[2] must be a scalar or match");
}

/* ---- data movement ---- */

static void broadcast_maps_operand_dims_onto_output(void **state)
{
    fixture *f = *state;
    hs_instruction *x = param(f, SHAPE(HS_F32, 3));
    hs_instruction p = proto(HS_OP_BROADCAST, &x, 1);
    p.shape = SHAPE(HS_F32, 2, 3);
    p.dims = DIMS(1);
    p.n_dims = 1;
    assert_infers(f, &p, "f32[2,3]");
    p.dims = DIMS(0);
    assert_fails(f, &p, "broadcast: operand dimension 0 has size 3 but "
                        "output dimension 0 has size 2");
    p.dims = DIMS(2);
    assert_fails(f, &p, "broadcast: output dimension 2 is out of range");
    p.n_dims = 0;
    assert_fails(f, &p, "broadcast: operand f32[3] has rank 1 but 0 "
                        "dimensions were given");
}

static void reshape_checks_element_count(void **state)
{
    fixture *f = *state;
    hs_instruction *x = param(f, SHAPE(HS_F32, 2, 3));
    hs_instruction p = proto(HS_OP_RESHAPE, &x, 1);
    p.shape = SHAPE(HS_F32, 3, 2, 1);
    assert_infers(f, &p, "f32[3,2,1]");
    p.shape = SHAPE(HS_F32, 4);
    assert_fails(f, &p, "reshape: cannot reshape f32[2,3] (6 elements) to "
                        "f32[4] (4 elements)");
}

static void transpose_permutes_and_rejects_bad_permutations(void **state)
{
    fixture *f = *state;
    hs_instruction *x = param(f, SHAPE(HS_F32, 2, 3, 4));
    hs_instruction p = proto(HS_OP_TRANSPOSE, &x, 1);
    p.dims = DIMS(2, 0, 1);
    p.n_dims = 3;
    assert_infers(f, &p, "f32[4,2,3]");
    p.dims = DIMS(0, 0, 1);
    assert_fails(f, &p, "transpose: permutation entry 0 is listed twice");
    p.dims = DIMS(0, 3, 1);
    assert_fails(f, &p, "transpose: permutation entry 3 is out of range");
    p.n_dims = 2;
    assert_fails(f, &p, "transpose: permutation has 2 entries but the "
                        "operand f32[2,3,4] has rank 3");
}

static void slice_uses_strides_and_checks_bounds(void **state)
{
    fixture *f = *state;
    hs_instruction *x = param(f, SHAPE(HS_F32, 10, 4));
    hs_slice_dims s = {.rank = 2,
                       .start = {1, 0},
                       .limit = {10, 4},
                       .stride = {3, 1}};
    hs_instruction p = proto(HS_OP_SLICE, &x, 1);
    p.slice = &s;
    assert_infers(f, &p, "f32[3,4]");
    s.limit[1] = 9;
    assert_fails(f, &p, "slice: dimension 1 has start 0 and limit 9 but the "
                        "operand's size is 4");
}

static void concatenate_adds_along_the_dimension(void **state)
{
    fixture *f = *state;
    hs_instruction *ops[3] = {param(f, SHAPE(HS_F32, 2, 3)),
                              param(f, SHAPE(HS_F32, 2, 5)),
                              param(f, SHAPE(HS_F32, 2, 1))};
    hs_instruction p = proto(HS_OP_CONCATENATE, ops, 3);
    p.dims = DIMS(1);
    p.n_dims = 1;
    assert_infers(f, &p, "f32[2,9]");
    p.dims = DIMS(0);
    assert_fails(f, &p, "concatenate: operand 1 f32[2,5] does not match");
}

static void reverse_and_iota(void **state)
{
    fixture *f = *state;
    hs_instruction *x = param(f, SHAPE(HS_F32, 2, 3));
    hs_instruction p = proto(HS_OP_REVERSE, &x, 1);
    p.dims = DIMS(1);
    p.n_dims = 1;
    assert_infers(f, &p, "f32[2,3]");
    p = proto(HS_OP_IOTA, NULL, 0);
    p.shape = SHAPE(HS_S32, 4, 8);
    p.dims = DIMS(1);
    p.n_dims = 1;
    assert_infers(f, &p, "s32[4,8]");
    p.dims = DIMS(2);
    assert_fails(f, &p, "iota: iota_dimension 2 is out of range");
}

static void dynamic_slice_checks_sizes_and_indices(void **state)
{
    fixture *f = *state;
    hs_instruction *i = param(f, hs_shape_scalar(HS_S32));
    hs_instruction *ops[3] = {param(f, SHAPE(HS_F32, 8, 4)), i, i};
    hs_instruction p = proto(HS_OP_DYNAMIC_SLICE, ops, 3);
    p.dims = DIMS(1, 4);
    p.n_dims = 2;
    assert_infers(f, &p, "f32[1,4]");
    p.dims = DIMS(1, 5);
    assert_fails(f, &p, "dynamic-slice: slice size 5 of dimension 1 does "
                        "not fit the operand's size 4");
    p.dims = DIMS(1, 4);
    ops[2] = param(f, SHAPE(HS_S32, 1));
    assert_fails(f, &p, "dynamic-slice: start index 1 must be an integer "
                        "scalar (s32[]), got s32[1]");
    p.n_operands = 2;
    assert_fails(f, &p, "dynamic-slice: 1 start indices given for an "
                        "operand of rank 2");
}

static void dynamic_update_slice_keeps_operand_shape(void **state)
{
    fixture *f = *state;
    hs_instruction *i = param(f, hs_shape_scalar(HS_S32));
    hs_instruction *ops[4] = {param(f, SHAPE(HS_F32, 8, 4)),
                              param(f, SHAPE(HS_F32, 1, 4)), i, i};
    hs_instruction p = proto(HS_OP_DYNAMIC_UPDATE_SLICE, ops, 4);
    assert_infers(f, &p, "f32[8,4]");
    ops[1] = param(f, SHAPE(HS_F32, 1, 5));
    assert_fails(f, &p, "dynamic-update-slice: update dimension 1 has size "
                        "5 but the operand's size is 4");
}

/* ---- dot ---- */

static hs_dot_dims matmul_dims(int64_t lc, int64_t rc)
{
    hs_dot_dims d;
    memset(&d, 0, sizeof d);
    d.n_lhs_contracting = d.n_rhs_contracting = 1;
    d.lhs_contracting[0] = lc;
    d.rhs_contracting[0] = rc;
    return d;
}

static void dot_orders_batch_lhs_free_rhs_free(void **state)
{
    fixture *f = *state;
    hs_instruction *ops[2] = {param(f, SHAPE(HS_F32, 8, 2, 3)),
                              param(f, SHAPE(HS_F32, 8, 3, 5))};
    hs_dot_dims d = matmul_dims(2, 1);
    d.n_lhs_batch = d.n_rhs_batch = 1;
    hs_instruction p = proto(HS_OP_DOT, ops, 2);
    p.dot = &d;
    assert_infers(f, &p, "f32[8,2,5]");

    /* Linear layer: x[1,4,16] . w[32,16]^T -> [1,4,32] */
    hs_instruction *lin[2] = {param(f, SHAPE(HS_F32, 1, 4, 16)),
                              param(f, SHAPE(HS_F32, 32, 16))};
    hs_dot_dims nt = matmul_dims(2, 1);
    p = proto(HS_OP_DOT, lin, 2);
    p.dot = &nt;
    assert_infers(f, &p, "f32[1,4,32]");
}

static void dot_contracting_mismatch_names_both_sizes(void **state)
{
    fixture *f = *state;
    hs_instruction *ops[2] = {param(f, SHAPE(HS_F32, 1, 1024)),
                              param(f, SHAPE(HS_F32, 64, 512))};
    hs_dot_dims d = matmul_dims(1, 1);
    hs_instruction p = proto(HS_OP_DOT, ops, 2);
    p.dot = &d;
    hs_shape out;
    hs_error e;
    assert_int_equal(infer(f, &p, &out, &e), HS_ERR_SHAPE);
    assert_string_equal(e.message,
                        "dot: lhs contracting dimension 1 has size 1024 but "
                        "rhs contracting dimension 1 has size 512");
    d.n_rhs_batch = 1;
    assert_fails(f, &p, "dot: lhs has 0 batch dimensions but rhs has 1");
}

static void dot_result_type_comes_from_written_shape(void **state)
{
    fixture *f = *state;
    hs_instruction *ops[2] = {param(f, SHAPE(HS_BF16, 2, 3)),
                              param(f, SHAPE(HS_BF16, 3, 4))};
    hs_dot_dims d = matmul_dims(1, 0);
    hs_instruction p = proto(HS_OP_DOT, ops, 2);
    p.dot = &d;
    assert_infers(f, &p, "bf16[2,4]");
    p.shape = hs_shape_scalar(HS_F32); /* preferred_element_type=f32 */
    assert_infers(f, &p, "f32[2,4]");
}

/* ---- reduce ---- */

static hs_computation *add_reducer(fixture *f, const char *name, int n_params)
{
    hs_computation *r = hs_module_add_computation(f->m, name, false);
    hs_shape s = hs_shape_scalar(HS_F32);
    hs_instruction *ops[2];
    for (int k = 0; k < n_params; k++)
        ops[k % 2] = hs_computation_add_parameter(r, k, &s, NULL);
    r->root = hs_computation_add(r, HS_OP_ADD, &s, ops, 2, NULL);
    return r;
}

static void reduce_removes_dimensions_and_checks_reducer(void **state)
{
    fixture *f = *state;
    hs_computation *sum = add_reducer(f, "sum", 2);
    hs_instruction *ops[2] = {param(f, SHAPE(HS_F32, 2, 3, 4)),
                              param(f, hs_shape_scalar(HS_F32))};
    hs_instruction p = proto(HS_OP_REDUCE, ops, 2);
    p.dims = DIMS(2, 0);
    p.n_dims = 2;
    p.called = &sum;
    p.n_called = 1;
    assert_infers(f, &p, "f32[3]");

    hs_computation *bad = add_reducer(f, "bad", 3);
    p.called = &bad;
    assert_fails(f, &p, "reduce: to_apply computation bad takes 3 "
                        "parameters but 2 are needed");
    p.called = &sum;
    ops[1] = param(f, SHAPE(HS_F32, 1));
    assert_fails(f, &p, "reduce: init value 0 must be a scalar");
}

static void variadic_reduce_returns_a_tuple(void **state)
{
    fixture *f = *state;
    hs_computation *r = hs_module_add_computation(f->m, "argmax", false);
    hs_shape fs = hs_shape_scalar(HS_F32), is = hs_shape_scalar(HS_S32);
    hs_instruction *pp[4] = {
        hs_computation_add_parameter(r, 0, &fs, NULL),
        hs_computation_add_parameter(r, 1, &is, NULL),
        hs_computation_add_parameter(r, 2, &fs, NULL),
        hs_computation_add_parameter(r, 3, &is, NULL)};
    hs_shape elems[2] = {fs, is};
    hs_shape ts = hs_shape_tuple(f->m->arena, 2, elems);
    r->root = hs_computation_add(r, HS_OP_TUPLE, &ts, pp, 2, NULL);

    hs_instruction *ops[4] = {param(f, SHAPE(HS_F32, 5, 7)),
                              param(f, SHAPE(HS_S32, 5, 7)),
                              param(f, hs_shape_scalar(HS_F32)),
                              param(f, hs_shape_scalar(HS_S32))};
    hs_instruction p = proto(HS_OP_REDUCE, ops, 4);
    p.dims = DIMS(1);
    p.n_dims = 1;
    p.called = &r;
    p.n_called = 1;
    assert_infers(f, &p, "(f32[5], s32[5])");
}

/* ---- tuples and control ---- */

static void tuple_and_get_tuple_element(void **state)
{
    fixture *f = *state;
    hs_instruction *ops[2] = {param(f, SHAPE(HS_F32, 2)),
                              param(f, hs_shape_scalar(HS_S32))};
    hs_instruction p = proto(HS_OP_TUPLE, ops, 2);
    hs_shape ts;
    hs_error e;
    assert_int_equal(infer(f, &p, &ts, &e), HS_OK);
    assert_shape(&ts, "(f32[2], s32[])");
    hs_instruction *t = hs_computation_add(f->c, HS_OP_TUPLE, &ts, ops, 2,
                                           NULL);
    p = proto(HS_OP_GET_TUPLE_ELEMENT, &t, 1);
    p.index = 1;
    assert_infers(f, &p, "s32[]");
    p.index = 2;
    assert_fails(f, &p, "get-tuple-element: index 2 is out of range for a "
                        "tuple of 2 elements");
}

static void while_checks_condition_and_body(void **state)
{
    fixture *f = *state;
    hs_shape s = SHAPE(HS_F32, 4);
    hs_computation *cond = hs_module_add_computation(f->m, "cond", false);
    hs_instruction *cp = hs_computation_add_parameter(cond, 0, &s, NULL);
    hs_shape ps = hs_shape_scalar(HS_PRED);
    cond->root = hs_computation_add(cond, HS_OP_CONSTANT, &ps, NULL, 0, NULL);
    (void)cp;
    hs_computation *body = hs_module_add_computation(f->m, "body", false);
    hs_instruction *bp = hs_computation_add_parameter(body, 0, &s, NULL);
    hs_instruction *ops[2] = {bp, bp};
    body->root = hs_computation_add(body, HS_OP_ADD, &s, ops, 2, NULL);

    hs_instruction *init = param(f, s);
    hs_computation *called[2] = {cond, body};
    hs_instruction p = proto(HS_OP_WHILE, &init, 1);
    p.called = called;
    p.n_called = 2;
    assert_infers(f, &p, "f32[4]");

    hs_shape wrong = SHAPE(HS_F32, 5);
    body->root = hs_computation_add(body, HS_OP_CONSTANT, &wrong, NULL, 0,
                                    NULL);
    assert_fails(f, &p, "while: body body returns f32[5] but the loop state "
                        "is f32[4]");
}

static void call_returns_the_callee_root_shape(void **state)
{
    fixture *f = *state;
    hs_shape s = SHAPE(HS_F32, 3), r = SHAPE(HS_S32, 9);
    hs_computation *g = hs_module_add_computation(f->m, "g", false);
    hs_computation_add_parameter(g, 0, &s, NULL);
    g->root = hs_computation_add(g, HS_OP_CONSTANT, &r, NULL, 0, NULL);
    hs_instruction *arg = param(f, s);
    hs_instruction p = proto(HS_OP_CALL, &arg, 1);
    p.called = &g;
    p.n_called = 1;
    assert_infers(f, &p, "s32[9]");
    hs_instruction *other = param(f, SHAPE(HS_F32, 4));
    p.operands = &other;
    assert_fails(f, &p, "call: g parameter 0 is f32[3] but argument 0 is "
                        "f32[4]");
}

static void opaque_ops_are_unsupported(void **state)
{
    fixture *f = *state;
    hs_instruction *x = param(f, SHAPE(HS_F32, 3));
    hs_opcode ops[] = {HS_OP_PARAMETER, HS_OP_CONSTANT, HS_OP_CUSTOM_CALL,
                       HS_OP_FUSION, HS_OP_ALL_REDUCE, HS_OP_BITCAST};
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        int arity = hs_opcode_arity(ops[k]);
        hs_instruction p = proto(ops[k], &x, arity < 0 ? 1 : arity);
        hs_shape out;
        hs_error e;
        assert_int_equal(infer(f, &p, &out, &e), HS_ERR_UNSUPPORTED);
    }
}

static void wrong_arity_is_reported(void **state)
{
    fixture *f = *state;
    hs_instruction *x = param(f, SHAPE(HS_F32, 3));
    hs_instruction p = proto(HS_OP_ADD, &x, 1);
    assert_fails(f, &p, "add: expects 2 operands, got 1");
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(binary_ops_keep_the_operand_shape),
        T(binary_shape_mismatch_names_both_shapes),
        T(mixed_float_precision_is_allowed_like_xla),
        T(logical_ops_need_pred_or_integers),
        T(float_unary_rejects_integers),
        T(convert_takes_dims_from_operand_and_type_from_shape),
        T(select_accepts_scalar_predicate),
        T(clamp_allows_scalar_bounds),
        T(broadcast_maps_operand_dims_onto_output),
        T(reshape_checks_element_count),
        T(transpose_permutes_and_rejects_bad_permutations),
        T(slice_uses_strides_and_checks_bounds),
        T(concatenate_adds_along_the_dimension),
        T(reverse_and_iota),
        T(dynamic_slice_checks_sizes_and_indices),
        T(dynamic_update_slice_keeps_operand_shape),
        T(dot_orders_batch_lhs_free_rhs_free),
        T(dot_contracting_mismatch_names_both_sizes),
        T(dot_result_type_comes_from_written_shape),
        T(reduce_removes_dimensions_and_checks_reducer),
        T(variadic_reduce_returns_a_tuple),
        T(tuple_and_get_tuple_element),
        T(while_checks_condition_and_body),
        T(call_returns_the_callee_root_shape),
        T(opaque_ops_are_unsupported),
        T(wrong_arity_is_reported),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
