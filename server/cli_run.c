/* cli_run.c - `hloscope run FILE`: compile, execute on the emulated device,
 * print a summary and optionally dump .npy files. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "hloscope/hs_device.h"
#include "hloscope/hs_npy.h"

/* Parameter names become file names: no path separators, no dot-dirs. */
static const char *safe_name(const char *name, char *buf, size_t size)
{
    snprintf(buf, size, "%s", name);
    for (char *c = buf; *c; c++)
        if (*c == '/' || *c == '\\')
            *c = '_';
    if (strcmp(buf, ".") == 0 || strcmp(buf, "..") == 0)
        snprintf(buf, size, "_");
    return buf;
}

static hs_status dump_npy(const char *dir, const char *sub, const char *name,
                          const hs_tensor *t, hs_error *e)
{
    char path[4096], clean[512];
    if (sub) {
        snprintf(path, sizeof path, "%s/%s", dir, sub);
        if (hs_mkdirs(path, e) != HS_OK)
            return e->status;
        snprintf(path, sizeof path, "%s/%s/%s.npy", dir, sub,
                 safe_name(name, clean, sizeof clean));
    } else {
        snprintf(path, sizeof path, "%s/%s.npy", dir, name);
    }
    return hs_npy_write(path, t, e);
}

static hs_status dump_all(const char *dir, const hs_program *p,
                          hs_tensor **outputs, int n_outputs, hs_error *e)
{
    if (hs_mkdirs(dir, e) != HS_OK)
        return e->status;
    if (p->model) {
        if (dump_npy(dir, NULL, "input", p->model->input, e) != HS_OK)
            return e->status;
        for (int k = 0; k < p->model->n_params; k++)
            if (dump_npy(dir, "params", p->model->params[k].name,
                         p->model->params[k].value, e) != HS_OK)
                return e->status;
    } else {
        for (int k = 0; k < p->n_args; k++) {
            char name[512];
            if (!hs_model_hlo_arg_name(p->hlo, k, name, sizeof name))
                snprintf(name, sizeof name, "arg.%d", k);
            if (dump_npy(dir, "params", name, p->args[k], e) != HS_OK)
                return e->status;
        }
    }
    for (int k = 0; k < n_outputs; k++) {
        char name[32];
        if (n_outputs == 1)
            snprintf(name, sizeof name, "output");
        else
            snprintf(name, sizeof name, "output.%d", k);
        if (dump_npy(dir, NULL, name, outputs[k], e) != HS_OK)
            return e->status;
    }
    return HS_OK;
}

static void print_output(int k, const hs_tensor *t)
{
    /* Whole, however long: hs_shape_print says how much it needs. */
    char *shape = hs_shape_string(&t->shape, false);
    printf("output %d:     %s", k, shape ? shape : "?");
    free(shape);
    hs_tensor_summary sm = hs_tensor_summarize(t);
    if (sm.ok) {
        printf("  sum=%.6g  first=[", sm.sum);
        for (int i = 0; i < sm.n_first && i < 4; i++)
            printf("%s%.6g", i ? ", " : "", sm.first[i]);
        printf("%s]", hs_tensor_elements(t) > 4 ? ", ..." : "");
    }
    printf("\n");
}

static void print_summary(const hs_program *p, hs_tensor **outputs, int n_outputs,
                          const hs_run_stats *st)
{
    const hs_module *traced = p->traced;
    const hs_module *opt = p->optimized;
    hs_timing trace = hs_metrics_timing(p->metrics, HS_METRIC_TRACE_TIME);
    printf("module:       %s (%lld instructions traced, %lld optimized)\n",
           traced->name, (long long)hs_module_instruction_count(traced),
           (long long)hs_module_instruction_count(opt));
    printf("device:       %s\n", p->device->name);
    for (int k = 0; k < n_outputs; k++)
        print_output(k, outputs[k]);
    printf("trace:        %.3f ms (host)\n", (double)trace.total_ns * 1e-6);
    printf("compile:      %.3f ms (host)\n",
           (double)hs_executable_report(p->exe)->total_ns * 1e-6);
    printf("execute:      %.3f ms simulated, %.3f ms host\n",
           st->sim_seconds * 1e3, st->wall_seconds * 1e3);
    printf("flops:        %.4g\n", st->flops);
    printf("peak memory:  device %lld bytes, host %lld bytes\n",
           (long long)st->peak_device_bytes, (long long)st->peak_host_bytes);
}

int cli_run(int argc, char **argv)
{
    cli_args a;
    int rc = cli_parse_args(argc, argv, &a, true);
    if (rc != HS_EXIT_OK || a.help)
        return rc;
    if (cli_steps_wanted(&a))
        return cli_steps(&a);
    hs_error e;
    hs_error_clear(&e);
    hs_tensor **outputs = NULL;
    int n_outputs = 0;
    char *oom = NULL;
    hs_program *p = cli_program_load(&a, a.module, true, &e, &oom);
    if (!p)
        return cli_report_failure(a.file, &e, oom);
    hs_run_stats st;
    memset(&st, 0, sizeof st);
    hs_memory_timeline tl = {0};
    hs_run_options ro = {.timeline = a.memory && !a.train ? &tl : NULL};
    hs_status s = hs_program_run(p, &ro, &outputs, &n_outputs, &st, &e);
    if (s == HS_OK && ro.timeline &&
        cli_write_timeline(a.memory, &tl, p->device, &st, &e) != 0)
        s = e.status;
    hs_memory_timeline_free(&tl);
    if (s != HS_OK) {
        rc = cli_report_error(a.file, &e);
        goto out;
    }
    print_summary(p, outputs, n_outputs, &st);
    if (a.dump) {
        if (dump_all(a.dump, p, outputs, n_outputs, &e) != HS_OK) {
            rc = cli_report_error(a.dump, &e);
            goto out;
        }
        printf("dumped:       %s\n", a.dump);
    }
    if (a.train && cli_train(&a, p, &e) != 0) {
        rc = cli_report_error(a.file, &e);
        goto out;
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
    rc = HS_EXIT_OK;
out:
    hs_tensors_free(outputs, n_outputs);
    hs_program_free(p);
    return rc;
}
