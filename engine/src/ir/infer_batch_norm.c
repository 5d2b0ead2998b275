/* infer_batch_norm.c - shape rules of batch-norm-training, -inference and
 * -grad, as XLA's ShapeInference writes them: a floating-point operand,
 * per-feature operands of rank 1 with as many elements as the operand's
 * feature dimension (feature_index=) and the operand's element type; the
 * training and grad forms return tuples (operand-shaped, feature, feature).
 */
#include <string.h>

#include "ir/infer_internal.h"

/* Checks operand 0 and the per-feature operands (every operand k with
 * per_feature[k]); the others must have operand 0's shape. */
static hs_status check_operands(const hs_instruction *i,
                                const char *const *role, int n,
                                const hs_shape **x, hs_error *err)
{
    hs_status st = hs__array_operand(i, 0, x, err);
    if (st != HS_OK)
        return st;
    const char *op = hs_opcode_name(i->opcode);
    if (!is_real_float((*x)->dtype))
        return fail(err, "%s: instruction %s: the operand %s is not "
                         "floating point",
                    op, i->name, SHAPE_TEXT(*x));
    hs_batch_norm bn;
    if ((st = hs_instruction_batch_norm(i, (*x)->rank, &bn, err)) != HS_OK)
        return st;
    int64_t features = (*x)->dims[bn.feature_index];
    for (int k = 1; k < n; k++) {
        const hs_shape *s = NULL;
        if ((st = hs__array_operand(i, k, &s, err)) != HS_OK)
            return st;
        bool per_feature = role[k] != NULL;
        bool ok = s->dtype == (*x)->dtype &&
                  (per_feature ? s->rank == 1 && s->dims[0] == features
                               : same_dims(s, *x));
        if (!ok) {
            hs_shape want = per_feature
                                ? hs_shape_make((*x)->dtype, 1, &features)
                                : **x;
            return fail(err, "%s: instruction %s: %s %s must be %s",
                        op, i->name, per_feature ? role[k] : "grad_output",
                        SHAPE_TEXT(s), SHAPE_TEXT(&want));
        }
    }
    return HS_OK;
}

/* (operand-shaped, feature vector, feature vector) */
static hs_status tuple_result(const hs_instruction *i, hs_arena *a,
                              const hs_shape *x, hs_shape *out,
                              hs_error *err)
{
    hs_batch_norm bn;
    hs_status st = hs_instruction_batch_norm(i, x->rank, &bn, err);
    if (st != HS_OK)
        return st;
    hs_shape *elems = a ? hs_arena_alloc(a, 3 * sizeof *elems) : NULL;
    if (!elems)
        return hs_error_set(err, HS_ERR_NOMEM, "%s: out of memory",
                            hs_opcode_name(i->opcode));
    int64_t features = x->dims[bn.feature_index];
    set_array(&elems[0], x->dtype, x->rank, x->dims);
    set_array(&elems[1], x->dtype, 1, &features);
    set_array(&elems[2], x->dtype, 1, &features);
    memset(out, 0, sizeof *out);
    out->dtype = HS_TUPLE;
    out->n_elems = 3;
    out->elems = elems;
    return HS_OK;
}

hs_status hs__infer_batch_norm_training(const hs_instruction *i, hs_arena *a,
                                        hs_shape *out, hs_error *err)
{
    static const char *const role[] = {NULL, "scale", "offset"};
    const hs_shape *x;
    hs_status st = check_operands(i, role, 3, &x, err);
    return st == HS_OK ? tuple_result(i, a, x, out, err) : st;
}

hs_status hs__infer_batch_norm_inference(const hs_instruction *i,
                                         hs_arena *a, hs_shape *out,
                                         hs_error *err)
{
    (void)a;
    static const char *const role[] = {NULL, "scale", "offset", "mean",
                                       "variance"};
    const hs_shape *x;
    hs_status st = check_operands(i, role, 5, &x, err);
    if (st == HS_OK)
        set_array(out, x->dtype, x->rank, x->dims);
    return st;
}

hs_status hs__infer_batch_norm_grad(const hs_instruction *i, hs_arena *a,
                                    hs_shape *out, hs_error *err)
{
    static const char *const role[] = {NULL, "scale", "mean", "variance",
                                       NULL};
    const hs_shape *x;
    hs_status st = check_operands(i, role, 5, &x, err);
    return st == HS_OK ? tuple_result(i, a, x, out, err) : st;
}
