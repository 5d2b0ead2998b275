/* clone.c - a deep copy of a module into a new arena, so that a compile can
 * rewrite its own copy while the caller keeps the traced module. Names and
 * ids are preserved. Also the position index by instruction id that the
 * copy and the fingerprint share (ir/positions.h). */
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_ir.h"
#include "ir/positions.h"

int32_t *hs__positions_by_id(const hs_module *m)
{
    int n = m->next_id > 0 ? m->next_id : 1;
    int32_t *pos = malloc(sizeof(int32_t) * (size_t)n);
    if (!pos)
        return NULL;
    for (int k = 0; k < n; k++)
        pos[k] = -1;
    for (int c = 0; c < m->n_comps; c++) {
        const hs_computation *comp = m->comps[c];
        for (int k = 0; k < comp->n_instrs; k++) {
            int id = comp->instrs[k]->id;
            if (id < 0 || id >= n) {
                free(pos);
                return NULL;
            }
            pos[id] = k;
        }
    }
    return pos;
}

static bool clone_computation(hs_module *dst, const hs_module *src,
                              const hs_computation *sc,
                              hs_instruction **by_id)
{
    hs_arena *a = dst->arena;
    hs_computation *c = hs_module_add_computation(dst, sc->name, sc->is_entry);
    if (!c)
        return false;
    c->is_fusion = sc->is_fusion;
    hs_instruction *ops_small[8];
    for (int k = 0; k < sc->n_instrs; k++) {
        const hs_instruction *si = sc->instrs[k];
        hs_shape shape;
        if (!hs_shape_copy(a, &shape, &si->shape))
            return false;
        hs_instruction *i;
        if (si->opcode == HS_OP_PARAMETER && si->index >= 0 &&
            si->index < sc->n_params && sc->params[si->index] == si) {
            i = hs_computation_add_parameter(c, si->index, &shape, si->name);
        } else {
            hs_instruction **ops = ops_small;
            if (si->n_operands > 8) {
                ops = malloc(sizeof *ops * (size_t)si->n_operands);
                if (!ops)
                    return false;
            }
            bool ok = true;
            for (int o = 0; o < si->n_operands; o++) {
                int id = si->operands[o] ? si->operands[o]->id : -1;
                ops[o] = id >= 0 && id < src->next_id ? by_id[id] : NULL;
                ok = ok && ops[o];
            }
            /* An operand not defined earlier: the source is malformed. */
            i = ok ? hs_computation_add(c, si->opcode, &shape, ops,
                                        si->n_operands, si->name)
                   : NULL;
            if (ops != ops_small)
                free(ops);
        }
        if (!i || !hs_instruction_copy_attributes(i, si))
            return false;
        i->id = si->id;
        by_id[si->id] = i;
    }
    if (sc->root && sc->root->id >= 0 && sc->root->id < src->next_id)
        c->root = by_id[sc->root->id];
    return true;
}

/* Called computations can only be resolved once all exist. */
static bool link_called(hs_module *dst, const hs_module *src)
{
    for (int ci = 0; ci < src->n_comps; ci++) {
        const hs_computation *sc = src->comps[ci];
        hs_computation *c = dst->comps[ci];
        for (int k = 0; k < sc->n_instrs; k++) {
            const hs_instruction *si = sc->instrs[k];
            if (si->n_called == 0)
                continue;
            hs_computation **called =
                malloc(sizeof *called * (size_t)si->n_called);
            if (!called)
                return false;
            for (int j = 0; j < si->n_called; j++) {
                int p = hs_computation_index(src, si->called[j]);
                called[j] = p >= 0 ? dst->comps[p] : NULL;
            }
            hs_instruction_set_called(c->instrs[k], called, si->n_called);
            free(called);
            if (!c->instrs[k]->called)
                return false;
        }
    }
    return true;
}

hs_module *hs_module_clone(const hs_module *src)
{
    /* Every operand must be an instruction of src with an id in range,
     * which hs__positions_by_id checks for the definitions. */
    int32_t *pos = hs__positions_by_id(src);
    if (!pos)
        return NULL;
    free(pos);
    int n = src->next_id > 0 ? src->next_id : 1;
    hs_instruction **by_id = calloc((size_t)n, sizeof *by_id);
    hs_module *dst = hs_module_new(src->name);
    if (!by_id || !dst)
        goto fail;
    dst->header_attrs = hs_arena_strdup(dst->arena, src->header_attrs);
    if ((src->header_attrs && !dst->header_attrs) ||
        !hs_module_set_io_aliases(dst, src->io_aliases, src->n_io_aliases))
        goto fail;
    for (int ci = 0; ci < src->n_comps; ci++)
        if (!clone_computation(dst, src, src->comps[ci], by_id))
            goto fail;
    if (!link_called(dst, src))
        goto fail;
    for (int ci = 0; ci < src->n_comps; ci++)
        dst->comps[ci]->id = src->comps[ci]->id;
    if (src->entry) {
        int p = hs_computation_index(src, src->entry);
        dst->entry = p >= 0 ? dst->comps[p] : NULL;
    }
    dst->next_id = src->next_id;
    dst->next_name = src->next_name;
    free(by_id);
    return dst;
fail:
    free(by_id);
    hs_module_free(dst);
    return NULL;
}
