/* api_compare.c - POST /v1/compare: two variants of one model compiled
 * side by side. Each variant is also a compile result of its own (its id
 * is the one POST /v1/compile?<variant> gives), so its graphs and HLO are
 * one link away; the comparison adds ratios and the engine's instruction
 * diff of the two optimized modules. */
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

/* The engine's diff of the two optimized modules (hs_module_diff_compute)
 * as JSON, each list cut at DIFF_LIST_MAX. */
static json_t *diff_json(const hs_module *a, const hs_module *b)
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
    json_t *o = json_pack("{s:s, s:{s:I, s:I, s:I, s:I}, s:o, s:o, s:o, s:b, s:o}",
                          "stage", "optimized", "counts", "added",
                          (json_int_t)d.n_added, "removed", (json_int_t)d.n_removed,
                          "changed", (json_int_t)d.n_changed, "unchanged",
                          (json_int_t)d.n_unchanged, "added", added, "removed",
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

json_t *api_compare(srv *s, const api_request *ar, int64_t deadline_ns,
                    api_outcome *outcome, hs_error *e)
{
    json_t *body = json_object_get(ar->canonical, "body");
    json_t *query = json_object_get(ar->canonical, "query");
    json_t *model = json_object_get(body, "model");
    static const char *const label[2] = {"a", "b"};
    api_program p[2];
    api_request sub[2];
    json_t *side[2] = {NULL, NULL}, *out = NULL;
    memset(p, 0, sizeof p);
    memset(sub, 0, sizeof sub);
    int built = 0;
    for (; built < 2; built++) {
        json_t *variant = json_object_get(body, label[built]);
        json_t *q = variant_query(query, variant);
        int rc = q ? api_request_make("compile", model, q, &sub[built]) : -1;
        json_decref(q);
        if (rc != 0) {
            hs_error_set(e, HS_ERR_NOMEM, "out of host memory");
            break;
        }
        q = json_object_get(sub[built].canonical, "query");
        if (api_program_build(s, model, q, false, deadline_ns, &p[built], e) != 0) {
            /* Say which variant failed: a's and b's overrides differ. */
            char msg[sizeof e->message];
            memcpy(msg, e->message, sizeof msg);
            snprintf(e->message, sizeof e->message, "variant %s: %.480s",
                     label[built], msg);
            api_program_free(&p[built]);
            api_request_free(&sub[built]);
            break;
        }
        side[built] = variant_summary(outcome, label[built], variant, &sub[built], &p[built]);
    }
    if (built == 2) {
        json_t *mem_a = json_object_get(side[0], "memory");
        json_t *mem_b = json_object_get(side[1], "memory");
        json_t *ratios = json_pack(
            "{s:f, s:f, s:f, s:f}", "instructions_optimized",
            ratio(json_object_get(json_object_get(side[0], "instructions"), "optimized"),
                  json_object_get(json_object_get(side[1], "instructions"), "optimized")),
            "instructions_traced",
            ratio(json_object_get(json_object_get(side[0], "instructions"), "traced"),
                  json_object_get(json_object_get(side[1], "instructions"), "traced")),
            "compile_seconds",
            ratio(json_object_get(side[0], "compile_seconds"),
                  json_object_get(side[1], "compile_seconds")),
            "trace_seconds",
            ratio(json_object_get(side[0], "trace_seconds"),
                  json_object_get(side[1], "trace_seconds")));
        if (json_object_get(mem_a, "peak_device_bytes"))
            json_object_set_new(ratios, "peak_device_bytes",
                                json_real(ratio(json_object_get(mem_a, "peak_device_bytes"),
                                                json_object_get(mem_b, "peak_device_bytes"))));
        out = json_pack("{s:s, s:s, s:o, s:o, s:o, s:o, s:o}", "id", ar->id,
                        "endpoint", "compare", "a", side[0], "b", side[1],
                        "ratios", ratios, "diff",
                        diff_json(p[0].prog->optimized, p[1].prog->optimized),
                        "links", api_links(ar->id, "compare"));
        side[0] = side[1] = NULL;
    }
    for (int k = 0; k < built; k++) {
        json_decref(side[k]);
        api_program_free(&p[k]);
        api_request_free(&sub[k]);
    }
    return out;
}
