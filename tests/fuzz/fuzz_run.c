/* fuzz_run.c - HLO text: parse -> verify -> compile (default pipeline) ->
 * run on the emulated device, under small limits.
 *
 * The limits stand in for the server's: the smallest teaching device
 * (16 MiB of HBM, so compile refuses a larger peak), a compile timeout, a
 * FLOP and byte budget checked on hs_device_estimate before anything is
 * allocated, and a run deadline that stops loops whose trip count is not
 * known. They are small so that an input costs milliseconds: every kernel
 * and the deadline's stop are reached at these sizes as at larger ones,
 * and a loop that runs to the deadline costs 50 ms, not a second.
 * Invariants: nothing crashes, every failure has a message, and a run that
 * succeeds returns one output per leaf of the root's shape. */
#include <string.h>

#include "fuzz.h"
#include "hloscope/hs_compile.h"
#include "hloscope/hs_device.h"
#include "hloscope/hs_hlo_text.h"
#include "hloscope/hs_model.h"

#define MAX_INPUT (16 * 1024)
#define DEVICE "teach-16m"
#define COMPILE_TIMEOUT_MS 1000
#define RUN_DEADLINE_MS 50
#define MAX_FLOPS 1e6
#define MAX_BYTES (8.0 * 1024 * 1024)
#define MAX_ARG_BYTES (1024 * 1024)

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    return 0;
}

static void check_error(const hs_error *e)
{
    size_t n = strnlen(e->message, sizeof e->message);
    FUZZ_CHECK(e->status != HS_OK, "a failure with status OK");
    FUZZ_CHECK(n > 0 && n < sizeof e->message, "an error without a message");
}

/* Entry arguments within MAX_ARG_BYTES in all. */
static bool args_fit(const hs_module *m)
{
    int64_t total = 0;
    for (int k = 0; k < m->entry->n_params; k++) {
        const hs_instruction *p = m->entry->params[k];
        int64_t b = p ? hs_shape_total_bytes(&p->shape) : 0;
        if (b < 0 || b > MAX_ARG_BYTES - total)
            return false;
        total += b;
    }
    return true;
}

static void run(const hs_module *opt, const hs_module *parsed)
{
    const hs_device_spec *spec = hs_device_find(DEVICE);
    hs_error e;
    hs_run_stats st;
    if (hs_device_estimate(opt, spec, &st, &e) != HS_OK) {
        check_error(&e);
        return;
    }
    if (!(st.flops <= MAX_FLOPS && st.bytes_accessed <= MAX_BYTES) ||
        !args_fit(parsed))
        return;
    int n_args = 0;
    hs_tensor **args = hs_model_hlo_args(parsed, &n_args, &e);
    if (!args) {
        check_error(&e);
        return;
    }
    hs_run_options ro;
    memset(&ro, 0, sizeof ro);
    ro.deadline_ns = hs_now_ns() + (int64_t)RUN_DEADLINE_MS * 1000000;
    hs_tensor **outs = NULL;
    int n_outs = 0;
    hs_status s = hs_device_run_ex(opt, spec, args, n_args, &outs, &n_outs, &ro, &st, &e);
    if (s != HS_OK)
        check_error(&e);
    else {
        /* One output per leaf of the root: none for an empty tuple. */
        int want = hs_shape_leaf_count(&opt->entry->root->shape);
        FUZZ_CHECK(n_outs == want && (n_outs == 0 || outs),
                   "a run with %d outputs for a root of %d leaves", n_outs, want);
    }
    hs_tensors_free(outs, n_outs);
    for (int k = 0; k < n_args; k++)
        hs_tensor_free(args[k]);
    free(args);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > MAX_INPUT)
        return 0;
    hs_error e;
    hs_module *m = hs_hlo_parse((const char *)data, size, &e);
    if (!m)
        return 0;
    if (hs_module_verify(m, &e) != HS_OK) {
        check_error(&e);
        hs_module_free(m);
        return 0;
    }
    hs_compile_options co;
    hs_compile_options_init(&co);
    co.device = DEVICE;
    co.timeout_ms = COMPILE_TIMEOUT_MS;
    co.hbm_bytes = HS_HBM_FROM_DEVICE;
    hs_executable *exe = NULL;
    if (hs_compile(m, &co, NULL, NULL, &exe, &e) == HS_OK)
        run(hs_executable_module(exe), m);
    else
        check_error(&e);
    hs_executable_release(exe);
    hs_module_free(m);
    return 0;
}
