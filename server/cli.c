/* cli.c - `hloscope compile`, `hloscope run` and `hloscope devices`.
 *
 * A FILE ending in .hlo (or .txt) is an HLO module; anything else is a model
 * description in JSON. Exit status: 0 ok, 1 runtime failure, 2 bad input. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "hloscope/hs_device.h"
#include "hloscope/hs_hlo_text.h"
#include "hloscope/hs_model.h"
#include "hloscope/hs_npy.h"

typedef struct cli_args {
    const char *file;
    const char *emit;   /* "hlo" | "json" */
    const char *loop;   /* NULL keeps the model's */
    const char *device; /* NULL keeps the model's */
    const char *dump;   /* run: directory for .npy files */
    long long batch;
} cli_args;

/* The program: a traced model or a parsed HLO module, with its arguments. */
typedef struct cli_program {
    hs_model *model;      /* JSON input */
    hs_module *hlo;       /* HLO input: the first (or only) module */
    hs_module **more;     /* HLO input split with '// -----': the rest */
    int n_more;
    hs_tensor **hlo_args; /* HLO input: generated arguments */
    int n_hlo_args;
    double trace_seconds;
} cli_program;

static double now_seconds(void)
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

static int report(const char *file, const hs_error *e)
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

static int parse_args(int argc, char **argv, cli_args *a, bool is_run)
{
    memset(a, 0, sizeof *a);
    a->emit = "hlo";
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        const char **slot = NULL;
        if (strcmp(arg, "--emit") == 0 && !is_run)
            slot = &a->emit;
        else if (strcmp(arg, "--loop") == 0)
            slot = &a->loop;
        else if (strcmp(arg, "--device") == 0)
            slot = &a->device;
        else if (strcmp(arg, "--dump") == 0 && is_run)
            slot = &a->dump;
        else if (strcmp(arg, "--batch") == 0) {
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
    if (strcmp(a->emit, "hlo") != 0 && strcmp(a->emit, "json") != 0) {
        fprintf(stderr, "hloscope: --emit takes hlo or json, not '%s'\n", a->emit);
        return HS_EXIT_USAGE;
    }
    if (a->loop && strcmp(a->loop, "scan") != 0 && strcmp(a->loop, "unrolled") != 0) {
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

static char *read_file(const char *path, size_t *len, hs_error *e)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        hs_error_set(e, HS_ERR_IO, "cannot open: %m");
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            char *p = realloc(buf, cap *= 2);
            if (!p) {
                free(buf);
                buf = NULL;
            }
            buf = p;
        }
    }
    fclose(f);
    if (!buf) {
        hs_error_set(e, HS_ERR_NOMEM, "out of host memory");
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

/* Arguments for an HLO module's entry parameters: U(-1, 1) from seed 0 for
 * f32, zeros for other types; named by the parameter instruction. */
static int make_hlo_args(cli_program *p, hs_error *e)
{
    hs_computation *entry = p->hlo->entry;
    p->n_hlo_args = entry->n_params;
    p->hlo_args = calloc((size_t)(entry->n_params ? entry->n_params : 1),
                         sizeof(hs_tensor *));
    for (int k = 0; k < entry->n_params; k++) {
        const hs_instruction *param = entry->params[k];
        if (hs_shape_is_tuple(&param->shape)) {
            hs_error_set(e, HS_ERR_UNSUPPORTED,
                         "parameter %s has a tuple shape; `run` needs array parameters",
                         param->name);
            return -1;
        }
        p->hlo_args[k] = hs_tensor_new(&param->shape);
        if (!p->hlo_args[k]) {
            hs_error_set(e, HS_ERR_NOMEM, "parameter %s: out of host memory",
                         param->name);
            return -1;
        }
        if (param->shape.dtype == HS_F32)
            hs_model_fill_uniform(0, param->name, -1.0f, 1.0f,
                                  hs_tensor_f32(p->hlo_args[k]),
                                  hs_tensor_elements(p->hlo_args[k]));
    }
    return 0;
}

static void program_free(cli_program *p)
{
    hs_model_free(p->model);
    hs_module_free(p->hlo);
    for (int k = 0; k < p->n_more; k++)
        hs_module_free(p->more[k]);
    free(p->more);
    if (p->hlo_args)
        for (int k = 0; k < p->n_hlo_args; k++)
            hs_tensor_free(p->hlo_args[k]);
    free(p->hlo_args);
}

static int load_program(const cli_args *a, bool shapes_only, cli_program *p,
                        hs_error *e)
{
    memset(p, 0, sizeof *p);
    double t0 = now_seconds();
    if (is_hlo_file(a->file)) {
        size_t len;
        char *text = read_file(a->file, &len, e);
        if (!text)
            return -1;
        hs_module **mods = NULL;
        int n = hs_hlo_parse_many(text, len, &mods, e);
        free(text);
        if (n <= 0) {
            if (n == 0)
                hs_error_set(e, HS_ERR_PARSE, "no HLO module in the file");
            free(mods);
            return -1;
        }
        p->hlo = mods[0];
        p->n_more = n - 1;
        p->more = p->n_more ? malloc(sizeof(hs_module *) * (size_t)p->n_more) : NULL;
        for (int k = 1; k < n; k++)
            p->more[k - 1] = mods[k];
        free(mods);
        if (hs_module_verify(p->hlo, e) != HS_OK)
            return -1;
        for (int k = 0; k < p->n_more; k++)
            if (hs_module_verify(p->more[k], e) != HS_OK)
                return -1;
        if (!shapes_only && p->n_more > 0) {
            hs_error_set(e, HS_ERR_INVALID,
                         "the file holds %d modules separated by '// -----'; "
                         "`run` takes one", n);
            return -1;
        }
        if (!shapes_only && make_hlo_args(p, e) != 0)
            return -1;
    } else {
        hs_model_options o = {.loop = a->loop, .device = a->device,
                              .batch = a->batch, .shapes_only = shapes_only};
        p->model = hs_model_load_file(a->file, &o, e);
        if (!p->model)
            return -1;
    }
    p->trace_seconds = now_seconds() - t0;
    return 0;
}

static const hs_module *program_module(const cli_program *p)
{
    return p->model ? p->model->module : p->hlo;
}

static void print_json_summary(const cli_args *a, const cli_program *p)
{
    const hs_module *m = program_module(p);
    char out[256] = "";
    hs_shape_print(&m->entry->root->shape, true, out, sizeof out);
    printf("{\n  \"file\": \"%s\",\n  \"module\": \"%s\",\n", a->file, m->name);
    printf("  \"computations\": %d,\n  \"instructions\": %lld,\n", m->n_comps,
           (long long)hs_module_instruction_count(m));
    printf("  \"entry_parameters\": %d,\n  \"output_shape\": \"%s\",\n",
           m->entry->n_params, out);
    if (p->model)
        printf("  \"parameters\": %d,\n  \"parameter_elements\": %lld,\n"
               "  \"layers\": %d,\n  \"loop\": \"%s\",\n  \"device\": \"%s\",\n",
               p->model->n_params, (long long)p->model->param_elements,
               p->model->n_layers,
               p->model->loop == HS_LOOP_SCAN ? "scan" : "unrolled",
               p->model->device);
    printf("  \"trace_seconds\": %.6f\n}\n", p->trace_seconds);
}

int hs_cli_compile(int argc, char **argv)
{
    cli_args a;
    int rc = parse_args(argc, argv, &a, false);
    if (rc != HS_EXIT_OK)
        return rc;
    hs_error e;
    hs_error_clear(&e);
    cli_program p;
    if (load_program(&a, true, &p, &e) != 0) {
        rc = report(a.file, &e);
        program_free(&p);
        return rc;
    }
    if (strcmp(a.emit, "json") == 0)
        print_json_summary(&a, &p);
    else {
        hs_hlo_fprint(program_module(&p), stdout);
        for (int k = 0; k < p.n_more; k++) {
            printf("\n// -----\n\n");
            hs_hlo_fprint(p.more[k], stdout);
        }
    }
    program_free(&p);
    return HS_EXIT_OK;
}

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

static void print_run_summary(const cli_program *p, const hs_device_spec *spec,
                              hs_tensor **outputs, int n_outputs,
                              const hs_run_stats *st)
{
    const hs_module *m = program_module(p);
    printf("module:       %s (%lld instructions)\n", m->name,
           (long long)hs_module_instruction_count(m));
    printf("device:       %s\n", spec->name);
    for (int k = 0; k < n_outputs; k++) {
        char shape[256];
        hs_shape_print(&outputs[k]->shape, false, shape, sizeof shape);
        printf("output %d:     %s", k, shape);
        if (outputs[k]->shape.dtype == HS_F32) {
            int64_t n = hs_tensor_elements(outputs[k]);
            double sum = 0;
            const float *v = hs_tensor_f32(outputs[k]);
            for (int64_t i = 0; i < n; i++)
                sum += v[i];
            printf("  sum=%.6g  first=[", sum);
            for (int64_t i = 0; i < n && i < 4; i++)
                printf("%s%.6g", i ? ", " : "", v[i]);
            printf("%s]", n > 4 ? ", ..." : "");
        }
        printf("\n");
    }
    printf("trace:        %.3f ms (host)\n", p->trace_seconds * 1e3);
    printf("execute:      %.3f ms simulated, %.3f ms host\n",
           st->sim_seconds * 1e3, st->wall_seconds * 1e3);
    printf("flops:        %.4g\n", st->flops);
    printf("peak memory:  device %lld bytes, host %lld bytes\n",
           (long long)st->peak_device_bytes, (long long)st->peak_host_bytes);
}

int hs_cli_run(int argc, char **argv)
{
    cli_args a;
    int rc = parse_args(argc, argv, &a, true);
    if (rc != HS_EXIT_OK)
        return rc;
    hs_error e;
    hs_error_clear(&e);
    cli_program p;
    hs_tensor **outputs = NULL;
    int n_outputs = 0;
    if (load_program(&a, false, &p, &e) != 0) {
        rc = report(a.file, &e);
        goto out;
    }
    const char *dev_name = a.device ? a.device
                           : p.model ? p.model->device
                                     : hs_device_default_name();
    const hs_device_spec *spec = hs_device_find(dev_name);
    if (!spec) {
        hs_error_set(&e, HS_ERR_INVALID, "unknown device '%s'", dev_name);
        rc = report(a.file, &e);
        goto out;
    }
    hs_tensor *margs[4096];
    hs_tensor **args = p.hlo_args;
    int n_args = p.n_hlo_args;
    if (p.model) {
        n_args = hs_model_args(p.model, margs, 4096);
        args = margs;
        if (n_args < 0) {
            hs_error_set(&e, HS_ERR_LIMIT, "model has more than 4095 parameters");
            rc = report(a.file, &e);
            goto out;
        }
    }
    hs_run_stats st;
    memset(&st, 0, sizeof st);
    if (hs_device_run(program_module(&p), spec, args, n_args, &outputs,
                      &n_outputs, &st, &e) != HS_OK) {
        rc = report(a.file, &e);
        goto out;
    }
    print_run_summary(&p, spec, outputs, n_outputs, &st);
    if (a.dump) {
        if (dump_all(a.dump, &p, outputs, n_outputs, &e) != HS_OK) {
            rc = report(a.dump, &e);
            goto out;
        }
        printf("dumped:       %s\n", a.dump);
    }
    rc = HS_EXIT_OK;
out:
    hs_tensors_free(outputs, n_outputs);
    program_free(&p);
    return rc;
}

int hs_cli_devices(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    int n;
    const hs_device_spec *d = hs_device_presets(&n);
    printf("%-16s %-9s %12s %14s %12s %12s\n", "name", "kind", "HBM GiB",
           "peak TFLOP/s", "HBM GB/s", "link GB/s");
    for (int k = 0; k < n; k++)
        printf("%-16s %-9s %12.3f %14.1f %12.1f %12.1f\n", d[k].name, d[k].kind,
               d[k].hbm_bytes / (1024.0 * 1024 * 1024), d[k].peak_flops / 1e12,
               d[k].hbm_bandwidth / 1e9, d[k].host_link_bandwidth / 1e9);
    return HS_EXIT_OK;
}
