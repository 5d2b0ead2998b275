/* cli_args.c - option parsing shared by `compile` and `run`, and the
 * usage each command prints for --help. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "hloscope/hs_device.h"
#include "http.h"

void cli_usage(const char *command, FILE *f)
{
    if (strcmp(command, "compile") == 0)
        fputs("usage: hloscope compile FILE [options]\n"
              "\n"
              "Traces a model description (.json) or parses HLO text (.hlo, .txt),\n"
              "compiles it through the pass pipeline for a device, checks the\n"
              "device's HBM (an executable that does not fit fails with XLA's\n"
              "out-of-memory report) and prints the module. The memory the\n"
              "executable needs (arguments, outputs, temporaries, peak per memory\n"
              "space) goes to stderr, or into the JSON summary with --emit json.\n"
              "A file of several modules separated by '// -----' compiles each,\n"
              "printed in order with the separator between (--emit json: an array).\n"
              "\n"
              "options:\n"
              "  --emit hlo|json         the module's HLO text (default) or a JSON summary\n"
              "  --stage traced|optimized  the module before or after the passes (default optimized)\n"
              "  --module N              of a split file, compile only module N (from 0)\n"
              "  --device NAME           device preset (`hloscope devices`)\n"
              "  --pipeline SPEC         pass pipeline (docs/PASSES.md)\n"
              "  --loop scan|unrolled    a model's layer loop\n"
              "  --residuals POLICY      a model's saved activations\n"
              "  --batch B               a model's batch size\n"
              "  --report                print the compilation report (passes)\n"
              "  --metrics               print the metrics report\n"
              "  --help                  this text\n",
              f);
    else if (strcmp(command, "run") == 0)
        fprintf(f,
                "usage: hloscope run FILE [options]\n"
                "\n"
                "Compiles FILE as `compile` does and runs it on the emulated device.\n"
                "Before anything is drawn the run is checked on shapes alone: every\n"
                "instruction and element type must be executable and the arguments\n"
                "plus the assigned peak must fit --max-run-bytes; otherwise it is\n"
                "refused at once naming every blocker. An HLO module's arguments are\n"
                "drawn for every leaf of its parameters (tuple parameters included):\n"
                "f32 ~ U(-1, 1) from seed 0, other types zeros; or given with --args.\n"
                "\n"
                "options:\n"
                "  --module N              of a split file, run module N (from 0); required\n"
                "                          when the file holds several\n"
                "  --max-run-bytes B       host bytes a run may take (default %.0e; suffixes\n"
                "                          k, M, G, T are powers of 1000; 0: no limit)\n"
                "  --device NAME           device preset (`hloscope devices`)\n"
                "  --pipeline SPEC         pass pipeline (docs/PASSES.md)\n"
                "  --dump DIR              write arguments (DIR/params) and outputs as .npy files\n"
                "  --args DIR              an HLO module's arguments from DIR/<leaf>.npy instead\n"
                "                          of drawn (leaf: the parameter's name, then .i per\n"
                "                          tuple index, as --dump names them)\n"
                "  --memory OUT.json       write the memory timeline (docs/MEMORY_TIMELINE.md)\n"
                "  --loop scan|unrolled    a model's layer loop\n"
                "  --residuals POLICY      save|remat|offload|remat_offload|auto\n"
                "  --batch B               a model's batch size\n"
                "  --train [--steps N]     also run the model's training steps\n"
                "  --steps N [--frontend NAME | --op-overhead-us X] [--queue D]\n"
                "          [--steps-json OUT.json] [--steps-svg OUT.svg]\n"
                "                          re-traced steps, goodput, MFU (docs/STEPS.md)\n"
                "  --report, --metrics     print the compilation or metrics report\n"
                "  --help                  this text\n",
                SRV_DEFAULT_MAX_RUN_BYTES);
    else if (strcmp(command, "devices") == 0)
        fputs("usage: hloscope devices\n"
              "\n"
              "Lists the emulated device presets: HBM, peak FLOP/s, bandwidths.\n",
              f);
}

/* Bytes with an optional SI suffix: "4e9", "4G", "4GB", "512M". */
static bool parse_bytes(const char *v, double *out)
{
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || !(x >= 0) || !isfinite(x))
        return false;
    static const char units[] = "kMGT";
    const char *u = *end ? strchr(units, *end) : NULL;
    if (u) {
        x *= pow(1000.0, (double)(u - units + 1));
        end++;
    }
    if (*end == 'B')
        end++;
    *out = x;
    return *end == '\0';
}

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
    a->module = -1;
    a->max_run_bytes = SRV_DEFAULT_MAX_RUN_BYTES;
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        const char **slot = NULL;
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            cli_usage(is_run ? "run" : "compile", stdout);
            a->help = true;
            return HS_EXIT_OK;
        } else if (strcmp(arg, "--module") == 0) {
            char *end = NULL;
            long v = i + 1 < argc ? strtol(argv[i + 1], &end, 10) : -1;
            if (i + 1 >= argc || end == argv[i + 1] || *end || v < 0 || v > 1 << 20) {
                fprintf(stderr, "hloscope: --module needs an index (0 is the "
                                "first module of a split file)\n");
                return HS_EXIT_USAGE;
            }
            a->module = (int)v;
            i++;
            continue;
        } else if (strcmp(arg, "--max-run-bytes") == 0 && is_run) {
            if (i + 1 >= argc || !parse_bytes(argv[i + 1], &a->max_run_bytes)) {
                fprintf(stderr, "hloscope: --max-run-bytes needs bytes, e.g. "
                                "4e9 or 4G (0: no limit)\n");
                return HS_EXIT_USAGE;
            }
            i++;
            continue;
        } else if (strcmp(arg, "--emit") == 0 && !is_run)
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
        else if (strcmp(arg, "--args") == 0 && is_run)
            slot = &a->args_dir;
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
