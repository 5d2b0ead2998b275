/* test_scan_train.c - training through scan: the reverse scan under each
 * residual policy (save, remat, offload), host offloading (host-offload
 * pass, S(5), async copies on the DMA stream) and the memory timeline. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hloscope/hs_compile.h"
#include "hloscope/hs_hlo_text.h"
#include "hloscope/hs_train.h"

static const char *decoder =
    "{\"seed\": 5, \"input\": {\"shape\": [1, 32, 32]}, \"loop\": \"%s\","
    " \"residuals\": %s,"
    " \"layers\": [{\"repeat\": 4, \"block\": {\"type\": \"decoder\","
    "  \"heads\": 4, \"hidden\": 64}}],"
    " \"train\": {\"loss\": \"mse\", \"target\": \"random\","
    "  \"optimizer\": {\"type\": \"adam\", \"lr\": 0.001}, \"steps\": 2}}";

typedef struct outcome {
    float losses[2];
    int n;
    hs_tensor **grads, **updated;
    hs_run_stats last;
    int64_t compiled_device_peak, compiled_host_peak;
    char *hlo;
    hs_scan_vjp_report report;
} outcome;

static void train(const char *loop, const char *residuals, outcome *o)
{
    char json[1024];
    snprintf(json, sizeof json, decoder, loop, residuals);
    hs_error err;
    hs_model *m = hs_model_load(json, strlen(json), NULL, &err);
    if (!m)
        fail_msg("load: %s", err.message);
    hs_train_step *ts = hs_train_step_build(m, NULL, &err);
    if (!ts)
        fail_msg("build: %s", err.message);
    hs_compile_options co;
    hs_compile_options_init(&co);
    co.device = "tpu-v5e";
    hs_executable *exe;
    if (hs_compile(ts->module, &co, NULL, NULL, &exe, &err) != HS_OK)
        fail_msg("compile: %s", err.message);
    const hs_memory_stats *ms =
        hs_buffers_memory_stats(hs_executable_buffers(exe));
    o->compiled_device_peak = ms->device.peak_bytes;
    o->compiled_host_peak = ms->host.peak_bytes;
    o->hlo = hs_hlo_print(hs_executable_module(exe));
    hs_train_run_options ro = {.want_grads = true,
                               .module = hs_executable_module(exe)};
    hs_train_result r;
    if (hs_train_run(ts, NULL, &ro, &r, &err) != HS_OK)
        fail_msg("run: %s", err.message);
    memcpy(o->losses, r.losses, sizeof o->losses);
    o->n = r.n_params;
    o->grads = r.grads;
    o->updated = r.updated;
    r.grads = r.updated = NULL;
    o->last = r.last;
    if (ts->scan_report)
        o->report = *ts->scan_report;
    hs_train_result_free(&r);
    hs_executable_release(exe);
    hs_train_step_free(ts);
    hs_model_free(m);
}

static void outcome_free(outcome *o)
{
    hs_tensors_free(o->grads, o->n);
    hs_tensors_free(o->updated, o->n);
    free(o->hlo);
}

/* Stacked gradients of the scan and per-layer ones of the unrolled model
 * hold the same numbers in the same order. */
static void same_bits(const outcome *a, const outcome *b)
{
    assert_memory_equal(a->losses, b->losses, sizeof a->losses);
    size_t na = 0, nb = 0;
    for (int k = 0; k < a->n; k++)
        na += (size_t)hs_shape_bytes(&a->grads[k]->shape);
    for (int k = 0; k < b->n; k++)
        nb += (size_t)hs_shape_bytes(&b->grads[k]->shape);
    assert_int_equal(na, nb);
}

static void same_tensors(const outcome *a, const outcome *b)
{
    assert_int_equal(a->n, b->n);
    for (int k = 0; k < a->n; k++) {
        assert_memory_equal(a->grads[k]->data, b->grads[k]->data,
                            (size_t)hs_shape_bytes(&a->grads[k]->shape));
        assert_memory_equal(a->updated[k]->data, b->updated[k]->data,
                            (size_t)hs_shape_bytes(&a->updated[k]->shape));
    }
}

static void policies_are_bit_identical(void **state)
{
    (void)state;
    outcome u = {0}, s = {0}, r = {0}, f = {0}, n = {0};
    train("unrolled", "\"save\"", &u);
    train("scan", "\"save\"", &s);
    train("scan", "\"remat\"", &r);
    train("scan", "\"offload\"", &f);
    train("scan", "{\"offload\": [\"mlp\"]}", &n);
    same_bits(&u, &s);
    same_tensors(&s, &r);
    same_tensors(&s, &f);
    same_tensors(&s, &n);
    assert_memory_equal(s.losses, r.losses, sizeof s.losses);
    assert_memory_equal(s.losses, f.losses, sizeof s.losses);
    assert_memory_equal(s.losses, n.losses, sizeof s.losses);
    assert_true(s.losses[1] < s.losses[0]);
    /* What each policy stacked. */
    assert_int_equal(s.report.n_loops, 1);
    assert_true(s.report.device_bytes > 0);
    assert_int_equal(s.report.host_bytes, 0);
    assert_int_equal(f.report.device_bytes, 0);
    assert_int_equal(f.report.host_bytes, s.report.device_bytes);
    assert_true(r.report.device_bytes < s.report.device_bytes / 4);
    assert_true(n.report.host_bytes > 0 && n.report.device_bytes > 0);
    for (int k = 0; k < n.report.n_residuals; k++)
        assert_int_equal(n.report.residuals[k].host,
                         strstr(n.report.residuals[k].name, "/mlp") != NULL);
    outcome_free(&u);
    outcome_free(&s);
    outcome_free(&r);
    outcome_free(&f);
    outcome_free(&n);
}

static int count(const char *text, const char *what)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, what)); p++)
        n++;
    return n;
}

static void offload_lowers_device_peak_with_async_copies(void **state)
{
    (void)state;
    outcome s = {0}, f = {0};
    train("scan", "\"save\"", &s);
    train("scan", "\"offload\"", &f);
    /* The stacks live in host memory, at compile time and at run time... */
    assert_true(f.compiled_host_peak > 0);
    assert_int_equal(s.compiled_host_peak, 0);
    assert_true(f.compiled_device_peak < s.compiled_device_peak);
    assert_true(f.last.peak_device_bytes < s.last.peak_device_bytes);
    assert_true(f.last.peak_host_bytes > 0);
    assert_true(count(f.hlo, "S(5)") > 0);
    assert_int_equal(count(s.hlo, "S(5)"), 0);
    /* ...moved by async copies, no annotation left. */
    assert_true(count(f.hlo, "copy-start(") > 0);
    assert_int_equal(count(f.hlo, "copy-start("), count(f.hlo, "copy-done("));
    assert_int_equal(count(f.hlo, "annotate_device_placement"), 0);
    assert_int_equal(count(f.hlo, "MoveToHost"), 0);
    /* The DMA stream overlaps part of the transfers with compute. */
    assert_true(f.last.host_transfer_seconds > 0);
    assert_true(f.last.exposed_transfer_seconds <
                f.last.host_transfer_seconds);
    assert_true(f.last.sim_seconds < s.last.sim_seconds +
                                         f.last.host_transfer_seconds);
    outcome_free(&s);
    outcome_free(&f);
}

/* Without host-offload-async the moves are synchronous: the whole
 * transfer time is exposed. */
static void synchronous_moves_expose_every_transfer(void **state)
{
    (void)state;
    char json[1024];
    snprintf(json, sizeof json, decoder, "scan", "\"offload\"");
    hs_error err;
    hs_model *m = hs_model_load(json, strlen(json), NULL, &err);
    hs_train_step *ts = hs_train_step_build(m, NULL, &err);
    assert_non_null(ts);
    hs_compile_options co;
    hs_compile_options_init(&co);
    co.pipeline = "verify,fix(simplify,cse,dce),while-loop-trip-count,"
                  "host-offload,schedule";
    hs_executable *exe;
    assert_int_equal(hs_compile(ts->module, &co, NULL, NULL, &exe, &err),
                     HS_OK);
    char *hlo = hs_hlo_print(hs_executable_module(exe));
    assert_true(count(hlo, "custom_call_target=\"MoveToHost\"") > 0);
    assert_true(count(hlo, "custom_call_target=\"MoveToDevice\"") > 0);
    free(hlo);
    hs_memory_timeline tl = {0};
    hs_train_run_options ro = {.steps = 1,
                               .module = hs_executable_module(exe),
                               .timeline = &tl};
    hs_train_result r;
    assert_int_equal(hs_train_run(ts, NULL, &ro, &r, &err), HS_OK);
    assert_true(r.last.host_transfer_seconds > 0);
    assert_true(r.last.exposed_transfer_seconds >=
                r.last.host_transfer_seconds * 0.999);
    /* The timeline has the host buffers and every transfer. */
    int host = 0;
    for (int k = 0; k < tl.n_buffers; k++) {
        host += tl.buffers[k].memory_space == HS_MEMSPACE_HOST;
        assert_true(tl.buffers[k].free_step < 0 ||
                    tl.buffers[k].free_step >= tl.buffers[k].alloc_step);
        assert_true(tl.buffers[k].free_time < 0 ||
                    tl.buffers[k].free_time >= tl.buffers[k].alloc_time);
    }
    assert_true(host > 0);
    assert_true(tl.n_transfers > 0);
    for (int k = 0; k < tl.n_transfers; k++)
        assert_false(tl.transfers[k].async);
    char *js = hs_memory_timeline_json(&tl, hs_device_find("tpu-v5e"), &r.last);
    assert_non_null(strstr(js, "\"schema\":\"hloscope.memory_timeline/1\""));
    assert_non_null(strstr(js, "\"memory_space\":\"host\""));
    free(js);
    hs_memory_timeline_free(&tl);
    hs_train_result_free(&r);
    hs_executable_release(exe);
    hs_train_step_free(ts);
    hs_model_free(m);
}

/* examples/train_offload.json: out of memory on teach-64m with save, fits
 * with offload. */
static void example_ooms_with_save_and_fits_with_offload(void **state)
{
    (void)state;
    const char *pol[] = {"save", "offload"};
    for (int p = 0; p < 2; p++) {
        hs_error err;
        hs_model *m = hs_model_load_file(HS_SOURCE_DIR
                                         "/examples/train_offload.json",
                                         NULL, &err);
        if (!m)
            fail_msg("load: %s", err.message);
        m->residuals = p ? HS_RESIDUALS_OFFLOAD : HS_RESIDUALS_SAVE;
        hs_train_step *ts = hs_train_step_build(m, NULL, &err);
        assert_non_null(ts);
        hs_compile_options co;
        hs_compile_options_init(&co);
        co.device = "teach-64m";
        hs_executable *exe;
        assert_int_equal(hs_compile(ts->module, &co, NULL, NULL, &exe, &err),
                         HS_OK);
        hs_train_run_options ro = {.steps = 1,
                                   .module = hs_executable_module(exe)};
        hs_train_result r;
        hs_status st = hs_train_run(ts, hs_device_find("teach-64m"), &ro, &r,
                                    &err);
        if (p == 0) {
            assert_int_equal(st, HS_ERR_OOM);
            assert_non_null(strstr(err.message, "device out of memory"));
        } else {
            if (st != HS_OK)
                fail_msg("%s: %s", pol[p], err.message);
            assert_true(r.last.peak_device_bytes < 64 * 1024 * 1024);
            assert_true(r.last.peak_host_bytes > 0);
            hs_train_result_free(&r);
        }
        hs_executable_release(exe);
        hs_train_step_free(ts);
        hs_model_free(m);
    }
}

/* Device bytes a while keeps for the whole loop and rewrites every step:
 * its index table and the device elements its body neither returns
 * unchanged (weights, saved stacks in the reverse loop) nor updates in
 * place (stacks written one slice per step). */
static int64_t rewritten_loop_state(const hs_module *m)
{
    int64_t bytes = 0;
    const hs_computation *e = m->entry;
    for (int k = 0; k < e->n_instrs; k++) {
        const hs_instruction *w = e->instrs[k];
        if (w->opcode != HS_OP_WHILE || w->shape.dtype != HS_TUPLE)
            continue;
        const hs_computation *body = w->called[1];
        const hs_instruction *root = body->root;
        bytes += hs_shape_bytes(&w->shape);
        for (int j = 0; j < w->shape.n_elems; j++) {
            const hs_instruction *r =
                root->opcode == HS_OP_TUPLE ? root->operands[j] : NULL;
            const hs_instruction *g =
                r && r->opcode == HS_OP_DYNAMIC_UPDATE_SLICE ? r->operands[0]
                                                             : r;
            bool carried = g && g->opcode == HS_OP_GET_TUPLE_ELEMENT &&
                           g->index == j && g->operands[0] == body->params[0];
            if (!carried &&
                w->shape.elems[j].memory_space != HS_MEMSPACE_HOST)
                bytes += hs_shape_total_bytes(&w->shape.elems[j]);
        }
    }
    return bytes;
}

/* The stacked residuals are written by the forward loop and read by the
 * reverse loop: buffer assignment keeps them live in between, so the
 * compiled peak brackets the run's under every policy (docs/PASSES.md):
 *     run <= assigned <= run + rewritten loop state
 * and host peaks are equal. examples/train_offload.json with save no
 * longer compiles for teach-64m: the OOM is reported at compile time,
 * with the stacks among the largest buffers. */
static void stacked_residuals_live_between_forward_and_backward_loops(
    void **state)
{
    (void)state;
    const hs_residuals pol[] = {HS_RESIDUALS_SAVE, HS_RESIDUALS_REMAT,
                                      HS_RESIDUALS_OFFLOAD};
    for (int ex = 0; ex < 2; ex++) {
        int64_t assigned_save = 0, stacked_save = 0;
        for (int p = 0; p < 3; p++) {
            hs_error err;
            hs_model *m;
            if (ex == 0) {
                char json[1024];
                snprintf(json, sizeof json, decoder, "scan", "\"save\"");
                m = hs_model_load(json, strlen(json), NULL, &err);
            } else {
                m = hs_model_load_file(HS_SOURCE_DIR
                                       "/examples/train_offload.json",
                                       NULL, &err);
            }
            if (!m)
                fail_msg("load: %s", err.message);
            m->residuals = pol[p];
            hs_train_step *ts = hs_train_step_build(m, NULL, &err);
            assert_non_null(ts);
            hs_compile_options co;
            hs_compile_options_init(&co);
            co.device = "tpu-v5e";
            hs_executable *exe;
            assert_int_equal(
                hs_compile(ts->module, &co, NULL, NULL, &exe, &err), HS_OK);
            const hs_buffer_assignment *ba = hs_executable_buffers(exe);
            int64_t dev = hs_buffers_peak(ba, HS_MEMSPACE_DEVICE).bytes;
            int64_t host = hs_buffers_peak(ba, HS_MEMSPACE_HOST).bytes;
            hs_train_run_options ro = {.steps = 1,
                                       .module = hs_executable_module(exe)};
            hs_train_result r;
            assert_int_equal(hs_train_run(ts, hs_device_find("tpu-v5e"), &ro,
                                          &r, &err),
                             HS_OK);
            int64_t bound = rewritten_loop_state(hs_executable_module(exe));
            /* Donated arguments (the parameters and optimizer state the
             * step updates) end at their last use, on the device as in the
             * assignment, and the optimizer's loop fusions write over
             * them in place. */
            print_message("%s %-7s assigned %10lld run %10lld bound %9lld "
                          "host %10lld\n",
                          ex ? "train_offload" : "decoder",
                          p == 0 ? "save" : p == 1 ? "remat" : "offload",
                          (long long)dev, (long long)r.last.peak_device_bytes,
                          (long long)bound, (long long)host);
            assert_true(dev >= r.last.peak_device_bytes);
            assert_true(dev - r.last.peak_device_bytes <= bound);
            assert_int_equal(host, r.last.peak_host_bytes);
            if (p == 0) {
                /* Every stack is counted: the assignment exceeds what the
                 * reverse scan stacked on the device. */
                assigned_save = dev;
                stacked_save = ts->scan_report->device_bytes;
                assert_true(dev > stacked_save);
            } else {
                assert_true(dev < assigned_save);
            }
            hs_train_result_free(&r);
            hs_executable_release(exe);
            /* The same compile checked against teach-64m's HBM. */
            if (ex == 1) {
                co.device = "teach-64m";
                co.hbm_bytes = HS_HBM_FROM_DEVICE;
                char *report = NULL;
                co.oom_report = &report;
                hs_status st = hs_compile(ts->module, &co, NULL, NULL, &exe,
                                          &err);
                if (p == 0) {
                    assert_int_equal(st, HS_ERR_OOM);
                    assert_non_null(strstr(err.message, "Ran out of memory "
                                                        "in memory space "
                                                        "hbm"));
                    assert_non_null(report);
                    assert_non_null(strstr(report, "backward/layers/scan"));
                    free(report);
                } else {
                    assert_int_equal(st, HS_OK);
                    assert_null(report);
                    hs_executable_release(exe);
                }
            }
            hs_train_step_free(ts);
            hs_model_free(m);
        }
        (void)stacked_save;
    }
}

/* "residuals": "auto" on examples/train_offload.json (teach-64m): save
 * does not fit, so auto recomputes cheap residuals and offloads what is
 * still needed; the step compiles against the HBM, runs within it, takes
 * the time hs_device_estimate predicted, and trains bit for bit like save
 * (run on a device where save fits). */
static void auto_fits_where_save_ooms(void **state)
{
    (void)state;
    hs_tensor **updated[2] = {NULL, NULL};
    float loss[2];
    int n = 0;
    for (int p = 0; p < 2; p++) {
        hs_error err;
        hs_model *m = hs_model_load_file(HS_SOURCE_DIR
                                         "/examples/train_offload.json",
                                         NULL, &err);
        if (!m)
            fail_msg("load: %s", err.message);
        m->residuals = p ? HS_RESIDUALS_AUTO : HS_RESIDUALS_SAVE;
        hs_train_step *ts = hs_train_step_build(m, NULL, &err);
        if (!ts)
            fail_msg("build: %s", err.message);
        const char *dev = p ? "teach-64m" : "tpu-v5e";
        if (p) {
            const hs_train_auto *a = ts->auto_choice;
            assert_non_null(a);
            print_message("%s\n", a->text);
            assert_string_equal(a->device, "teach-64m");
            assert_true(a->save_peak > a->hbm_bytes);
            assert_true(a->fits && a->peak <= a->hbm_bytes);
            assert_false(a->full_remat);
            assert_true(a->n_offloaded + a->n_remat > 0);
            assert_true(a->n_offloaded + a->n_remat < a->n_residuals);
            assert_non_null(strstr(a->text, "auto: "));
            assert_non_null(strstr(a->text, "save needs 100.72M > 64.00M HBM"));
            /* The report says the same. */
            int host = 0, remat = 0;
            for (int k = 0; k < ts->scan_report->n_residuals; k++) {
                host += ts->scan_report->residuals[k].host;
                remat += ts->scan_report->residuals[k].remat;
            }
            assert_int_equal(host, a->n_offloaded);
            assert_int_equal(remat, a->n_remat);
            assert_int_equal(ts->scan_report->host_bytes, a->offloaded_bytes);
        } else {
            assert_null(ts->auto_choice);
        }
        hs_compile_options co;
        hs_compile_options_init(&co);
        co.device = dev;
        co.hbm_bytes = HS_HBM_FROM_DEVICE;
        hs_executable *exe;
        if (hs_compile(ts->module, &co, NULL, NULL, &exe, &err) != HS_OK)
            fail_msg("compile: %s", err.message);
        hs_train_run_options ro = {.steps = 1,
                                   .module = hs_executable_module(exe)};
        hs_train_result r;
        if (hs_train_run(ts, hs_device_find(dev), &ro, &r, &err) != HS_OK)
            fail_msg("%s run: %s", dev, err.message);
        if (p) {
            assert_true(r.last.peak_device_bytes <= 64 * 1024 * 1024);
            assert_true(r.last.peak_host_bytes > 0);
            assert_true(r.last.sim_seconds ==
                        ts->auto_choice->seconds);
            assert_true(r.last.exposed_transfer_seconds ==
                        ts->auto_choice->exposed_seconds);
        }
        loss[p] = r.losses[0];
        n = r.n_params;
        updated[p] = r.updated;
        r.updated = NULL;
        hs_train_result_free(&r);
        hs_executable_release(exe);
        hs_train_step_free(ts);
        hs_model_free(m);
    }
    assert_memory_equal(&loss[0], &loss[1], sizeof loss[0]);
    for (int k = 0; k < n; k++)
        assert_memory_equal(updated[0][k]->data, updated[1][k]->data,
                            (size_t)hs_shape_bytes(&updated[0][k]->shape));
    hs_tensors_free(updated[0], n);
    hs_tensors_free(updated[1], n);
}

/* When save fits the device (the test decoder on tpu-v5e), auto saves
 * everything, and trains exactly like save. */
static void auto_keeps_save_when_it_fits(void **state)
{
    (void)state;
    outcome s = {0}, a = {0};
    train("scan", "\"save\"", &s);
    train("scan", "\"auto\"", &a);
    same_tensors(&s, &a);
    assert_memory_equal(s.losses, a.losses, sizeof s.losses);
    assert_int_equal(a.compiled_device_peak, s.compiled_device_peak);
    assert_int_equal(a.report.host_bytes, 0);
    assert_int_equal(a.report.device_bytes, s.report.device_bytes);
    char json[1024];
    snprintf(json, sizeof json, decoder, "scan", "\"auto\"");
    hs_error err;
    hs_model *m = hs_model_load(json, strlen(json), NULL, &err);
    hs_train_step *ts = hs_train_step_build(m, NULL, &err);
    assert_non_null(ts);
    const hs_train_auto *c = ts->auto_choice;
    assert_non_null(c);
    assert_string_equal(c->device, "tpu-v5e");
    assert_true(c->fits);
    assert_int_equal(c->n_offloaded, 0);
    assert_int_equal(c->n_remat, 0);
    assert_false(c->full_remat);
    assert_int_equal(c->peak, c->save_peak);
    assert_int_equal(c->candidates, 1);
    assert_non_null(strstr(c->text, "auto: saved all"));
    hs_train_step_free(ts);
    hs_model_free(m);
    outcome_free(&s);
    outcome_free(&a);
}

/* Per-residual placement: recomputing the element-wise residuals and
 * offloading some of the others trains bit for bit like save. */
static void per_residual_placement_is_bit_identical(void **state)
{
    (void)state;
    outcome ref = {0};
    train("scan", "\"save\"", &ref);
    char json[1024];
    snprintf(json, sizeof json, decoder, "scan", "\"save\"");
    hs_error err;
    hs_model *m = hs_model_load(json, strlen(json), NULL, &err);
    /* Every third residual offloaded, every element-wise one recomputed. */
    hs_scan_policy pl[HS_SCAN_REPORT_MAX];
    int n = ref.report.n_residuals;
    for (int k = 0; k < n; k++) {
        hs_opcode op;
        const char *o = ref.report.residuals[k].opcode;
        bool ew = hs_opcode_parse(o, strlen(o), &op) &&
                  hs_opcode_is_elementwise(op);
        pl[k] = ew ? HS_SCAN_REMAT : k % 3 == 0 ? HS_SCAN_OFFLOAD
                                                : HS_SCAN_SAVE;
    }
    int cursor = 0;
    hs_scan_vjp_report rep = {0};
    hs_scan_vjp_options so = {.policy = HS_SCAN_SAVE, .placement = pl,
                              .n_placement = n, .cursor = &cursor,
                              .report = &rep};
    hs_train_options to = {.autodiff = {.while_vjp = hs_scan_while_vjp,
                                        .while_user = &so}};
    hs_train_step *ts = hs_train_step_build(m, &to, &err);
    if (!ts)
        fail_msg("build: %s", err.message);
    assert_int_equal(rep.n_residuals, n);
    int remat = 0, host = 0;
    for (int k = 0; k < n; k++) {
        remat += rep.residuals[k].remat;
        host += rep.residuals[k].host;
        assert_string_equal(rep.residuals[k].name, ref.report.residuals[k].name);
        if (rep.residuals[k].remat)
            assert_int_equal(pl[k], HS_SCAN_REMAT);
    }
    assert_true(remat > 0 && host > 0);
    assert_true(rep.device_bytes + rep.host_bytes < ref.report.device_bytes);
    hs_compile_options co;
    hs_compile_options_init(&co);
    co.device = "tpu-v5e";
    hs_executable *exe;
    if (hs_compile(ts->module, &co, NULL, NULL, &exe, &err) != HS_OK)
        fail_msg("compile: %s", err.message);
    hs_train_run_options ro = {.want_grads = true,
                               .module = hs_executable_module(exe)};
    hs_train_result r;
    assert_int_equal(hs_train_run(ts, NULL, &ro, &r, &err), HS_OK);
    assert_memory_equal(r.losses, ref.losses, sizeof ref.losses);
    for (int k = 0; k < r.n_params; k++) {
        assert_memory_equal(r.grads[k]->data, ref.grads[k]->data,
                            (size_t)hs_shape_bytes(&r.grads[k]->shape));
        assert_memory_equal(r.updated[k]->data, ref.updated[k]->data,
                            (size_t)hs_shape_bytes(&r.updated[k]->shape));
    }
    hs_train_result_free(&r);
    hs_executable_release(exe);
    hs_train_step_free(ts);
    hs_model_free(m);
    outcome_free(&ref);
}

/* remat_offload: remat's stacks (the carry entering each of the 4 layers,
 * f32[1,32,32] = 4 KiB) live in host memory; each is stored while its
 * layer computes and fetched back one layer ahead in the backward pass,
 * and training is bit for bit save's. */
static void remat_offload_keeps_layer_inputs_on_host(void **state)
{
    (void)state;
    outcome s = {0}, r = {0}, o = {0};
    train("scan", "\"save\"", &s);
    train("scan", "\"remat\"", &r);
    train("scan", "\"remat_offload\"", &o);
    same_tensors(&s, &o);
    assert_memory_equal(s.losses, o.losses, sizeof s.losses);
    assert_int_equal(r.report.device_bytes, 4 * 4096);
    assert_int_equal(r.report.host_bytes, 0);
    assert_int_equal(o.report.device_bytes, 0);
    assert_int_equal(o.report.host_bytes, 4 * 4096);
    assert_int_equal(o.report.n_residuals, 1);
    assert_true(o.report.residuals[0].host);
    assert_string_equal(o.report.residuals[0].name, "carry");
    /* The stack is in host memory, at compile time and at run time. */
    assert_int_equal(r.compiled_host_peak, 0);
    assert_true(o.compiled_host_peak >= 4 * 4096);
    assert_true(o.compiled_device_peak < r.compiled_device_peak);
    assert_true(o.last.peak_device_bytes <= o.compiled_device_peak);
    assert_true(o.last.peak_host_bytes > 0);
    /* Four stores of 4 KiB and five fetches: layer 3's before the reverse
     * loop, then each step fetches the next one's (the last step fetches
     * layer 0's again, clamped, and drops it): asynchronous, and hidden
     * behind the layers' compute on tpu-v5e. */
    assert_int_equal(count(o.hlo, "copy-start("), count(o.hlo, "copy-done("));
    assert_true(count(o.hlo, "copy-start(") >= 2);
    print_message("remat_offload: %.0f bytes moved, %.3g of %.3g s exposed\n",
                  o.last.host_transfer_bytes, o.last.exposed_transfer_seconds,
                  o.last.host_transfer_seconds);
    assert_true(o.last.host_transfer_bytes == 9 * 4096);
    assert_true(o.last.exposed_transfer_seconds <
                0.5 * o.last.host_transfer_seconds);
    outcome_free(&s);
    outcome_free(&r);
    outcome_free(&o);
}

/* When even remat does not fit the budget, auto keeps the layer inputs in
 * host memory too (policy remat_offload), and says so. */
static void auto_falls_back_to_remat_offload(void **state)
{
    (void)state;
    outcome r = {0}, o = {0};
    train("scan", "\"remat\"", &r);
    train("scan", "\"remat_offload\"", &o);
    assert_true(o.compiled_device_peak < r.compiled_device_peak);
    char json[1024];
    snprintf(json, sizeof json, decoder, "scan", "\"auto\"");
    hs_error err;
    hs_model *m = hs_model_load(json, strlen(json), NULL, &err);
    assert_non_null(m);
    hs_train_options to = {.auto_hbm_bytes = o.compiled_device_peak};
    hs_train_step *ts = hs_train_step_build(m, &to, &err);
    if (!ts)
        fail_msg("build: %s", err.message);
    const hs_train_auto *a = ts->auto_choice;
    assert_non_null(a);
    print_message("%s\n", a->text);
    assert_true(a->full_remat);
    assert_true(a->fits);
    assert_int_equal(a->peak, o.compiled_device_peak);
    assert_int_equal(ts->scan.policy, HS_SCAN_REMAT_OFFLOAD);
    assert_non_null(strstr(a->text, "policy remat_offload"));
    assert_int_equal(ts->scan_report->host_bytes, 4 * 4096);
    hs_train_step_free(ts);
    hs_model_free(m);
    outcome_free(&r);
    outcome_free(&o);
}

static void residuals_errors_name_the_path(void **state)
{
    (void)state;
    const char *bad[] = {
        "{\"input\": {\"shape\": [2, 4]}, \"residuals\": \"keep\","
        " \"layers\": [{\"type\": \"relu\"}]}",
        "{\"input\": {\"shape\": [2, 4]}, \"residuals\": {\"offload\": []},"
        " \"layers\": [{\"type\": \"relu\"}]}",
        "{\"input\": {\"shape\": [2, 4]}, \"residuals\": {\"offlaod\": [\"x\"]},"
        " \"layers\": [{\"type\": \"relu\"}]}",
    };
    for (int k = 0; k < 3; k++) {
        hs_error err;
        assert_null(hs_model_load(bad[k], strlen(bad[k]), NULL, &err));
        assert_int_equal(err.status, HS_ERR_INVALID);
        assert_non_null(strstr(err.path, "/residuals"));
        if (k == 0) /* the message lists what is known */
            assert_non_null(strstr(err.message, "remat_offload"));
    }
    const char *ro = "{\"input\": {\"shape\": [2, 4]}, \"residuals\": "
                     "\"remat_offload\", \"layers\": [{\"type\": \"relu\"}]}";
    hs_error e2;
    hs_model *m2 = hs_model_load(ro, strlen(ro), NULL, &e2);
    assert_non_null(m2);
    assert_int_equal(m2->residuals, HS_RESIDUALS_REMAT_OFFLOAD);
    hs_model_free(m2);
    /* One list of names: every policy round-trips, and the message lists
     * them all. */
    int n = 0;
    for (hs_residuals r = HS_RESIDUALS_SAVE; hs_residuals_name(r); r++, n++) {
        hs_residuals back;
        assert_true(hs_residuals_parse(hs_residuals_name(r), &back));
        assert_int_equal(back, r);
        assert_non_null(strstr(hs_residuals_known(), hs_residuals_name(r)));
    }
    assert_int_equal(n, HS_RESIDUALS_REMAT_OFFLOAD + 1);
    hs_residuals junk;
    assert_false(hs_residuals_parse("keep", &junk));
    const char *ok = "{\"input\": {\"shape\": [2, 4]}, \"residuals\": "
                     "{\"offload\": [\"attn\", \"mlp/up_proj\"]},"
                     " \"layers\": [{\"type\": \"relu\"}]}";
    hs_error err;
    hs_model *m = hs_model_load(ok, strlen(ok), NULL, &err);
    assert_non_null(m);
    assert_int_equal(m->n_offload_names, 2);
    assert_string_equal(m->offload_names[1], "mlp/up_proj");
    hs_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(policies_are_bit_identical),
        cmocka_unit_test(offload_lowers_device_peak_with_async_copies),
        cmocka_unit_test(synchronous_moves_expose_every_transfer),
        cmocka_unit_test(example_ooms_with_save_and_fits_with_offload),
        cmocka_unit_test(stacked_residuals_live_between_forward_and_backward_loops),
        cmocka_unit_test(auto_fits_where_save_ooms),
        cmocka_unit_test(auto_keeps_save_when_it_fits),
        cmocka_unit_test(per_residual_placement_is_bit_identical),
        cmocka_unit_test(remat_offload_keeps_layer_inputs_on_host),
        cmocka_unit_test(auto_falls_back_to_remat_offload),
        cmocka_unit_test(residuals_errors_name_the_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
