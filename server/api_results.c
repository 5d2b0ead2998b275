/* api_results.c - GET /v1/results/{id} and its artefacts. A summary comes
 * from the LRU or SQLite; an artefact (HLO text, graph, memory timeline)
 * of a finished result comes from the LRU, or is recomputed on a worker
 * from the stored canonical request: the same request traces and compiles
 * to the same module, so a link works after eviction, restart or kill -9.
 * A GET never computes a request that has no result yet (pending,
 * interrupted): only a POST does. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api.h"
#include "api_render.h"
#include "hloscope/hs_hlo_text.h"
#include "store.h"
#include "worker.h"

/* What an artefact handler makes from a compiled program. */
typedef api_artefact_fn artefact_fn;

typedef struct artefact_state {
    store_row row;
} artefact_state;

static void artefact_state_free(void *p)
{
    artefact_state *st = p;
    store_row_free(&st->row);
    free(st);
}

static const char *id_of(srv_request *rq, srv_reply *rp)
{
    const char *id = rq->params[0];
    if (!api_id_valid(id)) {
        srv_reply_error(rp, 404, "not_found", "",
                        "'%s' is not a result id (32 hex digits)", id);
        return NULL;
    }
    return id;
}

static srv_outcome not_found(srv_reply *rp, const char *id)
{
    return srv_reply_error(rp, 404, "not_found", "", "no result with id %s", id);
}

/* A pending row of this process older than the deadline (plus a margin for
 * the work that has no cancel point) is not being computed any more: its
 * request timed out or was cancelled without a result. */
static bool pending_abandoned(const srv *s, const store_row *row)
{
    int64_t ms = s->cfg.limits.deadline_ms;
    return ms > 0 && (int64_t)time(NULL) - row->updated_at > ms / 1000 + 2;
}

/* The stored error of a request that did not finish (malloc'ed text). */
static char *interrupted_text(const char *why)
{
    char msg[512];
    snprintf(msg, sizeof msg,
             "this request did not finish: %s. It is not computed again on its "
             "own (a request that crashes the server would crash it again); POST "
             "the same request to retry it",
             why);
    json_t *err = srv_error_object("interrupted", msg, "", 0, 0, NULL);
    char *text = json_dumps(err, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(err);
    return text;
}

void api_mark_interrupted(srv *s, const char *id, const char *why)
{
    char *text = interrupted_text(why);
    if (text)
        store_fail_pending(s->store, id, 500, text);
    free(text);
}

/* Answers a row that has no result to show: evicted (410), still pending
 * (503, retry the GET), or pending but abandoned (marked interrupted and
 * answered as such). A GET never computes a pending request: the POST that
 * recorded it does, and only a POST computes it again. Returns false when
 * the row has a stored outcome to answer. */
static bool answer_unfinished(srv *s, const char *id, const store_row *row,
                              srv_reply *rp)
{
    if (row->status == STORE_EVICTED) {
        srv_reply_error(rp, 410, "evicted", "",
                        "result %s was evicted to keep the store under "
                        "--max-store-bytes; POST the same request to compute it again",
                        id);
        return true;
    }
    if (row->status != 0)
        return false;
    if (!pending_abandoned(s, row)) {
        srv_reply_error(rp, 503, "pending",
                        "", "result %s is still being computed; GET it again in a moment",
                        id);
        return true;
    }
    /* Kept so that later GETs find it; answered even when the store cannot
     * take the write (a full disk): reads go on. */
    char *text = interrupted_text("it passed its deadline or was cancelled");
    if (text) {
        store_fail_pending(s->store, id, 500, text);
        srv_reply_text(rp, 500, "application/json", text, strlen(text));
    } else {
        srv_reply_error(rp, 503, "host_out_of_memory", "", "out of host memory");
    }
    return true;
}

srv_outcome api_result_summary(srv *s, srv_request *rq, srv_reply *rp)
{
    const char *id = id_of(rq, rp);
    if (!id)
        return SRV_DONE;
    char key[256], *data;
    size_t len;
    const char *type;
    snprintf(key, sizeof key, "%s/summary", id);
    if (store_lru_get(s->lru, key, &data, &len, &type))
        return srv_reply_text(rp, 200, type, data, len);
    store_row row;
    int found = store_get(s->store, id, &row);
    if (found < 0)
        return srv_reply_error(rp, 500, "io", "", "cannot read the store");
    if (found == 0)
        return not_found(rp, id);
    if (!answer_unfinished(s, id, &row, rp)) {
        if (row.status == 200)
            store_lru_put(s->lru, key, row.summary, strlen(row.summary),
                          "application/json");
        srv_reply_text(rp, row.status, "application/json", row.summary,
                       strlen(row.summary));
        row.summary = NULL;
    }
    store_row_free(&row);
    return SRV_DONE;
}

/* The LRU key of an artefact: id, kind and the query that shapes it (for
 * the step timeline, its normalized settings). -1 with *e set when those
 * settings are bad. */
static int artefact_key(const srv_request *rq, const char *id, const char *kind,
                        char *key, size_t size, hs_error *e)
{
    int n = snprintf(key, size, "%s/%s", id, kind);
    if (strncmp(kind, "steps", 5) == 0) {
        api_steps_params sp;
        if (api_steps_params_parse(rq, &sp, e) != 0)
            return -1;
        char q[256];
        api_steps_key(&sp, q, sizeof q);
        snprintf(key + n, size - (size_t)n, "?%s", q);
        return 0;
    }
    /* The query parameters that shape the artefact, whole. A view's
     * ?expand= may list many groups: when they do not fit in the key, the
     * key holds their hash instead, so two views never share an entry. */
    static const char *const shaping[] = {"stage", "expand", "computation",
                                          "around", "hops", "q", "overlay",
                                          /* whatif.json */
                                          "run", "budget", "rerolled",
                                          "offloaded"};
    const int n_shaping = (int)(sizeof shaping / sizeof shaping[0]);
    size_t need = 1;
    for (int k = 0; k < n_shaping; k++) {
        const char *v = srv_query(rq, shaping[k]);
        if (v)
            need += strlen(shaping[k]) + strlen(v) + 2;
    }
    char *q = malloc(need);
    if (!q)
        return hs_error_set(e, HS_ERR_NOMEM, "out of host memory"), -1;
    size_t m = 0;
    q[0] = '\0';
    for (int k = 0; k < n_shaping; k++) {
        const char *v = srv_query(rq, shaping[k]);
        if (v)
            m += (size_t)snprintf(q + m, need - m, "&%s=%s", shaping[k], v);
    }
    if ((size_t)n + m < size) {
        memcpy(key + n, q, m + 1);
    } else {
        char h[API_ID_LEN + 1];
        api_hash_id(q, m, h);
        snprintf(key + n, size - (size_t)n, "#%s", h);
    }
    free(q);
    return 0;
}

/* build: make needs the compiled program (else p is empty). */
static srv_outcome artefact_at(srv *s, srv_request *rq, srv_reply *rp,
                               const char *kind, artefact_fn make, bool build)
{
    const char *id = id_of(rq, rp);
    if (!id)
        return SRV_DONE;
    char key[512], *data;
    size_t len;
    const char *type;
    hs_error ke;
    hs_error_clear(&ke);
    if (artefact_key(rq, id, kind, key, sizeof key, &ke) != 0)
        return srv_reply_hs_error(rp, &ke);
    if (!rq->in_worker) {
        if (store_lru_get(s->lru, key, &data, &len, &type)) {
            srv_metrics_artifact_cache(s->metrics, true);
            snprintf(rp->cache, sizeof rp->cache, "hit");
            return srv_reply_text(rp, 200, type, data, len);
        }
        artefact_state *st = calloc(1, sizeof *st);
        if (!st)
            return srv_reply_error(rp, 503, "host_out_of_memory", "", "out of host memory");
        int found = store_get(s->store, id, &st->row);
        if (found != 1) {
            free(st);
            return found < 0 ? srv_reply_error(rp, 500, "io", "", "cannot read the store")
                             : not_found(rp, id);
        }
        if (strcmp(st->row.endpoint, "compare") == 0) {
            artefact_state_free(st);
            return srv_reply_error(rp, 404, "not_found", "",
                                   "a comparison has no %s of its own: follow "
                                   "a.links or b.links in its summary",
                                   kind);
        }
        if (answer_unfinished(s, id, &st->row, rp)) {
            artefact_state_free(st);
            return SRV_DONE;
        }
        if (st->row.status != 200) {
            srv_reply_text(rp, st->row.status, "application/json", st->row.summary,
                           strlen(st->row.summary));
            st->row.summary = NULL;
            artefact_state_free(st);
            return SRV_DONE;
        }
        rq->state = st;
        rq->state_free = artefact_state_free;
        return SRV_DEFER;
    }
    srv_metrics_artifact_cache(s->metrics, false);
    artefact_state *st = rq->state;
    api_request ar;
    api_program p;
    hs_error e;
    hs_error_clear(&e);
    memset(&p, 0, sizeof p);
    srv_outcome out = SRV_DONE;
    if (api_request_from_text(st->row.request, &ar, &e) != 0)
        return srv_reply_hs_error(rp, &e);
    if ((build && api_program_build(s, json_object_get(ar.canonical, "body"),
                                    json_object_get(ar.canonical, "query"), false,
                                    rq->deadline_ns, &p, &e) != 0) ||
        make(s, rq, id, &p, &st->row, rp, &e) != 0) {
        out = srv_reply_hs_error(rp, &e);
    } else if (rp->status == 200) {
        store_lru_put(s->lru, key, rp->body, rp->body_len, rp->content_type);
        snprintf(rp->cache, sizeof rp->cache, "miss");
    }
    api_program_free(&p);
    api_request_free(&ar);
    return out;
}

srv_outcome api_result_artefact(srv *s, srv_request *rq, srv_reply *rp,
                                const char *kind, api_artefact_fn make,
                                bool build)
{
    return artefact_at(s, rq, rp, kind, make, build);
}

static srv_outcome artefact(srv *s, srv_request *rq, srv_reply *rp,
                            const char *kind, artefact_fn make)
{
    return artefact_at(s, rq, rp, kind, make, true);
}

/* ?stage=traced|optimized (default optimized). */
static const hs_module *stage_module(const srv_request *rq, const api_program *p,
                                     hs_error *e)
{
    const char *stage = srv_query(rq, "stage");
    if (!stage || strcmp(stage, "optimized") == 0)
        return hs_executable_module(p->exe);
    if (strcmp(stage, "traced") == 0)
        return api_program_traced(p);
    hs_error_set(e, HS_ERR_INVALID, "unknown stage '%s' (known: traced, optimized)",
                 stage);
    snprintf(e->path, sizeof e->path, "?stage");
    return NULL;
}

static int make_hlo(srv *s, const srv_request *rq, const char *id,
                    const api_program *p, const store_row *row, srv_reply *rp,
                    hs_error *e)
{
    const hs_module *m = stage_module(rq, p, e);
    if (!m)
        return -1;
    char *text = hs_hlo_print(m);
    srv_reply_text(rp, 200, "text/plain; charset=utf-8", text, text ? strlen(text) : 0);
    return 0;
}

static int make_graph(srv *s, const srv_request *rq, const api_program *p,
                      api_graph_format fmt, srv_reply *rp, hs_error *e)
{
    const hs_module *m = stage_module(rq, p, e);
    if (!m)
        return -1;
    double t0 = srv_now();
    int rc = api_render_graph(s, m, p->device, rq, fmt, rp, e);
    srv_metrics_render(s->metrics, srv_now() - t0);
    return rc;
}

static int make_svg(srv *s, const srv_request *rq, const char *id,
                    const api_program *p, const store_row *row, srv_reply *rp,
                    hs_error *e)
{
    return make_graph(s, rq, p, API_GRAPH_SVG, rp, e);
}

static int make_dot(srv *s, const srv_request *rq, const char *id,
                    const api_program *p, const store_row *row, srv_reply *rp,
                    hs_error *e)
{
    return make_graph(s, rq, p, API_GRAPH_DOT, rp, e);
}

static int make_graph_json(srv *s, const srv_request *rq, const char *id,
                           const api_program *p, const store_row *row,
                           srv_reply *rp, hs_error *e)
{
    return make_graph(s, rq, p, API_GRAPH_JSON, rp, e);
}

static int make_search(srv *s, const srv_request *rq, const char *id,
                       const api_program *p, const store_row *row,
                       srv_reply *rp, hs_error *e)
{
    const hs_module *m = stage_module(rq, p, e);
    return m ? api_render_search(s, m, rq, rp, e) : -1;
}

/* Buffer assignment of the optimized module, the measured peaks of a run
 * result, and the out-of-memory report of a program above HBM. */
static json_t *memory_of(const api_program *p, const store_row *row)
{
    json_t *mem = api_memory_json(hs_executable_module(p->exe), p->device, true);
    /* The timeline of a program that does not fit comes with the report
     * that says by how much (the explorer shows both). */
    if (p->oom_report)
        json_object_set_new(mem, "oom_report", srv_json_string(p->oom_report));
    json_t *sum = row->summary ? json_loads(row->summary, 0, NULL) : NULL;
    json_t *run = json_object_get(sum, "run");
    if (run)
        json_object_set_new(
            mem, "measured",
            json_pack("{s:O, s:O, s:O}", "peak_device_bytes",
                      json_object_get(run, "peak_device_bytes"), "peak_host_bytes",
                      json_object_get(run, "peak_host_bytes"), "sim_seconds",
                      json_object_get(run, "sim_seconds")));
    json_decref(sum);
    return mem;
}

static int make_memory_json(srv *s, const srv_request *rq, const char *id,
                            const api_program *p, const store_row *row,
                            srv_reply *rp, hs_error *e)
{
    srv_reply_json(rp, 200, memory_of(p, row));
    return 0;
}

static int make_memory_svg(srv *s, const srv_request *rq, const char *id,
                           const api_program *p, const store_row *row,
                           srv_reply *rp, hs_error *e)
{
    double t0 = srv_now();
    int rc = api_render_memory(s, hs_executable_module(p->exe), p->device, rq, rp, e);
    srv_metrics_render(s->metrics, srv_now() - t0);
    return rc;
}

/* The step timeline re-runs the stored request's model step by step
 * (api_steps.c); it needs no compiled program of its own. Its host times
 * are measured, so the chart is drawn from the cached steps.json of the
 * same settings when there is one (and caches the JSON it computes): the
 * chart and the JSON show the same figures. With workers the steps run in
 * one (worker_steps.c). 0 and *r filled; 1: rp has the steps' error (a
 * crashed worker's included); -1 with *e set. */
static int steps_of(srv *s, const srv_request *rq, const char *id,
                    const store_row *row, hs_steps_result *r, srv_reply *rp, hs_error *e)
{
    api_steps_params sp;
    char key[512], *data;
    size_t len;
    const char *type;
    if (artefact_key(rq, id, "steps.json", key, sizeof key, e) != 0 ||
        api_steps_params_parse(rq, &sp, e) != 0)
        return -1;
    if (store_lru_get(s->lru, key, &data, &len, &type)) {
        int rc = api_steps_from_json(data, r);
        free(data);
        if (rc == 0)
            return 0;
    }
    if (!row->summary) {
        hs_error_set(e, HS_ERR_INVALID,
                     "the result is not finished; POST its request to compute it");
        return -1;
    }
    /* In a worker process (worker_steps.c): an error is answered as is. */
    api_outcome out;
    api_steps_compute(s, id, row->request, row->summary, &sp, rq->deadline_ns, &out);
    int rc = 1;
    if (out.status == 200 && api_steps_from_json(out.summary, r) == 0) {
        store_lru_put(s->lru, key, out.summary, strlen(out.summary), "application/json");
        rc = 0;
    } else if (out.status != 200 && out.summary) {
        srv_reply_text(rp, out.status, "application/json", out.summary,
                       strlen(out.summary));
        out.summary = NULL;
    } else {
        hs_error_set(e, HS_ERR_NOMEM, "out of host memory");
        rc = -1;
    }
    api_outcome_free(&out);
    return rc;
}

static int make_steps_json(srv *s, const srv_request *rq, const char *id,
                           const api_program *p, const store_row *row,
                           srv_reply *rp, hs_error *e)
{
    api_steps_params sp;
    if (api_steps_params_parse(rq, &sp, e) != 0)
        return -1;
    if (!row->summary) {
        hs_error_set(e, HS_ERR_INVALID,
                     "the result is not finished; POST its request to compute it");
        return -1;
    }
    api_outcome out;
    api_steps_compute(s, id, row->request, row->summary, &sp, rq->deadline_ns, &out);
    if (!out.summary) {
        hs_error_set(e, HS_ERR_NOMEM, "out of host memory");
        return -1;
    }
    srv_reply_text(rp, out.status, "application/json", out.summary, strlen(out.summary));
    out.summary = NULL;
    api_outcome_free(&out);
    return 0;
}

static int make_steps_svg(srv *s, const srv_request *rq, const char *id,
                          const api_program *p, const store_row *row,
                          srv_reply *rp, hs_error *e)
{
    hs_steps_result r;
    int got = steps_of(s, rq, id, row, &r, rp, e);
    if (got != 0)
        return got < 0 ? -1 : 0; /* 1: rp has the steps' error */
    double t0 = srv_now();
    int rc = api_render_steps(s, &r, rq, rp, e);
    srv_metrics_render(s->metrics, srv_now() - t0);
    hs_steps_result_free(&r);
    return rc;
}

srv_outcome api_result_steps_json(srv *s, srv_request *rq, srv_reply *rp)
{
    return artefact_at(s, rq, rp, "steps.json", make_steps_json, false);
}

srv_outcome api_result_steps_svg(srv *s, srv_request *rq, srv_reply *rp)
{
    return artefact_at(s, rq, rp, "steps.svg", make_steps_svg, false);
}

srv_outcome api_result_hlo(srv *s, srv_request *rq, srv_reply *rp)
{
    return artefact(s, rq, rp, "hlo", make_hlo);
}

srv_outcome api_result_graph_svg(srv *s, srv_request *rq, srv_reply *rp)
{
    return artefact(s, rq, rp, "graph.svg", make_svg);
}

srv_outcome api_result_graph_dot(srv *s, srv_request *rq, srv_reply *rp)
{
    return artefact(s, rq, rp, "graph.dot", make_dot);
}

srv_outcome api_result_graph_json(srv *s, srv_request *rq, srv_reply *rp)
{
    return artefact(s, rq, rp, "graph.json", make_graph_json);
}

srv_outcome api_result_search(srv *s, srv_request *rq, srv_reply *rp)
{
    return artefact(s, rq, rp, "search", make_search);
}

srv_outcome api_result_memory_json(srv *s, srv_request *rq, srv_reply *rp)
{
    return artefact(s, rq, rp, "memory.json", make_memory_json);
}

srv_outcome api_result_memory_svg(srv *s, srv_request *rq, srv_reply *rp)
{
    return artefact(s, rq, rp, "memory.svg", make_memory_svg);
}

/* The stored row of the result the path names: true with *id and *row
 * filled (free the row), false with the reply made (a malformed or unknown
 * id, an unreadable store). */
static bool stored_row(srv *s, srv_request *rq, srv_reply *rp, const char **id,
                       store_row *row)
{
    if (!(*id = id_of(rq, rp)))
        return false;
    int found = store_get(s->store, *id, row);
    if (found < 0)
        srv_reply_error(rp, 500, "io", "", "cannot read the store");
    else if (found == 0)
        not_found(rp, *id);
    return found == 1;
}

/* The compile report and metrics are small and stored with the result. */
srv_outcome api_result_metrics(srv *s, srv_request *rq, srv_reply *rp)
{
    const char *id;
    store_row row;
    if (!stored_row(s, rq, rp, &id, &row))
        return SRV_DONE;
    srv_outcome out;
    if (answer_unfinished(s, id, &row, rp)) {
        out = SRV_DONE;
    } else if (row.metrics) {
        out = srv_reply_text(rp, 200, "application/json", row.metrics,
                             strlen(row.metrics));
        row.metrics = NULL;
    } else if (row.status != 0 && row.status != 200 && row.summary) {
        out = srv_reply_text(rp, row.status, "application/json", row.summary,
                             strlen(row.summary));
        row.summary = NULL;
    } else if (strcmp(row.endpoint, "compare") == 0) {
        out = srv_reply_error(rp, 404, "not_found", "",
                              "a comparison has no metrics of its own: follow "
                              "a.links or b.links in its summary");
    } else {
        out = srv_reply_error(rp, 404, "not_found", "", "result %s has no metrics", id);
    }
    store_row_free(&row);
    return out;
}

/* What an editor shows of a source: HLO text verbatim, a model indented;
 * side: a compare side ({"hlo"} or {"model"} with its overrides). */
static char *source_text(json_t *src, bool side)
{
    json_t *hlo = json_object_get(src, "hlo");
    if (json_is_string(hlo))
        return strdup(json_string_value(hlo));
    json_t *model = side ? json_object_get(src, "model") : src;
    return model ? json_dumps(model, JSON_INDENT(2) | JSON_SORT_KEYS) : NULL;
}

/* The source of a result: the request it was computed from, as the store
 * keeps it (endpoint, body, overrides), so that a link can reopen the
 * editor with exactly what produced the result. Known as soon as the
 * request is recorded, whatever its outcome: a request that failed (out of
 * memory, say) has a source worth sharing too. Only an evicted row has
 * lost it (410). "text" is what an editor shows: the HLO text verbatim, or
 * the model description indented (the store keeps it canonical: keys
 * sorted, whitespace dropped, so the id does not depend on them). */
srv_outcome api_result_source(srv *s, srv_request *rq, srv_reply *rp)
{
    const char *id;
    store_row row;
    if (!stored_row(s, rq, rp, &id, &row))
        return SRV_DONE;
    srv_outcome out;
    api_request ar;
    hs_error e;
    hs_error_clear(&e);
    if (row.status == STORE_EVICTED) {
        out = srv_reply_error(rp, 410, "evicted", "",
                              "result %s was evicted to keep the store under "
                              "--max-store-bytes: its source went with it",
                              id);
    } else if (api_request_from_text(row.request, &ar, &e) != 0) {
        out = srv_reply_hs_error(rp, &e);
    } else {
        json_t *body = json_object_get(ar.canonical, "body");
        /* A comparison's model is its body's "model"; one of two sources
         * shows side a's as "text" and side b's as "text_b". */
        bool compare = strcmp(row.endpoint, "compare") == 0;
        bool pair = compare && !json_object_get(body, "model");
        json_t *model = pair ? json_object_get(body, "a")
                        : compare ? json_object_get(body, "model")
                                  : body;
        char *text = source_text(model, pair), *text_b = NULL;
        if (pair && !(text_b = source_text(json_object_get(body, "b"), true))) {
            free(text);
            text = NULL;
        }
        json_t *hlo = json_object_get(model, "hlo");
        json_t *o = text ? json_pack("{s:s, s:s, s:s, s:O, s:O, s:s, s:i}", "id", id,
                                     "endpoint", row.endpoint, "input",
                                     json_is_string(hlo) ? "hlo" : "model", "body",
                                     body, "query",
                                     json_object_get(ar.canonical, "query"),
                                     "text", text, "status", row.status)
                         : NULL;
        if (o && text_b)
            json_object_set_new(o, "text_b", json_string(text_b));
        free(text);
        free(text_b);
        out = o ? srv_reply_json(rp, 200, o)
                : srv_reply_error(rp, 503, "host_out_of_memory", "",
                                  "out of host memory");
        api_request_free(&ar);
    }
    store_row_free(&row);
    return out;
}
