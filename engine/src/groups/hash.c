/* hash.c - structural hashes of instructions and of sets of them. Names,
 * ids, metadata and parameter numbers are left out, so the same layer
 * traced twice (or layer 3 and layer 7 of one model) hashes alike; the
 * hash of a set does not depend on the order its instructions were
 * written in, since a schedule may place layer 0's broadcast elsewhere
 * than layer 1's. */
#include "groups/groups_internal.h"

uint64_t hs__gmix(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t shape_hash(const hs_shape *s)
{
    uint64_t h = hs__gmix((uint64_t)s->dtype * 31 + (uint64_t)s->rank);
    if (s->dtype == HS_TUPLE) {
        for (int k = 0; k < s->n_elems; k++)
            h = hs__gmix(h ^ shape_hash(&s->elems[k]));
        return h;
    }
    for (int k = 0; k < s->rank && k < HS_MAX_RANK; k++)
        h = hs__gmix(h ^ (uint64_t)s->dims[k]);
    return hs__gmix(h ^ (uint64_t)s->memory_space);
}

/* What an operand outside the set looks like from inside: its shape only
 * (layer 0 reads a parameter where layer 1 reads layer 0's add). */
static uint64_t outside_hash(const hs_instruction *o)
{
    return hs__gmix(0x5bd1e995ull ^ shape_hash(&o->shape));
}

uint64_t hs__ghash_instruction(const hs__gbuild *b, const hs_instruction *i,
                               const uint32_t *stamps, uint32_t stamp,
                               const uint64_t *h)
{
    uint64_t x = hs__gmix((uint64_t)i->opcode ^ shape_hash(&i->shape));
    x = hs__gmix(x ^ (uint64_t)i->n_operands);
    if (i->opcode == HS_OP_GET_TUPLE_ELEMENT)
        x = hs__gmix(x ^ (uint64_t)i->index);
    for (int k = 0; k < i->n_dims; k++)
        x = hs__gmix(x ^ (uint64_t)i->dims[k]);
    for (int k = 0; k < i->n_called; k++) {
        int ci = hs_computation_index(b->m, i->called[k]);
        x = hs__gmix(x ^ (ci >= 0 ? b->comp_fp[ci] : 0x77u));
    }
    for (int k = 0; k < i->n_operands; k++) {
        const hs_instruction *o = i->operands[k];
        int p = hs__gpos(b, o);
        uint64_t oh = p >= 0 && o->parent == i->parent && stamps &&
                              stamps[p] == stamp
                          ? h[p]
                          : outside_hash(o);
        /* The operand's number matters (a - b is not b - a). */
        x = hs__gmix(x ^ hs__gmix(oh + (uint64_t)k));
    }
    return x;
}

uint64_t hs__ghash_members(const hs__gbuild *b, const hs_computation *c,
                           const int *members, int n, uint32_t *stamps,
                           uint32_t stamp, uint64_t *h)
{
    for (int k = 0; k < n; k++)
        stamps[members[k]] = stamp;
    uint64_t sum = hs__gmix((uint64_t)n);
    /* members are increasing positions, so operands come first. */
    for (int k = 0; k < n; k++) {
        int p = members[k];
        h[p] = hs__ghash_instruction(b, c->instrs[p], stamps, stamp, h);
        sum += hs__gmix(h[p]);
    }
    return sum;
}
