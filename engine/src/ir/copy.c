/* copy.c - deep copies of shapes and instruction attributes into another
 * module's arena, shared by module cloning and inlining. */
#include <string.h>

#include "hloscope/hs_ir.h"

int64_t hs_instruction_literal_bytes(const hs_instruction *i)
{
    if (!i->literal || i->shape.dtype == HS_TUPLE)
        return 0;
    int bits = hs_dtype_bits(i->shape.dtype);
    if (bits <= 0 || bits % 8 != 0)
        return 0;
    return hs_shape_elements(&i->shape) * (bits / 8);
}

static const char *dup(hs_arena *a, const char *s)
{
    return s ? hs_arena_strdup(a, s) : NULL;
}

static void *dup_bytes(hs_arena *a, const void *p, size_t n)
{
    if (!p || n == 0)
        return NULL;
    void *q = hs_arena_alloc(a, n);
    if (q)
        memcpy(q, p, n);
    return q;
}

bool hs_shape_copy(hs_arena *a, hs_shape *dst, const hs_shape *src)
{
    *dst = *src;
    dst->layout_tail = dup(a, src->layout_tail);
    dst->elems = NULL;
    if (src->dtype != HS_TUPLE || src->n_elems == 0)
        return true;
    dst->elems = hs_arena_alloc(a, sizeof(hs_shape) * (size_t)src->n_elems);
    if (!dst->elems)
        return false;
    for (int k = 0; k < src->n_elems; k++)
        if (!hs_shape_copy(a, &dst->elems[k], &src->elems[k]))
            return false;
    return true;
}

bool hs_instruction_copy_attributes(hs_instruction *dst,
                                    const hs_instruction *src)
{
    hs_arena *a = hs_instruction_arena(dst);
    size_t literal_bytes = (size_t)hs_instruction_literal_bytes(src);
    dst->index = src->index;
    dst->n_dims = src->n_dims;
    dst->dims = dup_bytes(a, src->dims, sizeof(int64_t) * (size_t)src->n_dims);
    dst->dot = dup_bytes(a, src->dot, sizeof *src->dot);
    dst->slice = dup_bytes(a, src->slice, sizeof *src->slice);
    dst->direction = src->direction;
    dst->compare_type = dup(a, src->compare_type);
    dst->custom_call_target = dup(a, src->custom_call_target);
    dst->fusion_kind = dup(a, src->fusion_kind);
    /* A constant of no elements (f32[0]{0} {}) holds a literal of no bytes:
     * it stays a held literal, not a missing one. */
    dst->literal = src->literal && literal_bytes == 0
                       ? hs_arena_alloc(a, 1)
                       : dup_bytes(a, src->literal, literal_bytes);
    dst->literal_text = dup(a, src->literal_text);
    dst->literal_splat = src->literal_splat;
    dst->op_name = dup(a, src->op_name);
    dst->op_type = dup(a, src->op_type);
    dst->metadata_rest = dup(a, src->metadata_rest);
    dst->frontend_attributes = dup(a, src->frontend_attributes);
    dst->backend_config = dup(a, src->backend_config);
    dst->sharding = dup(a, src->sharding);
    dst->known_trip_count = src->known_trip_count;
    dst->unknown_opcode = dup(a, src->unknown_opcode);
    dst->scratch = src->scratch;
    if (src->n_extra > 0) {
        dst->extra = hs_arena_alloc(a, sizeof(hs_attr) * (size_t)src->n_extra);
        if (!dst->extra)
            return false;
        for (int k = 0; k < src->n_extra; k++) {
            dst->extra[k].key = dup(a, src->extra[k].key);
            dst->extra[k].value = dup(a, src->extra[k].value);
        }
        dst->n_extra = src->n_extra;
    }
    return !((src->n_dims && !dst->dims) || (src->dot && !dst->dot) ||
             (src->slice && !dst->slice) || (src->literal && !dst->literal));
}
