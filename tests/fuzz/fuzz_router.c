/* fuzz_router.c - one HTTP request through the REST server's route table
 * and handlers, in process, without a socket.
 *
 * The input is a request as it would be written on the wire:
 *
 *     POST /v1/compile?device=teach-16m&timeout_ms=500
 *     Content-Length: 42
 *
 *     {"hlo": "HloModule m ..."}
 *
 * (the first line is the method and target; header lines up to an empty
 * line; the rest is the body). The harness does what http_transport.c's
 * on_request and dispatch do with libmicrohttpd's view of it: the
 * Content-Length check, route matching (404/405), the static files of the
 * explorer, the decoded query, the deadline, and a deferred handler run a
 * second time as on a worker; more than SRV_MAX_QUERY query parameters is
 * a 422, and ambiguous framing (two Content-Lengths, or one with
 * Transfer-Encoding) a 400 as in on_request. The server runs with small
 * limits and a store in a temporary directory, which is emptied every
 * STORE_RESET inputs so that a long run does not fill the disk.
 *
 * Invariants: no crash; every reply has a status in 100..599; a JSON
 * reply parses; an error reply (4xx/5xx) carries error.message. */
#include <ftw.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "api.h"
#include "fuzz.h"
#include "http.h"
#include "store.h"

#define MAX_INPUT (256 * 1024)
#define STORE_RESET 2000
#define MAX_DEADLINE_MS 200
#define SMALL_MODEL                                                        \
    "{\"seed\": 1, \"input\": {\"shape\": [2, 8]}, \"layers\": [{\"repeat\": 2, " \
    "\"block\": {\"type\": \"linear\", \"features\": 8}}], \"train\": {\"loss\": " \
    "\"mse\", \"optimizer\": {\"type\": \"sgd\", \"lr\": 0.01}, \"steps\": 2}}"
#define SMALL_HLO                                                          \
    "{\"hlo\": \"HloModule m\\nENTRY e {\\n  x = f32[4] parameter(0)\\n  "   \
    "ROOT y = f32[4] add(x, x)\\n}\\n\"}"

static srv g_srv;
static char g_dir[64];
static int g_inputs;
static bool g_verbose; /* FUZZ_ROUTER_VERBOSE=1: print every reply's start */

static int remove_entry(const char *path, const struct stat *st, int flag,
                        struct FTW *ftw)
{
    return remove(path);
}

static void remove_dir(void)
{
    if (g_dir[0])
        nftw(g_dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}

static void open_store(void)
{
    hs_error e;
    remove_dir();
    /* In memory where there is a tmpfs: the store's writes are the
     * harness's, not the disk's, to time. */
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(g_dir, sizeof g_dir, "%s/hs-fuzz-router-XXXXXX", base);
    if (!mkdtemp(g_dir)) {
        perror("fuzz_router: mkdtemp");
        abort();
    }
    g_srv.cfg.data_dir = g_dir;
    g_srv.store = store_open(g_dir, &e);
    FUZZ_CHECK(g_srv.store, "store_open: %s", e.message);
}

/* Results that GET routes can find: the seeds under corpus/router/ name
 * their ids (ids are content hashes, so they do not change). */
static const char *const k_prime[] = {
    "POST /v1/run\n\n" SMALL_MODEL,
    "POST /v1/compile?loop=scan\n\n" SMALL_MODEL,
    "POST /v1/run\n\n" SMALL_HLO,
};

static void one_request(const uint8_t *data, size_t size, bool print_id);

static void prime(void)
{
    for (size_t k = 0; k < sizeof k_prime / sizeof k_prime[0]; k++)
        one_request((const uint8_t *)k_prime[k], strlen(k_prime[k]), true);
}

static void shutdown_server(void)
{
    store_close(g_srv.store);
    remove_dir();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    srv *s = &g_srv;
    srv_config_defaults(&s->cfg);
    s->cfg.limits.max_layers = 16;
    s->cfg.limits.max_tensor_elements = 1 << 12;
    s->cfg.limits.max_instructions = 20000;
    s->cfg.limits.max_run_flops = 1e6;
    s->cfg.limits.max_run_bytes = 8e6;
    s->cfg.limits.max_render_nodes = 200;
    s->cfg.limits.deadline_ms = MAX_DEADLINE_MS;
    s->started = srv_now();
    open_store();
    int n = 0;
    s->examples = api_examples_load(s->cfg.examples_dir, &n);
    s->lru = store_lru_new(8u << 20);
    s->compile_cache = hs_compile_cache_new(16);
    s->metrics = srv_metrics_new();
    s->flights = api_flights_new();
    FUZZ_CHECK(s->lru && s->compile_cache && s->metrics && s->flights,
               "out of host memory");
    atexit(shutdown_server);
    g_verbose = getenv("FUZZ_ROUTER_VERBOSE") != NULL;
    prime();
    return 0;
}

/* ---- the request as libmicrohttpd would hand it over --------------------- */

static int hex(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Percent-decodes [s, s + n) into a new string ('+' is a space in a
 * query). A %00 stays as written, as the server keeps it (a decoded NUL
 * would cut the path or value short); a raw NUL byte still ends it. */
static char *decode(const char *s, size_t n, bool plus)
{
    char *out = malloc(n + 1), *o = out;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '%' && i + 2 < n && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0 &&
            (hex(s[i + 1]) | hex(s[i + 2])) != 0) {
            *o++ = (char)(hex(s[i + 1]) * 16 + hex(s[i + 2]));
            i += 2;
        } else {
            *o++ = plus && s[i] == '+' ? ' ' : s[i];
        }
    }
    *o = '\0';
    return out;
}

/* false when the query has more than SRV_MAX_QUERY parameters. */
static bool parse_query(const char *q, size_t n, srv_request *rq)
{
    size_t i = 0;
    while (i < n) {
        size_t e = i;
        while (e < n && q[e] != '&')
            e++;
        if (e > i) {
            if (rq->n_query == SRV_MAX_QUERY)
                return false;
            size_t eq = i;
            while (eq < e && q[eq] != '=')
                eq++;
            rq->query_key[rq->n_query] = decode(q + i, eq - i, true);
            rq->query_value[rq->n_query] =
                eq < e ? decode(q + eq + 1, e - eq - 1, true) : strdup("");
            rq->n_query++;
        }
        i = e + 1;
    }
    return true;
}

typedef struct wire {
    char method[16];
    char *path;            /* decoded, without the query */
    const char *query;     /* raw, after '?' */
    size_t query_len;
    int n_lengths;            /* Content-Length headers */
    bool transfer_encoding;
    unsigned long long content_length; /* the first, as libmicrohttpd reads it */
    char *body;            /* NUL-terminated copy */
    size_t body_len;
} wire;

/* Splits the input into request line, headers and body. false when the
 * request line is not "METHOD TARGET". */
static bool read_wire(const char *d, size_t n, wire *w)
{
    memset(w, 0, sizeof *w);
    size_t eol = 0;
    while (eol < n && d[eol] != '\n')
        eol++;
    size_t sp = 0;
    while (sp < eol && d[sp] != ' ')
        sp++;
    if (sp == 0 || sp >= sizeof w->method || sp >= eol)
        return false;
    memcpy(w->method, d, sp);
    size_t t = sp + 1, te = eol;
    if (te > t && d[te - 1] == '\r')
        te--;
    size_t qm = t;
    while (qm < te && d[qm] != '?')
        qm++;
    w->path = decode(d + t, qm - t, false);
    if (qm < te) {
        w->query = d + qm + 1;
        w->query_len = te - qm - 1;
    }
    size_t p = eol + 1;
    while (p < n) {
        size_t e = p;
        while (e < n && d[e] != '\n')
            e++;
        size_t le = e > p && d[e - 1] == '\r' ? e - 1 : e;
        if (le == p) {
            p = e + 1;
            break;
        }
        static const char cl[] = "content-length:", te[] = "transfer-encoding:";
        if (le - p > sizeof cl - 1 && strncasecmp(d + p, cl, sizeof cl - 1) == 0 &&
            w->n_lengths++ == 0) {
            char num[32];
            size_t k = 0;
            for (size_t i = p + sizeof cl - 1; i < le && k + 1 < sizeof num; i++)
                num[k++] = d[i];
            num[k] = '\0';
            w->content_length = strtoull(num, NULL, 10);
        }
        if (le - p >= sizeof te - 1 && strncasecmp(d + p, te, sizeof te - 1) == 0)
            w->transfer_encoding = true;
        p = e + 1;
    }
    if (p > n)
        p = n;
    w->body_len = n - p;
    w->body = malloc(w->body_len + 1);
    memcpy(w->body, d + p, w->body_len);
    w->body[w->body_len] = '\0';
    return true;
}

/* ---- dispatch, as http_transport.c does it --------------------------------- */

static int64_t deadline(const srv_request *rq, bool *bad)
{
    int64_t ms = g_srv.cfg.limits.deadline_ms;
    const char *t = srv_query(rq, "timeout_ms");
    *bad = false;
    if (t) {
        char *end;
        long long v = strtoll(t, &end, 10);
        if (*end || end == t || v <= 0)
            *bad = true;
        else if (v < ms)
            ms = v;
    }
    return hs_now_ns() + ms * 1000000;
}

static void dispatch(wire *w, srv_request *rq, srv_reply *rp)
{
    srv *s = &g_srv;
    size_t max = s->cfg.limits.max_body_bytes;
    if (w->n_lengths > 1 || (w->n_lengths && w->transfer_encoding)) {
        srv_reply_error(rp, 400, "bad_request", "", "the body's length is ambiguous");
        return;
    }
    if ((w->n_lengths && w->content_length > max) || w->body_len > max) {
        srv_reply_error(rp, 413, "too_large", "", "the request body is larger than %zu bytes",
                        max);
        return;
    }
    int r = srv_route_match(w->method, w->path, rq, rp->allow, sizeof rp->allow);
    if (r == -1 && srv_static_reply(s, w->method, w->path, rp))
        return;
    if (r == -1) {
        srv_reply_error(rp, 404, "not_found", "", "no route for %s %s", w->method, w->path);
        return;
    }
    if (r == -2) {
        srv_reply_error(rp, 405, "method_not_allowed", "", "%s is not allowed on %s",
                        w->method, w->path);
        return;
    }
    rp->allow[0] = '\0';
    rq->method = w->method;
    rq->url = w->path;
    if (!parse_query(w->query, w->query_len, rq)) {
        srv_reply_error(rp, 422, "invalid", "?", "more than %d query parameters",
                        SRV_MAX_QUERY);
        return;
    }
    rq->body = w->body;
    rq->body_len = w->body_len;
    bool bad;
    rq->deadline_ns = deadline(rq, &bad);
    if (bad) {
        srv_reply_error(rp, 422, "invalid", "?timeout_ms",
                        "timeout_ms must be a positive integer (milliseconds)");
        return;
    }
    if (srv_routes[r].handler(s, rq, rp) != SRV_DEFER)
        return;
    rq->in_worker = true;
    if (srv_routes[r].handler(s, rq, rp) == SRV_DEFER)
        srv_reply_error(rp, 500, "internal", "", "handler deferred twice");
}

static void check_reply(const srv_reply *rp)
{
    FUZZ_CHECK(rp->status >= 100 && rp->status <= 599, "status %d", rp->status);
    const char *type = rp->content_type ? rp->content_type : "application/json";
    if (strncmp(type, "application/json", 16) != 0)
        return;
    json_error_t je;
    json_t *j = json_loadb(rp->body ? rp->body : "", rp->body_len, 0, &je);
    FUZZ_CHECK(j, "a %d reply is not JSON (%s): %.*s", rp->status, je.text,
               (int)(rp->body_len > 400 ? 400 : rp->body_len), rp->body ? rp->body : "");
    if (rp->status >= 400) {
        const char *msg =
            json_string_value(json_object_get(json_object_get(j, "error"), "message"));
        FUZZ_CHECK(msg && *msg, "a %d error without a message: %.*s", rp->status,
                   (int)(rp->body_len > 400 ? 400 : rp->body_len), rp->body);
    }
    json_decref(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > MAX_INPUT)
        return 0;
    if (++g_inputs % STORE_RESET == 0) {
        store_close(g_srv.store);
        open_store();
        prime();
    }
    one_request(data, size, false);
    return 0;
}

static void one_request(const uint8_t *data, size_t size, bool print_id)
{
    wire w;
    if (read_wire((const char *)data, size, &w)) {
        srv_request rq;
        srv_reply rp;
        memset(&rq, 0, sizeof rq);
        memset(&rp, 0, sizeof rp);
        dispatch(&w, &rq, &rp);
        check_reply(&rp);
        if (print_id || g_verbose)
            fprintf(stderr, "fuzz_router: %s %s: %d %.100s\n", w.method, w.path,
                    rp.status, rp.body ? rp.body : "");
        if (rq.state && rq.state_free)
            rq.state_free(rq.state);
        for (int k = 0; k < rq.n_query; k++) {
            free(rq.query_key[k]);
            free(rq.query_value[k]);
        }
        srv_reply_clear(&rp);
    }
    free(w.path);
    free(w.body);
}
