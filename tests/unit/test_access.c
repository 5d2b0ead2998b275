/* test_access.c - hs_reads_elementwise: which operands a user reads element
 * by element (element j of the result reads only element j of the
 * operand), the condition for writing a result over a dying operand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "hloscope/hs_ir.h"
#include "hlo_test_helpers.h"

static void elementwise_ops_read_same_shaped_operands_elementwise(
    void **state)
{
    (void)state;
    hs_module *m = parse("HloModule ew\n"
                         "ENTRY main {\n"
                         "  x = f32[4,8] parameter(0)\n"
                         "  y = f32[4,8] parameter(1)\n"
                         "  a = f32[4,8] add(x, y)\n"
                         "  lt = pred[4,8] compare(a, y), direction=LT\n"
                         "  lo = f32[] constant(0)\n"
                         "  hi = f32[] constant(1)\n"
                         "  c = f32[4,8] clamp(lo, a, hi)\n"
                         "  t = f32[8,4] transpose(c), dimensions={1,0}\n"
                         "  ROOT r = (f32[8,4], pred[4,8]) tuple(t, lt)\n"
                         "}\n");
    const hs_instruction *a = find_instr(m, "a"), *lt = find_instr(m, "lt"),
                         *c = find_instr(m, "c"), *t = find_instr(m, "t");
    assert_true(hs_reads_elementwise(a, 0));
    assert_true(hs_reads_elementwise(a, 1));
    /* Same dimensions, another element type: still element j. */
    assert_true(hs_reads_elementwise(lt, 0));
    /* clamp's scalar bounds are read by every element. */
    assert_false(hs_reads_elementwise(c, 0));
    assert_true(hs_reads_elementwise(c, 1));
    assert_false(hs_reads_elementwise(c, 2));
    /* A transpose is not element-wise, nor a tuple. */
    assert_false(hs_reads_elementwise(t, 0));
    assert_false(hs_reads_elementwise(find_instr(m, "r"), 0));
    /* Operand indexes out of range. */
    assert_false(hs_reads_elementwise(a, 2));
    assert_false(hs_reads_elementwise(a, -1));
    assert_false(hs_reads_elementwise(find_instr(m, "x"), 0));
    hs_module_free(m);
}

/* One parameter p of each fused computation goes to the root through the
 * op named in the computation; q (when there is one) through add only. */
static const char *fusions =
    "HloModule fusions\n"
    "f_ew {\n"
    "  p = f32[16,8] parameter(0)\n"
    "  q = f32[16,8] parameter(1)\n"
    "  m = f32[16,8] multiply(p, q)\n"
    "  c = f32[] constant(2)\n"
    "  cb = f32[16,8] broadcast(c), dimensions={}\n"
    "  s = f32[16,8] add(m, cb)\n"
    "  ROOT e = f32[16,8] exponential(s)\n"
    "}\n"
    "f_transpose {\n"
    "  p = f32[8,8] parameter(0)\n"
    "  q = f32[8,8] parameter(1)\n"
    "  t = f32[8,8] transpose(p), dimensions={1,0}\n"
    "  ROOT a = f32[8,8] add(t, q)\n"
    "}\n"
    "f_twice {\n"
    "  p = f32[8,8] parameter(0)\n"
    "  t = f32[8,8] transpose(p), dimensions={1,0}\n"
    "  ROOT a = f32[8,8] add(p, t)\n"
    "}\n"
    "f_broadcast {\n"
    "  p = f32[8] parameter(0)\n"
    "  q = f32[16,8] parameter(1)\n"
    "  b = f32[16,8] broadcast(p), dimensions={1}\n"
    "  ROOT a = f32[16,8] add(b, q)\n"
    "}\n"
    "f_row {\n"
    "  p = f32[16,8] parameter(0)\n"
    "  q = f32[16,8] parameter(1)\n"
    "  s = f32[1,8] slice(p), slice={[0:1], [0:8]}\n"
    "  r = f32[8] reshape(s)\n"
    "  b = f32[16,8] broadcast(r), dimensions={1}\n"
    "  ROOT a = f32[16,8] add(b, q)\n"
    "}\n"
    "add {\n"
    "  x = f32[] parameter(0)\n"
    "  y = f32[] parameter(1)\n"
    "  ROOT s = f32[] add(x, y)\n"
    "}\n"
    "f_reduce {\n"
    "  p = f32[16,8] parameter(0)\n"
    "  z = f32[] constant(0)\n"
    "  r = f32[16] reduce(p, z), dimensions={1}, to_apply=add\n"
    "  b = f32[16,8] broadcast(r), dimensions={0}\n"
    "  ROOT e = f32[16,8] exponential(b)\n"
    "}\n"
    "ENTRY main {\n"
    "  x = f32[16,8] parameter(0)\n"
    "  y = f32[16,8] parameter(1)\n"
    "  u = f32[8,8] parameter(2)\n"
    "  v = f32[8] parameter(3)\n"
    "  w = f32[8,8] parameter(4)\n"
    "  ew = f32[16,8] fusion(x, y), kind=kLoop, calls=f_ew\n"
    "  in = f32[16,8] fusion(x, y), kind=kInput, calls=f_ew\n"
    "  out = f32[16,8] fusion(x, y), kind=kOutput, calls=f_ew\n"
    "  tr = f32[8,8] fusion(u, w), kind=kLoop, calls=f_transpose\n"
    "  tw = f32[8,8] fusion(u), kind=kLoop, calls=f_twice\n"
    "  uu = f32[8,8] fusion(u, u), kind=kLoop, calls=f_transpose\n"
    "  bc = f32[16,8] fusion(v, y), kind=kLoop, calls=f_broadcast\n"
    "  rw = f32[16,8] fusion(x, y), kind=kLoop, calls=f_row\n"
    "  rd = f32[16,8] fusion(x), kind=kLoop, calls=f_reduce\n"
    "  ROOT t = (f32[16,8], f32[16,8], f32[16,8], f32[8,8], f32[8,8], "
    "f32[16,8], f32[16,8], f32[16,8], f32[8,8]) "
    "tuple(ew, in, out, tr, tw, bc, rw, rd, uu)\n"
    "}\n";

static void loop_fusion_reads_elementwise_through_elementwise_ops(
    void **state)
{
    (void)state;
    hs_module *m = parse(fusions);
    /* p and q go through multiply, add (with a broadcast constant) and
     * exponential to the root. */
    const hs_instruction *ew = find_instr(m, "ew");
    assert_true(hs_reads_elementwise(ew, 0));
    assert_true(hs_reads_elementwise(ew, 1));
    assert_false(hs_reads_elementwise(ew, 2));
    assert_false(hs_reads_elementwise(ew, -1));
    /* q through add only, p through a transpose; the broadcast p is of
     * other dimensions; a row slice of p, broadcast back to its shape, and
     * a reduction broadcast back are not element-wise either. */
    assert_false(hs_reads_elementwise(find_instr(m, "tr"), 0));
    assert_true(hs_reads_elementwise(find_instr(m, "tr"), 1));
    assert_false(hs_reads_elementwise(find_instr(m, "tw"), 0));
    assert_false(hs_reads_elementwise(find_instr(m, "bc"), 0));
    assert_true(hs_reads_elementwise(find_instr(m, "bc"), 1));
    assert_false(hs_reads_elementwise(find_instr(m, "rw"), 0));
    assert_true(hs_reads_elementwise(find_instr(m, "rw"), 1));
    assert_false(hs_reads_elementwise(find_instr(m, "rd"), 0));
    hs_module_free(m);
}

static void operand_passed_twice_must_be_elementwise_at_both(void **state)
{
    (void)state;
    hs_module *m = parse(fusions);
    /* u is both p, transposed, and q, read element-wise: element j of uu
     * reads other elements of u than j. */
    assert_false(hs_reads_elementwise(find_instr(m, "uu"), 0));
    assert_false(hs_reads_elementwise(find_instr(m, "uu"), 1));
    hs_module_free(m);
    m = parse("HloModule sq\n"
              "ENTRY main {\n"
              "  x = f32[4] parameter(0)\n"
              "  ROOT s = f32[4] multiply(x, x)\n"
              "}\n");
    assert_true(hs_reads_elementwise(m->entry->root, 0));
    assert_true(hs_reads_elementwise(m->entry->root, 1));
    hs_module_free(m);
}

static void only_loop_fusions_count(void **state)
{
    (void)state;
    hs_module *m = parse(fusions);
    /* The same element-wise body under another kind. */
    for (int k = 0; k < 2; k++) {
        assert_false(hs_reads_elementwise(find_instr(m, "in"), k));
        assert_false(hs_reads_elementwise(find_instr(m, "out"), k));
    }
    hs_module_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            elementwise_ops_read_same_shaped_operands_elementwise),
        cmocka_unit_test(
            loop_fusion_reads_elementwise_through_elementwise_ops),
        cmocka_unit_test(operand_passed_twice_must_be_elementwise_at_both),
        cmocka_unit_test(only_loop_fusions_count),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
