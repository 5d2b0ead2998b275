/* layout.c - hs_render_layout: Graphviz layout as a service of worker
 * processes (see layout_internal.h for the processes and the protocol).
 *
 * libgvc keeps global state (it is not thread-safe), some layouts take
 * unbounded time, and a crash in it would take the server down; so no
 * layout runs in this process. A caller thread hands the layout server two
 * sockets: on the data socket it sends the DOT text to the worker the
 * server gives the job to and reads the framed result back; on the status
 * socket the server says which worker took the job and how the job ended.
 * The server kills the worker at the deadline, so the caller only waits on
 * sockets, with poll() and its own deadline, and never on a process. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "render/layout_internal.h"
#include "render/render_internal.h"

/* ---- the server ------------------------------------------------------------ */

/* The one layout server of this process: a process-wide resource, like a
 * thread pool, guarded by server_mu. */
static pthread_mutex_t server_mu = PTHREAD_MUTEX_INITIALIZER;
static int server_fd = -1;
static pid_t server_pid = -1;
static int server_starts; /* servers started so far, for tests */

/* Stops and reaps the server. Closing its socket asks it to kill and reap
 * its workers and exit; one that has not within grace_ms (stuck, or never
 * asked: grace 0) is killed, and its workers die with it (PDEATHSIG). */
static void stop_server_locked(int grace_ms)
{
    if (server_fd >= 0)
        close(server_fd);
    if (server_pid > 0) {
        int64_t until = hs__now_ms() + grace_ms;
        while (waitpid(server_pid, NULL, WNOHANG) == 0) {
            if (hs__now_ms() >= until) {
                kill(server_pid, SIGKILL);
                while (waitpid(server_pid, NULL, 0) < 0 && errno == EINTR) {
                }
                break;
            }
            struct timespec t = {0, 1000000};
            nanosleep(&t, NULL);
        }
    }
    server_fd = -1;
    server_pid = -1;
}

/* Waits for the server's READY; false when it does not come in time. */
static bool server_ready(int fd)
{
    int64_t deadline = hs__now_ms() + HS_LAYOUT_START_MS;
    for (;;) {
        int64_t left = deadline - hs__now_ms();
        if (left <= 0)
            return false;
        struct pollfd p = {fd, POLLIN, 0};
        int n = poll(&p, 1, (int)left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        hs_layout_status s;
        ssize_t got = recv(fd, &s, sizeof s, 0);
        if (got < 0 && errno == EINTR)
            continue;
        return got == (ssize_t)sizeof s && s.magic == HS_LAYOUT_MAGIC &&
               s.event == HS_LAYOUT_READY;
    }
}

static hs_status start_server_locked(hs_error *err)
{
    for (int attempt = 0; attempt < HS_LAYOUT_START_TRIES; attempt++) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
            return hs_error_set(err, HS_ERR_RUNTIME,
                                "cannot start the layout server: %s",
                                strerror(errno));
        pid_t pid;
        int e = hs__layout_spawn(HS_LAYOUT_ROLE_SERVER, sv[1], &pid);
        close(sv[1]);
        if (e) {
            close(sv[0]);
            return hs_error_set(err, HS_ERR_RUNTIME,
                                "cannot start the layout server: %s",
                                strerror(e));
        }
        server_starts++;
        server_fd = sv[0];
        server_pid = pid;
        if (server_ready(server_fd))
            return HS_OK;
        stop_server_locked(0); /* died or hung at start */
    }
    return hs_error_set(err, HS_ERR_RUNTIME,
                        "cannot start the layout server: not ready after %d "
                        "tries",
                        HS_LAYOUT_START_TRIES);
}

hs_status hs_render_init(hs_error *err)
{
    hs_error_clear(err);
    pthread_mutex_lock(&server_mu);
    hs_status st = server_fd >= 0 ? HS_OK : start_server_locked(err);
    pthread_mutex_unlock(&server_mu);
    return st;
}

void hs_render_shutdown(void)
{
    /* The server exits by itself on EOF, after reaping its workers (so
     * their CPU time reaches this process's RUSAGE_CHILDREN); a server
     * that hangs is killed after a second. */
    pthread_mutex_lock(&server_mu);
    stop_server_locked(1000);
    pthread_mutex_unlock(&server_mu);
}

int hs__layout_server_starts(void)
{
    pthread_mutex_lock(&server_mu);
    int n = server_starts;
    pthread_mutex_unlock(&server_mu);
    return n;
}

pid_t hs__layout_server_pid(void)
{
    pthread_mutex_lock(&server_mu);
    pid_t pid = server_pid;
    pthread_mutex_unlock(&server_mu);
    return pid;
}

/* Hands the request and its sockets to the server, starting it (or, when
 * it died, restarting it) as needed. */
static hs_status send_request(hs_layout_request *rq, int64_t timeout_ms,
                              int data_fd, int status_fd, pid_t *sent_to,
                              hs_error *err)
{
    char control[CMSG_SPACE(2 * sizeof(int))];
    memset(control, 0, sizeof control);
    struct iovec iov = {(void *)rq, sizeof *rq};
    struct msghdr msg = {0};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(2 * sizeof(int));
    int fds[2] = {data_fd, status_fd};
    memcpy(CMSG_DATA(c), fds, sizeof fds);

    pthread_mutex_lock(&server_mu);
    int e = 0;
    for (int attempt = 0; attempt < 2; attempt++) {
        if (server_fd < 0) {
            hs_status st = start_server_locked(err);
            if (st != HS_OK) {
                pthread_mutex_unlock(&server_mu);
                return st;
            }
            /* The one-time start does not count against this layout. */
            rq->deadline_ms = hs__now_ms() + timeout_ms;
        }
        ssize_t n;
        do
            n = sendmsg(server_fd, &msg, MSG_NOSIGNAL);
        while (n < 0 && errno == EINTR);
        if (n == (ssize_t)sizeof *rq) {
            *sent_to = server_pid;
            pthread_mutex_unlock(&server_mu);
            return HS_OK;
        }
        e = n < 0 ? errno : EPROTO;
        stop_server_locked(0); /* gone or broken: reap it, start anew */
    }
    pthread_mutex_unlock(&server_mu);
    return hs_error_set(err, HS_ERR_RUNTIME, "layout server unavailable: %s",
                        strerror(e));
}

/* Forgets server pid when it is still the current one (it died). */
static void server_lost(pid_t pid)
{
    pthread_mutex_lock(&server_mu);
    if (server_pid == pid)
        stop_server_locked(0);
    pthread_mutex_unlock(&server_mu);
}

/* ---- talking to the worker ------------------------------------------------- */

/* Waits for fd to be ready for events until deadline; false on timeout. */
static bool wait_for(int fd, short events, int64_t deadline)
{
    for (;;) {
        int64_t left = deadline - hs__now_ms();
        if (left <= 0)
            return false;
        struct pollfd p = {fd, events, 0};
        int n = poll(&p, 1, left > INT_MAX ? INT_MAX : (int)left);
        if (n > 0)
            return true;
        if (n < 0 && errno != EINTR)
            return true; /* let the read or write report it */
    }
}

/* Sends the DOT text; false when the worker stopped reading. */
static bool send_dot(int fd, const char *dot, size_t len, int64_t deadline)
{
    size_t sent = 0;
    while (sent < len) {
        if (!wait_for(fd, POLLOUT, deadline))
            return false;
        ssize_t n = send(fd, dot + sent, len - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n <= 0)
            return false;
        sent += (size_t)n;
    }
    return true;
}

typedef struct reader {
    hs_layout_frame f;
    size_t got_frame; /* bytes of f read */
    char *data;
    size_t got; /* payload bytes read */
    bool eof, nomem;
} reader;

static bool frame_read(const reader *r)
{
    return r->got_frame == sizeof r->f;
}

static bool frame_bad(const reader *r)
{
    return frame_read(r) && (r->f.magic != HS_LAYOUT_MAGIC ||
                             r->f.len > HS_RENDER_MAX_OUTPUT_BYTES);
}

static bool complete(const reader *r)
{
    return frame_read(r) && !frame_bad(r) && r->data && r->got == r->f.len;
}

/* Reads what is there: the frame first, then the payload into place. */
static void read_some(int fd, reader *r)
{
    void *dst;
    size_t want;
    if (!frame_read(r)) {
        dst = (char *)&r->f + r->got_frame;
        want = sizeof r->f - r->got_frame;
    } else {
        dst = r->data + r->got;
        want = (size_t)r->f.len - r->got;
    }
    ssize_t n = recv(fd, dst, want, MSG_DONTWAIT);
    if (n < 0) {
        if (errno != EINTR && errno != EAGAIN)
            r->eof = true;
        return;
    }
    if (n == 0) {
        r->eof = true;
        return;
    }
    if (!frame_read(r)) {
        r->got_frame += (size_t)n;
        if (frame_read(r) && !frame_bad(r)) {
            r->data = malloc((size_t)r->f.len + 1);
            if (!r->data)
                r->nomem = true;
        }
    } else {
        r->got += (size_t)n;
    }
}

static void read_result(int fd, reader *r, int64_t deadline)
{
    while (!r->eof && !r->nomem && !complete(r) && !frame_bad(r)) {
        if (!wait_for(fd, POLLIN, deadline))
            return;
        read_some(fd, r);
    }
}

typedef enum exit_news {
    EXIT_REPORTED,   /* *exit_status is set: the job is over */
    EXIT_NO_NEWS,    /* nothing by the deadline */
    SERVER_LOST,     /* the server died after starting the worker */
    SERVER_LOST_EARLY /* the server died before starting it */
} exit_news;

/* Reads the server's reports until the job is over (or until deadline). */
static exit_news read_exit(int fd, hs_layout_status *exit_status,
                           int64_t deadline)
{
    hs_layout_status s;
    size_t got = 0;
    bool started = false;
    while (wait_for(fd, POLLIN, deadline)) {
        ssize_t n = recv(fd, (char *)&s + got, sizeof s - got, MSG_DONTWAIT);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n <= 0)
            return started ? SERVER_LOST : SERVER_LOST_EARLY;
        got += (size_t)n;
        if (got < sizeof s)
            continue;
        got = 0;
        if (s.magic != HS_LAYOUT_MAGIC)
            continue;
        started |= s.event == HS_LAYOUT_STARTED;
        if (s.event == HS_LAYOUT_FINISHED) {
            *exit_status = s;
            return EXIT_REPORTED;
        }
    }
    return EXIT_NO_NEWS;
}

/* ---- the call ---------------------------------------------------------------- */

static int index_of(const char *s, const char *const *list, int n)
{
    for (int k = 0; s && k < n; k++)
        if (strcmp(s, list[k]) == 0)
            return k;
    return -1;
}

static hs_status judge(const reader *r, bool finished, const hs_layout_status *x,
                       int64_t timeout_ms, int64_t deadline, hs_error *err)
{
    if (complete(r)) {
        if (r->f.result == HS_LAYOUT_OK)
            return HS_OK;
        /* Graphviz may quote the input: clean the message for the caller. */
        hs_status st = r->f.result == HS_LAYOUT_BAD_INPUT ? HS_ERR_INVALID
                                                          : HS_ERR_RUNTIME;
        hs_buf msg = {0};
        r->data[r->got] = '\0';
        size_t n = r->got;
        while (n && (r->data[n - 1] == '\n' || r->data[n - 1] == '\r'))
            r->data[--n] = '\0';
        for (size_t k = 0; k < n; k++)
            if (r->data[k] == '\n' || r->data[k] == '\r')
                r->data[k] = ' ';
        hs__text_clean(&msg, r->data, 300);
        hs_error_set(err, st, "layout: %s", msg.data ? msg.data : "failed");
        hs__buf_free(&msg);
        return st;
    }
    if (finished && x->timed_out)
        return hs_error_set(err, HS_ERR_CANCELLED,
                            "layout timed out after %lld ms",
                            (long long)timeout_ms);
    if (frame_bad(r) && r->f.magic == HS_LAYOUT_MAGIC)
        return hs_error_set(err, HS_ERR_LIMIT,
                            "layout output of %llu bytes exceeds the limit "
                            "of %zu bytes; collapse the graph",
                            (unsigned long long)r->f.len,
                            (size_t)HS_RENDER_MAX_OUTPUT_BYTES);
    if (r->nomem)
        return hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
    if (finished && x->error)
        return hs_error_set(err, HS_ERR_RUNTIME,
                            "cannot start layout worker: %s",
                            strerror(x->error));
    if (finished && WIFSIGNALED(x->wstatus)) {
        if (WTERMSIG(x->wstatus) == SIGXCPU)
            return hs_error_set(err, HS_ERR_CANCELLED,
                                "layout timed out after %lld ms",
                                (long long)timeout_ms);
        return hs_error_set(err, HS_ERR_RUNTIME,
                            "layout worker crashed (signal %d)",
                            WTERMSIG(x->wstatus));
    }
    if (finished)
        return hs_error_set(err, HS_ERR_RUNTIME,
                            "layout worker ended (status %d) without a result",
                            WIFEXITED(x->wstatus) ? WEXITSTATUS(x->wstatus)
                                                  : -1);
    if (hs__now_ms() >= deadline)
        return hs_error_set(err, HS_ERR_CANCELLED,
                            "layout timed out after %lld ms",
                            (long long)timeout_ms);
    return hs_error_set(err, HS_ERR_RUNTIME,
                        "layout server stopped during the layout");
}

/* One exchange with the server: request, DOT out, result in, exit report.
 * *deadline moves when this call had to start the server. */
static hs_status layout_once(const char *dot, int ei, int fi,
                             int64_t timeout_ms, int64_t *deadline,
                             reader *r, hs_layout_status *x, exit_news *news,
                             hs_error *err)
{
    int data[2], status[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, data) != 0)
        return hs_error_set(err, HS_ERR_RUNTIME, "layout: %s", strerror(errno));
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, status) != 0) {
        int e = errno;
        close(data[0]);
        close(data[1]);
        return hs_error_set(err, HS_ERR_RUNTIME, "layout: %s", strerror(e));
    }
    size_t dot_len = strlen(dot);
    hs_layout_request rq = {HS_LAYOUT_MAGIC, (uint32_t)ei, (uint32_t)fi, 0,
                            *deadline, dot_len};
    pid_t server = -1;
    hs_status st = send_request(&rq, timeout_ms, data[1], status[1], &server,
                                err);
    *deadline = rq.deadline_ms;
    close(data[1]);
    close(status[1]);
    if (st != HS_OK) {
        close(data[0]);
        close(status[0]);
        return st;
    }
    /* The server kills the worker at the deadline; the grace covers its
     * report reaching us. */
    int64_t wait_until = *deadline + HS_LAYOUT_GRACE_MS;
    if (send_dot(data[0], dot, dot_len, wait_until))
        read_result(data[0], r, wait_until);
    close(data[0]); /* a worker still writing gets EPIPE and exits */
    int64_t now = hs__now_ms();
    *news = read_exit(status[0], x,
                      (now > *deadline ? now : *deadline) + HS_LAYOUT_GRACE_MS);
    close(status[0]);
    if (*news == SERVER_LOST || *news == SERVER_LOST_EARLY)
        server_lost(server);
    return HS_OK;
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
    int ei = index_of(engine, hs__layout_engines, hs__layout_n_engines);
    int fi = index_of(format, hs__layout_formats, hs__layout_n_formats);
    if (ei < 0)
        return hs_error_set(err, HS_ERR_INVALID,
                            "layout: unknown engine (use dot, neato, nop or "
                            "nop2)");
    if (fi < 0)
        return hs_error_set(err, HS_ERR_INVALID,
                            "layout: unknown format (use svg, xdot, dot, json "
                            "or plain)");
    if (timeout_ms <= 0)
        timeout_ms = HS_RENDER_DEFAULT_TIMEOUT_MS;
    if (timeout_ms > INT64_MAX / 4)
        timeout_ms = INT64_MAX / 4;
    int64_t deadline = hs__now_ms() + timeout_ms;
    reader r;
    hs_layout_status x;
    exit_news news = EXIT_NO_NEWS;
    hs_status st;
    /* A second try only when the server died before starting our worker
     * (it was killed or crashed with our request queued). */
    for (int attempt = 0; attempt < 2; attempt++) {
        memset(&r, 0, sizeof r);
        memset(&x, 0, sizeof x);
        st = layout_once(dot, ei, fi, timeout_ms, &deadline, &r, &x, &news,
                         err);
        if (st != HS_OK)
            return st;
        if (news != SERVER_LOST_EARLY || r.got_frame > 0)
            break;
        free(r.data);
        r.data = NULL;
    }

    st = judge(&r, news == EXIT_REPORTED, &x, timeout_ms, deadline, err);
    if (st != HS_OK) {
        free(r.data);
        return st;
    }
    if (!r.data)
        r.data = calloc(1, 1); /* an empty rendering */
    if (!r.data)
        return hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
    r.data[r.got] = '\0';
    *out = r.data;
    if (out_len)
        *out_len = r.got;
    return HS_OK;
}
