/* worker_outcome.c - an api_outcome as one JSON text, the form a worker
 * process sends it back in, and the outcomes that are errors. JSON because
 * the summaries already are (stored byte for byte as the worker dumped
 * them) and jansson quotes any HLO text. */
#include <stdlib.h>
#include <string.h>

#include "api.h"

void api_outcome_free(api_outcome *out)
{
    free(out->summary);
    free(out->metrics);
    for (int k = 0; k < out->n_artefacts; k++)
        free(out->artefacts[k].data);
    for (int k = 0; k < out->n_variants; k++) {
        free(out->variants[k].request);
        free(out->variants[k].summary);
        free(out->variants[k].metrics);
    }
    memset(out, 0, sizeof *out);
}

void api_outcome_error(api_outcome *out, int status, bool keep, json_t *error)
{
    free(out->summary);
    free(out->metrics);
    out->metrics = NULL;
    out->status = status;
    out->keep = keep;
    out->summary = error ? json_dumps(error, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(error);
}

static json_t *text_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

char *api_outcome_dumps(const api_outcome *out)
{
    json_t *art = json_array(), *var = json_array();
    for (int k = 0; k < out->n_artefacts; k++)
        json_array_append_new(art, json_pack("[s, s, s%]", out->artefacts[k].key,
                                             out->artefacts[k].type,
                                             out->artefacts[k].data,
                                             out->artefacts[k].len));
    for (int k = 0; k < out->n_variants; k++)
        json_array_append_new(var, json_pack("[s, s, s, o]", out->variants[k].id,
                                             out->variants[k].request,
                                             out->variants[k].summary,
                                             text_or_null(out->variants[k].metrics)));
    json_t *o = json_pack("{s:i, s:b, s:o, s:o, s:o, s:o, s:[I, I, I], s:b}", "status",
                          out->status, "keep", out->keep, "summary",
                          text_or_null(out->summary), "metrics",
                          text_or_null(out->metrics), "artefacts", art, "variants", var,
                          "counts", (json_int_t)out->compile_hits,
                          (json_int_t)out->compile_misses,
                          (json_int_t)out->buffer_assignments, "out_of_memory",
                          out->out_of_memory);
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return text;
}

static char *dup_or_null(json_t *s)
{
    const char *v = json_string_value(s);
    return v ? strdup(v) : NULL;
}

int api_outcome_loads(const char *text, api_outcome *out)
{
    memset(out, 0, sizeof *out);
    json_t *o = json_loads(text, 0, NULL);
    json_int_t counts[3] = {0, 0, 0};
    int status = 0, keep = 0, oom = 0;
    json_t *summary = NULL, *metrics = NULL, *art = NULL, *var = NULL;
    if (!o || json_unpack(o, "{s:i, s:b, s:o, s:o, s:o, s:o, s:[I, I, I], s:b}", "status",
                          &status, "keep", &keep, "summary", &summary, "metrics",
                          &metrics, "artefacts", &art, "variants", &var, "counts",
                          &counts[0], &counts[1], &counts[2], "out_of_memory",
                          &oom) != 0 ||
        json_array_size(art) > 2 || json_array_size(var) > 2) {
        json_decref(o);
        return -1;
    }
    out->status = status;
    out->keep = keep;
    out->out_of_memory = oom;
    out->summary = dup_or_null(summary);
    out->metrics = dup_or_null(metrics);
    out->compile_hits = counts[0];
    out->compile_misses = counts[1];
    out->buffer_assignments = counts[2];
    size_t k;
    json_t *v;
    json_array_foreach(art, k, v) {
        const char *key = json_string_value(json_array_get(v, 0));
        json_t *data = json_array_get(v, 2);
        if (!key || !json_is_string(data))
            continue;
        api_artefact *a = &out->artefacts[out->n_artefacts];
        snprintf(a->key, sizeof a->key, "%s", key);
        a->type = "text/plain; charset=utf-8"; /* the only type sent (HLO) */
        a->len = json_string_length(data);
        if ((a->data = malloc(a->len + 1)) == NULL)
            continue;
        memcpy(a->data, json_string_value(data), a->len + 1);
        out->n_artefacts++;
    }
    json_array_foreach(var, k, v) {
        const char *id = json_string_value(json_array_get(v, 0));
        if (!id || !api_id_valid(id))
            continue;
        int n = out->n_variants++;
        snprintf(out->variants[n].id, sizeof out->variants[n].id, "%s", id);
        out->variants[n].request = dup_or_null(json_array_get(v, 1));
        out->variants[n].summary = dup_or_null(json_array_get(v, 2));
        out->variants[n].metrics = dup_or_null(json_array_get(v, 3));
    }
    json_decref(o);
    if (out->summary)
        return 0;
    api_outcome_free(out);
    return -1;
}
