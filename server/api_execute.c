/* api_execute.c - POST /v1/compile, /v1/run and /v1/compare: one skeleton.
 * On the libmicrohttpd thread the request is canonicalized and looked up
 * by id (a stored result is answered at once); otherwise it is recorded as
 * pending and deferred to a pool thread, which has it computed, stores the
 * outcome and answers. The computing happens in a worker process
 * (worker_pool.c: a crash, an abort or runaway memory costs that request,
 * not the server), or with --isolate 0 in this process, as the CLI does. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "hloscope/hs_device.h"
#include "hloscope/hs_hlo_text.h"
#include "hloscope/hs_npy.h"
#include "store.h"
#include "hloscope/hs_train.h"
#include "worker.h"

/* The traced and optimized HLO text, for the LRU (the server commits). */
static void cache_hlo(const api_request *ar, const api_program *p, api_outcome *out)
{
    const hs_module *mods[2] = {api_program_traced(p), hs_executable_module(p->exe)};
    static const char *const stage[2] = {"traced", "optimized"};
    for (int k = 0; k < 2; k++) {
        char *text = hs_hlo_print(mods[k]);
        if (!text)
            continue;
        api_artefact *a = &out->artefacts[out->n_artefacts++];
        snprintf(a->key, sizeof a->key, "%s/hlo/%s", ar->id, stage[k]);
        a->type = "text/plain; charset=utf-8";
        a->data = text;
        a->len = strlen(text);
    }
}

/* An output's shape (whole, however long), and at every executed type its
 * sum and first elements, as the CLI's run prints them. */
static json_t *output_json(const hs_tensor *t)
{
    char *shape = hs_shape_string(&t->shape, false);
    json_t *o = shape ? json_pack("{s:s}", "shape", shape) : NULL;
    free(shape);
    hs_tensor_summary sm = hs_tensor_summarize(t);
    if (o && sm.ok) {
        json_t *first = json_array();
        for (int i = 0; i < sm.n_first; i++)
            json_array_append_new(first, json_real(sm.first[i]));
        json_object_set_new(o, "sum", json_real(sm.sum));
        json_object_set_new(o, "first", first);
    }
    return o;
}

static json_t *stats_json(const hs_run_stats *st)
{
    return json_pack("{s:f, s:f, s:f, s:I, s:I, s:I, s:f}", "sim_seconds",
                     st->sim_seconds, "flops", st->flops, "bytes_accessed",
                     st->bytes_accessed, "instructions", (json_int_t)st->instructions,
                     "peak_device_bytes", (json_int_t)st->peak_device_bytes,
                     "peak_host_bytes", (json_int_t)st->peak_host_bytes,
                     "wall_seconds", st->wall_seconds);
}

/* Simulated device seconds of each step, for /steps.json. */
static void record_step(int64_t step, float loss, const hs_run_stats *st, void *user)
{
    (void)step, (void)loss;
    json_array_append_new(user, json_real(st->sim_seconds));
}

/* The model's training: with ?mode=train the program is the step already;
 * otherwise the engine builds and compiles the step from the forward
 * program's model (hs_program_train_step: through the shared cache, against
 * the device's HBM, so a step that cannot fit fails with XLA's report
 * before it runs). The run limits are checked for all steps on the step's
 * estimate, then the steps run. Returns the "train" object, or NULL with
 * *e set. */
static json_t *train_steps(srv *s, api_program *p, int64_t deadline_ns,
                           hs_run_stats *last, hs_error *e)
{
    hs_program *fwd = p->prog, *step = fwd;
    if (!fwd->train) {
        hs_program_options o = fwd->options;
        o.train = true;
        o.deadline_ns = deadline_ns;
        if (deadline_ns > 0 && hs_now_ns() >= deadline_ns) {
            hs_error_set(e, HS_ERR_CANCELLED, "deadline exceeded before training");
            return NULL;
        }
        step = hs_program_train_step(fwd, &o, e);
        if (!step)
            return NULL;
        srv_metrics_compile_cache(s->metrics, step->cache_hit ? 1 : 0,
                                  step->cache_hit ? 0 : 1);
    }
    json_t *out = NULL, *step_sim = json_array();
    double steps = (double)fwd->model->train.steps;
    char what[64];
    snprintf(what, sizeof what, "%g training steps", steps);
    if (api_check_run_limits(s, step, steps, what, e) != 0)
        goto done;
    hs_train_run_options o;
    memset(&o, 0, sizeof o);
    o.module = step->optimized;
    o.on_step = record_step;
    o.user = step_sim;
    o.deadline_ns = deadline_ns;
    o.cancel = &s->cancel;
    hs_train_result r;
    memset(&r, 0, sizeof r);
    int64_t t0 = hs_now_ns();
    if (hs_program_materialize(fwd, e) != HS_OK ||
        hs_train_run(step->train, fwd->device, &o, &r, e) != HS_OK)
        goto done;
    hs_metrics_record_time(fwd->metrics, HS_METRIC_EXECUTE_TIME, hs_now_ns() - t0);
    json_t *losses = json_array();
    for (int64_t k = 0; k < r.steps; k++)
        json_array_append_new(losses, json_real(r.losses[k]));
    hs_timing build = hs_metrics_timing(step->metrics, HS_METRIC_TRACE_TIME);
    out = json_pack("{s:I, s:o, s:I, s:f, s:f, s:s, s:O, s:o, s:o}", "steps",
                    (json_int_t)r.steps, "losses", losses, "step_instructions",
                    (json_int_t)hs_module_instruction_count(step->optimized),
                    "build_seconds", (double)build.total_ns * 1e-9, "compile_seconds",
                    (double)hs_executable_report(step->exe)->total_ns * 1e-9,
                    "compile_cache", step->cache_hit ? "hit" : "miss",
                    "step_sim_seconds", step_sim, "last_step", stats_json(&r.last),
                    "total", stats_json(&r.total));
    if (last)
        *last = r.last;
    hs_train_result_free(&r);
done:
    json_decref(step_sim);
    if (step != fwd) {
        /* The step's compile counters belong to the request's metrics. */
        hs_metrics_counter_add(fwd->metrics, HS_METRIC_CACHED_COMPILE,
                               hs_metrics_counter(step->metrics, HS_METRIC_CACHED_COMPILE));
        hs_metrics_counter_add(fwd->metrics, HS_METRIC_UNCACHED_COMPILE,
                               hs_metrics_counter(step->metrics, HS_METRIC_UNCACHED_COMPILE));
        hs_timing ct = hs_metrics_timing(step->metrics, HS_METRIC_COMPILE_TIME);
        if (ct.count)
            hs_metrics_record_time(fwd->metrics, HS_METRIC_COMPILE_TIME, ct.total_ns);
        hs_program_free(step);
    }
    return out;
}

/* Executes p on its device and adds "run" and "outputs" to sum. The run
 * stops at the request's deadline (HS_ERR_CANCELLED -> 503); the run
 * limits were checked when the program was built. */
static int run_program(srv *s, api_program *p, json_t *sum, int64_t deadline_ns,
                       hs_error *e)
{
    if (deadline_ns > 0 && hs_now_ns() > deadline_ns) {
        hs_error_set(e, HS_ERR_CANCELLED,
                     "deadline exceeded before running (limit --deadline-ms or ?timeout_ms)");
        return -1;
    }
    hs_program *prog = p->prog;
    if (prog->train) {
        /* ?mode=train: the program is the training step; running it is
         * training: "train" has the losses, "run" the last step. */
        hs_run_stats last;
        memset(&last, 0, sizeof last);
        json_t *t = train_steps(s, p, deadline_ns, &last, e);
        if (!t)
            return -1;
        json_object_set_new(sum, "train", t);
        json_object_set_new(sum, "run", stats_json(&last));
        json_object_set_new(sum, "outputs", json_array());
        return 0;
    }
    hs_tensor **outs = NULL;
    int n_outs = 0;
    hs_run_stats st;
    memset(&st, 0, sizeof st);
    hs_run_options ro = {.deadline_ns = deadline_ns > 0 ? deadline_ns : 0,
                         .cancel = &s->cancel}; /* set at shutdown */
    if (hs_program_run(prog, &ro, &outs, &n_outs, &st, e) != HS_OK)
        return -1;
    json_t *o = json_array();
    for (int k = 0; k < n_outs; k++)
        json_array_append_new(o, output_json(outs[k]));
    hs_tensors_free(outs, n_outs);
    json_object_set_new(sum, "outputs", o);
    json_object_set_new(sum, "run", stats_json(&st));
    /* A model with a "train" section also trains; when its steps cannot be
     * built or run (an engine gap, a limit), the forward result stands and
     * "train" says why. */
    if (prog->model && prog->model->train.enabled) {
        hs_error te;
        hs_error_clear(&te);
        json_t *t = train_steps(s, p, deadline_ns, NULL, &te);
        json_object_set_new(sum, "train", t ? t : srv_error_json(&te));
    }
    return 0;
}

static char *dumps(json_t *o)
{
    return o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
}

void api_execute_compute(srv *s, const api_request *ar, int64_t deadline_ns,
                         api_outcome *out)
{
    memset(out, 0, sizeof *out);
    hs_error e;
    hs_error_clear(&e);
    json_t *body = json_object_get(ar->canonical, "body");
    json_t *query = json_object_get(ar->canonical, "query");
    json_t *sum = NULL, *met = NULL, *failed = NULL;
    if (strcmp(ar->endpoint, "compare") == 0) {
        sum = api_compare(s, ar, deadline_ns, out, &e);
    } else {
        api_program p;
        bool run = strcmp(ar->endpoint, "run") == 0;
        if (api_program_build(s, body, query, run, deadline_ns, &p, &e) == 0) {
            sum = api_summary_compile(ar, &p);
            cache_hlo(ar, &p, out);
            if (run && run_program(s, &p, sum, deadline_ns, &e) != 0) {
                json_decref(sum);
                sum = NULL;
            }
            if (sum)
                met = api_metrics_json(&p);
        }
        if (!sum) /* the whole OOM report, before p goes */
            failed = api_program_error_json(&p, &e);
        api_program_free(&p);
    }
    if (sum && (out->summary = dumps(sum)) != NULL) {
        out->status = 200;
        out->metrics = dumps(met);
        out->keep = true;
    } else {
        if (sum)
            hs_error_set(&e, HS_ERR_NOMEM, "out of host memory");
        /* Bad input gives the same error every time: keep it, so that the
         * result link explains itself. Deadlines and shutdown are not
         * kept: the request stays pending (a GET says so, then calls it
         * interrupted) and only a POST computes it again. */
        out->out_of_memory = e.status == HS_ERR_NOMEM;
        int status = srv_status_for(e.status);
        api_outcome_error(out, status, status == 400 || status == 422,
                          failed && !sum ? failed : srv_error_json(&e));
    }
    json_decref(sum);
    json_decref(met);
}

void api_outcome_commit(srv *s, const api_request *ar, const api_outcome *out)
{
    for (int k = 0; k < out->n_variants; k++)
        if (out->variants[k].request && out->variants[k].summary &&
            store_put_request(s->store, out->variants[k].id, "compile",
                              out->variants[k].request) == 0)
            store_put_result(s->store, out->variants[k].id, 200,
                             out->variants[k].summary, out->variants[k].metrics);
    for (int k = 0; k < out->n_artefacts; k++)
        store_lru_put(s->lru, out->artefacts[k].key, out->artefacts[k].data,
                      out->artefacts[k].len, out->artefacts[k].type);
    if (out->keep && out->summary)
        store_put_result(s->store, ar->id, out->status, out->summary, out->metrics);
    if (out->status == 200 && out->summary) {
        char key[64];
        snprintf(key, sizeof key, "%s/summary", ar->id);
        store_lru_put(s->lru, key, out->summary, strlen(out->summary),
                      "application/json");
    }
    srv_metrics_compile_cache(s->metrics, out->compile_hits, out->compile_misses);
    srv_metrics_worker_assignments(s->metrics, out->buffer_assignments);
}

/* ---- the POST skeleton --------------------------------------------------- */

static void request_state_free(void *p)
{
    api_request_free(p);
    free(p);
}

/* Answers from the LRU or the store when the id already has a good result
 * (or, with any_outcome, a stored failure: a request that just crashed
 * its worker for another connection is not given a second worker). */
static bool answer_stored(srv *s, const char *id, bool any_outcome, srv_reply *rp)
{
    char key[64], *data;
    size_t len;
    const char *type;
    snprintf(key, sizeof key, "%s/summary", id);
    if (store_lru_get(s->lru, key, &data, &len, &type)) {
        srv_reply_text(rp, 200, type, data, len);
        snprintf(rp->cache, sizeof rp->cache, "hit");
        return true;
    }
    store_row row;
    if (store_get(s->store, id, &row) != 1)
        return false;
    bool ok = row.status == 200 && row.summary;
    if (any_outcome && !ok && row.summary && row.status != 0 &&
        row.status != STORE_EVICTED) {
        srv_reply_text(rp, row.status, "application/json", row.summary,
                       strlen(row.summary));
        row.summary = NULL;
        store_row_free(&row);
        return true;
    }
    if (ok) {
        store_lru_put(s->lru, key, row.summary, strlen(row.summary), "application/json");
        size_t n = strlen(row.summary);
        srv_reply_text(rp, 200, "application/json", row.summary, n);
        row.summary = NULL;
        snprintf(rp->cache, sizeof rp->cache, "hit");
    }
    store_row_free(&row);
    return ok;
}

static srv_outcome post(srv *s, srv_request *rq, srv_reply *rp,
                        const char *endpoint)
{
    api_request *ar = rq->state;
    if (!rq->in_worker) {
        ar = calloc(1, sizeof *ar);
        if (!ar)
            return srv_reply_error(rp, 503, "host_out_of_memory", "", "out of host memory");
        if (api_request_parse(s, endpoint, rq, ar, rp) != 0) {
            free(ar);
            return SRV_DONE;
        }
        rq->state = ar;
        rq->state_free = request_state_free;
        bool hit = answer_stored(s, ar->id, false, rp);
        srv_metrics_result_cache(s->metrics, hit);
        if (hit)
            return SRV_DONE;
        if (store_put_request(s->store, ar->id, endpoint, ar->text) != 0)
            return srv_reply_error(rp, 500, "io", "", "cannot record the request");
        return SRV_DEFER;
    }
    /* The same request may be in flight already: wait for it, then answer
     * from the store (a failure there is computed again here). */
    api_flight fl = api_flight_begin(s->flights, ar->id, rq->deadline_ns);
    if (fl == API_FLIGHT_TIMEOUT)
        return srv_reply_error(rp, 503, "deadline_exceeded", "",
                               "deadline exceeded while the same request was "
                               "computed by another connection");
    if (fl == API_FLIGHT_WAITED && answer_stored(s, ar->id, true, rp))
        return SRV_DONE;
    api_outcome out;
    if (s->workers)
        srv_workers_execute(s, ar, rq->deadline_ns, &out);
    else
        api_execute_compute(s, ar, rq->deadline_ns, &out);
    api_outcome_commit(s, ar, &out);
    if (fl == API_FLIGHT_OWNER)
        api_flight_end(s->flights, ar->id);
    snprintf(rp->cache, sizeof rp->cache, "miss");
    if (out.summary) {
        srv_reply_text(rp, out.status, "application/json", out.summary,
                       strlen(out.summary));
        out.summary = NULL; /* the reply's now */
    } else {
        srv_reply_error(rp, 503, "host_out_of_memory", "", "out of host memory");
    }
    api_outcome_free(&out);
    return SRV_DONE;
}

srv_outcome api_post_compile(srv *s, srv_request *rq, srv_reply *rp)
{
    return post(s, rq, rp, "compile");
}

srv_outcome api_post_run(srv *s, srv_request *rq, srv_reply *rp)
{
    return post(s, rq, rp, "run");
}

srv_outcome api_post_compare(srv *s, srv_request *rq, srv_reply *rp)
{
    return post(s, rq, rp, "compare");
}
