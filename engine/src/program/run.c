/* run.c - running a program: drawing what the run needs (once it is
 * known that the run may go ahead), then the device. */
#include <stdlib.h>

#include "program/program_internal.h"

static hs_status model_args(hs_program *p, hs_error *err)
{
    if (hs_model_materialize(p->model, err) != HS_OK)
        return err ? err->status : HS_ERR_NOMEM;
    int cap = p->model->n_params + 1; /* n_args is never more */
    p->args = malloc(sizeof *p->args * (size_t)cap);
    if (!p->args)
        return hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
    p->n_args = hs_model_args(p->model, p->args, cap);
    if (p->n_args < 0) {
        free(p->args);
        p->args = NULL;
        p->n_args = 0;
        return hs_error_set(err, HS_ERR_RUNTIME, "model arguments are not available");
    }
    return HS_OK;
}

hs_status hs_program_materialize(hs_program *p, hs_error *err)
{
    if (p->args)
        return HS_OK;
    /* Refuse what the device cannot run before a byte of argument data
     * exists (a bf16 dump once drew 7.85 GB of arguments first). */
    hs_status ok = hs_device_check(p->optimized, err);
    if (ok != HS_OK)
        return ok;
    if (p->kind == HS_SOURCE_MODEL) {
        hs_status st = model_args(p, err);
        if (st != HS_OK || !p->train)
            return st;
        /* A training step runs from the model's tensors (hs_train_run),
         * drawn above; its entry arguments are not these. */
        return HS_OK;
    }
    p->args = hs_model_hlo_args(p->hlo, &p->n_args, err);
    return p->args ? HS_OK : (err ? err->status : HS_ERR_NOMEM);
}

hs_status hs_program_run(hs_program *p, const hs_run_options *opts,
                         hs_tensor ***outputs, int *n_outputs,
                         hs_run_stats *stats, hs_error *err)
{
    hs_status st = hs_program_materialize(p, err);
    if (st != HS_OK)
        return st;
    int64_t t0 = hs_now_ns();
    st = hs_device_run_ex(p->optimized, p->device, p->args, p->n_args, outputs,
                          n_outputs, opts, stats, err);
    hs_metrics_record_time(p->metrics, HS_METRIC_EXECUTE_TIME, hs_now_ns() - t0);
    return st;
}
