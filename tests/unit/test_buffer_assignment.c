/* test_buffer_assignment.c - logical buffers, aliasing, liveness, peaks
 * per memory space, memory stats and the out-of-memory report, written as
 * HLO text. Byte figures are worked out by hand in the comments. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_buffers.h"
#include "hloscope/hs_compile.h"
#include "hloscope/hs_device.h"
#include "hloscope/hs_hlo_text.h"
#include "hloscope/hs_model.h"
#include "hlo_test_helpers.h"

static hs_buffer_assignment *assign(const hs_module *m)
{
    hs_error err;
    hs_error_clear(&err);
    hs_buffer_assignment *ba = hs_assign_buffers(m, &err);
    if (!ba)
        fail_msg("assign: %s", err.message);
    return ba;
}

static const hs_logical_buffer *find(const hs_buffer_assignment *ba,
                                     const char *name)
{
    int n;
    const hs_logical_buffer *list = hs_buffers_list(ba, &n);
    for (int k = 0; k < n; k++)
        if (strcmp(list[k].name, name) == 0)
            return &list[k];
    return NULL;
}

/* p (1 KiB, argument) -> a = broadcast (256 KiB) -> e = exp(a) (256 KiB)
 * -> s = slice (1 KiB) -> ROOT reshape(s) (aliases s). */
static const char *chain =
    "HloModule chain\n"
    "ENTRY main {\n"
    "  p = f32[256]{0} parameter(0)\n"
    "  a = f32[256,256]{1,0} broadcast(p), dimensions={1}, "
    "metadata={op_name=\"layers.0/broadcast\"}\n"
    "  e = f32[256,256]{1,0} exponential(a), "
    "metadata={op_name=\"layers.0/exp\"}\n"
    "  s = f32[1,256]{1,0} slice(e), slice={[0:1], [0:256]}\n"
    "  ROOT o = f32[256]{0} reshape(s)\n"
    "}\n";

static void buffer_peak_exact_for_known_chain(void **state)
{
    (void)state;
    hs_module *m = parse(chain);
    hs_buffer_assignment *ba = assign(m);
    /* Live ranges: p [0,4], a [1,2], e [2,3], s [3,4]; o is s. The peak is
     * at e (position 2): p + a + e = 1024 + 2 * 262144. */
    hs_buffer_peak pk = hs_buffers_peak(ba, HS_MEMSPACE_DEVICE);
    assert_int_equal(pk.bytes, 1024 + 2 * 262144);
    assert_int_equal(pk.position, 2);
    assert_string_equal(pk.instruction->name, "e");
    assert_ptr_equal(pk.inner, pk.instruction);
    int n;
    const hs_logical_buffer *list = hs_buffers_list(ba, &n);
    assert_int_equal(n, 4); /* p, a, e, s: the reshape is an alias */
    const char *names[] = {"p", "a", "e", "s"};
    int start[] = {0, 1, 2, 3}, end[] = {4, 2, 3, 4};
    for (int k = 0; k < 4; k++) {
        assert_string_equal(list[k].name, names[k]);
        assert_int_equal(list[k].start, start[k]);
        assert_int_equal(list[k].end, end[k]);
    }
    assert_int_equal(list[0].kind, HS_BUFFER_ARGUMENT);
    assert_int_equal(list[1].kind, HS_BUFFER_TEMPORARY);
    assert_int_equal(list[3].kind, HS_BUFFER_OUTPUT);
    assert_string_equal(list[1].op_name, "layers.0/broadcast");
    const hs_logical_buffer *const *live =
        hs_buffers_live_at_peak(ba, HS_MEMSPACE_DEVICE, &n);
    assert_int_equal(n, 3);
    assert_string_equal(live[0]->name, "a"); /* equal sizes: program order */
    assert_string_equal(live[1]->name, "e");
    assert_string_equal(live[2]->name, "p");
    assert_int_equal(hs_buffers_peak(ba, HS_MEMSPACE_HOST).bytes, 0);
    hs_buffers_free(ba);
    hs_module_free(m);
}

static void aliases_not_double_counted(void **state)
{
    (void)state;
    /* The tuple holds n twice and adds only its 16-byte index table; the
     * get-tuple-element and the bitcast are n. Live: p [0,5], n [1,5],
     * t [2,3], r [5,5]; peak at r: 3 * 4096. */
    hs_module *m = parse("HloModule alias\n"
                         "ENTRY main {\n"
                         "  p = f32[1024]{0} parameter(0)\n"
                         "  n = f32[1024]{0} negate(p)\n"
                         "  t = (f32[1024]{0}, f32[1024]{0}) tuple(n, n)\n"
                         "  g = f32[1024]{0} get-tuple-element(t), index=1\n"
                         "  b = f32[32,32]{1,0} bitcast(g)\n"
                         "  ROOT r = f32[32,32]{1,0} add(b, b)\n"
                         "}\n");
    hs_buffer_assignment *ba = assign(m);
    int n;
    hs_buffers_list(ba, &n);
    assert_int_equal(n, 4);
    assert_non_null(find(ba, "t{}"));
    assert_int_equal(find(ba, "t{}")->bytes, 16);
    assert_int_equal(find(ba, "t{}")->end, 3);
    assert_int_equal(find(ba, "n")->end, 5); /* used through b by r */
    assert_null(find(ba, "g"));
    assert_null(find(ba, "b"));
    hs_buffer_peak pk = hs_buffers_peak(ba, HS_MEMSPACE_DEVICE);
    assert_int_equal(pk.bytes, 3 * 4096);
    assert_string_equal(pk.instruction->name, "r");
    hs_buffers_free(ba);
    hs_module_free(m);
}

static void host_buffers_counted_in_host_space(void **state)
{
    (void)state;
    hs_module *m = parse(
        "HloModule host\n"
        "ENTRY main {\n"
        "  p = f32[1024]{0} parameter(0)\n"
        "  h = f32[1024]{0:S(5)} custom-call(p), "
        "custom_call_target=\"MoveToHost\"\n"
        "  d = f32[1024]{0} custom-call(h), "
        "custom_call_target=\"MoveToDevice\"\n"
        "  ROOT r = f32[1024]{0} add(d, p)\n"
        "}\n");
    hs_buffer_assignment *ba = assign(m);
    /* Device: p [0,3], d [2,3], r [3,3] -> 3 * 4096 at r. Host: h [1,2]. */
    assert_int_equal(hs_buffers_peak(ba, HS_MEMSPACE_DEVICE).bytes, 3 * 4096);
    hs_buffer_peak host = hs_buffers_peak(ba, HS_MEMSPACE_HOST);
    assert_int_equal(host.bytes, 4096);
    assert_string_equal(host.instruction->name, "h");
    int n;
    const hs_logical_buffer *const *live =
        hs_buffers_live_at_peak(ba, HS_MEMSPACE_HOST, &n);
    assert_int_equal(n, 1);
    assert_string_equal(live[0]->name, "h");
    assert_int_equal(live[0]->memory_space, HS_MEMSPACE_HOST);
    assert_int_equal(live[0]->start, 1);
    assert_int_equal(live[0]->end, 2);
    const hs_memory_stats *ms = hs_buffers_memory_stats(ba);
    assert_int_equal(ms->host.temp_bytes, 4096);
    assert_int_equal(ms->device.temp_bytes, 4096); /* d */
    hs_buffers_free(ba);
    hs_module_free(m);
}

static const char *counted_loop =
    "HloModule loop\n"
    "cond {\n"
    "  cp = (s32[], f32[1024]{0}) parameter(0)\n"
    "  ci = s32[] get-tuple-element(cp), index=0\n"
    "  lim = s32[] constant(4)\n"
    "  ROOT lt = pred[] compare(ci, lim), direction=LT\n"
    "}\n"
    "body {\n"
    "  bp = (s32[], f32[1024]{0}) parameter(0)\n"
    "  i = s32[] get-tuple-element(bp), index=0\n"
    "  one = s32[] constant(1)\n"
    "  i1 = s32[] add(i, one)\n"
    "  x = f32[1024]{0} get-tuple-element(bp), index=1\n"
    "  y = f32[1024]{0} exponential(x)\n"
    "  ROOT t = (s32[], f32[1024]{0}) tuple(i1, y)\n"
    "}\n"
    "ENTRY main {\n"
    "  p = f32[1024]{0} parameter(0)\n"
    "  z = s32[] constant(0)\n"
    "  n = f32[1024]{0} negate(p)\n"
    "  init = (s32[], f32[1024]{0}) tuple(z, n)\n"
    "  w = (s32[], f32[1024]{0}) while(init), condition=cond, body=body\n"
    "  ROOT r = f32[1024]{0} get-tuple-element(w), index=1\n"
    "}\n";

static void while_loop_carried_buffers_live_for_whole_loop(void **state)
{
    (void)state;
    hs_module *m = parse(counted_loop);
    hs_buffer_assignment *ba = assign(m);
    /* n is the loop-carried buffer: init, body parameter, body root and
     * result share it, so it lives from its definition (2) through the
     * while (4) to the end (5), and the while defines no copy of it. */
    const hs_logical_buffer *n = find(ba, "n");
    assert_non_null(n);
    assert_int_equal(n->start, 2);
    assert_int_equal(n->end, 5);
    assert_int_equal(n->kind, HS_BUFFER_OUTPUT);
    assert_null(find(ba, "w{1}"));
    /* The index table of init is carried too; the counter starts as a
     * read-only constant, so the loop works on a copy (as XLA's copy
     * insertion adds one). */
    assert_null(find(ba, "w{}"));
    assert_int_equal(find(ba, "init{}")->end, 5);
    assert_int_equal(find(ba, "w{0}")->bytes, 4);
    /* Body: bp is the caller's; the new table is written over the old one
     * (dead by then); i1 (4 B) and y (4 KiB) are made while the old values
     * are live: its peak is 4100 at y. Condition: lim + lt = 5 B. At the
     * while: p 4096 + z 4 + n 4096 + init{} 16 + w{0} 4 + max(5, 4100). */
    hs_buffer_peak pk = hs_buffers_peak(ba, HS_MEMSPACE_DEVICE);
    assert_int_equal(pk.bytes, 4096 + 4 + 4096 + 16 + 4 + 4100);
    assert_string_equal(pk.instruction->name, "w");
    assert_string_equal(pk.inner->name, "y");
    assert_null(find(ba, "t{}"));
    assert_int_equal(find(ba, "y")->end, 6);
    int count;
    const hs_logical_buffer *const *live =
        hs_buffers_live_at_peak(ba, HS_MEMSPACE_DEVICE, &count);
    int64_t sum = 0;
    bool saw_y = false, saw_n = false;
    for (int k = 0; k < count; k++) {
        sum += live[k]->bytes;
        saw_y |= strcmp(live[k]->name, "y") == 0;
        saw_n |= strcmp(live[k]->name, "n") == 0;
    }
    assert_true(saw_y && saw_n);
    assert_int_equal(sum, pk.bytes);
    /* The report names the body's buffers and where they live. */
    char *report = hs_buffers_oom_report(ba, 4096, "GPU", 0);
    assert_non_null(report);
    assert_contains(report, "XLA:GPU compile permanent error");
    assert_contains(report, "Peak at position 4 of main (%w), inside body "
                            "at %y.");
    assert_contains(report, "XLA label: %y = exponential(%x), in body\n");
    assert_contains(report, "XLA label: %init = tuple(%z, %n), "
                            "buffer init{}\n");
    assert_null(hs_buffers_oom_report(ba, pk.bytes, NULL, 0));
    free(report);
    hs_buffers_free(ba);
    hs_module_free(m);
}

static void dynamic_update_slice_updates_in_place(void **state)
{
    (void)state;
    /* z dies at the update, which takes it over; p is an argument and is
     * never updated in place, so its update is a new buffer. */
    hs_module *m = parse(
        "HloModule dus\n"
        "ENTRY main {\n"
        "  p = f32[64,256]{1,0} parameter(0)\n"
        "  u = f32[1,256]{1,0} parameter(1)\n"
        "  i = s32[] parameter(2)\n"
        "  c = f32[] constant(0)\n"
        "  z = f32[64,256]{1,0} broadcast(c), dimensions={}\n"
        "  d1 = f32[64,256]{1,0} dynamic-update-slice(z, u, i, i)\n"
        "  d2 = f32[64,256]{1,0} dynamic-update-slice(p, u, i, i)\n"
        "  ROOT t = (f32[64,256]{1,0}, f32[64,256]{1,0}) tuple(d1, d2)\n"
        "}\n");
    hs_buffer_assignment *ba = assign(m);
    assert_null(find(ba, "d1"));
    assert_non_null(find(ba, "d2"));
    assert_int_equal(find(ba, "z")->kind, HS_BUFFER_OUTPUT);
    assert_int_equal(find(ba, "z")->end, 7);
    hs_buffers_free(ba);
    hs_module_free(m);
}

static void memory_stats_split_arguments_outputs_temporaries(void **state)
{
    (void)state;
    hs_module *m = parse(
        "HloModule stats\n"
        "ENTRY main {\n"
        "  p0 = f32[256]{0} parameter(0)\n"
        "  p1 = f32[512]{0:S(5)} parameter(1)\n"
        "  big = f32[256,256]{1,0} broadcast(p0), dimensions={1}\n"
        "  s = f32[1,256]{1,0} slice(big), slice={[0:1], [0:256]}\n"
        "  r = f32[256]{0} reshape(s)\n"
        "  ROOT t = (f32[256]{0}, f32[512]{0:S(5)}) tuple(r, p1)\n"
        "}\n");
    hs_buffer_assignment *ba = assign(m);
    const hs_memory_stats *ms = hs_buffers_memory_stats(ba);
    assert_int_equal(ms->device.argument_bytes, 1024);
    assert_int_equal(ms->host.argument_bytes, 2048);
    /* Outputs: the root's table (16) and s (1024) on the device; p1 on
     * the host, which is an argument returned as is. */
    assert_int_equal(ms->device.output_bytes, 16 + 1024);
    assert_int_equal(ms->host.output_bytes, 2048);
    assert_int_equal(ms->device.alias_bytes, 0);
    assert_int_equal(ms->host.alias_bytes, 2048);
    assert_int_equal(ms->device.temp_bytes, 262144); /* big */
    assert_int_equal(ms->host.temp_bytes, 0);
    /* Peak at s: p0 + big + s. */
    assert_int_equal(ms->device.peak_bytes, 1024 + 262144 + 1024);
    assert_int_equal(ms->host.peak_bytes, 2048);
    assert_int_equal(ms->generated_code_bytes, 0);
    assert_true(find(ba, "p1")->aliases_argument);
    char *text = hs_memory_stats_format(ms);
    assert_non_null(text);
    assert_contains(text, "temporaries");
    assert_contains(text, "256.00K");
    free(text);
    hs_buffers_free(ba);
    hs_module_free(m);
}

static void donated_arguments_end_at_last_use(void **state)
{
    (void)state;
    /* A training step: w2 replaces w, which input_output_alias donates. w
     * is free after its last use (3) instead of living to the end, so the
     * peak is x + g + w2 + n at 4 (or x + w + g + w2 at 3), not five
     * buffers. */
    const char *text =
        "HloModule step, input_output_alias={ {1}: (1, {}, may-alias) }\n"
        "ENTRY main {\n"
        "  x = f32[1024]{0} parameter(0)\n"
        "  w = f32[1024]{0} parameter(1)\n"
        "  g = f32[1024]{0} multiply(x, w)\n"
        "  w2 = f32[1024]{0} subtract(w, g)\n"
        "  n = f32[1024]{0} negate(g)\n"
        "  ROOT t = (f32[1024]{0}, f32[1024]{0}) tuple(n, w2)\n"
        "}\n";
    hs_module *m = parse(text);
    hs_buffer_assignment *ba = assign(m);
    assert_int_equal(hs_buffers_peak(ba, HS_MEMSPACE_DEVICE).bytes, 4 * 4096);
    const hs_logical_buffer *w = find(ba, "w");
    assert_true(w->donated);
    assert_int_equal(w->end, 3);
    assert_false(find(ba, "x")->donated);
    assert_int_equal(find(ba, "x")->end, 5);
    assert_true(find(ba, "w2")->aliases_argument);
    const hs_memory_stats *ms = hs_buffers_memory_stats(ba);
    assert_int_equal(ms->device.argument_bytes, 2 * 4096);
    assert_int_equal(ms->device.output_bytes, 16 + 2 * 4096);
    assert_int_equal(ms->device.alias_bytes, 4096);
    hs_buffers_free(ba);
    hs_module_free(m);
    /* Without the header, w lives to the end: one buffer more. */
    char plain[1024];
    snprintf(plain, sizeof plain, "HloModule step\n%s",
             strchr(text, '\n') + 1);
    m = parse(plain);
    ba = assign(m);
    assert_int_equal(hs_buffers_peak(ba, HS_MEMSPACE_DEVICE).bytes, 5 * 4096);
    assert_int_equal(hs_buffers_memory_stats(ba)->device.alias_bytes, 0);
    hs_buffers_free(ba);
    hs_module_free(m);
}

/* ---- loop fusions in place ------------------------------------------------- */

/* A kLoop fusion reading its operand element-wise (square, then exp). */
#define SQUARE_EXP                                                         \
    "sq {\n"                                                               \
    "  fp = f32[1024]{0} parameter(0)\n"                                   \
    "  fm = f32[1024]{0} multiply(fp, fp)\n"                               \
    "  ROOT fe = f32[1024]{0} exponential(fm)\n"                           \
    "}\n"

static void loop_fusion_takes_over_operand_that_dies_there(void **state)
{
    (void)state;
    /* a [1,2] dies at f, which writes over it: at f only p + a, 2 * 4096,
     * not p + a + f. */
    hs_module *m = parse("HloModule inplace\n" SQUARE_EXP
                         "ENTRY main {\n"
                         "  p = f32[1024]{0} parameter(0)\n"
                         "  a = f32[1024]{0} negate(p)\n"
                         "  ROOT f = f32[1024]{0} fusion(a), kind=kLoop, "
                         "calls=sq\n"
                         "}\n");
    hs_buffer_assignment *ba = assign(m);
    assert_int_equal(hs_buffers_peak(ba, HS_MEMSPACE_DEVICE).bytes, 2 * 4096);
    int n;
    hs_buffers_list(ba, &n);
    assert_int_equal(n, 2); /* p and a; f is a's buffer */
    assert_null(find(ba, "f"));
    const hs_logical_buffer *a = find(ba, "a");
    assert_int_equal(a->start, 1);
    assert_int_equal(a->end, 2);
    assert_int_equal(a->kind, HS_BUFFER_OUTPUT);
    assert_false(find(ba, "p")->aliases_argument);
    hs_buffers_free(ba);
    hs_module_free(m);
}

static void loop_fusion_keeps_operand_used_later(void **state)
{
    (void)state;
    /* a is read again by s: f needs its own buffer, and so does the
     * unfused add s although f dies there. At s: p + a + f + s. */
    hs_module *m = parse("HloModule later\n" SQUARE_EXP
                         "ENTRY main {\n"
                         "  p = f32[1024]{0} parameter(0)\n"
                         "  a = f32[1024]{0} negate(p)\n"
                         "  f = f32[1024]{0} fusion(a), kind=kLoop, calls=sq\n"
                         "  ROOT s = f32[1024]{0} add(f, a)\n"
                         "}\n");
    hs_buffer_assignment *ba = assign(m);
    hs_buffer_peak pk = hs_buffers_peak(ba, HS_MEMSPACE_DEVICE);
    assert_int_equal(pk.bytes, 4 * 4096);
    assert_string_equal(pk.instruction->name, "s");
    int n;
    hs_buffers_list(ba, &n);
    assert_int_equal(n, 4);
    assert_int_equal(find(ba, "a")->end, 3);
    assert_int_equal(find(ba, "f")->start, 2);
    assert_int_equal(find(ba, "f")->end, 3);
    assert_int_equal(find(ba, "s")->kind, HS_BUFFER_OUTPUT);
    hs_buffers_free(ba);
    hs_module_free(m);
}

/* f = exp(g * w) + w, with the fusion's operands (g, w): w is read
 * element-wise, and so is g, which is never donated. */
static const char *step_body =
    "upd {\n"
    "  fg = f32[1024]{0} parameter(0)\n"
    "  fw = f32[1024]{0} parameter(1)\n"
    "  fm = f32[1024]{0} multiply(fg, fw)\n"
    "  fe = f32[1024]{0} exponential(fm)\n"
    "  ROOT fa = f32[1024]{0} add(fe, fw)\n"
    "}\n"
    "ENTRY main {\n"
    "  w = f32[1024]{0} parameter(0)\n"
    "  g = f32[1024]{0} parameter(1)\n"
    "  ROOT f = f32[1024]{0} fusion(g, w), kind=kLoop, calls=upd\n"
    "}\n";

static void loop_fusion_writes_over_donated_argument(void **state)
{
    (void)state;
    char text[1024];
    snprintf(text, sizeof text,
             "HloModule step, input_output_alias={ {}: (0, {}, may-alias) }\n"
             "%s", step_body);
    hs_module *m = parse(text);
    hs_buffer_assignment *ba = assign(m);
    /* The output is w's buffer: w and g only, the donated w counted
     * once. */
    assert_int_equal(hs_buffers_peak(ba, HS_MEMSPACE_DEVICE).bytes, 2 * 4096);
    assert_null(find(ba, "f"));
    const hs_logical_buffer *w = find(ba, "w"), *g = find(ba, "g");
    assert_true(w->donated);
    assert_true(w->aliases_argument);
    assert_int_equal(w->end, 2);
    /* g comes first among the operands but is not donated: not taken. */
    assert_false(g->donated);
    assert_false(g->aliases_argument);
    assert_int_equal(g->kind, HS_BUFFER_ARGUMENT);
    const hs_memory_stats *ms = hs_buffers_memory_stats(ba);
    assert_int_equal(ms->device.argument_bytes, 2 * 4096);
    assert_int_equal(ms->device.alias_bytes, 4096);
    hs_buffers_free(ba);
    hs_module_free(m);
}

/* w is donated to output {1}, not to the fusion at {0}: as XLA colocates
 * a donated parameter with its own output only, the fusion gets a buffer
 * of its own and w lives until its last use (the copy at {1}). */
static void donated_argument_goes_to_its_own_output_only(void **state)
{
    (void)state;
    hs_module *m = parse(
        "HloModule step, input_output_alias={ {1}: (0, {}, may-alias) }\n"
        "upd {\n"
        "  fw = f32[1024]{0} parameter(0)\n"
        "  ROOT fe = f32[1024]{0} exponential(fw)\n"
        "}\n"
        "ENTRY main {\n"
        "  w = f32[1024]{0} parameter(0)\n"
        "  c = f32[1024]{0} copy(w)\n"
        "  f = f32[1024]{0} fusion(w), kind=kLoop, calls=upd\n"
        "  ROOT t = (f32[1024]{0}, f32[1024]{0}) tuple(f, c)\n"
        "}\n");
    hs_buffer_assignment *ba = assign(m);
    const hs_logical_buffer *f = find(ba, "f");
    assert_non_null(f);
    assert_int_equal(f->kind, HS_BUFFER_OUTPUT);
    assert_false(f->aliases_argument);
    /* w (donated, dies at f), c and f: three buffers at f. */
    assert_int_equal(hs_buffers_peak(ba, HS_MEMSPACE_DEVICE).bytes, 3 * 4096);
    hs_buffers_free(ba);
    hs_module_free(m);
}

static void loop_fusion_never_takes_argument_not_donated(void **state)
{
    (void)state;
    char text[1024];
    snprintf(text, sizeof text, "HloModule step\n%s", step_body);
    hs_module *m = parse(text);
    hs_buffer_assignment *ba = assign(m);
    /* Both arguments die at f, but they are the caller's: w + g + f. */
    assert_int_equal(hs_buffers_peak(ba, HS_MEMSPACE_DEVICE).bytes, 3 * 4096);
    const hs_logical_buffer *f = find(ba, "f");
    assert_non_null(f);
    assert_int_equal(f->kind, HS_BUFFER_OUTPUT);
    assert_false(f->aliases_argument);
    assert_false(find(ba, "w")->aliases_argument);
    assert_int_equal(hs_buffers_memory_stats(ba)->device.alias_bytes, 0);
    hs_buffers_free(ba);
    hs_module_free(m);
}

static void call_adds_callee_peak_at_call_site(void **state)
{
    (void)state;
    /* The callee makes a 64 KiB temporary and returns a 256-byte slice;
     * its returned buffer is the call's, so the callee's peak is only the
     * temporary. At the call: p 256 + call 256 + 65536. */
    hs_module *m = parse(
        "HloModule call\n"
        "f {\n"
        "  fp = f32[64]{0} parameter(0)\n"
        "  fb = f32[256,64]{1,0} broadcast(fp), dimensions={1}\n"
        "  ROOT fs = f32[1,64]{1,0} slice(fb), slice={[0:1], [0:64]}\n"
        "}\n"
        "ENTRY main {\n"
        "  p = f32[64]{0} parameter(0)\n"
        "  c = f32[1,64]{1,0} call(p), to_apply=f\n"
        "  ROOT r = f32[64]{0} reshape(c)\n"
        "}\n");
    hs_buffer_assignment *ba = assign(m);
    hs_buffer_peak pk = hs_buffers_peak(ba, HS_MEMSPACE_DEVICE);
    assert_int_equal(pk.bytes, 256 + 256 + 65536);
    assert_string_equal(pk.instruction->name, "c");
    assert_string_equal(pk.inner->name, "fb"); /* first position of the max */
    assert_null(find(ba, "fs"));
    assert_int_equal(find(ba, "c")->kind, HS_BUFFER_OUTPUT);
    hs_buffers_free(ba);
    hs_module_free(m);
}

static void malformed_module_is_an_error(void **state)
{
    (void)state;
    hs_module *m = parse(chain);
    /* Swap a and e: e now uses a before a is defined. */
    hs_computation *c = m->entry;
    hs_instruction *t = c->instrs[1];
    c->instrs[1] = c->instrs[2];
    c->instrs[2] = t;
    hs_error err;
    hs_error_clear(&err);
    assert_null(hs_assign_buffers(m, &err));
    assert_int_equal(err.status, HS_ERR_INVALID);
    assert_contains(err.message, "not defined before it");
    assert_string_equal(err.instruction, "e");
    hs_module_free(m);
}

/* ---- compile-time OOM ----------------------------------------------------- */

static void oom_report_names_largest_buffers(void **state)
{
    (void)state;
    hs_module *m = parse(chain);
    hs_compile_options o;
    hs_compile_options_init(&o);
    o.pipeline = "verify,schedule"; /* figures independent of fusion */
    o.hbm_bytes = 300 * 1024;
    char *report = NULL;
    o.oom_report = &report;
    hs_executable *exe = NULL;
    hs_error err;
    hs_error_clear(&err);
    assert_int_equal(hs_compile(m, &o, NULL, NULL, &exe, &err), HS_ERR_OOM);
    assert_null(exe);
    /* 525312 bytes used of 307200: 513.00K of 300.00K, 213.00K over. */
    assert_contains(err.message,
                    "RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. "
                    "Ran out of memory in memory space hbm. Used 513.00K of "
                    "300.00K hbm. Exceeded hbm capacity by 213.00K.");
    assert_contains(err.message, "256.00K a f32[256,256]{1,0}");
    assert_non_null(report);
    assert_contains(report, "Total hbm usage >= 513.00K:");
    assert_contains(report, "  1. Size: 256.00K\n"
                            "     Operator: op_name=\"layers.0/broadcast\"\n"
                            "     Shape: f32[256,256]{1,0}\n"
                            "     XLA label: %a = broadcast(%p)\n"
                            "     Allocation type: HLO temp\n");
    assert_contains(report, "  2. Size: 256.00K\n"
                            "     Operator: op_name=\"layers.0/exp\"\n");
    assert_contains(report, "  3. Size: 1.00K\n");
    assert_contains(report, "Allocation type: parameter");
    free(report);

    /* The same module fits in 1 MiB; without a limit nothing is checked. */
    o.hbm_bytes = 1 << 20;
    o.oom_report = NULL;
    assert_int_equal(hs_compile(m, &o, NULL, NULL, &exe, &err), HS_OK);
    const hs_buffer_assignment *ba = hs_executable_buffers(exe);
    assert_non_null(ba);
    assert_int_equal(hs_buffers_peak(ba, HS_MEMSPACE_DEVICE).bytes, 525312);
    assert_non_null(hs_compile_report_find(hs_executable_report(exe),
                                           "buffer-assignment"));
    hs_executable_release(exe);
    hs_module_free(m);
}

static void oom_checked_against_device_preset_even_on_cache_hit(void **state)
{
    (void)state;
    /* 64 MiB of broadcast on teach-16m (16 MiB of HBM). */
    hs_module *m = parse("HloModule big\n"
                         "ENTRY main {\n"
                         "  p = f32[4096]{0} parameter(0)\n"
                         "  b = f32[4096,4096]{1,0} broadcast(p), "
                         "dimensions={1}\n"
                         "  ROOT s = f32[1,4096]{1,0} slice(b), "
                         "slice={[0:1], [0:4096]}\n"
                         "}\n");
    hs_compile_cache *cache = hs_compile_cache_new(4);
    hs_compile_options o;
    hs_compile_options_init(&o);
    o.pipeline = "verify,schedule";
    o.device = "teach-16m";
    hs_executable *exe = NULL;
    hs_error err;
    hs_error_clear(&err);
    /* No check asked for: compiles, and the executable is cached. */
    assert_int_equal(hs_compile(m, &o, cache, NULL, &exe, &err), HS_OK);
    hs_executable_release(exe);
    o.hbm_bytes = HS_HBM_FROM_DEVICE;
    assert_int_equal(hs_compile(m, &o, cache, NULL, &exe, &err), HS_ERR_OOM);
    assert_null(exe);
    assert_contains(err.message, "Used 64.03M of 16.00M hbm");
    assert_contains(err.message, "64.00M b f32[4096,4096]{1,0}");
    o.device = "tpu-v5e";
    assert_int_equal(hs_compile(m, &o, cache, NULL, &exe, &err), HS_OK);
    hs_executable_release(exe);
    hs_compile_cache_free(cache);
    hs_module_free(m);
}

/* A scan's forward loop writes its stacked residuals one slice per step
 * (dynamic-update-slice in place) and the backward loop reads them: CSE
 * leaves one zero broadcast as the init of both stacks, so the loop must
 * give the second stack a buffer of its own, and both live from the
 * forward loop through the backward one. Each stack is f32[4,256] (4 KiB). */
static const char *stacks_between_loops =
    "HloModule stacks\n"
    "fcond {\n"
    "  cp = (s32[], f32[4,256]{1,0}, f32[4,256]{1,0}) parameter(0)\n"
    "  ci = s32[] get-tuple-element(cp), index=0\n"
    "  lim = s32[] constant(4)\n"
    "  ROOT lt = pred[] compare(ci, lim), direction=LT\n"
    "}\n"
    "fbody {\n"
    "  bp = (s32[], f32[4,256]{1,0}, f32[4,256]{1,0}) parameter(0)\n"
    "  i = s32[] get-tuple-element(bp), index=0\n"
    "  one = s32[] constant(1)\n"
    "  i1 = s32[] add(i, one)\n"
    "  a = f32[4,256]{1,0} get-tuple-element(bp), index=1\n"
    "  b = f32[4,256]{1,0} get-tuple-element(bp), index=2\n"
    "  f = f32[] convert(i)\n"
    "  row = f32[1,256]{1,0} broadcast(f), dimensions={}\n"
    "  zero = s32[] constant(0)\n"
    "  a1 = f32[4,256]{1,0} dynamic-update-slice(a, row, i, zero)\n"
    "  e = f32[1,256]{1,0} exponential(row)\n"
    "  b1 = f32[4,256]{1,0} dynamic-update-slice(b, e, i, zero)\n"
    "  ROOT t = (s32[], f32[4,256]{1,0}, f32[4,256]{1,0}) tuple(i1, a1, b1)\n"
    "}\n"
    "rcond {\n"
    "  cp = (s32[], f32[4,256]{1,0}, f32[4,256]{1,0}, f32[1,256]{1,0}) parameter(0)\n"
    "  ci = s32[] get-tuple-element(cp), index=0\n"
    "  lim = s32[] constant(4)\n"
    "  ROOT lt = pred[] compare(ci, lim), direction=LT\n"
    "}\n"
    "rbody {\n"
    "  bp = (s32[], f32[4,256]{1,0}, f32[4,256]{1,0}, f32[1,256]{1,0}) parameter(0)\n"
    "  i = s32[] get-tuple-element(bp), index=0\n"
    "  one = s32[] constant(1)\n"
    "  i1 = s32[] add(i, one)\n"
    "  a = f32[4,256]{1,0} get-tuple-element(bp), index=1\n"
    "  b = f32[4,256]{1,0} get-tuple-element(bp), index=2\n"
    "  acc = f32[1,256]{1,0} get-tuple-element(bp), index=3\n"
    "  zero = s32[] constant(0)\n"
    "  sa = f32[1,256]{1,0} dynamic-slice(a, i, zero), dynamic_slice_sizes={1,256}\n"
    "  sb = f32[1,256]{1,0} dynamic-slice(b, i, zero), dynamic_slice_sizes={1,256}\n"
    "  m = f32[1,256]{1,0} multiply(sa, sb)\n"
    "  acc1 = f32[1,256]{1,0} add(acc, m)\n"
    "  ROOT t = (s32[], f32[4,256]{1,0}, f32[4,256]{1,0}, f32[1,256]{1,0}) tuple(i1, a, b, acc1)\n"
    "}\n"
    "ENTRY main {\n"
    "  z = s32[] constant(0)\n"
    "  c = f32[] constant(0)\n"
    "  s = f32[4,256]{1,0} broadcast(c), dimensions={}\n"
    "  init = (s32[], f32[4,256]{1,0}, f32[4,256]{1,0}) tuple(z, s, s)\n"
    "  w = (s32[], f32[4,256]{1,0}, f32[4,256]{1,0}) while(init), condition=fcond, body=fbody\n"
    "  ga = f32[4,256]{1,0} get-tuple-element(w), index=1\n"
    "  gb = f32[4,256]{1,0} get-tuple-element(w), index=2\n"
    "  z2 = s32[] constant(0)\n"
    "  r0 = f32[1,256]{1,0} broadcast(c), dimensions={}\n"
    "  init2 = (s32[], f32[4,256]{1,0}, f32[4,256]{1,0}, f32[1,256]{1,0}) tuple(z2, ga, gb, r0)\n"
    "  w2 = (s32[], f32[4,256]{1,0}, f32[4,256]{1,0}, f32[1,256]{1,0}) while(init2), condition=rcond, body=rbody\n"
    "  ROOT r = f32[1,256]{1,0} get-tuple-element(w2), index=3\n"
    "}\n";

static void stacked_residuals_live_between_forward_and_backward_loops(
    void **state)
{
    (void)state;
    hs_module *m = parse(stacks_between_loops);
    hs_buffer_assignment *ba = assign(m);
    /* s is the first stack; the second is the while's own buffer w{2}
     * (its init is s too, which the loop writes). Both are live from the
     * forward loop (4) to the backward loop (10), not returned unchanged
     * by the forward body, so not loop invariants. */
    const hs_logical_buffer *s = find(ba, "s"), *w2 = find(ba, "w{2}");
    assert_non_null(s);
    assert_non_null(w2);
    assert_int_equal(w2->bytes, 4096);
    assert_int_equal(w2->start, 4);
    assert_true(s->end >= 10 && w2->end >= 10);
    assert_null(find(ba, "w{1}"));
    /* At the backward loop: both stacks (8 KiB), r0 (1 KiB) and the
     * loops' small state. */
    hs_buffer_peak pk = hs_buffers_peak(ba, HS_MEMSPACE_DEVICE);
    assert_true(pk.bytes >= 2 * 4096 + 1024);
    /* The device keeps both stacks too: run <= assigned <= run + the
     * state the loops rewrite (index tables, counters, the accumulator). */
    hs_error err;
    hs_run_stats st;
    assert_int_equal(hs_device_run(m, hs_device_find("tpu-v5e"), NULL, 0,
                                   NULL, NULL, &st, &err),
                     HS_OK);
    assert_true(st.peak_device_bytes >= 2 * 4096 + 1024);
    assert_true(pk.bytes >= st.peak_device_bytes);
    assert_true(pk.bytes - st.peak_device_bytes <= 24 + 32 + 8 + 1024);
    hs_buffers_free(ba);
    hs_module_free(m);
}

/* ---- cross-check with the device interpreter ------------------------------ */

/* Bytes of the state a while keeps for the whole loop and its body
 * rewrites: the index table and every element the body does not return
 * unchanged (loop invariants such as stacked weights are excluded). */
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
            bool invariant = r && r->opcode == HS_OP_GET_TUPLE_ELEMENT &&
                             r->index == j &&
                             r->operands[0] == body->params[0];
            if (!invariant)
                bytes += hs_shape_total_bytes(&w->shape.elems[j]);
        }
    }
    return bytes;
}

/* The interpreter runs the compiled module in the same order with the same
 * aliasing, and frees every buffer after its last use. Without loops both
 * peaks are equal. A while's carried buffers are allocated for the whole
 * loop in the assignment (as in XLA), while the interpreter frees the old
 * carry at its last use in the body and allocates the new one later; so
 *     run <= assignment <= run + rewritten loop state. */
static void assignment_peak_brackets_device_peak_for_examples(void **state)
{
    (void)state;
    const char *files[] = {"seed_64_linear.json", "mlp.json",
                           "graph_offload.json", "decoder_50x256.json"};
    const char *loops[] = {"unrolled", "scan"};
    print_message("%-22s %-9s %7s %14s %14s %10s %10s\n", "example", "loop",
                  "instrs", "assigned", "run", "diff", "bound");
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        for (int l = 0; l < 2; l++) {
            char path[512];
            snprintf(path, sizeof path, "%s/examples/%s", HS_SOURCE_DIR,
                     files[f]);
            hs_model_options mo;
            memset(&mo, 0, sizeof mo);
            mo.loop = loops[l];
            hs_error err;
            hs_error_clear(&err);
            hs_model *md = hs_model_load_file(path, &mo, &err);
            if (!md)
                fail_msg("%s: %s", path, err.message);
            hs_executable *exe = NULL;
            if (hs_compile(md->module, NULL, NULL, NULL, &exe, &err) != HS_OK)
                fail_msg("%s: compile: %s", path, err.message);
            const hs_module *opt = hs_executable_module(exe);
            static hs_tensor *args[4096];
            int n = hs_model_args(md, args, 4096);
            assert_true(n > 0);
            hs_run_stats st;
            if (hs_device_run(opt, hs_device_find("tpu-v5e"), args, n, NULL,
                              NULL, &st, &err) != HS_OK)
                fail_msg("%s: run: %s", path, err.message);
            const hs_buffer_assignment *ba = hs_executable_buffers(exe);
            int64_t assigned = hs_buffers_peak(ba, HS_MEMSPACE_DEVICE).bytes;
            int64_t bound = rewritten_loop_state(opt);
            print_message("%-22s %-9s %7lld %14lld %14lld %10lld %10lld\n",
                          files[f], loops[l],
                          (long long)hs_module_instruction_count(opt),
                          (long long)assigned,
                          (long long)st.peak_device_bytes,
                          (long long)(assigned - st.peak_device_bytes),
                          (long long)bound);
            assert_true(assigned >= st.peak_device_bytes);
            assert_true(assigned - st.peak_device_bytes <= bound);
            if (l == 0)
                assert_int_equal(assigned, st.peak_device_bytes);
            assert_int_equal(hs_buffers_peak(ba, HS_MEMSPACE_HOST).bytes,
                             st.peak_host_bytes);
            hs_executable_release(exe);
            hs_model_free(md);
        }
    }
}

static void format_bytes_like_xla(void **state)
{
    (void)state;
    char b[32];
    assert_string_equal(hs_format_bytes(0, b, sizeof b), "0B");
    assert_string_equal(hs_format_bytes(1023, b, sizeof b), "1023B");
    assert_string_equal(hs_format_bytes(1536, b, sizeof b), "1.50K");
    assert_string_equal(hs_format_bytes(INT64_C(16) << 30, b, sizeof b),
                        "16.00G");
    assert_string_equal(hs_format_bytes(-2048, b, sizeof b), "-2.00K");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(buffer_peak_exact_for_known_chain),
        cmocka_unit_test(aliases_not_double_counted),
        cmocka_unit_test(host_buffers_counted_in_host_space),
        cmocka_unit_test(while_loop_carried_buffers_live_for_whole_loop),
        cmocka_unit_test(dynamic_update_slice_updates_in_place),
        cmocka_unit_test(memory_stats_split_arguments_outputs_temporaries),
        cmocka_unit_test(donated_arguments_end_at_last_use),
        cmocka_unit_test(loop_fusion_takes_over_operand_that_dies_there),
        cmocka_unit_test(loop_fusion_keeps_operand_used_later),
        cmocka_unit_test(loop_fusion_writes_over_donated_argument),
        cmocka_unit_test(loop_fusion_never_takes_argument_not_donated),
        cmocka_unit_test(donated_argument_goes_to_its_own_output_only),
        cmocka_unit_test(call_adds_callee_peak_at_call_site),
        cmocka_unit_test(malformed_module_is_an_error),
        cmocka_unit_test(oom_report_names_largest_buffers),
        cmocka_unit_test(oom_checked_against_device_preset_even_on_cache_hit),
        cmocka_unit_test(format_bytes_like_xla),
        cmocka_unit_test(stacked_residuals_live_between_forward_and_backward_loops),
        cmocka_unit_test(assignment_peak_brackets_device_peak_for_examples),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
