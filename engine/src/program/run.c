/* run.c - running a program: deciding on shapes whether a run may go
 * ahead, drawing what it needs, then the device. */
#include <stdio.h>
#include <stdlib.h>

#include "ir/strbuf.h"
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

/* Array bytes of a shape's leaves (a tuple's index table is not drawn). */
static int64_t leaf_bytes(const hs_shape *s)
{
    if (!hs_shape_is_tuple(s))
        return hs_shape_bytes(s);
    int64_t n = 0;
    for (int i = 0; i < s->n_elems; i++)
        n = hs_sat_add(n, leaf_bytes(&s->elems[i]));
    return n;
}

int64_t hs_program_argument_bytes(const hs_program *p)
{
    const hs_module *m = p->optimized ? p->optimized : p->traced;
    int64_t n = 0;
    for (int k = 0; m && k < m->entry->n_params; k++)
        n = hs_sat_add(n, leaf_bytes(&m->entry->params[k]->shape));
    return n;
}

static char *format_limit(double bytes, char *buf, size_t size)
{
    return hs_format_bytes(bytes >= 9.2e18 ? INT64_MAX : (int64_t)bytes, buf,
                           size);
}

/* The arguments are drawn on the host before the run and the run's
 * buffers come on top (the assigned peak of every memory space, which
 * counts the arguments again when the device keeps its own copy): both
 * must fit the limit. Writes what does not fit into msg. */
static bool too_big(const hs_program *p, char *msg, size_t size)
{
    double limit = p->options.max_run_bytes;
    if (limit <= 0 || !p->buffers)
        return false;
    const hs_memory_stats *ms = hs_buffers_memory_stats(p->buffers);
    int64_t args = hs_program_argument_bytes(p);
    int64_t peak = hs_sat_add(ms->device.peak_bytes, ms->host.peak_bytes);
    int64_t need = hs_sat_add(args, peak);
    if ((double)need <= limit)
        return false;
    const char *name = p->options.max_run_bytes_name ? p->options.max_run_bytes_name
                                                     : "the run limit";
    char a[32], pk[32], nd[32], lim[32];
    hs_format_bytes(args, a, sizeof a);
    hs_format_bytes(peak, pk, sizeof pk);
    hs_format_bytes(need, nd, sizeof nd);
    format_limit(limit, lim, sizeof lim);
    if ((double)args > limit)
        snprintf(msg, size, "arguments need %s > %s %s", a, name, lim);
    else
        snprintf(msg, size,
                 "arguments (%s) and the assigned peak (%s) need %s > %s %s", a,
                 pk, nd, name, lim);
    return true;
}

hs_status hs_program_check_run(hs_program *p, hs_error *err)
{
    if (!p->optimized)
        return hs_error_set(err, HS_ERR_INVALID,
                            "check: the program is not compiled");
    free(p->refusal);
    p->refusal = NULL;
    char bytes[256];
    bool big = too_big(p, bytes, sizeof bytes);
    hs_error dev;
    hs_error_clear(&dev);
    char *blockers = NULL;
    hs_status st = hs_device_check_report(p->optimized, &blockers, &dev);
    if (st == HS_OK && !big)
        return HS_OK;
    /* The whole refusal, the short blocker first: err's message keeps
     * what fits of it. */
    hs_buf b = {0};
    hs__buf_printf(&b, "%s%s%s", big ? bytes : "", big && st != HS_OK ? "; " : "",
                   st != HS_OK ? (blockers ? blockers : dev.message) : "");
    free(blockers);
    if (hs__buf_finish(&b, &p->refusal, NULL, "the refusal", err) != HS_OK)
        return HS_ERR_NOMEM;
    if (err && st != HS_OK)
        *err = dev; /* keeps the first blocked instruction */
    else
        hs_error_clear(err);
    return hs_error_set(err, st != HS_OK ? st : HS_ERR_LIMIT, "%s", p->refusal);
}

hs_status hs_program_materialize(hs_program *p, hs_error *err)
{
    if (p->args)
        return HS_OK;
    /* Refuse what the device cannot run, or what would not fit, before a
     * byte of argument data exists (a bf16 dump once drew 7.85 GB of
     * arguments first). */
    hs_status ok = hs_program_check_run(p, err);
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
    p->args = hs_model_hlo_args_read(p->hlo, p->options.args_dir, &p->n_args, err);
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
