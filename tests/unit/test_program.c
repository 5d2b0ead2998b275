/* test_program.c - hs_program: a source traced and compiled once, with the
 * executable's buffer assignment, the device's estimate and the compile's
 * memory check; weights drawn only when a run may go ahead; the module
 * diff. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_device.h"
#include "hloscope/hs_file.h"
#include "hloscope/hs_program.h"
#include "hloscope/hs_train.h"
#include "hlo_test_helpers.h"

static char *example(const char *file, size_t *len)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/examples/%s", HS_SOURCE_DIR, file);
    hs_error err;
    char *text = hs_read_file(path, len, &err);
    if (!text)
        fail_msg("%s: %s", path, err.message);
    return text;
}

static hs_program *build(const char *file, const hs_program_options *o,
                         hs_error *err)
{
    size_t len;
    char *text = example(file, &len);
    hs_program_source src = {.kind = HS_SOURCE_MODEL, .text = text, .len = len};
    hs_program *p = hs_program_build(&src, o, err);
    free(text);
    return p;
}

static hs_program *build_ok(const char *file, const hs_program_options *o)
{
    hs_error err;
    hs_error_clear(&err);
    hs_program *p = build(file, o, &err);
    if (!p)
        fail_msg("%s: %s", file, err.message);
    return p;
}

static void compile_assigns_buffers_once(void **state)
{
    (void)state;
    hs_program_options o;
    hs_program_options_init(&o);
    o.check_memory = true;
    int64_t before = hs_buffers_assignment_count();
    hs_program *p = build_ok("mlp.json", &o);
    hs_run_stats est;
    hs_error err;
    assert_int_equal(hs_program_estimate(p, &est, &err), HS_OK);
    assert_int_equal(hs_program_estimate(p, &est, &err), HS_OK);
    /* Pipeline, memory check and estimate: one assignment, the
     * executable's, which the program hands out. */
    assert_int_equal(hs_buffers_assignment_count() - before, 1);
    assert_ptr_equal(p->buffers, hs_executable_buffers(p->exe));
    assert_true(hs_buffers_peak(p->buffers, HS_MEMSPACE_DEVICE).bytes > 0);
    hs_program_free(p);
}

static void compile_cache_hit_assigns_nothing(void **state)
{
    (void)state;
    hs_program_options o;
    hs_program_options_init(&o);
    o.cache = hs_compile_cache_new(4);
    hs_program *a = build_ok("mlp.json", &o);
    int64_t before = hs_buffers_assignment_count();
    hs_program *b = build_ok("mlp.json", &o);
    assert_true(b->cache_hit);
    assert_int_equal(hs_buffers_assignment_count(), before);
    assert_ptr_equal(a->buffers, b->buffers);
    hs_program_free(a);
    hs_program_free(b);
    hs_compile_cache_free(o.cache);
}

static void run_is_refused_before_any_tensor_exists(void **state)
{
    (void)state;
    hs_program_options o;
    hs_program_options_init(&o);
    o.model.loop = "scan";
    hs_program *p = build_ok("seed_64_linear.json", &o);
    /* Analysis allocates no tensor data: the estimate that a server
     * checks its run limits against is made on shapes alone. */
    assert_null(p->model->input);
    assert_null(p->model->params[0].value);
    assert_null(p->args);
    hs_run_stats est;
    hs_error err;
    assert_int_equal(hs_program_estimate(p, &est, &err), HS_OK);
    /* 64 layers of 1024 x 1024 on one row: 2 FLOPs per weight per layer,
     * the scan's while body counted once per iteration. */
    assert_true(est.flops >= 2.0 * 64 * 1024 * 1024);
    assert_true(est.flops < 2.0 * 64 * 1024 * 1024 * 1.01);
    assert_null(p->model->input);
    hs_program_free(p);
}

static void estimate_is_what_the_run_measures(void **state)
{
    (void)state;
    hs_program_options o;
    hs_program_options_init(&o);
    o.model.loop = "scan";
    hs_program *p = build_ok("mlp.json", &o);
    hs_run_stats est, st;
    hs_error err;
    hs_tensor **outs = NULL;
    int n_outs = 0;
    assert_int_equal(hs_program_estimate(p, &est, &err), HS_OK);
    assert_int_equal(hs_program_run(p, NULL, &outs, &n_outs, &st, &err), HS_OK);
    assert_non_null(p->model->input);
    assert_true(est.flops == st.flops);
    assert_true(est.bytes_accessed == st.bytes_accessed);
    assert_int_equal(est.instructions, st.instructions);
    hs_tensors_free(outs, n_outs);
    hs_program_free(p);
}

static void parsed_json_and_text_trace_the_same_graph(void **state)
{
    (void)state;
    size_t len;
    char *text = example("decoder_50x256.json", &len);
    json_t *root = json_loadb(text, len, 0, NULL);
    assert_non_null(root);
    hs_program_options o;
    hs_program_options_init(&o);
    o.model.loop = "scan";
    hs_error err;
    hs_program_source a = {.kind = HS_SOURCE_MODEL, .text = text, .len = len};
    hs_program_source b = {.kind = HS_SOURCE_MODEL, .json = root};
    hs_program *pa = hs_program_trace(&a, &o, &err), *pb = hs_program_trace(&b, &o, &err);
    assert_non_null(pa);
    assert_non_null(pb);
    assert_true(hs_module_fingerprint(pa->traced) == hs_module_fingerprint(pb->traced));
    /* The nesting limit holds for a parsed value too. */
    o.model.limits.max_json_depth = 2;
    assert_null(hs_program_trace(&b, &o, &err));
    assert_int_equal(err.status, HS_ERR_LIMIT);
    hs_program_free(pa);
    hs_program_free(pb);
    json_decref(root);
    free(text);
}

static void oom_is_the_compile_check(void **state)
{
    (void)state;
    hs_program_options o;
    hs_program_options_init(&o);
    o.device = "teach-16m";
    o.check_memory = true;
    hs_error err;
    hs_error_clear(&err);
    int64_t before = hs_buffers_assignment_count();
    assert_null(build("seed_64_linear.json", &o, &err));
    assert_int_equal(err.status, HS_ERR_OOM);
    assert_contains(err.message, "RESOURCE_EXHAUSTED");
    assert_contains(err.message, "of 16.00M hbm");
    assert_int_equal(hs_buffers_assignment_count() - before, 1);
    /* Without the check the same program compiles (analysis of any size). */
    o.check_memory = false;
    hs_program *p = build_ok("seed_64_linear.json", &o);
    hs_program_free(p);
}

static void training_step_oom_names_stacked_residuals(void **state)
{
    (void)state;
    hs_program_options o;
    hs_program_options_init(&o);
    o.train = true;
    o.model.residuals = "save";
    o.check_memory = true;
    char *report = NULL;
    o.oom_report = &report;
    hs_error err;
    hs_error_clear(&err);
    assert_null(build("train_offload.json", &o, &err));
    assert_int_equal(err.status, HS_ERR_OOM);
    assert_contains(err.message, "Training step: 1 scanned loop(s) stack");
    assert_non_null(report);
    assert_contains(report, "RESOURCE_EXHAUSTED");
    /* The whole report carries the explanation too, after XLA's first
     * line, and err's message is that much of it, whole sentences. */
    assert_contains(report, "Training step: 1 scanned loop(s) stack");
    assert_true(strncmp(report, err.message, strlen(err.message)) == 0);
    free(report);
    o.model.residuals = "offload";
    o.oom_report = NULL;
    hs_program *p = build_ok("train_offload.json", &o);
    assert_non_null(p->train);
    assert_ptr_equal(p->traced, p->train->module);
    hs_program_free(p);
}

static void training_step_of_a_forward_program(void **state)
{
    (void)state;
    hs_program_options o;
    hs_program_options_init(&o);
    hs_program *fwd = build_ok("mlp.json", &o);
    hs_error err;
    hs_program *step = hs_program_train_step(fwd, NULL, &err);
    if (!step)
        fail_msg("step: %s", err.message);
    assert_ptr_equal(step->model, fwd->model);
    assert_true(hs_module_instruction_count(step->traced) >
                hs_module_instruction_count(fwd->traced));
    hs_program_free(step);
    hs_program_free(fwd);
}

static hs_program *build_hlo(const char *text, const hs_program_options *o,
                             hs_error *err)
{
    hs_program_source src = {.kind = HS_SOURCE_HLO, .text = text, .len = strlen(text)};
    hs_error_clear(err);
    return hs_program_build(&src, o, err);
}

static void hlo_source_and_its_arguments(void **state)
{
    (void)state;
    const char *text = "HloModule m\n"
                       "ENTRY e {\n"
                       "  x = f32[4] parameter(0)\n"
                       "  ROOT y = f32[4] add(x, x)\n"
                       "}\n";
    hs_program_options o;
    hs_program_options_init(&o);
    hs_error err;
    hs_program *p = build_hlo(text, &o, &err);
    assert_non_null(p);
    assert_string_equal(p->device->name, hs_device_default_name());
    assert_int_equal(hs_program_materialize(p, &err), HS_OK);
    assert_int_equal(p->n_args, 1);
    hs_program_free(p);
}

/* XLA's --split-input-file convention: modules separated by '// -----'. */
static const char k_split[] = "HloModule a\n"                      /* 1 */
                              "ENTRY e {\n"                        /* 2 */
                              "  ROOT x = f32[4] parameter(0)\n"   /* 3 */
                              "}\n"                                /* 4 */
                              "// -----\n"                         /* 5 */
                              "HloModule b\n"                      /* 6 */
                              "ENTRY e {\n"                        /* 7 */
                              "  x = f32[4] parameter(0)\n"        /* 8 */
                              "  ROOT y = f32[4] negate(x)\n"      /* 9 */
                              "}\n";

static void split_text_compiles_the_module_asked_for(void **state)
{
    (void)state;
    hs_program_options o;
    hs_program_options_init(&o);
    hs_error err;
    assert_null(build_hlo(k_split, &o, &err));
    assert_int_equal(err.status, HS_ERR_INVALID);
    assert_string_equal(err.path, "/module");
    assert_contains(err.message, "holds 2 modules");
    assert_contains(err.message, "0 to 1");
    o.module = 1;
    hs_program *p = build_hlo(k_split, &o, &err);
    if (!p)
        fail_msg("%s", err.message);
    assert_int_equal(p->n_modules, 2);
    assert_int_equal(p->module, 1);
    assert_string_equal(p->traced->name, "b");
    hs_program_free(p);
    o.module = 2;
    assert_null(build_hlo(k_split, &o, &err));
    assert_string_equal(err.path, "/module");
    assert_contains(err.message, "no module 2");
}

static void split_text_error_names_module_and_line(void **state)
{
    (void)state;
    char bad[sizeof k_split];
    memcpy(bad, k_split, sizeof bad);
    char *neg = strstr(bad, "negate(x)");
    memcpy(neg, "negate(z)", 9); /* z is defined nowhere: line 9 */
    hs_program_options o;
    hs_program_options_init(&o);
    o.module = 0; /* the error is in module 1: every module is parsed */
    hs_error err;
    assert_null(build_hlo(bad, &o, &err));
    assert_int_equal(err.line, 9);
    assert_true(strncmp(err.message, "module 1: ", 10) == 0);
}

static void tuple_parameter_gets_a_tensor_per_leaf(void **state)
{
    (void)state;
    const char *text = "HloModule tupled\n"
                       "ENTRY e {\n"
                       "  p = (f32[3], (s32[], f32[3])) parameter(0)\n"
                       "  a = f32[3] get-tuple-element(p), index=0\n"
                       "  q = (s32[], f32[3]) get-tuple-element(p), index=1\n"
                       "  b = f32[3] get-tuple-element(q), index=1\n"
                       "  ROOT r = f32[3] add(a, b)\n"
                       "}\n";
    hs_program_options o;
    hs_program_options_init(&o);
    hs_error err;
    hs_program *p = build_hlo(text, &o, &err);
    assert_non_null(p);
    hs_tensor **outs = NULL;
    int n_outs = 0;
    hs_run_stats st;
    if (hs_program_run(p, NULL, &outs, &n_outs, &st, &err) != HS_OK)
        fail_msg("%s", err.message);
    assert_int_equal(p->n_args, 3);
    assert_int_equal(p->args[1]->shape.dtype, HS_S32);
    char name[64];
    assert_true(hs_model_hlo_arg_name(p->hlo, 2, name, sizeof name));
    assert_string_equal(name, "p.1.1");
    assert_false(hs_model_hlo_arg_name(p->hlo, 3, name, sizeof name));
    /* Leaves are drawn from their own streams: a and b differ, and the
     * output is their sum. */
    const float *a = hs_tensor_f32(p->args[0]), *b = hs_tensor_f32(p->args[2]);
    assert_true(a[0] != b[0]);
    assert_int_equal(n_outs, 1);
    for (int i = 0; i < 3; i++)
        assert_float_equal(hs_tensor_f32(outs[0])[i], a[i] + b[i], 0);
    assert_int_equal(hs_program_argument_bytes(p), 3 * 4 + 4 + 3 * 4);
    hs_tensors_free(outs, n_outs);
    hs_program_free(p);
}

/* A module of one f32[1000,1000] argument (4 MB) whose root is `root`,
 * built with a run limit of `limit` bytes. */
static hs_program *limited(const char *root, double limit)
{
    char text[512];
    snprintf(text, sizeof text,
             "HloModule limited\nENTRY e {\n"
             "  x = f32[1000,1000] parameter(0)\n"
             "  ROOT y = f32[1000,1000] %s\n}\n",
             root);
    hs_program_options o;
    hs_program_options_init(&o);
    o.max_run_bytes = limit;
    o.max_run_bytes_name = "--max-run-bytes";
    hs_error err;
    hs_program *p = build_hlo(text, &o, &err);
    if (!p)
        fail_msg("%s", err.message);
    return p;
}

static void run_beyond_the_byte_limit_is_refused_before_drawing(void **state)
{
    (void)state;
    hs_program *p = limited("negate(x)", 1e6);
    hs_error err;
    int64_t t0 = hs_now_ns();
    assert_int_equal(hs_program_materialize(p, &err), HS_ERR_LIMIT);
    assert_true(hs_now_ns() - t0 < 1000000000);
    assert_null(p->args);
    char want[128], args[32], limit[32];
    hs_format_bytes(hs_program_argument_bytes(p), args, sizeof args);
    hs_format_bytes(1000000, limit, sizeof limit);
    snprintf(want, sizeof want, "arguments need %s > --max-run-bytes %s", args, limit);
    assert_string_equal(err.message, want);
    hs_program_free(p);
    /* The arguments fit a larger limit, arguments and peak do not. */
    p = limited("negate(x)", 6e6);
    assert_int_equal(hs_program_check_run(p, &err), HS_ERR_LIMIT);
    assert_contains(err.message, "and the assigned peak");
    hs_program_free(p);
    p = limited("negate(x)", 0); /* no limit */
    assert_int_equal(hs_program_check_run(p, &err), HS_OK);
    hs_program_free(p);
}

static void refusal_names_every_blocker(void **state)
{
    (void)state;
    hs_program *p = limited("custom-call(x), custom_call_target=\"__frobnicate\"", 1e6);
    hs_error err;
    assert_int_equal(hs_program_check_run(p, &err), HS_ERR_UNSUPPORTED);
    assert_true(strncmp(err.message, "arguments need ", 15) == 0);
    assert_contains(err.message, "cannot be executed");
    assert_contains(err.message, "__frobnicate");
    assert_string_equal(p->refusal, err.message);
    hs_program_free(p);
}

/* Six kinds of blocker with 100-character names do not fit hs_error's
 * message: the program keeps the whole refusal, every name in it. */
static void whole_refusal_outlives_the_error_buffer(void **state)
{
    (void)state;
    char text[4096], target[6][112];
    size_t len = (size_t)snprintf(text, sizeof text,
                                  "HloModule many\nENTRY e {\n"
                                  "  x = f32[4] parameter(0)\n");
    for (int k = 0; k < 6; k++) {
        snprintf(target[k], sizeof target[k], "%d", k);
        memset(target[k] + 1, 'a' + k, 99);
        target[k][100] = '\0';
        len += (size_t)snprintf(text + len, sizeof text - len,
                                "  c%d = f32[4] custom-call(x), "
                                "custom_call_target=\"%s\"\n",
                                k, target[k]);
    }
    snprintf(text + len, sizeof text - len,
             "  ROOT t = (f32[4], f32[4], f32[4], f32[4], f32[4], f32[4]) "
             "tuple(c0, c1, c2, c3, c4, c5)\n}\n");
    hs_program_options o;
    hs_program_options_init(&o);
    hs_error err;
    hs_program *p = build_hlo(text, &o, &err);
    if (!p)
        fail_msg("%s", err.message);
    assert_int_equal(hs_program_check_run(p, &err), HS_ERR_UNSUPPORTED);
    assert_true(strlen(p->refusal) >= sizeof err.message);
    for (int k = 0; k < 6; k++)
        assert_contains(p->refusal, target[k]);
    assert_true(strncmp(p->refusal, err.message, strlen(err.message)) == 0);
    hs_program_free(p);
}

static void module_diff_names_added_removed_changed(void **state)
{
    (void)state;
    hs_module *a = parse("HloModule a\n"
                         "ENTRY e {\n"
                         "  x = f32[4] parameter(0)\n"
                         "  n = f32[4] negate(x)\n"
                         "  t = f32[4] tanh(x)\n"
                         "  ROOT y = f32[4] add(n, t)\n"
                         "}\n");
    hs_module *b = parse("HloModule b\n"
                         "ENTRY e {\n"
                         "  x = f32[4] parameter(0)\n"
                         "  n = f32[4] exponential(x)\n"
                         "  s = f32[4] sine(x)\n"
                         "  ROOT y = f32[4] add(n, s)\n"
                         "}\n");
    hs_module_diff d;
    hs_error err;
    assert_int_equal(hs_module_diff_compute(a, b, &d, &err), HS_OK);
    assert_int_equal(d.n_added, 1);
    assert_string_equal(d.added[0]->name, "s");
    assert_int_equal(d.n_removed, 1);
    assert_string_equal(d.removed[0]->name, "t");
    assert_int_equal(d.n_changed, 1);
    assert_string_equal(d.changed_a[0]->name, "n");
    assert_int_equal(d.changed_b[0]->opcode, HS_OP_EXP);
    assert_int_equal(d.n_unchanged, 2);
    assert_int_equal(d.opcodes_a[HS_OP_TANH], 1);
    assert_int_equal(d.opcodes_b[HS_OP_TANH], 0);
    assert_int_equal(d.opcodes_a[HS_OP_PARAMETER], 1);
    hs_module_diff_free(&d);
    hs_module_free(a);
    hs_module_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(compile_assigns_buffers_once),
        cmocka_unit_test(compile_cache_hit_assigns_nothing),
        cmocka_unit_test(run_is_refused_before_any_tensor_exists),
        cmocka_unit_test(estimate_is_what_the_run_measures),
        cmocka_unit_test(parsed_json_and_text_trace_the_same_graph),
        cmocka_unit_test(oom_is_the_compile_check),
        cmocka_unit_test(training_step_oom_names_stacked_residuals),
        cmocka_unit_test(training_step_of_a_forward_program),
        cmocka_unit_test(hlo_source_and_its_arguments),
        cmocka_unit_test(split_text_compiles_the_module_asked_for),
        cmocka_unit_test(split_text_error_names_module_and_line),
        cmocka_unit_test(tuple_parameter_gets_a_tensor_per_leaf),
        cmocka_unit_test(run_beyond_the_byte_limit_is_refused_before_drawing),
        cmocka_unit_test(refusal_names_every_blocker),
        cmocka_unit_test(whole_refusal_outlives_the_error_buffer),
        cmocka_unit_test(module_diff_names_added_removed_changed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
