/*
 * kernels_sort.c - sort: one or more operands sorted together along one
 * dimension by a comparator computation.
 *
 * Every row (the elements along the sorted dimension at one position of
 * the others) is sorted as a permutation of 0..len by a stable merge sort,
 * then each operand is written in that order. Stable for every sort, so
 * is_stable=true is honoured and an unstable sort gives one of the orders
 * XLA allows (the one std::stable_sort gives on XLA's CPU backend).
 *
 * The comparator compare(p0, p1) or compare(p1, p0) of operand 0, LT or GT,
 * (what frontends emit for a plain ascending or descending sort) runs on
 * keys widened once per row: integers as int64/uint64, floats as double
 * with the comparison's own semantics (a NaN compares false), or, for
 * type=TOTALORDER, as the integer of XLA's total order (-NaN < -inf < ...
 * < -0 < +0 < ... < inf < NaN). Any other comparator is interpreted once
 * per comparison with scalar arguments.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "device/device_internal.h"
#include "numerics/element_types.h"

typedef enum key_kind {
    KEY_INTERPRETED,
    KEY_SIGNED,   /* int64 keys, signed comparison */
    KEY_UNSIGNED, /* uint64 keys */
    KEY_FLOAT,    /* double keys, IEEE comparison */
    KEY_TOTAL,    /* int64 keys of the total order of floats */
} key_kind;

typedef struct sort_ctx {
    dev_ctx *x;
    const hs_instruction *in;
    dev_plan *p;
    key_kind kind;
    bool greater; /* GT: descending */
    int n;
    /* the row being sorted: operand k's element j at rows[k] + j * step */
    const char *rows[HS_MAX_RANK];
    int es[HS_MAX_RANK];
    int64_t step;
    void *keys;
    hs_status st;
} sort_ctx;

/* The fast comparator of c, or KEY_INTERPRETED. */
static key_kind fast_key(const hs_computation *c, hs_dtype t, bool *greater)
{
    const hs_instruction *r = c->root;
    if (!r || r->opcode != HS_OP_COMPARE || r->n_operands != 2)
        return KEY_INTERPRETED;
    const hs_instruction *a = r->operands[0], *b = r->operands[1];
    if (a->opcode != HS_OP_PARAMETER || b->opcode != HS_OP_PARAMETER ||
        a->parent != c || b->parent != c)
        return KEY_INTERPRETED;
    bool swapped;
    if (a->index == 0 && b->index == 1)
        swapped = false;
    else if (a->index == 1 && b->index == 0)
        swapped = true;
    else
        return KEY_INTERPRETED;
    if (r->direction != HS_DIR_LT && r->direction != HS_DIR_GT)
        return KEY_INTERPRETED;
    *greater = (r->direction == HS_DIR_GT) != swapped;
    const char *type = r->compare_type;
    switch (elem_class_of(t)) {
    case ELEM_SINT: case ELEM_PRED: return KEY_SIGNED;
    case ELEM_UINT: return KEY_UNSIGNED;
    case ELEM_F32: case ELEM_F64:
        return type && strcmp(type, "TOTALORDER") == 0 ? KEY_TOTAL
                                                       : KEY_FLOAT;
    default: return KEY_INTERPRETED;
    }
}

/* Widens a row of operand 0 into keys. */
static void load_keys(sort_ctx *c, hs_dtype t, int64_t len, void *wide)
{
    /* gather the strided row into a contiguous scratch (after the keys) */
    int es = c->es[0];
    char *packed = (char *)wide + len * 8;
    for (int64_t j = 0; j < len; j++)
        memcpy(packed + j * es, c->rows[0] + j * c->step * es, (size_t)es);
    hs_dtype w = elem_wide(t);
    elem_load(t, packed, wide, len);
    int64_t *ik = c->keys;
    double *dk = c->keys;
    for (int64_t j = 0; j < len; j++) {
        double v = w == HS_F32 ? ((float *)wide)[j]
                   : w == HS_F64 ? ((double *)wide)[j] : 0;
        switch (c->kind) {
        case KEY_FLOAT: dk[j] = v; break;
        case KEY_TOTAL: {
            int64_t bits;
            memcpy(&bits, &v, 8); /* the double holds the value exactly */
            ik[j] = bits < 0 ? bits ^ INT64_MAX : bits;
            break;
        }
        case KEY_SIGNED:
            ik[j] = w == HS_PRED ? ((uint8_t *)wide)[j]
                                 : ((int64_t *)wide)[j];
            break;
        default: ik[j] = ((int64_t *)wide)[j]; break;
        }
    }
}

static bool interpreted_less(sort_ctx *c, int64_t a, int64_t b)
{
    dev_val *args[2 * HS_MAX_RANK];
    const hs_computation *comp = c->p->comp;
    for (int k = 0; k < 2 * c->n; k++) {
        int64_t j = k % 2 ? b : a;
        int op = k / 2;
        args[k] = dev_scalar_of(c->x, &comp->params[k]->shape,
                                c->rows[op] + j * c->step * c->es[op]);
        if (!args[k]) {
            for (int i = 0; i < k; i++)
                dev_release(c->x, args[i]);
            c->st = c->x->err->status;
            return false;
        }
    }
    dev_val *res = NULL;
    if ((c->st = dev_eval(c->x, c->p, args, 2 * c->n, &res)))
        return false;
    bool less = false;
    if (res->elems || res->shape->dtype != HS_PRED)
        c->st = dev_unsupported(c->x, c->in, "a comparator that does not "
                                             "return pred[]");
    else
        less = *(const uint8_t *)res->block->data != 0;
    dev_release(c->x, res);
    return less;
}

/* comparator(element a, element b): a sorts before b. */
static bool less(sort_ctx *c, int64_t a, int64_t b)
{
    if (c->greater) {
        int64_t t = a;
        a = b;
        b = t;
    }
    switch (c->kind) {
    case KEY_FLOAT: return ((double *)c->keys)[a] < ((double *)c->keys)[b];
    case KEY_UNSIGNED:
        return ((uint64_t *)c->keys)[a] < ((uint64_t *)c->keys)[b];
    case KEY_SIGNED: case KEY_TOTAL:
        return ((int64_t *)c->keys)[a] < ((int64_t *)c->keys)[b];
    default: return interpreted_less(c, a, b);
    }
}

/* Stable bottom-up merge sort of perm[0..len) (tmp: len more). */
static void merge_sort(sort_ctx *c, int64_t *perm, int64_t *tmp,
                       int64_t len)
{
    int64_t *src = perm, *dst = tmp;
    for (int64_t w = 1; w < len && !c->st; w *= 2) {
        for (int64_t lo = 0; lo < len; lo += 2 * w) {
            int64_t mid = lo + w < len ? lo + w : len;
            int64_t hi = lo + 2 * w < len ? lo + 2 * w : len;
            int64_t i = lo, j = mid, k = lo;
            /* the right element goes first only when strictly before */
            while (i < mid && j < hi)
                dst[k++] = less(c, src[j], src[i]) ? src[j++] : src[i++];
            while (i < mid)
                dst[k++] = src[i++];
            while (j < hi)
                dst[k++] = src[j++];
        }
        int64_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != perm)
        memcpy(perm, src, (size_t)len * sizeof *perm);
}

hs_status dev_k_sort(dev_ctx *x, const dev_step *s, dev_val **f,
                     dev_val **out)
{
    const hs_instruction *in = s->in;
    int n = in->n_operands;
    if (n < 1 || n > HS_MAX_RANK || !s->callee[0] || in->n_dims != 1)
        return dev_unsupported(x, in, "a sort without operands, one "
                                      "dimension and a comparator");
    const hs_shape *sh = dev_op(s, f, 0)->shape;
    for (int k = 0; k < n; k++)
        if (dev_op(s, f, k)->elems)
            return dev_unsupported(x, in, "a sort of a tuple");
    int dim = (int)in->dims[0];
    int64_t len = sh->rank ? sh->dims[dim] : 1, outer = 1, inner = 1;
    for (int k = 0; k < dim; k++)
        outer *= sh->dims[k];
    for (int k = dim + 1; k < sh->rank; k++)
        inner *= sh->dims[k];
    sort_ctx c = {.x = x, .in = in, .p = s->callee[0], .n = n,
                  .step = inner};
    c.kind = fast_key(c.p->comp, sh->dtype, &c.greater);
    dev_val *res[HS_MAX_RANK] = {NULL};
    for (int k = 0; k < n; k++) {
        const hs_shape *rs = n == 1 ? &in->shape : &in->shape.elems[k];
        if (!(res[k] = dev_array_new(x, rs))) {
            c.st = x->err->status;
            break;
        }
        c.es[k] = dev_esize(rs->dtype);
    }
    /* the permutation, the merge's scratch and the keys; an empty
     * operand sorts nothing, however long its sorted dimension */
    if (hs_shape_elements(sh) == 0)
        outer = inner = len = 0;
    int64_t *perm = c.st ? NULL : malloc((size_t)(len ? len : 1) * 24);
    if (!c.st && !perm)
        c.st = dev_oom(x);
    int64_t *tmp = perm + len;
    c.keys = tmp + len;
    /* a row widened, then its packed source */
    double *wide_buf = NULL;
    if (!c.st && c.kind != KEY_INTERPRETED &&
        !(wide_buf = malloc((size_t)(len ? len : 1) * 16)))
        c.st = dev_oom(x);
    for (int64_t o = 0; o < outer && !c.st; o++)
        for (int64_t i = 0; i < inner && !c.st; i++) {
            int64_t base = o * len * inner + i;
            for (int k = 0; k < n; k++)
                c.rows[k] = (const char *)dev_op(s, f, k)->block->data +
                            base * c.es[k];
            if (c.kind != KEY_INTERPRETED)
                load_keys(&c, sh->dtype, len, wide_buf);
            for (int64_t j = 0; j < len; j++)
                perm[j] = j;
            merge_sort(&c, perm, tmp, len);
            for (int k = 0; k < n && !c.st; k++) {
                char *y = (char *)res[k]->block->data + base * c.es[k];
                for (int64_t j = 0; j < len; j++)
                    memcpy(y + j * inner * c.es[k],
                           c.rows[k] + perm[j] * inner * c.es[k],
                           (size_t)c.es[k]);
            }
        }
    free(perm);
    free(wide_buf);
    dev_val *y = NULL;
    if (!c.st && n > 1) {
        if (!(y = dev_tuple_new(x, &in->shape, n)))
            c.st = x->err->status;
        for (int k = 0; k < n && !c.st; k++) {
            y->elems[k] = res[k];
            res[k] = NULL;
        }
    } else if (!c.st) {
        y = res[0];
        res[0] = NULL;
    }
    for (int k = 0; k < n; k++)
        if (res[k])
            dev_release(x, res[k]);
    if (c.st)
        return c.st;
    *out = y;
    return HS_OK;
}
