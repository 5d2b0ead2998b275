/* api_info.c - the small endpoints: health, Prometheus metrics, the OpenAPI
 * document, device presets, and the example models loaded at start. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "hloscope/hs_device.h"
#include "store.h"

srv_outcome api_healthz(srv *s, srv_request *rq, srv_reply *rp)
{
    if (atomic_load(&s->shutting_down))
        return srv_reply_error(rp, 503, "shutting_down", "", "the server is shutting down");
    return srv_reply_json(rp, 200,
                          json_pack("{s:s, s:f, s:i}", "status", "ok",
                                    "uptime_seconds", srv_now() - s->started,
                                    "inflight", atomic_load(&s->inflight)));
}

srv_outcome api_prometheus(srv *s, srv_request *rq, srv_reply *rp)
{
    char *text = srv_metrics_format(s->metrics, s);
    return srv_reply_text(rp, 200, "text/plain; version=0.0.4; charset=utf-8", text,
                          text ? strlen(text) : 0);
}

srv_outcome api_openapi(srv *s, srv_request *rq, srv_reply *rp)
{
    return srv_reply_copy(rp, 200, "application/json", api_openapi_json,
                          strlen(api_openapi_json));
}

srv_outcome api_devices(srv *s, srv_request *rq, srv_reply *rp)
{
    int n = 0;
    const hs_device_spec *d = hs_device_presets(&n);
    json_t *list = json_array();
    for (int k = 0; k < n; k++)
        json_array_append_new(
            list, json_pack("{s:s, s:s, s:f, s:f, s:f, s:f, s:f, s:s}", "name",
                            d[k].name, "kind", d[k].kind, "hbm_bytes",
                            d[k].hbm_bytes, "peak_flops", d[k].peak_flops,
                            "hbm_bandwidth", d[k].hbm_bandwidth,
                            "host_link_bandwidth", d[k].host_link_bandwidth,
                            "host_bytes", d[k].host_bytes, "source",
                            d[k].source ? d[k].source : ""));
    return srv_reply_json(rp, 200,
                          json_pack("{s:s, s:o}", "default",
                                    hs_device_default_name(), "devices", list));
}

/* ---- examples ------------------------------------------------------------ */

typedef struct example {
    char name[128];
    char *text;
    size_t len;
    json_t *info; /* {name, model, description, links} */
} example;

struct api_examples {
    int n;
    example *items;
};

static int by_name(const void *a, const void *b)
{
    return strcmp(((const example *)a)->name, ((const example *)b)->name);
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) {
        buf[n] = '\0';
        *len = (size_t)n;
    }
    return buf;
}

api_examples *api_examples_load(const char *dir, int *count)
{
    api_examples *x = calloc(1, sizeof *x);
    *count = 0;
    if (!x)
        return NULL;
    DIR *d = dir ? opendir(dir) : NULL;
    struct dirent *de;
    while (d && (de = readdir(d))) {
        size_t n = strlen(de->d_name);
        if (n < 6 || n - 5 >= sizeof x->items[0].name ||
            strcmp(de->d_name + n - 5, ".json") != 0)
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        example ex;
        memset(&ex, 0, sizeof ex);
        memcpy(ex.name, de->d_name, n - 5);
        if (!(ex.text = slurp(path, &ex.len)))
            continue;
        example *grown = realloc(x->items, sizeof *grown * (size_t)(x->n + 1));
        if (!grown) {
            free(ex.text);
            break;
        }
        x->items = grown;
        x->items[x->n++] = ex;
    }
    if (d)
        closedir(d);
    if (x->n)
        qsort(x->items, (size_t)x->n, sizeof *x->items, by_name);
    for (int k = 0; k < x->n; k++) {
        example *ex = &x->items[k];
        json_t *j = json_loadb(ex->text, ex->len, 0, NULL);
        char self[200];
        snprintf(self, sizeof self, "/v1/examples/%s", ex->name);
        ex->info = json_pack("{s:s, s:s, s:s, s:{s:s}}", "name", ex->name,
                             "model", json_string_value(json_object_get(j, "name"))
                                          ? json_string_value(json_object_get(j, "name"))
                                          : ex->name,
                             "description",
                             json_string_value(json_object_get(j, "description"))
                                 ? json_string_value(json_object_get(j, "description"))
                                 : "",
                             "links", "self", self);
        json_decref(j);
    }
    *count = x->n;
    return x;
}

void api_examples_free(api_examples *x)
{
    if (!x)
        return;
    for (int k = 0; k < x->n; k++) {
        free(x->items[k].text);
        json_decref(x->items[k].info);
    }
    free(x->items);
    free(x);
}

srv_outcome api_examples_list(srv *s, srv_request *rq, srv_reply *rp)
{
    json_t *list = json_array();
    for (int k = 0; s->examples && k < s->examples->n; k++)
        json_array_append(list, s->examples->items[k].info);
    return srv_reply_json(rp, 200, json_pack("{s:o}", "examples", list));
}

srv_outcome api_example_get(srv *s, srv_request *rq, srv_reply *rp)
{
    for (int k = 0; s->examples && k < s->examples->n; k++)
        if (strcmp(s->examples->items[k].name, rq->params[0]) == 0)
            return srv_reply_copy(rp, 200, "application/json",
                                  s->examples->items[k].text,
                                  s->examples->items[k].len);
    return srv_reply_error(rp, 404, "not_found", "",
                           "no example named '%s' (GET /v1/examples lists them)",
                           rq->params[0]);
}
