/* cli_train.c - `hloscope run FILE --train [--steps N]`: builds the model's
 * training step (forward, backward, optimizer update), compiles it through
 * the same pipeline and runs N steps on the emulated device. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "hloscope/hs_train.h"

static void print_step(int64_t step, float loss, const hs_run_stats *st, void *user)
{
    (void)user;
    printf("step %-6lld  loss=%.9g  simulated %.3f ms  peak device %lld bytes\n",
           (long long)step, (double)loss, st->sim_seconds * 1e3,
           (long long)st->peak_device_bytes);
}

int cli_write_timeline(const char *path, const hs_memory_timeline *t,
                       const hs_device_spec *spec, const hs_run_stats *st,
                       hs_error *e)
{
    char *text = hs_memory_timeline_json(t, spec, st);
    FILE *f = text ? fopen(path, "w") : NULL;
    bool ok = f && fputs(text, f) >= 0 && fputc('\n', f) != EOF;
    if (f && fclose(f) != 0)
        ok = false;
    free(text);
    if (!ok) {
        hs_error_set(e, HS_ERR_IO, "cannot write the memory timeline to %s",
                     path);
        return -1;
    }
    printf("memory:       %s (%d buffers, %d transfers)\n", path,
           t->n_buffers, t->n_transfers);
    return 0;
}

/* What the reverse scans saved, and where. */
static void print_residuals(const hs_train_step *ts)
{
    const hs_scan_vjp_report *r = ts->scan_report;
    if (!r || r->n_loops == 0)
        return;
    printf("residuals:    %s, %d scan(s): %lld bytes stacked on the device, "
           "%lld on the host\n",
           ts->scan.n_offload ? "save + offload list"
                              : hs_residuals_name(ts->model->residuals),
           r->n_loops, (long long)r->device_bytes, (long long)r->host_bytes);
    if (ts->auto_choice)
        printf("              %s\n", ts->auto_choice->text);
}

int cli_train(const cli_args *a, hs_program *p, hs_error *e)
{
    if (!p->model) {
        hs_error_set(e, HS_ERR_INVALID,
                     "--train needs a model description with a \"train\" section");
        return -1;
    }
    /* A step that cannot fit the device's HBM fails here, with XLA's
     * out-of-memory report, rather than part-way through the run. */
    hs_program_options o = p->options;
    o.check_memory = true;
    char *oom = NULL;
    o.oom_report = &oom;
    hs_program *step = hs_program_train_step(p, &o, e);
    if (!step) {
        if (oom)
            fputs(oom, stderr);
        free(oom);
        return -1;
    }
    int rc = -1;
    hs_train_result res = {0};
    hs_memory_timeline tl = {0};
    printf("train step:   %lld instructions traced, %lld optimized\n",
           (long long)hs_module_instruction_count(step->traced),
           (long long)hs_module_instruction_count(step->optimized));
    print_residuals(step->train);
    const hs_memory_stats *ms = hs_buffers_memory_stats(step->buffers);
    printf("step memory:  device peak %lld bytes (arguments %lld, outputs "
           "%lld, temporaries %lld), host peak %lld bytes\n",
           (long long)ms->device.peak_bytes,
           (long long)ms->device.argument_bytes,
           (long long)ms->device.output_bytes,
           (long long)ms->device.temp_bytes, (long long)ms->host.peak_bytes);
    hs_train_run_options ro = {.steps = a->steps,
                               .want_grads = a->dump != NULL,
                               .on_step = print_step,
                               .module = step->optimized,
                               .timeline = a->memory ? &tl : NULL};
    int64_t t0 = hs_now_ns();
    hs_status s = hs_train_run(step->train, p->device, &ro, &res, e);
    hs_metrics_record_time(p->metrics, HS_METRIC_EXECUTE_TIME, hs_now_ns() - t0);
    if (s != HS_OK)
        goto out;
    printf("transfers:    %.3f ms on the host link, %.3f ms exposed (last "
           "step)\n",
           res.last.host_transfer_seconds * 1e3,
           res.last.exposed_transfer_seconds * 1e3);
    if (a->memory && cli_write_timeline(a->memory, &tl, p->device, &res.last, e) != 0)
        goto out;
    if (a->dump && hs_train_dump(step->train, &res, a->dump, e) != HS_OK)
        goto out;
    rc = 0;
out:
    /* The step's compile shows in the program's metrics (--metrics). */
    hs_metrics_counter_add(p->metrics, HS_METRIC_UNCACHED_COMPILE,
                           hs_metrics_counter(step->metrics, HS_METRIC_UNCACHED_COMPILE));
    hs_timing ct = hs_metrics_timing(step->metrics, HS_METRIC_COMPILE_TIME);
    if (ct.count)
        hs_metrics_record_time(p->metrics, HS_METRIC_COMPILE_TIME, ct.total_ns);
    hs_memory_timeline_free(&tl);
    hs_train_result_free(&res);
    hs_program_free(step);
    return rc;
}
