/*
 * access.c - how an instruction reads its operands: whether element j of
 * the result reads only element j of an operand. Buffer assignment lets
 * such a result take over the operand's buffer when the operand dies there
 * (XLA's CanShareOperandBufferWithUser for element-wise ops and loop
 * fusions), and the device then writes it in place.
 */
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_ir.h"

static bool same_dims(const hs_shape *a, const hs_shape *b)
{
    return a->dtype != HS_TUPLE && b->dtype != HS_TUPLE &&
           a->rank == b->rank &&
           memcmp(a->dims, b->dims, sizeof a->dims[0] * (size_t)a->rank) == 0;
}

enum { NONE = 0, ELEMENTWISE = 1, OTHER = 2 };

/* Through a fused computation: how the root reads parameter p. */
static bool fused_reads_elementwise(const hs_computation *c,
                                    const hs_instruction *p,
                                    const hs_shape *out)
{
    if (!c->root || c->n_instrs <= 0)
        return false;
    int lo = c->instrs[0]->id, hi = lo;
    for (int k = 1; k < c->n_instrs; k++) {
        int id = c->instrs[k]->id;
        lo = id < lo ? id : lo;
        hi = id > hi ? id : hi;
    }
    if (lo < 0)
        return false;
    unsigned char *state = calloc((size_t)(hi - lo + 1), 1);
    if (!state)
        return false;
    /* Instructions are in definition order: operands come first. */
    for (int k = 0; k < c->n_instrs; k++) {
        const hs_instruction *i = c->instrs[k];
        int st = NONE;
        if (i == p) {
            st = same_dims(&i->shape, out) ? ELEMENTWISE : OTHER;
        } else {
            for (int o = 0; o < i->n_operands; o++) {
                const hs_instruction *x = i->operands[o];
                int s = x && x->id >= lo && x->id <= hi ? state[x->id - lo]
                                                        : OTHER;
                st = s > st ? s : st;
            }
            if (st == ELEMENTWISE &&
                (hs_opcode_category(i->opcode) != HS_CAT_ELEMENTWISE ||
                 !same_dims(&i->shape, out)))
                st = OTHER;
        }
        state[i->id - lo] = (unsigned char)st;
    }
    int r = c->root->id >= lo && c->root->id <= hi ? state[c->root->id - lo]
                                                   : OTHER;
    free(state);
    return r != OTHER;
}

/* Whether user reads operand index `operand` element-wise, by itself. */
static bool reads_elementwise_at(const hs_instruction *user, int operand)
{
    if (operand < 0 || operand >= user->n_operands ||
        !user->operands[operand] ||
        !same_dims(&user->operands[operand]->shape, &user->shape))
        return false;
    if (hs_opcode_category(user->opcode) == HS_CAT_ELEMENTWISE)
        return true;
    if (user->opcode != HS_OP_FUSION || user->n_called < 1 ||
        !user->called[0] || operand >= user->called[0]->n_params ||
        !user->fusion_kind || strcmp(user->fusion_kind, "kLoop") != 0)
        return false;
    const hs_computation *c = user->called[0];
    return c->params[operand] &&
           fused_reads_elementwise(c, c->params[operand], &user->shape);
}

bool hs_reads_elementwise(const hs_instruction *user, int operand)
{
    if (!reads_elementwise_at(user, operand))
        return false;
    /* The same instruction passed again (fusion(a, a)) must be read
     * element-wise there too: element j of the result reads it there
     * as well. */
    for (int o = 0; o < user->n_operands; o++)
        if (o != operand && user->operands[o] == user->operands[operand] &&
            !reads_elementwise_at(user, o))
            return false;
    return true;
}
