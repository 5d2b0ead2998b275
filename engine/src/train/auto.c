/*
 * auto.c - "residuals": "auto": where each residual of a scanned model's
 * backward pass goes (saved on the device, moved to host memory, or
 * recomputed), planned at compile time for the model's device.
 *
 * Every candidate placement is built into a step module, compiled with
 * the default pipeline (host-offload, async copies, schedule) and judged
 * by its buffer assignment (device peak against the HBM) and by
 * hs_device_estimate (step time and exposed transfer time on the DMA
 * stream). No data is read and nothing runs.
 *
 *   1. save everything: if the peak fits, that is the choice.
 *   2. recompute cheap residuals - element-wise ops whose carry-dependent
 *      operands are saved (SiLU's product, softmax's exp, a norm's scale) -
 *      largest first, until the stacked bytes they free cover the excess,
 *      then all of them if that was not enough. They cost one element-wise
 *      op per layer in the backward step and no transfer.
 *   3. offload what remains, largest first, taking for the last gap the
 *      smallest residual that closes it (fewest bytes on the host link:
 *      each offloaded step's copy overlaps the next layer's compute, the
 *      less the better), recompiling until the peak fits.
 *   4. otherwise rematerialise the whole body (policy remat);
 *   5. if even that does not fit, also move the layer inputs remat keeps
 *      to host memory (policy remat_offload: one small copy per layer each
 *      way, overlapping the layer's compute); if nothing fits, keep the
 *      placement with the lowest peak and say so.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_buffers.h"
#include "hloscope/hs_compile.h"
#include "train/train_internal.h"

typedef struct cand {
    hs_module *module;
    int64_t peak, host_peak;
    hs_run_stats est;
    hs_scan_vjp_report report;
} cand;

static void cand_free(cand *c)
{
    hs_module_free(c->module);
    c->module = NULL;
}

/* Builds and compiles ts with its current scan options. */
static hs_status evaluate(hs_train_step *ts, const hs_device_spec *spec,
                          cand *c, hs_error *err)
{
    memset(c, 0, sizeof *c);
    c->module = hs__train_build_module(ts, true, err);
    if (!c->module)
        return err && err->status ? err->status : HS_ERR_INVALID;
    c->report = *ts->scan_report;
    hs_compile_options co;
    hs_compile_options_init(&co);
    co.device = spec->name;
    hs_executable *exe = NULL;
    hs_status st = hs_compile(c->module, &co, NULL, NULL, &exe, err);
    if (st == HS_OK) {
        const hs_buffer_assignment *ba = hs_executable_buffers(exe);
        c->peak = hs_buffers_peak(ba, HS_MEMSPACE_DEVICE).bytes;
        c->host_peak = hs_buffers_peak(ba, HS_MEMSPACE_HOST).bytes;
        st = hs_device_estimate(hs_executable_module(exe), spec, &c->est,
                                err);
    }
    hs_executable_release(exe);
    if (st != HS_OK)
        cand_free(c);
    return st;
}

static bool cheap_opcode(const char *name)
{
    hs_opcode op;
    if (!hs_opcode_parse(name, strlen(name), &op))
        return false;
    return hs_opcode_is_elementwise(op) && op != HS_OP_RNG;
}

static int64_t stacked(const hs_scan_residual_info *r)
{
    return r->bytes * r->steps;
}

/* Indexes of residuals with placement `want` (and cheap when asked),
 * largest first (ties: report order). */
static int sorted(const hs_scan_vjp_report *r, const hs_scan_policy *pl,
                  hs_scan_policy want, bool cheap_only, int *out)
{
    int n = 0;
    for (int k = 0; k < r->n_residuals; k++)
        if (pl[k] == want && (!cheap_only || cheap_opcode(r->residuals[k].opcode)))
            out[n++] = k;
    for (int a = 1; a < n; a++)
        for (int b = a; b > 0 && stacked(&r->residuals[out[b]]) >
                                     stacked(&r->residuals[out[b - 1]]);
             b--) {
            int t = out[b];
            out[b] = out[b - 1];
            out[b - 1] = t;
        }
    return n;
}

/* Names of the residuals with placement `which`, "a, b, ..." (duplicates
 * once). */
static void list_names(const hs_scan_vjp_report *r, const hs_scan_policy *pl,
                       hs_scan_policy which, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = 0;
    for (int k = 0; k < r->n_residuals && used + 8 < size; k++) {
        if (pl[k] != which || (which == HS_SCAN_REMAT && !r->residuals[k].remat))
            continue;
        char item[220];
        snprintf(item, sizeof item, "%s %s", r->residuals[k].name,
                 r->residuals[k].opcode);
        if (strstr(buf, item))
            continue;
        int w = snprintf(buf + used, size - used, "%s%s", used ? ", " : "",
                         item);
        if (w < 0 || (size_t)w >= size - used) {
            snprintf(buf + used, size - used, ", ...");
            break;
        }
        used += (size_t)w;
    }
}

static void fmt(int64_t bytes, char *b, size_t n)
{
    hs_format_bytes(bytes, b, n);
}

/* The choice is fixed: keep its module, fill auto_choice. */
static void choose(hs_train_step *ts, const hs_device_spec *spec,
                   int64_t capacity, cand *c, const cand *save, int candidates)
{
    hs_train_auto *a = ts->auto_choice;
    const hs_scan_vjp_report *r = &c->report;
    *ts->scan_report = c->report;
    a->device = spec->name;
    a->hbm_bytes = capacity;
    a->fits = c->peak <= a->hbm_bytes;
    a->full_remat = ts->scan.policy == HS_SCAN_REMAT ||
                    ts->scan.policy == HS_SCAN_REMAT_OFFLOAD;
    a->n_residuals = save->report.n_residuals;
    a->save_peak = save->peak;
    a->peak = c->peak;
    a->host_peak = c->host_peak;
    a->save_seconds = save->est.sim_seconds;
    a->seconds = c->est.sim_seconds;
    a->transfer_seconds = c->est.host_transfer_seconds;
    a->exposed_seconds = c->est.exposed_transfer_seconds;
    a->candidates = candidates;
    for (int k = 0; !a->full_remat && k < r->n_residuals; k++) {
        if (r->residuals[k].remat) {
            a->n_remat++;
            a->remat_bytes += stacked(&r->residuals[k]);
        } else if (r->residuals[k].host) {
            a->n_offloaded++;
            a->offloaded_bytes += stacked(&r->residuals[k]);
        }
    }
    char peak[32], cap[32], sp[32], ob[32], rb[32], hp[32];
    fmt(c->peak, peak, sizeof peak);
    fmt(a->hbm_bytes, cap, sizeof cap);
    fmt(save->peak, sp, sizeof sp);
    fmt(a->offloaded_bytes, ob, sizeof ob);
    fmt(a->remat_bytes, rb, sizeof rb);
    fmt(c->host_peak, hp, sizeof hp);
    /* "on tpu-v5e", or "budget on tpu-v5e" when planning for less. */
    char on[96];
    snprintf(on, sizeof on, "%s%s",
             capacity != (int64_t)spec->hbm_bytes ? "budget on " : "on ",
             spec->name);
    char *t = a->text;
    size_t n = sizeof a->text, u = 0;
#define ADD(...)                                                           \
    do {                                                                   \
        if (u < n) {                                                       \
            int w_ = snprintf(t + u, n - u, __VA_ARGS__);                  \
            u = w_ < 0 ? n : u + (size_t)w_;                               \
        }                                                                  \
    } while (0)
    if (c == save) {
        ADD("auto: saved all %d residuals: the step needs %s of %s HBM %s, "
            "nothing to offload or recompute",
            a->n_residuals, peak, cap, on);
        return;
    }
    if (a->full_remat && ts->scan.policy == HS_SCAN_REMAT_OFFLOAD) {
        ADD("auto: rematerialised the whole layer body and kept each "
            "layer's input in host memory (policy remat_offload): save needs "
            "%s > %s HBM %s, and neither saving fewer residuals nor remat "
            "with the inputs on the device fits; remat_offload needs %s "
            "(host peak %s, %.3f of %.3f ms transfer exposed), estimated "
            "step %.3f ms vs %.3f ms for save",
            sp, cap, on, peak, hp, a->exposed_seconds * 1e3,
            a->transfer_seconds * 1e3, a->seconds * 1e3,
            a->save_seconds * 1e3);
    } else if (a->full_remat) {
        ADD("auto: rematerialised the whole layer body (policy remat): save "
            "needs %s > %s HBM %s and saving fewer residuals (recomputing "
            "the cheap ones, offloading the rest) does not fit; remat needs "
            "%s, estimated step %.3f ms vs %.3f ms for save",
            sp, cap, on, peak, a->seconds * 1e3,
            a->save_seconds * 1e3);
    } else {
        char names[900];
        ADD("auto: ");
        if (a->n_offloaded) {
            list_names(r, ts->placement, HS_SCAN_OFFLOAD, names, sizeof names);
            ADD("offloaded %d of %d residuals (%s)", a->n_offloaded,
                a->n_residuals, names);
        }
        if (a->n_remat) {
            list_names(r, ts->placement, HS_SCAN_REMAT, names, sizeof names);
            ADD("%srecomputed %d cheap residual%s (%s)",
                a->n_offloaded ? ", " : "", a->n_remat,
                a->n_remat == 1 ? "" : "s", names);
        }
        ADD(": save needs %s > %s HBM %s", sp, cap, on);
        if (a->n_remat)
            ADD("; recomputing frees %s of stacks for one element-wise op "
                "each per layer in the backward step", rb);
        if (a->n_offloaded)
            ADD("; offloading frees %s (host peak %s) with %.3f ms of "
                "%.3f ms transfer exposed", ob, hp, a->exposed_seconds * 1e3,
                a->transfer_seconds * 1e3);
        ADD("; device peak %s, estimated step %.3f ms vs %.3f ms for save",
            peak, a->seconds * 1e3, a->save_seconds * 1e3);
    }
    if (!a->fits)
        ADD("; does NOT fit: no placement brings the step under %s, the "
            "lowest peak is kept", cap);
#undef ADD
}

hs_status hs__train_auto(hs_train_step *ts, hs_error *err)
{
    const hs_model *m = ts->model;
    const hs_device_spec *spec = hs_device_find(m->device);
    if (!spec)
        spec = hs_device_find(hs_device_default_name());
    int64_t cap = ts->options.auto_hbm_bytes > 0 ? ts->options.auto_hbm_bytes
                                                 : (int64_t)spec->hbm_bytes;
    ts->auto_choice = calloc(1, sizeof *ts->auto_choice);
    ts->placement = calloc(HS_SCAN_REPORT_MAX, sizeof *ts->placement);
    int *order = calloc(HS_SCAN_REPORT_MAX, sizeof *order);
    if (!ts->auto_choice || !ts->placement || !order) {
        free(order);
        return hs_error_set(err, HS_ERR_NOMEM, "train: out of host memory");
    }
    hs_scan_policy *pl = ts->placement;
    ts->scan.policy = HS_SCAN_SAVE;
    ts->scan.placement = pl;
    ts->scan.n_placement = 0;
    cand save, cur = {0}, best = {0};
    hs_status st = evaluate(ts, spec, &save, err);
    int tried = 1;
    if (st != HS_OK) {
        free(order);
        return st;
    }
    int n = save.report.n_residuals;
    ts->scan.n_placement = n;
    if (save.peak <= cap || n == 0) {
        choose(ts, spec, cap, &save, &save, tried);
        ts->module = save.module;
        free(order);
        return HS_OK;
    }
    /* 2. Cheap residuals recomputed, largest first. */
    int64_t excess = save.peak - cap, freed = 0;
    int nc = sorted(&save.report, pl, HS_SCAN_SAVE, true, order);
    int taken = 0;
    while (taken < nc && freed < excess) {
        pl[order[taken]] = HS_SCAN_REMAT;
        freed += stacked(&save.report.residuals[order[taken]]);
        taken++;
    }
    for (int round = 0; taken > 0 && round < 2; round++) {
        cand_free(&cur);
        if ((st = evaluate(ts, spec, &cur, err)) != HS_OK)
            goto out;
        tried++;
        /* Those that could not be recomputed stay saved. */
        for (int k = 0; k < n; k++)
            if (pl[k] == HS_SCAN_REMAT && !cur.report.residuals[k].remat)
                pl[k] = HS_SCAN_SAVE;
        if (cur.peak <= cap || taken == nc)
            break;
        while (taken < nc)
            pl[order[taken++]] = HS_SCAN_REMAT;
    }
    const cand *base = taken > 0 ? &cur : &save;
    if (base->peak > cap) {
        /* 3. Offload, largest first; the smallest that closes the gap. */
        int64_t peak = base->peak;
        for (int round = 0; round < n && peak > cap; round++) {
            int no = sorted(&save.report, pl, HS_SCAN_SAVE, false, order);
            if (no == 0)
                break;
            int64_t need = peak - cap;
            int64_t got = 0;
            for (int j = 0; j < no && got < need; j++) {
                const hs_scan_residual_info *ri =
                    &save.report.residuals[order[j]];
                /* What it frees: its stack, less the step kept on the
                 * device for the copy and the prefetch. */
                int64_t frees = stacked(ri) - 2 * ri->bytes;
                int pick = j;
                for (int q = no - 1; q > j; q--) {
                    const hs_scan_residual_info *rq =
                        &save.report.residuals[order[q]];
                    if (stacked(rq) - 2 * rq->bytes >= need - got) {
                        pick = q;
                        break;
                    }
                }
                if (pick != j) {
                    const hs_scan_residual_info *rp =
                        &save.report.residuals[order[pick]];
                    frees = stacked(rp) - 2 * rp->bytes;
                    int t = order[pick];
                    order[pick] = order[j];
                    order[j] = t;
                }
                pl[order[j]] = HS_SCAN_OFFLOAD;
                got += frees > 0 ? frees : 0;
            }
            cand_free(&cur);
            if ((st = evaluate(ts, spec, &cur, err)) != HS_OK)
                goto out;
            tried++;
            peak = cur.peak;
        }
    }
    if (cur.module && cur.peak <= cap) {
        choose(ts, spec, cap, &cur, &save, tried);
        ts->module = cur.module;
        cur.module = NULL;
        goto out;
    }
    /* 4. The whole body recomputed. */
    ts->scan.policy = HS_SCAN_REMAT;
    ts->scan.placement = NULL;
    if ((st = evaluate(ts, spec, &best, err)) != HS_OK)
        goto out;
    tried++;
    /* 5. And the layer inputs it keeps moved to host memory. */
    if (best.peak > cap) {
        cand ro = {0};
        ts->scan.policy = HS_SCAN_REMAT_OFFLOAD;
        if ((st = evaluate(ts, spec, &ro, err)) != HS_OK)
            goto out;
        tried++;
        if (ro.peak < best.peak) {
            cand_free(&best);
            best = ro;
        } else {
            cand_free(&ro);
            ts->scan.policy = HS_SCAN_REMAT;
        }
    }
    if (best.peak <= cap || !cur.module || best.peak <= cur.peak) {
        for (int k = 0; k < n; k++)
            pl[k] = HS_SCAN_REMAT;
        choose(ts, spec, cap, &best, &save, tried);
        ts->module = best.module;
        best.module = NULL;
    } else {
        ts->scan.policy = HS_SCAN_SAVE;
        ts->scan.placement = pl;
        choose(ts, spec, cap, &cur, &save, tried);
        ts->module = cur.module;
        cur.module = NULL;
    }
out:
    cand_free(&cur);
    cand_free(&best);
    if (ts->module != save.module)
        cand_free(&save);
    free(order);
    return st;
}
