/* vjp_elementwise.c - VJP rules of element-wise ops: one rule per family
 * (unary, binary, select, clamp, convert) with the derivative chosen by
 * opcode. Each derivative is written in terms of the forward values x
 * (operands) and y (result), reusing y where that saves work:
 *
 *     exp: y      tanh: 1 - y^2      logistic: y (1 - y)      sqrt: 1 / 2y
 *     rsqrt: -y^3 / 2      erf: 2/sqrt(pi) exp(-x^2)      log: 1 / x
 *
 * Ties of maximum / minimum split the cotangent evenly between the operands
 * (as PyTorch's maximum and JAX's max do). */
#include <math.h>

#include "autodiff/autodiff_internal.h"

#define MUL(b, x, y) hs__ad_bin(b, HS_OP_MULTIPLY, x, y)
#define DIV(b, x, y) hs__ad_bin(b, HS_OP_DIVIDE, x, y)
#define SUB(b, x, y) hs__ad_bin(b, HS_OP_SUBTRACT, x, y)

/* d y / d x for y = op(x), or NULL for an opcode without one. */
static hs_instruction *unary_derivative(hs_builder *b, hs_instruction *y)
{
    hs_instruction *x = y->operands[0];
    switch (y->opcode) {
    case HS_OP_ABS:
        return hs_b_unary(b, HS_OP_SIGN, x);
    case HS_OP_NEGATE:
        return hs__ad_fill(b, -1.0f, &x->shape);
    case HS_OP_EXP:
        return y;
    case HS_OP_EXPM1:
        return hs__ad_scalar_op(b, HS_OP_ADD, y, 1.0f);
    case HS_OP_LOG:
        return DIV(b, hs__ad_fill(b, 1.0f, &x->shape), x);
    case HS_OP_LOG1P:
        return DIV(b, hs__ad_fill(b, 1.0f, &x->shape),
                   hs__ad_scalar_op(b, HS_OP_ADD, x, 1.0f));
    case HS_OP_SQRT:
        return DIV(b, hs__ad_fill(b, 0.5f, &x->shape), y);
    case HS_OP_RSQRT: /* d x^(-1/2) = -x^(-3/2) / 2 = -y^3 / 2 */
        return hs__ad_scalar_op(b, HS_OP_MULTIPLY, MUL(b, MUL(b, y, y), y),
                                -0.5f);
    case HS_OP_TANH:
        return SUB(b, hs__ad_fill(b, 1.0f, &y->shape), MUL(b, y, y));
    case HS_OP_LOGISTIC:
        return MUL(b, y, SUB(b, hs__ad_fill(b, 1.0f, &y->shape), y));
    case HS_OP_ERF: {
        hs_instruction *e = hs_b_unary(
            b, HS_OP_EXP, hs_b_unary(b, HS_OP_NEGATE, MUL(b, x, x)));
        return hs__ad_scalar_op(b, HS_OP_MULTIPLY, e,
                                (float)(2.0 / sqrt(M_PI)));
    }
    case HS_OP_SIN:
        return hs_b_unary(b, HS_OP_COS, x);
    case HS_OP_COS:
        return hs_b_unary(b, HS_OP_NEGATE, hs_b_unary(b, HS_OP_SIN, x));
    case HS_OP_TAN: /* 1 + tan^2 */
        return hs__ad_scalar_op(b, HS_OP_ADD, MUL(b, y, y), 1.0f);
    case HS_OP_CBRT: /* x^(1/3): 1 / (3 y^2) */
        return DIV(b, hs__ad_fill(b, 1.0f / 3.0f, &y->shape), MUL(b, y, y));
    default:
        return NULL;
    }
}

void hs__vjp_unary(hs_vjp *v, hs_instruction *y)
{
    hs_builder *b = hs__vjp_builder(v);
    hs_instruction *gy = hs__vjp_cotangent(v, y);
    if (y->opcode == HS_OP_NEGATE) {
        hs__vjp_acc(v, y->operands[0], hs_b_unary(b, HS_OP_NEGATE, gy));
        return;
    }
    hs_instruction *d = unary_derivative(b, y);
    if (!d) {
        hs__vjp_fail(v, y, HS_ERR_UNSUPPORTED,
                     "autodiff: no derivative for %s (instruction %s)",
                     hs_opcode_name(y->opcode), y->name);
        return;
    }
    hs__vjp_acc(v, y->operands[0], MUL(b, gy, d));
}

/* sign, floor, ceil: piecewise constant, so the gradient is zero (as in
 * JAX and PyTorch); the rule exists so that they are not errors. */
void hs__vjp_zero(hs_vjp *v, hs_instruction *y)
{
    (void)v;
    (void)y;
}

void hs__vjp_convert(hs_vjp *v, hs_instruction *y)
{
    hs_instruction *x = y->operands[0];
    if (!hs_dtype_is_float(x->shape.dtype))
        return; /* from integers: nothing to differentiate */
    hs_instruction *gy = hs__vjp_cotangent(v, y);
    if (x->shape.dtype != gy->shape.dtype)
        gy = hs_b_convert(hs__vjp_builder(v), gy, x->shape.dtype);
    hs__vjp_acc(v, x, gy);
}

/* The share of the cotangent that goes to x in max(x, z) (dir GT) or
 * min(x, z) (dir LT): 1 where x wins, 1/2 on ties, 0 elsewhere. */
static hs_instruction *winner_share(hs_builder *b, hs_direction dir,
                                    hs_instruction *x, hs_instruction *z)
{
    hs_instruction *wins = hs_b_compare(b, dir, x, z);
    hs_instruction *ties = hs_b_compare(b, HS_DIR_EQ, x, z);
    hs_instruction *zero = hs__ad_zeros(b, &x->shape);
    hs_instruction *half =
        hs_b_select(b, ties, hs__ad_fill(b, 0.5f, &x->shape), zero);
    return hs_b_select(b, wins, hs__ad_fill(b, 1.0f, &x->shape), half);
}

/* y = x^z: d/dx = z x^(z-1) (0 where z = 0, as PyTorch), d/dz = y log x
 * (0 where x = 0, as JAX). */
static void vjp_power(hs_vjp *v, hs_instruction *y, hs_instruction *gy)
{
    hs_builder *b = hs__vjp_builder(v);
    hs_instruction *x = y->operands[0], *z = y->operands[1];
    if (hs__vjp_active(v, x)) {
        hs_instruction *d = MUL(b, z,
                                hs_b_binary(b, HS_OP_POWER, x,
                                            hs__ad_scalar_op(b, HS_OP_SUBTRACT,
                                                             z, 1.0f)));
        hs_instruction *z0 =
            hs_b_compare(b, HS_DIR_EQ, z, hs__ad_zeros(b, &z->shape));
        d = hs_b_select(b, z0, hs__ad_zeros(b, &z->shape), d);
        hs__vjp_acc(v, x, MUL(b, gy, d));
    }
    if (hs__vjp_active(v, z)) {
        hs_instruction *x0 =
            hs_b_compare(b, HS_DIR_EQ, x, hs__ad_zeros(b, &x->shape));
        hs_instruction *safe =
            hs_b_select(b, x0, hs__ad_fill(b, 1.0f, &x->shape), x);
        hs__vjp_acc(v, z, MUL(b, gy, MUL(b, y, hs_b_unary(b, HS_OP_LOG, safe))));
    }
}

void hs__vjp_binary(hs_vjp *v, hs_instruction *y)
{
    hs_builder *b = hs__vjp_builder(v);
    hs_instruction *gy = hs__vjp_cotangent(v, y);
    hs_instruction *x = y->operands[0], *z = y->operands[1];
    bool ax = hs__vjp_active(v, x), az = hs__vjp_active(v, z);
    switch (y->opcode) {
    case HS_OP_ADD:
        hs__vjp_acc(v, x, gy);
        hs__vjp_acc(v, z, gy);
        return;
    case HS_OP_SUBTRACT:
        hs__vjp_acc(v, x, gy);
        if (az)
            hs__vjp_acc(v, z, hs_b_unary(b, HS_OP_NEGATE, gy));
        return;
    case HS_OP_MULTIPLY:
        if (x == z) { /* a square: one product instead of two */
            hs__vjp_acc(v, x, MUL(b, hs__ad_scalar_op(b, HS_OP_MULTIPLY, gy,
                                                      2.0f),
                                  x));
            return;
        }
        if (ax)
            hs__vjp_acc(v, x, MUL(b, gy, z));
        if (az)
            hs__vjp_acc(v, z, MUL(b, gy, x));
        return;
    case HS_OP_DIVIDE: /* y = x / z: dy/dz = -x / z^2 = -y / z */
        if (ax)
            hs__vjp_acc(v, x, DIV(b, gy, z));
        if (az)
            hs__vjp_acc(v, z,
                        hs_b_unary(b, HS_OP_NEGATE, DIV(b, MUL(b, gy, y), z)));
        return;
    case HS_OP_MAXIMUM:
    case HS_OP_MINIMUM: {
        hs_direction dir = y->opcode == HS_OP_MAXIMUM ? HS_DIR_GT : HS_DIR_LT;
        hs_instruction *gx = MUL(b, gy, winner_share(b, dir, x, z));
        if (ax)
            hs__vjp_acc(v, x, gx);
        if (az)
            hs__vjp_acc(v, z, SUB(b, gy, gx));
        return;
    }
    case HS_OP_POWER:
        vjp_power(v, y, gy);
        return;
    case HS_OP_ATAN2: { /* atan2(x, z): (z, -x) / (x^2 + z^2) */
        hs_instruction *r = hs__ad_bin(b, HS_OP_ADD, MUL(b, x, x), MUL(b, z, z));
        if (ax)
            hs__vjp_acc(v, x, DIV(b, MUL(b, gy, z), r));
        if (az)
            hs__vjp_acc(v, z,
                        hs_b_unary(b, HS_OP_NEGATE, DIV(b, MUL(b, gy, x), r)));
        return;
    }
    default:
        hs__vjp_fail(v, y, HS_ERR_UNSUPPORTED,
                     "autodiff: no derivative for %s (instruction %s)",
                     hs_opcode_name(y->opcode), y->name);
    }
}

void hs__vjp_select(hs_vjp *v, hs_instruction *y)
{
    hs_builder *b = hs__vjp_builder(v);
    hs_instruction *gy = hs__vjp_cotangent(v, y);
    hs_instruction *p = y->operands[0];
    hs_instruction *zero = NULL;
    for (int k = 1; k <= 2; k++) {
        hs_instruction *x = y->operands[k];
        if (!hs__vjp_active(v, x))
            continue;
        if (!zero)
            zero = hs__ad_zeros(b, &y->shape);
        hs__vjp_acc(v, x, k == 1 ? hs_b_select(b, p, gy, zero)
                                 : hs_b_select(b, p, zero, gy));
    }
}

/* A scalar bound's cotangent is the sum over the elements it bounded. */
static hs_instruction *to_bound(hs_builder *b, hs_instruction *g,
                                const hs_instruction *bound)
{
    if (!g || bound->shape.rank == g->shape.rank)
        return g;
    int64_t all[HS_MAX_RANK];
    for (int k = 0; k < g->shape.rank; k++)
        all[k] = k;
    return hs_b_reduce_sum(b, g, all, g->shape.rank);
}

static hs_instruction *like_x(hs_builder *b, hs_instruction *bound,
                              const hs_instruction *x)
{
    if (bound->shape.rank == x->shape.rank)
        return bound;
    hs_shape s = hs_shape_make(bound->shape.dtype, x->shape.rank,
                               x->shape.dims);
    return hs_b_broadcast(b, bound, &s, NULL, 0);
}

/* clamp(lo, x, hi): the cotangent goes to x where x is inside [lo, hi]
 * (bounds included, as PyTorch), to lo where x < lo, to hi where x > hi. */
void hs__vjp_clamp(hs_vjp *v, hs_instruction *y)
{
    hs_builder *b = hs__vjp_builder(v);
    hs_instruction *gy = hs__vjp_cotangent(v, y);
    hs_instruction *lo = y->operands[0], *x = y->operands[1];
    hs_instruction *hi = y->operands[2];
    hs_instruction *zero = hs__ad_zeros(b, &y->shape);
    if (hs__vjp_active(v, x))
        hs__vjp_acc(v, x,
                    hs_b_select(b, hs_b_compare(b, HS_DIR_EQ, y, x), gy, zero));
    if (hs__vjp_active(v, lo)) {
        hs_instruction *below =
            hs_b_compare(b, HS_DIR_LT, x, like_x(b, lo, x));
        hs__vjp_acc(v, lo, to_bound(b, hs_b_select(b, below, gy, zero), lo));
    }
    if (hs__vjp_active(v, hi)) {
        hs_instruction *above =
            hs_b_compare(b, HS_DIR_GT, x, like_x(b, hi, x));
        hs__vjp_acc(v, hi, to_bound(b, hs_b_select(b, above, gy, zero), hi));
    }
}
