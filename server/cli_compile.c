/* cli_compile.c - `hloscope compile FILE`: trace or parse, compile through
 * the pass pipeline, print HLO (traced or optimized) or a JSON summary. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"
#include "hloscope/hs_hlo_text.h"
#include "report_json.h"

/* The compile result as JSON (jansson does the escaping). */
static void print_json_summary(const cli_args *a, const hs_program *p)
{
    const hs_module *traced = p->traced;
    const hs_module *opt = p->optimized;
    const hs_compile_report *r = hs_executable_report(p->exe);
    char out[256] = "", fp[32];
    hs_shape_print(&traced->entry->root->shape, true, out, sizeof out);
    snprintf(fp, sizeof fp, "%016llx",
             (unsigned long long)hs_executable_fingerprint(p->exe));
    hs_timing trace = hs_metrics_timing(p->metrics, HS_METRIC_TRACE_TIME);

    json_t *passes = report_passes_json(r);
    json_t *o = json_pack(
        "{s:s, s:s, s:s, s:{s:i, s:i}, s:{s:I, s:I}, s:i, s:s, s:s, s:f, s:f, s:o}",
        "file", a->file, "module", traced->name, "fingerprint", fp,
        "computations", "traced", traced->n_comps, "optimized", opt->n_comps,
        "instructions", "traced", (json_int_t)hs_module_instruction_count(traced),
        "optimized", (json_int_t)hs_module_instruction_count(opt),
        "entry_parameters", traced->entry->n_params, "output_shape", out,
        "device", p->device->name, "trace_seconds",
        (double)trace.total_ns * 1e-9, "compile_seconds",
        (double)r->total_ns * 1e-9, "passes", passes);
    if (o && p->model) {
        json_object_set_new(o, "parameters", json_integer(p->model->n_params));
        json_object_set_new(o, "parameter_elements",
                            json_integer(p->model->param_elements));
        json_object_set_new(o, "layers", json_integer(p->model->n_layers));
        json_object_set_new(o, "loop", json_string(p->model->loop == HS_LOOP_SCAN
                                                       ? "scan"
                                                       : "unrolled"));
    }
    char *text = o ? json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
    if (text)
        puts(text);
    free(text);
    json_decref(o);
}

int hs_cli_compile(int argc, char **argv)
{
    cli_args a;
    int rc = cli_parse_args(argc, argv, &a, false);
    if (rc != HS_EXIT_OK)
        return rc;
    hs_error e;
    hs_error_clear(&e);
    hs_program *p = cli_program_load(&a, false, &e);
    if (!p)
        return cli_report_error(a.file, &e);
    bool traced = strcmp(a.stage, "traced") == 0;
    if (strcmp(a.emit, "json") == 0) {
        print_json_summary(&a, p);
    } else {
        hs_hlo_fprint(traced ? p->traced : p->optimized, stdout);
        /* Further modules of a split file are printed as parsed. */
        for (int k = 0; k < p->n_more; k++) {
            printf("\n// -----\n\n");
            hs_hlo_fprint(p->more[k], stdout);
        }
    }
    if (a.report) {
        char *r = hs_compile_report_format(hs_executable_report(p->exe));
        fputs(r, stdout);
        free(r);
    }
    if (a.metrics) {
        char *m = hs_metrics_format(p->metrics);
        fputs(m, stdout);
        free(m);
    }
    hs_program_free(p);
    return HS_EXIT_OK;
}
