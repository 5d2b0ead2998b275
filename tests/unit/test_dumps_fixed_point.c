/* test_dumps_fixed_point.c - every module of every file in
 * ../shared/hlo-samples and ../shared/hlo-real (XLA's own files, found by
 * listing the folders, so a file added there is covered) parses, compiles
 * and prints back as a fixed point at both stages: print(parse(print(m)))
 * == print(m) for the traced module and for the optimized one, and the
 * re-parsed optimized module verifies. Issue 13's "done when". */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_file.h"
#include "hloscope/hs_hlo_text.h"
#include "hloscope/hs_program.h"

static const char *const k_dirs[] = {HS_SOURCE_DIR "/../shared/hlo-samples",
                                     HS_SOURCE_DIR "/../shared/hlo-real"};

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The .hlo files of dir, sorted; *n of them (malloc'ed names). */
static char **list_hlo(const char *dir, int *n)
{
    DIR *d = opendir(dir);
    if (!d)
        fail_msg("%s: cannot list (the shared HLO files sit next to the "
                 "worktree)", dir);
    char **names = NULL;
    *n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 4, ".hlo") != 0)
            continue;
        names = realloc(names, sizeof *names * (size_t)(*n + 1));
        assert_non_null(names);
        names[(*n)++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)*n, sizeof *names, by_name);
    return names;
}

static void assert_prints_back(const char *file, int module, const char *stage,
                               const hs_module *m)
{
    char *once = hs_hlo_print(m);
    assert_non_null(once);
    hs_error err;
    hs_error_clear(&err);
    hs_module *again = hs_hlo_parse(once, strlen(once), &err);
    if (!again)
        fail_msg("%s module %d, %s stage: the printed text does not parse: "
                 "line %d:%d: %s", file, module, stage, err.line, err.column,
                 err.message);
    if (hs_module_verify(again, &err) != HS_OK)
        fail_msg("%s module %d, %s stage: the re-parsed module does not "
                 "verify: %s", file, module, stage, err.message);
    char *twice = hs_hlo_print(again);
    assert_non_null(twice);
    if (strcmp(once, twice) != 0) {
        size_t k = 0;
        while (once[k] && once[k] == twice[k])
            k++;
        fail_msg("%s module %d, %s stage: not a fixed point at byte %zu:\n"
                 "--- first\n%.200s\n--- second\n%.200s", file, module, stage,
                 k, once + (k > 80 ? k - 80 : 0), twice + (k > 80 ? k - 80 : 0));
    }
    free(once);
    free(twice);
    hs_module_free(again);
}

static void every_shared_module_prints_back_at_both_stages(void **state)
{
    (void)state;
    int files = 0, modules = 0;
    for (size_t d = 0; d < sizeof k_dirs / sizeof k_dirs[0]; d++) {
        int n;
        char **names = list_hlo(k_dirs[d], &n);
        for (int f = 0; f < n; f++, files++) {
            char path[1024];
            snprintf(path, sizeof path, "%s/%s", k_dirs[d], names[f]);
            size_t len;
            hs_error err;
            char *text = hs_read_file(path, &len, &err);
            if (!text)
                fail_msg("%s: %s", path, err.message);
            hs_program_source src = {.kind = HS_SOURCE_HLO, .text = text, .len = len};
            int count = 1;
            for (int k = 0; k < count; k++, modules++) {
                hs_program_options o;
                hs_program_options_init(&o);
                o.module = k;
                hs_error_clear(&err);
                hs_program *p = hs_program_build(&src, &o, &err);
                if (!p)
                    fail_msg("%s module %d does not compile: line %d: %s",
                             names[f], k, err.line, err.message);
                count = p->n_modules;
                assert_prints_back(names[f], k, "traced", p->traced);
                assert_prints_back(names[f], k, "optimized", p->optimized);
                hs_program_free(p);
            }
            free(text);
            free(names[f]);
        }
        free(names);
    }
    /* Both folders were found and read. */
    assert_true(files >= 2);
    assert_true(modules > files);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_shared_module_prints_back_at_both_stages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
