/*
 * autodiff_internal.h - shared between the files of the autodiff module:
 * the state of one differentiation (autodiff.c), the VJP rule signature and
 * table (vjp_table.c), the rule families (vjp_*.c) and small emit helpers
 * (emit.c).
 *
 * A VJP rule sees a forward instruction y whose cotangent is complete and
 * hands cotangents to y's operands with hs__vjp_acc (arrays) or
 * hs__vjp_acc_elem (an element of a tuple operand). Cotangents given to an
 * operand that is not active are dropped, so a rule may skip the work for
 * such operands (hs__vjp_active) but need not. Rules emit through the
 * builder; a failing builder op records the sticky error, which the driver
 * checks after every rule.
 */
#ifndef HLOSCOPE_AUTODIFF_INTERNAL_H
#define HLOSCOPE_AUTODIFF_INTERNAL_H

#include "hloscope/hs_autodiff.h"

typedef struct hs_vjp hs_vjp;

typedef void (*hs_vjp_rule)(hs_vjp *v, hs_instruction *y);

/* vjp_table.c: the rule of op, NULL when op is not differentiable. */
hs_vjp_rule hs__vjp_rule(hs_opcode op);

/* ---- autodiff.c: what rules may ask the differentiation in progress ---- */

hs_builder *hs__vjp_builder(const hs_vjp *v);
const hs_autodiff_options *hs__vjp_options(const hs_vjp *v);
/* x depends on a differentiated input and holds floating-point values. */
bool hs__vjp_active(const hs_vjp *v, const hs_instruction *x);
/* The cotangent of array-shaped y (never NULL when y's rule runs). */
hs_instruction *hs__vjp_cotangent(const hs_vjp *v, const hs_instruction *y);
/* The cotangent of element k of tuple-shaped y; NULL means zero. */
hs_instruction *hs__vjp_cotangent_elem(const hs_vjp *v,
                                       const hs_instruction *y, int k);
/* Adds g to the cotangent of x (g must have x's dimensions and type). NULL
 * g, or an x that is not active, is ignored. */
void hs__vjp_acc(hs_vjp *v, hs_instruction *x, hs_instruction *g);
/* Adds g to the cotangent of element k of tuple-shaped t. */
void hs__vjp_acc_elem(hs_vjp *v, hs_instruction *t, int k,
                      hs_instruction *g);
/* Records an error about forward instruction y on the builder (with
 * err->instruction = y's name): the differentiation stops. */
void hs__vjp_fail(hs_vjp *v, const hs_instruction *y, hs_status s,
                  const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* ", op_name <op_name>" of y, or nothing: two printf arguments after a
 * "%s%s" that follows y's name in a rule's error, so that an error about
 * an inlined copy still says where in the user's program it is. */
#define OP_NAME(y) (y)->op_name ? ", op_name " : "", \
                   (y)->op_name ? (y)->op_name : ""

/* ---- emit.c: builder shorthands (NULL in, NULL out) ---------------------- */

/* An array of shape's dimensions (f32), every element v. */
hs_instruction *hs__ad_fill(hs_builder *b, float v, const hs_shape *like);
hs_instruction *hs__ad_zeros(hs_builder *b, const hs_shape *like);
/* x op fill(c): x scaled, shifted, ... by a scalar constant. */
hs_instruction *hs__ad_scalar_op(hs_builder *b, hs_opcode op,
                                 hs_instruction *x, float c);
hs_instruction *hs__ad_bin(hs_builder *b, hs_opcode op, hs_instruction *x,
                           hs_instruction *y);
/* s32 scalar constants start[0..n). */
void hs__ad_s32_consts(hs_builder *b, const int64_t *start, int n,
                       hs_instruction **out);
/* Appends an instruction whose shape the caller knows (for opcodes the
 * builder has no function for: reverse). Shape inference still checks it.
 * Sets op_name to the builder's scope. */
hs_instruction *hs__ad_raw(hs_builder *b, hs_opcode op, const hs_shape *shape,
                           hs_instruction *const *ops, int n,
                           const int64_t *dims, int n_dims);
/* Appends op(ops) with text attributes (window=, padding=, epsilon=, ...)
 * and called computations (moved before the builder's computation); the
 * shape is inferred. Sets op_name to the builder's scope. */
hs_instruction *hs__ad_emit(hs_builder *b, hs_opcode op,
                            hs_instruction *const *ops, int n,
                            hs_computation *const *called, int n_called,
                            const hs_attr *attrs, int n_attrs);
/* The module's computation (lhs: t[], rhs: t[]) -> op(lhs, rhs) (compare:
 * direction d), made on first use under the name base ("add_f32", with a
 * suffix when that name is another computation's); NULL on failure, the
 * builder's error set. */
hs_computation *hs__ad_scalar_comp(hs_builder *b, const char *base,
                                   hs_opcode op, hs_direction d, hs_dtype t);
/* Appends the instruction proto describes (opcode, operands, dims,
 * called computations, text attributes; shape inferred, op_name the
 * builder's scope): what hs__ad_emit does, for an op with dimensions=
 * and a called computation (sort). */
hs_instruction *hs__ad_emit_proto(hs_builder *b,
                                  const hs_instruction *proto);
/* Transposes x by perm unless perm is the identity. */
hs_instruction *hs__ad_transpose(hs_builder *b, hs_instruction *x,
                                 const int64_t *perm);

/* ---- rule families -------------------------------------------------------- */

/* vjp_elementwise.c */
void hs__vjp_unary(hs_vjp *v, hs_instruction *y);
void hs__vjp_convert(hs_vjp *v, hs_instruction *y);
void hs__vjp_binary(hs_vjp *v, hs_instruction *y);
/* Whether a float binary op's derivative line (vjp_elementwise.c) gives
 * it one. */
bool hs__vjp_binary_differentiable(hs_opcode op);
void hs__vjp_select(hs_vjp *v, hs_instruction *y);
void hs__vjp_clamp(hs_vjp *v, hs_instruction *y);

/* vjp_data.c */
void hs__vjp_broadcast(hs_vjp *v, hs_instruction *y);
void hs__vjp_reshape(hs_vjp *v, hs_instruction *y);
void hs__vjp_transpose(hs_vjp *v, hs_instruction *y);
void hs__vjp_slice(hs_vjp *v, hs_instruction *y);
void hs__vjp_concatenate(hs_vjp *v, hs_instruction *y);
void hs__vjp_reverse(hs_vjp *v, hs_instruction *y);
void hs__vjp_dynamic_slice(hs_vjp *v, hs_instruction *y);
void hs__vjp_dynamic_update_slice(hs_vjp *v, hs_instruction *y);
void hs__vjp_identity(hs_vjp *v, hs_instruction *y); /* copy */

/* vjp_dot.c */
void hs__vjp_dot(hs_vjp *v, hs_instruction *y);

/* vjp_conv.c */
void hs__vjp_convolution(hs_vjp *v, hs_instruction *y);

/* vjp_reduce.c */
void hs__vjp_reduce(hs_vjp *v, hs_instruction *y);
/* The opcode of y's reducer computation (p0, p1) -> op(p0, p1) (either
 * order), or -1: reduce and reduce-window. */
int hs__vjp_reducer_op(const hs_instruction *y);

/* vjp_gather.c */
void hs__vjp_gather(hs_vjp *v, hs_instruction *y);
/* The upper bound of each index component, broadcast to i's shape and
 * type: x's size minus the window's (d->slice_sizes) along the operand
 * dimension the component indexes. What gather clamps to, and past which
 * scatter skips a window. */
hs_instruction *hs__ad_index_upper(hs_builder *b, hs_instruction *i,
                                   const hs_gather_dims *d,
                                   const hs_shape *x);

/* vjp_scatter.c: scatter with an add, overwrite or multiply update */
void hs__vjp_scatter(hs_vjp *v, hs_instruction *y);

/* vjp_sort.c, vjp_topk.c */
void hs__vjp_sort(hs_vjp *v, hs_instruction *y);
/* topk, and the TopK custom-call (hs__vjp_custom_call hands it over) */
void hs__vjp_topk(hs_vjp *v, hs_instruction *y);
/* scatter-add of g into zeros shaped like x (g's type) at positions idx
 * along dimension dim, batched over every other dimension: g and idx
 * have x's dimensions but along dim. What sort and topk hand back. */
hs_instruction *hs__ad_scatter_along(hs_builder *b, const hs_shape *x,
                                     int dim, hs_instruction *idx,
                                     hs_instruction *g);

/* vjp_window.c, vjp_batch_norm.c */
void hs__vjp_reduce_window(hs_vjp *v, hs_instruction *y);
void hs__vjp_batch_norm_training(hs_vjp *v, hs_instruction *y);
void hs__vjp_batch_norm_inference(hs_vjp *v, hs_instruction *y);

/* vjp_control.c */
void hs__vjp_tuple(hs_vjp *v, hs_instruction *y);
void hs__vjp_get_tuple_element(hs_vjp *v, hs_instruction *y);
void hs__vjp_while(hs_vjp *v, hs_instruction *y);
void hs__vjp_custom_call(hs_vjp *v, hs_instruction *y);

#endif
