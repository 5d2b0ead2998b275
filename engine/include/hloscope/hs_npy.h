/*
 * hs_npy.h - NumPy .npy files (format version 1.0), so that anyone can
 * check hloscope's inputs, parameters and outputs with NumPy or PyTorch.
 */
#ifndef HLOSCOPE_HS_NPY_H
#define HLOSCOPE_HS_NPY_H

#include "hloscope/hs_tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Writes t in C order: pred '|b1', s8..s64 '|i1'..'<i8', u8..u64,
 * f16 '<f2', f32 '<f4', f64 '<f8'; bf16 and the f8 types, which NumPy does
 * not have, as their exact values in '<f4'. Atomic: writes PATH.tmp and
 * renames it. */
hs_status hs_npy_write(const char *path, const hs_tensor *t, hs_error *err);
/* Writes raw f32 data of the given shape. */
hs_status hs_npy_write_f32(const char *path, const hs_shape *shape,
                           const float *data, hs_error *err);
/* Reads a little-endian bool, int, uint or float .npy file (1 to 8 bytes
 * per element) in C order into a new tensor. */
hs_tensor *hs_npy_read(const char *path, hs_error *err);
/* Elements [start, start + n) of t as doubles, for summaries of any
 * element type: exact for every executable type except 64-bit integers
 * beyond 2^53 (rounded). False, writing nothing, when t's type is not
 * executed (complex, sub-byte) or the range is outside t. */
bool hs_tensor_values_f64(const hs_tensor *t, int64_t start, int64_t n,
                          double *out);
/* What a run prints of an output: the sum of its elements and the first
 * HS_SUMMARY_FIRST of them, at every executed type (as doubles). ok is
 * false when t's type is not executed (complex, sub-byte): only its
 * shape can be shown. The CLI's `run` and the REST run answer both show
 * this, so they agree. */
enum { HS_SUMMARY_FIRST = 8 };
typedef struct hs_tensor_summary {
    bool ok;
    double sum;
    int n_first;
    double first[HS_SUMMARY_FIRST];
} hs_tensor_summary;
hs_tensor_summary hs_tensor_summarize(const hs_tensor *t);
/* Creates DIR and its parents (mode 0755); ok when it exists. */
hs_status hs_mkdirs(const char *dir, hs_error *err);

#ifdef __cplusplus
}
#endif
#endif
