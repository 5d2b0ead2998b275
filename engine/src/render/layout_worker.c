/* layout_worker.c - the process that runs Graphviz: one per layout, forked
 * by the single-threaded layout server from its warm context. It reads the
 * DOT text, lays it out, writes a framed result and exits; a crash or a
 * kill at the deadline costs this process only. */
#include <errno.h>
#include <gvc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "render/layout_internal.h"

/* Largest DOT text a worker accepts. */
#define MAX_DOT_BYTES ((uint64_t)256 << 20)

const char *const hs__layout_engines[] = {"dot", "neato", "nop", "nop2"};
const int hs__layout_n_engines = 4;
const char *const hs__layout_formats[] = {"svg", "xdot", "dot", "json",
                                          "plain"};
const int hs__layout_n_formats = 5;

/* The server's context, warmed once; each worker has its own copy. */
static GVC_t *warm_gvc;

void hs__layout_warm_up(void)
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

/* Graphviz reports errors through this hook, a message in pieces
 * ("Error", ": ", "syntax error in line 1 near ...\n"); the worker keeps
 * the first message. */
static char first_error[512];
static bool first_error_done;

static int capture_error(char *msg)
{
    if (first_error_done)
        return 0;
    size_t used = strlen(first_error);
    snprintf(first_error + used, sizeof first_error - used, "%s", msg);
    size_t n = strlen(msg);
    first_error_done = n > 0 && msg[n - 1] == '\n';
    return 0;
}

__attribute__((noreturn)) static void reply(int fd, hs_layout_result r,
                                           const char *data, size_t len)
{
    hs_layout_frame f = {HS_LAYOUT_MAGIC, (uint32_t)r, (uint64_t)len};
    bool ok = hs__write_all(fd, &f, sizeof f) && hs__write_all(fd, data, len);
    _exit(ok ? 0 : 3);
}

__attribute__((noreturn)) static void fail(int fd, hs_layout_result r,
                                          const char *fallback)
{
    const char *msg = first_error[0] ? first_error : fallback;
    reply(fd, r, msg, strlen(msg));
}

static char *read_dot(int fd, uint64_t len)
{
    if (len > MAX_DOT_BYTES)
        return NULL;
    char *dot = malloc((size_t)len + 1);
    if (!dot)
        return NULL;
    size_t got = 0;
    while (got < len) {
        ssize_t n = read(fd, dot + got, (size_t)len - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            _exit(4); /* the caller went away */
        got += (size_t)n;
    }
    dot[len] = '\0';
    return dot;
}

void hs__layout_worker_main(int fd, const hs_layout_request *rq, pid_t server)
{
    if (fd != 3) {
        if (dup2(fd, 3) < 0)
            _exit(5);
        fd = 3;
    }
    hs__close_from(4);
#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* the server is single-threaded */
    if (getppid() != server)
        _exit(6); /* it died before the line above */
#else
    (void)server;
#endif
    hs__default_signals();
    /* A CPU limit backs up the server's deadline. */
    int64_t left = rq->deadline_ms - hs__now_ms();
    struct rlimit cpu;
    cpu.rlim_cur = cpu.rlim_max = (rlim_t)((left > 0 ? left : 0) / 1000 + 2);
    setrlimit(RLIMIT_CPU, &cpu);

    char *dot = read_dot(fd, rq->dot_len);
    if (!dot)
        fail(fd, HS_LAYOUT_FAILED, "DOT text too large for the layout worker");
    agseterr(AGERR);
    agseterrf(capture_error);
    GVC_t *gvc = warm_gvc ? warm_gvc : gvContext();
    if (!gvc)
        fail(fd, HS_LAYOUT_FAILED, "cannot create a Graphviz context");
    Agraph_t *g = agmemread(dot);
    if (!g)
        fail(fd, HS_LAYOUT_BAD_INPUT, "DOT syntax error");
    if (gvLayout(gvc, g, hs__layout_engines[rq->engine]) != 0)
        fail(fd, HS_LAYOUT_FAILED, "layout failed");
    char *data = NULL;
    unsigned int len = 0;
    if (gvRenderData(gvc, g, hs__layout_formats[rq->format], &data, &len) != 0 ||
        !data)
        fail(fd, HS_LAYOUT_FAILED, "rendering failed");
    reply(fd, HS_LAYOUT_OK, data, len);
}
