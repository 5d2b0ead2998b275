/*
 * test_rng_bits.c - rng-bit-generator: both generators against the
 * Random123 known-answer vectors, then the opcode on the device: the same
 * vectors reached through a state (which words are key and counter, in
 * which order the outputs land), the layouts of XLA's expander (Philox's
 * interleaving and 128-bit carry, Threefry's split into halves), a module
 * XLA itself ran, the shape rule's refusals, the cost, and the text
 * printing back as a fixed point through the compile pipeline.
 *
 * The known answers are the "philox4x32 10" and "threefry2x32 20" lines of
 * Random123's tests/kat_vectors (D. E. Shaw Research,
 * github.com/DEShawResearch/random123, release 1.14.0), columns counter,
 * key, expected, each a 32-bit word in hex, word 0 first:
 *   philox4x32 10 00000000 00000000 00000000 00000000 00000000 00000000
 *                 6627e8d5 e169c58d bc57ac4c 9b00dbd8
 *   philox4x32 10 ffffffff ffffffff ffffffff ffffffff ffffffff ffffffff
 *                 408f276d 41c83b0e a20bc7c6 6d5451fd
 *   philox4x32 10 243f6a88 85a308d3 13198a2e 03707344 a4093822 299f31d0
 *                 d16cfe09 94fdcceb 5001e420 24126ea1
 *   threefry2x32 20 00000000 00000000 00000000 00000000 6b200159 99ba4efe
 *   threefry2x32 20 ffffffff ffffffff ffffffff ffffffff 1cb996fc bb002be7
 *   threefry2x32 20 243f6a88 85a308d3 13198a2e 03707344 c4923a9c 483df7a0
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hloscope/hs_device.h"
#include "hloscope/hs_program.h"
#include "hlo_test_helpers.h"
#include "numerics/counter_rng.h"

static const struct {
    uint32_t ctr[4], key[2], want[4];
} k_philox[] = {
    {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
    {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
     {0xffffffff, 0xffffffff},
     {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
    {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
     {0xa4093822, 0x299f31d0},
     {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
};

static const struct {
    uint32_t ctr[2], key[2], want[2];
} k_threefry[] = {
    {{0, 0}, {0, 0}, {0x6b200159, 0x99ba4efe}},
    {{0xffffffff, 0xffffffff},
     {0xffffffff, 0xffffffff},
     {0x1cb996fc, 0xbb002be7}},
    {{0x243f6a88, 0x85a308d3},
     {0x13198a2e, 0x03707344},
     {0xc4923a9c, 0x483df7a0}},
};

static uint64_t join(uint32_t lo, uint32_t hi)
{
    return (uint64_t)hi << 32 | lo;
}

static void generators_match_the_known_answers(void **state)
{
    (void)state;
    for (size_t v = 0; v < sizeof k_philox / sizeof k_philox[0]; v++) {
        uint32_t out[4];
        rng_philox4x32_10(k_philox[v].key, k_philox[v].ctr, out);
        for (int w = 0; w < 4; w++)
            if (out[w] != k_philox[v].want[w])
                fail_msg("philox vector %zu word %d: %08x, want %08x", v, w,
                         out[w], k_philox[v].want[w]);
    }
    for (size_t v = 0; v < sizeof k_threefry / sizeof k_threefry[0]; v++) {
        uint32_t out[2];
        rng_threefry2x32_20(k_threefry[v].key, k_threefry[v].ctr, out);
        for (int w = 0; w < 2; w++)
            if (out[w] != k_threefry[v].want[w])
                fail_msg("threefry vector %zu word %d: %08x, want %08x", v,
                         w, out[w], k_threefry[v].want[w]);
    }
}

/* ---- the opcode on the device --------------------------------------- */

typedef struct drawn {
    hs_tensor **out;
    int n;
} drawn;

/* Runs ROOT r = (state_shape, bits) rng-bit-generator(state) with the
 * state a constant; out[0] is the new state, out[1] the bits. */
static drawn draw(const char *alg, int n_state, const uint64_t *st,
                  const char *bits)
{
    char text[1024], lit[256] = "";
    for (int k = 0; k < n_state; k++)
        snprintf(lit + strlen(lit), sizeof lit - strlen(lit), "%s%llu",
                 k ? ", " : "", (unsigned long long)st[k]);
    snprintf(text, sizeof text,
             "HloModule m\nENTRY e {\n"
             "  s = u64[%d] constant({%s})\n"
             "  ROOT r = (u64[%d], %s) rng-bit-generator(s), algorithm=%s\n"
             "}\n",
             n_state, lit, n_state, bits, alg);
    hs_module *m = parse(text);
    hs_error err;
    hs_error_clear(&err);
    if (hs_module_verify(m, &err) != HS_OK)
        fail_msg("verify: %s\n%s", err.message, text);
    drawn d;
    d.out = run_f32(m, NULL, 0, &d.n);
    assert_int_equal(d.n, 2);
    hs_module_free(m);
    return d;
}

static void drawn_free(drawn d) { hs_tensors_free(d.out, d.n); }

static const uint32_t *u32s(const drawn *d)
{
    assert_int_equal(d->out[1]->shape.dtype, HS_U32);
    return (const uint32_t *)d->out[1]->data;
}

static const uint64_t *new_state(const drawn *d)
{
    return (const uint64_t *)d->out[0]->data;
}

/* Philox's key is state[0] (low word first) and its counter state[1]
 * (low) and state[2] (high): the third vector, drawn as u32[4], is the
 * known answer word for word; as u64[2], two words each, low first. The
 * counter moves by the blocks drawn. */
static void philox_state_words_are_key_and_counter(void **state)
{
    (void)state;
    uint64_t st[3] = {join(0xa4093822, 0x299f31d0),
                      join(0x243f6a88, 0x85a308d3),
                      join(0x13198a2e, 0x03707344)};
    const uint32_t *want = k_philox[2].want;
    drawn d = draw("rng_philox", 3, st, "u32[4]");
    assert_memory_equal(u32s(&d), want, 4 * sizeof(uint32_t));
    assert_true(new_state(&d)[0] == st[0]);
    assert_true(new_state(&d)[1] == st[1] + 1);
    assert_true(new_state(&d)[2] == st[2]);
    drawn_free(d);
    d = draw("rng_philox", 3, st, "u64[2]");
    const uint64_t *b = (const uint64_t *)d.out[1]->data;
    assert_true(b[0] == join(want[0], want[1]));
    assert_true(b[1] == join(want[2], want[3]));
    drawn_free(d);
    /* rng_default is Philox, as XLA's CPU and GPU compilers expand it; a
     * u64[2] state's key is also the counter's high word (the all-ones
     * vector), and the counter wraps to 0 */
    uint64_t ones[2] = {~0ull, ~0ull};
    d = draw("rng_default", 2, ones, "u32[4]");
    assert_memory_equal(u32s(&d), k_philox[1].want, 4 * sizeof(uint32_t));
    assert_true(new_state(&d)[0] == ~0ull && new_state(&d)[1] == 0);
    drawn_free(d);
}

/* Elements past the first block come from the next counters, the carry
 * of the low word reaching the high one; narrow types keep each word's low
 * bits. */
static void philox_carries_and_narrows(void **state)
{
    (void)state;
    uint64_t st[3] = {0x0123456789abcdefull, ~0ull, 7};
    drawn d = draw("rng_philox", 3, st, "u32[7]");
    uint32_t key[2] = {0x89abcdef, 0x01234567}, b0[4], b1[4];
    uint32_t c0[4] = {~0u, ~0u, 7, 0}, c1[4] = {0, 0, 8, 0};
    rng_philox4x32_10(key, c0, b0);
    rng_philox4x32_10(key, c1, b1);
    const uint32_t *v = u32s(&d);
    for (int j = 0; j < 7; j++)
        assert_int_equal(v[j], j < 4 ? b0[j] : b1[j - 4]);
    assert_true(new_state(&d)[1] == 1 && new_state(&d)[2] == 8);
    drawn_free(d);
    d = draw("rng_philox", 3, st, "u16[5]");
    const uint16_t *h = (const uint16_t *)d.out[1]->data;
    for (int j = 0; j < 5; j++)
        assert_int_equal(h[j], (uint16_t)(j < 4 ? b0[j] : b1[0]));
    drawn_free(d);
    /* 64-bit bits: two to a block, so the third is the next block's */
    d = draw("rng_philox", 3, st, "u64[3]");
    const uint64_t *w = (const uint64_t *)d.out[1]->data;
    assert_true(w[0] == join(b0[0], b0[1]) && w[1] == join(b0[2], b0[3]));
    assert_true(w[2] == join(b1[0], b1[1]));
    assert_true(new_state(&d)[1] == 1 && new_state(&d)[2] == 8);
    drawn_free(d);
    d = draw("rng_philox", 3, st, "u8[2,2]");
    const uint8_t *q = (const uint8_t *)d.out[1]->data;
    for (int j = 0; j < 4; j++)
        assert_int_equal(q[j], (uint8_t)b0[j]);
    drawn_free(d);
}

/* Threefry's key is state[0], its counter state[1]: 64-bit bits are one
 * block each (the second vector, wrapping the counter), 32-bit ones split
 * the shape in halves along the first even dimension (the third vector
 * twice over, then the next counter). */
static void threefry_layouts_follow_the_expander(void **state)
{
    (void)state;
    uint64_t ones[2] = {~0ull, ~0ull};
    drawn d = draw("rng_three_fry", 2, ones, "u64[1]");
    assert_true(((const uint64_t *)d.out[1]->data)[0] ==
                join(k_threefry[1].want[0], k_threefry[1].want[1]));
    assert_true(new_state(&d)[1] == 0);
    drawn_free(d);
    uint64_t pi[2] = {join(0x13198a2e, 0x03707344),
                      join(0x243f6a88, 0x85a308d3)};
    uint32_t key[2] = {0x13198a2e, 0x03707344}, next[2];
    uint64_t c1 = pi[1] + 1;
    rng_threefry2x32_20(key, (uint32_t[2]){(uint32_t)c1,
                                           (uint32_t)(c1 >> 32)}, next);
    /* [3, 2]: dimension 1 is the first even one; row i is counter + i */
    d = draw("rng_three_fry", 2, pi, "u32[3,2]");
    const uint32_t *v = u32s(&d);
    assert_int_equal(v[0], k_threefry[2].want[0]);
    assert_int_equal(v[1], k_threefry[2].want[1]);
    assert_int_equal(v[2], next[0]);
    assert_int_equal(v[3], next[1]);
    assert_true(new_state(&d)[1] == pi[1] + 3);
    drawn_free(d);
    /* [3, 5]: no even dimension, so the longest (5) is halved to 3: the
     * element (i, c) is output c % 2 of counter + 3i + c / 2 */
    d = draw("rng_three_fry", 2, pi, "u32[3,5]");
    v = u32s(&d);
    assert_int_equal(v[0], k_threefry[2].want[0]);
    assert_int_equal(v[1], k_threefry[2].want[1]);
    assert_int_equal(v[2], next[0]);
    assert_int_equal(v[3], next[1]);
    for (int i = 0; i < 3; i++)
        for (int c = 0; c < 5; c++) {
            uint64_t cc = pi[1] + (uint64_t)(3 * i + c / 2);
            uint32_t o[2];
            rng_threefry2x32_20(key, (uint32_t[2]){(uint32_t)cc,
                                                   (uint32_t)(cc >> 32)},
                                o);
            assert_int_equal(v[5 * i + c], o[c % 2]);
        }
    assert_true(new_state(&d)[1] == pi[1] + 9);
    drawn_free(d);
    /* a scalar is output 0 of one counter */
    d = draw("rng_three_fry", 2, pi, "u32[]");
    assert_int_equal(u32s(&d)[0], k_threefry[2].want[0]);
    assert_true(new_state(&d)[1] == pi[1] + 1);
    drawn_free(d);
}

/* A module XLA ran: the reference page of r-xla/anvil's
 * nvl_rng_bit_generator (reference/nvl_rng_bit_generator.md) shows
 * rng_bit_generator(state = {0, 0}, "THREE_FRY", shape (3, 2)) executed by
 * XLA's CPU client as the u32[3,2]
 *     1.7973e+09 2.5791e+09 / 1.3515e+09 3.2358e+09 / 1.6886e+09 4.2293e+09
 * (printed to five digits) and the new state {0, 3}. */
static void threefry_matches_a_module_xla_ran(void **state)
{
    (void)state;
    uint64_t zero[2] = {0, 0};
    drawn d = draw("rng_three_fry", 2, zero, "u32[3,2]");
    static const double printed[6] = {1.7973e+09, 2.5791e+09, 1.3515e+09,
                                      3.2358e+09, 1.6886e+09, 4.2293e+09};
    const uint32_t *v = u32s(&d);
    for (int j = 0; j < 6; j++)
        if (fabs((double)v[j] - printed[j]) > 0.5e-4 * printed[j])
            fail_msg("element %d: %u prints as %.4e, XLA printed %.4e", j,
                     v[j], (double)v[j], printed[j]);
    assert_true(new_state(&d)[0] == 0 && new_state(&d)[1] == 3);
    drawn_free(d);
}

static void shape_rule_refuses_naming_the_instruction(void **state)
{
    (void)state;
    static const struct {
        const char *state, *result, *alg, *why;
    } bad[] = {
        {"u64[2]", "(u64[2], u32[4])", "rng_mersenne", "none of"},
        {"u64[3]", "(u64[3], u32[4])", "rng_three_fry", "u64[2] for"},
        {"u64[4]", "(u64[4], u32[4])", "rng_philox", "u64[2] or u64[3]"},
        {"u64[2]", "(u64[2], f32[4])", "rng_philox", "integer type"},
        {"u64[2]", "(u64[3], u32[4])", "rng_philox", "r"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        char text[512];
        snprintf(text, sizeof text,
                 "HloModule m\nENTRY e {\n  s = %s parameter(0)\n"
                 "  ROOT r = %s rng-bit-generator(s), algorithm=%s\n}\n",
                 bad[k].state, bad[k].result, bad[k].alg);
        assert_verify_refuses(text, "r", bad[k].why);
    }
}

#define MODULE                                                              \
    "HloModule dropout_bits\n"                                             \
    "ENTRY e {\n"                                                          \
    "  s = u64[2]{0} parameter(0)\n"                                       \
    "  x = f32[64,32]{1,0} parameter(1)\n"                                 \
    "  r = (u64[2]{0}, u32[64,32]{1,0}) rng-bit-generator(s), "            \
    "algorithm=rng_default\n"                                              \
    "  b = u32[64,32]{1,0} get-tuple-element(r), index=1\n"                \
    "  n = u64[2]{0} get-tuple-element(r), index=0\n"                      \
    "  h = u32[] constant(2147483648)\n"                                   \
    "  hb = u32[64,32]{1,0} broadcast(h), dimensions={}\n"                 \
    "  keep = pred[64,32]{1,0} compare(b, hb), direction=LT\n"             \
    "  z = f32[] constant(0)\n"                                            \
    "  zb = f32[64,32]{1,0} broadcast(z), dimensions={}\n"                 \
    "  y = f32[64,32]{1,0} select(keep, x, zb)\n"                          \
    "  ROOT t = (u64[2]{0}, f32[64,32]{1,0}) tuple(n, y)\n"                \
    "}\n"

/* A dropout written the way XLA's text has it compiles, prints back as a
 * fixed point at both stages, passes the check before a run and is
 * costed one transcendental per element of the state and bits. */
static void a_module_prints_back_and_is_costed(void **state)
{
    (void)state;
    static const char *const needles[] = {"rng-bit-generator(",
                                          "algorithm=rng_default"};
    assert_compiles_and_prints_back(MODULE, needles, 2);
    hs_error err;
    hs_error_clear(&err);
    const char *alone = "HloModule m\nENTRY e {\n  s = u64[2] parameter(0)\n"
                        "  ROOT r = (u64[2], u32[64,32]) rng-bit-generator(s), "
                        "algorithm=rng_philox\n}\n";
    hs_module *m = parse(alone);
    hs_run_stats st;
    assert_int_equal(hs_device_estimate(m, NULL, &st, &err), HS_OK);
    assert_true(st.flops == 2.0 + 64 * 32);
    assert_true(st.bytes_accessed == 16.0 + 16.0 + 64 * 32 * 4);
    hs_module_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(generators_match_the_known_answers),
        cmocka_unit_test(philox_state_words_are_key_and_counter),
        cmocka_unit_test(philox_carries_and_narrows),
        cmocka_unit_test(threefry_layouts_follow_the_expander),
        cmocka_unit_test(threefry_matches_a_module_xla_ran),
        cmocka_unit_test(shape_rule_refuses_naming_the_instruction),
        cmocka_unit_test(a_module_prints_back_and_is_costed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
