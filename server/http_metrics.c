/* http_metrics.c - the server's Prometheus metrics: requests by route and
 * status, a latency histogram per route, compile-cache and result-cache
 * hits and misses, render times. Lock-free counters (C11 atomics). */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_buffers.h"
#include "http.h"
#include "store.h"

#define MAX_ROUTES 48 /* srv_routes plus "unmatched" */
static const int k_statuses[] = {200, 304, 400, 404, 405, 413, 422,
                                 429, 500, 501, 503};
#define N_STATUS ((int)(sizeof k_statuses / sizeof k_statuses[0]) + 1)
static const double k_buckets[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                   0.05,   0.1,   0.25,   0.5,   1,    2.5,
                                   5,      10,    30,     60};
#define N_BUCKETS ((int)(sizeof k_buckets / sizeof k_buckets[0]))

typedef struct histogram {
    atomic_ullong bucket[N_BUCKETS]; /* non-cumulative; summed on output */
    atomic_ullong count;
    atomic_ullong sum_us;
} histogram;

struct srv_metrics {
    atomic_ullong requests[MAX_ROUTES][N_STATUS];
    histogram latency[MAX_ROUTES];
    histogram render;
    atomic_ullong compile_hits, compile_misses;
    atomic_ullong worker_assignments;
    atomic_ullong result_hits, result_misses;
    atomic_ullong artifact_hits, artifact_misses;
};

srv_metrics *srv_metrics_new(void)
{
    return calloc(1, sizeof(srv_metrics));
}

void srv_metrics_free(srv_metrics *m)
{
    free(m);
}

static void observe(histogram *h, double seconds)
{
    int b = 0;
    while (b < N_BUCKETS && seconds > k_buckets[b])
        b++;
    if (b < N_BUCKETS)
        atomic_fetch_add(&h->bucket[b], 1);
    atomic_fetch_add(&h->count, 1);
    atomic_fetch_add(&h->sum_us, (unsigned long long)(seconds * 1e6));
}

static int route_slot(int route)
{
    return route >= 0 && route < MAX_ROUTES - 1 ? route : MAX_ROUTES - 1;
}

void srv_metrics_request(srv_metrics *m, int route, int status, double seconds)
{
    int r = route_slot(route), s = N_STATUS - 1;
    for (int k = 0; k < N_STATUS - 1; k++)
        if (k_statuses[k] == status)
            s = k;
    atomic_fetch_add(&m->requests[r][s], 1);
    observe(&m->latency[r], seconds);
}

void srv_metrics_compile_cache(srv_metrics *m, int64_t hits, int64_t misses)
{
    atomic_fetch_add(&m->compile_hits, (unsigned long long)hits);
    atomic_fetch_add(&m->compile_misses, (unsigned long long)misses);
}

void srv_metrics_compile_counts(srv_metrics *m, int64_t *hits, int64_t *misses)
{
    *hits = (int64_t)atomic_load(&m->compile_hits);
    *misses = (int64_t)atomic_load(&m->compile_misses);
}

void srv_metrics_worker_assignments(srv_metrics *m, int64_t n)
{
    atomic_fetch_add(&m->worker_assignments, (unsigned long long)n);
}

void srv_metrics_result_cache(srv_metrics *m, bool hit)
{
    atomic_fetch_add(hit ? &m->result_hits : &m->result_misses, 1);
}

void srv_metrics_artifact_cache(srv_metrics *m, bool hit)
{
    atomic_fetch_add(hit ? &m->artifact_hits : &m->artifact_misses, 1);
}

void srv_metrics_render(srv_metrics *m, double seconds)
{
    observe(&m->render, seconds);
}

/* A growing string for the exposition text. */
typedef struct sbuf {
    char *p;
    size_t n, cap;
    bool oom;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...)
{
    if (b->oom)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int need = vsnprintf(b->p ? b->p + b->n : NULL,
                             b->p ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        if (need < 0) {
            b->oom = true;
            return;
        }
        if (b->p && b->n + (size_t)need < b->cap) {
            b->n += (size_t)need;
            return;
        }
        size_t cap = b->cap ? b->cap * 2 : 4096;
        while (cap < b->n + (size_t)need + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->p = p, b->cap = cap;
    }
}

static const char *route_label(int r)
{
    return r < srv_routes_count && r < MAX_ROUTES - 1 ? srv_routes[r].name
                                                      : "unmatched";
}

static void histogram_lines(sbuf *b, const char *name, const char *labels,
                            histogram *h)
{
    unsigned long long cum = 0;
    for (int k = 0; k < N_BUCKETS; k++) {
        cum += atomic_load(&h->bucket[k]);
        sb_printf(b, "%s_bucket{%s%sle=\"%g\"} %llu\n", name, labels,
                  *labels ? "," : "", k_buckets[k], cum);
    }
    unsigned long long count = atomic_load(&h->count);
    sb_printf(b, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels,
              *labels ? "," : "", count);
    sb_printf(b, "%s_sum{%s} %.6f\n", name, labels,
              (double)atomic_load(&h->sum_us) * 1e-6);
    sb_printf(b, "%s_count{%s} %llu\n", name, labels, count);
}

char *srv_metrics_format(srv_metrics *m, const srv *s)
{
    sbuf b = {0};
    sb_printf(&b, "# HELP hloscope_http_requests_total HTTP requests by route and status.\n"
                  "# TYPE hloscope_http_requests_total counter\n");
    for (int r = 0; r < MAX_ROUTES; r++) {
        if (r >= srv_routes_count && r != MAX_ROUTES - 1)
            continue;
        for (int k = 0; k < N_STATUS; k++) {
            unsigned long long v = atomic_load(&m->requests[r][k]);
            if (!v)
                continue;
            char st[8];
            if (k < N_STATUS - 1)
                snprintf(st, sizeof st, "%d", k_statuses[k]);
            else
                snprintf(st, sizeof st, "other");
            sb_printf(&b, "hloscope_http_requests_total{route=\"%s\",status=\"%s\"} %llu\n",
                      route_label(r), st, v);
        }
    }
    sb_printf(&b, "# HELP hloscope_http_request_duration_seconds Time from the first byte of a request to its reply, by route.\n"
                  "# TYPE hloscope_http_request_duration_seconds histogram\n");
    for (int r = 0; r < MAX_ROUTES; r++) {
        if (!atomic_load(&m->latency[r].count))
            continue;
        char labels[96];
        snprintf(labels, sizeof labels, "route=\"%s\"", route_label(r));
        histogram_lines(&b, "hloscope_http_request_duration_seconds", labels,
                        &m->latency[r]);
    }
    sb_printf(&b, "# HELP hloscope_compile_cache_hits_total Compiles answered by the compile cache (CachedCompile).\n"
                  "# TYPE hloscope_compile_cache_hits_total counter\n"
                  "hloscope_compile_cache_hits_total %llu\n"
                  "# HELP hloscope_compile_cache_misses_total Compiles that ran the pipeline (UncachedCompile).\n"
                  "# TYPE hloscope_compile_cache_misses_total counter\n"
                  "hloscope_compile_cache_misses_total %llu\n",
              atomic_load(&m->compile_hits), atomic_load(&m->compile_misses));
    sb_printf(&b, "# HELP hloscope_buffer_assignments_total Buffer assignments computed (one per compiled module; hs_buffers_assignment_count).\n"
                  "# TYPE hloscope_buffer_assignments_total counter\n"
                  "hloscope_buffer_assignments_total %lld\n",
              (long long)hs_buffers_assignment_count() +
                  (long long)atomic_load(&m->worker_assignments));
    sb_printf(&b, "# HELP hloscope_result_cache_hits_total POSTs answered from a stored result with the same id.\n"
                  "# TYPE hloscope_result_cache_hits_total counter\n"
                  "hloscope_result_cache_hits_total %llu\n"
                  "# HELP hloscope_result_cache_misses_total POSTs that computed their result.\n"
                  "# TYPE hloscope_result_cache_misses_total counter\n"
                  "hloscope_result_cache_misses_total %llu\n",
              atomic_load(&m->result_hits), atomic_load(&m->result_misses));
    sb_printf(&b, "# HELP hloscope_artifact_cache_hits_total Artefacts (HLO, graphs) served from the in-memory LRU.\n"
                  "# TYPE hloscope_artifact_cache_hits_total counter\n"
                  "hloscope_artifact_cache_hits_total %llu\n"
                  "# HELP hloscope_artifact_cache_misses_total Artefacts recomputed from the stored request.\n"
                  "# TYPE hloscope_artifact_cache_misses_total counter\n"
                  "hloscope_artifact_cache_misses_total %llu\n",
              atomic_load(&m->artifact_hits), atomic_load(&m->artifact_misses));
    sb_printf(&b, "# HELP hloscope_render_duration_seconds Time to render one graph or timeline.\n"
                  "# TYPE hloscope_render_duration_seconds histogram\n");
    histogram_lines(&b, "hloscope_render_duration_seconds", "", &m->render);
    size_t lru_bytes = 0, lru_entries = 0;
    store_lru_usage(s->lru, &lru_bytes, &lru_entries);
    sb_printf(&b, "# HELP hloscope_artifact_cache_bytes Bytes held by the artefact LRU.\n"
                  "# TYPE hloscope_artifact_cache_bytes gauge\n"
                  "hloscope_artifact_cache_bytes %zu\n"
                  "# HELP hloscope_artifact_cache_entries Entries in the artefact LRU.\n"
                  "# TYPE hloscope_artifact_cache_entries gauge\n"
                  "hloscope_artifact_cache_entries %zu\n"
                  "# HELP hloscope_compile_cache_entries Executables in the compile cache.\n"
                  "# TYPE hloscope_compile_cache_entries gauge\n"
                  "hloscope_compile_cache_entries %d\n"
                  "# HELP hloscope_inflight_requests Compiles, runs and renders queued or running.\n"
                  "# TYPE hloscope_inflight_requests gauge\n"
                  "hloscope_inflight_requests %d\n"
                  "# HELP hloscope_heap_bytes Bytes the server process holds on its heap (malloc).\n"
                  "# TYPE hloscope_heap_bytes gauge\n"
                  "hloscope_heap_bytes %zu\n"
                  "# HELP hloscope_uptime_seconds Seconds since the server started.\n"
                  "# TYPE hloscope_uptime_seconds gauge\n"
                  "hloscope_uptime_seconds %.3f\n",
              lru_bytes, lru_entries, hs_compile_cache_size(s->compile_cache),
              atomic_load(&((srv *)s)->inflight), srv_heap_in_use(), srv_now() - s->started);
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    return b.p;
}
