/* cli_steps.c - `hloscope run FILE --steps N [--frontend PRESET |
 * --op-overhead-us X] [--queue D] [--steps-json OUT.json] [--steps-svg
 * OUT.svg]`: re-traces the model every step, looks it up in the compile
 * cache, schedules host and device on two lanes (hs_steps.h) and prints a
 * per-step table with goodput, MFU and a host-bound/device-bound verdict. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "hloscope/hs_file.h"
#include "hloscope/hs_steps.h"

bool cli_steps_wanted(const cli_args *a)
{
    return a->frontend || a->op_overhead_us >= 0 || a->queue >= 0 ||
           a->steps_json || a->steps_svg || (a->steps > 0 && !a->train);
}


static int write_text(const char *path, const char *text, const char *what,
                      hs_error *e)
{
    FILE *f = text ? fopen(path, "w") : NULL;
    bool ok = f && fputs(text, f) >= 0;
    if (f && fclose(f) != 0)
        ok = false;
    if (!ok) {
        hs_error_set(e, HS_ERR_IO, "cannot write the %s to %s", what, path);
        return -1;
    }
    return 0;
}

static void print_table(const hs_steps_result *r)
{
    const hs_steps_summary *s = &r->summary;
    printf("steps:        %lld %s steps of %s (%s) on %s\n", (long long)r->n,
           r->train ? "training" : "forward", r->model,
           r->loop ? "scan" : "unrolled", r->device);
    printf("frontend:     %s, %.3g us per traced op (overhead model), queue "
           "depth %d\n",
           r->frontend, r->op_overhead_us, r->queue_depth);
    printf("%5s %7s %9s %9s %9s %10s %5s %10s %8s %8s %9s %8s %7s\n", "step",
           "ops", "trace_ms", "ovhd_ms", "lookup_ms", "compile_ms", "cache",
           "device_ms", "wait_ms", "idle_ms", "wall_ms", "goodput", "mfu");
    for (int64_t k = 0; k < r->n; k++) {
        const hs_step_record *p = &r->steps[k];
        if (k == 20 && r->n > 24) {
            printf("  ... %lld more steps ...\n", (long long)(r->n - 23));
            k = r->n - 4;
            continue;
        }
        printf("%5lld %7lld %9.3f %9.3f %9.3f %10.3f %5s %9.3f%s %8.3f %8.3f "
               "%9.3f %7.1f%% %6.2f%%\n",
               (long long)p->step, (long long)p->traced_ops,
               p->trace_seconds * 1e3, p->overhead_seconds * 1e3,
               p->lookup_seconds * 1e3, p->compile_seconds * 1e3,
               p->cache_hit ? "hit" : "miss", p->device_seconds * 1e3,
               p->device_measured ? " " : "*", p->slot.host_wait * 1e3,
               p->slot.device_idle * 1e3, p->slot.wall_seconds * 1e3,
               p->goodput * 100, p->mfu * 100);
    }
    printf("device_ms: simulated (roofline clock)%s; host times measured here "
           "plus the overhead model\n",
           r->n > 1 && !r->steps[1].device_measured
               ? "; * = step 1's simulated duration reused"
               : "");
    printf("compile cache: %lld uncached, %lld cached\n",
           (long long)r->uncached_compiles, (long long)r->cached_compiles);
    printf("goodput:      %.1f%% (device busy / wall over steps %s)\n",
           s->goodput * 100, r->n > 1 ? "2..N" : "1");
    printf("MFU:          %.3f%% (%.4g FLOP per step, peak %.4g FLOP/s)\n",
           s->mfu * 100, r->n ? r->steps[r->n - 1].flops : 0.0, r->peak_flops);
    printf("step time:    %.3f ms steady (host %.3f ms, device %.3f ms per "
           "step)\n",
           s->step_seconds * 1e3,
           s->steady_host_seconds / (double)(s->steady_steps ? s->steady_steps : 1) * 1e3,
           s->steady_device_seconds / (double)(s->steady_steps ? s->steady_steps : 1) * 1e3);
    printf("device idle:  %.3f ms over the steady steps\n",
           s->steady_idle_seconds * 1e3);
    printf("verdict:      %s\n",
           s->host_bound ? "host-bound (tracing-bound: the device waits for the host)"
                         : "device-bound (the host keeps ahead of the device)");
}

int cli_steps(const cli_args *a)
{
    hs_error e;
    hs_error_clear(&e);
    hs_steps_options o;
    hs_steps_options_init(&o);
    if (a->steps > 0)
        o.steps = a->steps;
    if (a->queue >= 0)
        o.queue_depth = a->queue;
    if (a->frontend) {
        const hs_frontend_preset *f = hs_frontend_find(a->frontend);
        if (!f) {
            int n;
            const hs_frontend_preset *all = hs_frontend_presets(&n);
            fprintf(stderr, "hloscope: unknown frontend '%s' (known:", a->frontend);
            for (int k = 0; k < n; k++)
                fprintf(stderr, " %s", all[k].name);
            fprintf(stderr, ")\n");
            return HS_EXIT_USAGE;
        }
        o.frontend = f->name;
        o.op_overhead_us = f->op_overhead_us;
    }
    if (a->op_overhead_us >= 0)
        o.op_overhead_us = a->op_overhead_us;
    o.train = a->train;
    o.loop = a->loop;
    o.residuals = a->residuals;
    o.device = a->device;
    o.batch = a->batch;
    o.pipeline = a->pipeline;
    size_t n = strlen(a->file);
    if ((n >= 4 && strcmp(a->file + n - 4, ".hlo") == 0) ||
        (n >= 4 && strcmp(a->file + n - 4, ".txt") == 0)) {
        hs_error_set(&e, HS_ERR_INVALID,
                     "the step timeline re-traces a model description (.json) "
                     "every step; an HLO module has nothing to trace");
        return cli_report_error(a->file, &e);
    }
    size_t len;
    char *json = hs_read_file(a->file, &len, &e);
    if (!json)
        return cli_report_error(a->file, &e);
    hs_steps_result r;
    int rc = HS_EXIT_OK;
    if (hs_steps_run(json, len, &o, &r, &e) != HS_OK) {
        free(json);
        return cli_report_error(a->file, &e);
    }
    free(json);
    print_table(&r);
    if (a->steps_json) {
        char *text = hs_steps_json(&r);
        if (write_text(a->steps_json, text, "step timeline", &e) != 0)
            rc = cli_report_error(a->steps_json, &e);
        else
            printf("steps json:   %s\n", a->steps_json);
        free(text);
    }
    if (rc == HS_EXIT_OK && a->steps_svg) {
        char *svg = NULL;
        if (hs_steps_svg(&r, 0, &svg, NULL, &e) != HS_OK ||
            write_text(a->steps_svg, svg, "step chart", &e) != 0)
            rc = cli_report_error(a->steps_svg, &e);
        else
            printf("steps svg:    %s\n", a->steps_svg);
        free(svg);
    }
    hs_steps_result_free(&r);
    return rc;
}
