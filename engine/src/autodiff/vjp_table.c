/* vjp_table.c - the VJP rule of every opcode, indexed by hs_opcode.
 *
 * The table is generated from HS_OPCODE_LIST (hs_opcode.h): each opcode E
 * takes its rule from the macro VJP_E below, or, for a float unary or
 * binary op, from its family (hs__vjp_unary, hs__vjp_binary, with the
 * op's line in vjp_elementwise.c's derivative lists), so adding an
 * opcode without deciding how it is differentiated does not compile.
 * NULL means "not differentiable": reaching it with a cotangent is an
 * error naming the instruction. Leaves (parameter, constant, iota) have no operands to hand
 * a cotangent to, and ops with integer or pred results (compare, and, not,
 * iota, ...) are never active, so their NULL never shows. */
#include "autodiff/autodiff_internal.h"

/* leaves */
#define VJP_PARAMETER NULL
#define VJP_CONSTANT NULL
#define VJP_IOTA NULL
/* element-wise unary */
#define VJP_NOT NULL
#define VJP_CONVERT hs__vjp_convert
#define VJP_BITCAST_CONVERT NULL
/* element-wise binary (a float binary op, family BINARY_ANY, takes the
 * family's rule) */
#define VJP_AND NULL
#define VJP_OR NULL
#define VJP_XOR NULL
#define VJP_COMPARE NULL
#define VJP_SHIFT_LEFT NULL
#define VJP_SHIFT_RIGHT_LOGICAL NULL
#define VJP_SHIFT_RIGHT_ARITHMETIC NULL
#define VJP_POPCNT NULL
#define VJP_CLZ NULL
#define VJP_IS_FINITE NULL
#define VJP_REDUCE_PRECISION NULL /* JAX's rule (the cotangent reduced
                                     the same way) is not written yet */
/* element-wise ternary */
#define VJP_SELECT hs__vjp_select
#define VJP_CLAMP hs__vjp_clamp
/* data movement */
#define VJP_BROADCAST hs__vjp_broadcast
#define VJP_RESHAPE hs__vjp_reshape
#define VJP_BITCAST hs__vjp_reshape
#define VJP_TRANSPOSE hs__vjp_transpose
#define VJP_SLICE hs__vjp_slice
#define VJP_CONCATENATE hs__vjp_concatenate
#define VJP_REVERSE hs__vjp_reverse
#define VJP_PAD NULL
#define VJP_DYNAMIC_SLICE hs__vjp_dynamic_slice
#define VJP_DYNAMIC_UPDATE_SLICE hs__vjp_dynamic_update_slice
#define VJP_GATHER hs__vjp_gather
#define VJP_SCATTER hs__vjp_scatter
/* compute */
#define VJP_DOT hs__vjp_dot
#define VJP_CONVOLUTION hs__vjp_convolution
#define VJP_REDUCE hs__vjp_reduce
#define VJP_REDUCE_WINDOW hs__vjp_reduce_window
#define VJP_SELECT_AND_SCATTER NULL
#define VJP_BATCH_NORM_TRAINING hs__vjp_batch_norm_training
#define VJP_BATCH_NORM_INFERENCE hs__vjp_batch_norm_inference
#define VJP_BATCH_NORM_GRAD NULL
#define VJP_MAP NULL
#define VJP_SORT hs__vjp_sort
#define VJP_TOPK hs__vjp_topk
#define VJP_RNG NULL
/* not differentiable: its results are integers (a u64 state and
 * unsigned bits), which carry no cotangent, as in JAX, whose
 * rng_bit_generator has no differentiation rule */
#define VJP_RNG_BIT_GENERATOR NULL
/* tuples */
#define VJP_TUPLE hs__vjp_tuple
#define VJP_GET_TUPLE_ELEMENT hs__vjp_get_tuple_element
/* control flow */
#define VJP_WHILE hs__vjp_while
#define VJP_CALL NULL
#define VJP_CONDITIONAL NULL
#define VJP_FUSION NULL
#define VJP_CUSTOM_CALL hs__vjp_custom_call
#define VJP_OPTIMIZATION_BARRIER NULL
#define VJP_AFTER_ALL NULL
/* memory */
#define VJP_COPY hs__vjp_identity
#define VJP_COPY_START NULL
#define VJP_COPY_DONE NULL
/* collectives */
#define VJP_ALL_REDUCE NULL
#define VJP_ALL_GATHER NULL
#define VJP_REDUCE_SCATTER NULL
#define VJP_ALL_TO_ALL NULL
#define VJP_COLLECTIVE_PERMUTE NULL
#define VJP_PARTITION_ID NULL
#define VJP_REPLICA_ID NULL
#define VJP_UNKNOWN NULL

/* A float unary or binary op's rule is the family's, with its derivative
 * in vjp_elementwise.c's lists; every other opcode has its own VJP_E
 * above. */
#define VJP_OF_FAMILY_OWN(e) VJP_##e
#define VJP_OF_FAMILY_UNARY_ANY(e) hs__vjp_unary
#define VJP_OF_FAMILY_UNARY_FLOAT(e) hs__vjp_unary
#define VJP_OF_FAMILY_UNARY_LOGICAL(e) VJP_##e
#define VJP_OF_FAMILY_BINARY_ANY(e) hs__vjp_binary
#define VJP_OF_FAMILY_BINARY_LOGICAL(e) VJP_##e

static const hs_vjp_rule vjp_table[HS_OP_COUNT] = {
#define HS_X(e, n, a, c, f) [HS_OP_##e] = VJP_OF_FAMILY_##f(e),
    HS_OPCODE_LIST(HS_X)
#undef HS_X
};

hs_vjp_rule hs__vjp_rule(hs_opcode op)
{
    if ((unsigned)op >= HS_OP_COUNT)
        return NULL;
    /* A float binary op whose derivative line says it has none (N(E)). */
    if (vjp_table[op] == hs__vjp_binary && !hs__vjp_binary_differentiable(op))
        return NULL;
    return vjp_table[op];
}

bool hs_autodiff_has_rule(hs_opcode op) { return hs__vjp_rule(op) != NULL; }
