/* cli_args.c - option parsing shared by `compile` and `run`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "hloscope/hs_device.h"

static bool one_of(const char *v, const char *a, const char *b)
{
    return strcmp(v, a) == 0 || strcmp(v, b) == 0;
}

int cli_parse_args(int argc, char **argv, cli_args *a, bool is_run)
{
    memset(a, 0, sizeof *a);
    a->emit = "hlo";
    a->stage = "optimized";
    a->op_overhead_us = -1;
    a->queue = -1;
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        const char **slot = NULL;
        if (strcmp(arg, "--emit") == 0 && !is_run)
            slot = &a->emit;
        else if (strcmp(arg, "--stage") == 0 && !is_run)
            slot = &a->stage;
        else if (strcmp(arg, "--loop") == 0)
            slot = &a->loop;
        else if (strcmp(arg, "--residuals") == 0)
            slot = &a->residuals;
        else if (strcmp(arg, "--device") == 0)
            slot = &a->device;
        else if (strcmp(arg, "--pipeline") == 0)
            slot = &a->pipeline;
        else if (strcmp(arg, "--dump") == 0 && is_run)
            slot = &a->dump;
        else if (strcmp(arg, "--memory") == 0 && is_run)
            slot = &a->memory;
        else if (strcmp(arg, "--frontend") == 0 && is_run)
            slot = &a->frontend;
        else if (strcmp(arg, "--steps-json") == 0 && is_run)
            slot = &a->steps_json;
        else if (strcmp(arg, "--steps-svg") == 0 && is_run)
            slot = &a->steps_svg;
        else if (strcmp(arg, "--op-overhead-us") == 0 && is_run) {
            char *end = NULL;
            if (i + 1 < argc)
                a->op_overhead_us = strtod(argv[i + 1], &end);
            if (i + 1 >= argc || end == argv[i + 1] || *end ||
                !(a->op_overhead_us >= 0 && a->op_overhead_us <= 1e6)) {
                fprintf(stderr, "hloscope: --op-overhead-us needs microseconds "
                                "in [0, 1e6]\n");
                return HS_EXIT_USAGE;
            }
            i++;
            continue;
        } else if (strcmp(arg, "--queue") == 0 && is_run) {
            char *end = NULL;
            long v = i + 1 < argc ? strtol(argv[i + 1], &end, 10) : -1;
            if (i + 1 >= argc || end == argv[i + 1] || *end || v < 0 || v > 1024) {
                fprintf(stderr, "hloscope: --queue needs a depth in [0, 1024]\n");
                return HS_EXIT_USAGE;
            }
            a->queue = (int)v;
            i++;
            continue;
        }
        else if (strcmp(arg, "--metrics") == 0) {
            a->metrics = true;
            continue;
        } else if (strcmp(arg, "--report") == 0) {
            a->report = true;
            continue;
        } else if (strcmp(arg, "--train") == 0 && is_run) {
            a->train = true;
            continue;
        } else if (strcmp(arg, "--steps") == 0 && is_run) {
            if (i + 1 >= argc || (a->steps = atoll(argv[i + 1])) <= 0) {
                fprintf(stderr, "hloscope: --steps needs a positive integer\n");
                return HS_EXIT_USAGE;
            }
            i++;
            continue;
        } else if (strcmp(arg, "--batch") == 0) {
            if (i + 1 >= argc || (a->batch = atoll(argv[i + 1])) <= 0) {
                fprintf(stderr, "hloscope: --batch needs a positive integer\n");
                return HS_EXIT_USAGE;
            }
            i++;
            continue;
        } else if (arg[0] == '-' && arg[1] != '\0') {
            fprintf(stderr, "hloscope: unknown option '%s'\n", arg);
            return HS_EXIT_USAGE;
        } else if (!a->file) {
            a->file = arg;
            continue;
        } else {
            fprintf(stderr, "hloscope: unexpected argument '%s'\n", arg);
            return HS_EXIT_USAGE;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "hloscope: %s needs a value\n", arg);
            return HS_EXIT_USAGE;
        }
        *slot = argv[++i];
    }
    if (!a->file) {
        fprintf(stderr, "hloscope: missing FILE (a model .json or an .hlo module)\n");
        return HS_EXIT_USAGE;
    }
    if (!one_of(a->emit, "hlo", "json")) {
        fprintf(stderr, "hloscope: --emit takes hlo or json, not '%s'\n", a->emit);
        return HS_EXIT_USAGE;
    }
    if (!one_of(a->stage, "traced", "optimized")) {
        fprintf(stderr, "hloscope: --stage takes traced or optimized, not '%s'\n",
                a->stage);
        return HS_EXIT_USAGE;
    }
    if (a->loop && !one_of(a->loop, "scan", "unrolled")) {
        fprintf(stderr, "hloscope: --loop takes scan or unrolled, not '%s'\n", a->loop);
        return HS_EXIT_USAGE;
    }
    if (a->device && !hs_device_find(a->device)) {
        fprintf(stderr, "hloscope: unknown device '%s' (see `hloscope devices`)\n",
                a->device);
        return HS_EXIT_USAGE;
    }
    return HS_EXIT_OK;
}
