/* layout_server.c - the layout server: a process spawned once by the
 * program (layout_spawn.c) that keeps a pool of warm workers, spawned the
 * same way, hands each layout request to an idle one, kills a worker at
 * its job's deadline and replaces it, and tells each caller how its job
 * ended. It never runs Graphviz itself, and it exits when the program
 * closes the control socket (or dies). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "hloscope/hs_ir.h"
#include "hloscope/hs_process.h"
#include "render/layout_internal.h"

int64_t hs__now_ms(void)
{
    return hs_now_ns() / 1000000;
}

bool hs__send_status(int fd, int event, pid_t pid, int wstatus,
                     bool timed_out, int error)
{
    hs_layout_status s = {HS_LAYOUT_MAGIC, event, (int32_t)pid, wstatus,
                          timed_out, error};
    return hs_write_all(fd, &s, sizeof s);
}

/* ---- the pool ------------------------------------------------------------- */

typedef enum wstate {
    W_STARTING, /* spawned, warming Graphviz */
    W_IDLE,
    W_BUSY,   /* has a job */
    W_LEAVING /* retired or killed: waiting to be reaped */
} wstate;

typedef struct worker {
    pid_t pid;
    int fd; /* socket to the worker; -1 once closed */
    wstate state;
    int jobs;            /* jobs handed to it so far */
    int64_t since_ms;    /* when it was spawned (STARTING) or went idle */
    int status_fd;       /* the current job's caller (BUSY) */
    int64_t deadline_ms; /* the current job's deadline (BUSY) */
    bool timed_out;      /* killed at that deadline */
} worker;

/* A request waiting for an idle worker. */
typedef struct job {
    hs_layout_request rq;
    int data_fd, status_fd;
} job;

static worker *workers;
static int n_workers, cap_workers;
static job *queue;
static int n_queued, cap_queued;
static int spare = HS_LAYOUT_SPARE, worker_jobs = HS_LAYOUT_WORKER_JOBS,
           max_workers = HS_LAYOUT_MAX_WORKERS;
static int start_failures; /* workers in a row that died before READY */
static int last_start_status; /* wstatus of the last one */
static int wake_pipe[2] = {-1, -1};

static void on_sigchld(int sig)
{
    (void)sig;
    int saved = errno;
    if (write(wake_pipe[1], "c", 1) < 0) {
        /* full: a wake-up is already pending */
    }
    errno = saved;
}

/* A pool setting from the environment, within [lo, hi], else dflt. */
static int setting(const char *name, int dflt, int lo, int hi)
{
    const char *v = getenv(name);
    char *end;
    long n = v ? strtol(v, &end, 10) : 0;
    if (!v || end == v || *end || n < lo || n > hi)
        return dflt;
    return (int)n;
}

static int count(wstate s)
{
    int n = 0;
    for (int k = 0; k < n_workers; k++)
        n += workers[k].state == s;
    return n;
}

static worker *find(pid_t pid)
{
    for (int k = 0; k < n_workers; k++)
        if (workers[k].pid == pid)
            return &workers[k];
    return NULL;
}

/* Ends the worker's current job with a FINISHED report to its caller. */
static void finish_job(worker *w, int wstatus)
{
    hs__send_status(w->status_fd, HS_LAYOUT_FINISHED, w->pid, wstatus,
                    w->timed_out, 0); /* the caller may have gone: fine */
    close(w->status_fd);
    w->status_fd = -1;
}

/* Closes the worker's socket: it exits on the EOF and is reaped later. */
static void retire(worker *w)
{
    if (w->fd >= 0)
        close(w->fd);
    w->fd = -1;
    w->state = W_LEAVING;
}

static int spawn_worker(void)
{
    if (n_workers == cap_workers) {
        int cap = cap_workers ? cap_workers * 2 : 8;
        worker *w = realloc(workers, sizeof *w * (size_t)cap);
        if (!w)
            return ENOMEM;
        workers = w;
        cap_workers = cap;
    }
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
        return errno;
    pid_t pid;
    int e = hs__layout_spawn(HS_LAYOUT_ROLE_WORKER, sv[1], &pid);
    close(sv[1]);
    if (e) {
        close(sv[0]);
        return e;
    }
    workers[n_workers++] = (worker){pid, sv[0], W_STARTING, 0, hs__now_ms(),
                                    -1, 0, false};
    return 0;
}

/* ---- jobs ---------------------------------------------------------------- */

static void drop_job(int k, pid_t pid, int wstatus, bool timed_out, int error)
{
    close(queue[k].data_fd);
    hs__send_status(queue[k].status_fd, HS_LAYOUT_FINISHED, pid, wstatus,
                    timed_out, error);
    close(queue[k].status_fd);
    memmove(&queue[k], &queue[k + 1], sizeof *queue * (size_t)(n_queued - k - 1));
    n_queued--;
}

/* Sends job j to idle worker w; false when the worker is gone. */
static bool hand(worker *w, const job *j)
{
    char control[CMSG_SPACE(sizeof(int))];
    memset(control, 0, sizeof control);
    struct iovec iov = {(void *)&j->rq, sizeof j->rq};
    struct msghdr msg = {0};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &j->data_fd, sizeof(int));
    ssize_t n;
    do
        n = sendmsg(w->fd, &msg, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    if (n != (ssize_t)sizeof j->rq) {
        kill(w->pid, SIGKILL);
        retire(w);
        return false;
    }
    close(j->data_fd);
    w->state = W_BUSY;
    w->jobs++;
    w->status_fd = j->status_fd;
    w->deadline_ms = j->rq.deadline_ms;
    w->timed_out = false;
    hs__send_status(w->status_fd, HS_LAYOUT_STARTED, w->pid, 0, false, 0);
    return true;
}

/* Queued jobs to idle workers, oldest first; then spawns what the queue and
 * the spares need. After failed starts only demand spawns, one at a time. */
static void dispatch(void)
{
    int64_t now = hs__now_ms();
    for (int k = 0; k < n_queued;) {
        if (now >= queue[k].rq.deadline_ms) {
            drop_job(k, 0, 0, true, 0); /* timed out, nothing to kill */
            continue;
        }
        k++;
    }
    while (n_queued > 0) {
        worker *idle = NULL;
        for (int k = 0; k < n_workers && !idle; k++)
            if (workers[k].state == W_IDLE)
                idle = &workers[k];
        if (!idle)
            break;
        if (hand(idle, &queue[0])) {
            memmove(&queue[0], &queue[1], sizeof *queue * (size_t)(n_queued - 1));
            n_queued--;
        }
    }
    for (;;) {
        int idle = count(W_IDLE), starting = count(W_STARTING);
        int live = n_workers - count(W_LEAVING);
        bool want = start_failures >= HS_LAYOUT_START_TRIES
                        ? starting == 0 && n_queued > 0
                        : idle + starting < n_queued + spare;
        if (!want || live >= max_workers)
            break;
        int e = spawn_worker();
        if (e) {
            /* With no worker left to serve them, the queued jobs learn why
             * now; otherwise they wait for a busy one. */
            while (live == 0 && n_queued > 0)
                drop_job(0, 0, 0, false, e);
            break;
        }
    }
}

/* A message from worker w: READY after its warm-up, DONE after a job;
 * EOF when it exits. */
static void from_worker(worker *w)
{
    hs_layout_status s;
    ssize_t n = recv(w->fd, &s, sizeof s, MSG_DONTWAIT);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    bool ours = n == (ssize_t)sizeof s && s.magic == HS_LAYOUT_MAGIC;
    if (ours && s.event == HS_LAYOUT_READY && w->state == W_STARTING) {
        w->state = W_IDLE;
        w->since_ms = hs__now_ms();
        start_failures = 0;
        return;
    }
    if (ours && s.event == HS_LAYOUT_DONE && w->state == W_BUSY) {
        finish_job(w, 0);
        w->state = W_IDLE;
        w->since_ms = hs__now_ms();
        if (w->jobs >= worker_jobs)
            retire(w);
        return;
    }
    /* Gone (its exit is reaped) or not ours: either way, done with it. A
     * busy worker's end is reported when it is reaped. */
    close(w->fd);
    w->fd = -1;
    if (w->state != W_BUSY) {
        kill(w->pid, SIGKILL);
        w->state = W_LEAVING;
    }
}

static void reap(void)
{
    int wstatus;
    pid_t pid;
    while ((pid = waitpid(-1, &wstatus, WNOHANG)) > 0) {
        worker *w = find(pid);
        if (!w)
            continue;
        if (w->state == W_BUSY)
            finish_job(w, wstatus);
        if (w->state == W_STARTING) {
            start_failures++;
            last_start_status = wstatus;
        }
        if (w->fd >= 0)
            close(w->fd);
        *w = workers[--n_workers];
    }
    /* Workers that keep dying at start will not serve the queue: say so. */
    while (start_failures >= HS_LAYOUT_START_TRIES && n_queued > 0 &&
           count(W_STARTING) == 0 && count(W_IDLE) == 0 &&
           count(W_BUSY) == 0)
        drop_job(0, 0, last_start_status, false, 0);
}

/* Deadlines: jobs past theirs are killed, workers that do not warm up in
 * time are killed, idle workers beyond the spares leave. */
static void enforce(int64_t now)
{
    int idle = count(W_IDLE);
    for (int k = 0; k < n_workers; k++) {
        worker *w = &workers[k];
        if (w->state == W_BUSY && !w->timed_out && now >= w->deadline_ms) {
            kill(w->pid, SIGKILL);
            w->timed_out = true;
        } else if (w->state == W_STARTING && !w->timed_out &&
                   now >= w->since_ms + HS_LAYOUT_START_MS) {
            kill(w->pid, SIGKILL); /* reaped as a failed start */
            w->timed_out = true;
        } else if (w->state == W_IDLE && idle > spare &&
                   now >= w->since_ms + HS_LAYOUT_IDLE_MS) {
            retire(w);
            idle--;
        }
    }
}

static int poll_timeout(int64_t now)
{
    int64_t t = 60000;
    int idle = count(W_IDLE);
    for (int k = 0; k < n_workers; k++) {
        const worker *w = &workers[k];
        int64_t at = INT64_MAX;
        if (w->state == W_BUSY && !w->timed_out)
            at = w->deadline_ms;
        else if (w->state == W_STARTING && !w->timed_out)
            at = w->since_ms + HS_LAYOUT_START_MS;
        else if (w->state == W_IDLE && idle > spare)
            at = w->since_ms + HS_LAYOUT_IDLE_MS;
        if (at - now < t)
            t = at - now;
    }
    for (int k = 0; k < n_queued; k++)
        if (queue[k].rq.deadline_ms - now < t)
            t = queue[k].rq.deadline_ms - now;
    return t < 0 ? 0 : (int)t;
}

/* ---- requests ------------------------------------------------------------ */

/* Receives one request and its two sockets. Returns 0 when the program
 * closed the control socket, -1 for a message to ignore, 1 otherwise. */
static int receive(int ctl, job *j)
{
    char control[CMSG_SPACE(2 * sizeof(int))];
    struct iovec iov = {&j->rq, sizeof j->rq};
    struct msghdr msg = {0};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    ssize_t n = recvmsg(ctl, &msg, MSG_CMSG_CLOEXEC);
    if (n == 0)
        return 0;
    if (n < 0)
        return errno == EINTR || errno == EAGAIN ? -1 : 0;
    int fds[2] = {-1, -1}, n_fds = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
            int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
            for (int i = 0; i < k; i++) {
                int fd;
                memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
                if (n_fds < 2)
                    fds[n_fds++] = fd;
                else
                    close(fd);
            }
        }
    if (n != (ssize_t)sizeof j->rq || n_fds != 2 ||
        j->rq.magic != HS_LAYOUT_MAGIC ||
        j->rq.engine >= (uint32_t)hs__layout_n_engines ||
        j->rq.format >= (uint32_t)hs__layout_n_formats) {
        for (int k = 0; k < n_fds; k++)
            close(fds[k]);
        return -1;
    }
    j->data_fd = fds[0];
    j->status_fd = fds[1];
    return 1;
}

static void enqueue(const job *j)
{
    if (n_queued == cap_queued) {
        int cap = cap_queued ? cap_queued * 2 : 16;
        job *q = realloc(queue, sizeof *q * (size_t)cap);
        if (!q) {
            close(j->data_fd);
            hs__send_status(j->status_fd, HS_LAYOUT_FINISHED, 0, 0, false,
                            ENOMEM);
            close(j->status_fd);
            return;
        }
        queue = q;
        cap_queued = cap;
    }
    queue[n_queued++] = *j;
}

static void shut_down(void)
{
    for (int k = 0; k < n_workers; k++)
        kill(workers[k].pid, SIGKILL);
    while (waitpid(-1, NULL, 0) > 0 || errno == EINTR) {
    }
    _exit(0);
}

/* Worker sockets to poll, after the control socket and the wake pipe. */
static int poll_set(struct pollfd *p, int cap, pid_t *whose)
{
    int n = 0;
    for (int k = 0; k < n_workers && n < cap; k++)
        if (workers[k].fd >= 0) {
            p[n] = (struct pollfd){workers[k].fd, POLLIN, 0};
            whose[n++] = workers[k].pid;
        }
    return n;
}

void hs__layout_server_main(void)
{
    int ctl = HS_LAYOUT_CTL_FD;
#ifdef __linux__
    prctl(PR_SET_NAME, "hs-layout-srv");
#endif
    signal(SIGPIPE, SIG_IGN);
    signal(SIGINT, SIG_IGN); /* the program decides when we stop */
    if (pipe2(wake_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
        _exit(1);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigchld;
    sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    sigaction(SIGCHLD, &sa, NULL);
    spare = setting("HS_LAYOUT_SPARE", HS_LAYOUT_SPARE, 0, 64);
    worker_jobs = setting("HS_LAYOUT_WORKER_JOBS", HS_LAYOUT_WORKER_JOBS, 1,
                          1000000);
    max_workers = setting("HS_LAYOUT_MAX_WORKERS", HS_LAYOUT_MAX_WORKERS, 1,
                          256);
    if (spare > max_workers)
        spare = max_workers;

    dispatch(); /* the spares start warming now */
    if (!hs__send_status(ctl, HS_LAYOUT_READY, getpid(), 0, false, 0))
        _exit(1);

    enum { MAX_POLL = 2 + 256 };
    struct pollfd p[MAX_POLL];
    pid_t whose[MAX_POLL];
    for (;;) {
        p[0] = (struct pollfd){ctl, POLLIN, 0};
        p[1] = (struct pollfd){wake_pipe[0], POLLIN, 0};
        int n_w = poll_set(p + 2, MAX_POLL - 2, whose);
        int n = poll(p, (nfds_t)(2 + n_w), poll_timeout(hs__now_ms()));
        if (n < 0 && errno != EINTR)
            shut_down();
        if (n < 0)
            continue;
        if (p[1].revents) {
            char buf[64];
            while (read(wake_pipe[0], buf, sizeof buf) > 0) {
            }
        }
        /* Messages before exits: a DONE already sent is a finished job
         * even when the worker died right after. */
        for (int k = 0; k < n_w; k++)
            if (p[2 + k].revents) {
                worker *w = find(whose[k]);
                if (w && w->fd == p[2 + k].fd)
                    from_worker(w);
            }
        reap();
        enforce(hs__now_ms());
        if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            job j;
            int r = receive(ctl, &j);
            if (r == 0)
                shut_down();
            if (r > 0)
                enqueue(&j);
        }
        dispatch();
    }
}
