/* worker_outcome.c - an api_outcome over a worker's socket, and the
 * outcomes that are errors. The texts go as they are, each a length and
 * its bytes (the summaries are stored byte for byte as the worker dumped
 * them); a small JSON header says what they are. Quoting them into one
 * JSON document cost 8 ms per compile of 8 decoder blocks (200 KB of HLO
 * text escaped and parsed again: bench/bench_contain.py). */
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_process.h"
#include "worker.h"

#define NO_TEXT UINT64_MAX     /* a NULL text */
#define MAX_TEXT (1ull << 31)  /* more is a garbled stream */
#define MAX_PARTS (1 + 2 + 2 + 2 * 3)

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

static bool send_text(int fd, const char *text, size_t len)
{
    uint64_t n = text ? (uint64_t)len : NO_TEXT;
    return hs_write_all(fd, &n, sizeof n) && (!text || hs_write_all(fd, text, len));
}

static bool send_string(int fd, const char *text)
{
    return send_text(fd, text, text ? strlen(text) : 0);
}

bool worker_outcome_send(int fd, const api_outcome *out)
{
    json_t *keys = json_array(), *ids = json_array();
    for (int k = 0; k < out->n_artefacts; k++)
        json_array_append_new(keys, json_string(out->artefacts[k].key));
    for (int k = 0; k < out->n_variants; k++)
        json_array_append_new(ids, json_string(out->variants[k].id));
    json_t *head = json_pack("{s:i, s:b, s:b, s:[I, I, I], s:o, s:o}", "status",
                             out->status, "keep", out->keep, "out_of_memory",
                             out->out_of_memory, "counts", (json_int_t)out->compile_hits,
                             (json_int_t)out->compile_misses,
                             (json_int_t)out->buffer_assignments, "artefacts", keys,
                             "variants", ids);
    char *text = head ? json_dumps(head, JSON_COMPACT) : NULL;
    json_decref(head);
    if (!text)
        return false;
    worker_reply r = {.magic = WORKER_MAGIC};
    bool ok = hs_write_all(fd, &r, sizeof r) && send_string(fd, text) &&
              send_string(fd, out->summary) && send_string(fd, out->metrics);
    for (int k = 0; ok && k < out->n_artefacts; k++)
        ok = send_text(fd, out->artefacts[k].data, out->artefacts[k].len);
    for (int k = 0; ok && k < out->n_variants; k++)
        ok = send_string(fd, out->variants[k].request) &&
             send_string(fd, out->variants[k].summary) &&
             send_string(fd, out->variants[k].metrics);
    free(text);
    return ok;
}

/* One text: 0 and *text (malloc'ed, NUL-terminated; NULL for none), -1
 * at end of file or on a garbled length. */
static int recv_text(int fd, char **text, size_t *len)
{
    uint64_t n;
    *text = NULL;
    if (!hs_read_all(fd, &n, sizeof n))
        return -1;
    if (n == NO_TEXT)
        return 0;
    if (n > MAX_TEXT || !(*text = malloc((size_t)n + 1)))
        return -1;
    if (!hs_read_all(fd, *text, (size_t)n)) {
        free(*text);
        *text = NULL;
        return -1;
    }
    (*text)[n] = '\0';
    if (len)
        *len = (size_t)n;
    return 0;
}

int worker_outcome_recv(int fd, api_outcome *out)
{
    memset(out, 0, sizeof *out);
    worker_reply r;
    char *text = NULL;
    if (!hs_read_all(fd, &r, sizeof r) || r.magic != WORKER_MAGIC ||
        recv_text(fd, &text, NULL) != 0 || !text)
        goto bad;
    json_t *head = json_loads(text, 0, NULL), *keys = NULL, *ids = NULL;
    int status = 0, keep = 0, oom = 0;
    json_int_t counts[3];
    int rc = head ? json_unpack(head, "{s:i, s:b, s:b, s:[I, I, I], s:o, s:o}", "status",
                                &status, "keep", &keep, "out_of_memory", &oom, "counts",
                                &counts[0], &counts[1], &counts[2], "artefacts", &keys,
                                "variants", &ids)
                  : -1;
    if (rc != 0 || json_array_size(keys) > 2 || json_array_size(ids) > 2) {
        json_decref(head);
        goto bad;
    }
    out->status = status;
    out->keep = keep;
    out->out_of_memory = oom;
    out->compile_hits = counts[0];
    out->compile_misses = counts[1];
    out->buffer_assignments = counts[2];
    bool ok = recv_text(fd, &out->summary, NULL) == 0 && out->summary &&
              recv_text(fd, &out->metrics, NULL) == 0;
    for (size_t k = 0; ok && k < json_array_size(keys); k++) {
        api_artefact *a = &out->artefacts[out->n_artefacts++];
        const char *key = json_string_value(json_array_get(keys, k));
        snprintf(a->key, sizeof a->key, "%s", key ? key : "");
        a->type = "text/plain; charset=utf-8"; /* the only kind sent (HLO) */
        ok = recv_text(fd, &a->data, &a->len) == 0 && a->data;
    }
    for (size_t k = 0; ok && k < json_array_size(ids); k++) {
        int n = out->n_variants++;
        const char *id = json_string_value(json_array_get(ids, k));
        snprintf(out->variants[n].id, sizeof out->variants[n].id, "%s", id ? id : "");
        ok = api_id_valid(out->variants[n].id) &&
             recv_text(fd, &out->variants[n].request, NULL) == 0 &&
             recv_text(fd, &out->variants[n].summary, NULL) == 0 &&
             recv_text(fd, &out->variants[n].metrics, NULL) == 0;
    }
    json_decref(head);
    free(text);
    if (ok)
        return 0;
    text = NULL;
bad:
    free(text);
    api_outcome_free(out);
    return -1;
}
