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

static hs_status dump_all(const char *dir, const cli_program *p,
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
        for (int k = 0; k < p->n_hlo_args; k++)
            if (dump_npy(dir, "params", p->hlo->entry->params[k]->name,
                         p->hlo_args[k], e) != HS_OK)
                return e->status;
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
    char shape[256];
    hs_shape_print(&t->shape, false, shape, sizeof shape);
    printf("output %d:     %s", k, shape);
    if (t->shape.dtype == HS_F32) {
        int64_t n = hs_tensor_elements(t);
        const float *v = hs_tensor_f32(t);
        double sum = 0;
        for (int64_t i = 0; i < n; i++)
            sum += v[i];
        printf("  sum=%.6g  first=[", sum);
        for (int64_t i = 0; i < n && i < 4; i++)
            printf("%s%.6g", i ? ", " : "", v[i]);
        printf("%s]", n > 4 ? ", ..." : "");
    }
    printf("\n");
}

static void print_summary(const cli_program *p, const hs_device_spec *spec,
                          hs_tensor **outputs, int n_outputs,
                          const hs_run_stats *st)
{
    const hs_module *traced = cli_program_traced(p);
    const hs_module *opt = hs_executable_module(p->exe);
    hs_timing trace = hs_metrics_timing(p->metrics, HS_METRIC_TRACE_TIME);
    printf("module:       %s (%lld instructions traced, %lld optimized)\n",
           traced->name, (long long)hs_module_instruction_count(traced),
           (long long)hs_module_instruction_count(opt));
    printf("device:       %s\n", spec->name);
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

static int gather_args(const cli_program *p, hs_tensor ***args, hs_error *e)
{
    if (!p->model) {
        *args = p->hlo_args;
        return p->n_hlo_args;
    }
    int cap = p->model->n_params + 1;
    *args = malloc(sizeof(hs_tensor *) * (size_t)cap);
    if (!*args) {
        hs_error_set(e, HS_ERR_NOMEM, "out of host memory");
        return -1;
    }
    int n = hs_model_args(p->model, *args, cap);
    if (n < 0)
        hs_error_set(e, HS_ERR_RUNTIME, "model arguments are not available");
    return n;
}

int hs_cli_run(int argc, char **argv)
{
    cli_args a;
    int rc = cli_parse_args(argc, argv, &a, true);
    if (rc != HS_EXIT_OK)
        return rc;
    if (cli_steps_wanted(&a))
        return cli_steps(&a);
    hs_error e;
    hs_error_clear(&e);
    cli_program p;
    hs_tensor **outputs = NULL, **args = NULL;
    int n_outputs = 0;
    if (cli_program_load(&a, false, &p, &e) != 0) {
        rc = cli_report_error(a.file, &e);
        goto out;
    }
    const char *dev_name = cli_program_device(&a, &p);
    const hs_device_spec *spec = hs_device_find(dev_name);
    if (!spec) {
        hs_error_set(&e, HS_ERR_INVALID, "unknown device '%s'", dev_name);
        rc = cli_report_error(a.file, &e);
        goto out;
    }
    int n_args = gather_args(&p, &args, &e);
    if (n_args < 0) {
        rc = cli_report_error(a.file, &e);
        goto out;
    }
    hs_run_stats st;
    memset(&st, 0, sizeof st);
    int64_t t0 = hs_now_ns();
    hs_memory_timeline tl = {0};
    hs_run_options ro = {.timeline = a.memory && !a.train ? &tl : NULL};
    hs_status s = hs_device_run_ex(hs_executable_module(p.exe), spec, args,
                                   n_args, &outputs, &n_outputs, &ro, &st, &e);
    if (s == HS_OK && ro.timeline &&
        cli_write_timeline(a.memory, &tl, spec, &st, &e) != 0)
        s = e.status;
    hs_memory_timeline_free(&tl);
    hs_metrics_record_time(p.metrics, HS_METRIC_EXECUTE_TIME, hs_now_ns() - t0);
    if (s != HS_OK) {
        rc = cli_report_error(a.file, &e);
        goto out;
    }
    print_summary(&p, spec, outputs, n_outputs, &st);
    if (a.dump) {
        if (dump_all(a.dump, &p, outputs, n_outputs, &e) != HS_OK) {
            rc = cli_report_error(a.dump, &e);
            goto out;
        }
        printf("dumped:       %s\n", a.dump);
    }
    if (a.train && cli_train(&a, &p, spec, &e) != 0) {
        rc = cli_report_error(a.file, &e);
        goto out;
    }
    if (a.report) {
        char *r = hs_compile_report_format(hs_executable_report(p.exe));
        fputs(r, stdout);
        free(r);
    }
    if (a.metrics) {
        char *m = hs_metrics_format(p.metrics);
        fputs(m, stdout);
        free(m);
    }
    rc = HS_EXIT_OK;
out:
    if (p.model)
        free(args);
    hs_tensors_free(outputs, n_outputs);
    cli_program_free(&p);
    return rc;
}
