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
 * scope, or in the loop's condition (the body holds the layer). Reducers
 * (add, max: named per module) are not: they match by structure. */
static bool loop_structure(const hs_module *m, const hs_instruction *i)
{
    if (i->op_name && strstr(i->op_name, "/scan"))
        return true;
    for (int c = 0; c < m->n_comps; c++)
        for (int k = 0; k < m->comps[c]->n_instrs; k++) {
            const hs_instruction *w = m->comps[c]->instrs[k];
            if (w->opcode == HS_OP_WHILE && w->n_called == 2 &&
                (w->called[0] == i->parent ||
                 (w->called[1] == i->parent && !(i->op_name && strstr(i->op_name, "layers")))))
                return true;
        }
    return false;
}

/* Every instruction of m is on a row of the alignment, on side a or b. */
static void every_instruction_on_a_row(const hs_module *m, const hs_diff_alignment *al,
                                       bool side_a)
{
    bool *seen = calloc((size_t)m->next_id, 1);
    assert_non_null(seen);
    for (int64_t r = 0; r < al->n_rows; r++) {
        const hs_instruction *i = side_a ? al->rows[r].a : al->rows[r].b;
        if (i)
            seen[i->id] = true;
    }
    for (int c = 0; c < m->n_comps; c++)
        for (int k = 0; k < m->comps[c]->n_instrs; k++)
            if (!seen[m->comps[c]->instrs[k]->id])
                fail_msg("%s (%s) is on no row", m->comps[c]->instrs[k]->name,
                         m->comps[c]->name);
    free(seen);
}

/* Rows and blocks agree: a row's instructions belong to its block's
 * computations (a pair into another computation may sit in a's block),
 * its status is what the diff says, and blocks tile the rows. */
static void rows_agree(const hs_module_diff *d, const hs_diff_alignment *al)
{
    int64_t next = 0, pairs = 0, changed = 0;
    for (int k = 0; k < al->n_blocks; k++) {
        const hs_diff_block *b = &al->blocks[k];
        assert_int_equal(b->first_row, next);
        next += b->n_rows;
        for (int64_t r = b->first_row; r < next; r++) {
            const hs_diff_row *row = &al->rows[r];
            assert_true(row->a || row->b);
            if (row->a)
                assert_ptr_equal(row->a->parent, b->a);
            if (row->b && !row->a)
                assert_ptr_equal(row->b->parent, b->b);
            if (row->a && row->b) {
                pairs++;
                assert_true(row->status == HS_DIFF_CHANGED || row->status == HS_DIFF_SAME);
                changed += row->status == HS_DIFF_CHANGED;
                /* different shapes are always a change */
                if (!hs_shape_compatible(&row->a->shape, &row->b->shape))
                    assert_int_equal(row->status, HS_DIFF_CHANGED);
            } else {
                assert_int_equal(row->status, row->a ? HS_DIFF_REMOVED : HS_DIFF_ADDED);
            }
        }
    }
    assert_int_equal(next, al->n_rows);
    assert_int_equal(pairs, d->n_pairs);
    assert_int_equal(changed, d->n_changed);
    assert_int_equal(al->n_rows, d->n_pairs + d->n_added + d->n_removed);
}

/* d's alignment into al, checked: rows agree with d and every
 * instruction of both modules is on a row. */
static void align_checked(const hs_module *a, const hs_module *b, const hs_module_diff *d,
                          hs_diff_alignment *al)
{
    hs_error err;
    assert_int_equal(hs_module_diff_align(a, b, d, al, &err), HS_OK);
    rows_agree(d, al);
    every_instruction_on_a_row(a, al, true);
    every_instruction_on_a_row(b, al, false);
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
        /* nothing removed: the per-layer weights match the scan body's
         * slices of the stacked weights (by use), the reducers, named per
         * module, match by structure */
        for (int64_t j = 0; j < d.n_removed; j++)
            fail_msg("%s: removed %s (%s)", models[k], d.removed[j]->name,
                     d.removed[j]->op_name);
        /* every dot of every unrolled layer matched the scan body's */
        int64_t dots = 0;
        const hs_computation *entry = a->module->entry;
        for (int j = 0; j < entry->n_instrs; j++)
            dots += entry->instrs[j]->opcode == HS_OP_DOT;
        assert_true(dots >= 3 * 4);
        assert_true(d.n_matched_by_layer >= dots);
        assert_true(d.n_unchanged >= d.n_matched_by_layer);
        assert_int_equal(d.n_pairs, d.n_changed + d.n_unchanged);
        /* side by side: the unrolled entry opposite the scan's body, every
         * instruction of both on a row */
        hs_diff_alignment al;
        align_checked(a->module, b->module, &d, &al);
        const hs_diff_block *body = NULL;
        for (int j = 0; j < al.n_blocks; j++)
            if (al.blocks[j].a == a->module->entry && al.blocks[j].b &&
                !al.blocks[j].b->is_entry)
                body = &al.blocks[j];
        assert_non_null(body); /* the while's body */
        hs_diff_alignment_free(&al);
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
    /* side by side: each computation opposite itself, a row each */
    hs_diff_alignment al;
    align_checked(a, b, &d, &al);
    assert_int_equal(al.n_rows, hs_module_instruction_count(a));
    assert_int_equal(al.n_blocks, a->n_comps);
    for (int k = 0; k < al.n_blocks; k++)
        assert_string_equal(al.blocks[k].a->name, al.blocks[k].b->name);
    hs_diff_alignment_free(&al);
    hs_module_diff_free(&d);
    hs_module_free(a);
    hs_module_free(b);
}

/* A reducer is "add.clone.3" in one module and "region_0.12" in the
 * other, its parameters "x.1" here and "Arg_0.13" there: matched by the
 * structure of the computation, not shown as removed and added. A
 * reducer that is not the same (max for add) is changed. */
static void reducers_match_by_structure(void **state)
{
    (void)state;
    hs_module *a = parse("HloModule a\n"
                         "add.clone.3 {\n"
                         "  x.1 = f32[] parameter(0)\n"
                         "  y.2 = f32[] parameter(1)\n"
                         "  ROOT add.3 = f32[] add(x.1, y.2)\n"
                         "}\n"
                         "ENTRY e {\n"
                         "  p = f32[4,8] parameter(0)\n"
                         "  z = f32[] constant(0)\n"
                         "  r = f32[4] reduce(p, z), dimensions={1}, to_apply=add.clone.3\n"
                         "  ROOT n = f32[4] negate(r)\n"
                         "}\n");
    static const char *const b_text[] = {
        "HloModule b\n"
        "region_0.12 {\n"
        "  Arg_0.13 = f32[] parameter(0)\n"
        "  Arg_1.14 = f32[] parameter(1)\n"
        "  ROOT add.15 = f32[] add(Arg_0.13, Arg_1.14)\n"
        "}\n"
        "ENTRY e {\n"
        "  p = f32[4,8] parameter(0)\n"
        "  z = f32[] constant(0)\n"
        "  r = f32[4] reduce(p, z), dimensions={1}, to_apply=region_0.12\n"
        "  ROOT n = f32[4] negate(r)\n"
        "}\n",
        /* the same, but a max: not the same structure */
        "HloModule b\n"
        "region_0.12 {\n"
        "  Arg_0.13 = f32[] parameter(0)\n"
        "  Arg_1.14 = f32[] parameter(1)\n"
        "  ROOT maximum.15 = f32[] maximum(Arg_0.13, Arg_1.14)\n"
        "}\n"
        "ENTRY e {\n"
        "  p = f32[4,8] parameter(0)\n"
        "  z = f32[] constant(0)\n"
        "  r = f32[4] reduce(p, z), dimensions={1}, to_apply=region_0.12\n"
        "  ROOT n = f32[4] negate(r)\n"
        "}\n",
    };
    for (int k = 0; k < 2; k++) {
        hs_module *b = parse(b_text[k]);
        hs_module_diff d;
        hs_error err;
        assert_int_equal(hs_module_diff_compute(a, b, &d, &err), HS_OK);
        if (k == 0) {
            assert_int_equal(d.n_added, 0);
            assert_int_equal(d.n_removed, 0);
            assert_int_equal(d.n_changed, 0);
            assert_int_equal(d.n_unchanged, 7);
        } else {
            /* the parameters still line up; add against maximum does not */
            assert_true(d.n_added + d.n_removed + d.n_changed > 0);
        }
        hs_diff_alignment al;
        align_checked(a, b, &d, &al);
        if (k == 0) {
            /* two blocks: the reducers opposite each other, the entries */
            assert_int_equal(al.n_blocks, 2);
            assert_string_equal(al.blocks[0].a->name, "add.clone.3");
            assert_string_equal(al.blocks[0].b->name, "region_0.12");
            assert_string_equal(al.rows[al.blocks[0].first_row + 2].a->name, "add.3");
            assert_string_equal(al.rows[al.blocks[0].first_row + 2].b->name, "add.15");
        }
        hs_diff_alignment_free(&al);
        hs_module_diff_free(&d);
        hs_module_free(b);
    }
    hs_module_free(a);
}

/* Side by side, a removed instruction sits opposite a gap and an added
 * one comes where b has it, before the pair that follows it in b. */
static void rows_follow_both_orders(void **state)
{
    (void)state;
    hs_module *a = parse("HloModule a\n"
                         "ENTRY e {\n"
                         "  x = f32[4] parameter(0)\n"
                         "  t = f32[4] tanh(x)\n"
                         "  n = f32[4] negate(x)\n"
                         "  ROOT y = f32[4] add(n, t)\n"
                         "}\n");
    hs_module *b = parse("HloModule b\n"
                         "ENTRY e {\n"
                         "  x = f32[4] parameter(0)\n"
                         "  s = f32[4] sine(x)\n"
                         "  n = f32[4] exponential(x)\n"
                         "  ROOT y = f32[4] add(n, s)\n"
                         "}\n");
    hs_module_diff d;
    hs_diff_alignment al;
    hs_error err;
    assert_int_equal(hs_module_diff_compute(a, b, &d, &err), HS_OK);
    assert_int_equal(hs_module_diff_align(a, b, &d, &al, &err), HS_OK);
    rows_agree(&d, &al);
    assert_int_equal(al.n_blocks, 1);
    assert_int_equal(al.n_rows, 5);
    static const struct {
        const char *a, *b;
        hs_diff_status st;
    } want[] = {{"x", "x", HS_DIFF_SAME},
                {"t", NULL, HS_DIFF_REMOVED},
                {NULL, "s", HS_DIFF_ADDED},
                {"n", "n", HS_DIFF_CHANGED},
                {"y", "y", HS_DIFF_SAME}};
    for (int r = 0; r < 5; r++) {
        const hs_diff_row *row = &al.rows[r];
        assert_int_equal(row->status, want[r].st);
        if (want[r].a)
            assert_string_equal(row->a->name, want[r].a);
        else
            assert_null(row->a);
        if (want[r].b)
            assert_string_equal(row->b->name, want[r].b);
        else
            assert_null(row->b);
    }
    hs_diff_alignment_free(&al);
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
        cmocka_unit_test(reducers_match_by_structure),
        cmocka_unit_test(rows_follow_both_orders),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
