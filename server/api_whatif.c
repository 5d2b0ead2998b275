/* api_whatif.c - GET /v1/results/{id}/whatif.json: what scan, host
 * offloading and sharding would do to the module of a compile or run
 * result (hs_whatif.h; an HLO source or a model description, analysed as
 * traced). Heavy work (two compiles, and two runs for the equivalence
 * check) so it is made like every other artefact: in the supervised
 * worker, from the stored request, under the request's deadline, and
 * cached in the LRU by its query.
 *
 *   ?run=0            compile only (no equivalence run)
 *   ?budget=BYTES     the offload section's device memory to fit
 *   ?rerolled=hlo     also return the rerolled module's HLO text
 *                     ("rerolled_hlo"), which the explorer draws beside
 *                     the original
 *   ?offloaded=hlo    also return the offloaded module's HLO text
 *                     ("offloaded_hlo": the compiled module with the
 *                     copies to and from the host placed), the explorer's
 *                     "offload activations" B
 * The equivalence run is held to the server's --max-run-bytes. */
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "hloscope/hs_hlo_text.h"
#include "hloscope/hs_whatif.h"
#include "store.h"

static int query_number(const srv_request *rq, const char *key, double *out,
                        hs_error *e)
{
    const char *v = srv_query(rq, key);
    if (!v)
        return 0;
    char *end;
    double x = strtod(v, &end);
    if (end == v || *end || !(x >= 0)) {
        hs_error_set(e, HS_ERR_INVALID, "?%s must be a number >= 0, not '%s'",
                     key, v);
        snprintf(e->path, sizeof e->path, "?%s", key);
        return -1;
    }
    *out = x;
    return 0;
}

/* ?rerolled / ?offloaded take 'hlo' only (more forms may come). */
static int hlo_query(const char *v, const char *key, hs_error *e)
{
    if (!v || strcmp(v, "hlo") == 0)
        return 0;
    hs_error_set(e, HS_ERR_INVALID, "?%s takes 'hlo', not '%s'", key, v);
    snprintf(e->path, sizeof e->path, "?%s", key);
    return -1;
}

static void add_hlo(json_t *j, const char *key, const hs_module *m)
{
    char *text = hs_hlo_print(m);
    json_object_set_new(j, key, text ? json_string(text) : json_null());
    free(text);
}

static int make_whatif(srv *s, const srv_request *rq, const char *id,
                       const api_program *p, const store_row *row,
                       srv_reply *rp, hs_error *e)
{
    hs_whatif_options o;
    hs_whatif_options_init(&o);
    o.device = p->device;
    o.max_run_bytes = s->cfg.limits.max_run_bytes;
    o.deadline_ns = rq->deadline_ns;
    double run = 1;
    if (query_number(rq, "run", &run, e) != 0 ||
        query_number(rq, "budget", &o.budget, e) != 0)
        return -1;
    o.run_equivalence = run != 0;
    const char *rerolled = srv_query(rq, "rerolled");
    const char *offloaded = srv_query(rq, "offloaded");
    if (hlo_query(rerolled, "rerolled", e) != 0 ||
        hlo_query(offloaded, "offloaded", e) != 0)
        return -1;
    hs_whatif w;
    if (hs_whatif_analyse(api_program_traced(p), &o, &w, e) != HS_OK)
        return -1;
    json_t *j = hs_whatif_json(&w);
    if (j)
        json_object_set_new(j, "id", json_string(id));
    if (j && rerolled && w.scan.rerolled)
        add_hlo(j, "rerolled_hlo", w.scan.rerolled);
    if (j && offloaded && w.offload.offloaded)
        add_hlo(j, "offloaded_hlo", w.offload.offloaded);
    hs_whatif_free(&w);
    if (!j) {
        hs_error_set(e, HS_ERR_NOMEM, "out of host memory");
        return -1;
    }
    srv_reply_json(rp, 200, j);
    return 0;
}

srv_outcome api_result_whatif_json(srv *s, srv_request *rq, srv_reply *rp)
{
    return api_result_artefact(s, rq, rp, "whatif.json", make_whatif, true);
}
