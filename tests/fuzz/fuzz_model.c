/* fuzz_model.c - model JSON: load -> trace -> verify, and for a model
 * with a "train" section its training step (autodiff and optimizer).
 *
 * Invariants: loading never crashes; a failure has a status and a message
 * (valid UTF-8 when the input was); a model that loads has a traced module
 * that verifies, and it prints; a training step that builds verifies too.
 * Limits are small so that an input spends its time in the loader and the
 * tracer, not in drawing weights. */
#include <string.h>

#include "fuzz.h"
#include "fuzz_utf8.h"
#include "hloscope/hs_hlo_text.h"
#include "hloscope/hs_model.h"
#include "hloscope/hs_train.h"

#define MAX_INPUT (64 * 1024)

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > MAX_INPUT)
        return 0;
    hs_model_options o;
    memset(&o, 0, sizeof o);
    o.limits.max_layers = 16;
    o.limits.max_tensor_elements = 1 << 12;
    o.limits.max_json_depth = 32;
    hs_error e;
    hs_model *m = hs_model_load((const char *)data, size, &o, &e);
    if (!m) {
        size_t n = strnlen(e.message, sizeof e.message);
        FUZZ_CHECK(e.status != HS_OK, "a failure with status OK");
        FUZZ_CHECK(n > 0 && n < sizeof e.message, "an error without a message");
        if (fuzz_utf8_valid(data, size))
            FUZZ_CHECK(fuzz_utf8_valid((const uint8_t *)e.message, n),
                       "the message of valid UTF-8 input is not UTF-8: %s", e.message);
        return 0;
    }
    FUZZ_CHECK(m->module, "a loaded model without a module");
    FUZZ_CHECK(hs_module_verify(m->module, &e) == HS_OK,
               "the traced module does not verify: %s: %s", e.instruction, e.message);
    char *text = hs_hlo_print(m->module);
    FUZZ_CHECK(text, "print failed");
    free(text);
    if (m->train.enabled) {
        hs_train_step *ts = hs_train_step_build(m, NULL, &e);
        if (ts)
            FUZZ_CHECK(hs_module_verify(ts->module, &e) == HS_OK,
                       "the training step does not verify: %s: %s", e.instruction,
                       e.message);
        else
            FUZZ_CHECK(e.status != HS_OK && e.message[0], "a failure without a message");
        hs_train_step_free(ts);
    }
    hs_model_free(m);
    return 0;
}
