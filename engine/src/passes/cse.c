/* cse.c - the `cse` pass: common subexpression elimination within each
 * computation, as XLA's HloCSE. Two instructions are the same when opcode,
 * shape (layout and memory space included), operands, called computations
 * and every attribute agree; metadata does not count. The later one is
 * replaced by the earlier one. Never merged: parameters, rng, while loops,
 * custom-calls with side effects, async copies, collectives, after-all and
 * opcodes the engine does not know. */
#include <stdlib.h>
#include <string.h>

#include "passes/passes_internal.h"

static bool never_merged(const hs_instruction *i)
{
    switch (i->opcode) {
    case HS_OP_PARAMETER:
    case HS_OP_RNG:
    case HS_OP_WHILE:
    case HS_OP_COPY_START:
    case HS_OP_COPY_DONE:
    case HS_OP_AFTER_ALL:
    case HS_OP_UNKNOWN:
        return true;
    case HS_OP_CUSTOM_CALL:
        for (int k = 0; k < i->n_extra; k++)
            if (strcmp(i->extra[k].key, "custom_call_has_side_effect") == 0 &&
                strcmp(i->extra[k].value, "true") == 0)
                return true;
        return false;
    default:
        return hs_opcode_category(i->opcode) == HS_CAT_COLLECTIVE;
    }
}

static bool str_eq(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

static bool shape_identical(const hs_shape *a, const hs_shape *b)
{
    if (a->dtype != b->dtype)
        return false;
    if (a->dtype == HS_TUPLE) {
        if (a->n_elems != b->n_elems)
            return false;
        for (int k = 0; k < a->n_elems; k++)
            if (!shape_identical(&a->elems[k], &b->elems[k]))
                return false;
        return true;
    }
    if (a->rank != b->rank || a->dynamic_mask != b->dynamic_mask ||
        a->memory_space != b->memory_space ||
        !str_eq(a->layout_tail, b->layout_tail))
        return false;
    for (int d = 0; d < a->rank; d++)
        if (a->dims[d] != b->dims[d] ||
            a->minor_to_major[d] != b->minor_to_major[d])
            return false;
    return true;
}

static bool ints_eq(int na, const int64_t *a, int nb, const int64_t *b)
{
    return na == nb && (na <= 0 || memcmp(a, b, sizeof *a * (size_t)na) == 0);
}

static bool dot_eq(const hs_dot_dims *a, const hs_dot_dims *b)
{
    if (!a || !b)
        return a == b;
    return ints_eq(a->n_lhs_batch, a->lhs_batch, b->n_lhs_batch,
                   b->lhs_batch) &&
           ints_eq(a->n_lhs_contracting, a->lhs_contracting,
                   b->n_lhs_contracting, b->lhs_contracting) &&
           ints_eq(a->n_rhs_batch, a->rhs_batch, b->n_rhs_batch,
                   b->rhs_batch) &&
           ints_eq(a->n_rhs_contracting, a->rhs_contracting,
                   b->n_rhs_contracting, b->rhs_contracting);
}

static bool slice_eq(const hs_slice_dims *a, const hs_slice_dims *b)
{
    if (!a || !b)
        return a == b;
    return ints_eq(a->rank, a->start, b->rank, b->start) &&
           ints_eq(a->rank, a->limit, b->rank, b->limit) &&
           ints_eq(a->rank, a->stride, b->rank, b->stride);
}

static size_t literal_bytes(const hs_instruction *i)
{
    int bits = hs_dtype_bits(i->shape.dtype);
    if (!i->literal || i->shape.dtype == HS_TUPLE || bits <= 0 || bits % 8)
        return 0;
    return (size_t)hs_shape_elements(&i->shape) * (size_t)(bits / 8);
}

static bool literal_eq(const hs_instruction *a, const hs_instruction *b)
{
    if (!a->literal || !b->literal)
        return a->literal == b->literal && str_eq(a->literal_text,
                                                  b->literal_text);
    return memcmp(a->literal, b->literal, literal_bytes(a)) == 0 &&
           str_eq(a->literal_text, b->literal_text);
}

static bool extras_eq(const hs_instruction *a, const hs_instruction *b)
{
    if (a->n_extra != b->n_extra)
        return false;
    for (int k = 0; k < a->n_extra; k++)
        if (!str_eq(a->extra[k].key, b->extra[k].key) ||
            !str_eq(a->extra[k].value, b->extra[k].value))
            return false;
    return true;
}

static bool identical(const hs_instruction *a, const hs_instruction *b)
{
    if (a->opcode != b->opcode || a->n_operands != b->n_operands ||
        a->n_called != b->n_called || !shape_identical(&a->shape, &b->shape))
        return false;
    for (int o = 0; o < a->n_operands; o++)
        if (a->operands[o] != b->operands[o])
            return false;
    for (int k = 0; k < a->n_called; k++)
        if (a->called[k] != b->called[k])
            return false;
    return a->index == b->index && ints_eq(a->n_dims, a->dims, b->n_dims,
                                           b->dims) &&
           dot_eq(a->dot, b->dot) && slice_eq(a->slice, b->slice) &&
           a->direction == b->direction &&
           str_eq(a->compare_type, b->compare_type) &&
           str_eq(a->custom_call_target, b->custom_call_target) &&
           str_eq(a->fusion_kind, b->fusion_kind) && literal_eq(a, b) &&
           str_eq(a->frontend_attributes, b->frontend_attributes) &&
           str_eq(a->backend_config, b->backend_config) &&
           str_eq(a->sharding, b->sharding) &&
           a->known_trip_count == b->known_trip_count &&
           str_eq(a->unknown_opcode, b->unknown_opcode) && extras_eq(a, b);
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

/* Hashes what is cheap and most selective; identical() decides. */
static uint64_t hash(const hs_instruction *i)
{
    uint64_t h = mix(0, (uint64_t)i->opcode);
    h = mix(h, (uint64_t)i->shape.dtype);
    h = mix(h, (uint64_t)hs_shape_elements(&i->shape));
    for (int o = 0; o < i->n_operands; o++)
        h = mix(h, (uint64_t)(uintptr_t)i->operands[o]);
    for (int k = 0; k < i->n_called; k++)
        h = mix(h, (uint64_t)(uintptr_t)i->called[k]);
    h = mix(h, (uint64_t)i->index);
    for (int d = 0; d < i->n_dims; d++)
        h = mix(h, (uint64_t)i->dims[d]);
    size_t nb = literal_bytes(i);
    const unsigned char *p = i->literal;
    for (size_t k = 0; k < nb && k < 64; k++)
        h = mix(h, p[k]);
    return h;
}

typedef struct table {
    size_t mask;
    hs_instruction **slots;
} table;

static hs_instruction *visit(hs_instruction *i, void *state, bool *changed)
{
    table *t = state;
    if (never_merged(i))
        return NULL;
    for (size_t s = hash(i) & t->mask;; s = (s + 1) & t->mask) {
        if (!t->slots[s]) {
            t->slots[s] = i;
            return NULL;
        }
        if (identical(t->slots[s], i))
            return t->slots[s];
    }
}

hs_status hs_pass_cse_run(hs_module *m, hs_pass_context *ctx, bool *changed,
                          hs_error *err)
{
    for (int c = 0; c < m->n_comps; c++) {
        hs_computation *comp = m->comps[c];
        /* At most n_instrs entries: a table of twice that never fills. */
        size_t cap = 16;
        while (cap < (size_t)comp->n_instrs * 2)
            cap *= 2;
        table t = {cap - 1, calloc(cap, sizeof(hs_instruction *))};
        if (!t.slots)
            return hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
        hs_status st =
            hs__rewrite_computation(comp, ctx, visit, &t, changed, err);
        free(t.slots);
        if (st != HS_OK)
            return st;
    }
    return HS_OK;
}
