/* worker_steps.c - the step timeline of a run result (GET steps.json|svg)
 * as a job: it re-traces and runs the stored request's model step by step
 * (api_steps_run), so in a server with workers it runs in one, like a
 * compile or a run. The job's payload is the stored request and summary
 * with the settings, as JSON; the outcome is the steps JSON text (or the
 * error), what the handler replies and caches. */
#include <stdlib.h>
#include <string.h>

#include "worker.h"

/* In this process: the steps JSON text (200) or the error, into out. */
static void steps_here(srv *s, const char *id, const char *request, const char *summary,
                       const api_steps_params *sp, int64_t deadline_ns, api_outcome *out)
{
    memset(out, 0, sizeof *out);
    hs_error e;
    hs_error_clear(&e);
    hs_steps_result r;
    if (api_steps_run(request, summary, sp, deadline_ns, &s->cancel, &r, &e) != 0) {
        out->out_of_memory = e.status == HS_ERR_NOMEM;
        api_outcome_error(out, srv_status_for(e.status), false, srv_error_json(&e));
        return;
    }
    json_t *j = api_steps_json(id, &r);
    hs_steps_result_free(&r);
    out->summary = j ? json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(j);
    out->status = 200;
    if (!out->summary) {
        out->out_of_memory = true;
        api_outcome_error(out, 503, false,
                          srv_error_object("host_out_of_memory", "out of host memory", "",
                                           0, 0, NULL));
    }
}

void api_steps_compute(srv *s, const char *id, const char *request, const char *summary,
                       const api_steps_params *sp, int64_t deadline_ns, api_outcome *out)
{
    if (!s->workers) {
        steps_here(s, id, request, summary, sp, deadline_ns, out);
        return;
    }
    json_t *job = json_pack("{s:s, s:s, s:s?, s:I, s:i, s:f, s:s, s:b}", "id", id, "request",
                            request, "summary", summary, "steps", (json_int_t)sp->steps,
                            "queue", sp->queue, "op_overhead_us", sp->op_overhead_us,
                            "frontend", sp->frontend, "train", sp->train);
    char *text = job ? json_dumps(job, JSON_COMPACT) : NULL;
    json_decref(job);
    if (!text) {
        memset(out, 0, sizeof *out);
        api_outcome_error(out, 503, false,
                          srv_error_object("host_out_of_memory", "out of host memory", "",
                                           0, 0, NULL));
        return;
    }
    srv_workers_steps(s, id, text, deadline_ns, out);
    free(text);
}

void api_steps_job_run(srv *s, const char *payload, int64_t deadline_ns, api_outcome *out)
{
    json_t *job = json_loads(payload, 0, NULL);
    const char *id = NULL, *request = NULL, *summary = NULL, *frontend = NULL;
    json_int_t steps = 0;
    int queue = 0, train = 0;
    api_steps_params sp;
    memset(&sp, 0, sizeof sp);
    if (!job || json_unpack(job, "{s:s, s:s, s?s, s:I, s:i, s:F, s:s, s:b}", "id", &id,
                            "request", &request, "summary", &summary, "steps", &steps,
                            "queue", &queue, "op_overhead_us", &sp.op_overhead_us,
                            "frontend", &frontend, "train", &train) != 0) {
        memset(out, 0, sizeof *out);
        api_outcome_error(out, 500, false,
                          srv_error_object("io", "a steps job the worker cannot read", "",
                                           0, 0, NULL));
    } else {
        sp.steps = steps;
        sp.queue = queue;
        sp.frontend = frontend; /* lives as long as job */
        sp.train = train;
        steps_here(s, id, request, summary, &sp, deadline_ns, out);
    }
    json_decref(job);
}
