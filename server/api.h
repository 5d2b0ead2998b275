/*
 * api.h - the REST endpoints: request canonicalization and ids, building a
 * program (trace or parse, then compile) from a request, result summaries,
 * and the handlers the route table points to.
 *
 * A result is content-addressed: its id is the XXH3-128 (hex) of the
 * canonical request
 *     {"body": <model or {"hlo": ...}>, "endpoint": "compile",
 *      "query": {<overrides>}}
 * dumped with JSON_SORT_KEYS | JSON_COMPACT. The same request always gets
 * the same id, so a repeated POST is answered from the store and a result
 * link can be recomputed from its row after a restart.
 */
#ifndef HLOSCOPE_API_H
#define HLOSCOPE_API_H

#include <jansson.h>

#include "hloscope/hs_compile.h"
#include "hloscope/hs_model.h"
#include "hloscope/hs_program.h"
#include "hloscope/hs_steps.h"
#include "http.h"

#define API_ID_LEN 32

/* ---- requests ---------------------------------------------------------- */

typedef struct api_request {
    char endpoint[16];  /* "compile" | "run" | "compare" */
    json_t *canonical;  /* {"body", "endpoint", "query"} (owned) */
    char *text;         /* canonical text, malloc'ed */
    char id[API_ID_LEN + 1];
} api_request;

/* Parses rq's body and query into a canonical request. On bad input fills
 * rp (400/413/422) and returns -1. */
int api_request_parse(srv *s, const char *endpoint, const srv_request *rq,
                      api_request *ar, srv_reply *rp);
/* Rebuilds a request from its stored canonical text. */
int api_request_from_text(const char *text, api_request *ar, hs_error *e);
/* A request for endpoint with body and query (both borrowed): its
 * canonical form and id. */
int api_request_make(const char *endpoint, json_t *body, json_t *query,
                     api_request *ar);
void api_request_free(api_request *ar);
/* Drops overrides that only restate the default (mode=forward), so that
 * they do not change a request's id. */
void api_query_normalize(json_t *q);
/* XXH3-128 hex of text. */
void api_hash_id(const char *text, size_t len, char out[API_ID_LEN + 1]);
/* Is s a well-formed id (32 lowercase hex digits)? */
bool api_id_valid(const char *s);

/* ---- programs ------------------------------------------------------------ */

/* A request's program (hs_program.h): the engine traces or parses the body,
 * compiles it and keeps its buffer assignment, estimate and memory check;
 * the server adds its policy (size and run limits, deadline, cache). */
typedef struct api_program {
    hs_program *prog;   /* owned; NULL until built */
    /* prog's executable and device name, for the result handlers */
    hs_executable *exe;
    char device[64];
    /* An executable beyond the device's HBM: XLA's whole report (owned),
     * which hs_error's message cannot hold. With exe set, a compile
     * request kept the program as a result flagged out_of_memory. */
    char *oom_report;
} api_program;

/* Traces or parses body with query's overrides and compiles it (cache and
 * deadline from s and deadline_ns). A program whose peak exceeds the
 * device's HBM is built all the same, with p->oom_report, unless for_run
 * (then it is HS_ERR_OOM). With "mode": "train" in query the
 * program is the model's training step. for_run also checks that the run
 * fits the server's run limits (on the program's estimate, before any
 * tensor exists) and then draws weights and arguments. */
int api_program_build(srv *s, json_t *body, json_t *query, bool for_run,
                      int64_t deadline_ns, api_program *p, hs_error *e);
const hs_module *api_program_traced(const api_program *p);
/* The error object for e from building or running p: e's, with the whole
 * out-of-memory report as its message when p has one. */
json_t *api_program_error_json(const api_program *p, const hs_error *e);
void api_program_free(api_program *p);
/* The run limits (--max-run-flops, --max-run-bytes) against `runs`
 * executions of prog as its estimate costs them (a model's weights
 * added once); what is the work called in the message. */
int api_check_run_limits(srv *s, hs_program *prog, double runs, const char *what,
                         hs_error *e);

/* ---- results ------------------------------------------------------------- */

/* What a compile / run / compare request produced, in the form the server
 * stores: computed in the server process (the CLI's path, --isolate 0) or
 * in a worker process that sends it back (worker_pool.c), then committed
 * by the server, which alone holds the store and the LRU. */
typedef struct api_artefact {
    char key[96];     /* "<id>/hlo/traced" */
    const char *type; /* static content type */
    char *data;       /* malloc'ed */
    size_t len;
} api_artefact;

typedef struct api_outcome {
    int status;      /* HTTP status */
    char *summary;   /* the result, or an error object (JSON text) */
    char *metrics;   /* compile report and metrics (JSON text), or NULL */
    bool keep;       /* store it: a result, or an error the same input
                        always gives (400, 422, a crash) */
    api_artefact artefacts[2]; /* HLO text for the LRU */
    int n_artefacts;
    /* /v1/compare keeps each variant as a compile result of its own */
    struct {
        char *request, *summary, *metrics;
        char id[API_ID_LEN + 1];
    } variants[2];
    int n_variants;
    bool out_of_memory; /* the engine ran out of host memory (HS_ERR_NOMEM) */
    /* counted in a worker process, added to the server's /metrics */
    int64_t compile_hits, compile_misses, buffer_assignments;
} api_outcome;

/* Computes ar in this process into out (nothing stored). */
void api_execute_compute(srv *s, const api_request *ar, int64_t deadline_ns,
                         api_outcome *out);
/* Stores out (result, artefacts, variants, counters) under ar's id. */
void api_outcome_commit(srv *s, const api_request *ar, const api_outcome *out);
/* out from an error object (code, message) with status; keep: store it. */
void api_outcome_error(api_outcome *out, int status, bool keep, json_t *error);
void api_outcome_free(api_outcome *out);

/* The compile summary of p (ids and links included). */
json_t *api_summary_compile(const api_request *ar, const api_program *p);
json_t *api_metrics_json(const api_program *p);
/* Device memory of a compiled program: its buffer assignment (peak per
 * memory space, stats, live ranges with timeline). */
json_t *api_program_memory_json(const api_program *p, bool timeline);
json_t *api_links(const char *id, const char *endpoint);
/* The same for a module alone (assigns its buffers again; prefer
 * api_program_memory_json). */
json_t *api_memory_json(const hs_module *m, const char *device, bool timeline);
json_t *api_compare(srv *s, const api_request *ar, int64_t deadline_ns,
                    api_outcome *out, hs_error *e);
/* Marks the pending request id (NULL: every pending request, at start) as
 * interrupted, saying why: a GET then answers 500 `interrupted` instead of
 * computing it again (api_results.c). */
void api_mark_interrupted(srv *s, const char *id, const char *why);

/* The results that are never evicted from the store: those of the example
 * models (api_request.c). api_pins_match is a store_pin_fn. */
typedef struct api_pins api_pins;
api_pins *api_pins_new(srv *s);
/* Changes when the set of pinned bodies does (store_set_pins). */
uint32_t api_pins_generation(const api_pins *p);
void api_pins_free(api_pins *p);
bool api_pins_match(const char *request, void *user);

/* ---- steps (api_steps.c) -------------------------------------------------- */

#define API_STEPS_DEFAULT 10
#define API_STEPS_MAX 100
#define API_STEPS_MAX_QUEUE 64

/* The settings of GET /v1/results/{id}/steps.json|svg. */
typedef struct api_steps_params {
    int64_t steps;         /* ?steps, 1..API_STEPS_MAX */
    int queue;             /* ?queue, 0..API_STEPS_MAX_QUEUE */
    double op_overhead_us; /* ?frontend's preset or ?op_overhead_us */
    const char *frontend;  /* preset name, "custom" or "hloscope" (static) */
    bool train;            /* ?mode=train */
} api_steps_params;

/* Reads and checks the query (422 with path ?name on a bad value). */
int api_steps_params_parse(const srv_request *rq, api_steps_params *p, hs_error *e);
/* The normalized settings, for the artefact cache key. */
void api_steps_key(const api_steps_params *p, char *out, size_t size);
/* hs_steps_run on the model of a stored run request (canonical text) with
 * its overrides; summary_text is the stored summary (must be a run's). The
 * steps stop at deadline_ns (0: none) or once *cancel is set (the server's
 * shutdown flag; may be NULL) with HS_ERR_CANCELLED (503). */
int api_steps_run(const char *request_text, const char *summary_text,
                  const api_steps_params *p, int64_t deadline_ns,
                  atomic_bool *cancel, hs_steps_result *r, hs_error *e);
/* hs_steps_json plus the result id. */
json_t *api_steps_json(const char *id, const hs_steps_result *r);
/* The result again from that JSON text (enough to draw its chart). */
int api_steps_from_json(const char *text, hs_steps_result *r);

/* ---- requests in flight (api_flights.c) ---------------------------------- */

typedef struct api_flights api_flights;
typedef enum api_flight {
    API_FLIGHT_OWNER,     /* compute it, then api_flight_end */
    API_FLIGHT_WAITED,    /* another request computed it: look in the store */
    API_FLIGHT_TIMEOUT,   /* still computed elsewhere at the deadline */
    API_FLIGHT_UNTRACKED  /* host OOM: compute it without sharing */
} api_flight;

api_flights *api_flights_new(void);
void api_flights_free(api_flights *f);
/* Claims id, or waits (until deadline_ns, 0 = none) while another request
 * holds it. */
api_flight api_flight_begin(api_flights *f, const char *id, int64_t deadline_ns);
void api_flight_end(api_flights *f, const char *id);

/* ---- examples ------------------------------------------------------------ */

typedef struct api_examples api_examples;
api_examples *api_examples_load(const char *dir, int *count);
void api_examples_free(api_examples *x);

/* ---- handlers (api_*.c), listed in the route table (api_routes.c) ------- */

srv_outcome api_healthz(srv *s, srv_request *rq, srv_reply *rp);
srv_outcome api_prometheus(srv *s, srv_request *rq, srv_reply *rp);
srv_outcome api_openapi(srv *s, srv_request *rq, srv_reply *rp);
srv_outcome api_devices(srv *s, srv_request *rq, srv_reply *rp);
srv_outcome api_examples_list(srv *s, srv_request *rq, srv_reply *rp);
srv_outcome api_example_get(srv *s, srv_request *rq, srv_reply *rp);
srv_outcome api_post_compile(srv *s, srv_request *rq, srv_reply *rp);
srv_outcome api_post_run(srv *s, srv_request *rq, srv_reply *rp);
srv_outcome api_post_compare(srv *s, srv_request *rq, srv_reply *rp);
srv_outcome api_result_summary(srv *s, srv_request *rq, srv_reply *rp);
srv_outcome api_result_hlo(srv *s, srv_request *rq, srv_reply *rp);
srv_outcome api_result_graph_svg(srv *s, srv_request *rq, srv_reply *rp);
srv_outcome api_result_graph_dot(srv *s, srv_request *rq, srv_reply *rp);
srv_outcome api_result_graph_json(srv *s, srv_request *rq, srv_reply *rp);
srv_outcome api_result_search(srv *s, srv_request *rq, srv_reply *rp);
srv_outcome api_result_memory_json(srv *s, srv_request *rq, srv_reply *rp);
srv_outcome api_result_memory_svg(srv *s, srv_request *rq, srv_reply *rp);
srv_outcome api_result_metrics(srv *s, srv_request *rq, srv_reply *rp);
srv_outcome api_result_source(srv *s, srv_request *rq, srv_reply *rp);
srv_outcome api_result_whatif_json(srv *s, srv_request *rq, srv_reply *rp);
srv_outcome api_result_diff(srv *s, srv_request *rq, srv_reply *rp);
/* A result's artefact `kind` (graph.svg, whatif.json, ...): answered from
 * the LRU, else made by make in the supervised worker from the stored
 * request (its program rebuilt first when build), then cached. */
struct store_row;
typedef int (*api_artefact_fn)(srv *s, const srv_request *rq, const char *id,
                               const api_program *p,
                               const struct store_row *row, srv_reply *rp,
                               hs_error *e);
srv_outcome api_result_artefact(srv *s, srv_request *rq, srv_reply *rp,
                                const char *kind, api_artefact_fn make,
                                bool build);
srv_outcome api_result_steps_json(srv *s, srv_request *rq, srv_reply *rp);
srv_outcome api_result_steps_svg(srv *s, srv_request *rq, srv_reply *rp);

/* The OpenAPI document (docs/openapi.json, embedded at build time). */
extern const char api_openapi_json[];

#endif
