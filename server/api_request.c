/* api_request.c - from an HTTP request to a canonical request and its id:
 * body size and depth limits, JSON syntax (line and column), the query
 * overrides, and compare's variants. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "api.h"
#include "hloscope/hs_device.h"

void api_hash_id(const char *text, size_t len, char out[API_ID_LEN + 1])
{
    XXH128_hash_t h = XXH3_128bits(text, len);
    snprintf(out, API_ID_LEN + 1, "%016llx%016llx", (unsigned long long)h.high64,
             (unsigned long long)h.low64);
}

bool api_id_valid(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++)
        if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
            return false;
    return n == API_ID_LEN;
}

void api_request_free(api_request *ar)
{
    json_decref(ar->canonical);
    free(ar->text);
    memset(ar, 0, sizeof *ar);
}

int api_request_make(const char *endpoint, json_t *body, json_t *query,
                     api_request *ar)
{
    memset(ar, 0, sizeof *ar);
    snprintf(ar->endpoint, sizeof ar->endpoint, "%s", endpoint);
    ar->canonical = json_pack("{s:s, s:O, s:O}", "endpoint", endpoint, "body",
                              body, "query", query);
    ar->text = ar->canonical
                   ? json_dumps(ar->canonical, JSON_SORT_KEYS | JSON_COMPACT)
                   : NULL;
    if (!ar->text) {
        api_request_free(ar);
        return -1;
    }
    api_hash_id(ar->text, strlen(ar->text), ar->id);
    return 0;
}

int api_request_from_text(const char *text, api_request *ar, hs_error *e)
{
    json_error_t je;
    json_t *c = json_loads(text, 0, &je);
    const char *ep = json_string_value(json_object_get(c, "endpoint"));
    json_t *body = json_object_get(c, "body"), *q = json_object_get(c, "query");
    int rc = -1;
    bool whole = ep && body && json_is_object(q);
    if (whole)
        rc = api_request_make(ep, body, q, ar);
    json_decref(c);
    /* A request that parses whole fails to be made only for want of memory
     * (a worker near its limit), as does a parse that says so. */
    if (rc != 0 && (whole || (!c && json_error_code(&je) == json_error_out_of_memory)))
        hs_error_set(e, HS_ERR_NOMEM, "out of host memory");
    else if (rc != 0)
        hs_error_set(e, HS_ERR_IO, "stored request is unreadable");
    return rc;
}

/* Nesting of arrays and objects, outside strings; stops early past limit. */
static int json_depth(const char *p, size_t n, int limit)
{
    int depth = 0, max = 0;
    bool in_str = false;
    for (size_t k = 0; k < n; k++) {
        char c = p[k];
        if (in_str) {
            if (c == '\\')
                k++;
            else if (c == '"')
                in_str = false;
        } else if (c == '"') {
            in_str = true;
        } else if (c == '[' || c == '{') {
            if (++depth > max && (max = depth) > limit)
                return max;
        } else if (c == ']' || c == '}') {
            depth--;
        }
    }
    return max;
}

static const char *const k_loops[] = {"unrolled", "scan", NULL};
static const char *const k_modes[] = {"forward", "train", NULL};

static bool one_of(const char *v, const char *const *set)
{
    for (; *set; set++)
        if (strcmp(v, *set) == 0)
            return true;
    return false;
}

/* An integer override: the JSON integer of a compare variant, or the
 * query's text; bad when it is neither. */
static long long integer_of(const char *value, json_t *jvalue, long long bad)
{
    if (jvalue && json_is_integer(jvalue))
        return json_integer_value(jvalue);
    char *end;
    errno = 0;
    long long v = strtoll(value, &end, 10);
    return errno || *end || end == value ? bad : v;
}

/* Validates one override (from the query, or a compare variant) and adds it
 * to out. where is "?" for the query or a JSON pointer prefix ("/a/"). On
 * error fills rp and returns -1. */
static int add_override(const char *key, const char *value, json_t *jvalue,
                        const char *where, json_t *out, srv_reply *rp)
{
    char path[96];
    snprintf(path, sizeof path, "%s%s", where, key);
    bool integer = strcmp(key, "batch") == 0 || strcmp(key, "module") == 0;
    if (jvalue && !json_is_string(jvalue) && !(integer && json_is_integer(jvalue))) {
        srv_reply_error(rp, 422, "invalid", path, "'%s' must be a %s", key,
                        strcmp(key, "batch") == 0   ? "positive integer"
                        : strcmp(key, "module") == 0 ? "non-negative integer"
                                                     : "string");
        return -1;
    }
    if (jvalue && json_is_string(jvalue))
        value = json_string_value(jvalue);
    if (strcmp(key, "loop") == 0 || strcmp(key, "residuals") == 0) {
        hs_residuals r;
        bool loop = key[0] == 'l';
        if (loop ? !one_of(value, k_loops) : !hs_residuals_parse(value, &r)) {
            srv_reply_error(rp, 422, "invalid", path,
                            "unknown %s '%s' (known: %s)", key, value,
                            loop ? "unrolled, scan" : hs_residuals_known());
            return -1;
        }
        json_object_set_new(out, key, json_string(value));
    } else if (strcmp(key, "mode") == 0) {
        if (!one_of(value, k_modes)) {
            srv_reply_error(rp, 422, "invalid", path,
                            "unknown mode '%s' (known: forward, train)", value);
            return -1;
        }
        json_object_set_new(out, key, json_string(value));
    } else if (strcmp(key, "device") == 0) {
        if (!hs_device_find(value)) {
            srv_reply_error(rp, 422, "invalid", path,
                            "unknown device '%s' (GET /v1/devices lists them)",
                            value);
            return -1;
        }
        json_object_set_new(out, key, json_string(value));
    } else if (strcmp(key, "batch") == 0) {
        long long b = integer_of(value, jvalue, 0);
        if (b <= 0 || b > (1LL << 31)) {
            srv_reply_error(rp, 422, "invalid", path,
                            "batch must be an integer in [1, 2^31]");
            return -1;
        }
        json_object_set_new(out, key, json_integer(b));
    } else if (strcmp(key, "module") == 0) {
        /* Which module of split HLO text (modules separated by '// -----'),
         * from 0. */
        long long m = integer_of(value, jvalue, -1);
        if (m < 0 || m > (1 << 20)) {
            srv_reply_error(rp, 422, "invalid", path,
                            "module must be an index in [0, 2^20] (0 is the "
                            "first module of split HLO text)");
            return -1;
        }
        json_object_set_new(out, key, json_integer(m));
    } else {
        srv_reply_error(rp, 422, "invalid", path,
                        "unknown override '%s' (known: loop, residuals, "
                        "device, batch, mode, module)",
                        key);
        return -1;
    }
    return 0;
}

static int parse_query(const srv_request *rq, json_t *q, srv_reply *rp)
{
    for (int k = 0; k < rq->n_query; k++) {
        if (strcmp(rq->query_key[k], "timeout_ms") == 0)
            continue; /* not part of the result: it only bounds the work */
        if (add_override(rq->query_key[k],
                         rq->query_value[k] ? rq->query_value[k] : "", NULL,
                         "?", q, rp) != 0)
            return -1;
    }
    api_query_normalize(q);
    return 0;
}

void api_query_normalize(json_t *q)
{
    /* mode=forward is the default: the same result, the same id. */
    const char *mode = json_string_value(json_object_get(q, "mode"));
    if (mode && strcmp(mode, "forward") == 0)
        json_object_del(q, "mode");
}

/* {"hlo": "..."} takes no other key; a model is checked by the loader. */
static int check_body(json_t *body, srv_reply *rp)
{
    json_t *hlo = json_object_get(body, "hlo");
    if (!hlo)
        return 0;
    if (!json_is_string(hlo)) {
        srv_reply_error(rp, 422, "invalid", "/hlo", "'hlo' must be a string of HLO text");
        return -1;
    }
    const char *key;
    json_t *v;
    json_object_foreach(body, key, v)
    {
        if (strcmp(key, "hlo") == 0)
            continue;
        char path[300];
        snprintf(path, sizeof path, "/%s", key);
        srv_reply_error(rp, 422, "invalid", path,
                        "unknown key '%s' next to 'hlo' (use ?device= to pick a device)",
                        key);
        return -1;
    }
    return 0;
}

/* A compare side's overrides (the keys of the query but timeout_ms), checked
 * and written back in canonical form; source names the side's source key
 * ("hlo" or "model") that stays as it is, NULL when the side has none. */
static int check_side(json_t *body, const char *side, const char *source,
                      srv_reply *rp)
{
    json_t *in = json_object_get(body, side), *clean = json_object();
    char where[8];
    snprintf(where, sizeof where, "/%s/", side);
    const char *key;
    json_t *v;
    json_object_foreach(in, key, v)
    {
        if (source && strcmp(key, source) == 0) {
            json_object_set(clean, key, v);
        } else if (!source && (strcmp(key, "hlo") == 0 || strcmp(key, "model") == 0)) {
            char path[32];
            snprintf(path, sizeof path, "/%s/%s", side, key);
            srv_reply_error(rp, 422, "invalid", path,
                            "a side's own source and a shared 'model' do not go "
                            "together: drop 'model' to compare two sources");
            json_decref(clean);
            return -1;
        } else if (add_override(key, NULL, v, where, clean, rp) != 0) {
            json_decref(clean);
            return -1;
        }
    }
    json_object_set_new(body, side, clean);
    return 0;
}

/* The source of a two-source compare side: "hlo" (a string of HLO text) or
 * "model" (a model description), exactly one. NULL with rp filled. */
static const char *side_source(json_t *side_obj, const char *side, srv_reply *rp)
{
    json_t *hlo = json_object_get(side_obj, "hlo");
    json_t *model = json_object_get(side_obj, "model");
    char path[16];
    if (hlo && model) {
        snprintf(path, sizeof path, "/%s", side);
        srv_reply_error(rp, 422, "invalid", path,
                        "side %s has both 'hlo' and 'model'; give one source", side);
        return NULL;
    }
    if (hlo && !json_is_string(hlo)) {
        snprintf(path, sizeof path, "/%s/hlo", side);
        srv_reply_error(rp, 422, "invalid", path, "'hlo' must be a string of HLO text");
        return NULL;
    }
    if (model && !json_is_object(model)) {
        snprintf(path, sizeof path, "/%s/model", side);
        srv_reply_error(rp, 422, "invalid", path,
                        "'model' must be a model description (an object)");
        return NULL;
    }
    if (!hlo && !model) {
        snprintf(path, sizeof path, "/%s", side);
        srv_reply_error(rp, 422, "invalid", path,
                        "side %s has no source: give {\"hlo\": \"HloModule ...\"} "
                        "or {\"model\": {...}}",
                        side);
        return NULL;
    }
    return hlo ? "hlo" : "model";
}

/* compare takes one model and two sets of overrides,
 *     {"model": {...} or {"hlo": ...}, "a": {overrides}, "b": {...}},
 * or two sources, each with its own overrides (a before/after pair of
 * dumps, a model and a dump),
 *     {"a": {"hlo": "..." | "model": {...}, "device": ...}, "b": {...}}. */
static int check_compare(json_t *body, srv_reply *rp)
{
    const char *key;
    json_t *v;
    json_object_foreach(body, key, v)
    {
        char path[300];
        snprintf(path, sizeof path, "/%s", key);
        if (strcmp(key, "model") != 0 && strcmp(key, "a") != 0 &&
            strcmp(key, "b") != 0) {
            srv_reply_error(rp, 422, "invalid", path,
                            "unknown key '%s' (compare takes model, a, b)", key);
            return -1;
        }
        if (!json_is_object(v)) {
            srv_reply_error(rp, 422, "invalid", path, "'%s' must be an object", key);
            return -1;
        }
    }
    json_t *a = json_object_get(body, "a"), *b = json_object_get(body, "b");
    bool two_sources = !json_object_get(body, "model") &&
                       ((a && (json_object_get(a, "hlo") || json_object_get(a, "model"))) ||
                        (b && (json_object_get(b, "hlo") || json_object_get(b, "model"))));
    static const char *const need[] = {"model", "a", "b"};
    for (int k = two_sources ? 1 : 0; k < 3; k++)
        if (!json_object_get(body, need[k])) {
            srv_reply_error(rp, 422, "invalid", "",
                            "compare needs '%s' (body: {\"model\": {...}, "
                            "\"a\": {\"loop\": \"unrolled\"}, \"b\": {\"loop\": \"scan\"}}, "
                            "or two sources: {\"a\": {\"hlo\": \"...\"}, \"b\": "
                            "{\"hlo\": \"...\"}})",
                            need[k]);
            return -1;
        }
    for (int k = 1; k < 3; k++) {
        const char *source = NULL;
        if (two_sources &&
            !(source = side_source(json_object_get(body, need[k]), need[k], rp)))
            return -1;
        if (check_side(body, need[k], source, rp) != 0)
            return -1;
    }
    return two_sources ? 0 : check_body(json_object_get(body, "model"), rp);
}

static bool starts_with_ci(const char *s, const char *prefix)
{
    for (; *prefix; s++, prefix++)
        if (!*s || (*s | 0x20) != (*prefix | 0x20))
            return false;
    return true;
}

/* HLO text posted as it is, as XLA dumps it: a body whose first word is
 * "HloModule", or any body sent as Content-Type text/plain that is not a
 * JSON object. A JSON object is a request whatever its Content-Type says:
 * browsers' fetch() and many clients label a string body text/plain, and
 * HLO text never starts with '{'. compare's body names two variants, so
 * it stays JSON. */
static bool is_raw_hlo(const char *endpoint, const srv_request *rq)
{
    if (strcmp(endpoint, "compare") == 0)
        return false;
    size_t k = 0;
    while (k < rq->body_len && (rq->body[k] == ' ' || rq->body[k] == '\t' ||
                                rq->body[k] == '\r' || rq->body[k] == '\n'))
        k++;
    if (k < rq->body_len && rq->body[k] == '{')
        return false;
    if (rq->content_type && starts_with_ci(rq->content_type, "text/plain"))
        return true;
    return rq->body_len - k >= 9 && memcmp(rq->body + k, "HloModule", 9) == 0;
}

/* The same request as {"hlo": text}: the same canonical form and id. */
static json_t *raw_hlo_body(const srv_request *rq, srv_reply *rp)
{
    json_t *text = json_stringn(rq->body, rq->body_len);
    if (!text) {
        srv_reply_error(rp, 400, "parse", "",
                        "the HLO text posted as the body is not valid UTF-8 "
                        "(or holds a NUL byte)");
        return NULL;
    }
    json_t *body = json_object();
    json_object_set_new(body, "hlo", text);
    return body;
}

/* The body as JSON, within the nesting limit; NULL with rp filled. */
static json_t *json_body(const srv_request *rq, const srv_limits *lim,
                         srv_reply *rp)
{
    int depth = json_depth(rq->body, rq->body_len, lim->max_json_depth);
    if (depth > lim->max_json_depth) {
        srv_reply_error(rp, 422, "limit", "",
                        "JSON nesting deeper than %d levels (limit "
                        "--max-json-depth)",
                        lim->max_json_depth);
        return NULL;
    }
    json_error_t je;
    json_t *body = json_loadb(rq->body, rq->body_len, JSON_REJECT_DUPLICATES, &je);
    if (!body)
        /* je.text quotes the input near the error, which may be invalid
         * UTF-8: the error object escapes it. */
        srv_reply_json(rp, 400,
                       srv_error_object("parse", je.text, "", je.line, je.column, NULL));
    return body;
}

int api_request_parse(srv *s, const char *endpoint, const srv_request *rq,
                      api_request *ar, srv_reply *rp)
{
    const srv_limits *lim = &s->cfg.limits;
    memset(ar, 0, sizeof *ar);
    if (rq->body_len == 0) {
        srv_reply_error(rp, 400, "parse", "",
                        "the request body is empty: send a model description "
                        "(JSON), {\"hlo\": \"HloModule ...\"} or HLO text "
                        "(Content-Type: text/plain)");
        return -1;
    }
    json_t *body = is_raw_hlo(endpoint, rq) ? raw_hlo_body(rq, rp)
                                            : json_body(rq, lim, rp);
    if (!body)
        return -1;
    json_t *q = json_object();
    int rc = -1;
    if (!json_is_object(body)) {
        srv_reply_error(rp, 422, "invalid", "",
                        "the body must be a JSON object (a model description "
                        "or {\"hlo\": ...})");
    } else if (parse_query(rq, q, rp) == 0 &&
               (strcmp(endpoint, "compare") == 0 ? check_compare(body, rp)
                                                 : check_body(body, rp)) == 0) {
        rc = api_request_make(endpoint, body, q, ar);
        if (rc != 0)
            srv_reply_error(rp, 503, "host_out_of_memory", "", "out of host memory");
    }
    json_decref(body);
    json_decref(q);
    return rc;
}

/* ---- pinned results ------------------------------------------------------ */

/* The results of the example models are never evicted, whatever their
 * query: the examples are what a class opens first, and the guided tour
 * (web/src/tour.js) links only to results of examples (seed_64_linear,
 * train_offload, tracing_bound with their loop, residuals and mode
 * overrides). An example is recognised by its canonical body text, the
 * same bytes api_request_make writes. */
struct api_pins {
    int n;
    char **bodies;
    size_t max_len;
    uint32_t generation; /* hash of the bodies: the store re-pins when it changes */
};

static json_t *reply_json(srv_reply *rp)
{
    json_t *j = rp->status == 200 && rp->body ? json_loadb(rp->body, rp->body_len, 0, NULL)
                                              : NULL;
    srv_reply_clear(rp);
    return j;
}

api_pins *api_pins_new(srv *s)
{
    api_pins *p = calloc(1, sizeof *p);
    srv_request rq;
    srv_reply rp;
    memset(&rq, 0, sizeof rq);
    memset(&rp, 0, sizeof rp);
    if (!p)
        return NULL;
    /* Read through the examples' own handlers, which own their list. */
    api_examples_list(s, &rq, &rp);
    json_t *list = reply_json(&rp), *item;
    size_t k;
    json_array_foreach(json_object_get(list, "examples"), k, item)
    {
        const char *name = json_string_value(json_object_get(item, "name"));
        if (!name)
            continue;
        snprintf(rq.params[0], sizeof rq.params[0], "%s", name);
        api_example_get(s, &rq, &rp);
        json_t *model = reply_json(&rp);
        char *text = model ? json_dumps(model, JSON_SORT_KEYS | JSON_COMPACT) : NULL;
        json_decref(model);
        char **grown = text ? realloc(p->bodies, sizeof *grown * (size_t)(p->n + 1)) : NULL;
        if (!grown) {
            free(text);
            continue;
        }
        p->bodies = grown;
        p->bodies[p->n++] = text;
        p->generation = p->generation * 31u + (uint32_t)XXH3_64bits(text, strlen(text));
        if (strlen(text) > p->max_len)
            p->max_len = strlen(text);
    }
    json_decref(list);
    return p;
}

uint32_t api_pins_generation(const api_pins *p)
{
    /* 1 + ...: never 0, the user_version of a store that never had pins. */
    return p ? 1u + p->generation : 0u;
}

void api_pins_free(api_pins *p)
{
    if (!p)
        return;
    for (int k = 0; k < p->n; k++)
        free(p->bodies[k]);
    free(p->bodies);
    free(p);
}

bool api_pins_match(const char *request, void *user)
{
    const api_pins *p = user;
    /* A request much longer than every example cannot be one: no parse. */
    if (!p || p->n == 0 || strlen(request) > p->max_len + 4096)
        return false;
    json_t *c = json_loads(request, 0, NULL);
    json_t *body = json_object_get(c, "body");
    const char *ep = json_string_value(json_object_get(c, "endpoint"));
    if (ep && strcmp(ep, "compare") == 0)
        body = json_object_get(body, "model");
    char *text = body ? json_dumps(body, JSON_SORT_KEYS | JSON_COMPACT) : NULL;
    bool hit = false;
    for (int k = 0; text && k < p->n && !hit; k++)
        hit = strcmp(text, p->bodies[k]) == 0;
    free(text);
    json_decref(c);
    return hit;
}
