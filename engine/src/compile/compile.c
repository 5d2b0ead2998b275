/* compile.c - hs_compile: fingerprint, cache lookup, and on a miss the
 * pass pipeline on a copy of the module. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "compile/compile_internal.h"
#include "hloscope/hs_buffers.h"
#include "hloscope/hs_compile.h"
#include "hloscope/hs_device.h"

void hs_compile_options_init(hs_compile_options *o)
{
    memset(o, 0, sizeof *o);
}

hs_pipeline *hs_compile_default_pipeline(const hs_compile_options *opts,
                                         hs_error *err)
{
    const char *spec =
        opts && opts->pipeline ? opts->pipeline : HS_DEFAULT_PIPELINE;
    return hs_pipeline_parse(spec, err);
}

static void make_key(hs__cache_key *k, uint64_t fingerprint,
                     const hs_compile_options *o, const hs_pipeline *p)
{
    memset(k, 0, sizeof *k);
    k->fingerprint = fingerprint;
    snprintf(k->device, sizeof k->device, "%s", o->device ? o->device : "");
    /* The parsed pipeline's own text is canonical: spacing in the request
     * does not split the cache. */
    const char *spec = hs_pipeline_spec(p);
    snprintf(k->pipeline, sizeof k->pipeline, "%s", spec);
    k->fold_max_elements =
        o->fold_max_elements > 0 ? o->fold_max_elements : HS_FOLD_MAX_ELEMENTS;
    XXH3_state_t *st = XXH3_createState();
    if (!st)
        return;
    XXH3_64bits_reset(st);
    const char *dev = o->device ? o->device : "";
    XXH3_64bits_update(st, dev, strlen(dev) + 1);
    XXH3_64bits_update(st, spec, strlen(spec) + 1);
    XXH3_64bits_update(st, &k->fold_max_elements, sizeof k->fold_max_elements);
    k->options_hash = XXH3_64bits_digest(st);
    XXH3_freeState(st);
}

/* Buffer assignment runs after the pipeline, as XLA's backend assigns
 * buffers after the HLO passes; it gets a row in the report all the same. */
static void report_buffer_assignment(hs_compile_report *r, const hs_module *m,
                                     int64_t ns)
{
    r->total_ns += ns;
    if (r->n_passes >= HS_REPORT_MAX_PASSES)
        return;
    hs_pass_stats *row = &r->passes[r->n_passes++];
    memset(row, 0, sizeof *row);
    snprintf(row->name, sizeof row->name, "buffer-assignment");
    row->runs = 1;
    row->total_ns = ns;
    row->instructions_before = row->instructions_after =
        hs_module_instruction_count(m);
}

static hs_status compile_miss(const hs_module *m, const hs_compile_options *o,
                              const hs_pipeline *p, uint64_t fingerprint,
                              hs_executable **out, hs_error *err)
{
    hs_module *copy = hs_module_clone(m);
    if (!copy)
        return hs_error_set(err, HS_ERR_NOMEM,
                            "cannot copy module %s for compilation",
                            m->name ? m->name : "?");
    hs_pass_context ctx;
    hs_pass_context_init(&ctx);
    hs_pass_context_set_timeout(&ctx, o->timeout_ms);
    ctx.cancel = o->cancel;
    ctx.target = o->target;
    if (o->fold_max_elements > 0)
        ctx.fold_max_elements = o->fold_max_elements;
    hs_compile_report report;
    hs_status st = hs_pipeline_run(p, copy, &ctx, &report, err);
    hs_buffer_assignment *ba = NULL;
    if (st == HS_OK)
        st = hs_pass_context_check(&ctx, err);
    if (st == HS_OK) {
        int64_t t0 = hs_now_ns();
        ba = hs_assign_buffers(copy, err);
        if (!ba)
            st = err ? err->status : HS_ERR_INVALID;
        else
            report_buffer_assignment(&report, copy, hs_now_ns() - t0);
    }
    if (st != HS_OK) {
        hs_module_free(copy);
        return st;
    }
    *out = hs__executable_new(copy, fingerprint, &report);
    if (!*out) {
        hs_buffers_free(ba);
        hs_module_free(copy);
        return hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
    }
    hs__executable_set_buffers(*out, ba);
    return HS_OK;
}

/* The device capacity opts ask to check against, or 0 for none. */
static int64_t hbm_capacity(const hs_compile_options *o, const char **platform)
{
    *platform = "TPU";
    const hs_device_spec *spec = o->device ? hs_device_find(o->device) : NULL;
    if (spec && spec->kind && strcmp(spec->kind, "gpu") == 0)
        *platform = "GPU";
    if (o->hbm_bytes == HS_HBM_FROM_DEVICE)
        return spec ? (int64_t)spec->hbm_bytes : 0;
    return o->hbm_bytes > 0 ? o->hbm_bytes : 0;
}

/* Fails like XLA when the executable's device peak exceeds the capacity:
 * err->message is the report's first line followed by as many of the
 * largest buffers as fit; opts->oom_report receives the whole report. */
static hs_status check_memory(const hs_executable *exe,
                              const hs_compile_options *o, hs_error *err)
{
    const char *platform;
    int64_t capacity = hbm_capacity(o, &platform);
    const hs_buffer_assignment *ba = hs_executable_buffers(exe);
    if (capacity <= 0 || !ba ||
        hs_buffers_peak(ba, HS_MEMSPACE_DEVICE).bytes <= capacity)
        return HS_OK;
    char *report = hs_buffers_oom_report(ba, capacity, platform, 10);
    if (!report)
        return hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
    size_t first = strcspn(report, "\n");
    hs_error_set(err, HS_ERR_OOM, "%.*s", (int)first, report);
    if (err) {
        int n;
        const hs_logical_buffer *const *live =
            hs_buffers_live_at_peak(ba, HS_MEMSPACE_DEVICE, &n);
        size_t len = strlen(err->message);
        for (int k = 0; k < n && k < 10; k++) {
            char size[32], shape[96], item[256];
            hs_format_bytes(live[k]->bytes, size, sizeof size);
            hs_shape_print(live[k]->shape, true, shape, sizeof shape);
            int w = snprintf(item, sizeof item, "%s %s %s %s%s%s",
                             k ? ";" : " Largest buffers at the peak:",
                             size, live[k]->name, shape,
                             live[k]->op_name ? " " : "",
                             live[k]->op_name ? live[k]->op_name : "");
            /* An item cut short (a long name) would not be whole, nor
             * perhaps UTF-8: the list stops before it, as when full. */
            if (w < 0 || (size_t)w >= sizeof item ||
                len + (size_t)w + 1 > sizeof err->message)
                break;
            memcpy(err->message + len, item, (size_t)w + 1);
            len += (size_t)w;
        }
    }
    if (o->oom_report)
        *o->oom_report = report;
    else
        free(report);
    return HS_ERR_OOM;
}

/* The memory check runs on cache hits too: an executable cached for a
 * larger device, or without a check, must still fail here. */
static hs_status finish(hs_executable **out, const hs_compile_options *o,
                        hs_error *err)
{
    hs_status st = check_memory(*out, o, err);
    if (st != HS_OK) {
        hs_executable_release(*out);
        *out = NULL;
    }
    return st;
}

hs_status hs_compile(const hs_module *m, const hs_compile_options *opts,
                     hs_compile_cache *cache, hs_metrics *metrics,
                     hs_executable **out, hs_error *err)
{
    *out = NULL;
    hs_compile_options defaults;
    if (!opts) {
        hs_compile_options_init(&defaults);
        opts = &defaults;
    }
    hs_pipeline *p = hs_compile_default_pipeline(opts, err);
    if (!p)
        return err ? err->status : HS_ERR_INVALID;
    int64_t t0 = hs_now_ns();
    uint64_t fingerprint = hs_module_fingerprint(m);
    hs__cache_key key;
    make_key(&key, fingerprint, opts, p);
    if (cache) {
        *out = hs__cache_lookup(cache, &key);
        if (*out) {
            hs_pipeline_free(p);
            hs_metrics_counter_add(metrics, HS_METRIC_CACHED_COMPILE, 1);
            return finish(out, opts, err);
        }
    }
    hs_executable *exe = NULL;
    hs_status st = compile_miss(m, opts, p, fingerprint, &exe, err);
    hs_pipeline_free(p);
    if (st != HS_OK)
        return st;
    hs_metrics_counter_add(metrics, HS_METRIC_UNCACHED_COMPILE, 1);
    hs_metrics_record_time(metrics, HS_METRIC_COMPILE_TIME, hs_now_ns() - t0);
    *out = cache ? hs__cache_insert(cache, &key, exe) : exe;
    return finish(out, opts, err);
}
