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

/* Writes t (f32 '<f4', s32 '<i4', pred '|b1') in C order. Atomic: writes
 * PATH.tmp and renames it. */
hs_status hs_npy_write(const char *path, const hs_tensor *t, hs_error *err);
/* Writes raw f32 data of the given shape. */
hs_status hs_npy_write_f32(const char *path, const hs_shape *shape,
                           const float *data, hs_error *err);
/* Reads an f32/s32/bool .npy file in C order into a new tensor. */
hs_tensor *hs_npy_read(const char *path, hs_error *err);
/* Creates DIR and its parents (mode 0755); ok when it exists. */
hs_status hs_mkdirs(const char *dir, hs_error *err);

#ifdef __cplusplus
}
#endif
#endif
