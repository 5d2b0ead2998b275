/* fold.c - constant folding of small f32/s32/pred literals: element-wise
 * ops, and reshape/transpose/broadcast of constants. Semantics follow XLA's
 * evaluator where C would be undefined: integer division by zero gives -1,
 * remainder by zero gives the dividend, INT_MIN / -1 gives INT_MIN, integer
 * arithmetic wraps, float-to-int conversion saturates and maps NaN to 0. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The device's exp and logistic: a folded constant has the bits the
 * device would compute. */
#include "device/vmath.h"
#include "passes/passes_internal.h"

/* A constant, or a broadcast of a scalar constant (read at element 0). */
static bool constant_like(const hs_instruction *i)
{
    if (i->opcode == HS_OP_BROADCAST && i->n_operands == 1)
        return hs__is_constant(i->operands[0]) &&
               i->operands[0]->shape.rank == 0 &&
               i->operands[0]->shape.dtype == i->shape.dtype;
    return hs__is_constant(i);
}

static int64_t wrap32(int64_t v)
{
    return (int32_t)(uint32_t)(uint64_t)v;
}

static double f32_to_s32(double v)
{
    if (isnan(v))
        return 0;
    if (v >= 2147483647.0)
        return 2147483647.0;
    if (v <= -2147483648.0)
        return -2147483648.0;
    return trunc(v);
}

static bool compare(hs_direction d, double a, double b, double *out)
{
    switch (d) {
    case HS_DIR_EQ: *out = a == b; return true;
    case HS_DIR_NE: *out = a != b; return true;
    case HS_DIR_LT: *out = a < b; return true;
    case HS_DIR_LE: *out = a <= b; return true;
    case HS_DIR_GT: *out = a > b; return true;
    case HS_DIR_GE: *out = a >= b; return true;
    default: return false;
    }
}

/* max/min propagate NaN, as XLA's do. */
static float fmax_nan(float a, float b)
{
    return isnan(a) || isnan(b) ? NAN : (a > b ? a : b);
}

static float fmin_nan(float a, float b)
{
    return isnan(a) || isnan(b) ? NAN : (a < b ? a : b);
}

static bool eval_f32(hs_opcode op, float a, float b, float *out)
{
    switch (op) {
    case HS_OP_ABS: *out = fabsf(a); return true;
    case HS_OP_NEGATE: *out = -a; return true;
    case HS_OP_EXP: *out = hs_expf(a); return true;
    case HS_OP_EXPM1: *out = expm1f(a); return true;
    case HS_OP_LOG: *out = logf(a); return true;
    case HS_OP_LOG1P: *out = log1pf(a); return true;
    case HS_OP_SQRT: *out = sqrtf(a); return true;
    case HS_OP_RSQRT: *out = 1.0f / sqrtf(a); return true;
    case HS_OP_TANH: *out = tanhf(a); return true;
    case HS_OP_LOGISTIC: *out = hs_logisticf(a); return true;
    case HS_OP_ERF: *out = erff(a); return true;
    case HS_OP_SIGN: *out = a > 0 ? 1.0f : a < 0 ? -1.0f : a; return true;
    case HS_OP_FLOOR: *out = floorf(a); return true;
    case HS_OP_CEIL: *out = ceilf(a); return true;
    case HS_OP_COS: *out = cosf(a); return true;
    case HS_OP_SIN: *out = sinf(a); return true;
    case HS_OP_ADD: *out = a + b; return true;
    case HS_OP_SUBTRACT: *out = a - b; return true;
    case HS_OP_MULTIPLY: *out = a * b; return true;
    case HS_OP_DIVIDE: *out = a / b; return true;
    case HS_OP_MAXIMUM: *out = fmax_nan(a, b); return true;
    case HS_OP_MINIMUM: *out = fmin_nan(a, b); return true;
    case HS_OP_POWER: *out = powf(a, b); return true;
    case HS_OP_REMAINDER: *out = fmodf(a, b); return true;
    default: return false;
    }
}

static bool eval_s32(hs_opcode op, int64_t a, int64_t b, int64_t *out)
{
    switch (op) {
    case HS_OP_ABS: *out = wrap32(a < 0 ? -a : a); return true;
    case HS_OP_NEGATE: *out = wrap32(-a); return true;
    case HS_OP_SIGN: *out = (a > 0) - (a < 0); return true;
    case HS_OP_NOT: *out = wrap32(~a); return true;
    case HS_OP_ADD: *out = wrap32(a + b); return true;
    case HS_OP_SUBTRACT: *out = wrap32(a - b); return true;
    case HS_OP_MULTIPLY: *out = wrap32(a * b); return true;
    case HS_OP_DIVIDE:
        *out = b == 0 ? -1 : (a == INT32_MIN && b == -1) ? a : a / b;
        return true;
    case HS_OP_REMAINDER:
        *out = b == 0 ? a : (a == INT32_MIN && b == -1) ? 0 : a % b;
        return true;
    case HS_OP_MAXIMUM: *out = a > b ? a : b; return true;
    case HS_OP_MINIMUM: *out = a < b ? a : b; return true;
    case HS_OP_AND: *out = a & b; return true;
    case HS_OP_OR: *out = a | b; return true;
    case HS_OP_XOR: *out = a ^ b; return true;
    default: return false;
    }
}

static bool eval_pred(hs_opcode op, bool a, bool b, bool *out)
{
    switch (op) {
    case HS_OP_NOT: *out = !a; return true;
    case HS_OP_AND: *out = a && b; return true;
    case HS_OP_OR: *out = a || b; return true;
    case HS_OP_XOR: *out = a != b; return true;
    case HS_OP_MAXIMUM: *out = a || b; return true;
    case HS_OP_MINIMUM: *out = a && b; return true;
    default: return false;
    }
}

/* One element of an element-wise op. x[] are the operands' elements (as
 * doubles, exact for f32, s32 and pred); in is the operands' element type
 * (for select: the chosen values'); to is the result's. */
static bool eval(const hs_instruction *i, hs_dtype in, hs_dtype to,
                 const double *x, double *out)
{
    hs_opcode op = i->opcode;
    switch (op) {
    case HS_OP_COMPARE:
        return compare(i->direction, x[0], x[1], out);
    case HS_OP_SELECT:
        *out = x[0] != 0 ? x[1] : x[2];
        return true;
    case HS_OP_CLAMP: /* clamp(lo, x, hi) */
        if (in == HS_F32 && (isnan(x[0]) || isnan(x[1]) || isnan(x[2]))) {
            *out = NAN;
            return true;
        }
        *out = x[1] < x[0] ? x[0] : x[1] > x[2] ? x[2] : x[1];
        return true;
    case HS_OP_CONVERT:
        if (to == HS_PRED)
            *out = x[0] != 0;
        else if (to == HS_S32)
            *out = in == HS_F32 ? f32_to_s32(x[0]) : x[0];
        else
            *out = (float)x[0];
        return true;
    default:
        break;
    }
    if (in == HS_F32) {
        float r;
        if (!eval_f32(op, (float)x[0], (float)x[1], &r))
            return false;
        *out = r;
        return true;
    }
    if (in == HS_S32) {
        int64_t r;
        if (!eval_s32(op, (int64_t)x[0], (int64_t)x[1], &r))
            return false;
        *out = (double)r;
        return true;
    }
    bool r;
    if (!eval_pred(op, x[0] != 0, x[1] != 0, &r))
        return false;
    *out = r;
    return true;
}

static void store(void *data, hs_dtype t, int64_t k, double v)
{
    switch (t) {
    case HS_F32: ((float *)data)[k] = (float)v; break;
    case HS_S32: ((int32_t *)data)[k] = (int32_t)v; break;
    default: ((uint8_t *)data)[k] = v != 0; break;
    }
}

static hs_instruction *fold_elementwise(hs_instruction *i, int64_t n)
{
    if (i->n_operands < 1 || i->n_operands > 3)
        return NULL;
    /* Each operand has n elements, or is a scalar that applies to all (as
     * clamp's bounds may be). Anything else is malformed: not folded. */
    bool splat[3] = {false, false, false};
    for (int o = 0; o < i->n_operands; o++) {
        const hs_instruction *x = i->operands[o];
        if (!constant_like(x))
            return NULL;
        int64_t m = x->opcode == HS_OP_BROADCAST ? n
                                                 : hs_shape_elements(&x->shape);
        if (m != n && m != 1)
            return NULL;
        splat[o] = m == 1;
    }
    if (i->opcode == HS_OP_COMPARE && i->compare_type &&
        strcmp(i->compare_type, "TOTALORDER") == 0)
        return NULL;
    hs_dtype in = i->operands[i->opcode == HS_OP_SELECT ? 1 : 0]->shape.dtype;
    hs_dtype to = i->shape.dtype;
    void *data = malloc((size_t)n * 4);
    if (!data)
        return NULL;
    hs_instruction *r = NULL;
    for (int64_t k = 0; k < n; k++) {
        double x[3] = {0, 0, 0}, v;
        for (int o = 0; o < i->n_operands; o++)
            x[o] = hs__constant_get(i->operands[o], splat[o] ? 0 : k);
        if (!eval(i, in, to, x, &v))
            goto done;
        store(data, to, k, v);
    }
    r = hs__add_constant(i, &i->shape, data);
done:
    free(data);
    return r;
}

/* Reshape, transpose and broadcast only move elements: out element k
 * reads operand element sum(index_d * step[d]) over output dimensions d. */
static hs_instruction *fold_move(hs_instruction *i, int64_t n)
{
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
    size_t esize = (size_t)(hs_dtype_bits(s->dtype) / 8);
    unsigned char *data = malloc((size_t)n * esize);
    if (!data)
        return NULL;
    int64_t idx[HS_MAX_RANK] = {0}, at = 0;
    for (int64_t k = 0; k < n; k++) {
        memcpy(data + (size_t)k * esize,
               (const unsigned char *)src->literal + (size_t)at * esize,
               esize);
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
    hs_instruction *r = hs__add_constant(i, s, data);
    free(data);
    return r;
}

hs_instruction *hs__fold(hs_instruction *i, int64_t max_elements)
{
    if (!hs__foldable_dtype(i->shape.dtype))
        return NULL;
    int64_t n = hs_shape_elements(&i->shape);
    if (n <= 0 || n > max_elements)
        return NULL;
    switch (i->opcode) {
    case HS_OP_RESHAPE:
    case HS_OP_TRANSPOSE:
    case HS_OP_BROADCAST:
        if (i->n_operands != 1 || !hs__is_constant(i->operands[0]))
            return NULL;
        return fold_move(i, n);
    case HS_OP_BITCAST_CONVERT:
    case HS_OP_MAP:
        return NULL;
    default:
        if (!hs_opcode_is_elementwise(i->opcode))
            return NULL;
        return fold_elementwise(i, n);
    }
}
