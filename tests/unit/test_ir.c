/* test_ir.c - the IR core: arena, element types, shapes, modules. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "hloscope/hs_ir.h"
#include "hloscope/hs_tensor.h"

static void arena_allocations_are_zeroed_and_aligned(void **state)
{
    (void)state;
    hs_arena *a = hs_arena_new(256);
    for (int k = 1; k < 200; k++) {
        unsigned char *p = hs_arena_alloc(a, (size_t)k * 7);
        assert_non_null(p);
        assert_int_equal((uintptr_t)p % 16, 0);
        for (int j = 0; j < k * 7; j++)
            assert_int_equal(p[j], 0);
        memset(p, 0xab, (size_t)k * 7);
    }
    char *s = hs_arena_printf(a, "%s.%d", "add", 42);
    assert_string_equal(s, "add.42");
    assert_true(hs_arena_bytes(a) > 0);
    hs_arena_free(a);
}

static void dtype_names_round_trip(void **state)
{
    (void)state;
    for (int t = 0; t < HS_TUPLE; t++) {
        const char *n = hs_dtype_name((hs_dtype)t);
        hs_dtype back;
        assert_true(hs_dtype_parse(n, strlen(n), &back));
        assert_int_equal(back, t);
    }
    hs_dtype d;
    assert_false(hs_dtype_parse("f33", 3, &d));
    assert_int_equal(hs_dtype_bits(HS_BF16), 16);
    assert_int_equal(hs_dtype_bits(HS_S4), 4);
}

static void shape_prints_xla_text_with_layout_and_memory_space(void **state)
{
    (void)state;
    char buf[128];
    hs_shape s = hs_shape_make(HS_F32, 2, (int64_t[]){1, 1024});
    hs_shape_print(&s, true, buf, sizeof buf);
    assert_string_equal(buf, "f32[1,1024]{1,0}");
    s.memory_space = HS_MEMSPACE_HOST;
    hs_shape_print(&s, true, buf, sizeof buf);
    assert_string_equal(buf, "f32[1,1024]{1,0:S(5)}");
    hs_shape_print(&s, false, buf, sizeof buf);
    assert_string_equal(buf, "f32[1,1024]");
    hs_shape sc = hs_shape_scalar(HS_S32);
    hs_shape_print(&sc, true, buf, sizeof buf);
    assert_string_equal(buf, "s32[]");
    /* Bounded and unbounded dynamic dimensions, as the HLO printer writes
     * them (before: the unbounded one printed as "<=-1"). */
    hs_shape dyn = hs_shape_make(HS_F32, 3, (int64_t[]){-1, 8, 4});
    dyn.dynamic_mask = 3;
    hs_shape_print(&dyn, false, buf, sizeof buf);
    assert_string_equal(buf, "f32[?,<=8,4]");

    hs_arena *a = hs_arena_new(0);
    hs_shape t = hs_shape_tuple(a, 2, (hs_shape[]){s, sc});
    int need = hs_shape_print(&t, true, buf, sizeof buf);
    assert_string_equal(buf, "(f32[1,1024]{1,0:S(5)}, s32[])");
    assert_int_equal(need, (int)strlen(buf));
    /* snprintf contract: a short buffer is cut but the length is full. */
    char tiny[8];
    assert_int_equal(hs_shape_print(&t, true, tiny, sizeof tiny), need);
    assert_int_equal(strlen(tiny), 7);
    assert_int_equal(hs_shape_bytes(&t), 16);
    assert_int_equal(hs_shape_total_bytes(&t), 16 + 4096 + 4);
    hs_arena_free(a);
}

static void shape_sizes_count_sub_byte_types(void **state)
{
    (void)state;
    hs_shape s = hs_shape_make(HS_S4, 1, (int64_t[]){3});
    assert_int_equal(hs_shape_elements(&s), 3);
    assert_int_equal(hs_shape_bytes(&s), 2);
    hs_shape p = hs_shape_make(HS_PRED, 2, (int64_t[]){4, 4});
    assert_int_equal(hs_shape_bytes(&p), 16);
}

static void opcode_table_names_round_trip(void **state)
{
    (void)state;
    for (int op = 0; op < HS_OP_COUNT; op++) {
        if (op == HS_OP_UNKNOWN)
            continue;
        const char *n = hs_opcode_name((hs_opcode)op);
        hs_opcode back;
        assert_true(hs_opcode_parse(n, strlen(n), &back));
        assert_int_equal(back, op);
    }
    hs_opcode u;
    assert_false(hs_opcode_parse("frobnicate", 10, &u));
    assert_int_equal(u, HS_OP_UNKNOWN);
    assert_int_equal(hs_opcode_arity(HS_OP_ADD), 2);
    assert_int_equal(hs_opcode_arity(HS_OP_TUPLE), -1);
    assert_true(hs_opcode_is_elementwise(HS_OP_TANH));
    assert_false(hs_opcode_is_elementwise(HS_OP_DOT));
}

/* A default name never takes a name the module already holds: a printed
 * training step re-parsed named its instructions constant.496 and the like,
 * and simplify then added a second constant.496. */
static void default_names_go_above_every_name_held(void **state)
{
    (void)state;
    hs_module *m = hs_module_new("m");
    hs_computation *body = hs_module_add_computation(m, "body", false);
    hs_computation *c = hs_module_add_computation(m, "main", true);
    hs_shape s = hs_shape_make(HS_F32, 0, NULL);
    hs_computation_add(body, HS_OP_CONSTANT, &s, NULL, 0, "constant.4");
    hs_computation_add(body, HS_OP_CONSTANT, &s, NULL, 0, "sum.x7");
    hs_computation_add(body, HS_OP_CONSTANT, &s, NULL, 0, "big.1234567890123456789");
    hs_instruction *x = hs_computation_add_parameter(c, 0, &s, "x");
    /* ids 0..3 taken: without the rule this would be constant.4 */
    hs_instruction *k = hs_computation_add(c, HS_OP_CONSTANT, &s, NULL, 0, NULL);
    assert_int_equal(k->id, 4);
    assert_string_equal(k->name, "constant.5");
    hs_computation_add(c, HS_OP_NEGATE, &s, &x, 1, "negate.41");
    hs_instruction *n = hs_computation_add(c, HS_OP_NEGATE, &s, &x, 1, NULL);
    assert_string_equal(n->name, "negate.42");
    hs_module_note_name(m, "renamed.100");
    hs_module *copy = hs_module_clone(m);
    assert_non_null(copy);
    hs_instruction *k2 = hs_computation_add(copy->entry, HS_OP_CONSTANT, &s,
                                            NULL, 0, NULL);
    assert_string_equal(k2->name, "constant.101");
    hs_module_free(copy);
    hs_module_free(m);
}

static void module_names_ids_users_and_dead_code(void **state)
{
    (void)state;
    hs_module *m = hs_module_new("m");
    hs_computation *c = hs_module_add_computation(m, "main", true);
    assert_ptr_equal(m->entry, c);
    hs_shape s = hs_shape_make(HS_F32, 1, (int64_t[]){4});
    hs_instruction *x = hs_computation_add_parameter(c, 0, &s, "x");
    hs_instruction *y = hs_computation_add(c, HS_OP_ADD, &s,
                                           (hs_instruction *[]){x, x}, 2, NULL);
    hs_instruction *dead = hs_computation_add(c, HS_OP_NEGATE, &s, &x, 1, NULL);
    hs_instruction *z = hs_computation_add(c, HS_OP_MULTIPLY, &s,
                                           (hs_instruction *[]){y, x}, 2, NULL);
    c->root = z;
    assert_string_equal(y->name, "add.1");
    assert_string_equal(dead->name, "negate.2");
    assert_int_equal(c->n_params, 1);
    assert_ptr_equal(c->params[0], x);

    hs_user_list *u = hs_computation_users(c);
    assert_int_equal(u[0].n, 3); /* add (once), negate, multiply */
    assert_int_equal(u[1].n, 1);
    assert_int_equal(u[2].n, 0);

    assert_int_equal(hs_computation_remove_dead(c), 1);
    assert_int_equal(c->n_instrs, 3);
    assert_int_equal(hs_module_instruction_count(m), 3);
    assert_ptr_equal(hs_module_find_computation(m, "main"), c);
    assert_null(hs_module_find_computation(m, "nope"));
    hs_module_free(m);
}

static void error_format_says_where(void **state)
{
    (void)state;
    hs_error e;
    hs_error_clear(&e);
    hs_error_set(&e, HS_ERR_PARSE, "expected '%c'", '=');
    e.line = 3;
    e.column = 7;
    strcpy(e.instruction, "add.1");
    char buf[256];
    hs_error_format(&e, buf, sizeof buf);
    assert_string_equal(buf, "3:7: add.1: expected '='");
    assert_string_equal(hs_status_name(HS_ERR_OOM), "out_of_memory");
}

static void tensor_is_zeroed_and_copied(void **state)
{
    (void)state;
    hs_shape s = hs_shape_make(HS_F32, 2, (int64_t[]){3, 5});
    hs_tensor *t = hs_tensor_new(&s);
    assert_non_null(t);
    assert_int_equal(hs_tensor_elements(t), 15);
    for (int i = 0; i < 15; i++)
        assert_true(hs_tensor_f32(t)[i] == 0.0f);
    hs_tensor_f32(t)[7] = 2.5f;
    hs_tensor *u = hs_tensor_copy(t);
    assert_true(hs_tensor_f32(u)[7] == 2.5f);
    hs_tensor_free(t);
    hs_tensor_free(u);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(arena_allocations_are_zeroed_and_aligned),
        cmocka_unit_test(dtype_names_round_trip),
        cmocka_unit_test(shape_prints_xla_text_with_layout_and_memory_space),
        cmocka_unit_test(shape_sizes_count_sub_byte_types),
        cmocka_unit_test(opcode_table_names_round_trip),
        cmocka_unit_test(module_names_ids_users_and_dead_code),
        cmocka_unit_test(default_names_go_above_every_name_held),
        cmocka_unit_test(error_format_says_where),
        cmocka_unit_test(tensor_is_zeroed_and_copied),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
