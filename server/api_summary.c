/* api_summary.c - what a result says: the compile summary (sizes, passes,
 * timings, links to its artefacts), the per-result compile report and
 * metrics, and device memory from buffer assignment. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "hloscope/hs_device.h"
#include "hloscope/hs_buffers.h"
#include "hloscope/hs_train.h"
#include "report_json.h"

json_t *api_links(const char *id, const char *endpoint)
{
    char base[64];
    snprintf(base, sizeof base, "/v1/results/%s", id);
    json_t *l = json_object();
    json_object_set_new(l, "self", json_string(base));
    if (strcmp(endpoint, "compare") == 0)
        return l;
    static const char *const rel[][2] = {
        {"hlo_traced", "/hlo?stage=traced"},
        {"hlo_optimized", "/hlo?stage=optimized"},
        {"graph_svg", "/graph.svg?stage=optimized"},
        {"graph_dot", "/graph.dot?stage=optimized"},
        {"graph_json", "/graph.json?stage=optimized"},
        {"memory_json", "/memory.json"},
        {"memory_svg", "/memory.svg"},
        {"metrics", "/metrics"},
        {"steps_json", "/steps.json"},
        {"steps_svg", "/steps.svg"},
    };
    for (size_t k = 0; k < sizeof rel / sizeof rel[0]; k++) {
        if (strncmp(rel[k][0], "steps", 5) == 0 && strcmp(endpoint, "run") != 0)
            continue; /* a timeline of steps needs a run */
        char url[160];
        snprintf(url, sizeof url, "%s%s", base, rel[k][1]);
        json_object_set_new(l, rel[k][0], json_string(url));
    }
    return l;
}

static const char *loop_name(hs_loop_mode m)
{
    return m == HS_LOOP_SCAN ? "scan" : "unrolled";
}

/* What ?mode=train compiled: the step's trained values, optimizer state
 * and aliases, and for scans where the residuals went. */
static json_t *train_step_json(const hs_train_step *ts)
{
    json_t *o = json_pack("{s:s, s:s, s:i, s:i, s:i}", "loss",
                          ts->config.loss == HS_LOSS_CROSS_ENTROPY ? "cross_entropy" : "mse",
                          "optimizer",
                          ts->config.optimizer == HS_OPT_ADAM ? "adam" : "sgd",
                          "trained_values", ts->n_params, "optimizer_state",
                          ts->n_state, "aliases", ts->n_alias);
    const hs_scan_vjp_report *r = ts->scan_report;
    if (r && r->n_loops > 0)
        json_object_set_new(
            o, "residuals",
            json_pack("{s:i, s:i, s:I, s:I}", "loops", r->n_loops, "residuals",
                      r->n_residuals, "device_bytes", (json_int_t)r->device_bytes,
                      "host_bytes", (json_int_t)r->host_bytes));
    const hs_train_auto *a = ts->auto_choice;
    if (a)
        json_object_set_new(
            o, "auto",
            json_pack("{s:s, s:I, s:b, s:b, s:i, s:i, s:i, s:I, s:I, s:I, s:I, s:I, s:s}",
                      "device", a->device ? a->device : "", "hbm_bytes",
                      (json_int_t)a->hbm_bytes, "fits", a->fits, "full_remat",
                      a->full_remat, "residuals", a->n_residuals, "offloaded",
                      a->n_offloaded, "recomputed", a->n_remat, "offloaded_bytes",
                      (json_int_t)a->offloaded_bytes, "recomputed_bytes",
                      (json_int_t)a->remat_bytes, "save_peak_bytes",
                      (json_int_t)a->save_peak, "peak_bytes", (json_int_t)a->peak,
                      "host_peak_bytes", (json_int_t)a->host_peak, "text", a->text));
    return o;
}

/* The device's estimate of one execution (hs_device_estimate, the cost
 * model the run's figures come from), or why there is none. */
static json_t *estimate_json(hs_program *prog)
{
    hs_run_stats est;
    hs_error e;
    hs_error_clear(&e);
    if (hs_program_estimate(prog, &est, &e) != HS_OK)
        return json_pack("{s:s}", "error", e.message);
    return json_pack("{s:f, s:f, s:f, s:I, s:s}", "flops", est.flops, "bytes",
                     est.bytes_accessed, "sim_seconds", est.sim_seconds,
                     "instructions", (json_int_t)est.instructions, "source",
                     "device_estimate");
}

json_t *api_summary_compile(const api_request *ar, const api_program *p)
{
    hs_program *prog = p->prog;
    const hs_module *traced = prog->traced;
    const hs_module *opt = prog->optimized;
    const hs_model *model = prog->model;
    const hs_compile_report *r = hs_executable_report(prog->exe);
    char fp[32];
    snprintf(fp, sizeof fp, "%016llx",
             (unsigned long long)hs_executable_fingerprint(prog->exe));
    hs_timing trace = hs_metrics_timing(prog->metrics, HS_METRIC_TRACE_TIME);

    json_t *o = json_object();
    json_object_set_new(o, "id", json_string(ar->id));
    json_object_set_new(o, "endpoint", json_string(ar->endpoint));
    json_object_set_new(o, "input", json_string(model ? "model" : "hlo"));
    json_object_set_new(o, "module", json_string(traced->name));
    json_object_set_new(o, "device", json_string(prog->device->name));
    if (model) {
        json_object_set_new(o, "loop", json_string(loop_name(model->loop)));
        json_object_set_new(o, "residuals",
                            json_string(hs_residuals_name(model->residuals)));
        json_object_set_new(o, "layers", json_integer(model->n_layers));
        json_object_set_new(o, "parameters", json_integer(model->n_params));
        json_object_set_new(o, "parameter_elements",
                            json_integer(model->param_elements));
        json_object_set_new(o, "mode", json_string(prog->train ? "train" : "forward"));
    }
    if (prog->train)
        json_object_set_new(o, "train_step", train_step_json(prog->train));
    json_object_set_new(o, "fingerprint", json_string(fp));
    json_object_set_new(o, "computations",
                        json_pack("{s:i, s:i}", "traced", traced->n_comps,
                                  "optimized", opt->n_comps));
    json_object_set_new(
        o, "instructions",
        json_pack("{s:I, s:I}", "traced",
                  (json_int_t)hs_module_instruction_count(traced), "optimized",
                  (json_int_t)hs_module_instruction_count(opt)));
    json_object_set_new(o, "entry_parameters", json_integer(traced->entry->n_params));
    json_object_set_new(o, "output_shape", report_shape_json(&traced->entry->root->shape));
    json_object_set_new(o, "trace_seconds", json_real((double)trace.total_ns * 1e-9));
    json_object_set_new(o, "compile_seconds", json_real((double)r->total_ns * 1e-9));
    json_object_set_new(o, "compile_cache", json_string(prog->cache_hit ? "hit" : "miss"));
    json_object_set_new(o, "pipeline", json_string(r->pipeline));
    json_object_set_new(o, "estimate", estimate_json(prog));
    json_t *mem = api_program_memory_json(p, false);
    if (mem)
        json_object_set_new(o, "memory", mem);
    /* Compiled, but above the device's HBM (api_program_build kept it):
     * a result all the same, flagged, with XLA's whole report. */
    json_object_set_new(o, "out_of_memory", json_boolean(p->oom_report != NULL));
    if (p->oom_report)
        json_object_set_new(o, "oom_report", srv_json_string(p->oom_report));
    json_object_set_new(o, "links", api_links(ar->id, ar->endpoint));
    return o;
}

json_t *api_metrics_json(const api_program *p)
{
    hs_metrics *met = p->prog->metrics;
    const hs_compile_report *r = hs_executable_report(p->prog->exe);
    json_t *passes = report_passes_json(r);
    char *report = hs_compile_report_format(r);
    char *metrics = hs_metrics_format(met);
    json_t *counters = json_object(), *timings = json_object();
    static const char *const counter_names[] = {HS_METRIC_CACHED_COMPILE,
                                                HS_METRIC_UNCACHED_COMPILE};
    for (int k = 0; k < 2; k++)
        json_object_set_new(counters, counter_names[k],
                            json_integer(hs_metrics_counter(met, counter_names[k])));
    static const char *const timing_names[] = {
        HS_METRIC_TRACE_TIME, HS_METRIC_COMPILE_TIME, HS_METRIC_EXECUTE_TIME};
    for (int k = 0; k < 3; k++) {
        hs_timing t = hs_metrics_timing(met, timing_names[k]);
        if (t.count)
            json_object_set_new(timings, timing_names[k],
                                json_pack("{s:I, s:f}", "count", (json_int_t)t.count,
                                          "total_seconds", (double)t.total_ns * 1e-9));
    }
    json_t *o = json_pack(
        "{s:{s:s, s:f, s:f, s:I, s:I, s:o}, s:o, s:o, s:s, s:s}", "compile_report",
        "pipeline", r->pipeline, "total_seconds", (double)r->total_ns * 1e-9,
        "verify_seconds", (double)r->verify_ns * 1e-9, "instructions_before",
        (json_int_t)r->instructions_before, "instructions_after",
        (json_int_t)r->instructions_after, "passes", passes, "counters",
        counters, "timings", timings, "compile_report_text", report ? report : "",
        "metrics_report_text", metrics ? metrics : "");
    free(report);
    free(metrics);
    return o;
}

static json_t *buffer_json(const hs_logical_buffer *b)
{
    json_t *o = json_pack("{s:i, s:s, s:s, s:s, s:o, s:I, s:s, s:i, s:i, s:s}",
                          "id", b->id, "name", b->name, "instruction",
                          b->instruction->name, "computation",
                          b->computation->name, "shape", report_shape_json(b->shape), "bytes",
                          (json_int_t)b->bytes, "memory_space",
                          b->memory_space == HS_MEMSPACE_HOST ? "host" : "device",
                          "start", b->start, "end", b->end, "kind",
                          hs_buffer_kind_name(b->kind));
    if (o && b->op_name)
        json_object_set_new(o, "op_name", json_string(b->op_name));
    return o;
}

static json_t *peak_json(const hs_buffer_assignment *ba, int space)
{
    hs_buffer_peak pk = hs_buffers_peak(ba, space);
    json_t *o = json_pack("{s:I, s:i}", "bytes", (json_int_t)pk.bytes, "position",
                          pk.position);
    if (pk.instruction)
        json_object_set_new(o, "instruction", json_string(pk.instruction->name));
    if (pk.inner)
        json_object_set_new(o, "inner", json_string(pk.inner->name));
    int n = 0;
    const hs_logical_buffer *const *live = hs_buffers_live_at_peak(ba, space, &n);
    json_t *top = json_array();
    for (int k = 0; k < n && k < 10; k++)
        json_array_append_new(top, buffer_json(live[k]));
    json_object_set_new(o, "largest_live", top);
    /* Every buffer live at the peak (ids into memory.json's buffers[],
     * largest first), so that a client lists them all, not only the ten
     * largest: the explorer's peak table. */
    json_t *ids = json_array();
    for (int k = 0; k < n; k++)
        json_array_append_new(ids, json_integer(live[k]->id));
    json_object_set_new(o, "live", ids);
    return o;
}

/* The memory object of a summary or memory.json from an assignment. */
static json_t *memory_json(const hs_buffer_assignment *ba, const char *device,
                           bool timeline)
{
    json_t *o = report_memory_json(hs_buffers_memory_stats(ba), hs_device_find(device));
    if (timeline) {
        json_object_set_new(o, "peak",
                            json_pack("{s:o, s:o}", "device",
                                      peak_json(ba, HS_MEMSPACE_DEVICE), "host",
                                      peak_json(ba, HS_MEMSPACE_HOST)));
        int n = 0;
        const hs_logical_buffer *list = hs_buffers_list(ba, &n);
        json_t *bufs = json_array();
        for (int k = 0; k < n; k++)
            json_array_append_new(bufs, buffer_json(&list[k]));
        json_object_set_new(o, "buffers", bufs);
    }
    return o;
}

json_t *api_program_memory_json(const api_program *p, bool timeline)
{
    return memory_json(p->prog->buffers, p->prog->device->name, timeline);
}

json_t *api_memory_json(const hs_module *m, const char *device, bool timeline)
{
    hs_error e;
    hs_error_clear(&e);
    hs_buffer_assignment *ba = hs_assign_buffers(m, &e);
    if (!ba) {
        json_t *o = json_object();
        json_object_set_new(o, "error", json_string(e.message));
        return o;
    }
    json_t *o = memory_json(ba, device, timeline);
    hs_buffers_free(ba);
    return o;
}
