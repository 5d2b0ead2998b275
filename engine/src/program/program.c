/* program.c - a program's life: options, a new program, freeing it. */
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_train.h"
#include "program/program_internal.h"

void hs_program_options_init(hs_program_options *o)
{
    memset(o, 0, sizeof *o);
    o->module = -1; /* the text must hold one module */
}

hs_program *hs__program_new(const hs_program_options *opts, hs_error *err)
{
    hs_program *p = calloc(1, sizeof *p);
    if (p)
        p->metrics = hs_metrics_new();
    if (!p || !p->metrics) {
        free(p);
        hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
        return NULL;
    }
    if (opts)
        p->options = *opts;
    return p;
}

void hs_program_free(hs_program *p)
{
    if (!p)
        return;
    hs_executable_release(p->exe);
    hs_train_step_free(p->train); /* before the model it points to */
    if (p->kind == HS_SOURCE_MODEL) {
        free(p->args); /* the tensors are the model's */
    } else if (p->args) {
        for (int k = 0; k < p->n_args; k++)
            hs_tensor_free(p->args[k]);
        free(p->args);
    }
    if (p->owns_model)
        hs_model_free(p->model);
    hs_module_free(p->hlo);
    free(p->oom_report);
    free(p->refusal);
    hs_metrics_free(p->metrics);
    free(p);
}
