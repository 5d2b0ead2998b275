/*
 * kernels_control.c - tuples, while, call and the placement custom-calls.
 *
 * Tuples and get-tuple-element move references, not data: a while body's
 * get-tuple-element of its parameter aliases the loop-carried buffer, and
 * once the parameter tuple is gone that buffer has a single owner, so a
 * dynamic-update-slice into it updates in place.
 */
#include <stdlib.h>
#include <string.h>

#include "device/device_internal.h"

hs_status dev_k_tuple(dev_ctx *x, const dev_step *s, dev_val **f,
                      dev_val **out)
{
    dev_val *t = dev_tuple_new(x, &s->in->shape, s->n_ops);
    if (!t)
        return x->err->status;
    const bool *drop = s->data; /* plan.c mark_moving_gtes */
    for (int k = 0; k < s->n_ops; k++) {
        t->elems[k] = dev_take(s, f, k);
        if (drop && drop[k]) {
            dev_release(x, t->elems[k]);
            t->elems[k] = NULL;
        }
    }
    *out = t;
    return HS_OK;
}

hs_status dev_k_get_tuple_element(dev_ctx *x, const dev_step *s, dev_val **f,
                                  dev_val **out)
{
    const dev_val *t = dev_op(s, f, 0);
    int64_t i = s->in->index;
    if (!t->elems || i < 0 || i >= t->n || !t->elems[i])
        return hs_error_set(x->err, HS_ERR_INVALID,
                            "instruction %s: tuple index %lld out of range",
                            s->in->name, (long long)i);
    bool last = s->op_last[0];
    dev_val *tv = dev_take(s, f, 0);
    dev_val *e = tv->elems[i];
    /* Moved out when nobody else holds the tuple (docs: plan.c
     * mark_moving_gtes): the tuple no longer keeps the element alive. */
    if (s->aux == 1 && tv->refs == (last ? 1 : 2))
        tv->elems[i] = NULL;
    else
        dev_ref(e);
    dev_release(x, tv);
    *out = e;
    return HS_OK;
}

hs_status dev_k_while(dev_ctx *x, const dev_step *s, dev_val **f,
                      dev_val **out)
{
    dev_plan *cond = s->callee[0], *body = s->callee[1];
    dev_val *carry = dev_take(s, f, 0);
    for (;;) {
        dev_val *pv = NULL;
        dev_ref(carry);
        hs_status st = dev_eval(x, cond, &carry, 1, &pv);
        if (st) {
            dev_release(x, carry);
            return st;
        }
        bool go = !pv->elems && pv->shape->dtype == HS_PRED &&
                  *(const uint8_t *)pv->block->data;
        bool bad = pv->elems || pv->shape->dtype != HS_PRED;
        dev_release(x, pv);
        if (bad) {
            dev_release(x, carry);
            return hs_error_set(x->err, HS_ERR_INVALID,
                                "instruction %s: while condition does not "
                                "return pred[]", s->in->name);
        }
        if (!go)
            break;
        /* The body consumes the carry and returns the next one. */
        st = dev_eval(x, body, &carry, 1, &carry);
        if (st)
            return st;
    }
    *out = carry;
    return HS_OK;
}

hs_status dev_k_call(dev_ctx *x, const dev_step *s, dev_val **f,
                     dev_val **out)
{
    dev_val *small[16];
    dev_val **args = s->n_ops <= 16 ? small
                                    : malloc(sizeof *args * (size_t)s->n_ops);
    if (!args)
        return dev_oom(x);
    for (int k = 0; k < s->n_ops; k++)
        args[k] = dev_take(s, f, k);
    hs_status st = dev_eval(x, s->callee[0], args, s->n_ops, out);
    if (args != small)
        free(args);
    return st;
}

/* annotate_device_placement, MoveToHost, MoveToDevice, Sharding: the
 * data is unchanged; when the memory space changes the buffer is copied so that
 * the accounting sees it move. */
hs_status dev_k_custom_call(dev_ctx *x, const dev_step *s, dev_val **f,
                            dev_val **out)
{
    const hs_instruction *in = s->in;
    const dev_val *a = dev_op(s, f, 0);
    if (!a->elems &&
        a->block->space != dev_space_index(in->shape.memory_space)) {
        dev_val *v = dev_array_new(x, &in->shape);
        if (!v)
            return x->err->status;
        memcpy(v->block->data, a->block->data, (size_t)v->block->bytes);
        *out = v;
        return HS_OK;
    }
    return dev_k_alias(x, s, f, out);
}
