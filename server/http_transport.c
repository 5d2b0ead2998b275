/* http_transport.c - `hloscope serve` on libmicrohttpd: the daemon with an
 * internal epoll thread pool, per-connection read deadlines, per-request
 * state, request framing and limits, and the suspend/resume hand-off to
 * the worker pool. The serve options are in http_serve_options.c, start
 * and shutdown in http_serve.c.
 *
 * Concurrency model: MHD_USE_EPOLL_INTERNAL_THREAD with a pool of
 * --threads event-loop threads answers everything that is quick (health,
 * metrics, cached results, artefacts in the LRU) on the thread that read
 * the request. Handlers that compile, run or render return SRV_DEFER: the
 * connection is suspended and the handler continues on one of --workers
 * worker threads, so an event-loop thread is never blocked and a long run
 * does not delay a health check (docs/API.md has the measurement). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <microhttpd.h>

#include "api.h"
#include "http.h"
#include "http_serve.h"
#include "store.h"

double srv_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- read deadlines --------------------------------------------------------- */

/* libmicrohttpd 0.9.75 has only an idle timeout, which a client sending one
 * byte every few seconds never reaches: 128 such connections used to hold
 * every slot of their address. So each connection carries a deadline of
 * its own (request head, then body), and a watchdog thread shuts down the
 * socket of any connection past it; libmicrohttpd then sees the end of the
 * stream and closes the connection. No reply is possible there: the
 * library calls us only once the head is complete, and refuses a response
 * while a body is still being read. */
typedef struct conn_watch {
    MHD_socket fd;
    _Atomic int64_t deadline_ns; /* CLOCK_MONOTONIC; 0 while none applies */
    bool expired;
    struct conn_watch *prev, *next;
} conn_watch;

struct srv_watchdog {
    pthread_mutex_t mu; /* the list; also held across shutdown() */
    conn_watch *head;
    pthread_t thread;
    atomic_bool stop;
    int64_t header_ns, body_ns;
    atomic_llong closed; /* connections closed at a deadline */
};

static void watch_set(conn_watch *w, int64_t timeout_ns)
{
    if (w)
        atomic_store(&w->deadline_ns, timeout_ns > 0 ? hs_now_ns() + timeout_ns : 0);
}

static conn_watch *watch_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

/* libmicrohttpd reports a connection closed before it closes the socket,
 * so an fd in the list is never one reused by another connection. */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    struct srv_watchdog *wd = ((srv *)cls)->watchdog;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        conn_watch *w = ci ? calloc(1, sizeof *w) : NULL;
        if (!w)
            return; /* unwatched: the idle timeout still applies */
        w->fd = ci->connect_fd;
        watch_set(w, wd->header_ns);
        pthread_mutex_lock(&wd->mu);
        w->next = wd->head;
        if (wd->head)
            wd->head->prev = w;
        wd->head = w;
        pthread_mutex_unlock(&wd->mu);
        *socket_context = w;
        return;
    }
    conn_watch *w = *socket_context;
    if (!w)
        return;
    pthread_mutex_lock(&wd->mu);
    if (w->prev)
        w->prev->next = w->next;
    else
        wd->head = w->next;
    if (w->next)
        w->next->prev = w->prev;
    pthread_mutex_unlock(&wd->mu);
    free(w);
    *socket_context = NULL;
}

static void *watchdog_main(void *arg)
{
    struct srv_watchdog *wd = arg;
    while (!atomic_load(&wd->stop)) {
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
        int64_t now = hs_now_ns();
        pthread_mutex_lock(&wd->mu);
        for (conn_watch *w = wd->head; w; w = w->next) {
            int64_t d = atomic_load(&w->deadline_ns);
            if (d && now > d && !w->expired) {
                shutdown(w->fd, SHUT_RDWR);
                w->expired = true;
                atomic_fetch_add(&wd->closed, 1);
            }
        }
        pthread_mutex_unlock(&wd->mu);
    }
    return NULL;
}

struct srv_watchdog *srv_watchdog_start(const srv_config *c)
{
    struct srv_watchdog *wd = calloc(1, sizeof *wd);
    if (!wd)
        return NULL;
    pthread_mutex_init(&wd->mu, NULL);
    wd->header_ns = (int64_t)c->header_timeout_s * 1000000000;
    wd->body_ns = (int64_t)c->body_timeout_s * 1000000000;
    if (pthread_create(&wd->thread, NULL, watchdog_main, wd) != 0) {
        pthread_mutex_destroy(&wd->mu);
        free(wd);
        return NULL;
    }
    return wd;
}

/* After MHD_stop_daemon: every connection has been reported closed. */
void srv_watchdog_stop(struct srv_watchdog *wd)
{
    if (!wd)
        return;
    atomic_store(&wd->stop, true);
    pthread_join(wd->thread, NULL);
    pthread_mutex_destroy(&wd->mu);
    free(wd);
}

/* ---- per-request state ---------------------------------------------------- */

typedef struct conn_ctx {
    srv *s;
    struct MHD_Connection *conn;
    double t0;
    int route;
    srv_request rq;
    srv_reply rp;
    char *body;
    size_t len, cap;
    bool too_large;
    bool deferred;
} conn_ctx;

static void ctx_free(conn_ctx *x)
{
    if (x->rq.state && x->rq.state_free)
        x->rq.state_free(x->rq.state);
    for (int k = 0; k < x->rq.n_query; k++) {
        free(x->rq.query_key[k]);
        free(x->rq.query_value[k]);
    }
    free(x->body);
    srv_reply_clear(&x->rp);
    free(x);
}

/* The query is copied into the request; more parameters than it holds is
 * an error of the request (a parameter past the limit used to be dropped
 * without a word, ?timeout_ms included). */
typedef struct query_copy {
    srv_request *rq;
    bool too_many, nomem;
} query_copy;

static enum MHD_Result copy_query(void *cls, enum MHD_ValueKind kind,
                                  const char *key, const char *value)
{
    query_copy *qc = cls;
    srv_request *rq = qc->rq;
    if (rq->n_query >= SRV_MAX_QUERY) {
        qc->too_many = true;
        return MHD_NO;
    }
    char *k = strdup(key), *v = strdup(value ? value : "");
    if (!k || !v) {
        free(k);
        free(v);
        qc->nomem = true;
        return MHD_NO;
    }
    rq->query_key[rq->n_query] = k;
    rq->query_value[rq->n_query] = v;
    rq->n_query++;
    return MHD_YES;
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Percent-decoding of the path and of query keys and values
 * (MHD_OPTION_UNESCAPE_CALLBACK). libmicrohttpd's own decodes %00 into a
 * NUL byte, and every C string cut there silently: /v1/examples/mlp%00.json
 * served mlp, /index.html%00.js the explorer's page, ?loop=scan%00 compiled
 * a scan. Here %00 stays the text "%00", so such a path matches nothing
 * (404) and such a value is refused by name (422). Anything else is
 * decoded as libmicrohttpd does: %HH, and a malformed escape kept as text. */
static size_t unescape_url(void *cls, struct MHD_Connection *c, char *s)
{
    char *out = s;
    const char *in = s;
    while (*in) {
        int hi = in[0] == '%' ? hex_digit(in[1]) : -1;
        int lo = hi >= 0 ? hex_digit(in[2]) : -1;
        if (lo >= 0 && (hi | lo) != 0) {
            *out++ = (char)(hi * 16 + lo);
            in += 3;
        } else {
            *out++ = *in++;
        }
    }
    *out = '\0';
    return (size_t)(out - s);
}

static enum MHD_Result queue_reply(conn_ctx *x)
{
    srv_reply *rp = &x->rp;
    /* The one place every reply passes: a write's (POST's) "cannot record
     * the request" becomes 507 when the store failed for lack of space.
     * Reads are never 507. */
    if (rp->status == 500 && x->rq.method && strcmp(x->rq.method, "POST") == 0 &&
        store_full(x->s->store))
        srv_reply_error(rp, 507, "insufficient_storage", "",
                        "the store has no room for new results (the disk is full, or "
                        "--max-store-bytes is reached with only pinned or pending "
                        "results left); stored results can still be read");
    if (!rp->body) {
        rp->body = strdup("");
        rp->body_len = 0;
    }
    struct MHD_Response *r = MHD_create_response_from_buffer(
        rp->body_len, rp->body, MHD_RESPMEM_MUST_FREE);
    if (!r)
        return MHD_NO;
    rp->body = NULL; /* the response owns it now */
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
                            rp->content_type ? rp->content_type : "application/json");
    if (rp->allow[0])
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, rp->allow);
    if (rp->cache[0])
        MHD_add_response_header(r, "X-Cache", rp->cache);
    if (rp->status == 429 || rp->status == 503)
        MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1");
    if (atomic_load(&x->s->shutting_down))
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    enum MHD_Result ok = MHD_queue_response(x->conn, (unsigned)rp->status, r);
    MHD_destroy_response(r);
    return ok;
}

/* The second half of a deferred handler, on a worker thread. */
static void run_deferred(void *arg)
{
    conn_ctx *x = arg;
    srv *s = x->s;
    x->rq.in_worker = true;
    if (srv_routes[x->route].handler(s, &x->rq, &x->rp) == SRV_DEFER)
        srv_reply_error(&x->rp, 500, "internal", "", "handler deferred twice");
    atomic_fetch_sub(&s->inflight, 1);
    MHD_resume_connection(x->conn);
}

/* Longer than any request may sensibly take; bounds ms * 10^6 + now. */
#define SRV_MAX_DEADLINE_MS (366LL * 24 * 3600 * 1000)

static int64_t request_deadline(srv *s, const srv_request *rq, bool *bad)
{
    int64_t ms = s->cfg.limits.deadline_ms;
    const char *t = srv_query(rq, "timeout_ms");
    *bad = false;
    if (t) {
        char *end;
        long long v = strtoll(t, &end, 10);
        if (*end || end == t || v <= 0)
            *bad = true;
        else if (v < ms || ms <= 0)
            ms = v;
    }
    /* ?timeout_ms=9223372036854775807 with --deadline-ms 0 (no deadline)
     * overflowed the nanoseconds: undefined behaviour, a deadline in the
     * past in practice. A year is as good as forever here. */
    if (ms > SRV_MAX_DEADLINE_MS)
        ms = SRV_MAX_DEADLINE_MS;
    return ms > 0 ? hs_now_ns() + ms * 1000000 : 0;
}

static enum MHD_Result dispatch(conn_ctx *x, const char *url, const char *method)
{
    srv *s = x->s;
    srv_reply *rp = &x->rp;
    if (atomic_load(&s->shutting_down)) {
        srv_reply_error(rp, 503, "shutting_down", "", "the server is shutting down");
        return queue_reply(x);
    }
    if (x->too_large) {
        srv_reply_error(rp, 413, "too_large", "",
                        "the request body is larger than %zu bytes (limit --max-body)",
                        s->cfg.limits.max_body_bytes);
        return queue_reply(x);
    }
    int r = srv_route_match(method, url, &x->rq, rp->allow, sizeof rp->allow);
    if (r == -1 && srv_static_reply(s, method, url, rp))
        return queue_reply(x);
    if (r == -1) {
        srv_reply_error(rp, 404, "not_found", "", "no route for %s %s", method, url);
        return queue_reply(x);
    }
    if (r == -2) {
        srv_reply_error(rp, 405, "method_not_allowed", "",
                        "%s is not allowed on %s (allowed: %s)", method, url, rp->allow);
        return queue_reply(x);
    }
    rp->allow[0] = '\0';
    x->route = r;
    x->rq.method = method;
    x->rq.url = url;
    query_copy qc = {&x->rq, false, false};
    MHD_get_connection_values(x->conn, MHD_GET_ARGUMENT_KIND, copy_query, &qc);
    if (qc.nomem) {
        srv_reply_error(rp, 503, "host_out_of_memory", "", "out of host memory");
        return queue_reply(x);
    }
    if (qc.too_many) {
        srv_reply_error(rp, 422, "invalid", "?",
                        "more than %d query parameters (no route takes as many)",
                        SRV_MAX_QUERY);
        return queue_reply(x);
    }
    x->rq.body = x->body ? x->body : "";
    x->rq.body_len = x->len;
    x->rq.content_type =
        MHD_lookup_connection_value(x->conn, MHD_HEADER_KIND, "Content-Type");
    bool bad_timeout;
    x->rq.deadline_ns = request_deadline(s, &x->rq, &bad_timeout);
    if (bad_timeout) {
        srv_reply_error(rp, 422, "invalid", "?timeout_ms",
                        "timeout_ms must be a positive integer (milliseconds)");
        return queue_reply(x);
    }
    if (srv_routes[r].handler(s, &x->rq, rp) != SRV_DEFER)
        return queue_reply(x);
    if (s->cfg.inline_work) {
        x->rq.in_worker = true;
        srv_routes[r].handler(s, &x->rq, rp);
        return queue_reply(x);
    }
    if (atomic_fetch_add(&s->inflight, 1) >= s->cfg.limits.max_inflight) {
        atomic_fetch_sub(&s->inflight, 1);
        srv_reply_error(rp, 429, "too_many_requests", "",
                        "%d compiles/runs are already in flight (limit --max-inflight); "
                        "retry later",
                        s->cfg.limits.max_inflight);
        return queue_reply(x);
    }
    x->deferred = true;
    MHD_suspend_connection(x->conn);
    if (srv_pool_submit(s->pool, run_deferred, x) != 0) {
        atomic_fetch_sub(&s->inflight, 1);
        srv_reply_error(rp, 503, "shutting_down", "", "the server is shutting down");
        MHD_resume_connection(x->conn);
    }
    return MHD_YES;
}

/* Request smuggling and ambiguous bodies: libmicrohttpd 0.9.75 reads the
 * first Content-Length and ignores the others, and ignores Content-Length
 * next to Transfer-Encoding. A proxy in front may have read another. */
typedef struct framing {
    int content_lengths;
    bool transfer_encoding;
} framing;

static enum MHD_Result count_framing(void *cls, enum MHD_ValueKind kind,
                                     const char *key, const char *value)
{
    framing *f = cls;
    if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0)
        f->content_lengths++;
    else if (strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0)
        f->transfer_encoding = true;
    return MHD_YES;
}

static const char *bad_framing(struct MHD_Connection *c)
{
    framing f = {0, false};
    MHD_get_connection_values(c, MHD_HEADER_KIND, count_framing, &f);
    if (f.content_lengths > 1)
        return "more than one Content-Length header: the body's length is ambiguous";
    if (f.content_lengths && f.transfer_encoding)
        return "both Content-Length and Transfer-Encoding: the body's length is ambiguous";
    return NULL;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c,
                                  const char *url, const char *method,
                                  const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
    srv *s = cls;
    conn_ctx *x = *con_cls;
    if (!x) {
        x = calloc(1, sizeof *x);
        if (!x)
            return MHD_NO;
        x->s = s;
        x->conn = c;
        x->t0 = srv_now();
        x->route = -1;
        *con_cls = x;
        atomic_fetch_add(&s->active, 1);
        /* The head is complete: from here the body has its own deadline
         * (cleared when the handler runs). */
        watch_set(watch_of(c), s->watchdog ? s->watchdog->body_ns : 0);
        const char *bad = bad_framing(c);
        if (bad) {
            /* Answered before the body: libmicrohttpd closes the
             * connection after this reply. */
            srv_reply_error(&x->rp, 400, "bad_request", "", "%s", bad);
            return queue_reply(x);
        }
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                     MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoull(cl, NULL, 10) > s->cfg.limits.max_body_bytes) {
            x->too_large = true;
            /* A client waiting for "100 Continue" is refused before it sends
             * the body; any other is read to the end and discarded. */
            const char *expect = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                             MHD_HTTP_HEADER_EXPECT);
            if (expect && strcasecmp(expect, "100-continue") == 0)
                return dispatch(x, url, method);
        }
        return MHD_YES;
    }
    if (*upload_size) {
        size_t n = *upload_size;
        *upload_size = 0;
        if (x->too_large || x->rp.status)
            return MHD_YES;
        if (x->len + n > s->cfg.limits.max_body_bytes) {
            x->too_large = true;
            free(x->body);
            x->body = NULL;
            x->len = x->cap = 0;
            return MHD_YES;
        }
        if (x->len + n + 1 > x->cap) {
            size_t cap = x->cap ? x->cap : 4096;
            while (cap < x->len + n + 1)
                cap *= 2;
            char *p = realloc(x->body, cap);
            if (!p)
                return MHD_NO;
            x->body = p, x->cap = cap;
        }
        memcpy(x->body + x->len, upload, n);
        x->len += n;
        x->body[x->len] = '\0';
        return MHD_YES;
    }
    if (x->rp.status && !x->deferred)
        return MHD_YES; /* an early reply is already queued */
    if (x->deferred)
        return queue_reply(x); /* resumed: the worker's reply */
    watch_set(watch_of(c), 0); /* the body is in; the request deadline rules */
    return dispatch(x, url, method);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    srv *s = cls;
    conn_ctx *x = *con_cls;
    if (!x)
        return;
    if (x->rp.status)
        srv_metrics_request(s->metrics, x->route, x->rp.status, srv_now() - x->t0);
    /* A kept-alive connection must send its next head in time too. */
    if (s->watchdog)
        watch_set(watch_of(c), s->watchdog->header_ns);
    ctx_free(x);
    *con_cls = NULL;
    atomic_fetch_sub(&s->active, 1);
}

static int make_addr(const srv_config *c, struct sockaddr_storage *ss,
                     bool *ipv6)
{
    memset(ss, 0, sizeof *ss);
    struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;
    if (inet_pton(AF_INET, c->bind, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)c->port);
        *ipv6 = false;
        return 0;
    }
    if (inet_pton(AF_INET6, c->bind, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)c->port);
        *ipv6 = true;
        return 0;
    }
    return -1;
}

struct MHD_Daemon *srv_daemon_start(srv *s)
{
    struct sockaddr_storage ss;
    bool ipv6;
    if (make_addr(&s->cfg, &ss, &ipv6) != 0) {
        fprintf(stderr, "hloscope serve: --bind '%s' is not an IPv4 or IPv6 address\n",
                s->cfg.bind);
        return NULL;
    }
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL_INTERNAL_THREAD |
                     MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ITC | MHD_USE_TURBO |
                     (ipv6 ? MHD_USE_IPv6 : 0);
    return MHD_start_daemon(
        flags, (uint16_t)s->cfg.port, NULL, NULL, on_request, s,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned)s->cfg.threads,
        MHD_OPTION_CONNECTION_LIMIT, s->cfg.conn_limit,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, s->cfg.per_ip_limit,
        MHD_OPTION_CONNECTION_TIMEOUT, s->cfg.conn_timeout_s,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, s->cfg.conn_memory,
        MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024u,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
        MHD_OPTION_UNESCAPE_CALLBACK, unescape_url, NULL,
        MHD_OPTION_END);
}
