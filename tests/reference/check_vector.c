/* check_vector.c - runs a model description on the emulated device and
 * compares its output with a committed PyTorch vector (no Python needed).
 *
 *     check_vector MODEL.json VECTOR.npy [--loop scan|unrolled]
 *                  [--device NAME] [--tol 1e-5]
 *
 * The vector is PyTorch's float64 output (cast to f32) for the same weights
 * and input, recorded by tests/reference/compare.py (docs/REFERENCE.md). The
 * error is max|hloscope - vector| / max|vector|; exit 1 when it exceeds the
 * tolerance (or anything fails), 0 otherwise. The device defaults to the
 * largest preset so that memory is never the limit. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_device.h"
#include "hloscope/hs_model.h"
#include "hloscope/hs_npy.h"

static void usage(void)
{
    fprintf(stderr, "usage: check_vector MODEL.json VECTOR.npy [--loop scan|unrolled] "
                    "[--device NAME] [--tol 1e-5]\n");
}

static void print_error(const char *what, const hs_error *e)
{
    char msg[1024];
    hs_error_format(e, msg, sizeof msg);
    fprintf(stderr, "check_vector: %s: %s: %s\n", what, hs_status_name(e->status), msg);
}

/* The preset with the most device memory. */
static const hs_device_spec *largest_device(void)
{
    int n = 0;
    const hs_device_spec *d = hs_device_presets(&n);
    const hs_device_spec *best = NULL;
    for (int k = 0; k < n; k++)
        if (!best || d[k].hbm_bytes > best->hbm_bytes)
            best = &d[k];
    return best ? best : hs_device_find(hs_device_default_name());
}

int main(int argc, char **argv)
{
    const char *model_path = NULL, *vector_path = NULL, *loop = NULL, *device = NULL;
    double tol = 1e-5;
    for (int i = 1; i < argc; i++) {
        if ((strcmp(argv[i], "--loop") == 0 || strcmp(argv[i], "--device") == 0 ||
             strcmp(argv[i], "--tol") == 0) && i + 1 < argc) {
            if (argv[i][2] == 'l')
                loop = argv[++i];
            else if (argv[i][2] == 'd')
                device = argv[++i];
            else
                tol = atof(argv[++i]);
        } else if (argv[i][0] == '-') {
            usage();
            return 2;
        } else if (!model_path) {
            model_path = argv[i];
        } else if (!vector_path) {
            vector_path = argv[i];
        } else {
            usage();
            return 2;
        }
    }
    if (!model_path || !vector_path || !(tol > 0)) {
        usage();
        return 2;
    }

    const hs_device_spec *spec = device ? hs_device_find(device) : largest_device();
    if (!spec) {
        fprintf(stderr, "check_vector: unknown device '%s'\n", device);
        return 2;
    }

    int rc = 1;
    hs_error err;
    hs_error_clear(&err);
    hs_model *m = NULL;
    hs_tensor *want = NULL, **outs = NULL, **args = NULL;
    int n_outs = 0;

    hs_model_options opts;
    memset(&opts, 0, sizeof opts);
    opts.loop = loop;
    m = hs_model_load_file(model_path, &opts, &err);
    if (!m) {
        print_error(model_path, &err);
        goto out;
    }
    want = hs_npy_read(vector_path, &err);
    if (!want) {
        print_error(vector_path, &err);
        goto out;
    }
    /* 1 + n_params entry arguments unrolled; fewer when a scanned repeat
     * feeds stacked weights, never more. */
    args = calloc((size_t)m->n_params + 1, sizeof *args);
    int n_args = args ? hs_model_args(m, args, m->n_params + 1) : -1;
    if (n_args < 1) {
        fprintf(stderr, "check_vector: hs_model_args returned %d\n", n_args);
        goto out;
    }
    hs_run_stats st;
    memset(&st, 0, sizeof st);
    if (hs_device_run(m->module, spec, args, n_args, &outs, &n_outs, &st, &err) != HS_OK) {
        print_error("hs_device_run", &err);
        goto out;
    }
    if (n_outs != 1 || outs[0]->shape.dtype != HS_F32) {
        fprintf(stderr, "check_vector: expected one f32 output, got %d outputs\n", n_outs);
        goto out;
    }

    char got_s[256], want_s[256];
    hs_shape_print(&outs[0]->shape, false, got_s, sizeof got_s);
    hs_shape_print(&want->shape, false, want_s, sizeof want_s);
    if (!hs_shape_compatible(&outs[0]->shape, &want->shape) ||
        want->shape.dtype != HS_F32) {
        fprintf(stderr, "check_vector: output %s, vector %s\n", got_s, want_s);
        goto out;
    }

    const float *a = hs_tensor_f32(outs[0]), *b = hs_tensor_f32(want);
    int64_t n = hs_tensor_elements(want), worst = 0;
    double diff = 0, scale = 0;
    bool finite = true;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (!isfinite(a[i]))
            finite = false;
        if (d > diff) {
            diff = d;
            worst = i;
        }
        if (fabs((double)b[i]) > scale)
            scale = fabs((double)b[i]);
    }
    double rel = !finite ? INFINITY : scale > 0 ? diff / scale : diff;
    bool ok = rel <= tol;
    printf("%s: %s on %s (%s): max relative error %.3e (max|diff| %.3e at %lld: "
           "got %.9g, want %.9g; max|want| %.3e), tolerance %.0e: %s\n",
           model_path, got_s, spec->name, m->loop == HS_LOOP_SCAN ? "scan" : "unrolled",
           rel, diff, (long long)worst, n ? a[worst] : 0.0, n ? b[worst] : 0.0, scale, tol,
           ok ? "ok" : finite ? "FAIL" : "FAIL (non-finite output)");
    rc = ok ? 0 : 1;
out:
    hs_tensors_free(outs, n_outs);
    free(args);
    hs_tensor_free(want);
    hs_model_free(m);
    return rc;
}
