/* test_model.c - the model JSON loader and tracer: every block type traces
 * into a module that verifies, parameters carry PyTorch's state_dict names
 * and shapes, and initial values are deterministic. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "hloscope/hs_device.h"
#include "hloscope/hs_model.h"
#include "model_test_helpers.h"

/* ---- helpers -------------------------------------------------------------- */

static hs_model *load_opts(const char *json, const hs_model_options *o)
{
    return model_load_ok(json, o);
}

static hs_model *load(const char *json) { return load_opts(json, NULL); }

static void expect_param(const hs_model *m, int i, const char *name,
                         int rank, const int64_t *dims)
{
    assert_true(i < m->n_params);
    assert_string_equal(m->params[i].name, name);
    assert_int_equal(m->params[i].shape.rank, rank);
    for (int d = 0; d < rank; d++)
        assert_int_equal(m->params[i].shape.dims[d], dims[d]);
    assert_int_equal(m->params[i].number, i + 1);
    const hs_instruction *p = m->module->entry->params[i + 1];
    assert_non_null(p);
    assert_true(hs_shape_compatible(&p->shape, &m->params[i].shape));
}

#define DIMS(...) (sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), \
                  (int64_t[]){__VA_ARGS__}
#define EXPECT(m, i, name, ...) \
    expect_param_n(m, i, name, DIMS(__VA_ARGS__))
static void expect_param_n(const hs_model *m, int i, const char *name,
                           size_t rank, const int64_t *dims)
{
    expect_param(m, i, name, (int)rank, dims);
}

static void expect_output(const hs_model *m, size_t rank,
                          const int64_t *dims)
{
    assert_int_equal(m->output_shape.rank, (int)rank);
    for (size_t d = 0; d < rank; d++)
        assert_int_equal(m->output_shape.dims[d], dims[d]);
    assert_true(hs_shape_compatible(&m->module->entry->root->shape,
                                    &m->output_shape));
}
#define EXPECT_OUTPUT(m, ...) expect_output(m, DIMS(__VA_ARGS__))

static bool has_op_name(const hs_model *m, const char *op_name)
{
    const hs_computation *c = m->module->entry;
    for (int i = 0; i < c->n_instrs; i++)
        if (c->instrs[i]->op_name &&
            strcmp(c->instrs[i]->op_name, op_name) == 0)
            return true;
    return false;
}

static int count_opcode(const hs_model *m, hs_opcode op)
{
    const hs_computation *c = m->module->entry;
    int n = 0;
    for (int i = 0; i < c->n_instrs; i++)
        n += c->instrs[i]->opcode == op;
    return n;
}

/* ---- blocks ----------------------------------------------------------------- */

static void linear_has_weight_and_bias(void **state)
{
    (void)state;
    hs_model *m = load("{\"input\": {\"shape\": [2, 16]}, \"layers\": ["
                       "{\"type\": \"linear\", \"features\": 8},"
                       "{\"type\": \"linear\", \"features\": 4, \"bias\": false}]}");
    assert_int_equal(m->n_params, 3);
    EXPECT(m, 0, "layers.0.weight", 8, 16);
    EXPECT(m, 1, "layers.0.bias", 8);
    EXPECT(m, 2, "layers.1.weight", 4, 8);
    EXPECT_OUTPUT(m, 2, 4);
    assert_int_equal(m->module->entry->n_params, 4);
    assert_string_equal(m->module->entry->params[0]->name, "x");
    assert_int_equal(m->n_layers, 2);
    assert_int_equal(m->param_elements, 8 * 16 + 8 + 4 * 8);
    assert_true(has_op_name(m, "layers.0/linear"));
    assert_true(has_op_name(m, "layers.1/linear"));
    assert_int_equal(count_opcode(m, HS_OP_DOT), 2);
    /* Defaults. */
    assert_string_equal(m->name, "model");
    assert_string_equal(m->device, "tpu-v5e");
    assert_int_equal(m->seed, 0);
    assert_int_equal(m->loop, HS_LOOP_UNROLLED);
    assert_int_equal(m->residuals, HS_RESIDUALS_SAVE);
    assert_false(m->train.enabled);
    assert_null(m->target);
    hs_model_free(m);
}

static void activations_and_softmax_trace(void **state)
{
    (void)state;
    hs_model *m = load("{\"input\": {\"shape\": [2, 3, 8]}, \"layers\": ["
                       "{\"type\": \"relu\"}, {\"type\": \"gelu\"},"
                       "{\"type\": \"silu\"}, {\"type\": \"tanh\"},"
                       "{\"type\": \"sigmoid\"}, {\"type\": \"softmax\"},"
                       "{\"type\": \"softmax\", \"axis\": 1}]}");
    assert_int_equal(m->n_params, 0);
    EXPECT_OUTPUT(m, 2, 3, 8);
    assert_true(count_opcode(m, HS_OP_ERF) == 1);
    assert_true(count_opcode(m, HS_OP_EXP) == 2);
    assert_true(has_op_name(m, "layers.1/gelu"));
    assert_true(has_op_name(m, "layers.6/softmax"));
    hs_model_free(m);
}

static void norms_have_torch_parameters(void **state)
{
    (void)state;
    hs_model *m = load("{\"input\": {\"shape\": [4, 32]}, \"layers\": ["
                       "{\"type\": \"layernorm\"},"
                       "{\"type\": \"rmsnorm\", \"eps\": 1e-5}]}");
    assert_int_equal(m->n_params, 3);
    EXPECT(m, 0, "layers.0.weight", 32);
    EXPECT(m, 1, "layers.0.bias", 32);
    EXPECT(m, 2, "layers.1.weight", 32);
    for (int i = 0; i < 32; i++) {
        assert_float_equal(m->params[0].init[i], 1.0f, 0);
        assert_float_equal(m->params[1].init[i], 0.0f, 0);
        assert_float_equal(m->params[2].init[i], 1.0f, 0);
    }
    assert_int_equal(count_opcode(m, HS_OP_RSQRT), 2);
    hs_model_free(m);
}

static void mlp_gated_and_plain(void **state)
{
    (void)state;
    hs_model *m = load("{\"input\": {\"shape\": [2, 16]}, \"layers\": ["
                       "{\"type\": \"mlp\", \"hidden\": 48},"
                       "{\"type\": \"mlp\", \"hidden\": 24, \"gated\": false,"
                       " \"activation\": \"gelu\"}]}");
    assert_int_equal(m->n_params, 5);
    EXPECT(m, 0, "layers.0.gate_proj.weight", 48, 16);
    EXPECT(m, 1, "layers.0.up_proj.weight", 48, 16);
    EXPECT(m, 2, "layers.0.down_proj.weight", 16, 48);
    EXPECT(m, 3, "layers.1.up_proj.weight", 24, 16);
    EXPECT(m, 4, "layers.1.down_proj.weight", 16, 24);
    EXPECT_OUTPUT(m, 2, 16);
    assert_true(has_op_name(m, "layers.0/gate_proj"));
    assert_true(has_op_name(m, "layers.1/down_proj"));
    assert_int_equal(count_opcode(m, HS_OP_LOGISTIC), 1);
    assert_int_equal(count_opcode(m, HS_OP_ERF), 1);
    hs_model_free(m);
}

static void attention_projects_and_masks(void **state)
{
    (void)state;
    hs_model *m = load("{\"input\": {\"shape\": [2, 5, 16]}, \"layers\": ["
                       "{\"type\": \"attention\", \"heads\": 4},"
                       "{\"type\": \"attention\", \"heads\": 2, "
                       "\"causal\": false}]}");
    assert_int_equal(m->n_params, 8);
    const char *proj[] = {"q_proj", "k_proj", "v_proj", "o_proj"};
    for (int l = 0; l < 2; l++)
        for (int p = 0; p < 4; p++) {
            char name[64];
            snprintf(name, sizeof name, "layers.%d.%s.weight", l, proj[p]);
            EXPECT(m, l * 4 + p, name, 16, 16);
        }
    EXPECT_OUTPUT(m, 2, 5, 16);
    /* Two dots per attention for the scores and the mix, four projections. */
    assert_int_equal(count_opcode(m, HS_OP_DOT), 12);
    /* Only the causal one masks. */
    assert_int_equal(count_opcode(m, HS_OP_SELECT), 1);
    assert_int_equal(count_opcode(m, HS_OP_IOTA), 2);
    assert_true(has_op_name(m, "layers.0/q_proj"));
    hs_model_free(m);
}

static void decoder_matches_llama_state_dict(void **state)
{
    (void)state;
    hs_model *m = load("{\"input\": {\"shape\": [1, 4, 32]}, \"layers\": ["
                       "{\"repeat\": 2, \"block\": {\"type\": \"decoder\","
                       " \"heads\": 4, \"hidden\": 64}}]}");
    const char *names[] = {
        "input_norm.weight", "attn.q_proj.weight", "attn.k_proj.weight",
        "attn.v_proj.weight", "attn.o_proj.weight", "post_norm.weight",
        "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight"};
    int64_t shapes[9][2] = {{32, 0},  {32, 32}, {32, 32}, {32, 32}, {32, 32},
                            {32, 0},  {64, 32}, {64, 32}, {32, 64}};
    assert_int_equal(m->n_params, 18);
    for (int l = 0; l < 2; l++)
        for (int i = 0; i < 9; i++) {
            char name[80];
            snprintf(name, sizeof name, "layers.%d.%s", l, names[i]);
            expect_param(m, l * 9 + i, name, shapes[i][1] ? 2 : 1,
                         shapes[i]);
        }
    EXPECT_OUTPUT(m, 1, 4, 32);
    assert_true(has_op_name(m, "layers.1/attn/q_proj"));
    assert_true(has_op_name(m, "layers.0/mlp/down_proj"));
    assert_true(has_op_name(m, "layers.0/input_norm"));
    assert_true(has_op_name(m, "layers.0"));
    hs_model_free(m);
}

static void decoder_with_layernorm_has_biases(void **state)
{
    (void)state;
    hs_model *m = load("{\"input\": {\"shape\": [1, 4, 32]}, \"layers\": ["
                       "{\"type\": \"decoder\", \"heads\": 2, \"hidden\": 8,"
                       " \"norm\": \"layernorm\"}]}");
    assert_int_equal(m->n_params, 11);
    EXPECT(m, 0, "layers.0.input_norm.weight", 32);
    EXPECT(m, 1, "layers.0.input_norm.bias", 32);
    EXPECT(m, 6, "layers.0.post_norm.weight", 32);
    EXPECT(m, 7, "layers.0.post_norm.bias", 32);
    hs_model_free(m);
}

static void sequential_names_children_by_index(void **state)
{
    (void)state;
    hs_model *m = load(
        "{\"input\": {\"shape\": [2, 8]}, \"layers\": ["
        "{\"type\": \"linear\", \"features\": 8},"
        "{\"type\": \"sequential\", \"blocks\": ["
        "  {\"type\": \"linear\", \"features\": 16}, {\"type\": \"relu\"},"
        "  {\"repeat\": 2, \"block\": {\"type\": \"layernorm\"}}]}]}");
    assert_int_equal(m->n_params, 8);
    EXPECT(m, 0, "layers.0.weight", 8, 8);
    EXPECT(m, 1, "layers.0.bias", 8);
    EXPECT(m, 2, "layers.1.0.weight", 16, 8);
    EXPECT(m, 3, "layers.1.0.bias", 16);
    EXPECT(m, 4, "layers.1.2.weight", 16);
    EXPECT(m, 5, "layers.1.2.bias", 16);
    EXPECT(m, 6, "layers.1.3.weight", 16);
    EXPECT(m, 7, "layers.1.3.bias", 16);
    EXPECT_OUTPUT(m, 2, 16);
    assert_true(has_op_name(m, "layers.1/0"));
    assert_true(has_op_name(m, "layers.1/1"));
    hs_model_free(m);
}

static void sequential_norms_all_named(void **state)
{
    (void)state;
    hs_model *m = load(
        "{\"input\": {\"shape\": [2, 8]}, \"layers\": ["
        "{\"type\": \"sequential\", \"blocks\": ["
        "  {\"repeat\": 2, \"block\": {\"type\": \"rmsnorm\"}}]}]}");
    assert_int_equal(m->n_params, 2);
    EXPECT(m, 0, "layers.0.0.weight", 8);
    EXPECT(m, 1, "layers.0.1.weight", 8);
    assert_true(has_op_name(m, "layers.0/1"));
    hs_model_free(m);
}

static void repeat_expands_to_own_layers(void **state)
{
    (void)state;
    hs_model *m = load("{\"input\": {\"shape\": [1, 8]}, \"layers\": ["
                       "{\"type\": \"relu\"},"
                       "{\"repeat\": 3, \"block\": {\"type\": \"linear\","
                       " \"features\": 8, \"bias\": false}}]}");
    assert_int_equal(m->n_layers, 4);
    assert_int_equal(m->n_params, 3);
    EXPECT(m, 0, "layers.1.weight", 8, 8);
    EXPECT(m, 1, "layers.2.weight", 8, 8);
    EXPECT(m, 2, "layers.3.weight", 8, 8);
    assert_int_equal(hs_model_find_param(m, "layers.2.weight"), 1);
    assert_int_equal(hs_model_find_param(m, "layers.0.weight"), -1);
    /* Own weights: the copies do not share values. */
    assert_memory_not_equal(m->params[0].init, m->params[1].init,
                            64 * sizeof(float));
    hs_model_free(m);
}

static void graph_block_ops_and_placement(void **state)
{
    (void)state;
    hs_model *m = load(
        "{\"input\": {\"shape\": [2, 8]}, \"layers\": [{\"type\": \"graph\","
        " \"params\": {\"w\": {\"shape\": [8, 4]}, \"b\": {\"shape\": [4],"
        "   \"init\": \"zeros\"}},"
        " \"ops\": ["
        "  {\"name\": \"mm\", \"op\": \"dot\", \"args\": [\"x\", \"w\"]},"
        "  {\"name\": \"h\", \"op\": \"add\", \"args\": [\"mm\", \"b\"]},"
        "  {\"name\": \"off\", \"op\": \"place_to_host\", \"args\": [\"h\"]},"
        "  {\"name\": \"on\", \"op\": \"place_to_device\", \"args\": [\"off\"]},"
        "  {\"name\": \"t\", \"op\": \"transpose\", \"args\": [\"on\"],"
        "   \"attrs\": {\"dimensions\": [1, 0]}},"
        "  {\"name\": \"s\", \"op\": \"reduce\", \"args\": [\"t\"],"
        "   \"attrs\": {\"dimensions\": [1], \"reducer\": \"max\"}},"
        "  {\"name\": \"c\", \"op\": \"compare\", \"args\": [\"s\", \"s\"],"
        "   \"attrs\": {\"direction\": \"GE\"}}],"
        " \"output\": \"t\"}]}");
    assert_int_equal(m->n_params, 2);
    EXPECT(m, 0, "layers.0.w", 8, 4);
    EXPECT(m, 1, "layers.0.b", 4);
    for (int i = 0; i < 4; i++)
        assert_float_equal(m->params[1].init[i], 0.0f, 0);
    EXPECT_OUTPUT(m, 4, 2);
    const hs_computation *c = m->module->entry;
    int host = 0, device = 0;
    for (int i = 0; i < c->n_instrs; i++) {
        const hs_instruction *in = c->instrs[i];
        if (in->opcode != HS_OP_CUSTOM_CALL)
            continue;
        assert_string_equal(in->custom_call_target,
                            "annotate_device_placement");
        assert_non_null(in->frontend_attributes);
        host += strcmp(in->frontend_attributes,
                       "_xla_buffer_placement=\"pinned_host\"") == 0;
        device += strcmp(in->frontend_attributes,
                         "_xla_buffer_placement=\"device\"") == 0;
    }
    assert_int_equal(host, 1);
    assert_int_equal(device, 1);
    assert_true(has_op_name(m, "layers.0/graph/mm"));
    hs_model_free(m);
}

static void train_section_is_parsed(void **state)
{
    (void)state;
    hs_model *m = load(
        "{\"name\": \"t\", \"seed\": 7, \"input\": {\"shape\": [3, 4]},"
        " \"layers\": [{\"type\": \"linear\", \"features\": 5}],"
        " \"loop\": \"scan\", \"residuals\": \"offload\", \"device\": \"teach\","
        " \"train\": {\"loss\": \"cross_entropy\", \"target\": \"random\","
        "  \"optimizer\": {\"type\": \"adam\", \"lr\": 0.001}, \"steps\": 3}}");
    assert_string_equal(m->name, "t");
    assert_int_equal(m->seed, 7);
    assert_string_equal(m->device, "teach");
    assert_int_equal(m->loop, HS_LOOP_SCAN);
    assert_int_equal(m->residuals, HS_RESIDUALS_OFFLOAD);
    assert_true(m->train.enabled);
    assert_int_equal(m->train.loss, HS_LOSS_CROSS_ENTROPY);
    assert_int_equal(m->train.target, HS_TARGET_RANDOM);
    assert_int_equal(m->train.optimizer, HS_OPT_ADAM);
    assert_float_equal(m->train.lr, 0.001, 1e-12);
    assert_float_equal(m->train.beta1, 0.9, 1e-12);
    assert_float_equal(m->train.beta2, 0.999, 1e-12);
    assert_float_equal(m->train.eps, 1e-8, 1e-20);
    assert_int_equal(m->train.steps, 3);
    /* Class indices for the 3 rows, in [0, 5). */
    assert_non_null(m->target);
    assert_int_equal(m->target->shape.dtype, HS_S32);
    assert_int_equal(m->target->shape.rank, 1);
    assert_int_equal(m->target->shape.dims[0], 3);
    const int32_t *cls = m->target->data;
    for (int i = 0; i < 3; i++)
        assert_true(cls[i] >= 0 && cls[i] < 5);
    hs_model_free(m);

    m = load("{\"input\": {\"shape\": [3, 4]},"
             " \"layers\": [{\"type\": \"linear\", \"features\": 5}],"
             " \"train\": {\"optimizer\": {\"type\": \"sgd\", \"lr\": 0.5}}}");
    assert_int_equal(m->train.loss, HS_LOSS_MSE);
    assert_int_equal(m->train.target, HS_TARGET_ZEROS);
    assert_int_equal(m->train.steps, 1);
    assert_int_equal(m->target->shape.dtype, HS_F32);
    assert_int_equal(m->target->shape.dims[1], 5);
    for (int i = 0; i < 15; i++)
        assert_float_equal(hs_tensor_f32(m->target)[i], 0, 0);
    hs_model_free(m);
}

/* ---- initial values ---------------------------------------------------------- */

static const char *k_two_linears =
    "{\"seed\": %d, \"input\": {\"shape\": [2, 32]}, \"loop\": \"%s\","
    " \"layers\": [{\"repeat\": 2, \"block\": {\"type\": \"linear\","
    " \"features\": 32}}]}";

static hs_model *two_linears(int seed, const char *loop)
{
    char json[512];
    snprintf(json, sizeof json, k_two_linears, seed, loop);
    return load(json);
}

static void same_seed_gives_same_weights(void **state)
{
    (void)state;
    hs_model *a = two_linears(3, "unrolled");
    hs_model *b = two_linears(3, "scan");
    assert_int_equal(a->n_params, b->n_params);
    for (int i = 0; i < a->n_params; i++)
        assert_memory_equal(a->params[i].init, b->params[i].init,
                            (size_t)hs_shape_elements(&a->params[i].shape) *
                                sizeof(float));
    assert_memory_equal(hs_tensor_f32(a->input), hs_tensor_f32(b->input),
                        64 * sizeof(float));
    hs_model *c = two_linears(4, "unrolled");
    assert_memory_not_equal(a->params[0].init, c->params[0].init,
                            32 * 32 * sizeof(float));
    assert_memory_not_equal(hs_tensor_f32(a->input), hs_tensor_f32(c->input),
                            64 * sizeof(float));
    hs_model_free(a);
    hs_model_free(b);
    hs_model_free(c);
}

static void different_names_draw_different_streams(void **state)
{
    (void)state;
    float a[64], b[64], c[64];
    hs_model_fill_uniform(1, "layers.0.weight", -1, 1, a, 64);
    hs_model_fill_uniform(1, "layers.1.weight", -1, 1, b, 64);
    hs_model_fill_uniform(1, "layers.0.weight", -1, 1, c, 64);
    assert_memory_not_equal(a, b, sizeof a);
    assert_memory_equal(a, c, sizeof a);
    /* A prefix of a longer stream is the shorter stream. */
    float d[8];
    hs_model_fill_uniform(1, "layers.0.weight", -1, 1, d, 8);
    assert_memory_equal(a, d, sizeof d);
}

static void init_follows_pytorch_ranges(void **state)
{
    (void)state;
    hs_model *m = two_linears(0, "unrolled");
    float bound = 1.0f / sqrtf(32.0f);
    for (int i = 0; i < 2; i++) {
        const hs_model_param *p = &m->params[i];
        assert_int_equal(p->init_kind, HS_INIT_UNIFORM);
        assert_float_equal(p->bound, bound, 1e-7);
        float lo = 1, hi = -1;
        for (int64_t k = 0; k < hs_shape_elements(&p->shape); k++) {
            assert_true(p->init[k] >= -bound && p->init[k] < bound);
            lo = fminf(lo, p->init[k]);
            hi = fmaxf(hi, p->init[k]);
        }
        if (i == 0) /* 1024 draws cover most of the range */
            assert_true(lo < -0.9f * bound && hi > 0.9f * bound);
    }
    const float *x = hs_tensor_f32(m->input);
    double sum = 0;
    for (int k = 0; k < 64; k++) {
        assert_true(x[k] >= -1 && x[k] < 1);
        sum += x[k];
    }
    assert_true(fabs(sum / 64) < 0.3);
    hs_model_free(m);
}

static void options_override_the_description(void **state)
{
    (void)state;
    hs_model_options o = {.loop = "scan", .device = "gpu-h100", .batch = 5};
    hs_model *m = load_opts(
        "{\"input\": {\"shape\": [2, 8]}, \"device\": \"tpu-v5e\","
        " \"layers\": [{\"type\": \"relu\"}]}",
        &o);
    assert_int_equal(m->loop, HS_LOOP_SCAN);
    assert_string_equal(m->device, "gpu-h100");
    assert_int_equal(m->input_shape.dims[0], 5);
    EXPECT_OUTPUT(m, 5, 8);
    hs_model_free(m);

    hs_model_options so = {.shapes_only = true};
    m = load_opts("{\"input\": {\"shape\": [2, 8]}, \"layers\": ["
                  "{\"type\": \"linear\", \"features\": 3}]}",
                  &so);
    assert_null(m->input);
    assert_null(m->params[0].value);
    assert_null(m->params[0].init);
    hs_tensor *args[4];
    assert_int_equal(hs_model_args(m, args, 4), -1);
    hs_model_free(m);
}

/* loop "scan": the repeat's parameters keep their names and order, and
 * the entry takes one stacked [L, ...] parameter per name; hs_model_args
 * hands out the stacks, whose slices are the per-layer values. */
static void scanned_args_feed_stacked_parameters(void **state)
{
    (void)state;
    hs_model *m = two_linears(0, "scan");
    assert_int_equal(m->n_params, 4);
    assert_string_equal(m->params[0].name, "layers.0.weight");
    assert_string_equal(m->params[3].name, "layers.1.bias");
    assert_int_equal(m->n_stacks, 2);
    assert_int_equal(m->n_args, 3);
    assert_string_equal(m->stacks[0].name, "layers.0-1.weight");
    assert_string_equal(m->stacks[1].name, "layers.0-1.bias");
    assert_int_equal(m->stacks[0].shape.dims[0], 2);
    assert_int_equal(m->stacks[0].shape.dims[1], 32);
    const int64_t slices[4] = {0, 0, 1, 1};
    const int stacks[4] = {0, 1, 0, 1};
    for (int i = 0; i < 4; i++) {
        const hs_model_param *p = &m->params[i];
        assert_int_equal(p->slice, slices[i]);
        assert_int_equal(p->stack, stacks[i]);
        assert_int_equal(p->number, m->stacks[stacks[i]].number);
        size_t bytes = (size_t)hs_shape_bytes(&p->shape);
        assert_ptr_equal(p->value->data,
                         (char *)m->stacks[p->stack].value->data +
                             (size_t)p->slice * bytes);
    }
    hs_tensor *args[8];
    assert_int_equal(hs_model_args(m, args, 8), 3);
    assert_int_equal(hs_model_args(m, args, 2), -1);
    assert_ptr_equal(args[0], m->input);
    assert_ptr_equal(args[1], m->stacks[0].value);
    assert_ptr_equal(args[2], m->stacks[1].value);
    assert_int_equal(m->module->entry->n_params, 3);
    assert_string_equal(m->module->entry->params[1]->name, "layers.0-1.weight");
    hs_model_free(m);

    hs_model_options so = {.loop = "scan", .shapes_only = true};
    m = load_opts("{\"input\": {\"shape\": [2, 8]}, \"layers\": [{\"repeat\":"
                  " 3, \"block\": {\"type\": \"linear\", \"features\": 8}}]}",
                  &so);
    assert_int_equal(m->n_stacks, 2);
    assert_null(m->stacks[0].value);
    assert_null(m->params[0].value);
    assert_int_equal(hs_model_args(m, args, 8), -1);
    hs_model_free(m);
}

static void args_follow_parameter_order(void **state)
{
    (void)state;
    hs_model *m = two_linears(0, "unrolled");
    hs_tensor *args[8];
    assert_int_equal(hs_model_args(m, args, 8), 5);
    assert_ptr_equal(args[0], m->input);
    for (int i = 0; i < 4; i++)
        assert_ptr_equal(args[1 + i], m->params[i].value);
    assert_int_equal(hs_model_args(m, args, 4), -1);
    assert_int_equal(m->n_args, 5);
    assert_int_equal(m->n_stacks, 0);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(m->params[i].slice, -1);
        assert_int_equal(m->params[i].stack, -1);
    }
    hs_model_free(m);
}


/* ---- examples ------------------------------------------------------------------- */

static hs_model *load_example(const char *file, bool shapes_only)
{
    char path[512];
    snprintf(path, sizeof path, "%s/examples/%s", HS_SOURCE_DIR, file);
    hs_model_options o = {.shapes_only = shapes_only};
    hs_error err;
    hs_model *m = hs_model_load_file(path, &o, &err);
    if (!m) {
        char buf[1024];
        hs_error_format(&err, buf, sizeof buf);
        fail_msg("%s: %s", file, buf);
    }
    assert_int_equal(hs_module_verify(m->module, &err), HS_OK);
    return m;
}

static void examples_load(void **state)
{
    (void)state;
    hs_model *m = load_example("seed_64_linear.json", false);
    assert_int_equal(m->n_layers, 64);
    assert_int_equal(m->n_params, 128);
    assert_string_equal(m->params[127].name, "layers.63.bias");
    EXPECT_OUTPUT(m, 1, 1024);
    hs_model_free(m);

    m = load_example("decoder_50x256.json", true);
    assert_int_equal(m->n_layers, 50);
    assert_int_equal(m->n_params, 50 * 9);
    assert_string_equal(m->params[50 * 9 - 1].name,
                        "layers.49.mlp.down_proj.weight");
    hs_model_free(m);

    m = load_example("mlp.json", false);
    assert_true(m->n_params > 0);
    hs_model_free(m);
}

/* ---- numerics on the device interpreter ------------------------------------ */

static void expect_close(const float *got, const double *want, int64_t n,
                         double tol)
{
    for (int64_t i = 0; i < n; i++)
        if (fabs(got[i] - want[i]) > tol * (1 + fabs(want[i])))
            fail_msg("element %lld: got %.7g, want %.7g", (long long)i,
                     got[i], want[i]);
}

static void linear_computes_x_wt_plus_b(void **state)
{
    (void)state;
    hs_model *m = load("{\"seed\": 5, \"input\": {\"shape\": [3, 6]},"
                       " \"layers\": [{\"type\": \"linear\", \"features\": 4},"
                       " {\"type\": \"gelu\"}]}");
    const float *x = hs_tensor_f32(m->input), *w = m->params[0].init,
                *b = m->params[1].init;
    double want[12];
    for (int i = 0; i < 3; i++)
        for (int o = 0; o < 4; o++) {
            double acc = b[o];
            for (int k = 0; k < 6; k++)
                acc += (double)x[i * 6 + k] * w[o * 6 + k];
            want[i * 4 + o] = 0.5 * acc * (1 + erf(acc / sqrt(2.0)));
        }
    hs_tensor *y = model_run(m);
    expect_close(hs_tensor_f32(y), want, 12, 1e-5);
    hs_tensor_free(y);
    hs_model_free(m);
}

static void norms_and_softmax_match_torch_formulas(void **state)
{
    (void)state;
    const char *kinds[] = {"{\"type\": \"layernorm\"}",
                           "{\"type\": \"rmsnorm\"}",
                           "{\"type\": \"softmax\"}"};
    for (int kind = 0; kind < 3; kind++) {
        char json[256];
        snprintf(json, sizeof json,
                 "{\"seed\": 2, \"input\": {\"shape\": [2, 3, 5]},"
                 " \"layers\": [%s]}",
                 kinds[kind]);
        hs_model *m = load(json);
        const float *x = hs_tensor_f32(m->input);
        double want[30];
        for (int r = 0; r < 6; r++) {
            const float *v = x + r * 5;
            double mean = 0, sq = 0, mx = -1e30, se = 0;
            for (int k = 0; k < 5; k++) {
                mean += v[k] / 5.0;
                sq += (double)v[k] * v[k] / 5.0;
                mx = fmax(mx, v[k]);
            }
            double var = 0;
            for (int k = 0; k < 5; k++) {
                var += (v[k] - mean) * (v[k] - mean) / 5.0;
                se += exp(v[k] - mx);
            }
            for (int k = 0; k < 5; k++)
                want[r * 5 + k] =
                    kind == 0   ? (v[k] - mean) / sqrt(var + 1e-5)
                    : kind == 1 ? v[k] / sqrt(sq + 1e-6)
                                : exp(v[k] - mx) / se;
        }
        hs_tensor *y = model_run(m);
        expect_close(hs_tensor_f32(y), want, 30, 1e-5);
        hs_tensor_free(y);
        hs_model_free(m);
    }
}

/* softmax(q k^T / sqrt(d) + causal mask) v, per head, then o_proj. */
static void attention_matches_reference(void **state)
{
    (void)state;
    enum { S = 3, F = 4, H = 2, D = 2 };
    hs_model *m = load("{\"seed\": 9, \"input\": {\"shape\": [1, 3, 4]},"
                       " \"layers\": [{\"type\": \"attention\", \"heads\": 2}]}");
    const float *x = hs_tensor_f32(m->input);
    double qkv[3][S][F];
    for (int p = 0; p < 3; p++)
        for (int s = 0; s < S; s++)
            for (int o = 0; o < F; o++) {
                double acc = 0;
                for (int k = 0; k < F; k++)
                    acc += (double)x[s * F + k] * m->params[p].init[o * F + k];
                qkv[p][s][o] = acc;
            }
    double ctx[S][F] = {{0}};
    for (int h = 0; h < H; h++)
        for (int i = 0; i < S; i++) {
            double sc[S], mx = -1e30, sum = 0;
            for (int j = 0; j <= i; j++) {
                sc[j] = 0;
                for (int d = 0; d < D; d++)
                    sc[j] += qkv[0][i][h * D + d] * qkv[1][j][h * D + d];
                sc[j] /= sqrt((double)D);
                mx = fmax(mx, sc[j]);
            }
            for (int j = 0; j <= i; j++)
                sum += (sc[j] = exp(sc[j] - mx));
            for (int j = 0; j <= i; j++)
                for (int d = 0; d < D; d++)
                    ctx[i][h * D + d] += sc[j] / sum * qkv[2][j][h * D + d];
        }
    double want[S * F];
    for (int s = 0; s < S; s++)
        for (int o = 0; o < F; o++) {
            double acc = 0;
            for (int k = 0; k < F; k++)
                acc += ctx[s][k] * m->params[3].init[o * F + k];
            want[s * F + o] = acc;
        }
    hs_tensor *y = model_run(m);
    expect_close(hs_tensor_f32(y), want, S * F, 1e-5);
    hs_tensor_free(y);
    hs_model_free(m);
}

static void examples_run_forward(void **state)
{
    (void)state;
    const char *files[] = {"mlp.json", "graph_offload.json",
                           "cnn_resnet_tiny.json"};
    for (int i = 0; i < 3; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/examples/%s", HS_SOURCE_DIR,
                 files[i]);
        hs_error err;
        hs_model *m = hs_model_load_file(path, NULL, &err);
        assert_non_null(m);
        hs_tensor *y = model_run(m);
        for (int64_t k = 0; k < hs_tensor_elements(y); k++)
            assert_true(isfinite(hs_tensor_f32(y)[k]));
        hs_tensor_free(y);
        hs_model_free(m);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(linear_has_weight_and_bias),
        cmocka_unit_test(activations_and_softmax_trace),
        cmocka_unit_test(norms_have_torch_parameters),
        cmocka_unit_test(mlp_gated_and_plain),
        cmocka_unit_test(attention_projects_and_masks),
        cmocka_unit_test(decoder_matches_llama_state_dict),
        cmocka_unit_test(decoder_with_layernorm_has_biases),
        cmocka_unit_test(sequential_names_children_by_index),
        cmocka_unit_test(sequential_norms_all_named),
        cmocka_unit_test(repeat_expands_to_own_layers),
        cmocka_unit_test(graph_block_ops_and_placement),
        cmocka_unit_test(train_section_is_parsed),
        cmocka_unit_test(same_seed_gives_same_weights),
        cmocka_unit_test(different_names_draw_different_streams),
        cmocka_unit_test(init_follows_pytorch_ranges),
        cmocka_unit_test(options_override_the_description),
        cmocka_unit_test(args_follow_parameter_order),
        cmocka_unit_test(scanned_args_feed_stacked_parameters),
        cmocka_unit_test(examples_load),
        cmocka_unit_test(linear_computes_x_wt_plus_b),
        cmocka_unit_test(norms_and_softmax_match_torch_formulas),
        cmocka_unit_test(attention_matches_reference),
        cmocka_unit_test(examples_run_forward),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
