/* test_verify.c - hs_module_verify: each structural rule has a test that
 * breaks it and checks that the error names the instruction and the
 * computation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_builder.h"
#include "hloscope/hs_ir.h"

#define DIMS(...) ((int64_t[]){__VA_ARGS__})
#define NDIMS(...) ((int)(sizeof(DIMS(__VA_ARGS__)) / sizeof(int64_t)))
#define SHAPE(t, ...) hs_shape_make(t, NDIMS(__VA_ARGS__), DIMS(__VA_ARGS__))

/* main(x: f32[4], y: f32[4]) -> add(x, y), built by hand. */
typedef struct small {
    hs_module *m;
    hs_computation *c;
    hs_instruction *x, *y, *add;
} small;

static small make_small(void)
{
    small s;
    hs_shape v = SHAPE(HS_F32, 4);
    s.m = hs_module_new("small");
    s.c = hs_module_add_computation(s.m, "main", true);
    s.x = hs_computation_add_parameter(s.c, 0, &v, "x");
    s.y = hs_computation_add_parameter(s.c, 1, &v, "y");
    hs_instruction *ops[2] = {s.x, s.y};
    s.add = hs_computation_add(s.c, HS_OP_ADD, &v, ops, 2, NULL);
    s.c->root = s.add;
    return s;
}

/* Verifies m expecting failure with status st; the message must contain
 * every fragment, and err.instruction must be `instruction` (NULL: any). */
static void assert_rejects(hs_module *m, hs_status st,
                           const char *instruction, const char *fragment)
{
    hs_error e;
    hs_error_clear(&e);
    hs_status got = hs_module_verify(m, &e);
    if (got != st)
        fail_msg("status %s, expected %s (%s)", hs_status_name(got),
                 hs_status_name(st), e.message);
    if (!strstr(e.message, fragment))
        fail_msg("message \"%s\" lacks \"%s\"", e.message, fragment);
    if (instruction)
        assert_string_equal(e.instruction, instruction);
}

static void well_formed_module_passes(void **state)
{
    (void)state;
    small s = make_small();
    hs_error e;
    assert_int_equal(hs_module_verify(s.m, &e), HS_OK);
    hs_module_free(s.m);
}

static void wrong_arity_is_rejected(void **state)
{
    (void)state;
    small s = make_small();
    s.add->n_operands = 1;
    assert_rejects(s.m, HS_ERR_INVALID, s.add->name,
                   "add expects 2 operands, got 1");
    assert_rejects(s.m, HS_ERR_INVALID, NULL, "in computation main");
    hs_module_free(s.m);
}

static void use_before_definition_is_rejected(void **state)
{
    (void)state;
    small s = make_small();
    hs_shape v = SHAPE(HS_F32, 4);
    hs_instruction *neg = hs_computation_add(s.c, HS_OP_NEGATE, &v, &s.add,
                                             1, "neg");
    s.c->root = neg;
    /* Make add use neg, which is defined after it. */
    s.add->operands[1] = neg;
    assert_rejects(s.m, HS_ERR_INVALID, s.add->name,
                   "operand 1 (neg) is used before its definition");
    hs_module_free(s.m);
}

static void operand_from_another_computation_is_rejected(void **state)
{
    (void)state;
    small s = make_small();
    hs_computation *g = hs_module_add_computation(s.m, "g", false);
    hs_shape v = SHAPE(HS_F32, 4);
    hs_instruction *gp = hs_computation_add_parameter(g, 0, &v, "g.p");
    g->root = hs_computation_add(g, HS_OP_NEGATE, &v, &s.x, 1, "g.neg");
    (void)gp;
    assert_rejects(s.m, HS_ERR_INVALID, "g.neg",
                   "operand 0 (x) belongs to computation main, not g");
    hs_module_free(s.m);
}

static void missing_root_is_rejected(void **state)
{
    (void)state;
    small s = make_small();
    s.c->root = NULL;
    assert_rejects(s.m, HS_ERR_INVALID, NULL,
                   "computation main: has no root instruction");
    hs_module_free(s.m);
}

static void parameter_hole_is_rejected(void **state)
{
    (void)state;
    hs_module *m = hs_module_new("hole");
    hs_computation *c = hs_module_add_computation(m, "main", true);
    hs_shape v = SHAPE(HS_F32, 4);
    c->root = hs_computation_add_parameter(c, 1, &v, "p1");
    assert_rejects(m, HS_ERR_INVALID, NULL,
                   "computation main: parameter 0 is missing");
    hs_module_free(m);
}

static void duplicate_names_are_rejected_module_wide(void **state)
{
    (void)state;
    small s = make_small();
    hs_computation *g = hs_module_add_computation(s.m, "g", false);
    hs_shape v = SHAPE(HS_F32, 4);
    g->root = hs_computation_add_parameter(g, 0, &v, "x"); /* as main's x */
    assert_rejects(s.m, HS_ERR_INVALID, "x",
                   "the name x is also used by an instruction of "
                   "computation main");
    hs_module_free(s.m);
}

static void shape_mismatch_names_the_instruction(void **state)
{
    (void)state;
    small s = make_small();
    s.add->shape = SHAPE(HS_F32, 5);
    char expected[160];
    snprintf(expected, sizeof expected, "%s in computation main: add has "
             "shape f32[5] but its operands give f32[4]", s.add->name);
    assert_rejects(s.m, HS_ERR_SHAPE, s.add->name, expected);
    hs_module_free(s.m);
}

static void inference_errors_are_reported_with_the_instruction(void **state)
{
    (void)state;
    small s = make_small();
    hs_shape w = SHAPE(HS_F32, 5);
    s.y->shape = w; /* add(f32[4], f32[5]) */
    assert_rejects(s.m, HS_ERR_SHAPE, s.add->name,
                   "add: operand shapes f32[4] and f32[5] differ");
    hs_module_free(s.m);
}

static void called_computation_must_be_in_the_module(void **state)
{
    (void)state;
    small s = make_small();
    hs_module *other = hs_module_new("other");
    hs_computation *f = hs_module_add_computation(other, "f", true);
    hs_shape v = SHAPE(HS_F32, 4);
    f->root = hs_computation_add_parameter(f, 0, &v, "f.p");
    hs_instruction *call = hs_computation_add(s.c, HS_OP_CALL, &v, &s.x, 1,
                                              "call.f");
    hs_instruction_set_called(call, &f, 1);
    s.c->root = call;
    assert_rejects(s.m, HS_ERR_INVALID, "call.f",
                   "calls computation f, which is not in module small");
    hs_module_free(other);
    hs_module_free(s.m);
}

static void module_needs_an_entry(void **state)
{
    (void)state;
    small s = make_small();
    s.m->entry = NULL;
    assert_rejects(s.m, HS_ERR_INVALID, NULL, "has no entry computation");
    hs_module_free(s.m);
}

static void opaque_ops_trust_their_written_shape(void **state)
{
    (void)state;
    small s = make_small();
    hs_shape odd = SHAPE(HS_BF16, 7, 7);
    hs_instruction *cc = hs_computation_add(s.c, HS_OP_CUSTOM_CALL, &odd,
                                            &s.add, 1, NULL);
    s.c->root = cc;
    hs_error e;
    assert_int_equal(hs_module_verify(s.m, &e), HS_OK);
    hs_module_free(s.m);
}

static void traced_loop_verifies_and_tuple_shapes_compare_deeply(void **state)
{
    (void)state;
    hs_module *m = hs_module_new("loop");
    hs_shape cs = hs_shape_scalar(HS_S32), vs = SHAPE(HS_F32, 4);
    hs_shape elems[2] = {cs, vs};
    hs_shape st = hs_shape_tuple(m->arena, 2, elems);
    hs_builder *cb = hs_builder_new(m, "cond", false);
    hs_instruction *cp = hs_b_parameter(cb, 0, &st, "c.s");
    hs_error e;
    hs_computation *cond = hs_builder_finish(
        cb,
        hs_b_compare(cb, HS_DIR_LT, hs_b_get_tuple_element(cb, cp, 0),
                     hs_b_const_s32(cb, 3)),
        &e);
    hs_builder *bb = hs_builder_new(m, "body", false);
    hs_instruction *bp = hs_b_parameter(bb, 0, &st, "b.s");
    hs_instruction *next = hs_b_tuple(
        bb,
        (hs_instruction *[]){
            hs_b_binary(bb, HS_OP_ADD, hs_b_get_tuple_element(bb, bp, 0),
                        hs_b_const_s32(bb, 1)),
            hs_b_get_tuple_element(bb, bp, 1)},
        2);
    hs_computation *body = hs_builder_finish(bb, next, &e);
    hs_builder *b = hs_builder_new(m, "main", true);
    hs_instruction *v = hs_b_parameter(b, 0, &vs, "v");
    hs_instruction *w = hs_b_while(
        b, cond, body,
        hs_b_tuple(b, (hs_instruction *[]){hs_b_const_s32(b, 0), v}, 2));
    assert_non_null(hs_builder_finish(b, w, &e));
    assert_int_equal(hs_module_verify(m, &e), HS_OK);

    /* A tuple element that disagrees deep inside is caught. */
    hs_shape bad_elems[2] = {cs, SHAPE(HS_F32, 5)};
    w->shape = hs_shape_tuple(m->arena, 2, bad_elems);
    assert_rejects(m, HS_ERR_SHAPE, w->name,
                   "has shape (s32[], f32[5]) but its operands give "
                   "(s32[], f32[4])");
    hs_module_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(well_formed_module_passes),
        cmocka_unit_test(wrong_arity_is_rejected),
        cmocka_unit_test(use_before_definition_is_rejected),
        cmocka_unit_test(operand_from_another_computation_is_rejected),
        cmocka_unit_test(missing_root_is_rejected),
        cmocka_unit_test(parameter_hole_is_rejected),
        cmocka_unit_test(duplicate_names_are_rejected_module_wide),
        cmocka_unit_test(shape_mismatch_names_the_instruction),
        cmocka_unit_test(inference_errors_are_reported_with_the_instruction),
        cmocka_unit_test(called_computation_must_be_in_the_module),
        cmocka_unit_test(module_needs_an_entry),
        cmocka_unit_test(opaque_ops_trust_their_written_shape),
        cmocka_unit_test(traced_loop_verifies_and_tuple_shapes_compare_deeply),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
