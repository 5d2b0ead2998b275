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
#include "ir/invariant.h"

#define MUL(b, x, y) hs__ad_bin(b, HS_OP_MULTIPLY, x, y)
#define DIV(b, x, y) hs__ad_bin(b, HS_OP_DIVIDE, x, y)
#define SUB(b, x, y) hs__ad_bin(b, HS_OP_SUBTRACT, x, y)

/* The derivative d y / d x of every float unary op y = op(x) (hs_opcode.h's
 * families UNARY_FLOAT and UNARY_ANY), one line each, in terms of the
 * operand x, the result y and the builder b. ZERO: piecewise constant, so
 * the gradient is zero (as in JAX and PyTorch); the rule exists so that
 * they are not errors. Forgetting an op, naming an op of another family or
 * naming one twice does not compile. */
#define ZERO NULL
#define FILL(v, like) hs__ad_fill(b, v, &(like)->shape)
#define SCALE(e, c) hs__ad_scalar_op(b, HS_OP_MULTIPLY, e, c)
#define UN(op, e) hs_b_unary(b, HS_OP_##op, e)
#define HS_FLOAT_UNARY_DERIVATIVES(D)                                      \
    D(ABS, UN(SIGN, x))                                                    \
    D(NEGATE, FILL(-1.0f, x))                                              \
    D(EXP, y)                                                              \
    D(EXPM1, hs__ad_scalar_op(b, HS_OP_ADD, y, 1.0f))                      \
    D(LOG, DIV(b, FILL(1.0f, x), x))                                       \
    D(LOG1P, DIV(b, FILL(1.0f, x), hs__ad_scalar_op(b, HS_OP_ADD, x, 1.0f))) \
    D(SQRT, DIV(b, FILL(0.5f, x), y))                                      \
    /* d x^(-1/2) = -x^(-3/2) / 2 = -y^3 / 2 */                            \
    D(RSQRT, SCALE(MUL(b, MUL(b, y, y), y), -0.5f))                        \
    D(TANH, SUB(b, FILL(1.0f, y), MUL(b, y, y)))                           \
    D(LOGISTIC, MUL(b, y, SUB(b, FILL(1.0f, y), y)))                       \
    /* 2/sqrt(pi) exp(-x^2) */                                             \
    D(ERF, SCALE(UN(EXP, UN(NEGATE, MUL(b, x, x))), (float)(2.0 / sqrt(M_PI)))) \
    D(SIGN, ZERO)                                                          \
    D(FLOOR, ZERO)                                                         \
    D(CEIL, ZERO)                                                          \
    D(COS, UN(NEGATE, UN(SIN, x)))                                         \
    D(SIN, UN(COS, x))                                                     \
    D(TAN, hs__ad_scalar_op(b, HS_OP_ADD, MUL(b, y, y), 1.0f)) /* 1+y^2 */ \
    D(CBRT, DIV(b, FILL(1.0f / 3.0f, y), MUL(b, y, y))) /* 1 / 3y^2 */     \
    D(ROUND_NEAREST_EVEN, ZERO)                                            \
    D(ROUND_NEAREST_AFZ, ZERO)

#define DERIVATIVE_ONE(E, EXPR) +1
_Static_assert(0 HS_FLOAT_UNARY_DERIVATIVES(DERIVATIVE_ONE) ==
                   HS_N_FLOAT_UNARY,
               "a float unary op of hs_opcode.h (family UNARY_FLOAT or "
               "UNARY_ANY) has no line in HS_FLOAT_UNARY_DERIVATIVES");
#define DERIVATIVE_MEMBER(E, EXPR)                                         \
    _Static_assert(HS_IS_FLOAT_UNARY_FAMILY(HS_FAMILY_OF_##E),             \
                   #E " has a derivative but is not a float unary op");
HS_FLOAT_UNARY_DERIVATIVES(DERIVATIVE_MEMBER)

/* d y / d x, or NULL when it is zero. */
static hs_instruction *unary_derivative(hs_builder *b, hs_instruction *y)
{
    hs_instruction *x = y->operands[0];
    (void)x;
    switch (y->opcode) {
#define DERIVATIVE_CASE(E, EXPR)                                           \
    case HS_OP_##E: return EXPR;
        HS_FLOAT_UNARY_DERIVATIVES(DERIVATIVE_CASE)
#undef DERIVATIVE_CASE
    default:
        /* vjp_table.c gives hs__vjp_unary to the float unary ops only */
        HS_ASSERT(!"a float unary op");
        return NULL;
    }
}

/* The rule of every float unary op (vjp_table.c gives it to the whole
 * family). */
void hs__vjp_unary(hs_vjp *v, hs_instruction *y)
{
    hs_builder *b = hs__vjp_builder(v);
    hs_instruction *gy = hs__vjp_cotangent(v, y);
    if (y->opcode == HS_OP_NEGATE) {
        hs__vjp_acc(v, y->operands[0], hs_b_unary(b, HS_OP_NEGATE, gy));
        return;
    }
    hs_instruction *d = unary_derivative(b, y);
    if (d)
        hs__vjp_acc(v, y->operands[0], MUL(b, gy, d));
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
 * (0 where x = 0, as JAX); each times the cotangent gy. */
static hs_instruction *power_gx(hs_builder *b, hs_instruction *x,
                                hs_instruction *z, hs_instruction *gy)
{
    hs_instruction *d = MUL(b, z,
                            hs_b_binary(b, HS_OP_POWER, x,
                                        hs__ad_scalar_op(b, HS_OP_SUBTRACT,
                                                         z, 1.0f)));
    hs_instruction *z0 =
        hs_b_compare(b, HS_DIR_EQ, z, hs__ad_zeros(b, &z->shape));
    d = hs_b_select(b, z0, hs__ad_zeros(b, &z->shape), d);
    return MUL(b, gy, d);
}

static hs_instruction *power_gz(hs_builder *b, hs_instruction *x,
                                hs_instruction *y, hs_instruction *gy)
{
    hs_instruction *x0 =
        hs_b_compare(b, HS_DIR_EQ, x, hs__ad_zeros(b, &x->shape));
    hs_instruction *safe =
        hs_b_select(b, x0, hs__ad_fill(b, 1.0f, &x->shape), x);
    return MUL(b, gy, MUL(b, y, hs_b_unary(b, HS_OP_LOG, safe)));
}

/* The cotangents of every float binary op y = op(x, z) (hs_opcode.h's
 * family BINARY_ANY), one line each: D(E, s, cotangent of x, cotangent
 * of z), in terms of the cotangent gy, the operands x and z, the result y,
 * the builder b and s, a part both share that is built once before them
 * (NONE: nothing shared). A cotangent is built only when its operand is
 * active. N(E): not differentiable, so reaching it is an error naming the
 * instruction (hs__vjp_rule gives it no rule). Forgetting an op, naming
 * an op of another family or naming one twice does not compile. */
#define NONE NULL
#define NEG(e) hs_b_unary(b, HS_OP_NEGATE, e)
#define HS_FLOAT_BINARY_DERIVATIVES(D, N)                                  \
    D(ADD, NONE, gy, gy)                                                   \
    D(SUBTRACT, NONE, gy, NEG(gy))                                         \
    D(MULTIPLY, NONE, MUL(b, gy, z), MUL(b, gy, x))                        \
    /* y = x / z: dy/dz = -x / z^2 = -y / z */                             \
    D(DIVIDE, NONE, DIV(b, gy, z), NEG(DIV(b, MUL(b, gy, y), z)))          \
    D(MAXIMUM, MUL(b, gy, winner_share(b, HS_DIR_GT, x, z)), s, SUB(b, gy, s)) \
    D(MINIMUM, MUL(b, gy, winner_share(b, HS_DIR_LT, x, z)), s, SUB(b, gy, s)) \
    D(POWER, NONE, power_gx(b, x, z, gy), power_gz(b, x, y, gy))           \
    N(REMAINDER) /* JAX's rule (gy, -gy trunc(x / z)) is not written yet */ \
    /* atan2(x, z): (z, -x) / (x^2 + z^2) */                               \
    D(ATAN2, hs__ad_bin(b, HS_OP_ADD, MUL(b, x, x), MUL(b, z, z)),         \
      DIV(b, MUL(b, gy, z), s), NEG(DIV(b, MUL(b, gy, x), s)))

#define BINARY_DERIVATIVE_ONE(E, ...) +1
_Static_assert(0 HS_FLOAT_BINARY_DERIVATIVES(BINARY_DERIVATIVE_ONE,
                                             BINARY_DERIVATIVE_ONE) ==
                   HS_N_FLOAT_BINARY,
               "a float binary op of hs_opcode.h (family BINARY_ANY) has "
               "no line in HS_FLOAT_BINARY_DERIVATIVES");
#define BINARY_DERIVATIVE_MEMBER(E, ...)                                   \
    _Static_assert(HS_IS_FLOAT_BINARY_FAMILY(HS_FAMILY_OF_##E),            \
                   #E " has a derivative line but is not a float binary op");
HS_FLOAT_BINARY_DERIVATIVES(BINARY_DERIVATIVE_MEMBER, BINARY_DERIVATIVE_MEMBER)

bool hs__vjp_binary_differentiable(hs_opcode op)
{
    switch (op) {
#define DIFFERENTIABLE_CASE(E, ...) case HS_OP_##E: return true;
#define NOT_DIFFERENTIABLE_CASE(E) case HS_OP_##E: return false;
        HS_FLOAT_BINARY_DERIVATIVES(DIFFERENTIABLE_CASE,
                                    NOT_DIFFERENTIABLE_CASE)
#undef DIFFERENTIABLE_CASE
#undef NOT_DIFFERENTIABLE_CASE
    default: return false;
    }
}

/* The rule of every float binary op (vjp_table.c gives it to the whole
 * family). */
void hs__vjp_binary(hs_vjp *v, hs_instruction *y)
{
    hs_builder *b = hs__vjp_builder(v);
    hs_instruction *gy = hs__vjp_cotangent(v, y);
    hs_instruction *x = y->operands[0], *z = y->operands[1];
    bool ax = hs__vjp_active(v, x), az = hs__vjp_active(v, z);
    if (y->opcode == HS_OP_MULTIPLY && x == z) {
        /* a square: one product instead of two */
        hs__vjp_acc(v, x, MUL(b, hs__ad_scalar_op(b, HS_OP_MULTIPLY, gy, 2.0f),
                              x));
        return;
    }
    hs_instruction *s = NULL;
    (void)s;
    switch (y->opcode) {
#define COTANGENTS_CASE(E, S, GX, GZ)                                      \
    case HS_OP_##E:                                                        \
        s = S;                                                             \
        if (ax)                                                            \
            hs__vjp_acc(v, x, GX);                                         \
        if (az)                                                            \
            hs__vjp_acc(v, z, GZ);                                         \
        return;
#define NO_COTANGENTS_CASE(E)
        HS_FLOAT_BINARY_DERIVATIVES(COTANGENTS_CASE, NO_COTANGENTS_CASE)
#undef COTANGENTS_CASE
#undef NO_COTANGENTS_CASE
    default:
        /* hs__vjp_rule gives hs__vjp_binary only to the ops with a D line */
        HS_ASSERT(!"a differentiable float binary op");
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
