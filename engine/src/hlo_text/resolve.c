/* resolve.c - turning names into pointers once their targets exist:
 * operands at the end of each computation, called computations at the end
 * of the module. Then the module is put in the shape the IR promises:
 * callees before callers, an entry computation, unique instruction names. */
#include <stdlib.h>
#include <string.h>

#include "hlo_text/hlo_text_internal.h"

static bool oom(hs_parser *P)
{
    return hs__scan_fail(&P->s, P->s.pos, "out of host memory");
}

static void name_instruction(hs_parser *P, const hs_instruction *i)
{
    P->s.instr = i->name;
    P->s.instr_len = strlen(i->name);
}

bool hs__resolve_operands(hs_parser *P, hs_computation *c)
{
    for (size_t k = 0; k < P->n_instrs; k++) {
        hs_pending *pend = &P->instrs[k];
        if (!pend->n)
            continue;
        hs_instruction *i = pend->instr;
        hs_instruction **ops =
            hs_arena_alloc(P->a, sizeof *ops * pend->n);
        if (!ops)
            return oom(P);
        for (size_t o = 0; o < pend->n; o++) {
            const hs_name_ref *ref = &P->operand_refs[pend->first + o];
            ops[o] = hs__map_get(&P->instr_names, ref->name, ref->len);
            if (!ops[o]) {
                name_instruction(P, i);
                return hs__scan_fail(&P->s, ref->pos,
                                     "unknown operand '%.*s' (no "
                                     "instruction of that name in "
                                     "computation '%s')",
                                     (int)(ref->len > 150 ? 150 : ref->len),
                                     ref->name, c->name);
            }
            if (ops[o] == i) {
                name_instruction(P, i);
                return hs__scan_fail(&P->s, ref->pos,
                                     "instruction '%s' uses itself as an "
                                     "operand", i->name);
            }
        }
        i->operands = ops;
        i->n_operands = (int)pend->n;
    }
    return true;
}

static bool resolve_called(hs_parser *P)
{
    for (size_t k = 0; k < P->n_callers; k++) {
        hs_pending *pend = &P->callers[k];
        hs_instruction *i = pend->instr;
        const hs_name_ref *refs = &P->called_refs[pend->first];
        int n_slots = 0;
        for (size_t r = 0; r < pend->n; r++)
            if (refs[r].slot + 1 > n_slots)
                n_slots = refs[r].slot + 1;
        hs_computation **called =
            hs_arena_alloc(P->a, sizeof *called * (size_t)n_slots);
        if (!called)
            return oom(P);
        for (size_t r = 0; r < pend->n; r++) {
            hs_computation *c =
                hs__map_get(&P->comp_names, refs[r].name, refs[r].len);
            name_instruction(P, i);
            if (!c)
                return hs__scan_fail(&P->s, refs[r].pos,
                                     "unknown computation '%.*s'",
                                     (int)(refs[r].len > 150 ? 150
                                                             : refs[r].len),
                                     refs[r].name);
            if (called[refs[r].slot])
                return hs__scan_fail(&P->s, refs[r].pos,
                                     "computation given twice for the same "
                                     "role");
            called[refs[r].slot] = c;
        }
        for (int s = 0; s < n_slots; s++) {
            if (!called[s]) {
                name_instruction(P, i);
                return hs__scan_fail(&P->s, pend->pos,
                                     i->opcode == HS_OP_WHILE
                                         ? "while needs both condition= and "
                                           "body="
                                     : i->opcode == HS_OP_SELECT_AND_SCATTER
                                         ? "select-and-scatter needs both "
                                           "select= and scatter="
                                         : "conditional needs both "
                                           "true_computation= and "
                                           "false_computation=");
            }
        }
        i->called = called;
        i->n_called = n_slots;
    }
    P->s.instr = NULL;
    return true;
}

/* Reorders m->comps so that every computation follows the ones it calls,
 * keeping text order where it already holds. Iterative: call chains in
 * hostile input may be arbitrarily deep. Cycles are left to the verifier. */
static bool order_callees_first(hs_parser *P)
{
    hs_module *m = P->m;
    int n = m->n_comps;
    typedef struct {
        int comp, instr, called;
    } frame;
    unsigned char *state = calloc((size_t)n, 1); /* 0 new, 1 open, 2 done */
    frame *stack = malloc(sizeof *stack * (size_t)n);
    hs_computation **order = malloc(sizeof *order * (size_t)n);
    if (!state || !stack || !order) {
        free(state);
        free(stack);
        free(order);
        return oom(P);
    }
    int n_order = 0;
    for (int k = 0; k < n; k++)
        m->comps[k]->id = k;
    for (int start = 0; start < n; start++) {
        if (state[start])
            continue;
        int top = 0;
        stack[top++] = (frame){start, 0, 0};
        state[start] = 1;
        while (top) {
            frame *f = &stack[top - 1];
            hs_computation *c = m->comps[f->comp];
            hs_computation *next = NULL;
            while (f->instr < c->n_instrs) {
                hs_instruction *i = c->instrs[f->instr];
                if (f->called < i->n_called) {
                    hs_computation *callee = i->called[f->called++];
                    if (!state[callee->id]) {
                        next = callee;
                        break;
                    }
                    continue;
                }
                f->instr++;
                f->called = 0;
            }
            if (next) {
                state[next->id] = 1;
                stack[top++] = (frame){next->id, 0, 0};
                continue;
            }
            state[f->comp] = 2;
            order[n_order++] = c;
            top--;
        }
    }
    for (int k = 0; k < n; k++) {
        m->comps[k] = order[k];
        m->comps[k]->id = k;
    }
    free(state);
    free(stack);
    free(order);
    return true;
}

/* XLA names are unique in a module, but dumps reuse short names such as
 * "p" in every computation. The first use keeps its name; later ones get
 * "name.N" with the smallest N that no instruction uses. The next N to try
 * is remembered per name, so thousands of repeats stay linear. */
static bool uniquify_names(hs_parser *P, hs_computation *const *text_order,
                           int n_comps)
{
    hs_name_map seen = {0}, next_suffix = {0};
    bool ok = true;
    for (int k = 0; ok && k < n_comps; k++) {
        hs_computation *c = text_order[k];
        for (int j = 0; ok && j < c->n_instrs; j++) {
            hs_instruction *i = c->instrs[j];
            ok = hs__map_put(&seen, i->name, strlen(i->name), i, NULL);
        }
    }
    hs_buf cand = {0};
    for (int k = 0; ok && k < n_comps; k++) {
        hs_computation *c = text_order[k];
        for (int j = 0; ok && j < c->n_instrs; j++) {
            hs_instruction *i = c->instrs[j];
            const char *base = i->name;
            size_t base_len = strlen(base);
            if (hs__map_get(&seen, base, base_len) == i)
                continue;
            /* Suffixes are stored as (void *)(n + 1) so that 0 is "none". */
            uintptr_t suffix =
                (uintptr_t)hs__map_get(&next_suffix, base, base_len);
            suffix = suffix ? suffix - 1 : 1;
            for (;; suffix++) {
                cand.len = 0;
                hs__buf_put(&cand, base, base_len);
                hs__buf_putc(&cand, '.');
                hs__buf_put_uint(&cand, suffix);
                if (cand.oom) {
                    ok = false;
                    break;
                }
                if (!hs__map_get(&seen, cand.data, cand.len))
                    break;
            }
            if (!ok)
                break;
            char *name = hs_arena_strndup(P->a, cand.data, cand.len);
            ok = name && hs__map_put(&seen, name, cand.len, i, NULL);
            if (!ok)
                break;
            /* base stays valid: the old name lives on in the arena. */
            void *prev;
            ok = hs__map_put(&next_suffix, base, base_len,
                             (void *)(suffix + 2), &prev);
            if (ok && prev)
                hs__map_set(&next_suffix, base, base_len,
                            (void *)(suffix + 2));
            i->name = name;
            hs_module_note_name(i->parent->module, name);
        }
    }
    hs__buf_free(&cand);
    hs__map_free(&seen);
    hs__map_free(&next_suffix);
    return ok ? true : oom(P);
}

bool hs__resolve_module(hs_parser *P, hs_computation *last_comp)
{
    hs_module *m = P->m;
    if (!resolve_called(P))
        return false;
    if (!m->entry) {
        /* Without ENTRY, XLA takes the last computation of the text. */
        last_comp->is_entry = true;
        m->entry = last_comp;
    }
    if (!P->has_header) {
        /* No header: name the module after its entry, as XLA does. */
        m->name = m->entry->name;
    }
    for (int k = 0; k < m->n_comps; k++) {
        hs_computation *c = m->comps[k];
        for (int j = 0; j < c->n_instrs; j++) {
            hs_instruction *i = c->instrs[j];
            if (i->opcode == HS_OP_FUSION)
                for (int f = 0; f < i->n_called; f++)
                    i->called[f]->is_fusion = true;
        }
    }
    hs_computation **text_order =
        malloc(sizeof *text_order * (size_t)m->n_comps);
    if (!text_order)
        return oom(P);
    memcpy(text_order, m->comps, sizeof *text_order * (size_t)m->n_comps);
    bool ok = uniquify_names(P, text_order, m->n_comps) &&
              order_callees_first(P);
    free(text_order);
    return ok;
}
