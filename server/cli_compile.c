/* cli_compile.c - `hloscope compile FILE`: trace or parse, compile through
 * the pass pipeline against the device's HBM, print HLO (traced or
 * optimized) or a JSON summary, and the memory the executable needs. A
 * split file (modules separated by '// -----') compiles each module, or
 * the one --module names. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"
#include "hloscope/hs_hlo_text.h"
#include "report_json.h"

/* The compile result as JSON (jansson does the escaping). */
static json_t *json_summary(const cli_args *a, const hs_program *p)
{
    const hs_module *traced = p->traced;
    const hs_module *opt = p->optimized;
    const hs_compile_report *r = hs_executable_report(p->exe);
    char fp[32];
    snprintf(fp, sizeof fp, "%016llx",
             (unsigned long long)hs_executable_fingerprint(p->exe));
    hs_timing trace = hs_metrics_timing(p->metrics, HS_METRIC_TRACE_TIME);

    json_t *passes = report_passes_json(r);
    json_t *o = json_pack(
        "{s:s, s:s, s:s, s:{s:i, s:i}, s:{s:I, s:I}, s:i, s:o, s:s, s:f, s:f, s:o, s:o}",
        "file", a->file, "module", traced->name, "fingerprint", fp,
        "computations", "traced", traced->n_comps, "optimized", opt->n_comps,
        "instructions", "traced", (json_int_t)hs_module_instruction_count(traced),
        "optimized", (json_int_t)hs_module_instruction_count(opt),
        "entry_parameters", traced->entry->n_params, "output_shape",
        report_shape_json(&traced->entry->root->shape), "device",
        p->device->name, "trace_seconds", (double)trace.total_ns * 1e-9,
        "compile_seconds", (double)r->total_ns * 1e-9, "passes", passes,
        "memory", report_memory_json(hs_buffers_memory_stats(p->buffers), p->device));
    if (o && p->hlo && p->n_modules > 1)
        json_object_set_new(o, "module_index", json_integer(p->module));
    if (o && p->model) {
        json_object_set_new(o, "parameters", json_integer(p->model->n_params));
        json_object_set_new(o, "parameter_elements",
                            json_integer(p->model->param_elements));
        json_object_set_new(o, "layers", json_integer(p->model->n_layers));
        json_object_set_new(o, "loop", json_string(p->model->loop == HS_LOOP_SCAN
                                                       ? "scan"
                                                       : "unrolled"));
    }
    return o;
}

static void print_json(json_t *o)
{
    char *text = o ? json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
    if (text)
        puts(text);
    free(text);
}

/* What XLA logs as the compiled memory stats, and the device's HBM it was
 * checked against. stderr: stdout stays HLO text that parses back. */
static void print_memory(const hs_program *p)
{
    char *t = hs_memory_stats_format(hs_buffers_memory_stats(p->buffers));
    char hbm[32];
    hs_format_bytes((int64_t)p->device->hbm_bytes, hbm, sizeof hbm);
    if (p->n_modules > 1)
        fprintf(stderr, "module %d (%s):\n", p->module, p->traced->name);
    if (t)
        fputs(t, stderr);
    fprintf(stderr, "device HBM       %12.0f %7s (%s): fits\n", p->device->hbm_bytes,
            hbm, p->device->name);
    free(t);
}

/* Compiles module `module` of the file and prints it (or adds its summary
 * to the array json); *n_modules receives how many the file holds. */
static int compile_one(const cli_args *a, int module, json_t *json,
                       int *n_modules)
{
    hs_error e;
    hs_error_clear(&e);
    char *oom = NULL;
    hs_program *p = cli_program_load(a, module, false, &e, &oom);
    if (!p)
        return cli_report_failure(a->file, &e, oom);
    *n_modules = p->n_modules;
    if (json) {
        json_array_append_new(json, json_summary(a, p));
    } else {
        if (module > 0 && a->module < 0)
            printf("\n// -----\n\n");
        bool traced = strcmp(a->stage, "traced") == 0;
        hs_hlo_fprint(traced ? p->traced : p->optimized, stdout);
        print_memory(p);
    }
    if (a->report) {
        char *r = hs_compile_report_format(hs_executable_report(p->exe));
        fputs(r, stdout);
        free(r);
    }
    if (a->metrics) {
        char *m = hs_metrics_format(p->metrics);
        fputs(m, stdout);
        free(m);
    }
    hs_program_free(p);
    return HS_EXIT_OK;
}

int cli_compile(int argc, char **argv)
{
    cli_args a;
    int rc = cli_parse_args(argc, argv, &a, false);
    if (rc != HS_EXIT_OK || a.help)
        return rc;
    json_t *json = strcmp(a.emit, "json") == 0 ? json_array() : NULL;
    int n = 1;
    if (a.module >= 0) {
        rc = compile_one(&a, a.module, json, &n);
        n = 1;
    } else {
        /* A split file compiles every module, the first telling how many
         * there are. */
        for (int k = 0; rc == HS_EXIT_OK && k < n; k++)
            rc = compile_one(&a, k, json, &n);
    }
    if (rc == HS_EXIT_OK && json)
        print_json(n > 1 ? json : json_array_get(json, 0));
    json_decref(json);
    return rc;
}
