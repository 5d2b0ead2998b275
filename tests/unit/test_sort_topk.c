/*
 * test_sort_topk.c - topk and the TopK custom-call: the shape rule refusing
 * naming the instruction, the text printed back, the device running
 * Mixtral's form and refusing an unknown comparator up front (and the real
 * Mixtral dump's 64 TopK calls no longer among its blockers); and the
 * gradient rules' refusals, each naming the instruction: scatter with a
 * subtracting update, a multiply scatter's updates without unique_indices, a
 * variadic scatter. The numerics against PyTorch are
 * tests/reference/sort_topk_check.py's.
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
#include "hloscope/hs_file.h"
#include "hlo_test_helpers.h"

#define MIXTRAL                                                            \
    HS_SOURCE_DIR "/../shared/hlo-real/hlo_mixtral_8x7b_bf16_1x8.hlo"

#define COMPUTATIONS                                                       \
    "gt {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"           \
    "  c = s32[] parameter(2)\n  d = s32[] parameter(3)\n"                 \
    "  ROOT r = pred[] compare(a, b), direction=GT, type=TOTALORDER\n}\n"  \
    "eq {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"           \
    "  c = s32[] parameter(2)\n  d = s32[] parameter(3)\n"                 \
    "  ROOT r = pred[] compare(a, b), direction=EQ\n}\n"                   \
    "sub {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"          \
    "  ROOT m = f32[] subtract(a, b)\n}\n"                                 \
    "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"          \
    "  ROOT s = f32[] add(a, b)\n}\n"                                      \
    "mul {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"          \
    "  ROOT m = f32[] multiply(a, b)\n}\n"                                 \
    "add2 {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"         \
    "  c = f32[] parameter(2)\n  d = f32[] parameter(3)\n"                 \
    "  s = f32[] add(a, c)\n  t = f32[] add(b, d)\n"                       \
    "  ROOT r = (f32[], f32[]) tuple(s, t)\n}\n"

static char *module_text(const char *entry)
{
    static char text[4096];
    snprintf(text, sizeof text, "HloModule m\n%sENTRY e {\n%s}\n",
             COMPUTATIONS, entry);
    return text;
}

static void topk_shape_rule_refuses_naming_the_instruction(void **state)
{
    (void)state;
    assert_verify_refuses(
        module_text("  x = f32[2,8] parameter(0)\n"
                    "  ROOT t1 = (f32[2,9], s32[2,9]) topk(x), k=9, "
                    "largest=true\n"),
        "t1", "k=9 is not a count in [0, 8]");
    assert_verify_refuses(
        module_text("  x = f32[2,8] parameter(0)\n"
                    "  ROOT t2 = (f32[2,2], s32[2,2]) topk(x), largest=true\n"),
        "t2", "missing k=");
    assert_verify_refuses(
        module_text("  x = f32[] parameter(0)\n"
                    "  ROOT t3 = (f32[], s32[]) topk(x), k=0\n"),
        "t3", "rank >= 1");
    assert_verify_refuses(
        module_text("  x = f32[2,8] parameter(0)\n"
                    "  ROOT t4 = (f32[2,2], s32[2,2]) topk(x), k=2, "
                    "largest=yes\n"),
        "t4", "largest=yes is neither true nor false");
    /* the written shape must be the rule's: values at x's type */
    assert_verify_refuses(
        module_text("  x = f32[2,8] parameter(0)\n"
                    "  ROOT t5 = (bf16[2,2], s32[2,2]) topk(x), k=2\n"),
        "t5", "");
}

static void topk_prints_back_and_runs(void **state)
{
    (void)state;
    hs_module *m = parse(module_text(
        "  x = f32[2,5] parameter(0)\n"
        "  ROOT t = (f32[2,2], s32[2,2]) topk(x), k=2, largest=false\n"));
    char *text = print(m);
    assert_contains(text, "topk(f32[2,5]{1,0} %x), k=2, largest=false");
    free(text);
    float x[10] = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3};
    const float *args[1] = {x};
    int n = 0;
    hs_tensor **out = run_f32(m, args, 1, &n);
    assert_int_equal(n, 2);
    /* the two smallest of each row, equal keys by index */
    const float want_v[4] = {1, 1, 2, 3};
    const int32_t want_i[4] = {1, 3, 1, 4};
    for (int k = 0; k < 4; k++) {
        assert_true(hs_tensor_f32(out[0])[k] == want_v[k]);
        assert_int_equal(((const int32_t *)out[1]->data)[k], want_i[k]);
    }
    for (int k = 0; k < n; k++)
        hs_tensor_free(out[k]);
    free(out);
    hs_module_free(m);
}

static void topk_custom_call_with_another_comparator_is_refused(void **state)
{
    (void)state;
    hs_error err;
    hs_error_clear(&err);
    hs_module *ok = parse(module_text(
        "  x = f32[4,8] parameter(0)\n"
        "  ROOT t = (f32[4,2], s32[4,2]) custom-call(x), "
        "custom_call_target=\"TopK\", called_computations={gt}\n"));
    assert_int_equal(hs_device_check(ok, &err), HS_OK);
    hs_module_free(ok);
    hs_module *bad = parse(module_text(
        "  x = f32[4,8] parameter(0)\n"
        "  ROOT odd = (f32[4,2], s32[4,2]) custom-call(x), "
        "custom_call_target=\"TopK\", called_computations={eq}\n"));
    assert_int_not_equal(hs_device_check(bad, &err), HS_OK);
    assert_non_null(strstr(err.message, "custom-call target 'TopK' (TopK runs with a "
                                        "comparator (a, b[, i, j]) -> compare(a, b), "
                                        "direction=GT or LT, only)"));
    assert_string_equal(err.instruction, "odd");
    hs_module_free(bad);
    /* k larger than the row: refused, not run */
    hs_module *big = parse(module_text(
        "  x = f32[4,8] parameter(0)\n"
        "  ROOT big = (f32[4,9], s32[4,9]) custom-call(x), "
        "custom_call_target=\"TopK\", called_computations={gt}\n"));
    assert_int_not_equal(hs_device_check(big, &err), HS_OK);
    assert_string_equal(err.instruction, "big");
    assert_non_null(strstr(err.message, "k <= x's"));
    hs_module_free(big);
}

/* The real Mixtral dump: its 64 TopK calls run (what still blocks it is
 * other instructions). */
static void mixtral_topk_calls_are_not_blockers(void **state)
{
    (void)state;
    size_t n = 0;
    hs_error err;
    hs_error_clear(&err);
    char *text = hs_read_file(MIXTRAL, &n, &err);
    if (!text)
        skip();
    hs_module *m = hs_hlo_parse(text, n, &err);
    free(text);
    assert_non_null(m);
    int calls = 0;
    for (int c = 0; c < m->n_comps; c++)
        for (int k = 0; k < m->comps[c]->n_instrs; k++) {
            const hs_instruction *i = m->comps[c]->instrs[k];
            calls += i->opcode == HS_OP_CUSTOM_CALL &&
                     i->custom_call_target &&
                     strcmp(i->custom_call_target, "TopK") == 0;
        }
    assert_int_equal(calls, 64);
    char *report = NULL;
    hs_error_clear(&err);
    (void)hs_device_check_report(m, &report, &err);
    if (report && strstr(report, "TopK"))
        fail_msg("TopK among the blockers: %s", report);
    free(report);
    hs_module_free(m);
}

/* d (entry's root) / d (parameters wrt) of text's entry must fail with a
 * message holding each of needles and instr (the op_name: the inlined
 * copy the rule sees has a name of its own). */
static void assert_grad_refused(const char *entry, const int *wrt, int n,
                                const char *instr, const char *needle1,
                                const char *needle2)
{
    hs_module *f = parse(module_text(entry));
    hs_module *m = hs_module_new("grad");
    hs_builder *b = hs_builder_new(m, "main", true);
    const hs_computation *e = f->entry;
    hs_instruction *p[8], *grads[8], *value = NULL;
    for (int k = 0; k < e->n_params; k++)
        p[k] = hs_b_parameter(b, k, &e->params[k]->shape,
                              e->params[k]->name);
    hs_error err;
    hs_error_clear(&err);
    assert_int_not_equal(hs_autodiff_computation(b, e, p, e->n_params, wrt,
                                                 n, NULL, &value, grads,
                                                 &err),
                         HS_OK);
    if (!strstr(err.message, instr) || !strstr(err.message, needle1) ||
        !strstr(err.message, needle2))
        fail_msg("expected '%s', '%s' and '%s' in: %s", instr, needle1,
                 needle2, err.message);
    hs_builder_free(b);
    hs_module_free(m);
    hs_module_free(f);
}

#define SCATTER_ROWS                                                       \
    "update_window_dims={1}, inserted_window_dims={0}, "                   \
    "scatter_dims_to_operand_dims={0}, index_vector_dim=1"

static void scatter_gradients_without_a_rule_name_the_instruction(void **s)
{
    (void)s;
    const int both[2] = {0, 2};
    assert_grad_refused(
        "  e = f32[6,3] parameter(0)\n  i = s32[2] parameter(1)\n"
        "  u = f32[2,3] parameter(2)\n"
        "  sc = f32[6,3] scatter(e, i, u), " SCATTER_ROWS ", to_apply=sub, "
        "metadata={op_name=\"layers.0/sc\"}\n"
        "  z = f32[] constant(0)\n"
        "  ROOT l = f32[] reduce(sc, z), dimensions={0,1}, to_apply=add\n",
        both, 2, "layers.0/sc", "subtract", "update computation sub");
    assert_grad_refused(
        "  e = f32[6,3] parameter(0)\n  i = s32[2] parameter(1)\n"
        "  u = f32[2,3] parameter(2)\n"
        "  sm = f32[6,3] scatter(e, i, u), " SCATTER_ROWS ", to_apply=mul, "
        "metadata={op_name=\"layers.1/sm\"}\n"
        "  z = f32[] constant(0)\n"
        "  ROOT l = f32[] reduce(sm, z), dimensions={0,1}, to_apply=add\n",
        both, 2, "layers.1/sm", "unique_indices=true", "multiply");
    assert_grad_refused(
        "  e = f32[6,3] parameter(0)\n  i = s32[2] parameter(1)\n"
        "  u = f32[2,3] parameter(2)\n"
        "  v = (f32[6,3], f32[6,3]) scatter(e, e, i, u, u), " SCATTER_ROWS
        ", to_apply=add2, metadata={op_name=\"layers.2/v\"}\n"
        "  g = f32[6,3] get-tuple-element(v), index=0\n"
        "  z = f32[] constant(0)\n"
        "  ROOT l = f32[] reduce(g, z), dimensions={0,1}, to_apply=add\n",
        both, 2, "layers.2/v", "variadic scatter", "add2");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(topk_shape_rule_refuses_naming_the_instruction),
        cmocka_unit_test(topk_prints_back_and_runs),
        cmocka_unit_test(topk_custom_call_with_another_comparator_is_refused),
        cmocka_unit_test(mixtral_topk_calls_are_not_blockers),
        cmocka_unit_test(scatter_gradients_without_a_rule_name_the_instruction),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
