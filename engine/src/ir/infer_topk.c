/* infer_topk.c - the shape rule of topk, after XLA's
 * ShapeInference::InferTopKShape: topk(x), k=K, largest=true|false takes
 * the K largest (smallest) elements along x's last dimension, so x has
 * rank >= 1 and 0 <= K <= its last dimension, and the result is the
 * tuple (x's type at x's dimensions with the last one K, s32 indices of
 * the same dimensions). largest= may be left out (XLA: true). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ir/infer_internal.h"

hs_status hs__infer_topk(const hs_instruction *i, hs_arena *a,
                         hs_shape *out, hs_error *err)
{
    const hs_shape *x = NULL;
    hs_status st = hs__array_operand(i, 0, &x, err);
    if (st)
        return st;
    if (x->rank < 1)
        return fail(err, "topk: the operand must have rank >= 1, got %s",
                    SHAPE_TEXT(x));
    const char *kt = hs_instruction_attr(i, "k");
    if (!kt)
        return fail(err, "topk: missing k=");
    char *end = NULL;
    errno = 0;
    long long k = strtoll(kt, &end, 10);
    int64_t last = x->dims[x->rank - 1];
    if (errno || end == kt || *end || k < 0 || k > last)
        return fail(err, "topk: k=%s is not a count in [0, %lld] (the last "
                         "dimension of %s)", kt, (long long)last,
                    SHAPE_TEXT(x));
    const char *largest = hs_instruction_attr(i, "largest");
    if (largest && strcmp(largest, "true") != 0 &&
        strcmp(largest, "false") != 0)
        return fail(err, "topk: largest=%s is neither true nor false",
                    largest);
    hs_shape *elems = a ? hs_arena_alloc(a, 2 * sizeof *elems) : NULL;
    if (!elems)
        return hs_error_set(err, HS_ERR_NOMEM, "topk: out of memory");
    int64_t dims[HS_MAX_RANK];
    memcpy(dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
    dims[x->rank - 1] = k;
    set_array(&elems[0], x->dtype, x->rank, dims);
    set_array(&elems[1], HS_S32, x->rank, dims);
    memset(out, 0, sizeof *out);
    out->dtype = HS_TUPLE;
    out->n_elems = 2;
    out->elems = elems;
    return HS_OK;
}
