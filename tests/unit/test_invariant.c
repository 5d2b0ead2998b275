/* test_invariant.c - HS_ASSERT (ir/invariant.h): a failed assertion in a
 * debug build stops the process with file:line and the condition; under
 * NDEBUG it is not even evaluated. Both expansions are compiled here,
 * whatever the build type, by including the header twice around NDEBUG. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#undef NDEBUG
#include "ir/invariant.h"

static void debug_assert(int v) { HS_ASSERT(v == 42); }
static const int debug_assert_line = __LINE__ - 1;

#define NDEBUG 1
#undef HS_IR_INVARIANT_H
#undef HS_ASSERT
#include "ir/invariant.h"

static int evaluations;
static int count(void) { return ++evaluations; }
static void release_assert(void) { HS_ASSERT(count() == 0); }

/* Runs debug_assert(v) in a child; returns its wait status and what it
 * wrote to stderr. */
static int run_child(int v, char *err, size_t size)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        signal(SIGABRT, SIG_DFL); /* cmocka's handler would catch it */
        debug_assert(v);
        _exit(0);
    }
    close(fds[1]);
    size_t n = 0;
    ssize_t r;
    while (n + 1 < size && (r = read(fds[0], err + n, size - 1 - n)) > 0)
        n += (size_t)r;
    err[n] = '\0';
    close(fds[0]);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return status;
}

static void failed_assertion_names_file_line_and_condition(void **state)
{
    (void)state;
    char err[512];
    int status = run_child(7, err, sizeof err);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGABRT);
    char want[256];
    snprintf(want, sizeof want,
             "hloscope: internal error: %s:%d: assertion 'v == 42' failed",
             __FILE__, debug_assert_line);
    assert_non_null(strstr(err, want));
}

static void holding_assertion_lets_the_program_go_on(void **state)
{
    (void)state;
    char err[512];
    int status = run_child(42, err, sizeof err);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_string_equal(err, "");
}

static void ndebug_assertion_is_not_evaluated(void **state)
{
    (void)state;
    evaluations = 0;
    release_assert(); /* would fail if it ran */
    assert_int_equal(evaluations, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(failed_assertion_names_file_line_and_condition),
        cmocka_unit_test(holding_assertion_lets_the_program_go_on),
        cmocka_unit_test(ndebug_assertion_is_not_evaluated),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
