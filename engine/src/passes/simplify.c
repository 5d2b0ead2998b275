/* simplify.c - the `simplify` pass: XLA's algebraic simplifier rules that
 * matter for traced models, and constant folding of small literals.
 *
 *   add(x, 0), add(0, x), subtract(x, 0)   -> x
 *   multiply(x, 1), multiply(1, x)         -> x
 *   divide(x, 1)                           -> x
 *   multiply(x, 0) -> 0   integers and pred only: for floats 0 * NaN and
 *                         0 * inf are NaN, so XLA keeps the multiply
 *   negate(negate(x))                      -> x
 *   convert(x) to x's own type             -> x
 *   reshape(reshape(x))                    -> reshape(x)
 *   reshape(x) to x's shape                -> x
 *   transpose(x) with the identity order   -> x
 *   transpose(transpose(x))                -> one transpose (or x)
 *
 * A replacement must have a compatible shape in the same memory space; a
 * broadcast of a scalar constant counts as that constant (0 and 1 are
 * usually traced that way) and is never folded by itself. */
#include <string.h>

#include "passes/passes_internal.h"

/* x may stand in for i: same element type and dimensions, and the same
 * memory space, so that no host/device placement is lost. */
static bool can_replace(const hs_instruction *i, const hs_instruction *x)
{
    return hs_shape_compatible(&i->shape, &x->shape) &&
           i->shape.memory_space == x->shape.memory_space;
}

static hs_instruction *if_compatible(const hs_instruction *i,
                                     hs_instruction *x)
{
    return can_replace(i, x) ? x : NULL;
}

static bool is_identity(const int64_t *perm, int n)
{
    for (int d = 0; d < n; d++)
        if (perm[d] != d)
            return false;
    return true;
}

static hs_instruction *simplify_binary(hs_instruction *i)
{
    hs_instruction *a = i->operands[0], *b = i->operands[1];
    bool integral = !hs_dtype_is_float(i->shape.dtype);
    switch (i->opcode) {
    case HS_OP_ADD:
        if (hs__is_all(b, 0) && can_replace(i, a))
            return a;
        if (hs__is_all(a, 0) && can_replace(i, b))
            return b;
        return NULL;
    case HS_OP_SUBTRACT:
        return hs__is_all(b, 0) ? if_compatible(i, a) : NULL;
    case HS_OP_MULTIPLY:
        if (hs__is_all(b, 1) && can_replace(i, a))
            return a;
        if (hs__is_all(a, 1) && can_replace(i, b))
            return b;
        if (integral && hs__is_all(b, 0) && can_replace(i, b))
            return b;
        if (integral && hs__is_all(a, 0) && can_replace(i, a))
            return a;
        return NULL;
    case HS_OP_DIVIDE:
        return hs__is_all(b, 1) ? if_compatible(i, a) : NULL;
    default:
        return NULL;
    }
}

static hs_instruction *simplify_reshape(hs_instruction *i, bool *changed)
{
    hs_instruction *x = i->operands[0];
    if (x->opcode == HS_OP_RESHAPE && x->n_operands == 1) {
        /* Only i is rewritten: x may have other users. */
        i->operands[0] = x->operands[0];
        x = i->operands[0];
        *changed = true;
    }
    return if_compatible(i, x);
}

static hs_instruction *simplify_transpose(hs_instruction *i, bool *changed)
{
    hs_instruction *x = i->operands[0];
    int n = i->n_dims;
    if (n != i->shape.rank)
        return NULL;
    if (x->opcode == HS_OP_TRANSPOSE && x->n_operands == 1 &&
        x->n_dims == n) {
        /* Output dimension d of i is dimension perm_i[d] of x, which is
         * dimension perm_x[perm_i[d]] of x's operand. */
        int64_t perm[HS_MAX_RANK];
        for (int d = 0; d < n; d++) {
            if (i->dims[d] < 0 || i->dims[d] >= n)
                return NULL;
            perm[d] = x->dims[i->dims[d]];
        }
        hs_instruction_set_dims(i, perm, n);
        i->operands[0] = x->operands[0];
        x = i->operands[0];
        *changed = true;
    }
    return is_identity(i->dims, n) ? if_compatible(i, x) : NULL;
}

static hs_instruction *visit(hs_instruction *i, void *state, bool *changed)
{
    const hs_pass_context *ctx = state;
    hs_instruction *folded = hs__fold(i, ctx->fold_max_elements);
    if (folded)
        return folded;
    switch (i->opcode) {
    case HS_OP_ADD:
    case HS_OP_SUBTRACT:
    case HS_OP_MULTIPLY:
    case HS_OP_DIVIDE:
        return i->n_operands == 2 ? simplify_binary(i) : NULL;
    case HS_OP_NEGATE:
        if (i->n_operands == 1 && i->operands[0]->opcode == HS_OP_NEGATE &&
            i->operands[0]->n_operands == 1)
            return if_compatible(i, i->operands[0]->operands[0]);
        return NULL;
    case HS_OP_CONVERT:
        return i->n_operands == 1 ? if_compatible(i, i->operands[0]) : NULL;
    case HS_OP_RESHAPE:
        return i->n_operands == 1 ? simplify_reshape(i, changed) : NULL;
    case HS_OP_TRANSPOSE:
        return i->n_operands == 1 ? simplify_transpose(i, changed) : NULL;
    default:
        return NULL;
    }
}

hs_status hs_pass_simplify_run(hs_module *m, hs_pass_context *ctx,
                               bool *changed, hs_error *err)
{
    for (int c = 0; c < m->n_comps; c++) {
        hs_computation *comp = m->comps[c];
        bool comp_changed = false;
        hs_status st = hs__rewrite_computation(comp, ctx, visit, ctx,
                                               &comp_changed, err);
        if (comp_changed) {
            /* Rewrites leave the operands they bypassed (the zero, the
             * inner reshape, ...) without users. */
            hs_computation_remove_dead(comp);
            *changed = true;
        }
        if (st != HS_OK)
            return st;
    }
    return HS_OK;
}
