/* model_test_helpers.h - loading a model description in a cmocka test:
 * one that must load (and verify), one that must fail. Header-only, for
 * the tests/unit/test_model*.c programs. Include after <cmocka.h>. */
#ifndef HLOSCOPE_TESTS_MODEL_TEST_HELPERS_H
#define HLOSCOPE_TESTS_MODEL_TEST_HELPERS_H

#include <stdio.h>
#include <string.h>

#include "hloscope/hs_model.h"

/* Loads json with options o (may be NULL); fails the test, printing the
 * error, unless it loads and its module verifies. */
static inline hs_model *model_load_ok(const char *json,
                                      const hs_model_options *o)
{
    hs_error err;
    hs_model *m = hs_model_load(json, strlen(json), o, &err);
    if (!m) {
        char buf[1024];
        hs_error_format(&err, buf, sizeof buf);
        fail_msg("load failed: %s (%s)", buf, hs_status_name(err.status));
    }
    hs_error verr;
    assert_int_equal(hs_module_verify(m->module, &verr), HS_OK);
    return m;
}

/* The error of a description that must not load (with a message). */
static inline hs_error model_load_fails(const char *json,
                                        const hs_model_options *o)
{
    hs_error err;
    hs_model *m = hs_model_load(json, strlen(json), o, &err);
    if (m) {
        hs_model_free(m);
        fail_msg("expected an error for: %s", json);
    }
    assert_int_not_equal(err.status, HS_OK);
    assert_true(err.message[0] != '\0');
    return err;
}

#endif
