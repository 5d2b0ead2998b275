/* layout_worker.c - the process that runs Graphviz: spawned by the layout
 * server from a clean image (layout_spawn.c) ahead of need, it warms
 * Graphviz, says READY and runs jobs one at a time: it reads the DOT text
 * from the job's data socket, lays it out (the graph read as
 * layout_graph.c says, so that the drawing depends on the DOT alone),
 * writes a framed result and tells the server DONE. A crash or a kill at
 * the deadline costs this process only. A worker whose Graphviz reported
 * an error leaves after answering, so no error state reaches another job;
 * the server retires it after HS_LAYOUT_WORKER_JOBS jobs, so no leak
 * grows without bound. */
#include <errno.h>
#include <gvc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "hloscope/hs_process.h"
#include "render/layout_internal.h"

/* Largest DOT text a worker accepts. */
#define MAX_DOT_BYTES ((uint64_t)256 << 20)

const char *const hs__layout_engines[] = {"dot", "neato", "nop", "nop2"};
const int hs__layout_n_engines = 4;
const char *const hs__layout_formats[] = {"svg", "xdot", "dot", "json",
                                          "plain"};
const int hs__layout_n_formats = 5;

/* Shown by ps and top, and how a test finds the worker that has a job. */
static void show_state(const char *name)
{
#ifdef __linux__
    prctl(PR_SET_NAME, name);
#else
    (void)name;
#endif
}

/* Loads Graphviz's plugins and text metrics (Pango, fontconfig) once, so
 * that a job pays for its graph only. */
static GVC_t *warm_up(void)
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
    return gvc;
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

/* Writes the frame and payload; a caller that stopped reading is not an
 * error of ours. */
static void reply(int fd, hs_layout_result r, const char *data, size_t len)
{
    hs_layout_frame f = {HS_LAYOUT_MAGIC, (uint32_t)r, (uint64_t)len};
    if (hs_write_all(fd, &f, sizeof f))
        hs_write_all(fd, data, len);
}

/* Answers with Graphviz's first message (or the fallback); false: the
 * worker is not clean any more. */
static bool reply_error(int fd, hs_layout_result r, const char *fallback)
{
    const char *msg = first_error[0] ? first_error : fallback;
    reply(fd, r, msg, strlen(msg));
    return false;
}

/* ---- the job ---------------------------------------------------------------- */

/* The DOT text, or NULL with *gone set when the caller stopped sending. */
static char *read_dot(int fd, uint64_t len, bool *gone)
{
    char *dot = malloc((size_t)len + 1);
    if (!dot)
        return NULL;
    size_t got = 0;
    while (got < len) {
        ssize_t n = read(fd, dot + got, (size_t)len - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            free(dot);
            *gone = true;
            return NULL;
        }
        got += (size_t)n;
    }
    dot[len] = '\0';
    return dot;
}

/* A CPU limit backs up the server's deadline: this job may use what is
 * left of it, plus two seconds, on top of what the worker used so far. */
static void limit_cpu(int64_t deadline_ms)
{
    struct rusage u;
    struct rlimit cpu;
    if (getrusage(RUSAGE_SELF, &u) != 0 || getrlimit(RLIMIT_CPU, &cpu) != 0)
        return;
    int64_t left = deadline_ms - hs__now_ms();
    rlim_t want = (rlim_t)(u.ru_utime.tv_sec + u.ru_stime.tv_sec + 1) +
                  (rlim_t)((left > 0 ? left : 0) / 1000 + 2);
    if (cpu.rlim_max == RLIM_INFINITY || want < cpu.rlim_max)
        cpu.rlim_cur = want;
    setrlimit(RLIMIT_CPU, &cpu);
}

/* Lays out the graph and answers; false when Graphviz reported an error. */
static bool draw(GVC_t *gvc, int fd, Agraph_t *g, const hs_layout_request *rq)
{
    if (gvLayout(gvc, g, hs__layout_engines[rq->engine]) != 0)
        return reply_error(fd, HS_LAYOUT_FAILED, "layout failed");
    char *data = NULL;
    unsigned int len = 0;
    bool ok = gvRenderData(gvc, g, hs__layout_formats[rq->format], &data,
                           &len) == 0 &&
              data;
    if (ok)
        reply(fd, HS_LAYOUT_OK, data, len);
    else
        reply_error(fd, HS_LAYOUT_FAILED, "rendering failed");
    gvFreeRenderData(data);
    gvFreeLayout(gvc, g);
    return ok && !first_error[0];
}

/* One job; false when the worker is not clean after it (Graphviz reported
 * an error). */
static bool run_job(GVC_t *gvc, int fd, const hs_layout_request *rq)
{
    limit_cpu(rq->deadline_ms);
    first_error[0] = '\0';
    first_error_done = false;
    if (rq->dot_len > MAX_DOT_BYTES) {
        reply_error(fd, HS_LAYOUT_FAILED,
                    "DOT text too large for the layout worker");
        return true;
    }
    bool gone = false;
    char *dot = read_dot(fd, rq->dot_len, &gone);
    if (!dot) {
        if (!gone)
            reply_error(fd, HS_LAYOUT_FAILED,
                        "out of memory in the layout worker");
        return true;
    }
    Agraph_t *g = hs__layout_read_graph(dot, (size_t)rq->dot_len);
    free(dot);
    if (!g)
        return reply_error(fd, HS_LAYOUT_BAD_INPUT, "DOT syntax error");
    bool clean = draw(gvc, fd, g, rq);
    agclose(g);
    hs__layout_graph_closed();
    return clean;
}

/* The next job from the server: 1, or 0 when the server closed the socket
 * (retired this worker, or is gone). */
static int next_job(hs_layout_request *rq, int *data_fd)
{
    for (;;) {
        char control[CMSG_SPACE(sizeof(int))];
        struct iovec iov = {rq, sizeof *rq};
        struct msghdr msg = {0};
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control;
        msg.msg_controllen = sizeof control;
        ssize_t n = recvmsg(HS_LAYOUT_CTL_FD, &msg, MSG_CMSG_CLOEXEC);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return 0;
        int fd = -1;
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
            c->cmsg_len == CMSG_LEN(sizeof(int)))
            memcpy(&fd, CMSG_DATA(c), sizeof fd);
        if (n == (ssize_t)sizeof *rq && fd >= 0 &&
            rq->magic == HS_LAYOUT_MAGIC &&
            rq->engine < (uint32_t)hs__layout_n_engines &&
            rq->format < (uint32_t)hs__layout_n_formats) {
            *data_fd = fd;
            return 1;
        }
        if (fd >= 0)
            close(fd);
        return 0; /* not our server's message: leave */
    }
}

void hs__layout_worker_main(pid_t server)
{
#ifdef __linux__
    /* The server is single-threaded, so its death, not a thread's exit,
     * is what this signals. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != server)
        _exit(6); /* it died before the line above */
#else
    (void)server;
#endif
    show_state("hs-layout-warm");
    signal(SIGPIPE, SIG_IGN); /* a caller that left is an EPIPE */
    GVC_t *gvc = warm_up();
    if (!gvc)
        _exit(5);
    agseterr(AGERR);
    agseterrf(capture_error);
    int event = HS_LAYOUT_READY;
    for (;;) {
        if (!hs__send_status(HS_LAYOUT_CTL_FD, event, getpid(), 0, false, 0))
            _exit(0);
        show_state("hs-layout-idle");
        hs_layout_request rq;
        int fd;
        if (!next_job(&rq, &fd))
            _exit(0); /* retired, or the server is gone */
        show_state("hs-layout-busy");
        bool clean = run_job(gvc, fd, &rq);
        close(fd); /* the caller's read ends here */
        if (!clean)
            _exit(0);
        event = HS_LAYOUT_DONE;
    }
}
