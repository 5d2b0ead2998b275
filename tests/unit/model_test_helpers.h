/* model_test_helpers.h - loading a model description in a cmocka test:
 * one that must load (and verify), one that must fail. Header-only, for
 * the tests/unit/test_model*.c programs. Include after <cmocka.h>. */
#ifndef HLOSCOPE_TESTS_MODEL_TEST_HELPERS_H
#define HLOSCOPE_TESTS_MODEL_TEST_HELPERS_H

#include <stdio.h>
#include <string.h>

#include "hloscope/hs_device.h"
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

/* Whether some instruction of m's module has exactly this op_name. */
static inline bool model_has_op_name(const hs_model *m, const char *op_name)
{
    for (int ci = 0; ci < m->module->n_comps; ci++) {
        const hs_computation *c = m->module->comps[ci];
        for (int i = 0; i < c->n_instrs; i++)
            if (c->instrs[i]->op_name &&
                strcmp(c->instrs[i]->op_name, op_name) == 0)
                return true;
    }
    return false;
}

/* Runs m on its device and returns its single output (caller frees). */
static inline hs_tensor *model_run(const hs_model *m)
{
    hs_tensor *args[64];
    int n = hs_model_args(m, args, 64);
    assert_true(n > 0);
    hs_tensor **outs = NULL;
    int n_outs = 0;
    hs_run_stats st;
    hs_error err;
    const hs_device_spec *spec = hs_device_find(m->device);
    assert_non_null(spec);
    hs_status s = hs_device_run(m->module, spec, args, n, &outs, &n_outs,
                                &st, &err);
    if (s != HS_OK)
        fail_msg("run: %s", err.message);
    assert_int_equal(n_outs, 1);
    hs_tensor *y = outs[0];
    outs[0] = NULL;
    hs_tensors_free(outs, n_outs);
    return y;
}

#endif
