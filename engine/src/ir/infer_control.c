/* infer_control.c - shape rules of tuples and control flow:
 * tuple, get-tuple-element, while, call, copy and opt-barrier. */
#include <stdio.h>
#include <string.h>

#include "ir/infer_internal.h"

hs_status hs__infer_tuple(const hs_instruction *i, hs_arena *a,
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

hs_status hs__infer_get_tuple_element(const hs_instruction *i, hs_arena *a,
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

hs_status hs__infer_while(const hs_instruction *i, hs_arena *a,
                          hs_shape *out, hs_error *err)
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

hs_status hs__infer_call(const hs_instruction *i, hs_arena *a,
                         hs_shape *out, hs_error *err)
{
    (void)a;
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

hs_status hs__infer_copy(const hs_instruction *i, hs_arena *a, hs_shape *out,
                         hs_error *err)
{
    (void)a, (void)err;
    const hs_shape *x = &i->operands[0]->shape;
    if (x->dtype == HS_TUPLE || i->opcode == HS_OP_OPTIMIZATION_BARRIER)
        *out = *x;
    else
        set_array(out, x->dtype, x->rank, x->dims); /* copy may relayout */
    return HS_OK;
}
