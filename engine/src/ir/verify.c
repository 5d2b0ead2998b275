/*
 * verify.c - structural checks of a module (hs_module_verify in hs_ir.h).
 *
 * One pass over every instruction of every computation, O(n) overall. A
 * table indexed by instruction id records each instruction once the walk
 * has checked it, so "operand defined earlier in the same computation" is
 * one array lookup (ids are unique in a module and dense, and operands are
 * usually recent, so the table stays in cache). Names are collected in walk
 * order and checked for duplicates at the end by radix-sorting their hashes
 * (unique_names.h), which keeps memory access sequential. The module itself is not modified (no
 * scratch fields are used), so a pass may verify in the middle of its work.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_infer.h"
#include "hloscope/hs_ir.h"
#include "ir/hashset.h"
#include "ir/unique_names.h"

typedef struct verifier {
    const hs_module *m;
    /* defined[id] is the instruction with that id once checked. */
    const hs_instruction **defined;
    int64_t n_ids;
    hs__ptrmap comps;   /* computation -> index in m->comps */
    const char **names; /* in walk order, for the duplicate check */
    uint32_t *hashes;
    const hs_instruction **named;
    int64_t n_names;
    hs_arena *scratch; /* tuple shapes made by shape inference */
    int64_t total_bytes; /* of every result, saturating */
    hs_error *err;
} verifier;

static hs_status verr(verifier *v, const hs_computation *c,
                      const hs_instruction *i, hs_status st, const char *fmt,
                      ...) __attribute__((format(printf, 5, 6)));

/* Reports an error about instruction i (or about computation c when i is
 * NULL). The message names both; err->instruction holds i's name. */
static hs_status verr(verifier *v, const hs_computation *c,
                      const hs_instruction *i, hs_status st, const char *fmt,
                      ...)
{
    char detail[sizeof v->err->message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    const char *cname = c && c->name ? c->name : "?";
    if (i) {
        const char *iname = i->name ? i->name : "?";
        hs_error_set(v->err, st, "%s in computation %s: %s", iname, cname,
                     detail);
        if (v->err)
            snprintf(v->err->instruction, sizeof v->err->instruction, "%s",
                     iname);
    } else if (c) {
        hs_error_set(v->err, st, "computation %s: %s", cname, detail);
    } else {
        hs_error_set(v->err, st, "%s", detail);
    }
    return st;
}

static hs_status check_params(verifier *v, const hs_computation *c)
{
    for (int k = 0; k < c->n_params; k++) {
        const hs_instruction *p = c->params[k];
        if (!p)
            return verr(v, c, NULL, HS_ERR_INVALID,
                        "parameter %d is missing (parameters must be "
                        "numbered 0..%d without holes)",
                        k, c->n_params - 1);
        if (p->opcode != HS_OP_PARAMETER || p->index != k || p->parent != c)
            return verr(v, c, p, HS_ERR_INVALID,
                        "recorded as parameter %d but is not parameter(%d) "
                        "of this computation",
                        k, k);
    }
    return HS_OK;
}

static bool is_defined(const verifier *v, const hs_instruction *i)
{
    return i->id >= 0 && i->id < v->n_ids && v->defined[i->id] == i;
}

static hs_status check_operands(verifier *v, const hs_computation *c,
                                const hs_instruction *i)
{
    int arity = hs_opcode_arity(i->opcode);
    if (arity >= 0 && i->n_operands != arity)
        return verr(v, c, i, HS_ERR_INVALID, "%s expects %d operands, got %d",
                    hs_opcode_name(i->opcode), arity, i->n_operands);
    for (int k = 0; k < i->n_operands; k++) {
        const hs_instruction *o = i->operands[k];
        if (!o)
            return verr(v, c, i, HS_ERR_INVALID, "operand %d is NULL", k);
        /* Listed instructions were checked to have their listing
         * computation as parent, so parent c + defined = earlier in c. */
        if (o->parent == c && is_defined(v, o))
            continue;
        if (o->parent == c)
            return verr(v, c, i, HS_ERR_INVALID,
                        "operand %d (%s) is used before its definition or is "
                        "not listed in the computation",
                        k, o->name ? o->name : "?");
        return verr(v, c, i, HS_ERR_INVALID,
                    "operand %d (%s) belongs to computation %s, not %s", k,
                    o->name ? o->name : "?",
                    o->parent && o->parent->name ? o->parent->name : "?",
                    c->name);
    }
    return HS_OK;
}

static hs_status check_called(verifier *v, const hs_computation *c,
                              const hs_instruction *i)
{
    for (int k = 0; k < i->n_called; k++) {
        const hs_computation *callee = i->called[k];
        int64_t idx;
        if (!callee)
            return verr(v, c, i, HS_ERR_INVALID,
                        "called computation %d is NULL", k);
        if (!hs__ptrmap_get(&v->comps, callee, &idx))
            return verr(v, c, i, HS_ERR_INVALID,
                        "calls computation %s, which is not in module %s",
                        callee->name ? callee->name : "?", v->m->name);
    }
    return HS_OK;
}

static hs_status check_shape(verifier *v, const hs_computation *c,
                             const hs_instruction *i)
{
    hs_error e; /* written only on failure */
    hs_status st = hs_shape_check_size(&i->shape, &e);
    if (st != HS_OK)
        return verr(v, c, i, st, "%s", e.message);
    v->total_bytes = hs_sat_add(v->total_bytes,
                                hs_shape_total_bytes(&i->shape));
    /* Their written shape is what defines them: no rule to check. */
    if (i->opcode == HS_OP_PARAMETER || i->opcode == HS_OP_CONSTANT)
        return HS_OK;
    hs_shape inferred;
    st = hs_infer_shape(i, v->scratch, &inferred, &e);
    if (st == HS_ERR_UNSUPPORTED)
        return HS_OK; /* no rule: the written shape is trusted */
    if (st != HS_OK)
        return verr(v, c, i, st, "%s", e.message);
    if (hs_shape_compatible(&i->shape, &inferred))
        return HS_OK;
    char written[192], expected[192];
    hs_shape_print(&i->shape, false, written, sizeof written);
    hs_shape_print(&inferred, false, expected, sizeof expected);
    return verr(v, c, i, HS_ERR_SHAPE,
                "%s has shape %s but its operands give %s",
                hs_opcode_name(i->opcode), written, expected);
}

static hs_status check_instruction(verifier *v, const hs_computation *c,
                                   const hs_instruction *i, int pos)
{
    if (!i)
        return verr(v, c, NULL, HS_ERR_INVALID, "instruction %d is NULL",
                    pos);
    if (i->parent != c)
        return verr(v, c, i, HS_ERR_INVALID,
                    "is listed in the computation but its parent is %s",
                    i->parent && i->parent->name ? i->parent->name : "NULL");
    if (!i->name || !i->name[0])
        return verr(v, c, i, HS_ERR_INVALID, "instruction has no name");
    v->names[v->n_names] = i->name;
    v->hashes[v->n_names] = hs__name_hash(i->name);
    v->named[v->n_names++] = i;
    if (v->defined[i->id])
        return verr(v, c, i, HS_ERR_INVALID,
                    "id %d is also used by %s", i->id,
                    v->defined[i->id]->name);
    if ((unsigned)i->opcode >= HS_OP_COUNT)
        return verr(v, c, i, HS_ERR_INVALID, "opcode %d is not valid",
                    (int)i->opcode);
    if (i->opcode == HS_OP_PARAMETER &&
        (i->index < 0 || i->index >= c->n_params || c->params[i->index] != i))
        return verr(v, c, i, HS_ERR_INVALID,
                    "parameter(%lld) is not recorded as parameter %lld of "
                    "the computation",
                    (long long)i->index, (long long)i->index);
    hs_status st = check_operands(v, c, i);
    if (st == HS_OK)
        st = check_called(v, c, i);
    if (st == HS_OK)
        st = check_shape(v, c, i);
    if (st == HS_OK)
        v->defined[i->id] = i;
    return st;
}

static hs_status check_computation(verifier *v, int ci)
{
    const hs_computation *c = v->m->comps[ci];
    if (c->module != v->m)
        return verr(v, c, NULL, HS_ERR_INVALID,
                    "belongs to another module than %s", v->m->name);
    hs_status st = check_params(v, c);
    for (int pos = 0; st == HS_OK && pos < c->n_instrs; pos++)
        st = check_instruction(v, c, c->instrs[pos], pos);
    if (st != HS_OK)
        return st;
    for (int k = 0; k < c->n_params; k++)
        if (!is_defined(v, c->params[k]))
            return verr(v, c, c->params[k], HS_ERR_INVALID,
                        "is parameter %d but is not listed in the "
                        "computation",
                        k);
    if (!c->root)
        return verr(v, c, NULL, HS_ERR_INVALID, "has no root instruction");
    if (c->root->parent != c || !is_defined(v, c->root))
        return verr(v, c, c->root, HS_ERR_INVALID,
                    "is the root but is not an instruction of the "
                    "computation");
    return HS_OK;
}

static hs_status check_module(verifier *v)
{
    const hs_module *m = v->m;
    bool entry_found = false;
    for (int ci = 0; ci < m->n_comps; ci++) {
        if (!m->comps[ci])
            return verr(v, NULL, NULL, HS_ERR_INVALID,
                        "module %s: computation %d is NULL", m->name, ci);
        hs__ptrmap_put(&v->comps, m->comps[ci], ci);
        entry_found |= m->comps[ci] == m->entry;
    }
    if (!m->entry || !entry_found)
        return verr(v, NULL, NULL, HS_ERR_INVALID,
                    "module %s has no entry computation", m->name);
    for (int ci = 0; ci < m->n_comps; ci++) {
        hs_status st = check_computation(v, ci);
        if (st != HS_OK)
            return st;
    }
    /* Every memory sum (live bytes, peaks, argument totals) adds results
     * of this module, so this bound keeps them all inside int64. */
    if (v->total_bytes > HS_MAX_MODULE_BYTES)
        return verr(v, NULL, NULL, HS_ERR_LIMIT,
                    "module %s: its results total more than 2^62 bytes, "
                    "the most hloscope can account",
                    m->name);
    int64_t first = -1;
    int64_t dup = hs__find_duplicate_name(v->names, v->hashes, v->n_names,
                                          &first);
    if (dup == -2)
        return hs_error_set(v->err, HS_ERR_NOMEM, "verify: out of memory");
    if (dup >= 0) {
        const hs_instruction *i = v->named[dup], *o = v->named[first];
        return verr(v, i->parent, i, HS_ERR_INVALID,
                    "the name %s is also used by an instruction of "
                    "computation %s",
                    i->name, o->parent->name);
    }
    return HS_OK;
}

/* Sizes the id table: ids must be in [0, max]; negative ids are reported
 * with the instruction. Returns -1 for a module with a negative id. */
static int64_t count_ids(const hs_module *m, int64_t *n_instrs,
                         const hs_instruction **negative)
{
    int64_t max = -1, n = 0;
    for (int ci = 0; ci < m->n_comps; ci++) {
        const hs_computation *c = m->comps[ci];
        for (int k = 0; c && k < c->n_instrs; k++) {
            const hs_instruction *i = c->instrs[k];
            if (!i)
                continue;
            if (i->id < 0 && !*negative)
                *negative = i;
            if (i->id > max)
                max = i->id;
            n++;
        }
    }
    *n_instrs = n;
    return max + 1;
}

hs_status hs_module_verify(const hs_module *m, hs_error *err)
{
    verifier v = {.m = m, .err = err};
    int64_t n_instrs = 0;
    const hs_instruction *negative = NULL;
    v.n_ids = count_ids(m, &n_instrs, &negative);
    if (negative)
        return verr(&v, negative->parent, negative, HS_ERR_INVALID,
                    "id %d is negative", negative->id);
    hs_status st = HS_ERR_NOMEM;
    v.defined = calloc((size_t)(v.n_ids > 0 ? v.n_ids : 1),
                       sizeof *v.defined);
    if (v.defined && hs__ptrmap_init(&v.comps, (size_t)m->n_comps) &&
        (v.names = malloc(sizeof *v.names * (size_t)(n_instrs + 1))) &&
        (v.named = malloc(sizeof *v.named * (size_t)(n_instrs + 1))) &&
        (v.hashes = malloc(sizeof *v.hashes * (size_t)(n_instrs + 1))) &&
        (v.scratch = hs_arena_new(0)) != NULL)
        st = check_module(&v);
    else
        hs_error_set(err, st, "verify: out of memory");
    free(v.defined);
    hs__ptrmap_free(&v.comps);
    free(v.names);
    free(v.named);
    free(v.hashes);
    if (v.scratch)
        hs_arena_free(v.scratch);
    return st;
}
