/* test_render_layout.c - the layout service's processes: the server and
 * its workers are exec'd images of this program (never a fork of a process
 * where threads ran), layouts complete while this program's threads hold
 * locks and churn the allocator, a worker killed at its deadline or crashed
 * is reported and replaced, a dead server is restarted, a reused worker
 * draws the same bytes as a fresh one, and a server that cannot start is a
 * clear error. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hloscope/hs_render.h"
#include "render/layout_internal.h"
#include "render/render_internal.h"
#include "hlo_test_helpers.h"

/* ---- helpers ------------------------------------------------------------ */

static char *layout(const char *dot, int64_t timeout_ms)
{
    char *out = NULL;
    hs_error err;
    hs_status st = hs_render_layout(dot, "dot", "svg", timeout_ms, &out, NULL,
                                    &err);
    if (st != HS_OK)
        fail_msg("layout: %s: %s", hs_status_name(st), err.message);
    return out;
}

/* A graph that takes dot far longer than a millisecond. */
static char *large_dot(int nodes)
{
    hs_buf b = {0};
    hs__buf_puts(&b, "digraph G {\n");
    for (int k = 1; k < nodes; k++)
        hs__buf_printf(&b, "  n%d -> n%d; n%d -> n%d;\n", k / 2, k,
                        (k * 7919) % nodes, k);
    hs__buf_puts(&b, "}\n");
    return b.data;
}

/* /proc/<pid>/<what>, up to cap - 1 bytes (NULs kept); -1 when gone. */
static ssize_t proc_read(pid_t pid, const char *what, char *buf, size_t cap)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, what);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, cap - 1, f);
    fclose(f);
    buf[n] = '\0';
    return (ssize_t)n;
}

/* The process's name (comm) and state letter; false when it is gone. */
static bool proc_stat(pid_t pid, char *comm, size_t cap, char *state)
{
    char buf[512];
    if (proc_read(pid, "stat", buf, sizeof buf) < 0)
        return false;
    const char *lp = strchr(buf, '('), *rp = strrchr(buf, ')');
    if (!lp || !rp || rp < lp)
        return false;
    snprintf(comm, cap, "%.*s", (int)(rp - lp - 1), lp + 1);
    return sscanf(rp + 1, " %c", state) == 1;
}

static int threads_of(pid_t pid)
{
    char buf[4096];
    if (proc_read(pid, "status", buf, sizeof buf) < 0)
        return -1;
    const char *t = strstr(buf, "\nThreads:");
    return t ? atoi(t + 9) : -1;
}

static void exe_of(pid_t pid, char *buf, size_t cap)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
    ssize_t n = readlink(path, buf, cap - 1);
    assert_true(n > 0);
    buf[n] = '\0';
}

/* Pids of the live children of parent (from /proc), up to cap. */
static int children_of(pid_t parent, pid_t *pids, int cap)
{
    int n = 0;
    DIR *d = opendir("/proc");
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d)) && n < cap) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        char buf[512];
        if (proc_read((pid_t)atoi(e->d_name), "stat", buf, sizeof buf) < 0)
            continue;
        const char *rp = strrchr(buf, ')'); /* after "pid (comm)" */
        char state;
        int ppid;
        if (rp && sscanf(rp + 1, " %c %d", &state, &ppid) == 2 &&
            ppid == parent)
            pids[n++] = (pid_t)atoi(e->d_name);
    }
    closedir(d);
    return n;
}

/* Children of the server whose name is comm, waiting up to 20 s until
 * there are at least want of them and no other child; the count found. */
static int settle(const char *comm, int want, pid_t *pids, int cap)
{
    int n = 0;
    for (int tries = 0; tries < 2000; tries++) {
        pid_t kids[32];
        int k = children_of(hs__layout_server_pid(), kids, 32), match = 0;
        for (int j = 0; j < k; j++) {
            char name[32], state;
            if (proc_stat(kids[j], name, sizeof name, &state) &&
                strcmp(name, comm) == 0 && state != 'Z' && match < cap)
                pids[match++] = kids[j];
        }
        n = match;
        if (n >= want && k == n)
            return n;
        usleep(10000);
    }
    return n;
}

static void restart_server(void)
{
    hs_render_shutdown();
    hs_error err;
    if (hs_render_init(&err) != HS_OK)
        fail_msg("hs_render_init: %s", err.message);
}

/* ---- clean processes ----------------------------------------------------- */

/* A fork keeps its parent's command line; only an exec gives a process a
 * new one. So the command line shows that the server and every worker are
 * fresh images of this program, nothing of this process copied into them. */
static void server_and_workers_are_exec_d_images(void **state)
{
    (void)state;
    restart_server();
    free(layout("digraph { a -> b }", 20000));
    char self[PATH_MAX], exe[PATH_MAX], cmd[128];
    exe_of(getpid(), self, sizeof self);

    pid_t server = hs__layout_server_pid();
    assert_int_equal(proc_read(server, "cmdline", cmd, sizeof cmd),
                     sizeof "hloscope-layout\0server");
    assert_memory_equal(cmd, "hloscope-layout\0server", sizeof "hloscope-layout\0server");
    exe_of(server, exe, sizeof exe);
    assert_string_equal(exe, self);
    assert_int_equal(threads_of(server), 1);

    /* The spares, warm and idle; none of them a copy of the server. */
    pid_t kids[8];
    int n = settle("hs-layout-idle", HS_LAYOUT_SPARE, kids, 8);
    assert_true(n >= HS_LAYOUT_SPARE);
    for (int k = 0; k < n; k++) {
        assert_int_equal(proc_read(kids[k], "cmdline", cmd, sizeof cmd),
                         sizeof "hloscope-layout\0worker");
        assert_memory_equal(cmd, "hloscope-layout\0worker",
                            sizeof "hloscope-layout\0worker");
        exe_of(kids[k], exe, sizeof exe);
        assert_string_equal(exe, self);
    }
}

static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static atomic_bool stop_threads;

static void *hold_lock(void *p)
{
    (void)p;
    pthread_mutex_lock(&held);
    while (!atomic_load(&stop_threads))
        usleep(1000);
    pthread_mutex_unlock(&held);
    return NULL;
}

static void *churn_allocator(void *p)
{
    unsigned seed = (unsigned)(uintptr_t)p;
    while (!atomic_load(&stop_threads)) {
        size_t size = 1 + (size_t)rand_r(&seed) % (1 << 20);
        volatile char *b = malloc(size);
        if (b) {
            b[0] = 1;
            b[size - 1] = 1;
        }
        free((void *)b);
    }
    return NULL;
}

/* What hung the forked design: a lock held by a thread at the moment of a
 * fork stays held in the child forever. Here this process's threads hold a
 * mutex and live in the allocator while the service starts, again and
 * again; every start is ready at the first try and every layout completes,
 * because nothing is forked from this process. */
static void layouts_complete_while_threads_hold_locks(void **state)
{
    (void)state;
    atomic_store(&stop_threads, false);
    pthread_t t[3];
    assert_int_equal(pthread_create(&t[0], NULL, hold_lock, NULL), 0);
    for (int k = 1; k < 3; k++)
        assert_int_equal(pthread_create(&t[k], NULL, churn_allocator,
                                        (void *)(uintptr_t)k),
                         0);
    for (int round = 0; round < 10; round++) {
        int starts = hs__layout_server_starts();
        restart_server();
        assert_int_equal(hs__layout_server_starts(), starts + 1);
        char *svg = layout("digraph { a -> b }", 20000);
        assert_contains(svg, "<svg");
        free(svg);
    }
    atomic_store(&stop_threads, true);
    for (int k = 0; k < 3; k++)
        pthread_join(t[k], NULL);
}

/* ---- deadlines, crashes, restarts ------------------------------------------ */

static void timed_out_worker_is_killed_reaped_and_replaced(void **state)
{
    (void)state;
    restart_server();
    pid_t spares[8];
    assert_int_equal(settle("hs-layout-idle", HS_LAYOUT_SPARE, spares, 8),
                     HS_LAYOUT_SPARE);
    char *dot = large_dot(3000);
    char *out = NULL;
    hs_error err;
    assert_int_equal(hs_render_layout(dot, "dot", "svg", 300, &out, NULL,
                                      &err),
                     HS_ERR_CANCELLED);
    assert_null(out);
    assert_string_equal(err.message, "layout timed out after 300 ms");
    /* The server reported after reaping the killed worker: it is gone, not
     * a zombie, and a new spare takes its place. */
    pid_t kids[8];
    int n = settle("hs-layout-idle", HS_LAYOUT_SPARE, kids, 8);
    assert_int_equal(n, HS_LAYOUT_SPARE);
    int replaced = 0;
    for (int k = 0; k < n; k++)
        replaced += kids[k] != spares[0] && kids[k] != spares[1];
    assert_int_equal(replaced, 1);
    /* A deadline already past when the job is queued: nothing to kill. */
    assert_int_equal(hs_render_layout(dot, "dot", "svg", 1, &out, NULL, &err),
                     HS_ERR_CANCELLED);
    assert_string_equal(err.message, "layout timed out after 1 ms");
    /* This process's only child is the live server: nothing to reap. */
    int status;
    assert_int_equal(waitpid(-1, &status, WNOHANG), 0);
    /* Stopping the server reaps it too; the next layout starts another. */
    hs_render_shutdown();
    errno = 0;
    assert_int_equal(waitpid(-1, &status, WNOHANG), -1);
    assert_int_equal(errno, ECHILD);
    char *svg = layout("digraph { a -> b }", 20000);
    assert_contains(svg, "<svg");
    free(svg);
    free(dot);
}

typedef struct slow_arg {
    const char *dot;
    hs_status st;
    hs_error err;
} slow_arg;

static void *slow_layout(void *p)
{
    slow_arg *a = p;
    char *out = NULL;
    a->st = hs_render_layout(a->dot, "dot", "svg", 60000, &out, NULL, &a->err);
    free(out);
    return NULL;
}

static void crashed_worker_is_reported(void **state)
{
    (void)state;
    restart_server();
    char *dot = large_dot(3000);
    slow_arg a = {dot, HS_OK, {0}};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, slow_layout, &a), 0);
    /* The worker with the job names itself busy: crash it. */
    pid_t busy[8];
    int n = 0;
    for (int k = 0; k < 2000 && n == 0; k++) {
        pid_t kids[32];
        int m = children_of(hs__layout_server_pid(), kids, 32);
        for (int j = 0; j < m; j++) {
            char name[32], st;
            if (proc_stat(kids[j], name, sizeof name, &st) &&
                strcmp(name, "hs-layout-busy") == 0)
                busy[n++] = kids[j];
        }
        if (n == 0)
            usleep(5000);
    }
    assert_int_equal(n, 1);
    kill(busy[0], SIGSEGV);
    pthread_join(t, NULL);
    if (a.st != HS_ERR_RUNTIME)
        fail_msg("%s: %s", hs_status_name(a.st), a.err.message);
    assert_string_equal(a.err.message, "layout worker crashed (signal 11)");
    /* The next layout is served by a replacement. */
    free(layout("digraph { a -> b }", 20000));
    free(dot);
}

static void dead_server_is_restarted(void **state)
{
    (void)state;
    restart_server();
    pid_t server = hs__layout_server_pid();
    int starts = hs__layout_server_starts();
    assert_true(server > 0);
    kill(server, SIGKILL);
    char *svg = layout("digraph { a -> b }", 20000);
    assert_contains(svg, "<svg");
    free(svg);
    assert_int_equal(hs__layout_server_starts(), starts + 1);
    assert_true(hs__layout_server_pid() != server);
    /* the dead one was reaped */
    int status;
    assert_int_equal(waitpid(server, &status, WNOHANG), -1);
}

/* ---- the pool -------------------------------------------------------------- */

/* Graphviz orders clusters by the addresses of their interned names and
 * numbers anonymous graphs from a counter it never resets, so with its
 * defaults a worker that had drawn other graphs drew clusters in another
 * order and (Graphviz 2.43) titled an anonymous graph "%15" instead of
 * "%1". With the worker's arena and id counter, the same DOT gives the
 * same bytes in a fresh worker (HS_LAYOUT_WORKER_JOBS=1) and in one reused
 * for graph after graph, errors included. */
static void reused_worker_draws_the_same_bytes_as_a_fresh_one(void **state)
{
    (void)state;
    hs_buf b = {0};
    hs__buf_puts(&b, "digraph { compound=true;\n");
    for (int k = 0; k < 8; k++)
        hs__buf_printf(&b,
                       "  subgraph cluster_c%d { label=\"body %d\"; "
                       "a%d -> b%d -> c%d; a%d -> c%d }\n  c%d -> a%d;\n",
                       k, k, k, k, k, k, k, k, (k * 5 + 3) % 8);
    hs__buf_puts(&b, "}\n");
    setenv("HS_LAYOUT_WORKER_JOBS", "1", 1);
    restart_server();
    char *fresh = layout(b.data, 20000);
    unsetenv("HS_LAYOUT_WORKER_JOBS");
    restart_server();
    for (int k = 0; k < 8; k++) {
        char other[160];
        snprintf(other, sizeof other,
                 "digraph { subgraph cluster_x%d { p -> q%d } "
                 "subgraph cluster_y { q%d -> r } }",
                 k, k, k);
        free(layout(other, 20000));
        if (k % 3 == 1) {
            char *out = NULL;
            hs_error err;
            assert_int_equal(hs_render_layout("digraph { a -> ", "dot", "svg",
                                              20000, &out, NULL, &err),
                             HS_ERR_INVALID);
        }
        char *again = layout(b.data, 20000);
        assert_string_equal(again, fresh);
        free(again);
    }
    free(fresh);
    hs__buf_free(&b);
}

/* HS_LAYOUT_EXE names the executable to start instead of this one: one that
 * is not a layout process never says READY, and the caller is told. */
static void server_that_cannot_start_is_a_clear_error(void **state)
{
    (void)state;
    hs_render_shutdown();
    hs_error err;
    setenv("HS_LAYOUT_EXE", "/nonexistent/hloscope", 1);
    assert_int_equal(hs_render_init(&err), HS_ERR_RUNTIME);
    assert_string_equal(err.message, "cannot start the layout server: No such "
                                     "file or directory");
    setenv("HS_LAYOUT_EXE", "/bin/true", 1);
    assert_int_equal(hs_render_init(&err), HS_ERR_RUNTIME);
    assert_string_equal(err.message, "cannot start the layout server: not "
                                     "ready after 3 tries");
    unsetenv("HS_LAYOUT_EXE");
    int status;
    errno = 0;
    assert_int_equal(waitpid(-1, &status, WNOHANG), -1); /* all reaped */
    assert_int_equal(errno, ECHILD);
    free(layout("digraph { a -> b }", 20000));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(server_and_workers_are_exec_d_images),
        cmocka_unit_test(layouts_complete_while_threads_hold_locks),
        cmocka_unit_test(timed_out_worker_is_killed_reaped_and_replaced),
        cmocka_unit_test(crashed_worker_is_reported),
        cmocka_unit_test(dead_server_is_restarted),
        cmocka_unit_test(reused_worker_draws_the_same_bytes_as_a_fresh_one),
        cmocka_unit_test(server_that_cannot_start_is_a_clear_error),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    hs_render_shutdown();
    return failed;
}
