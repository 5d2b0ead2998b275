/*
 * passes_internal.h - the rewriting toolkit shared by the passes in
 * engine/src/passes/: a one-sweep rewriter that replaces instructions while
 * keeping the post order, and helpers to make new instructions and read
 * constants. Names start with hs__ (private to the engine).
 */
#ifndef HLOSCOPE_PASSES_INTERNAL_H
#define HLOSCOPE_PASSES_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "hloscope/hs_ir.h"
#include "hloscope/hs_passes.h"
#include "passes/context.h"

/* ---- rewriting a computation in one sweep ------------------------------ */

/* Visits i, whose operands have already been redirected to their
 * replacements. Returns the instruction that replaces i (one defined
 * earlier, or one made with hs__add_like during this call), or NULL to
 * keep i. May instead modify i in place and set *changed. */
typedef hs_instruction *(*hs__visit_fn)(hs_instruction *i, void *state,
                                        bool *changed);

/* Sweeps c in definition order: redirects each instruction's operands to
 * replacements made so far, calls visit, and drops replaced instructions
 * from c (they have no users left). New instructions that visit makes land
 * just before the instruction being visited, so the order stays a post
 * order. The root follows its replacement. Sets *changed when anything
 * was replaced or modified. */
hs_status hs__rewrite_computation(hs_computation *c,
                                  const hs_pass_context *ctx,
                                  hs__visit_fn visit, void *state,
                                  bool *changed, hs_error *err);

/* Appends a new instruction to like's computation with like's metadata
 * (op_name, op_type), marked as made during the current sweep. */
hs_instruction *hs__add_like(const hs_instruction *like, hs_opcode op,
                             const hs_shape *shape,
                             hs_instruction *const *operands, int n);

/* ---- constants ---------------------------------------------------------- */

/* True for element types whose constants the passes can read and fold. */
bool hs__foldable_dtype(hs_dtype t);
/* A constant with a decoded literal of a foldable type. */
bool hs__is_constant(const hs_instruction *i);
/* Element k of a constant, or of a broadcast of a scalar constant, as a
 * double (pred: 0/1). */
double hs__constant_get(const hs_instruction *i, int64_t k);
/* i is a constant, or a broadcast of a constant, whose elements all equal
 * v (f32, s32 or pred). */
bool hs__is_all(const hs_instruction *i, double v);
/* A new constant of shape (i's layout kept) holding data (natural C
 * layout, hs_shape_elements(shape) elements), placed like `like`. */
hs_instruction *hs__add_constant(const hs_instruction *like,
                                 const hs_shape *shape, const void *data);

/* ---- constant folding (fold.c) ------------------------------------------ */

/* When i can be folded (its operands are constants or broadcasts of scalar
 * constants, its element types are f32/s32/pred, and its result has at
 * most max_elements elements), makes the folded constant and returns it;
 * NULL otherwise. Broadcasts of scalar constants are never folded by
 * themselves: they stay cheap to store and to recognise. */
hs_instruction *hs__fold(hs_instruction *i, int64_t max_elements);
/* Whether op has a folding rule at all (fold.c's table). */
bool hs__fold_has_rule(hs_opcode op);


#endif
