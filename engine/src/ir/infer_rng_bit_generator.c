/* infer_rng_bit_generator.c - the shape rule of rng-bit-generator, after
 * XLA's XlaBuilder::RngBitGenerator and HloVerifier: the operand is the
 * generator's state, a u64 vector whose element 0 is the key and the rest
 * the counter (u64[2] for every algorithm, u64[3] for Philox's 128-bit
 * counter), and the result the tuple (new state, bits) with the state's
 * shape first. The bits' dimensions are only in the written shape; their
 * type is an integer type (XLA's builder writes the unsigned type of the
 * requested width; a signed one holds the same bits). rng_three_fry keeps
 * a 64-bit counter, so its state is u64[2]: XLA's expander would return a
 * u64[2] state for a u64[3] one, which its verifier refuses. */
#include <string.h>

#include "ir/infer_internal.h"

/* The algorithms XLA's text names (RandomAlgorithm, lower-cased). */
static bool known_algorithm(const char *alg, bool *three_fry)
{
    *three_fry = alg && strcmp(alg, "rng_three_fry") == 0;
    return alg && (*three_fry || strcmp(alg, "rng_default") == 0 ||
                   strcmp(alg, "rng_philox") == 0);
}

hs_status hs__infer_rng_bit_generator(const hs_instruction *i, hs_arena *a,
                                      hs_shape *out, hs_error *err)
{
    const char *alg = hs_instruction_attr(i, "algorithm");
    bool three_fry;
    if (!known_algorithm(alg, &three_fry))
        return fail(err, "rng-bit-generator: algorithm=%s is none of "
                         "rng_default, rng_philox, rng_three_fry",
                    alg ? alg : "(missing)");
    if (i->n_operands != 1)
        return fail(err, "rng-bit-generator: needs 1 operand (the state), "
                         "got %d", i->n_operands);
    const hs_shape *st = &i->operands[0]->shape;
    bool state_ok = st->dtype == HS_U64 && st->rank == 1 &&
                    (st->dims[0] == 2 || (!three_fry && st->dims[0] == 3));
    if (!state_ok)
        return fail(err, "rng-bit-generator: the state must be %s, got %s",
                    three_fry ? "u64[2] for rng_three_fry"
                              : "u64[2] or u64[3]",
                    SHAPE_TEXT(st));
    const hs_shape *r = &i->shape;
    if (r->dtype != HS_TUPLE || r->n_elems != 2)
        return fail(err, "rng-bit-generator: the result must be the tuple "
                         "(state, bits), got %s",
                    SHAPE_TEXT(r));
    const hs_shape *bits = &r->elems[1];
    if (!is_integer(bits->dtype))
        return fail(err, "rng-bit-generator: the bits must be of an integer "
                         "type, got %s",
                    SHAPE_TEXT(bits));
    hs_shape *elems = a ? hs_arena_alloc(a, 2 * sizeof *elems) : NULL;
    if (!elems)
        return hs_error_set(err, HS_ERR_NOMEM,
                            "rng-bit-generator: out of memory");
    set_array(&elems[0], HS_U64, 1, st->dims);
    set_array(&elems[1], bits->dtype, bits->rank, bits->dims);
    memset(out, 0, sizeof *out);
    out->dtype = HS_TUPLE;
    out->n_elems = 2;
    out->elems = elems;
    return HS_OK;
}
