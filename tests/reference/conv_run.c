/* conv_run.c - runs one convolution and its two gradients on the emulated
 * device for tests/reference/conv_check.py:
 *
 *     conv_run CASE.hlo DIR [--print]
 *
 * CASE.hlo is a module whose entry takes the input (parameter 0) and the
 * kernel (parameter 1) and returns one convolution. conv_run builds
 * y = conv(x, w) and, with autodiff's VJP rule, the cotangents of x and w
 * for the cotangent DIR/gy.npy; runs them with DIR/x.npy and DIR/w.npy;
 * and writes DIR/y.npy, DIR/gx.npy and DIR/gw.npy. --print prints the
 * verified gradient module (the convolutions XLA would run). Exit 0 on
 * success, 1 on any error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_autodiff.h"
#include "hloscope/hs_device.h"
#include "hloscope/hs_file.h"
#include "hloscope/hs_hlo_text.h"
#include "hloscope/hs_npy.h"

static int die(const char *what, const hs_error *e)
{
    char msg[1024];
    hs_error_format(e, msg, sizeof msg);
    fprintf(stderr, "conv_run: %s: %s: %s\n", what,
            hs_status_name(e->status), msg);
    return 1;
}

static const hs_device_spec *largest_device(void)
{
    int n = 0;
    const hs_device_spec *d = hs_device_presets(&n), *best = NULL;
    for (int k = 0; k < n; k++)
        if (!best || d[k].hbm_bytes > best->hbm_bytes)
            best = &d[k];
    return best ? best : hs_device_find(hs_device_default_name());
}

/* The gradient module: (y, gx, gw) of (x, w, gy). */
static hs_module *grad_module(const hs_computation *fwd, hs_error *err)
{
    hs_module *m = hs_module_new("conv_grad");
    if (!m) {
        hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
        return NULL;
    }
    hs_builder *b = hs_builder_new(m, "main", true);
    hs_instruction *x = hs_b_parameter(b, 0, &fwd->params[0]->shape, "x");
    hs_instruction *w = hs_b_parameter(b, 1, &fwd->params[1]->shape, "w");
    hs_instruction *in[2] = {x, w};
    hs_instruction *y = hs_autodiff_inline(b, fwd, in, 2, NULL);
    hs_instruction *gy = y ? hs_b_parameter(b, 2, &y->shape, "gy") : NULL;
    hs_instruction *g[2] = {NULL, NULL};
    if (gy && hs_autodiff_vjp(b, &y, &gy, 1, in, 2, NULL, g, err) != HS_OK) {
        hs_builder_free(b);
        hs_module_free(m);
        return NULL;
    }
    hs_instruction *outs[3] = {y, g[0], g[1]};
    if (!hs_builder_finish(b, hs_b_tuple(b, outs, 3), err) ||
        hs_module_verify(m, err) != HS_OK) {
        hs_module_free(m);
        return NULL;
    }
    return m;
}

int main(int argc, char **argv)
{
    if (argc < 3 || (argc == 4 && strcmp(argv[3], "--print") != 0) ||
        argc > 4) {
        fprintf(stderr, "usage: conv_run CASE.hlo DIR [--print]\n");
        return 2;
    }
    const char *dir = argv[2];
    hs_error err;
    hs_error_clear(&err);
    size_t len = 0;
    char *text = hs_read_file(argv[1], &len, &err);
    if (!text)
        return die(argv[1], &err);
    hs_module *fwd = hs_hlo_parse(text, len, &err);
    free(text);
    if (!fwd)
        return die(argv[1], &err);
    int rc = 0;
    hs_module *m = NULL;
    hs_tensor *args[3] = {NULL, NULL, NULL};
    hs_tensor **outs = NULL;
    int n_outs = 0;
    static const char *const in_names[3] = {"x", "w", "gy"};
    static const char *const out_names[3] = {"y", "gx", "gw"};
    char path[4096];
    if (fwd->entry->n_params != 2) {
        fprintf(stderr, "conv_run: %s: the entry must take (x, w)\n",
                argv[1]);
        rc = 1;
        goto out;
    }
    if (!(m = grad_module(fwd->entry, &err))) {
        rc = die("gradient", &err);
        goto out;
    }
    if (argc == 4) {
        char *s = hs_hlo_print(m);
        fputs(s ? s : "", stdout);
        free(s);
    }
    for (int k = 0; k < 3; k++) {
        snprintf(path, sizeof path, "%s/%s.npy", dir, in_names[k]);
        if (!(args[k] = hs_npy_read(path, &err))) {
            rc = die(path, &err);
            goto out;
        }
    }
    hs_run_stats st;
    if (hs_device_run(m, largest_device(), args, 3, &outs, &n_outs, &st,
                      &err) != HS_OK) {
        rc = die("run", &err);
        goto out;
    }
    for (int k = 0; k < n_outs && k < 3; k++) {
        snprintf(path, sizeof path, "%s/%s.npy", dir, out_names[k]);
        if (hs_npy_write(path, outs[k], &err) != HS_OK) {
            rc = die(path, &err);
            goto out;
        }
    }
out:
    hs_tensors_free(outs, n_outs);
    for (int k = 0; k < 3; k++)
        hs_tensor_free(args[k]);
    hs_module_free(m);
    hs_module_free(fwd);
    return rc;
}
