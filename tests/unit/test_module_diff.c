/* test_module_diff.c - hs_module_diff_compute matches the instructions of
 * layers by their place in the layer: a model unrolled and the same model
 * as a scan differ only by the loop (its counter, tuple, stacked weights
 * and their slices), their layers' computations compare equal; an
 * unrolled model against itself with one layer changed shows that layer
 * only; and modules without op_names match their layers found from
 * structure. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_file.h"
#include "hloscope/hs_hlo_text.h"
#include "hloscope/hs_model.h"
#include "hloscope/hs_program.h"
#include "hlo_test_helpers.h"

/* Whether i is part of the scan's machinery: traced under the loop's own
 * scope, or in a reducer computation (add, max: named per module). */
static bool loop_structure(const hs_module *m, const hs_instruction *i)
{
    if (i->op_name && strstr(i->op_name, "/scan"))
        return true;
    return i->parent != m->entry && !(i->op_name && strstr(i->op_name, "layers"));
}

static void scan_and_unrolled_differ_only_by_the_loop(void **state)
{
    (void)state;
    static const char *const models[] = {
        "{\"name\": \"mlp6\", \"input\": {\"shape\": [2, 16]}, \"layers\": "
        "[{\"repeat\": 6, \"block\": {\"type\": \"mlp\", \"hidden\": 32}}]}",
        "{\"name\": \"dec4\", \"input\": {\"shape\": [1, 8, 32]}, \"layers\": "
        "[{\"repeat\": 4, \"block\": {\"type\": \"decoder\", \"heads\": 2, "
        "\"hidden\": 64}}]}",
    };
    for (size_t k = 0; k < sizeof models / sizeof *models; k++) {
        hs_model *a = load_model(models[k], "unrolled"), *b = load_model(models[k], "scan");
        hs_module_diff d;
        hs_error err;
        assert_int_equal(hs_module_diff_compute(a->module, b->module, &d, &err), HS_OK);
        /* nothing of the layers' computation differs */
        assert_int_equal(d.n_changed, 0);
        for (int64_t j = 0; j < d.n_added; j++)
            if (!loop_structure(b->module, d.added[j]))
                fail_msg("%s: added %s (%s) is not the loop's", models[k],
                         d.added[j]->name, d.added[j]->op_name);
        /* removed: the per-layer weights (stacked in the scan), and the
         * reducers, named per module */
        for (int64_t j = 0; j < d.n_removed; j++) {
            const hs_instruction *r = d.removed[j];
            if (r->opcode != HS_OP_PARAMETER && r->parent == a->module->entry)
                fail_msg("%s: removed %s is not a weight", models[k], r->name);
            if (r->opcode == HS_OP_PARAMETER && r->parent == a->module->entry &&
                !strstr(r->name, "weight"))
                fail_msg("%s: removed parameter %s is not a weight", models[k], r->name);
        }
        /* every dot of every unrolled layer matched the scan body's */
        int64_t dots = 0;
        const hs_computation *entry = a->module->entry;
        for (int j = 0; j < entry->n_instrs; j++)
            dots += entry->instrs[j]->opcode == HS_OP_DOT;
        assert_true(dots >= 3 * 4);
        assert_true(d.n_matched_by_layer >= dots);
        assert_true(d.n_unchanged >= d.n_matched_by_layer);
        hs_module_diff_free(&d);
        hs_model_free(a);
        hs_model_free(b);
    }
}

static void one_changed_layer_is_all_that_differs(void **state)
{
    (void)state;
    /* Layers 0-2 and 4-5 identical, layer 3 with a wider hidden size. */
    hs_model *a = load_model("{\"name\": \"m\", \"input\": {\"shape\": [2, 16]}, \"layers\": "
                       "[{\"repeat\": 6, \"block\": {\"type\": \"mlp\", \"hidden\": 32}}]}",
                       NULL);
    hs_model *b = load_model("{\"name\": \"m\", \"input\": {\"shape\": [2, 16]}, \"layers\": "
                       "[{\"repeat\": 3, \"block\": {\"type\": \"mlp\", \"hidden\": 32}},"
                       " {\"type\": \"mlp\", \"hidden\": 48},"
                       " {\"repeat\": 2, \"block\": {\"type\": \"mlp\", \"hidden\": 32}}]}",
                       NULL);
    hs_module_diff d;
    hs_error err;
    assert_int_equal(hs_module_diff_compute(a->module, b->module, &d, &err), HS_OK);
    assert_true(d.n_changed > 0);
    for (int64_t j = 0; j < d.n_changed; j++) {
        if (!d.changed_b[j]->op_name || strncmp(d.changed_b[j]->op_name, "layers.3", 8) != 0)
            fail_msg("changed %s (%s) is outside layer 3", d.changed_b[j]->name,
                     d.changed_b[j]->op_name);
    }
    assert_int_equal(d.n_added, 0);
    assert_int_equal(d.n_removed, 0);
    hs_module_diff_free(&d);
    hs_model_free(a);
    hs_model_free(b);
}

static void layers_found_from_structure_match(void **state)
{
    (void)state;
    /* The real Mixtral dump has no op_names; against itself every
     * instruction matches, the repeated layers' by their place. */
    char path[1024];
    snprintf(path, sizeof path, "%s/../shared/hlo-real/hlo_mixtral_8x7b_bf16_1x8.hlo",
             HS_SOURCE_DIR);
    hs_error err;
    size_t n = 0;
    char *text = hs_read_file(path, &n, &err);
    if (!text)
        skip();
    hs_module *a = hs_hlo_parse(text, n, &err);
    hs_module *b = hs_hlo_parse(text, n, &err);
    free(text);
    assert_non_null(a);
    assert_non_null(b);
    hs_module_diff d;
    assert_int_equal(hs_module_diff_compute(a, b, &d, &err), HS_OK);
    assert_int_equal(d.n_added, 0);
    assert_int_equal(d.n_removed, 0);
    assert_int_equal(d.n_changed, 0);
    assert_int_equal(d.n_unchanged, hs_module_instruction_count(a));
    /* the 30 identical backward layers alone hold 10,000 instructions */
    assert_true(d.n_matched_by_layer > 10000);
    hs_module_diff_free(&d);
    hs_module_free(a);
    hs_module_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(scan_and_unrolled_differ_only_by_the_loop),
        cmocka_unit_test(one_changed_layer_is_all_that_differs),
        cmocka_unit_test(layers_found_from_structure_match),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
