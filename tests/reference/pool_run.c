/* pool_run.c - runs an HLO module on the emulated device with .npy
 * arguments, or the gradient of its scalar root, for pool_check.py's
 * comparisons with PyTorch (docs/REFERENCE.md).
 *
 *     pool_run MODULE.hlo OUTDIR [--grad K[,K...]] ARG0.npy ARG1.npy ...
 *
 * Without --grad: writes each output of the entry to OUTDIR/out<k>.npy.
 * With --grad: differentiates the entry (whose root must be an f32 scalar)
 * with respect to parameters K... (hs_autodiff_computation, so the VJP
 * rules under test are the ones that run) and writes the gradients to
 * OUTDIR/out<k>.npy in that order. Exit 1 on any error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_autodiff.h"
#include "hloscope/hs_device.h"
#include "hloscope/hs_file.h"
#include "hloscope/hs_hlo_text.h"
#include "hloscope/hs_npy.h"

enum { MAX_ARGS = 16 };

static int fail(const char *what, const hs_error *e)
{
    char msg[1024];
    hs_error_format(e, msg, sizeof msg);
    fprintf(stderr, "pool_run: %s: %s\n", what, msg);
    return 1;
}

/* A module whose entry is the gradient of fm's entry w.r.t. wrt[0..n). */
static hs_module *gradient_module(const hs_module *fm, const int *wrt, int n,
                                  hs_error *err)
{
    hs_module *m = hs_module_new("pool_grad");
    hs_builder *b = hs_builder_new(m, "main", true);
    const hs_computation *f = fm->entry;
    hs_instruction *p[MAX_ARGS], *grads[MAX_ARGS], *value = NULL;
    for (int k = 0; k < f->n_params; k++)
        p[k] = hs_b_parameter(b, k, &f->params[k]->shape,
                              f->params[k]->name);
    if (hs_autodiff_computation(b, f, p, f->n_params, wrt, n, NULL, &value,
                                grads, err) != HS_OK ||
        !hs_builder_finish(b, n == 1 ? grads[0] : hs_b_tuple(b, grads, n),
                           err)) {
        hs_module_free(m);
        return NULL;
    }
    return m;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: pool_run MODULE.hlo OUTDIR [--grad K,...] "
                        "ARG.npy...\n");
        return 2;
    }
    int wrt[MAX_ARGS], n_wrt = 0, first = 3;
    if (argc > 4 && strcmp(argv[3], "--grad") == 0) {
        for (char *t = strtok(argv[4], ","); t && n_wrt < MAX_ARGS;
             t = strtok(NULL, ","))
            wrt[n_wrt++] = atoi(t);
        first = 5;
    }
    hs_error err;
    hs_error_clear(&err);
    size_t len;
    char *text = hs_read_file(argv[1], &len, &err);
    hs_module *fm = text ? hs_hlo_parse(text, len, &err) : NULL;
    free(text);
    if (!fm)
        return fail(argv[1], &err);
    hs_module *m = n_wrt ? gradient_module(fm, wrt, n_wrt, &err) : fm;
    if (!m)
        return fail("autodiff", &err);
    if (hs_module_verify(m, &err) != HS_OK)
        return fail("verify", &err);
    hs_tensor *args[MAX_ARGS];
    int n_args = argc - first;
    if (n_args > MAX_ARGS || n_args != m->entry->n_params) {
        fprintf(stderr, "pool_run: %d arguments for %d parameters\n", n_args,
                m->entry->n_params);
        return 1;
    }
    for (int k = 0; k < n_args; k++)
        if (!(args[k] = hs_npy_read(argv[first + k], &err)))
            return fail(argv[first + k], &err);
    hs_tensor **outs = NULL;
    int n_outs = 0;
    if (hs_device_run(m, NULL, args, n_args, &outs, &n_outs, NULL, &err))
        return fail("run", &err);
    if (hs_mkdirs(argv[2], &err) != HS_OK)
        return fail(argv[2], &err);
    for (int k = 0; k < n_outs; k++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/out%d.npy", argv[2], k);
        if (hs_npy_write(path, outs[k], &err) != HS_OK)
            return fail(path, &err);
    }
    hs_tensors_free(outs, n_outs);
    for (int k = 0; k < n_args; k++)
        hs_tensor_free(args[k]);
    if (m != fm)
        hs_module_free(m);
    hs_module_free(fm);
    return 0;
}
