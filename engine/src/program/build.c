/* build.c - from the traced module to the executable: the compile cache,
 * the pass pipeline under the deadline, buffer assignment (hs_compile's,
 * kept with the executable) and the device memory check, whose failure
 * reads like XLA's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_train.h"
#include "ir/strbuf.h"
#include "program/program_internal.h"

/* A training step that does not fit says what its scans stacked, since
 * that is what the residual policy changes: a line after the report's
 * first, in the whole report (p->oom_report, which front doors show) and
 * in err's message, which keeps whole sentences only (its buffer is
 * fixed; the largest buffers are in the report). */
static void explain_oom(hs_program *p, hs_error *err)
{
    const hs_scan_vjp_report *sr = p->train ? p->train->scan_report : NULL;
    const char *nl = p->oom_report ? strchr(p->oom_report, '\n') : NULL;
    if (!sr || sr->n_loops == 0 || !nl)
        return;
    char dev[32], host[32];
    hs_format_bytes(sr->device_bytes, dev, sizeof dev);
    hs_format_bytes(sr->host_bytes, host, sizeof host);
    hs_buf b = {0};
    hs__buf_printf(&b,
                   "%.*s\nTraining step: %d scanned loop(s) stack %s of "
                   "residuals on the device and %s on the host (residuals "
                   "offload, remat_offload or auto moves or recomputes them).",
                   (int)(nl - p->oom_report), p->oom_report, sr->n_loops, dev,
                   host);
    size_t sentence = b.len;
    hs__buf_puts(&b, nl);
    char *report;
    if (hs__buf_finish(&b, &report, NULL, "the out-of-memory report", NULL) != HS_OK)
        return; /* host OOM: the report stays as compile wrote it */
    hs_error_set(err, HS_ERR_OOM, "%.*s", (int)sentence, report);
    free(p->oom_report);
    p->oom_report = report;
}

hs_status hs_program_compile(hs_program *p, hs_error *err)
{
    const hs_program_options *o = &p->options;
    hs_compile_options co;
    hs_compile_options_init(&co);
    co.device = p->device->name;
    co.pipeline = o->pipeline;
    co.cancel = o->cancel;
    if (o->deadline_ns > 0) {
        co.timeout_ms = (o->deadline_ns - hs_now_ns()) / 1000000;
        if (co.timeout_ms <= 0)
            return hs_error_set(err, HS_ERR_CANCELLED,
                                "deadline exceeded before compiling");
    }
    if (o->check_memory) {
        co.hbm_bytes = HS_HBM_FROM_DEVICE;
        co.oom_report = &p->oom_report;
    }
    int64_t hits = hs_metrics_counter(p->metrics, HS_METRIC_CACHED_COMPILE);
    hs_status st = hs_compile(p->traced, &co, o->cache, p->metrics, &p->exe, err);
    p->cache_hit = hs_metrics_counter(p->metrics, HS_METRIC_CACHED_COMPILE) > hits;
    if (st == HS_ERR_OOM) {
        explain_oom(p, err);
        if (o->oom_report && p->oom_report) {
            *o->oom_report = p->oom_report;
            p->oom_report = NULL;
        }
    }
    if (st != HS_OK)
        return st;
    p->optimized = hs_executable_module(p->exe);
    p->buffers = hs_executable_buffers(p->exe);
    return HS_OK;
}

hs_program *hs_program_build(const hs_program_source *src,
                             const hs_program_options *opts, hs_error *err)
{
    hs_program *p = hs_program_trace(src, opts, err);
    if (p && hs_program_compile(p, err) != HS_OK) {
        hs_program_free(p);
        return NULL;
    }
    return p;
}

hs_program *hs_program_train_step(const hs_program *fwd,
                                  const hs_program_options *opts, hs_error *err)
{
    hs_error_clear(err);
    if (!fwd->model || fwd->train) {
        hs_error_set(err, HS_ERR_INVALID,
                     "a training step is built from a model's forward program");
        return NULL;
    }
    hs_program *p = hs__program_new(opts ? opts : &fwd->options, err);
    if (!p)
        return NULL;
    p->kind = HS_SOURCE_MODEL;
    p->model = fwd->model; /* borrowed */
    p->device = fwd->device;
    p->options.train = true;
    int64_t t0 = hs_now_ns();
    if (!p->model->train.enabled) {
        hs_error_set(err, HS_ERR_INVALID,
                     "this model has no \"train\" section to build a training "
                     "step from");
        if (err)
            snprintf(err->path, sizeof err->path, "/train");
        hs_program_free(p);
        return NULL;
    }
    p->train = hs_train_step_build(p->model, NULL, err);
    if (!p->train) {
        hs_program_free(p);
        return NULL;
    }
    hs_metrics_record_time(p->metrics, HS_METRIC_TRACE_TIME, hs_now_ns() - t0);
    p->traced = p->train->module;
    if (hs_program_compile(p, err) != HS_OK) {
        hs_program_free(p);
        return NULL;
    }
    return p;
}
