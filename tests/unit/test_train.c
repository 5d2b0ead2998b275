/* test_train.c - training steps (hs_train.h): losses with known values,
 * SGD lowering the loss, Adam against a hand-computed two-step update, the
 * step module's signature and input/output aliasing, the gradient-only
 * module, dumps, every block type training, and the errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hloscope/hs_builder.h"
#include "hloscope/hs_compile.h"
#include "hloscope/hs_device.h"
#include "hloscope/hs_hlo_text.h"
#include "hloscope/hs_model.h"
#include "hloscope/hs_npy.h"
#include "hloscope/hs_train.h"

#define DIMS(...) ((int64_t[]){__VA_ARGS__})

/* ---- helpers ---------------------------------------------------------------- */


/* Two modules have the same header: the attributes kept as text and the
 * input_output_alias list, which a training step always has. */
static void assert_same_header(const hs_module *a, const hs_module *b)
{
    if (a->header_attrs || b->header_attrs)
        assert_string_equal(a->header_attrs, b->header_attrs);
    assert_true(b->n_io_aliases > 0);
    assert_int_equal(a->n_io_aliases, b->n_io_aliases);
    for (int k = 0; k < a->n_io_aliases; k++) {
        const hs_io_alias *x = &a->io_aliases[k], *y = &b->io_aliases[k];
        assert_int_equal(x->output_len, y->output_len);
        assert_memory_equal(x->output, y->output,
                            sizeof(int) * (size_t)x->output_len);
        assert_int_equal(x->param, y->param);
        assert_int_equal(x->param_index_len, y->param_index_len);
        assert_int_equal(x->must_alias, y->must_alias);
    }
}

static hs_model *load(const char *json)
{
    hs_error err;
    hs_model *m = hs_model_load(json, strlen(json), NULL, &err);
    if (!m)
        fail_msg("load: %s: %s", err.path, err.message);
    return m;
}

static hs_train_step *build(const hs_model *m)
{
    hs_error err;
    hs_train_step *ts = hs_train_step_build(m, NULL, &err);
    if (!ts)
        fail_msg("train step: %s (%s)", err.message, err.instruction);
    return ts;
}

static void train(hs_train_step *ts, int64_t steps, bool grads,
                  hs_train_result *r)
{
    hs_train_run_options o = {.steps = steps, .want_grads = grads};
    hs_error err;
    if (hs_train_run(ts, hs_device_find("tpu-v5e"), &o, r, &err) != HS_OK)
        fail_msg("train: %s (%s)", err.message, err.instruction);
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

/* ---- losses ---------------------------------------------------------------------- */

/* F.cross_entropy([[1,2,3],[1,1,1],[1000,0,-1000]], [2,0,0]) and its
 * gradient (softmax - onehot) / rows, from logits fed as a parameter. */
static void cross_entropy_of_known_logits(void **state)
{
    (void)state;
    float logits[9] = {1, 2, 3, 1, 1, 1, 1000, 0, -1000};
    int32_t target[3] = {2, 0, 0};
    hs_shape ls = hs_shape_make(HS_F32, 2, DIMS(3, 3));
    hs_shape ts = hs_shape_make(HS_S32, 1, DIMS(3));
    hs_module *m = hs_module_new("ce");
    hs_builder *b = hs_builder_new(m, "main", true);
    hs_instruction *z = hs_b_parameter(b, 0, &ls, "logits");
    hs_instruction *t = hs_b_parameter(b, 1, &ts, "target");
    hs_instruction *loss = hs_train_cross_entropy(b, z, t);
    hs_instruction *outs[2] = {loss};
    hs_error err;
    assert_int_equal(hs_autodiff_grad(b, loss, &z, 1, NULL, outs + 1, &err),
                     HS_OK);
    assert_non_null(hs_builder_finish(b, hs_b_tuple(b, outs, 2), &err));
    hs_tensor *in[2] = {hs_tensor_new(&ls), hs_tensor_new(&ts)};
    memcpy(in[0]->data, logits, sizeof logits);
    memcpy(in[1]->data, target, sizeof target);
    int n_out;
    hs_tensor **o = run(m, in, 2, &n_out);
    double row0 = log(exp(1.0) + exp(2.0) + exp(3.0)) - 3.0;
    double row1 = log(3.0);
    double row2 = 0.0; /* 1000 dominates: log(1 + e^-1000 + ...) */
    double want = (row0 + row1 + row2) / 3.0;
    assert_float_equal(hs_tensor_f32(o[0])[0], want, 1e-6);
    const float *g = hs_tensor_f32(o[1]);
    for (int r = 0; r < 3; r++) {
        double mx = fmax(fmax(logits[3 * r], logits[3 * r + 1]),
                         logits[3 * r + 2]);
        double s = 0;
        for (int c = 0; c < 3; c++)
            s += exp(logits[3 * r + c] - mx);
        for (int c = 0; c < 3; c++) {
            double p = exp(logits[3 * r + c] - mx) / s;
            double gw = (p - (c == target[r] ? 1.0 : 0.0)) / 3.0;
            assert_float_equal(g[3 * r + c], gw, 1e-6);
        }
    }
    hs_tensors_free(o, n_out);
    hs_tensor_free(in[0]);
    hs_tensor_free(in[1]);
    hs_module_free(m);
}

static void mse_is_the_mean_squared_error(void **state)
{
    (void)state;
    hs_shape s = hs_shape_make(HS_F32, 2, DIMS(2, 2));
    hs_module *m = hs_module_new("mse");
    hs_builder *b = hs_builder_new(m, "main", true);
    hs_instruction *y = hs_b_parameter(b, 0, &s, "y");
    hs_instruction *t = hs_b_parameter(b, 1, &s, "t");
    hs_error err;
    assert_non_null(hs_builder_finish(b, hs_train_mse(b, y, t), &err));
    float yv[4] = {1, 2, 3, 4}, tv[4] = {0, 2, 5, 3};
    hs_tensor *in[2] = {hs_tensor_new(&s), hs_tensor_new(&s)};
    memcpy(in[0]->data, yv, sizeof yv);
    memcpy(in[1]->data, tv, sizeof tv);
    int n_out;
    hs_tensor **o = run(m, in, 2, &n_out);
    assert_float_equal(hs_tensor_f32(o[0])[0], (1 + 0 + 4 + 1) / 4.0, 0);
    hs_tensors_free(o, n_out);
    hs_tensor_free(in[0]);
    hs_tensor_free(in[1]);
    hs_module_free(m);
}

/* ---- optimizers ------------------------------------------------------------------ */

static const char *linear_sgd =
    "{\"name\": \"lin\", \"seed\": 3, \"input\": {\"shape\": [4, 8]},"
    " \"layers\": [{\"type\": \"linear\", \"features\": 3}],"
    " \"train\": {\"loss\": \"mse\", \"target\": \"random\","
    "  \"optimizer\": {\"type\": \"sgd\", \"lr\": 0.1}, \"steps\": 10}}";

static void sgd_steps_decrease_the_loss(void **state)
{
    (void)state;
    hs_model *m = load(linear_sgd);
    hs_train_step *ts = build(m);
    hs_train_result r;
    train(ts, 0, true, &r);
    assert_int_equal(r.steps, 10);
    for (int k = 1; k < 10; k++)
        if (!(r.losses[k] < r.losses[k - 1]))
            fail_msg("loss went up at step %d: %g -> %g", k + 1,
                     r.losses[k - 1], r.losses[k]);
    assert_true(r.losses[9] < 0.8 * r.losses[0]);
    hs_train_result_free(&r);

    /* One SGD step is p - lr * g with g the first-step gradient. */
    train(ts, 1, true, &r);
    for (int i = 0; i < r.n_params; i++) {
        const float *p0 = m->params[i].init, *p1 = hs_tensor_f32(r.updated[i]);
        const float *g = hs_tensor_f32(r.grads[i]);
        for (int64_t e = 0; e < hs_tensor_elements(r.updated[i]); e++)
            assert_float_equal(p1[e], p0[e] - 0.1f * g[e], 1e-7);
    }
    float loss;
    hs_tensor *grads[2];
    hs_error err;
    assert_int_equal(hs_train_grads(ts, NULL, &loss, grads, &err), HS_OK);
    assert_float_equal(loss, r.losses[0], 0);
    hs_tensor_free(grads[0]);
    hs_tensor_free(grads[1]);
    hs_train_result_free(&r);
    hs_train_step_free(ts);
    hs_model_free(m);
}

static const char *linear_adam =
    "{\"name\": \"lin\", \"seed\": 5, \"input\": {\"shape\": [3, 4]},"
    " \"layers\": [{\"type\": \"linear\", \"features\": 2}],"
    " \"train\": {\"loss\": \"mse\", \"target\": \"random\","
    "  \"optimizer\": {\"type\": \"adam\", \"lr\": 0.05, \"beta1\": 0.8,"
    "   \"beta2\": 0.95, \"eps\": 1e-6}, \"steps\": 2}}";

/* Linear + mse gradients and torch.optim.Adam's update, in double. */
static void adam_matches_hand_computed_two_steps(void **state)
{
    (void)state;
    enum { B = 3, I = 4, O = 2, NW = O * I };
    hs_model *m = load(linear_adam);
    hs_train_step *ts = build(m);
    hs_train_result r;
    train(ts, 2, false, &r);

    const float *X = hs_tensor_f32(m->input), *T = hs_tensor_f32(m->target);
    double p[NW + O], mo[NW + O] = {0}, v[NW + O] = {0}, loss[2];
    for (int k = 0; k < NW; k++)
        p[k] = m->params[0].init[k];
    for (int k = 0; k < O; k++)
        p[NW + k] = m->params[1].init[k];
    const double lr = 0.05, b1 = 0.8, b2 = 0.95, eps = 1e-6;
    for (int t = 1; t <= 2; t++) {
        double g[NW + O] = {0}, l = 0;
        for (int i = 0; i < B; i++)
            for (int j = 0; j < O; j++) {
                double y = p[NW + j];
                for (int k = 0; k < I; k++)
                    y += X[i * I + k] * p[j * I + k];
                double d = y - T[i * O + j];
                l += d * d / (B * O);
                for (int k = 0; k < I; k++)
                    g[j * I + k] += 2 * d * X[i * I + k] / (B * O);
                g[NW + j] += 2 * d / (B * O);
            }
        loss[t - 1] = l;
        double bc1 = 1 - pow(b1, t), bc2 = 1 - pow(b2, t);
        for (int k = 0; k < NW + O; k++) {
            mo[k] = b1 * mo[k] + (1 - b1) * g[k];
            v[k] = b2 * v[k] + (1 - b2) * g[k] * g[k];
            double denom = sqrt(v[k]) / sqrt(bc2) + eps;
            p[k] -= lr / bc1 * mo[k] / denom;
        }
    }
    for (int t = 0; t < 2; t++)
        assert_float_equal(r.losses[t], loss[t], 1e-6 * (1 + loss[t]));
    const float *w = hs_tensor_f32(r.updated[0]), *bias = hs_tensor_f32(r.updated[1]);
    for (int k = 0; k < NW; k++)
        if (fabs(w[k] - p[k]) > 1e-6)
            fail_msg("weight[%d] = %.8g after 2 steps, expected %.8g", k, w[k],
                     p[k]);
    for (int k = 0; k < O; k++)
        assert_float_equal(bias[k], p[NW + k], 1e-6);
    /* state: exp_avg, exp_avg_sq per parameter, then the step count */
    assert_int_equal(r.n_state, 5);
    assert_int_equal(((int32_t *)r.state[4]->data)[0], 2);
    for (int k = 0; k < NW; k++) {
        assert_float_equal(hs_tensor_f32(r.state[0])[k], mo[k], 1e-6);
        assert_float_equal(hs_tensor_f32(r.state[2])[k], v[k], 1e-7);
    }
    hs_train_result_free(&r);
    hs_train_step_free(ts);
    hs_model_free(m);
}

/* ---- the step module ----------------------------------------------------------- */

static void step_module_signature_and_aliasing(void **state)
{
    (void)state;
    hs_model *m = load(linear_adam);
    hs_train_step *ts = build(m);
    const hs_computation *e = ts->module->entry;
    int n = ts->n_params;
    assert_int_equal(n, 2);
    assert_int_equal(ts->n_state, 2 * n + 1);
    assert_int_equal(e->n_params, 2 + n + ts->n_state);
    assert_string_equal(e->params[0]->name, "x");
    assert_string_equal(e->params[1]->name, "target");
    assert_string_equal(e->params[2]->name, "layers.0.weight");
    assert_string_equal(e->params[3]->name, "layers.0.bias");
    assert_string_equal(e->params[4]->name, "exp_avg.layers.0.weight");
    assert_string_equal(e->params[6]->name, "exp_avg_sq.layers.0.weight");
    assert_string_equal(e->params[8]->name, "step");
    assert_int_equal(e->params[8]->shape.dtype, HS_S32);
    assert_int_equal(e->root->opcode, HS_OP_TUPLE);
    assert_int_equal(e->root->n_operands, 1 + n + ts->n_state);
    assert_int_equal(ts->n_alias, n + ts->n_state);
    for (int k = 0; k < ts->n_alias; k++) {
        assert_int_equal(ts->alias[k].output, 1 + k);
        assert_int_equal(ts->alias[k].param, 2 + k);
        /* an alias pairs equal shapes */
        assert_true(hs_shape_compatible(
            &e->root->operands[ts->alias[k].output]->shape,
            &e->params[ts->alias[k].param]->shape));
    }
    char *text = hs_hlo_print(ts->module);
    assert_non_null(strstr(text, "HloModule lin.train_step, "
                                 "input_output_alias={ {1}: (2, {}, "
                                 "may-alias), {2}: (3, {}, may-alias), "));
    assert_non_null(strstr(text, "{7}: (8, {}, may-alias) }\n"));
    assert_non_null(strstr(text, "op_name=\"backward/layers.0/linear\""));
    assert_non_null(strstr(text, "op_name=\"optimizer/layers.0.weight\""));
    assert_non_null(strstr(text, "op_name=\"loss\""));
    /* the header survives a round trip through the parser */
    hs_error err;
    hs_module *back = hs_hlo_parse(text, strlen(text), &err);
    if (!back)
        fail_msg("parse: %s", err.message);
    assert_same_header(back, ts->module);
    char *again = hs_hlo_print(back);
    assert_string_equal(again, text);
    free(again);
    hs_module_free(back);
    free(text);

    /* the gradient module is built on first use */
    assert_null(ts->grad_module);
    float loss;
    hs_tensor *g[2];
    assert_int_equal(hs_train_grads(ts, NULL, &loss, g, &err), HS_OK);
    assert_non_null(ts->grad_module);
    assert_int_equal(ts->grad_module->entry->n_params, 2 + n);
    assert_null(ts->grad_module->header_attrs);
    assert_int_equal(ts->grad_module->n_io_aliases, 0);
    hs_tensor_free(g[0]);
    hs_tensor_free(g[1]);
    hs_train_step_free(ts);
    hs_model_free(m);
}

static int steps_seen;
static void count_step(int64_t step, float loss, const hs_run_stats *s,
                       void *user)
{
    (void)loss;
    (void)user;
    assert_int_equal(step, steps_seen + 1);
    assert_true(s->flops > 0);
    steps_seen++;
}

static void callback_sees_every_step(void **state)
{
    (void)state;
    hs_model *m = load(linear_sgd);
    hs_train_step *ts = build(m);
    hs_train_run_options o = {.steps = 3, .on_step = count_step};
    hs_train_result r;
    hs_error err;
    steps_seen = 0;
    assert_int_equal(hs_train_run(ts, NULL, &o, &r, &err), HS_OK);
    assert_int_equal(steps_seen, 3);
    assert_true(r.total.flops >= 3 * r.last.flops * 0.999);
    assert_null(r.grads);
    /* the model's initial values are untouched */
    hs_train_result r2;
    steps_seen = 0;
    assert_int_equal(hs_train_run(ts, NULL, &o, &r2, &err), HS_OK);
    for (int k = 0; k < 3; k++)
        assert_float_equal(r.losses[k], r2.losses[k], 0);
    hs_train_result_free(&r);
    hs_train_result_free(&r2);
    hs_train_step_free(ts);
    hs_model_free(m);
}

static void cancel_after_two(int64_t step, float loss, const hs_run_stats *s,
                             void *user)
{
    (void)loss;
    (void)s;
    if (step == 2)
        atomic_store((atomic_bool *)user, true);
}

/* A cancel flag or a deadline stops the run inside a step's device run,
 * saying how many steps completed; nothing is returned. */
static void cancel_and_deadline_stop_training(void **state)
{
    (void)state;
    hs_model *m = load(linear_sgd);
    hs_train_step *ts = build(m);
    atomic_bool cancel = false;
    hs_train_run_options o = {.steps = 5, .on_step = cancel_after_two,
                              .user = &cancel, .cancel = &cancel};
    hs_train_result r;
    hs_error err;
    assert_int_equal(hs_train_run(ts, NULL, &o, &r, &err), HS_ERR_CANCELLED);
    assert_non_null(strstr(err.message, "after 2 of 5 training steps"));
    assert_null(r.losses);
    assert_null(r.updated);
    /* A deadline already past: no step completes. */
    hs_train_run_options d = {.steps = 5, .deadline_ns = 1};
    assert_int_equal(hs_train_run(ts, NULL, &d, &r, &err), HS_ERR_CANCELLED);
    assert_non_null(strstr(err.message, "after 0 of 5 training steps"));
    /* Neither: all five. */
    atomic_store(&cancel, false);
    hs_train_run_options n = {.steps = 5, .cancel = &cancel};
    assert_int_equal(hs_train_run(ts, NULL, &n, &r, &err), HS_OK);
    assert_int_equal(r.steps, 5);
    hs_train_result_free(&r);
    hs_train_step_free(ts);
    hs_model_free(m);
}

/* The step compiled through the default pipeline (simplify, cse, dce,
 * fusion, ...) keeps its signature and aliasing and trains the same. */
static void compiled_step_trains_the_same(void **state)
{
    (void)state;
    hs_model *m = load(linear_adam);
    hs_train_step *ts = build(m);
    hs_compile_options co;
    hs_compile_options_init(&co);
    hs_executable *exe = NULL;
    hs_error err;
    if (hs_compile(ts->module, &co, NULL, NULL, &exe, &err) != HS_OK)
        fail_msg("compile: %s (%s)", err.message, err.instruction);
    const hs_module *opt = hs_executable_module(exe);
    assert_same_header(opt, ts->module);
    assert_int_equal(opt->entry->n_params, ts->module->entry->n_params);
    hs_train_result a, b;
    train(ts, 3, false, &a);
    hs_train_run_options o = {.steps = 3, .module = opt};
    assert_int_equal(hs_train_run(ts, NULL, &o, &b, &err), HS_OK);
    for (int k = 0; k < 3; k++)
        assert_float_equal(a.losses[k], b.losses[k], 1e-6 * a.losses[k]);
    for (int i = 0; i < a.n_params; i++)
        for (int64_t e = 0; e < hs_tensor_elements(a.updated[i]); e++)
            assert_float_equal(hs_tensor_f32(a.updated[i])[e],
                               hs_tensor_f32(b.updated[i])[e], 1e-6);
    hs_train_result_free(&a);
    hs_train_result_free(&b);
    hs_executable_release(exe);
    hs_train_step_free(ts);
    hs_model_free(m);
}

/* ---- dumps ------------------------------------------------------------------------ */

static void dump_writes_target_loss_grads_updated(void **state)
{
    (void)state;
    hs_model *m = load(linear_sgd);
    hs_train_step *ts = build(m);
    hs_train_result r;
    train(ts, 4, true, &r);
    char dir[] = "/tmp/hs_train_dump_XXXXXX";
    assert_non_null(mkdtemp(dir));
    hs_error err;
    char sub[512];
    snprintf(sub, sizeof sub, "%s/out", dir);
    assert_int_equal(hs_train_dump(ts, &r, sub, &err), HS_OK);
    char path[600];
    snprintf(path, sizeof path, "%s/loss.npy", sub);
    hs_tensor *t = hs_npy_read(path, &err);
    assert_non_null(t);
    assert_int_equal(t->shape.rank, 1);
    assert_int_equal(t->shape.dims[0], 4);
    for (int k = 0; k < 4; k++)
        assert_float_equal(hs_tensor_f32(t)[k], r.losses[k], 0);
    hs_tensor_free(t);
    snprintf(path, sizeof path, "%s/target.npy", sub);
    assert_non_null(t = hs_npy_read(path, &err));
    assert_true(hs_shape_compatible(&t->shape, &m->target->shape));
    hs_tensor_free(t);
    const char *subs[2] = {"grads", "updated"};
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < m->n_params; i++) {
            snprintf(path, sizeof path, "%s/%s/%s.npy", sub, subs[s],
                     m->params[i].name);
            assert_non_null(t = hs_npy_read(path, &err));
            hs_tensor *want = s ? r.updated[i] : r.grads[i];
            assert_memory_equal(t->data, want->data,
                                (size_t)hs_shape_bytes(&want->shape));
            hs_tensor_free(t);
            unlink(path);
        }
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    hs_train_result_free(&r);
    hs_train_step_free(ts);
    hs_model_free(m);
}

/* ---- models ------------------------------------------------------------------------- */

/* Every block type traces a step that runs, and a few SGD steps lower the
 * loss. */
static void every_block_type_trains(void **state)
{
    (void)state;
    static const char *blocks[] = {
        "[{\"type\": \"linear\", \"features\": 6}, {\"type\": \"relu\"},"
        " {\"type\": \"linear\", \"features\": 4}]",
        "[{\"type\": \"gelu\"}, {\"type\": \"linear\", \"features\": 8}]",
        "[{\"type\": \"silu\"}, {\"type\": \"tanh\"}, {\"type\": \"sigmoid\"},"
        " {\"type\": \"linear\", \"features\": 8}]",
        "[{\"type\": \"linear\", \"features\": 8}, {\"type\": \"softmax\"}]",
        "[{\"type\": \"layernorm\"}, {\"type\": \"linear\", \"features\": 8}]",
        "[{\"type\": \"rmsnorm\"}, {\"type\": \"linear\", \"features\": 8}]",
        "[{\"type\": \"mlp\", \"hidden\": 12}]",
        "[{\"type\": \"mlp\", \"hidden\": 12, \"gated\": false,"
        "  \"activation\": \"gelu\"}]",
        "[{\"type\": \"attention\", \"heads\": 2}]",
        "[{\"type\": \"attention\", \"heads\": 4, \"causal\": false}]",
        "[{\"repeat\": 2, \"block\": {\"type\": \"decoder\", \"heads\": 2,"
        "  \"hidden\": 16}}]",
        "[{\"type\": \"decoder\", \"heads\": 2, \"hidden\": 16,"
        "  \"norm\": \"layernorm\"}]",
        "[{\"type\": \"sequential\", \"blocks\": [{\"type\": \"linear\","
        "  \"features\": 8}, {\"type\": \"tanh\"}]}]",
        "[{\"type\": \"graph\", \"params\": {\"w\": {\"shape\": [8, 8]}},"
        "  \"ops\": [{\"name\": \"y\", \"op\": \"dot\", \"args\": [\"x\", \"w\"]},"
        "   {\"name\": \"h\", \"op\": \"place_to_host\", \"args\": [\"y\"]},"
        "   {\"name\": \"d\", \"op\": \"place_to_device\", \"args\": [\"h\"]},"
        "   {\"name\": \"z\", \"op\": \"tanh\", \"args\": [\"d\"]}]}]",
    };
    for (size_t k = 0; k < sizeof blocks / sizeof blocks[0]; k++) {
        char json[2048];
        snprintf(json, sizeof json,
                 "{\"seed\": %d, \"input\": {\"shape\": [2, 4, 8]},"
                 " \"layers\": %s, \"train\": {\"target\": \"random\","
                 " \"optimizer\": {\"type\": \"sgd\", \"lr\": 0.05}}}",
                 (int)k, blocks[k]);
        hs_error err;
        hs_model *m = hs_model_load(json, strlen(json), NULL, &err);
        if (!m)
            fail_msg("model %zu: %s: %s", k, err.path, err.message);
        hs_train_step *ts = hs_train_step_build(m, NULL, &err);
        if (!ts)
            fail_msg("model %zu: %s (%s)", k, err.message, err.instruction);
        hs_train_result r;
        train(ts, 3, false, &r);
        if (!(r.losses[2] < r.losses[0]))
            fail_msg("model %zu: loss %g -> %g", k, r.losses[0], r.losses[2]);
        hs_train_result_free(&r);
        hs_train_step_free(ts);
        hs_model_free(m);
    }
}

static void cross_entropy_model_trains(void **state)
{
    (void)state;
    hs_model *m = load(
        "{\"seed\": 2, \"input\": {\"shape\": [6, 5]},"
        " \"layers\": [{\"type\": \"linear\", \"features\": 4}],"
        " \"train\": {\"loss\": \"cross_entropy\", \"target\": \"random\","
        "  \"optimizer\": {\"type\": \"adam\", \"lr\": 0.05}, \"steps\": 5}}");
    assert_int_equal(m->target->shape.dtype, HS_S32);
    hs_train_step *ts = build(m);
    assert_int_equal(ts->module->entry->params[1]->shape.dtype, HS_S32);
    hs_train_result r;
    train(ts, 0, false, &r);
    assert_int_equal(r.steps, 5);
    /* at init the logits are small: the loss is near log(4) */
    assert_true(fabs(r.losses[0] - log(4.0)) < 0.5);
    for (int k = 1; k < 5; k++)
        assert_true(r.losses[k] < r.losses[k - 1]);
    hs_train_result_free(&r);
    hs_train_step_free(ts);
    hs_model_free(m);
}

/* ---- errors -------------------------------------------------------------------------- */

static void model_without_train_section_is_an_error(void **state)
{
    (void)state;
    hs_model *m = load("{\"input\": {\"shape\": [1, 4]},"
                       " \"layers\": [{\"type\": \"relu\"}]}");
    hs_error err;
    assert_null(hs_train_step_build(m, NULL, &err));
    assert_int_equal(err.status, HS_ERR_INVALID);
    assert_string_equal(err.path, "/train");
    assert_non_null(strstr(err.message, "no \"train\" section"));
    hs_model_free(m);
}

/* A scanned model trains through scan's reverse scan (the default
 * while-loop hook) and gives the unrolled model's losses, bit for bit. */
static void scanned_model_trains_through_reverse_scan(void **state)
{
    (void)state;
    const char *json =
        "{\"input\": {\"shape\": [2, 8]}, \"loop\": \"%s\","
        " \"layers\": [{\"repeat\": 3, \"block\": {\"type\": \"linear\","
        "  \"features\": 8}}],"
        " \"train\": {\"optimizer\": {\"type\": \"sgd\", \"lr\": 0.1},"
        "  \"steps\": 3}}";
    float losses[2][3];
    for (int v = 0; v < 2; v++) {
        char text[512];
        snprintf(text, sizeof text, json, v ? "scan" : "unrolled");
        hs_model *m = load(text);
        hs_error err;
        hs_train_step *ts = hs_train_step_build(m, NULL, &err);
        if (!ts)
            fail_msg("build: %s", err.message);
        int whiles = 0;
        for (int c = 0; c < ts->module->n_comps; c++)
            for (int k = 0; k < ts->module->comps[c]->n_instrs; k++)
                whiles += ts->module->comps[c]->instrs[k]->opcode ==
                          HS_OP_WHILE;
        assert_int_equal(whiles, v ? 2 : 0); /* forward and reverse scan */
        hs_train_result r;
        assert_int_equal(hs_train_run(ts, NULL, NULL, &r, &err), HS_OK);
        assert_int_equal(r.steps, 3);
        memcpy(losses[v], r.losses, sizeof losses[v]);
        hs_train_result_free(&r);
        hs_train_step_free(ts);
        hs_model_free(m);
    }
    assert_memory_equal(losses[0], losses[1], sizeof losses[0]);
    assert_true(losses[1][2] < losses[1][0]);
}

static void shapes_only_model_builds_but_does_not_run(void **state)
{
    (void)state;
    hs_model_options o = {.shapes_only = true};
    hs_error err;
    hs_model *m = hs_model_load(linear_sgd, strlen(linear_sgd), &o, &err);
    assert_non_null(m);
    hs_train_step *ts = build(m);
    hs_train_result r;
    assert_int_equal(hs_train_run(ts, NULL, NULL, &r, &err), HS_ERR_INVALID);
    assert_non_null(strstr(err.message, "shapes_only"));
    hs_train_step_free(ts);
    hs_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cross_entropy_of_known_logits),
        cmocka_unit_test(mse_is_the_mean_squared_error),
        cmocka_unit_test(sgd_steps_decrease_the_loss),
        cmocka_unit_test(adam_matches_hand_computed_two_steps),
        cmocka_unit_test(step_module_signature_and_aliasing),
        cmocka_unit_test(callback_sees_every_step),
        cmocka_unit_test(cancel_and_deadline_stop_training),
        cmocka_unit_test(compiled_step_trains_the_same),
        cmocka_unit_test(dump_writes_target_loss_grads_updated),
        cmocka_unit_test(every_block_type_trains),
        cmocka_unit_test(cross_entropy_model_trains),
        cmocka_unit_test(model_without_train_section_is_an_error),
        cmocka_unit_test(scanned_model_trains_through_reverse_scan),
        cmocka_unit_test(shapes_only_model_builds_but_does_not_run),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
