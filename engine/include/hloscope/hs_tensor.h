/*
 * hs_tensor.h - a host-owned array value: a shape and its elements.
 * Executable element types: f32 (float), s32 (int32_t), pred (uint8_t).
 */
#ifndef HLOSCOPE_HS_TENSOR_H
#define HLOSCOPE_HS_TENSOR_H

#include "hloscope/hs_ir.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hs_tensor {
    hs_shape shape; /* an array shape; tuples are not tensors */
    void *data;     /* hs_shape_bytes(&shape) bytes, 64-byte aligned */
} hs_tensor;

/* Zero-filled. NULL on host OOM, for a tuple shape, or for an array
 * without a size (an unbounded dynamic dimension, '?'). */
hs_tensor *hs_tensor_new(const hs_shape *shape);
hs_tensor *hs_tensor_copy(const hs_tensor *t);
void hs_tensor_free(hs_tensor *t);
static inline float *hs_tensor_f32(const hs_tensor *t) { return (float *)t->data; }
int64_t hs_tensor_elements(const hs_tensor *t);

#ifdef __cplusplus
}
#endif
#endif
