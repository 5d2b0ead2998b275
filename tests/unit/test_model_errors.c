/* test_model_errors.c - every way a model description can be wrong gives
 * one error that says what and where: line and column for syntax, the JSON
 * pointer for everything else. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "hloscope/hs_model.h"
#include "model_test_helpers.h"

static hs_error load_fails_opts(const char *json, const hs_model_options *o)
{
    return model_load_fails(json, o);
}

static hs_error load_fails(const char *json)
{
    return load_fails_opts(json, NULL);
}

static void expect_message(const hs_error *e, const char *part)
{
    if (!strstr(e->message, part))
        fail_msg("message \"%s\" lacks \"%s\"", e->message, part);
}

#define INPUT2 "\"input\": {\"shape\": [2, 8]}, "
#define INPUT3 "\"input\": {\"shape\": [1, 4, 8]}, "

static void syntax_error_has_line_and_column(void **state)
{
    (void)state;
    hs_error e = load_fails("{\n  \"input\": {\"shape\": [1, 4]},\n"
                            "  \"layers\": [{\"type\": \"relu\"},]\n}\n");
    assert_int_equal(e.status, HS_ERR_PARSE);
    assert_int_equal(e.line, 3);
    assert_true(e.column > 0);
    assert_string_equal(e.path, "");

    e = load_fails("{\"input\": ");
    assert_int_equal(e.status, HS_ERR_PARSE);
    assert_int_equal(e.line, 1);
    e = load_fails("");
    assert_int_equal(e.status, HS_ERR_PARSE);
}

static void duplicate_key_is_rejected(void **state)
{
    (void)state;
    hs_error e = load_fails("{\"input\": {\"shape\": [2, 8]},\n"
                            " \"layers\": [{\"type\": \"linear\",\n"
                            "   \"features\": 4, \"features\": 5}]}");
    assert_int_equal(e.line, 3);
    expect_message(&e, "duplicate");
}

static void unknown_key_names_path_and_suggests(void **state)
{
    (void)state;
    hs_error e = load_fails("{" INPUT2 "\"layers\": [{\"repeat\": 2, "
                            "\"block\": {\"type\": \"linear\", "
                            "\"featurs\": 4}}]}");
    assert_int_equal(e.status, HS_ERR_INVALID);
    assert_string_equal(e.path, "/layers/0/block/featurs");
    expect_message(&e, "unknown key 'featurs'");
    expect_message(&e, "did you mean 'features'");

    e = load_fails("{" INPUT2 "\"layers\": [{\"type\": \"relu\"}], "
                   "\"lop\": \"scan\"}");
    assert_string_equal(e.path, "/lop");
    expect_message(&e, "'loop'");

    e = load_fails("{" INPUT2 "\"layers\": [{\"type\": \"relu\"}], "
                   "\"zzzzzz\": 1}");
    assert_string_equal(e.path, "/zzzzzz");
    expect_message(&e, "known keys");
}

static void unknown_block_type_suggests(void **state)
{
    (void)state;
    hs_error e = load_fails("{" INPUT2 "\"layers\": [{\"type\": \"relu\"},"
                            " {\"type\": \"linaer\", \"features\": 3}]}");
    assert_string_equal(e.path, "/layers/1/type");
    expect_message(&e, "did you mean \"linear\"");

    e = load_fails("{" INPUT2 "\"layers\": [{\"features\": 3}]}");
    assert_string_equal(e.path, "/layers/0");
    expect_message(&e, "\"type\"");
}

static void wrong_types_name_the_value(void **state)
{
    (void)state;
    hs_error e = load_fails("{" INPUT2 "\"layers\": [{\"type\": \"linear\","
                            " \"features\": \"8\"}]}");
    assert_string_equal(e.path, "/layers/0/features");
    expect_message(&e, "expected a positive integer");

    e = load_fails("{" INPUT2 "\"layers\": [{\"type\": \"linear\","
                   " \"features\": 2.5}]}");
    assert_string_equal(e.path, "/layers/0/features");

    e = load_fails("{" INPUT2 "\"layers\": [{\"type\": \"linear\","
                   " \"features\": 8, \"bias\": 1}]}");
    assert_string_equal(e.path, "/layers/0/bias");
    expect_message(&e, "boolean");

    e = load_fails("{" INPUT2 "\"layers\": {\"type\": \"relu\"}}");
    assert_string_equal(e.path, "/layers");

    e = load_fails("[1, 2]");
    assert_int_equal(e.status, HS_ERR_INVALID);

    e = load_fails("{" INPUT2 "\"layers\": [{\"type\": \"layernorm\","
                   " \"eps\": -1}]}");
    assert_string_equal(e.path, "/layers/0/eps");
    expect_message(&e, "positive number");

    e = load_fails("{" INPUT2 "\"layers\": [{\"type\": \"relu\"}],"
                   " \"seed\": -1}");
    assert_string_equal(e.path, "/seed");
}

static void negative_features_is_rejected(void **state)
{
    (void)state;
    hs_error e = load_fails("{" INPUT2 "\"layers\": [{\"type\": \"linear\","
                            " \"features\": -3}]}");
    assert_int_equal(e.status, HS_ERR_INVALID);
    assert_string_equal(e.path, "/layers/0/features");
    expect_message(&e, "expected a positive integer, got -3");

    e = load_fails("{" INPUT2 "\"layers\": [{\"type\": \"mlp\","
                   " \"hidden\": 0}]}");
    assert_string_equal(e.path, "/layers/0/hidden");
}

static void missing_keys_are_named(void **state)
{
    (void)state;
    hs_error e = load_fails("{\"layers\": [{\"type\": \"relu\"}]}");
    assert_string_equal(e.path, "/input");
    e = load_fails("{" INPUT2 "\"name\": \"m\"}");
    assert_string_equal(e.path, "/layers");
    e = load_fails("{" INPUT2 "\"layers\": [{\"type\": \"linear\"}]}");
    assert_string_equal(e.path, "/layers/0/features");
    expect_message(&e, "missing");
    e = load_fails("{" INPUT2 "\"layers\": []}");
    assert_string_equal(e.path, "/layers");
    e = load_fails("{\"input\": {\"shape\": [8]}, "
                   "\"layers\": [{\"type\": \"relu\"}]}");
    assert_string_equal(e.path, "/input/shape");
    e = load_fails("{\"input\": {\"shape\": [2, 0]}, "
                   "\"layers\": [{\"type\": \"relu\"}]}");
    assert_string_equal(e.path, "/input/shape/1");
}

static void attention_needs_3d_input(void **state)
{
    (void)state;
    hs_error e = load_fails("{" INPUT2 "\"layers\": [{\"type\": \"relu\"},"
                            " {\"type\": \"attention\", \"heads\": 2}]}");
    assert_int_equal(e.status, HS_ERR_INVALID);
    assert_string_equal(e.path, "/layers/1");
    expect_message(&e, "3-D input");

    e = load_fails("{" INPUT2 "\"layers\": [{\"repeat\": 3, \"block\": "
                   "{\"type\": \"decoder\", \"heads\": 2, \"hidden\": 4}}]}");
    assert_string_equal(e.path, "/layers/0/block");
    expect_message(&e, "decoder needs a 3-D input");

    e = load_fails("{" INPUT3 "\"layers\": [{\"type\": \"attention\","
                   " \"heads\": 3}]}");
    assert_string_equal(e.path, "/layers/0/heads");
    expect_message(&e, "divide");
}

static void layer_count_limit(void **state)
{
    (void)state;
    hs_error e = load_fails("{" INPUT2 "\"layers\": [{\"repeat\": 5000, "
                            "\"block\": {\"type\": \"relu\"}}]}");
    assert_int_equal(e.status, HS_ERR_LIMIT);
    assert_string_equal(e.path, "/layers/0/repeat");
    expect_message(&e, "max_layers");

    /* Huge counts do not overflow or allocate. */
    e = load_fails("{" INPUT2 "\"layers\": [{\"repeat\": 9223372036854775807,"
                   " \"block\": {\"type\": \"sequential\", \"blocks\": [{"
                   "\"repeat\": 9223372036854775807, \"block\": {\"type\": "
                   "\"relu\"}}]}}]}");
    assert_int_equal(e.status, HS_ERR_LIMIT);

    hs_model_options o = {.limits = {.max_layers = 4}};
    e = load_fails_opts("{" INPUT2 "\"layers\": [{\"type\": \"relu\"},"
                        " {\"type\": \"sequential\", \"blocks\": ["
                        "{\"type\": \"relu\"}, {\"type\": \"relu\"},"
                        "{\"type\": \"relu\"}]}]}",
                        &o);
    assert_int_equal(e.status, HS_ERR_LIMIT);
    assert_string_equal(e.path, "/layers/1");

    o.limits.max_layers = 5;
    hs_error err;
    const char *ok = "{" INPUT2 "\"layers\": [{\"type\": \"relu\"},"
                     " {\"type\": \"sequential\", \"blocks\": ["
                     "{\"type\": \"relu\"}, {\"type\": \"relu\"},"
                     "{\"type\": \"relu\"}]}]}";
    hs_model *m = hs_model_load(ok, strlen(ok), &o, &err);
    assert_non_null(m);
    hs_model_free(m);
}

static void element_and_depth_limits(void **state)
{
    (void)state;
    hs_error e = load_fails("{\"input\": {\"shape\": [1, 1024]}, \"layers\": "
                            "[{\"type\": \"linear\", \"features\": 1048576}]}");
    assert_int_equal(e.status, HS_ERR_LIMIT);
    expect_message(&e, "max_tensor_elements");

    e = load_fails("{\"input\": {\"shape\": [1048576, 1048576]}, "
                   "\"layers\": [{\"type\": \"relu\"}]}");
    assert_int_equal(e.status, HS_ERR_LIMIT);
    assert_string_equal(e.path, "/input/shape");

    /* Attention scores [B, H, S, S] grow with S^2. */
    hs_model_options o = {.limits = {.max_tensor_elements = 100000},
                          .shapes_only = true};
    e = load_fails_opts("{\"input\": {\"shape\": [1, 512, 8]}, \"layers\": "
                        "[{\"type\": \"attention\", \"heads\": 2}]}",
                        &o);
    assert_int_equal(e.status, HS_ERR_LIMIT);
    assert_string_equal(e.path, "/layers/0");
    expect_message(&e, "[1,2,512,512]");

    /* Sizes that would overflow int64 are limits, not wrap-arounds. */
    e = load_fails("{" INPUT2 "\"layers\": [{\"type\": \"mlp\", "
                   "\"hidden\": 9223372036854775807}]}");
    assert_int_equal(e.status, HS_ERR_LIMIT);
    e = load_fails("{" INPUT2 "\"layers\": [{\"type\": \"graph\", \"ops\": "
                   "[{\"name\": \"c\", \"op\": \"constant\", \"attrs\": "
                   "{\"value\": 1, \"shape\": [4294967296, 4294967296, 2]}}"
                   "]}]}");
    assert_int_equal(e.status, HS_ERR_LIMIT);
    assert_string_equal(e.path, "/layers/0/ops/0/attrs/shape");
    e = load_fails("{\"input\": {\"shape\": [65536, 4096]}, \"layers\": "
                   "[{\"type\": \"graph\", \"ops\": [{\"name\": \"o\", "
                   "\"op\": \"dot\", \"args\": [\"x\", \"x\"], \"attrs\": "
                   "{\"rhs_contracting_dims\": [1]}}]}]}");
    assert_int_equal(e.status, HS_ERR_LIMIT);
    assert_string_equal(e.path, "/layers/0/ops/0");

    char deep[400];
    int n = snprintf(deep, sizeof deep, "{" INPUT2 "\"layers\": [{\"type\":"
                                        " \"relu\"}], \"description\": ");
    for (int i = 0; i < 40; i++)
        deep[n++] = '[';
    for (int i = 0; i < 40; i++)
        deep[n++] = ']';
    deep[n++] = '}';
    deep[n] = '\0';
    e = load_fails(deep);
    assert_int_equal(e.status, HS_ERR_LIMIT);
    expect_message(&e, "max_json_depth");
    assert_int_equal(e.line, 1);
}

static void graph_errors_point_at_the_op(void **state)
{
    (void)state;
    hs_error e = load_fails(
        "{" INPUT2 "\"layers\": [{\"type\": \"graph\", \"params\": "
        "{\"w\": {\"shape\": [8, 8]}}, \"ops\": ["
        "{\"name\": \"a\", \"op\": \"dot\", \"args\": [\"x\", \"w\"]},"
        "{\"name\": \"b\", \"op\": \"add\", \"args\": [\"aa\", \"x\"]}]}]}");
    assert_string_equal(e.path, "/layers/0/ops/1/args/0");
    expect_message(&e, "unknown argument \"aa\"");
    expect_message(&e, "did you mean \"a\"");

    /* An op cannot use a later one. */
    e = load_fails("{" INPUT2 "\"layers\": [{\"type\": \"graph\", \"ops\": ["
                   "{\"name\": \"a\", \"op\": \"add\", \"args\": [\"x\", "
                   "\"b\"]},"
                   "{\"name\": \"b\", \"op\": \"negate\", \"args\": [\"x\"]}"
                   "]}]}");
    assert_string_equal(e.path, "/layers/0/ops/0/args/1");

    e = load_fails("{" INPUT2 "\"layers\": [{\"type\": \"graph\", \"ops\": ["
                   "{\"name\": \"a\", \"op\": \"ad\", \"args\": [\"x\"]}]}]}");
    assert_string_equal(e.path, "/layers/0/ops/0/op");
    expect_message(&e, "did you mean \"add\"");

    e = load_fails("{" INPUT2 "\"layers\": [{\"type\": \"graph\", \"ops\": ["
                   "{\"name\": \"a\", \"op\": \"add\", \"args\": [\"x\"]}]}]}");
    assert_string_equal(e.path, "/layers/0/ops/0/args");
    expect_message(&e, "takes 2 arguments");

    e = load_fails("{" INPUT2 "\"layers\": [{\"type\": \"graph\", \"ops\": ["
                   "{\"name\": \"x\", \"op\": \"negate\", \"args\": [\"x\"]}"
                   "]}]}");
    assert_string_equal(e.path, "/layers/0/ops/0/name");

    e = load_fails("{" INPUT2 "\"layers\": [{\"type\": \"graph\", \"ops\": ["
                   "{\"name\": \"a\", \"op\": \"negate\", \"args\": [\"x\"]}"
                   "], \"output\": \"b\"}]}");
    assert_string_equal(e.path, "/layers/0/output");

    e = load_fails("{" INPUT2 "\"layers\": [{\"type\": \"graph\", \"ops\": ["
                   "{\"name\": \"a\", \"op\": \"compare\", \"args\": [\"x\","
                   " \"x\"], \"attrs\": {\"direction\": \"LTE\"}}]}]}");
    assert_string_equal(e.path, "/layers/0/ops/0/attrs/direction");

    e = load_fails("{" INPUT2 "\"layers\": [{\"type\": \"graph\", \"ops\": ["
                   "{\"name\": \"a\", \"op\": \"negate\", \"args\": [\"x\"],"
                   " \"attrs\": {\"dimensions\": [0]}}]}]}");
    assert_string_equal(e.path, "/layers/0/ops/0/attrs/dimensions");

    /* A shape error from the builder names the op. */
    e = load_fails("{" INPUT2 "\"layers\": [{\"type\": \"graph\", \"params\":"
                   " {\"w\": {\"shape\": [3, 8]}}, \"ops\": ["
                   "{\"name\": \"a\", \"op\": \"add\", \"args\": [\"x\", "
                   "\"w\"]}]}]}");
    assert_string_equal(e.path, "/layers/0/ops/0");
}

static void options_and_train_are_checked(void **state)
{
    (void)state;
    hs_model_options o = {.loop = "scna"};
    hs_error e = load_fails_opts("{" INPUT2 "\"layers\": [{\"type\": "
                                 "\"relu\"}]}",
                                 &o);
    assert_string_equal(e.path, "/loop");

    e = load_fails("{" INPUT2 "\"layers\": [{\"type\": \"relu\"}], "
                   "\"train\": {\"loss\": \"mse\"}}");
    assert_string_equal(e.path, "/train/optimizer");

    e = load_fails("{" INPUT2 "\"layers\": [{\"type\": \"relu\"}], "
                   "\"train\": {\"optimizer\": {\"type\": \"sgd\", "
                   "\"lr\": 0.1, \"beta1\": 0.9}}}");
    assert_string_equal(e.path, "/train/optimizer/beta1");

    e = load_fails("{" INPUT2 "\"layers\": [{\"type\": \"relu\"}], "
                   "\"train\": {\"optimizer\": {\"type\": \"adam\", "
                   "\"lr\": 0.1, \"beta2\": 1.5}}}");
    assert_string_equal(e.path, "/train/optimizer/beta2");

    e = load_fails("{" INPUT2 "\"layers\": [{\"type\": \"relu\"}], "
                   "\"train\": {\"steps\": 0, \"optimizer\": {\"type\": "
                   "\"sgd\", \"lr\": 0.1}}}");
    assert_string_equal(e.path, "/train/steps");

    e = load_fails("{" INPUT2 "\"layers\": [{\"type\": \"relu\"}], "
                   "\"residuals\": \"offlaod\"}");
    assert_string_equal(e.path, "/residuals");
    expect_message(&e, "did you mean \"offload\"");

    e = load_fails("{" INPUT2 "\"layers\": [{\"type\": \"softmax\", "
                   "\"axis\": 2}]}");
    assert_string_equal(e.path, "/layers/0/axis");
}

static void missing_file_is_an_io_error(void **state)
{
    (void)state;
    hs_error e;
    assert_null(hs_model_load_file("/nonexistent/model.json", NULL, &e));
    assert_int_equal(e.status, HS_ERR_IO);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(syntax_error_has_line_and_column),
        cmocka_unit_test(duplicate_key_is_rejected),
        cmocka_unit_test(unknown_key_names_path_and_suggests),
        cmocka_unit_test(unknown_block_type_suggests),
        cmocka_unit_test(wrong_types_name_the_value),
        cmocka_unit_test(negative_features_is_rejected),
        cmocka_unit_test(missing_keys_are_named),
        cmocka_unit_test(attention_needs_3d_input),
        cmocka_unit_test(layer_count_limit),
        cmocka_unit_test(element_and_depth_limits),
        cmocka_unit_test(graph_errors_point_at_the_op),
        cmocka_unit_test(options_and_train_are_checked),
        cmocka_unit_test(missing_file_is_an_io_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
