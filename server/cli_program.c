/* cli_program.c - FILE to a program (hs_program_build: trace a model or
 * parse HLO, compile), shared by `compile` and `run`. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "hloscope/hs_file.h"

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

static int exit_status(hs_status s)
{
    switch (s) {
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

int cli_report_error(const char *file, const hs_error *e)
{
    char msg[1024];
    hs_error shown = *e;
    /* A split file without --module: say how to pick, in this door's
     * words (the API says ?module=N). */
    bool pick = strcmp(e->path, "/module") == 0;
    if (pick)
        shown.path[0] = '\0';
    hs_error_format(&shown, msg, sizeof msg);
    fprintf(stderr, "hloscope: %s:%s%s%s\n", file, e->line > 0 ? "" : " ", msg,
            pick ? " (--module N)" : "");
    return exit_status(e->status);
}

int cli_report_failure(const char *file, const hs_error *e, char *whole)
{
    if (!whole)
        return cli_report_error(file, e);
    /* All of it (XLA's OOM report, every blocker of a refusal): hs_error's
     * message keeps only what fits. */
    fprintf(stderr, "hloscope: %s: %s%s%s", file, e->instruction,
            e->instruction[0] ? ": " : "", whole);
    if (!*whole || whole[strlen(whole) - 1] != '\n')
        fputc('\n', stderr);
    free(whole);
    return exit_status(e->status);
}

/* FILE traced (trace_only) or traced and compiled. */
static hs_program *load(const cli_args *a, int module, bool trace_only,
                        hs_error *e, char **whole)
{
    size_t len;
    char *text = hs_read_file(a->file, &len, e);
    if (!text)
        return NULL;
    hs_program_source src = {.kind = is_hlo_file(a->file) ? HS_SOURCE_HLO
                                                          : HS_SOURCE_MODEL,
                             .text = text, .len = len};
    if ((a->module >= 0 || a->args_dir) && src.kind != HS_SOURCE_HLO) {
        free(text);
        hs_error_set(e, HS_ERR_INVALID,
                     a->module >= 0 ? "--module picks a module of a split HLO "
                                      "file; a model description is one program"
                                    : "--args gives an HLO module's arguments; "
                                      "a model draws its weights and input");
        return NULL;
    }
    hs_program_options o;
    hs_program_options_init(&o);
    o.model.loop = a->loop;
    o.model.residuals = a->residuals;
    o.model.batch = a->batch;
    o.device = a->device;
    o.pipeline = a->pipeline;
    o.module = module;
    o.check_memory = true; /* as the server does: HBM is the device's */
    o.oom_report = whole;
    o.max_run_bytes = a->max_run_bytes;
    o.max_run_bytes_name = "--max-run-bytes";
    o.args_dir = a->args_dir;
    hs_program *p = trace_only ? hs_program_trace(&src, &o, e)
                               : hs_program_build(&src, &o, e);
    free(text);
    return p;
}

hs_program *cli_program_trace(const cli_args *a, hs_error *e)
{
    return load(a, a->module, true, e, NULL);
}

hs_program *cli_program_load(const cli_args *a, int module, bool for_run,
                             hs_error *e, char **whole)
{
    hs_program *p = load(a, module, false, e, whole);
    if (p && for_run && hs_program_materialize(p, e) != HS_OK) {
        if (whole) {
            *whole = p->refusal;
            p->refusal = NULL;
        }
        hs_program_free(p);
        return NULL;
    }
    return p;
}
