/*
 * element_types.h - how the device stores and computes each element type,
 * written once.
 *
 * Every executable type is stored at its own width (sub-byte types are not
 * executable yet) and computed in one of five wide types, its class, as
 * XLA's CPU backend does:
 *
 *   class     computes in  types
 *   ELEM_F32  float        f32, f16, bf16, the f8 types, f4e2m1fn
 *   ELEM_F64  double       f64
 *   ELEM_SINT int64_t      s8, s16, s32, s64 (sign-extended)
 *   ELEM_UINT uint64_t     u8, u16, u32, u64 (zero-extended)
 *   ELEM_PRED uint8_t      pred (0 or 1)
 *
 * A kernel for a narrow type loads a chunk of ELEM_CHUNK elements into
 * the wide type (elem_load), runs the wide loop, and stores the chunk back
 * (elem_store), which rounds floats to nearest even and wraps integers at
 * their width. elem_store also converts between classes, so a convert is a
 * load of the source and a store into the target: float to integer
 * saturates and maps NaN to 0, integer to integer wraps, anything to pred
 * is v != 0 (see docs/ELEMENT_TYPES.md).
 *
 * The small float formats (f16, bf16, the f8 types, f4e2m1fn) decode
 * exactly and encode from double with one rounding to nearest even, with
 * each format's overflow and NaN rules as ml_dtypes defines them.
 */
#ifndef HS_NUMERICS_ELEMENT_TYPES_H
#define HS_NUMERICS_ELEMENT_TYPES_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "hloscope/hs_ir.h"

typedef enum elem_class {
    ELEM_NONE, /* not executable: sub-byte integers, complex, token */
    ELEM_PRED,
    ELEM_F32,
    ELEM_F64,
    ELEM_SINT,
    ELEM_UINT,
} elem_class;

/* Elements per chunk of the load -> wide loop -> store path: 8 KiB of
 * 64-bit wide values, so a chunk and its operands stay in L1. */
enum { ELEM_CHUNK = 1024 };

static inline elem_class elem_class_of(hs_dtype t)
{
    switch (t) {
    case HS_PRED: return ELEM_PRED;
    case HS_S8: case HS_S16: case HS_S32: case HS_S64: return ELEM_SINT;
    case HS_U8: case HS_U16: case HS_U32: case HS_U64: return ELEM_UINT;
    case HS_F64: return ELEM_F64;
    case HS_F8E3M4: case HS_F8E4M3: case HS_F8E4M3FN:
    case HS_F8E4M3B11FNUZ: case HS_F8E5M2: case HS_F8E4M3FNUZ:
    case HS_F8E5M2FNUZ: case HS_F8E8M0FNU: case HS_F16: case HS_BF16:
    case HS_F32:
        return ELEM_F32;
    default: return ELEM_NONE;
    }
}

/* The wide type t computes in: HS_F32, HS_F64, HS_S64, HS_U64 or HS_PRED
 * (HS_TUPLE when t is not executable). */
static inline hs_dtype elem_wide(hs_dtype t)
{
    switch (elem_class_of(t)) {
    case ELEM_PRED: return HS_PRED;
    case ELEM_F32: return HS_F32;
    case ELEM_F64: return HS_F64;
    case ELEM_SINT: return HS_S64;
    case ELEM_UINT: return HS_U64;
    default: return HS_TUPLE;
    }
}

/* Bytes per element as stored on the device; 0 when not executable. */
static inline int elem_bytes(hs_dtype t)
{
    return elem_class_of(t) == ELEM_NONE ? 0 : hs_dtype_bits(t) / 8;
}

/* Whether t is one of the small float formats stored as 8 bits. */
static inline bool elem_is_f8(hs_dtype t)
{
    return elem_class_of(t) == ELEM_F32 && hs_dtype_bits(t) == 8;
}

/* ---- scalars: f16 and bf16 -------------------------------------------- */

static inline uint32_t elem_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static inline float elem_bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline float elem_bf16_to_f32(uint16_t h)
{
    return elem_bits_f32((uint32_t)h << 16);
}

/* Round to nearest even; a NaN stays a NaN of the same sign (quieted). */
static inline uint16_t elem_f32_to_bf16(float f)
{
    uint32_t x = elem_f32_bits(f);
    if ((x & 0x7fffffff) > 0x7f800000)
        return (uint16_t)((x >> 16) | 0x40);
    x += 0x7fff + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

float elem_f16_to_f32(uint16_t h);
uint16_t elem_f32_to_f16(float f);

/* ---- scalars: any small float format ----------------------------------- */

/* The value of encoding `bits` of the small float type t (f16, bf16, f8,
 * f4e2m1fn), exact. */
double elem_small_decode(hs_dtype t, uint32_t bits);
/* v rounded once to nearest even into the small float type t, with t's
 * overflow and NaN rules (see element_types.c). */
uint32_t elem_small_encode(hs_dtype t, double v);

/* ---- chunks -------------------------------------------------------------- */

/* n elements of type t at src, widened to elem_wide(t) at wide. */
void elem_load(hs_dtype t, const void *src, void *wide, int64_t n);
/* n elements of the wide type w (HS_F32, HS_F64, HS_S64, HS_U64 or
 * HS_PRED) at wide, converted to type t at dst. */
void elem_store(hs_dtype t, hs_dtype w, const void *wide, void *dst,
                int64_t n);
/* convert: n elements of type from at a to type to at y, any pair of
 * executable types; same-class pairs that differ only in width wrap or
 * round, float to integer saturates (NaN gives 0). */
void elem_convert(hs_dtype from, hs_dtype to, const void *a, void *y,
                  int64_t n);

#endif
