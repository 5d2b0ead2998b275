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



hs_program *cli_program_load(const cli_args *a, bool for_run, hs_error *e)
{
    size_t len;
    char *text = hs_read_file(a->file, &len, e);
    if (!text)
        return NULL;
    hs_program_source src = {.kind = is_hlo_file(a->file) ? HS_SOURCE_HLO
                                                          : HS_SOURCE_MODEL,
                             .text = text, .len = len};
    hs_program_options o;
    hs_program_options_init(&o);
    o.model.loop = a->loop;
    o.model.residuals = a->residuals;
    o.model.batch = a->batch;
    o.device = a->device;
    o.pipeline = a->pipeline;
    o.allow_many = !for_run; /* compile prints the others as parsed */
    hs_program *p = hs_program_build(&src, &o, e);
    free(text);
    if (p && for_run && hs_program_materialize(p, e) != HS_OK) {
        hs_program_free(p);
        return NULL;
    }
    return p;
}
