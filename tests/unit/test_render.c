/* test_render.c - the render module: DOT and JSON graphs of HLO modules
 * (ids, clusters, escaping, layer collapsing, budget), layout in a worker
 * (well-formed SVG, errors, many threads at once), memory timelines and
 * Gantt charts. The layout service's processes are tested in
 * test_render_layout.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hloscope/hs_hlo_text.h"
#include "hloscope/hs_model.h"
#include "hloscope/hs_render.h"
#include "render/layout_internal.h"
#include "render/render_internal.h"
#include "hlo_test_helpers.h"

/* ---- helpers ------------------------------------------------------------ */

static const char while_hlo[] =
    "HloModule loop\n"
    "condition {\n"
    "  p = (s32[]) parameter(0)\n"
    "  cond = s32[] get-tuple-element(p), index=0\n"
    "  trip_count = s32[] constant(7)\n"
    "  ROOT done = pred[] compare(cond, trip_count), direction=LT\n"
    "}\n"
    "body {\n"
    "  p = (s32[]) parameter(0)\n"
    "  cond = s32[] get-tuple-element(p), index=0\n"
    "  one = s32[] constant(1)\n"
    "  cond_plus_1 = s32[] add(cond, one)\n"
    "  ROOT t = (s32[]) tuple(cond_plus_1)\n"
    "}\n"
    "ENTRY main {\n"
    "  p = s32[] constant(0)\n"
    "  t = (s32[]) tuple(p)\n"
    "  ROOT w = (s32[]) while(t), condition=condition, body=body\n"
    "}\n";

static const char lin8_json[] =
    "{\"name\": \"lin8\", \"input\": {\"shape\": [2, 16]},\n"
    " \"layers\": [{\"repeat\": 8, \"block\": {\"type\": \"linear\", "
    "\"features\": 16}}]}";

static char *dot_of(const hs_module *m, const hs_render_options *o)
{
    char *dot = NULL;
    size_t len = 0;
    hs_error err;
    hs_status st = hs_render_graph_dot(m, o, &dot, &len, &err);
    if (st != HS_OK)
        fail_msg("dot: %s", err.message);
    assert_int_equal(strlen(dot), len);
    return dot;
}

static json_t *json_of(const hs_module *m, const hs_render_options *o)
{
    char *text = NULL;
    size_t len = 0;
    hs_error err;
    hs_status st = hs_render_graph_json(m, o, &text, &len, &err);
    if (st != HS_OK)
        fail_msg("json: %s", err.message);
    json_error_t jerr;
    json_t *j = json_loadb(text, len, 0, &jerr);
    if (!j)
        fail_msg("graph JSON does not parse: %s at %d:%d", jerr.text,
                 jerr.line, jerr.column);
    free(text);
    return j;
}

static char *layout(const char *dot, const char *engine)
{
    char *out = NULL;
    size_t len = 0;
    hs_error err;
    hs_status st = hs_render_layout(dot, engine, "svg", 20000, &out, &len,
                                    &err);
    if (st != HS_OK)
        fail_msg("layout: %s: %s", hs_status_name(st), err.message);
    assert_int_equal(strlen(out), len);
    return out;
}

static int count_of(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* Every instruction of every computation of m. */
#define FOR_EACH_INSTRUCTION(m, i)                                        \
    for (int c_ = 0; c_ < (m)->n_comps; c_++)                             \
        for (int k_ = 0; k_ < (m)->comps[c_]->n_instrs &&                 \
                         ((i) = (m)->comps[c_]->instrs[k_], 1);           \
             k_++)

static json_t *find_node(json_t *graph, const char *id)
{
    size_t k;
    json_t *n;
    json_array_foreach(json_object_get(graph, "nodes"), k, n)
        if (strcmp(json_string_value(json_object_get(n, "id")), id) == 0)
            return n;
    return NULL;
}

static int count_category(json_t *graph, const char *category)
{
    size_t k;
    json_t *n;
    int count = 0;
    json_array_foreach(json_object_get(graph, "nodes"), k, n)
        count += strcmp(json_string_value(json_object_get(n, "category")),
                        category) == 0;
    return count;
}

/* ---- a small XML checker: tags balance, entities are well formed, and
 * the ids of elements are collected. Enough to tell that the SVG is
 * well-formed, not a validating parser. ---------------------------------- */

typedef struct xml_doc {
    char root[32];
    int n_ids;
    char **ids;
} xml_doc;

static void xml_free(xml_doc *d)
{
    for (int k = 0; k < d->n_ids; k++)
        free(d->ids[k]);
    free(d->ids);
}

static bool xml_has_id(const xml_doc *d, const char *id)
{
    for (int k = 0; k < d->n_ids; k++)
        if (strcmp(d->ids[k], id) == 0)
            return true;
    return false;
}

static void check_entities(const char *s, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        if (s[k] == '<')
            fail_msg("raw '<' in text or attribute near: %.60s", s + k);
        if (s[k] != '&')
            continue;
        size_t j = k + 1;
        if (j < n && s[j] == '#')
            j++;
        while (j < n && ((s[j] >= 'a' && s[j] <= 'z') ||
                         (s[j] >= 'A' && s[j] <= 'Z') ||
                         (s[j] >= '0' && s[j] <= '9')))
            j++;
        if (j >= n || s[j] != ';' || j == k + 1)
            fail_msg("malformed entity near: %.40s", s + k);
    }
}

static void xml_parse(const char *s, xml_doc *d)
{
    memset(d, 0, sizeof *d);
    char stack[256][32];
    int depth = 0;
    bool seen_root = false;
    const char *p = s;
    while (*p) {
        const char *lt = strchr(p, '<');
        if (!lt) {
            check_entities(p, strlen(p));
            break;
        }
        check_entities(p, (size_t)(lt - p));
        if (strncmp(lt, "<?", 2) == 0 || strncmp(lt, "<!--", 4) == 0 ||
            strncmp(lt, "<!DOCTYPE", 9) == 0) {
            const char *end = strncmp(lt, "<?", 2) == 0 ? strstr(lt, "?>")
                              : lt[2] == '-'           ? strstr(lt, "-->")
                                                       : strchr(lt, '>');
            assert_non_null(end);
            p = strchr(end, '>') + 1;
            continue;
        }
        bool closing = lt[1] == '/';
        const char *q = lt + 1 + closing;
        char name[32];
        size_t nl = strcspn(q, " \t\r\n/>");
        assert_true(nl > 0 && nl < sizeof name);
        memcpy(name, q, nl);
        name[nl] = '\0';
        q += nl;
        /* attributes, with quoted values */
        while (*q && *q != '>' && !(q[0] == '/' && q[1] == '>')) {
            if (*q == '"') {
                const char *e = strchr(q + 1, '"');
                assert_non_null(e);
                check_entities(q + 1, (size_t)(e - q - 1));
                if (q - lt >= 4 && strncmp(q - 4, " id=", 4) == 0) {
                    d->ids = realloc(d->ids, sizeof *d->ids *
                                                 (size_t)(d->n_ids + 1));
                    d->ids[d->n_ids++] = strndup(q + 1, (size_t)(e - q - 1));
                }
                q = e + 1;
            } else {
                q++;
            }
        }
        assert_true(*q != '\0');
        bool self_closing = q[0] == '/';
        if (closing) {
            if (depth == 0 || strcmp(stack[depth - 1], name) != 0)
                fail_msg("</%s> does not close <%s>", name,
                         depth ? stack[depth - 1] : "(nothing)");
            depth--;
        } else if (!self_closing) {
            if (depth == 0) {
                assert_false(seen_root);
                seen_root = true;
                snprintf(d->root, sizeof d->root, "%s", name);
            }
            assert_true(depth < 256);
            snprintf(stack[depth++], sizeof stack[0], "%s", name);
        }
        p = strchr(q, '>') + 1;
    }
    if (depth != 0)
        fail_msg("<%s> is never closed", stack[depth - 1]);
    assert_true(seen_root);
}

/* ---- escaping ------------------------------------------------------------ */

static void dot_text_escapes_quotes_backslashes_and_controls(void **state)
{
    (void)state;
    hs_buf b = {0};
    hs__dot_text(&b, "a\"b\\c\nd\x01\xff<>{}|\xc3\xa9", 0);
    /* (split so that "??<" is not read as a trigraph) */
    assert_string_equal(b.data, "a\\\"b\\\\c?d?" "?<>{}|\xc3\xa9");
    b.len = 0;
    hs__id_encode(&b, "add.3 \"x\"/y");
    assert_string_equal(b.data, "add.3%20%22x%22%2Fy");
    b.len = 0;
    hs__dot_text(&b, "abcdef", 3);
    assert_string_equal(b.data, "abc...");
    hs__buf_free(&b);
}

/* A module whose every user-visible string tries to break out of DOT. */
static hs_module *hostile_module(void)
{
    hs_module *m = hs_module_new("evil\" module");
    hs_computation *c = hs_module_add_computation(m, "main\"}; x -> y;", true);
    hs_shape s = hs_shape_make(HS_F32, 1, (int64_t[]){4});
    hs_instruction *p0 =
        hs_computation_add_parameter(c, 0, &s, "x\" ]; injected [label=\"pwn");
    hs_instruction *p1 = hs_computation_add_parameter(c, 1, &s, "back\\slash\\");
    p0->op_name = "layers.x/\"quoted\" <b>{record|port}</b> \\N \\G \\";
    p1->frontend_attributes = "_xla_key=\"}\\\" -> x\"";
    p1->op_type = "\xff\xfe not utf-8 \x01";
    hs_instruction *ops[] = {p0, p1};
    hs_instruction *a =
        hs_computation_add(c, HS_OP_ADD, &s, ops, 2, "add<>{}|\n\\\"end");
    a->op_name = "\\\"}; subgraph cluster_pwn { z } \"";
    c->root = a;
    return m;
}

static void dot_labels_cannot_break_out(void **state)
{
    (void)state;
    hs_module *m = hostile_module();
    char *dot = dot_of(m, NULL);
    /* Graphviz parses it and sees exactly 3 nodes and 2 edges. */
    char *svg = layout(dot, HS_RENDER_ENGINE_GRAPH);
    assert_int_equal(count_of(svg, "class=\"node\""), 3);
    assert_int_equal(count_of(svg, "class=\"edge\""), 2);
    assert_int_equal(count_of(svg, "class=\"cluster\""), 0);
    xml_doc d;
    xml_parse(svg, &d);
    assert_true(xml_has_id(&d, "x%22%20%5D%3B%20injected%20%5Blabel%3D%22pwn"));
    assert_true(xml_has_id(&d, "back%5Cslash%5C"));
    xml_free(&d);
    /* The JSON form keeps valid names as they are and stays valid. */
    json_t *j = json_of(m, NULL);
    json_t *n = find_node(j, "x%22%20%5D%3B%20injected%20%5Blabel%3D%22pwn");
    assert_non_null(n);
    assert_string_equal(json_string_value(json_object_get(n, "name")),
                        "x\" ]; injected [label=\"pwn");
    json_decref(j);
    free(svg);
    free(dot);
    hs_module_free(m);
}

/* ---- graphs of HLO modules ------------------------------------------------- */

static void dot_has_a_node_per_instruction_and_loop_clusters(void **state)
{
    (void)state;
    hs_module *m = parse(while_hlo);
    char *dot = dot_of(m, NULL);
    const hs_instruction *i;
    FOR_EACH_INSTRUCTION(m, i) {
        char needle[160];
        snprintf(needle, sizeof needle, "\"%s\" [id=\"%s\"", i->name, i->name);
        assert_contains(dot, needle);
    }
    assert_contains(dot, "subgraph \"cluster_condition\"");
    assert_contains(dot, "subgraph \"cluster_body\"");
    assert_contains(dot, "ltail=\"cluster_body\"");
    assert_contains(dot, "compound=true");
    /* ROOT marked, parameters numbered, operand numbers on 2-operand
     * users only, while drawn as an ellipse. */
    assert_contains(dot, "label=\"ROOT\\nwhile\\nw");
    assert_contains(dot, "penwidth=3");
    assert_contains(dot, "label=\"Parameter 0\\n");
    assert_contains(dot, "headlabel=\"1\"");
    assert_contains(dot, "shape=ellipse");
    assert_int_equal(count_of(dot, "headlabel="), 4);
    free(dot);
    hs_module_free(m);
}

static void json_graph_has_expected_counts(void **state)
{
    (void)state;
    hs_module *m = parse(while_hlo);
    json_t *j = json_of(m, NULL);
    int instructions = 0, operands = 0;
    const hs_instruction *i;
    FOR_EACH_INSTRUCTION(m, i) {
        instructions++;
        operands += i->n_operands;
    }
    assert_int_equal(json_array_size(json_object_get(j, "nodes")),
                     instructions);
    /* every operand edge, plus one call edge per cluster */
    assert_int_equal(json_array_size(json_object_get(j, "edges")),
                     operands + 2);
    json_t *clusters = json_object_get(j, "clusters");
    assert_int_equal(json_array_size(clusters), 2);
    size_t k;
    json_t *c;
    json_array_foreach(clusters, k, c) {
        assert_true(json_is_null(json_object_get(c, "parent")));
        assert_string_equal(json_string_value(json_object_get(c, "caller")),
                            "w");
    }
    json_t *w = find_node(j, "w");
    assert_non_null(w);
    assert_true(json_is_true(json_object_get(w, "is_root")));
    assert_string_equal(json_string_value(json_object_get(w, "category")),
                        "control");
    assert_int_equal(json_integer_value(json_object_get(w, "bytes")), 12);
    json_t *stats = json_object_get(j, "stats");
    assert_int_equal(json_integer_value(json_object_get(stats, "nodes")),
                     instructions);
    json_decref(j);
    hs_module_free(m);
}

static void computation_view_draws_one_computation(void **state)
{
    (void)state;
    hs_module *m = parse(while_hlo);
    hs_render_options o = {.computation = "body"};
    json_t *j = json_of(m, &o);
    assert_int_equal(json_array_size(json_object_get(j, "nodes")), 5);
    assert_int_equal(json_array_size(json_object_get(j, "clusters")), 0);
    json_decref(j);
    o.computation = "no_such_computation";
    char *out = NULL;
    hs_error err;
    assert_int_equal(hs_render_graph_dot(m, &o, &out, NULL, &err),
                     HS_ERR_INVALID);
    assert_null(out);
    assert_contains(err.message, "no_such_computation");
    hs_module_free(m);
}

static void layers_collapse_to_one_node_each(void **state)
{
    (void)state;
    hs_model *model = load_model(lin8_json, NULL);
    json_t *j = json_of(model->module, NULL);
    /* x and one node per layer, a chain of 8 edges */
    assert_int_equal(json_array_size(json_object_get(j, "nodes")), 9);
    assert_int_equal(count_category(j, "layer"), 8);
    assert_int_equal(json_array_size(json_object_get(j, "edges")), 8);
    json_t *l3 = find_node(j, "layer:layers.3");
    assert_non_null(l3);
    assert_int_equal(json_integer_value(json_object_get(l3, "collapsed_count")),
                     5);
    assert_string_equal(json_string_value(json_object_get(l3, "name")),
                        "layers.3");
    assert_true(json_is_true(
        json_object_get(find_node(j, "layer:layers.7"), "is_root")));
    json_decref(j);

    char *dot = dot_of(model->module, NULL);
    assert_contains(dot, "label=\"layers.3 (5 ops)\"");
    free(dot);
    hs_model_free(model);
}

/* A closed group feeding several operands of one user is one edge that
 * counts them (Mixtral's root tuple took 979 edges from 297 nodes before);
 * two instructions keep one numbered edge per operand slot. */
static void closed_group_feeding_many_operands_is_one_edge(void **state)
{
    (void)state;
    hs_module *m = parse(
        "HloModule bundle\n"
        "ENTRY main {\n"
        "  x = f32[4] parameter(0)\n"
        "  a = f32[4] negate(x), metadata={op_name=\"layers.0/a\"}\n"
        "  b = f32[4] exponential(a), metadata={op_name=\"layers.0/b\"}\n"
        "  c = f32[4] sine(b), metadata={op_name=\"layers.0/c\"}\n"
        "  d = f32[4] add(x, x)\n"
        "  e = f32[4] cosine(d), metadata={op_name=\"layers.1/e\"}\n"
        "  ROOT t = (f32[4], f32[4], f32[4], f32[4]) tuple(a, b, c, e)\n"
        "}\n");
    json_t *j = json_of(m, NULL);
    assert_non_null(find_node(j, "layer:layers.0"));
    json_t *edges = json_object_get(j, "edges");
    int group_to_t = 0, x_to_d = 0;
    for (size_t k = 0; k < json_array_size(edges); k++) {
        json_t *e = json_array_get(edges, k);
        const char *from = json_string_value(json_object_get(e, "from"));
        const char *to = json_string_value(json_object_get(e, "to"));
        json_int_t slot = json_integer_value(json_object_get(e, "operand_index"));
        json_int_t n = json_integer_value(json_object_get(e, "operands"));
        if (!strcmp(from, "layer:layers.0") && !strcmp(to, "t")) {
            group_to_t++;
            assert_int_equal(slot, -1);
            assert_int_equal(n, 3);
        }
        if (!strcmp(from, "x") && !strcmp(to, "d")) {
            x_to_d++;
            assert_int_equal(slot, x_to_d - 1);
            assert_int_equal(n, 1);
        }
    }
    assert_int_equal(group_to_t, 1);
    assert_int_equal(x_to_d, 2);
    json_decref(j);
    char *dot = dot_of(m, NULL);
    assert_contains(dot, "\"layer:layers.0\" -> \"t\" [id=\"e:layer:layers.0:t\", penwidth=1.5]");
    free(dot);
    hs_module_free(m);
}

static void expand_opens_one_layer(void **state)
{
    (void)state;
    hs_model *model = load_model(lin8_json, NULL);
    hs_render_options o = {.expand = "layers.3"};
    json_t *j = json_of(model->module, &o);
    /* x, 7 collapsed layers and the 5 instructions of layers.3 */
    assert_int_equal(json_array_size(json_object_get(j, "nodes")), 13);
    assert_int_equal(count_category(j, "layer"), 7);
    assert_null(find_node(j, "layer:layers.3"));
    json_t *w = find_node(j, "layers.3.weight");
    assert_non_null(w);
    assert_string_equal(json_string_value(json_object_get(w, "layer")),
                        "layers.3");
    /* x->L0->L1->L2, L2->dot, weight->dot, bias->broadcast,
     * dot->add, broadcast->add, add->L4, L4->L5->L6->L7 */
    assert_int_equal(json_array_size(json_object_get(j, "edges")), 12);
    json_decref(j);

    o.expand = "all";
    j = json_of(model->module, &o);
    assert_int_equal(json_array_size(json_object_get(j, "nodes")), 41);
    assert_int_equal(count_category(j, "layer"), 0);
    json_decref(j);

    /* Unknown layers are ignored (the same link works for every stage),
     * malformed keys are errors. */
    o.expand = "layers.99, layers.3";
    j = json_of(model->module, &o);
    assert_int_equal(json_array_size(json_object_get(j, "nodes")), 13);
    json_decref(j);
    o.expand = "layers.3,\"}";
    char *out = NULL;
    hs_error err;
    assert_int_equal(hs_render_graph_json(model->module, &o, &out, NULL, &err),
                     HS_ERR_INVALID);
    assert_contains(err.message, "expand");
    hs_model_free(model);
}

static void scan_body_stays_a_cluster(void **state)
{
    (void)state;
    hs_model *model = load_model(lin8_json, "scan");
    json_t *j = json_of(model->module, NULL);
    assert_int_equal(count_category(j, "layer"), 0);
    json_t *clusters = json_object_get(j, "clusters");
    assert_int_equal(json_array_size(clusters), 2);
    /* the body's dot is drawn, inside the body's cluster */
    size_t k;
    json_t *n;
    int dots_in_clusters = 0;
    json_array_foreach(json_object_get(j, "nodes"), k, n)
        dots_in_clusters +=
            strcmp(json_string_value(json_object_get(n, "opcode")), "dot") == 0 &&
            json_is_string(json_object_get(n, "cluster"));
    assert_int_equal(dots_in_clusters, 1);
    json_decref(j);
    hs_model_free(model);
}

static void loop_body_of_several_layers_collapses(void **state)
{
    (void)state;
    hs_module *m = parse(
        "HloModule two\n"
        "body {\n"
        "  p = f32[4] parameter(0)\n"
        "  a = f32[4] negate(p), metadata={op_name=\"layers.0/x\"}\n"
        "  b = f32[4] negate(a), metadata={op_name=\"layers.0/y\"}\n"
        "  ROOT c = f32[4] negate(b), metadata={op_name=\"layers.1/x\"}\n"
        "}\n"
        "cond {\n"
        "  p = f32[4] parameter(0)\n"
        "  ROOT t = pred[] constant(false)\n"
        "}\n"
        "ENTRY main {\n"
        "  x = f32[4] parameter(0)\n"
        "  ROOT w = f32[4] while(x), condition=cond, body=body\n"
        "}\n");
    json_t *j = json_of(m, NULL);
    /* body: p, layers.0 (a, b), layers.1 (c, the root) */
    assert_int_equal(count_category(j, "layer"), 2);
    json_t *l1 = find_node(j, "layer:layers.1@body");
    assert_non_null(l1);
    assert_true(json_is_true(json_object_get(l1, "is_root")));
    json_decref(j);
    hs_module_free(m);
}

static void node_budget_gives_limit(void **state)
{
    (void)state;
    hs_model *model = load_model(lin8_json, NULL);
    hs_render_options o = {.expand = "all", .max_nodes = 10};
    char *out = NULL;
    hs_error err;
    assert_int_equal(hs_render_graph_dot(model->module, &o, &out, NULL, &err),
                     HS_ERR_LIMIT);
    assert_null(out);
    assert_contains(err.message, "more than 10 nodes");
    assert_contains(err.message, "collapse");
    /* collapsed, the same model fits */
    o.expand = NULL;
    char *dot = dot_of(model->module, &o);
    free(dot);
    hs_model_free(model);
}

/* ---- layout ------------------------------------------------------------------ */

static void layout_gives_well_formed_svg_with_instruction_ids(void **state)
{
    (void)state;
    hs_module *m = parse(while_hlo);
    char *dot = dot_of(m, NULL);
    char *svg = layout(dot, HS_RENDER_ENGINE_GRAPH);
    assert_true(strncmp(svg, "<?xml", 5) == 0 || strncmp(svg, "<svg", 4) == 0);
    xml_doc d;
    xml_parse(svg, &d);
    assert_string_equal(d.root, "svg");
    const hs_instruction *i;
    FOR_EACH_INSTRUCTION(m, i) {
        if (!xml_has_id(&d, i->name))
            fail_msg("no element with id %s in the SVG", i->name);
        char title[160];
        snprintf(title, sizeof title, "<title>%s</title>", i->name);
        assert_contains(svg, title);
    }
    assert_true(xml_has_id(&d, "cluster_body"));
    assert_true(xml_has_id(&d, "cluster_condition"));
    xml_free(&d);
    free(svg);
    free(dot);
    hs_module_free(m);
}

static void layout_rejects_bad_dot_engine_and_format(void **state)
{
    (void)state;
    char *out = NULL;
    hs_error err;
    assert_int_equal(hs_render_layout("digraph { a -> ", "dot", "svg", 5000,
                                      &out, NULL, &err),
                     HS_ERR_INVALID);
    assert_null(out);
    assert_contains(err.message, "syntax error");
    assert_int_equal(hs_render_layout("digraph {a}", "/bin/sh", "svg", 5000,
                                      &out, NULL, &err),
                     HS_ERR_INVALID);
    assert_int_equal(hs_render_layout("digraph {a}", "dot", "png", 5000, &out,
                                      NULL, &err),
                     HS_ERR_INVALID);
}

typedef struct worker_arg {
    const char *dot;
    int ok;
    char error[600];
} worker_arg;

static void *layout_thread(void *p)
{
    worker_arg *a = p;
    for (int k = 0; k < 4; k++) {
        char *out = NULL;
        hs_error err;
        hs_status st =
            hs_render_layout(a->dot, "dot", "svg", 20000, &out, NULL, &err);
        if (st == HS_OK && strstr(out, "<title>w</title>"))
            a->ok++;
        else
            snprintf(a->error, sizeof a->error, "%s: %s", hs_status_name(st),
                     st == HS_OK ? "no <title>w</title>" : err.message);
        free(out);
    }
    return NULL;
}

static void layout_is_safe_from_many_threads(void **state)
{
    (void)state;
    hs_module *m = parse(while_hlo);
    char *dot = dot_of(m, NULL);
    enum { N = 8 };
    pthread_t t[N];
    worker_arg args[N];
    for (int k = 0; k < N; k++) {
        args[k] = (worker_arg){dot, 0, ""};
        assert_int_equal(pthread_create(&t[k], NULL, layout_thread, &args[k]),
                         0);
    }
    for (int k = 0; k < N; k++)
        pthread_join(t[k], NULL);
    for (int k = 0; k < N; k++)
        if (args[k].ok != 4)
            fail_msg("thread %d: %d of 4 layouts, last error %s", k,
                     args[k].ok, args[k].error);
    free(dot);
    hs_module_free(m);
}

/* ---- memory timelines and Gantt charts ----------------------------------- */

static void memory_timeline_svg_shows_the_peak(void **state)
{
    (void)state;
    const int64_t MiB = 1 << 20;
    hs_timeline_buffer b[] = {
        {"a", "dot.1", "layers.0/linear", 1 * MiB, HS_MEMSPACE_DEVICE, 0, 4},
        {"b", "add.2", "layers.1/linear", 2 * MiB, HS_MEMSPACE_DEVICE, 2, 6},
        {"c\"<x>", "copy.3", NULL, 1 * MiB, HS_MEMSPACE_HOST, 1, 3},
    };
    hs_timeline_options o = {.title = "mem \"test\"",
                             .device_capacity_bytes = 4 * MiB};
    char *dot = NULL;
    hs_error err;
    assert_int_equal(hs_render_timeline_dot(b, 3, &o, &dot, NULL, &err),
                     HS_OK);
    assert_contains(dot, "peak 3.00 MiB at 2");
    assert_contains(dot, "host memory (S(5))");
    assert_contains(dot, "capacity 4.00 MiB");
    char *svg = layout(dot, HS_RENDER_ENGINE_PINNED);
    assert_contains(svg, "peak 3.00 MiB at 2");
    assert_contains(svg, "peak 1.00 MiB at 1");
    xml_doc d;
    xml_parse(svg, &d);
    assert_true(xml_has_id(&d, "buf:a:0"));
    assert_true(xml_has_id(&d, "buf:c%22%3Cx%3E:2"));
    xml_free(&d);
    free(svg);
    free(dot);

    b[1].end = 1; /* ends before it starts */
    assert_int_equal(hs_render_timeline_dot(b, 3, &o, &dot, NULL, &err),
                     HS_ERR_INVALID);
    assert_contains(err.message, "buffer 1 (b)");
}

static void gantt_chart_has_both_lanes(void **state)
{
    (void)state;
    hs_gantt_segment s[] = {
        {HS_GANTT_HOST, "trace step 0", "trace", 0.000, 0.030},
        {HS_GANTT_HOST, "compile", "compile", 0.030, 0.040},
        {HS_GANTT_DEVICE, "step 0", "execute", 0.040, 0.060},
        {HS_GANTT_HOST, "trace step 1", "trace", 0.040, 0.070},
        {HS_GANTT_DEVICE, "step 1", "execute", 0.070, 0.080},
    };
    char *dot = NULL;
    hs_error err;
    assert_int_equal(hs_render_gantt_dot(s, 5, NULL, &dot, NULL, &err), HS_OK);
    char *svg = layout(dot, HS_RENDER_ENGINE_PINNED);
    assert_contains(svg, ">host<");
    assert_contains(svg, ">device<");
    assert_contains(svg, "device busy 37.5% of 80 ms");
    xml_doc d;
    xml_parse(svg, &d);
    assert_true(xml_has_id(&d, "seg:device:2"));
    xml_free(&d);
    free(svg);
    free(dot);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(dot_text_escapes_quotes_backslashes_and_controls),
        cmocka_unit_test(dot_has_a_node_per_instruction_and_loop_clusters),
        cmocka_unit_test(json_graph_has_expected_counts),
        cmocka_unit_test(computation_view_draws_one_computation),
        cmocka_unit_test(layers_collapse_to_one_node_each),
        cmocka_unit_test(closed_group_feeding_many_operands_is_one_edge),
        cmocka_unit_test(expand_opens_one_layer),
        cmocka_unit_test(scan_body_stays_a_cluster),
        cmocka_unit_test(loop_body_of_several_layers_collapses),
        cmocka_unit_test(node_budget_gives_limit),
        cmocka_unit_test(layout_gives_well_formed_svg_with_instruction_ids),
        cmocka_unit_test(dot_labels_cannot_break_out),
        cmocka_unit_test(layout_rejects_bad_dot_engine_and_format),
        cmocka_unit_test(layout_is_safe_from_many_threads),
        cmocka_unit_test(memory_timeline_svg_shows_the_peak),
        cmocka_unit_test(gantt_chart_has_both_lanes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
