/*
 * device_helpers.h - small constructors for device tests: modules are built
 * instruction by instruction with hs_computation_add, so the tests depend on
 * the IR core only.
 */
#ifndef HS_TEST_DEVICE_HELPERS_H
#define HS_TEST_DEVICE_HELPERS_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "hloscope/hs_device.h"
#include "hloscope/hs_ir.h"
#include "hloscope/hs_tensor.h"

static inline hs_shape shp(hs_dtype t, int rank, ...)
{
    int64_t d[HS_MAX_RANK] = {0};
    va_list ap;
    va_start(ap, rank);
    for (int i = 0; i < rank; i++)
        d[i] = va_arg(ap, int);
    va_end(ap);
    return hs_shape_make(t, rank, d);
}
#define F32(...) shp(HS_F32, __VA_ARGS__)
#define S32(...) shp(HS_S32, __VA_ARGS__)
#define PRED(...) shp(HS_PRED, __VA_ARGS__)

static inline hs_instruction *add_op(hs_computation *c, hs_opcode op,
                                     hs_shape s, int n, ...)
{
    hs_instruction *ops[16];
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++)
        ops[i] = va_arg(ap, hs_instruction *);
    va_end(ap);
    return hs_computation_add(c, op, &s, ops, n, NULL);
}

static inline hs_instruction *add_param(hs_computation *c, int n, hs_shape s)
{
    char name[16];
    snprintf(name, sizeof name, "p%d.%d", n, c->id);
    return hs_computation_add_parameter(c, n, &s, name);
}

static inline hs_instruction *add_const(hs_computation *c, hs_shape s,
                                        const void *data)
{
    hs_instruction *i = hs_computation_add(c, HS_OP_CONSTANT, &s, NULL, 0,
                                           NULL);
    size_t bytes = (size_t)hs_shape_bytes(&s);
    i->literal = hs_arena_alloc(hs_instruction_arena(i), bytes ? bytes : 1);
    memcpy(i->literal, data, bytes);
    return i;
}

static inline hs_instruction *const_s32(hs_computation *c, int32_t v)
{
    return add_const(c, S32(0), &v);
}

static inline hs_instruction *const_f32(hs_computation *c, float v)
{
    return add_const(c, F32(0), &v);
}

static inline void set_dims(hs_instruction *i, int n, ...)
{
    int64_t d[HS_MAX_RANK];
    va_list ap;
    va_start(ap, n);
    for (int k = 0; k < n; k++)
        d[k] = va_arg(ap, int);
    va_end(ap);
    hs_instruction_set_dims(i, d, n);
}

/* A scalar reducer computation: root = op(p0, p1). */
static inline hs_computation *add_reducer(hs_module *m, const char *name,
                                          hs_opcode op, hs_dtype t)
{
    hs_computation *r = hs_module_add_computation(m, name, false);
    hs_instruction *a = add_param(r, 0, shp(t, 0));
    hs_instruction *b = add_param(r, 1, shp(t, 0));
    r->root = add_op(r, op, shp(t, 0), 2, a, b);
    return r;
}

static inline hs_tensor *tensor_f32(hs_shape s, const float *v)
{
    hs_tensor *t = hs_tensor_new(&s);
    memcpy(t->data, v, (size_t)hs_shape_bytes(&s));
    return t;
}

static inline hs_tensor *tensor_fill(hs_shape s, unsigned seed)
{
    hs_tensor *t = hs_tensor_new(&s);
    float *d = hs_tensor_f32(t);
    for (int64_t i = 0; i < hs_shape_elements(&s); i++) {
        seed = seed * 1103515245u + 12345u;
        d[i] = (float)((seed >> 16) & 0x7fff) / 32768.0f - 0.5f;
    }
    return t;
}

#endif
