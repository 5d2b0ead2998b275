/* builder_generic.c - ops the builder has no function of its own for:
 * the instruction is described by its operands, its text attributes and
 * its called computations, and shape inference (hs_infer.h) reads them,
 * so a frontend (the model loader's vision blocks) can emit convolution,
 * reduce-window and batch-norm without a builder function per op. */
#include <string.h>

#include "trace/builder_internal.h"

hs_instruction *hs_b_generic(hs_builder *b, hs_opcode op,
                             hs_instruction *const *xs, int n,
                             const hs_attr *attrs, int n_attrs,
                             hs_computation *const *called, int n_called)
{
    if (!hs__b_usable(b, xs, n))
        return NULL;
    for (int k = 0; k < n_called; k++)
        if (!called[k] || !hs__b_order_callee(b, called[k]))
            return NULL;
    hs_instruction p;
    hs__b_proto(&p, op, (hs_instruction **)xs, n);
    p.name = hs_opcode_name(op); /* shape errors name the op */
    p.extra = (hs_attr *)attrs;
    p.n_extra = n_attrs;
    p.called = (hs_computation **)called;
    p.n_called = n_called;
    hs_instruction *i = hs__b_emit(b, &p);
    if (!i)
        return NULL;
    for (int k = 0; k < n_attrs; k++)
        hs_instruction_add_extra(i, attrs[k].key, attrs[k].value);
    if (n_called > 0)
        hs_instruction_set_called(i, called, n_called);
    if (i->n_extra != n_attrs || i->n_called != n_called) {
        hs_builder_fail(b, HS_ERR_NOMEM, "builder: out of memory");
        return NULL;
    }
    return i;
}

hs_computation *hs_b_reducer(hs_builder *b, hs_opcode op, hs_dtype t)
{
    if (!hs_builder_ok(b))
        return NULL;
    return hs__b_reducer(b, op, t);
}
