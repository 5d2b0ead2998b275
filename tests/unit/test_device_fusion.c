/* test_device_fusion.c - the emulated device on fused modules (fused
 * programs are bit-identical to the unfused kernels, keep intermediates
 * out of device memory and are charged only their external bytes), on
 * zero-copy dynamic-slice views (scan over stacked weights, copy-on-write)
 * and on copy-start/copy-done, pad and variadic reduce. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "numerics/vmath.h"
#include "device_helpers.h"
#include "hloscope/hs_compile.h"
#include "hloscope/hs_hlo_text.h"
#include "hloscope/hs_model.h"
#include "hloscope/hs_passes.h"
#include "hlo_test_helpers.h"
#include "hloscope/hs_file.h"

#define BASE_PIPELINE "verify,fix(simplify,cse,dce),while-loop-trip-count"
#define FUSED_PIPELINE BASE_PIPELINE ",fusion"

typedef struct run_result {
    hs_tensor **out;
    int n;
    hs_run_stats stats;
} run_result;

static run_result run_ok(const hs_module *m, const char *device,
                         hs_tensor **args, int n_args)
{
    run_result r;
    memset(&r, 0, sizeof r);
    hs_error err;
    hs_error_clear(&err);
    if (hs_device_run(m, hs_device_find(device), args, n_args, &r.out, &r.n,
                      &r.stats, &err) != HS_OK)
        fail_msg("run: %s (%s)", err.message, err.instruction);
    return r;
}

static void assert_same_bits(const run_result *a, const run_result *b)
{
    assert_int_equal(a->n, b->n);
    for (int k = 0; k < a->n; k++) {
        assert_true(hs_shape_compatible(&a->out[k]->shape, &b->out[k]->shape));
        size_t bytes = (size_t)hs_shape_bytes(&a->out[k]->shape);
        if (memcmp(a->out[k]->data, b->out[k]->data, bytes) != 0)
            fail_msg("output %d differs", k);
    }
}

static hs_executable *compile_with(const hs_module *m, const char *pipeline)
{
    hs_compile_options o;
    hs_compile_options_init(&o);
    o.pipeline = pipeline;
    hs_executable *exe = NULL;
    hs_error err;
    hs_error_clear(&err);
    if (hs_compile(m, &o, NULL, NULL, &exe, &err) != HS_OK)
        fail_msg("compile (%s): %s", pipeline, err.message);
    return exe;
}

static int count_fusions(const hs_module *m)
{
    int n = 0;
    for (int c = 0; c < m->n_comps; c++)
        for (int k = 0; k < m->comps[c]->n_instrs; k++)
            n += m->comps[c]->instrs[k]->opcode == HS_OP_FUSION;
    return n;
}

static void free_run(run_result *r) { hs_tensors_free(r->out, r->n); }

/* ---- fused vs unfused -------------------------------------------------------- */

static void fused_examples_match_unfused_bit_for_bit(void **state)
{
    (void)state;
    const char *examples[] = {"mlp", "graph_offload", "seed_64_linear",
                              "decoder_50x256"};
    const char *loops[] = {"unrolled", "scan"};
    for (size_t e = 0; e < sizeof examples / sizeof *examples; e++) {
        for (int l = 0; l < 2; l++) {
            char path[512];
            snprintf(path, sizeof path, "%s/examples/%s.json", HS_SOURCE_DIR,
                     examples[e]);
            hs_model_options mo;
            memset(&mo, 0, sizeof mo);
            mo.loop = loops[l];
            hs_error err;
            hs_error_clear(&err);
            hs_model *model = hs_model_load_file(path, &mo, &err);
            if (!model)
                fail_msg("%s: %s", path, err.message);
            hs_tensor *args[4096];
            int n_args = hs_model_args(model, args, 4096);
            assert_true(n_args > 0);
            /* Random inputs of the model's shape (its parameters are
             * random already). */
            hs_tensor *x = tensor_fill(model->input_shape, 17 + (unsigned)e);
            args[0] = x;
            hs_executable *plain = compile_with(model->module, BASE_PIPELINE);
            hs_executable *fused = compile_with(model->module, FUSED_PIPELINE);
            const hs_module *pm = hs_executable_module(plain);
            const hs_module *fm = hs_executable_module(fused);
            assert_int_equal(count_fusions(pm), 0);
            assert_true(count_fusions(fm) > 0);
            run_result a = run_ok(pm, "tpu-v5e", args, n_args);
            run_result b = run_ok(fm, "tpu-v5e", args, n_args);
            assert_same_bits(&a, &b);
            print_message("%-16s %-8s peak %10lld -> %10lld bytes, sim %9.3f "
                          "-> %9.3f us, %d fusions\n",
                          examples[e], loops[l],
                          (long long)a.stats.peak_device_bytes,
                          (long long)b.stats.peak_device_bytes,
                          a.stats.sim_seconds * 1e6,
                          b.stats.sim_seconds * 1e6, count_fusions(fm));
            assert_true(b.stats.peak_device_bytes <= a.stats.peak_device_bytes);
            assert_true(b.stats.sim_seconds <= a.stats.sim_seconds);
            /* Fusion moves work around, it does not remove any. */
            assert_true(fabs(b.stats.flops - a.stats.flops) <=
                        1e-9 * a.stats.flops);
            free_run(&a);
            free_run(&b);
            hs_executable_release(plain);
            hs_executable_release(fused);
            hs_tensor_free(x);
            hs_model_free(model);
        }
    }
}


static void fusion_lowers_time_and_memory_of_elementwise_model(void **state)
{
    (void)state;
    size_t len;
    hs_error err;
    char *gelu = hs_read_file(HS_SOURCE_DIR "/tests/data/hlo/gelu_tanh.hlo", &len, &err);
    if (!gelu)
        fail_msg("%s", err.message);
    hs_module *m = parse(gelu);
    free(gelu);
    hs_executable *plain = compile_with(m, BASE_PIPELINE);
    hs_executable *fused = compile_with(m, FUSED_PIPELINE);
    const hs_module *fm = hs_executable_module(fused);
    assert_int_equal(count_fusions(fm), 1);
    assert_int_equal(fm->entry->n_instrs, 2); /* x and the fusion */
    hs_tensor *x = tensor_fill(F32(2, 256, 1024), 3);
    run_result a = run_ok(hs_executable_module(plain), "tpu-v5e", &x, 1);
    run_result b = run_ok(fm, "tpu-v5e", &x, 1);
    assert_same_bits(&a, &b);
    const int64_t mb = 256 * 1024 * 4;
    /* Fused, nothing but the argument and the result is ever in memory;
     * unfused, the chain keeps at least two temporaries besides. */
    assert_int_equal(b.stats.peak_device_bytes, 2 * mb);
    assert_true(a.stats.peak_device_bytes >= 4 * mb);
    /* One read and one write instead of one per op: the roofline time
     * drops by the byte ratio (this chain is memory-bound). */
    assert_true(b.stats.bytes_accessed == 2.0 * mb);
    assert_true(a.stats.bytes_accessed >= 20.0 * mb);
    assert_true(b.stats.sim_seconds * 5 < a.stats.sim_seconds);
    const hs_device_spec *spec = hs_device_find("tpu-v5e");
    double want = 2.0 * mb / spec->hbm_bandwidth;
    assert_true(fabs(b.stats.sim_seconds - want) <= 1e-6 * want);
    assert_true(b.stats.flops == a.stats.flops);
    print_message("gelu [256,1024]: sim %.2f -> %.2f us, peak %lld -> %lld "
                  "bytes, wall %.3f -> %.3f ms\n",
                  a.stats.sim_seconds * 1e6, b.stats.sim_seconds * 1e6,
                  (long long)a.stats.peak_device_bytes,
                  (long long)b.stats.peak_device_bytes,
                  a.stats.wall_seconds * 1e3, b.stats.wall_seconds * 1e3);
    free_run(&a);
    free_run(&b);
    hs_tensor_free(x);
    hs_executable_release(plain);
    hs_executable_release(fused);
    hs_module_free(m);
}

/* A fused computation written by hand, run once as a fusion and once as
 * the entry itself (every instruction its own kernel). */
static void fused_equals_inlined(const char *params, const char *body,
                                 const char *fusion_operands,
                                 const char *result_shape, hs_tensor **args,
                                 int n_args, bool expect_program)
{
    char inl[8192], fus[8192];
    snprintf(inl, sizeof inl, "HloModule inl\nENTRY main {\n%s%s}\n", params,
             body);
    snprintf(fus, sizeof fus,
             "HloModule fus\nfused_computation {\n%s%s}\n"
             "ENTRY main {\n%s  ROOT f = %s fusion(%s), kind=kLoop, "
             "calls=fused_computation\n}\n",
             params, body, params, result_shape, fusion_operands);
    hs_module *a = parse(inl), *b = parse(fus);
    hs_error err;
    hs_error_clear(&err);
    if (hs_module_verify(b, &err) != HS_OK)
        fail_msg("verify: %s", err.message);
    run_result ra = run_ok(a, "tpu-v5e", args, n_args);
    run_result rb = run_ok(b, "tpu-v5e", args, n_args);
    assert_same_bits(&ra, &rb);
    int64_t io = hs_shape_bytes(&b->entry->root->shape);
    for (int k = 0; k < n_args; k++)
        io += hs_shape_bytes(&args[k]->shape);
    if (expect_program)
        assert_int_equal(rb.stats.peak_device_bytes, io);
    else
        assert_true(rb.stats.peak_device_bytes > io);
    /* The fusion is charged as one instruction either way. */
    assert_int_equal(rb.stats.instructions, 1);
    free_run(&ra);
    free_run(&rb);
    hs_module_free(a);
    hs_module_free(b);
}

static void fused_program_follows_every_index_map(void **state)
{
    (void)state;
    /* Blocks of 512 elements end mid-row: [7,300] and [300,7] exercise
     * every carry of the index walk. */
    const char *params = "  x = f32[7,300] parameter(0)\n"
                         "  y = f32[300,7] parameter(1)\n"
                         "  v = f32[300] parameter(2)\n"
                         "  s = s32[] parameter(3)\n"
                         "  q = f32[2100] parameter(4)\n";
    const char *body =
        "  yt = f32[7,300] transpose(y), dimensions={1,0}\n"
        "  vb = f32[7,300] broadcast(v), dimensions={1}\n"
        "  yb = f32[7,300] broadcast(y), dimensions={1,0}\n"
        "  r = f32[7,300] reverse(x), dimensions={0,1}\n"
        "  qr = f32[7,300] reshape(q)\n"
        "  a = f32[7,300] add(yt, vb)\n"
        "  b = f32[7,300] subtract(a, r)\n"
        "  c = f32[7,300] multiply(b, yb)\n"
        "  lo = f32[] constant(-0.1)\n"
        "  hi = f32[] constant(0.2)\n"
        "  cl = f32[7,300] clamp(lo, c, hi)\n"
        "  io = s32[7,300] iota(), iota_dimension=1\n"
        "  bs = s32[7,300] broadcast(s), dimensions={}\n"
        "  ge = pred[7,300] compare(io, bs), direction=GE\n"
        "  e = f32[7,300] exponential(cl)\n"
        "  se = f32[7,300] select(ge, e, qr)\n"
        "  rs = f32[7,1,300] reshape(se)\n"
        "  sl = f32[3,1,100] slice(rs), slice={[1:7:2], [0:1], [2:300:3]}\n"
        "  cv = s32[3,1,100] convert(sl)\n"
        "  bc = f32[3,1,100] bitcast-convert(cv)\n"
        "  ROOT n = f32[3,1,100] negate(bc)\n";
    hs_tensor *args[5];
    args[0] = tensor_fill(F32(2, 7, 300), 1);
    args[1] = tensor_fill(F32(2, 300, 7), 2);
    args[2] = tensor_fill(F32(1, 300), 3);
    int32_t sv = 123;
    hs_shape ss = S32(0);
    args[3] = hs_tensor_new(&ss);
    memcpy(args[3]->data, &sv, 4);
    args[4] = tensor_fill(F32(1, 2100), 4);
    fused_equals_inlined(params, body, "x, y, v, s, q", "f32[3,1,100]", args,
                         5, true);

    /* Coordinates do not survive a reshape that regroups dimensions; a
     * broadcast or slice below one falls back to the materialising call
     * (same numbers). */
    const char *regroup =
        "  yt = f32[7,300] transpose(y), dimensions={1,0}\n"
        "  vb = f32[7,300] broadcast(v), dimensions={1}\n"
        "  a = f32[7,300] add(yt, vb)\n"
        "  rr = f32[30,70] reshape(a)\n"
        "  sl = f32[10,35] slice(rr), slice={[3:23:2], [1:70:2]}\n"
        "  ROOT n = f32[10,35] negate(sl)\n";
    fused_equals_inlined(params, regroup, "x, y, v, s, q", "f32[10,35]", args,
                         5, false);
    for (int k = 0; k < 5; k++)
        hs_tensor_free(args[k]);
}

static void fused_program_on_integers_and_predicates(void **state)
{
    (void)state;
    const char *params = "  a = s32[1000] parameter(0)\n"
                         "  b = s32[1000] parameter(1)\n";
    const char *body = "  z = s32[] constant(0)\n"
                       "  bz = s32[1000] broadcast(z), dimensions={}\n"
                       "  d = s32[1000] divide(a, b)\n"
                       "  r = s32[1000] remainder(a, b)\n"
                       "  x = s32[1000] xor(d, r)\n"
                       "  p = pred[1000] compare(x, bz), direction=LT\n"
                       "  q = pred[1000] compare(a, b), direction=NE\n"
                       "  o = pred[1000] and(p, q)\n"
                       "  no = pred[1000] not(o)\n"
                       "  ab = s32[1000] abs(x)\n"
                       "  ng = s32[1000] negate(ab)\n"
                       "  ROOT s = s32[1000] select(no, ng, x)\n";
    hs_shape sh = S32(1, 1000);
    hs_tensor *args[2] = {hs_tensor_new(&sh), hs_tensor_new(&sh)};
    int32_t *a = args[0]->data, *b = args[1]->data;
    unsigned seed = 7;
    for (int i = 0; i < 1000; i++) {
        seed = seed * 1103515245u + 12345u;
        a[i] = (int32_t)(seed >> 8) - (1 << 23);
        b[i] = (int32_t)(seed % 7) - 3; /* zeros included: x/0 = -1 */
    }
    a[0] = INT32_MIN;
    b[0] = -1;
    fused_equals_inlined(params, body, "a, b", "s32[1000]", args, 2, true);
    hs_tensor_free(args[0]);
    hs_tensor_free(args[1]);
}

static void fusion_with_non_elementwise_body_falls_back_to_a_call(void **state)
{
    (void)state;
    const char *params = "  x = f32[6,40] parameter(0)\n";
    const char *body = "  e = f32[6,40] exponential(x)\n"
                       "  c = f32[12,40] concatenate(e, x), dimensions={0}\n"
                       "  ROOT t = f32[12,40] tanh(c)\n";
    hs_tensor *x = tensor_fill(F32(2, 6, 40), 5);
    fused_equals_inlined(params, body, "x", "f32[12,40]", &x, 1, false);
    hs_tensor_free(x);
}

/* ---- dynamic-slice views ------------------------------------------------------- */

/* A scan over stacked weights, as the scan lowering writes it: the body
 * slices layer i out of W[L,N,N] and multiplies the carry by it. */
static const char *stacked_scan =
    "HloModule scan\n"
    "cond {\n"
    "  cp = (s32[], f32[1,256], f32[6,256,256]) parameter(0)\n"
    "  ci = s32[] get-tuple-element(cp), index=0\n"
    "  n = s32[] constant(6)\n"
    "  ROOT lt = pred[] compare(ci, n), direction=LT\n"
    "}\n"
    "body {\n"
    "  bp = (s32[], f32[1,256], f32[6,256,256]) parameter(0)\n"
    "  i = s32[] get-tuple-element(bp), index=0\n"
    "  h = f32[1,256] get-tuple-element(bp), index=1\n"
    "  w = f32[6,256,256] get-tuple-element(bp), index=2\n"
    "  z = s32[] constant(0)\n"
    "  ds = f32[1,256,256] dynamic-slice(w, i, z, z), "
    "dynamic_slice_sizes={1,256,256}\n"
    "  wl = f32[256,256] reshape(ds)\n"
    "  d = f32[1,256] dot(h, wl), lhs_contracting_dims={1}, "
    "rhs_contracting_dims={1}\n"
    "  t = f32[1,256] tanh(d)\n"
    "  one = s32[] constant(1)\n"
    "  i1 = s32[] add(i, one)\n"
    "  ROOT r = (s32[], f32[1,256], f32[6,256,256]) tuple(i1, t, w)\n"
    "}\n"
    "ENTRY main {\n"
    "  x = f32[1,256] parameter(0)\n"
    "  W = f32[6,256,256] parameter(1)\n"
    "  z = s32[] constant(0)\n"
    "  init = (s32[], f32[1,256], f32[6,256,256]) tuple(z, x, W)\n"
    "  lp = (s32[], f32[1,256], f32[6,256,256]) while(init), "
    "condition=cond, body=body\n"
    "  ROOT y = f32[1,256] get-tuple-element(lp), index=1\n"
    "}\n";

static void scan_over_stacked_weights_slices_without_copies(void **state)
{
    (void)state;
    hs_module *m = parse(stacked_scan);
    hs_tensor *args[2] = {tensor_fill(F32(2, 1, 256), 1),
                          tensor_fill(F32(3, 6, 256, 256), 2)};
    float *w = args[1]->data;
    for (int64_t k = 0; k < 6 * 256 * 256; k++)
        w[k] *= 0.1f;
    run_result r = run_ok(m, "tpu-v5e", args, 2);
    const int64_t layer = 256 * 256 * 4, stack = 6 * layer, act = 256 * 4;
    /* Arguments, the carry, the dot, the tanh and small scalars/tuples:
     * no layer-sized buffer besides the stack itself. */
    assert_true(r.stats.peak_device_bytes >= stack + act);
    assert_true(r.stats.peak_device_bytes < stack + 8 * act);
    /* The slices move no bytes: each iteration reads its layer once (in
     * the dot), and the clock charges nothing for the view itself. */
    assert_true(r.stats.bytes_accessed < 6.0 * (layer + 8 * act));

    /* Same numbers as the unrolled form with static slices. */
    char unrolled[8192];
    int at = snprintf(unrolled, sizeof unrolled,
                      "HloModule unrolled\nENTRY main {\n"
                      "  h0 = f32[1,256] parameter(0)\n"
                      "  W = f32[6,256,256] parameter(1)\n");
    for (int l = 0; l < 6; l++)
        at += snprintf(unrolled + at, sizeof unrolled - (size_t)at,
                       "  s%d = f32[1,256,256] slice(W), slice={[%d:%d], "
                       "[0:256], [0:256]}\n"
                       "  w%d = f32[256,256] reshape(s%d)\n"
                       "  d%d = f32[1,256] dot(h%d, w%d), "
                       "lhs_contracting_dims={1}, rhs_contracting_dims={1}\n"
                       "  %sh%d = f32[1,256] tanh(d%d)\n",
                       l, l, l + 1, l, l, l, l, l, l == 5 ? "ROOT " : "",
                       l + 1, l);
    snprintf(unrolled + at, sizeof unrolled - (size_t)at, "}\n");
    hs_module *u = parse(unrolled);
    run_result ru = run_ok(u, "tpu-v5e", args, 2);
    const float *a = r.out[0]->data, *b = ru.out[0]->data;
    for (int k = 0; k < 256; k++)
        assert_true(fabsf(a[k] - b[k]) <= 1e-5f * (1 + fabsf(b[k])));
    /* The unrolled form copies every layer out of the stack. */
    assert_true(ru.stats.peak_device_bytes >= stack + layer);
    free_run(&r);
    free_run(&ru);
    hs_module_free(u);
    hs_module_free(m);
    hs_tensor_free(args[0]);
    hs_tensor_free(args[1]);
}

static void dynamic_update_slice_copies_a_buffer_a_view_still_reads(
    void **state)
{
    (void)state;
    hs_module *m = parse(
        "HloModule cow\n"
        "ENTRY main {\n"
        "  p = f32[4,8] parameter(0)\n"
        "  u = f32[1,8] parameter(1)\n"
        "  one = f32[] constant(1)\n"
        "  b1 = f32[4,8] broadcast(one), dimensions={}\n"
        "  buf = f32[4,8] add(p, b1)\n"
        "  i = s32[] constant(1)\n"
        "  z = s32[] constant(0)\n"
        "  v = f32[1,8] dynamic-slice(buf, i, z), dynamic_slice_sizes={1,8}\n"
        "  d = f32[4,8] dynamic-update-slice(buf, u, i, z)\n"
        "  v2 = f32[1,8] dynamic-slice(d, i, z), dynamic_slice_sizes={1,8}\n"
        "  ROOT t = (f32[1,8], f32[4,8], f32[1,8]) tuple(v, d, v2)\n"
        "}\n");
    hs_tensor *args[2] = {tensor_fill(F32(2, 4, 8), 1),
                          tensor_fill(F32(2, 1, 8), 2)};
    run_result r = run_ok(m, "tpu-v5e", args, 2);
    assert_int_equal(r.n, 3);
    const float *p = args[0]->data, *u = args[1]->data;
    const float *v = r.out[0]->data, *d = r.out[1]->data,
                *v2 = r.out[2]->data;
    for (int j = 0; j < 8; j++) {
        /* The view still sees the buffer as it was before the update. */
        assert_true(v[j] == p[8 + j] + 1.0f);
        assert_true(d[8 + j] == u[j]);
        assert_true(v2[j] == u[j]);
        assert_true(d[j] == p[j] + 1.0f);
    }
    /* At the end: the arguments, buf (kept by the view v), its copy d (the
     * update could not be in place) and the tuple's index table; views
     * add no bytes. */
    assert_int_equal(r.stats.peak_device_bytes, 128 + 32 + 128 + 128 + 24);
    free_run(&r);
    hs_module_free(m);
    hs_tensor_free(args[0]);
    hs_tensor_free(args[1]);
}

static void view_keeps_its_buffer_alive(void **state)
{
    (void)state;
    /* buf's last use is the slice; the view must keep it (and its bytes)
     * alive until the view itself is consumed. */
    hs_module *m = parse(
        "HloModule alive\n"
        "ENTRY main {\n"
        "  p = f32[64,16] parameter(0)\n"
        "  buf = f32[64,16] exponential(p)\n"
        "  i = s32[] constant(5)\n"
        "  z = s32[] constant(0)\n"
        "  v = f32[2,16] dynamic-slice(buf, i, z), dynamic_slice_sizes={2,16}\n"
        "  big = f32[64,16] negate(p)\n"
        "  a = f32[2,16] slice(big), slice={[0:2], [0:16]}\n"
        "  ROOT s = f32[2,16] add(v, a)\n"
        "}\n");
    hs_tensor *p = tensor_fill(F32(2, 64, 16), 4);
    run_result r = run_ok(m, "tpu-v5e", &p, 1);
    const float *pd = p->data, *s = r.out[0]->data;
    for (int k = 0; k < 32; k++)
        assert_true(s[k] == hs_expf(pd[5 * 16 + k]) + -pd[k]);
    /* p, buf (kept by the view) and big are live together. */
    assert_true(r.stats.peak_device_bytes >= 3 * 4096);
    free_run(&r);
    hs_module_free(m);
    hs_tensor_free(p);
}

/* ---- loop fusions in place ------------------------------------------------------- */

/* Compiles m without changing it (no fusion, no reordering) and runs the
 * result: the device's peak against buffer assignment's. */
typedef struct compiled_run {
    hs_executable *exe;
    run_result r;
    int64_t assigned; /* compiled device peak */
} compiled_run;

static compiled_run compile_and_run(const hs_module *m, hs_tensor **args,
                                    int n_args)
{
    compiled_run c;
    c.exe = compile_with(m, "verify");
    c.r = run_ok(hs_executable_module(c.exe), "tpu-v5e", args, n_args);
    c.assigned =
        hs_buffers_peak(hs_executable_buffers(c.exe), HS_MEMSPACE_DEVICE)
            .bytes;
    return c;
}

static void free_compiled_run(compiled_run *c)
{
    free_run(&c->r);
    hs_executable_release(c->exe);
}

/* exp(x * x), over two 512-element blocks of the fused program. */
#define SQUARE_EXP                                                         \
    "sq {\n"                                                               \
    "  fp = f32[1024] parameter(0)\n"                                      \
    "  fm = f32[1024] multiply(fp, fp)\n"                                  \
    "  ROOT fe = f32[1024] exponential(fm)\n"                              \
    "}\n"

static void loop_fusion_runs_in_place_over_dying_temporary(void **state)
{
    (void)state;
    hs_module *m = parse("HloModule inplace\n" SQUARE_EXP
                         "ENTRY main {\n"
                         "  p = f32[1024] parameter(0)\n"
                         "  a = f32[1024] negate(p)\n"
                         "  ROOT f = f32[1024] fusion(a), kind=kLoop, "
                         "calls=sq\n"
                         "}\n");
    hs_tensor *p = tensor_fill(F32(1, 1024), 21);
    compiled_run c = compile_and_run(m, &p, 1);
    const float *pd = p->data, *y = c.r.out[0]->data;
    for (int k = 0; k < 1024; k++)
        assert_true(y[k] == hs_expf(-pd[k] * -pd[k]));
    /* p and a; f is written over a. */
    assert_int_equal(c.r.stats.peak_device_bytes, 2 * 4096);
    assert_int_equal(c.assigned, 2 * 4096);
    free_compiled_run(&c);
    hs_module_free(m);

    /* a read again after f: p + a + f + s at s, on both sides. */
    m = parse("HloModule later\n" SQUARE_EXP
              "ENTRY main {\n"
              "  p = f32[1024] parameter(0)\n"
              "  a = f32[1024] negate(p)\n"
              "  f = f32[1024] fusion(a), kind=kLoop, calls=sq\n"
              "  ROOT s = f32[1024] add(f, a)\n"
              "}\n");
    c = compile_and_run(m, &p, 1);
    y = c.r.out[0]->data;
    for (int k = 0; k < 1024; k++)
        assert_true(y[k] == hs_expf(-pd[k] * -pd[k]) + -pd[k]);
    assert_int_equal(c.r.stats.peak_device_bytes, 4 * 4096);
    assert_int_equal(c.assigned, 4 * 4096);
    free_compiled_run(&c);
    hs_module_free(m);
    hs_tensor_free(p);
}

/* f = exp(g * w) + w, over the fusion's operands (g, w). */
static const char *step_body =
    "upd {\n"
    "  fg = f32[1024] parameter(0)\n"
    "  fw = f32[1024] parameter(1)\n"
    "  fm = f32[1024] multiply(fg, fw)\n"
    "  fe = f32[1024] exponential(fm)\n"
    "  ROOT fa = f32[1024] add(fe, fw)\n"
    "}\n"
    "ENTRY main {\n"
    "  w = f32[1024] parameter(0)\n"
    "  g = f32[1024] parameter(1)\n"
    "  ROOT f = f32[1024] fusion(g, w), kind=kLoop, calls=upd\n"
    "}\n";

static void donated_argument_leaves_device_at_last_use(void **state)
{
    (void)state;
    hs_tensor *args[2] = {tensor_fill(F32(1, 1024), 22),
                          tensor_fill(F32(1, 1024), 23)};
    hs_tensor *w0 = hs_tensor_copy(args[0]);
    const float *w = args[0]->data, *g = args[1]->data;
    char text[1024];
    for (int donate = 0; donate < 2; donate++) {
        snprintf(text, sizeof text, "HloModule step%s\n%s",
                 donate ? ", input_output_alias={ {}: (0, {}, may-alias) }"
                        : "",
                 step_body);
        hs_module *m = parse(text);
        compiled_run c = compile_and_run(m, args, 2);
        const float *y = c.r.out[0]->data;
        for (int k = 0; k < 1024; k++)
            assert_true(y[k] == hs_expf(g[k] * w[k]) + w[k]);
        /* The caller's w is never written. */
        assert_memory_equal(w, w0->data, 4096);
        /* Donated, w leaves as f arrives: w + g, then g + f. Kept, w + g +
         * f. */
        int64_t want = donate ? 2 * 4096 : 3 * 4096;
        assert_int_equal(c.r.stats.peak_device_bytes, want);
        assert_int_equal(c.assigned, want);
        free_compiled_run(&c);
        hs_module_free(m);
    }
    hs_tensor_free(w0);
    hs_tensor_free(args[0]);
    hs_tensor_free(args[1]);
}

static void tuple_elements_move_out_and_unread_ones_drop(void **state)
{
    (void)state;
    /* Every user of t is a get-tuple-element, each of its own index: ga
     * moves a out of t, so that f may write over a while t lives on, and
     * b, which nobody reads, leaves when t is made. Buffers: p [0,9],
     * a = f [1,7], b [2,4], c [3,9], t's index table (24 B) [4,8], d
     * [7,9], s [9]. At t: p + a + b + c + 24; at d: p + f + c + 24 + d;
     * at s: p + c + d + s. */
    hs_module *m = parse("HloModule tuple\n" SQUARE_EXP
                         "ENTRY main {\n"
                         "  p = f32[1024] parameter(0)\n"
                         "  a = f32[1024] negate(p)\n"
                         "  b = f32[1024] exponential(p)\n"
                         "  c = f32[1024] abs(p)\n"
                         "  t = (f32[1024], f32[1024], f32[1024]) "
                         "tuple(a, b, c)\n"
                         "  ga = f32[1024] get-tuple-element(t), index=0\n"
                         "  f = f32[1024] fusion(ga), kind=kLoop, calls=sq\n"
                         "  d = f32[1024] negate(f)\n"
                         "  gc = f32[1024] get-tuple-element(t), index=2\n"
                         "  ROOT s = f32[1024] add(d, gc)\n"
                         "}\n");
    hs_tensor *p = tensor_fill(F32(1, 1024), 24);
    compiled_run c = compile_and_run(m, &p, 1);
    const float *pd = p->data, *y = c.r.out[0]->data;
    for (int k = 0; k < 1024; k++)
        assert_true(y[k] == -hs_expf(-pd[k] * -pd[k]) + fabsf(pd[k]));
    assert_int_equal(c.assigned, 4 * 4096 + 24);
    assert_int_equal(c.r.stats.peak_device_bytes, 4 * 4096 + 24);
    free_compiled_run(&c);
    hs_module_free(m);
    hs_tensor_free(p);
}

/* h -> h * 0.5 + 0.5 three times; the body's fusion reads the carried h
 * element-wise, but h is the loop's (a parameter of the body): buffer
 * assignment gives h1 a buffer of its own, while the device may write
 * over a carried temporary. */
static const char *halving_loop =
    "HloModule loop\n"
    "half {\n"
    "  fp = f32[256] parameter(0)\n"
    "  c = f32[] constant(0.5)\n"
    "  cb = f32[256] broadcast(c), dimensions={}\n"
    "  fm = f32[256] multiply(fp, cb)\n"
    "  ROOT fa = f32[256] add(fm, cb)\n"
    "}\n"
    "cond {\n"
    "  cp = (s32[], f32[256]) parameter(0)\n"
    "  ci = s32[] get-tuple-element(cp), index=0\n"
    "  n = s32[] constant(3)\n"
    "  ROOT lt = pred[] compare(ci, n), direction=LT\n"
    "}\n"
    "body {\n"
    "  bp = (s32[], f32[256]) parameter(0)\n"
    "  i = s32[] get-tuple-element(bp), index=0\n"
    "  h = f32[256] get-tuple-element(bp), index=1\n"
    "  one = s32[] constant(1)\n"
    "  i1 = s32[] add(i, one)\n"
    "  h1 = f32[256] fusion(h), kind=kLoop, calls=half\n"
    "  ROOT r = (s32[], f32[256]) tuple(i1, h1)\n"
    "}\n"
    "ENTRY main {\n"
    "  x = f32[256] parameter(0)\n"
    "  z = s32[] constant(0)\n"
    "  init = (s32[], f32[256]) tuple(z, x)\n"
    "  w = (s32[], f32[256]) while(init), condition=cond, body=body\n"
    "  ROOT y = f32[256] get-tuple-element(w), index=1\n"
    "}\n";

static void loop_fusion_in_while_body_stays_within_compiled_peak(
    void **state)
{
    (void)state;
    hs_module *m = parse(halving_loop);
    hs_tensor *x = tensor_fill(F32(1, 256), 26);
    compiled_run c = compile_and_run(m, &x, 1);
    const float *xd = x->data, *y = c.r.out[0]->data;
    for (int k = 0; k < 256; k++) {
        float h = xd[k];
        for (int t = 0; t < 3; t++)
            h = h * 0.5f + 0.5f;
        assert_true(y[k] == h);
    }
    /* Compiled, at the while: x, z (4), init's index table taken by the
     * loop (16), the loop's own w{0} (4) and w{1} (1024), plus the body's
     * peak i1 + h1 = 1028 (the condition's is 5). */
    assert_int_equal(c.assigned, 1024 + 4 + 16 + 4 + 1024 + 1028);
    /* The device moves h out of the body's parameter and, from the second
     * iteration on (h is then the last iteration's h1, not the pinned x),
     * writes h1 over it: x and one carried array, never x + h + h1. */
    assert_true(c.r.stats.peak_device_bytes >= 2 * 1024);
    assert_true(c.r.stats.peak_device_bytes < 3 * 1024);
    assert_true(c.r.stats.peak_device_bytes <= c.assigned);
    free_compiled_run(&c);
    hs_module_free(m);
    hs_tensor_free(x);
}

/* An operand passed twice, read transposed through one parameter and
 * element-wise through the other: writing over it would overwrite
 * elements the transpose has yet to read (the blocks are 512 elements). */
static void loop_fusion_not_in_place_over_operand_read_transposed(
    void **state)
{
    (void)state;
    hs_module *m = parse("HloModule twice\n"
                         "tr {\n"
                         "  x = f32[32,32] parameter(0)\n"
                         "  y = f32[32,32] parameter(1)\n"
                         "  t = f32[32,32] transpose(x), dimensions={1,0}\n"
                         "  ROOT s = f32[32,32] subtract(y, t)\n"
                         "}\n"
                         "ENTRY main {\n"
                         "  p = f32[32,32] parameter(0)\n"
                         "  a = f32[32,32] negate(p)\n"
                         "  ROOT f = f32[32,32] fusion(a, a), kind=kLoop, "
                         "calls=tr\n"
                         "}\n");
    hs_tensor *p = tensor_fill(F32(2, 32, 32), 25);
    compiled_run c = compile_and_run(m, &p, 1);
    const float *pd = p->data, *y = c.r.out[0]->data;
    for (int i = 0; i < 32; i++)
        for (int j = 0; j < 32; j++)
            assert_true(y[i * 32 + j] == -pd[i * 32 + j] - -pd[j * 32 + i]);
    /* p + a + f on both sides. */
    assert_int_equal(c.r.stats.peak_device_bytes, 3 * 4096);
    assert_int_equal(c.assigned, 3 * 4096);
    free_compiled_run(&c);
    hs_module_free(m);

    /* The same through a reshape, which shares a's buffer. */
    m = parse("HloModule alias\n"
              "tr {\n"
              "  x = f32[32,32] parameter(0)\n"
              "  v = f32[1024] parameter(1)\n"
              "  y = f32[32,32] reshape(v)\n"
              "  t = f32[32,32] transpose(y), dimensions={1,0}\n"
              "  ROOT s = f32[32,32] subtract(x, t)\n"
              "}\n"
              "ENTRY main {\n"
              "  p = f32[32,32] parameter(0)\n"
              "  a = f32[32,32] negate(p)\n"
              "  r = f32[1024] reshape(a)\n"
              "  ROOT f = f32[32,32] fusion(a, r), kind=kLoop, calls=tr\n"
              "}\n");
    c = compile_and_run(m, &p, 1);
    y = c.r.out[0]->data;
    for (int i = 0; i < 32; i++)
        for (int j = 0; j < 32; j++)
            assert_true(y[i * 32 + j] == -pd[i * 32 + j] - -pd[j * 32 + i]);
    assert_int_equal(c.r.stats.peak_device_bytes, 3 * 4096);
    assert_int_equal(c.assigned, 3 * 4096);
    free_compiled_run(&c);
    hs_module_free(m);
    hs_tensor_free(p);
}

/* ---- copies, pad, variadic reduce ------------------------------------------------ */

static void copy_start_and_copy_done_move_between_memory_spaces(void **state)
{
    (void)state;
    hs_module *m = parse(
        "HloModule offload\n"
        "ENTRY main {\n"
        "  x = f32[1024]{0} parameter(0)\n"
        "  cs = (f32[1024]{0:S(5)}, f32[1024]{0}, u32[]) copy-start(x)\n"
        "  h = f32[1024]{0:S(5)} copy-done(cs)\n"
        "  cs2 = (f32[1024]{0}, f32[1024]{0:S(5)}, u32[]) copy-start(h)\n"
        "  d = f32[1024]{0} copy-done(cs2)\n"
        "  c = f32[1024]{0} copy(d)\n"
        "  ROOT n = f32[1024]{0} negate(c)\n"
        "}\n");
    hs_tensor *x = tensor_fill(F32(1, 1024), 9);
    run_result r = run_ok(m, "teach-16m", &x, 1);
    const float *xd = x->data, *y = r.out[0]->data;
    for (int k = 0; k < 1024; k++)
        assert_true(y[k] == -xd[k]);
    /* Only the destination of the first copy is in host memory. */
    assert_int_equal(r.stats.peak_host_bytes, 4096);
    /* Two 4 KiB transfers on the host link, recorded apart from compute;
     * the device-side copy is not a transfer. */
    const hs_device_spec *spec = hs_device_find("teach-16m");
    assert_true(r.stats.host_transfer_bytes == 8192.0);
    double want = 8192.0 / spec->host_link_bandwidth;
    assert_true(fabs(r.stats.host_transfer_seconds - want) <= 1e-9 * want);
    assert_true(r.stats.sim_seconds > r.stats.host_transfer_seconds);
    free_run(&r);
    hs_module_free(m);
    hs_tensor_free(x);
}

static void pad_with_edges_interior_and_cropping(void **state)
{
    (void)state;
    hs_module *m = parse("HloModule pad\n"
                         "ENTRY main {\n"
                         "  x = f32[3,5] parameter(0)\n"
                         "  c = f32[] constant(-7)\n"
                         "  ROOT p = f32[8,6] pad(x, c), padding=1_2_1x-2_3_0\n"
                         "}\n");
    hs_tensor *x = tensor_fill(F32(2, 3, 5), 11);
    run_result r = run_ok(m, "tpu-v5e", &x, 1);
    const float *xd = x->data, *y = r.out[0]->data;
    /* Row a of x lands at 1 + 2a; column b at b - 2 (b < 2 cropped). */
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 6; j++) {
            float want = -7.0f;
            int a = i - 1, b = j + 2;
            if (a >= 0 && a % 2 == 0 && a / 2 < 3 && b < 5)
                want = xd[(a / 2) * 5 + b];
            assert_true(y[i * 6 + j] == want);
        }
    free_run(&r);
    hs_module_free(m);

    /* A padding that does not give the result's shape is refused. */
    m = parse("HloModule pad\n"
              "ENTRY main {\n"
              "  x = f32[3,5] parameter(0)\n"
              "  c = f32[] constant(0)\n"
              "  ROOT p = f32[8,6] pad(x, c), padding=1_2x0_0\n"
              "}\n");
    hs_tensor **out = NULL;
    int n = 0;
    hs_error err;
    hs_error_clear(&err);
    assert_int_equal(hs_device_run(m, NULL, &x, 1, &out, &n, NULL, &err),
                     HS_ERR_INVALID);
    assert_string_equal(err.instruction, "p");
    assert_contains(err.message, "padding=1_2x0_0");
    hs_module_free(m);
    hs_tensor_free(x);
}

static void variadic_reduce_computes_argmax(void **state)
{
    (void)state;
    hs_module *m = parse(
        "HloModule argmax\n"
        "argmax {\n"
        "  av = f32[] parameter(0)\n"
        "  ai = s32[] parameter(1)\n"
        "  bv = f32[] parameter(2)\n"
        "  bi = s32[] parameter(3)\n"
        "  ge = pred[] compare(av, bv), direction=GE\n"
        "  v = f32[] select(ge, av, bv)\n"
        "  i = s32[] select(ge, ai, bi)\n"
        "  ROOT t = (f32[], s32[]) tuple(v, i)\n"
        "}\n"
        "ENTRY main {\n"
        "  x = f32[4,9] parameter(0)\n"
        "  io = s32[4,9] iota(), iota_dimension=1\n"
        "  ninf = f32[] constant(-inf)\n"
        "  z = s32[] constant(0)\n"
        "  ROOT r = (f32[4], s32[4]) reduce(x, io, ninf, z), dimensions={1}, "
        "to_apply=argmax\n"
        "}\n");
    hs_tensor *x = tensor_fill(F32(2, 4, 9), 13);
    run_result r = run_ok(m, "tpu-v5e", &x, 1);
    assert_int_equal(r.n, 2);
    const float *xd = x->data, *mx = r.out[0]->data;
    const int32_t *ix = r.out[1]->data;
    for (int i = 0; i < 4; i++) {
        int best = 0;
        for (int j = 1; j < 9; j++)
            if (xd[i * 9 + j] > xd[i * 9 + best])
                best = j;
        assert_int_equal(ix[i], best);
        assert_true(mx[i] == xd[i * 9 + best]);
    }
    free_run(&r);
    hs_module_free(m);
    hs_tensor_free(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fused_examples_match_unfused_bit_for_bit),
        cmocka_unit_test(fusion_lowers_time_and_memory_of_elementwise_model),
        cmocka_unit_test(fused_program_follows_every_index_map),
        cmocka_unit_test(fused_program_on_integers_and_predicates),
        cmocka_unit_test(
            fusion_with_non_elementwise_body_falls_back_to_a_call),
        cmocka_unit_test(scan_over_stacked_weights_slices_without_copies),
        cmocka_unit_test(
            dynamic_update_slice_copies_a_buffer_a_view_still_reads),
        cmocka_unit_test(view_keeps_its_buffer_alive),
        cmocka_unit_test(loop_fusion_runs_in_place_over_dying_temporary),
        cmocka_unit_test(donated_argument_leaves_device_at_last_use),
        cmocka_unit_test(tuple_elements_move_out_and_unread_ones_drop),
        cmocka_unit_test(
            loop_fusion_in_while_body_stays_within_compiled_peak),
        cmocka_unit_test(
            loop_fusion_not_in_place_over_operand_read_transposed),
        cmocka_unit_test(copy_start_and_copy_done_move_between_memory_spaces),
        cmocka_unit_test(pad_with_edges_interior_and_cropping),
        cmocka_unit_test(variadic_reduce_computes_argmax),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
