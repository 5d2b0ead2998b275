/* main.c - the hloscope binary: dispatches to the CLI commands. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "http.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: hloscope <command> [options]\n"
            "\n"
            "commands:\n"
            "  compile FILE [--emit hlo|json] [--stage traced|optimized] [--loop scan|unrolled]\n"
            "               [--device NAME] [--pipeline SPEC] [--report] [--metrics]\n"
            "               trace a model (.json) or parse an HLO module (.hlo) and print it\n"
            "  run FILE [--dump DIR] [--memory OUT.json] [--device NAME]\n"
            "           [--loop scan|unrolled]\n"
            "           [--train [--steps N]] [--residuals save|remat|offload|remat_offload|auto]\n"
            "               run on the emulated device; --dump writes .npy files;\n"
            "               --memory writes the memory timeline (docs/MEMORY_TIMELINE.md;\n"
            "               with --train: of the first training step);\n"
            "               --train also runs the model's training steps, keeping\n"
            "               what --residuals says of a scan's activations\n"
            "  run FILE.json --steps N [--frontend hloscope|lazy-tensor|eager-python |\n"
            "                --op-overhead-us X] [--queue D] [--steps-json OUT.json]\n"
            "                [--steps-svg OUT.svg] [--train] [--loop ...] [--batch B]\n"
            "               re-trace every step as a lazy-tensor frontend does, dispatch\n"
            "               asynchronously (queue depth D, default 2) and print per-step\n"
            "               trace/compile/device times, goodput, MFU (docs/STEPS.md)\n"
            "  whatif FILE [--device NAME] [--budget BYTES] [--module N] [--emit json|text]\n"
            "               what reroll-as-scan, offloading and sharding would do to\n"
            "               your own module (docs/WHATIF.md)\n"
            "  devices      list the emulated device presets\n"
            "  serve [--port 8080] [--bind 127.0.0.1] [--data DIR] [--examples DIR] ...\n"
            "               the REST API (docs/API.md); `serve --help` lists the limits\n"
            "\n"
            "`hloscope COMMAND --help` lists every option of a command\n"
            "(compile and run: --module N of split HLO files; run: --max-run-bytes)\n"
            "exit status: 0 ok, 1 runtime failure, 2 bad input\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return HS_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 ||
        strcmp(cmd, "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(cmd, "compile") == 0)
        return cli_compile(argc - 2, argv + 2);
    if (strcmp(cmd, "run") == 0)
        return cli_run(argc - 2, argv + 2);
    if (strcmp(cmd, "devices") == 0)
        return cli_devices(argc - 2, argv + 2);
    if (strcmp(cmd, "whatif") == 0)
        return cli_whatif(argc - 2, argv + 2);
    if (strcmp(cmd, "serve") == 0)
        return cli_serve(argc - 2, argv + 2);
    fprintf(stderr, "hloscope: unknown command '%s'\n", cmd);
    usage(stderr);
    return HS_EXIT_USAGE;
}
