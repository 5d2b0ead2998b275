/*
 * test_groups.c - the group tree (hs_groups.h) and the views built on it:
 * op_name scopes of our models, JAX and torch_xla; structure alone where
 * names are missing (hand-made stacks, and the real Mixtral 8x7B train
 * step with no metadata at all); nesting of called computations; the
 * default view under its budget, expand by path, neighbourhoods and
 * search.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_file.h"
#include "hloscope/hs_groups.h"
#include "hloscope/hs_hlo_text.h"
#include "hloscope/hs_model.h"
#include "hloscope/hs_render.h"
#include "hlo_test_helpers.h"

#define MIXTRAL HS_SOURCE_DIR "/../shared/hlo-real/hlo_mixtral_8x7b_bf16_1x8.hlo"

static hs_group_tree *tree_of(const hs_module *m)
{
    hs_group_tree *t = NULL;
    hs_error err;
    if (hs_groups_build(m, NULL, &t, &err) != HS_OK)
        fail_msg("groups: %s", err.message);
    return t;
}

static const hs_group *group(const hs_group_tree *t, const char *path)
{
    int g = hs_groups_find(t, path, strlen(path));
    if (g < 0)
        fail_msg("no group %s", path);
    return &t->groups[g];
}

static const hs_group *group_of_name(const hs_group_tree *t,
                                     const hs_module *m, const char *name)
{
    for (int c = 0; c < m->n_comps; c++)
        for (int k = 0; k < m->comps[c]->n_instrs; k++)
            if (strcmp(m->comps[c]->instrs[k]->name, name) == 0) {
                int g = t->group_of[m->comps[c]->instrs[k]->id];
                return g >= 0 ? &t->groups[g] : NULL;
            }
    fail_msg("no instruction %s", name);
    return NULL;
}

static json_t *graph_json(const hs_module *m, const hs_render_options *o)
{
    char *text = NULL;
    size_t len = 0;
    hs_error err;
    if (hs_render_graph_json(m, o, &text, &len, &err) != HS_OK)
        fail_msg("graph.json: %s", err.message);
    json_t *j = json_loadb(text, len, 0, NULL);
    assert_non_null(j);
    free(text);
    return j;
}

static json_t *find_by(json_t *array, const char *key, const char *value)
{
    size_t k;
    json_t *x;
    json_array_foreach(array, k, x) {
        const char *v = json_string_value(json_object_get(x, key));
        if (v && strcmp(v, value) == 0)
            return x;
    }
    return NULL;
}

static hs_module *read_hlo(const char *path)
{
    size_t n = 0;
    hs_error err;
    char *text = hs_read_file(path, &n, &err);
    if (!text)
        fail_msg("%s", err.message);
    hs_module *m = hs_hlo_parse(text, n, &err);
    free(text);
    if (!m)
        fail_msg("parse %s: %s", path, err.message);
    return m;
}

/* ---- op_name scopes ----------------------------------------------------- */

static void our_decoder_layers_are_identical_numbered_siblings(void **state)
{
    (void)state;
    hs_error err;
    hs_model_options mo = {.shapes_only = true};
    hs_model *model = hs_model_load_file(HS_SOURCE_DIR
                                         "/examples/decoder_50x256.json",
                                         &mo, &err);
    if (!model)
        fail_msg("model: %s", err.message);
    hs_group_tree *t = tree_of(model->module);
    const hs_group *layers = group(t, "layers.*");
    assert_int_equal(layers->kind, HS_GROUP_OP_NAME);
    assert_int_equal(layers->n_children, 50);
    /* Layer 0 reads the input parameter, the others the previous layer:
     * crossing edges are compared by shape, so all 50 are one structure. */
    assert_int_equal(layers->repeat, 50);
    const hs_group *l0 = group(t, "layers.0"), *l49 = group(t, "layers.49");
    assert_true(l0->is_repeat_item);
    assert_int_equal(l0->instructions, l49->instructions);
    assert_true(l0->instructions > 20);
    assert_true(l0->fingerprint == l49->fingerprint);
    assert_int_equal(layers->instructions, 50 * l0->instructions);
    /* Every instruction of a layer sits in its layer's subtree. */
    for (int k = 0; k < model->module->entry->n_instrs; k++) {
        const hs_instruction *i = model->module->entry->instrs[k];
        if (!i->op_name || strncmp(i->op_name, "layers.7/", 9) != 0)
            continue;
        int g = t->group_of[i->id];
        while (g >= 0 && strcmp(t->groups[g].path, "layers.7") != 0)
            g = t->groups[g].parent;
        assert_true(g >= 0);
    }
    hs_groups_free(t);
    hs_model_free(model);
}

/* Three layers of a JAX-style module: every op_name starts with
 * jit(train_step)/jit(main)/ and names the primitive last. */
static const char jax_hlo[] =
    "HloModule jax_like\n"
    "ENTRY main {\n"
    "  x = f32[4,8] parameter(0)\n"
    "  w0 = f32[8,8] parameter(1)\n"
    "  w1 = f32[8,8] parameter(2)\n"
    "  w2 = f32[8,8] parameter(3)\n"
    "  e = f32[4,8] negate(x), metadata={op_name=\"jit(train_step)/jit(main)/model/embed/neg\"}\n"
#define JAX_LAYER(n, in)                                                      \
    "  d" #n " = f32[4,8] dot(" in ", w" #n "), lhs_contracting_dims={1}, "     \
    "rhs_contracting_dims={0}, metadata={op_name=\"jit(train_step)/jit(main)/"  \
    "model/layers_" #n "/mlp/dot_general\"}\n"                                  \
    "  t" #n " = f32[4,8] tanh(d" #n "), metadata={op_name=\"jit(train_step)/" \
    "jit(main)/model/layers_" #n "/mlp/tanh\"}\n"                               \
    "  r" #n " = f32[4,8] add(t" #n ", " in "), metadata={op_name=\"jit("       \
    "train_step)/jit(main)/model/layers_" #n "/add\"}\n"
    JAX_LAYER(0, "e") JAX_LAYER(1, "r0") JAX_LAYER(2, "r1")
    "  ROOT out = f32[4,8] negate(r2), metadata={op_name=\"jit(train_step)/jit(main)/model/head/neg\"}\n"
    "}\n";

static void jax_scopes_nest_and_number(void **state)
{
    (void)state;
    hs_module *m = parse(jax_hlo);
    hs_group_tree *t = tree_of(m);
    /* jit(train_step) and jit(main) hold nothing but one scope each: folded
     * into "model", whose children are embed, the layers and head. */
    const hs_group *model = group(t, "jit(train_step)/jit(main)/model");
    assert_int_equal(model->parent, 0);
    assert_int_equal(hs_groups_find(t, "jit(train_step)", 15), -1);
    assert_int_equal(model->n_children, 3);
    const hs_group *layers = group(t, "jit(train_step)/jit(main)/model/layers_*");
    assert_int_equal(layers->n_children, 3);
    assert_int_equal(layers->repeat, 3);
    const hs_group *l1 = group(t, "jit(train_step)/jit(main)/model/layers_1");
    assert_string_equal(l1->label, "layers_1");
    /* dot and tanh in .../mlp, the residual add in the layer itself */
    assert_int_equal(l1->instructions, 3);
    assert_int_equal(l1->direct, 1);
    assert_string_equal(group_of_name(t, m, "t1")->path,
                        "jit(train_step)/jit(main)/model/layers_1/mlp");
    /* parameters carry no scope: they stay at the top */
    assert_int_equal(group_of_name(t, m, "w1")->kind, HS_GROUP_COMPUTATION);
    hs_groups_free(t);
    hs_module_free(m);
}

/* torch_xla names a module's children Linear[0], Linear[1], ... */
static const char torch_hlo[] =
    "HloModule torch_like\n"
    "ENTRY main {\n"
    "  x = f32[4,8] parameter(0)\n"
    "  a0 = f32[4,8] tanh(x), metadata={op_type=\"aten__tanh\" op_name=\"Net/Sequential[body]/Block[0]/aten__tanh\"}\n"
    "  b0 = f32[4,8] add(a0, x), metadata={op_type=\"aten__add\" op_name=\"Net/Sequential[body]/Block[0]/aten__add\"}\n"
    "  a1 = f32[4,8] tanh(b0), metadata={op_type=\"aten__tanh\" op_name=\"Net/Sequential[body]/Block[1]/aten__tanh\"}\n"
    "  b1 = f32[4,8] add(a1, b0), metadata={op_type=\"aten__add\" op_name=\"Net/Sequential[body]/Block[1]/aten__add\"}\n"
    "  ROOT y = f32[4,8] negate(b1), metadata={op_type=\"aten__neg\" op_name=\"Net/aten__neg\"}\n"
    "}\n";

static void torch_xla_scopes_group_bracketed_siblings(void **state)
{
    (void)state;
    hs_module *m = parse(torch_hlo);
    hs_group_tree *t = tree_of(m);
    const hs_group *blocks = group(t, "Net/Sequential[body]/Block[*]");
    assert_int_equal(blocks->n_children, 2);
    assert_int_equal(blocks->repeat, 2);
    assert_string_equal(group_of_name(t, m, "b1")->path,
                        "Net/Sequential[body]/Block[1]");
    assert_string_equal(group_of_name(t, m, "y")->path, "Net");
    hs_groups_free(t);
    hs_module_free(m);
}

/* ---- structure ------------------------------------------------------------ */

/* n identical layers (dot, bias, tanh, residual add) named by their aten
 * op only, as torch_xla without scopes writes them: flat names. */
static char *flat_stack(int layers)
{
    size_t cap = 4096 + (size_t)layers * 1024;
    char *s = malloc(cap);
    assert_non_null(s);
    int n = snprintf(s, cap,
                     "HloModule flat\nENTRY main {\n"
                     "  x = f32[4,16] parameter(0)\n"
                     "  h0 = f32[4,16] negate(x), metadata={op_name=\"aten__neg\"}\n");
    for (int k = 0; k < layers; k++)
        n += snprintf(s + n, cap - (size_t)n,
                      "  w%d = f32[16,16] parameter(%d)\n"
                      "  b%d = f32[16] parameter(%d)\n"
                      "  d%d = f32[4,16] dot(h%d, w%d), lhs_contracting_dims={1}, rhs_contracting_dims={0}, metadata={op_name=\"aten__mm\"}\n"
                      "  bb%d = f32[4,16] broadcast(b%d), dimensions={1}, metadata={op_name=\"aten__add\"}\n"
                      "  s%d = f32[4,16] add(d%d, bb%d), metadata={op_name=\"aten__add\"}\n"
                      "  t%d = f32[4,16] tanh(s%d), metadata={op_name=\"aten__tanh\"}\n"
                      "  h%d = f32[4,16] add(t%d, h%d), metadata={op_name=\"aten__add\"}\n",
                      k, 2 * k + 1, k, 2 * k + 2, k, k, k, k, k, k, k, k, k,
                      k, k + 1, k, k);
    snprintf(s + n, cap - (size_t)n,
             "  ROOT y = f32[4,16] negate(h%d), metadata={op_name=\"aten__neg\"}\n}\n",
             layers);
    return s;
}

static void flat_names_give_layers_from_cut_points(void **state)
{
    (void)state;
    char *text = flat_stack(12);
    hs_module *m = parse(text);
    free(text);
    hs_group_tree *t = tree_of(m);
    const hs_group *run = group(t, "run.0");
    assert_int_equal(run->kind, HS_GROUP_STRUCTURE);
    /* The residual adds are the cut points: 12 layers (some phase of the
     * dot/bias/tanh/add cycle), each 5 instructions and its 2 weights. */
    assert_true(run->n_children == 12 || run->n_children == 11);
    assert_int_equal(run->repeat, run->n_children);
    const hs_group *l3 = group(t, "run.0/layer.3");
    assert_true(l3->is_repeat_item);
    assert_int_equal(l3->instructions, 7);
    for (int k = 0; k < run->n_children; k++)
        assert_true(t->groups[run->children[k]].fingerprint == l3->fingerprint);
    /* The weights of a layer went with it. */
    const hs_group *w5 = group_of_name(t, m, "w5");
    assert_int_equal(w5->kind, HS_GROUP_STRUCTURE);
    assert_string_equal(w5->path, group_of_name(t, m, "d5")->path);
    hs_groups_free(t);
    hs_module_free(m);
}

static void tree_is_deterministic(void **state)
{
    (void)state;
    char *text = flat_stack(9);
    hs_module *m1 = parse(text), *m2 = parse(text);
    free(text);
    hs_group_tree *a = tree_of(m1), *b = tree_of(m2);
    assert_int_equal(a->n_groups, b->n_groups);
    for (int k = 0; k < a->n_groups; k++) {
        assert_string_equal(a->groups[k].path, b->groups[k].path);
        assert_true(a->groups[k].fingerprint == b->groups[k].fingerprint);
        assert_int_equal(a->groups[k].instructions, b->groups[k].instructions);
    }
    hs_groups_free(a);
    hs_groups_free(b);
    hs_module_free(m1);
    hs_module_free(m2);
}

static void called_computations_nest_under_their_caller(void **state)
{
    (void)state;
    hs_module *m = parse(
        "HloModule nest\n"
        "body {\n"
        "  p = f32[4] parameter(0)\n"
        "  a = f32[4] negate(p), metadata={op_name=\"layers.0/x\"}\n"
        "  ROOT c = f32[4] negate(a), metadata={op_name=\"layers.1/x\"}\n"
        "}\n"
        "cond {\n"
        "  p = f32[4] parameter(0)\n"
        "  ROOT t = pred[] constant(false)\n"
        "}\n"
        "ENTRY main {\n"
        "  x = f32[4] parameter(0)\n"
        "  n = f32[4] negate(x), metadata={op_name=\"layers.0/pre\"}\n"
        "  m = f32[4] negate(n), metadata={op_name=\"layers.1/pre\"}\n"
        "  ROOT w = f32[4] while(m), condition=cond, body=body, metadata={op_name=\"layers.1/loop\"}\n"
        "}\n");
    hs_group_tree *t = tree_of(m);
    const hs_group *body = group(t, "@body");
    assert_int_equal(body->kind, HS_GROUP_COMPUTATION);
    /* under the group of the while instruction, layers.1 of the entry */
    assert_string_equal(t->groups[body->parent].path, "layers.1");
    assert_non_null(body->caller);
    assert_string_equal(body->caller->name, "w");
    /* the body's own layers: prefixed, and found by their local path */
    const hs_group *inner = group(t, "@body/layers.1");
    assert_string_equal(inner->local, "layers.1");
    assert_int_equal(t->groups[inner->parent].path[0], '@');
    /* layers.1 counts its loop: m, w, and the body's 3 and cond's 2 */
    assert_int_equal(group(t, "layers.1")->instructions, 2 + 3 + 2);
    hs_groups_free(t);
    hs_module_free(m);
}

/* ---- the real thing: Mixtral 8x7B, no op_name metadata ---------------------- */

static hs_module *mixtral;

static int load_mixtral(void **state)
{
    (void)state;
    mixtral = read_hlo(MIXTRAL);
    return 0;
}

static int free_mixtral(void **state)
{
    (void)state;
    hs_module_free(mixtral);
    return 0;
}

static void mixtral_layers_found_from_structure(void **state)
{
    (void)state;
    int64_t t0 = hs_now_ns();
    hs_group_tree *t = tree_of(mixtral);
    double ms = (double)(hs_now_ns() - t0) / 1e6;
    /* well under a second, even in a sanitizer build */
    assert_true(ms < 1000);
    int64_t entry = mixtral->entry->n_instrs;
    assert_int_equal(t->groups[0].kind, HS_GROUP_COMPUTATION);
    /* The runs found: the forward layers, the backward layers, and the
     * optimizer's per-layer updates, each one period per layer, cut where
     * the fewest values cross (the residual stream). The model has 32
     * layers. The backward pass shows all 32; the forward pass 31, its
     * first layer not found alike (XLA's CSE left what all layers share -
     * masks, rotary tables - in the first layer that computed it) and left
     * in the part before the run. The layers between the first and the
     * last are one structure; the ends differ by what they hand to the
     * embedding, the loss or the next pass. */
    const hs_group *fwd = group(t, "run.0");
    const hs_group *bwd = group(t, "run.1");
    print_message("mixtral: %d groups in %.1f ms; run.0 %d x %lld, run.1 "
                   "%d x %lld\n",
                   t->n_groups, ms, fwd->n_children,
                   (long long)t->groups[fwd->children[1]].instructions,
                   bwd->n_children,
                   (long long)t->groups[bwd->children[1]].instructions);
    assert_int_equal(fwd->n_children, 31);
    assert_int_equal(fwd->repeat, 31);
    assert_int_equal(bwd->n_children, 32);
    assert_int_equal(bwd->repeat, 32);
    const hs_group *runs[] = {fwd, bwd};
    const int64_t per[] = {162, 350};
    for (int r = 0; r < 2; r++) {
        const hs_group *run = runs[r];
        uint64_t fp = t->groups[run->children[1]].fingerprint;
        for (int k = 1; k + 1 < run->n_children; k++) {
            const hs_group *l = &t->groups[run->children[k]];
            assert_true(l->is_repeat_item);
            /* identical structure, layer for layer */
            assert_int_equal(l->instructions, per[r]);
            assert_true(l->fingerprint == fp);
        }
        /* the ends hold a layer too, give or take an instruction */
        for (int k = 0; k < run->n_children; k += run->n_children - 1) {
            int64_t n = t->groups[run->children[k]].instructions;
            assert_true(n >= per[r] - 2 && n <= per[r] + 2);
        }
    }
    /* What the runs hold is most of the step. */
    int64_t in_runs = 0;
    for (int k = 0; k < t->groups[0].n_children; k++) {
        const hs_group *g = &t->groups[t->groups[0].children[k]];
        if (g->repeat > 1)
            in_runs += g->instructions;
    }
    assert_true(in_runs * 2 > entry);
    hs_groups_free(t);
}

/* Instructions of computation c inside group path (its subtree). */
static int64_t instructions_in(const hs_group_tree *t, const hs_computation *c,
                               const char *path)
{
    int want = hs_groups_find(t, path, strlen(path)), n = 0;
    for (int k = 0; k < c->n_instrs; k++)
        for (int g = t->group_of[c->instrs[k]->id]; g >= 0;
             g = t->groups[g].parent)
            if (g == want) {
                n++;
                break;
            }
    return n;
}

static void mixtral_default_view_fits_the_budget(void **state)
{
    (void)state;
    hs_group_tree *t = tree_of(mixtral);
    /* the layer's own instructions (its custom-calls' comparators are
     * nested computations, not drawn while it is closed) */
    int64_t own = instructions_in(t, mixtral->entry, "run.0/layer.3");
    int64_t total = group(t, "run.0/layer.3")->instructions;
    hs_groups_free(t);
    assert_true(own > 150 && own <= 162);
    json_t *j = graph_json(mixtral, NULL);
    size_t nodes = json_array_size(json_object_get(j, "nodes"));
    assert_true(nodes > 10);
    assert_true(nodes <= HS_RENDER_DEFAULT_BUDGET);
    /* layer 3 of the forward run is one closed node */
    json_t *l3 = find_by(json_object_get(j, "nodes"), "id",
                         "layer:run.0%2Flayer.3");
    assert_non_null(l3);
    assert_int_equal(json_integer_value(json_object_get(l3, "collapsed_count")),
                     own);
    json_t *g = find_by(json_object_get(j, "groups"), "path", "run.0");
    assert_non_null(g);
    assert_int_equal(json_integer_value(json_object_get(g, "repeat")), 31);
    assert_string_equal(json_string_value(json_object_get(g, "kind")), "structure");
    json_decref(j);

    /* expand one layer by its path: its instructions are drawn, and the
     * comparators its top-k custom-calls call, as their clusters */
    hs_render_options o = {.expand = "run.0/layer.3"};
    j = graph_json(mixtral, &o);
    assert_null(find_by(json_object_get(j, "nodes"), "id",
                        "layer:run.0%2Flayer.3"));
    assert_int_equal(json_array_size(json_object_get(j, "nodes")),
                     nodes - 1 + (size_t)total);
    json_decref(j);
}

static void mixtral_neighbourhood_and_search(void **state)
{
    (void)state;
    /* an instruction deep inside a closed layer */
    hs_group_tree *t = tree_of(mixtral);
    const hs_group *l5 = group(t, "run.0/layer.5");
    const hs_instruction *inside = NULL;
    for (int k = 0; k < mixtral->entry->n_instrs && !inside; k++) {
        const hs_instruction *i = mixtral->entry->instrs[k];
        if (i->opcode == HS_OP_DOT && t->group_of[i->id] == l5 - t->groups)
            inside = i;
    }
    assert_non_null(inside);
    hs_render_options o = {.around = inside->name, .hops = 2};
    json_t *j = graph_json(mixtral, &o);
    json_t *nodes = json_object_get(j, "nodes");
    json_t *centre = find_by(nodes, "name", inside->name);
    assert_non_null(centre);
    assert_string_equal(json_string_value(json_object_get(centre, "group")),
                        "run.0/layer.5");
    /* two hops: the dot, its operands and users, and theirs */
    size_t n = json_array_size(nodes);
    assert_true(n >= 1 + (size_t)inside->n_operands);
    assert_true(n < 200);
    json_decref(j);

    char *text = NULL;
    hs_error err;
    assert_int_equal(hs_render_search_json(mixtral, NULL, inside->name, 0,
                                           &text, NULL, &err),
                     HS_OK);
    j = json_loads(text, 0, NULL);
    free(text);
    json_t *hit = find_by(json_object_get(j, "hits"), "name", inside->name);
    assert_non_null(hit);
    assert_string_equal(json_string_value(json_object_get(hit, "group")),
                        "run.0/layer.5");
    json_t *chain = json_object_get(hit, "groups");
    assert_int_equal(json_array_size(chain), 2);
    assert_string_equal(json_string_value(json_array_get(chain, 0)), "run.0");
    json_decref(j);

    /* every dot of the step, drawn or not */
    assert_int_equal(hs_render_search_json(mixtral, NULL, "dot", 5, &text,
                                           NULL, &err),
                     HS_OK);
    j = json_loads(text, 0, NULL);
    free(text);
    int64_t dots = 0;
    for (int k = 0; k < mixtral->entry->n_instrs; k++)
        dots += mixtral->entry->instrs[k]->opcode == HS_OP_DOT;
    assert_true(json_integer_value(json_object_get(j, "count")) >= dots);
    assert_int_equal(json_array_size(json_object_get(j, "hits")), 5);
    assert_true(json_is_true(json_object_get(j, "truncated")));
    json_decref(j);

    o = (hs_render_options){.around = "no_such_instruction"};
    assert_int_equal(hs_render_graph_json(mixtral, &o, &text, NULL, &err),
                     HS_ERR_INVALID);
    assert_contains(err.message, "around");
    hs_groups_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(our_decoder_layers_are_identical_numbered_siblings),
        cmocka_unit_test(jax_scopes_nest_and_number),
        cmocka_unit_test(torch_xla_scopes_group_bracketed_siblings),
        cmocka_unit_test(flat_names_give_layers_from_cut_points),
        cmocka_unit_test(tree_is_deterministic),
        cmocka_unit_test(called_computations_nest_under_their_caller),
    };
    const struct CMUnitTest real[] = {
        cmocka_unit_test(mixtral_layers_found_from_structure),
        cmocka_unit_test(mixtral_default_view_fits_the_budget),
        cmocka_unit_test(mixtral_neighbourhood_and_search),
    };
    int failed = cmocka_run_group_tests_name("groups", tests, NULL, NULL);
    failed += cmocka_run_group_tests_name("groups.mixtral", real, load_mixtral,
                                          free_mixtral);
    return failed;
}
