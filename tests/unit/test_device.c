/* test_device.c - the emulated accelerator: numerics of every kernel family,
 * control flow, memory accounting, the roofline clock and error reporting. */
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

#include "numerics/vmath.h"
#include "device_helpers.h"
#include "hloscope/hs_hlo_text.h"

typedef struct run_result {
    hs_status st;
    hs_tensor **out;
    int n;
    hs_run_stats stats;
    hs_error err;
} run_result;

static run_result run_on(hs_module *m, const char *device, hs_tensor **args,
                         int n_args)
{
    run_result r;
    memset(&r, 0, sizeof r);
    r.st = hs_device_run(m, hs_device_find(device), args, n_args, &r.out,
                         &r.n, &r.stats, &r.err);
    return r;
}

static run_result run(hs_module *m, hs_tensor **args, int n_args)
{
    return run_on(m, "tpu-v5e", args, n_args);
}

static void done(run_result *r, hs_module *m, hs_tensor **args, int n)
{
    hs_tensors_free(r->out, r->n);
    for (int i = 0; i < n; i++)
        hs_tensor_free(args[i]);
    hs_module_free(m);
}

static void assert_close(float got, double want, double tol)
{
    double err = fabs((double)got - want);
    double scale = fabs(want) > 1 ? fabs(want) : 1;
    if (!(err <= tol * scale) && !(isnan(got) && isnan(want))) {
        print_error("got %.9g want %.9g\n", (double)got, want);
        fail();
    }
}

/* ---- element-wise -------------------------------------------------------- */

static double ref_unary(hs_opcode op, double v)
{
    switch (op) {
    case HS_OP_ABS: return fabs(v);
    case HS_OP_NEGATE: return -v;
    case HS_OP_EXP: return exp(v);
    case HS_OP_EXPM1: return expm1(v);
    case HS_OP_LOG: return log(v);
    case HS_OP_LOG1P: return log1p(v);
    case HS_OP_SQRT: return sqrt(v);
    case HS_OP_RSQRT: return 1 / sqrt(v);
    case HS_OP_TANH: return tanh(v);
    case HS_OP_LOGISTIC: return 1 / (1 + exp(-v));
    case HS_OP_ERF: return erf(v);
    case HS_OP_SIGN: return v > 0 ? 1 : v < 0 ? -1 : 0;
    case HS_OP_FLOOR: return floor(v);
    case HS_OP_CEIL: return ceil(v);
    case HS_OP_COS: return cos(v);
    case HS_OP_SIN: return sin(v);
    default: return NAN;
    }
}

static void every_f32_unary_op_matches_libm(void **state)
{
    (void)state;
    static const hs_opcode ops[] = {
        HS_OP_ABS,  HS_OP_NEGATE, HS_OP_EXP,      HS_OP_EXPM1, HS_OP_LOG,
        HS_OP_LOG1P, HS_OP_SQRT,  HS_OP_RSQRT,    HS_OP_TANH,  HS_OP_LOGISTIC,
        HS_OP_ERF,  HS_OP_SIGN,   HS_OP_FLOOR,    HS_OP_CEIL,  HS_OP_COS,
        HS_OP_SIN};
    /* 19 elements: one vector block of 8 twice plus a tail. */
    float in[19];
    for (int i = 0; i < 19; i++)
        in[i] = 0.25f + 0.37f * (float)i;
    float neg[19];
    for (int i = 0; i < 19; i++)
        neg[i] = -1.5f + 0.2f * (float)i;
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        bool positive_only = ops[k] == HS_OP_LOG || ops[k] == HS_OP_SQRT ||
                             ops[k] == HS_OP_RSQRT;
        const float *src = positive_only ? in : neg;
        hs_module *m = hs_module_new("unary");
        hs_computation *c = hs_module_add_computation(m, "main", true);
        hs_instruction *x = add_param(c, 0, F32(1, 19));
        c->root = add_op(c, ops[k], F32(1, 19), 1, x);
        hs_tensor *a[] = {tensor_f32(F32(1, 19), src)};
        run_result r = run(m, a, 1);
        assert_int_equal(r.st, HS_OK);
        assert_int_equal(r.n, 1);
        for (int i = 0; i < 19; i++)
            assert_close(hs_tensor_f32(r.out[0])[i], ref_unary(ops[k], src[i]),
                         1e-5);
        done(&r, m, a, 1);
    }
}

/* The device's exp (numerics/vmath.h): within 1 ulp of the correctly rounded
 * result over a sweep of the float range, the same in a vector body, a
 * tail and a scalar call, and exact at the special values. */
static int64_t f32_order(float f)
{
    int32_t i;
    memcpy(&i, &f, sizeof i);
    return i < 0 ? -(int64_t)(i & 0x7fffffff) : i;
}

#ifdef HS_VMATH_AVX2
__attribute__((target("avx2"))) static void exp_avx2(const float *a,
                                                     float *y, int64_t n)
{
    HS_VMAP8(hs_vexpf8, hs_vexpf, a, y, n);
}
#endif

static void device_exp_is_within_one_ulp(void **state)
{
    (void)state;
    enum { N = 1003 }; /* 125 vector blocks and a tail of 3 */
    static float in[N], out[N];
    for (uint32_t start = 0; start < 0x100000000ull - 7919u * N;
         start += 7919u * N) {
        for (int i = 0; i < N; i++) {
            uint32_t b = start + 7919u * (uint32_t)i;
            memcpy(&in[i], &b, sizeof b);
        }
        HS_VMAP(hs_vexpf, in, out, N);
#ifdef HS_VMATH_AVX2
        if (__builtin_cpu_supports("avx2")) {
            static float out8[N];
            exp_avx2(in, out8, N);
            assert_memory_equal(out8, out, sizeof out);
        }
#endif
        for (int i = 0; i < N; i++) {
            float x = in[i], want = (float)exp((double)x);
            if (isnan(x)) {
                assert_true(isnan(out[i]));
                continue;
            }
            int64_t d = f32_order(out[i]) - f32_order(want);
            if (d < -1 || d > 1) {
                print_error("exp(%a) = %a, want %a\n", (double)x,
                            (double)out[i], (double)want);
                fail();
            }
            assert_true(memcmp(&out[i], &(float){hs_expf(x)}, 4) == 0);
        }
    }
    assert_true(hs_expf(0.0f) == 1.0f && hs_expf(-0.0f) == 1.0f);
    assert_true(hs_expf(-INFINITY) == 0.0f && !signbit(hs_expf(-INFINITY)));
    assert_true(isinf(hs_expf(INFINITY)) && isinf(hs_expf(88.73f)));
    assert_true(hs_expf(-3.4e38f) == 0.0f);
    assert_true(hs_expf(-103.9f) == 0x1p-149f);
    assert_true(isnan(hs_expf(NAN)));
    assert_true(hs_logisticf(-200.0f) == 0.0f && hs_logisticf(200.0f) == 1.0f);
}

static hs_tensor *run_binary(hs_opcode op, hs_dtype t, const void *a,
                             const void *b, int n)
{
    hs_module *m = hs_module_new("binary");
    hs_computation *c = hs_module_add_computation(m, "main", true);
    hs_instruction *x = add_const(c, shp(t, 1, n), a);
    hs_instruction *y = add_const(c, shp(t, 1, n), b);
    c->root = add_op(c, op, shp(t, 1, n), 2, x, y);
    run_result r = run(m, NULL, 0);
    assert_int_equal(r.st, HS_OK);
    hs_tensor *out = r.out[0];
    free(r.out);
    hs_module_free(m);
    return out;
}

static void binary_ops_follow_xla_semantics(void **state)
{
    (void)state;
    const float fa[] = {1.5f, -2.0f, 3.0f, NAN, 7.0f, 2.0f, -9.0f, 0.5f, 4.0f};
    const float fb[] = {0.5f, 4.0f, -3.0f, 1.0f, 2.0f, 3.0f, 2.0f, 0.25f, 3.0f};
    struct { hs_opcode op; double (*f)(double, double); } fops[] = {
        {HS_OP_POWER, pow}, {HS_OP_REMAINDER, fmod}};
    for (int i = 0; i < 2; i++) {
        hs_tensor *t = run_binary(fops[i].op, HS_F32, fa, fb, 9);
        for (int k = 0; k < 9; k++)
            assert_close(hs_tensor_f32(t)[k], fops[i].f(fa[k], fb[k]), 1e-6);
        hs_tensor_free(t);
    }
    hs_opcode arith[] = {HS_OP_ADD, HS_OP_SUBTRACT, HS_OP_MULTIPLY,
                         HS_OP_DIVIDE, HS_OP_MAXIMUM, HS_OP_MINIMUM};
    for (int i = 0; i < 6; i++) {
        hs_tensor *t = run_binary(arith[i], HS_F32, fa, fb, 9);
        for (int k = 0; k < 9; k++) {
            double a = fa[k], b = fb[k], want =
                arith[i] == HS_OP_ADD        ? a + b
                : arith[i] == HS_OP_SUBTRACT ? a - b
                : arith[i] == HS_OP_MULTIPLY ? a * b
                : arith[i] == HS_OP_DIVIDE   ? a / b
                : arith[i] == HS_OP_MAXIMUM  ? (isnan(a) ? a : fmax(a, b))
                                             : (isnan(a) ? a : fmin(a, b));
            assert_close(hs_tensor_f32(t)[k], want, 1e-6);
        }
        hs_tensor_free(t);
    }
    /* s32: division by zero gives -1, remainder by zero the dividend,
     * INT_MIN / -1 wraps to INT_MIN. */
    const int32_t ia[] = {7, -7, 5, INT32_MIN, 12, 6};
    const int32_t ib[] = {2, 2, 0, -1, 10, 3};
    hs_tensor *d = run_binary(HS_OP_DIVIDE, HS_S32, ia, ib, 6);
    const int32_t want_div[] = {3, -3, -1, INT32_MIN, 1, 2};
    assert_memory_equal(d->data, want_div, sizeof want_div);
    hs_tensor_free(d);
    hs_tensor *rm = run_binary(HS_OP_REMAINDER, HS_S32, ia, ib, 6);
    const int32_t want_rem[] = {1, -1, 5, 0, 2, 0};
    assert_memory_equal(rm->data, want_rem, sizeof want_rem);
    hs_tensor_free(rm);
    hs_tensor *x = run_binary(HS_OP_XOR, HS_S32, ia, ib, 6);
    for (int k = 0; k < 6; k++)
        assert_int_equal(((int32_t *)x->data)[k], ia[k] ^ ib[k]);
    hs_tensor_free(x);
    hs_tensor *p = run_binary(HS_OP_POWER, HS_S32, (int32_t[]){2, 3, -1, 5},
                              (int32_t[]){10, 3, 3, -1}, 4);
    const int32_t want_pow[] = {1024, 27, -1, 0};
    assert_memory_equal(p->data, want_pow, sizeof want_pow);
    hs_tensor_free(p);
    const uint8_t pa[] = {0, 0, 1, 1}, pb[] = {0, 1, 0, 1};
    hs_tensor *o = run_binary(HS_OP_OR, HS_PRED, pa, pb, 4);
    assert_memory_equal(o->data, ((uint8_t[]){0, 1, 1, 1}), 4);
    hs_tensor_free(o);
    hs_tensor *an = run_binary(HS_OP_AND, HS_PRED, pa, pb, 4);
    assert_memory_equal(an->data, ((uint8_t[]){0, 0, 0, 1}), 4);
    hs_tensor_free(an);
}

static void compare_select_clamp_and_convert(void **state)
{
    (void)state;
    hs_module *m = hs_module_new("cmp");
    hs_computation *c = hs_module_add_computation(m, "main", true);
    const float a[] = {1, 2, 3, NAN, -2.5f, 3e10f};
    const float b[] = {2, 2, 2, 1, 0, 0};
    hs_instruction *x = add_const(c, F32(1, 6), a);
    hs_instruction *y = add_const(c, F32(1, 6), b);
    hs_instruction *outs[12];
    int n = 0;
    for (int d = HS_DIR_EQ; d <= HS_DIR_GE; d++) {
        outs[n] = add_op(c, HS_OP_COMPARE, PRED(1, 6), 2, x, y);
        outs[n++]->direction = (hs_direction)d;
    }
    hs_instruction *lt = outs[2];
    outs[n++] = add_op(c, HS_OP_SELECT, F32(1, 6), 3, lt, x, y);
    hs_instruction *lo = const_f32(c, -1.0f), *hi = const_f32(c, 2.5f);
    outs[n++] = add_op(c, HS_OP_CLAMP, F32(1, 6), 3, lo, x, hi);
    hs_instruction *xi = add_op(c, HS_OP_CONVERT, S32(1, 6), 1, x);
    outs[n++] = xi;
    outs[n++] = add_op(c, HS_OP_CONVERT, F32(1, 6), 1,
                       add_op(c, HS_OP_CONVERT, PRED(1, 6), 1, xi));
    hs_shape shapes[12];
    for (int i = 0; i < n; i++)
        shapes[i] = outs[i]->shape;
    hs_shape ts = hs_shape_tuple(m->arena, n, shapes);
    c->root = hs_computation_add(c, HS_OP_TUPLE, &ts, outs, n, NULL);
    run_result r = run(m, NULL, 0);
    assert_int_equal(r.st, HS_OK);
    assert_int_equal(r.n, 10);
    const uint8_t want_cmp[6][6] = {
        {0, 1, 0, 0, 0, 0}, {1, 0, 1, 1, 1, 1}, {1, 0, 0, 0, 1, 0},
        {1, 1, 0, 0, 1, 0}, {0, 0, 1, 0, 0, 1}, {0, 1, 1, 0, 0, 1}};
    for (int d = 0; d < 6; d++)
        assert_memory_equal(r.out[d]->data, want_cmp[d], 6);
    const float *sel = hs_tensor_f32(r.out[6]);
    const float want_sel[] = {1, 2, 2, 1, -2.5f, 0};
    for (int i = 0; i < 6; i++)
        assert_close(sel[i], want_sel[i], 0);
    const float *cl = hs_tensor_f32(r.out[7]);
    assert_close(cl[0], 1, 0);
    assert_close(cl[2], 2.5, 0);
    assert_close(cl[4], -1, 0);
    /* f32 -> s32 truncates, saturates and maps NaN to 0. */
    const int32_t want_i[] = {1, 2, 3, 0, -2, INT32_MAX};
    assert_memory_equal(r.out[8]->data, want_i, sizeof want_i);
    const float want_b[] = {1, 1, 1, 0, 1, 1};
    assert_memory_equal(r.out[9]->data, want_b, sizeof want_b);
    done(&r, m, NULL, 0);
}

/* ---- data movement --------------------------------------------------------- */

static void broadcast_transpose_slice_concat_reverse_iota(void **state)
{
    (void)state;
    hs_module *m = hs_module_new("data");
    hs_computation *c = hs_module_add_computation(m, "main", true);
    float v6[6] = {0, 1, 2, 3, 4, 5};
    hs_instruction *x = add_const(c, F32(2, 2, 3), v6);        /* [2,3] */
    hs_instruction *row = add_const(c, F32(1, 3), v6);          /* [3] */
    hs_instruction *bc_row = add_op(c, HS_OP_BROADCAST, F32(2, 2, 3), 1, row);
    set_dims(bc_row, 1, 1);
    hs_instruction *bc_col = add_op(c, HS_OP_BROADCAST, F32(3, 2, 4, 3), 1,
                                    add_const(c, F32(1, 2), v6));
    set_dims(bc_col, 1, 0);
    hs_instruction *bc_s = add_op(c, HS_OP_BROADCAST, F32(2, 2, 2), 1,
                                  const_f32(c, 7.0f));
    hs_instruction *tr = add_op(c, HS_OP_TRANSPOSE, F32(2, 3, 2), 1, x);
    set_dims(tr, 2, 1, 0);
    hs_instruction *t3 = add_op(c, HS_OP_TRANSPOSE, F32(3, 3, 1, 2), 1,
                                add_op(c, HS_OP_RESHAPE, F32(3, 2, 1, 3), 1,
                                       x));
    set_dims(t3, 3, 2, 1, 0);
    hs_instruction *sl = add_op(c, HS_OP_SLICE, F32(2, 2, 2), 1, x);
    sl->slice = hs_arena_alloc(m->arena, sizeof *sl->slice);
    *sl->slice = (hs_slice_dims){2, {0, 0}, {2, 3}, {1, 2}};
    hs_instruction *cat = add_op(c, HS_OP_CONCATENATE, F32(2, 2, 5), 2, x,
                                 sl);
    set_dims(cat, 1, 1);
    hs_instruction *rev = add_op(c, HS_OP_REVERSE, F32(2, 2, 3), 1, x);
    set_dims(rev, 2, 0, 1);
    hs_instruction *io = add_op(c, HS_OP_IOTA, S32(2, 2, 3), 0);
    set_dims(io, 1, 1);
    hs_instruction *outs[] = {bc_row, bc_col, bc_s, tr, t3, sl, cat, rev, io};
    hs_shape shapes[9];
    for (int i = 0; i < 9; i++)
        shapes[i] = outs[i]->shape;
    hs_shape ts = hs_shape_tuple(m->arena, 9, shapes);
    c->root = hs_computation_add(c, HS_OP_TUPLE, &ts, outs, 9, NULL);
    run_result r = run(m, NULL, 0);
    assert_int_equal(r.st, HS_OK);
    assert_int_equal(r.n, 9);
    const float want_row[] = {0, 1, 2, 0, 1, 2};
    assert_memory_equal(r.out[0]->data, want_row, sizeof want_row);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 4; j++)
            for (int k = 0; k < 3; k++)
                assert_close(hs_tensor_f32(r.out[1])[(i * 4 + j) * 3 + k],
                             i, 0);
    for (int i = 0; i < 4; i++)
        assert_close(hs_tensor_f32(r.out[2])[i], 7, 0);
    const float want_tr[] = {0, 3, 1, 4, 2, 5};
    assert_memory_equal(r.out[3]->data, want_tr, sizeof want_tr);
    assert_memory_equal(r.out[4]->data, want_tr, sizeof want_tr);
    const float want_sl[] = {0, 2, 3, 5};
    assert_memory_equal(r.out[5]->data, want_sl, sizeof want_sl);
    const float want_cat[] = {0, 1, 2, 0, 2, 3, 4, 5, 3, 5};
    assert_memory_equal(r.out[6]->data, want_cat, sizeof want_cat);
    const float want_rev[] = {5, 4, 3, 2, 1, 0};
    assert_memory_equal(r.out[7]->data, want_rev, sizeof want_rev);
    const int32_t want_io[] = {0, 1, 2, 0, 1, 2};
    assert_memory_equal(r.out[8]->data, want_io, sizeof want_io);
    done(&r, m, NULL, 0);
}

static void dynamic_slices_clamp_start_indices(void **state)
{
    (void)state;
    hs_module *m = hs_module_new("ds");
    hs_computation *c = hs_module_add_computation(m, "main", true);
    float v12[12];
    for (int i = 0; i < 12; i++)
        v12[i] = (float)i;
    hs_instruction *x = add_const(c, F32(2, 3, 4), v12);
    /* Start (5, -3) clamps to (1, 0) for a 2x2 window. */
    hs_instruction *ds = add_op(c, HS_OP_DYNAMIC_SLICE, F32(2, 2, 2), 3, x,
                                const_s32(c, 5), const_s32(c, -3));
    set_dims(ds, 2, 2, 2);
    float upd[2] = {-1, -2};
    hs_instruction *dus = add_op(c, HS_OP_DYNAMIC_UPDATE_SLICE, F32(2, 3, 4),
                                 4, x, add_const(c, F32(2, 1, 2), upd),
                                 const_s32(c, 1), const_s32(c, 7));
    hs_instruction *outs[] = {ds, dus};
    hs_shape shapes[] = {ds->shape, dus->shape};
    hs_shape ts = hs_shape_tuple(m->arena, 2, shapes);
    c->root = hs_computation_add(c, HS_OP_TUPLE, &ts, outs, 2, NULL);
    run_result r = run(m, NULL, 0);
    assert_int_equal(r.st, HS_OK);
    const float want_ds[] = {4, 5, 8, 9};
    assert_memory_equal(r.out[0]->data, want_ds, sizeof want_ds);
    float want_dus[12];
    memcpy(want_dus, v12, sizeof v12);
    want_dus[6] = -1; /* row 1, column clamped from 7 to 2 */
    want_dus[7] = -2;
    assert_memory_equal(r.out[1]->data, want_dus, sizeof want_dus);
    /* The constant operand was not modified in place. */
    assert_close(((float *)x->literal)[6], 6, 0);
    done(&r, m, NULL, 0);
}

/* ---- dot ------------------------------------------------------------------ */

/* out[b, m, n] = sum_k lhs(b, m, k) * rhs(b, k, n) with element offsets
 * given by strides per logical index. */
static void naive_dot(const float *l, const int64_t ls[3], const float *r,
                      const int64_t rs[3], float *out, int B, int M, int N,
                      int K)
{
    for (int b = 0; b < B; b++)
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                double acc = 0;
                for (int k = 0; k < K; k++)
                    acc += (double)l[b * ls[0] + i * ls[1] + k * ls[2]] *
                           r[b * rs[0] + k * rs[1] + j * rs[2]];
                out[(b * M + i) * N + j] = (float)acc;
            }
}

typedef struct dot_case {
    const char *what;
    hs_shape ls, rs, os;
    hs_dot_dims dims;
    int B, M, N, K;
    int64_t lstr[3], rstr[3]; /* strides of (b, m, k) and (b, k, n) */
} dot_case;

static void dot_matches_naive_loop_in_every_dimension_order(void **state)
{
    (void)state;
    dot_case cases[] = {
        {"x[M,K] . W[K,N]", F32(2, 5, 7), F32(2, 7, 3), F32(2, 5, 3),
         {0, 1, 0, 1, {0}, {1}, {0}, {0}}, 1, 5, 3, 7, {0, 7, 1}, {0, 3, 1}},
        {"x[M,K] . W[N,K]^T (linear)", F32(2, 4, 9), F32(2, 6, 9),
         F32(2, 4, 6), {0, 1, 0, 1, {0}, {1}, {0}, {1}}, 1, 4, 6, 9,
         {0, 9, 1}, {0, 1, 9}},
        {"x[1,K] . W[N,K]^T (gemv)", F32(2, 1, 33), F32(2, 17, 33),
         F32(2, 1, 17), {0, 1, 0, 1, {0}, {1}, {0}, {1}}, 1, 1, 17, 33,
         {0, 33, 1}, {0, 1, 33}},
        {"x[1,K] . W[K,N] (gemv)", F32(2, 1, 12), F32(2, 12, 5),
         F32(2, 1, 5), {0, 1, 0, 1, {0}, {1}, {0}, {0}}, 1, 1, 5, 12,
         {0, 12, 1}, {0, 5, 1}},
        {"x[K,M]^T . W[K,N]", F32(2, 8, 3), F32(2, 8, 4), F32(2, 3, 4),
         {0, 1, 0, 1, {0}, {0}, {0}, {0}}, 1, 3, 4, 8, {0, 1, 3},
         {0, 4, 1}},
        {"batched [B,M,K] . [B,K,N]", F32(3, 4, 3, 5), F32(3, 4, 5, 2),
         F32(3, 4, 3, 2), {1, 1, 1, 1, {0}, {2}, {0}, {1}}, 4, 3, 2, 5,
         {15, 5, 1}, {10, 2, 1}},
        {"batched attention [B,M,K] . [B,N,K]^T", F32(3, 2, 6, 4),
         F32(3, 2, 5, 4), F32(3, 2, 6, 5), {1, 1, 1, 1, {0}, {2}, {0}, {2}},
         2, 6, 5, 4, {24, 4, 1}, {20, 1, 4}},
        {"batch dim in the middle [M,B,K] . [K,B,N]", F32(3, 3, 2, 4),
         F32(3, 4, 2, 5), F32(3, 2, 3, 5), {1, 1, 1, 1, {1}, {2}, {1}, {0}},
         2, 3, 5, 4, {4, 8, 1}, {5, 10, 1}},
        /* Heads in place: [1,S,H,D] operands, batch (0,2), no copies. */
        {"scores [1,S,H,D] . [1,S,H,D]^T", F32(4, 1, 6, 3, 4),
         F32(4, 1, 5, 3, 4), F32(4, 1, 3, 6, 5),
         {2, 1, 2, 1, {0, 2}, {3}, {0, 2}, {3}}, 3, 6, 5, 4, {4, 12, 1},
         {4, 1, 12}},
        {"probs [1,H,S,S] . values [1,S,H,D]", F32(4, 1, 3, 6, 5),
         F32(4, 1, 5, 3, 4), F32(4, 1, 3, 6, 4),
         {2, 1, 2, 1, {0, 1}, {3}, {0, 2}, {1}}, 3, 6, 4, 5, {30, 5, 1},
         {4, 12, 1}},
        {"gemv over a strided vector [K,B] . [B,K,N]", F32(2, 7, 3),
         F32(3, 3, 7, 2), F32(2, 3, 2), {1, 1, 1, 1, {1}, {0}, {0}, {1}}, 3,
         1, 2, 7, {1, 0, 3}, {14, 2, 1}},
        {"batch last, interleaved [M,K,B] . [K,N,B] (copied)", F32(3, 4, 5, 2),
         F32(3, 5, 3, 2), F32(3, 2, 4, 3), {1, 1, 1, 1, {2}, {1}, {2}, {0}},
         2, 4, 3, 5, {1, 10, 2}, {1, 6, 2}},
    };
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        dot_case *dc = &cases[t];
        hs_module *m = hs_module_new("dot");
        hs_computation *c = hs_module_add_computation(m, "main", true);
        hs_instruction *l = add_param(c, 0, dc->ls);
        hs_instruction *r = add_param(c, 1, dc->rs);
        hs_instruction *d = add_op(c, HS_OP_DOT, dc->os, 2, l, r);
        d->dot = hs_arena_alloc(m->arena, sizeof *d->dot);
        *d->dot = dc->dims;
        c->root = d;
        hs_tensor *a[] = {tensor_fill(dc->ls, 1 + (unsigned)t),
                          tensor_fill(dc->rs, 100 + (unsigned)t)};
        run_result res = run(m, a, 2);
        if (res.st)
            print_error("%s: %s\n", dc->what, res.err.message);
        assert_int_equal(res.st, HS_OK);
        float *want = calloc((size_t)(dc->B * dc->M * dc->N), sizeof *want);
        naive_dot(hs_tensor_f32(a[0]), dc->lstr, hs_tensor_f32(a[1]),
                  dc->rstr, want, dc->B, dc->M, dc->N, dc->K);
        for (int i = 0; i < dc->B * dc->M * dc->N; i++)
            assert_close(hs_tensor_f32(res.out[0])[i], want[i], 1e-5);
        free(want);
        done(&res, m, a, 2);
    }
}

/* ---- reduce --------------------------------------------------------------- */

static void reduce_sum_and_max_over_any_axes(void **state)
{
    (void)state;
    hs_module *m = hs_module_new("reduce");
    hs_computation *sum = add_reducer(m, "sum", HS_OP_ADD, HS_F32);
    hs_computation *max = add_reducer(m, "max", HS_OP_MAXIMUM, HS_F32);
    /* Not a plain binary op of the two parameters: interpreted. */
    hs_computation *abs_max = hs_module_add_computation(m, "abs_max", false);
    {
        hs_instruction *p0 = add_param(abs_max, 0, F32(0));
        hs_instruction *p1 = add_param(abs_max, 1, F32(0));
        hs_instruction *a = add_op(abs_max, HS_OP_ABS, F32(0), 1, p1);
        abs_max->root = add_op(abs_max, HS_OP_MAXIMUM, F32(0), 2, p0, a);
    }
    hs_computation *c = hs_module_add_computation(m, "main", true);
    float v[24];
    for (int i = 0; i < 24; i++)
        v[i] = (float)((i * 7) % 11) - 5.0f;
    hs_instruction *x = add_const(c, F32(3, 2, 3, 4), v);
    hs_instruction *zero = const_f32(c, 0), *ninf = const_f32(c, -INFINITY);
    struct { hs_computation *fn; hs_instruction *init; hs_shape s; int nd;
             int64_t d0, d1; } rs[] = {
        {sum, zero, F32(2, 2, 3), 1, 2, 0},   /* last axis: rows */
        {sum, zero, F32(2, 3, 4), 1, 0, 0},   /* first axis: columns */
        {max, ninf, F32(2, 2, 4), 1, 1, 0},   /* middle axis: transposed */
        {sum, zero, F32(0), 0, 0, 0},         /* all axes (filled below) */
        {abs_max, zero, F32(1, 3), 2, 0, 2},  /* interpreted reducer */
    };
    hs_instruction *outs[5];
    hs_shape shapes[5];
    for (int i = 0; i < 5; i++) {
        outs[i] = add_op(c, HS_OP_REDUCE, rs[i].s, 2, x, rs[i].init);
        if (i == 3)
            set_dims(outs[i], 3, 0, 1, 2);
        else if (rs[i].nd == 2)
            set_dims(outs[i], 2, (int)rs[i].d0, (int)rs[i].d1);
        else
            set_dims(outs[i], 1, (int)rs[i].d0);
        hs_instruction_set_called(outs[i], &rs[i].fn, 1);
        shapes[i] = outs[i]->shape;
    }
    hs_shape ts = hs_shape_tuple(m->arena, 5, shapes);
    c->root = hs_computation_add(c, HS_OP_TUPLE, &ts, outs, 5, NULL);
    run_result r = run(m, NULL, 0);
    if (r.st)
        print_error("%s\n", r.err.message);
    assert_int_equal(r.st, HS_OK);
#define X(a, b, cc) v[((a) * 3 + (b)) * 4 + (cc)]
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 3; b++) {
            double s = 0;
            for (int k = 0; k < 4; k++)
                s += X(a, b, k);
            assert_close(hs_tensor_f32(r.out[0])[a * 3 + b], s, 1e-6);
        }
    for (int b = 0; b < 3; b++)
        for (int k = 0; k < 4; k++)
            assert_close(hs_tensor_f32(r.out[1])[b * 4 + k],
                         X(0, b, k) + X(1, b, k), 1e-6);
    for (int a = 0; a < 2; a++)
        for (int k = 0; k < 4; k++) {
            double mx = -INFINITY;
            for (int b = 0; b < 3; b++)
                mx = fmax(mx, X(a, b, k));
            assert_close(hs_tensor_f32(r.out[2])[a * 4 + k], mx, 0);
        }
    double total = 0;
    for (int i = 0; i < 24; i++)
        total += v[i];
    assert_close(hs_tensor_f32(r.out[3])[0], total, 1e-6);
    for (int b = 0; b < 3; b++) {
        double mx = 0;
        for (int a = 0; a < 2; a++)
            for (int k = 0; k < 4; k++)
                mx = fmax(mx, fabs(X(a, b, k)));
        assert_close(hs_tensor_f32(r.out[4])[b], mx, 0);
    }
#undef X
    done(&r, m, NULL, 0);
}

/* Long rows take the eight-lane path (a tail of 5 after four blocks of
 * 8): sum, product, max and min agree with a double reference, NaN
 * propagates through max and min, and the init is applied once. */
static void reduce_long_rows_in_lanes(void **state)
{
    (void)state;
    enum { R = 4, L = 37 };
    hs_module *m = hs_module_new("reduce_rows");
    hs_opcode ops[] = {HS_OP_ADD, HS_OP_MULTIPLY, HS_OP_MAXIMUM,
                       HS_OP_MINIMUM};
    float inits[] = {0.5f, 2.0f, -INFINITY, INFINITY};
    hs_computation *fns[4];
    for (int k = 0; k < 4; k++) {
        char name[16];
        snprintf(name, sizeof name, "r%d", k);
        fns[k] = add_reducer(m, name, ops[k], HS_F32);
    }
    hs_computation *c = hs_module_add_computation(m, "main", true);
    static float v[R * L];
    for (int i = 0; i < R * L; i++)
        v[i] = 1.0f + 0.01f * (float)((i * 13) % 29) - 0.14f;
    v[2 * L + 33] = NAN; /* in the tail of row 2 */
    v[3 * L + 9] = NAN;  /* in a lane block of row 3 */
    hs_instruction *x = add_const(c, F32(2, R, L), v);
    hs_instruction *outs[4];
    hs_shape shapes[4];
    for (int k = 0; k < 4; k++) {
        outs[k] = add_op(c, HS_OP_REDUCE, F32(1, R), 2, x,
                         const_f32(c, inits[k]));
        set_dims(outs[k], 1, 1);
        hs_instruction_set_called(outs[k], &fns[k], 1);
        shapes[k] = outs[k]->shape;
    }
    hs_shape ts = hs_shape_tuple(m->arena, 4, shapes);
    c->root = hs_computation_add(c, HS_OP_TUPLE, &ts, outs, 4, NULL);
    run_result r = run(m, NULL, 0);
    assert_int_equal(r.st, HS_OK);
    for (int row = 0; row < R; row++) {
        double sum = inits[0], prod = inits[1], mx = -INFINITY, mn = INFINITY;
        bool nan = false;
        for (int j = 0; j < L; j++) {
            double e = v[row * L + j];
            nan |= isnan(e);
            sum += e;
            prod *= e;
            mx = fmax(mx, e);
            mn = fmin(mn, e);
        }
        assert_close(hs_tensor_f32(r.out[0])[row], sum, 1e-6);
        assert_close(hs_tensor_f32(r.out[1])[row], prod, 1e-6);
        assert_close(hs_tensor_f32(r.out[2])[row], nan ? NAN : mx, 0);
        assert_close(hs_tensor_f32(r.out[3])[row], nan ? NAN : mn, 0);
        assert_true(isnan(hs_tensor_f32(r.out[2])[row]) == nan);
        assert_true(isnan(hs_tensor_f32(r.out[3])[row]) == nan);
    }
    done(&r, m, NULL, 0);
}

/* ---- control flow ----------------------------------------------------------- */

/* while (i < n) { acc += i; i += 1 }, XLA's known-trip-count example. */
static hs_module *counter_loop(int n, hs_instruction **w_out)
{
    hs_module *m = hs_module_new("loop");
    hs_shape carry_elems[] = {S32(0), S32(0)};
    hs_shape carry = hs_shape_tuple(m->arena, 2, carry_elems);
    hs_computation *cond = hs_module_add_computation(m, "cond", false);
    {
        hs_instruction *p = add_param(cond, 0, carry);
        hs_instruction *i = add_op(cond, HS_OP_GET_TUPLE_ELEMENT, S32(0), 1, p);
        i->index = 0;
        cond->root = add_op(cond, HS_OP_COMPARE, PRED(0), 2, i,
                            const_s32(cond, n));
        cond->root->direction = HS_DIR_LT;
    }
    hs_computation *body = hs_module_add_computation(m, "body", false);
    {
        hs_instruction *p = add_param(body, 0, carry);
        hs_instruction *i = add_op(body, HS_OP_GET_TUPLE_ELEMENT, S32(0), 1, p);
        hs_instruction *acc = add_op(body, HS_OP_GET_TUPLE_ELEMENT, S32(0), 1,
                                     p);
        acc->index = 1;
        hs_instruction *i1 = add_op(body, HS_OP_ADD, S32(0), 2, i,
                                    const_s32(body, 1));
        hs_instruction *a1 = add_op(body, HS_OP_ADD, S32(0), 2, acc, i);
        body->root = add_op(body, HS_OP_TUPLE, carry, 2, i1, a1);
    }
    hs_computation *c = hs_module_add_computation(m, "main", true);
    hs_instruction *init = add_op(c, HS_OP_TUPLE, carry, 2, const_s32(c, 0),
                                  const_s32(c, 0));
    hs_instruction *w = add_op(c, HS_OP_WHILE, carry, 1, init);
    hs_instruction_set_called(w, (hs_computation *[]){cond, body}, 2);
    w->known_trip_count = n;
    hs_instruction *sum = add_op(c, HS_OP_GET_TUPLE_ELEMENT, S32(0), 1, w);
    sum->index = 1;
    c->root = sum;
    if (w_out)
        *w_out = w;
    return m;
}

static void while_loop_sums_a_counter(void **state)
{
    (void)state;
    hs_module *m = counter_loop(10, NULL);
    run_result r = run(m, NULL, 0);
    assert_int_equal(r.st, HS_OK);
    assert_int_equal(r.n, 1);
    assert_int_equal(((int32_t *)r.out[0]->data)[0], 45);
    /* 5 entry instructions, 11 condition runs of 3, 10 body runs of 6. */
    assert_int_equal(r.stats.instructions, 5 + 11 * 3 + 10 * 6);
    done(&r, m, NULL, 0);
}

/* ys = zeros[T, H]; for t: ys[t] = xs[t] * 2: a scan's stacking loop. */
static void while_updates_loop_carried_buffer_in_place(void **state)
{
    (void)state;
    enum { T = 64, H = 1024 };
    hs_module *m = hs_module_new("scan");
    hs_shape el[] = {S32(0), F32(2, T, H), F32(2, T, H)};
    hs_shape carry = hs_shape_tuple(m->arena, 3, el);
    hs_computation *cond = hs_module_add_computation(m, "cond", false);
    {
        hs_instruction *p = add_param(cond, 0, carry);
        hs_instruction *i = add_op(cond, HS_OP_GET_TUPLE_ELEMENT, S32(0), 1, p);
        cond->root = add_op(cond, HS_OP_COMPARE, PRED(0), 2, i,
                            const_s32(cond, T));
        cond->root->direction = HS_DIR_LT;
    }
    hs_computation *body = hs_module_add_computation(m, "body", false);
    {
        hs_instruction *p = add_param(body, 0, carry);
        hs_instruction *g[3];
        for (int k = 0; k < 3; k++) {
            g[k] = add_op(body, HS_OP_GET_TUPLE_ELEMENT, el[k], 1, p);
            g[k]->index = k;
        }
        hs_instruction *zero = const_s32(body, 0);
        hs_instruction *row = add_op(body, HS_OP_DYNAMIC_SLICE, F32(2, 1, H),
                                     3, g[1], g[0], zero);
        set_dims(row, 2, 1, H);
        hs_instruction *two = add_op(body, HS_OP_BROADCAST, F32(2, 1, H), 1,
                                     const_f32(body, 2.0f));
        hs_instruction *y = add_op(body, HS_OP_MULTIPLY, F32(2, 1, H), 2, row,
                                   two);
        hs_instruction *ys = add_op(body, HS_OP_DYNAMIC_UPDATE_SLICE,
                                    F32(2, T, H), 4, g[2], y, g[0], zero);
        hs_instruction *i1 = add_op(body, HS_OP_ADD, S32(0), 2, g[0],
                                    const_s32(body, 1));
        body->root = add_op(body, HS_OP_TUPLE, carry, 3, i1, g[1], ys);
    }
    hs_computation *c = hs_module_add_computation(m, "main", true);
    hs_instruction *xs = add_param(c, 0, F32(2, T, H));
    hs_instruction *zeros = add_op(c, HS_OP_BROADCAST, F32(2, T, H), 1,
                                   const_f32(c, 0.0f));
    hs_instruction *init = add_op(c, HS_OP_TUPLE, carry, 3, const_s32(c, 0),
                                  xs, zeros);
    hs_instruction *w = add_op(c, HS_OP_WHILE, carry, 1, init);
    hs_instruction_set_called(w, (hs_computation *[]){cond, body}, 2);
    hs_instruction *out = add_op(c, HS_OP_GET_TUPLE_ELEMENT, F32(2, T, H), 1,
                                 w);
    out->index = 2;
    c->root = out;
    hs_tensor *a[] = {tensor_fill(F32(2, T, H), 7)};
    run_result r = run(m, a, 1);
    assert_int_equal(r.st, HS_OK);
    for (int i = 0; i < T * H; i++)
        assert_close(hs_tensor_f32(r.out[0])[i],
                     2.0 * hs_tensor_f32(a[0])[i], 0);
    /* xs and ys, plus small per-iteration buffers: no second copy of ys. */
    int64_t big = (int64_t)T * H * 4;
    assert_true(r.stats.peak_device_bytes >= 2 * big);
    assert_true(r.stats.peak_device_bytes < 2 * big + 64 * 1024);
    done(&r, m, a, 1);
}

static void tuple_outputs_are_flattened_in_order(void **state)
{
    (void)state;
    hs_module *m = hs_module_new("tuple");
    hs_computation *c = hs_module_add_computation(m, "main", true);
    hs_instruction *x = add_param(c, 0, F32(1, 3));
    hs_instruction *n = add_op(c, HS_OP_NEGATE, F32(1, 3), 1, x);
    hs_shape in_el[] = {F32(1, 3), F32(1, 3)};
    hs_shape inner = hs_shape_tuple(m->arena, 2, in_el);
    hs_instruction *t = add_op(c, HS_OP_TUPLE, inner, 2, n, x);
    hs_shape out_el[] = {F32(0), inner};
    hs_shape outer = hs_shape_tuple(m->arena, 2, out_el);
    c->root = add_op(c, HS_OP_TUPLE, outer, 2, const_f32(c, 9.0f), t);
    float v[] = {1, 2, 3};
    hs_tensor *a[] = {tensor_f32(F32(1, 3), v)};
    run_result r = run(m, a, 1);
    assert_int_equal(r.st, HS_OK);
    assert_int_equal(r.n, 3);
    assert_close(hs_tensor_f32(r.out[0])[0], 9, 0);
    assert_close(hs_tensor_f32(r.out[1])[2], -3, 0);
    assert_memory_equal(r.out[2]->data, v, sizeof v);
    assert_int_equal(r.out[2]->shape.rank, 1);
    done(&r, m, a, 1);
}

static void call_and_placement_custom_calls_are_identities(void **state)
{
    (void)state;
    hs_module *m = hs_module_new("call");
    hs_computation *f = hs_module_add_computation(m, "double", false);
    {
        hs_instruction *p = add_param(f, 0, F32(1, 256));
        f->root = add_op(f, HS_OP_ADD, F32(1, 256), 2, p, p);
    }
    hs_computation *c = hs_module_add_computation(m, "main", true);
    hs_instruction *x = add_param(c, 0, F32(1, 256));
    hs_instruction *call = add_op(c, HS_OP_CALL, F32(1, 256), 1, x);
    hs_instruction_set_called(call, &f, 1);
    hs_instruction *ann = add_op(c, HS_OP_CUSTOM_CALL, F32(1, 256), 1, call);
    ann->custom_call_target = "annotate_device_placement";
    hs_shape host = F32(1, 256);
    host.memory_space = HS_MEMSPACE_HOST;
    hs_instruction *to_host = add_op(c, HS_OP_CUSTOM_CALL, host, 1, ann);
    to_host->custom_call_target = "MoveToHost";
    hs_instruction *back = add_op(c, HS_OP_CUSTOM_CALL, F32(1, 256), 1,
                                  to_host);
    back->custom_call_target = "MoveToDevice";
    c->root = back;
    hs_tensor *a[] = {tensor_fill(F32(1, 256), 3)};
    run_result r = run(m, a, 1);
    assert_int_equal(r.st, HS_OK);
    for (int i = 0; i < 256; i++)
        assert_close(hs_tensor_f32(r.out[0])[i],
                     2 * hs_tensor_f32(a[0])[i], 0);
    assert_int_equal(r.stats.peak_host_bytes, 1024);
    /* Two 1 KiB transfers over the host link. */
    const hs_device_spec *s = hs_device_find("tpu-v5e");
    double want = 1024.0 / s->hbm_bandwidth * 3 /* add: 2 in + 1 out */ +
                  2 * 1024.0 / s->host_link_bandwidth;
    assert_close((float)(r.stats.sim_seconds * 1e9), want * 1e9, 1e-6);
    done(&r, m, a, 1);
}

/* ---- errors --------------------------------------------------------------- */

static void unsupported_opcode_error_names_the_instruction(void **state)
{
    (void)state;
    hs_module *m = hs_module_new("bad");
    hs_computation *c = hs_module_add_computation(m, "main", true);
    hs_instruction *x = add_param(c, 0, F32(1, 4));
    hs_instruction *s = hs_computation_add(c, HS_OP_MAP,
                                           &(hs_shape){.dtype = HS_F32}, &x,
                                           1, "map.7");
    s->shape = F32(1, 4);
    c->root = s;
    hs_tensor *a[] = {tensor_fill(F32(1, 4), 1)};
    run_result r = run(m, a, 1);
    assert_int_equal(r.st, HS_ERR_UNSUPPORTED);
    assert_string_equal(r.err.instruction, "map.7");
    assert_string_equal(r.err.message,
                        "instruction map.7: opcode 'map' cannot be "
                        "executed on the emulated device (map has no "
                        "kernel yet)");
    done(&r, m, a, 1);

    m = hs_module_new("c64");
    c = hs_module_add_computation(m, "main", true);
    hs_instruction *y = add_param(c, 0, shp(HS_C64, 1, 4));
    c->root = add_op(c, HS_OP_ADD, shp(HS_C64, 1, 4), 2, y, y);
    hs_shape bs = shp(HS_C64, 1, 4);
    hs_tensor *b[] = {hs_tensor_new(&bs)};
    r = run(m, b, 1);
    assert_int_equal(r.st, HS_ERR_UNSUPPORTED);
    assert_non_null(strstr(r.err.message, "element type 'c64' (complex"));
    assert_string_equal(r.err.instruction, c->root->name);
    done(&r, m, b, 1);
}

static void argument_count_and_shapes_are_checked(void **state)
{
    (void)state;
    hs_module *m = hs_module_new("args");
    hs_computation *c = hs_module_add_computation(m, "main", true);
    c->root = add_param(c, 0, F32(1, 4));
    run_result r = run(m, NULL, 0);
    assert_int_equal(r.st, HS_ERR_INVALID);
    hs_tensor *a[] = {tensor_fill(F32(1, 5), 1)};
    r = run(m, a, 1);
    assert_int_equal(r.st, HS_ERR_INVALID);
    assert_non_null(strstr(r.err.message, "f32[5]"));
    done(&r, m, a, 1);
}

static void oom_on_a_teaching_preset(void **state)
{
    (void)state;
    hs_module *m = hs_module_new("big");
    hs_computation *c = hs_module_add_computation(m, "main", true);
    /* 8 Mi floats = 32 MiB > teach-16m's 16 MiB. */
    c->root = add_op(c, HS_OP_BROADCAST, F32(2, 2048, 4096), 1,
                     const_f32(c, 1.0f));
    run_result r = run_on(m, "teach-16m", NULL, 0);
    assert_int_equal(r.st, HS_ERR_OOM);
    assert_string_equal(r.err.message,
                        "device out of memory: peak 33554436 bytes exceeds "
                        "HBM capacity 16777216 bytes");
    assert_string_equal(r.err.instruction, c->root->name);
    assert_null(r.out);
    /* The same module fits on teach-64m. */
    r = run_on(m, "teach-64m", NULL, 0);
    assert_int_equal(r.st, HS_OK);
    assert_int_equal(r.stats.peak_device_bytes, 33554436);
    done(&r, m, NULL, 0);
}

/* ---- accounting and the clock ---------------------------------------------- */

static void peak_accounting_for_a_known_chain(void **state)
{
    (void)state;
    hs_module *m = hs_module_new("chain");
    hs_computation *c = hs_module_add_computation(m, "main", true);
    hs_instruction *x = add_param(c, 0, F32(1, 256));          /* 1024 B */
    hs_instruction *a = add_op(c, HS_OP_EXP, F32(1, 256), 1, x);
    hs_instruction *rs = add_op(c, HS_OP_RESHAPE, F32(2, 16, 16), 1, a);
    hs_instruction *b = add_op(c, HS_OP_NEGATE, F32(2, 16, 16), 1, rs);
    hs_instruction *b1 = add_op(c, HS_OP_RESHAPE, F32(1, 256), 1, b);
    hs_instruction *d = add_op(c, HS_OP_ADD, F32(1, 256), 2, b1, x);
    hs_shape el[] = {d->shape, rs->shape};
    hs_shape ts = hs_shape_tuple(m->arena, 2, el);
    c->root = add_op(c, HS_OP_TUPLE, ts, 2, d, rs);
    hs_tensor *args[] = {tensor_fill(F32(1, 256), 5)};
    run_result r = run(m, args, 1);
    assert_int_equal(r.st, HS_OK);
    /* x, a (= rs, an alias), b (= b1) and d are live when d is produced:
     * 4 x 1024 bytes; the root tuple's 16-byte index table comes after b
     * is freed. */
    assert_int_equal(r.stats.peak_device_bytes, 4096);
    assert_int_equal(r.stats.peak_host_bytes, 0);
    assert_int_equal(r.stats.instructions, 6);
    done(&r, m, args, 1);
}

static void simulated_time_equals_roofline_for_one_dot(void **state)
{
    (void)state;
    hs_module *m = hs_module_new("dot");
    hs_computation *c = hs_module_add_computation(m, "main", true);
    hs_instruction *x = add_param(c, 0, F32(2, 8, 1024));
    hs_instruction *w = add_param(c, 1, F32(2, 1024, 1024));
    hs_instruction *d = add_op(c, HS_OP_DOT, F32(2, 8, 1024), 2, x, w);
    d->dot = hs_arena_alloc(m->arena, sizeof *d->dot);
    *d->dot = (hs_dot_dims){0, 1, 0, 1, {0}, {1}, {0}, {1}};
    c->root = d;
    hs_tensor *a[] = {tensor_fill(F32(2, 8, 1024), 1),
                      tensor_fill(F32(2, 1024, 1024), 2)};
    const char *devices[] = {"tpu-v5e", "gpu-h100-sxm", "teach-16m"};
    for (int k = 0; k < 3; k++) {
        const hs_device_spec *s = hs_device_find(devices[k]);
        run_result r = run_on(m, devices[k], a, 2);
        assert_int_equal(r.st, HS_OK);
        double flops = 2.0 * 8 * 1024 * 1024;
        double bytes = (8.0 * 1024 + 1024.0 * 1024 + 8.0 * 1024) * 4;
        double want = fmax(flops / s->peak_flops, bytes / s->hbm_bandwidth);
        assert_true(fabs(r.stats.sim_seconds - want) <= 1e-12 * want);
        assert_true(r.stats.flops == flops);
        assert_true(r.stats.bytes_accessed == bytes);
        assert_true(r.stats.wall_seconds > 0);
        hs_tensors_free(r.out, r.n);
    }
    for (int i = 0; i < 2; i++)
        hs_tensor_free(a[i]);
    hs_module_free(m);
}

static void presets_cite_sources_and_default_exists(void **state)
{
    (void)state;
    int n = 0;
    const hs_device_spec *p = hs_device_presets(&n);
    assert_true(n >= 8);
    for (int i = 0; i < n; i++) {
        assert_non_null(p[i].source);
        assert_true(strlen(p[i].source) > 20);
        assert_true(p[i].hbm_bytes > 0 && p[i].peak_flops > 0 &&
                    p[i].hbm_bandwidth > 0 && p[i].host_link_bandwidth > 0);
        assert_ptr_equal(hs_device_find(p[i].name), &p[i]);
    }
    assert_string_equal(hs_device_default_name(), "tpu-v5e");
    const hs_device_spec *v5e = hs_device_find("tpu-v5e");
    assert_true(v5e->hbm_bytes == 16.0 * 1024 * 1024 * 1024);
    assert_true(v5e->peak_flops == 197e12);
    assert_true(v5e->hbm_bandwidth == 819e9);
    assert_null(hs_device_find("tpu-v99"));
}

/* Not a pass/fail figure: prints the dispatch cost per instruction of a
 * loop of tiny scalar instructions. */
static void per_instruction_overhead_is_small(void **state)
{
    (void)state;
    hs_module *m = counter_loop(200000, NULL);
    run_result r = run(m, NULL, 0);
    assert_int_equal(r.st, HS_OK);
    double per = r.stats.wall_seconds / (double)r.stats.instructions;
    print_message("    %lld instructions, %.1f ns per instruction\n",
                  (long long)r.stats.instructions, per * 1e9);
    assert_true(per < 20e-6); /* generous: sanitizer builds are slow */
    done(&r, m, NULL, 0);
}

/* End to end from HLO text: a loop-carried f32 vector and a decoded array
 * literal, as the parser hands them over. */
static void hlo_text_while_loop_runs_with_parsed_literals(void **state)
{
    (void)state;
    const char *text =
        "HloModule loop\n"
        "cond {\n"
        "  p = (s32[], f32[4]) parameter(0)\n"
        "  i = s32[] get-tuple-element(p), index=0\n"
        "  n = s32[] constant(7)\n"
        "  ROOT lt = pred[] compare(i, n), direction=LT\n"
        "}\n"
        "body {\n"
        "  p = (s32[], f32[4]) parameter(0)\n"
        "  i = s32[] get-tuple-element(p), index=0\n"
        "  v = f32[4] get-tuple-element(p), index=1\n"
        "  one = s32[] constant(1)\n"
        "  i1 = s32[] add(i, one)\n"
        "  c = f32[4] constant({1, 2, 3, 4.5})\n"
        "  v1 = f32[4] add(v, c)\n"
        "  ROOT t = (s32[], f32[4]) tuple(i1, v1)\n"
        "}\n"
        "ENTRY main {\n"
        "  x = f32[4] parameter(0)\n"
        "  z = s32[] constant(0)\n"
        "  t = (s32[], f32[4]) tuple(z, x)\n"
        "  w = (s32[], f32[4]) while(t), condition=cond, body=body\n"
        "  ROOT r = f32[4] get-tuple-element(w), index=1\n"
        "}\n";
    hs_error err;
    hs_module *m = hs_hlo_parse(text, strlen(text), &err);
    if (!m)
        print_error("%s\n", err.message);
    assert_non_null(m);
    float v[] = {0.5f, 0, 0, -1};
    hs_tensor *a[] = {tensor_f32(F32(1, 4), v)};
    run_result r = run(m, a, 1);
    assert_int_equal(r.st, HS_OK);
    const float want[] = {7.5f, 14, 21, 30.5f};
    assert_memory_equal(r.out[0]->data, want, sizeof want);
    done(&r, m, a, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_f32_unary_op_matches_libm),
        cmocka_unit_test(binary_ops_follow_xla_semantics),
        cmocka_unit_test(compare_select_clamp_and_convert),
        cmocka_unit_test(broadcast_transpose_slice_concat_reverse_iota),
        cmocka_unit_test(dynamic_slices_clamp_start_indices),
        cmocka_unit_test(dot_matches_naive_loop_in_every_dimension_order),
        cmocka_unit_test(reduce_sum_and_max_over_any_axes),
        cmocka_unit_test(while_loop_sums_a_counter),
        cmocka_unit_test(while_updates_loop_carried_buffer_in_place),
        cmocka_unit_test(tuple_outputs_are_flattened_in_order),
        cmocka_unit_test(call_and_placement_custom_calls_are_identities),
        cmocka_unit_test(unsupported_opcode_error_names_the_instruction),
        cmocka_unit_test(argument_count_and_shapes_are_checked),
        cmocka_unit_test(oom_on_a_teaching_preset),
        cmocka_unit_test(peak_accounting_for_a_known_chain),
        cmocka_unit_test(simulated_time_equals_roofline_for_one_dot),
        cmocka_unit_test(presets_cite_sources_and_default_exists),
        cmocka_unit_test(hlo_text_while_loop_runs_with_parsed_literals),
        cmocka_unit_test(per_instruction_overhead_is_small),
        cmocka_unit_test(device_exp_is_within_one_ulp),
        cmocka_unit_test(reduce_long_rows_in_lanes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
