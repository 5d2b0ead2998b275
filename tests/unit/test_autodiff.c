/* test_autodiff.c - reverse-mode autodiff (hs_autodiff.h): every
 * differentiable opcode against central finite differences on the device,
 * random compositions of them, a linear layer with mse against its
 * hand-derived gradient, accumulation over several uses, broadcast and
 * reduce adjoints, placement annotations, and the errors for what cannot be
 * differentiated.
 *
 * Finite differences run in f32 on the device: with a step h = 1e-2 on
 * inputs kept away from kinks and singularities, the central difference
 * (f(x+h) - f(x-h)) / 2h is within O(h^2) + O(eps_f32 |f| / h), about
 * 1e-4 relative, of the derivative; the tolerance is 2e-3 relative to the
 * largest gradient entry. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_autodiff.h"
#include "hloscope/hs_builder.h"
#include "hloscope/hs_device.h"
#include "hloscope/hs_hlo_text.h"
#include "hloscope/hs_scan.h"

#define DIMS(...) ((int64_t[]){__VA_ARGS__})
#define NDIMS(...) ((int)(sizeof(DIMS(__VA_ARGS__)) / sizeof(int64_t)))
#define SHAPE(...) hs_shape_make(HS_F32, NDIMS(__VA_ARGS__), DIMS(__VA_ARGS__))

/* ---- helpers ---------------------------------------------------------------- */

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static float uniform(float lo, float hi)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    float u = (float)((rng_state >> 40) & 0xFFFFFF) / 16777216.0f;
    return lo + (hi - lo) * u;
}

static hs_tensor *random_tensor(const hs_shape *s, float lo, float hi)
{
    hs_tensor *t = hs_tensor_new(s);
    float *d = hs_tensor_f32(t);
    for (int64_t k = 0; k < hs_shape_elements(s); k++)
        d[k] = uniform(lo, hi);
    return t;
}

static hs_computation *finish(hs_builder *b, hs_instruction *root)
{
    hs_error err;
    hs_computation *c = hs_builder_finish(b, root, &err);
    if (!c)
        fail_msg("trace failed: %s (%s)", err.message, err.instruction);
    hs_error verr;
    if (hs_module_verify(c->module, &verr) != HS_OK)
        fail_msg("verify: %s: %s", verr.instruction, verr.message);
    return c;
}

static hs_tensor **run(const hs_module *m, hs_tensor **args, int n_args,
                       int *n_out)
{
    hs_tensor **outs = NULL;
    hs_error err;
    if (hs_device_run(m, hs_device_find("tpu-v5e"), args, n_args, &outs,
                      n_out, NULL, &err) != HS_OK)
        fail_msg("run: %s: %s", err.instruction, err.message);
    return outs;
}

/* A graph under test: y = fn(inputs), any f32 array. */
typedef hs_instruction *(*graph_fn)(hs_builder *b, hs_instruction **in);

typedef struct op_case {
    const char *name;
    int n_in;
    hs_shape shapes[3];
    float lo[3], hi[3]; /* input ranges */
    graph_fn fn;
    /* optional: rewrites the inputs (e.g. keeps max operands apart) */
    void (*prepare)(hs_tensor **in);
} op_case;

/* Builds loss = sum(fn(in) * w) for a fixed random w and its gradients,
 * root (loss, grads...). */
static hs_module *grad_module(const op_case *c)
{
    hs_module *m = hs_module_new(c->name);
    hs_builder *b = hs_builder_new(m, "main", true);
    hs_instruction *in[3];
    for (int k = 0; k < c->n_in; k++)
        in[k] = hs_b_parameter(b, k, &c->shapes[k], NULL);
    hs_instruction *y = c->fn(b, in);
    assert_non_null(y);
    int64_t n = hs_shape_elements(&y->shape);
    float *w = malloc(sizeof(float) * (size_t)(n ? n : 1));
    for (int64_t k = 0; k < n; k++)
        w[k] = uniform(0.5f, 1.5f) * (k % 2 ? -1.0f : 1.0f);
    hs_shape ys = hs_shape_make(HS_F32, y->shape.rank, y->shape.dims);
    hs_instruction *wy =
        hs_b_binary(b, HS_OP_MULTIPLY, y, hs_b_const_array(b, &ys, w));
    free(w);
    int64_t all[HS_MAX_RANK];
    for (int k = 0; k < ys.rank; k++)
        all[k] = k;
    hs_instruction *loss = ys.rank ? hs_b_reduce_sum(b, wy, all, ys.rank) : wy;
    hs_instruction *outs[4] = {loss};
    hs_error err;
    if (hs_autodiff_grad(b, loss, in, c->n_in, NULL, outs + 1, &err) != HS_OK)
        fail_msg("%s: autodiff: %s (%s)", c->name, err.message,
                 err.instruction);
    finish(b, hs_b_tuple(b, outs, 1 + c->n_in));
    return m;
}

static float loss_at(const hs_module *m, hs_tensor **in, int n_in)
{
    int n_out = 0;
    hs_tensor **outs = run(m, in, n_in, &n_out);
    float l = hs_tensor_f32(outs[0])[0];
    hs_tensors_free(outs, n_out);
    return l;
}

/* Checks every gradient entry against a central difference. */
static void check_case(const op_case *c)
{
    hs_module *m = grad_module(c);
    hs_tensor *in[3];
    for (int k = 0; k < c->n_in; k++)
        in[k] = random_tensor(&c->shapes[k], c->lo[k], c->hi[k]);
    if (c->prepare)
        c->prepare(in);
    int n_out = 0;
    hs_tensor **outs = run(m, in, c->n_in, &n_out);
    assert_int_equal(n_out, 1 + c->n_in);
    const float h = 1e-2f;
    for (int k = 0; k < c->n_in; k++) {
        const float *g = hs_tensor_f32(outs[1 + k]);
        float *x = hs_tensor_f32(in[k]);
        int64_t n = hs_tensor_elements(in[k]);
        double scale = 1e-3;
        for (int64_t e = 0; e < n; e++)
            scale = fmax(scale, fabs(g[e]));
        for (int64_t e = 0; e < n; e++) {
            float x0 = x[e];
            x[e] = x0 + h;
            double up = loss_at(m, in, c->n_in);
            x[e] = x0 - h;
            double down = loss_at(m, in, c->n_in);
            x[e] = x0;
            double fd = (up - down) / (2.0 * h);
            if (fabs(fd - g[e]) > 2e-3 * scale)
                fail_msg("%s: d loss / d in%d[%lld]: autodiff %.6g, finite "
                         "difference %.6g",
                         c->name, k, (long long)e, g[e], fd);
        }
    }
    hs_tensors_free(outs, n_out);
    for (int k = 0; k < c->n_in; k++)
        hs_tensor_free(in[k]);
    hs_module_free(m);
}

/* ---- per-opcode cases --------------------------------------------------------- */

#define UNARY(op)                                                          \
    static hs_instruction *g_##op(hs_builder *b, hs_instruction **in)      \
    {                                                                      \
        return hs_b_unary(b, HS_OP_##op, in[0]);                           \
    }
UNARY(ABS)
UNARY(NEGATE)
UNARY(EXP)
UNARY(EXPM1)
UNARY(LOG)
UNARY(LOG1P)
UNARY(SQRT)
UNARY(RSQRT)
UNARY(TANH)
UNARY(LOGISTIC)
UNARY(ERF)
UNARY(SIN)
UNARY(COS)

#define BINARY(op)                                                         \
    static hs_instruction *g_##op(hs_builder *b, hs_instruction **in)      \
    {                                                                      \
        return hs_b_binary(b, HS_OP_##op, in[0], in[1]);                   \
    }
BINARY(ADD)
BINARY(SUBTRACT)
BINARY(MULTIPLY)
BINARY(DIVIDE)
BINARY(MAXIMUM)
BINARY(MINIMUM)
BINARY(POWER)

/* |x| away from 0 so that abs has no kink within h. */
static void away_from_zero(hs_tensor **in)
{
    float *x = hs_tensor_f32(in[0]);
    for (int64_t k = 0; k < hs_tensor_elements(in[0]); k++)
        if (fabsf(x[k]) < 0.2f)
            x[k] = x[k] < 0 ? -0.2f - x[k] : 0.2f + x[k];
}

/* max/min operands at least 0.2 apart, so no tie is within h. */
static void apart(hs_tensor **in)
{
    float *x = hs_tensor_f32(in[0]), *z = hs_tensor_f32(in[1]);
    for (int64_t k = 0; k < hs_tensor_elements(in[0]); k++)
        if (fabsf(x[k] - z[k]) < 0.2f)
            z[k] = x[k] + (k % 2 ? 0.3f : -0.3f);
}

static hs_instruction *g_select(hs_builder *b, hs_instruction **in)
{
    hs_instruction *p = hs_b_compare(b, HS_DIR_GT, in[2],
                                     hs_b_broadcast(b, hs_b_const_f32(b, 0),
                                                    &in[2]->shape, NULL, 0));
    return hs_b_select(b, p, in[0], in[1]);
}

/* clamp(lo, x, hi) with x = in[0], lo = in[1], hi = in[2]; the builder has
 * no clamp op, so it goes in through the IR. */
static hs_instruction *g_clamp(hs_builder *b, hs_instruction **in)
{
    hs_instruction *ops[3] = {in[1], in[0], in[2]};
    return hs_computation_add(hs_builder_computation(b), HS_OP_CLAMP,
                              &in[0]->shape, ops, 3, NULL);
}

/* x spread over [-2, 2]; lo around -0.5, hi around 0.5, all 0.2 apart. */
static void clamp_inputs(hs_tensor **in)
{
    float *x = hs_tensor_f32(in[0]), *lo = hs_tensor_f32(in[1]);
    float *hi = hs_tensor_f32(in[2]);
    for (int64_t k = 0; k < hs_tensor_elements(in[0]); k++) {
        lo[k] = -0.5f;
        hi[k] = 0.5f;
        float v = x[k];
        if (fabsf(v - lo[k]) < 0.2f || fabsf(v - hi[k]) < 0.2f)
            x[k] = (k % 3 == 0) ? -1.2f : (k % 3 == 1) ? 0.0f : 1.3f;
    }
}

static hs_instruction *g_broadcast(hs_builder *b, hs_instruction **in)
{
    /* f32[3,2] -> f32[2,4,3]: a transposing broadcast that adds an axis */
    hs_shape s = SHAPE(2, 4, 3);
    return hs_b_broadcast(b, in[0], &s, DIMS(2, 0), 2);
}

static hs_instruction *g_reshape(hs_builder *b, hs_instruction **in)
{
    return hs_b_reshape(b, in[0], 3, DIMS(3, 2, 2));
}

static hs_instruction *g_transpose(hs_builder *b, hs_instruction **in)
{
    return hs_b_transpose(b, in[0], DIMS(2, 0, 1));
}

static hs_instruction *g_slice(hs_builder *b, hs_instruction **in)
{
    /* f32[5,7] rows 1..5 step 2, columns 1..7 step 3 */
    return hs_b_slice(b, in[0], DIMS(1, 1), DIMS(5, 7), DIMS(2, 3));
}

static hs_instruction *g_slice_contiguous(hs_builder *b, hs_instruction **in)
{
    return hs_b_slice(b, in[0], DIMS(1, 0), DIMS(4, 5), NULL);
}

static hs_instruction *g_concatenate(hs_builder *b, hs_instruction **in)
{
    hs_instruction *xs[3] = {in[0], in[1], in[0]};
    return hs_b_concatenate(b, xs, 3, 1);
}

static hs_instruction *g_reverse(hs_builder *b, hs_instruction **in)
{
    hs_instruction *x = in[0];
    hs_instruction *r = hs_computation_add(hs_builder_computation(b),
                                           HS_OP_REVERSE, &x->shape, &x, 1,
                                           NULL);
    hs_instruction_set_dims(r, DIMS(1), 1);
    return hs_b_binary(b, HS_OP_MULTIPLY, r, x);
}

static hs_instruction *g_dynamic_slice(hs_builder *b, hs_instruction **in)
{
    hs_instruction *st[2] = {hs_b_const_s32(b, 1), hs_b_const_s32(b, 2)};
    return hs_b_dynamic_slice(b, in[0], st, DIMS(2, 3));
}

static hs_instruction *g_dynamic_update_slice(hs_builder *b,
                                              hs_instruction **in)
{
    hs_instruction *st[2] = {hs_b_const_s32(b, 2), hs_b_const_s32(b, 1)};
    hs_instruction *y = hs_b_dynamic_update_slice(b, in[0], in[1], st);
    return hs_b_binary(b, HS_OP_MULTIPLY, y, y);
}

static hs_instruction *g_matmul(hs_builder *b, hs_instruction **in)
{
    return hs_b_matmul_nt(b, in[0], in[1]); /* [2,3,4] x [5,4] */
}

static hs_instruction *g_batch_dot(hs_builder *b, hs_instruction **in)
{
    /* [2,3,4] x [2,5,4] -> [2,3,5], like attention scores */
    hs_dot_dims d = {.n_lhs_batch = 1, .n_rhs_batch = 1,
                     .n_lhs_contracting = 1, .n_rhs_contracting = 1};
    d.lhs_batch[0] = 0;
    d.rhs_batch[0] = 0;
    d.lhs_contracting[0] = 2;
    d.rhs_contracting[0] = 2;
    return hs_b_dot(b, in[0], in[1], &d);
}

static hs_instruction *g_odd_dot(hs_builder *b, hs_instruction **in)
{
    /* lhs [4,2,3] rhs [3,5,2,4]: batch lhs 1 / rhs 2, contracting
     * lhs {2,0} / rhs {0,3}: dimensions in unusual orders */
    hs_dot_dims d = {.n_lhs_batch = 1, .n_rhs_batch = 1,
                     .n_lhs_contracting = 2, .n_rhs_contracting = 2};
    d.lhs_batch[0] = 1;
    d.rhs_batch[0] = 2;
    d.lhs_contracting[0] = 2;
    d.rhs_contracting[0] = 0;
    d.lhs_contracting[1] = 0;
    d.rhs_contracting[1] = 3;
    return hs_b_dot(b, in[0], in[1], &d);
}

static hs_instruction *g_reduce_sum(hs_builder *b, hs_instruction **in)
{
    hs_instruction *r = hs_b_reduce_sum(b, in[0], DIMS(0, 2), 2);
    return hs_b_binary(b, HS_OP_MULTIPLY, r, r);
}

static hs_instruction *g_reduce_max(hs_builder *b, hs_instruction **in)
{
    return hs_b_reduce_max(b, in[0], DIMS(1), 1);
}

static hs_instruction *g_reduce_min(hs_builder *b, hs_instruction **in)
{
    hs_instruction *init = hs_b_const_f32(b, INFINITY);
    return hs_b_reduce(b, in[0], init, DIMS(0), 1, HS_OP_MINIMUM);
}

static hs_instruction *g_tuple(hs_builder *b, hs_instruction **in)
{
    hs_instruction *xs[3] = {in[0], hs_b_unary(b, HS_OP_TANH, in[1]), in[0]};
    hs_instruction *t = hs_b_tuple(b, xs, 3);
    hs_instruction *a = hs_b_get_tuple_element(b, t, 0);
    hs_instruction *c = hs_b_get_tuple_element(b, t, 1);
    hs_instruction *d = hs_b_get_tuple_element(b, t, 2);
    return hs_b_binary(b, HS_OP_MULTIPLY, hs_b_binary(b, HS_OP_ADD, a, d), c);
}

static hs_instruction *placement(hs_builder *b, hs_instruction *x,
                                 bool host)
{
    hs_instruction *y = hs_b_custom_call(b, "annotate_device_placement", &x,
                                         1, &x->shape);
    y->frontend_attributes = hs_arena_strdup(
        hs_builder_module(b)->arena,
        host ? "_xla_buffer_placement=\"pinned_host\""
             : "_xla_buffer_placement=\"device\"");
    return y;
}

static hs_instruction *g_offload(hs_builder *b, hs_instruction **in)
{
    hs_instruction *h = hs_b_unary(b, HS_OP_SIN, in[0]);
    hs_instruction *back = placement(b, placement(b, h, true), false);
    return hs_b_binary(b, HS_OP_MULTIPLY, back, in[0]);
}

static hs_instruction *g_convert(hs_builder *b, hs_instruction **in)
{
    /* f32 -> f32 convert, and an integer path that carries no gradient */
    hs_instruction *c = hs_b_convert(b, in[0], HS_F32);
    hs_instruction *i = hs_b_convert(b, hs_b_convert(b, in[0], HS_S32), HS_F32);
    return hs_b_binary(b, HS_OP_MULTIPLY, c, hs_b_binary(b, HS_OP_ADD, i, c));
}

#define S(...) SHAPE(__VA_ARGS__)

static void every_differentiable_op_matches_finite_differences(void **state)
{
    (void)state;
    const op_case cases[] = {
        {"abs", 1, {S(2, 3)}, {-2}, {2}, g_ABS, away_from_zero},
        {"negate", 1, {S(2, 3)}, {-2}, {2}, g_NEGATE, NULL},
        {"exponential", 1, {S(2, 3)}, {-1}, {1}, g_EXP, NULL},
        {"exponential-minus-one", 1, {S(2, 3)}, {-1}, {1}, g_EXPM1, NULL},
        {"log", 1, {S(2, 3)}, {0.5f}, {2}, g_LOG, NULL},
        {"log-plus-one", 1, {S(2, 3)}, {-0.4f}, {1}, g_LOG1P, NULL},
        {"sqrt", 1, {S(2, 3)}, {0.5f}, {2}, g_SQRT, NULL},
        {"rsqrt", 1, {S(2, 3)}, {0.5f}, {2}, g_RSQRT, NULL},
        {"tanh", 1, {S(2, 3)}, {-2}, {2}, g_TANH, NULL},
        {"logistic", 1, {S(2, 3)}, {-3}, {3}, g_LOGISTIC, NULL},
        {"erf", 1, {S(2, 3)}, {-2}, {2}, g_ERF, NULL},
        {"sine", 1, {S(2, 3)}, {-3}, {3}, g_SIN, NULL},
        {"cosine", 1, {S(2, 3)}, {-3}, {3}, g_COS, NULL},
        {"convert", 1, {S(2, 3)}, {-2}, {2}, g_convert, NULL},
        {"add", 2, {S(2, 3), S(2, 3)}, {-1, -1}, {1, 1}, g_ADD, NULL},
        {"subtract", 2, {S(2, 3), S(2, 3)}, {-1, -1}, {1, 1}, g_SUBTRACT, NULL},
        {"multiply", 2, {S(2, 3), S(2, 3)}, {-1, -1}, {1, 1}, g_MULTIPLY, NULL},
        {"divide", 2, {S(2, 3), S(2, 3)}, {-1, 0.5f}, {1, 2}, g_DIVIDE, NULL},
        {"maximum", 2, {S(2, 3), S(2, 3)}, {-1, -1}, {1, 1}, g_MAXIMUM, apart},
        {"minimum", 2, {S(2, 3), S(2, 3)}, {-1, -1}, {1, 1}, g_MINIMUM, apart},
        {"power", 2, {S(2, 3), S(2, 3)}, {0.5f, -1.5f}, {2, 2}, g_POWER, NULL},
        {"select", 3, {S(2, 3), S(2, 3), S(2, 3)}, {-1, -1, -1}, {1, 1, 1},
         g_select, NULL},
        {"clamp", 3, {S(2, 3), S(2, 3), S(2, 3)}, {-2, -1, -1}, {2, 1, 1},
         g_clamp, clamp_inputs},
        {"broadcast", 1, {S(3, 2)}, {-1}, {1}, g_broadcast, NULL},
        {"reshape", 1, {S(2, 6)}, {-1}, {1}, g_reshape, NULL},
        {"transpose", 1, {S(2, 3, 2)}, {-1}, {1}, g_transpose, NULL},
        {"slice (strided)", 1, {S(5, 7)}, {-1}, {1}, g_slice, NULL},
        {"slice", 1, {S(5, 5)}, {-1}, {1}, g_slice_contiguous, NULL},
        {"concatenate", 2, {S(2, 3), S(2, 2)}, {-1, -1}, {1, 1}, g_concatenate,
         NULL},
        {"reverse", 1, {S(2, 4)}, {-1}, {1}, g_reverse, NULL},
        {"dynamic-slice", 1, {S(4, 5)}, {-1}, {1}, g_dynamic_slice, NULL},
        {"dynamic-update-slice", 2, {S(4, 5), S(2, 3)}, {-1, -1}, {1, 1},
         g_dynamic_update_slice, NULL},
        {"dot (linear)", 2, {S(2, 3, 4), S(5, 4)}, {-1, -1}, {1, 1}, g_matmul,
         NULL},
        {"dot (batch)", 2, {S(2, 3, 4), S(2, 5, 4)}, {-1, -1}, {1, 1},
         g_batch_dot, NULL},
        {"dot (permuted dimensions)", 2, {S(4, 2, 3), S(3, 5, 2, 4)}, {-1, -1},
         {1, 1}, g_odd_dot, NULL},
        {"reduce (sum)", 1, {S(2, 3, 2)}, {-1}, {1}, g_reduce_sum, NULL},
        {"reduce (max)", 1, {S(3, 4)}, {-1}, {1}, g_reduce_max, NULL},
        {"reduce (min)", 1, {S(3, 4)}, {-1}, {1}, g_reduce_min, NULL},
        {"tuple, get-tuple-element", 2, {S(2, 3), S(2, 3)}, {-1, -1}, {1, 1},
         g_tuple, NULL},
        {"custom-call placement", 1, {S(2, 3)}, {-1}, {1}, g_offload, NULL},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
        check_case(&cases[k]);
}

/* ---- random graphs -------------------------------------------------------------- */

/* Chains of smooth ops on two inputs, drawn at random: each step applies a
 * unary op to a live value or combines two live values. */
static int random_seed_for_graph;

static hs_instruction *g_random(hs_builder *b, hs_instruction **in)
{
    static const hs_opcode unary[] = {HS_OP_TANH, HS_OP_LOGISTIC, HS_OP_SIN,
                                      HS_OP_ERF, HS_OP_NEGATE, HS_OP_EXP};
    static const hs_opcode binary[] = {HS_OP_ADD, HS_OP_SUBTRACT,
                                       HS_OP_MULTIPLY};
    hs_instruction *live[16] = {in[0], in[1]};
    int n = 2;
    uint64_t s = (uint64_t)random_seed_for_graph * 2654435761u + 1;
    for (int step = 0; step < 10; step++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        int pick = (int)((s >> 33) % 3);
        int a = (int)((s >> 40) % (uint64_t)n);
        int c = (int)((s >> 48) % (uint64_t)n);
        hs_instruction *y;
        if (pick == 0) {
            hs_opcode op = unary[(s >> 20) % 6];
            /* exp only of a bounded value */
            y = hs_b_unary(b, op, op == HS_OP_EXP
                                      ? hs_b_unary(b, HS_OP_TANH, live[a])
                                      : live[a]);
        } else if (pick == 1) {
            y = hs_b_binary(b, binary[(s >> 20) % 3], live[a], live[c]);
        } else {
            /* a row sum broadcast back: reduce and broadcast adjoints */
            hs_instruction *r = hs_b_reduce_sum(b, live[a], DIMS(1), 1);
            y = hs_b_binary(b, HS_OP_MULTIPLY, live[c],
                            hs_b_broadcast(b, hs_b_unary(b, HS_OP_TANH, r),
                                           &live[c]->shape, DIMS(0), 1));
        }
        live[n < 16 ? n++ : 2 + step % 14] = y;
    }
    return hs_b_binary(b, HS_OP_ADD, live[n - 1], live[n - 2]);
}

static void random_graphs_match_finite_differences(void **state)
{
    (void)state;
    for (int g = 0; g < 12; g++) {
        random_seed_for_graph = g;
        char name[32];
        snprintf(name, sizeof name, "random-%d", g);
        op_case c = {name, 2, {S(2, 3), S(2, 3)}, {-1, -1}, {1, 1}, g_random,
                     NULL};
        check_case(&c);
    }
}

/* ---- hand-derived gradients -------------------------------------------------------- */

/* y = x W^T + b, L = mean((y - t)^2):
 *   dL/dW = 2/N (y - t)^T x,   dL/db = 2/N sum_rows(y - t),   N = B*O */
static void linear_mse_matches_hand_derived_gradient(void **state)
{
    (void)state;
    enum { B = 3, I = 4, O = 2 };
    hs_shape xs = SHAPE(B, I), ws = SHAPE(O, I), bs = SHAPE(O), ts = SHAPE(B, O);
    hs_module *m = hs_module_new("linear_mse");
    hs_builder *b = hs_builder_new(m, "main", true);
    hs_instruction *x = hs_b_parameter(b, 0, &xs, "x");
    hs_instruction *w = hs_b_parameter(b, 1, &ws, "w");
    hs_instruction *bias = hs_b_parameter(b, 2, &bs, "b");
    hs_instruction *t = hs_b_parameter(b, 3, &ts, "t");
    hs_instruction *y = hs_b_binary(b, HS_OP_ADD, hs_b_matmul_nt(b, x, w),
                                    hs_b_broadcast_trailing(b, bias, &ts));
    hs_instruction *d = hs_b_binary(b, HS_OP_SUBTRACT, y, t);
    hs_instruction *loss = hs_b_binary(
        b, HS_OP_DIVIDE,
        hs_b_reduce_sum(b, hs_b_binary(b, HS_OP_MULTIPLY, d, d), DIMS(0, 1), 2),
        hs_b_const_f32(b, (float)(B * O)));
    hs_instruction *wrt[2] = {w, bias}, *outs[3] = {loss};
    hs_error err;
    assert_int_equal(hs_autodiff_grad(b, loss, wrt, 2, NULL, outs + 1, &err),
                     HS_OK);
    finish(b, hs_b_tuple(b, outs, 3));

    hs_tensor *in[4] = {random_tensor(&xs, -1, 1), random_tensor(&ws, -1, 1),
                        random_tensor(&bs, -1, 1), random_tensor(&ts, -1, 1)};
    int n_out;
    hs_tensor **o = run(m, in, 4, &n_out);
    const float *X = hs_tensor_f32(in[0]), *W = hs_tensor_f32(in[1]);
    const float *Bv = hs_tensor_f32(in[2]), *T = hs_tensor_f32(in[3]);
    double r[B][O], loss_ref = 0;
    for (int i = 0; i < B; i++)
        for (int j = 0; j < O; j++) {
            double s = Bv[j];
            for (int k = 0; k < I; k++)
                s += (double)X[i * I + k] * W[j * I + k];
            r[i][j] = s - T[i * O + j];
            loss_ref += r[i][j] * r[i][j] / (B * O);
        }
    assert_true(fabs(hs_tensor_f32(o[0])[0] - loss_ref) < 1e-5 * (1 + loss_ref));
    const float *gw = hs_tensor_f32(o[1]), *gb = hs_tensor_f32(o[2]);
    for (int j = 0; j < O; j++) {
        double sb = 0;
        for (int i = 0; i < B; i++)
            sb += 2.0 / (B * O) * r[i][j];
        assert_true(fabs(gb[j] - sb) < 1e-5);
        for (int k = 0; k < I; k++) {
            double s = 0;
            for (int i = 0; i < B; i++)
                s += 2.0 / (B * O) * r[i][j] * X[i * I + k];
            if (fabs(gw[j * I + k] - s) > 1e-5)
                fail_msg("dL/dW[%d][%d] = %g, expected %g", j, k,
                         gw[j * I + k], s);
        }
    }
    hs_tensors_free(o, n_out);
    for (int k = 0; k < 4; k++)
        hs_tensor_free(in[k]);
    hs_module_free(m);
}

/* Runs a one-input module (loss, grad) on x and returns the gradient. */
static hs_tensor *gradient_of(hs_module *m, hs_tensor *x, float *loss)
{
    int n_out;
    hs_tensor **o = run(m, &x, 1, &n_out);
    if (loss)
        *loss = hs_tensor_f32(o[0])[0];
    hs_tensor *g = o[1];
    o[1] = NULL;
    hs_tensors_free(o, n_out);
    return g;
}

/* L = sum(x*x + x + exp(0)*x): x reaches the loss along four paths, whose
 * cotangents add up: dL/dx = 2x + 2. */
static void multiple_uses_accumulate(void **state)
{
    (void)state;
    hs_shape s = SHAPE(2, 3);
    hs_module *m = hs_module_new("uses");
    hs_builder *b = hs_builder_new(m, "main", true);
    hs_instruction *x = hs_b_parameter(b, 0, &s, "x");
    hs_instruction *y = hs_b_binary(
        b, HS_OP_ADD,
        hs_b_binary(b, HS_OP_ADD, hs_b_binary(b, HS_OP_MULTIPLY, x, x), x), x);
    hs_instruction *loss = hs_b_reduce_sum(b, y, DIMS(0, 1), 2);
    hs_instruction *outs[2] = {loss};
    hs_error err;
    assert_int_equal(hs_autodiff_grad(b, loss, &x, 1, NULL, outs + 1, &err),
                     HS_OK);
    finish(b, hs_b_tuple(b, outs, 2));
    hs_tensor *xv = random_tensor(&s, -1, 1);
    hs_tensor *g = gradient_of(m, xv, NULL);
    for (int k = 0; k < 6; k++)
        assert_float_equal(hs_tensor_f32(g)[k],
                           2 * hs_tensor_f32(xv)[k] + 2, 1e-6);
    hs_tensor_free(g);
    hs_tensor_free(xv);
    hs_module_free(m);
}

/* The same instruction listed twice gets the same gradient; an input the
 * loss does not use gets zeros. */
static void repeated_and_unused_inputs(void **state)
{
    (void)state;
    hs_shape s = SHAPE(3);
    hs_module *m = hs_module_new("unused");
    hs_builder *b = hs_builder_new(m, "main", true);
    hs_instruction *x = hs_b_parameter(b, 0, &s, "x");
    hs_instruction *u = hs_b_parameter(b, 1, &s, "unused");
    hs_instruction *loss = hs_b_reduce_sum(
        b, hs_b_binary(b, HS_OP_MULTIPLY, x, x), DIMS(0), 1);
    hs_instruction *wrt[3] = {x, u, x}, *outs[4] = {loss};
    hs_error err;
    assert_int_equal(hs_autodiff_grad(b, loss, wrt, 3, NULL, outs + 1, &err),
                     HS_OK);
    finish(b, hs_b_tuple(b, outs, 4));
    float xv[3] = {1, -2, 3};
    hs_tensor *in[2] = {hs_tensor_new(&s), hs_tensor_new(&s)};
    memcpy(in[0]->data, xv, sizeof xv);
    int n_out;
    hs_tensor **o = run(m, in, 2, &n_out);
    for (int k = 0; k < 3; k++) {
        assert_float_equal(hs_tensor_f32(o[1])[k], 2 * xv[k], 0);
        assert_float_equal(hs_tensor_f32(o[2])[k], 0, 0);
        assert_float_equal(hs_tensor_f32(o[3])[k], 2 * xv[k], 0);
    }
    hs_tensors_free(o, n_out);
    hs_tensor_free(in[0]);
    hs_tensor_free(in[1]);
    hs_module_free(m);
}

/* L = sum(broadcast(v, [4,3] along dim 1) * W): dL/dv[j] = sum_i W[i][j].
 * L = sum(reduce_sum(X, dim 1) * w): dL/dX[i][j] = w[i]. */
static void broadcast_and_reduce_adjoints(void **state)
{
    (void)state;
    float W[12], w[4];
    for (int k = 0; k < 12; k++)
        W[k] = (float)(k + 1) * 0.25f;
    for (int k = 0; k < 4; k++)
        w[k] = (float)k - 1.5f;
    hs_shape vs = SHAPE(3), ms = SHAPE(4, 3), ws = SHAPE(4);

    hs_module *m = hs_module_new("bcast");
    hs_builder *b = hs_builder_new(m, "main", true);
    hs_instruction *v = hs_b_parameter(b, 0, &vs, "v");
    hs_instruction *y = hs_b_binary(b, HS_OP_MULTIPLY,
                                    hs_b_broadcast(b, v, &ms, DIMS(1), 1),
                                    hs_b_const_array(b, &ms, W));
    hs_instruction *loss = hs_b_reduce_sum(b, y, DIMS(0, 1), 2);
    hs_instruction *outs[2] = {loss};
    hs_error err;
    assert_int_equal(hs_autodiff_grad(b, loss, &v, 1, NULL, outs + 1, &err),
                     HS_OK);
    finish(b, hs_b_tuple(b, outs, 2));
    hs_tensor *vv = random_tensor(&vs, -1, 1);
    hs_tensor *g = gradient_of(m, vv, NULL);
    for (int j = 0; j < 3; j++)
        assert_float_equal(hs_tensor_f32(g)[j],
                           W[j] + W[3 + j] + W[6 + j] + W[9 + j], 1e-5);
    hs_tensor_free(g);
    hs_tensor_free(vv);
    hs_module_free(m);

    m = hs_module_new("reduce");
    b = hs_builder_new(m, "main", true);
    hs_instruction *X = hs_b_parameter(b, 0, &ms, "X");
    hs_instruction *r = hs_b_reduce_sum(b, X, DIMS(1), 1);
    loss = hs_b_reduce_sum(
        b, hs_b_binary(b, HS_OP_MULTIPLY, r, hs_b_const_array(b, &ws, w)),
        DIMS(0), 1);
    outs[0] = loss;
    assert_int_equal(hs_autodiff_grad(b, loss, &X, 1, NULL, outs + 1, &err),
                     HS_OK);
    finish(b, hs_b_tuple(b, outs, 2));
    hs_tensor *xv = random_tensor(&ms, -1, 1);
    g = gradient_of(m, xv, NULL);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++)
            assert_float_equal(hs_tensor_f32(g)[i * 3 + j], w[i], 0);
    hs_tensor_free(g);
    hs_tensor_free(xv);
    hs_module_free(m);
}

/* max(x, x) ties everywhere: each operand gets half, the sum is exact.
 * reduce-max over a row with a tie splits the cotangent between them. */
static void ties_split_the_cotangent(void **state)
{
    (void)state;
    hs_shape s = SHAPE(1, 4);
    hs_module *m = hs_module_new("ties");
    hs_builder *b = hs_builder_new(m, "main", true);
    hs_instruction *x = hs_b_parameter(b, 0, &s, "x");
    hs_instruction *mx = hs_b_reduce_max(b, x, DIMS(1), 1);
    hs_instruction *loss = hs_b_reduce_sum(b, mx, DIMS(0), 1);
    hs_instruction *outs[2] = {loss};
    hs_error err;
    assert_int_equal(hs_autodiff_grad(b, loss, &x, 1, NULL, outs + 1, &err),
                     HS_OK);
    finish(b, hs_b_tuple(b, outs, 2));
    float v[4] = {1, 3, -2, 3};
    hs_tensor *xv = hs_tensor_new(&s);
    memcpy(xv->data, v, sizeof v);
    hs_tensor *g = gradient_of(m, xv, NULL);
    float want[4] = {0, 0.5f, 0, 0.5f};
    for (int k = 0; k < 4; k++)
        assert_float_equal(hs_tensor_f32(g)[k], want[k], 0);
    hs_tensor_free(g);
    hs_tensor_free(xv);
    hs_module_free(m);
}

/* ---- what the backward pass looks like ---------------------------------------------- */

static hs_instruction *find_op(const hs_computation *c, hs_opcode op,
                               const char *op_name_prefix, int skip)
{
    for (int k = 0; k < c->n_instrs; k++) {
        hs_instruction *i = c->instrs[k];
        if (i->opcode == op &&
            (!op_name_prefix ||
             (i->op_name && strncmp(i->op_name, op_name_prefix,
                                    strlen(op_name_prefix)) == 0)) &&
            skip-- == 0)
            return i;
    }
    return NULL;
}

/* Gradient instructions carry op_name "backward/<forward op_name>". */
static void gradient_ops_are_scoped_under_backward(void **state)
{
    (void)state;
    hs_shape xs = SHAPE(2, 4), ws = SHAPE(3, 4);
    hs_module *m = hs_module_new("scopes");
    hs_builder *b = hs_builder_new(m, "main", true);
    hs_instruction *x = hs_b_parameter(b, 0, &xs, "x");
    hs_instruction *w = hs_b_parameter(b, 1, &ws, "w");
    hs_builder_push_scope(b, "layers.0");
    hs_builder_push_scope(b, "linear");
    hs_instruction *y = hs_b_matmul_nt(b, x, w);
    hs_builder_pop_scope(b);
    hs_builder_pop_scope(b);
    hs_instruction *loss = hs_b_reduce_sum(b, y, DIMS(0, 1), 2);
    hs_instruction *outs[2] = {loss};
    hs_error err;
    assert_int_equal(hs_autodiff_grad(b, loss, &w, 1, NULL, outs + 1, &err),
                     HS_OK);
    hs_computation *c = finish(b, hs_b_tuple(b, outs, 2));
    /* the forward dot and the one gradient dot (w only) */
    hs_instruction *gd = find_op(c, HS_OP_DOT, "backward/", 0);
    assert_non_null(gd);
    assert_string_equal(gd->op_name, "backward/layers.0/linear");
    assert_null(find_op(c, HS_OP_DOT, "backward/", 1));
    hs_module_free(m);
}

/* y = place_to_device(place_to_host(h)): the gradient of the offloaded
 * value is annotated back to the device, once. */
static void placement_gradient_goes_to_device(void **state)
{
    (void)state;
    hs_shape s = SHAPE(2, 3);
    hs_module *m = hs_module_new("offload");
    hs_builder *b = hs_builder_new(m, "main", true);
    hs_instruction *x = hs_b_parameter(b, 0, &s, "x");
    hs_instruction *in[1] = {x};
    hs_instruction *y = g_offload(b, in);
    hs_instruction *loss = hs_b_reduce_sum(b, y, DIMS(0, 1), 2);
    hs_instruction *outs[2] = {loss};
    hs_error err;
    int n_before = hs_builder_computation(b)->n_instrs;
    assert_int_equal(hs_autodiff_grad(b, loss, &x, 1, NULL, outs + 1, &err),
                     HS_OK);
    hs_computation *c = finish(b, hs_b_tuple(b, outs, 2));
    int host = 0, device = 0;
    for (int k = n_before; k < c->n_instrs; k++) {
        hs_instruction *i = c->instrs[k];
        if (i->opcode != HS_OP_CUSTOM_CALL)
            continue;
        assert_string_equal(i->custom_call_target, "annotate_device_placement");
        if (strstr(i->frontend_attributes, "pinned_host"))
            host++;
        else
            device++;
    }
    assert_int_equal(host, 0);
    assert_int_equal(device, 1);
    char *text = hs_hlo_print(m);
    assert_non_null(strstr(text, "_xla_buffer_placement=\"device\""));
    free(text);
    hs_module_free(m);
}

/* hs_autodiff_computation differentiates a computation of another module
 * (inlined with its reducers) and returns its value too. */
static void value_and_grad_of_another_module(void **state)
{
    (void)state;
    hs_shape s = SHAPE(2, 3);
    hs_module *fm = hs_module_new("forward");
    hs_builder *fb = hs_builder_new(fm, "f", true);
    hs_instruction *a = hs_b_parameter(fb, 0, &s, "a");
    hs_instruction *c = hs_b_parameter(fb, 1, &s, "c");
    hs_instruction *r = hs_b_reduce_max(
        fb, hs_b_binary(fb, HS_OP_MULTIPLY, a, c), DIMS(0, 1), 2);
    hs_computation *f = finish(fb, r);

    hs_module *m = hs_module_new("vg");
    hs_builder *b = hs_builder_new(m, "main", true);
    hs_instruction *p[2] = {hs_b_parameter(b, 0, &s, "a"),
                            hs_b_parameter(b, 1, &s, "c")};
    hs_instruction *value, *grads[1];
    hs_error err;
    assert_int_equal(hs_autodiff_computation(b, f, p, 2, (int[]){1}, 1, NULL,
                                             &value, grads, &err),
                     HS_OK);
    hs_instruction *outs[2] = {value, grads[0]};
    finish(b, hs_b_tuple(b, outs, 2));
    float av[6] = {1, 2, 3, 4, 5, 6}, cv[6] = {1, 1, 1, 1, 2, 1};
    hs_tensor *in[2] = {hs_tensor_new(&s), hs_tensor_new(&s)};
    memcpy(in[0]->data, av, sizeof av);
    memcpy(in[1]->data, cv, sizeof cv);
    int n_out;
    hs_tensor **o = run(m, in, 2, &n_out);
    assert_float_equal(hs_tensor_f32(o[0])[0], 10, 0);
    for (int k = 0; k < 6; k++)
        assert_float_equal(hs_tensor_f32(o[1])[k], k == 4 ? 5 : 0, 0);
    hs_tensors_free(o, n_out);
    hs_tensor_free(in[0]);
    hs_tensor_free(in[1]);
    hs_module_free(m);
    hs_module_free(fm);
}

/* ---- errors -------------------------------------------------------------------------- */

static void expect_grad_error(hs_builder *b, hs_instruction *loss,
                              hs_instruction *x, hs_status status,
                              const char *needle, const char *instruction)
{
    hs_instruction *g = (hs_instruction *)1;
    hs_error err;
    assert_int_equal(hs_autodiff_grad(b, loss, &x, 1, NULL, &g, &err),
                     status);
    assert_null(g);
    if (!strstr(err.message, needle))
        fail_msg("error '%s' does not mention '%s'", err.message, needle);
    if (instruction)
        assert_string_equal(err.instruction, instruction);
    /* the error is the builder's sticky error too */
    assert_false(hs_builder_ok(b));
    hs_error ferr;
    assert_null(hs_builder_finish(b, loss, &ferr));
    assert_non_null(strstr(ferr.message, needle));
}

static void non_differentiable_op_is_a_clear_error(void **state)
{
    (void)state;
    hs_shape s = SHAPE(3);
    hs_module *m = hs_module_new("rem");
    hs_builder *b = hs_builder_new(m, "main", true);
    hs_instruction *x = hs_b_parameter(b, 0, &s, "x");
    hs_builder_push_scope(b, "layers.0/graph/r");
    hs_instruction *r = hs_b_binary(b, HS_OP_REMAINDER, x,
                                    hs_b_broadcast(b, hs_b_const_f32(b, 0.7f),
                                                   &s, NULL, 0));
    hs_builder_pop_scope(b);
    hs_instruction *loss = hs_b_reduce_sum(b, r, DIMS(0), 1);
    char want[160];
    snprintf(want, sizeof want,
             "no gradient rule for remainder (instruction %s, op_name "
             "layers.0/graph/r)",
             r->name);
    expect_grad_error(b, loss, x, HS_ERR_UNSUPPORTED, want, r->name);
    hs_module_free(m);
    assert_false(hs_autodiff_has_rule(HS_OP_REMAINDER));
    assert_false(hs_autodiff_has_rule(HS_OP_MAP));
    assert_true(hs_autodiff_has_rule(HS_OP_SORT));
    assert_true(hs_autodiff_has_rule(HS_OP_TOPK));
    assert_true(hs_autodiff_has_rule(HS_OP_DOT));
}

static void unknown_custom_call_is_a_clear_error(void **state)
{
    (void)state;
    hs_shape s = SHAPE(3);
    hs_module *m = hs_module_new("cc");
    hs_builder *b = hs_builder_new(m, "main", true);
    hs_instruction *x = hs_b_parameter(b, 0, &s, "x");
    hs_instruction *y = hs_b_custom_call(b, "MyKernel", &x, 1, &s);
    hs_instruction *loss = hs_b_reduce_sum(b, y, DIMS(0), 1);
    expect_grad_error(b, loss, x, HS_ERR_UNSUPPORTED,
                      "custom-call target 'MyKernel'", y->name);
    hs_module_free(m);
}

/* Integer and pred paths carry no gradient, so a non-differentiable op on
 * them (remainder of s32, compare) is no error. */
static void integer_paths_are_not_differentiated(void **state)
{
    (void)state;
    hs_shape s = SHAPE(4);
    hs_module *m = hs_module_new("int");
    hs_builder *b = hs_builder_new(m, "main", true);
    hs_instruction *x = hs_b_parameter(b, 0, &s, "x");
    hs_instruction *i = hs_b_convert(b, x, HS_S32);
    hs_shape is = hs_shape_make(HS_S32, 1, DIMS(4));
    hs_instruction *rem = hs_b_binary(
        b, HS_OP_REMAINDER, i, hs_b_broadcast(b, hs_b_const_s32(b, 2), &is,
                                              NULL, 0));
    hs_instruction *odd = hs_b_compare(
        b, HS_DIR_EQ, rem, hs_b_broadcast(b, hs_b_const_s32(b, 1), &is, NULL, 0));
    hs_instruction *y = hs_b_select(b, odd, hs_b_binary(b, HS_OP_MULTIPLY, x, x),
                                    x);
    hs_instruction *loss = hs_b_reduce_sum(b, y, DIMS(0), 1);
    hs_instruction *outs[2] = {loss};
    hs_error err;
    assert_int_equal(hs_autodiff_grad(b, loss, &x, 1, NULL, outs + 1, &err),
                     HS_OK);
    finish(b, hs_b_tuple(b, outs, 2));
    float v[4] = {1.5f, 2.5f, 3.5f, 4.5f};
    hs_tensor *xv = hs_tensor_new(&s);
    memcpy(xv->data, v, sizeof v);
    hs_tensor *g = gradient_of(m, xv, NULL);
    /* s32(1.5)=1 odd: 2x; 2 even: 1; 3 odd: 2x; 4 even: 1 */
    float want[4] = {3, 1, 7, 1};
    for (int k = 0; k < 4; k++)
        assert_float_equal(hs_tensor_f32(g)[k], want[k], 0);
    hs_tensor_free(g);
    hs_tensor_free(xv);
    hs_module_free(m);
}

static void bad_loss_and_inputs_are_errors(void **state)
{
    (void)state;
    hs_shape s = SHAPE(3);
    hs_module *m = hs_module_new("bad");
    hs_builder *b = hs_builder_new(m, "main", true);
    hs_instruction *x = hs_b_parameter(b, 0, &s, "x");
    expect_grad_error(b, x, x, HS_ERR_INVALID, "the loss must be an f32 scalar",
                      "x");
    hs_module_free(m);

    m = hs_module_new("late");
    b = hs_builder_new(m, "main", true);
    x = hs_b_parameter(b, 0, &s, "x");
    hs_instruction *loss = hs_b_reduce_sum(b, x, DIMS(0), 1);
    hs_instruction *later = hs_b_unary(b, HS_OP_EXP, x);
    expect_grad_error(b, loss, later, HS_ERR_INVALID, "defined after the loss",
                      later->name);
    hs_module_free(m);
}

static void cumsum_step(hs_builder *body, hs_scan_step *s, void *user)
{
    (void)user;
    s->new_carry[0] = hs_b_binary(body, HS_OP_ADD, s->carry[0],
                                  hs_b_unary(body, HS_OP_TANH, s->x[0]));
}

static hs_instruction *scan_loss(hs_builder *b, hs_instruction *xs)
{
    hs_shape row = SHAPE(3);
    hs_instruction *init = hs_b_broadcast(b, hs_b_const_f32(b, 0), &row,
                                          NULL, 0);
    hs_instruction *carry = NULL;
    assert_non_null(hs_scan(b, cumsum_step, NULL, &init, 1, &xs, 1, NULL,
                            &carry, NULL, NULL));
    return hs_b_reduce_sum(b, carry, DIMS(0), 1);
}

static void while_without_hook_names_reverse_scan(void **state)
{
    (void)state;
    hs_shape s = SHAPE(4, 3);
    hs_module *m = hs_module_new("scan");
    hs_builder *b = hs_builder_new(m, "main", true);
    hs_instruction *xs = hs_b_parameter(b, 0, &s, "xs");
    hs_instruction *loss = scan_loss(b, xs);
    hs_instruction *w = find_op(hs_builder_computation(b), HS_OP_WHILE, NULL, 0);
    assert_non_null(w);
    expect_grad_error(b, loss, xs, HS_ERR_UNSUPPORTED,
                      "while loops are differentiated by scan's reverse scan "
                      "(not yet)",
                      w->name);
    hs_module_free(m);
}

/* The hook sees the loop, its complete cotangents and which init elements
 * want one; what it returns flows on to the init's operands. This mock
 * returns d/d xs = 1 for the stacked xs, whatever the loop computes. */
typedef struct hook_log {
    int calls;
    int n;
    int with_cotangent;
} hook_log;

static hs_status mock_while_vjp(hs_builder *b, hs_autodiff_while *w,
                                void *user, hs_error *err)
{
    (void)err;
    hook_log *log = user;
    log->calls++;
    log->n = w->n;
    for (int k = 0; k < w->n; k++) {
        if (w->cotangent[k])
            log->with_cotangent++;
        const hs_shape *e = &w->loop->shape.elems[k];
        hs_shape es = hs_shape_make(HS_F32, e->rank, e->dims);
        if (w->active[k])
            w->init_cotangent[k] =
                hs_b_broadcast(b, hs_b_const_f32(b, 1.0f), &es, NULL, 0);
    }
    return HS_OK;
}

static void while_hook_receives_cotangents(void **state)
{
    (void)state;
    hs_shape s = SHAPE(4, 3);
    hs_module *m = hs_module_new("scan_hook");
    hs_builder *b = hs_builder_new(m, "main", true);
    hs_instruction *xs = hs_b_parameter(b, 0, &s, "xs");
    hs_instruction *loss = scan_loss(b, xs);
    hook_log log = {0};
    hs_autodiff_options o = {.while_vjp = mock_while_vjp, .while_user = &log};
    hs_instruction *outs[2] = {loss};
    hs_error err;
    assert_int_equal(hs_autodiff_grad(b, loss, &xs, 1, &o, outs + 1, &err),
                     HS_OK);
    finish(b, hs_b_tuple(b, outs, 2));
    assert_int_equal(log.calls, 1);
    assert_true(log.n >= 3);            /* counter, carry, xs (...) */
    assert_int_equal(log.with_cotangent, 1); /* only the final carry */
    hs_tensor *xv = random_tensor(&s, -1, 1);
    hs_tensor *g = gradient_of(m, xv, NULL);
    for (int k = 0; k < 12; k++)
        assert_float_equal(hs_tensor_f32(g)[k], 1, 0);
    hs_tensor_free(g);
    hs_tensor_free(xv);
    hs_module_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_differentiable_op_matches_finite_differences),
        cmocka_unit_test(random_graphs_match_finite_differences),
        cmocka_unit_test(linear_mse_matches_hand_derived_gradient),
        cmocka_unit_test(multiple_uses_accumulate),
        cmocka_unit_test(repeated_and_unused_inputs),
        cmocka_unit_test(broadcast_and_reduce_adjoints),
        cmocka_unit_test(ties_split_the_cotangent),
        cmocka_unit_test(gradient_ops_are_scoped_under_backward),
        cmocka_unit_test(placement_gradient_goes_to_device),
        cmocka_unit_test(value_and_grad_of_another_module),
        cmocka_unit_test(non_differentiable_op_is_a_clear_error),
        cmocka_unit_test(unknown_custom_call_is_a_clear_error),
        cmocka_unit_test(integer_paths_are_not_differentiated),
        cmocka_unit_test(bad_loss_and_inputs_are_errors),
        cmocka_unit_test(while_without_hook_names_reverse_scan),
        cmocka_unit_test(while_hook_receives_cotangents),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
