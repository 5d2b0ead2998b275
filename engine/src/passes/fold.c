/* fold.c - constant folding of small literals of every executable element
 * type (hs__foldable_dtype): element-wise ops, and
 * reshape/transpose/broadcast of constants.
 *
 * Every element is computed by the element function the device's kernels
 * call (numerics/element_ops.h), so a folded constant has the bits that
 * executing the instruction would give, by construction, and folding
 * refuses exactly the (opcode, type) pairs the device refuses.
 *
 * The rule of every opcode comes from the table below, generated from
 * HS_OPCODE_LIST (hs_opcode.h): opcode E takes the rule FOLD_E, so adding
 * an opcode without deciding whether it folds does not compile. NULL means
 * "never folded". */
#include <stdlib.h>
#include <string.h>

#include "numerics/element_loops.h"
#include "numerics/element_ops.h"
#include "passes/passes_internal.h"

/* One operand of an element-wise op: a constant's elements, or a scalar
 * (a scalar constant, a broadcast of one) read at every index. */
typedef struct operand {
    const void *data;
    int64_t step; /* 1, or 0 for a scalar */
    hs_dtype type;
} operand;

#define AT(T, o, k) (((const T *)(o).data)[(k) * (o).step])

/* A constant, or a broadcast of a scalar constant (read at element 0). */
static bool constant_like(const hs_instruction *i)
{
    if (i->opcode == HS_OP_BROADCAST && i->n_operands == 1)
        return hs__is_constant(i->operands[0]) &&
               i->operands[0]->shape.rank == 0 &&
               i->operands[0]->shape.dtype == i->shape.dtype;
    return hs__is_constant(i);
}

/* The operands of i, when there are `arity` of them and each has n
 * elements or is a scalar that applies to all (as clamp's bounds may be).
 * Anything else is malformed or not constant: not folded. */
static bool operands(const hs_instruction *i, int64_t n, int arity,
                     operand *o)
{
    if (i->n_operands != arity)
        return false;
    for (int k = 0; k < arity; k++) {
        const hs_instruction *x = i->operands[k];
        if (!constant_like(x))
            return false;
        bool bcast = x->opcode == HS_OP_BROADCAST;
        int64_t m = bcast ? 1 : hs_shape_elements(&x->shape);
        if (m != n && m != 1)
            return false;
        o[k].data = bcast ? x->operands[0]->literal : x->literal;
        o[k].step = m == n && !bcast ? 1 : 0;
        o[k].type = x->shape.dtype;
    }
    return true;
}

static size_t esize(hs_dtype t)
{
    return (size_t)(hs_dtype_bits(t) / 8);
}

/* The folded constant from n elements of i's type at data (freed here). */
static hs_instruction *finish(hs_instruction *i, void *data)
{
    hs_instruction *r = data ? hs__add_constant(i, &i->shape, data) : NULL;
    free(data);
    return r;
}

static void *result(const hs_instruction *i, int64_t n)
{
    return malloc((size_t)n * esize(i->shape.dtype));
}

/* ---- rules ------------------------------------------------------------- */

/* The k operands at o as n elements each, in d: their data, or a scalar
 * repeated into memory of its own, listed in own (freed by release).
 * False, with nothing left allocated, when out of memory. */
static bool expand(const operand *o, int k, int64_t n, const void **d,
                   void **own)
{
    for (int j = 0; j < k; j++) {
        own[j] = NULL;
        d[j] = o[j].data;
        if (o[j].step)
            continue;
        size_t es = esize(o[j].type);
        unsigned char *p = malloc((size_t)n * es);
        if (!p) {
            for (int i = 0; i < j; i++)
                free(own[i]);
            return false;
        }
        for (int64_t e = 0; e < n; e++)
            memcpy(p + (size_t)e * es, o[j].data, es);
        own[j] = p;
        d[j] = p;
    }
    return true;
}

static void release(void **own, int k)
{
    for (int j = 0; j < k; j++)
        free(own[j]);
}

/* The result buffer and the expanded operands; NULL (nothing allocated)
 * when out of memory. */
static void *prepare(const hs_instruction *i, const operand *o, int k,
                     int64_t n, const void **d, void **own)
{
    void *y = result(i, n);
    if (y && !expand(o, k, n, d, own)) {
        free(y);
        y = NULL;
    }
    return y;
}

static hs_instruction *fold_unary(hs_instruction *i, int64_t n)
{
    operand a;
    hs_dtype t = i->shape.dtype;
    hs_opcode op = i->opcode;
    if (!operands(i, n, 1, &a) || a.type != t || !unary_defined(op, t))
        return NULL;
    const void *d[1];
    void *own[1];
    void *y = prepare(i, &a, 1, n, d, own);
    if (!y)
        return NULL;
    elem_unary_run(op, t, d[0], y, n);
    release(own, 1);
    return finish(i, y);
}

static hs_instruction *fold_binary(hs_instruction *i, int64_t n)
{
    operand o[2];
    hs_dtype t = i->shape.dtype;
    hs_opcode op = i->opcode;
    if (!operands(i, n, 2, o) || o[0].type != t || o[1].type != t ||
        !binary_defined(op, t))
        return NULL;
    const void *d[2];
    void *own[2];
    void *y = prepare(i, o, 2, n, d, own);
    if (!y)
        return NULL;
    elem_binary_run(op, t, d[0], d[1], y, n);
    release(own, 2);
    return finish(i, y);
}

static hs_instruction *fold_compare(hs_instruction *i, int64_t n)
{
    operand o[2];
    hs_direction dir = i->direction;
    if (!operands(i, n, 2, o) || i->shape.dtype != HS_PRED ||
        o[0].type != o[1].type || dir == HS_DIR_NONE)
        return NULL;
    /* The device compares floats as IEEE does; a total order is not
     * that. */
    if (i->compare_type && strcmp(i->compare_type, "TOTALORDER") == 0)
        return NULL;
    const void *d[2];
    void *own[2];
    void *y = prepare(i, o, 2, n, d, own);
    if (!y)
        return NULL;
    elem_compare_run(dir, o[0].type, d[0], d[1], y, n);
    release(own, 2);
    return finish(i, y);
}

/* select(p, a, b) copies the chosen element's bits, as the device does. */
static hs_instruction *fold_select(hs_instruction *i, int64_t n)
{
    operand o[3];
    hs_dtype t = i->shape.dtype;
    if (!operands(i, n, 3, o) || o[0].type != HS_PRED || o[1].type != t ||
        o[2].type != t)
        return NULL;
    size_t es = esize(t);
    unsigned char *y = result(i, n);
    for (int64_t k = 0; y && k < n; k++) {
        const operand *c = AT(uint8_t, o[0], k) ? &o[1] : &o[2];
        memcpy(y + (size_t)k * es,
               (const unsigned char *)c->data + (size_t)(k * c->step) * es,
               es);
    }
    return finish(i, y);
}

static hs_instruction *fold_clamp(hs_instruction *i, int64_t n)
{
    operand o[3]; /* lo, x, hi */
    hs_dtype t = i->shape.dtype;
    if (!operands(i, n, 3, o) || t == HS_PRED || o[0].type != t ||
        o[1].type != t || o[2].type != t)
        return NULL;
    /* The bounds may stay scalars (step 0); x is expanded. */
    const void *d[1];
    void *own[1];
    void *y = prepare(i, &o[1], 1, n, d, own);
    if (!y)
        return NULL;
    elem_clamp_run(t, o[0].data, o[0].step, d[0], o[2].data, o[2].step, y,
                   n);
    release(own, 1);
    return finish(i, y);
}

/* convert between any two foldable types, as the device's
 * dev_convert_loop does (numerics/element_types.h). */
static hs_instruction *fold_convert(hs_instruction *i, int64_t n)
{
    operand a;
    if (!operands(i, n, 1, &a))
        return NULL;
    const void *d[1];
    void *own[1];
    void *y = prepare(i, &a, 1, n, d, own);
    if (!y)
        return NULL;
    elem_convert(a.type, i->shape.dtype, d[0], y, n);
    release(own, 1);
    return finish(i, y);
}

static hs_instruction *fold_is_finite(hs_instruction *i, int64_t n)
{
    operand a;
    if (!operands(i, n, 1, &a) || i->shape.dtype != HS_PRED ||
        !hs_dtype_is_float(a.type))
        return NULL;
    const void *d[1];
    void *own[1];
    void *y = prepare(i, &a, 1, n, d, own);
    if (!y)
        return NULL;
    elem_is_finite_run(a.type, d[0], y, n);
    release(own, 1);
    return finish(i, y);
}

static hs_instruction *fold_reduce_precision(hs_instruction *i, int64_t n)
{
    operand a;
    hs_dtype t = i->shape.dtype;
    if (!operands(i, n, 1, &a) || a.type != t || i->n_dims != 2 ||
        i->dims[0] < 1 || i->dims[1] < 0 || i->dims[0] > 64 ||
        i->dims[1] > 64 || !hs_dtype_is_float(t))
        return NULL;
    const void *d[1];
    void *own[1];
    void *y = prepare(i, &a, 1, n, d, own);
    if (!y)
        return NULL;
    elem_reduce_precision_run(t, (int)i->dims[0], (int)i->dims[1], d[0], y,
                              n);
    release(own, 1);
    return finish(i, y);
}

/* Reshape, transpose and broadcast only move elements: out element k
 * reads operand element sum(index_d * step[d]) over output dimensions d. */
static hs_instruction *fold_move(hs_instruction *i, int64_t n)
{
    if (i->n_operands != 1 || !hs__is_constant(i->operands[0]))
        return NULL;
    const hs_instruction *src = i->operands[0];
    const hs_shape *os = &src->shape, *s = &i->shape;
    if (os->dtype != s->dtype || os->rank > HS_MAX_RANK)
        return NULL;
    int64_t src_stride[HS_MAX_RANK], step[HS_MAX_RANK] = {0};
    int64_t stride = 1;
    for (int d = os->rank - 1; d >= 0; d--) {
        src_stride[d] = stride;
        stride *= os->dims[d];
    }
    if (i->opcode == HS_OP_RESHAPE) {
        if (hs_shape_elements(os) != n)
            return NULL;
        return hs__add_constant(i, s, src->literal);
    }
    if (i->opcode == HS_OP_TRANSPOSE) {
        if (i->n_dims != s->rank || os->rank != s->rank)
            return NULL;
        for (int d = 0; d < s->rank; d++) {
            if (i->dims[d] < 0 || i->dims[d] >= os->rank)
                return NULL;
            step[d] = src_stride[i->dims[d]];
        }
    } else { /* broadcast: operand dimension j is output dims[j] */
        if (os->rank == 0 || i->n_dims != os->rank)
            return NULL;
        for (int j = 0; j < os->rank; j++) {
            if (i->dims[j] < 0 || i->dims[j] >= s->rank)
                return NULL;
            step[i->dims[j]] = src_stride[j];
        }
    }
    size_t es = esize(s->dtype);
    unsigned char *data = malloc((size_t)n * es);
    if (!data)
        return NULL;
    int64_t idx[HS_MAX_RANK] = {0}, at = 0;
    for (int64_t k = 0; k < n; k++) {
        memcpy(data + (size_t)k * es,
               (const unsigned char *)src->literal + (size_t)at * es, es);
        /* Advance the output index like an odometer, last dimension
         * fastest, keeping the source offset in step. */
        for (int d = s->rank - 1; d >= 0; d--) {
            at += step[d];
            if (++idx[d] < s->dims[d])
                break;
            at -= step[d] * idx[d];
            idx[d] = 0;
        }
    }
    return finish(i, data);
}

/* ---- the table ------------------------------------------------------------ */

typedef hs_instruction *(*fold_rule)(hs_instruction *i, int64_t n);

/* the element-wise families fold element by element with the device's
 * element functions */
#define FOLD_OF_UNARY_ANY(e) fold_unary
#define FOLD_OF_UNARY_FLOAT(e) fold_unary
#define FOLD_OF_UNARY_LOGICAL(e) fold_unary
#define FOLD_OF_BINARY_ANY(e) fold_binary
#define FOLD_OF_BINARY_LOGICAL(e) fold_binary
#define FOLD_OF_OWN(e) FOLD_##e

/* leaves: already constants, or not known at compile time */
#define FOLD_PARAMETER NULL
#define FOLD_CONSTANT NULL
#define FOLD_IOTA NULL
#define FOLD_CONVERT fold_convert
#define FOLD_BITCAST_CONVERT NULL /* reinterprets bits: not modelled */
/* element-wise, outside the families */
#define FOLD_COMPARE fold_compare
#define FOLD_IS_FINITE fold_is_finite
#define FOLD_REDUCE_PRECISION fold_reduce_precision
/* element-wise ternary */
#define FOLD_SELECT fold_select
#define FOLD_CLAMP fold_clamp
/* data movement: the ones that only reorder a constant's elements */
#define FOLD_BROADCAST fold_move
#define FOLD_RESHAPE fold_move
#define FOLD_BITCAST NULL /* a layout change: kept for the layout */
#define FOLD_TRANSPOSE fold_move
#define FOLD_SLICE NULL
#define FOLD_CONCATENATE NULL
#define FOLD_REVERSE NULL
#define FOLD_PAD NULL
#define FOLD_DYNAMIC_SLICE NULL
#define FOLD_DYNAMIC_UPDATE_SLICE NULL
#define FOLD_GATHER NULL
#define FOLD_SCATTER NULL
/* compute: left to the device */
#define FOLD_DOT NULL
#define FOLD_CONVOLUTION NULL
#define FOLD_REDUCE NULL
#define FOLD_REDUCE_WINDOW NULL
#define FOLD_SELECT_AND_SCATTER NULL
#define FOLD_BATCH_NORM_TRAINING NULL
#define FOLD_BATCH_NORM_INFERENCE NULL
#define FOLD_BATCH_NORM_GRAD NULL
#define FOLD_MAP NULL
#define FOLD_SORT NULL
#define FOLD_TOPK NULL
#define FOLD_RNG NULL
#define FOLD_RNG_BIT_GENERATOR NULL
/* tuples, control flow, memory, collectives: not values to fold */
#define FOLD_TUPLE NULL
#define FOLD_GET_TUPLE_ELEMENT NULL
#define FOLD_WHILE NULL
#define FOLD_CALL NULL
#define FOLD_CONDITIONAL NULL
#define FOLD_FUSION NULL
#define FOLD_CUSTOM_CALL NULL
#define FOLD_OPTIMIZATION_BARRIER NULL
#define FOLD_AFTER_ALL NULL
#define FOLD_COPY NULL
#define FOLD_COPY_START NULL
#define FOLD_COPY_DONE NULL
#define FOLD_ALL_REDUCE NULL
#define FOLD_ALL_GATHER NULL
#define FOLD_REDUCE_SCATTER NULL
#define FOLD_ALL_TO_ALL NULL
#define FOLD_COLLECTIVE_PERMUTE NULL
#define FOLD_PARTITION_ID NULL
#define FOLD_REPLICA_ID NULL
#define FOLD_UNKNOWN NULL

static const fold_rule fold_table[HS_OP_COUNT] = {
#define HS_X(e, n, a, c, f) [HS_OP_##e] = FOLD_OF_##f(e),
    HS_OPCODE_LIST(HS_X)
#undef HS_X
};

bool hs__fold_has_rule(hs_opcode op)
{
    return (unsigned)op < HS_OP_COUNT && fold_table[op] != NULL;
}

hs_instruction *hs__fold(hs_instruction *i, int64_t max_elements)
{
    if (!hs__fold_has_rule(i->opcode) || !hs__foldable_dtype(i->shape.dtype))
        return NULL;
    int64_t n = hs_shape_elements(&i->shape);
    if (n <= 0 || n > max_elements)
        return NULL;
    return fold_table[i->opcode](i, n);
}
