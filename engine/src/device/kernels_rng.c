/*
 * kernels_rng.c - rng: distribution=rng_uniform draws from [a, b),
 * rng_normal from N(a, b^2) (a the mean, b the standard deviation).
 *
 * XLA's rng has no seed: its CPU backend expands it (RngExpander) into a
 * Philox generator keyed by a process-wide counter, so no two runs, nor
 * two backends, agree on the bits. hloscope makes the draw reproducible
 * instead: Philox-4x32-10 (Salmon et al., "Parallel random numbers: as
 * easy as 1, 2, 3", SC'11) keyed by the instruction's id and the number
 * of steps the run has executed before it, counter = element index / 4.
 * The same module run twice gives the same numbers; a while body's rng
 * gives new ones every iteration. Uniform floats take the top 24 (f64:
 * 53) bits as a fraction in [0, 1), scaled to [a, b) and rounded once to
 * the result type (a draw that rounds up to b is replaced by the
 * type's largest value below b, so [a, b) holds); integers are
 * a + bits mod (b - a); normals use Box-Muller on two uniforms.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "device/device_internal.h"
#include "numerics/counter_rng.h"
#include "numerics/element_types.h"

/* 64 random bits for element j (two of the four words of its block). */
static uint64_t bits64(const uint32_t key[2], int64_t j, int half)
{
    uint32_t ctr[4] = {(uint32_t)j, (uint32_t)((uint64_t)j >> 32),
                       (uint32_t)half, 0}, o[4];
    rng_philox4x32_10(key, ctr, o);
    return (uint64_t)o[0] << 32 | o[1];
}

static double unit(uint64_t b) /* [0, 1) with 53 bits */
{
    return (double)(b >> 11) * 0x1.0p-53;
}

hs_status dev_k_rng(dev_ctx *x, const dev_step *s, dev_val **f,
                    dev_val **out)
{
    const hs_instruction *in = s->in;
    const char *dist = hs_instruction_attr(in, "distribution");
    bool normal = dist && strcmp(dist, "rng_normal") == 0;
    hs_dtype t = in->shape.dtype;
    hs_dtype w = elem_wide(t);
    dev_val *av = dev_op(s, f, 0), *bv = dev_op(s, f, 1);
    if (av->elems || bv->elems || w == HS_TUPLE || w == HS_PRED ||
        (normal && w != HS_F32 && w != HS_F64))
        return dev_unsupported(x, in, "an rng of this type");
    /* the parameters, widened */
    union { double d; int64_t i; uint64_t u; float f; } pa, pb;
    elem_load(t, av->block->data, &pa, 1);
    elem_load(t, bv->block->data, &pb, 1);
    double lo = w == HS_F32 ? pa.f : pa.d, hi = w == HS_F32 ? pb.f : pb.d;
    dev_val *y = dev_array_new(x, &in->shape);
    if (!y)
        return x->err->status;
    int64_t n = hs_shape_elements(&in->shape);
    uint32_t key[2] = {(uint32_t)in->id, (uint32_t)x->step_now};
    int es = dev_esize(t);
    char *dst = y->block->data;
    for (int64_t j = 0; j < n; j++) {
        uint64_t b = bits64(key, j, 0);
        union { double d; int64_t i; uint64_t u; float f; } v;
        if (w == HS_S64 || w == HS_U64) {
            /* a + bits mod (b - a); an empty range gives a */
            uint64_t span = w == HS_S64 ? (uint64_t)pb.i - (uint64_t)pa.i
                                        : pb.u - pa.u;
            bool empty = w == HS_S64 ? pb.i <= pa.i : pb.u <= pa.u;
            v.u = (w == HS_S64 ? (uint64_t)pa.i : pa.u) +
                  (empty ? 0 : b % span);
        } else {
            double r;
            if (normal) {
                double u1 = 1.0 - unit(b), u2 = unit(bits64(key, j, 1));
                r = lo + hi * sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
            } else {
                r = lo + (hi - lo) * unit(b);
            }
            if (w == HS_F32) {
                v.f = (float)r;
                if (!normal && v.f >= (float)hi && hi > lo)
                    v.f = nextafterf((float)hi, -INFINITY);
            } else {
                v.d = r;
            }
        }
        elem_store(t, w, &v, dst + j * es, 1);
    }
    /* a narrow float rounds once when stored; [a, b) must still hold:
     * a draw that rounded up to b becomes the type's value just below b
     * (b's encoding stepped one toward zero when b > 0, away from it when
     * b < 0; a when b is 0) */
    if (!normal && w == HS_F32 && t != HS_F32 && hi > lo) {
        uint32_t hb = elem_small_encode(t, hi);
        if (elem_small_decode(t, hb) >= hi)
            hb = hi > 0 ? hb - 1 : hi < 0 ? hb + 1 : elem_small_encode(t, lo);
        float below = (float)elem_small_decode(t, hb);
        for (int64_t j = 0; j < n; j++) {
            float back;
            elem_load(t, dst + j * es, &back, 1);
            if (back >= (float)hi)
                elem_store(t, HS_F32, &below, dst + j * es, 1);
        }
    }
    *out = y;
    return HS_OK;
}
