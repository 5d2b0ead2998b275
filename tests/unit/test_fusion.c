/* test_fusion.c - the `fusion` pass, written as HLO text: parse, fuse,
 * check the printed module (XLA's kLoop fusion form) and that it still
 * verifies. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hloscope/hs_compile.h"
#include "hloscope/hs_hlo_text.h"
#include "hloscope/hs_passes.h"
#include "hlo_test_helpers.h"

/* Runs the fusion pass; returns whether it changed the module, and checks
 * that the module still verifies. */
static bool fuse(hs_module *m)
{
    hs_pass_context ctx;
    hs_pass_context_init(&ctx);
    hs_error err;
    hs_error_clear(&err);
    bool changed = false;
    if (hs_pass_lookup("fusion")->run(m, &ctx, &changed, &err) != HS_OK)
        fail_msg("fusion: %s", err.message);
    if (hs_module_verify(m, &err) != HS_OK)
        fail_msg("invalid after fusion: %s", err.message);
    return changed;
}

static int count_opcode(const hs_computation *c, hs_opcode op)
{
    int n = 0;
    for (int k = 0; k < c->n_instrs; k++)
        n += c->instrs[k]->opcode == op;
    return n;
}

static int fused_computations(const hs_module *m)
{
    int n = 0;
    for (int c = 0; c < m->n_comps; c++)
        n += m->comps[c]->is_fusion;
    return n;
}

/* ---- what fuses ------------------------------------------------------------ */

static void fusion_merges_elementwise_chain(void **state)
{
    (void)state;
    hs_module *m = parse("HloModule m\n"
                         "ENTRY main {\n"
                         "  x = f32[8,128] parameter(0)\n"
                         "  y = f32[8,128] parameter(1)\n"
                         "  b = f32[128] parameter(2)\n"
                         "  a = f32[8,128] add(x, y)\n"
                         "  e = f32[8,128] exponential(a)\n"
                         "  bb = f32[8,128] broadcast(b), dimensions={1}\n"
                         "  s = f32[8,128] multiply(e, bb)\n"
                         "  c = f32[] constant(0.5)\n"
                         "  bc = f32[8,128] broadcast(c), dimensions={}\n"
                         "  ROOT r = f32[8,128] maximum(s, bc)\n"
                         "}\n");
    assert_true(fuse(m));
    /* Everything but the parameters is one fusion. */
    assert_int_equal(m->entry->n_instrs, 4);
    assert_int_equal(fused_computations(m), 1);
    const hs_instruction *f = m->entry->root;
    assert_int_equal(f->opcode, HS_OP_FUSION);
    assert_string_equal(f->fusion_kind, "kLoop");
    assert_int_equal(f->n_operands, 3);
    const hs_computation *fc = f->called[0];
    assert_true(fc->is_fusion);
    assert_int_equal(fc->n_params, 3);
    assert_int_equal(fc->n_instrs, 3 + 7);
    char *s = print(m);
    char want[256];
    snprintf(want, sizeof want,
             "ROOT %%%s = f32[8,128]{1,0} fusion(f32[8,128]{1,0} %%x, "
             "f32[8,128]{1,0} %%y, f32[128]{0} %%b), kind=kLoop, "
             "calls=%%%s\n",
             f->name, fc->name);
    assert_contains(s, want);
    assert_true(strncmp(f->name, "fusion.", 7) == 0);
    assert_true(strncmp(fc->name, "fused_computation.", 18) == 0);
    /* XLA's names: fusion.N calls fused_computation.N, whose parameters
     * are param_K.N; moved instructions keep their names. */
    assert_string_equal(f->name + 7, fc->name + 18);
    snprintf(want, sizeof want, "%%param_0.%s = f32[8,128]{1,0} parameter(0)",
             f->name + 7);
    assert_contains(s, want);
    assert_contains(s, "ROOT %r = f32[8,128]{1,0} maximum(");
    assert_contains(s, "%e = f32[8,128]{1,0} exponential(");
    /* The fused computation is printed before the entry that calls it. */
    assert_true(strstr(s, fc->name) < strstr(s, "ENTRY"));
    /* A second run finds nothing more to fuse. */
    assert_false(fuse(m));
    free(s);
    hs_module_free(m);
}

static void fusion_does_not_cross_dot(void **state)
{
    (void)state;
    hs_module *m = parse("HloModule m\n"
                         "ENTRY main {\n"
                         "  x = f32[4,16] parameter(0)\n"
                         "  w = f32[16,16] parameter(1)\n"
                         "  n = f32[4,16] negate(x)\n"
                         "  t = f32[4,16] tanh(n)\n"
                         "  d = f32[4,16] dot(t, w), lhs_contracting_dims={1}, "
                         "rhs_contracting_dims={0}\n"
                         "  c = f32[] constant(2)\n"
                         "  bc = f32[4,16] broadcast(c), dimensions={}\n"
                         "  m2 = f32[4,16] multiply(d, bc)\n"
                         "  ROOT a = f32[4,16] add(m2, x)\n"
                         "}\n");
    assert_true(fuse(m));
    /* Two fusions, one on each side of the dot, which stays in the entry. */
    assert_int_equal(fused_computations(m), 2);
    assert_int_equal(count_opcode(m->entry, HS_OP_DOT), 1);
    assert_int_equal(count_opcode(m->entry, HS_OP_FUSION), 2);
    const hs_instruction *d = NULL;
    for (int k = 0; k < m->entry->n_instrs; k++)
        if (m->entry->instrs[k]->opcode == HS_OP_DOT)
            d = m->entry->instrs[k];
    assert_int_equal(d->operands[0]->opcode, HS_OP_FUSION);
    assert_int_equal(m->entry->root->opcode, HS_OP_FUSION);
    assert_ptr_equal(m->entry->root->operands[0], d);
    for (int c = 0; c < m->n_comps; c++)
        if (m->comps[c]->is_fusion)
            assert_int_equal(count_opcode(m->comps[c], HS_OP_DOT), 0);
    hs_module_free(m);
}

static void fusion_never_fuses_control_flow_or_dynamic_slices(void **state)
{
    (void)state;
    hs_module *m = parse(
        "HloModule m\n"
        "add_f32 {\n"
        "  p = f32[] parameter(0)\n"
        "  q = f32[] parameter(1)\n"
        "  ROOT s = f32[] add(p, q)\n"
        "}\n"
        "ENTRY main {\n"
        "  x = f32[4,8] parameter(0)\n"
        "  i = s32[] parameter(1)\n"
        "  z = s32[] constant(0)\n"
        "  ds = f32[1,8] dynamic-slice(x, i, z), dynamic_slice_sizes={1,8}\n"
        "  e = f32[1,8] exponential(ds)\n"
        "  dus = f32[4,8] dynamic-update-slice(x, e, i, z)\n"
        "  n = f32[4,8] negate(dus)\n"
        "  zero = f32[] constant(0)\n"
        "  r = f32[4] reduce(n, zero), dimensions={1}, to_apply=add_f32\n"
        "  cc = f32[4] custom-call(r), custom_call_target=\"foo\"\n"
        "  ROOT l = f32[4] log(cc)\n"
        "}\n");
    /* Every element-wise op sits between non-fusible ones: nothing to do. */
    assert_false(fuse(m));
    assert_int_equal(fused_computations(m), 0);
    hs_module_free(m);
}

static void fusion_keeps_multi_user_producer_outside(void **state)
{
    (void)state;
    hs_module *m = parse("HloModule m\n"
                         "ENTRY main {\n"
                         "  x = f32[64] parameter(0)\n"
                         "  y = f32[64] parameter(1)\n"
                         "  e = f32[64] exponential(x)\n"
                         "  c = f32[] constant(3)\n"
                         "  bc = f32[64] broadcast(c), dimensions={}\n"
                         "  a = f32[64] add(e, bc)\n"
                         "  a2 = f32[64] abs(a)\n"
                         "  m1 = f32[64] multiply(e, bc)\n"
                         "  m2 = f32[64] multiply(m1, y)\n"
                         "  ROOT t = (f32[64], f32[64]) tuple(a2, m2)\n"
                         "}\n");
    assert_true(fuse(m));
    char *s = print(m);
    /* e has two users in different fusions: it stays in the entry and
     * feeds both. The broadcast of a scalar is cheap: each fusion gets a
     * copy and the original goes. */
    assert_int_equal(fused_computations(m), 2);
    assert_contains(s, "  %e = f32[64]{0} exponential(f32[64]{0} %x)\n");
    assert_int_equal(count(s, "fusion(f32[64]{0} %e"), 2);
    assert_int_equal(count(s, "%bc.clone"), 4); /* 2 definitions, 2 uses */
    assert_int_equal(count(s, "%c.clone"), 4);
    assert_lacks(s, "  %bc = ");
    assert_int_equal(count_opcode(m->entry, HS_OP_BROADCAST), 0);
    assert_int_equal(count_opcode(m->entry, HS_OP_CONSTANT), 0);
    free(s);
    hs_module_free(m);
}

static void fusion_does_not_recompute_expensive_producer_per_element(
    void **state)
{
    (void)state;
    /* RMSNorm's tail: rsqrt of a [8] vector broadcast to [8,128]. XLA keeps
     * the rsqrt out of the [8,128] fusion (else 128 rsqrt per row) and
     * fuses it with its own producers instead. */
    hs_module *m = parse("HloModule m\n"
                         "ENTRY main {\n"
                         "  x = f32[8,128] parameter(0)\n"
                         "  v = f32[8] parameter(1)\n"
                         "  c = f32[] constant(1e-06)\n"
                         "  bc = f32[8] broadcast(c), dimensions={}\n"
                         "  a = f32[8] add(v, bc)\n"
                         "  r = f32[8] rsqrt(a)\n"
                         "  br = f32[8,128] broadcast(r), dimensions={0}\n"
                         "  ROOT y = f32[8,128] multiply(x, br)\n"
                         "}\n");
    assert_true(fuse(m));
    assert_int_equal(fused_computations(m), 2);
    const hs_instruction *root = m->entry->root;
    assert_int_equal(root->opcode, HS_OP_FUSION);
    const hs_instruction *inner = root->operands[0]->opcode == HS_OP_FUSION
                                      ? root->operands[0]
                                      : root->operands[1];
    assert_int_equal(inner->opcode, HS_OP_FUSION);
    assert_int_equal(inner->called[0]->root->opcode, HS_OP_RSQRT);
    assert_int_equal(count_opcode(root->called[0], HS_OP_RSQRT), 0);
    assert_int_equal(count_opcode(root->called[0], HS_OP_BROADCAST), 1);
    hs_module_free(m);
}

static void fusion_respects_memory_spaces(void **state)
{
    (void)state;
    hs_module *m = parse("HloModule m\n"
                         "ENTRY main {\n"
                         "  x = f32[16]{0:S(5)} parameter(0)\n"
                         "  n = f32[16]{0:S(5)} negate(x)\n"
                         "  d = f32[16]{0} custom-call(n), "
                         "custom_call_target=\"MoveToDevice\"\n"
                         "  h = f32[16]{0:S(5)} abs(x)\n"
                         "  e = f32[16]{0} exponential(d)\n"
                         "  ROOT t = (f32[16]{0}, f32[16]{0:S(5)}) tuple(e, h)\n"
                         "}\n");
    assert_false(fuse(m));
    hs_module_free(m);
    /* A host-memory producer is not pulled into a device-memory fusion. */
    m = parse("HloModule m\n"
              "ENTRY main {\n"
              "  x = f32[16]{0:S(5)} parameter(0)\n"
              "  y = f32[16]{0} parameter(1)\n"
              "  n = f32[16]{0:S(5)} negate(x)\n"
              "  a = f32[16]{0} add(n, y)\n"
              "  ROOT e = f32[16]{0} exponential(a)\n"
              "}\n");
    assert_true(fuse(m));
    const hs_computation *fc = m->entry->root->called[0];
    assert_int_equal(count_opcode(fc, HS_OP_NEGATE), 0);
    assert_int_equal(count_opcode(m->entry, HS_OP_NEGATE), 1);
    hs_module_free(m);
}

static void fusion_runs_inside_while_bodies_not_reducers(void **state)
{
    (void)state;
    hs_module *m = parse(
        "HloModule m\n"
        "red {\n"
        "  p = f32[] parameter(0)\n"
        "  q = f32[] parameter(1)\n"
        "  n = f32[] negate(q)\n"
        "  ROOT s = f32[] add(p, n)\n"
        "}\n"
        "cond {\n"
        "  cp = (s32[], f32[8]) parameter(0)\n"
        "  ci = s32[] get-tuple-element(cp), index=0\n"
        "  lim = s32[] constant(4)\n"
        "  ROOT lt = pred[] compare(ci, lim), direction=LT\n"
        "}\n"
        "body {\n"
        "  bp = (s32[], f32[8]) parameter(0)\n"
        "  i = s32[] get-tuple-element(bp), index=0\n"
        "  x = f32[8] get-tuple-element(bp), index=1\n"
        "  t = f32[8] tanh(x)\n"
        "  y = f32[8] multiply(t, x)\n"
        "  one = s32[] constant(1)\n"
        "  i1 = s32[] add(i, one)\n"
        "  ROOT r = (s32[], f32[8]) tuple(i1, y)\n"
        "}\n"
        "ENTRY main {\n"
        "  p = f32[8] parameter(0)\n"
        "  z = s32[] constant(0)\n"
        "  init = (s32[], f32[8]) tuple(z, p)\n"
        "  w = (s32[], f32[8]) while(init), condition=cond, body=body\n"
        "  g = f32[8] get-tuple-element(w), index=1\n"
        "  zero = f32[] constant(0)\n"
        "  ROOT s = f32[] reduce(g, zero), dimensions={0}, to_apply=red\n"
        "}\n");
    assert_true(fuse(m));
    const hs_computation *red = hs_module_find_computation(m, "red");
    const hs_computation *body = hs_module_find_computation(m, "body");
    const hs_computation *cond = hs_module_find_computation(m, "cond");
    assert_int_equal(count_opcode(red, HS_OP_FUSION), 0);
    assert_int_equal(count_opcode(body, HS_OP_FUSION), 2);
    assert_int_equal(count_opcode(cond, HS_OP_FUSION), 1);
    /* Callees stay before their callers. */
    for (int c = 0; c < m->n_comps; c++) {
        const hs_computation *comp = m->comps[c];
        for (int k = 0; k < comp->n_instrs; k++)
            for (int j = 0; j < comp->instrs[k]->n_called; j++)
                assert_true(comp->instrs[k]->called[j]->id < comp->id);
    }
    hs_module_free(m);
}

/* ---- the fused module ------------------------------------------------------ */

static const char *mixed =
    "HloModule mixed\n"
    "ENTRY main {\n"
    "  x = f32[2,3,4] parameter(0)\n"
    "  y = f32[4] parameter(1)\n"
    "  s = s32[] parameter(2)\n"
    "  by = f32[2,3,4] broadcast(y), dimensions={2}\n"
    "  a = f32[2,3,4] subtract(x, by)\n"
    "  io = s32[2,3,4] iota(), iota_dimension=1\n"
    "  bs = s32[2,3,4] broadcast(s), dimensions={}\n"
    "  p = pred[2,3,4] compare(io, bs), direction=GE\n"
    "  z = f32[] constant(0)\n"
    "  bz = f32[2,3,4] broadcast(z), dimensions={}\n"
    "  sel = f32[2,3,4] select(p, a, bz)\n"
    "  rs = f32[6,4] reshape(sel)\n"
    "  ROOT cv = s32[6,4] convert(rs)\n"
    "}\n";

static void fused_module_verifies_and_round_trips_through_text(void **state)
{
    (void)state;
    hs_module *m = parse(mixed);
    assert_true(fuse(m));
    assert_int_equal(fused_computations(m), 1);
    char *once = print(m);
    hs_module *back = parse(once);
    hs_error err;
    hs_error_clear(&err);
    assert_int_equal(hs_module_verify(back, &err), HS_OK);
    char *twice = print(back);
    assert_string_equal(once, twice);
    const hs_computation *fc =
        hs_module_find_computation(back, back->entry->root->called[0]->name);
    assert_true(fc->is_fusion);
    assert_int_equal(hs_module_fingerprint(back), hs_module_fingerprint(m));
    hs_module *copy = hs_module_clone(m);
    char *cloned = print(copy);
    assert_string_equal(once, cloned);
    assert_true(copy->entry->root->called[0]->is_fusion);
    free(cloned);
    hs_module_free(copy);
    free(once);
    free(twice);
    hs_module_free(back);

    /* The verifier still checks the fused computation: a bad shape in it
     * is reported with its name. */
    hs_computation *f = m->entry->root->called[0];
    hs_instruction *sub = NULL;
    for (int k = 0; k < f->n_instrs; k++)
        if (f->instrs[k]->opcode == HS_OP_SUBTRACT)
            sub = f->instrs[k];
    assert_non_null(sub);
    sub->shape.dims[2] = 5;
    assert_int_equal(hs_module_verify(m, &err), HS_ERR_SHAPE);
    assert_string_equal(err.instruction, "a");
    assert_contains(err.message, f->name);
    hs_module_free(m);
}

static void fusion_in_the_pipeline_is_reported(void **state)
{
    (void)state;
    hs_module *m = parse(mixed);
    hs_error err;
    hs_error_clear(&err);
    hs_pipeline *p = hs_pipeline_parse(
        "verify,fix(simplify,cse,dce),while-loop-trip-count,fusion", &err);
    assert_non_null(p);
    hs_compile_report rep;
    assert_int_equal(hs_pipeline_run(p, m, NULL, &rep, &err), HS_OK);
    const hs_pass_stats *row = hs_compile_report_find(&rep, "fusion");
    assert_non_null(row);
    assert_int_equal(row->changed_runs, 1);
    assert_non_null(hs_pass_lookup("fusion"));
    hs_pipeline_free(p);
    hs_module_free(m);
}

/* A chain of 100k element-wise instructions on [16] vectors, where every
 * 50th result is used again 50 steps later (both users end up in the same
 * fusion) and a broadcast constant is shared by all: fusions are capped at
 * 512 instructions, and the sweep stays linear. */
static void fusion_handles_100k_instructions_quickly(void **state)
{
    (void)state;
    hs_module *m = hs_module_new("long");
    hs_computation *c = hs_module_add_computation(m, "main", true);
    hs_shape v = hs_shape_make(HS_F32, 1, (int64_t[]){16});
    hs_shape sc = hs_shape_scalar(HS_F32);
    hs_instruction *x = hs_computation_add_parameter(c, 0, &v, "x");
    hs_instruction *k = hs_computation_add(c, HS_OP_CONSTANT, &sc, NULL, 0,
                                           NULL);
    k->literal = hs_arena_alloc(m->arena, sizeof(float));
    *(float *)k->literal = 0.5f;
    hs_instruction *bk = hs_computation_add(c, HS_OP_BROADCAST, &v, &k, 1,
                                            NULL);
    hs_instruction *y = x, *side = x;
    for (int i = 0; c->n_instrs < 100000; i++) {
        hs_instruction *ops[2] = {y, i % 50 == 0 ? side : bk};
        y = hs_computation_add(c, i % 3 ? HS_OP_ADD : HS_OP_MULTIPLY, &v,
                               ops, 2, NULL);
        if (i % 50 == 0)
            side = y;
    }
    c->root = y;
    hs_error err;
    hs_error_clear(&err);
    assert_int_equal(hs_module_verify(m, &err), HS_OK);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_true(fuse(m));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double t = (double)(t1.tv_sec - t0.tv_sec) +
               (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    int n = fused_computations(m);
    print_message("fusion of 100000 instructions: %.3f s, %d fusions, %d "
                  "instructions left in the entry\n",
                  t, n, m->entry->n_instrs);
    assert_true(n >= 100000 / 512);
    assert_true(m->entry->n_instrs < 2 * n);
    for (int ci = 0; ci < m->n_comps; ci++)
        assert_true(m->comps[ci]->is_entry ||
                    m->comps[ci]->n_instrs <= 512 + 2 * 16 + 8);
    assert_true(t < 5.0); /* ~0.1 s in a release build */
    hs_module_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fusion_merges_elementwise_chain),
        cmocka_unit_test(fusion_does_not_cross_dot),
        cmocka_unit_test(fusion_never_fuses_control_flow_or_dynamic_slices),
        cmocka_unit_test(fusion_keeps_multi_user_producer_outside),
        cmocka_unit_test(
            fusion_does_not_recompute_expensive_producer_per_element),
        cmocka_unit_test(fusion_respects_memory_spaces),
        cmocka_unit_test(fusion_runs_inside_while_bodies_not_reducers),
        cmocka_unit_test(fused_module_verifies_and_round_trips_through_text),
        cmocka_unit_test(fusion_in_the_pipeline_is_reported),
        cmocka_unit_test(fusion_handles_100k_instructions_quickly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
