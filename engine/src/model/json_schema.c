/* json_schema.c - JSON parsing with positions and a schema walker that
 * reports errors by JSON pointer (RFC 6901). */
#include "model/json_schema.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- parsing ------------------------------------------------------------ */

/* jansson recurses once per nesting level and its own cap is far above what
 * a model description needs, so nesting is checked on the raw text first. */
static bool check_depth(const char *text, size_t len, int max_depth,
                        hs_error *err)
{
    int depth = 0, line = 1, col = 0;
    bool in_string = false, escaped = false;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        col++;
        if (c == '\n') {
            line++;
            col = 0;
        }
        if (in_string) {
            if (escaped)
                escaped = false;
            else if (c == '\\')
                escaped = true;
            else if (c == '"')
                in_string = false;
            continue;
        }
        if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > max_depth) {
                hs_error_set(err, HS_ERR_LIMIT,
                             "JSON nests deeper than %d levels (limit "
                             "max_json_depth)",
                             max_depth);
                if (err) {
                    err->line = line;
                    err->column = col;
                }
                return false;
            }
        } else if (c == ']' || c == '}') {
            depth--;
        }
    }
    return true;
}

json_t *js_parse(const char *text, size_t len, int max_depth, hs_error *err)
{
    if (!check_depth(text, len, max_depth, err))
        return NULL;
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (root)
        return root;
    bool dup = json_error_code(&je) == json_error_duplicate_key;
    hs_error_set(err, dup ? HS_ERR_INVALID : HS_ERR_PARSE, "%s%s",
                 dup ? "" : "JSON syntax error: ", je.text);
    if (err) {
        err->line = je.line > 0 ? je.line : 1;
        err->column = je.column > 0 ? je.column : 1;
    }
    return NULL;
}

/* Does v nest arrays and objects more than limit deep? The recursion stops
 * one level past the limit, so a hostile value costs no more than a good
 * one. */
static bool deeper_than(const json_t *v, int limit)
{
    if (!json_is_object(v) && !json_is_array(v))
        return false;
    if (limit <= 0)
        return true;
    if (json_is_object(v)) {
        const char *key;
        json_t *item;
        json_object_foreach((json_t *)v, key, item) {
            if (deeper_than(item, limit - 1))
                return true;
        }
        return false;
    }
    size_t i;
    json_t *item;
    json_array_foreach(v, i, item) {
        if (deeper_than(item, limit - 1))
            return true;
    }
    return false;
}

bool js_check_depth(const json_t *root, int max_depth, hs_error *err)
{
    if (!deeper_than(root, max_depth))
        return true;
    hs_error_set(err, HS_ERR_LIMIT,
                 "JSON nests deeper than %d levels (limit max_json_depth)",
                 max_depth);
    return false;
}

/* ---- path --------------------------------------------------------------- */

void js_init(js_walker *w, hs_error *err)
{
    memset(w, 0, sizeof *w);
    w->err = err;
}

static void path_append(js_walker *w, const char *s)
{
    size_t cap = sizeof w->path;
    for (; *s && w->len + 3 < cap; s++) {
        if (*s == '~') {
            w->path[w->len++] = '~';
            w->path[w->len++] = '0';
        } else if (*s == '/') {
            w->path[w->len++] = '~';
            w->path[w->len++] = '1';
        } else {
            w->path[w->len++] = *s;
        }
    }
    w->path[w->len] = '\0';
}

size_t js_push_key(js_walker *w, const char *key)
{
    size_t mark = w->len;
    if (w->len + 2 < sizeof w->path) {
        w->path[w->len++] = '/';
        w->path[w->len] = '\0';
        path_append(w, key);
    }
    return mark;
}

size_t js_push_index(js_walker *w, size_t index)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%zu", index);
    return js_push_key(w, buf);
}

void js_pop(js_walker *w, size_t mark)
{
    w->len = mark;
    w->path[mark] = '\0';
}

bool js_fail(js_walker *w, hs_status s, const char *key, const char *fmt, ...)
{
    if (w->failed)
        return false;
    w->failed = true;
    if (!w->err)
        return false;
    size_t mark = key ? js_push_key(w, key) : w->len;
    w->err->status = s;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->err->message, sizeof w->err->message, fmt, ap);
    va_end(ap);
    snprintf(w->err->path, sizeof w->err->path, "%s", w->path);
    js_pop(w, mark);
    return false;
}

/* ---- keys --------------------------------------------------------------- */

static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63)
        return 64;
    size_t row[64];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

const char *js_closest(const char *s, const char *const *candidates)
{
    const char *best = NULL;
    size_t best_d = (size_t)-1;
    size_t limit = strlen(s) / 3 + 1;
    if (limit < 2)
        limit = 2;
    for (int i = 0; candidates[i]; i++) {
        size_t d = edit_distance(s, candidates[i]);
        if (d < best_d) {
            best_d = d;
            best = candidates[i];
        }
    }
    return best_d <= limit ? best : NULL;
}

static const char *json_kind(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "a value";
}

bool js_expect_object(js_walker *w, const json_t *v, const char *what)
{
    if (json_is_object(v))
        return true;
    return js_fail(w, HS_ERR_INVALID, NULL, "expected %s (an object), got %s",
                   what, json_kind(v));
}

bool js_check_keys(js_walker *w, const json_t *obj, const char *const *known)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v) {
        bool ok = false;
        for (int i = 0; known[i] && !ok; i++)
            ok = strcmp(key, known[i]) == 0;
        if (ok)
            continue;
        const char *near = js_closest(key, known);
        char list[200] = "";
        size_t n = 0;
        for (int i = 0; known[i] && n < sizeof list - 1; i++)
            n += (size_t)snprintf(list + n, sizeof list - n, "%s'%s'",
                                  i ? ", " : "", known[i]);
        if (near)
            return js_fail(w, HS_ERR_INVALID, key,
                           "unknown key '%s' (did you mean '%s'?)", key, near);
        return js_fail(w, HS_ERR_INVALID, key,
                       "unknown key '%s'; known keys: %s", key, list);
    }
    return true;
}

/* ---- typed getters ------------------------------------------------------ */

static bool missing(js_walker *w, const char *key)
{
    return js_fail(w, HS_ERR_INVALID, key, "missing required key '%s'", key);
}

static void describe_int_range(char *buf, size_t size, int64_t min,
                               int64_t max)
{
    if (min == 1 && max == INT64_MAX)
        snprintf(buf, size, "a positive integer");
    else if (min == 0 && max == INT64_MAX)
        snprintf(buf, size, "a non-negative integer");
    else if (max == INT64_MAX)
        snprintf(buf, size, "an integer >= %lld", (long long)min);
    else
        snprintf(buf, size, "an integer in [%lld, %lld]", (long long)min,
                 (long long)max);
}

bool js_get_int(js_walker *w, const json_t *obj, const char *key,
                bool required, int64_t def, int64_t min, int64_t max,
                int64_t *out)
{
    const json_t *v = json_object_get(obj, key);
    if (!v) {
        if (required)
            return missing(w, key);
        *out = def;
        return true;
    }
    char want[80];
    describe_int_range(want, sizeof want, min, max);
    if (!json_is_integer(v))
        return js_fail(w, HS_ERR_INVALID, key, "expected %s, got %s", want,
                       json_kind(v));
    int64_t x = (int64_t)json_integer_value(v);
    if (x < min || x > max)
        return js_fail(w, HS_ERR_INVALID, key, "expected %s, got %lld", want,
                       (long long)x);
    *out = x;
    return true;
}

bool js_get_number(js_walker *w, const json_t *obj, const char *key,
                   bool required, double def, bool positive, double *out)
{
    const json_t *v = json_object_get(obj, key);
    if (!v) {
        if (required)
            return missing(w, key);
        *out = def;
        return true;
    }
    const char *want = positive ? "a positive number" : "a number";
    if (!json_is_number(v))
        return js_fail(w, HS_ERR_INVALID, key, "expected %s, got %s", want,
                       json_kind(v));
    double x = json_number_value(v);
    if (!isfinite(x) || (positive && !(x > 0)))
        return js_fail(w, HS_ERR_INVALID, key, "expected %s, got %g", want,
                       x);
    *out = x;
    return true;
}

bool js_get_bool(js_walker *w, const json_t *obj, const char *key, bool def,
                 bool *out)
{
    const json_t *v = json_object_get(obj, key);
    if (!v) {
        *out = def;
        return true;
    }
    if (!json_is_boolean(v))
        return js_fail(w, HS_ERR_INVALID, key,
                       "expected a boolean (true or false), got %s",
                       json_kind(v));
    *out = json_is_true(v);
    return true;
}

bool js_get_string(js_walker *w, const json_t *obj, const char *key,
                   bool required, const char *def, const char **out)
{
    const json_t *v = json_object_get(obj, key);
    if (!v) {
        if (required)
            return missing(w, key);
        *out = def;
        return true;
    }
    if (!json_is_string(v))
        return js_fail(w, HS_ERR_INVALID, key, "expected a string, got %s",
                       json_kind(v));
    *out = json_string_value(v);
    return true;
}

bool js_get_enum(js_walker *w, const json_t *obj, const char *key,
                 bool required, int def, const char *const *choices, int *out)
{
    const char *s;
    if (!js_get_string(w, obj, key, required, NULL, &s))
        return false;
    if (!s) {
        *out = def;
        return true;
    }
    for (int i = 0; choices[i]; i++) {
        if (strcmp(s, choices[i]) == 0) {
            *out = i;
            return true;
        }
    }
    char list[256] = "";
    size_t n = 0;
    for (int i = 0; choices[i] && n < sizeof list - 1; i++)
        n += (size_t)snprintf(list + n, sizeof list - n, "%s\"%s\"",
                              i ? ", " : "", choices[i]);
    const char *near = js_closest(s, choices);
    if (near)
        return js_fail(w, HS_ERR_INVALID, key,
                       "unknown value \"%s\" (did you mean \"%s\"?); expected "
                       "one of %s",
                       s, near, list);
    return js_fail(w, HS_ERR_INVALID, key,
                   "unknown value \"%s\"; expected one of %s", s, list);
}

bool js_get_int_array(js_walker *w, const json_t *obj, const char *key,
                      bool required, int64_t min, int64_t max, int cap,
                      int64_t *out, int *n)
{
    const json_t *v = json_object_get(obj, key);
    if (!v) {
        if (required)
            return missing(w, key);
        *n = -1;
        return true;
    }
    if (!json_is_array(v))
        return js_fail(w, HS_ERR_INVALID, key,
                       "expected an array of integers, got %s", json_kind(v));
    size_t count = json_array_size(v);
    if (count > (size_t)cap)
        return js_fail(w, HS_ERR_INVALID, key,
                       "expected at most %d entries, got %zu", cap, count);
    size_t mark = js_push_key(w, key);
    char want[80];
    describe_int_range(want, sizeof want, min, max);
    for (size_t i = 0; i < count; i++) {
        const json_t *e = json_array_get(v, i);
        if (!json_is_integer(e) || json_integer_value(e) < min ||
            json_integer_value(e) > max) {
            size_t m2 = js_push_index(w, i);
            js_fail(w, HS_ERR_INVALID, NULL, "expected %s", want);
            js_pop(w, m2);
            js_pop(w, mark);
            return false;
        }
        out[i] = (int64_t)json_integer_value(e);
    }
    js_pop(w, mark);
    *n = (int)count;
    return true;
}
