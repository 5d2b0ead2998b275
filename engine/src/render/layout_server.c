/* layout_server.c - the layout server: a single-threaded process, forked
 * once from the program, that forks one worker per layout request. Being
 * single-threaded is the point: a fork from it never copies a lock that
 * another thread held, so workers are safe whatever the program's threads
 * and allocator do. It warms Graphviz before serving, kills workers at
 * their deadline, reaps them, and tells each caller how its worker ended.
 * It exits when the program closes the control socket (or dies). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "render/layout_internal.h"

int64_t hs__now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

bool hs__write_all(int fd, const void *data, size_t n)
{
    const char *p = data;
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == ENOTSOCK)
            w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

void hs__close_from(int from)
{
#ifdef SYS_close_range
    if (syscall(SYS_close_range, (unsigned)from, ~0u, 0u) == 0)
        return;
#endif
    long max = sysconf(_SC_OPEN_MAX);
    if (max < 0 || max > 65536)
        max = 65536;
    for (long k = from; k < max; k++)
        close((int)k);
}

void hs__default_signals(void)
{
    for (int sig = 1; sig < NSIG; sig++)
        if (sig != SIGKILL && sig != SIGSTOP)
            signal(sig, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
}

/* ---- workers in flight -------------------------------------------------- */

typedef struct worker {
    pid_t pid;
    int status_fd;
    int64_t deadline_ms;
    bool timed_out;
} worker;

static worker *workers;
static int n_workers, cap_workers;
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

static void report(int fd, int event, pid_t pid, int wstatus, bool timed_out,
                   int error)
{
    hs_layout_status s = {HS_LAYOUT_MAGIC, event, (int32_t)pid, wstatus,
                          timed_out, error};
    hs__write_all(fd, &s, sizeof s); /* the caller may have gone: fine */
}

static void reap(void)
{
    int wstatus;
    pid_t pid;
    while ((pid = waitpid(-1, &wstatus, WNOHANG)) > 0) {
        for (int k = 0; k < n_workers; k++) {
            if (workers[k].pid != pid)
                continue;
            report(workers[k].status_fd, HS_LAYOUT_EXITED, pid, wstatus,
                   workers[k].timed_out, 0);
            close(workers[k].status_fd);
            workers[k] = workers[--n_workers];
            break;
        }
    }
}

static void kill_late(int64_t now)
{
    for (int k = 0; k < n_workers; k++)
        if (!workers[k].timed_out && now >= workers[k].deadline_ms) {
            kill(workers[k].pid, SIGKILL);
            workers[k].timed_out = true;
        }
}

static int poll_timeout(int64_t now)
{
    int64_t t = -1;
    for (int k = 0; k < n_workers; k++)
        if (!workers[k].timed_out) {
            int64_t left = workers[k].deadline_ms - now;
            if (left < 0)
                left = 0;
            if (t < 0 || left < t)
                t = left;
        }
    return t > 60000 ? 60000 : (int)t;
}

/* ---- requests ------------------------------------------------------------ */

/* Receives one request and its two sockets. Returns 0 when the program
 * closed the control socket, -1 for a message to ignore, 1 otherwise. */
static int receive(int ctl, hs_layout_request *rq, int *data_fd,
                   int *status_fd)
{
    char control[CMSG_SPACE(2 * sizeof(int))];
    struct iovec iov = {rq, sizeof *rq};
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
            for (int j = 0; j < k; j++) {
                int fd;
                memcpy(&fd, CMSG_DATA(c) + j * sizeof(int), sizeof fd);
                if (n_fds < 2)
                    fds[n_fds++] = fd;
                else
                    close(fd);
            }
        }
    if (n != (ssize_t)sizeof *rq || n_fds != 2 ||
        rq->magic != HS_LAYOUT_MAGIC ||
        rq->engine >= (uint32_t)hs__layout_n_engines ||
        rq->format >= (uint32_t)hs__layout_n_formats) {
        for (int k = 0; k < n_fds; k++)
            close(fds[k]);
        return -1;
    }
    *data_fd = fds[0];
    *status_fd = fds[1];
    return 1;
}

static void start_worker(int ctl, const hs_layout_request *rq, int data_fd,
                         int status_fd)
{
    if (hs__now_ms() >= rq->deadline_ms) {
        /* Too late to start: timed out, with nothing to kill. */
        close(data_fd);
        report(status_fd, HS_LAYOUT_EXITED, 0, 0, true, 0);
        close(status_fd);
        return;
    }
    if (n_workers == cap_workers) {
        int cap = cap_workers ? cap_workers * 2 : 16;
        worker *w = realloc(workers, sizeof *w * (size_t)cap);
        if (!w) {
            close(data_fd);
            report(status_fd, HS_LAYOUT_EXITED, 0, 0, false, ENOMEM);
            close(status_fd);
            return;
        }
        workers = w;
        cap_workers = cap;
    }
    pid_t pid = fork();
    if (pid == 0) {
        close(ctl);
        hs__layout_worker_main(data_fd, rq, getppid());
    }
    int e = errno;
    close(data_fd);
    if (pid < 0) {
        report(status_fd, HS_LAYOUT_EXITED, 0, 0, false, e);
        close(status_fd);
        return;
    }
    workers[n_workers++] = (worker){pid, status_fd, rq->deadline_ms, false};
    report(status_fd, HS_LAYOUT_STARTED, pid, 0, false, 0);
}

static void shut_down(void)
{
    for (int k = 0; k < n_workers; k++)
        kill(workers[k].pid, SIGKILL);
    while (waitpid(-1, NULL, 0) > 0 || errno == EINTR) {
    }
    _exit(0);
}

/* Allocates and frees a block of every size class, small to large. A fork
 * from a threaded program copies allocator locks as they were; one held by
 * another thread at that instant hangs us here, before READY, and the
 * program forks a new server. */
static void probe_allocator(void)
{
    for (size_t size = 1; size <= ((size_t)4 << 20); size += size / 8 + 1) {
        volatile char *p = malloc(size);
        if (!p)
            _exit(1);
        p[0] = 1;
        p[size - 1] = 1;
        free((void *)p);
    }
}

void hs__layout_server_main(int ctl)
{
    if (ctl != 3) {
        if (dup2(ctl, 3) < 0)
            _exit(1);
        ctl = 3;
    }
    hs__close_from(4);
    /* The program's stdin and stdout are not ours; stderr stays for
     * diagnostics from the libraries. */
    int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null_fd >= 0) {
        dup2(null_fd, 0);
        dup2(null_fd, 1);
        if (null_fd > 3)
            close(null_fd);
    }
    hs__default_signals();
    signal(SIGPIPE, SIG_IGN);
    signal(SIGINT, SIG_IGN); /* the program decides when we stop */
    if (pipe2(wake_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
        _exit(1);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigchld;
    sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    sigaction(SIGCHLD, &sa, NULL);

    probe_allocator();
    hs__layout_warm_up();
    hs_layout_status ready = {HS_LAYOUT_MAGIC, HS_LAYOUT_READY, getpid(), 0, 0,
                              0};
    if (send(ctl, &ready, sizeof ready, MSG_NOSIGNAL) != sizeof ready)
        _exit(1);

    for (;;) {
        int64_t now = hs__now_ms();
        struct pollfd p[2] = {{ctl, POLLIN, 0}, {wake_pipe[0], POLLIN, 0}};
        int n = poll(p, 2, poll_timeout(now));
        if (n < 0 && errno != EINTR)
            shut_down();
        if (p[1].revents) {
            char buf[64];
            while (read(wake_pipe[0], buf, sizeof buf) > 0) {
            }
        }
        reap();
        kill_late(hs__now_ms());
        if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            hs_layout_request rq;
            int data_fd, status_fd;
            int r = receive(ctl, &rq, &data_fd, &status_fd);
            if (r == 0)
                shut_down();
            if (r > 0)
                start_worker(ctl, &rq, data_fd, status_fd);
        }
    }
}
