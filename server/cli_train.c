/* cli_train.c - `hloscope run FILE --train [--steps N]`: builds the model's
 * training step (forward, backward, optimizer update), compiles it through
 * the same pipeline and runs N steps on the emulated device. */
#include <stdio.h>

#include "cli.h"
#include "hloscope/hs_train.h"

static void print_step(int64_t step, float loss, const hs_run_stats *st, void *user)
{
    (void)user;
    printf("step %-6lld  loss=%.9g  simulated %.3f ms  peak device %lld bytes\n",
           (long long)step, (double)loss, st->sim_seconds * 1e3,
           (long long)st->peak_device_bytes);
}

int cli_train(const cli_args *a, cli_program *p, const hs_device_spec *spec,
              hs_error *e)
{
    if (!p->model) {
        hs_error_set(e, HS_ERR_INVALID,
                     "--train needs a model description with a \"train\" section");
        return -1;
    }
    hs_train_step *ts = hs_train_step_build(p->model, NULL, e);
    if (!ts)
        return -1;
    int rc = -1;
    hs_executable *exe = NULL;
    hs_train_result res = {0};
    hs_compile_options co;
    hs_compile_options_init(&co);
    co.device = spec->name;
    co.pipeline = a->pipeline;
    if (hs_compile(ts->module, &co, NULL, p->metrics, &exe, e) != HS_OK)
        goto out;
    printf("train step:   %lld instructions traced, %lld optimized\n",
           (long long)hs_module_instruction_count(ts->module),
           (long long)hs_module_instruction_count(hs_executable_module(exe)));
    hs_train_run_options ro = {.steps = a->steps,
                               .want_grads = a->dump != NULL,
                               .on_step = print_step,
                               .module = hs_executable_module(exe)};
    int64_t t0 = hs_now_ns();
    hs_status s = hs_train_run(ts, spec, &ro, &res, e);
    hs_metrics_record_time(p->metrics, HS_METRIC_EXECUTE_TIME, hs_now_ns() - t0);
    if (s != HS_OK)
        goto out;
    if (a->dump && hs_train_dump(ts, &res, a->dump, e) != HS_OK)
        goto out;
    rc = 0;
out:
    hs_train_result_free(&res);
    hs_executable_release(exe);
    hs_train_step_free(ts);
    return rc;
}
