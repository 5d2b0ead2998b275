/*
 * test_whatif_reroll.c - the repeats and scan section of a what-if
 * (hs_whatif.h, engine/src/whatif/reroll.c): an unrolled module rewritten
 * into one while over stacked per-layer parameters, as scan_layers would
 * have traced it. Inputs: a decoder dumped unrolled by hloscope itself
 * (examples/decoder_50x256.json, traced and printed as HLO text, then
 * parsed back as a user's dump is), the real Mixtral 8x7B train step of
 * ../shared/hlo-real, and small stacks written here in HLO text.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_file.h"
#include "hloscope/hs_hlo_text.h"
#include "hloscope/hs_program.h"
#include "hloscope/hs_whatif.h"
#include "hlo_test_helpers.h"

#define DECODER HS_SOURCE_DIR "/examples/decoder_50x256.json"
#define MIXTRAL HS_SOURCE_DIR "/../shared/hlo-real/hlo_mixtral_8x7b_bf16_1x8.hlo"

static void analyse(const hs_module *m, bool run, hs_whatif *w)
{
    hs_whatif_options o;
    hs_whatif_options_init(&o);
    o.run_equivalence = run;
    hs_error err;
    if (hs_whatif_analyse(m, &o, w, &err) != HS_OK)
        fail_msg("whatif: %s", err.message);
}

/* The model traced with the loop it is given, as HLO text parsed back. */
static hs_module *dump_model(const char *path, const char *loop)
{
    size_t len;
    hs_error err;
    char *json = hs_read_file(path, &len, &err);
    assert_non_null(json);
    hs_program_options o;
    hs_program_options_init(&o);
    o.model.loop = loop;
    hs_program_source src = {.kind = HS_SOURCE_MODEL, .text = json,
                             .len = len};
    hs_program *p = hs_program_trace(&src, &o, &err);
    free(json);
    if (!p)
        fail_msg("trace: %s", err.message);
    char *text = print(p->traced);
    hs_program_free(p);
    hs_module *m = parse(text);
    free(text);
    return m;
}

static int count_opcode(const hs_module *m, hs_opcode op)
{
    int n = 0;
    for (int c = 0; c < m->n_comps; c++)
        for (int k = 0; k < m->comps[c]->n_instrs; k++)
            n += m->comps[c]->instrs[k]->opcode == op;
    return n;
}

static void decoder_dumped_unrolled_rerolls_into_one_bit_identical_while(
    void **state)
{
    hs_module *m = dump_model(DECODER, "unrolled");
    assert_int_equal(count_opcode(m, HS_OP_WHILE), 0);
    hs_whatif w;
    analyse(m, true, &w);

    assert_true(w.n_repeats >= 1);
    assert_int_equal(w.repeats[0].count, 50);
    const hs_whatif_scan *s = &w.scan;
    if (!s->analysed)
        fail_msg("not rerolled: %s", s->reason);
    assert_string_equal(s->path, w.repeats[0].path);
    assert_int_equal(count_opcode(s->rerolled, HS_OP_WHILE), 1);
    /* one stacked parameter per weight of a layer, [50, ...] */
    const hs_computation *e = s->rerolled->entry;
    int stacked = 0;
    for (int k = 0; k < e->n_params; k++)
        stacked += e->params[k]->shape.rank >= 1 &&
                   e->params[k]->shape.dims[0] == 50;
    assert_true(stacked >= 2);
    assert_true(e->n_params < m->entry->n_params);
    assert_int_equal(s->equivalent, 1);
    assert_true(s->max_abs_difference == 0.0);
    assert_true(s->compile_seconds_before > 0 && s->compile_seconds_after > 0);

    /* as small as the model traced with "loop": "scan" itself, within 10% */
    hs_module *scan = dump_model(DECODER, "scan");
    int64_t own = hs_module_instruction_count(scan);
    assert_true(s->instructions_after * 10 <= own * 11 &&
                own * 10 <= s->instructions_after * 11);
    hs_module_free(scan);

    /* the rewritten module prints as HLO text that parses and verifies */
    char *text = print(s->rerolled);
    hs_module *back = parse(text);
    hs_error err;
    assert_int_equal(hs_module_verify(back, &err), HS_OK);
    assert_int_equal(hs_module_instruction_count(back),
                     s->instructions_after);
    hs_module_free(back);
    free(text);

    json_t *j = hs_whatif_json(&w);
    assert_true(json_is_true(json_object_get(json_object_get(j, "scan"),
                                             "equivalent")));
    assert_int_equal(json_integer_value(json_object_get(
                         json_array_get(json_object_get(j, "repeats"), 0),
                         "count")),
                     50);
    json_decref(j);
    hs_whatif_free(&w);
    hs_module_free(m);
}

/* Three layers: each reads its own weight, a shift every layer shares
 * (a loop invariant) and the layer before; the middle of layer 1 and the
 * last layer are read after the run (a y and the final carry). */

static char *stack_text(const char *op1, const char *op2)
{
    static const char head[] =
        "HloModule stack\n"
        "ENTRY main {\n"
        "  x = f32[4,8] parameter(0)\n"
        "  w0 = f32[8,8] parameter(1), metadata={op_name=\"layers.0/linear\"}\n"
        "  w1 = f32[8,8] parameter(2), metadata={op_name=\"layers.1/linear\"}\n"
        "  w2 = f32[8,8] parameter(3), metadata={op_name=\"layers.2/linear\"}\n"
        "  s = f32[4,8] parameter(4)\n";
    char layers[2048];
    snprintf(layers, sizeof layers, "%s%s%s",
             "  d0 = f32[4,8] dot(x, w0), lhs_contracting_dims={1}, rhs_contracting_dims={0}, metadata={op_name=\"layers.0/linear\"}\n"
             "  a0 = f32[4,8] add(d0, s), metadata={op_name=\"layers.0/shift\"}\n"
             "  t0 = f32[4,8] tanh(a0), metadata={op_name=\"layers.0/act\"}\n",
             "  d1 = f32[4,8] dot(t0, w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}, metadata={op_name=\"layers.1/linear\"}\n"
             "  a1 = f32[4,8] add(d1, s), metadata={op_name=\"layers.1/shift\"}\n"
             "  t1 = f32[4,8] OP1(a1), metadata={op_name=\"layers.1/act\"}\n",
             "  d2 = f32[4,8] dot(t1, w2), lhs_contracting_dims={1}, rhs_contracting_dims={0}, metadata={op_name=\"layers.2/linear\"}\n");
    char *op = strstr(layers, "OP1");
    char tail[1024];
    snprintf(tail, sizeof tail, "%s%s", op1, op + 3);
    snprintf(op, sizeof layers - (size_t)(op - layers), "%s", tail);
    char *text = malloc(8192);
    snprintf(text, 8192,
             "%s%s"
             "  a2 = f32[4,8] add(d2, s), metadata={op_name=\"layers.2/shift\"}\n"
             "  t2 = f32[4,8] %s(a2), metadata={op_name=\"layers.2/act\"}\n"
             "  ROOT r = (f32[4,8], f32[4,8]) tuple(t2, a1)\n"
             "}\n",
             head, layers, op2);
    return text;
}

static void invariants_and_values_read_after_the_run_stay_bit_identical(
    void **state)
{
    char *text = stack_text("tanh", "tanh");
    hs_module *m = parse(text);
    free(text);
    hs_whatif w;
    analyse(m, true, &w);
    if (!w.scan.analysed)
        fail_msg("not rerolled: %s", w.scan.reason);
    assert_int_equal(w.repeats[0].count, 3);
    assert_int_equal(count_opcode(w.scan.rerolled, HS_OP_WHILE), 1);
    assert_int_equal(count_opcode(w.scan.rerolled, HS_OP_DOT), 1);
    /* x, s and one stacked weight [3, 8, 8] */
    const hs_computation *e = w.scan.rerolled->entry;
    assert_int_equal(e->n_params, 3);
    assert_int_equal(e->params[2]->shape.rank, 3);
    assert_int_equal(e->params[2]->shape.dims[0], 3);
    assert_int_equal(w.scan.equivalent, 1);
    hs_whatif_free(&w);
    hs_module_free(m);
}

/* The middle layer differs: no two neighbours alike, nothing rerolls. */
static void blocks_that_differ_in_one_instruction_say_which(void **state)
{
    char *text = stack_text("exponential", "tanh");
    hs_module *m = parse(text);
    free(text);
    hs_whatif w;
    analyse(m, false, &w);
    assert_false(w.scan.analysed);
    assert_null(w.scan.rerolled);
    /* both instructions named, and what differs */
    assert_contains(w.scan.reason, "%t1 (exponential");
    assert_contains(w.scan.reason, "(tanh");
    assert_contains(w.scan.reason, "opcode differs");
    assert_contains(w.scan.reason, "layers.1");
    json_t *j = hs_whatif_json(&w);
    json_t *scan = json_object_get(j, "scan");
    assert_true(json_is_false(json_object_get(scan, "analysed")));
    assert_string_equal(json_string_value(json_object_get(scan, "reason")),
                        w.scan.reason);
    /* the sections this build lacks say so instead of guessing */
    assert_true(json_is_false(
        json_object_get(json_object_get(j, "offload"), "analysed")));
    json_decref(j);
    hs_whatif_free(&w);
    hs_module_free(m);
}

/* The last layer differs: the first two are rerolled, the last stays
 * unrolled, and the note says which instruction set it apart. */
static void a_differing_last_layer_stays_unrolled(void **state)
{
    char *text = stack_text("tanh", "exponential");
    hs_module *m = parse(text);
    free(text);
    hs_whatif w;
    analyse(m, true, &w);
    if (!w.scan.analysed)
        fail_msg("not rerolled: %s", w.scan.reason);
    assert_contains(w.scan.note, "layers 0..1 of 3");
    assert_contains(w.scan.note, "%t2 (exponential");
    assert_int_equal(count_opcode(w.scan.rerolled, HS_OP_WHILE), 1);
    assert_int_equal(count_opcode(w.scan.rerolled, HS_OP_EXP), 1);
    assert_int_equal(w.scan.equivalent, 1);
    hs_whatif_free(&w);
    hs_module_free(m);
}

static void a_module_without_repeats_says_so(void **state)
{
    hs_module *m = parse("HloModule one\nENTRY main {\n"
                         "  x = f32[4] parameter(0)\n"
                         "  ROOT y = f32[4] negate(x)\n}\n");
    hs_whatif w;
    analyse(m, true, &w);
    assert_int_equal(w.n_repeats, 0);
    assert_false(w.scan.analysed);
    assert_contains(w.scan.reason, "no repeated layers");
    hs_whatif_free(&w);
    hs_module_free(m);
}

static void an_unknown_device_fails_the_whole(void **state)
{
    hs_module *m = parse("HloModule one\nENTRY main {\n"
                         "  x = f32[4] parameter(0)\n"
                         "  ROOT y = f32[4] negate(x)\n}\n");
    hs_whatif_options o;
    hs_whatif_options_init(&o);
    o.device = "tpu-v99";
    hs_whatif w;
    hs_error err;
    assert_int_equal(hs_whatif_analyse(m, &o, &w, &err), HS_ERR_INVALID);
    assert_contains(err.message, "tpu-v99");
    hs_module_free(m);
}

/* The real train step: its 32 decoder layers are found from structure
 * alone. Whether the largest run rerolls is reported either way: a
 * rerolled module must verify, a refusal must say where. */
static void mixtral_finds_its_32_layers(void **state)
{
    size_t len;
    hs_error err;
    char *text = hs_read_file(MIXTRAL, &len, &err);
    if (!text)
        skip();
    hs_module *m = hs_hlo_parse(text, len, &err);
    free(text);
    assert_non_null(m);
    hs_whatif w;
    analyse(m, false, &w);
    assert_true(w.n_repeats >= 1);
    assert_int_equal(w.repeats[0].count, 32);
    /* The forward layers of the train step: the first and last are cut
     * a few instructions off the others (the remat opt-barrier between
     * layers), the 30 between reroll, and the module verifies, prints as
     * HLO text and parses back. */
    if (!w.scan.analysed)
        fail_msg("not rerolled: %s", w.scan.reason);
    assert_string_equal(w.scan.path, w.repeats[0].path);
    assert_contains(w.scan.note, "of 32 rerolled");
    assert_int_equal(hs_module_verify(w.scan.rerolled, &err), HS_OK);
    /* every run of the step, forward and backward, each its own loop */
    assert_true(w.scan.loops >= 2);
    assert_int_equal(count_opcode(w.scan.rerolled, HS_OP_WHILE),
                     count_opcode(m, HS_OP_WHILE) + w.scan.loops);
    assert_true(w.scan.instructions_after < w.scan.instructions_before);
    char *back_text = print(w.scan.rerolled);
    hs_module *back = parse(back_text);
    free(back_text);
    assert_int_equal(hs_module_instruction_count(back),
                     w.scan.instructions_after);
    hs_module_free(back);
    hs_whatif_free(&w);
    hs_module_free(m);
}

/* A training step hloscope traced unrolled (eight decoder layers, SGD),
 * printed as HLO text and parsed back: its forward layers and its backward
 * layers are two runs, and each becomes its own while. Every run of the
 * entry says what became of it; both modules run on the same drawn
 * arguments. */
static const char k_train[] =
    "{\"name\":\"reroll-train\",\"seed\":5,\"input\":{\"shape\":[1,16,32]},"
    "\"layers\":[{\"repeat\":8,\"block\":{\"type\":\"decoder\",\"heads\":2,"
    "\"hidden\":48}}],"
    "\"train\":{\"loss\":\"mse\",\"target\":\"random\","
    "\"optimizer\":{\"type\":\"sgd\",\"lr\":0.01},\"steps\":1}}";

static void train_step_rerolls_forward_and_backward_runs(void **state)
{
    hs_program_options po;
    hs_program_options_init(&po);
    po.train = true;
    hs_program_source src = {.kind = HS_SOURCE_MODEL, .text = k_train,
                             .len = strlen(k_train)};
    hs_error err;
    hs_error_clear(&err);
    hs_program *p = hs_program_build(&src, &po, &err);
    if (!p)
        fail_msg("build: %s", err.message);
    char *text = print(p->traced);
    hs_program_free(p);
    hs_module *m = parse(text);
    free(text);
    assert_int_equal(count_opcode(m, HS_OP_WHILE), 0);

    hs_whatif w;
    analyse(m, true, &w);
    if (!w.scan.analysed)
        fail_msg("not rerolled: %s", w.scan.reason);
    int rerolled = 0;
    for (int k = 0; k < w.scan.n_runs; k++) {
        const hs_whatif_scan_run *r = &w.scan.runs[k];
        /* every run says what became of it */
        assert_non_null(r->note);
        assert_true(r->note[0] != '\0');
        if (r->rerolled)
            assert_true(r->layers_rerolled >= 2 &&
                        r->layers_rerolled <= r->layers);
        rerolled += r->rerolled;
        print_message("  %s: %lld layers, %s %lld: %s\n", r->path,
                      (long long)r->layers,
                      r->rerolled ? "rerolled" : "not rerolled",
                      (long long)r->layers_rerolled, r->note);
    }
    print_message("train step: %d runs, %d rerolled, %lld -> %lld "
                  "instructions; %s\n",
                  w.scan.n_runs, rerolled,
                  (long long)w.scan.instructions_before,
                  (long long)w.scan.instructions_after, w.scan.note);
    /* the forward layers and the backward layers, each its own loop */
    assert_true(w.scan.loops >= 2);
    assert_int_equal(w.scan.loops, rerolled);
    assert_int_equal(count_opcode(w.scan.rerolled, HS_OP_WHILE),
                     w.scan.loops);
    assert_true(w.scan.instructions_after < w.scan.instructions_before);
    assert_int_equal(hs_module_verify(w.scan.rerolled, &err), HS_OK);
    if (w.scan.equivalent != 1)
        fail_msg("not bit-identical: %s", w.scan.note);

    json_t *j = hs_whatif_json(&w);
    json_t *r0 = json_array_get(
        json_object_get(json_object_get(j, "scan"), "runs"), 0);
    assert_true(json_is_boolean(json_object_get(r0, "rerolled")));
    assert_true(json_is_string(json_object_get(r0, "note")));
    assert_int_equal(json_integer_value(json_object_get(
                         json_object_get(j, "scan"), "loops")),
                     w.scan.loops);
    json_decref(j);
    hs_whatif_free(&w);
    hs_module_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            decoder_dumped_unrolled_rerolls_into_one_bit_identical_while),
        cmocka_unit_test(
            invariants_and_values_read_after_the_run_stay_bit_identical),
        cmocka_unit_test(blocks_that_differ_in_one_instruction_say_which),
        cmocka_unit_test(a_differing_last_layer_stays_unrolled),
        cmocka_unit_test(a_module_without_repeats_says_so),
        cmocka_unit_test(an_unknown_device_fails_the_whole),
        cmocka_unit_test(mixtral_finds_its_32_layers),
        cmocka_unit_test(train_step_rerolls_forward_and_backward_runs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
