/*
 * hlo_test_helpers.h - what tests written as HLO text share: parse a
 * module (failing the test with the parser's message) or a model JSON,
 * print it, look for text in the printed module, run it on f32 arguments
 * and check that the verifier refuses it. Include after <cmocka.h>.
 */
#ifndef HLOSCOPE_HLO_TEST_HELPERS_H
#define HLOSCOPE_HLO_TEST_HELPERS_H

#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_device.h"
#include "hloscope/hs_file.h"
#include "hloscope/hs_hlo_text.h"
#include "hloscope/hs_model.h"
#include "hloscope/hs_program.h"
#include "hloscope/hs_tensor.h"

static inline hs_module *parse(const char *text)
{
    hs_error err;
    hs_error_clear(&err);
    hs_module *m = hs_hlo_parse(text, strlen(text), &err);
    if (!m)
        fail_msg("parse: %s (line %d, column %d)\n%s", err.message, err.line,
                 err.column, text);
    return m;
}

/* A file's text (free it), failing the test with the reader's message. */
static inline char *read_text_file(const char *path)
{
    size_t len;
    hs_error err;
    char *text = hs_read_file(path, &len, &err);
    if (!text)
        fail_msg("%s: %s", path, err.message);
    return text;
}

/* An HLO file parsed, failing the test with the parser's message (where in
 * the file, not the whole text: it may be Mixtral's 3.9 MB). */
static inline hs_module *parse_hlo_file(const char *path)
{
    char *text = read_text_file(path);
    hs_error err;
    hs_error_clear(&err);
    hs_module *m = hs_hlo_parse(text, strlen(text), &err);
    free(text);
    if (!m)
        fail_msg("%s:%d:%d: %s", path, err.line, err.column, err.message);
    return m;
}

/* A model JSON traced with shapes only (loop NULL: the JSON's own), failing
 * the test with the loader's message. */
static inline hs_model *load_model(const char *json, const char *loop)
{
    hs_error err;
    hs_model_options o = {.shapes_only = true, .loop = loop};
    hs_model *m = hs_model_load(json, strlen(json), &o, &err);
    if (!m)
        fail_msg("model: %s %s", err.path, err.message);
    return m;
}

/* The printed module; freed by the caller. */
static inline char *print(const hs_module *m)
{
    char *s = hs_hlo_print(m);
    assert_non_null(s);
    return s;
}

static inline void assert_contains(const char *text, const char *needle)
{
    if (!strstr(text, needle))
        fail_msg("expected to find\n  %s\nin\n%s", needle, text);
}

static inline void assert_lacks(const char *text, const char *needle)
{
    if (strstr(text, needle))
        fail_msg("did not expect\n  %s\nin\n%s", needle, text);
}

/* Occurrences of needle in text (overlapping ones counted). */
static inline int count(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* The instruction called name in any computation of m (fails the test
 * when there is none). */
static inline hs_instruction *find_instr(const hs_module *m,
                                         const char *name)
{
    for (int c = 0; c < m->n_comps; c++)
        for (int k = 0; k < m->comps[c]->n_instrs; k++)
            if (strcmp(m->comps[c]->instrs[k]->name, name) == 0)
                return m->comps[c]->instrs[k];
    fail_msg("no instruction %s", name);
    return NULL;
}

/* Runs m's entry on f32 arguments data[0..n_args) (NULL: none) with
 * hs_device_run, failing the test with the device's message; the outputs
 * are the caller's to free. */
static inline hs_tensor **run_f32(const hs_module *m, const float *const *data,
                                  int n_args, int *n_out)
{
    hs_tensor *args[8];
    for (int k = 0; k < n_args; k++) {
        args[k] = hs_tensor_new(&m->entry->params[k]->shape);
        memcpy(args[k]->data, data[k],
               (size_t)hs_shape_bytes(&args[k]->shape));
    }
    hs_tensor **out = NULL;
    hs_error err;
    hs_error_clear(&err);
    hs_status st = hs_device_run(m, NULL, args, n_args, &out, n_out, NULL,
                                 &err);
    for (int k = 0; k < n_args; k++)
        hs_tensor_free(args[k]);
    if (st != HS_OK)
        fail_msg("run: %s", err.message);
    return out;
}

/* HLO text compiles as the CLI compiles it, prints back as a fixed point
 * at both stages (print(parse(print(m))) == print(m), traced and
 * optimized) and passes the check before a run; the printed traced module
 * must contain each of the n strings of needles. */
static inline void assert_compiles_and_prints_back(const char *text,
                                                   const char *const *needles,
                                                   int n)
{
    hs_program_source src = {.kind = HS_SOURCE_HLO, .text = text,
                             .len = strlen(text)};
    hs_program_options o;
    hs_program_options_init(&o);
    hs_error err;
    hs_error_clear(&err);
    hs_program *p = hs_program_build(&src, &o, &err);
    if (!p)
        fail_msg("build: %s", err.message);
    const hs_module *stages[2] = {p->traced, p->optimized};
    for (int k = 0; k < 2; k++) {
        char *once = print(stages[k]);
        for (int j = 0; k == 0 && j < n; j++)
            assert_contains(once, needles[j]);
        hs_module *again = parse(once);
        if (hs_module_verify(again, &err) != HS_OK)
            fail_msg("the printed module does not verify: %s", err.message);
        char *twice = print(again);
        assert_string_equal(once, twice);
        free(once);
        free(twice);
        hs_module_free(again);
    }
    if (hs_program_check_run(p, &err) != HS_OK)
        fail_msg("check: %s", err.message);
    hs_program_free(p);
}

/* Parsing and verifying text must fail with a message naming instr and
 * saying why. */
static inline void assert_verify_refuses(const char *text, const char *instr,
                                         const char *why)
{
    hs_error err;
    hs_error_clear(&err);
    hs_module *m = hs_hlo_parse(text, strlen(text), &err);
    if (m) {
        hs_error_clear(&err);
        assert_int_not_equal(hs_module_verify(m, &err), HS_OK);
        hs_module_free(m);
    }
    char msg[1024];
    hs_error_format(&err, msg, sizeof msg);
    if (!strstr(msg, instr) || !strstr(msg, why))
        fail_msg("expected '%s' and '%s' in: %s", instr, why, msg);
}

#endif
