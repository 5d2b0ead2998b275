/* test_whatif_offload.c - the offload what-if (issue 15, item 2) on
 * dumps: a training step that hloscope traced, printed as HLO text and
 * parsed back (a dump, not our IR), a forward pass, and XLA's own Mixtral
 * train step shard. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hloscope/hs_buffers.h"
#include "hloscope/hs_compile.h"
#include "hloscope/hs_device.h"
#include "hloscope/hs_file.h"
#include "hloscope/hs_program.h"
#include "hloscope/hs_whatif.h"
#include "hlo_test_helpers.h"
#include "whatif/whatif_internal.h"

#define MIXTRAL HS_SOURCE_DIR "/../shared/hlo-real/hlo_mixtral_8x7b_bf16_1x8.hlo"

/* Three unrolled decoder layers on [1,256,128], trained with SGD: its
 * step saves every layer's activations for the backward pass. */
static const char k_decoder[] =
    "{\"name\":\"offload-dump\",\"seed\":3,\"input\":{\"shape\":[1,256,128]},"
    "\"layers\":[{\"repeat\":3,\"block\":{\"type\":\"decoder\",\"heads\":4,"
    "\"hidden\":344}}],"
    "\"train\":{\"loss\":\"mse\",\"target\":\"random\","
    "\"optimizer\":{\"type\":\"sgd\",\"lr\":0.01},\"steps\":1}}";

/* The module a program traced (train: its training step), printed as HLO
 * text and parsed back; *prog receives the program when prog is not
 * NULL. */
static hs_module *dump(const char *json, bool train, hs_program **prog)
{
    hs_program_options o;
    hs_program_options_init(&o);
    o.train = train;
    o.device = "teach-64m";
    hs_program_source src = {.kind = HS_SOURCE_MODEL, .text = json,
                             .len = strlen(json)};
    hs_error err;
    hs_error_clear(&err);
    hs_program *p = hs_program_build(&src, &o, &err);
    if (!p)
        fail_msg("build: %s", err.message);
    char *text = print(p->traced);
    hs_module *m = parse(text);
    free(text);
    if (prog)
        *prog = p;
    else
        hs_program_free(p);
    return m;
}

static hs_whatif analyse(const hs_module *m, const char *device, double budget)
{
    hs_whatif w;
    memset(&w, 0, sizeof w);
    w.module = m;
    w.arena = hs_arena_new(0);
    assert_non_null(w.arena);
    hs_whatif_options o;
    memset(&o, 0, sizeof o);
    o.device = device;
    o.budget = budget;
    hs_error err;
    hs_error_clear(&err);
    hs__whatif_shared sh;
    hs_status st = hs__whatif_shared_init(m, NULL, &o, &sh, &err);
    if (st == HS_OK)
        st = hs__whatif_offload(m, &sh, &o, &w, &err);
    hs__whatif_shared_free(&sh);
    if (st != HS_OK)
        fail_msg("offload: %s", err.message);
    return w;
}

static void release(hs_whatif *w)
{
    hs_module_free(w->offload.offloaded);
    hs_arena_free(w->arena);
}

/* The device peak of m compiled by the default pipeline for device. */
static double compiled_peak(const hs_module *m, const char *device)
{
    hs_compile_options co;
    hs_compile_options_init(&co);
    co.device = device;
    hs_executable *exe;
    hs_error err;
    hs_error_clear(&err);
    if (hs_compile(m, &co, NULL, NULL, &exe, &err) != HS_OK)
        fail_msg("compile: %s", err.message);
    double pk = (double)hs_buffers_peak(hs_executable_buffers(exe),
                                        HS_MEMSPACE_DEVICE).bytes;
    hs_executable_release(exe);
    return pk;
}

static void train_step_dump_offloads_to_fit_teaching_preset(void **state)
{
    (void)state;
    hs_module *m = dump(k_decoder, true, NULL);
    const hs_device_spec *teach = hs_device_find("teach-16m");
    double before = compiled_peak(m, "teach-16m");
    /* It does not fit teach-16m as it is... */
    assert_true(before > teach->hbm_bytes);
    hs_whatif w = analyse(m, "teach-16m", 0);
    hs_whatif_offload *r = &w.offload;
    if (!r->analysed)
        fail_msg("not analysed: %s", r->reason);
    print_message("decoder train step on teach-16m: peak %.0f -> %.0f, "
                  "%d values, %.0f bytes moved, %.6f s exposed\n",
                  r->peak_before, r->peak_after, r->n_chosen,
                  r->bytes_moved, r->exposed_seconds);
    assert_true(r->budget == teach->hbm_bytes);
    assert_true(r->peak_before == before);
    /* ... and fits once the chosen activations live on the host. */
    if (!r->fits)
        fail_msg("peak %.0f of %.0f with %d values moved", r->peak_after,
                 r->budget, r->n_chosen);
    assert_true(r->peak_after <= teach->hbm_bytes);
    assert_true(r->peak_after < r->peak_before);
    assert_true(r->n_chosen > 0);
    /* Every chosen value goes there and back. */
    int64_t chosen_bytes = 0;
    for (int k = 0; k < r->n_chosen; k++) {
        const hs_instruction *v = find_instr(m, r->chosen[k]);
        chosen_bytes += hs_shape_bytes(&v->shape);
    }
    assert_true(r->bytes_moved == 2.0 * (double)chosen_bytes);
    /* The moves are async copies in and out of S(5), and the transfers'
     * exposed time is at most their whole time on the link. */
    char *text = print(r->offloaded);
    assert_contains(text, "copy-start(");
    assert_contains(text, ":S(5)}");
    /* Its HLO text compiled again (the explorer's B) keeps the copies
     * where the what-if placed them, and so its peak. */
    hs_module *again = parse(text);
    free(text);
    double peak_again = compiled_peak(again, "teach-16m");
    print_message("offloaded step compiled again: peak %.0f\n", peak_again);
    assert_true(peak_again <= r->peak_after);
    hs_module_free(again);
    assert_true(r->exposed_seconds >= 0);
    assert_true(r->exposed_seconds <=
                r->bytes_moved / teach->host_link_bandwidth + 1e-12);
    hs_error err;
    hs_error_clear(&err);
    assert_int_equal(hs_module_verify(r->offloaded, &err), HS_OK);
    release(&w);
    hs_module_free(m);
}

/* The smallest set: with a budget between the peak and what offloading
 * everything idle would reach, fewer values move than for a tighter one. */
static void smaller_budget_moves_more(void **state)
{
    (void)state;
    hs_module *m = dump(k_decoder, true, NULL);
    double before = compiled_peak(m, "teach-16m");
    hs_whatif loose = analyse(m, "teach-16m", before * 0.9);
    hs_whatif tight = analyse(m, "teach-16m", before * 0.7);
    assert_true(loose.offload.analysed && tight.offload.analysed);
    assert_true(loose.offload.fits);
    assert_true(loose.offload.peak_after <= before * 0.9);
    assert_true(loose.offload.n_chosen > 0);
    assert_true(loose.offload.n_chosen < tight.offload.n_chosen);
    assert_true(tight.offload.peak_after < loose.offload.peak_after);
    release(&loose);
    release(&tight);
    hs_module_free(m);
}

/* Arguments for every entry parameter of m: f32 drawn uniformly in
 * [-1, 1) from a fixed seed (the step's parameters are all f32). */
static hs_tensor **draw_args(const hs_module *m, int *n)
{
    const hs_computation *e = m->entry;
    hs_tensor **args = calloc((size_t)e->n_params, sizeof *args);
    assert_non_null(args);
    uint64_t s = 0x9e3779b97f4a7c15u;
    for (int k = 0; k < e->n_params; k++) {
        assert_int_equal(e->params[k]->shape.dtype, HS_F32);
        args[k] = hs_tensor_new(&e->params[k]->shape);
        assert_non_null(args[k]);
        float *f = hs_tensor_f32(args[k]);
        for (int64_t i = 0; i < hs_tensor_elements(args[k]); i++) {
            s = s * 6364136223846793005u + 1442695040888963407u;
            f[i] = (float)((double)(s >> 40) / (double)(1u << 24)) * 2 - 1;
        }
    }
    *n = e->n_params;
    return args;
}

/* m compiled as it is (the default pipeline) run on device `as_is`, and
 * its offloaded module on device `offloaded_on`, on the same drawn
 * arguments: every output must be the same bits. The runs' stats in *sa,
 * *sb. */
static void run_both_same_bits(const hs_module *m, const char *as_is,
                               const hs_module *offloaded,
                               const char *offloaded_on, hs_run_stats *sa,
                               hs_run_stats *sb)
{
    hs_compile_options co;
    hs_compile_options_init(&co);
    co.device = as_is;
    hs_executable *exe;
    hs_error err;
    hs_error_clear(&err);
    assert_int_equal(hs_compile(m, &co, NULL, NULL, &exe, &err), HS_OK);
    int n_args;
    hs_tensor **args = draw_args(m, &n_args);
    hs_tensor **a = NULL, **b = NULL;
    int na = 0, nb = 0;
    if (hs_device_run(hs_executable_module(exe), hs_device_find(as_is), args,
                      n_args, &a, &na, sa, &err) != HS_OK)
        fail_msg("run: %s", err.message);
    if (hs_device_run(offloaded, hs_device_find(offloaded_on), args, n_args,
                      &b, &nb, sb, &err) != HS_OK)
        fail_msg("run offloaded: %s", err.message);
    assert_int_equal(na, nb);
    for (int k = 0; k < na; k++) {
        assert_int_equal(hs_shape_bytes(&a[k]->shape),
                         hs_shape_bytes(&b[k]->shape));
        assert_memory_equal(a[k]->data, b[k]->data,
                            (size_t)hs_shape_bytes(&a[k]->shape));
    }
    hs_tensors_free(a, na);
    hs_tensors_free(b, nb);
    for (int k = 0; k < n_args; k++)
        hs_tensor_free(args[k]);
    free(args);
    hs_executable_release(exe);
}

/* The offloaded step computes what the step computes, bit for bit: the
 * copies move bytes, and the same instructions run on them. */
static void offloaded_step_runs_bit_identical(void **state)
{
    (void)state;
    hs_module *m = dump(k_decoder, true, NULL);
    hs_whatif w = analyse(m, "teach-16m", 0);
    assert_true(w.offload.fits);
    const hs_device_spec *small = hs_device_find("teach-16m");
    hs_run_stats sa, sb;
    /* It runs on the small device it did not fit. */
    run_both_same_bits(m, "teach-64m", w.offload.offloaded, "teach-16m", &sa,
                       &sb);
    assert_true((double)sa.peak_device_bytes > small->hbm_bytes);
    /* The device's own accounting agrees that it fits, and moved the
     * bytes the what-if said. */
    assert_true((double)sb.peak_device_bytes <= small->hbm_bytes);
    assert_true(sb.host_transfer_bytes == w.offload.bytes_moved);
    assert_true(fabs(sb.exposed_transfer_seconds -
                     w.offload.exposed_seconds) <= 1e-9);
    release(&w);
    hs_module_free(m);
}

/* Where the prefetches start is what saves the memory: the same module
 * with every fetch from the host issued right after its eviction (the
 * schedule pass's rule, right for a scan body) holds each fetched copy
 * for its whole gap and does not fit. */
static void late_prefetches_are_what_fits(void **state)
{
    (void)state;
    hs_module *m = dump(k_decoder, true, NULL);
    hs_whatif w = analyse(m, "teach-16m", 0);
    assert_true(w.offload.fits);
    hs_module *early = hs_module_clone(w.offload.offloaded);
    assert_non_null(early);
    hs_computation *c = early->entry;
    int fetches = 0;
    for (int k = 0; k < c->n_instrs; k++) {
        hs_instruction *cs = c->instrs[k];
        if (cs->opcode != HS_OP_COPY_START ||
            cs->operands[0]->shape.memory_space != HS_MEMSPACE_HOST)
            continue;
        int at = -1;
        for (int j = 0; j < k; j++)
            if (c->instrs[j] == cs->operands[0])
                at = j;
        assert_true(at >= 0);
        /* Placed late: compute runs between the eviction and the fetch. */
        assert_true(k > at + 1);
        memmove(c->instrs + at + 2, c->instrs + at + 1,
                sizeof *c->instrs * (size_t)(k - at - 1));
        c->instrs[at + 1] = cs;
        fetches++;
    }
    assert_int_equal(fetches, w.offload.n_chosen);
    hs_error err;
    hs_error_clear(&err);
    assert_int_equal(hs_module_verify(early, &err), HS_OK);
    hs_buffer_assignment *ba = hs_assign_buffers(early, &err);
    assert_non_null(ba);
    double peak = (double)hs_buffers_peak(ba, HS_MEMSPACE_DEVICE).bytes;
    print_message("prefetch right after eviction: peak %.0f, placed: %.0f\n",
                  peak, w.offload.peak_after);
    assert_true(peak > w.offload.budget);
    assert_true(peak > w.offload.peak_after);
    hs_buffers_free(ba);
    hs_module_free(early);
    release(&w);
    hs_module_free(m);
}

static void forward_module_is_not_applicable(void **state)
{
    (void)state;
    hs_module *m = dump(k_decoder, false, NULL);
    hs_whatif w = analyse(m, "teach-16m", 1);
    assert_false(w.offload.analysed);
    assert_contains(w.offload.reason, "forward-only");
    assert_null(w.offload.offloaded);
    release(&w);
    hs_module_free(m);
}

/* A cancelled analysis stops with HS_ERR_CANCELLED, whatever it was
 * doing, and leaves nothing to free. */
static void cancelled_analysis_stops(void **state)
{
    (void)state;
    hs_module *m = dump(k_decoder, true, NULL);
    hs_whatif w;
    memset(&w, 0, sizeof w);
    w.arena = hs_arena_new(0);
    hs_whatif_options o;
    memset(&o, 0, sizeof o);
    o.device = "teach-16m";
    atomic_bool stop = true;
    o.cancel = &stop;
    hs_error err;
    hs_error_clear(&err);
    /* The shared compile stops first; the section alone stops too. */
    hs__whatif_shared sh;
    assert_int_equal(hs__whatif_shared_init(m, NULL, &o, &sh, &err),
                     HS_ERR_CANCELLED);
    assert_null(sh.exe);
    assert_int_equal(hs__whatif_offload(m, &sh, &o, &w, &err),
                     HS_ERR_CANCELLED);
    assert_null(w.offload.offloaded);
    hs_arena_free(w.arena);
    hs_module_free(m);
}

/* A loop that runs early carries out a value (an element of its result
 * tuple) that is read again only at the end (rows chosen by the last
 * result, so no schedule can read them earlier), around another value
 * saved for later: the element is a candidate through its get-tuple-element,
 * which moves up to the loop so that the copy leaves when the bytes are
 * made. With a budget below the peak it goes to the host, the peak drops,
 * and the step computes the same bits. The loop body's own values are
 * counted as not candidates, with the reason. */
static const char k_loop_result[] =
    "HloModule loop_result\n"
    "sum {\n"
    "  x = f32[] parameter(0)\n"
    "  y = f32[] parameter(1)\n"
    "  ROOT s = f32[] add(x, y)\n"
    "}\n"
    "body {\n"
    "  s = (s32[], f32[1024,512]) parameter(0)\n"
    "  i = s32[] get-tuple-element(s), index=0\n"
    "  x = f32[1024,512] get-tuple-element(s), index=1\n"
    "  one = s32[] constant(1)\n"
    "  i1 = s32[] add(i, one)\n"
    "  y = f32[1024,512] tanh(x)\n"
    "  ROOT r = (s32[], f32[1024,512]) tuple(i1, y)\n"
    "}\n"
    "cond {\n"
    "  s = (s32[], f32[1024,512]) parameter(0)\n"
    "  i = s32[] get-tuple-element(s), index=0\n"
    "  n = s32[] constant(2)\n"
    "  ROOT c = pred[] compare(i, n), direction=LT\n"
    "}\n"
    "ENTRY main {\n"
    "  p = f32[1024,512] parameter(0)\n"
    "  w = f32[512,512] parameter(1)\n"
    "  z = s32[] constant(0)\n"
    "  t = (s32[], f32[1024,512]) tuple(z, p)\n"
    "  l = (s32[], f32[1024,512]) while(t), condition=cond, body=body\n"
    "  a = f32[1024,512] get-tuple-element(l), index=1\n"
    "  a1 = f32[512,512] slice(a), slice={[512:1024], [0:512]}\n"
    "  b = f32[512,512] dot(a1, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "  h0 = f32[512,512] exponential(b)\n"
    "  h1 = f32[512,512] dot(h0, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "  h2 = f32[512,512] dot(h1, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "  h3 = f32[512,512] dot(h2, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "  h4 = f32[512,512] dot(h3, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "  h5 = f32[512,512] dot(h4, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "  h6 = f32[512,512] dot(h5, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "  h7 = f32[512,512] dot(h6, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "  h8 = f32[512,512] dot(h7, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "  g0 = f32[512,512] add(h8, b)\n"
    "  g1 = f32[512,512] dot(g0, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "  g2 = f32[512,512] dot(g1, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "  g3 = f32[512,512] dot(g2, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "  g4 = f32[512,512] dot(g3, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "  g5 = f32[512,512] dot(g4, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "  g6 = f32[512,512] dot(g5, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "  g7 = f32[512,512] dot(g6, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "  g8 = f32[512,512] dot(g7, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "  zf = f32[] constant(0)\n"
    "  r8 = f32[] reduce(g8, zf), dimensions={0,1}, to_apply=sum\n"
    "  up = pred[] compare(r8, zf), direction=GT\n"
    "  c1 = s32[] constant(512)\n"
    "  ri = s32[] select(up, c1, z)\n"
    "  ds = f32[512,512] dynamic-slice(a, ri, z), dynamic_slice_sizes={512,512}\n"
    "  ROOT u = f32[512,512] multiply(ds, g8)\n"
    "}\n";

static void a_loop_result_read_late_is_offloaded(void **state)
{
    (void)state;
    hs_module *m = parse(k_loop_result);
    double before = compiled_peak(m, "teach-64m");
    hs_whatif w = analyse(m, "teach-64m", before - 512.0 * 1024.0);
    hs_whatif_offload *r = &w.offload;
    if (!r->analysed)
        fail_msg("not analysed: %s", r->reason);
    print_message("loop result: peak %.0f -> %.0f (budget %.0f), %d "
                  "values moved, %.0f bytes\n",
                  r->peak_before, r->peak_after, r->budget, r->n_chosen,
                  r->bytes_moved);
    bool element = false;
    for (int k = 0; k < r->n_chosen; k++) {
        print_message("  chosen %s\n", r->chosen[k]);
        element |= strcmp(r->chosen[k], "a") == 0;
    }
    assert_true(element);
    assert_true(r->fits);
    assert_true(r->peak_after < r->peak_before);
    assert_true(r->n_not_candidates >= 1);
    assert_string_equal(r->not_candidates[0].kind, "called_computation");
    assert_true(r->not_candidates[0].count > 0 &&
                r->not_candidates[0].reason[0] != '\0');
    hs_error err;
    hs_error_clear(&err);
    assert_int_equal(hs_module_verify(r->offloaded, &err), HS_OK);

    /* The same bits as the module compiled as it is. */
    hs_run_stats sx, sy;
    run_both_same_bits(m, "teach-64m", r->offloaded, "teach-64m", &sx, &sy);
    assert_true((double)sy.peak_device_bytes <= r->budget);
    release(&w);
    hs_module_free(m);
}

static void mixtral_shard_is_analysed_in_seconds(void **state)
{
    (void)state;
    size_t len;
    hs_error err;
    hs_error_clear(&err);
    char *text = hs_read_file(MIXTRAL, &len, &err);
    if (!text)
        fail_msg("%s: %s", MIXTRAL, err.message);
    hs_module *m = hs_hlo_parse(text, len, &err);
    free(text);
    assert_non_null(m);
    int64_t t0 = hs_now_ns();
    clock_t c0 = clock();
    /* As `hloscope whatif` asks by default: the default device's HBM. */
    hs_whatif w = analyse(m, NULL, 0);
    double seconds = (double)(hs_now_ns() - t0) / 1e9;
    double cpu = (double)(clock() - c0) / CLOCKS_PER_SEC;
    print_message("mixtral offload what-if: %.2f s wall, %.2f s CPU, "
                  "peak %.0f -> %.0f "
                  "(budget %.0f), %d values, %.0f bytes moved, %.4f s "
                  "exposed\n",
                  seconds, cpu, w.offload.peak_before,
                  w.offload.peak_after, w.offload.budget,
                  w.offload.n_chosen, w.offload.bytes_moved,
                  w.offload.exposed_seconds);
    if (!w.offload.analysed)
        fail_msg("not analysed: %s", w.offload.reason);
    /* 35 GB of its 50 GB peak are arguments: it cannot fit 16 GiB, and
     * the best found is reported. */
    assert_false(w.offload.fits);
    assert_true(w.offload.n_chosen > 0);
    /* Named as in the dump, not after the fusions the compile formed. */
    for (int k = 0; k < w.offload.n_chosen; k++)
        assert_non_null(find_instr(m, w.offload.chosen[k]));
    assert_contains(w.offload.reason, "no choice fits");
    assert_true(w.offload.peak_after < w.offload.peak_before);
    assert_true(seconds < 30); /* "a few seconds"; generous under load */
    release(&w);
    hs_module_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(train_step_dump_offloads_to_fit_teaching_preset),
        cmocka_unit_test(smaller_budget_moves_more),
        cmocka_unit_test(offloaded_step_runs_bit_identical),
        cmocka_unit_test(late_prefetches_are_what_fits),
        cmocka_unit_test(forward_module_is_not_applicable),
        cmocka_unit_test(cancelled_analysis_stops),
        cmocka_unit_test(a_loop_result_read_late_is_offloaded),
        cmocka_unit_test(mixtral_shard_is_analysed_in_seconds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
