/* http_serve.c - `hloscope serve`'s lifecycle: opens the store and the
 * caches, starts the layout server, the workers and the daemon
 * (http_transport.c), waits for SIGTERM/SIGINT and shuts down gracefully:
 * in-flight work is answered within --shutdown-grace-ms, then cancelled. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "api.h"
#include "http.h"
#include "http_serve.h"
#include "store.h"
#include "worker.h"
#include "hloscope/hs_render.h"

/* Waits until nothing is in flight or the deadline passes. */
static bool drain(srv *s, double until)
{
    while (atomic_load(&s->inflight) > 0 || atomic_load(&s->active) > 0) {
        if (srv_now() > until)
            return false;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return true;
}

/* An evicted result's artefacts leave the LRU with it: its link answers
 * 410 everywhere, not the summary that happened to be cached. */
static void drop_evicted(const char *const *ids, int n, void *user)
{
    srv *s = user;
    if (s->lru)
        store_lru_drop_ids(s->lru, ids, n);
}

static void srv_free(srv *s)
{
    srv_watchdog_stop(s->watchdog);
    srv_pool_free(s->pool);
    srv_workers_free(s->workers);
    hs_render_shutdown();
    store_close(s->store);
    api_pins_free(s->pins);
    store_lru_free(s->lru);
    api_examples_free(s->examples);
    hs_compile_cache_free(s->compile_cache);
    srv_metrics_free(s->metrics);
    api_flights_free(s->flights);
}

int cli_serve(int argc, char **argv)
{
    static srv s; /* lives for the whole process */
    srv_config_defaults(&s.cfg);
    if (srv_parse_serve_args(argc, argv, &s.cfg) != 0)
        return 2;
    s.started = srv_now();
    hs_error e;
    hs_error_clear(&e);
    if (!(s.store = store_open(s.cfg.data_dir, &e))) {
        fprintf(stderr, "hloscope serve: %s: %s\n", s.cfg.data_dir, e.message);
        return 1;
    }
    /* Nothing is being computed yet: a pending row was being computed by a
     * server that died or stopped. It is marked, not computed again. */
    api_mark_interrupted(&s, NULL,
                         "the server stopped (a crash, a kill or a restart) while "
                         "computing it");
    int n_examples = 0;
    s.examples = api_examples_load(s.cfg.examples_dir, &n_examples);
    s.pins = api_pins_new(&s);
    store_set_pins(s.store, api_pins_match, s.pins, api_pins_generation(s.pins));
    store_set_evict_hook(s.store, drop_evicted, &s);
    store_set_limit(s.store, s.cfg.max_store_bytes);
    s.lru = store_lru_new(s.cfg.cache_bytes);
    s.compile_cache = hs_compile_cache_new(256);
    s.metrics = srv_metrics_new();
    s.flights = api_flights_new();

    /* The layout server is forked from this process: do it while there is
     * one thread (docs/RENDER.md). A failure here is retried at the first
     * layout. */
    if (hs_render_init(&e) != HS_OK)
        fprintf(stderr, "hloscope serve: layout server: %s\n", e.message);
    /* Signals go to the thread waiting in sigwait, never to a worker: block
     * them before any thread starts (threads inherit the mask). */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    /* One compile/run process per pool thread (worker.h): spawned, not
     * forked, so starting them among threads is safe. */
    if (s.cfg.isolate && !s.cfg.inline_work &&
        !(s.workers = srv_workers_new(s.cfg.workers, s.cfg.worker_memory, &e))) {
        fprintf(stderr, "hloscope serve: %s\n", e.message);
        srv_free(&s);
        return 1;
    }
    s.pool = srv_pool_new(s.cfg.workers);
    s.watchdog = srv_watchdog_start(&s.cfg);
    if (!s.lru || !s.compile_cache || !s.metrics || !s.flights || !s.pool ||
        !s.watchdog) {
        fprintf(stderr, "hloscope serve: out of host memory\n");
        srv_free(&s);
        return 1;
    }
    struct MHD_Daemon *d = srv_daemon_start(&s);
    if (!d) {
        fprintf(stderr, "hloscope serve: cannot listen on %s:%d\n", s.cfg.bind, s.cfg.port);
        srv_free(&s);
        return 1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    unsigned port = info ? info->port : (unsigned)s.cfg.port;
    bool v6 = strchr(s.cfg.bind, ':') != NULL;
    printf("hloscope: serving http://%s%s%s:%u/ (data %s, %d examples, %d threads, "
           "%d workers)\n",
           v6 ? "[" : "", s.cfg.bind, v6 ? "]" : "", port, s.cfg.data_dir, n_examples,
           s.cfg.threads, s.cfg.workers);
    fflush(stdout);
    store_usage u;
    store_get_usage(s.store, &u);
    fprintf(stderr,
            "hloscope: store %.1f MiB used of %.0f MiB (--max-store-bytes), %lld results "
            "(%lld pinned, %lld evicted)\n",
            (double)u.bytes / 1048576.0, (double)s.cfg.max_store_bytes / 1048576.0,
            (long long)u.rows, (long long)u.pinned, (long long)u.evicted);

    int sig = 0;
    while (sigwait(&set, &sig) != 0)
        ;
    /* Stop accepting, answer what is in flight (new requests on open
     * connections get 503), then cancel what is still running: compiles,
     * layouts, device runs, training and step runs all watch s.cancel. */
    fprintf(stderr, "hloscope: %s: shutting down\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    atomic_store(&s.shutting_down, true);
    MHD_socket listener = MHD_quiesce_daemon(d);
    double until = srv_now() + (double)s.cfg.shutdown_grace_ms * 1e-3;
    bool drained = drain(&s, until);
    if (!drained) {
        atomic_store(&s.cancel, true);
        drained = drain(&s, srv_now() + 2.0);
    }
    if (!drained) {
        /* Something did not stop within 2 s of the cancel (a trace or an
         * autodiff, which have no cancel point): leave without waiting for
         * it. The store is consistent (WAL). */
        fprintf(stderr, "hloscope: %d requests still running; exiting\n",
                atomic_load(&s.inflight));
        fflush(stderr);
        _exit(0);
    }
    MHD_stop_daemon(d);
    if (listener != MHD_INVALID_SOCKET)
        close(listener);
    srv_free(&s);
    fprintf(stderr, "hloscope: stopped\n");
    return 0;
}
