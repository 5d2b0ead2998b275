/* test_model_modules.c - the model-format extensions an exported PyTorch
 * module needs: a top-level "module" naming a layer (the root "", a named
 * block, a named repeat, scanned or not), graph params named by state_dict
 * paths and holding their own "values", and graph ops with a "scope".
 * Errors name the JSON path. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "hloscope/hs_model.h"
#include "model_test_helpers.h"

static hs_model *load(const char *json) { return model_load_ok(json, NULL); }

static hs_error load_fails(const char *json)
{
    return model_load_fails(json, NULL);
}

static int param_index(const hs_model *m, const char *name)
{
    for (int i = 0; i < m->n_params; i++)
        if (strcmp(m->params[i].name, name) == 0)
            return i;
    return -1;
}

static void expect_path(const hs_error *e, const char *path, const char *msg)
{
    assert_int_equal(e->status, HS_ERR_INVALID);
    if (strcmp(e->path, path) != 0)
        fail_msg("path \"%s\", expected \"%s\" (%s)", e->path, path,
                 e->message);
    if (msg && !strstr(e->message, msg))
        fail_msg("message \"%s\" lacks \"%s\"", e->message, msg);
}

/* The root module: state_dict paths as they are, op scopes as given. */
static void root_graph_keeps_state_dict_names(void **state)
{
    (void)state;
    hs_model *m = load(
        "{\"input\": {\"shape\": [2, 8]}, \"layers\": [{\"module\": \"\", "
        "\"type\": \"graph\", \"params\": {"
        "\"fc.weight\": {\"shape\": [4, 8]}, "
        "\"fc.bias\": {\"shape\": [4], \"init\": \"zeros\"}, "
        "\"0.scale\": {\"shape\": [4], \"values\": [1, 2, 3, 4.5]}}, "
        "\"ops\": [{\"name\": \"y\", \"op\": \"dot\", \"args\": [\"x\", "
        "\"fc.weight\"], \"attrs\": {\"rhs_contracting_dims\": [1]}, "
        "\"scope\": \"fc\"}, "
        "{\"name\": \"z\", \"op\": \"add\", \"args\": [\"y\", \"fc.bias\"], "
        "\"scope\": \"blocks.3/fc\"}, "
        "{\"name\": \"s\", \"op\": \"multiply\", \"args\": [\"z\", "
        "\"0.scale\"], \"scope\": \"\"}, "
        "{\"name\": \"r\", \"op\": \"maximum\", \"args\": [\"s\", \"s\"]}]}]}");
    assert_int_equal(m->n_params, 3);
    assert_string_equal(m->params[0].name, "fc.weight");
    assert_string_equal(m->params[1].name, "fc.bias");
    assert_string_equal(m->params[2].name, "0.scale");
    assert_int_equal(m->params[2].init_kind, HS_INIT_VALUES);
    const float want[4] = {1, 2, 3, 4.5f};
    assert_memory_equal(m->params[2].init, want, sizeof want);
    assert_true(model_has_op_name(m, "fc"));
    assert_true(model_has_op_name(m, "blocks.3/fc"));
    /* An op without a scope keeps the graph's own naming. */
    assert_true(model_has_op_name(m, "graph/r"));
    hs_model_free(m);
}

/* A named block and a named repeat: "norm.weight", "blocks.<i>.weight"
 * counted from 0 within the repeat, whatever comes before it. */
static void named_layers_and_repeats(void **state)
{
    (void)state;
    const char *json =
        "{\"input\": {\"shape\": [2, 8]}, \"loop\": \"%s\", \"layers\": ["
        "{\"type\": \"linear\", \"features\": 8}, "
        "{\"repeat\": 3, \"module\": \"blocks\", \"block\": "
        "{\"type\": \"linear\", \"features\": 8}}, "
        "{\"module\": \"norm\", \"type\": \"rmsnorm\"}]}";
    char buf[512];
    snprintf(buf, sizeof buf, json, "unrolled");
    hs_model *u = load(buf);
    assert_true(param_index(u, "layers.0.weight") == 0);
    assert_true(param_index(u, "blocks.0.weight") == 2);
    assert_true(param_index(u, "blocks.2.bias") == 7);
    assert_true(param_index(u, "norm.weight") == 8);
    assert_true(model_has_op_name(u, "blocks.1/linear"));
    assert_true(model_has_op_name(u, "norm/rmsnorm"));

    snprintf(buf, sizeof buf, json, "scan");
    hs_model *s = load(buf);
    assert_int_equal(s->n_params, u->n_params);
    for (int i = 0; i < u->n_params; i++) {
        assert_string_equal(s->params[i].name, u->params[i].name);
        /* The same names draw the same values, scanned or not. */
        assert_memory_equal(s->params[i].init, u->params[i].init,
                            (size_t)hs_shape_elements(&u->params[i].shape) *
                                sizeof(float));
    }
    assert_int_equal(s->n_stacks, 2);
    assert_string_equal(s->stacks[0].name, "blocks.0-2.weight");
    assert_string_equal(s->stacks[1].name, "blocks.0-2.bias");
    assert_int_equal(s->params[param_index(s, "blocks.2.bias")].slice, 2);
    assert_true(model_has_op_name(s, "blocks.*/linear"));
    hs_model_free(s);
    hs_model_free(u);
}

/* A root repeat (an nn.Sequential as the model): "0.weight", stacks
 * "0-1.weight", the body "*" and the loop "scan". Its copies carry
 * "values" params into the stack. */
static void root_repeat_scans_with_values(void **state)
{
    (void)state;
    hs_model *m = load(
        "{\"input\": {\"shape\": [2, 4]}, \"loop\": \"scan\", \"layers\": ["
        "{\"repeat\": 2, \"module\": \"\", \"block\": {\"type\": \"graph\", "
        "\"params\": {\"w\": {\"shape\": [4, 4]}, "
        "\"t\": {\"shape\": [4], \"values\": [0.5, -1, 2, 0]}}, "
        "\"ops\": [{\"name\": \"y\", \"op\": \"dot\", \"args\": [\"x\", "
        "\"w\"], \"scope\": \"lin\"}, {\"name\": \"z\", \"op\": \"add\", "
        "\"args\": [\"y\", \"t\"], \"scope\": \"\"}]}}]}");
    assert_int_equal(m->n_params, 4);
    assert_string_equal(m->params[0].name, "0.w");
    assert_string_equal(m->params[3].name, "1.t");
    assert_string_equal(m->stacks[0].name, "0-1.w");
    assert_string_equal(m->stacks[1].name, "0-1.t");
    const float want[4] = {0.5f, -1, 2, 0};
    assert_memory_equal(m->params[1].init, want, sizeof want);
    assert_memory_equal(m->params[3].init, want, sizeof want);
    assert_true(model_has_op_name(m, "*/lin"));
    hs_model_free(m);
}

static void module_errors_name_the_path(void **state)
{
    (void)state;
    hs_error e = load_fails(
        "{\"input\": {\"shape\": [2, 4]}, \"layers\": [{\"type\": "
        "\"sequential\", \"blocks\": [{\"module\": \"a\", \"type\": "
        "\"relu\"}]}]}");
    expect_path(&e, "/layers/0/blocks/0/module", "unknown key");
    e = load_fails("{\"input\": {\"shape\": [2, 4]}, \"layers\": ["
                   "{\"module\": \"a..b\", \"type\": \"relu\"}]}");
    expect_path(&e, "/layers/0/module", "module path");
    e = load_fails("{\"input\": {\"shape\": [2, 4]}, \"layers\": ["
                   "{\"module\": \"a.\", \"type\": \"relu\"}]}");
    expect_path(&e, "/layers/0/module", "module path");
    e = load_fails("{\"input\": {\"shape\": [2, 4]}, \"layers\": ["
                   "{\"module\": \"act\", \"type\": \"relu\"}, "
                   "{\"module\": \"act\", \"type\": \"tanh\"}]}");
    expect_path(&e, "/layers/1/module", "\"act\"");
    /* A repeat's copies collide with a layer named by position. */
    e = load_fails("{\"input\": {\"shape\": [2, 4]}, \"layers\": ["
                   "{\"type\": \"relu\"}, {\"repeat\": 2, \"module\": "
                   "\"layers\", \"block\": {\"type\": \"tanh\"}}]}");
    expect_path(&e, "/layers/1/module", "layers.0");
    e = load_fails("{\"input\": {\"shape\": [2, 4]}, \"layers\": ["
                   "{\"module\": 3, \"type\": \"relu\"}]}");
    expect_path(&e, "/layers/0/module", NULL);
    /* Two root blocks may not declare one state_dict name. */
    e = load_fails("{\"input\": {\"shape\": [2, 4]}, \"layers\": ["
                   "{\"module\": \"\", \"type\": \"graph\", \"params\": "
                   "{\"w\": {\"shape\": [4]}}, \"ops\": [{\"name\": \"y\", "
                   "\"op\": \"add\", \"args\": [\"x\", \"w\"]}]}, "
                   "{\"module\": \"\", \"type\": \"graph\", \"params\": "
                   "{\"w\": {\"shape\": [4]}}, \"ops\": [{\"name\": \"y\", "
                   "\"op\": \"add\", \"args\": [\"x\", \"w\"]}]}]}");
    expect_path(&e, "/layers", "two parameters are named \"w\"");
}

static void graph_extension_errors_name_the_path(void **state)
{
    (void)state;
#define G(params, ops)                                                    \
    "{\"input\": {\"shape\": [2, 4]}, \"layers\": [{\"type\": \"graph\", " \
    "\"params\": " params ", \"ops\": " ops "}]}"
    const char *ops = "[{\"name\": \"y\", \"op\": \"negate\", \"args\": "
                      "[\"x\"]}]";
    char buf[1024];
    snprintf(buf, sizeof buf,
             G("{\"w\": {\"shape\": [2], \"values\": [1, 2, 3]}}", "%s"),
             ops);
    hs_error e = load_fails(buf);
    expect_path(&e, "/layers/0/params/w/values", "2 numbers");
    snprintf(buf, sizeof buf,
             G("{\"w\": {\"shape\": [2], \"values\": [1, \"a\"]}}", "%s"),
             ops);
    e = load_fails(buf);
    expect_path(&e, "/layers/0/params/w/values/1", "number");
    snprintf(buf, sizeof buf,
             G("{\"w\": {\"shape\": [2], \"init\": \"ones\", \"values\": "
               "[1, 2]}}",
               "%s"),
             ops);
    e = load_fails(buf);
    expect_path(&e, "/layers/0/params/w/init", "not both");
    snprintf(buf, sizeof buf, G("{\"a..b\": {\"shape\": [2]}}", "%s"), ops);
    e = load_fails(buf);
    expect_path(&e, "/layers/0/params/a..b", "state_dict path");
    snprintf(buf, sizeof buf, G("{}", "%s"),
             "[{\"name\": \"y\", \"op\": \"negate\", \"args\": [\"x\"], "
             "\"scope\": \"a//b\"}]");
    e = load_fails(buf);
    expect_path(&e, "/layers/0/ops/0/scope", "module path");
    /* Op names stay identifiers: only params take dotted paths. */
    snprintf(buf, sizeof buf, G("{}", "%s"),
             "[{\"name\": \"a.b\", \"op\": \"negate\", \"args\": [\"x\"]}]");
    e = load_fails(buf);
    expect_path(&e, "/layers/0/ops/0/name", NULL);
#undef G
}

/* "input": {"ids": N}: s32 token ids in [0, N), drawn from the seed. */
static void token_id_input(void **state)
{
    (void)state;
    hs_model *m = load(
        "{\"input\": {\"shape\": [4, 64], \"ids\": 10}, \"layers\": ["
        "{\"type\": \"graph\", \"ops\": [{\"name\": \"f\", \"op\": "
        "\"convert\", \"args\": [\"x\"], \"attrs\": {\"type\": "
        "\"f32\"}}]}]}");
    assert_int_equal(m->input_shape.dtype, HS_S32);
    assert_int_equal(m->input->shape.dtype, HS_S32);
    const int32_t *v = m->input->data;
    int seen[10] = {0};
    for (int i = 0; i < 256; i++) {
        assert_true(v[i] >= 0 && v[i] < 10);
        seen[v[i]] = 1;
    }
    for (int k = 0; k < 10; k++)
        assert_true(seen[k]); /* 256 draws reach every id */
    hs_model_free(m);
    hs_error e = load_fails("{\"input\": {\"shape\": [4, 64], \"ids\": 0},"
                            " \"layers\": [{\"type\": \"relu\"}]}");
    expect_path(&e, "/input/ids", NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(root_graph_keeps_state_dict_names),
        cmocka_unit_test(named_layers_and_repeats),
        cmocka_unit_test(root_repeat_scans_with_values),
        cmocka_unit_test(module_errors_name_the_path),
        cmocka_unit_test(graph_extension_errors_name_the_path),
        cmocka_unit_test(token_id_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
