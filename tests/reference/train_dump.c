/* train_dump.c - trains a model description on the emulated device and
 * dumps everything a PyTorch check needs (tests/reference/compare_grads.py):
 *
 *     train_dump MODEL.json DIR [--steps N] [--loop unrolled|scan]
 *                               [--device NAME]
 *
 * writes DIR/input.npy, DIR/params/<name>.npy (initial values), and, via
 * hs_train_dump, DIR/target.npy, DIR/loss.npy (one loss per step),
 * DIR/grads/<name>.npy (first step) and DIR/updated/<name>.npy (after the
 * last step): the layout `hloscope run --dump DIR` uses. The model must
 * have a "train" section. Exit 0 on success, 1 on any error. The device
 * defaults to the largest preset so that memory is never the limit. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_device.h"
#include "hloscope/hs_model.h"
#include "hloscope/hs_npy.h"
#include "hloscope/hs_train.h"

static int die(const char *what, const hs_error *e)
{
    char msg[1024];
    hs_error_format(e, msg, sizeof msg);
    fprintf(stderr, "train_dump: %s: %s: %s\n", what, hs_status_name(e->status),
            msg);
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

static hs_status dump_inputs(const hs_model *m, const char *dir, hs_error *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/params", dir);
    hs_status st = hs_mkdirs(path, err);
    if (st == HS_OK) {
        snprintf(path, sizeof path, "%s/input.npy", dir);
        st = hs_npy_write(path, m->input, err);
    }
    for (int i = 0; st == HS_OK && i < m->n_params; i++) {
        snprintf(path, sizeof path, "%s/params/%s.npy", dir,
                 m->params[i].name);
        st = hs_npy_write_f32(path, &m->params[i].shape, m->params[i].init,
                              err);
    }
    return st;
}

int main(int argc, char **argv)
{
    const char *model_path = NULL, *dir = NULL, *device = NULL;
    hs_model_options opts = {0};
    int64_t steps = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc)
            steps = atoll(argv[++i]);
        else if (strcmp(argv[i], "--loop") == 0 && i + 1 < argc)
            opts.loop = argv[++i];
        else if (strcmp(argv[i], "--device") == 0 && i + 1 < argc)
            device = argv[++i];
        else if (argv[i][0] != '-' && !model_path)
            model_path = argv[i];
        else if (argv[i][0] != '-' && !dir)
            dir = argv[i];
        else {
            fprintf(stderr, "usage: train_dump MODEL.json DIR [--steps N] "
                            "[--loop unrolled|scan] [--device NAME]\n");
            return 2;
        }
    }
    if (!model_path || !dir) {
        fprintf(stderr, "usage: train_dump MODEL.json DIR [--steps N] "
                        "[--loop unrolled|scan] [--device NAME]\n");
        return 2;
    }
    const hs_device_spec *spec = device ? hs_device_find(device)
                                        : largest_device();
    if (!spec) {
        fprintf(stderr, "train_dump: unknown device %s\n", device);
        return 1;
    }
    hs_error err;
    hs_model *m = hs_model_load_file(model_path, &opts, &err);
    if (!m)
        return die(model_path, &err);
    int rc = 0;
    hs_train_step *ts = hs_train_step_build(m, NULL, &err);
    hs_train_result r = {0};
    hs_train_run_options ro = {.steps = steps, .want_grads = true};
    if (!ts)
        rc = die("train step", &err);
    else if (hs_train_run(ts, spec, &ro, &r, &err) != HS_OK)
        rc = die("train", &err);
    else if (dump_inputs(m, dir, &err) != HS_OK ||
             hs_train_dump(ts, &r, dir, &err) != HS_OK)
        rc = die(dir, &err);
    else
        printf("%s: %lld steps, loss %.8g -> %.8g\n", model_path,
               (long long)r.steps, r.losses[0], r.losses[r.steps - 1]);
    hs_train_result_free(&r);
    hs_train_step_free(ts);
    hs_model_free(m);
    return rc;
}
