/*
 * json_schema.h - parsing JSON with positions, and a small schema walker
 * that reports errors by JSON pointer.
 *
 * The walker carries the path of the value being checked. Every check that
 * fails fills the hs_error once (the first error wins) with the path and a
 * message a user can act on, and returns false so callers can unwind with
 * `if (!js_...) return false;`.
 */
#ifndef HLOSCOPE_MODEL_JSON_SCHEMA_H
#define HLOSCOPE_MODEL_JSON_SCHEMA_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "hloscope/hs_ir.h"

typedef struct js_walker {
    hs_error *err;
    char path[256];
    size_t len;
    bool failed;
} js_walker;

/* Parses text with duplicate keys rejected, after checking that arrays and
 * objects nest at most max_depth deep. NULL with err filled (line, column)
 * on failure. */
json_t *js_parse(const char *text, size_t len, int max_depth, hs_error *err);
/* The nesting check of js_parse on an already parsed value: false with err
 * (HS_ERR_LIMIT) when arrays and objects nest deeper than max_depth. */
bool js_check_depth(const json_t *root, int max_depth, hs_error *err);

void js_init(js_walker *w, hs_error *err);
/* Path stack: push returns a mark to pop back to. */
size_t js_push_key(js_walker *w, const char *key);
size_t js_push_index(js_walker *w, size_t index);
void js_pop(js_walker *w, size_t mark);

/* Fails with the current path (or the path extended by key when key is not
 * NULL). Always returns false. */
bool js_fail(js_walker *w, hs_status s, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Checks that obj is an object whose keys are all in known (NULL
 * terminated); suggests the closest known key for an unknown one. */
bool js_expect_object(js_walker *w, const json_t *v, const char *what);
bool js_check_keys(js_walker *w, const json_t *obj, const char *const *known);
/* Closest string of candidates (NULL terminated) within a small edit
 * distance of s, or NULL. */
const char *js_closest(const char *s, const char *const *candidates);

/* Typed getters on obj[key]. When the key is absent: required fails with
 * "missing key", otherwise *out = def. */
bool js_get_int(js_walker *w, const json_t *obj, const char *key,
                bool required, int64_t def, int64_t min, int64_t max,
                int64_t *out);
bool js_get_number(js_walker *w, const json_t *obj, const char *key,
                   bool required, double def, bool positive, double *out);
bool js_get_bool(js_walker *w, const json_t *obj, const char *key, bool def,
                 bool *out);
/* A string that must be one of choices (NULL terminated); *out = index. */
bool js_get_enum(js_walker *w, const json_t *obj, const char *key,
                 bool required, int def, const char *const *choices,
                 int *out);
bool js_get_string(js_walker *w, const json_t *obj, const char *key,
                   bool required, const char *def, const char **out);
/* An array of integers in [min, max], at most cap long. */
bool js_get_int_array(js_walker *w, const json_t *obj, const char *key,
                      bool required, int64_t min, int64_t max, int cap,
                      int64_t *out, int *n);

#endif
