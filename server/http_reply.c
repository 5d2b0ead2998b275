/* http_reply.c - building replies: JSON, text, and the one error shape
 * every endpoint uses, mapped from the engine's error classes. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"

void srv_reply_clear(srv_reply *rp)
{
    free(rp->body);
    memset(rp, 0, sizeof *rp);
}

srv_outcome srv_reply_text(srv_reply *rp, int status, const char *type,
                           char *text, size_t len)
{
    free(rp->body);
    rp->status = text ? status : 500;
    rp->content_type = text ? type : "application/json";
    rp->body = text;
    rp->body_len = text ? len : 0;
    if (!text) {
        static const char oom[] =
            "{\"error\":{\"code\":\"host_out_of_memory\",\"message\":\"out of host memory\"}}";
        rp->body = strdup(oom);
        rp->body_len = rp->body ? sizeof oom - 1 : 0;
    }
    return SRV_DONE;
}

srv_outcome srv_reply_copy(srv_reply *rp, int status, const char *type,
                           const void *data, size_t len)
{
    char *copy = malloc(len + 1);
    if (copy) {
        memcpy(copy, data, len);
        copy[len] = '\0';
    }
    return srv_reply_text(rp, status, type, copy, len);
}

srv_outcome srv_reply_json(srv_reply *rp, int status, json_t *obj)
{
    char *text = obj ? json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(obj);
    return srv_reply_text(rp, status, "application/json", text,
                          text ? strlen(text) : 0);
}

static json_t *error_object(const char *code, const char *message,
                            const char *path, int line, int column,
                            const char *instruction)
{
    json_t *e = json_object();
    json_object_set_new(e, "code", json_string(code));
    json_object_set_new(e, "message", json_string(message));
    json_object_set_new(e, "path", json_string(path ? path : ""));
    json_object_set_new(e, "line", json_integer(line));
    json_object_set_new(e, "column", json_integer(column));
    if (instruction && *instruction)
        json_object_set_new(e, "instruction", json_string(instruction));
    json_t *o = json_object();
    json_object_set_new(o, "error", e);
    return o;
}

srv_outcome srv_reply_error(srv_reply *rp, int status, const char *code,
                            const char *path, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return srv_reply_json(rp, status,
                          error_object(code, msg, path, 0, 0, NULL));
}

/* Bad input is 4xx, whatever part of the engine noticed it; only the
 * server's own failures (its disk, host memory) are 5xx. A deadline is 503:
 * the same request may succeed when the server is less busy. */
int srv_status_for(hs_status s)
{
    switch (s) {
    case HS_OK: return 200;
    case HS_ERR_PARSE: return 400;
    case HS_ERR_INVALID:
    case HS_ERR_SHAPE:
    case HS_ERR_UNSUPPORTED:
    case HS_ERR_OOM:
    case HS_ERR_LIMIT:
    case HS_ERR_RUNTIME: return 422;
    case HS_ERR_CANCELLED:
    case HS_ERR_NOMEM: return 503;
    case HS_ERR_IO: return 500;
    }
    return 500;
}

json_t *srv_error_json(const hs_error *e)
{
    const char *code = e->status == HS_ERR_CANCELLED ? "deadline_exceeded"
                                                     : hs_status_name(e->status);
    return error_object(code, e->message, e->path, e->line, e->column,
                        e->instruction);
}

srv_outcome srv_reply_hs_error(srv_reply *rp, const hs_error *e)
{
    return srv_reply_json(rp, srv_status_for(e->status), srv_error_json(e));
}

const char *srv_query(const srv_request *rq, const char *key)
{
    for (int k = 0; k < rq->n_query; k++)
        if (strcmp(rq->query_key[k], key) == 0)
            return rq->query_value[k];
    return NULL;
}
