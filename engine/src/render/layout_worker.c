/* layout_worker.c - the process that runs Graphviz: spawned by the layout
 * server from a clean image (layout_spawn.c) ahead of need, it warms
 * Graphviz, says READY and waits for one job: it reads the DOT text from
 * the job's data socket, lays it out, writes a framed result and exits. A
 * crash or a kill at the deadline costs this process only.
 *
 * Graphviz's output depends on heap addresses: cgraph orders subgraphs by
 * the addresses of their interned names, so the same DOT can come out with
 * its clusters in another order. With malloc those addresses depend on the
 * process's past: a worker that had laid out other graphs before differed
 * from a fresh one in 18 of 30 layouts of the decoder's views, and fresh
 * workers differed among themselves (Pango's warm-up thread allocates
 * concurrently). So the graph's memory comes from a bump arena, whose
 * addresses grow in the order the parser meets the names, and a worker
 * runs one job: the same DOT gives the same bytes every time. */
#include <errno.h>
#include <gvc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
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

/* Writes the frame and payload: the worker's exit status, 0 when the
 * caller got it all, 3 when it stopped reading. */
static int reply(int fd, hs_layout_result r, const char *data, size_t len)
{
    hs_layout_frame f = {HS_LAYOUT_MAGIC, (uint32_t)r, (uint64_t)len};
    return hs__write_all(fd, &f, sizeof f) && hs__write_all(fd, data, len)
               ? 0
               : 3;
}

static int reply_error(int fd, hs_layout_result r, const char *fallback)
{
    const char *msg = first_error[0] ? first_error : fallback;
    return reply(fd, r, msg, strlen(msg));
}

/* ---- the graph's memory ---------------------------------------------------- */

/* A reservation of address space, touched as the graph grows; never freed,
 * as the worker exits after its job. When it is full, or cannot be had
 * (strict overcommit), the graph falls back to calloc: correct, only no
 * longer in a fixed order. */
#define ARENA_BYTES ((size_t)4 << 30)

static char *arena;
static size_t arena_used;

static void *arena_open(Agdisc_t *disc)
{
    (void)disc;
    if (!arena) {
        void *p = mmap(NULL, ARENA_BYTES, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        arena = p == MAP_FAILED ? NULL : p;
    }
    return &arena_used; /* cgraph wants a state; ours is global */
}

static bool in_arena(const void *p)
{
    return arena && (const char *)p >= arena &&
           (const char *)p < arena + ARENA_BYTES;
}

/* Zeroed memory, as cgraph's own discipline (calloc) gives. */
static void *arena_alloc(void *state, size_t req)
{
    (void)state;
    size_t n = (req + 15) & ~(size_t)15;
    if (arena && n >= req && n <= ARENA_BYTES - arena_used) {
        void *p = arena + arena_used;
        arena_used += n;
        return p;
    }
    return calloc(1, req ? req : 1);
}

static void *arena_resize(void *state, void *ptr, size_t old, size_t req)
{
    void *p = arena_alloc(state, req);
    if (p && ptr) {
        memcpy(p, ptr, old < req ? old : req);
        if (!in_arena(ptr))
            free(ptr);
    }
    return p;
}

static void arena_free(void *state, void *ptr)
{
    (void)state;
    if (!in_arena(ptr))
        free(ptr);
}

static void arena_close(void *state)
{
    (void)state;
}

static Agmemdisc_t arena_disc = {arena_open, arena_alloc, arena_resize,
                                 arena_free, arena_close};

/* agmemread, with the graph's memory from the arena. */
static Agraph_t *read_graph(char *dot, size_t len)
{
    FILE *f = len ? fmemopen(dot, len, "r") : NULL;
    if (!f)
        return NULL;
    Agdisc_t disc = {&arena_disc, &AgIdDisc, &AgIoDisc};
    Agraph_t *g = agread(f, &disc);
    fclose(f);
    return g;
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

/* The job: the worker's exit status (see reply; 4 when the caller went
 * away before sending all of the DOT). */
static int run_job(GVC_t *gvc, int fd, const hs_layout_request *rq)
{
    /* A CPU limit backs up the server's deadline. */
    int64_t left = rq->deadline_ms - hs__now_ms();
    struct rlimit cpu;
    cpu.rlim_cur = cpu.rlim_max = (rlim_t)((left > 0 ? left : 0) / 1000 + 2);
    setrlimit(RLIMIT_CPU, &cpu);
    if (rq->dot_len > MAX_DOT_BYTES)
        return reply_error(fd, HS_LAYOUT_FAILED,
                           "DOT text too large for the layout worker");
    bool gone = false;
    char *dot = read_dot(fd, rq->dot_len, &gone);
    if (!dot)
        return gone ? 4
                    : reply_error(fd, HS_LAYOUT_FAILED,
                                  "out of memory in the layout worker");
    agseterr(AGERR);
    agseterrf(capture_error);
    Agraph_t *g = read_graph(dot, (size_t)rq->dot_len);
    if (!g)
        return reply_error(fd, HS_LAYOUT_BAD_INPUT, "DOT syntax error");
    if (gvLayout(gvc, g, hs__layout_engines[rq->engine]) != 0)
        return reply_error(fd, HS_LAYOUT_FAILED, "layout failed");
    char *data = NULL;
    unsigned int len = 0;
    if (gvRenderData(gvc, g, hs__layout_formats[rq->format], &data, &len) != 0 ||
        !data)
        return reply_error(fd, HS_LAYOUT_FAILED, "rendering failed");
    return reply(fd, HS_LAYOUT_OK, data, len);
}

/* The job from the server: 1, or 0 when the server closed the socket
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
    if (!hs__send_status(HS_LAYOUT_CTL_FD, HS_LAYOUT_READY, getpid(), 0,
                         false, 0))
        _exit(0);
    show_state("hs-layout-idle");
    hs_layout_request rq;
    int fd;
    if (!next_job(&rq, &fd))
        _exit(0); /* retired before it had a job */
    show_state("hs-layout-busy");
    _exit(run_job(gvc, fd, &rq));
}
