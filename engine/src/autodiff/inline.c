/* inline.c - copies a computation into a builder's computation with
 * arguments in place of its parameters (hs_autodiff_inline), so that a
 * forward pass traced elsewhere (a model's module) can be differentiated
 * in the computation that also holds its gradient and the optimizer.
 *
 * Instructions are copied with their attributes and metadata under fresh
 * names. Called computations are shared when the source is in the
 * builder's module; otherwise they are copied (once per call, under a name
 * not yet taken), except scalar reducers, which the builder's own cache
 * provides. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autodiff/autodiff_internal.h"

typedef struct inliner {
    hs_builder *b;
    hs_module *dst;
    bool same_module;
    int n, cap; /* copied computations: from[k] -> to[k] */
    const hs_computation **from;
    hs_computation **to;
    int n_ids;              /* the source module's next id */
    hs_instruction **by_id; /* source instruction id -> its copy */
} inliner;

static bool oom(inliner *in)
{
    hs_builder_fail(in->b, HS_ERR_NOMEM, "inline: out of host memory");
    return false;
}

/* A computation name not yet taken in dst: name, name.1, name.2, ... */
static const char *free_name(hs_module *dst, const char *name)
{
    if (!hs_module_find_computation(dst, name))
        return name;
    char buf[256];
    for (int k = 1;; k++) {
        snprintf(buf, sizeof buf, "%.200s.%d", name, k);
        if (!hs_module_find_computation(dst, buf))
            return hs_arena_strdup(dst->arena, buf);
    }
}

static hs_computation *copy_computation(inliner *in, const hs_computation *s);

/* The destination's version of called computation c, placed before
 * caller in dst->comps. */
static hs_computation *callee_for(inliner *in, const hs_computation *c,
                                  const hs_computation *caller)
{
    hs_computation *d = NULL;
    if (in->same_module) {
        d = (hs_computation *)c;
    } else {
        for (int k = 0; k < in->n; k++)
            if (in->from[k] == c)
                d = in->to[k];
        if (!d && !(d = copy_computation(in, c)))
            return NULL;
    }
    if (hs_module_move_computation_before(in->dst, d, caller) != HS_OK) {
        hs_builder_fail(in->b, HS_ERR_INVALID,
                        "inline: computation %s cannot be called from %s",
                        d->name, caller->name);
        return NULL;
    }
    return d;
}

/* Appends a copy of s (operands ops) to computation c. */
static hs_instruction *copy_instruction(inliner *in, hs_computation *c,
                                        const hs_instruction *s,
                                        hs_instruction *const *ops)
{
    hs_arena *a = in->dst->arena;
    hs_shape shape;
    if (!hs_shape_copy(a, &shape, &s->shape))
        return oom(in), NULL;
    hs_instruction *d = hs_computation_add(c, s->opcode, &shape, ops,
                                           s->n_operands, NULL);
    if (!d || !hs_instruction_copy_attributes(d, s))
        return oom(in), NULL;
    if (s->n_called > 0) {
        hs_computation *called[8];
        if (s->n_called > 8) {
            hs_builder_fail(in->b, HS_ERR_UNSUPPORTED,
                            "inline: %s calls %d computations", s->name,
                            s->n_called);
            return NULL;
        }
        for (int k = 0; k < s->n_called; k++)
            if (!(called[k] = callee_for(in, s->called[k], c)))
                return NULL;
        hs_instruction_set_called(d, called, s->n_called);
        if (d->n_called != s->n_called)
            return oom(in), NULL;
    }
    return d;
}

/* The opcode of a scalar reducer (p0, p1) -> op(p0, p1), or -1. */
static int plain_reducer(const hs_instruction *s)
{
    if (s->opcode != HS_OP_REDUCE || s->n_operands != 2 || s->n_called != 1)
        return -1;
    const hs_computation *c = s->called[0];
    const hs_instruction *r = c->root;
    if (c->n_params != 2 || c->n_instrs != 3 || !r || r->n_operands != 2 ||
        r->operands[0] != c->params[0] || r->operands[1] != c->params[1])
        return -1;
    switch (r->opcode) {
    case HS_OP_ADD: case HS_OP_MAXIMUM: case HS_OP_MINIMUM:
    case HS_OP_MULTIPLY:
        return (int)r->opcode;
    default:
        return -1;
    }
}

/* Maps the operands of s through by_id (indexed by instruction id of the
 * source module) into ops. */
static bool map_operands(inliner *in, const hs_instruction *s,
                         hs_instruction *const *by_id, hs_instruction **ops)
{
    for (int k = 0; k < s->n_operands; k++) {
        const hs_instruction *o = s->operands[k];
        if (!o || o->id < 0 || o->id >= in->n_ids || !by_id[o->id]) {
            hs_builder_fail(in->b, HS_ERR_INVALID,
                            "inline: operand %s of %s is not defined before "
                            "it",
                            o ? o->name : "?", s->name);
            return false;
        }
        ops[k] = by_id[o->id];
    }
    return true;
}

/* Copies every non-parameter instruction of s into d (into the builder
 * when d is its computation), recording copies in by_id. */
static bool copy_body(inliner *in, const hs_computation *s, hs_computation *d)
{
    hs_builder *b = in->b;
    bool into_builder = d == hs_builder_computation(b);
    for (int k = 0; k < s->n_instrs && hs_builder_ok(b); k++) {
        const hs_instruction *si = s->instrs[k];
        if (si->opcode == HS_OP_PARAMETER)
            continue;
        if (si->id < 0 || si->id >= in->n_ids) {
            hs_builder_fail(b, HS_ERR_INVALID, "inline: %s has a bad id",
                            si->name);
            return false;
        }
        hs_instruction *small[16], **ops = small;
        if (si->n_operands > 16 &&
            !(ops = malloc(sizeof *ops * (size_t)si->n_operands)))
            return oom(in);
        hs_instruction *di = NULL;
        if (map_operands(in, si, in->by_id, ops)) {
            int reducer = into_builder && !in->same_module ? plain_reducer(si)
                                                           : -1;
            if (reducer >= 0) {
                di = hs_b_reduce(b, ops[0], ops[1], si->dims, si->n_dims,
                                 (hs_opcode)reducer);
                if (di) {
                    di->op_name = hs_arena_strdup(in->dst->arena, si->op_name);
                    di->metadata_rest = hs_arena_strdup(in->dst->arena, si->metadata_rest);
                }
            } else {
                di = copy_instruction(in, d, si, ops);
            }
        }
        if (ops != small)
            free(ops);
        if (!di)
            return false;
        in->by_id[si->id] = di;
    }
    return hs_builder_ok(b);
}

static hs_computation *copy_computation(inliner *in, const hs_computation *s)
{
    if (in->n == in->cap) {
        int cap = in->cap ? in->cap * 2 : 8;
        const hs_computation **f = realloc(in->from, sizeof *f * (size_t)cap);
        if (f)
            in->from = f;
        hs_computation **t = realloc(in->to, sizeof *t * (size_t)cap);
        if (t)
            in->to = t;
        if (!f || !t)
            return oom(in), NULL;
        in->cap = cap;
    }
    hs_computation *d = hs_module_add_computation(
        in->dst, free_name(in->dst, s->name), false);
    if (!d)
        return oom(in), NULL;
    d->is_fusion = s->is_fusion;
    in->from[in->n] = s;
    in->to[in->n++] = d;
    for (int k = 0; k < s->n_params; k++) {
        const hs_instruction *p = s->params[k];
        hs_shape shape;
        if (!p || p->id < 0 || p->id >= in->n_ids) {
            hs_builder_fail(in->b, HS_ERR_INVALID,
                            "inline: computation %s lacks parameter %d",
                            s->name, k);
            return NULL;
        }
        hs_instruction *q = NULL;
        if (hs_shape_copy(in->dst->arena, &shape, &p->shape))
            q = hs_computation_add_parameter(d, k, &shape, NULL);
        if (!q)
            return oom(in), NULL;
        q->op_name = hs_arena_strdup(in->dst->arena, p->op_name);
        in->by_id[p->id] = q;
    }
    if (!copy_body(in, s, d))
        return NULL;
    if (s->root)
        d->root = in->by_id[s->root->id];
    return d;
}

static bool check_args(inliner *in, const hs_computation *src,
                       hs_instruction *const *args, int n_args)
{
    if (n_args != src->n_params || (n_args > 0 && !args)) {
        hs_builder_fail(in->b, HS_ERR_INVALID,
                        "inline: %s takes %d parameters, given %d", src->name,
                        src->n_params, n_args);
        return false;
    }
    hs_computation *c = hs_builder_computation(in->b);
    for (int k = 0; k < n_args; k++) {
        const hs_instruction *p = src->params[k], *a = args[k];
        if (!a)
            return false; /* an earlier op failed */
        if (!p || a->parent != c ||
            (p->shape.dtype == HS_TUPLE ? a->shape.dtype != HS_TUPLE
                                        : !hs_shape_compatible(&p->shape,
                                                               &a->shape))) {
            char want[128] = "?", got[128];
            if (p)
                hs_shape_print(&p->shape, false, want, sizeof want);
            hs_shape_print(&a->shape, false, got, sizeof got);
            hs_builder_fail(in->b, HS_ERR_INVALID,
                            "inline: argument %d of %s is %s %s, parameter "
                            "%d expects %s",
                            k, src->name, a->name, got, k, want);
            return false;
        }
    }
    return true;
}

hs_instruction *hs_autodiff_inline(hs_builder *b, const hs_computation *src,
                                   hs_instruction *const *args, int n_args,
                                   hs_instruction **map)
{
    if (!b || !hs_builder_ok(b))
        return NULL;
    if (!src || !src->root) {
        hs_builder_fail(b, HS_ERR_INVALID,
                        "inline: no computation (or it has no root)");
        return NULL;
    }
    inliner in = {.b = b, .dst = hs_builder_module(b)};
    in.same_module = src->module == in.dst;
    if (!check_args(&in, src, args, n_args))
        return NULL;
    hs_computation *c = hs_builder_computation(b);
    if (src == c) {
        hs_builder_fail(b, HS_ERR_INVALID,
                        "inline: %s cannot be inlined into itself", c->name);
        return NULL;
    }
    in.n_ids = src->module->next_id;
    if (!(in.by_id = calloc((size_t)in.n_ids + 1, sizeof *in.by_id))) {
        hs_builder_fail(b, HS_ERR_NOMEM, "inline: out of host memory");
        return NULL;
    }
    for (int k = 0; k < n_args; k++) {
        const hs_instruction *p = src->params[k];
        if (p->id >= 0 && p->id < in.n_ids)
            in.by_id[p->id] = args[k];
    }
    hs_instruction *root = NULL;
    if (copy_body(&in, src, c)) {
        root = in.by_id[src->root->id];
        for (int k = 0; map && k < src->n_instrs; k++)
            map[k] = in.by_id[src->instrs[k]->id];
    }
    free(in.by_id);
    free(in.from);
    free(in.to);
    return hs_builder_ok(b) ? root : NULL;
}
