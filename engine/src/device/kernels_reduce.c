/*
 * kernels_reduce.c - single-input reduce.
 *
 * A reducer whose root is add, multiply, maximum, minimum, and or or of its
 * two parameters (what every frontend emits) runs as a tight loop; any
 * other reducer is interpreted once per element. The input is viewed as
 * [kept, reduced] (row reduction) or [reduced, kept] (column accumulation,
 * which vectorises); other orders are transposed to [kept, reduced] first.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "device/device_internal.h"
#include "numerics/element_ops.h"

int dev_reducer_fast_op(const hs_computation *c)
{
    const hs_instruction *r = c->root;
    if (c->n_params != 2 || !r || r->n_operands != 2 || r->shape.rank != 0)
        return -1;
    switch (r->opcode) {
    case HS_OP_ADD: case HS_OP_MULTIPLY: case HS_OP_MAXIMUM:
    case HS_OP_MINIMUM: case HS_OP_AND: case HS_OP_OR:
        break;
    default:
        return -1;
    }
    const hs_instruction *a = r->operands[0], *b = r->operands[1];
    if (a->opcode != HS_OP_PARAMETER || b->opcode != HS_OP_PARAMETER ||
        a == b || a->parent != c || b->parent != c)
        return -1;
    return (int)r->opcode;
}

#define ROWS(OP, FN, T)                                                       \
    case OP:                                                               \
        for (int64_t o = 0; o < outer; o++) {                              \
            T acc = init;                                                  \
            const T *row = a + o * red;                                    \
            for (int64_t j = 0; j < red; j++)                              \
                acc = FN(OP, acc, row[j]);                                 \
            y[o] = acc;                                                    \
        }                                                                  \
        break;

#define COLS(OP, FN, T)                                                       \
    case OP:                                                               \
        for (int64_t j = 0; j < outer; j++)                                \
            y[j] = init;                                                   \
        for (int64_t r = 0; r < red; r++) {                                \
            const T *row = a + r * outer;                                  \
            VLOOP(outer, y[i] = FN(OP, y[i], row[i]));                     \
        }                                                                  \
        break;

#define DEFINE_REDUCE_LOOP(NAME, T, FN)                                    \
    static void NAME(hs_opcode op, bool cols, const T *restrict a, T init, \
                     T *restrict y, int64_t outer, int64_t red)            \
    {                                                                      \
        if (cols) {                                                        \
            switch (op) {                                                  \
                COLS(HS_OP_ADD, FN, T)                                        \
                COLS(HS_OP_MULTIPLY, FN, T)                                   \
                COLS(HS_OP_MAXIMUM, FN, T)                                    \
                COLS(HS_OP_MINIMUM, FN, T)                                    \
                COLS(HS_OP_AND, FN, T)                                        \
                COLS(HS_OP_OR, FN, T)                                         \
            default: break;                                                \
            }                                                              \
        } else {                                                           \
            switch (op) {                                                  \
                ROWS(HS_OP_ADD, FN, T)                                        \
                ROWS(HS_OP_MULTIPLY, FN, T)                                   \
                ROWS(HS_OP_MAXIMUM, FN, T)                                    \
                ROWS(HS_OP_MINIMUM, FN, T)                                    \
                ROWS(HS_OP_AND, FN, T)                                        \
                ROWS(HS_OP_OR, FN, T)                                         \
            default: break;                                                \
            }                                                              \
        }                                                                  \
    }

/* and/or are not float operations; a float reducer never asks for them. */
ELEM float reduce_f32_op(hs_opcode op, float a, float b)
{
    return (op == HS_OP_AND || op == HS_OP_OR) ? a : binary_f32(op, a, b);
}
DEFINE_REDUCE_LOOP(reduce_f32, float, reduce_f32_op)

/* binary_f32 on four lanes: the same IEEE operation per lane. */
ELEM hs_v4f reduce_v4f_op(hs_opcode op, hs_v4f a, hs_v4f b)
{
    switch (op) {
    case HS_OP_ADD: return a + b;
    case HS_OP_MULTIPLY: return a * b;
    case HS_OP_MAXIMUM: return hs_vsel((a > b) | (a != a), a, b);
    default: return hs_vsel((a < b) | (a != a), a, b); /* minimum */
    }
}

/* f32 rows of at least 16 elements: eight lanes accumulate elements
 * j = lane (mod 8), starting from the operation's identity; the lanes are
 * combined pairwise, then the init and the tail are folded in in order.
 * A fixed order, so every row of the same length gives the same bits
 * wherever it is reduced; sums are as accurate as the sequential loop's
 * or better (eight partial sums). */
#define VROWS(OP, IDENT)                                                   \
    case OP:                                                               \
        for (int64_t o = 0; o < outer; o++) {                              \
            const float *row = a + o * red;                                \
            const hs_v4f id = HS_VSPLAT(IDENT);                            \
            hs_v4f s0 = id, s1 = id, v0, v1;                               \
            int64_t j = 0;                                                 \
            for (; j + 8 <= red; j += 8) {                                 \
                memcpy(&v0, row + j, sizeof v0);                           \
                memcpy(&v1, row + j + 4, sizeof v1);                       \
                s0 = reduce_v4f_op(OP, s0, v0);                            \
                s1 = reduce_v4f_op(OP, s1, v1);                            \
            }                                                              \
            s0 = reduce_v4f_op(OP, s0, s1);                                \
            float l01 = reduce_f32_op(OP, s0[0], s0[1]);                   \
            float l23 = reduce_f32_op(OP, s0[2], s0[3]);                   \
            float acc = reduce_f32_op(OP, init, reduce_f32_op(OP, l01, l23)); \
            for (; j < red; j++)                                           \
                acc = reduce_f32_op(OP, acc, row[j]);                      \
            y[o] = acc;                                                    \
        }                                                                  \
        return true;

static bool reduce_f32_rows_vector(hs_opcode op, const float *restrict a,
                                   float init, float *restrict y,
                                   int64_t outer, int64_t red)
{
    if (red < 16)
        return false;
    switch (op) {
        VROWS(HS_OP_ADD, -0.0f)
        VROWS(HS_OP_MULTIPLY, 1.0f)
        VROWS(HS_OP_MAXIMUM, -INFINITY)
        VROWS(HS_OP_MINIMUM, INFINITY)
    default: return false;
    }
}
DEFINE_REDUCE_LOOP(reduce_s32, int32_t, binary_s32)
DEFINE_REDUCE_LOOP(reduce_s64, int64_t, binary_s64)
DEFINE_REDUCE_LOOP(reduce_pred, uint8_t, binary_pred)

/* ---- the other element types ------------------------------------------ */

/* v rounded to the narrow float type t (bf16, f16, f8) and back: what a
 * reducer computing in t keeps after each step. */
static inline float round_to(hs_dtype t, float v)
{
    switch (t) {
    case HS_BF16: return elem_bf16_to_f32(elem_f32_to_bf16(v));
    case HS_F16: return elem_f16_to_f32(elem_f32_to_f16(v));
    default: return (float)elem_small_decode(t, elem_small_encode(t, v));
    }
}

/* Accumulates in the wide type W with the element function FN; ROUND
 * narrows after every step (a narrow float's reducer rounds each add). */
#define REDUCE_WIDE(W, FN, ROUND)                                          \
    do {                                                                   \
        W *acc = (W *)wide_acc, w0;                                        \
        const W *v = buf;                                                  \
        memcpy(&w0, winit, sizeof w0);                                     \
        if (cols) {                                                        \
            for (int64_t j = 0; j < outer; j++)                            \
                acc[j] = w0;                                               \
            for (int64_t r = 0; r < red; r++)                              \
                for (int64_t j0 = 0; j0 < outer; j0 += ELEM_CHUNK) {       \
                    int64_t m = outer - j0 < ELEM_CHUNK ? outer - j0       \
                                                        : ELEM_CHUNK;      \
                    elem_load(t, a + (r * outer + j0) * es, buf, m);       \
                    for (int64_t i = 0; i < m; i++)                        \
                        acc[j0 + i] = ROUND(FN(op, acc[j0 + i], v[i]));    \
                }                                                          \
        } else {                                                           \
            for (int64_t o = 0; o < outer; o++) {                          \
                W s = w0;                                                  \
                for (int64_t j0 = 0; j0 < red; j0 += ELEM_CHUNK) {         \
                    int64_t m = red - j0 < ELEM_CHUNK ? red - j0           \
                                                      : ELEM_CHUNK;        \
                    elem_load(t, a + (o * red + j0) * es, buf, m);         \
                    for (int64_t i = 0; i < m; i++)                        \
                        s = ROUND(FN(op, s, v[i]));                        \
                }                                                          \
                acc[o] = s;                                                \
            }                                                              \
        }                                                                  \
    } while (0)

#define NO_ROUND(v) (v)
#define ROUND_T(v) round_to(t, (v))

/* A fast-path reducer (add, multiply, maximum, minimum, and, or) at a type
 * other than f32, s32, s64 and pred: chunks of the input are widened and
 * accumulated in the wide type, in the order of the plain loops above.
 * Integers wrap at their width when stored (the same result as wrapping at
 * every step); f64 is exact double arithmetic; bf16, f16 and the f8 types
 * round to their type after every step, as the HLO reducer computing in
 * that type does. False when out of memory. */
static bool reduce_wide(hs_opcode op, bool cols, hs_dtype t, const char *a,
                        const void *init, void *y, int64_t outer,
                        int64_t red)
{
    hs_dtype w = elem_wide(t);
    int es = elem_bytes(t);
    unsigned char winit[8];
    /* The accumulators and a chunk of widened input, in memory of no
     * declared type (read as the wide type). */
    char *wide_acc = malloc((size_t)(outer > 0 ? outer : 1) * 8 +
                            ELEM_CHUNK * 8);
    if (!wide_acc)
        return false;
    void *buf = wide_acc + (outer > 0 ? outer : 1) * 8;
    elem_load(t, init, winit, 1);
    switch (w) {
    case HS_F32:
        if (op == HS_OP_AND || op == HS_OP_OR)
            break; /* not float operations; never asked */
        REDUCE_WIDE(float, binary_f32, ROUND_T);
        break;
    case HS_F64:
        if (op == HS_OP_AND || op == HS_OP_OR)
            break;
        REDUCE_WIDE(double, binary_f64, NO_ROUND);
        break;
    case HS_S64: REDUCE_WIDE(int64_t, binary_s64, NO_ROUND); break;
    default: REDUCE_WIDE(uint64_t, binary_u64, NO_ROUND); break;
    }
    elem_store(t, w, wide_acc, y, outer);
    free(wide_acc);
    return true;
}

/* The interpreted path: acc = reducer(acc, x) per element. */
static hs_status reduce_interpreted(dev_ctx *x, const dev_step *s,
                                    const char *a, const dev_val *init,
                                    char *y, int64_t outer, int64_t red,
                                    bool cols, int es)
{
    dev_plan *p = s->callee[0];
    const hs_shape *s0 = &p->comp->params[0]->shape;
    const hs_shape *s1 = &p->comp->params[1]->shape;
    for (int64_t o = 0; o < outer; o++) {
        dev_val *acc = dev_array_new(x, s0);
        if (!acc)
            return x->err->status;
        memcpy(acc->block->data, init->block->data, (size_t)es);
        for (int64_t r = 0; r < red; r++) {
            dev_val *e = dev_array_new(x, s1);
            if (!e) {
                dev_release(x, acc);
                return x->err->status;
            }
            int64_t at = cols ? r * outer + o : o * red + r;
            memcpy(e->block->data, a + at * es, (size_t)es);
            dev_val *args[2] = {acc, e}, *res = NULL;
            hs_status st = dev_eval(x, p, args, 2, &res);
            if (st)
                return st;
            if (res->elems || res->shape->dtype != s0->dtype) {
                dev_release(x, res);
                return dev_unsupported(x, s->in,
                                       "a reducer with a non-scalar result");
            }
            acc = res;
        }
        memcpy(y + o * es, acc->block->data, (size_t)es);
        dev_release(x, acc);
    }
    return HS_OK;
}

/* How the input is walked: as [kept, reduced] rows, as [reduced, kept]
 * columns, or (neither) after a transpose by perm to [kept, reduced]. */
typedef struct reduce_layout {
    int64_t outer, red;
    bool rows, cols;
    int64_t perm[HS_MAX_RANK];
} reduce_layout;

static reduce_layout layout_of(const hs_instruction *in, const hs_shape *is)
{
    reduce_layout l = {.outer = 1, .red = 1};
    bool reduced[HS_MAX_RANK] = {false};
    for (int k = 0; k < in->n_dims; k++)
        if (in->dims[k] >= 0 && in->dims[k] < is->rank)
            reduced[in->dims[k]] = true;
    int64_t kept_dims[HS_MAX_RANK], red_dims[HS_MAX_RANK];
    int nk = 0, nr = 0;
    /* Orders of the non-unit dimensions decide the view. */
    bool kept_seen = false, red_after_kept = false, red_seen = false,
         kept_after_red = false;
    for (int i = 0; i < is->rank; i++) {
        if (reduced[i]) {
            l.red *= is->dims[i];
            red_dims[nr++] = i;
        } else {
            l.outer *= is->dims[i];
            kept_dims[nk++] = i;
        }
        if (is->dims[i] == 1)
            continue;
        if (reduced[i]) {
            red_seen = true;
            red_after_kept |= kept_seen;
        } else {
            kept_seen = true;
            kept_after_red |= red_seen;
        }
    }
    l.rows = !kept_after_red;               /* [kept, reduced] */
    l.cols = !l.rows && !red_after_kept;    /* [reduced, kept] */
    for (int i = 0; i < nk; i++)
        l.perm[i] = kept_dims[i];
    for (int i = 0; i < nr; i++)
        l.perm[nk + i] = red_dims[i];
    return l;
}

/* The input as [kept, reduced] rows or [reduced, kept] columns: the data
 * itself, or a transposed copy in *scratch (freed by the caller). */
static const char *arrange(dev_ctx *x, const reduce_layout *l,
                           const dev_val *av, char **scratch)
{
    *scratch = NULL;
    if (l->rows || l->cols)
        return av->block->data;
    int es = dev_esize(av->shape->dtype);
    size_t bytes = (size_t)(l->outer * l->red * es);
    *scratch = aligned_alloc(64, ((bytes + 63) & ~(size_t)63) + 64);
    if (!*scratch) {
        dev_oom(x);
        return NULL;
    }
    dev_transpose(*scratch, av->block->data, av->shape->dims,
                  av->shape->rank, l->perm, es);
    return *scratch;
}

/* reduce with n > 1 inputs (argmax and friends): the reducer takes
 * (accumulators..., elements...) and returns the tuple of the next
 * accumulators; it is interpreted once per element. */
static hs_status reduce_variadic(dev_ctx *x, const dev_step *s, dev_val **f,
                                 dev_val **out)
{
    const hs_instruction *in = s->in;
    int n = s->n_ops / 2;
    dev_plan *p = s->callee[0];
    const dev_val *a0 = dev_op(s, f, 0);
    reduce_layout l = layout_of(in, a0->shape);
    hs_status st = HS_OK;
    const char *src[HS_MAX_RANK * 4];
    char *scratch[HS_MAX_RANK * 4] = {NULL};
    if (n > HS_MAX_RANK * 4)
        return dev_unsupported(x, in, "a reduce of more than 32 inputs");
    dev_val *t = dev_tuple_new(x, &in->shape, n);
    if (!t)
        return x->err->status;
    for (int k = 0; k < n && !st; k++) {
        src[k] = arrange(x, &l, dev_op(s, f, k), &scratch[k]);
        t->elems[k] = src[k] ? dev_array_new(x, &in->shape.elems[k]) : NULL;
        if (!t->elems[k])
            st = x->err->status;
    }
    dev_val *acc[HS_MAX_RANK * 4] = {NULL}, *args[HS_MAX_RANK * 8];
    for (int64_t o = 0; o < l.outer && !st; o++) {
        for (int k = 0; k < n; k++) {
            acc[k] = dev_op(s, f, n + k);
            dev_ref(acc[k]);
        }
        for (int64_t r = 0; r < l.red && !st; r++) {
            int64_t at = l.cols ? r * l.outer + o : o * l.red + r;
            for (int k = 0; k < n; k++)
                args[n + k] = NULL;
            for (int k = 0; k < n && !st; k++) {
                const hs_shape *es = &p->comp->params[n + k]->shape;
                int size = dev_esize(es->dtype);
                args[k] = acc[k];
                args[n + k] = dev_array_new(x, es);
                if (args[n + k])
                    memcpy(args[n + k]->block->data, src[k] + at * size,
                           (size_t)size);
                else
                    st = x->err->status;
            }
            if (st) {
                /* The accumulators are released below. */
                for (int k = 0; k < n; k++)
                    dev_release(x, args[n + k]);
                break;
            }
            dev_val *res = NULL;
            st = dev_eval(x, p, args, 2 * n, &res);
            for (int k = 0; k < n; k++)
                acc[k] = NULL; /* consumed by the evaluation */
            if (st)
                break;
            if (!res->elems || res->n != n) {
                dev_release(x, res);
                st = dev_unsupported(x, in, "a reducer that does not return "
                                            "a tuple of its accumulators");
                break;
            }
            for (int k = 0; k < n; k++) {
                acc[k] = res->elems[k];
                dev_ref(acc[k]);
            }
            dev_release(x, res);
        }
        for (int k = 0; k < n; k++) {
            if (!st) {
                int size = dev_esize(t->elems[k]->shape->dtype);
                memcpy((char *)t->elems[k]->block->data + o * size,
                       acc[k]->block->data, (size_t)size);
            }
            dev_release(x, acc[k]);
            acc[k] = NULL;
        }
    }
    for (int k = 0; k < n; k++)
        free(scratch[k]);
    if (st) {
        dev_release(x, t);
        return st;
    }
    *out = t;
    return HS_OK;
}

hs_status dev_k_reduce(dev_ctx *x, const dev_step *s, dev_val **f,
                       dev_val **out)
{
    if (s->n_ops > 2)
        return reduce_variadic(x, s, f, out);
    const hs_instruction *in = s->in;
    const dev_val *av = dev_op(s, f, 0), *iv = dev_op(s, f, 1);
    const hs_shape *is = av->shape;
    hs_dtype t = is->dtype;
    int es = dev_esize(t);
    if (iv->elems || hs_shape_elements(iv->shape) != 1 ||
        iv->shape->dtype != t || in->shape.dtype != t)
        return dev_unsupported(x, in, "a reduce with mixed element types");
    reduce_layout l = layout_of(in, is);
    int64_t outer = l.outer, red = l.red;
    bool cols = l.cols;
    dev_val *v = dev_array_new(x, &in->shape);
    if (!v)
        return x->err->status;
    char *scratch;
    const char *a = arrange(x, &l, av, &scratch);
    if (!a) {
        dev_release(x, v);
        return x->err->status;
    }
    hs_status st = HS_OK;
    void *y = v->block->data;
    const void *init = iv->block->data;
    bool fast_type = t == HS_F32 || t == HS_S32 || t == HS_S64 ||
                     t == HS_PRED;
    bool logical = s->aux == HS_OP_AND || s->aux == HS_OP_OR;
    if (!fast_type && s->aux >= 0 && !(hs_dtype_is_float(t) && logical)) {
        /* The other types: widened, rounded to t at every step. */
        if (!reduce_wide((hs_opcode)s->aux, cols, t, a, init, y, outer,
                         red))
            st = dev_oom(x);
    } else if (fast_type && s->aux >= 0 && (t != HS_F32 || !logical)) {
        hs_opcode op = (hs_opcode)s->aux;
        switch (t) {
        case HS_F32:
            if (cols || !reduce_f32_rows_vector(op, (const float *)a,
                                                *(const float *)init, y,
                                                outer, red))
                reduce_f32(op, cols, (const float *)a, *(const float *)init,
                           y, outer, red);
            break;
        case HS_S32:
            reduce_s32(op, cols, (const int32_t *)a, *(const int32_t *)init,
                       y, outer, red);
            break;
        case HS_S64:
            reduce_s64(op, cols, (const int64_t *)a, *(const int64_t *)init,
                       y, outer, red);
            break;
        default:
            reduce_pred(op, cols, (const uint8_t *)a,
                        *(const uint8_t *)init, y, outer, red);
            break;
        }
    } else {
        st = reduce_interpreted(x, s, a, iv, y, outer, red, cols, es);
    }
    free(scratch);
    if (st) {
        dev_release(x, v);
        return st;
    }
    *out = v;
    return HS_OK;
}
