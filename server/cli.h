/* cli.h - the command-line interface of the hloscope binary. */
#ifndef HLOSCOPE_CLI_H
#define HLOSCOPE_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include "hloscope/hs_compile.h"
#include "hloscope/hs_device.h"
#include "hloscope/hs_model.h"
#include "hloscope/hs_program.h"

enum { HS_EXIT_OK = 0, HS_EXIT_RUNTIME = 1, HS_EXIT_USAGE = 2 };

int cli_compile(int argc, char **argv);
int cli_run(int argc, char **argv);
int cli_devices(int argc, char **argv);
int cli_whatif(int argc, char **argv);

/* ---- shared by the commands (cli_args.c, cli_program.c) ---- */

typedef struct cli_args {
    const char *file;
    const char *emit;     /* compile: "hlo" | "json" */
    const char *stage;    /* compile: "traced" | "optimized" */
    const char *loop;     /* NULL keeps the model's */
    const char *residuals; /* NULL keeps the model's */
    const char *device;   /* NULL keeps the model's */
    const char *pipeline; /* NULL: the default pipeline */
    const char *dump;     /* run: directory for .npy files */
    const char *args_dir; /* run: an HLO module's arguments as .npy files */
    const char *memory;   /* run: memory timeline JSON file */
    long long batch;
    bool metrics;         /* print the metrics report */
    bool report;          /* print the compilation report */
    bool train;           /* run: train with the model's "train" section */
    long long steps;      /* run: steps (--train: 0 keeps train.steps) */
    /* run: the step timeline (cli_steps.c) */
    const char *frontend;   /* overhead preset (hs_frontend_find) */
    double op_overhead_us;  /* < 0: unset */
    int queue;              /* < 0: unset */
    const char *steps_json; /* step timeline JSON file */
    const char *steps_svg;  /* step chart SVG file */
    int module;             /* --module N of a split HLO file; -1: unset */
    double max_run_bytes;   /* run: --max-run-bytes (default the server's) */
    bool help;              /* --help was printed: exit 0 */
} cli_args;

/* Parses options; returns HS_EXIT_OK or HS_EXIT_USAGE (after saying why).
 * --help prints the command's usage to stdout and sets a->help. */
int cli_parse_args(int argc, char **argv, cli_args *a, bool is_run);
/* The usage of one command ("compile", "run", "devices"). */
void cli_usage(const char *command, FILE *f);

/* Loads FILE (a model description, or HLO text for .hlo/.txt) and builds
 * its program (hs_program.h) for the options' device and pipeline, checked
 * against the device's HBM as the server checks it. module is the index of
 * the module of a split HLO file (-1: the file must hold one). for_run
 * also checks the run up front (hs_program_check_run: executable, within
 * --max-run-bytes) and draws weights and arguments. NULL with *e set;
 * *whole (when not NULL) then receives the error's whole text when
 * hs_error cannot hold it: XLA's out-of-memory report, or a refusal with
 * every blocker (the caller frees it; NULL otherwise). */
hs_program *cli_program_load(const cli_args *a, int module, bool for_run,
                             hs_error *e, char **whole);
/* FILE traced (a model with shapes only) or parsed, not compiled:
 * a->file, device and module are read. */
hs_program *cli_program_trace(const cli_args *a, hs_error *e);
/* Prints "hloscope: FILE: where: message" and returns the exit status for
 * the error's class. */
int cli_report_error(const char *file, const hs_error *e);
/* cli_report_error, with the whole text (when not NULL, from
 * cli_program_load) in place of the message; frees it. */
int cli_report_failure(const char *file, const hs_error *e, char *whole);
double cli_now_seconds(void);
/* Writes a run's memory timeline as JSON to path (cli_train.c); 0 or -1
 * with *e. */
int cli_write_timeline(const char *path, const hs_memory_timeline *t,
                       const hs_device_spec *spec, const hs_run_stats *st,
                       hs_error *e);
/* Trains the model after the forward run (cli_train.c); 0 or -1 with *e. */
int cli_train(const cli_args *a, hs_program *p, hs_error *e);
/* `run --steps N` without --train, or any step-timeline option: re-traced
 * steps, goodput and MFU (cli_steps.c). */
bool cli_steps_wanted(const cli_args *a);
int cli_steps(const cli_args *a);

#endif
