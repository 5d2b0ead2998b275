/*
 * hs_builder.h - the tracer: builds a computation op by op with shape
 * inference and a sticky first error, as a lazy-tensor frontend does.
 *
 *     hs_builder *b = hs_builder_new(m, "main", true);
 *     hs_builder_push_scope(b, "layers.0");
 *     hs_builder_push_scope(b, "linear");
 *     hs_instruction *x = hs_b_parameter(b, 0, &xs, "x");
 *     hs_instruction *w = hs_b_parameter(b, 1, &ws, "layers.0.weight");
 *     hs_instruction *y = hs_b_matmul_nt(b, x, w);    // x @ w^T
 *     hs_builder_pop_scope(b); hs_builder_pop_scope(b);
 *     hs_computation *c = hs_builder_finish(b, y, &err); // NULL on error
 *
 * Every op returns NULL once an error has occurred (and when an operand is
 * NULL), so a whole model can be traced and the first error checked once.
 * Every instruction records metadata op_name = the scope path joined by '/'
 * ("layers.12/attn/q_proj"). Shape inference lives in hs_infer.h and is
 * shared with the verifier.
 */
#ifndef HLOSCOPE_HS_BUILDER_H
#define HLOSCOPE_HS_BUILDER_H

#include "hloscope/hs_ir.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hs_builder hs_builder;

/* Creates a computation named name in m (entry or not) and a builder on it.
 * The builder itself is heap-allocated; free it with hs_builder_free (or
 * hs_builder_finish, which frees it). */
hs_builder *hs_builder_new(hs_module *m, const char *name, bool is_entry);
/* Sets the root (a tuple root is fine), frees the builder and returns the
 * computation, or NULL with *err filled from the sticky error. */
hs_computation *hs_builder_finish(hs_builder *b, hs_instruction *root,
                                  hs_error *err);
void hs_builder_free(hs_builder *b);
hs_module *hs_builder_module(const hs_builder *b);
hs_computation *hs_builder_computation(const hs_builder *b);

/* Sticky error: the first failure is kept; later ones are ignored. */
bool hs_builder_ok(const hs_builder *b);
const hs_error *hs_builder_error(const hs_builder *b);
/* Records an error from outside (e.g. the model loader's own checks). */
void hs_builder_fail(hs_builder *b, hs_status s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* op_name scopes. */
void hs_builder_push_scope(hs_builder *b, const char *name);
void hs_builder_pop_scope(hs_builder *b);
const char *hs_builder_scope(const hs_builder *b); /* current op_name */

/* ---- leaves ---- */
hs_instruction *hs_b_parameter(hs_builder *b, int64_t number,
                               const hs_shape *shape, const char *name);
/* f32 scalar constant */
hs_instruction *hs_b_const_f32(hs_builder *b, float v);
hs_instruction *hs_b_const_s32(hs_builder *b, int32_t v);
hs_instruction *hs_b_const_pred(hs_builder *b, bool v);
/* An f32 array constant; data (elements of shape) is copied. */
hs_instruction *hs_b_const_array(hs_builder *b, const hs_shape *shape,
                                 const void *data);
hs_instruction *hs_b_iota(hs_builder *b, const hs_shape *shape,
                          int64_t dimension);

/* ---- element-wise: shapes must match exactly (no implicit broadcast) ---- */
hs_instruction *hs_b_unary(hs_builder *b, hs_opcode op, hs_instruction *x);
hs_instruction *hs_b_binary(hs_builder *b, hs_opcode op, hs_instruction *x,
                            hs_instruction *y);
hs_instruction *hs_b_compare(hs_builder *b, hs_direction d,
                             hs_instruction *x, hs_instruction *y);
hs_instruction *hs_b_select(hs_builder *b, hs_instruction *pred,
                            hs_instruction *on_true,
                            hs_instruction *on_false);
hs_instruction *hs_b_convert(hs_builder *b, hs_instruction *x, hs_dtype to);

/* ---- data movement ---- */
/* broadcast: operand dimension i maps to output dimension dims[i]. */
hs_instruction *hs_b_broadcast(hs_builder *b, hs_instruction *x,
                               const hs_shape *out, const int64_t *dims,
                               int n_dims);
/* Broadcasts a scalar or lower-rank array whose dimensions line up with the
 * trailing dimensions of out (NumPy rules without size-1 expansion). */
hs_instruction *hs_b_broadcast_trailing(hs_builder *b, hs_instruction *x,
                                        const hs_shape *out);
hs_instruction *hs_b_reshape(hs_builder *b, hs_instruction *x, int rank,
                             const int64_t *dims);
hs_instruction *hs_b_transpose(hs_builder *b, hs_instruction *x,
                               const int64_t *perm);
hs_instruction *hs_b_slice(hs_builder *b, hs_instruction *x,
                           const int64_t *start, const int64_t *limit,
                           const int64_t *stride /* NULL = 1s */);
hs_instruction *hs_b_concatenate(hs_builder *b, hs_instruction *const *xs,
                                 int n, int64_t dimension);
/* starts: rank scalar s32 instructions. */
hs_instruction *hs_b_dynamic_slice(hs_builder *b, hs_instruction *x,
                                   hs_instruction *const *starts,
                                   const int64_t *sizes);
hs_instruction *hs_b_dynamic_update_slice(hs_builder *b, hs_instruction *x,
                                          hs_instruction *update,
                                          hs_instruction *const *starts);

/* ---- compute ---- */
hs_instruction *hs_b_dot(hs_builder *b, hs_instruction *lhs,
                         hs_instruction *rhs, const hs_dot_dims *dims);
/* x[..., k] @ w[n, k]^T -> [..., n]: a Linear layer's product (x of any
 * rank >= 1, w rank 2). Lowered as one dot. */
hs_instruction *hs_b_matmul_nt(hs_builder *b, hs_instruction *x,
                               hs_instruction *w);
/* Reduction with a scalar reducer computation built on demand (add/max). */
hs_instruction *hs_b_reduce(hs_builder *b, hs_instruction *x,
                            hs_instruction *init, const int64_t *dims,
                            int n_dims, hs_opcode reducer /* ADD, MAXIMUM,
                                                             MINIMUM, MULTIPLY
                                                           */);
hs_instruction *hs_b_reduce_sum(hs_builder *b, hs_instruction *x,
                                const int64_t *dims, int n_dims);
hs_instruction *hs_b_reduce_max(hs_builder *b, hs_instruction *x,
                                const int64_t *dims, int n_dims);

/* An op the builder has no function of its own for (convolution,
 * reduce-window, batch-norm-*): its text attributes (window=,
 * dim_labels=, epsilon=, ...; copied) and called computations, the shape
 * inferred from them (builder_generic.c). */
hs_instruction *hs_b_generic(hs_builder *b, hs_opcode op,
                             hs_instruction *const *xs, int n,
                             const hs_attr *attrs, int n_attrs,
                             hs_computation *const *called, int n_called);
/* The scalar reducer computation of op (ADD, MAXIMUM, MINIMUM, MULTIPLY)
 * over element type t, made once per builder; it precedes the builder's
 * computation. */
hs_computation *hs_b_reducer(hs_builder *b, hs_opcode op, hs_dtype t);

/* ---- tuples and control ---- */
hs_instruction *hs_b_tuple(hs_builder *b, hs_instruction *const *xs, int n);
hs_instruction *hs_b_get_tuple_element(hs_builder *b, hs_instruction *t,
                                       int64_t index);
hs_instruction *hs_b_while(hs_builder *b, hs_computation *condition,
                           hs_computation *body, hs_instruction *init);
hs_instruction *hs_b_call(hs_builder *b, hs_computation *callee,
                          hs_instruction *const *args, int n);
hs_instruction *hs_b_custom_call(hs_builder *b, const char *target,
                                 hs_instruction *const *args, int n,
                                 const hs_shape *shape);

#ifdef __cplusplus
}
#endif
#endif
