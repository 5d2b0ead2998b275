/* test_model_dtype.c - a model's "dtype": the input, the parameters and
 * the activations at bf16/f16, initial values that are the f32 model's
 * rounded to nearest even, a scanned bf16 decoder bit-identical to the
 * unrolled one, convolution and batch norm computed in f32 between
 * converts, and the refusals (an unknown dtype, training). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "hloscope/hs_model.h"
#include "model_test_helpers.h"
#include "numerics/element_types.h"

/* The same description with "dtype" set (or not, when dtype is NULL). */
static hs_model *load_as(const char *body, const char *dtype)
{
    char json[2048];
    if (dtype)
        snprintf(json, sizeof json, "{\"dtype\": \"%s\", %s}", dtype, body);
    else
        snprintf(json, sizeof json, "{%s}", body);
    return model_load_ok(json, NULL);
}

static const char *k_decoder =
    "\"seed\": 4, \"input\": {\"shape\": [2, 8, 32]}, \"layers\": "
    "[{\"repeat\": 3, \"block\": {\"type\": \"decoder\", \"heads\": 4, "
    "\"hidden\": 64}}, {\"type\": \"linear\", \"features\": 5}]";

static void values_are_the_f32_models_rounded(void **state)
{
    (void)state;
    const char *dtypes[] = {"bf16", "f16"};
    hs_dtype types[] = {HS_BF16, HS_F16};
    hs_model *f = load_as(k_decoder, NULL);
    for (int k = 0; k < 2; k++) {
        hs_model *m = load_as(k_decoder, dtypes[k]);
        assert_int_equal(m->input->shape.dtype, types[k]);
        assert_int_equal(m->output_shape.dtype, types[k]);
        assert_int_equal(m->n_params, f->n_params);
        for (int i = 0; i < m->n_params; i++) {
            assert_string_equal(m->params[i].name, f->params[i].name);
            assert_int_equal(m->params[i].shape.dtype, types[k]);
            int64_t n = hs_shape_elements(&m->params[i].shape);
            uint16_t rounded[4096];
            assert_true(n <= 4096);
            elem_convert(HS_F32, types[k], f->params[i].init, rounded, n);
            assert_memory_equal(rounded, m->params[i].value->data,
                                (size_t)n * 2);
        }
        hs_model_free(m);
    }
    hs_model_free(f);
}

static void scanned_bf16_decoder_is_bit_identical(void **state)
{
    (void)state;
    hs_model *u = load_as(k_decoder, "bf16");
    hs_model_options o = {.loop = "scan"};
    char json[2048];
    snprintf(json, sizeof json, "{\"dtype\": \"bf16\", %s}", k_decoder);
    hs_model *s = model_load_ok(json, &o);
    assert_int_equal(s->n_stacks, 9);
    hs_tensor *yu = model_run(u), *ys = model_run(s);
    assert_int_equal(yu->shape.dtype, HS_BF16);
    int64_t n = hs_tensor_elements(yu);
    assert_memory_equal(yu->data, ys->data, (size_t)n * 2);
    /* Not all zeros: the comparison means something. */
    bool any = false;
    for (int64_t i = 0; i < n; i++)
        any |= ((const uint16_t *)yu->data)[i] != 0;
    assert_true(any);
    hs_tensor_free(yu);
    hs_tensor_free(ys);
    hs_model_free(u);
    hs_model_free(s);
}

/* Counts instructions of opcode op whose operand k is an f32 convert. */
static int f32_inside(const hs_module *mod, hs_opcode op, int *total)
{
    int inside = 0;
    *total = 0;
    const hs_computation *c = mod->comps[mod->n_comps - 1];
    for (int i = 0; i < c->n_instrs; i++) {
        const hs_instruction *in = c->instrs[i];
        if (in->opcode != op)
            continue;
        (*total)++;
        bool all = true;
        for (int k = 0; k < in->n_operands; k++)
            all &= in->operands[k]->opcode == HS_OP_CONVERT &&
                   in->operands[k]->shape.dtype == HS_F32;
        inside += all;
    }
    return inside;
}

static void conv_and_batch_norm_compute_in_f32(void **state)
{
    (void)state;
    hs_model *m = load_as(
        "\"input\": {\"shape\": [1, 4, 8, 8]}, \"layers\": ["
        "{\"type\": \"conv2d\", \"out_channels\": 8, \"kernel_size\": 3},"
        "{\"type\": \"batchnorm2d\"}, {\"type\": \"relu6\"},"
        "{\"type\": \"maxpool2d\", \"kernel_size\": 2}]",
        "bf16");
    int total = 0;
    assert_int_equal(f32_inside(m->module, HS_OP_CONVOLUTION, &total), 1);
    assert_int_equal(total, 1);
    assert_int_equal(
        f32_inside(m->module, HS_OP_BATCH_NORM_INFERENCE, &total), 1);
    assert_int_equal(total, 1);
    /* Max pooling stays at bf16. */
    const hs_computation *c = m->module->comps[m->module->n_comps - 1];
    assert_int_equal(c->root->opcode, HS_OP_REDUCE_WINDOW);
    assert_int_equal(c->root->shape.dtype, HS_BF16);
    hs_tensor *y = model_run(m);
    assert_int_equal(y->shape.dtype, HS_BF16);
    hs_tensor_free(y);
    hs_model_free(m);
}

static void refusals_name_dtype(void **state)
{
    (void)state;
    hs_error e = model_load_fails(
        "{\"dtype\": \"bf8\", \"input\": {\"shape\": [1, 4]}, "
        "\"layers\": [{\"type\": \"relu\"}]}",
        NULL);
    assert_string_equal(e.path, "/dtype");
    e = model_load_fails(
        "{\"dtype\": \"bf16\", \"input\": {\"shape\": [1, 4]}, "
        "\"layers\": [{\"type\": \"linear\", \"features\": 2}], "
        "\"train\": {\"optimizer\": {\"type\": \"sgd\", \"lr\": 0.1}}}",
        NULL);
    assert_string_equal(e.path, "/dtype");
    assert_non_null(strstr(e.message, "training"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(values_are_the_f32_models_rounded),
        cmocka_unit_test(scanned_bf16_decoder_is_bit_identical),
        cmocka_unit_test(conv_and_batch_norm_compute_in_f32),
        cmocka_unit_test(refusals_name_dtype),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
