/* whatif.c - the what-if driver (hs_whatif.h): builds the group tree of
 * the entry and compiles the module once (hs__whatif_shared), calls each
 * section in turn (whatif_internal.h) and times the whole. A section that does not apply says so in its own
 * analysed/reason; only what stops every section (cancelled, out of host
 * memory, an unknown device) fails the analysis. */
#include <stdio.h>
#include <string.h>

#include "hloscope/hs_compile.h"
#include "hloscope/hs_device.h"
#include "whatif/whatif_internal.h"

void hs_whatif_options_init(hs_whatif_options *o)
{
    memset(o, 0, sizeof *o);
    o->run_equivalence = true;
}

hs_status hs__whatif_stopped(const hs_whatif_options *o, const char *what,
                             hs_error *err)
{
    if ((o->cancel && atomic_load(o->cancel)) ||
        (o->deadline_ns > 0 && hs_now_ns() > o->deadline_ns))
        return hs_error_set(err, HS_ERR_CANCELLED,
                            "whatif: %s stopped at its deadline", what);
    return HS_OK;
}

void hs__whatif_compile_options(const hs_whatif_options *o, const char *device,
                                const char *pipeline, hs_compile_options *co)
{
    hs_compile_options_init(co);
    co->device = device;
    co->pipeline = pipeline;
    co->cancel = o->cancel;
    if (o->deadline_ns > 0) {
        int64_t left = (o->deadline_ns - hs_now_ns()) / 1000000;
        co->timeout_ms = left > 0 ? left : 1;
    }
}

hs_status hs__whatif_shared_init(const hs_module *m, const hs_group_tree *t,
                                 const hs_whatif_options *o,
                                 hs__whatif_shared *sh, hs_error *err)
{
    memset(sh, 0, sizeof *sh);
    hs_error_clear(&sh->why);
    sh->tree = t;
    const char *device = o->device ? o->device : hs_device_default_name();
    if (!hs_device_find(device)) {
        hs_error_set(err, HS_ERR_INVALID, "unknown device '%s'", device);
        snprintf(err->path, sizeof err->path, "/device");
        return HS_ERR_INVALID;
    }
    hs_compile_options co;
    hs__whatif_compile_options(o, device, NULL, &co);
    int64_t t0 = hs_now_ns();
    hs_status s = hs_compile(m, &co, NULL, NULL, &sh->exe, &sh->why);
    sh->compile_seconds = (double)(hs_now_ns() - t0) / 1e9;
    if (s == HS_ERR_CANCELLED || s == HS_ERR_NOMEM) {
        if (err)
            *err = sh->why;
        return s;
    }
    return HS_OK;
}

void hs__whatif_shared_free(hs__whatif_shared *sh)
{
    hs_executable_release(sh->exe);
    sh->exe = NULL;
}

hs_status hs_whatif_analyse(const hs_module *m, const hs_whatif_options *o,
                            hs_whatif *out, hs_error *err)
{
    int64_t t0 = hs_now_ns();
    memset(out, 0, sizeof *out);
    hs_whatif_options defaults;
    if (!o) {
        hs_whatif_options_init(&defaults);
        o = &defaults;
    }
    const char *device = o->device ? o->device : hs_device_default_name();
    if (!m || !m->entry)
        return hs_error_set(err, HS_ERR_INVALID, "whatif: no entry computation");
    out->module = m;
    out->arena = hs_arena_new(0);
    if (!out->arena)
        return hs_error_set(err, HS_ERR_NOMEM, "whatif: out of host memory");
    out->device = hs_arena_strdup(out->arena, device);
    hs_group_tree *t = NULL;
    hs__whatif_shared sh = {0};
    hs_status s = hs_groups_build(m, NULL, &t, err);
    if (s == HS_OK)
        s = hs__whatif_stopped(o, "the analysis", err);
    if (s == HS_OK)
        s = hs__whatif_shared_init(m, t, o, &sh, err);
    if (s == HS_OK)
        s = hs__whatif_reroll(m, &sh, o, out, err);
    if (s == HS_OK)
        s = hs__whatif_stopped(o, "the analysis", err);
    if (s == HS_OK)
        s = hs__whatif_offload(m, &sh, o, out, err);
    if (s == HS_OK)
        s = hs__whatif_stopped(o, "the analysis", err);
    if (s == HS_OK)
        s = hs__whatif_sharding(m, &sh, o, out, err);
    hs__whatif_shared_free(&sh);
    hs_groups_free(t);
    out->analysis_seconds = (double)(hs_now_ns() - t0) / 1e9;
    if (s != HS_OK)
        hs_whatif_free(out);
    return s;
}

void hs_whatif_free(hs_whatif *w)
{
    if (!w)
        return;
    hs_module_free(w->scan.rerolled);
    hs_module_free(w->offload.offloaded);
    hs_arena_free(w->arena);
    memset(w, 0, sizeof *w);
}
