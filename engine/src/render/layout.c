/* layout.c - Graphviz layout in a worker process.
 *
 * libgvc keeps global state (it is not thread-safe) and some layouts take
 * unbounded time or crash on hostile input, so every layout runs in a
 * child forked for it: the child lays out the DOT text it inherited with
 * the address space, writes a framed result to a pipe and _exits; the
 * parent reads with poll() against a deadline, kills the child when the
 * deadline passes, and always reaps it. A crash costs one child, never the
 * server. libgvc is never called in the parent.
 *
 * Starting libgvc costs far more than a small layout (loading plugins,
 * text metrics: ~15 ms against ~0.3 ms), so the first call warms one
 * Graphviz context in this process - a fixed tiny graph through each
 * engine family, once, under pthread_once - and every child inherits it
 * ready to use. After the warm-up the parent never calls libgvc again;
 * the context is written once and then only handed to children, each of
 * which gets its own copy-on-write copy.
 *
 * fork() in a multithreaded process copies only the calling thread. The
 * child therefore first closes every inherited descriptor but its pipe,
 * then calls only what the layout needs (libgvc and malloc; with the warm
 * context no plugin is loaded). glibc makes malloc and stdio usable in the
 * child of a multithreaded fork; locks of other libraries held by other
 * threads at the time of the fork are not, so the child touches nothing
 * else. docs/RENDER.md measures the cost per layout. */
#include <errno.h>
#include <fcntl.h>
#include <gvc.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "render/render_internal.h"

/* The frame the child writes before its payload. */
enum { FRAME_MAGIC = 0x594c5348 /* "HSLY" */ };
typedef enum child_result {
    CHILD_OK = 0,
    CHILD_BAD_INPUT, /* DOT syntax error */
    CHILD_FAILED     /* layout or rendering failed */
} child_result;

typedef struct frame {
    uint32_t magic;
    uint32_t result;
    uint64_t len;
} frame;

static const char *const engines[] = {"dot", "neato", "nop", "nop2"};
static const char *const formats[] = {"svg", "xdot", "dot", "json", "plain"};

static bool listed(const char *s, const char *const *list, size_t n)
{
    for (size_t k = 0; s && k < n; k++)
        if (strcmp(s, list[k]) == 0)
            return true;
    return false;
}

static int64_t now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* ---- the warm context ---------------------------------------------------- */

static pthread_once_t warm_once = PTHREAD_ONCE_INIT;
static GVC_t *warm_gvc; /* written once by warm_up, then read-only */

static void warm_up(void)
{
    static const struct {
        const char *dot, *engine;
    } graphs[] = {
        {"digraph{a->b}", "dot"},
        {"digraph{a[pos=\"10,10!\",label=\"a\"]}", "nop2"},
    };
    agerrlevel_t level = agseterr(AGMAX); /* nothing to report here */
    GVC_t *gvc = gvContext();
    for (size_t k = 0; gvc && k < sizeof graphs / sizeof *graphs; k++) {
        Agraph_t *g = agmemread(graphs[k].dot);
        if (!g)
            continue;
        char *data = NULL;
        unsigned int len = 0;
        if (gvLayout(gvc, g, graphs[k].engine) == 0) {
            if (gvRenderData(gvc, g, "svg", &data, &len) == 0)
                gvFreeRenderData(data);
            gvFreeLayout(gvc, g);
        }
        agclose(g);
    }
    agseterr(level);
    warm_gvc = gvc;
}

/* ---- the child ---------------------------------------------------------- */

/* Graphviz reports errors through this hook; the child keeps the first. */
static char child_error[512];

static int capture_error(char *msg)
{
    size_t used = strlen(child_error);
    if (used == 0)
        snprintf(child_error, sizeof child_error, "%s", msg);
    return 0;
}

static bool write_all(int fd, const void *data, size_t n)
{
    const char *p = data;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

static void child_reply(int fd, child_result r, const char *data, size_t len)
{
    frame f = {FRAME_MAGIC, (uint32_t)r, (uint64_t)len};
    bool ok = write_all(fd, &f, sizeof f) && write_all(fd, data, len);
    _exit(ok ? 0 : 3);
}

/* Leaves only stdin/out/err and the pipe (moved to fd 3) open, so that no
 * other request's pipe or client socket lives on in this child. */
static int keep_only_pipe(int fd)
{
    if (fd != 3) {
        if (dup2(fd, 3) < 0)
            _exit(4);
        fd = 3;
    }
#ifdef SYS_close_range
    if (syscall(SYS_close_range, 4u, ~0u, 0u) == 0)
        return fd;
#endif
    struct rlimit rl;
    long max = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
                   ? (long)rl.rlim_cur
                   : 65536;
    for (long k = 4; k < max && k < 65536; k++)
        close((int)k);
    return fd;
}

static void run_child(int fd, pid_t parent, const char *dot,
                      const char *engine, const char *format,
                      int64_t timeout_ms)
{
    fd = keep_only_pipe(fd);
#ifdef __linux__
    /* Die with the thread that waits for us. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(5);
#else
    (void)parent;
#endif
    sigset_t all;
    sigemptyset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
    /* A CPU limit backs up the parent's deadline. */
    struct rlimit cpu;
    cpu.rlim_cur = cpu.rlim_max = (rlim_t)(timeout_ms / 1000 + 2);
    setrlimit(RLIMIT_CPU, &cpu);

    agseterr(AGERR);
    agseterrf(capture_error);
    GVC_t *gvc = warm_gvc ? warm_gvc : gvContext();
    if (!gvc)
        child_reply(fd, CHILD_FAILED, "cannot create a Graphviz context", 31);
    Agraph_t *g = agmemread(dot);
    if (!g) {
        const char *msg = child_error[0] ? child_error : "DOT syntax error";
        child_reply(fd, CHILD_BAD_INPUT, msg, strlen(msg));
    }
    if (gvLayout(gvc, g, engine) != 0) {
        const char *msg = child_error[0] ? child_error : "layout failed";
        child_reply(fd, CHILD_FAILED, msg, strlen(msg));
    }
    char *data = NULL;
    unsigned int len = 0;
    if (gvRenderData(gvc, g, format, &data, &len) != 0 || !data) {
        const char *msg = child_error[0] ? child_error : "rendering failed";
        child_reply(fd, CHILD_FAILED, msg, strlen(msg));
    }
    child_reply(fd, CHILD_OK, data, len);
}

/* ---- the parent --------------------------------------------------------- */

typedef struct reader {
    frame f;
    size_t got_frame; /* bytes of f read */
    char *data;
    size_t got;       /* payload bytes read */
    bool eof;
} reader;

/* Reads what is available. Returns false on a read error. */
static bool read_some(int fd, reader *r)
{
    char tmp[16384];
    ssize_t n = read(fd, tmp, sizeof tmp);
    if (n < 0)
        return errno == EINTR || errno == EAGAIN;
    if (n == 0) {
        r->eof = true;
        return true;
    }
    size_t off = 0;
    if (r->got_frame < sizeof r->f) {
        size_t take = sizeof r->f - r->got_frame;
        if (take > (size_t)n)
            take = (size_t)n;
        memcpy((char *)&r->f + r->got_frame, tmp, take);
        r->got_frame += take;
        off = take;
        if (r->got_frame == sizeof r->f) {
            if (r->f.magic != FRAME_MAGIC ||
                r->f.len > HS_RENDER_MAX_OUTPUT_BYTES)
                return true; /* judged by the caller */
            r->data = malloc((size_t)r->f.len + 1);
            if (!r->data)
                return false;
        }
    }
    if (off < (size_t)n && r->data) {
        size_t take = (size_t)n - off;
        if (take > r->f.len - r->got)
            take = (size_t)(r->f.len - r->got);
        memcpy(r->data + r->got, tmp + off, take);
        r->got += take;
    }
    return true;
}

static bool frame_bad(const reader *r)
{
    return r->got_frame == sizeof r->f &&
           (r->f.magic != FRAME_MAGIC || r->f.len > HS_RENDER_MAX_OUTPUT_BYTES);
}

static bool complete(const reader *r)
{
    return r->got_frame == sizeof r->f && r->data && r->got == r->f.len;
}

static int reap(pid_t pid)
{
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return status;
}

hs_status hs_render_layout(const char *dot, const char *engine,
                           const char *format, int64_t timeout_ms,
                           char **out, size_t *out_len, hs_error *err)
{
    hs_error_clear(err);
    *out = NULL;
    if (out_len)
        *out_len = 0;
    if (!dot)
        return hs_error_set(err, HS_ERR_INVALID, "layout: no DOT text");
    if (!listed(engine, engines, sizeof engines / sizeof *engines))
        return hs_error_set(err, HS_ERR_INVALID,
                            "layout: unknown engine (use dot, neato, nop or "
                            "nop2)");
    if (!listed(format, formats, sizeof formats / sizeof *formats))
        return hs_error_set(err, HS_ERR_INVALID,
                            "layout: unknown format (use svg, xdot, dot, json "
                            "or plain)");
    if (timeout_ms <= 0)
        timeout_ms = HS_RENDER_DEFAULT_TIMEOUT_MS;
    int64_t deadline = now_ms() + timeout_ms;
    pthread_once(&warm_once, warm_up);

    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return hs_error_set(err, HS_ERR_RUNTIME,
                            "cannot start layout worker: %s", strerror(errno));
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(fds[0]);
        close(fds[1]);
        return hs_error_set(err, HS_ERR_RUNTIME,
                            "cannot start layout worker: %s", strerror(e));
    }
    if (pid == 0) {
        close(fds[0]);
        run_child(fds[1], parent, dot, engine, format, timeout_ms);
        _exit(6); /* not reached */
    }
    close(fds[1]);

    reader r = {0};
    bool timed_out = false, failed = false;
    while (!r.eof && !complete(&r) && !frame_bad(&r)) {
        int64_t left = deadline - now_ms();
        if (left <= 0) {
            timed_out = true;
            break;
        }
        struct pollfd p = {fds[0], POLLIN, 0};
        int n = poll(&p, 1, left > INT_MAX ? INT_MAX : (int)left);
        if (n < 0 && errno != EINTR) {
            failed = true;
            break;
        }
        if (n > 0 && !read_some(fds[0], &r)) {
            failed = true;
            break;
        }
    }
    close(fds[0]);
    bool done = complete(&r);
    if (!done)
        kill(pid, SIGKILL); /* harmless if it already exited */
    int status = reap(pid);

    hs_status st = HS_OK;
    if (timed_out ||
        (WIFSIGNALED(status) && WTERMSIG(status) == SIGXCPU)) {
        st = hs_error_set(err, HS_ERR_CANCELLED,
                          "layout timed out after %lld ms",
                          (long long)timeout_ms);
    } else if (frame_bad(&r) && r.f.magic == FRAME_MAGIC) {
        st = hs_error_set(err, HS_ERR_LIMIT,
                          "layout output of %llu bytes exceeds the limit of "
                          "%zu bytes; collapse the graph",
                          (unsigned long long)r.f.len,
                          (size_t)HS_RENDER_MAX_OUTPUT_BYTES);
    } else if (failed && !r.data && r.got_frame == sizeof r.f) {
        st = hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
    } else if (!done && WIFSIGNALED(status)) {
        st = hs_error_set(err, HS_ERR_RUNTIME,
                          "layout worker crashed (signal %d)",
                          WTERMSIG(status));
    } else if (!done) {
        st = hs_error_set(err, HS_ERR_RUNTIME,
                          "layout worker exited (status %d) without a result",
                          WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    } else if (r.f.result != CHILD_OK) {
        r.data[r.got] = '\0';
        /* Graphviz messages end with a newline. */
        size_t n = strlen(r.data);
        while (n && (r.data[n - 1] == '\n' || r.data[n - 1] == '\r'))
            r.data[--n] = '\0';
        /* Graphviz may quote the input: clean it for the caller. */
        hs_rbuf msg = {0};
        hs__text_clean(&msg, r.data, 300);
        st = hs_error_set(err, r.f.result == CHILD_BAD_INPUT
                                   ? HS_ERR_INVALID
                                   : HS_ERR_RUNTIME,
                          "layout: %s", msg.data ? msg.data : "failed");
        hs__rbuf_free(&msg);
    }
    if (st != HS_OK) {
        free(r.data);
        return st;
    }
    r.data[r.got] = '\0';
    *out = r.data;
    if (out_len)
        *out_len = r.got;
    return HS_OK;
}
