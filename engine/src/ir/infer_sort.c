/* infer_sort.c - the shape rule of sort, after XLA's
 * ShapeInference::InferVariadicOpShape for kSort and HloSortInstruction's
 * verifier: operands of the same dimensions sorted together along
 * dimensions={d}, compared by a comparator over a pair of scalars per
 * operand (parameters 2k and 2k+1 are operand k's left and right element)
 * that returns pred[]. The result is the operand's shape, or the tuple of
 * the operands' shapes when there are several. */
#include <string.h>

#include "ir/infer_internal.h"

static hs_status check_comparator(const hs_instruction *i, hs_error *err)
{
    if (i->n_called < 1 || !i->called[0])
        return fail(err, "sort: missing to_apply comparator");
    const hs_computation *c = i->called[0];
    int n = i->n_operands;
    if (c->n_params != 2 * n)
        return fail(err, "sort: comparator %s takes %d parameters but %d "
                         "operands need %d", c->name, c->n_params, n, 2 * n);
    for (int k = 0; k < 2 * n; k++) {
        const hs_instruction *p = c->params[k];
        hs_dtype want = i->operands[k / 2]->shape.dtype;
        if (!p || p->shape.dtype != want || p->shape.rank != 0)
            return fail(err, "sort: comparator %s parameter %d must be a %s "
                             "scalar (operand %d's type)", c->name, k,
                        hs_dtype_name(want), k / 2);
    }
    if (!c->root || c->root->shape.dtype != HS_PRED ||
        c->root->shape.rank != 0)
        return fail(err, "sort: comparator %s must return pred[]", c->name);
    return HS_OK;
}

hs_status hs__infer_sort(const hs_instruction *i, hs_arena *a,
                         hs_shape *out, hs_error *err)
{
    int n = i->n_operands;
    if (n < 1)
        return fail(err, "sort: needs at least one operand");
    const hs_shape *x = NULL;
    hs_status st = hs__array_operand(i, 0, &x, err);
    if (st)
        return st;
    if (i->n_dims != 1 || !i->dims)
        return fail(err, "sort: needs exactly one dimension to sort along");
    if (i->dims[0] < 0 || i->dims[0] >= (x->rank ? x->rank : 1))
        return fail(err, "sort: dimension %lld is out of range for %s",
                    (long long)i->dims[0], SHAPE_TEXT(x));
    for (int k = 1; k < n; k++) {
        const hs_shape *y = NULL;
        if ((st = hs__array_operand(i, k, &y, err)))
            return st;
        if (!same_dims(x, y))
            return fail(err, "sort: operand %d %s does not have operand 0's "
                             "dimensions %s", k, SHAPE_TEXT(y),
                        SHAPE_TEXT(x));
    }
    if ((st = check_comparator(i, err)))
        return st;
    return hs__set_operand_arrays(i, n, x, a, out, err);
}
