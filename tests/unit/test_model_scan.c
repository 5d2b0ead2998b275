/* test_model_scan.c - a graph op "scan" (torch_xla's scan(fn, init, xs)
 * in the model format): "loop": "scan" traces its body once into a
 * `while`, "unrolled" once per step, and both give the bits of a plain C
 * loop over the model's own input and weights' arithmetic within f32
 * rounding, and each other's bits exactly. The scanned module does not
 * grow with the sequence; errors name the JSON path. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_model.h"
#include "model_test_helpers.h"

/* The JSON of fmt with ' for " (the descriptions below read better). */
static char *json(const char *fmt, ...)
{
    static char buf[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    for (char *c = buf; *c; c++)
        if (*c == '\'')
            *c = '"';
    return buf;
}

/* An RNN over the rows of x [n, 4]: h = x proj^T, then
 * h_t = tanh(h_{t-1} W^T + h[t] + b) from h_0 = 0, the step's weights
 * shared; the output is every h_t times the last. */
static const char *rnn(int n, const char *loop)
{
    return json(
        "{'input': {'shape': [%d, 4]}, 'loop': '%s', 'layers': [{'module': "
        "'', 'type': 'graph', 'params': {'proj.weight': {'shape': [3, 4]}}, "
        "'ops': [{'name': 'h', 'op': 'dot', 'args': ['x', 'proj.weight'], "
        "'attrs': {'rhs_contracting_dims': [1]}, 'scope': 'proj'}, "
        "{'name': 'h0', 'op': 'constant', 'attrs': {'value': 0, 'shape': "
        "[3]}}, "
        "{'name': 'rnn', 'op': 'scan', 'init': ['h0'], 'xs': ['h'], "
        "'scope': 'cell', 'body': {'carry': ['c'], 'x': ['xt'], "
        "'params': {'cell.w': {'shape': [3, 3]}, 'cell.b': {'shape': [3]}},"
        " 'ops': [{'name': 'u', 'op': 'dot', 'args': ['c', 'cell.w'], "
        "'attrs': {'rhs_contracting_dims': [1]}}, "
        "{'name': 'v', 'op': 'add', 'args': ['u', 'xt']}, "
        "{'name': 'w', 'op': 'add', 'args': ['v', 'cell.b']}, "
        "{'name': 'hn', 'op': 'tanh', 'args': ['w']}], "
        "'new_carry': ['hn'], 'y': ['hn']}, 'outputs': ['last', 'hs']}, "
        "{'name': 'out', 'op': 'multiply', 'args': ['hs', 'last']}]}]}",
        n, loop);
}

static const float *param(const hs_model *m, const char *name)
{
    int i = hs_model_find_param(m, name);
    assert_true(i >= 0);
    return hs_tensor_f32(m->params[i].value);
}

/* The same RNN as a C loop in double, from the model's own values. */
static void rnn_reference(const hs_model *m, int n, double *out)
{
    const float *x = hs_tensor_f32(m->input);
    const float *p = param(m, "proj.weight"), *w = param(m, "cell.w"),
                *b = param(m, "cell.b");
    double h[3] = {0, 0, 0}, hs[64][3];
    for (int t = 0; t < n; t++) {
        double next[3];
        for (int i = 0; i < 3; i++) {
            double xi = 0, ui = 0;
            for (int k = 0; k < 4; k++)
                xi += (double)x[t * 4 + k] * p[i * 4 + k];
            for (int k = 0; k < 3; k++)
                ui += h[k] * w[i * 3 + k];
            next[i] = tanh(ui + xi + b[i]);
        }
        memcpy(h, next, sizeof h);
        memcpy(hs[t], h, sizeof h);
    }
    for (int t = 0; t < n; t++)
        for (int i = 0; i < 3; i++)
            out[t * 3 + i] = hs[t][i] * h[i];
}

static int count_instructions(const hs_module *m)
{
    int n = 0;
    for (int c = 0; c < m->n_comps; c++)
        n += m->comps[c]->n_instrs;
    return n;
}

static bool has_opcode(const hs_module *m, hs_opcode op)
{
    for (int c = 0; c < m->n_comps; c++)
        for (int i = 0; i < m->comps[c]->n_instrs; i++)
            if (m->comps[c]->instrs[i]->opcode == op)
                return true;
    return false;
}

static void rnn_matches_a_loop_scanned_and_unrolled(void **state)
{
    (void)state;
    const int n = 7;
    hs_model *s = model_load_ok(rnn(n, "scan"), NULL);
    hs_model *u = model_load_ok(rnn(n, "unrolled"), NULL);
    /* The step's weights are one parameter each, shared by the steps, in
     * the order the graph asks for them. */
    assert_int_equal(s->n_params, 3);
    assert_string_equal(s->params[0].name, "proj.weight");
    assert_string_equal(s->params[1].name, "cell.w");
    assert_string_equal(s->params[2].name, "cell.b");
    assert_int_equal(u->n_params, 3);
    assert_true(has_opcode(s->module, HS_OP_WHILE));
    assert_false(has_opcode(u->module, HS_OP_WHILE));
    /* The loop is the op's module path and name; the body's own ops sit
     * under it, the outer graph's where their scope says. */
    assert_true(model_has_op_name(s, "cell/rnn"));
    assert_true(model_has_op_name(s, "cell/rnn/hn"));
    assert_true(model_has_op_name(u, "cell/rnn/hn"));
    assert_true(model_has_op_name(s, "proj"));

    hs_tensor *ys = model_run(s), *yu = model_run(u);
    assert_int_equal(ys->shape.rank, 2);
    assert_int_equal(ys->shape.dims[0], n);
    assert_int_equal(ys->shape.dims[1], 3);
    assert_memory_equal(ys->data, yu->data, sizeof(float) * 3 * n);
    double want[64 * 3];
    rnn_reference(s, n, want);
    const float *got = hs_tensor_f32(ys);
    double worst = 0, scale = 0;
    for (int i = 0; i < 3 * n; i++) {
        worst = fmax(worst, fabs(got[i] - want[i]));
        scale = fmax(scale, fabs(want[i]));
    }
    assert_true(scale > 0.01); /* the loop computed something */
    if (worst > 1e-5 * scale)
        fail_msg("relative error %g", worst / scale);
    hs_tensor_free(ys);
    hs_tensor_free(yu);
    hs_model_free(s);
    hs_model_free(u);
}

/* One body traced once: the scanned module has as many instructions for 4
 * steps as for 12; unrolled, the 12 steps cost more. */
static void scanned_module_does_not_grow_with_the_steps(void **state)
{
    (void)state;
    int counts[2][2];
    const char *loops[2] = {"scan", "unrolled"};
    const int steps[2] = {4, 12};
    for (int l = 0; l < 2; l++)
        for (int k = 0; k < 2; k++) {
            hs_model_options o = {.shapes_only = true};
            hs_model *m = model_load_ok(rnn(steps[k], loops[l]), &o);
            counts[l][k] = count_instructions(m->module);
            hs_model_free(m);
        }
    assert_int_equal(counts[0][0], counts[0][1]);
    assert_true(counts[1][1] > counts[1][0] + 8 * 4);
}

/* Two carries (one a running sum, one a decaying mix of it), two xs and
 * two ys: outputs "sum_last", "mix_last", "sums", "mixes"; the model
 * returns mixes + sums. */
static const char *two_carries(const char *loop)
{
    return json(
        "{'input': {'shape': [5, 2]}, 'loop': '%s', 'layers': [{'type': "
        "'graph', 'ops': ["
        "{'name': 'z', 'op': 'constant', 'attrs': {'value': 0, 'shape': "
        "[2]}}, {'name': 'sq', 'op': 'multiply', 'args': ['x', 'x']}, "
        "{'name': 'loop', 'op': 'scan', 'init': ['z', 'z'], 'xs': ['x', "
        "'sq'], 'body': {'carry': ['s', 'm'], 'x': ['a', 'b'], 'ops': ["
        "{'name': 's2', 'op': 'add', 'args': ['s', 'a']}, "
        "{'name': 'half', 'op': 'constant', 'attrs': {'value': 0.5, "
        "'shape': [2]}}, {'name': 'mh', 'op': 'multiply', 'args': ['m', "
        "'half']}, {'name': 'm1', 'op': 'add', 'args': ['mh', 's2']}, "
        "{'name': 'm2', 'op': 'subtract', 'args': ['m1', 'b']}], "
        "'new_carry': ['s2', 'm2'], 'y': ['s2', 'm2']}, "
        "'outputs': ['sum_last', 'mix_last', 'sums', 'mixes']}, "
        "{'name': 'o', 'op': 'add', 'args': ['mixes', 'sums']}]}]}",
        loop);
}

static void several_carries_xs_and_ys(void **state)
{
    (void)state;
    hs_model *s = model_load_ok(two_carries("scan"), NULL);
    hs_model *u = model_load_ok(two_carries("unrolled"), NULL);
    assert_true(model_has_op_name(s, "layers.0/graph/loop"));
    hs_tensor *ys = model_run(s), *yu = model_run(u);
    assert_memory_equal(ys->data, yu->data, sizeof(float) * 10);
    const float *x = hs_tensor_f32(s->input), *got = hs_tensor_f32(ys);
    float sum[2] = {0, 0}, mix[2] = {0, 0};
    for (int t = 0; t < 5; t++)
        for (int i = 0; i < 2; i++) {
            float a = x[t * 2 + i];
            sum[i] = sum[i] + a;
            mix[i] = (mix[i] * 0.5f + sum[i]) - a * a;
            /* the same f32 operations in the same order: equal bits */
            float want = mix[i] + sum[i];
            if (memcmp(&got[t * 2 + i], &want, sizeof want) != 0)
                fail_msg("step %d, %d: %.9g, expected %.9g", t, i,
                         got[t * 2 + i], want);
        }
    hs_tensor_free(ys);
    hs_tensor_free(yu);
    hs_model_free(s);
    hs_model_free(u);
}

/* The RNN with edits: pairs of (text, replacement), ' for ", NULL
 * ended; each replaces the first occurrence. */
static const char *rnn_with(int n, const char *loop, ...)
{
    static char a[8192], b[8192];
    snprintf(a, sizeof a, "%s", rnn(n, loop));
    va_list ap;
    va_start(ap, loop);
    const char *from;
    while ((from = va_arg(ap, const char *)) != NULL) {
        const char *to = va_arg(ap, const char *);
        char f[512], t[512];
        snprintf(f, sizeof f, "%s", from);
        snprintf(t, sizeof t, "%s", to);
        for (char *c = f; *c; c++)
            *c = *c == '\'' ? '"' : *c;
        for (char *c = t; *c; c++)
            *c = *c == '\'' ? '"' : *c;
        const char *at = strstr(a, f);
        if (!at)
            fail_msg("no \"%s\" in the model", f);
        snprintf(b, sizeof b, "%.*s%s%s", (int)(at - a), a, t,
                 at + strlen(f));
        memcpy(a, b, sizeof a);
    }
    va_end(ap);
    return a;
}

static void expect_error(const char *model, hs_status status,
                         const char *path, const char *msg)
{
    hs_error e = model_load_fails(model, NULL);
    if (e.status != status || strcmp(e.path, path) != 0 ||
        !strstr(e.message, msg))
        fail_msg("got %s at \"%s\": %s\nexpected %s at \"%s\": ...%s...",
                 hs_status_name(e.status), e.path, e.message,
                 hs_status_name(status), path, msg);
}

/* Every mistake is one error at its JSON path, the same scanned or
 * unrolled. */
static void errors_name_the_json_path(void **state)
{
    (void)state;
    const char *loops[2] = {"scan", "unrolled"};
    for (int l = 0; l < 2; l++) {
        const char *lp = loops[l];
        /* xs that name nothing, or of another length */
        expect_error(rnn_with(7, lp, "'xs': ['h']", "'xs': ['h', 'five']",
                              NULL),
                     HS_ERR_INVALID, "/layers/0/ops/2/xs/1",
                     "unknown argument \"five\"");
        expect_error(
            rnn_with(7, lp, "{'name': 'h0'",
                     "{'name': 'five', 'op': 'slice', 'args': ['h'], "
                     "'attrs': {'start': [0, 0], 'limit': [5, 3]}}, "
                     "{'name': 'h0'",
                     "'xs': ['h']", "'xs': ['h', 'five']", "'x': ['xt']",
                     "'x': ['xt', 'xt5']", NULL),
            HS_ERR_SHAPE, "/layers/0/ops/3/xs/1",
            "leading length 5, expected 7");
        /* the body's x count is checked against xs */
        expect_error(rnn_with(7, lp, "'xs': ['h']", "'xs': ['h', 'h']",
                              NULL),
                     HS_ERR_INVALID, "/layers/0/ops/2/body/x",
                     "the body names 1 slices but xs has 2");
        /* a carry that names nothing, or changes shape */
        expect_error(rnn_with(7, lp, "'new_carry': ['hn']",
                              "'new_carry': ['u2']", NULL),
                     HS_ERR_INVALID, "/layers/0/ops/2/body/new_carry/0",
                     "unknown name \"u2\"");
        expect_error(
            rnn_with(7, lp, "'new_carry': ['hn']",
                     "'new_carry': ['cell.w']", NULL),
            HS_ERR_SHAPE, "/layers/0/ops/2/body/new_carry/0",
            "carry 0 enters the step as f32[3] (init \"h0\") and leaves it "
            "as f32[3,3]");
        /* a body op's own shape error, at the op */
        expect_error(rnn_with(7, lp, "'op': 'tanh', 'args': ['w']}",
                              "'op': 'reshape', 'args': ['w'], 'attrs': "
                              "{'shape': [4]}}",
                              NULL),
                     HS_ERR_SHAPE, "/layers/0/ops/2/body/ops/3", "reshape");
        /* names and counts */
        expect_error(rnn_with(7, lp, "'init': ['h0']", "'init': ['h00']",
                              NULL),
                     HS_ERR_INVALID, "/layers/0/ops/2/init/0",
                     "did you mean \"h0\"");
        expect_error(rnn_with(7, lp, "'outputs': ['last', 'hs']",
                              "'outputs': ['last']", NULL),
                     HS_ERR_INVALID, "/layers/0/ops/2/outputs",
                     "expected 2 names (the 1 final carries, then the 1 "
                     "stacked ys), got 1");
        expect_error(rnn_with(7, lp, "'carry': ['c']", "'carri': ['c']",
                              NULL),
                     HS_ERR_INVALID, "/layers/0/ops/2/body/carri",
                     "did you mean 'carry'");
        expect_error(rnn_with(7, lp, "'x': ['xt']", "'x': ['c']", NULL),
                     HS_ERR_INVALID, "/layers/0/ops/2/body",
                     "the input name \"c\" is used twice");
        expect_error(
            rnn_with(7, lp, "{'name': 'u',",
                     "{'name': 'inner', 'op': 'scan', 'init': [], 'xs': "
                     "['c'], 'body': {}, 'outputs': []}, {'name': 'u',",
                     NULL),
            HS_ERR_UNSUPPORTED, "/layers/0/ops/2/body/ops/0/op",
            "nested scans");
        /* the outputs are names of the enclosing graph */
        expect_error(rnn_with(7, lp, "'outputs': ['last', 'hs']",
                              "'outputs': ['last', 'h']", NULL),
                     HS_ERR_INVALID, "/layers/0/ops/2/outputs/1",
                     "\"h\" is already used");
    }
}

/* A body param named like a param of the enclosing graph is that
 * parameter: one entry, read by the forward and by every step. */
static const char *shared(const char *loop, const char *body_shape)
{
    return json(
        "{'input': {'shape': [5, 3]}, 'loop': '%s', 'layers': [{'type': "
        "'graph', 'params': {'w': {'shape': [3, 3]}}, 'ops': ["
        "{'name': 'h', 'op': 'dot', 'args': ['x', 'w'], 'attrs': "
        "{'rhs_contracting_dims': [1]}}, {'name': 'z', 'op': 'constant', "
        "'attrs': {'value': 0, 'shape': [3]}}, {'name': 's', 'op': 'scan', "
        "'init': ['z'], 'xs': ['h'], 'body': {'carry': ['c'], 'x': ['a'], "
        "'params': {'w': {'shape': %s}}, 'ops': [{'name': 'u', 'op': 'dot',"
        " 'args': ['c', 'w'], 'attrs': {'rhs_contracting_dims': [1]}}, "
        "{'name': 'v', 'op': 'add', 'args': ['u', 'a']}], 'new_carry': "
        "['v'], 'y': ['v']}, 'outputs': ['last', 'all']}]}]}",
        loop, body_shape);
}

static void body_shares_a_param_of_its_graph(void **state)
{
    (void)state;
    hs_model *s = model_load_ok(shared("scan", "[3, 3]"), NULL);
    hs_model *u = model_load_ok(shared("unrolled", "[3, 3]"), NULL);
    assert_int_equal(s->n_params, 1);
    assert_string_equal(s->params[0].name, "layers.0.w");
    assert_int_equal(u->n_params, 1);
    hs_tensor *ys = model_run(s), *yu = model_run(u);
    assert_memory_equal(ys->data, yu->data, sizeof(float) * 15);
    hs_tensor_free(ys);
    hs_tensor_free(yu);
    hs_model_free(s);
    hs_model_free(u);
    expect_error(shared("scan", "[3, 4]"), HS_ERR_SHAPE,
                 "/layers/0/ops/2/body/params/w",
                 "the enclosing graph's param \"w\" is f32[3,3]");
}

/* A bf16 model: its ys are stacked as f32 in the loop and rounded back,
 * exactly, so scanned and unrolled still agree bit for bit. */
static void bf16_scan_matches_unrolled(void **state)
{
    (void)state;
    hs_model *m[2];
    hs_tensor *y[2];
    const char *loops[2] = {"scan", "unrolled"};
    for (int l = 0; l < 2; l++) {
        m[l] = model_load_ok(rnn_with(7, loops[l], "'loop'",
                                      "'dtype': 'bf16', 'loop'", NULL),
                             NULL);
        y[l] = model_run(m[l]);
        assert_int_equal(y[l]->shape.dtype, HS_BF16);
    }
    assert_true(has_opcode(m[0]->module, HS_OP_WHILE));
    assert_memory_equal(y[0]->data, y[1]->data, 2 * 7 * 3);
    for (int l = 0; l < 2; l++) {
        hs_tensor_free(y[l]);
        hs_model_free(m[l]);
    }
}

/* Unrolled, a scan is bounded like the layers it becomes. */
static void unrolled_steps_are_limited(void **state)
{
    (void)state;
    hs_model_options o = {.limits = {.max_layers = 6}};
    hs_error e = model_load_fails(rnn(7, "unrolled"), &o);
    assert_int_equal(e.status, HS_ERR_LIMIT);
    assert_string_equal(e.path, "/layers/0/ops/2/xs/0");
    assert_non_null(strstr(e.message, "use \"loop\": \"scan\""));
    hs_model_free(model_load_ok(rnn(7, "scan"), &o));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rnn_matches_a_loop_scanned_and_unrolled),
        cmocka_unit_test(scanned_module_does_not_grow_with_the_steps),
        cmocka_unit_test(several_carries_xs_and_ys),
        cmocka_unit_test(errors_name_the_json_path),
        cmocka_unit_test(body_shares_a_param_of_its_graph),
        cmocka_unit_test(bf16_scan_matches_unrolled),
        cmocka_unit_test(unrolled_steps_are_limited),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
