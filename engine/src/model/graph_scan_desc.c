/* graph_scan_desc.c - validates a graph op "scan": torch_xla's
 * scan(fn, init, xs) with fn a graph of its own.
 *
 *     {"name": "rnn", "op": "scan", "init": ["h0"], "xs": ["seq"],
 *      "body": {"carry": ["h"], "x": ["x_t"],
 *               "params": {"weight_hh": {"shape": [8, 8]}},
 *               "ops": [...], "new_carry": ["h2"], "y": ["h2"]},
 *      "outputs": ["h_last", "hs"]}
 *
 * Names are checked here, where they are written; shapes (the xs' common
 * leading length, a carry that keeps its shape) when tracing, which knows
 * them, with the same JSON paths (trace_graph_scan.c). */
#include <string.h>

#include "model/model_desc.h"

static const char *const k_scan_keys[] = {"name",  "op",      "init", "xs",
                                          "body",  "outputs", "scope", NULL};
static const char *const k_body_keys[] = {"carry", "x",         "params",
                                          "ops",   "new_carry", "y", NULL};

/* obj[key]: a list of strings, at least min long. Each is an identifier
 * (fresh names: the body's inputs, the outputs) or, with has_name, a name
 * the enclosing graph already defines. */
static bool name_list(js_walker *w, const json_t *obj, const char *key,
                      size_t min, hs_arena *a,
                      bool (*has_name)(const void *ns, const char *s),
                      const char *const *(*known)(const void *ns),
                      const void *ns, const char ***out, int *n_out)
{
    const json_t *list = json_object_get(obj, key);
    if (!list)
        return js_fail(w, HS_ERR_INVALID, key, "missing required key '%s'",
                       key);
    if (!json_is_array(list) || json_array_size(list) < min ||
        json_array_size(list) > HS_SCAN_MAX_NAMES)
        return js_fail(w, HS_ERR_INVALID, key,
                       "expected a list of %zu to %d names", min,
                       HS_SCAN_MAX_NAMES);
    size_t n = json_array_size(list);
    *out = hs_arena_alloc(a, (n + 1) * sizeof **out);
    if (!*out)
        return js_fail(w, HS_ERR_NOMEM, NULL, "out of host memory");
    size_t mark = js_push_key(w, key);
    bool ok = true;
    for (size_t i = 0; ok && i < n; i++) {
        size_t m2 = js_push_index(w, i);
        const json_t *e = json_array_get(list, i);
        const char *s = json_is_string(e) ? json_string_value(e) : NULL;
        if (!s) {
            ok = js_fail(w, HS_ERR_INVALID, NULL, "expected a name (string)");
        } else if (has_name && !has_name(ns, s)) {
            const char *near = js_closest(s, known(ns));
            ok = near ? js_fail(w, HS_ERR_INVALID, NULL,
                                "unknown argument \"%s\" (did you mean "
                                "\"%s\"?); it names \"x\", a param or an "
                                "earlier op",
                                s, near)
                      : js_fail(w, HS_ERR_INVALID, NULL,
                                "unknown argument \"%s\"; it names \"x\", a "
                                "param or an earlier op",
                                s);
        } else if (!has_name && (!hs__graph_identifier(s) || strlen(s) > 64)) {
            ok = js_fail(w, HS_ERR_INVALID, NULL,
                         "expected a name of letters, digits and '_' (not "
                         "starting with a digit, at most 64 long), got "
                         "\"%s\"",
                         s);
        } else {
            ok = ((*out)[i] = hs_arena_strdup(a, s)) != NULL ||
                 js_fail(w, HS_ERR_NOMEM, NULL, "out of host memory");
        }
        js_pop(w, m2);
    }
    js_pop(w, mark);
    *n_out = (int)n;
    return ok;
}

static bool parse_body(js_walker *w, const json_t *op, hs_arena *a,
                       const hs_model_limits *limits, hs_graph_scan *sc)
{
    const json_t *obj = json_object_get(op, "body");
    if (!obj)
        return js_fail(w, HS_ERR_INVALID, "body",
                       "missing required key 'body' (the step: {carry, x, "
                       "params, ops, new_carry, y})");
    size_t mark = js_push_key(w, "body");
    hs_block *body = hs_arena_alloc(a, sizeof *body);
    const char **carry = NULL, **x = NULL;
    int n_carry = 0, n_x = 0;
    bool ok = body != NULL ||
              js_fail(w, HS_ERR_NOMEM, NULL, "out of host memory");
    ok = ok && js_expect_object(w, obj, "a scan body") &&
         js_check_keys(w, obj, k_body_keys) &&
         name_list(w, obj, "carry", 0, a, NULL, NULL, NULL, &carry,
                   &n_carry) &&
         name_list(w, obj, "x", 0, a, NULL, NULL, NULL, &x, &n_x);
    if (ok && n_carry != sc->n_carry)
        ok = js_fail(w, HS_ERR_INVALID, "carry",
                     "the body names %d carries but init has %d", n_carry,
                     sc->n_carry);
    if (ok && n_x != sc->n_xs)
        ok = js_fail(w, HS_ERR_INVALID, "x",
                     "the body names %d slices but xs has %d", n_x,
                     sc->n_xs);
    if (ok) {
        body->type = HS_BLOCK_GRAPH;
        body->path = hs_arena_strdup(a, w->path);
        body->n_inputs = n_carry + n_x;
        body->inputs = hs_arena_alloc(a, (size_t)(body->n_inputs + 1) *
                                             sizeof *body->inputs);
        ok = body->path && body->inputs;
        if (!ok)
            js_fail(w, HS_ERR_NOMEM, NULL, "out of host memory");
    }
    if (ok) {
        memcpy(body->inputs, carry, (size_t)n_carry * sizeof *carry);
        memcpy(body->inputs + n_carry, x, (size_t)n_x * sizeof *x);
        static const char *const k_results[] = {"new_carry", "y", NULL};
        const char **results[2] = {NULL, NULL};
        int n_results[2] = {0, 0};
        ok = hs__graph_body_parse(w, obj, a, limits, body, k_results,
                                  results, n_results);
        if (ok && n_results[0] != sc->n_carry)
            ok = js_fail(w, HS_ERR_INVALID, "new_carry",
                         "the body returns %d carries but init has %d",
                         n_results[0], sc->n_carry);
        sc->new_carry = results[0];
        sc->ys = results[1];
        sc->n_ys = n_results[1];
    }
    sc->body = body;
    js_pop(w, mark);
    return ok;
}

bool hs__graph_scan_parse(js_walker *w, const json_t *op, hs_arena *a,
                          const hs_model_limits *limits,
                          bool (*has_name)(const void *ns, const char *s),
                          const char *const *(*known)(const void *ns),
                          const void *ns, hs_graph_op *g)
{
    hs_graph_scan *sc = hs_arena_alloc(a, sizeof *sc);
    if (!sc)
        return js_fail(w, HS_ERR_NOMEM, NULL, "out of host memory");
    const char **init = NULL, **xs = NULL, **outputs = NULL;
    int n_outputs = 0;
    if (!js_check_keys(w, op, k_scan_keys) ||
        !name_list(w, op, "init", 0, a, has_name, known, ns, &init,
                   &sc->n_carry) ||
        !name_list(w, op, "xs", 1, a, has_name, known, ns, &xs, &sc->n_xs) ||
        !parse_body(w, op, a, limits, sc) ||
        !name_list(w, op, "outputs", 0, a, NULL, NULL, NULL, &outputs,
                   &n_outputs))
        return false;
    if (n_outputs != sc->n_carry + sc->n_ys)
        return js_fail(w, HS_ERR_INVALID, "outputs",
                       "expected %d names (the %d final carries, then the "
                       "%d stacked ys), got %d",
                       sc->n_carry + sc->n_ys, sc->n_carry, sc->n_ys,
                       n_outputs);
    sc->outputs = outputs;
    g->args = hs_arena_alloc(a, (size_t)(sc->n_carry + sc->n_xs + 1) *
                                    sizeof *g->args);
    if (!g->args)
        return js_fail(w, HS_ERR_NOMEM, NULL, "out of host memory");
    memcpy(g->args, init, (size_t)sc->n_carry * sizeof *init);
    memcpy(g->args + sc->n_carry, xs, (size_t)sc->n_xs * sizeof *xs);
    g->n_args = sc->n_carry + sc->n_xs;
    g->scan = sc;
    return true;
}
