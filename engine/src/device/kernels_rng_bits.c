/*
 * kernels_rng_bits.c - rng-bit-generator: (new state, bits) from a u64
 * state, bit for bit what XLA's RngBitGeneratorExpander builds
 * (xla/service/rng_bit_generator_expander.cc over
 * xla/hlo/builder/lib/prng.cc), so a module's random bits here are the
 * ones XLA's CPU and GPU backends draw from the same state. state[0] is
 * the key in both algorithms, split into 32-bit words low first.
 *
 * Philox (rng_philox, and rng_default: XLA's CPU and GPU compilers
 * expand the default as Philox): the counter is a 128-bit number, low
 * word state[1] and high word state[2] (u64[3]) or state[0] (u64[2]: the
 * expander reverses the state, so the key doubles as the counter's high
 * word). Block b is Philox-4x32-10 of counter + b, the counter's four
 * 32-bit words low first. 32-bit bits: element j is word j % 4 of block
 * j / 4 (XLA interleaves the four outputs "to align with non-XLA
 * implementations"); narrower types keep the low bits of that word;
 * 64-bit: element j is words (0, 1) or (2, 3) of block j / 2, low word
 * first. The new counter is counter + blocks used; a u64[2] state keeps
 * only its low word.
 *
 * Threefry (rng_three_fry, u64[2]): 64-bit bits: element j is
 * Threefry-2x32-20 of the 64-bit counter state[1] + j (low word first),
 * its two outputs joined low first; the new counter is state[1] + n.
 * Narrower bits split the shape in halves (SplitShapeIntoHalves): along
 * the first even dimension, else the first longest one, of length d, the
 * half shape has ceil(d / 2) there; the element at index i of that
 * dimension is output i % 2 of the counter state[1] + (its index in the
 * half shape, with i / 2 there); the new counter is state[1] + the half
 * shape's elements. A scalar is output 0 of counter state[1].
 */
#include <string.h>

#include "device/device_internal.h"
#include "numerics/counter_rng.h"

static void split_key(uint64_t key, uint32_t k[2])
{
    k[0] = (uint32_t)key;
    k[1] = (uint32_t)(key >> 32);
}

/* Stores the low es bytes of v as element j of dst (es = 1, 2, 4, 8). */
static inline void store_bits(char *dst, int es, int64_t j, uint64_t v)
{
    switch (es) {
    case 1: ((uint8_t *)dst)[j] = (uint8_t)v; break;
    case 2: ((uint16_t *)dst)[j] = (uint16_t)v; break;
    case 4: ((uint32_t *)dst)[j] = (uint32_t)v; break;
    default: ((uint64_t *)dst)[j] = v; break;
    }
}

/* Philox over n elements of es bytes; ctr = {low, high} is advanced. */
static void philox_bits(uint64_t key, uint64_t ctr[2], char *dst, int es,
                        int64_t n)
{
    uint32_t k[2], out[4];
    split_key(key, k);
    int per = es == 8 ? 2 : 4; /* elements per block */
    int64_t blocks = n / per + (n % per != 0);
    for (int64_t b = 0; b < blocks; b++) {
        uint64_t lo = ctr[0] + (uint64_t)b;
        uint64_t hi = ctr[1] + (lo < ctr[0]); /* the carry of lo */
        uint32_t c[4] = {(uint32_t)lo, (uint32_t)(lo >> 32), (uint32_t)hi,
                         (uint32_t)(hi >> 32)};
        rng_philox4x32_10(k, c, out);
        for (int w = 0; w < per && b * per + w < n; w++) {
            uint64_t v = es == 8 ? (uint64_t)out[2 * w] |
                                       (uint64_t)out[2 * w + 1] << 32
                                 : out[w];
            store_bits(dst, es, b * per + w, v);
        }
    }
    uint64_t lo = ctr[0] + (uint64_t)blocks;
    ctr[1] += lo < ctr[0];
    ctr[0] = lo;
}

/* Threefry over the result shape s (es bytes an element); returns the
 * new counter. */
static uint64_t threefry_bits(uint64_t key, uint64_t ctr, const hs_shape *s,
                              char *dst, int es)
{
    uint32_t k[2], out[2];
    split_key(key, k);
    int64_t n = hs_shape_elements(s);
    if (es == 8) {
        for (int64_t j = 0; j < n; j++) {
            uint64_t c = ctr + (uint64_t)j;
            uint32_t in[2] = {(uint32_t)c, (uint32_t)(c >> 32)};
            rng_threefry2x32_20(k, in, out);
            store_bits(dst, es, j, (uint64_t)out[0] | (uint64_t)out[1] << 32);
        }
        return ctr + (uint64_t)n;
    }
    if (s->rank == 0) {
        uint32_t in[2] = {(uint32_t)ctr, (uint32_t)(ctr >> 32)};
        rng_threefry2x32_20(k, in, out);
        store_bits(dst, es, 0, out[0]);
        return ctr + 1;
    }
    /* the first even dimension, else the first longest */
    int split = -1;
    for (int d = 0; d < s->rank && split < 0; d++)
        if (s->dims[d] % 2 == 0)
            split = d;
    if (split < 0) {
        split = 0;
        for (int d = 1; d < s->rank; d++)
            if (s->dims[d] > s->dims[split])
                split = d;
    }
    int64_t outer = 1, inner = 1, d = s->dims[split], h = d / 2 + d % 2;
    for (int i = 0; i < split; i++)
        outer *= s->dims[i];
    for (int i = split + 1; i < s->rank; i++)
        inner *= s->dims[i];
    for (int64_t o = 0; o < outer; o++)
        for (int64_t a = 0; a < h; a++)
            for (int64_t i = 0; i < inner; i++) {
                uint64_t c = ctr + (uint64_t)((o * h + a) * inner + i);
                uint32_t in[2] = {(uint32_t)c, (uint32_t)(c >> 32)};
                rng_threefry2x32_20(k, in, out);
                for (int64_t b = 0; b < 2 && 2 * a + b < d; b++)
                    store_bits(dst, es, (o * d + 2 * a + b) * inner + i,
                               out[b]);
            }
    return ctr + (uint64_t)(outer * h * inner);
}

hs_status dev_k_rng_bit_generator(dev_ctx *x, const dev_step *s, dev_val **f,
                                  dev_val **out)
{
    const hs_instruction *in = s->in;
    const dev_val *sv = dev_op(s, f, 0);
    const hs_shape *rs = &in->shape;
    if (sv->elems || rs->dtype != HS_TUPLE || rs->n_elems != 2 ||
        rs->elems[0].dtype != HS_U64 || rs->elems[0].rank != 1)
        return dev_unsupported(x, in, "a rng-bit-generator of this shape");
    int es = dev_esize(rs->elems[1].dtype);
    if (es != 1 && es != 2 && es != 4 && es != 8)
        return dev_unsupported(x, in, "rng-bit-generator bits of this type");
    int64_t n_state = rs->elems[0].dims[0];
    const char *alg = hs_instruction_attr(in, "algorithm");
    bool three_fry = alg && strcmp(alg, "rng_three_fry") == 0;
    if (n_state != 2 && !(n_state == 3 && !three_fry))
        return dev_unsupported(x, in, "a rng-bit-generator state of this "
                                      "length");
    uint64_t st[3] = {0, 0, 0};
    memcpy(st, sv->block->data, (size_t)n_state * sizeof st[0]);
    dev_val *t = dev_tuple_new(x, rs, 2);
    for (int k = 0; t && k < 2; k++)
        if (!(t->elems[k] = dev_array_new(x, &rs->elems[k]))) {
            dev_release(x, t);
            t = NULL;
        }
    if (!t)
        return x->err->status;
    uint64_t *ns = t->elems[0]->block->data;
    char *dst = t->elems[1]->block->data;
    ns[0] = st[0];
    if (three_fry) {
        ns[1] = threefry_bits(st[0], st[1], &rs->elems[1], dst, es);
    } else {
        uint64_t ctr[2] = {st[1], n_state == 3 ? st[2] : st[0]};
        philox_bits(st[0], ctr, dst, es, hs_shape_elements(&rs->elems[1]));
        ns[1] = ctr[0];
        if (n_state == 3)
            ns[2] = ctr[1];
    }
    *out = t;
    return HS_OK;
}
