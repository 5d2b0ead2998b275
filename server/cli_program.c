/* cli_program.c - loading FILE (trace a model or parse HLO) and compiling
 * it, shared by `compile` and `run`. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "hloscope/hs_device.h"
#include "hloscope/hs_file.h"
#include "hloscope/hs_hlo_text.h"

double cli_now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

static bool is_hlo_file(const char *path)
{
    return ends_with(path, ".hlo") || ends_with(path, ".txt");
}

int cli_report_error(const char *file, const hs_error *e)
{
    char msg[1024];
    hs_error_format(e, msg, sizeof msg);
    fprintf(stderr, "hloscope: %s:%s%s\n", file, e->line > 0 ? "" : " ", msg);
    switch (e->status) {
    case HS_ERR_PARSE:
    case HS_ERR_INVALID:
    case HS_ERR_SHAPE:
    case HS_ERR_LIMIT:
    case HS_ERR_IO:
        return HS_EXIT_USAGE;
    default:
        return HS_EXIT_RUNTIME;
    }
}



static int parse_hlo(const char *file, bool shapes_only, cli_program *p,
                     hs_error *e)
{
    size_t len;
    char *text = hs_read_file(file, &len, e);
    if (!text)
        return -1;
    hs_module **mods = NULL;
    int n = hs_hlo_parse_many(text, len, &mods, e);
    free(text);
    if (n <= 0) {
        if (n == 0)
            hs_error_set(e, HS_ERR_PARSE, "no HLO module in the file");
        free(mods);
        return -1;
    }
    p->hlo = mods[0];
    p->n_more = n - 1;
    p->more = mods; /* mods[0] is p->hlo; the rest follow */
    for (int k = 0; k < n; k++)
        if (hs_module_verify(mods[k], e) != HS_OK)
            return -1;
    if (!shapes_only && p->n_more > 0) {
        hs_error_set(e, HS_ERR_INVALID,
                     "the file holds %d modules separated by '// -----'; "
                     "`run` takes one", n);
        return -1;
    }
    if (shapes_only)
        return 0;
    p->hlo_args = hs_model_hlo_args(p->hlo, &p->n_hlo_args, e);
    return p->hlo_args ? 0 : -1;
}

const char *cli_program_device(const cli_args *a, const cli_program *p)
{
    if (a->device)
        return a->device;
    return p->model ? p->model->device : hs_device_default_name();
}

int cli_program_load(const cli_args *a, bool shapes_only, cli_program *p,
                     hs_error *e)
{
    memset(p, 0, sizeof *p);
    p->metrics = hs_metrics_new();
    if (!p->metrics) {
        hs_error_set(e, HS_ERR_NOMEM, "out of host memory");
        return -1;
    }
    int64_t t0 = hs_now_ns();
    if (is_hlo_file(a->file)) {
        if (parse_hlo(a->file, shapes_only, p, e) != 0)
            return -1;
    } else {
        hs_model_options o = {.loop = a->loop, .device = a->device,
                              .residuals = a->residuals,
                              .batch = a->batch, .shapes_only = shapes_only};
        p->model = hs_model_load_file(a->file, &o, e);
        if (!p->model)
            return -1;
    }
    hs_metrics_record_time(p->metrics, HS_METRIC_TRACE_TIME, hs_now_ns() - t0);

    hs_compile_options co;
    hs_compile_options_init(&co);
    co.device = cli_program_device(a, p);
    co.pipeline = a->pipeline;
    return hs_compile(cli_program_traced(p), &co, NULL, p->metrics, &p->exe, e) ==
                   HS_OK
               ? 0
               : -1;
}

const hs_module *cli_program_traced(const cli_program *p)
{
    return p->model ? p->model->module : p->hlo;
}

void cli_program_free(cli_program *p)
{
    hs_executable_release(p->exe);
    hs_model_free(p->model);
    if (p->more)
        for (int k = 0; k <= p->n_more; k++)
            hs_module_free(p->more[k]);
    else
        hs_module_free(p->hlo);
    free(p->more);
    if (p->hlo_args)
        for (int k = 0; k < p->n_hlo_args; k++)
            hs_tensor_free(p->hlo_args[k]);
    free(p->hlo_args);
    hs_metrics_free(p->metrics);
}
