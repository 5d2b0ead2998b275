/*
 * kernels_topk.c - topk(x), k=K, largest=... and the TopK custom-call
 * that torch_xla and JAX dumps write (Mixtral's router):
 *
 *     (bf16[4096,2], s32[4096,2]) custom-call(bf16[4096,8] x),
 *         custom_call_target="TopK", called_computations={cmp}
 *
 * where cmp is (p0, p1[, i0, i1]) -> compare(p0, p1), direction=GT (any
 * type=) and K is the result's last dimension. Both take the K first
 * elements of every row along the last dimension in XLA's order, the
 * one its CPU runtime (__xla_cpu_runtime_TopKF32) and its decomposition
 * into a stable sort of (x, iota) agree on:
 *
 *   - floats in the total order -NaN < -inf < ... < -0 < +0 < ... < inf
 *     < +NaN, largest first for largest=true (smallest first otherwise);
 *   - equal keys by index, the lower one first.
 *
 * A comparator without type=TOTALORDER compares -0 and +0 as equal, so
 * they keep their index order; NaNs are placed as in the total order
 * (XLA leaves a partial-order comparator's NaNs unspecified).
 *
 * Each element becomes one unsigned key whose integer order is the wanted
 * order (ascending), and a row is sorted as (key, index) pairs, which are
 * all distinct, so the result does not depend on the sort's stability.
 */
#include <stdlib.h>
#include <string.h>

#include "device/device_internal.h"
#include "numerics/element_types.h"

typedef struct topk_pair {
    uint64_t key;
    int64_t index;
} topk_pair;

static int pair_cmp(const void *pa, const void *pb)
{
    const topk_pair *a = pa, *b = pb;
    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index);
}

/* The comparator of a TopK custom-call: (p0, p1[, i0, i1]) -> compare of
 * p0 and p1, GT or LT. Sets *largest and *total; false for any other. */
static bool custom_call_comparator(const hs_instruction *in, bool *largest,
                                   bool *total)
{
    const hs_computation *c = in->n_called == 1 ? in->called[0] : NULL;
    const hs_instruction *r = c ? c->root : NULL;
    if (!r || (c->n_params != 2 && c->n_params != 4) ||
        r->opcode != HS_OP_COMPARE || r->n_operands != 2)
        return false;
    const hs_instruction *a = r->operands[0], *b = r->operands[1];
    if (a->opcode != HS_OP_PARAMETER || b->opcode != HS_OP_PARAMETER ||
        a->parent != c || b->parent != c || a->index + b->index != 1 ||
        (r->direction != HS_DIR_GT && r->direction != HS_DIR_LT))
        return false;
    *largest = (r->direction == HS_DIR_GT) == (a->index == 0);
    *total = r->compare_type && strcmp(r->compare_type, "TOTALORDER") == 0;
    return true;
}

/* The operand and result shapes of a topk: x an executable array of
 * rank >= 1, the result (x's type, s32) at x's dimensions with the last
 * one k <= x's. */
static bool topk_shapes(const hs_instruction *in)
{
    if (in->n_operands != 1 || in->shape.dtype != HS_TUPLE ||
        in->shape.n_elems != 2)
        return false;
    const hs_shape *x = &in->operands[0]->shape;
    const hs_shape *v = &in->shape.elems[0], *ix = &in->shape.elems[1];
    if (x->dtype == HS_TUPLE || x->rank < 1 || !dev_dtype_executable(x->dtype)
        || v->dtype != x->dtype || ix->dtype != HS_S32 ||
        v->rank != x->rank || ix->rank != x->rank)
        return false;
    for (int d = 0; d < x->rank; d++) {
        int64_t want = d + 1 < x->rank ? x->dims[d] : v->dims[d];
        if (v->dims[d] != want || ix->dims[d] != want)
            return false;
    }
    /* s32 indices: a row of more than 2^31 - 1 has no index type */
    return v->dims[x->rank - 1] <= x->dims[x->rank - 1] &&
           x->dims[x->rank - 1] <= INT32_MAX;
}

bool dev_is_topk_call(const hs_instruction *in)
{
    const char *t = in->custom_call_target;
    return in->opcode == HS_OP_CUSTOM_CALL && t && strcmp(t, "TopK") == 0;
}

const char *dev_topk_call_why_not(const hs_instruction *in)
{
    bool largest, total;
    if (!topk_shapes(in))
        return "TopK runs on one array x and gives (values of x's type, s32 "
               "indices) with x's dimensions but the last, k <= x's";
    if (!custom_call_comparator(in, &largest, &total))
        return "TopK runs with a comparator (a, b[, i, j]) -> compare(a, b), "
               "direction=GT or LT, only";
    return NULL;
}

bool dev_topk_call_runs(const hs_instruction *in)
{
    return dev_is_topk_call(in) && !dev_topk_call_why_not(in);
}

/* The keys of a row of n elements of type t at src (wide: n * 8 bytes of
 * scratch), ascending in the order wanted. */
static void row_keys(hs_dtype t, const char *src, int64_t n, void *wide,
                     bool largest, bool total, topk_pair *out)
{
    elem_load(t, src, wide, n);
    elem_class cls = elem_class_of(t);
    for (int64_t j = 0; j < n; j++) {
        uint64_t key;
        switch (cls) {
        case ELEM_F32: case ELEM_F64: {
            double v = cls == ELEM_F32 ? ((const float *)wide)[j]
                                       : ((const double *)wide)[j];
            if (!total && v == 0)
                v = 0.0; /* -0 == +0 for a partial-order comparator */
            uint64_t bits;
            memcpy(&bits, &v, 8); /* the double holds the value exactly */
            key = bits >> 63 ? ~bits : bits | UINT64_C(1) << 63;
            break;
        }
        case ELEM_SINT:
            key = (uint64_t)((const int64_t *)wide)[j] ^ UINT64_C(1) << 63;
            break;
        case ELEM_UINT: key = ((const uint64_t *)wide)[j]; break;
        default: key = ((const uint8_t *)wide)[j]; break;
        }
        out[j].key = largest ? ~key : key;
        out[j].index = j;
    }
}

static hs_status run_topk(dev_ctx *x, const dev_step *s, dev_val **f,
                          dev_val **out, bool largest, bool total)
{
    const hs_instruction *in = s->in;
    const dev_val *a = dev_op(s, f, 0);
    if (a->elems)
        return dev_unsupported(x, in, "a topk of a tuple");
    const hs_shape *xs = a->shape;
    int64_t n = xs->dims[xs->rank - 1];
    int64_t k = in->shape.elems[0].dims[xs->rank - 1];
    int64_t rows = n ? hs_shape_elements(xs) / n : 0;
    int es = dev_esize(xs->dtype);
    dev_val *y = dev_tuple_new(x, &in->shape, 2);
    if (!y)
        return x->err->status;
    hs_status st = HS_OK;
    for (int e = 0; e < 2 && !st; e++)
        if (!(y->elems[e] = dev_array_new(x, &in->shape.elems[e])))
            st = x->err->status;
    topk_pair *pairs = NULL;
    void *wide = NULL;
    if (!st && rows > 0 && k > 0 &&
        (!(pairs = malloc((size_t)n * sizeof *pairs)) ||
         !(wide = malloc((size_t)n * 8))))
        st = dev_oom(x);
    const char *src = a->block->data;
    char *vals = st ? NULL : y->elems[0]->block->data;
    int32_t *idx = st ? NULL : y->elems[1]->block->data;
    for (int64_t r = 0; r < rows && k > 0 && !st; r++) {
        const char *row = src + r * n * es;
        row_keys(xs->dtype, row, n, wide, largest, total, pairs);
        qsort(pairs, (size_t)n, sizeof *pairs, pair_cmp);
        for (int64_t j = 0; j < k; j++) {
            memcpy(vals + (r * k + j) * es, row + pairs[j].index * es,
                   (size_t)es);
            idx[r * k + j] = (int32_t)pairs[j].index;
        }
    }
    free(pairs);
    free(wide);
    if (st) {
        dev_release(x, y);
        return st;
    }
    *out = y;
    return HS_OK;
}

hs_status dev_k_topk(dev_ctx *x, const dev_step *s, dev_val **f,
                     dev_val **out)
{
    const hs_instruction *in = s->in;
    if (!topk_shapes(in))
        return dev_unsupported(x, in, "a topk whose result is not (x's "
                                      "type, s32) at x's dimensions with "
                                      "the last one k");
    /* XLA's topk orders floats by the total order whichever way */
    const char *largest = hs_instruction_attr(in, "largest");
    return run_topk(x, s, f, out, !largest || strcmp(largest, "false"),
                    true);
}

hs_status dev_k_topk_call(dev_ctx *x, const dev_step *s, dev_val **f,
                          dev_val **out)
{
    const hs_instruction *in = s->in;
    bool largest = true, total = true;
    if (!topk_shapes(in) || !custom_call_comparator(in, &largest, &total))
        return dev_unsupported(x, in, "a TopK custom-call whose comparator "
                                      "is not compare(p0, p1) GT or LT");
    return run_topk(x, s, f, out, largest, total);
}
