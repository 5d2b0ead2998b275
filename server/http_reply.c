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

/* Length of the UTF-8 sequence at p (at most n bytes), 0 when it is not a
 * complete, shortest-form sequence of a scalar value. */
static size_t utf8_seq(const unsigned char *p, size_t n)
{
    size_t len;
    unsigned min, cp;
    if (p[0] < 0x80)
        return 1;
    if (p[0] >= 0xc2 && p[0] <= 0xdf)
        len = 2, min = 0x80, cp = p[0] & 0x1f;
    else if (p[0] >= 0xe0 && p[0] <= 0xef)
        len = 3, min = 0x800, cp = p[0] & 0x0f;
    else if (p[0] >= 0xf0 && p[0] <= 0xf4)
        len = 4, min = 0x10000, cp = p[0] & 0x07;
    else
        return 0;
    if (len > n)
        return 0;
    for (size_t k = 1; k < len; k++) {
        if ((p[k] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[k] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

json_t *srv_json_string(const char *s)
{
    if (!s)
        s = "";
    size_t n = strlen(s);
    json_t *j = json_stringn_nocheck(s, n);
    const unsigned char *p = (const unsigned char *)s;
    size_t k = 0;
    while (k < n && utf8_seq(p + k, n - k))
        k += utf8_seq(p + k, n - k);
    if (k == n)
        return j;
    /* Invalid bytes (half a character quoted by a parser, a mutated body):
     * jansson would refuse the string, so each such byte is written as the
     * text \xNN, which keeps the message and shows what was there. */
    json_decref(j);
    char *out = malloc(n * 4 + 1);
    if (!out)
        return json_string("");
    size_t o = 0;
    for (k = 0; k < n;) {
        size_t len = utf8_seq(p + k, n - k);
        if (len) {
            memcpy(out + o, p + k, len);
            o += len, k += len;
        } else {
            o += (size_t)snprintf(out + o, 5, "\\x%02x", p[k]);
            k++;
        }
    }
    j = json_stringn_nocheck(out, o);
    free(out);
    return j;
}

size_t srv_utf8_cut(const char *s, size_t n)
{
    /* Steps back over the continuation bytes of the last character when
     * the character does not fit whole in n bytes. */
    const unsigned char *p = (const unsigned char *)s;
    size_t k = n;
    while (k > 0 && n - k < 3 && (p[k - 1] & 0xc0) == 0x80)
        k--;
    if (k > 0 && p[k - 1] >= 0xc0) {
        size_t want = p[k - 1] >= 0xf0 ? 4 : p[k - 1] >= 0xe0 ? 3 : 2;
        if (n - (k - 1) < want)
            return k - 1;
    }
    return n;
}

json_t *srv_error_object(const char *code, const char *message, const char *path,
                         int line, int column, const char *instruction)
{
    json_t *e = json_object();
    json_object_set_new(e, "code", srv_json_string(code));
    json_object_set_new(e, "message", srv_json_string(message));
    json_object_set_new(e, "path", srv_json_string(path));
    json_object_set_new(e, "line", json_integer(line));
    json_object_set_new(e, "column", json_integer(column));
    if (instruction && *instruction)
        json_object_set_new(e, "instruction", srv_json_string(instruction));
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
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (n >= (int)sizeof msg) /* cut: never in the middle of a character */
        msg[srv_utf8_cut(msg, sizeof msg - 1)] = '\0';
    return srv_reply_json(rp, status,
                          srv_error_object(code, msg, path, 0, 0, NULL));
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
    return srv_error_object(code, e->message, e->path, e->line, e->column,
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
