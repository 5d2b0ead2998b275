/*
 * element_loops.h - element-wise ops over arrays of any executable element
 * type: chunks of ELEM_CHUNK elements are loaded into their wide type
 * (element_types.h), computed there with the element functions of
 * element_ops.h, and stored back at their width.
 *
 * The device runs its fast f32, s32, s64 and pred loops itself
 * (device/kernels_elementwise.c) and everything else through these; the
 * constant folder uses them for every type, so a folded constant has the
 * executed bits. Each returns false (and writes nothing) for an (opcode,
 * type) pair that *_defined of element_ops.h refuses.
 */
#ifndef HS_NUMERICS_ELEMENT_LOOPS_H
#define HS_NUMERICS_ELEMENT_LOOPS_H

#include <stdbool.h>
#include <stdint.h>

#include "hloscope/hs_ir.h"

bool elem_unary_run(hs_opcode op, hs_dtype t, const void *a, void *y,
                    int64_t n);
bool elem_binary_run(hs_opcode op, hs_dtype t, const void *a,
                     const void *b, void *y, int64_t n);
/* y (pred) = compare(a, b) in direction d; floats as IEEE does. */
bool elem_compare_run(hs_direction d, hs_dtype t, const void *a,
                      const void *b, uint8_t *y, int64_t n);
/* clamp(lo, a, hi); a bound with step 0 is a scalar. */
bool elem_clamp_run(hs_dtype t, const void *lo, int64_t lstep,
                    const void *a, const void *hi, int64_t hstep, void *y,
                    int64_t n);
/* reduce-precision to `e` exponent and `m` mantissa bits, computed on the
 * bits of t's wide type (f32 or f64; exact for the narrower floats). */
bool elem_reduce_precision_run(hs_dtype t, int e, int m, const void *a,
                               void *y, int64_t n);
/* y (pred) = isfinite(a) for a float type t. */
bool elem_is_finite_run(hs_dtype t, const void *a, uint8_t *y, int64_t n);

#endif
