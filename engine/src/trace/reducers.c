/*
 * reducers.c - the scalar computations that reduce applies, such as XLA's
 *
 *     %add_F32 (lhs.1: f32[], rhs.2: f32[]) -> f32[]
 *
 * built once per module for each (opcode, element type), and kept before
 * every computation that uses them in m->comps (callees first).
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "trace/builder_internal.h"

static int reducer_slot(hs_opcode op)
{
    switch (op) {
    case HS_OP_ADD: return 0;
    case HS_OP_MAXIMUM: return 1;
    case HS_OP_MINIMUM: return 2;
    case HS_OP_MULTIPLY: return 3;
    default: return -1;
    }
}

static const char *const reducer_prefix[HS__REDUCER_KINDS] = {"add", "max",
                                                              "min", "mul"};

/* True when c is exactly (lhs: t[], rhs: t[]) -> op(lhs, rhs). A parsed
 * module may hold an unrelated computation with the same name. */
static bool is_reducer(const hs_computation *c, hs_opcode op, hs_dtype t)
{
    if (c->n_params != 2 || c->n_instrs != 3 || !c->root ||
        c->root->opcode != op || c->root->n_operands != 2)
        return false;
    for (int k = 0; k < 2; k++) {
        const hs_instruction *p = c->params[k];
        if (!p || p->shape.dtype != t || p->shape.rank != 0 ||
            c->root->operands[k] != p)
            return false;
    }
    return true;
}

static hs_instruction *scalar_param(hs_computation *c, int number,
                                    const char *base, const hs_shape *s)
{
    /* Named like XLA ("lhs.7"): hs_computation_add gives the instruction
     * the module's next id, so the name matches the id and is unique. */
    char name[32];
    snprintf(name, sizeof name, "%s.%d", base, c->module->next_id);
    return hs_computation_add_parameter(c, number, s, name);
}

static hs_computation *build_reducer(hs_builder *b, const char *name,
                                     hs_opcode op, hs_dtype t)
{
    hs_computation *c = hs_module_add_computation(b->m, name, false);
    if (!c)
        return NULL;
    hs_shape s = hs_shape_scalar(t);
    hs_instruction *ops[2];
    ops[0] = scalar_param(c, 0, "lhs", &s);
    ops[1] = ops[0] ? scalar_param(c, 1, "rhs", &s) : NULL;
    if (!ops[1])
        return NULL;
    c->root = hs_computation_add(c, op, &s, ops, 2, NULL);
    return c->root ? c : NULL;
}

hs_computation *hs__b_reducer(hs_builder *b, hs_opcode op, hs_dtype t)
{
    int slot = reducer_slot(op);
    if (slot < 0 || (int)t < 0 || t >= HS_TUPLE || t == HS_TOKEN) {
        hs_builder_fail(b, HS_ERR_INVALID,
                        "reduce: %s over %s is not a supported reducer (add, "
                        "maximum, minimum or multiply over an element type)",
                        (unsigned)op < HS_OP_COUNT ? hs_opcode_name(op) : "?",
                        (unsigned)t < HS_DTYPE_COUNT ? hs_dtype_name(t) : "?");
        return NULL;
    }
    hs_computation *c = b->reducers[slot][t];
    if (c)
        return c;

    char base[48], name[64];
    int n = snprintf(base, sizeof base, "%s_%s", reducer_prefix[slot],
                     hs_dtype_name(t));
    for (int k = (int)strlen(reducer_prefix[slot]) + 1; k < n; k++)
        base[k] = (char)toupper((unsigned char)base[k]);
    snprintf(name, sizeof name, "%s", base);
    for (int suffix = 1;; suffix++) {
        c = hs_module_find_computation(b->m, name);
        if (!c || is_reducer(c, op, t))
            break;
        snprintf(name, sizeof name, "%s.%d", base, suffix);
    }
    if (!c && !(c = build_reducer(b, name, op, t))) {
        hs_builder_fail(b, HS_ERR_NOMEM, "builder: out of memory");
        return NULL;
    }
    if (!hs__b_order_callee(b, c))
        return NULL;
    b->reducers[slot][t] = c;
    return c;
}
