/* rewrite.c - the one-sweep rewriter and the constant helpers that the
 * passes share. */
#include <stdlib.h>
#include <string.h>

#include "numerics/element_types.h"
#include "passes/passes_internal.h"

/* Appends an existing instruction to c->instrs, growing the array in the
 * module arena as hs_computation_add does. */
static bool append(hs_computation *c, hs_instruction *i)
{
    if (c->n_instrs == c->cap_instrs) {
        int cap = c->cap_instrs ? c->cap_instrs * 2 : 8;
        hs_instruction **p = hs_arena_alloc(c->module->arena,
                                            sizeof *p * (size_t)cap);
        if (!p)
            return false;
        if (c->n_instrs)
            memcpy(p, c->instrs, sizeof *p * (size_t)c->n_instrs);
        c->instrs = p;
        c->cap_instrs = cap;
    }
    c->instrs[c->n_instrs++] = i;
    return true;
}

typedef struct sweep {
    hs_instruction **old; /* the instructions before the sweep */
    hs_instruction **repl; /* repl[k] replaces old[k], or NULL */
    int n;
} sweep;

/* Instructions of the sweep carry their old position in scratch; those made
 * during it carry -1. */
static hs_instruction *resolve(const sweep *s, hs_instruction *op)
{
    int64_t k = op ? op->scratch : -1;
    if (k >= 0 && k < s->n && s->old[k] == op && s->repl[k])
        return s->repl[k];
    return op;
}

hs_status hs__rewrite_computation(hs_computation *c,
                                  const hs_pass_context *ctx,
                                  hs__visit_fn visit, void *state,
                                  bool *changed, hs_error *err)
{
    sweep s = {0};
    s.n = c->n_instrs;
    if (s.n == 0)
        return HS_OK;
    s.old = malloc(sizeof *s.old * (size_t)s.n);
    s.repl = calloc((size_t)s.n, sizeof *s.repl);
    if (!s.old || !s.repl) {
        free(s.old);
        free(s.repl);
        return hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
    }
    memcpy(s.old, c->instrs, sizeof *s.old * (size_t)s.n);
    for (int k = 0; k < s.n; k++)
        s.old[k]->scratch = k;
    /* c->instrs is rebuilt in place: the write position never passes the
     * read position in s.old, a copy. */
    c->n_instrs = 0;
    hs_status st = HS_OK;
    int64_t tick = 0;
    for (int k = 0; k < s.n; k++) {
        hs_instruction *i = s.old[k];
        for (int o = 0; o < i->n_operands; o++)
            i->operands[o] = resolve(&s, i->operands[o]);
        /* After a cancellation or an error the sweep still finishes
         * redirecting operands, so the module stays consistent. */
        if (st == HS_OK)
            st = hs__pass_poll(ctx, &tick, err);
        if (st == HS_OK) {
            hs_instruction *r = visit(i, state, changed);
            if (r && r != i) {
                s.repl[k] = r;
                *changed = true;
                continue;
            }
        }
        if (!append(c, i) && st == HS_OK)
            st = hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
    }
    if (c->root)
        c->root = resolve(&s, c->root);
    free(s.old);
    free(s.repl);
    return st;
}

hs_instruction *hs__add_like(const hs_instruction *like, hs_opcode op,
                             const hs_shape *shape,
                             hs_instruction *const *operands, int n)
{
    hs_instruction *i =
        hs_computation_add(like->parent, op, shape, operands, n, NULL);
    if (!i)
        return NULL;
    i->op_name = like->op_name;
    i->op_type = like->op_type;
    i->scratch = -1;
    return i;
}

/* Every type the device executes: the folder computes with the same
 * element functions (numerics/), so a folded constant has the bits. */
bool hs__foldable_dtype(hs_dtype t)
{
    return elem_class_of(t) != ELEM_NONE;
}

bool hs__is_constant(const hs_instruction *i)
{
    return i->opcode == HS_OP_CONSTANT && i->literal &&
           hs__foldable_dtype(i->shape.dtype);
}

double hs__constant_get(const hs_instruction *i, int64_t k)
{
    if (i->opcode == HS_OP_BROADCAST)
        return hs__constant_get(i->operands[0], 0);
    hs_dtype t = i->shape.dtype;
    double v;
    elem_convert(t, HS_F64, (const char *)i->literal + k * elem_bytes(t), &v,
                 1);
    return v;
}

bool hs__is_all(const hs_instruction *i, double v)
{
    if (i->opcode == HS_OP_BROADCAST && i->n_operands == 1)
        return hs__is_all(i->operands[0], v);
    if (!hs__is_constant(i))
        return false;
    int64_t n = hs_shape_elements(&i->shape);
    for (int64_t k = 0; k < n; k++)
        if (hs__constant_get(i, k) != v)
            return false;
    return n > 0;
}

hs_instruction *hs__add_constant(const hs_instruction *like,
                                 const hs_shape *shape, const void *data)
{
    size_t bytes = (size_t)hs_shape_elements(shape) *
                   (size_t)(hs_dtype_bits(shape->dtype) / 8);
    hs_instruction *i = hs__add_like(like, HS_OP_CONSTANT, shape, NULL, 0);
    if (!i)
        return NULL;
    if (bytes) {
        i->literal = hs_arena_alloc(hs_instruction_arena(i), bytes);
        if (!i->literal)
            return NULL;
        memcpy(i->literal, data, bytes);
    }
    return i;
}
