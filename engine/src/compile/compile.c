/* compile.c - hs_compile: fingerprint, cache lookup, and on a miss the
 * pass pipeline on a copy of the module. */
#include <stdio.h>
#include <string.h>
#include <xxhash.h>

#include "compile/compile_internal.h"
#include "hloscope/hs_compile.h"

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
    if (st != HS_OK) {
        hs_module_free(copy);
        return st;
    }
    *out = hs__executable_new(copy, fingerprint, &report);
    if (!*out) {
        hs_module_free(copy);
        return hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
    }
    return HS_OK;
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
            return HS_OK;
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
    return HS_OK;
}
