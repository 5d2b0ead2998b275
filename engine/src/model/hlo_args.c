/* hlo_args.c - arguments for an imported HLO module, drawn from the same
 * generator as model parameters so that runs of a .hlo file repeat. */
#include <stdio.h>
#include <stdlib.h>

#include "hloscope/hs_model.h"

hs_tensor **hs_model_hlo_args(const hs_module *m, int *n, hs_error *err)
{
    const hs_computation *entry = m->entry;
    *n = 0;
    hs_tensor **args =
        calloc((size_t)(entry->n_params ? entry->n_params : 1), sizeof *args);
    if (!args) {
        hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
        return NULL;
    }
    for (int k = 0; k < entry->n_params; k++) {
        const hs_instruction *param = entry->params[k];
        if (hs_shape_is_tuple(&param->shape)) {
            hs_error_set(err, HS_ERR_UNSUPPORTED,
                         "parameter %s has a tuple shape; `run` needs array parameters",
                         param->name);
            if (err)
                snprintf(err->instruction, sizeof err->instruction, "%s",
                         param->name);
            goto fail;
        }
        args[k] = hs_tensor_new(&param->shape);
        if (!args[k]) {
            hs_error_set(err, HS_ERR_NOMEM, "parameter %s: out of host memory",
                         param->name);
            goto fail;
        }
        if (param->shape.dtype == HS_F32)
            hs_model_fill_uniform(0, param->name, -1.0f, 1.0f,
                                  hs_tensor_f32(args[k]), hs_tensor_elements(args[k]));
    }
    *n = entry->n_params;
    return args;
fail:
    for (int k = 0; k < entry->n_params; k++)
        hs_tensor_free(args[k]);
    free(args);
    return NULL;
}
