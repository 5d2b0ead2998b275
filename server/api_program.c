/* api_program.c - a request's program: trace the model (or parse the HLO
 * text) with the query's overrides, check the size limits, compile through
 * the shared compile cache under the request's deadline, and for `run`
 * draw weights and arguments once the run is known to fit. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "hloscope/hs_device.h"
#include "hloscope/hs_hlo_text.h"
#include "hloscope/hs_buffers.h"
#include "hloscope/hs_train.h"

const hs_module *api_program_traced(const api_program *p)
{
    if (p->train)
        return p->train->module;
    return p->model ? p->model->module : p->hlo;
}

void api_program_free(api_program *p)
{
    hs_executable_release(p->exe);
    hs_train_step_free(p->train); /* before the model it points to */
    hs_model_free(p->model);
    hs_module_free(p->hlo);
    if (p->hlo_args)
        for (int k = 0; k < p->n_hlo_args; k++)
            hs_tensor_free(p->hlo_args[k]);
    free(p->hlo_args);
    hs_metrics_free(p->metrics);
    memset(p, 0, sizeof *p);
}

static hs_model *load_model(srv *s, json_t *body, json_t *query,
                            bool shapes_only, hs_error *e)
{
    json_t *copy = json_deep_copy(body);
    json_t *res = json_object_get(query, "residuals");
    if (copy && res)
        json_object_set(copy, "residuals", res);
    char *text = copy ? json_dumps(copy, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(copy);
    if (!text) {
        hs_error_set(e, HS_ERR_NOMEM, "out of host memory");
        return NULL;
    }
    hs_model_options o;
    memset(&o, 0, sizeof o);
    o.loop = json_string_value(json_object_get(query, "loop"));
    o.device = json_string_value(json_object_get(query, "device"));
    o.batch = json_integer_value(json_object_get(query, "batch"));
    o.shapes_only = shapes_only;
    o.limits.max_layers = s->cfg.limits.max_layers;
    o.limits.max_tensor_elements = s->cfg.limits.max_tensor_elements;
    o.limits.max_json_depth = s->cfg.limits.max_json_depth;
    hs_model *m = hs_model_load(text, strlen(text), &o, e);
    free(text);
    return m;
}


static int parse_hlo(json_t *body, hs_module **out, hs_error *e)
{
    const char *text = json_string_value(json_object_get(body, "hlo"));
    hs_module **mods = NULL;
    int n = hs_hlo_parse_many(text, strlen(text), &mods, e);
    if (n <= 0) {
        if (n == 0)
            hs_error_set(e, HS_ERR_PARSE, "no HLO module in the text");
        snprintf(e->path, sizeof e->path, "/hlo");
        free(mods);
        return -1;
    }
    for (int k = 1; k < n; k++)
        hs_module_free(mods[k]);
    *out = mods[0];
    free(mods);
    if (n > 1) {
        hs_error_set(e, HS_ERR_INVALID,
                     "the text holds %d modules separated by '// -----'; send one", n);
        snprintf(e->path, sizeof e->path, "/hlo");
        return -1;
    }
    return hs_module_verify(*out, e) == HS_OK ? 0 : -1;
}

static int check_size(srv *s, const hs_module *m, hs_error *e)
{
    int64_t n = hs_module_instruction_count(m);
    if (n > s->cfg.limits.max_instructions) {
        hs_error_set(e, HS_ERR_LIMIT,
                     "the traced module has %lld instructions, above the limit of "
                     "%lld (--max-instructions); try \"loop\": \"scan\"",
                     (long long)n, (long long)s->cfg.limits.max_instructions);
        return -1;
    }
    return 0;
}

static int compile(srv *s, api_program *p, int64_t deadline_ns, hs_error *e)
{
    hs_compile_options co;
    hs_compile_options_init(&co);
    co.device = p->device;
    co.cancel = &s->cancel;
    if (deadline_ns > 0) {
        int64_t left_ms = (deadline_ns - hs_now_ns()) / 1000000;
        if (left_ms <= 0) {
            hs_error_set(e, HS_ERR_CANCELLED,
                         "deadline exceeded before compiling (limit --deadline-ms "
                         "or ?timeout_ms)");
            return -1;
        }
        co.timeout_ms = left_ms;
    }
    hs_status st = hs_compile(api_program_traced(p), &co, s->compile_cache,
                              p->metrics, &p->exe, e);
    if (st == HS_ERR_CANCELLED && atomic_load(&s->cancel))
        hs_error_set(e, HS_ERR_CANCELLED, "the server is shutting down");
    p->cache_hit = hs_metrics_counter(p->metrics, HS_METRIC_CACHED_COMPILE) > 0;
    srv_metrics_compile_cache(s->metrics, p->cache_hit ? 1 : 0, p->cache_hit ? 0 : 1);
    return st == HS_OK ? 0 : -1;
}

/* Compilation fails as XLA's does when the device peak of the optimized
 * module exceeds the device's memory: HS_ERR_OOM with XLA's
 * RESOURCE_EXHAUSTED report (cut to the message's size). */
static int check_device_memory(const api_program *p, hs_error *e)
{
    const hs_device_spec *spec = hs_device_find(p->device);
    hs_buffer_assignment *ba = hs_assign_buffers(hs_executable_module(p->exe), e);
    if (!spec || !ba)
        return ba ? 0 : -1;
    int rc = 0;
    char *report = hs_buffers_oom_report(ba, (int64_t)spec->hbm_bytes,
                                         strcmp(spec->kind, "gpu") == 0 ? "GPU" : "TPU", 3);
    if (report) {
        /* As much of the report as an error message holds: the first line,
         * then (training step) what the scans stacked, then the usage at
         * the peak and the largest buffers. */
        const hs_scan_vjp_report *sr = p->train ? p->train->scan_report : NULL;
        const char *nl = strchr(report, '\n');
        if (sr && sr->n_loops > 0 && nl) {
            char dev[32], host[32];
            hs_format_bytes(sr->device_bytes, dev, sizeof dev);
            hs_format_bytes(sr->host_bytes, host, sizeof host);
            hs_error_set(e, HS_ERR_OOM,
                         "%.*s\nTraining step: %d scanned loop(s) stack %s of "
                         "residuals on the device and %s on the host (?residuals="
                         "offload, remat_offload or auto moves or recomputes "
                         "them).%.300s",
                         (int)(nl - report), report, sr->n_loops, dev, host, nl);
        } else {
            hs_error_set(e, HS_ERR_OOM, "%.500s", report);
        }
        rc = -1;
    }
    free(report);
    hs_buffers_free(ba);
    return rc;
}

/* `run` executes for real: refuse what would take too long or too much
 * host memory, with the limit in the message. */
static int check_run_limits(srv *s, const api_program *p, hs_error *e)
{
    double flops, bytes;
    api_cost_estimate(hs_executable_module(p->exe), &flops, &bytes);
    if (p->model)
        bytes += 4.0 * (double)p->model->param_elements;
    const srv_limits *l = &s->cfg.limits;
    if (flops > l->max_run_flops) {
        hs_error_set(e, HS_ERR_LIMIT,
                     "running this would execute about %.3g FLOPs, above the "
                     "limit of %.3g (--max-run-flops); POST /v1/compile "
                     "analyses it without running",
                     flops, l->max_run_flops);
        return -1;
    }
    if (bytes > l->max_run_bytes) {
        hs_error_set(e, HS_ERR_LIMIT,
                     "running this would touch about %.3g bytes, above the "
                     "limit of %.3g (--max-run-bytes); POST /v1/compile "
                     "analyses it without running",
                     bytes, l->max_run_bytes);
        return -1;
    }
    return 0;
}

/* ?mode=train: the model's training step replaces its forward module. */
static int build_train_step(api_program *p, hs_error *e)
{
    if (!p->model->train.enabled) {
        hs_error_set(e, HS_ERR_INVALID,
                     "?mode=train compiles the training step, but this model has "
                     "no \"train\" section (add \"train\": {\"loss\": \"mse\", "
                     "\"optimizer\": {\"type\": \"sgd\", \"lr\": 0.01}}, or use "
                     "mode=forward)");
        snprintf(e->path, sizeof e->path, "?mode");
        return -1;
    }
    hs_train_step_free(p->train);
    p->train = hs_train_step_build(p->model, NULL, e);
    if (!p->train) {
        char msg[sizeof e->message];
        memcpy(msg, e->message, sizeof msg);
        snprintf(e->message, sizeof e->message, "building the training step: %.480s",
                 msg);
        if (!e->path[0])
            snprintf(e->path, sizeof e->path, "?mode");
        return -1;
    }
    return 0;
}

static bool train_mode(json_t *query)
{
    const char *mode = json_string_value(json_object_get(query, "mode"));
    return mode && strcmp(mode, "train") == 0;
}

int api_program_build(srv *s, json_t *body, json_t *query, bool for_run,
                      int64_t deadline_ns, api_program *p, hs_error *e)
{
    memset(p, 0, sizeof *p);
    p->metrics = hs_metrics_new();
    if (!p->metrics)
        return hs_error_set(e, HS_ERR_NOMEM, "out of host memory"), -1;
    bool is_hlo = json_object_get(body, "hlo") != NULL;
    if (is_hlo) {
        static const char *const model_only[] = {"loop", "residuals", "batch"};
        for (int k = 0; k < 3; k++)
            if (json_object_get(query, model_only[k])) {
                hs_error_set(e, HS_ERR_INVALID,
                             "'%s' applies to model descriptions, not to HLO text",
                             model_only[k]);
                snprintf(e->path, sizeof e->path, "?%s", model_only[k]);
                return -1;
            }
        if (train_mode(query)) {
            hs_error_set(e, HS_ERR_INVALID,
                         "mode=train differentiates a model description with a "
                         "\"train\" section; HLO text has none");
            snprintf(e->path, sizeof e->path, "?mode");
            return -1;
        }
    }
    int64_t t0 = hs_now_ns();
    if (is_hlo ? parse_hlo(body, &p->hlo, e) != 0
               : !(p->model = load_model(s, body, query, true, e)))
        return -1;
    if (p->model && train_mode(query) && build_train_step(p, e) != 0)
        return -1;
    hs_metrics_record_time(p->metrics, HS_METRIC_TRACE_TIME, hs_now_ns() - t0);
    const char *dev = json_string_value(json_object_get(query, "device"));
    if (!dev)
        dev = p->model ? p->model->device : hs_device_default_name();
    snprintf(p->device, sizeof p->device, "%s", dev);
    if (!hs_device_find(p->device)) {
        hs_error_set(e, HS_ERR_INVALID, "unknown device '%s' (GET /v1/devices lists them)",
                     p->device);
        snprintf(e->path, sizeof e->path, "/device");
        return -1;
    }
    if (check_size(s, api_program_traced(p), e) != 0 ||
        compile(s, p, deadline_ns, e) != 0 || check_device_memory(p, e) != 0)
        return -1;
    if (!for_run)
        return 0;
    if (check_run_limits(s, p, e) != 0)
        return -1;
    if (p->hlo)
        return (p->hlo_args = hs_model_hlo_args(p->hlo, &p->n_hlo_args, e)) ? 0 : -1;
    /* Now draw the weights; the executable compiled from the shapes-only
     * trace fits the same graph (same fingerprint). */
    hs_model *full = load_model(s, body, query, false, e);
    if (!full)
        return -1;
    hs_train_step_free(p->train); /* it points into the shapes-only model */
    p->train = NULL;
    hs_model_free(p->model);
    p->model = full;
    if (train_mode(query) && build_train_step(p, e) != 0)
        return -1;
    if (hs_module_fingerprint(api_program_traced(p)) !=
        hs_executable_fingerprint(p->exe)) {
        hs_executable_release(p->exe);
        p->exe = NULL;
        return compile(s, p, deadline_ns, e);
    }
    return 0;
}
