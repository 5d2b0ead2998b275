/*
 * builder_internal.h - the tracer's state, shared by builder.c (lifecycle,
 * scopes, errors), builder_ops.c (one function per op) and reducers.c
 * (scalar reducer computations).
 */
#ifndef HLOSCOPE_TRACE_BUILDER_INTERNAL_H
#define HLOSCOPE_TRACE_BUILDER_INTERNAL_H

#include "hloscope/hs_builder.h"

/* Reducer opcodes cached per element type: add, maximum, minimum, multiply. */
enum { HS__REDUCER_KINDS = 4 };

struct hs_builder {
    hs_module *m;
    hs_computation *c;
    bool failed;
    hs_error err; /* the first error; status HS_OK while none */

    /* op_name scopes: path holds "a/b/c"; marks[k] is its length before the
     * k-th push and saved[k] the op_name before it. op_name is interned in
     * the module arena once per push and shared by the scope's
     * instructions; NULL outside any scope. */
    const char *op_name;
    char *path;
    size_t path_len, path_cap;
    int depth, cap_depth;
    size_t *marks;
    const char **saved;

    /* Reducer computations already known to sit before c in m->comps. */
    hs_computation *reducers[HS__REDUCER_KINDS][HS_DTYPE_COUNT];
};

/* True when the builder can take an op on operands xs[0..n): no earlier
 * error and no NULL operand. Ops return NULL silently otherwise. */
static inline bool hs__b_usable(const hs_builder *b, hs_instruction *const *xs,
                                int n)
{
    if (b->failed)
        return false;
    for (int k = 0; k < n; k++)
        if (!xs[k])
            return false;
    return true;
}

/* A zeroed instruction used as the input of shape inference. */
void hs__b_proto(hs_instruction *p, hs_opcode op, hs_instruction **operands,
                 int n);
/* Infers the prototype's shape and appends the instruction with op_name
 * set; attributes are copied by the caller. NULL (and the sticky error) on
 * failure. */
hs_instruction *hs__b_emit(hs_builder *b, const hs_instruction *proto);
/* Appends an instruction whose shape is given (no inference). */
hs_instruction *hs__b_add(hs_builder *b, hs_opcode op, const hs_shape *shape,
                          hs_instruction *const *operands, int n);
/* Arena copy of size bytes, or NULL with the sticky NOMEM error. */
void *hs__b_copy(hs_builder *b, const void *src, size_t size);
/* Makes `callee` precede the builder's computation in m->comps. */
bool hs__b_order_callee(hs_builder *b, hs_computation *callee);

/* The scalar reducer computation for op (ADD, MAXIMUM, MINIMUM, MULTIPLY)
 * over element type t, created once per module. */
hs_computation *hs__b_reducer(hs_builder *b, hs_opcode op, hs_dtype t);

#endif
