/* fingerprint.c - a structural hash of a module (XXH3-64), the compile
 * cache's key. Everything that changes what the module computes or how it
 * is laid out is hashed; names, ids and metadata are not. */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "hloscope/hs_ir.h"
#include "ir/positions.h"

static void put(XXH3_state_t *st, const void *p, size_t n)
{
    XXH3_64bits_update(st, p, n);
}

static void put_i64(XXH3_state_t *st, int64_t v)
{
    put(st, &v, sizeof v);
}

/* Strings are length-prefixed so that ("ab","c") and ("a","bc") differ;
 * NULL and "" differ too. */
static void put_str(XXH3_state_t *st, const char *s)
{
    if (!s) {
        put_i64(st, -1);
        return;
    }
    size_t n = strlen(s);
    put_i64(st, (int64_t)n);
    put(st, s, n);
}

static void put_shape(XXH3_state_t *st, const hs_shape *s)
{
    put_i64(st, s->dtype);
    if (s->dtype == HS_TUPLE) {
        put_i64(st, s->n_elems);
        for (int k = 0; k < s->n_elems; k++)
            put_shape(st, &s->elems[k]);
        return;
    }
    put_i64(st, s->rank);
    put(st, s->dims, sizeof(int64_t) * (size_t)s->rank);
    put_i64(st, s->dynamic_mask);
    /* A layout written explicitly as the default one is the same layout,
     * so has_layout itself is not hashed. */
    put(st, s->minor_to_major, (size_t)s->rank);
    put_i64(st, s->memory_space);
    put_str(st, s->layout_tail);
}

static void put_dims(XXH3_state_t *st, int n, const int64_t *d)
{
    put_i64(st, n);
    if (n > 0 && n <= HS_MAX_RANK)
        put(st, d, sizeof(int64_t) * (size_t)n);
}

/* Only the slots in use are hashed: the rest may hold anything. */
static void put_dot(XXH3_state_t *st, const hs_dot_dims *d)
{
    put_i64(st, d != NULL);
    if (!d)
        return;
    put_dims(st, d->n_lhs_batch, d->lhs_batch);
    put_dims(st, d->n_lhs_contracting, d->lhs_contracting);
    put_dims(st, d->n_rhs_batch, d->rhs_batch);
    put_dims(st, d->n_rhs_contracting, d->rhs_contracting);
}

static void put_slice(XXH3_state_t *st, const hs_slice_dims *s)
{
    put_i64(st, s != NULL);
    if (!s)
        return;
    put_dims(st, s->rank, s->start);
    put_dims(st, s->rank, s->limit);
    put_dims(st, s->rank, s->stride);
}

/* Position of i within its computation; -1 for NULL or an id out of range
 * (a malformed module still gets a fingerprint, never a crash). */
static int64_t position(const hs_module *m, const int32_t *pos,
                        const hs_instruction *i)
{
    if (!i || i->id < 0 || i->id >= m->next_id)
        return -1;
    return pos[i->id];
}

static void put_instruction(XXH3_state_t *st, const hs_module *m,
                            const hs_instruction *i, const int32_t *pos)
{
    put_i64(st, i->opcode);
    put_shape(st, &i->shape);
    put_i64(st, i->n_operands);
    for (int o = 0; o < i->n_operands; o++)
        put_i64(st, position(m, pos, i->operands[o]));
    put_i64(st, i->n_called);
    for (int k = 0; k < i->n_called; k++)
        put_i64(st, hs_computation_index(m, i->called[k]));
    put_i64(st, i->index);
    put_i64(st, i->n_dims);
    put(st, i->dims, sizeof(int64_t) * (size_t)i->n_dims);
    put_dot(st, i->dot);
    put_slice(st, i->slice);
    put_i64(st, i->direction);
    put_str(st, i->compare_type);
    put_str(st, i->custom_call_target);
    put_str(st, i->fusion_kind);
    int64_t nbytes = hs_instruction_literal_bytes(i);
    put_i64(st, nbytes);
    if (nbytes)
        put(st, i->literal, (size_t)nbytes);
    put_str(st, i->literal_text);
    put_str(st, i->frontend_attributes);
    put_str(st, i->backend_config);
    put_str(st, i->sharding);
    put_i64(st, i->known_trip_count);
    put_i64(st, i->n_extra);
    for (int k = 0; k < i->n_extra; k++) {
        put_str(st, i->extra[k].key);
        put_str(st, i->extra[k].value);
    }
    put_str(st, i->opcode == HS_OP_UNKNOWN ? i->unknown_opcode : NULL);
}

uint64_t hs_module_fingerprint(const hs_module *m)
{
    int32_t *pos = hs__positions_by_id(m);
    XXH3_state_t *st = XXH3_createState();
    if (!st || !pos) {
        XXH3_freeState(st);
        free(pos);
        return 0;
    }
    XXH3_64bits_reset(st);
    put_str(st, "hloscope-fingerprint-v1");
    put_str(st, m->header_attrs);
    /* Only when present, so that a module without aliases keeps the
     * fingerprint it had when they were kept as header text. */
    if (m->n_io_aliases > 0) {
        put_str(st, "input_output_alias");
        put_i64(st, m->n_io_aliases);
        for (int k = 0; k < m->n_io_aliases; k++) {
            const hs_io_alias *a = &m->io_aliases[k];
            put_i64(st, a->output_len);
            put(st, a->output, sizeof(int) * (size_t)a->output_len);
            put_i64(st, a->param);
            put_i64(st, a->param_index_len);
            put(st, a->param_index, sizeof(int) * (size_t)a->param_index_len);
            put_i64(st, a->must_alias);
        }
    }
    put_i64(st, m->n_comps);
    put_i64(st, hs_computation_index(m, m->entry));
    for (int c = 0; c < m->n_comps; c++) {
        const hs_computation *comp = m->comps[c];
        put_i64(st, comp->n_instrs);
        put_i64(st, comp->n_params);
        put_i64(st, comp->is_entry);
        put_i64(st, comp->is_fusion);
        put_i64(st, position(m, pos, comp->root));
        for (int k = 0; k < comp->n_instrs; k++)
            put_instruction(st, m, comp->instrs[k], pos);
    }
    uint64_t h = XXH3_64bits_digest(st);
    XXH3_freeState(st);
    free(pos);
    return h;
}
