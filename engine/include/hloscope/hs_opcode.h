/*
 * hs_opcode.h - the opcode table, the single source of truth for opcodes.
 *
 * Each row: X(ENUM, "text name", arity, category, family). arity -1 means
 * variadic. The printer and parser use the text name, the verifier the
 * arity, the renderer the category. The family decides the shape rule,
 * kernel, cost and constant folding of a whole family of element-wise ops
 * at once (UNARY_FLOAT: float operand, one result per element, the element
 * function picked by opcode); an OWN opcode has its own entry in each of
 * those tables (SHAPE_E in ir/infer.c, KERNEL_E in device/kernel_table.c,
 * COST_E in device/cost.c, FOLD_E in passes/fold.c) and its own VJP rule
 * (VJP_E in autodiff/vjp_table.c); a float unary op (UNARY_FLOAT,
 * UNARY_ANY) and a float binary op (BINARY_ANY) have one line of scalar
 * functions in numerics/element_ops.h and one derivative in
 * autodiff/vjp_elementwise.c. A missing entry does not compile.
 * docs/ARCHITECTURE.md, "Adding an opcode", walks through it.
 */
#ifndef HLOSCOPE_HS_OPCODE_H
#define HLOSCOPE_HS_OPCODE_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum hs_op_category {
    HS_CAT_PARAMETER,
    HS_CAT_CONSTANT,
    HS_CAT_ELEMENTWISE, /* unary, binary and ternary element-wise ops */
    HS_CAT_DATA_MOVEMENT, /* broadcast, reshape, transpose, slice, ... */
    HS_CAT_DOT,           /* dot, convolution */
    HS_CAT_REDUCTION,     /* reduce, reduce-window, ... */
    HS_CAT_TUPLE,         /* tuple, get-tuple-element */
    HS_CAT_CONTROL,       /* while, call, conditional */
    HS_CAT_FUSION,
    HS_CAT_CUSTOM_CALL,
    HS_CAT_COPY,          /* copy, copy-start, copy-done: memory traffic */
    HS_CAT_COLLECTIVE,
    HS_CAT_OTHER,
    HS_CAT_COUNT
} hs_op_category;

#define HS_OPCODE_LIST(X)                                                   \
    X(PARAMETER, "parameter", 0, HS_CAT_PARAMETER, OWN)                     \
    X(CONSTANT, "constant", 0, HS_CAT_CONSTANT, OWN)                        \
    X(IOTA, "iota", 0, HS_CAT_CONSTANT, OWN)                                \
    /* element-wise unary */                                                \
    X(ABS, "abs", 1, HS_CAT_ELEMENTWISE, UNARY_ANY)                         \
    X(NEGATE, "negate", 1, HS_CAT_ELEMENTWISE, UNARY_ANY)                   \
    X(EXP, "exponential", 1, HS_CAT_ELEMENTWISE, UNARY_FLOAT)               \
    X(EXPM1, "exponential-minus-one", 1, HS_CAT_ELEMENTWISE, UNARY_FLOAT)   \
    X(LOG, "log", 1, HS_CAT_ELEMENTWISE, UNARY_FLOAT)                       \
    X(LOG1P, "log-plus-one", 1, HS_CAT_ELEMENTWISE, UNARY_FLOAT)            \
    X(SQRT, "sqrt", 1, HS_CAT_ELEMENTWISE, UNARY_FLOAT)                     \
    X(RSQRT, "rsqrt", 1, HS_CAT_ELEMENTWISE, UNARY_FLOAT)                   \
    X(TANH, "tanh", 1, HS_CAT_ELEMENTWISE, UNARY_FLOAT)                     \
    X(LOGISTIC, "logistic", 1, HS_CAT_ELEMENTWISE, UNARY_FLOAT)             \
    X(ERF, "erf", 1, HS_CAT_ELEMENTWISE, UNARY_FLOAT)                       \
    X(SIGN, "sign", 1, HS_CAT_ELEMENTWISE, UNARY_ANY)                       \
    X(FLOOR, "floor", 1, HS_CAT_ELEMENTWISE, UNARY_FLOAT)                   \
    X(CEIL, "ceil", 1, HS_CAT_ELEMENTWISE, UNARY_FLOAT)                     \
    X(COS, "cosine", 1, HS_CAT_ELEMENTWISE, UNARY_FLOAT)                    \
    X(SIN, "sine", 1, HS_CAT_ELEMENTWISE, UNARY_FLOAT)                      \
    X(NOT, "not", 1, HS_CAT_ELEMENTWISE, UNARY_LOGICAL)                     \
    X(CONVERT, "convert", 1, HS_CAT_ELEMENTWISE, OWN)                       \
    X(BITCAST_CONVERT, "bitcast-convert", 1, HS_CAT_ELEMENTWISE, OWN)       \
    /* element-wise binary */                                               \
    X(ADD, "add", 2, HS_CAT_ELEMENTWISE, BINARY_ANY)                        \
    X(SUBTRACT, "subtract", 2, HS_CAT_ELEMENTWISE, BINARY_ANY)              \
    X(MULTIPLY, "multiply", 2, HS_CAT_ELEMENTWISE, BINARY_ANY)              \
    X(DIVIDE, "divide", 2, HS_CAT_ELEMENTWISE, BINARY_ANY)                  \
    X(MAXIMUM, "maximum", 2, HS_CAT_ELEMENTWISE, BINARY_ANY)                \
    X(MINIMUM, "minimum", 2, HS_CAT_ELEMENTWISE, BINARY_ANY)                \
    X(POWER, "power", 2, HS_CAT_ELEMENTWISE, BINARY_ANY)                    \
    X(REMAINDER, "remainder", 2, HS_CAT_ELEMENTWISE, BINARY_ANY)            \
    X(AND, "and", 2, HS_CAT_ELEMENTWISE, BINARY_LOGICAL)                    \
    X(OR, "or", 2, HS_CAT_ELEMENTWISE, BINARY_LOGICAL)                      \
    X(XOR, "xor", 2, HS_CAT_ELEMENTWISE, BINARY_LOGICAL)                    \
    X(COMPARE, "compare", 2, HS_CAT_ELEMENTWISE, OWN)                       \
    /* element-wise: bits, rounding and the rest of XLA's set */           \
    X(SHIFT_LEFT, "shift-left", 2, HS_CAT_ELEMENTWISE, BINARY_LOGICAL)      \
    X(SHIFT_RIGHT_LOGICAL, "shift-right-logical", 2, HS_CAT_ELEMENTWISE,    \
      BINARY_LOGICAL)                                                       \
    X(SHIFT_RIGHT_ARITHMETIC, "shift-right-arithmetic", 2,                  \
      HS_CAT_ELEMENTWISE, BINARY_LOGICAL)                                   \
    X(POPCNT, "popcnt", 1, HS_CAT_ELEMENTWISE, UNARY_LOGICAL)               \
    X(CLZ, "count-leading-zeros", 1, HS_CAT_ELEMENTWISE, UNARY_LOGICAL)     \
    X(ATAN2, "atan2", 2, HS_CAT_ELEMENTWISE, BINARY_ANY)                    \
    X(CBRT, "cbrt", 1, HS_CAT_ELEMENTWISE, UNARY_FLOAT)                     \
    X(TAN, "tan", 1, HS_CAT_ELEMENTWISE, UNARY_FLOAT)                       \
    X(ROUND_NEAREST_EVEN, "round-nearest-even", 1, HS_CAT_ELEMENTWISE,      \
      UNARY_FLOAT)                                                          \
    X(ROUND_NEAREST_AFZ, "round-nearest-afz", 1, HS_CAT_ELEMENTWISE,        \
      UNARY_FLOAT)                                                          \
    X(IS_FINITE, "is-finite", 1, HS_CAT_ELEMENTWISE, OWN)                   \
    X(REDUCE_PRECISION, "reduce-precision", 1, HS_CAT_ELEMENTWISE, OWN)     \
    /* element-wise ternary */                                              \
    X(SELECT, "select", 3, HS_CAT_ELEMENTWISE, OWN)                         \
    X(CLAMP, "clamp", 3, HS_CAT_ELEMENTWISE, OWN)                           \
    /* data movement */                                                     \
    X(BROADCAST, "broadcast", 1, HS_CAT_DATA_MOVEMENT, OWN)                 \
    X(RESHAPE, "reshape", 1, HS_CAT_DATA_MOVEMENT, OWN)                     \
    X(BITCAST, "bitcast", 1, HS_CAT_DATA_MOVEMENT, OWN)                     \
    X(TRANSPOSE, "transpose", 1, HS_CAT_DATA_MOVEMENT, OWN)                 \
    X(SLICE, "slice", 1, HS_CAT_DATA_MOVEMENT, OWN)                         \
    X(CONCATENATE, "concatenate", -1, HS_CAT_DATA_MOVEMENT, OWN)            \
    X(REVERSE, "reverse", 1, HS_CAT_DATA_MOVEMENT, OWN)                     \
    X(PAD, "pad", 2, HS_CAT_DATA_MOVEMENT, OWN)                             \
    X(DYNAMIC_SLICE, "dynamic-slice", -1, HS_CAT_DATA_MOVEMENT, OWN)        \
    X(DYNAMIC_UPDATE_SLICE, "dynamic-update-slice", -1,                     \
      HS_CAT_DATA_MOVEMENT, OWN)                                            \
    X(GATHER, "gather", 2, HS_CAT_DATA_MOVEMENT, OWN)                       \
    X(SCATTER, "scatter", -1, HS_CAT_DATA_MOVEMENT, OWN)                    \
    /* compute */                                                           \
    X(DOT, "dot", 2, HS_CAT_DOT, OWN)                                       \
    X(CONVOLUTION, "convolution", 2, HS_CAT_DOT, OWN)                       \
    X(REDUCE, "reduce", -1, HS_CAT_REDUCTION, OWN)                          \
    X(REDUCE_WINDOW, "reduce-window", -1, HS_CAT_REDUCTION, OWN)            \
    X(SELECT_AND_SCATTER, "select-and-scatter", 3, HS_CAT_REDUCTION, OWN)   \
    X(BATCH_NORM_TRAINING, "batch-norm-training", 3, HS_CAT_REDUCTION, OWN) \
    X(BATCH_NORM_INFERENCE, "batch-norm-inference", 5, HS_CAT_OTHER, OWN)   \
    X(BATCH_NORM_GRAD, "batch-norm-grad", 5, HS_CAT_REDUCTION, OWN)         \
    X(MAP, "map", -1, HS_CAT_ELEMENTWISE, OWN)                              \
    X(SORT, "sort", -1, HS_CAT_OTHER, OWN)                                  \
    X(TOPK, "topk", 1, HS_CAT_OTHER, OWN)                                   \
    X(RNG, "rng", -1, HS_CAT_OTHER, OWN)                                    \
    /* XLA's stateless generator: (new state, bits) of a u64 state */     \
    X(RNG_BIT_GENERATOR, "rng-bit-generator", 1, HS_CAT_OTHER, OWN)        \
    /* tuples */                                                            \
    X(TUPLE, "tuple", -1, HS_CAT_TUPLE, OWN)                                \
    X(GET_TUPLE_ELEMENT, "get-tuple-element", 1, HS_CAT_TUPLE, OWN)         \
    /* control flow */                                                      \
    X(WHILE, "while", 1, HS_CAT_CONTROL, OWN)                               \
    X(CALL, "call", -1, HS_CAT_CONTROL, OWN)                                \
    X(CONDITIONAL, "conditional", -1, HS_CAT_CONTROL, OWN)                  \
    X(FUSION, "fusion", -1, HS_CAT_FUSION, OWN)                             \
    X(CUSTOM_CALL, "custom-call", -1, HS_CAT_CUSTOM_CALL, OWN)              \
    X(OPTIMIZATION_BARRIER, "opt-barrier", 1, HS_CAT_OTHER, OWN)            \
    X(AFTER_ALL, "after-all", -1, HS_CAT_OTHER, OWN)                        \
    /* memory */                                                            \
    X(COPY, "copy", 1, HS_CAT_COPY, OWN)                                    \
    X(COPY_START, "copy-start", 1, HS_CAT_COPY, OWN)                        \
    X(COPY_DONE, "copy-done", 1, HS_CAT_COPY, OWN)                          \
    /* collectives (parsed for analysis) */                                 \
    X(ALL_REDUCE, "all-reduce", -1, HS_CAT_COLLECTIVE, OWN)                 \
    X(ALL_GATHER, "all-gather", -1, HS_CAT_COLLECTIVE, OWN)                 \
    X(REDUCE_SCATTER, "reduce-scatter", -1, HS_CAT_COLLECTIVE, OWN)         \
    X(ALL_TO_ALL, "all-to-all", -1, HS_CAT_COLLECTIVE, OWN)                 \
    X(COLLECTIVE_PERMUTE, "collective-permute", -1, HS_CAT_COLLECTIVE, OWN) \
    X(PARTITION_ID, "partition-id", 0, HS_CAT_OTHER, OWN)                   \
    X(REPLICA_ID, "replica-id", 0, HS_CAT_OTHER, OWN)                       \
    /* an opcode the parser does not know; its text is kept */              \
    X(UNKNOWN, "unknown", -1, HS_CAT_OTHER, OWN)

typedef enum hs_opcode {
#define HS_X(e, n, a, c, f) HS_OP_##e,
    HS_OPCODE_LIST(HS_X)
#undef HS_X
    HS_OP_COUNT
} hs_opcode;

/* The families of the list's last column. */
typedef enum hs_op_family {
    HS_FAM_OWN,
    HS_FAM_UNARY_ANY,
    HS_FAM_UNARY_FLOAT,
    HS_FAM_UNARY_LOGICAL,
    HS_FAM_BINARY_ANY,
    HS_FAM_BINARY_LOGICAL,
} hs_op_family;

/* The family of each opcode as a constant expression, HS_FAMILY_OF_E, so
 * that a per-family table elsewhere can check at compile time that it has
 * an entry for every member and nothing else (numerics/element_ops.h,
 * autodiff/vjp_elementwise.c). */
enum {
#define HS_X(e, n, a, c, f) HS_FAMILY_OF_##e = HS_FAM_##f,
    HS_OPCODE_LIST(HS_X)
#undef HS_X
};
/* How many opcodes are float unary ops: families UNARY_FLOAT and UNARY_ANY
 * (whose float operands take a float function). */
#define HS_IS_FLOAT_UNARY_FAMILY(fam)                                      \
    ((int)(fam) == (int)HS_FAM_UNARY_FLOAT ||                             \
     (int)(fam) == (int)HS_FAM_UNARY_ANY)
enum {
#define HS_X(e, n, a, c, f) +HS_IS_FLOAT_UNARY_FAMILY(HS_FAM_##f)
    HS_N_FLOAT_UNARY = 0 HS_OPCODE_LIST(HS_X)
#undef HS_X
};

/* How many opcodes are float binary ops: family BINARY_ANY, whose float
 * operands take a float function (numerics/element_ops.h) and a
 * derivative (autodiff/vjp_elementwise.c). */
#define HS_IS_FLOAT_BINARY_FAMILY(fam) ((int)(fam) == (int)HS_FAM_BINARY_ANY)
enum {
#define HS_X(e, n, a, c, f) +HS_IS_FLOAT_BINARY_FAMILY(HS_FAM_##f)
    HS_N_FLOAT_BINARY = 0 HS_OPCODE_LIST(HS_X)
#undef HS_X
};

const char *hs_opcode_name(hs_opcode op);
hs_op_family hs_opcode_family(hs_opcode op);
/* Whether op is in one of the unary (binary) element-wise families. */
bool hs_opcode_is_unary_family(hs_opcode op);
bool hs_opcode_is_binary_family(hs_opcode op);
int hs_opcode_arity(hs_opcode op); /* -1 variadic */
hs_op_category hs_opcode_category(hs_opcode op);
const char *hs_op_category_name(hs_op_category c);
/* Looks up a text name; returns false (and HS_OP_UNKNOWN) when unknown. */
bool hs_opcode_parse(const char *name, size_t len, hs_opcode *out);
bool hs_opcode_is_elementwise(hs_opcode op);

#ifdef __cplusplus
}
#endif
#endif
