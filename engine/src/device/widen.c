/*
 * widen.c - running an f32 kernel on the narrow float types (f16, bf16,
 * the f8 types) as XLA's CPU backend does: its float normalization pass
 * converts such operands of a convolution or a batch norm to f32, the
 * op computes in f32, and the result is converted back, rounding once to
 * nearest even when stored.
 *
 * The operands are widened into f32 arrays (device memory, accounted as
 * XLA's inserted converts are), the kernel runs on a copy of the step
 * whose instruction has the f32 shape, and each f32 result is narrowed
 * into an array of the instruction's own shape.
 */
#include <string.h>

#include "device/device_internal.h"
#include "numerics/element_types.h"

static bool narrow_float(hs_dtype t)
{
    return elem_class_of(t) == ELEM_F32 && t != HS_F32;
}

static bool shape_narrow(const hs_shape *s)
{
    if (s->dtype != HS_TUPLE)
        return narrow_float(s->dtype);
    for (int k = 0; k < s->n_elems; k++)
        if (shape_narrow(&s->elems[k]))
            return true;
    return false;
}

bool dev_step_is_narrow_float(const dev_step *s, dev_val **f)
{
    if (shape_narrow(&s->in->shape))
        return true;
    for (int k = 0; k < s->n_ops; k++) {
        const dev_val *v = dev_op(s, f, k);
        if (!v->elems && narrow_float(v->shape->dtype))
            return true;
    }
    return false;
}

/* s with its narrow float types made f32 (array or flat tuple of arrays;
 * elems holds a tuple's element shapes). */
static void widen_shape(hs_shape *s, hs_shape *elems)
{
    if (s->dtype != HS_TUPLE) {
        if (narrow_float(s->dtype))
            s->dtype = HS_F32;
        return;
    }
    for (int k = 0; k < s->n_elems; k++) {
        elems[k] = s->elems[k];
        if (narrow_float(elems[k].dtype))
            elems[k].dtype = HS_F32;
    }
    s->elems = elems;
}

/* A new array of shape to holding v's elements converted. NULL: error
 * set. */
static dev_val *converted(dev_ctx *x, const dev_val *v, const hs_shape *to)
{
    dev_val *y = dev_array_new(x, to);
    if (y)
        dev_convert_loop(v->shape->dtype, to->dtype, v->block->data,
                         y->block->data, hs_shape_elements(to));
    return y;
}

hs_status dev_run_in_f32(dev_ctx *x, const dev_step *s, dev_val **f,
                         dev_val **out, dev_kernel kernel)
{
    enum { MAX_OPS = 8 };
    const hs_instruction *in = s->in;
    if (s->n_ops > MAX_OPS ||
        (in->shape.dtype == HS_TUPLE && in->shape.n_elems > MAX_OPS))
        return dev_unsupported(x, in, "a narrow float op with more than 8 "
                                      "operands or results");
    hs_instruction wide_in = *in;
    hs_shape elems[MAX_OPS], op_shapes[MAX_OPS];
    widen_shape(&wide_in.shape, elems);
    dev_val *frame[MAX_OPS] = {NULL};
    int slots[MAX_OPS];
    bool last[MAX_OPS] = {false};
    hs_status st = HS_OK;
    for (int k = 0; k < s->n_ops && !st; k++) {
        dev_val *v = dev_op(s, f, k);
        slots[k] = k;
        if (v->elems || !narrow_float(v->shape->dtype)) {
            dev_ref(v);
            frame[k] = v;
            continue;
        }
        op_shapes[k] = *v->shape;
        op_shapes[k].dtype = HS_F32;
        if (!(frame[k] = converted(x, v, &op_shapes[k])))
            st = x->err->status;
    }
    dev_step wide = *s;
    wide.in = &wide_in;
    wide.ops = slots;
    wide.op_last = last;
    wide.in_place = 0;
    dev_val *res = NULL;
    if (!st)
        st = kernel(x, &wide, frame, &res);
    for (int k = 0; k < s->n_ops; k++)
        if (frame[k])
            dev_release(x, frame[k]);
    if (st)
        return st;
    /* narrow the results into arrays of in's own shape */
    dev_val *y = NULL;
    if (!res->elems) {
        y = converted(x, res, &in->shape);
    } else if ((y = dev_tuple_new(x, &in->shape, res->n))) {
        for (int k = 0; k < res->n; k++)
            if (!(y->elems[k] = converted(x, res->elems[k],
                                          &in->shape.elems[k]))) {
                dev_release(x, y);
                y = NULL;
                break;
            }
    }
    dev_release(x, res);
    if (!y)
        return x->err->status;
    *out = y;
    return HS_OK;
}
