/*
 * infer.c - shape inference, one rule per opcode family.
 *
 * The tracer calls hs_infer_shape for every instruction it creates and the
 * verifier calls it for every instruction it checks, so the common rules
 * (element-wise, broadcast, reshape, dot) avoid formatting and allocation on
 * success: messages are only built when a rule fails.
 *
 * Rules follow XLA's ShapeInference, including its leniency: floating-point
 * operands of different precision may be mixed in element-wise ops, dot and
 * convert take their result type from the instruction's written shape
 * (preferred_element_type), and results use the default layout in device
 * memory. Attributes that only the written shape carries (the target type of
 * convert, the result dimensions of broadcast, reshape and iota) are read from
 * i->shape.
 */
#include "hloscope/hs_infer.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>


/* ------------------------------------------------------------------------ */
/* Helpers                                                                  */
/* ------------------------------------------------------------------------ */

/* A shape rendered for an error message. Returned by value so that it can be
 * used inline as a printf argument (the temporary lives until the end of the
 * full expression). */
typedef struct shape_text {
    char s[160];
} shape_text;

static shape_text text_of(const hs_shape *s)
{
    shape_text t;
    hs_shape_print(s, false, t.s, sizeof t.s);
    return t;
}
#define SHAPE_TEXT(shape) (text_of(shape).s)

static hs_status fail(hs_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static hs_status fail(hs_error *err, const char *fmt, ...)
{
    char buf[sizeof err->message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    hs_error_set(err, HS_ERR_SHAPE, "%s", buf);
    return HS_ERR_SHAPE;
}

static hs_status unsupported(const hs_instruction *i, hs_error *err)
{
    hs_error_set(err, HS_ERR_UNSUPPORTED, "%s: no shape inference rule",
                 hs_opcode_name(i->opcode));
    return HS_ERR_UNSUPPORTED;
}

static bool same_dims(const hs_shape *a, const hs_shape *b)
{
    if (a->rank != b->rank)
        return false;
    for (int k = 0; k < a->rank; k++)
        if (a->dims[k] != b->dims[k])
            return false;
    return true;
}

static bool is_integer(hs_dtype t) { return t >= HS_S2 && t <= HS_U64; }

static bool is_real_float(hs_dtype t)
{
    return t >= HS_F8E4M3FN && t <= HS_F64;
}

static bool is_float_or_complex(hs_dtype t)
{
    return is_real_float(t) || t == HS_C64 || t == HS_C128;
}

static bool is_array_type(hs_dtype t)
{
    return (int)t >= 0 && (int)t < (int)HS_TUPLE && t != HS_TOKEN;
}

/* XLA's SameElementTypeIgnoringFpPrecision. */
static bool same_type_ignoring_fp(hs_dtype a, hs_dtype b)
{
    return a == b || (is_real_float(a) && is_real_float(b));
}

/* XLA's HigherPrecisionElementType for two types that passed the check
 * above. */
static hs_dtype higher_precision(hs_dtype a, hs_dtype b)
{
    return hs_dtype_bits(b) > hs_dtype_bits(a) ? b : a;
}

static void set_array(hs_shape *out, hs_dtype t, int rank,
                      const int64_t *dims)
{
    *out = hs_shape_make(t, rank, dims);
}

/* Operand k as an array, or an error naming the operand. */
static hs_status array_operand(const hs_instruction *i, int k,
                               const hs_shape **s, hs_error *err)
{
    const hs_shape *shape = &i->operands[k]->shape;
    if (shape->dtype == HS_TUPLE || shape->dtype == HS_TOKEN)
        return fail(err, "%s: operand %d must be an array, got %s",
                    hs_opcode_name(i->opcode), k, SHAPE_TEXT(shape));
    *s = shape;
    return HS_OK;
}

/* Checks that dimension numbers are in [0, rank) and distinct. what names
 * them in messages ("dimension", "contracting dimension", ...). */
static hs_status check_dim_list(const hs_instruction *i, const char *what,
                                const int64_t *dims, int n, int rank,
                                const hs_shape *of, bool *used,
                                hs_error *err)
{
    if (n > 0 && !dims)
        return fail(err, "%s: %d %ss declared but none given",
                    hs_opcode_name(i->opcode), n, what);
    for (int k = 0; k < n; k++) {
        int64_t d = dims[k];
        if (d < 0 || d >= rank)
            return fail(err, "%s: %s %lld is out of range for %s",
                        hs_opcode_name(i->opcode), what, (long long)d,
                        SHAPE_TEXT(of));
        if (used[d])
            return fail(err, "%s: %s %lld is listed twice",
                        hs_opcode_name(i->opcode), what, (long long)d);
        used[d] = true;
    }
    return HS_OK;
}

/* ------------------------------------------------------------------------ */
/* Element-wise                                                             */
/* ------------------------------------------------------------------------ */

typedef enum operand_kind {
    KIND_ANY,     /* any array type */
    KIND_FLOAT,   /* floating point or complex */
    KIND_LOGICAL, /* pred or integer */
} operand_kind;

static hs_status check_kind(const hs_instruction *i, const hs_shape *s,
                            operand_kind kind, hs_error *err)
{
    if (kind == KIND_FLOAT && !is_float_or_complex(s->dtype))
        return fail(err, "%s: expects a floating-point operand, got %s",
                    hs_opcode_name(i->opcode), SHAPE_TEXT(s));
    if (kind == KIND_LOGICAL && s->dtype != HS_PRED && !is_integer(s->dtype))
        return fail(err, "%s: expects pred or integer operands, got %s",
                    hs_opcode_name(i->opcode), SHAPE_TEXT(s));
    return HS_OK;
}

static hs_status infer_unary(const hs_instruction *i, operand_kind kind,
                             hs_shape *out, hs_error *err)
{
    const hs_shape *x = NULL;
    hs_status st = array_operand(i, 0, &x, err);
    if (st == HS_OK)
        st = check_kind(i, x, kind, err);
    if (st != HS_OK)
        return st;
    set_array(out, x->dtype, x->rank, x->dims);
    return HS_OK;
}

static hs_status infer_convert(const hs_instruction *i, hs_shape *out,
                               hs_error *err)
{
    const hs_shape *x = NULL;
    hs_status st = array_operand(i, 0, &x, err);
    if (st != HS_OK)
        return st;
    hs_dtype to = i->shape.dtype;
    if (!is_array_type(to))
        return fail(err, "%s: target element type must be an array type",
                    hs_opcode_name(i->opcode));
    if (i->opcode == HS_OP_BITCAST_CONVERT &&
        hs_dtype_bits(to) != hs_dtype_bits(x->dtype))
        return unsupported(i, err); /* adds or removes a minor dimension */
    set_array(out, to, x->rank, x->dims);
    return HS_OK;
}

/* Binary element-wise ops: dimensions must match exactly (HLO has no
 * implicit broadcasting). */
static hs_status infer_binary(const hs_instruction *i, operand_kind kind,
                              hs_shape *out, hs_error *err)
{
    const hs_shape *x = NULL, *y = NULL;
    hs_status st = array_operand(i, 0, &x, err);
    if (st == HS_OK)
        st = array_operand(i, 1, &y, err);
    if (st != HS_OK)
        return st;
    const char *name = hs_opcode_name(i->opcode);
    if (!same_dims(x, y))
        return fail(err, "%s: operand shapes %s and %s differ", name,
                    SHAPE_TEXT(x), SHAPE_TEXT(y));
    if (kind == KIND_LOGICAL ? x->dtype != y->dtype
                             : !same_type_ignoring_fp(x->dtype, y->dtype))
        return fail(err, "%s: operand element types differ: %s and %s",
                    name, SHAPE_TEXT(x), SHAPE_TEXT(y));
    if ((st = check_kind(i, x, kind, err)) != HS_OK)
        return st;
    hs_dtype t = i->opcode == HS_OP_COMPARE
                     ? HS_PRED
                     : higher_precision(x->dtype, y->dtype);
    set_array(out, t, x->rank, x->dims);
    return HS_OK;
}

static hs_status infer_select(const hs_instruction *i, hs_shape *out,
                              hs_error *err)
{
    const hs_shape *p = NULL, *t = NULL, *f = NULL;
    hs_status st = array_operand(i, 0, &p, err);
    if (st == HS_OK)
        st = array_operand(i, 1, &t, err);
    if (st == HS_OK)
        st = array_operand(i, 2, &f, err);
    if (st != HS_OK)
        return st;
    if (p->dtype != HS_PRED)
        return fail(err, "select: predicate must be pred, got %s",
                    SHAPE_TEXT(p));
    if (!same_dims(t, f) || !same_type_ignoring_fp(t->dtype, f->dtype))
        return fail(err, "select: on_true %s and on_false %s differ",
                    SHAPE_TEXT(t), SHAPE_TEXT(f));
    /* A scalar predicate is the old form, still found in dumps. */
    if (p->rank != 0 && !same_dims(p, t))
        return fail(err,
                    "select: predicate %s does not match the operands' "
                    "shape %s",
                    SHAPE_TEXT(p), SHAPE_TEXT(t));
    set_array(out, higher_precision(t->dtype, f->dtype), t->rank, t->dims);
    return HS_OK;
}

static hs_status infer_clamp(const hs_instruction *i, hs_shape *out,
                             hs_error *err)
{
    const hs_shape *lo = NULL, *x = NULL, *hi = NULL;
    hs_status st = array_operand(i, 0, &lo, err);
    if (st == HS_OK)
        st = array_operand(i, 1, &x, err);
    if (st == HS_OK)
        st = array_operand(i, 2, &hi, err);
    if (st != HS_OK)
        return st;
    const hs_shape *bounds[2] = {lo, hi};
    static const char *const names[2] = {"min", "max"};
    for (int k = 0; k < 2; k++) {
        const hs_shape *b = bounds[k];
        if (b->rank != 0 && !same_dims(b, x))
            return fail(err,
                        "clamp: %s %s must be a scalar or match the "
                        "operand %s",
                        names[k], SHAPE_TEXT(b), SHAPE_TEXT(x));
        if (!same_type_ignoring_fp(b->dtype, x->dtype))
            return fail(err, "clamp: %s %s and operand %s differ in type",
                        names[k], SHAPE_TEXT(b), SHAPE_TEXT(x));
    }
    set_array(out, x->dtype, x->rank, x->dims);
    return HS_OK;
}

/* ------------------------------------------------------------------------ */
/* Data movement                                                            */
/* ------------------------------------------------------------------------ */

static hs_status written_array(const hs_instruction *i, hs_error *err)
{
    if (!is_array_type(i->shape.dtype) || i->shape.rank < 0 ||
        i->shape.rank > HS_MAX_RANK)
        return fail(err, "%s: result must be an array shape",
                    hs_opcode_name(i->opcode));
    for (int k = 0; k < i->shape.rank; k++)
        if (i->shape.dims[k] < 0)
            return fail(err, "%s: result dimension %d has negative size",
                        hs_opcode_name(i->opcode), k);
    return HS_OK;
}

static hs_status infer_iota(const hs_instruction *i, hs_shape *out,
                            hs_error *err)
{
    hs_status st = written_array(i, err);
    if (st != HS_OK)
        return st;
    if (i->n_dims != 1 || !i->dims)
        return fail(err, "iota: needs exactly one iota_dimension");
    if (i->dims[0] < 0 || i->dims[0] >= i->shape.rank)
        return fail(err, "iota: iota_dimension %lld is out of range for %s",
                    (long long)i->dims[0], SHAPE_TEXT(&i->shape));
    set_array(out, i->shape.dtype, i->shape.rank, i->shape.dims);
    return HS_OK;
}

/* broadcast: operand dimension k becomes output dimension dims[k]; the
 * output dimensions come from the written shape. */
static hs_status infer_broadcast(const hs_instruction *i, hs_shape *out,
                                 hs_error *err)
{
    const hs_shape *x = NULL;
    hs_status st = array_operand(i, 0, &x, err);
    if (st == HS_OK)
        st = written_array(i, err);
    if (st != HS_OK)
        return st;
    const hs_shape *o = &i->shape;
    if (i->n_dims != x->rank)
        return fail(err,
                    "broadcast: operand %s has rank %d but %d dimensions "
                    "were given",
                    SHAPE_TEXT(x), x->rank, i->n_dims);
    bool used[HS_MAX_RANK] = {false};
    st = check_dim_list(i, "output dimension", i->dims, i->n_dims, o->rank,
                        o, used, err);
    if (st != HS_OK)
        return st;
    for (int k = 0; k < x->rank; k++) {
        int64_t d = i->dims[k];
        if (x->dims[k] != o->dims[d])
            return fail(err,
                        "broadcast: operand dimension %d has size %lld but "
                        "output dimension %lld has size %lld",
                        k, (long long)x->dims[k], (long long)d,
                        (long long)o->dims[d]);
    }
    set_array(out, x->dtype, o->rank, o->dims);
    return HS_OK;
}

/* Element count, or -1 when it overflows int64. */
static int64_t checked_elements(const hs_shape *s)
{
    int64_t n = 1;
    for (int k = 0; k < s->rank; k++)
        if (__builtin_mul_overflow(n, s->dims[k], &n))
            return -1;
    return n;
}

static hs_status infer_reshape(const hs_instruction *i, hs_shape *out,
                               hs_error *err)
{
    const hs_shape *x = NULL;
    hs_status st = array_operand(i, 0, &x, err);
    if (st == HS_OK)
        st = written_array(i, err);
    if (st != HS_OK)
        return st;
    int64_t from = checked_elements(x), to = checked_elements(&i->shape);
    if (from != to) {
        hs_shape target = i->shape;
        target.dtype = x->dtype;
        return fail(err,
                    "reshape: cannot reshape %s (%lld elements) to %s "
                    "(%lld elements)",
                    SHAPE_TEXT(x), (long long)from, SHAPE_TEXT(&target),
                    (long long)to);
    }
    set_array(out, x->dtype, i->shape.rank, i->shape.dims);
    return HS_OK;
}

static hs_status infer_transpose(const hs_instruction *i, hs_shape *out,
                                 hs_error *err)
{
    const hs_shape *x = NULL;
    hs_status st = array_operand(i, 0, &x, err);
    if (st != HS_OK)
        return st;
    if (i->n_dims != x->rank)
        return fail(err,
                    "transpose: permutation has %d entries but the operand "
                    "%s has rank %d",
                    i->n_dims, SHAPE_TEXT(x), x->rank);
    bool used[HS_MAX_RANK] = {false};
    st = check_dim_list(i, "permutation entry", i->dims, i->n_dims, x->rank,
                        x, used, err);
    if (st != HS_OK)
        return st;
    int64_t dims[HS_MAX_RANK];
    for (int k = 0; k < x->rank; k++)
        dims[k] = x->dims[i->dims[k]];
    set_array(out, x->dtype, x->rank, dims);
    return HS_OK;
}

static hs_status infer_slice(const hs_instruction *i, hs_shape *out,
                             hs_error *err)
{
    const hs_shape *x = NULL;
    hs_status st = array_operand(i, 0, &x, err);
    if (st != HS_OK)
        return st;
    const hs_slice_dims *s = i->slice;
    if (!s)
        return fail(err, "slice: missing slice={...} attribute");
    if (s->rank != x->rank)
        return fail(err,
                    "slice: %d dimensions given but the operand %s has rank "
                    "%d",
                    s->rank, SHAPE_TEXT(x), x->rank);
    int64_t dims[HS_MAX_RANK];
    for (int k = 0; k < x->rank; k++) {
        int64_t b = s->start[k], e = s->limit[k], step = s->stride[k];
        if (step < 1)
            return fail(err, "slice: dimension %d has stride %lld (must be "
                             ">= 1)",
                        k, (long long)step);
        if (b < 0 || b > e || e > x->dims[k])
            return fail(err,
                        "slice: dimension %d has start %lld and limit %lld "
                        "but the operand's size is %lld",
                        k, (long long)b, (long long)e,
                        (long long)x->dims[k]);
        dims[k] = e == b ? 0 : (e - b - 1) / step + 1;
    }
    set_array(out, x->dtype, x->rank, dims);
    return HS_OK;
}

/* pad: lo + n + (n - 1) * interior + hi per dimension, each term checked
 * (padding values are user text and may be anything int64 holds). */
static hs_status infer_pad(const hs_instruction *i, hs_shape *out,
                           hs_error *err)
{
    const hs_shape *x = NULL, *v = NULL;
    hs_status st = array_operand(i, 0, &x, err);
    if (st == HS_OK)
        st = array_operand(i, 1, &v, err);
    if (st != HS_OK)
        return st;
    if (v->rank != 0 || !same_type_ignoring_fp(v->dtype, x->dtype))
        return fail(err, "pad: padding value %s must be a scalar of the "
                         "operand's type %s",
                    SHAPE_TEXT(v), hs_dtype_name(x->dtype));
    hs_padding pad;
    if ((st = hs_instruction_padding(i, x->rank, &pad, err)) != HS_OK)
        return st;
    int64_t dims[HS_MAX_RANK];
    for (int k = 0; k < x->rank; k++) {
        int64_t n = x->dims[k], d = 0;
        bool over = n > 0 &&
                    __builtin_mul_overflow(n - 1, pad.interior[k], &d);
        over = over || __builtin_add_overflow(d, n, &d) ||
               __builtin_add_overflow(d, pad.lo[k], &d) ||
               __builtin_add_overflow(d, pad.hi[k], &d);
        if (over || d < 0)
            return fail(err,
                        "pad: dimension %d of %s padded by %lld_%lld_%lld "
                        "gives %s size",
                        k, SHAPE_TEXT(x), (long long)pad.lo[k],
                        (long long)pad.hi[k], (long long)pad.interior[k],
                        over ? "an overflowing" : "a negative");
        dims[k] = d;
    }
    set_array(out, x->dtype, x->rank, dims);
    return HS_OK;
}

static hs_status infer_concatenate(const hs_instruction *i, hs_shape *out,
                                   hs_error *err)
{
    if (i->n_operands < 1)
        return fail(err, "concatenate: needs at least one operand");
    if (i->n_dims != 1 || !i->dims)
        return fail(err, "concatenate: needs exactly one dimension");
    const hs_shape *first = NULL;
    hs_status st = array_operand(i, 0, &first, err);
    if (st != HS_OK)
        return st;
    int64_t d = i->dims[0];
    if (d < 0 || d >= first->rank)
        return fail(err, "concatenate: dimension %lld is out of range for %s",
                    (long long)d, SHAPE_TEXT(first));
    int64_t dims[HS_MAX_RANK];
    memcpy(dims, first->dims, sizeof dims);
    hs_dtype t = first->dtype;
    for (int k = 1; k < i->n_operands; k++) {
        const hs_shape *x = NULL;
        if ((st = array_operand(i, k, &x, err)) != HS_OK)
            return st;
        bool ok = x->rank == first->rank &&
                  same_type_ignoring_fp(x->dtype, first->dtype);
        for (int j = 0; ok && j < x->rank; j++)
            ok = j == d || x->dims[j] == first->dims[j];
        if (!ok)
            return fail(err,
                        "concatenate: operand %d %s does not match operand 0 "
                        "%s outside dimension %lld",
                        k, SHAPE_TEXT(x), SHAPE_TEXT(first), (long long)d);
        if (__builtin_add_overflow(dims[d], x->dims[d], &dims[d]))
            return fail(err, "concatenate: dimension %lld overflows after "
                             "operand %d",
                        (long long)d, k);
        t = higher_precision(t, x->dtype);
    }
    set_array(out, t, first->rank, dims);
    return HS_OK;
}

static hs_status infer_reverse(const hs_instruction *i, hs_shape *out,
                               hs_error *err)
{
    const hs_shape *x = NULL;
    hs_status st = array_operand(i, 0, &x, err);
    if (st != HS_OK)
        return st;
    bool used[HS_MAX_RANK] = {false};
    if (i->n_dims > x->rank)
        return fail(err, "reverse: %d dimensions given for %s", i->n_dims,
                    SHAPE_TEXT(x));
    st = check_dim_list(i, "dimension", i->dims, i->n_dims, x->rank, x,
                        used, err);
    if (st != HS_OK)
        return st;
    set_array(out, x->dtype, x->rank, x->dims);
    return HS_OK;
}

/* Start indices of dynamic-slice / dynamic-update-slice: rank scalar
 * integers from operand first on, or (the old form) one integer vector. */
static hs_status check_start_indices(const hs_instruction *i, int first,
                                     int rank, hs_error *err)
{
    const char *name = hs_opcode_name(i->opcode);
    int n = i->n_operands - first;
    if (n == 1 && rank != 1) {
        const hs_shape *v = &i->operands[first]->shape;
        if (v->rank == 1 && v->dims[0] == rank && is_integer(v->dtype))
            return HS_OK;
    }
    if (n != rank)
        return fail(err,
                    "%s: %d start indices given for an operand of rank %d",
                    name, n, rank);
    for (int k = 0; k < n; k++) {
        const hs_shape *s = &i->operands[first + k]->shape;
        if (s->dtype == HS_TUPLE || s->rank != 0 || !is_integer(s->dtype))
            return fail(err,
                        "%s: start index %d must be an integer scalar "
                        "(s32[]), got %s",
                        name, k, SHAPE_TEXT(s));
    }
    return HS_OK;
}

static hs_status infer_dynamic_slice(const hs_instruction *i, hs_shape *out,
                                     hs_error *err)
{
    if (i->n_operands < 1)
        return fail(err, "dynamic-slice: needs an operand");
    const hs_shape *x = NULL;
    hs_status st = array_operand(i, 0, &x, err);
    if (st == HS_OK)
        st = check_start_indices(i, 1, x->rank, err);
    if (st != HS_OK)
        return st;
    if (i->n_dims != x->rank)
        return fail(err,
                    "dynamic-slice: %d slice sizes given but the operand %s "
                    "has rank %d",
                    i->n_dims, SHAPE_TEXT(x), x->rank);
    if (x->rank > 0 && !i->dims)
        return fail(err, "dynamic-slice: missing dynamic_slice_sizes");
    for (int k = 0; k < x->rank; k++)
        if (i->dims[k] < 0 || i->dims[k] > x->dims[k])
            return fail(err,
                        "dynamic-slice: slice size %lld of dimension %d does "
                        "not fit the operand's size %lld",
                        (long long)i->dims[k], k, (long long)x->dims[k]);
    set_array(out, x->dtype, x->rank, x->rank > 0 ? i->dims : x->dims);
    return HS_OK;
}

static hs_status infer_dynamic_update_slice(const hs_instruction *i,
                                            hs_shape *out, hs_error *err)
{
    if (i->n_operands < 2)
        return fail(err, "dynamic-update-slice: needs an operand and an "
                         "update");
    const hs_shape *x = NULL, *u = NULL;
    hs_status st = array_operand(i, 0, &x, err);
    if (st == HS_OK)
        st = array_operand(i, 1, &u, err);
    if (st == HS_OK)
        st = check_start_indices(i, 2, x->rank, err);
    if (st != HS_OK)
        return st;
    if (u->rank != x->rank || !same_type_ignoring_fp(u->dtype, x->dtype))
        return fail(err,
                    "dynamic-update-slice: update %s does not match the "
                    "operand %s in rank or type",
                    SHAPE_TEXT(u), SHAPE_TEXT(x));
    for (int k = 0; k < x->rank; k++)
        if (u->dims[k] > x->dims[k])
            return fail(err,
                        "dynamic-update-slice: update dimension %d has size "
                        "%lld but the operand's size is %lld",
                        k, (long long)u->dims[k], (long long)x->dims[k]);
    set_array(out, x->dtype, x->rank, x->dims);
    return HS_OK;
}

/* ------------------------------------------------------------------------ */
/* Dot and reduce                                                           */
/* ------------------------------------------------------------------------ */

static hs_status infer_dot(const hs_instruction *i, hs_shape *out,
                           hs_error *err)
{
    const hs_shape *l = NULL, *r = NULL;
    hs_status st = array_operand(i, 0, &l, err);
    if (st == HS_OK)
        st = array_operand(i, 1, &r, err);
    if (st != HS_OK)
        return st;
    static const hs_dot_dims none;
    const hs_dot_dims *d = i->dot ? i->dot : &none;
    if (d->n_lhs_batch != d->n_rhs_batch)
        return fail(err, "dot: lhs has %d batch dimensions but rhs has %d",
                    d->n_lhs_batch, d->n_rhs_batch);
    if (d->n_lhs_contracting != d->n_rhs_contracting)
        return fail(err,
                    "dot: lhs has %d contracting dimensions but rhs has %d",
                    d->n_lhs_contracting, d->n_rhs_contracting);
    int nb = d->n_lhs_batch, nc = d->n_lhs_contracting;
    if (nb < 0 || nc < 0 || nb + nc > l->rank || nb + nc > r->rank)
        return fail(err,
                    "dot: %d batch and %d contracting dimensions do not fit "
                    "lhs %s and rhs %s",
                    nb, nc, SHAPE_TEXT(l), SHAPE_TEXT(r));
    bool lused[HS_MAX_RANK] = {false}, rused[HS_MAX_RANK] = {false};
    if ((st = check_dim_list(i, "lhs batch dimension", d->lhs_batch, nb,
                             l->rank, l, lused, err)) != HS_OK ||
        (st = check_dim_list(i, "lhs contracting dimension",
                             d->lhs_contracting, nc, l->rank, l, lused,
                             err)) != HS_OK ||
        (st = check_dim_list(i, "rhs batch dimension", d->rhs_batch, nb,
                             r->rank, r, rused, err)) != HS_OK ||
        (st = check_dim_list(i, "rhs contracting dimension",
                             d->rhs_contracting, nc, r->rank, r, rused,
                             err)) != HS_OK)
        return st;
    for (int k = 0; k < nb; k++) {
        int64_t a = l->dims[d->lhs_batch[k]], b = r->dims[d->rhs_batch[k]];
        if (a != b)
            return fail(err,
                        "dot: lhs batch dimension %lld has size %lld but rhs "
                        "batch dimension %lld has size %lld",
                        (long long)d->lhs_batch[k], (long long)a,
                        (long long)d->rhs_batch[k], (long long)b);
    }
    for (int k = 0; k < nc; k++) {
        int64_t a = l->dims[d->lhs_contracting[k]];
        int64_t b = r->dims[d->rhs_contracting[k]];
        if (a != b)
            return fail(err,
                        "dot: lhs contracting dimension %lld has size %lld "
                        "but rhs contracting dimension %lld has size %lld",
                        (long long)d->lhs_contracting[k], (long long)a,
                        (long long)d->rhs_contracting[k], (long long)b);
    }
    int rank = nb + (l->rank - nb - nc) + (r->rank - nb - nc);
    if (rank > HS_MAX_RANK)
        return fail(err, "dot: result rank %d exceeds the maximum of %d",
                    rank, HS_MAX_RANK);
    /* XLA's result order: batch dimensions, then lhs free, then rhs free. */
    int64_t dims[HS_MAX_RANK];
    int n = 0;
    for (int k = 0; k < nb; k++)
        dims[n++] = l->dims[d->lhs_batch[k]];
    for (int k = 0; k < l->rank; k++)
        if (!lused[k])
            dims[n++] = l->dims[k];
    for (int k = 0; k < r->rank; k++)
        if (!rused[k])
            dims[n++] = r->dims[k];
    /* preferred_element_type: the written type wins (bf16 x bf16 -> f32).
     * pred is what a zeroed prototype holds, so it means "not given". */
    hs_dtype t = i->shape.dtype;
    if (!is_array_type(t) || t == HS_PRED)
        t = l->dtype;
    set_array(out, t, rank, dims);
    return HS_OK;
}

/* The reducer's signature: (acc_0..acc_{n-1}, x_0..x_{n-1}) -> acc tuple,
 * with scalar accumulators of the init types. */
static hs_status check_reducer(const hs_instruction *i, int n,
                               hs_error *err)
{
    const char *name = hs_opcode_name(i->opcode);
    if (i->n_called < 1 || !i->called || !i->called[0])
        return fail(err, "%s: missing to_apply computation", name);
    const hs_computation *c = i->called[0];
    if (c->n_params != 2 * n)
        return fail(err,
                    "%s: to_apply computation %s takes %d parameters but %d "
                    "are needed",
                    name, c->name, c->n_params, 2 * n);
    for (int k = 0; k < 2 * n; k++) {
        const hs_instruction *p = c->params[k];
        if (!p)
            return fail(err, "%s: to_apply computation %s has no parameter %d",
                        name, c->name, k);
        const hs_shape *want = &i->operands[n + k % n]->shape;
        const hs_shape *input = &i->operands[k % n]->shape;
        bool ok = p->shape.dtype != HS_TUPLE && p->shape.rank == 0 &&
                  (k < n ? p->shape.dtype == want->dtype
                         : same_type_ignoring_fp(p->shape.dtype,
                                                 input->dtype));
        if (!ok)
            return fail(err,
                        "%s: to_apply computation %s parameter %d is %s but "
                        "a scalar of the %s type %s is needed",
                        name, c->name, k, SHAPE_TEXT(&p->shape),
                        k < n ? "init value" : "input",
                        hs_dtype_name(k < n ? want->dtype : input->dtype));
    }
    if (!c->root)
        return fail(err, "%s: to_apply computation %s has no root", name,
                    c->name);
    const hs_shape *rs = &c->root->shape;
    bool ok;
    if (n == 1) {
        ok = rs->dtype == i->operands[1]->shape.dtype && rs->rank == 0;
    } else {
        ok = rs->dtype == HS_TUPLE && rs->n_elems == n;
        for (int k = 0; ok && k < n; k++)
            ok = rs->elems[k].dtype == i->operands[n + k]->shape.dtype &&
                 rs->elems[k].rank == 0;
    }
    if (!ok)
        return fail(err,
                    "%s: to_apply computation %s returns %s, which does not "
                    "match the init values",
                    name, c->name, SHAPE_TEXT(rs));
    return HS_OK;
}

static hs_status infer_reduce(const hs_instruction *i, hs_arena *a,
                              hs_shape *out, hs_error *err)
{
    if (i->n_operands < 2 || i->n_operands % 2 != 0)
        return fail(err,
                    "reduce: expects inputs then as many init values, got %d "
                    "operands",
                    i->n_operands);
    int n = i->n_operands / 2;
    const hs_shape *x0 = NULL;
    hs_status st = array_operand(i, 0, &x0, err);
    if (st != HS_OK)
        return st;
    for (int k = 0; k < n; k++) {
        const hs_shape *x = NULL, *init = NULL;
        if ((st = array_operand(i, k, &x, err)) != HS_OK ||
            (st = array_operand(i, n + k, &init, err)) != HS_OK)
            return st;
        if (!same_dims(x, x0))
            return fail(err, "reduce: input %d %s does not match input 0 %s",
                        k, SHAPE_TEXT(x), SHAPE_TEXT(x0));
        if (init->rank != 0)
            return fail(err, "reduce: init value %d must be a scalar, got %s",
                        k, SHAPE_TEXT(init));
    }
    bool used[HS_MAX_RANK] = {false};
    if (i->n_dims > x0->rank)
        return fail(err, "reduce: %d dimensions given for %s", i->n_dims,
                    SHAPE_TEXT(x0));
    st = check_dim_list(i, "dimension", i->dims, i->n_dims, x0->rank, x0,
                        used, err);
    if (st == HS_OK)
        st = check_reducer(i, n, err);
    if (st != HS_OK)
        return st;
    int64_t dims[HS_MAX_RANK];
    int rank = 0;
    for (int k = 0; k < x0->rank; k++)
        if (!used[k])
            dims[rank++] = x0->dims[k];
    if (n == 1) {
        set_array(out, i->operands[1]->shape.dtype, rank, dims);
        return HS_OK;
    }
    hs_shape *elems = a ? hs_arena_alloc(a, (size_t)n * sizeof *elems) : NULL;
    if (!elems)
        return hs_error_set(err, HS_ERR_NOMEM, "reduce: out of memory");
    for (int k = 0; k < n; k++)
        set_array(&elems[k], i->operands[n + k]->shape.dtype, rank, dims);
    memset(out, 0, sizeof *out);
    out->dtype = HS_TUPLE;
    out->n_elems = n;
    out->elems = elems;
    return HS_OK;
}

/* ------------------------------------------------------------------------ */
/* Tuples and control flow                                                  */
/* ------------------------------------------------------------------------ */

static hs_status infer_tuple(const hs_instruction *i, hs_arena *a,
                             hs_shape *out, hs_error *err)
{
    int n = i->n_operands;
    hs_shape *elems = NULL;
    if (n > 0) {
        elems = a ? hs_arena_alloc(a, (size_t)n * sizeof *elems) : NULL;
        if (!elems)
            return hs_error_set(err, HS_ERR_NOMEM, "tuple: out of memory");
        for (int k = 0; k < n; k++)
            elems[k] = i->operands[k]->shape;
    }
    memset(out, 0, sizeof *out);
    out->dtype = HS_TUPLE;
    out->n_elems = n;
    out->elems = elems;
    return HS_OK;
}

static hs_status infer_get_tuple_element(const hs_instruction *i,
                                         hs_shape *out, hs_error *err)
{
    const hs_shape *t = &i->operands[0]->shape;
    if (t->dtype != HS_TUPLE)
        return fail(err, "get-tuple-element: operand %s is not a tuple",
                    SHAPE_TEXT(t));
    if (i->index < 0 || i->index >= t->n_elems)
        return fail(err,
                    "get-tuple-element: index %lld is out of range for a "
                    "tuple of %d elements",
                    (long long)i->index, t->n_elems);
    *out = t->elems[i->index];
    return HS_OK;
}

static hs_status check_single_param(const char *what,
                                    const hs_computation *c,
                                    const hs_shape *state, hs_error *err)
{
    if (c->n_params != 1 || !c->params[0])
        return fail(err, "while: %s %s must take exactly one parameter", what,
                    c->name);
    if (!hs_shape_compatible(&c->params[0]->shape, state))
        return fail(err,
                    "while: %s %s parameter %s does not match the loop state "
                    "%s",
                    what, c->name, SHAPE_TEXT(&c->params[0]->shape),
                    SHAPE_TEXT(state));
    if (!c->root)
        return fail(err, "while: %s %s has no root", what, c->name);
    return HS_OK;
}

static hs_status infer_while(const hs_instruction *i, hs_shape *out,
                             hs_error *err)
{
    if (i->n_called != 2 || !i->called || !i->called[0] || !i->called[1])
        return fail(err, "while: needs a condition and a body computation");
    const hs_shape *state = &i->operands[0]->shape;
    const hs_computation *cond = i->called[0], *body = i->called[1];
    hs_status st = check_single_param("condition", cond, state, err);
    if (st == HS_OK)
        st = check_single_param("body", body, state, err);
    if (st != HS_OK)
        return st;
    const hs_shape *cr = &cond->root->shape;
    if (cr->dtype != HS_PRED || cr->rank != 0)
        return fail(err, "while: condition %s returns %s but pred[] is needed",
                    cond->name, SHAPE_TEXT(cr));
    if (!hs_shape_compatible(&body->root->shape, state))
        return fail(err,
                    "while: body %s returns %s but the loop state is %s",
                    body->name, SHAPE_TEXT(&body->root->shape),
                    SHAPE_TEXT(state));
    *out = *state;
    return HS_OK;
}

static hs_status infer_call(const hs_instruction *i, hs_shape *out,
                            hs_error *err)
{
    if (i->n_called != 1 || !i->called || !i->called[0])
        return fail(err, "call: needs exactly one callee computation");
    const hs_computation *c = i->called[0];
    if (c->n_params != i->n_operands)
        return fail(err, "call: %s takes %d parameters but %d arguments given",
                    c->name, c->n_params, i->n_operands);
    for (int k = 0; k < c->n_params; k++) {
        if (!c->params[k])
            return fail(err, "call: %s has no parameter %d", c->name, k);
        if (!hs_shape_compatible(&c->params[k]->shape, &i->operands[k]->shape))
            return fail(err,
                        "call: %s parameter %d is %s but argument %d is %s",
                        c->name, k, SHAPE_TEXT(&c->params[k]->shape), k,
                        SHAPE_TEXT(&i->operands[k]->shape));
    }
    if (!c->root)
        return fail(err, "call: %s has no root", c->name);
    *out = c->root->shape;
    return HS_OK;
}

static hs_status infer_copy(const hs_instruction *i, hs_shape *out)
{
    const hs_shape *x = &i->operands[0]->shape;
    if (x->dtype == HS_TUPLE || i->opcode == HS_OP_OPTIMIZATION_BARRIER)
        *out = *x;
    else
        set_array(out, x->dtype, x->rank, x->dims); /* copy may relayout */
    return HS_OK;
}

/* ------------------------------------------------------------------------ */
/* Dispatch                                                                 */
/* ------------------------------------------------------------------------ */

static hs_status infer_by_opcode(const hs_instruction *i, hs_arena *a,
                                 hs_shape *out, hs_error *err);

/* Every rule's result is checked against the array size limit, so a shape
 * that only overflows once combined (a dot of two large operands, a long
 * concatenation) is refused where it is made. */
hs_status hs_infer_shape(const hs_instruction *i, hs_arena *a, hs_shape *out,
                         hs_error *err)
{
    hs_status st = infer_by_opcode(i, a, out, err);
    if (st != HS_OK)
        return st;
    hs_error e;
    if (hs_shape_check_size(out, &e) != HS_OK)
        return fail(err, "%s: result %s", hs_opcode_name(i->opcode),
                    e.message);
    return HS_OK;
}

static hs_status infer_by_opcode(const hs_instruction *i, hs_arena *a,
                                 hs_shape *out, hs_error *err)
{
    hs_opcode op = i->opcode;
    if ((unsigned)op >= HS_OP_COUNT)
        return fail(err, "opcode %d is not valid", (int)op);
    int arity = hs_opcode_arity(op);
    if (arity >= 0 && i->n_operands != arity)
        return fail(err, "%s: expects %d operands, got %d",
                    hs_opcode_name(op), arity, i->n_operands);
    for (int k = 0; k < i->n_operands; k++)
        if (!i->operands[k])
            return fail(err, "%s: operand %d is missing", hs_opcode_name(op),
                        k);

    switch (op) {
    case HS_OP_IOTA:
        return infer_iota(i, out, err);

    case HS_OP_EXP:
    case HS_OP_EXPM1:
    case HS_OP_LOG:
    case HS_OP_LOG1P:
    case HS_OP_SQRT:
    case HS_OP_RSQRT:
    case HS_OP_TANH:
    case HS_OP_LOGISTIC:
    case HS_OP_ERF:
    case HS_OP_FLOOR:
    case HS_OP_CEIL:
    case HS_OP_COS:
    case HS_OP_SIN:
        return infer_unary(i, KIND_FLOAT, out, err);
    case HS_OP_ABS:
    case HS_OP_NEGATE:
    case HS_OP_SIGN:
        return infer_unary(i, KIND_ANY, out, err);
    case HS_OP_NOT:
        return infer_unary(i, KIND_LOGICAL, out, err);
    case HS_OP_CONVERT:
    case HS_OP_BITCAST_CONVERT:
        return infer_convert(i, out, err);

    case HS_OP_ADD:
    case HS_OP_SUBTRACT:
    case HS_OP_MULTIPLY:
    case HS_OP_DIVIDE:
    case HS_OP_MAXIMUM:
    case HS_OP_MINIMUM:
    case HS_OP_POWER:
    case HS_OP_REMAINDER:
    case HS_OP_COMPARE:
        return infer_binary(i, KIND_ANY, out, err);
    case HS_OP_AND:
    case HS_OP_OR:
    case HS_OP_XOR:
        return infer_binary(i, KIND_LOGICAL, out, err);
    case HS_OP_SELECT:
        return infer_select(i, out, err);
    case HS_OP_CLAMP:
        return infer_clamp(i, out, err);

    case HS_OP_BROADCAST:
        return infer_broadcast(i, out, err);
    case HS_OP_RESHAPE:
        return infer_reshape(i, out, err);
    case HS_OP_TRANSPOSE:
        return infer_transpose(i, out, err);
    case HS_OP_SLICE:
        return infer_slice(i, out, err);
    case HS_OP_CONCATENATE:
        return infer_concatenate(i, out, err);
    case HS_OP_PAD:
        return infer_pad(i, out, err);
    case HS_OP_REVERSE:
        return infer_reverse(i, out, err);
    case HS_OP_DYNAMIC_SLICE:
        return infer_dynamic_slice(i, out, err);
    case HS_OP_DYNAMIC_UPDATE_SLICE:
        return infer_dynamic_update_slice(i, out, err);

    case HS_OP_DOT:
        return infer_dot(i, out, err);
    case HS_OP_REDUCE:
        return infer_reduce(i, a, out, err);

    case HS_OP_TUPLE:
        return infer_tuple(i, a, out, err);
    case HS_OP_GET_TUPLE_ELEMENT:
        return infer_get_tuple_element(i, out, err);
    case HS_OP_WHILE:
        return infer_while(i, out, err);
    case HS_OP_CALL:
        return infer_call(i, out, err);

    case HS_OP_COPY:
    case HS_OP_OPTIMIZATION_BARRIER:
        return infer_copy(i, out);
    case HS_OP_AFTER_ALL:
        *out = hs_shape_scalar(HS_TOKEN);
        return HS_OK;
    case HS_OP_PARTITION_ID:
    case HS_OP_REPLICA_ID:
        *out = hs_shape_scalar(HS_U32);
        return HS_OK;

    /* The written shape is the only source (parameter, constant), or the
     * rule needs attributes the IR keeps as text (pad, gather, ...). */
    default:
        return unsupported(i, err);
    }
}
