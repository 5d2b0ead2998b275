/* api_compare.c - POST /v1/compare: two programs compiled side by side,
 * either two variants of one model ({"model", "a": {overrides}, "b"}) or
 * two sources with their own overrides ({"a": {"hlo" | "model", ...},
 * "b": {...}}: a before/after pair of dumps, a model and a dump). Each side
 * is also a compile result of its own (its id is the one POST /v1/compile
 * gives for its source and overrides), so its graphs and HLO are one link
 * away; the comparison adds a metrics table, ratios and the engine's
 * instruction diff of the two modules, as traced and as optimized. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"

#define DIFF_LIST_MAX 100

static json_t *variant_query(json_t *query, json_t *variant)
{
    json_t *q = json_deep_copy(query);
    json_object_update(q, variant);
    api_query_normalize(q);
    return q;
}

static json_t *instr_json(const hs_instruction *in)
{
    char shape[256] = "";
    hs_shape_print(&in->shape, false, shape, sizeof shape);
    return json_pack("{s:s, s:s, s:s, s:s}", "name", in->name, "opcode",
                     hs_opcode_name(in->opcode), "shape", shape, "computation",
                     in->parent ? in->parent->name : "");
}

/* The engine's diff of two modules (hs_module_diff_compute) as JSON, each
 * list cut at DIFF_LIST_MAX; stage says which modules they are. */
static json_t *diff_json(const hs_module *a, const hs_module *b, const char *stage)
{
    hs_module_diff d;
    hs_error e;
    hs_error_clear(&e);
    if (hs_module_diff_compute(a, b, &d, &e) != HS_OK)
        return json_pack("{s:s}", "error", e.message);
    json_t *added = json_array(), *removed = json_array(), *changed = json_array();
    json_t *opcodes = json_object();
    for (int64_t k = 0; k < d.n_added && k < DIFF_LIST_MAX; k++)
        json_array_append_new(added, instr_json(d.added[k]));
    for (int64_t k = 0; k < d.n_removed && k < DIFF_LIST_MAX; k++)
        json_array_append_new(removed, instr_json(d.removed[k]));
    for (int64_t k = 0; k < d.n_changed && k < DIFF_LIST_MAX; k++)
        json_array_append_new(changed,
                              json_pack("{s:s, s:o, s:o}", "name", d.changed_b[k]->name,
                                        "a", instr_json(d.changed_a[k]), "b",
                                        instr_json(d.changed_b[k])));
    for (int op = 0; op < HS_OP_COUNT; op++)
        if (d.opcodes_a[op] || d.opcodes_b[op])
            json_object_set_new(opcodes, hs_opcode_name((hs_opcode)op),
                                json_pack("{s:I, s:I}", "a", (json_int_t)d.opcodes_a[op],
                                          "b", (json_int_t)d.opcodes_b[op]));
    bool truncated = d.n_added > DIFF_LIST_MAX || d.n_removed > DIFF_LIST_MAX ||
                     d.n_changed > DIFF_LIST_MAX;
    json_t *o = json_pack("{s:s, s:{s:I, s:I, s:I, s:I, s:I}, s:o, s:o, s:o, s:b, s:o}",
                          "stage", stage, "counts", "added",
                          (json_int_t)d.n_added, "removed", (json_int_t)d.n_removed,
                          "changed", (json_int_t)d.n_changed, "unchanged",
                          (json_int_t)d.n_unchanged, "matched_by_layer",
                          (json_int_t)d.n_matched_by_layer, "added", added, "removed",
                          removed, "changed", changed, "truncated", truncated,
                          "opcodes", opcodes);
    hs_module_diff_free(&d);
    return o;
}

static double ratio(json_t *a, json_t *b)
{
    double x = json_number_value(a), y = json_number_value(b);
    return x > 0 ? y / x : 0;
}

/* A number of a summary at a path of keys ("memory", "peak_device_bytes"). */
static json_t *at(json_t *o, const char *k1, const char *k2)
{
    json_t *v = json_object_get(o, k1);
    return k2 ? json_object_get(v, k2) : v;
}

/* The figures of both sides in one table, a row per metric: what the
 * explorer shows side by side. A row a side lacks (an estimate the device
 * could not make) is left out. */
static json_t *metrics_table(json_t *a, json_t *b)
{
    static const struct {
        const char *metric, *k1, *k2, *unit;
    } rows[] = {
        {"instructions_traced", "instructions", "traced", "count"},
        {"instructions_optimized", "instructions", "optimized", "count"},
        {"computations_optimized", "computations", "optimized", "count"},
        {"entry_parameters", "entry_parameters", NULL, "count"},
        {"trace_seconds", "trace_seconds", NULL, "seconds"},
        {"compile_seconds", "compile_seconds", NULL, "seconds"},
        {"peak_device_bytes", "memory", "peak_device_bytes", "bytes"},
        {"peak_host_bytes", "memory", "peak_host_bytes", "bytes"},
        {"flops", "estimate", "flops", "count"},
        {"bytes_accessed", "estimate", "bytes", "bytes"},
        {"sim_seconds", "estimate", "sim_seconds", "seconds"},
    };
    json_t *t = json_array();
    for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) {
        json_t *x = at(a, rows[k].k1, rows[k].k2), *y = at(b, rows[k].k1, rows[k].k2);
        if (!json_is_number(x) || !json_is_number(y))
            continue;
        json_array_append_new(t, json_pack("{s:s, s:s, s:O, s:O, s:f}", "metric",
                                           rows[k].metric, "unit", rows[k].unit, "a",
                                           x, "b", y, "ratio", ratio(x, y)));
    }
    return t;
}

static json_t *ratios_json(json_t *a, json_t *b)
{
    json_t *ratios = json_pack(
        "{s:f, s:f, s:f, s:f}", "instructions_optimized",
        ratio(at(a, "instructions", "optimized"), at(b, "instructions", "optimized")),
        "instructions_traced",
        ratio(at(a, "instructions", "traced"), at(b, "instructions", "traced")),
        "compile_seconds", ratio(at(a, "compile_seconds", NULL), at(b, "compile_seconds", NULL)),
        "trace_seconds", ratio(at(a, "trace_seconds", NULL), at(b, "trace_seconds", NULL)));
    if (at(a, "memory", "peak_device_bytes"))
        json_object_set_new(ratios, "peak_device_bytes",
                            json_real(ratio(at(a, "memory", "peak_device_bytes"),
                                            at(b, "memory", "peak_device_bytes"))));
    return ratios;
}

static json_t *variant_summary(api_outcome *out, const char *label, json_t *variant,
                               const api_request *sub, const api_program *p)
{
    json_t *sum = api_summary_compile(sub, p);
    char *text = json_dumps(sum, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_t *met = api_metrics_json(p);
    char *mtext = json_dumps(met, JSON_COMPACT);
    json_decref(met);
    /* Kept as a compile result of its own (api_outcome_commit). */
    int k = out->n_variants;
    if (text && k < 2 && (out->variants[k].request = strdup(sub->text))) {
        snprintf(out->variants[k].id, sizeof out->variants[k].id, "%s", sub->id);
        out->variants[k].summary = text;
        out->variants[k].metrics = mtext;
        out->n_variants++;
    } else {
        free(text);
        free(mtext);
    }
    json_t *o = json_pack("{s:s, s:O}", "label", label, "variant", variant);
    json_object_update(o, sum);
    json_decref(sum);
    return o;
}

/* One side of a comparison: its source (the model, or {"hlo": text}) and
 * its overrides (borrowed from the request), and where its source sits in
 * the request ("/model", "/a/hlo", "/b/model"), for errors. */
typedef struct side {
    json_t *source, *overrides;
    char source_path[16];
    bool own_source; /* two-source form: source was made here */
} side;

static int side_of(json_t *body, const char *label, side *sd)
{
    memset(sd, 0, sizeof *sd);
    json_t *model = json_object_get(body, "model");
    json_t *given = json_object_get(body, label);
    if (model) { /* one model, two sets of overrides */
        sd->source = json_incref(model);
        sd->overrides = json_incref(given);
        snprintf(sd->source_path, sizeof sd->source_path, "/model");
        return 0;
    }
    /* Two sources: "hlo" is sent as compile takes it ({"hlo": text}), a
     * model as it is; the rest of the side are its overrides. */
    json_t *hlo = json_object_get(given, "hlo");
    sd->overrides = json_deep_copy(given);
    if (!sd->overrides)
        return -1;
    json_object_del(sd->overrides, hlo ? "hlo" : "model");
    sd->source = hlo ? json_pack("{s:O}", "hlo", hlo)
                     : json_incref(json_object_get(given, "model"));
    sd->own_source = true;
    snprintf(sd->source_path, sizeof sd->source_path, "/%s/%s", label,
             hlo ? "hlo" : "model");
    return sd->source ? 0 : -1;
}

static void side_free(side *sd)
{
    json_decref(sd->source);
    json_decref(sd->overrides);
}

/* Says which side failed, in the request's terms: a's and b's overrides
 * (and in the two-source form their sources) differ. The message starts
 * "variant a: " (one model) or "side a: " (two sources); a path into the
 * source is moved under the side ("/hlo" -> "/a/hlo", "/layers/0" ->
 * "/a/model/layers/0"), an override the side set ("?device") to the side's
 * key ("/a/device"). */
static void name_the_side(const side *sd, const char *label, hs_error *e)
{
    char msg[sizeof e->message];
    memcpy(msg, e->message, sizeof msg);
    snprintf(e->message, sizeof e->message, "%s %s: %.480s",
             sd->own_source ? "side" : "variant", label, msg);
    char path[sizeof e->path];
    memcpy(path, e->path, sizeof path);
    if (path[0] == '?' && json_object_get(sd->overrides, path + 1))
        snprintf(e->path, sizeof e->path, "/%s/%.200s", label, path + 1);
    else if (sd->own_source && strcmp(path, "/hlo") == 0)
        snprintf(e->path, sizeof e->path, "%s", sd->source_path);
    else if (sd->own_source && (path[0] == '/' || !path[0]))
        snprintf(e->path, sizeof e->path, "%s%.200s", sd->source_path, path);
}

json_t *api_compare(srv *s, const api_request *ar, int64_t deadline_ns,
                    api_outcome *outcome, hs_error *e)
{
    json_t *body = json_object_get(ar->canonical, "body");
    json_t *query = json_object_get(ar->canonical, "query");
    static const char *const label[2] = {"a", "b"};
    api_program p[2];
    api_request sub[2];
    side sd[2];
    json_t *sum[2] = {NULL, NULL}, *out = NULL;
    memset(p, 0, sizeof p);
    memset(sub, 0, sizeof sub);
    memset(sd, 0, sizeof sd);
    int built = 0;
    for (; built < 2; built++) {
        json_t *q = NULL;
        int rc = side_of(body, label[built], &sd[built]);
        if (rc == 0 && (q = variant_query(query, sd[built].overrides)) != NULL)
            rc = api_request_make("compile", sd[built].source, q, &sub[built]);
        else
            rc = -1;
        json_decref(q);
        if (rc != 0) {
            hs_error_set(e, HS_ERR_NOMEM, "out of host memory");
            side_free(&sd[built]);
            break;
        }
        q = json_object_get(sub[built].canonical, "query");
        if (api_program_build(s, sd[built].source, q, false, deadline_ns, &p[built],
                              e) != 0) {
            name_the_side(&sd[built], label[built], e);
            api_program_free(&p[built]);
            api_request_free(&sub[built]);
            side_free(&sd[built]);
            break;
        }
        sum[built] = variant_summary(outcome, label[built], sd[built].overrides,
                                     &sub[built], &p[built]);
    }
    if (built == 2) {
        out = json_pack("{s:s, s:s, s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "id",
                        ar->id, "endpoint", "compare", "form",
                        sd[0].own_source ? "sources" : "variants", "a", sum[0], "b",
                        sum[1], "table",
                        metrics_table(sum[0], sum[1]), "ratios",
                        ratios_json(sum[0], sum[1]), "diff",
                        diff_json(p[0].prog->optimized, p[1].prog->optimized, "optimized"),
                        "diff_traced",
                        diff_json(p[0].prog->traced, p[1].prog->traced, "traced"),
                        "links", api_links(ar->id, "compare"));
        sum[0] = sum[1] = NULL;
    }
    for (int k = 0; k < built; k++) {
        json_decref(sum[k]);
        api_program_free(&p[k]);
        api_request_free(&sub[k]);
        side_free(&sd[k]);
    }
    return out;
}
