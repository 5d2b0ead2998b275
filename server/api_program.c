/* api_program.c - a request's program: the engine's hs_program built from
 * the request body (parsed once, by api_request.c) with the query's
 * overrides, under the server's policy: the instruction limit between
 * trace and compile, the shared compile cache, the request's deadline, and
 * for `run` the run limits, checked on the program's estimate before any
 * weight is drawn. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "hloscope/hs_device.h"

json_t *api_program_error_json(const api_program *p, const hs_error *e)
{
    json_t *err = srv_error_json(e);
    /* hs_error keeps what fits of an out-of-memory report or of a refusal
     * with many blockers; the user sees all of it. */
    const char *whole = NULL;
    if (e->status == HS_ERR_OOM)
        whole = p->oom_report ? p->oom_report : p->prog ? p->prog->oom_report : NULL;
    else if (p->prog && p->prog->refusal &&
             (e->status == HS_ERR_LIMIT || e->status == HS_ERR_UNSUPPORTED))
        whole = p->prog->refusal;
    json_t *inner = json_object_get(err, "error");
    if (whole && inner)
        json_object_set_new(inner, "message", srv_json_string(whole));
    return err;
}

const hs_module *api_program_traced(const api_program *p)
{
    return p->prog ? p->prog->traced : NULL;
}

void api_program_free(api_program *p)
{
    hs_program_free(p->prog);
    free(p->oom_report);
    memset(p, 0, sizeof *p);
}

static bool train_mode(json_t *query)
{
    const char *mode = json_string_value(json_object_get(query, "mode"));
    return mode && strcmp(mode, "train") == 0;
}

static int set_path(hs_error *e, const char *path)
{
    snprintf(e->path, sizeof e->path, "%s", path);
    return -1;
}

/* The overrides that only a model description takes. */
static int check_model_query(json_t *query, hs_error *e)
{
    if (!json_object_get(query, "module"))
        return 0;
    hs_error_set(e, HS_ERR_INVALID,
                 "'module' picks a module of split HLO text; a model "
                 "description is one program");
    return set_path(e, "?module");
}

static int check_hlo_query(json_t *query, hs_error *e)
{
    static const char *const model_only[] = {"loop", "residuals", "batch"};
    for (int k = 0; k < 3; k++)
        if (json_object_get(query, model_only[k])) {
            hs_error_set(e, HS_ERR_INVALID,
                         "'%s' applies to model descriptions, not to HLO text",
                         model_only[k]);
            char path[16];
            snprintf(path, sizeof path, "?%s", model_only[k]);
            return set_path(e, path);
        }
    if (train_mode(query)) {
        hs_error_set(e, HS_ERR_INVALID,
                     "mode=train differentiates a model description with a "
                     "\"train\" section; HLO text has none");
        return set_path(e, "?mode");
    }
    return 0;
}

static void options_of(srv *s, json_t *query, int64_t deadline_ns,
                       hs_program_options *o)
{
    hs_program_options_init(o);
    o->model.loop = json_string_value(json_object_get(query, "loop"));
    o->model.residuals = json_string_value(json_object_get(query, "residuals"));
    o->model.batch = json_integer_value(json_object_get(query, "batch"));
    o->model.limits.max_layers = s->cfg.limits.max_layers;
    o->model.limits.max_tensor_elements = s->cfg.limits.max_tensor_elements;
    o->model.limits.max_json_depth = s->cfg.limits.max_json_depth;
    o->device = json_string_value(json_object_get(query, "device"));
    o->train = train_mode(query);
    o->cache = s->compile_cache;
    o->cancel = &s->cancel;
    o->deadline_ns = deadline_ns;
    /* A compile fails like XLA's when HBM is short; api_program_build
     * then keeps a compile request's program all the same
     * (keep_out_of_memory). */
    o->check_memory = true;
    json_t *module = json_object_get(query, "module");
    if (module)
        o->module = (int)json_integer_value(module);
    /* A run is refused up front when arguments + peak exceed this. */
    o->max_run_bytes = s->cfg.limits.max_run_bytes;
    o->max_run_bytes_name = "--max-run-bytes";
}

/* Where the engine's error points, in the request's terms: the HLO text
 * is the body's "hlo", the training step is what ?mode=train asked for. */
static void locate_error(json_t *query, bool is_hlo, hs_error *e)
{
    if (train_mode(query) && strcmp(e->path, "/train") == 0) {
        if (strstr(e->message, "no \"train\" section"))
            hs_error_set(e, HS_ERR_INVALID,
                         "?mode=train compiles the training step, but this model "
                         "has no \"train\" section (add \"train\": {\"loss\": "
                         "\"mse\", \"optimizer\": {\"type\": \"sgd\", \"lr\": "
                         "0.01}}, or use mode=forward)");
        set_path(e, "?mode");
    } else if (is_hlo && strcmp(e->path, "/module") == 0) {
        /* A split text without ?module, or an index past its last. */
        if (strstr(e->message, "choose one"))
            snprintf(e->message + strlen(e->message),
                     sizeof e->message - strlen(e->message), " (?module=N)");
        set_path(e, "?module");
    } else if (is_hlo && !e->path[0]) {
        set_path(e, "/hlo");
    }
    if (e->status == HS_ERR_INVALID && strncmp(e->message, "unknown device", 14) == 0)
        snprintf(e->message + strlen(e->message),
                 sizeof e->message - strlen(e->message),
                 " (GET /v1/devices lists them)");
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

static int compile(srv *s, hs_program *prog, int64_t deadline_ns, hs_error *e)
{
    if (deadline_ns > 0 && hs_now_ns() >= deadline_ns) {
        hs_error_set(e, HS_ERR_CANCELLED,
                     "deadline exceeded before compiling (limit --deadline-ms "
                     "or ?timeout_ms)");
        return -1;
    }
    hs_status st = hs_program_compile(prog, e);
    if (st == HS_ERR_CANCELLED && atomic_load(&s->cancel))
        hs_error_set(e, HS_ERR_CANCELLED, "the server is shutting down");
    /* Counted whenever the cache answered or the pipeline ran, an
     * executable that then did not fit the device included. */
    srv_metrics_compile_cache(
        s->metrics, hs_metrics_counter(prog->metrics, HS_METRIC_CACHED_COMPILE),
        hs_metrics_counter(prog->metrics, HS_METRIC_UNCACHED_COMPILE));
    return st == HS_OK ? 0 : -1;
}

/* A compile that does not fit the device is still a result: its graph, its
 * memory timeline and XLA's report (p->oom_report, kept from the failed
 * check, the training step's stacked residuals included). The executable
 * is asked for again without the memory check: the compile cache stored it
 * before the check ran, so this is a lookup (a full compile only when the
 * cache is off or evicted it meanwhile), and neither that lookup nor the
 * check is counted twice in /metrics. A run keeps the check (for_run): it
 * still fails with the report. */
static int keep_out_of_memory(api_program *p, hs_error *e)
{
    hs_program *prog = p->prog;
    bool hit = prog->cache_hit;
    hs_error again;
    hs_error_clear(&again);
    prog->options.check_memory = false;
    if (!p->oom_report || hs_program_compile(prog, &again) != HS_OK) {
        if (again.status != HS_OK)
            *e = again;
        return -1;
    }
    prog->cache_hit = hit; /* the first lookup is the one that says */
    hs_error_clear(e);
    return 0;
}

int api_check_run_limits(srv *s, hs_program *prog, double runs, const char *what,
                         hs_error *e)
{
    /* What blocks any run (an opcode or type the device lacks, arguments
     * and peak beyond --max-run-bytes), on shapes, in one walk. */
    if (hs_program_check_run(prog, e) != HS_OK)
        return -1;
    hs_run_stats est;
    if (hs_program_estimate(prog, &est, e) != HS_OK)
        return -1;
    double flops = est.flops * runs, bytes = est.bytes_accessed * runs;
    if (prog->model)
        bytes += 4.0 * (double)prog->model->param_elements;
    const srv_limits *l = &s->cfg.limits;
    if (flops > l->max_run_flops) {
        hs_error_set(e, HS_ERR_LIMIT,
                     "%s would execute about %.3g FLOPs, above the limit of %.3g "
                     "(--max-run-flops); POST /v1/compile analyses it without "
                     "running",
                     what, flops, l->max_run_flops);
        return -1;
    }
    if (bytes > l->max_run_bytes) {
        hs_error_set(e, HS_ERR_LIMIT,
                     "%s would touch about %.3g bytes, above the limit of %.3g "
                     "(--max-run-bytes); POST /v1/compile analyses it without "
                     "running",
                     what, bytes, l->max_run_bytes);
        return -1;
    }
    return 0;
}

int api_program_build(srv *s, json_t *body, json_t *query, bool for_run,
                      int64_t deadline_ns, api_program *p, hs_error *e)
{
    memset(p, 0, sizeof *p);
    bool is_hlo = json_object_get(body, "hlo") != NULL;
    if (is_hlo ? check_hlo_query(query, e) != 0 : check_model_query(query, e) != 0)
        return -1;
    hs_program_options o;
    options_of(s, query, deadline_ns, &o);
    o.oom_report = &p->oom_report;
    hs_program_source src = {.kind = is_hlo ? HS_SOURCE_HLO : HS_SOURCE_MODEL};
    if (is_hlo) {
        src.text = json_string_value(json_object_get(body, "hlo"));
        src.len = src.text ? strlen(src.text) : 0;
    } else {
        src.json = body; /* parsed once, from the request */
    }
    p->prog = hs_program_trace(&src, &o, e);
    if (!p->prog) {
        locate_error(query, is_hlo, e);
        return -1;
    }
    snprintf(p->device, sizeof p->device, "%s", p->prog->device->name);
    if (check_size(s, p->prog->traced, e) != 0)
        return -1;
    if (compile(s, p->prog, deadline_ns, e) != 0 &&
        (e->status != HS_ERR_OOM || for_run || keep_out_of_memory(p, e) != 0))
        return -1;
    p->exe = p->prog->exe;
    if (!for_run)
        return 0;
    /* `run` executes for real: refuse what would take too long or too
     * much host memory, before drawing a single weight. */
    if (api_check_run_limits(s, p->prog, 1, "running this", e) != 0)
        return -1;
    return hs_program_materialize(p->prog, e) == HS_OK ? 0 : -1;
}
