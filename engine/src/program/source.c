/* source.c - from a source to the traced module: a model description
 * loaded with shapes only (and its training step), or HLO text parsed and
 * verified; then the device the program is for. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_hlo_text.h"
#include "hloscope/hs_train.h"
#include "program/program_internal.h"

static hs_status load_model(hs_program *p, const hs_program_source *src,
                            hs_error *err)
{
    hs_model_options mo = p->options.model;
    mo.device = p->options.device;
    mo.shapes_only = true; /* weights are drawn by hs_program_materialize */
    p->model = src->json ? hs_model_load_json(src->json, &mo, err)
                         : hs_model_load(src->text, src->len, &mo, err);
    if (!p->model)
        return err ? err->status : HS_ERR_INVALID;
    p->owns_model = true;
    return HS_OK;
}

/* Which module of the text to compile: the one asked for, or the only
 * one. */
static hs_status pick_module(hs_program *p, int n, hs_error *err)
{
    int want = p->options.module;
    if (want < 0 && n > 1) {
        hs_error_set(err, HS_ERR_INVALID,
                     "the text holds %d modules separated by '// -----'; "
                     "choose one by its index, 0 to %d",
                     n, n - 1);
    } else if (want >= n && n == 1) {
        hs_error_set(err, HS_ERR_INVALID,
                     "there is no module %d: the text holds one module "
                     "(index 0)",
                     want);
    } else if (want >= n) {
        hs_error_set(err, HS_ERR_INVALID,
                     "there is no module %d: the text holds %d modules "
                     "(index 0 to %d)",
                     want, n, n - 1);
    } else {
        p->module = want < 0 ? 0 : want;
        return HS_OK;
    }
    if (err)
        snprintf(err->path, sizeof err->path, "/module");
    return HS_ERR_INVALID;
}

static hs_status parse_hlo(hs_program *p, const hs_program_source *src,
                           hs_error *err)
{
    hs_module **mods = NULL;
    int n = hs_hlo_parse_many(src->text ? src->text : "", src->len, &mods, err);
    if (n <= 0) {
        free(mods);
        return n == 0 ? hs_error_set(err, HS_ERR_PARSE, "no HLO module in the text")
                      : (err ? err->status : HS_ERR_PARSE);
    }
    p->n_modules = n;
    hs_status st = pick_module(p, n, err);
    if (st == HS_OK) {
        p->hlo = mods[p->module];
        mods[p->module] = NULL;
    }
    for (int k = 0; k < n; k++)
        hs_module_free(mods[k]);
    free(mods);
    if (st != HS_OK)
        return st;
    if (hs_module_verify(p->hlo, err) != HS_OK) {
        if (err && n > 1) {
            char msg[sizeof err->message];
            memcpy(msg, err->message, sizeof msg);
            hs_error_set(err, err->status, "module %d: %s", p->module, msg);
        }
        return err ? err->status : HS_ERR_INVALID;
    }
    return HS_OK;
}

/* options.train: the model's training step replaces its forward pass. */
static hs_status build_train_step(hs_program *p, hs_error *err)
{
    if (p->kind != HS_SOURCE_MODEL) {
        hs_error_set(err, HS_ERR_INVALID,
                     "a training step differentiates a model description with "
                     "a \"train\" section; HLO text has none");
        return HS_ERR_INVALID;
    }
    if (!p->model->train.enabled) {
        hs_error_set(err, HS_ERR_INVALID,
                     "this model has no \"train\" section to build a training "
                     "step from (add \"train\": {\"loss\": \"mse\", "
                     "\"optimizer\": {\"type\": \"sgd\", \"lr\": 0.01}})");
        if (err)
            snprintf(err->path, sizeof err->path, "/train");
        return HS_ERR_INVALID;
    }
    p->train = hs_train_step_build(p->model, NULL, err);
    if (!p->train) {
        if (err) {
            char msg[sizeof err->message];
            memcpy(msg, err->message, sizeof msg);
            snprintf(err->message, sizeof err->message,
                     "building the training step: %.480s", msg);
            if (!err->path[0])
                snprintf(err->path, sizeof err->path, "/train");
        }
        return err ? err->status : HS_ERR_INVALID;
    }
    return HS_OK;
}

static hs_status resolve_device(hs_program *p, hs_error *err)
{
    const char *name = p->options.device;
    if (!name)
        name = p->model ? p->model->device : hs_device_default_name();
    p->device = hs_device_find(name);
    if (p->device)
        return HS_OK;
    hs_error_set(err, HS_ERR_INVALID, "unknown device '%s'", name);
    if (err)
        snprintf(err->path, sizeof err->path, "/device");
    return HS_ERR_INVALID;
}

hs_program *hs_program_trace(const hs_program_source *src,
                             const hs_program_options *opts, hs_error *err)
{
    hs_error_clear(err);
    hs_program *p = hs__program_new(opts, err);
    if (!p)
        return NULL;
    p->kind = src->kind;
    int64_t t0 = hs_now_ns();
    hs_status st = src->kind == HS_SOURCE_HLO ? parse_hlo(p, src, err)
                                              : load_model(p, src, err);
    if (st == HS_OK && p->options.train)
        st = build_train_step(p, err);
    if (st == HS_OK) {
        hs_metrics_record_time(p->metrics, HS_METRIC_TRACE_TIME, hs_now_ns() - t0);
        p->traced = p->train ? p->train->module
                             : p->model ? p->model->module : p->hlo;
        st = resolve_device(p, err);
    }
    if (st != HS_OK) {
        hs_program_free(p);
        return NULL;
    }
    return p;
}
