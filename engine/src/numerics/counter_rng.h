/*
 * counter_rng.h - the two counter-based generators of Salmon, Moraes, Dror
 * and Shaw, "Parallel random numbers: as easy as 1, 2, 3" (SC'11), as
 * XLA builds them (xla/hlo/builder/lib/prng.cc): Philox-4x32 with 10
 * rounds and Threefry-2x32 with 20 rounds. Each is a pure function of a
 * key and a counter, so an element's bits depend only on its index: the
 * device's rng (kernels_rng.c) and rng-bit-generator
 * (kernels_rng_bits.c) both draw from here. Both match the Random123
 * distribution's known-answer vectors (tests/unit/test_rng_bits.c).
 */
#ifndef HS_NUMERICS_COUNTER_RNG_H
#define HS_NUMERICS_COUNTER_RNG_H

#include <stdint.h>

/* Philox-4x32-10: four 32-bit words of counter ctr under key. A round
 * multiplies words 0 and 2 by the two Philox multipliers, crosses the
 * products' halves with words 1 and 3 and the key, and bumps the key by
 * the Weyl constants (golden ratio, sqrt(3) - 1). */
static inline void rng_philox4x32_10(const uint32_t key[2],
                                     const uint32_t ctr[4], uint32_t out[4])
{
    uint32_t k0 = key[0], k1 = key[1];
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c0;
        uint64_t p1 = (uint64_t)0xCD9E8D57u * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)p1;
        c3 = (uint32_t)p0;
        c0 = n0;
        c2 = n2;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

static inline uint32_t rng_rotl32(uint32_t v, int d)
{
    return v << d | v >> (32 - d);
}

/* Threefry-2x32-20: two 32-bit words of counter ctr under key. Five
 * groups of four add-rotate-xor rounds (Threefish's rotation schedule for
 * two words), each group followed by a key injection that cycles through
 * the key words and their parity (Skein's 0x1BD11BDA xor both words) and
 * adds the injection's number to the second word. */
static inline void rng_threefry2x32_20(const uint32_t key[2],
                                       const uint32_t ctr[2],
                                       uint32_t out[2])
{
    static const int rot[8] = {13, 15, 26, 6, 17, 29, 16, 24};
    const uint32_t ks[3] = {key[0], key[1], 0x1BD11BDAu ^ key[0] ^ key[1]};
    uint32_t x0 = ctr[0] + ks[0], x1 = ctr[1] + ks[1];
    for (int g = 0; g < 5; g++) {
        for (int r = 0; r < 4; r++) {
            x0 += x1;
            x1 = rng_rotl32(x1, rot[(g % 2) * 4 + r]) ^ x0;
        }
        x0 += ks[(g + 1) % 3];
        x1 += ks[(g + 2) % 3] + (uint32_t)(g + 1);
    }
    out[0] = x0;
    out[1] = x1;
}

#endif
