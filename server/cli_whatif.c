/* cli_whatif.c - `hloscope whatif FILE`: what scan, host offloading and
 * sharding would do to the user's own module (hs_whatif.h), printed as the
 * JSON GET /v1/results/{id}/whatif.json answers, or as text. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"
#include "hloscope/hs_file.h"
#include "hloscope/hs_hlo_text.h"
#include "hloscope/hs_whatif.h"
#include "http.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: hloscope whatif FILE [options]\n"
            "\n"
            "What scan, host offloading and sharding would do to a module: FILE is\n"
            "HLO text (.hlo, .txt; e.g. a dump of your own model) or a model\n"
            "description (.json, traced as it is). Repeated layers are found from\n"
            "names or structure and the largest run is rewritten into one while\n"
            "over stacked per-layer parameters (reroll as scan); both modules are\n"
            "compiled, and run on the same drawn arguments when they can be.\n"
            "Sections that do not apply say why. docs/WHATIF.md explains each.\n"
            "\n"
            "options:\n"
            "  --emit json|text        the JSON answer (default) or a summary\n"
            "  --device NAME           device preset (`hloscope devices`)\n"
            "  --budget BYTES          offload: device memory to fit (default: the HBM)\n"
            "  --module N              of a split HLO file, module N (from 0)\n"
            "  --max-run-bytes B       host bytes the equivalence run may take\n"
            "                          (default %.0e; 0: no limit)\n"
            "  --no-run                compile only: no equivalence run\n"
            "  --rerolled OUT.hlo      write the rerolled module's HLO text\n"
            "  --help                  this text\n",
            SRV_DEFAULT_MAX_RUN_BYTES);
}

typedef struct whatif_args {
    const char *file, *device, *emit, *rerolled;
    double budget, max_run_bytes;
    int module;
    bool no_run;
} whatif_args;

static bool number(const char *v, double *out)
{
    char *end;
    errno = 0;
    *out = v ? strtod(v, &end) : 0;
    return v && !errno && end != v && *end == '\0' && *out >= 0;
}

/* HS_EXIT_OK, or HS_EXIT_USAGE after saying why; -1 after --help. */
static int parse(int argc, char **argv, whatif_args *a)
{
    *a = (whatif_args){.emit = "json", .module = -1,
                       .max_run_bytes = SRV_DEFAULT_MAX_RUN_BYTES};
    for (int i = 0; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        double x;
        if (strcmp(o, "--help") == 0 || strcmp(o, "-h") == 0) {
            usage(stdout);
            return -1;
        } else if (strcmp(o, "--no-run") == 0) {
            a->no_run = true;
            continue;
        } else if (o[0] != '-') {
            if (a->file) {
                fprintf(stderr, "hloscope whatif: one FILE, not '%s' too\n", o);
                return HS_EXIT_USAGE;
            }
            a->file = o;
            continue;
        } else if (!v) {
            fprintf(stderr, "hloscope whatif: %s needs a value\n", o);
            return HS_EXIT_USAGE;
        } else if (strcmp(o, "--emit") == 0 &&
                   (strcmp(v, "json") == 0 || strcmp(v, "text") == 0)) {
            a->emit = v;
        } else if (strcmp(o, "--device") == 0) {
            a->device = v;
        } else if (strcmp(o, "--rerolled") == 0) {
            a->rerolled = v;
        } else if (strcmp(o, "--budget") == 0 && number(v, &x)) {
            a->budget = x;
        } else if (strcmp(o, "--max-run-bytes") == 0 && number(v, &x)) {
            a->max_run_bytes = x;
        } else if (strcmp(o, "--module") == 0 && number(v, &x) &&
                   x == (int)x) {
            a->module = (int)x;
        } else {
            fprintf(stderr, "hloscope whatif: bad option %s %s (see --help)\n",
                    o, v);
            return HS_EXIT_USAGE;
        }
        i++;
    }
    if (!a->file) {
        usage(stderr);
        return HS_EXIT_USAGE;
    }
    return HS_EXIT_OK;
}

static void print_text(const hs_whatif *w)
{
    printf("module %s, device %s, analysed in %.3f s\n", w->module->name,
           w->device, w->analysis_seconds);
    printf("repeated layers: %d run%s\n", w->n_repeats,
           w->n_repeats == 1 ? "" : "s");
    for (int k = 0; k < w->n_repeats; k++)
        printf("  %-24s %4lld x %lld instructions (%s .. %s)\n",
               w->repeats[k].path, (long long)w->repeats[k].count,
               (long long)w->repeats[k].block_instructions,
               w->repeats[k].first, w->repeats[k].last);
    const hs_whatif_scan *s = &w->scan;
    if (!s->analysed) {
        printf("reroll as scan: not analysed: %s\n", s->reason);
    } else {
        printf("reroll as scan (%s):\n", s->path);
        printf("  instructions  %lld -> %lld\n", (long long)s->instructions_before,
               (long long)s->instructions_after);
        printf("  compile       %.4f s -> %.4f s (x%.1f)\n",
               s->compile_seconds_before, s->compile_seconds_after,
               s->compile_seconds_after > 0
                   ? s->compile_seconds_before / s->compile_seconds_after
                   : 0.0);
        if (s->equivalent == 0)
            printf("  equivalent    no: max |difference| %g (%s)\n",
                   s->max_abs_difference, s->note);
        else
            printf("  equivalent    %s (%s)\n",
                   s->equivalent == 1 ? "yes" : "not run", s->note);
    }
    if (!w->offload.analysed)
        printf("offload: not analysed: %s\n", w->offload.reason);
    else
        printf("offload: peak %.0f -> %.0f bytes, %.0f bytes moved, %.6f s "
               "exposed, %d value%s placed on the host, %s\n",
               w->offload.peak_before, w->offload.peak_after,
               w->offload.bytes_moved, w->offload.exposed_seconds,
               w->offload.n_chosen, w->offload.n_chosen == 1 ? "" : "s",
               w->offload.fits ? "fits" : "does not fit");
    if (!w->sharding.analysed)
        printf("sharding: not analysed: %s\n", w->sharding.reason);
    else
        printf("sharding: %d devices, peak %.0f bytes per device (%.0f "
               "global)%s%s\n",
               w->sharding.devices, w->sharding.per_device_peak,
               w->sharding.global_peak, w->sharding.note[0] ? "; " : "",
               w->sharding.note);
}

static int write_rerolled(const char *path, const hs_whatif *w)
{
    if (!w->scan.rerolled) {
        fprintf(stderr, "hloscope whatif: nothing rerolled, %s not written\n",
                path);
        return HS_EXIT_RUNTIME;
    }
    char *text = hs_hlo_print(w->scan.rerolled);
    FILE *f = text ? fopen(path, "w") : NULL;
    bool ok = f && fputs(text, f) >= 0;
    if (f && fclose(f) != 0)
        ok = false;
    free(text);
    if (!ok)
        fprintf(stderr, "hloscope whatif: cannot write %s: %s\n", path,
                strerror(errno));
    return ok ? HS_EXIT_OK : HS_EXIT_RUNTIME;
}

int cli_whatif(int argc, char **argv)
{
    whatif_args a;
    int rc = parse(argc, argv, &a);
    if (rc != HS_EXIT_OK)
        return rc < 0 ? HS_EXIT_OK : rc;
    hs_error e;
    hs_error_clear(&e);
    cli_args load = {.file = a.file, .device = a.device, .module = a.module};
    hs_program *p = cli_program_trace(&load, &e);
    if (!p)
        return cli_report_error(a.file, &e);
    hs_whatif_options o;
    hs_whatif_options_init(&o);
    o.device = p->device->name;
    o.budget = a.budget;
    o.run_equivalence = !a.no_run;
    o.max_run_bytes = a.max_run_bytes;
    hs_whatif w;
    if (hs_whatif_analyse(p->traced, &o, &w, &e) != HS_OK) {
        hs_program_free(p);
        return cli_report_error(a.file, &e);
    }
    if (strcmp(a.emit, "text") == 0) {
        print_text(&w);
    } else {
        json_t *j = hs_whatif_json(&w);
        char *text = j ? json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER)
                       : NULL;
        if (text)
            puts(text);
        free(text);
        json_decref(j);
    }
    rc = a.rerolled ? write_rerolled(a.rerolled, &w) : HS_EXIT_OK;
    hs_whatif_free(&w);
    hs_program_free(p);
    return rc;
}
