/*
 * test_sharding.c - sharding={...} annotations (hs_sharding.h), the
 * sharding what-if (hs__whatif_sharding) and the per-device sizes on the
 * graph: every sharding XLA wrote into ../shared/hlo-real read, and the
 * global shapes they name checked against the published model configs;
 * iota tile assignments checked against numpy; a module split two ways
 * halves per-device bytes; Mixtral and Llama 70B, already partitioned by
 * XLA, taken as written, the per-device peak the compile's own.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hloscope/hs_buffers.h"
#include "hloscope/hs_compile.h"
#include "hloscope/hs_file.h"
#include "hloscope/hs_render.h"
#include "hloscope/hs_sharding.h"
#include "hlo_test_helpers.h"
#include "whatif/whatif_internal.h"

#define REAL_DIR HS_SOURCE_DIR "/../shared/hlo-real"
#define MIXTRAL REAL_DIR "/hlo_mixtral_8x7b_bf16_1x8.hlo"
#define LLAMA REAL_DIR "/hlo_llama31_70b_fp8_16x8.hlo"

/* ---- helpers ------------------------------------------------------------- */

static hs_sharding parsed(hs_arena *a, const char *text)
{
    hs_sharding s;
    hs_error err;
    hs_error_clear(&err);
    if (hs_sharding_parse(text, a, &s, &err) != HS_OK)
        fail_msg("sharding={%s}: %s", text, err.message);
    return s;
}

static char *read_text(const char *path, size_t *len)
{
    hs_error err;
    char *text = hs_read_file(path, len, &err);
    if (!text)
        fail_msg("%s: %s", path, err.message);
    return text;
}

static hs_module *parse_file(const char *path, char **text_out)
{
    size_t len;
    char *text = read_text(path, &len);
    hs_error err;
    hs_error_clear(&err);
    hs_module *m = hs_hlo_parse(text, len, &err);
    if (!m)
        fail_msg("%s:%d:%d: %s", path, err.line, err.column, err.message);
    if (text_out)
        *text_out = text;
    else
        free(text);
    return m;
}

/* The device peak the compile reports for m (`hloscope compile`'s),
 * default device and pipeline, as the what-if compiles it. */
static double compiled_peak(const hs_module *m)
{
    hs_compile_options o;
    hs_compile_options_init(&o);
    hs_executable *e = NULL;
    hs_error err;
    if (hs_compile(m, &o, NULL, NULL, &e, &err) != HS_OK)
        fail_msg("compile: %s", err.message);
    double peak = (double)hs_buffers_peak(hs_executable_buffers(e),
                                          HS_MEMSPACE_DEVICE).bytes;
    hs_executable_release(e);
    return peak;
}

/* The CPU time of this process, seconds: the machine is shared, so a
 * timing printed next to the wall time says what the work itself took. */
static double cpu_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* The sharding section of a what-if of m, as the driver would call it,
 * timed. */
static hs_whatif_sharding whatif_timed(const hs_module *m, double *seconds,
                                       double *cpu)
{
    hs_whatif w = {0};
    w.arena = hs_arena_new(0);
    hs_whatif_options o = {0};
    hs_error err;
    hs_error_clear(&err);
    int64_t t0 = hs_now_ns();
    double c0 = cpu_seconds();
    hs__whatif_shared sh;
    hs_status st = hs__whatif_shared_init(m, NULL, &o, &sh, &err);
    if (st == HS_OK)
        st = hs__whatif_sharding(m, &sh, &o, &w, &err);
    hs__whatif_shared_free(&sh);
    if (seconds)
        *seconds = (double)(hs_now_ns() - t0) * 1e-9;
    if (cpu)
        *cpu = cpu_seconds() - c0;
    if (st != HS_OK)
        fail_msg("sharding what-if: %s", err.message);
    hs_arena_free(w.arena);
    return w.sharding;
}

static hs_whatif_sharding whatif(const hs_module *m, double *seconds)
{
    return whatif_timed(m, seconds, NULL);
}

static bool in(int64_t v, const int64_t *set, int n)
{
    for (int k = 0; k < n; k++)
        if (set[k] == v)
            return true;
    return false;
}

/* ---- the real dumps -------------------------------------------------------- */

/* What the checks of one real dump need: the devices its name says
 * ("..._16x8.hlo": 16 x 8) and the dimensions of the model it is, from the
 * published configs (Mixtral 8x7B: hidden 4096, FFN 14336, vocabulary
 * 32000, 32 heads of 128, 8 KV heads, 8 experts; Llama 3.1 70B: hidden
 * 8192, FFN 28672, vocabulary 128256, 64 heads of 128, 8 KV heads, 80
 * layers). Every dimension a float parameter's sharding splits must be,
 * globally, one of these. */
typedef struct real_dump {
    const char *file;
    const int64_t *dims;
    int n_dims;
} real_dump;

static const int64_t mixtral_dims[] = {4096, 14336, 32000, 32, 128, 8};
static const int64_t llama_dims[] = {8192, 28672, 128256, 64, 128, 8, 80};
static const real_dump real_dumps[] = {
    {"hlo_mixtral_8x7b_bf16_1x8.hlo", mixtral_dims, 6},
    {"hlo_llama31_70b_fp8_16x8.hlo", llama_dims, 7},
};

static int64_t devices_in_name(const char *file)
{
    const char *x = strrchr(file, 'x');
    const char *u = strrchr(file, '_');
    long a, b;
    if (!x || !u || sscanf(u + 1, "%ldx%ld", &a, &b) != 2)
        fail_msg("%s does not say AxB devices", file);
    return (int64_t)a * b;
}

typedef struct seen_forms {
    int replicated, tiled, iota_transposed, last_tile_dim_replicate;
} seen_forms;

static bool transposed(const hs_sharding *s)
{
    for (int k = 0; k < s->n_iota_dims; k++)
        if (s->iota_perm[k] != k)
            return true;
    return false;
}

/* One annotated instruction of a real dump: its sharding reads, its
 * per-device shape is the one written (the dump is partitioned), and the
 * global dims it names are the model's. */
static void check_real(const real_dump *d, const hs_instruction *i,
                       hs_arena *a, seen_forms *seen, int64_t *devices)
{
    hs_sharding s;
    hs_error err;
    hs_error_clear(&err);
    if (hs_instruction_sharding(i, a, &s, &err) != HS_OK)
        fail_msg("%s: %s: %s", d->file, err.instruction, err.message);
    seen->replicated += s.kind == HS_SHARDING_REPLICATED;
    seen->tiled += s.kind == HS_SHARDING_TILED;
    seen->iota_transposed += s.kind == HS_SHARDING_TILED && transposed(&s);
    seen->last_tile_dim_replicate +=
        s.n_subgroup_dims == 1 && s.subgroup[0] == HS_SHARDING_REPLICATED;
    int64_t n = hs_sharding_device_count(&s);
    *devices = n > *devices ? n : *devices;

    hs_shape local, global, back;
    if (hs_instruction_sharded_shapes(i, true, a, &local, &global, &err) !=
        HS_OK)
        fail_msg("%s: %s: %s", d->file, err.instruction, err.message);
    assert_true(hs_shape_compatible(&local, &i->shape));
    assert_int_equal(hs_sharding_device_shape(&s, &global, a, &back, &err),
                     HS_OK);
    assert_true(hs_shape_compatible(&back, &i->shape));
    if (s.kind != HS_SHARDING_TILED || !hs_dtype_is_float(i->shape.dtype))
        return;
    for (int k = 0; k < hs_sharding_data_rank(&s); k++)
        if (s.tile_dims[k] > 1 && !in(global.dims[k], d->dims, d->n_dims))
            fail_msg("%s: %s {%s}: global dimension %d is %lld, not one of "
                     "the model's", d->file, i->name, i->sharding, k,
                     (long long)global.dims[k]);
}

static void reads_every_sharding_of_the_real_dumps(void **state)
{
    (void)state;
    seen_forms seen = {0};
    for (size_t f = 0; f < sizeof real_dumps / sizeof real_dumps[0]; f++) {
        const real_dump *d = &real_dumps[f];
        char path[512];
        snprintf(path, sizeof path, "%s/%s", REAL_DIR, d->file);
        char *text;
        hs_module *m = parse_file(path, &text);
        assert_true(hs_module_is_partitioned(m));
        hs_arena *a = hs_arena_new(0);
        int64_t annotated = 0, devices = 0;
        for (int c = 0; c < m->n_comps; c++)
            for (int k = 0; k < m->comps[c]->n_instrs; k++) {
                const hs_instruction *i = m->comps[c]->instrs[k];
                if (!i->sharding)
                    continue;
                check_real(d, i, a, &seen, &devices);
                annotated++;
            }
        assert_int_equal(annotated, count(text, "sharding={"));
        assert_int_equal(devices, devices_in_name(d->file));
        hs_arena_free(a);
        hs_module_free(m);
        free(text);
    }
    /* The forms XLA wrote there, each read at least once. */
    assert_true(seen.replicated > 0);
    assert_true(seen.tiled > 0);
    assert_true(seen.iota_transposed > 0);
    assert_true(seen.last_tile_dim_replicate > 0);
}

/* The dumps under ../shared with no annotation (XLA's samples, the
 * compile stress test): the what-if says there is nothing to apply, and
 * the graph shows no per-device size. */
static void dumps_without_shardings_say_so(void **state)
{
    (void)state;
    const char *dirs[] = {REAL_DIR, HS_SAMPLES_DIR};
    int modules = 0;
    for (int d = 0; d < 2; d++) {
        DIR *dir = opendir(dirs[d]);
        if (!dir)
            fail_msg("cannot open %s", dirs[d]);
        struct dirent *e;
        while ((e = readdir(dir))) {
            size_t n = strlen(e->d_name);
            if (n < 5 || strcmp(e->d_name + n - 4, ".hlo") != 0)
                continue;
            char path[768];
            snprintf(path, sizeof path, "%s/%s", dirs[d], e->d_name);
            size_t len;
            char *text = read_text(path, &len);
            if (strstr(text, "sharding={")) {
                free(text);
                continue;
            }
            hs_module **mods;
            hs_error err;
            int k = hs_hlo_parse_many(text, len, &mods, &err);
            if (k < 0)
                fail_msg("%s: %s", path, err.message);
            for (int j = 0; j < k; j++) {
                hs_whatif_sharding s = whatif(mods[j], NULL);
                assert_false(s.analysed);
                assert_non_null(strstr(s.reason, "no instruction carries"));
                hs_module_free(mods[j]);
                modules++;
            }
            free(mods);
            free(text);
        }
        closedir(dir);
    }
    assert_true(modules >= 5);
}

/* ---- tile assignments ------------------------------------------------------ */

/* numpy's np.arange(n).reshape(dims).transpose(perm).ravel(), written by
 * /usr/bin/python3 into list; false when numpy cannot be run. */
static bool numpy_iota(const char *dims, const char *perm, int64_t *list,
                       int max, int *n)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd,
             "/usr/bin/python3 -c 'import numpy as np; d=(%s); "
             "print(*np.arange(np.prod(d)).reshape(d).transpose((%s)).ravel())'"
             " 2>/dev/null",
             dims, perm);
    FILE *p = popen(cmd, "r");
    if (!p)
        return false;
    *n = 0;
    long long v;
    while (*n < max && fscanf(p, "%lld", &v) == 1)
        list[(*n)++] = v;
    return pclose(p) == 0 && *n > 0;
}

static void iota_tile_assignments_are_numpy_transpositions(void **state)
{
    (void)state;
    static const struct {
        const char *tiles, *dims, *perm;
    } cases[] = {
        {"[4,2]", "8,", "0,"},
        {"[4,2]", "2,4", "1,0"},
        {"[2,2,2]", "2,2,2", "2,0,1"},
        {"[64,1,2]", "2,64", "1,0"},
        {"[3,1,4]", "3,4", "1,0"},
    };
    hs_arena *a = hs_arena_new(0);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int64_t list[256];
        int n;
        if (!numpy_iota(cases[c].dims, cases[c].perm, list, 256, &n))
            skip();
        char iota[128], explicit_text[2048];
        snprintf(iota, sizeof iota, "devices=%s<=[%s]T(%s)", cases[c].tiles,
                 cases[c].dims, cases[c].perm);
        /* "8," is numpy's one-tuple; XLA writes <=[8] and no T(). */
        char *comma = strstr(iota, ",]");
        if (comma)
            snprintf(comma, sizeof iota - (size_t)(comma - iota), "]");
        size_t pos = (size_t)snprintf(explicit_text, sizeof explicit_text,
                                      "devices=%s", cases[c].tiles);
        for (int k = 0; k < n; k++)
            pos += (size_t)snprintf(explicit_text + pos,
                                    sizeof explicit_text - pos, "%s%lld",
                                    k ? "," : "", (long long)list[k]);
        hs_sharding s = parsed(a, iota), e = parsed(a, explicit_text);
        assert_int_equal(s.n_tiles, n);
        for (int k = 0; k < n; k++)
            if (hs_sharding_tile_device(&s, k) != list[k])
                fail_msg("%s: tile %d on device %lld, numpy says %lld", iota,
                         k, (long long)hs_sharding_tile_device(&s, k),
                         (long long)list[k]);
        assert_true(hs_sharding_equal(&s, &e));
        assert_int_equal(hs_sharding_device_count(&s), n);
    }
    /* A list that is not a transposition of the iota is another
     * assignment. */
    hs_sharding s = parsed(a, "devices=[2,2]<=[4]");
    hs_sharding e = parsed(a, "devices=[2,2]0,2,1,3");
    assert_false(hs_sharding_equal(&s, &e));
    hs_arena_free(a);
}

/* ---- per-device shapes ----------------------------------------------------- */

static void assert_device_shape(hs_arena *a, const char *sharding,
                                const char *global, const char *expected)
{
    char text[512];
    snprintf(text, sizeof text,
             "HloModule t\nENTRY e {\n  ROOT p = %s parameter(0), "
             "sharding={%s}\n}\n",
             global, sharding);
    hs_module *m = parse(text);
    const hs_instruction *p = m->entry->root;
    hs_shape local, whole;
    hs_error err;
    hs_error_clear(&err);
    if (hs_instruction_sharded_shapes(p, false, a, &local, &whole, &err) !=
        HS_OK)
        fail_msg("{%s} on %s: %s", sharding, global, err.message);
    char got[256];
    hs_shape_print(&local, false, got, sizeof got);
    if (strcmp(got, expected) != 0)
        fail_msg("{%s} on %s: per device %s, expected %s", sharding, global,
                 got, expected);
    assert_true(hs_shape_compatible(&whole, &p->shape));
    hs_module_free(m);
}

static void per_device_shape_is_ceil_of_dim_over_tiles(void **state)
{
    (void)state;
    hs_arena *a = hs_arena_new(0);
    assert_device_shape(a, "devices=[2,1]<=[2]", "f32[8,16]", "f32[4,16]");
    assert_device_shape(a, "devices=[2,1]0,1", "f32[5,3]", "f32[3,3]");
    assert_device_shape(a, "devices=[1,4]<=[4]", "bf16[2,6]", "bf16[2,2]");
    assert_device_shape(a, "devices=[2,2,2]<=[8] last_tile_dims={manual}",
                        "f32[5,3]", "f32[3,2]");
    assert_device_shape(a, "devices=[2,1,2]<=[2,2]T(1,0) "
                           "last_tile_dim_replicate",
                        "f32[6,7]", "f32[3,7]");
    assert_device_shape(a, "devices=[2,1,2,2]<=[8] last_tile_dims={manual, "
                           "replicated}",
                        "f32[6,7]", "f32[3,7]");
    assert_device_shape(a, "devices=[2]<=[2] last_tile_dim_replicate",
                        "f32[]", "f32[]");
    assert_device_shape(a, "devices=[2,2]<=[4]", "f32[<=9,4]",
                        "f32[<=5,2]");
    /* An unbounded dimension ('?') has no size to split. */
    hs_sharding two = parsed(a, "devices=[2,2]<=[4]");
    hs_shape unbounded = hs_shape_make(HS_F32, 2, (int64_t[]){-1, 6}), out;
    unbounded.dynamic_mask = 1;
    assert_int_equal(hs_sharding_device_shape(&two, &unbounded, a, &out, NULL),
                     HS_OK);
    assert_int_equal(out.dims[0], -1);
    assert_int_equal(out.dims[1], 3);
    assert_device_shape(a, "replicated", "f32[8,16]", "f32[8,16]");
    assert_device_shape(a, "maximal device=1", "f32[8,16]", "f32[8,16]");
    assert_device_shape(a, "manual", "f32[8,16]", "f32[8,16]");
    assert_device_shape(a, "unknown shard_as 1", "f32[8]", "f32[8]");
    assert_device_shape(a, "devices=[4]<=[4] metadata={op_name=\"a{b}\"}",
                        "f32[8]", "f32[2]");
    /* A tuple sharding lists its leaves, nested tuples flattened, with
     * the index comments XLA writes every fifth element. */
    assert_device_shape(a,
                        "{replicated}, {devices=[2,1]<=[2]}, {maximal "
                        "device=0}, {devices=[1,2]<=[2]}, {manual}, "
                        "/*index=5*/{devices=[4]<=[4]}",
                        "(f32[2], (f32[8,2], s32[]), f32[3,5], f32[4], "
                        "f32[9])",
                        "(f32[2], (f32[4,2], s32[]), f32[3,3], f32[4], "
                        "f32[3])");
    assert_device_shape(a, "devices=[2]<=[2]", "(f32[4], f32[6])",
                        "(f32[2], f32[3])");
    assert_device_shape(a, "", "()", "()");
    hs_arena_free(a);
}

/* ---- errors say where ------------------------------------------------------ */

static void malformed_shardings_name_instruction_and_column(void **state)
{
    (void)state;
    static const struct {
        const char *sharding, *shape;
        const char *at; /* where the error is (NULL: the end) */
        hs_status status;
        const char *says;
    } cases[] = {
        {"devices=[2,1]<=[3]", "f32[4,4]", "[3]", HS_ERR_PARSE, "iota"},
        {"devices=[2,1]0,1,2", "f32[4,4]", "0,1,2", HS_ERR_PARSE, "tiles"},
        {"devices=[4096,4096]0,1", "f32[4,4]", "0,1", HS_ERR_PARSE,
         "fewer devices listed"},
        {"devices=[2,2]<=[2,2]T(0,0)", "f32[4,4]", "0)", HS_ERR_PARSE,
         "permutation"},
        {"devices=[2,0]<=[2]", "f32[4,4]", "0]", HS_ERR_PARSE, "dimension"},
        {"maximal device=", "f32[4]", NULL, HS_ERR_PARSE, "device number"},
        {"maximal device=99999999999", "f32[4]", "9999",
         HS_ERR_PARSE, "beyond"},
        {"devices=[2]0,16777216", "f32[4]", "16777216", HS_ERR_PARSE,
         "beyond"},
        {"devices=[2,1]<=[2] bogus", "f32[4,4]", "bogus", HS_ERR_PARSE,
         "bogus"},
        {"sharded", "f32[4]", "sharded", HS_ERR_PARSE, "replicated"},
        {"{replicated}, {{manual}}", "(f32[4], f32[4])", "{manual}}",
         HS_ERR_PARSE, "nested"},
        {"devices=[2]<=[2] last_tile_dims={bogus}", "f32[4]", "bogus}",
         HS_ERR_PARSE, "last_tile_dims"},
        {"devices=[2]<=[2]", "f32[4,4]", NULL, HS_ERR_SHAPE,
         "tiles 1 dimension but f32[4,4] has 2"},
        {"{replicated}", "(f32[4], f32[4])", NULL, HS_ERR_SHAPE,
         "has 2 leaves"},
        {"{replicated}, {replicated}", "f32[4]", NULL, HS_ERR_SHAPE,
         "tuple sharding"},
    };
    hs_arena *a = hs_arena_new(0);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char text[512];
        snprintf(text, sizeof text,
                 "HloModule t\nENTRY e {\n  ROOT weights.7 = %s parameter(0), "
                 "sharding={%s}\n}\n",
                 cases[c].shape, cases[c].sharding);
        hs_module *m = parse(text);
        hs_shape local, global;
        hs_error err;
        hs_error_clear(&err);
        hs_status st = hs_instruction_sharded_shapes(
            m->entry->root, false, a, &local, &global, &err);
        if (st != cases[c].status || !strstr(err.message, cases[c].says))
            fail_msg("{%s}: %s \"%s\", expected %s saying \"%s\"",
                     cases[c].sharding, hs_status_name(st), err.message,
                     hs_status_name(cases[c].status), cases[c].says);
        assert_string_equal(err.instruction, "weights.7");
        if (cases[c].status == HS_ERR_PARSE) {
            int column = cases[c].at
                             ? (int)(strstr(cases[c].sharding, cases[c].at) -
                                     cases[c].sharding) + 1
                             : (int)strlen(cases[c].sharding) + 1;
            if (err.column != column)
                fail_msg("{%s}: column %d, expected %d (%s)",
                         cases[c].sharding, err.column, column, err.message);
        }
        hs_module_free(m);
    }
    hs_arena_free(a);
}

/* Every prefix of every form, and every one-character change of it,
 * reads or fails with a column inside the text: never past it (ASan
 * watches the sanitizer build). */
static void cut_and_changed_shardings_fail_cleanly(void **state)
{
    (void)state;
    static const char *const forms[] = {
        "devices=[64,1,1,1,2]<=[2,64]T(1,0) last_tile_dim_replicate",
        "devices=[2,2,2]0,1,2,3,4,5,6,7 last_tile_dims={manual, replicated}",
        "{replicated}, {maximal device=1}, /*index=2*/{devices=[2]0,1 "
        "shard_as 3 metadata={op_name=\"x}\\\"{\"}}",
    };
    static const char changes[] = "{}[](),=<>T/*\" 0-9x";
    hs_arena *a = hs_arena_new(0);
    int read = 0, refused = 0;
    for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++) {
        size_t n = strlen(forms[f]);
        char text[256];
        for (size_t cut = 0; cut <= n; cut++)
            for (size_t c = 0; c <= sizeof changes - 1; c++) {
                memcpy(text, forms[f], n + 1);
                if (c < sizeof changes - 1 && cut < n)
                    text[cut] = changes[c]; /* changed at cut */
                else
                    text[cut] = '\0'; /* cut there */
                hs_sharding s;
                hs_error err;
                hs_error_clear(&err);
                if (hs_sharding_parse(text, a, &s, &err) == HS_OK) {
                    read++;
                    continue;
                }
                refused++;
                if (err.column < 1 || err.column > (int)strlen(text) + 1)
                    fail_msg("{%s}: column %d outside the text", text,
                             err.column);
            }
    }
    assert_true(read > 0 && refused > 0);
    hs_arena_free(a);
}

/* ---- the what-if ----------------------------------------------------------- */

static const char two_way[] =
    "HloModule two_way\n"
    "ENTRY e {\n"
    "  x = f32[8,16] parameter(0), sharding={devices=[2,1]<=[2]}\n"
    "  y = f32[8,16] parameter(1), sharding={devices=[2,1]0,1}\n"
    "  s = f32[8,16] add(x, y)\n"
    "  t = f32[8,16] tanh(s)\n"
    "  ROOT m = f32[8,16] multiply(t, x)\n"
    "}\n";

static void two_way_tiling_halves_per_device_bytes(void **state)
{
    (void)state;
    hs_module *m = parse(two_way);
    assert_false(hs_module_is_partitioned(m));
    hs_whatif_sharding s = whatif(m, NULL);
    assert_true(s.analysed);
    assert_int_equal(s.devices, 2);
    assert_int_equal(s.annotated, 2);
    /* Every value is split two ways (the compile fuses the element-wise
     * ones, and the fusion takes its operands' tiling), so each device
     * holds half of every buffer. */
    assert_true(s.global_peak > 0);
    assert_true(s.global_peak == compiled_peak(m));
    assert_true(s.per_device_peak * 2 == s.global_peak);
    assert_non_null(strstr(s.note, "no collective is inserted"));
    assert_non_null(strstr(s.note, "tiled operand ("));
    hs_module_free(m);
}

static void unannotated_values_keep_their_global_shape(void **state)
{
    (void)state;
    hs_module *m = parse(
        "HloModule keep\n"
        "ENTRY e {\n"
        "  x = f32[8,16] parameter(0), sharding={devices=[2,1]<=[2]}\n"
        "  w = f32[16,64] parameter(1)\n"
        "  ROOT d = f32[8,64] dot(x, w), lhs_contracting_dims={1}, "
        "rhs_contracting_dims={0}\n"
        "}\n");
    hs_whatif_sharding s = whatif(m, NULL);
    assert_true(s.analysed);
    /* Only x's 512 bytes were split: half of them leave the peak. */
    int64_t x_bytes = hs_shape_total_bytes(&m->entry->params[0]->shape);
    assert_true(s.global_peak == compiled_peak(m));
    assert_true(s.per_device_peak == s.global_peak - (double)x_bytes / 2);
    assert_non_null(strstr(s.note, "keep their global shape"));
    hs_module_free(m);

    m = parse("HloModule none\nENTRY e {\n  ROOT p = f32[4] parameter(0)\n}\n");
    s = whatif(m, NULL);
    assert_false(s.analysed);
    assert_non_null(strstr(s.reason, "no instruction carries a sharding"));
    hs_module_free(m);
}

static void malformed_sharding_is_a_reason_not_a_failure(void **state)
{
    (void)state;
    /* An unknown device stops every section (hs_whatif.h); a bad
     * annotation only this one. */
    hs_module *two = parse(two_way);
    hs_whatif w = {0};
    w.arena = hs_arena_new(0);
    hs_whatif_options o = {.device = "no-such-device"};
    hs_error err;
    hs__whatif_shared sh;
    assert_int_equal(hs__whatif_shared_init(two, NULL, &o, &sh, &err),
                     HS_ERR_INVALID);
    assert_non_null(strstr(err.message, "no-such-device"));
    hs_arena_free(w.arena);
    hs_module_free(two);

    hs_module *m = parse(
        "HloModule bad\nENTRY e {\n"
        "  ROOT q.3 = f32[4,4] parameter(0), sharding={devices=[2]<=[2]}\n"
        "}\n");
    hs_whatif_sharding s = whatif(m, NULL);
    assert_false(s.analysed);
    assert_non_null(strstr(s.reason, "q.3"));
    assert_non_null(strstr(s.reason, "f32[4,4]"));
    hs_module_free(m);
}

static const char partitioned_text[] =
    "HloModule partitioned\n"
    "sum {\n"
    "  a = f32[] parameter(0)\n"
    "  b = f32[] parameter(1)\n"
    "  ROOT c = f32[] add(a, b)\n"
    "}\n"
    "ENTRY e {\n"
    "  p = f32[4,16] parameter(0), sharding={devices=[2,1]<=[2]}\n"
    "  q = f32[4,16] parameter(1), sharding={replicated}\n"
    "  s = f32[4,16] add(p, q)\n"
    "  ROOT r = f32[4,16] all-reduce(s), replica_groups={{0,1}}, "
    "to_apply=sum\n"
    "}\n";

static void partitioned_module_is_taken_as_written(void **state)
{
    (void)state;
    hs_module *m = parse(partitioned_text);
    assert_true(hs_module_is_partitioned(m));
    hs_whatif_sharding s = whatif(m, NULL);
    assert_true(s.analysed);
    /* p is a device's half: its global value is twice as large; nothing
     * else changes. */
    int64_t p_bytes = hs_shape_total_bytes(&m->entry->params[0]->shape);
    assert_true(s.per_device_peak == compiled_peak(m));
    assert_true(s.global_peak == s.per_device_peak + (double)p_bytes);
    assert_non_null(strstr(s.note, "already partitioned"));
    hs_module_free(m);

    /* A collective beside the custom-calls the partitioner consumes (a
     * shard_map's psum before partitioning) is not a partitioned module:
     * its shapes are global, and x's tiling reaches n through the
     * Sharding custom-call. */
    m = parse("HloModule before\n"
              "sum {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
              "  ROOT c = f32[] add(a, b)\n}\n"
              "ENTRY e {\n"
              "  x = f32[8,16] parameter(0), sharding={devices=[2,1]<=[2]}\n"
              "  c = f32[8,16] custom-call(x), custom_call_target=\"Sharding\","
              " sharding={devices=[2,1]<=[2]}\n"
              "  n = f32[8,16] negate(c)\n"
              "  ROOT r = f32[8,16] all-reduce(n), replica_groups={}, "
              "to_apply=sum\n"
              "}\n");
    assert_false(hs_module_is_partitioned(m));
    s = whatif(m, NULL);
    assert_true(s.analysed);
    assert_true(s.per_device_peak < s.global_peak);
    assert_null(strstr(s.note, "already partitioned"));
    hs_module_free(m);
}

/* The real partitioned dumps: the per-device peak is the one the compile
 * reports (the annotations survive the pipeline on the entry
 * parameters), the global one adds what the annotated arguments lose by
 * being split, and the analysis is timed (docs/BENCHMARKS.md). */
static void real_dump_peaks(const char *path, int64_t devices)
{
    char *text;
    hs_module *m = parse_file(path, &text);
    double seconds, cpu;
    hs_whatif_sharding s = whatif_timed(m, &seconds, &cpu);
    assert_true(s.analysed);
    assert_int_equal(s.devices, devices);
    assert_int_equal(s.annotated, count(text, "sharding={"));
    assert_true(s.per_device_peak == compiled_peak(m));
    /* Arguments live for the whole program (bar donated ones), so the
     * global peak grows by at most what splitting them saved. */
    hs_arena *a = hs_arena_new(0);
    double saved = 0;
    for (int k = 0; k < m->entry->n_params; k++) {
        const hs_instruction *p = m->entry->params[k];
        hs_shape local, global;
        hs_error err;
        if (p->sharding && hs_instruction_sharded_shapes(p, true, a, &local,
                                                         &global, &err) ==
                               HS_OK)
            saved += (double)(hs_shape_total_bytes(&global) -
                              hs_shape_total_bytes(&local));
    }
    hs_arena_free(a);
    assert_true(saved > 0);
    assert_true(s.global_peak > s.per_device_peak);
    assert_true(s.global_peak <= s.per_device_peak + saved);
    char g[32], d[32];
    print_message("sharding what-if on %s: %.3f s (CPU %.3f s), %d "
                  "devices, %lld "
                  "annotated, per-device peak %s (%.0f), global peak %s "
                  "(%.0f)\n",
                  strrchr(path, '/') + 1, seconds, cpu, s.devices,
                  (long long)s.annotated,
                  hs_format_bytes((int64_t)s.per_device_peak, d, sizeof d),
                  s.per_device_peak,
                  hs_format_bytes((int64_t)s.global_peak, g, sizeof g),
                  s.global_peak);
    hs_module_free(m);
    free(text);
}

static void mixtral_per_device_peak_vs_global(void **state)
{
    (void)state;
    real_dump_peaks(MIXTRAL, devices_in_name(MIXTRAL));
}

static void llama_70b_per_device_peak_vs_global(void **state)
{
    (void)state;
    real_dump_peaks(LLAMA, devices_in_name(LLAMA));
}

/* ---- the graph ------------------------------------------------------------- */

static json_t *node_named(json_t *graph, const char *name)
{
    size_t k;
    json_t *n;
    json_array_foreach(json_object_get(graph, "nodes"), k, n)
        if (strcmp(json_string_value(json_object_get(n, "name")), name) == 0)
            return n;
    fail_msg("no node %s", name);
    return NULL;
}

static json_t *graph_of(const hs_module *m)
{
    char *text = NULL;
    size_t len = 0;
    hs_error err;
    if (hs_render_graph_json(m, NULL, &text, &len, &err) != HS_OK)
        fail_msg("graph: %s", err.message);
    json_error_t jerr;
    json_t *j = json_loadb(text, len, 0, &jerr);
    free(text);
    assert_non_null(j);
    return j;
}

static int64_t field(json_t *node, const char *key)
{
    json_t *v = json_object_get(node, key);
    if (!json_is_integer(v))
        fail_msg("%s is not an integer", key);
    return json_integer_value(v);
}

static void graph_shows_per_device_beside_global_bytes(void **state)
{
    (void)state;
    hs_module *m = parse(two_way);
    json_t *g = graph_of(m);
    json_t *x = node_named(g, "x");
    assert_int_equal(field(x, "per_device_bytes") * 2, field(x, "bytes"));
    assert_int_equal(field(x, "global_bytes"), field(x, "bytes"));
    /* The graph shows what is written: s has no annotation. */
    assert_true(json_is_null(json_object_get(node_named(g, "s"),
                                             "per_device_bytes")));
    json_decref(g);
    char *dot = NULL;
    hs_error err;
    assert_int_equal(hs_render_graph_dot(m, NULL, &dot, NULL, &err), HS_OK);
    assert_contains(dot, "per device 256 B of 512 B");
    assert_contains(dot, "sharding: devices=[2,1]<=[2]");
    free(dot);
    hs_module_free(m);

    /* Partitioned: the shape written is the device's, the global one
     * twice as large. */
    m = parse(partitioned_text);
    g = graph_of(m);
    json_t *p = node_named(g, "p");
    assert_int_equal(field(p, "per_device_bytes"), field(p, "bytes"));
    assert_int_equal(field(p, "global_bytes"), 2 * field(p, "bytes"));
    json_t *q = node_named(g, "q");
    assert_int_equal(field(q, "global_bytes"), field(q, "bytes"));
    json_decref(g);
    hs_module_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reads_every_sharding_of_the_real_dumps),
        cmocka_unit_test(dumps_without_shardings_say_so),
        cmocka_unit_test(iota_tile_assignments_are_numpy_transpositions),
        cmocka_unit_test(per_device_shape_is_ceil_of_dim_over_tiles),
        cmocka_unit_test(malformed_shardings_name_instruction_and_column),
        cmocka_unit_test(cut_and_changed_shardings_fail_cleanly),
        cmocka_unit_test(two_way_tiling_halves_per_device_bytes),
        cmocka_unit_test(unannotated_values_keep_their_global_shape),
        cmocka_unit_test(malformed_sharding_is_a_reason_not_a_failure),
        cmocka_unit_test(partitioned_module_is_taken_as_written),
        cmocka_unit_test(mixtral_per_device_peak_vs_global),
        cmocka_unit_test(llama_70b_per_device_peak_vs_global),
        cmocka_unit_test(graph_shows_per_device_beside_global_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
