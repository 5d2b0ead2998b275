/*
 * hs_opcode.h - the opcode table, the single source of truth for opcodes.
 *
 * Each row: X(ENUM, "text name", arity, category). arity -1 means variadic.
 * The printer and parser use the text name, the verifier the arity, the
 * renderer the category; kernels (device), VJP rules (autodiff) and shape
 * rules (trace) are tables indexed by hs_opcode.
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

#define HS_OPCODE_LIST(X)                                              \
    X(PARAMETER, "parameter", 0, HS_CAT_PARAMETER)                     \
    X(CONSTANT, "constant", 0, HS_CAT_CONSTANT)                        \
    X(IOTA, "iota", 0, HS_CAT_CONSTANT)                                \
    /* element-wise unary */                                           \
    X(ABS, "abs", 1, HS_CAT_ELEMENTWISE)                               \
    X(NEGATE, "negate", 1, HS_CAT_ELEMENTWISE)                         \
    X(EXP, "exponential", 1, HS_CAT_ELEMENTWISE)                       \
    X(EXPM1, "exponential-minus-one", 1, HS_CAT_ELEMENTWISE)           \
    X(LOG, "log", 1, HS_CAT_ELEMENTWISE)                               \
    X(LOG1P, "log-plus-one", 1, HS_CAT_ELEMENTWISE)                    \
    X(SQRT, "sqrt", 1, HS_CAT_ELEMENTWISE)                             \
    X(RSQRT, "rsqrt", 1, HS_CAT_ELEMENTWISE)                           \
    X(TANH, "tanh", 1, HS_CAT_ELEMENTWISE)                             \
    X(LOGISTIC, "logistic", 1, HS_CAT_ELEMENTWISE)                     \
    X(ERF, "erf", 1, HS_CAT_ELEMENTWISE)                               \
    X(SIGN, "sign", 1, HS_CAT_ELEMENTWISE)                             \
    X(FLOOR, "floor", 1, HS_CAT_ELEMENTWISE)                           \
    X(CEIL, "ceil", 1, HS_CAT_ELEMENTWISE)                             \
    X(COS, "cosine", 1, HS_CAT_ELEMENTWISE)                            \
    X(SIN, "sine", 1, HS_CAT_ELEMENTWISE)                              \
    X(NOT, "not", 1, HS_CAT_ELEMENTWISE)                               \
    X(CONVERT, "convert", 1, HS_CAT_ELEMENTWISE)                       \
    X(BITCAST_CONVERT, "bitcast-convert", 1, HS_CAT_ELEMENTWISE)       \
    /* element-wise binary */                                          \
    X(ADD, "add", 2, HS_CAT_ELEMENTWISE)                               \
    X(SUBTRACT, "subtract", 2, HS_CAT_ELEMENTWISE)                     \
    X(MULTIPLY, "multiply", 2, HS_CAT_ELEMENTWISE)                     \
    X(DIVIDE, "divide", 2, HS_CAT_ELEMENTWISE)                         \
    X(MAXIMUM, "maximum", 2, HS_CAT_ELEMENTWISE)                       \
    X(MINIMUM, "minimum", 2, HS_CAT_ELEMENTWISE)                       \
    X(POWER, "power", 2, HS_CAT_ELEMENTWISE)                           \
    X(REMAINDER, "remainder", 2, HS_CAT_ELEMENTWISE)                   \
    X(AND, "and", 2, HS_CAT_ELEMENTWISE)                               \
    X(OR, "or", 2, HS_CAT_ELEMENTWISE)                                 \
    X(XOR, "xor", 2, HS_CAT_ELEMENTWISE)                               \
    X(COMPARE, "compare", 2, HS_CAT_ELEMENTWISE)                       \
    /* element-wise ternary */                                         \
    X(SELECT, "select", 3, HS_CAT_ELEMENTWISE)                         \
    X(CLAMP, "clamp", 3, HS_CAT_ELEMENTWISE)                           \
    /* data movement */                                                \
    X(BROADCAST, "broadcast", 1, HS_CAT_DATA_MOVEMENT)                 \
    X(RESHAPE, "reshape", 1, HS_CAT_DATA_MOVEMENT)                     \
    X(BITCAST, "bitcast", 1, HS_CAT_DATA_MOVEMENT)                     \
    X(TRANSPOSE, "transpose", 1, HS_CAT_DATA_MOVEMENT)                 \
    X(SLICE, "slice", 1, HS_CAT_DATA_MOVEMENT)                         \
    X(CONCATENATE, "concatenate", -1, HS_CAT_DATA_MOVEMENT)            \
    X(REVERSE, "reverse", 1, HS_CAT_DATA_MOVEMENT)                     \
    X(PAD, "pad", 2, HS_CAT_DATA_MOVEMENT)                             \
    X(DYNAMIC_SLICE, "dynamic-slice", -1, HS_CAT_DATA_MOVEMENT)        \
    X(DYNAMIC_UPDATE_SLICE, "dynamic-update-slice", -1,                \
      HS_CAT_DATA_MOVEMENT)                                            \
    X(GATHER, "gather", 2, HS_CAT_DATA_MOVEMENT)                       \
    X(SCATTER, "scatter", -1, HS_CAT_DATA_MOVEMENT)                    \
    /* compute */                                                      \
    X(DOT, "dot", 2, HS_CAT_DOT)                                       \
    X(CONVOLUTION, "convolution", 2, HS_CAT_DOT)                       \
    X(REDUCE, "reduce", -1, HS_CAT_REDUCTION)                          \
    X(REDUCE_WINDOW, "reduce-window", -1, HS_CAT_REDUCTION)            \
    X(MAP, "map", -1, HS_CAT_ELEMENTWISE)                              \
    X(SORT, "sort", -1, HS_CAT_OTHER)                                  \
    X(RNG, "rng", -1, HS_CAT_OTHER)                                    \
    /* tuples */                                                       \
    X(TUPLE, "tuple", -1, HS_CAT_TUPLE)                                \
    X(GET_TUPLE_ELEMENT, "get-tuple-element", 1, HS_CAT_TUPLE)         \
    /* control flow */                                                 \
    X(WHILE, "while", 1, HS_CAT_CONTROL)                               \
    X(CALL, "call", -1, HS_CAT_CONTROL)                                \
    X(CONDITIONAL, "conditional", -1, HS_CAT_CONTROL)                  \
    X(FUSION, "fusion", -1, HS_CAT_FUSION)                             \
    X(CUSTOM_CALL, "custom-call", -1, HS_CAT_CUSTOM_CALL)              \
    X(OPTIMIZATION_BARRIER, "opt-barrier", 1, HS_CAT_OTHER)            \
    X(AFTER_ALL, "after-all", -1, HS_CAT_OTHER)                        \
    /* memory */                                                       \
    X(COPY, "copy", 1, HS_CAT_COPY)                                    \
    X(COPY_START, "copy-start", 1, HS_CAT_COPY)                        \
    X(COPY_DONE, "copy-done", 1, HS_CAT_COPY)                          \
    /* collectives (parsed for analysis) */                            \
    X(ALL_REDUCE, "all-reduce", -1, HS_CAT_COLLECTIVE)                 \
    X(ALL_GATHER, "all-gather", -1, HS_CAT_COLLECTIVE)                 \
    X(REDUCE_SCATTER, "reduce-scatter", -1, HS_CAT_COLLECTIVE)         \
    X(ALL_TO_ALL, "all-to-all", -1, HS_CAT_COLLECTIVE)                 \
    X(COLLECTIVE_PERMUTE, "collective-permute", -1, HS_CAT_COLLECTIVE) \
    X(PARTITION_ID, "partition-id", 0, HS_CAT_OTHER)                   \
    X(REPLICA_ID, "replica-id", 0, HS_CAT_OTHER)                       \
    /* an opcode the parser does not know; its text is kept */         \
    X(UNKNOWN, "unknown", -1, HS_CAT_OTHER)

typedef enum hs_opcode {
#define HS_X(e, n, a, c) HS_OP_##e,
    HS_OPCODE_LIST(HS_X)
#undef HS_X
    HS_OP_COUNT
} hs_opcode;

const char *hs_opcode_name(hs_opcode op);
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
