/*
 * fusion_program.h - the element-wise program a loop fusion compiles to
 * (fusion_program.c builds it at plan time, kernels_fusion.c runs it).
 *
 * The result of the fusion is computed in blocks of DEV_FUSION_BLOCK
 * consecutive elements (row-major). Every value of the program is one
 * block of elements of one element type, held in a register: a slot of a
 * small scratch area, or a pointer straight into an operand when the
 * operand is read contiguously. A value is one of
 *
 *   load     an operand (or a constant's literal) read through an index
 *            map: element i of the block is operand[base + sum_d c_d * s_d]
 *            where c is the coordinate of result element i0 + i over the
 *            (merged) result dimensions. Broadcasts, transposes, slices,
 *            reverses and reshapes between the root and the operand are
 *            all folded into that map.
 *   iota     the same index map, its values converted to the element type.
 *   op       unary, binary, compare, select, clamp, convert or
 *            bitcast-convert of earlier values, through the same element
 *            loops as the unfused kernels (bit-identical results).
 *
 * Loads whose map is constant (a scalar, a broadcast scalar) and ops on
 * such values only are "invariant": computed once per execution.
 */
#ifndef HS_DEVICE_FUSION_PROGRAM_H
#define HS_DEVICE_FUSION_PROGRAM_H

#include "device/device_internal.h"

enum {
    DEV_FUSION_BLOCK = 512,       /* elements per block */
    DEV_FUSION_MAX_VALUES = 1024, /* larger fused computations fall back */
    /* Longest operand chain compiled (the compile recurses, about 1.5 KiB
     * of stack per level); deeper fused computations fall back. */
    DEV_FUSION_MAX_DEPTH = 100,
    DEV_FUSION_SLOT_BYTES = DEV_FUSION_BLOCK * 8 /* widest type: 8 bytes */
};

typedef enum dev_fop_kind {
    DEV_FOP_LOAD,
    DEV_FOP_IOTA,
    DEV_FOP_UNARY,
    DEV_FOP_BINARY,
    DEV_FOP_COMPARE,
    DEV_FOP_SELECT,
    DEV_FOP_CLAMP,
    DEV_FOP_CONVERT,
    DEV_FOP_BITCAST /* bitcast-convert: the same bytes, another type */
} dev_fop_kind;

typedef enum dev_fplace {
    DEV_FPLACE_SLOT,      /* computed per block into a scratch slot */
    DEV_FPLACE_DIRECT,    /* load: a pointer into the operand, no copy */
    DEV_FPLACE_INVARIANT, /* computed once, in a slot of its own */
    DEV_FPLACE_OUT        /* the root op: written straight to the result */
} dev_fplace;

/* index = base + sum over the merged result dimensions of c_d * stride_d;
 * dimensions that are contiguous in both spaces are merged, so a plain
 * element-wise read is rank 1 with stride 1. */
typedef struct dev_index_map {
    int rank;
    int64_t dims[HS_MAX_RANK];
    int64_t strides[HS_MAX_RANK];
    int64_t base;
} dev_index_map;

typedef struct dev_fop {
    dev_fop_kind kind;
    dev_fplace place;
    hs_opcode op;
    hs_direction dir;
    hs_dtype type;    /* of the result */
    hs_dtype in_type; /* of the first operand (compare, convert, select b) */
    int slot;         /* scratch slot (SLOT, INVARIANT), else -1 */
    int n_src;
    int src[3];       /* earlier values */
    int operand;      /* load: fusion operand, -1 for a literal */
    const void *literal;
    dev_index_map map; /* load, iota */
} dev_fop;

struct dev_fusion_program {
    int n_values;
    dev_fop *ops;   /* in execution order; value k is ops[k] */
    int n_slots;
    int root;       /* the value that is the result */
    hs_dtype type;  /* of the result */
    int64_t n;      /* result elements */
    int n_operands;
    bool has_invariants;
};

#endif
