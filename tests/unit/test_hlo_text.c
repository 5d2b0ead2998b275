/* test_hlo_text.c - the HLO text parser and printer: XLA's own sample files,
 * the print(parse(x)) fixed point, error positions, and hostile input. */
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

#include "hloscope/hs_hlo_text.h"
#include "hloscope/hs_ir.h"
#include "hlo_test_helpers.h"

#define DATA_DIR HS_SOURCE_DIR "/tests/data/hlo/"

static const char *const samples[] = {
    "add.hlo",
    "cpu_hlo.hlo",
    "gpu_hlo_pass.hlo",
    "matrix_einsum.hlo",
    "multiple_gemm_fusions.hlo",
    "single_device_tupled.hlo",
    "while_with_known_trip_count.hlo",
};
#define N_SAMPLES (sizeof samples / sizeof samples[0])

static const char *const own_files[] = {
    "kitchen_sink.hlo",
    "mlp_long_form.hlo",
    "mlp_short_form.hlo",
    "offload_memory_space.hlo",
};
#define N_OWN (sizeof own_files / sizeof own_files[0])

static char *read_text(const char *dir, const char *name, size_t *len)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    *len = fread(buf, 1, (size_t)n, f);
    buf[*len] = '\0';
    fclose(f);
    return buf;
}

static hs_module *parse_or_fail(const char *text)
{
    hs_error err;
    hs_module *m = hs_hlo_parse(text, strlen(text), &err);
    if (!m) {
        char msg[1024];
        hs_error_format(&err, msg, sizeof msg);
        fail_msg("parse failed: %s", msg);
    }
    return m;
}

static hs_module *parse_file(const char *name)
{
    size_t len;
    char *text = read_text(DATA_DIR, name, &len);
    hs_module *m = parse_or_fail(text);
    free(text);
    return m;
}

/* Parses text expecting an error; returns it. */
static hs_error parse_error(const char *text)
{
    hs_error err;
    hs_module *m = hs_hlo_parse(text, strlen(text), &err);
    if (m) {
        hs_module_free(m);
        fail_msg("expected a parse error for:\n%s", text);
    }
    assert_int_equal(err.status, HS_ERR_PARSE);
    return err;
}

/* print(parse(text)) must equal print(parse(print(parse(text)))). */
static void assert_fixed_point(const hs_module *m)
{
    char *once = hs_hlo_print(m);
    assert_non_null(once);
    hs_module *again = parse_or_fail(once);
    char *twice = hs_hlo_print(again);
    assert_non_null(twice);
    if (strcmp(once, twice) != 0)
        fail_msg("not a fixed point:\n--- first\n%s\n--- second\n%s", once,
                 twice);
    free(once);
    free(twice);
    hs_module_free(again);
}

static void assert_verifies(const hs_module *m)
{
    hs_error err;
    hs_error_clear(&err);
    if (hs_module_verify(m, &err) != HS_OK) {
        char msg[1024];
        hs_error_format(&err, msg, sizeof msg);
        fail_msg("module %s does not verify: %s", m->name, msg);
    }
}

/* ------------------------------------------------------------------------ */

static void every_sample_parses_and_verifies(void **state)
{
    (void)state;
    for (size_t k = 0; k < N_SAMPLES; k++) {
        size_t len;
        char *text = read_text(HS_SAMPLES_DIR, samples[k], &len);
        hs_module **mods;
        hs_error err;
        int n = hs_hlo_parse_many(text, len, &mods, &err);
        if (n < 0) {
            char msg[1024];
            hs_error_format(&err, msg, sizeof msg);
            fail_msg("%s: %s", samples[k], msg);
        }
        int want = strcmp(samples[k], "matrix_einsum.hlo") == 0 ? 2 : 1;
        assert_int_equal(n, want);
        for (int j = 0; j < n; j++) {
            assert_non_null(mods[j]->entry);
            assert_non_null(mods[j]->entry->root);
            assert_verifies(mods[j]);
            hs_module_free(mods[j]);
        }
        free(mods);
        free(text);
    }
}

static void every_file_prints_a_fixed_point(void **state)
{
    (void)state;
    for (size_t k = 0; k < N_SAMPLES + N_OWN; k++) {
        const char *dir = k < N_SAMPLES ? HS_SAMPLES_DIR : DATA_DIR;
        const char *name = k < N_SAMPLES ? samples[k] : own_files[k - N_SAMPLES];
        size_t len;
        char *text = read_text(dir, name, &len);
        hs_module **mods;
        hs_error err;
        int n = hs_hlo_parse_many(text, len, &mods, &err);
        assert_true(n > 0);
        for (int j = 0; j < n; j++) {
            assert_fixed_point(mods[j]);
            hs_module_free(mods[j]);
        }
        free(mods);
        free(text);
    }
}

static void printer_writes_xla_long_form(void **state)
{
    (void)state;
    hs_module *m = parse_or_fail("HloModule f\n\nENTRY f {\n"
                                 "  arg = f32[2,2]{1,0} parameter(0)\n"
                                 "  ROOT add_result = f32[2,2]{1,0} add(arg, arg)\n"
                                 "}\n");
    char *text = hs_hlo_print(m);
    assert_string_equal(
        text, "HloModule f\n"
              "\n"
              "ENTRY %f (arg: f32[2,2]) -> f32[2,2] {\n"
              "  %arg = f32[2,2]{1,0} parameter(0)\n"
              "  ROOT %add_result = f32[2,2]{1,0} add(f32[2,2]{1,0} %arg, "
              "f32[2,2]{1,0} %arg)\n"
              "}\n");
    free(text);
    hs_module_free(m);
}

static void while_without_entry_or_root_takes_the_last(void **state)
{
    (void)state;
    size_t len;
    char *text = read_text(HS_SAMPLES_DIR, "while_with_known_trip_count.hlo",
                           &len);
    hs_module *m = parse_or_fail(text);
    free(text);
    assert_string_equal(m->entry->name, "main");
    assert_true(m->entry->is_entry);
    assert_ptr_equal(m->comps[m->n_comps - 1], m->entry);
    hs_instruction *w = find_instr(m, "w");
    assert_ptr_equal(m->entry->root, w);
    assert_int_equal(w->opcode, HS_OP_WHILE);
    assert_int_equal(w->known_trip_count, 7);
    assert_int_equal(w->n_called, 2);
    assert_string_equal(w->called[0]->name, "condition");
    assert_string_equal(w->called[1]->name, "body");
    assert_string_equal(w->called[0]->root->name, "done");
    hs_instruction *done = w->called[0]->root;
    assert_int_equal(done->direction, HS_DIR_LT);
    hs_module_free(m);
}

static void names_reused_across_computations_become_unique(void **state)
{
    (void)state;
    size_t len;
    char *text = read_text(HS_SAMPLES_DIR, "while_with_known_trip_count.hlo",
                           &len);
    hs_module *m = parse_or_fail(text);
    free(text);
    /* "p" is a parameter in condition and body and a constant in main. */
    assert_string_equal(m->comps[0]->instrs[0]->name, "p");
    assert_string_equal(m->comps[1]->instrs[0]->name, "p.1");
    assert_string_equal(m->entry->instrs[0]->name, "p.2");
    for (int a = 0; a < m->n_comps; a++)
        for (int i = 0; i < m->comps[a]->n_instrs; i++)
            for (int b = 0; b < m->n_comps; b++)
                for (int j = 0; j < m->comps[b]->n_instrs; j++)
                    if (a != b || i != j)
                        assert_string_not_equal(m->comps[a]->instrs[i]->name,
                                                m->comps[b]->instrs[j]->name);
    hs_module_free(m);
}

static void known_trip_count_is_printed_as_backend_config(void **state)
{
    (void)state;
    hs_module *m = parse_or_fail(
        "cond {\n  p = s32[] parameter(0)\n  c = s32[] constant(3)\n"
        "  ROOT lt = pred[] compare(p, c), direction=LT\n}\n"
        "body {\n  p = s32[] parameter(0)\n  one = s32[] constant(1)\n"
        "  ROOT n = s32[] add(p, one)\n}\n"
        "ENTRY main {\n  z = s32[] constant(0)\n"
        "  ROOT w = s32[] while(z), condition=cond, body=body\n}\n");
    hs_instruction *w = find_instr(m, "w");
    assert_int_equal(w->known_trip_count, -1);
    w->known_trip_count = 3; /* as the trip-count pass would */
    char buf[512];
    hs_hlo_print_instruction(w, buf, sizeof buf);
    assert_string_equal(buf, "%w = s32[] while(s32[] %z), condition=%cond, "
                             "body=%body, backend_config={\"known_trip_count\""
                             ":{\"n\":\"3\"}}");
    assert_fixed_point(m);
    hs_module_free(m);
}

/* ------------------------------------------------------------------------ */
/* Errors: where, and what was expected                                      */
/* ------------------------------------------------------------------------ */

static void missing_equals_reports_line_and_column(void **state)
{
    (void)state;
    hs_error e = parse_error("HloModule m\n\nENTRY e {\n  x f32[] parameter(0)\n}\n");
    assert_int_equal(e.line, 4);
    assert_int_equal(e.column, 5);
    assert_string_equal(e.instruction, "x");
    assert_non_null(strstr(e.message, "expected '='"));
}

static void bad_shape_reports_line_and_column(void **state)
{
    (void)state;
    hs_error e = parse_error("ENTRY e {\n  x = f32[2, parameter(0)\n}\n");
    assert_int_equal(e.line, 2);
    assert_int_equal(e.column, 14);
    assert_non_null(strstr(e.message, "dimension"));
    e = parse_error("ENTRY e {\n  x = f33[2] parameter(0)\n}\n");
    assert_int_equal(e.line, 2);
    assert_int_equal(e.column, 7);
    assert_non_null(strstr(e.message, "expected a shape"));
    e = parse_error("ENTRY e {\n  x = f32[2]{1,0} parameter(0)\n}\n");
    assert_int_equal(e.line, 2);
    assert_non_null(strstr(e.message, "layout"));
}

static void unknown_operand_is_named(void **state)
{
    (void)state;
    hs_error e = parse_error("ENTRY e {\n  x = f32[] parameter(0)\n"
                             "  ROOT y = f32[] add(x, z)\n}\n");
    assert_int_equal(e.line, 3);
    assert_int_equal(e.column, 25);
    assert_string_equal(e.instruction, "y");
    assert_non_null(strstr(e.message, "unknown operand 'z'"));
}

static void unknown_computation_is_named(void **state)
{
    (void)state;
    hs_error e = parse_error("ENTRY e {\n  x = f32[] parameter(0)\n"
                             "  ROOT w = f32[] while(x), condition=nope, body=e\n}\n");
    assert_int_equal(e.line, 3);
    assert_int_equal(e.column, 38);
    assert_string_equal(e.instruction, "w");
    assert_non_null(strstr(e.message, "unknown computation 'nope'"));
}

static void unterminated_comment_reports_its_start(void **state)
{
    (void)state;
    hs_error e = parse_error("ENTRY e {\n  x = f32[] parameter(0) /* never closed\n}\n");
    assert_int_equal(e.line, 2);
    assert_int_equal(e.column, 26);
    assert_non_null(strstr(e.message, "unterminated comment"));
}

static void unbalanced_braces_report_the_opener(void **state)
{
    (void)state;
    hs_error e = parse_error("ENTRY e {\n  x = f32[] parameter(0), foo={{a}\n");
    assert_int_equal(e.line, 2);
    assert_int_equal(e.column, 31);
    assert_non_null(strstr(e.message, "unbalanced '{'"));
    e = parse_error("ENTRY e {\n  x = f32[] parameter(0), foo=(]\n}\n");
    assert_int_equal(e.line, 2);
    assert_int_equal(e.column, 32);
    assert_non_null(strstr(e.message, "expected ')'"));
    e = parse_error("ENTRY e {\n  x = f32[] parameter(0)\n");
    assert_int_equal(e.line, 3);
    assert_int_equal(e.column, 1);
    assert_non_null(strstr(e.message, "expected '}' to close computation 'e' "
                                      "opened at 1:9"));
}

static void other_malformed_inputs_are_parse_errors(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "// only a comment\n",
        "HloModule\n",
        "HloModule m\nENTRY e { }\n",
        "ENTRY e {\n  x = f32[] parameter(0)\n  x = f32[] parameter(1)\n}\n",
        "ENTRY e {\n  x = f32[] parameter(0)\n  y = f32[] parameter(0)\n}\n",
        "ENTRY e {\n  ROOT x = f32[] parameter(0)\n  ROOT y = f32[] negate(x)\n}\n",
        "ENTRY a {\n  x = f32[] parameter(0)\n}\nENTRY b {\n  x = f32[] parameter(0)\n}\n",
        "a {\n  x = f32[] parameter(0)\n}\na {\n  x = f32[] parameter(0)\n}\n",
        "ENTRY e {\n  x = f32[] parameter(0), metadata={op_name=\"a}\n}\n",
        "ENTRY e {\n  x = f32[] parameter(0),\n}\n",
        "ENTRY e {\n  x = f32[] parameter(0), dimensions=\n}\n",
        "ENTRY e {\n  x = f32[1,2,3,4,5,6,7,8,9] parameter(0)\n}\n",
        "ENTRY e {\n  x = f32[-1] parameter(0)\n}\n",
        "ENTRY e {\n  x = f32[99999999999999999999] parameter(0)\n}\n",
        "ENTRY e {\n  x = f32[] parameter(0)\n  ROOT y = f32[] compare(x, x), direction=XX\n}\n",
        "ENTRY e {\n  x = f32[] parameter(0)\n  ROOT y = f32[] negate(y)\n}\n",
        "HloModule a\nENTRY e {\n  x = f32[] parameter(0)\n}\nHloModule b\n",
        "ENTRY e (p: f32[]) f32[] {\n  p = f32[] parameter(0)\n}\n",
        "ENTRY e {\n  x = f32[2] parameter(0)\n  ROOT s = f32[1] slice(x), slice={[0:1}\n}\n",
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        hs_error e = parse_error(bad[k]);
        assert_true(e.line >= 1);
        assert_true(e.column >= 1);
        assert_true(e.message[0] != '\0');
    }
}

static void split_file_errors_keep_file_lines(void **state)
{
    (void)state;
    const char *text = "HloModule a\nENTRY e {\n  ROOT x = f32[] parameter(0)\n}\n"
                       "// -----\n"
                       "HloModule b\nENTRY e {\n  ROOT x = f32[] negate(q)\n}\n"
                       "// -----\n";
    hs_module **mods = (hs_module **)1;
    hs_error e;
    assert_int_equal(hs_hlo_parse_many(text, strlen(text), &mods, &e), -1);
    assert_null(mods);
    assert_int_equal(e.line, 8);
    assert_int_equal(e.column, 25);
    const char *ok = "HloModule a\nENTRY e {\n  ROOT x = f32[] parameter(0)\n}\n"
                     "// -----\n// nothing but comments\n// -----\n"
                     "HloModule b\nENTRY e {\n  ROOT x = s32[] parameter(0)\n}\n";
    assert_int_equal(hs_hlo_parse_many(ok, strlen(ok), &mods, &e), 2);
    assert_string_equal(mods[0]->name, "a");
    assert_string_equal(mods[1]->name, "b");
    hs_module_free(mods[0]);
    hs_module_free(mods[1]);
    free(mods);
}

/* ------------------------------------------------------------------------ */
/* What survives a round trip                                                */
/* ------------------------------------------------------------------------ */

static void memory_space_layout_round_trips(void **state)
{
    (void)state;
    hs_module *m = parse_file("offload_memory_space.hlo");
    hs_instruction *host = find_instr(m, "host");
    assert_int_equal(host->shape.memory_space, HS_MEMSPACE_HOST);
    assert_null(host->shape.layout_tail);
    hs_instruction *tiled = find_instr(m, "tiled");
    assert_int_equal(tiled->shape.memory_space, HS_MEMSPACE_HOST);
    assert_string_equal(tiled->shape.layout_tail, "T(8,128)");
    assert_int_equal(tiled->shape.minor_to_major[0], 0);
    assert_int_equal(tiled->shape.minor_to_major[1], 1);
    hs_instruction *start = find_instr(m, "start");
    assert_int_equal(start->shape.dtype, HS_TUPLE);
    assert_int_equal(start->shape.n_elems, 3);
    assert_int_equal(start->shape.elems[1].memory_space, HS_MEMSPACE_HOST);
    assert_int_equal(find_instr(m, "dyn")->shape.dynamic_mask, 1);
    assert_int_equal(find_instr(m, "s")->shape.memory_space, HS_MEMSPACE_HOST);

    char *text = hs_hlo_print(m);
    assert_non_null(strstr(text, "%host = f32[4,8]{1,0:S(5)} copy(f32[4,8]{1,0} %x)"));
    assert_non_null(strstr(text, "f32[4,8]{0,1:T(8,128)S(5)} copy("));
    assert_non_null(strstr(text, "%dyn = f32[<=4,8]{1,0} copy("));
    assert_non_null(strstr(text, "%s = f32[]{:S(5)} constant(2.5)"));
    free(text);
    assert_fixed_point(m);
    assert_verifies(m);
    hs_module_free(m);
}

static void short_and_long_form_print_identically(void **state)
{
    (void)state;
    hs_module *a = parse_file("mlp_long_form.hlo");
    hs_module *b = parse_file("mlp_short_form.hlo");
    char *ta = hs_hlo_print(a), *tb = hs_hlo_print(b);
    assert_string_equal(ta, tb);
    /* The short form defines its reducer last; callees still come first. */
    assert_string_equal(b->comps[0]->name, "add.1");
    assert_ptr_equal(b->comps[1], b->entry);
    assert_ptr_equal(find_instr(b, "reduce.8")->called[0], b->comps[0]);
    free(ta);
    free(tb);
    hs_module_free(a);
    hs_module_free(b);
}

static void metadata_op_name_survives_round_trip(void **state)
{
    (void)state;
    hs_module *m = parse_file("mlp_short_form.hlo");
    char *text = hs_hlo_print(m);
    hs_module *again = parse_or_fail(text);
    hs_instruction *dot = find_instr(again, "dot.3");
    assert_string_equal(dot->op_name, "layers.0/linear");
    assert_string_equal(dot->op_type, "aten__linear");
    assert_int_equal(dot->dot->n_lhs_contracting, 1);
    assert_int_equal(dot->dot->rhs_contracting[0], 1);
    assert_string_equal(find_instr(again, "relu")->op_name, "layers.1/relu");
    assert_non_null(strstr(text, "metadata={op_type=\"aten__linear\" "
                                 "op_name=\"layers.0/linear\"}"));
    free(text);
    hs_module_free(again);
    hs_module_free(m);

    m = parse_file("kitchen_sink.hlo");
    hs_instruction *rp = find_instr(m, "rp");
    assert_string_equal(rp->op_name, "layers.2/rp");
    assert_string_equal(rp->metadata_rest, "source_file=\"model.py\" source_line=12");
    hs_module_free(m);
}

static void constants_decode_into_c_arrays(void **state)
{
    (void)state;
    hs_module *m = parse_file("kitchen_sink.hlo");
    const float *cf = find_instr(m, "cf")->literal;
    assert_non_null(cf);
    const float want[] = {1, 2, 3, 4, 5, 6.125f};
    for (int k = 0; k < 6; k++)
        assert_true(cf[k] == want[k]);
    const float *later = find_instr(m, "later")->literal;
    assert_true(later[0] == 1.5f && later[1] == -2.25f);
    assert_true(isinf(later[2]) && later[2] > 0);
    assert_true(isinf(later[3]) && later[3] < 0);
    const int32_t *cs = find_instr(m, "cs")->literal;
    assert_int_equal(cs[0], -1);
    assert_int_equal(cs[2], 2147483647);
    const uint8_t *cp = find_instr(m, "cp")->literal;
    assert_int_equal(cp[0], 1);
    assert_int_equal(cp[1], 0);
    const uint16_t *cb = find_instr(m, "cb")->literal;
    assert_int_equal(cb[0], 0x3dcd); /* bf16(0.1) */
    assert_int_equal(cb[1], 0xc040); /* bf16(-3) */
    const uint16_t *ch = find_instr(m, "ch")->literal;
    assert_int_equal(ch[0], 0x2e66); /* f16(0.1) */
    assert_int_equal(ch[1], 0x7bff); /* f16(65504) */
    const int64_t *cl = find_instr(m, "cl")->literal;
    assert_true(cl[0] == -INT64_MAX && cl[1] == 42);
    assert_int_equal(*(const uint32_t *)find_instr(m, "cu")->literal,
                     4294901760u);
    assert_true(*(const double *)find_instr(m, "cd")->literal == 0.1);
    assert_true(isnan(*(const float *)find_instr(m, "cn")->literal));
    hs_instruction *big = find_instr(m, "big");
    assert_null(big->literal);
    assert_string_equal(big->literal_text, "{...}");
    hs_module_free(m);

    /* A scalar written for an array shape fills it (matrix_einsum.hlo). */
    m = parse_or_fail("ENTRY e {\n  ROOT c = f32[2,2] constant(1)\n}\n");
    const float *fill = m->entry->root->literal;
    for (int k = 0; k < 4; k++)
        assert_true(fill[k] == 1.0f);
    hs_module_free(m);
}

/* A constant written as one value prints back as one value (a 40-byte
 * module once printed 262,144 elements: 9 s per fuzz input under ASan);
 * one written element by element prints so, even when they are equal. */
static void one_value_constants_print_as_written(void **state)
{
    (void)state;
    hs_module *m = parse_or_fail(
        "ENTRY e {\n  a = f32[256,1024] constant(47)\n"
        "  b = f32[2,2] constant({ {1, 1}, {1, 1} })\n"
        "  c = bf16[3] constant(-0)\n"
        "  ROOT t = (f32[256,1024], f32[2,2], bf16[3]) tuple(a, b, c)\n}\n");
    char buf[256];
    hs_hlo_print_instruction(find_instr(m, "a"), buf, sizeof buf);
    assert_string_equal(buf, "%a = f32[256,1024]{1,0} constant(47)");
    assert_true(((const float *)find_instr(m, "a")->literal)[262143] == 47.0f);
    hs_hlo_print_instruction(find_instr(m, "b"), buf, sizeof buf);
    assert_string_equal(buf, "%b = f32[2,2]{1,0} constant({ {1, 1}, {1, 1} })");
    hs_hlo_print_instruction(find_instr(m, "c"), buf, sizeof buf);
    assert_string_equal(buf, "%c = bf16[3]{0} constant(-0)");
    /* printed and parsed again: the same text */
    char *once = hs_hlo_print(m);
    hs_module *again = parse_or_fail(once);
    char *twice = hs_hlo_print(again);
    assert_string_equal(once, twice);
    /* data no longer uniform (a pass writing into it) prints every element */
    ((float *)find_instr(again, "a")->literal)[5] = 2.0f;
    char *changed = hs_hlo_print(again);
    assert_non_null(strstr(changed, "constant({ {47, 47, 47, 47, 47, 2, 47"));
    free(changed);
    free(twice);
    free(once);
    hs_module_free(again);
    hs_module_free(m);
}

static void float_constants_print_shortest_exact_text(void **state)
{
    (void)state;
    hs_module *m = parse_or_fail(
        "ENTRY e {\n  ROOT c = f32[6] constant({0.1, 1e-07, 3.40282347e+38, "
        "-0, 16777216, 0.333333343})\n}\n");
    char buf[256];
    hs_hlo_print_instruction(m->entry->root, buf, sizeof buf);
    assert_string_equal(buf, "%c = f32[6]{0} constant({0.1, 1e-07, "
                             "3.4028235e+38, -0, 16777216, 0.33333334})");
    hs_module_free(m);
}

static void attributes_the_engine_does_not_model_are_kept_as_text(void **state)
{
    (void)state;
    hs_module *m = parse_file("kitchen_sink.hlo");
    /* input_output_alias is modelled (m->io_aliases); the rest is text,
     * and the header prints as it was written. */
    assert_string_equal(m->header_attrs, "is_scheduled=true");
    assert_int_equal(m->n_io_aliases, 1);
    assert_int_equal(m->io_aliases[0].output_len, 1);
    assert_int_equal(m->io_aliases[0].output[0], 0);
    assert_int_equal(m->io_aliases[0].param, 0);
    assert_int_equal(m->io_aliases[0].param_index_len, 0);
    assert_false(m->io_aliases[0].must_alias);
    char *printed = hs_hlo_print(m);
    assert_non_null(strstr(printed, "HloModule kitchen_sink, is_scheduled=true, "
                                    "input_output_alias={ {0}: (0, {}, "
                                    "may-alias) }\n"));
    free(printed);
    hs_instruction *rw = find_instr(m, "rw");
    assert_int_equal(rw->n_extra, 1);
    assert_string_equal(rw->extra[0].key, "window");
    assert_string_equal(rw->extra[0].value, "{size=2 stride=2}");
    hs_instruction *sas = find_instr(m, "sas");
    assert_int_equal(sas->opcode, HS_OP_SELECT_AND_SCATTER);
    assert_int_equal(sas->n_called, 2); /* resolved, printed from text */
    assert_string_equal(sas->called[0]->name, "max");
    hs_instruction *cc = find_instr(m, "cc");
    assert_string_equal(cc->custom_call_target, "MoveToHost");
    assert_string_equal(cc->backend_config, "\"say \\\"hi\\\"\"");
    assert_string_equal(find_instr(m, "p")->sharding, "replicated");
    assert_string_equal(find_instr(m, "red")->frontend_attributes,
                        "_xla_compute_type=\"host\"");
    assert_string_equal(find_instr(m, "cmp")->compare_type, "TOTALORDER");
    hs_instruction *sl = find_instr(m, "sl");
    assert_int_equal(sl->slice->rank, 1);
    assert_int_equal(sl->slice->stride[0], 2);
    hs_instruction *cond = find_instr(m, "cond");
    assert_string_equal(cond->called[0]->name, "branch_true");
    assert_string_equal(cond->called[1]->name, "branch_false");
    assert_int_equal(find_instr(m, "ds")->dims[0], 2);
    assert_int_equal(find_instr(m, "io")->dims[0], 0);
    /* A use before the definition resolves to the later instruction. */
    assert_ptr_equal(find_instr(m, "late_user")->operands[1],
                     find_instr(m, "later"));

    char *text = hs_hlo_print(m);
    assert_non_null(strstr(text, "reduce-window(f32[4]{0} %cond, f32[] %cn), "
                                 "window={size=2 stride=2}, to_apply=%max"));
    assert_non_null(strstr(text, "window={size=2 stride=2}, select=%max, "
                                 "scatter=%max"));
    assert_non_null(strstr(text, "slice={[0:4:2]}"));
    assert_non_null(strstr(text, "true_computation=%branch_true, "
                                 "false_computation=%branch_false"));
    free(text);
    hs_module_free(m);
}

static void print_instruction_follows_snprintf_contract(void **state)
{
    (void)state;
    hs_module *m = parse_file("mlp_long_form.hlo");
    hs_instruction *r = find_instr(m, "reduce.8");
    const char *want = "%reduce.8 = f32[2]{0} reduce(f32[2,3]{1,0} %relu, "
                       "f32[] %zero), dimensions={1}, to_apply=%add.1";
    char big[256], small[10];
    assert_int_equal(hs_hlo_print_instruction(r, big, sizeof big),
                     (int)strlen(want));
    assert_string_equal(big, want);
    assert_int_equal(hs_hlo_print_instruction(r, small, sizeof small),
                     (int)strlen(want));
    assert_string_equal(small, "%reduce.8");
    assert_int_equal(hs_hlo_print_instruction(r, NULL, 0), (int)strlen(want));
    hs_module_free(m);
}

/* ------------------------------------------------------------------------ */
/* Robustness and speed                                                      */
/* ------------------------------------------------------------------------ */

static void try_parse(const char *text, size_t len)
{
    hs_error err;
    hs_module *m = hs_hlo_parse(text, len, &err);
    if (m) {
        char *p = hs_hlo_print(m);
        assert_non_null(p);
        free(p);
        hs_module_free(m);
    } else {
        assert_int_equal(err.status, HS_ERR_PARSE);
        assert_true(err.line >= 1);
    }
}

static void hostile_input_never_crashes(void **state)
{
    (void)state;
    /* Every prefix of every file: truncation anywhere is an error, never a
     * crash or a read past the end (the prefix is not NUL-terminated). */
    for (size_t k = 0; k < N_SAMPLES + N_OWN; k++) {
        const char *dir = k < N_SAMPLES ? HS_SAMPLES_DIR : DATA_DIR;
        const char *name = k < N_SAMPLES ? samples[k] : own_files[k - N_SAMPLES];
        size_t len;
        char *text = read_text(dir, name, &len);
        for (size_t n = 0; n <= len; n++) {
            char *copy = malloc(n ? n : 1);
            memcpy(copy, text, n);
            try_parse(copy, n);
            free(copy);
        }
        free(text);
    }
    /* Byte mutations of the richest file. */
    size_t len;
    char *text = read_text(DATA_DIR, "kitchen_sink.hlo", &len);
    static const char alphabet[] = "{}[]()<>=,:%\"/*\n -.0159aS";
    uint32_t seed = 12345;
    for (int round = 0; round < 3000; round++) {
        char *copy = malloc(len);
        memcpy(copy, text, len);
        for (int j = 0; j < 1 + round % 4; j++) {
            seed = seed * 1664525u + 1013904223u;
            size_t at = (seed >> 8) % len;
            seed = seed * 1664525u + 1013904223u;
            copy[at] = alphabet[(seed >> 8) % (sizeof alphabet - 1)];
        }
        try_parse(copy, len);
        free(copy);
    }
    free(text);
    /* Deep nesting is refused, not recursed into. */
    size_t deep = 100000;
    char *nest = malloc(deep + 64);
    strcpy(nest, "ENTRY e {\n  x = ");
    size_t at = strlen(nest);
    memset(nest + at, '(', deep);
    strcpy(nest + at + deep, "f32[]) parameter(0)\n}\n");
    hs_error e = parse_error(nest);
    assert_non_null(strstr(e.message, "deeper"));
    strcpy(nest, "ENTRY e {\n  x = f32[] parameter(0), a=");
    at = strlen(nest);
    memset(nest + at, '{', deep);
    strcpy(nest + at + deep, "\n}\n");
    e = parse_error(nest);
    assert_non_null(strstr(e.message, "deeper"));
    free(nest);
}

static void large_modules_parse_and_print_in_linear_time(void **state)
{
    (void)state;
    const int n = 100000;
    size_t cap = (size_t)n * 128 + 256, len = 0;
    char *text = malloc(cap);
    len += (size_t)sprintf(text + len, "HloModule big\n\nENTRY main {\n"
                                       "  x0 = f32[1,1024] parameter(0)\n");
    for (int k = 1; k < n; k++)
        len += (size_t)sprintf(text + len,
                               "  x%d = f32[1,1024] add(x%d, x0), "
                               "metadata={op_name=\"layers.%d\"}\n",
                               k, k - 1, k);
    len += (size_t)sprintf(text + len, "}\n");
    clock_t t0 = clock();
    hs_module *m = parse_or_fail(text);
    char *once = hs_hlo_print(m);
    double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
    assert_non_null(once);
    assert_int_equal(m->entry->n_instrs, n);
    /* Generous bound (sanitizers are slow); quadratic would take minutes. */
    assert_true(secs < 20.0);
    hs_module *again = parse_or_fail(once);
    char *twice = hs_hlo_print(again);
    assert_string_equal(once, twice);
    free(once);
    free(twice);
    free(text);
    hs_module_free(m);
    hs_module_free(again);
}

static void repeated_names_are_renamed_in_linear_time(void **state)
{
    (void)state;
    /* 20000 computations that all call their parameter "p", and one that
     * already uses the name "p.2". */
    const int n = 20000;
    char *text = malloc((size_t)n * 64 + 256);
    size_t len = 0;
    len += (size_t)sprintf(text + len, "taken {\n  ROOT p.2 = f32[] parameter(0)\n}\n");
    for (int k = 0; k < n; k++)
        len += (size_t)sprintf(text + len, "c%d {\n  ROOT p = f32[] parameter(0)\n}\n", k);
    len += (size_t)sprintf(text + len, "ENTRY e {\n  ROOT p = f32[] parameter(0)\n}\n");
    clock_t t0 = clock();
    hs_module *m = parse_or_fail(text);
    double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
    assert_true(secs < 20.0);
    assert_string_equal(m->comps[0]->root->name, "p.2");
    assert_string_equal(m->comps[1]->root->name, "p");
    assert_string_equal(m->comps[2]->root->name, "p.1");
    assert_string_equal(m->comps[3]->root->name, "p.3");
    assert_verifies(m);
    hs_module_free(m);
    free(text);
}

/* Seen in real dumps: empty constants print as "{}" (never "constant()",
 * which does not parse), and a custom-call's literal=<shape> <value>
 * attribute is one attribute, not the start of the next instruction.
 * Found by the hlo_text fuzzer (regressions/hlo_text/
 * empty_constant_with_a_huge_dimension): past 64 rows, an empty array
 * prints one "{}", not one per row (43 billion for f64[42949672963,0]
 * in the finding, 2^62 here: it would never return). */
static void real_dump_attributes_round_trip(void **state)
{
    (void)state;
    hs_module *m = parse_or_fail("HloModule real\n"
                                 "ENTRY e {\n"
                                 "  c = f32[0] constant({})\n"
                                 "  d = f32[2,0] constant({ {}, {} })\n"
                                 "  e = f64[4611686018427387904,0] constant({})\n"
                                 "  x = f32[4] parameter(0)\n"
                                 "  cc = f32[4] custom-call(x), "
                                 "custom_call_target=\"Foo\", "
                                 "literal=s32[] 1\n"
                                 "  ROOT t = (f32[0], f32[2,0], f32[4], "
                                 "f64[4611686018427387904,0]) tuple(c, d, cc, e)\n"
                                 "}\n");
    char *text = hs_hlo_print(m);
    assert_non_null(text);
    assert_contains(text, "%c = f32[0]{0} constant({})");
    assert_contains(text, "constant({ {}, {} })");
    assert_contains(text, "%e = f64[4611686018427387904,0]{1,0} constant({})");
    assert_contains(text, "custom_call_target=\"Foo\", literal=s32[] 1\n");
    free(text);
    assert_fixed_point(m);
    hs_module_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_sample_parses_and_verifies),
        cmocka_unit_test(every_file_prints_a_fixed_point),
        cmocka_unit_test(printer_writes_xla_long_form),
        cmocka_unit_test(while_without_entry_or_root_takes_the_last),
        cmocka_unit_test(names_reused_across_computations_become_unique),
        cmocka_unit_test(known_trip_count_is_printed_as_backend_config),
        cmocka_unit_test(missing_equals_reports_line_and_column),
        cmocka_unit_test(bad_shape_reports_line_and_column),
        cmocka_unit_test(unknown_operand_is_named),
        cmocka_unit_test(unknown_computation_is_named),
        cmocka_unit_test(unterminated_comment_reports_its_start),
        cmocka_unit_test(unbalanced_braces_report_the_opener),
        cmocka_unit_test(other_malformed_inputs_are_parse_errors),
        cmocka_unit_test(split_file_errors_keep_file_lines),
        cmocka_unit_test(one_value_constants_print_as_written),
        cmocka_unit_test(memory_space_layout_round_trips),
        cmocka_unit_test(short_and_long_form_print_identically),
        cmocka_unit_test(metadata_op_name_survives_round_trip),
        cmocka_unit_test(constants_decode_into_c_arrays),
        cmocka_unit_test(float_constants_print_shortest_exact_text),
        cmocka_unit_test(attributes_the_engine_does_not_model_are_kept_as_text),
        cmocka_unit_test(print_instruction_follows_snprintf_contract),
        cmocka_unit_test(hostile_input_never_crashes),
        cmocka_unit_test(large_modules_parse_and_print_in_linear_time),
        cmocka_unit_test(repeated_names_are_renamed_in_linear_time),
        cmocka_unit_test(real_dump_attributes_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
