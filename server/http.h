/*
 * http.h - the REST server's HTTP layer: configuration and limits, the
 * request/reply pair every endpoint handler sees, the route table, the
 * worker pool that runs long work off the libmicrohttpd threads, and the
 * Prometheus metrics.
 *
 * One handler skeleton serves every endpoint:
 *
 *     static srv_outcome get_thing(srv *s, srv_request *rq, srv_reply *rp)
 *     {
 *         if (needs_heavy_work && !rq->in_worker)
 *             return SRV_DEFER;          // called again on a worker thread
 *         return srv_reply_json(rp, 200, obj);
 *     }
 *
 * A handler first runs on the libmicrohttpd thread that read the request.
 * Returning SRV_DEFER suspends the connection (MHD_suspend_connection) and
 * queues the same handler on the worker pool; when it returns there the
 * connection is resumed and the reply sent. Quick answers (health, cached
 * results) therefore never wait behind a compile or a run.
 */
#ifndef HLOSCOPE_HTTP_H
#define HLOSCOPE_HTTP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "hloscope/hs_compile.h"
#include "hloscope/hs_ir.h"

/* ------------------------------------------------------------------------ */
/* Configuration and limits                                                 */
/* ------------------------------------------------------------------------ */

/* Documented defaults (docs/API.md, "Limits"). */
#define SRV_DEFAULT_PORT 8080
#define SRV_DEFAULT_BIND "127.0.0.1"
#define SRV_DEFAULT_DATA "./hloscope-data"
#define SRV_DEFAULT_MAX_BODY (1u << 20)          /* 1 MiB */
#define SRV_DEFAULT_MAX_INSTRUCTIONS 200000
#define SRV_DEFAULT_MAX_RUN_FLOPS 5e10
#define SRV_DEFAULT_MAX_RUN_BYTES 1e10
#define SRV_DEFAULT_MAX_RENDER_NODES 2000
#define SRV_DEFAULT_DEADLINE_MS 60000
#define SRV_DEFAULT_MAX_INFLIGHT 32
#define SRV_DEFAULT_CACHE_BYTES (256u << 20)     /* artefact LRU */
#define SRV_DEFAULT_MAX_STORE_BYTES (1LL << 30)  /* SQLite store, 1 GiB */
#define SRV_DEFAULT_HEADER_TIMEOUT_S 10 /* connect (or last reply) to full head */
#define SRV_DEFAULT_BODY_TIMEOUT_S 30   /* full head to full body */
#define SRV_DEFAULT_WORKER_MEMORY (8ull << 30) /* address space per worker */

typedef struct srv_limits {
    size_t max_body_bytes;       /* 413 beyond */
    int max_json_depth;          /* nesting of arrays/objects */
    int64_t max_layers;          /* blocks after repeat */
    int64_t max_tensor_elements; /* any one tensor */
    int64_t max_instructions;    /* traced module */
    double max_run_flops;        /* what `run` may execute for real */
    double max_run_bytes;        /* bytes `run` may touch for real */
    int64_t max_render_nodes;    /* nodes in one rendered graph */
    int64_t deadline_ms;         /* per request, queueing included */
    int max_inflight;            /* deferred requests at once; 429 beyond */
} srv_limits;

typedef struct srv_config {
    const char *bind;
    int port; /* 0: any free port (printed at start) */
    const char *data_dir;
    const char *examples_dir;
    const char *web_dir; /* built browser explorer (http_static.c) */
    int threads;        /* libmicrohttpd thread pool */
    int workers;        /* compile/run worker pool */
    unsigned conn_limit, per_ip_limit, conn_timeout_s;
    /* Read deadlines against slow clients (slowloris): the request head
     * must arrive within header_timeout_s of the connection opening or of
     * its previous reply, the body within body_timeout_s of the head. */
    unsigned header_timeout_s, body_timeout_s;
    size_t conn_memory;
    size_t cache_bytes;
    int64_t max_store_bytes; /* SQLite store; 0: no cap */
    int64_t shutdown_grace_ms;
    /* Run deferred handlers on the event-loop thread instead of the worker
     * pool: the design this server rejects, kept to measure it against. */
    int inline_work;
    /* Compile and run requests in worker processes (worker_pool.c); 0:
     * in the server process, as the CLI does (to measure). */
    int isolate;
    size_t worker_memory; /* bytes of address space per worker */
    srv_limits limits;
} srv_config;

void srv_config_defaults(srv_config *c);

/* ------------------------------------------------------------------------ */
/* Requests and replies                                                     */
/* ------------------------------------------------------------------------ */

#define SRV_MAX_QUERY 16
#define SRV_MAX_PARAMS 2

typedef struct srv_request {
    const char *method;
    const char *url;
    int n_query;
    char *query_key[SRV_MAX_QUERY];
    char *query_value[SRV_MAX_QUERY];
    int n_params; /* {id}, {name} captured by the route */
    char params[SRV_MAX_PARAMS][160];
    const char *body; /* NUL-terminated */
    size_t body_len;
    const char *content_type; /* the request's Content-Type, or NULL */
    bool in_worker;
    int64_t deadline_ns; /* absolute CLOCK_MONOTONIC */
    void *state;         /* a handler's own, kept from its first call */
    void (*state_free)(void *);
} srv_request;

/* Value of query parameter key, or NULL. */
const char *srv_query(const srv_request *rq, const char *key);

typedef struct srv_reply {
    int status;
    const char *content_type; /* static string */
    char *body;               /* malloc'ed, owned by the reply */
    size_t body_len;
    char allow[64];           /* Allow header for 405 */
    char cache[16];           /* X-Cache header: "hit" / "miss" / "" */
} srv_reply;

typedef enum srv_outcome { SRV_DONE = 0, SRV_DEFER } srv_outcome;

srv_outcome srv_reply_json(srv_reply *rp, int status, json_t *obj); /* steals */
srv_outcome srv_reply_text(srv_reply *rp, int status, const char *type,
                           char *text, size_t len); /* steals text */
srv_outcome srv_reply_copy(srv_reply *rp, int status, const char *type,
                           const void *data, size_t len);
/* {"error": {"code", "message", "path", "line", "column"[, "instruction"]}} */
srv_outcome srv_reply_error(srv_reply *rp, int status, const char *code,
                            const char *path, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* The same from an engine error, with the HTTP status its class maps to. */
srv_outcome srv_reply_hs_error(srv_reply *rp, const hs_error *e);
int srv_status_for(hs_status s);
/* {"error": {...}} from its parts; every string goes through
 * srv_json_string, so the object is valid JSON whatever bytes it quotes. */
json_t *srv_error_object(const char *code, const char *message, const char *path,
                         int line, int column, const char *instruction);
/* A JSON string of any bytes: invalid UTF-8 is written as the text \xNN
 * (jansson refuses such a string, which used to drop an error's message). */
json_t *srv_json_string(const char *s);
/* The longest prefix of s[0..n) that does not end inside a UTF-8
 * character (where to cut a message that is too long). */
size_t srv_utf8_cut(const char *s, size_t n);
/* The error object of an engine error (owned by the caller). */
json_t *srv_error_json(const hs_error *e);
void srv_reply_clear(srv_reply *rp);

/* ------------------------------------------------------------------------ */
/* The server and its routes                                                */
/* ------------------------------------------------------------------------ */

typedef struct srv srv;
typedef srv_outcome (*srv_handler)(srv *s, srv_request *rq, srv_reply *rp);

typedef struct srv_route {
    const char *method;  /* "GET" / "POST" */
    const char *pattern; /* "/v1/results/{id}/hlo"; matched segment-wise */
    const char *name;    /* metrics label, e.g. "results_hlo" */
    srv_handler handler;
} srv_route;

/* The route table (api_routes.c); srv_routes_count entries. */
extern const srv_route srv_routes[];
extern const int srv_routes_count;

/* Finds the route for method+path, filling rq->params. Returns its index,
 * -1 when no pattern matches (404), -2 when a pattern matches but not the
 * method (405; allow receives "GET, POST"). */
int srv_route_match(const char *method, const char *path, srv_request *rq,
                    char *allow, size_t allow_size);

/* ------------------------------------------------------------------------ */
/* Worker pool                                                              */
/* ------------------------------------------------------------------------ */

typedef struct srv_pool srv_pool;
srv_pool *srv_pool_new(int threads);
/* Runs fn(arg) on a worker. Returns -1 when the pool is stopping. */
int srv_pool_submit(srv_pool *p, void (*fn)(void *), void *arg);

/* heap.c: the allocator's settings for a long-running process (called once
 * at the start of the server's pool and of each worker); gives the free pages
 * of every malloc arena back to the system, at most once a second (called
 * when a pooled job ends); the bytes the heap holds (for /metrics; 0 where
 * the C library cannot say). */
void srv_heap_configure(void);
void srv_heap_release(void);
size_t srv_heap_in_use(void);
void srv_pool_free(srv_pool *p); /* finishes queued jobs, joins */

/* ------------------------------------------------------------------------ */
/* Metrics (Prometheus text exposition)                                     */
/* ------------------------------------------------------------------------ */

typedef struct srv_metrics srv_metrics;
srv_metrics *srv_metrics_new(void);
void srv_metrics_free(srv_metrics *m);
/* route: index into srv_routes, or -1 (unmatched). */
void srv_metrics_request(srv_metrics *m, int route, int status,
                         double seconds);
void srv_metrics_compile_cache(srv_metrics *m, int64_t hits, int64_t misses);
void srv_metrics_result_cache(srv_metrics *m, bool hit);
void srv_metrics_artifact_cache(srv_metrics *m, bool hit);
void srv_metrics_render(srv_metrics *m, double seconds);
/* The compile-cache counts so far (a worker process sends them back). */
void srv_metrics_compile_counts(srv_metrics *m, int64_t *hits, int64_t *misses);
/* Buffer assignments made in worker processes: /metrics adds them to
 * this process's hs_buffers_assignment_count. */
void srv_metrics_worker_assignments(srv_metrics *m, int64_t n);
/* The exposition text; extra gauges come from the server. Malloc'ed. */
char *srv_metrics_format(srv_metrics *m, const srv *s);

/* ------------------------------------------------------------------------ */
/* Server state shared by the handlers                                      */
/* ------------------------------------------------------------------------ */

struct store;
struct store_lru;
struct api_examples;
struct api_flights;
struct api_pins;
struct srv_watchdog;
struct srv_workers;

struct srv {
    srv_config cfg;
    struct store *store;       /* SQLite: requests and result summaries */
    struct store_lru *lru;     /* artefacts and summaries, bounded in bytes */
    struct api_examples *examples;
    struct api_flights *flights; /* ids being computed */
    struct api_pins *pins;     /* results never evicted from the store */
    struct srv_watchdog *watchdog; /* read deadlines of open connections */
    hs_compile_cache *compile_cache;
    struct srv_workers *workers; /* compile/run processes; NULL: in process */
    srv_metrics *metrics;
    srv_pool *pool;
    atomic_bool shutting_down;
    atomic_bool cancel;        /* set at shutdown: compiles and runs stop */
    atomic_int inflight;       /* deferred handlers queued or running */
    atomic_int active;         /* requests between first byte and reply sent */
    double started;            /* CLOCK_MONOTONIC seconds */
};

int cli_serve(int argc, char **argv);
/* Serves a file of the browser explorer for a GET no route matches. */
bool srv_static_reply(const srv *s, const char *method, const char *url, srv_reply *rp);
double srv_now(void);

#endif
