/*
 * hs_autodiff.h - reverse-mode automatic differentiation over the IR.
 *
 * The forward pass and its gradient live in one computation, as in a
 * jax.grad trace: trace the forward into a builder, then ask for the
 * gradients of a scalar loss with respect to some of its instructions. The
 * gradient instructions are appended to the same builder.
 *
 *     hs_builder *b = hs_builder_new(m, "step", true);
 *     hs_instruction *x = hs_b_parameter(b, 0, &xs, "x");
 *     hs_instruction *w = hs_b_parameter(b, 1, &ws, "w");
 *     hs_instruction *y = hs_b_matmul_nt(b, x, w);
 *     hs_instruction *d = hs_b_binary(b, HS_OP_SUBTRACT, y, target);
 *     hs_instruction *loss = hs_b_reduce_sum(b, hs_b_binary(b,
 *                                HS_OP_MULTIPLY, d, d), all, 2); // f32[]
 *     hs_instruction *gw;
 *     if (hs_autodiff_grad(b, loss, &w, 1, NULL, &gw, &err) != HS_OK) ...
 *     hs_instruction *out[] = {loss, gw};
 *     hs_builder_finish(b, hs_b_tuple(b, out, 2), &err);
 *
 * A forward computation that lives elsewhere (a model's traced module, a
 * while body) is first copied into the builder with hs_autodiff_inline, or
 * differentiated in one call with hs_autodiff_computation.
 *
 * How it works (docs/TRAINING.md): instructions that depend on a
 * differentiated input and hold floating-point values are "active". The
 * computation is walked backwards from the loss (its definition order is a
 * post order), and each active instruction that received a cotangent hands
 * it to its operands through the VJP rule of its opcode. The rules are a
 * table indexed by hs_opcode (engine/src/autodiff/vjp_table.c: one entry per
 * opcode, NULL = not differentiable). Cotangents reaching a value from
 * several users are summed with `add`. An active instruction without a rule
 * is an error naming it ("autodiff: no gradient rule for map (instruction
 * map.12, op_name layers.0/graph/s)").
 *
 * Gradient instructions carry metadata op_name "backward/<forward op_name>"
 * (the prefix is hs_autodiff_options.scope), so a layer's backward pass is
 * grouped like its forward pass.
 */
#ifndef HLOSCOPE_HS_AUTODIFF_H
#define HLOSCOPE_HS_AUTODIFF_H

#include "hloscope/hs_builder.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* The while-loop hook (for scan's reverse scan)                            */
/* ------------------------------------------------------------------------ */

/* A while loop does not keep the values of its iterations, so it has no
 * local VJP rule: it is differentiated by a reverse loop over residuals
 * that the forward loop must save (scan's "save", "remat" or "offload"
 * policy). That lives with scan (engine/src/scan/), which plugs it in here
 * through hs_autodiff_options.while_vjp. Without a hook, differentiating
 * through a while is the error
 *   "autodiff: while loops are differentiated by scan's reverse scan (not
 *    yet): instruction while.12 ..."
 *
 * The hook is called once per active while loop that received a cotangent,
 * after every user of the loop has been differentiated (so the cotangents
 * are complete). It may emit any instructions into b, including a new
 * forward loop that saves residuals (the original loop then becomes dead
 * code unless something else uses it) and the reverse loop. Cotangents are
 * per element of the loop's state tuple (the while's shape). */
typedef struct hs_autodiff_while {
    hs_instruction *loop; /* the forward while, in b's computation */
    hs_instruction *init; /* loop->operands[0], the initial state tuple */
    int n;                /* elements of the state tuple */
    /* n entries: d loss / d (element k of the loop's result), shaped like
     * that element, or NULL when it is zero (not used by the loss, or not
     * floating point). */
    hs_instruction *const *cotangent;
    /* n entries: element k of init depends on a differentiated input and is
     * floating point, so its cotangent is wanted. */
    const bool *active;
    /* n entries the hook fills: d loss / d (element k of init), shaped like
     * that element; NULL means zero. Preset to NULL. */
    hs_instruction **init_cotangent;
} hs_autodiff_while;

/* Returns HS_OK, or an error (filling err) that aborts the differentiation.
 * The hook may also record errors on b; they abort it too. */
typedef hs_status (*hs_autodiff_while_fn)(hs_builder *b, hs_autodiff_while *w,
                                          void *user, hs_error *err);

/* ------------------------------------------------------------------------ */
/* Options                                                                  */
/* ------------------------------------------------------------------------ */

typedef struct hs_autodiff_options {
    /* op_name prefix of gradient instructions: "<scope>/<forward op_name>"
     * (just "<scope>" for a forward instruction without op_name). NULL:
     * "backward". "": the forward op_name unchanged. The builder's current
     * scope, if any, comes first. */
    const char *scope;
    /* Differentiates while loops; NULL: a while on the gradient path is an
     * error (see above). */
    hs_autodiff_while_fn while_vjp;
    void *while_user;
} hs_autodiff_options;

/* ------------------------------------------------------------------------ */
/* Gradients                                                                */
/* ------------------------------------------------------------------------ */

/* Appends to b's computation the gradient of loss with respect to
 * wrt[0..n_wrt) and stores it in grads[0..n_wrt) (each shaped like its
 * wrt; zeros when loss does not depend on it). loss must be an f32 scalar
 * of b's computation; each wrt an f32 array instruction of it defined
 * before loss (usually parameters; an intermediate value gets its total
 * derivative). The same instruction may be listed twice. opts may be NULL.
 *
 * Errors (returned, copied into err, and recorded on b as its sticky
 * error): HS_ERR_INVALID for a bad loss or wrt, HS_ERR_UNSUPPORTED for an
 * active instruction without a gradient rule, with err->instruction naming
 * it; or whatever b failed with. On error grads are set to NULL. */
hs_status hs_autodiff_grad(hs_builder *b, hs_instruction *loss,
                           hs_instruction *const *wrt, int n_wrt,
                           const hs_autodiff_options *opts,
                           hs_instruction **grads, hs_error *err);

/* The vector-Jacobian product from several outputs (what a scan body's
 * reverse step needs): outs[k], arrays of b's computation, receive the
 * cotangents cts[k] (shaped like them; NULL = zero), and grads[k] is the
 * resulting cotangent of wrt[k] (zeros when none reaches it). Errors as
 * hs_autodiff_grad. hs_autodiff_grad(loss) is hs_autodiff_vjp with the
 * loss seeded by 1. */
hs_status hs_autodiff_vjp(hs_builder *b, hs_instruction *const *outs,
                          hs_instruction *const *cts, int n_outs,
                          hs_instruction *const *wrt, int n_wrt,
                          const hs_autodiff_options *opts,
                          hs_instruction **grads, hs_error *err);

/* Copies computation src (of any module, b's included) into b's
 * computation with args[k] in place of parameter(k), and returns the copy
 * of src's root (NULL on error, recorded on b). n_args must equal
 * src->n_params and each argument must have its parameter's dimensions and
 * element type. Computations src calls (reducers, while bodies) are reused
 * when src is in b's module, else copied into it (reducers through the
 * builder's own). Copies keep op_name and the other metadata; names are
 * fresh. map, when not NULL, has room for src->n_instrs entries and
 * receives the copy of src->instrs[k] (the argument for a parameter). */
hs_instruction *hs_autodiff_inline(hs_builder *b, const hs_computation *src,
                                   hs_instruction *const *args, int n_args,
                                   hs_instruction **map);

/* jax.value_and_grad of a computation whose root is an f32 scalar: inlines
 * fwd into b with args (see hs_autodiff_inline), sets *value to the copied
 * root and grads[k] to the gradient with respect to parameter
 * wrt_params[k] of fwd. Errors as hs_autodiff_grad. */
hs_status hs_autodiff_computation(hs_builder *b, const hs_computation *fwd,
                                  hs_instruction *const *args, int n_args,
                                  const int *wrt_params, int n_wrt,
                                  const hs_autodiff_options *opts,
                                  hs_instruction **value,
                                  hs_instruction **grads, hs_error *err);

/* True when the VJP table has a rule for op (while: a rule that needs the
 * hook). */
bool hs_autodiff_has_rule(hs_opcode op);

#ifdef __cplusplus
}
#endif
#endif
