/* reroll_rewrite.c - the rerolled module (reroll_internal.h): the entry
 * of the user's module with the run of each plan replaced by its own
 * `while` (made by hs_scan, the scan room's lowering), as torch_xla's
 * scan_layers would have traced it. A train step has several runs (the
 * forward layers, the backward layers): each becomes its own loop.
 *
 * The module is cloned and a new entry is built with the tracer:
 * everything outside the runs is copied unchanged and in order; a run's
 * while is emitted when its first result is read (its inputs must be
 * defined by then, and may be another run's results); its body is the
 * run's layer 0 with slots in place of outside operands. The old entry is
 * unlinked (not dce, which would also drop what the user's module leaves
 * dead and so flatter the instruction count). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_builder.h"
#include "whatif/reroll_internal.h"

struct rewrite;

/* One run's loop, as it is being emitted. */
typedef struct loop {
    struct rewrite *rw;
    plan *p;
    bool emitting;             /* emit_while is on the stack (a cycle) */
    hs_instruction *while_i;
    hs_instruction **body_map;  /* by position of layer 0: its copy */
    hs_instruction **slot_body; /* by slot: a constant's copy in the body */
    hs_instruction **carry_out; /* n_carry + n_invariant */
    hs_instruction *ys_out[HS_SCAN_MAX_YS];
} loop;

typedef struct rewrite {
    const hs_module *m;
    const hs_computation *c; /* m's entry */
    hs_module *dst;
    hs_builder *b;
    hs_instruction **map; /* by source id: its copy in the new entry */
    int n_loops;
    loop *loops;
    int *loop_of;         /* by source id: the loop whose run holds it */
    int next_param;
    hs__reroll_param *params;
    int n_params;
} rewrite;

static bool narrow_float(hs_dtype t)
{
    return t == HS_BF16 || t == HS_F16;
}

/* Appends a copy of s with operands ops to computation c of dst; called
 * computations are dst's (the clone keeps the source's order). */
static hs_instruction *copy_into(rewrite *rw, hs_computation *c,
                                 const hs_instruction *s,
                                 hs_instruction *const *ops)
{
    hs_shape shape;
    if (!hs_shape_copy(rw->dst->arena, &shape, &s->shape))
        return NULL;
    hs_instruction *d =
        hs_computation_add(c, s->opcode, &shape, ops, s->n_operands, NULL);
    if (!d || !hs_instruction_copy_attributes(d, s))
        return NULL;
    if (s->n_called > 0) {
        hs_computation **called =
            malloc(sizeof *called * (size_t)s->n_called);
        if (!called)
            return NULL;
        for (int k = 0; k < s->n_called; k++)
            called[k] =
                rw->dst->comps[hs_computation_index(rw->m, s->called[k])];
        hs_instruction_set_called(d, called, s->n_called);
        free(called);
        if (!d->called)
            return NULL;
    }
    return d;
}

/* [1, dims...] of x, in x's computation. */
static hs_instruction *with_unit_axis(hs_builder *b, hs_instruction *x)
{
    int64_t dims[HS_MAX_RANK];
    dims[0] = 1;
    for (int d = 0; d < x->shape.rank; d++)
        dims[d + 1] = x->shape.dims[d];
    return hs_b_reshape(b, x, x->shape.rank + 1, dims);
}

static void body_fn(hs_builder *body, hs_scan_step *st, void *user)
{
    loop *lp = user;
    rewrite *rw = lp->rw;
    plan *p = lp->p;
    hs_computation *bc = hs_builder_computation(body);
    hs_instruction *ops_small[16];
    for (int k = 0; k < p->n; k++) {
        const hs_instruction *s = plan_at(p, 0, k);
        hs_instruction **ops = ops_small;
        if (s->n_operands > 16 &&
            !(ops = malloc(sizeof *ops * (size_t)s->n_operands))) {
            hs_builder_fail(body, HS_ERR_NOMEM, "reroll: out of host memory");
            return;
        }
        for (int o = 0; o < s->n_operands; o++) {
            int sl = p->operand_slot[k][o];
            if (sl < 0) {
                ops[o] = lp->body_map[p->pos_of[s->operands[o]->id]];
                continue;
            }
            const slot *x = &p->slots[sl];
            if (x->kind == SLOT_CONSTANT && !lp->slot_body[sl])
                lp->slot_body[sl] = copy_into(rw, bc, x->v0, NULL);
            if (x->kind == SLOT_CARRY && hs_shape_is_tuple(&x->v0->shape) &&
                !lp->slot_body[sl])
                lp->slot_body[sl] = hs_b_tuple(body, &st->carry[x->index],
                                               x->v0->shape.n_elems);
            ops[o] = x->kind == SLOT_CARRY
                         ? (hs_shape_is_tuple(&x->v0->shape)
                                ? lp->slot_body[sl]
                                : st->carry[x->index])
                     : x->kind == SLOT_INVARIANT
                         ? st->carry[p->n_carry + x->index]
                     : x->kind == SLOT_CONSTANT ? lp->slot_body[sl]
                                                : st->x[x->index];
        }
        lp->body_map[k] = copy_into(rw, bc, s, ops);
        if (ops != ops_small)
            free(ops);
        if (!lp->body_map[k]) {
            hs_builder_fail(body, HS_ERR_NOMEM, "reroll: out of host memory");
            return;
        }
    }
    for (int s = 0; s < p->n_slots; s++) {
        const slot *x = &p->slots[s];
        if (x->kind == SLOT_CARRY)
            for (int e = 0; e < slot_carry_width(x); e++)
                st->new_carry[x->index + e] =
                    hs_shape_is_tuple(&x->v0->shape)
                        ? hs_b_get_tuple_element(body, lp->body_map[x->p], e)
                        : lp->body_map[x->p];
        else if (x->kind == SLOT_INVARIANT)
            st->new_carry[p->n_carry + x->index] =
                st->carry[p->n_carry + x->index];
    }
    for (int y = 0; y < p->n_ys; y++) {
        hs_instruction *v = lp->body_map[p->pos_of[p->ys_pos[y]->id]];
        st->ys[y] = narrow_float(v->shape.dtype) ? hs_b_convert(body, v, HS_F32)
                                                 : v;
    }
    st->n_ys = p->n_ys;
}

static hs_instruction *run_output(loop *lp, const hs_instruction *v);
static bool emit_while(loop *lp);

/* The new entry's copy of v, a value from outside the run being emitted:
 * another run's result (its while emitted on demand), or a constant only
 * the runs read (copied here on demand). NULL when v is computed after
 * the loop must start (error on the builder). */
static hs_instruction *outside_value(rewrite *rw, const hs_instruction *v,
                                     const char *reader)
{
    if (!rw->map[v->id] && rw->loop_of[v->id] >= 0)
        rw->map[v->id] = run_output(&rw->loops[rw->loop_of[v->id]], v);
    if (!rw->map[v->id] && v->opcode == HS_OP_CONSTANT)
        rw->map[v->id] = copy_into(rw, hs_builder_computation(rw->b), v, NULL);
    if (!rw->map[v->id] && hs_builder_ok(rw->b))
        hs_builder_fail(rw->b, HS_ERR_INVALID,
                        "%%%s, read by %s, is computed after values of the "
                        "run it reads are used",
                        v->name, reader);
    return rw->map[v->id];
}

/* When each layer of lp reads the same value of another run's layers,
 * one layer each, consecutive, in that run's order or in reverse (a
 * backward pass reads the activations its forward pass saved, last layer
 * first): that run's stacked ys, the rows read (one slice) and reversed
 * along the layers when read last first, instead of L rows sliced and
 * stacked again. NULL when not. */
static hs_instruction *another_runs_ys(loop *lp, const slot *s)
{
    rewrite *rw = lp->rw;
    plan *p = lp->p;
    const hs_instruction *v0 = plan_slot_value(p, s, 0);
    int q = rw->loop_of[v0->id];
    if (q < 0 || &rw->loops[q] == lp)
        return NULL;
    loop *src = &rw->loops[q];
    const plan *a = src->p;
    int k = a->pos_of[v0->id], l0 = plan_layer_of(a, v0);
    if (a->y_of[k] < 0)
        return NULL;
    bool same = true, reversed = true;
    for (int j = 0; j < p->L; j++) {
        const hs_instruction *v = plan_slot_value(p, s, j);
        if (rw->loop_of[v->id] != q || a->pos_of[v->id] != k)
            return NULL;
        int l = plan_layer_of(a, v);
        same = same && l == l0 + j;
        reversed = reversed && l == l0 - j;
    }
    if (!(same || reversed) || p->L < 2)
        return NULL;
    if (!src->while_i && !emit_while(src))
        return NULL;
    hs_builder *b = rw->b;
    hs_instruction *ys = src->ys_out[a->y_of[k]];
    int lo = same ? l0 : l0 - (p->L - 1);
    if (lo != 0 || p->L != a->L) {
        int64_t start[HS_MAX_RANK] = {0}, limit[HS_MAX_RANK];
        for (int d = 0; d < ys->shape.rank; d++)
            limit[d] = ys->shape.dims[d];
        start[0] = lo;
        limit[0] = lo + p->L;
        ys = hs_b_slice(b, ys, start, limit, NULL);
        if (!ys)
            return NULL;
    }
    if (reversed) {
        hs_instruction *r = hs_computation_add(hs_builder_computation(b),
                                               HS_OP_REVERSE, &ys->shape,
                                               &ys, 1, NULL);
        int64_t axis = 0;
        if (!r) {
            hs_builder_fail(b, HS_ERR_NOMEM, "reroll: out of host memory");
            return NULL;
        }
        hs_instruction_set_dims(r, &axis, 1);
        ys = r;
    }
    if (ys->shape.dtype != v0->shape.dtype)
        ys = hs_b_convert(b, ys, v0->shape.dtype);
    return ys;
}

/* The stacked [L, ...] input of slot s, in the new entry: a new parameter
 * for per-layer parameters, else the layers' values stacked in the graph. */
static hs_instruction *stacked_input(loop *lp, int si)
{
    rewrite *rw = lp->rw;
    plan *p = lp->p;
    const slot *s = &p->slots[si];
    hs_builder *b = rw->b;
    if (s->kind == SLOT_STACKED_PARAM) {
        hs_shape sh = plan_stacked_shape(p, &s->v0->shape);
        char name[256];
        snprintf(name, sizeof name, "%s.stacked", s->v0->name);
        rw->params[rw->n_params++] =
            (hs__reroll_param){.plan = (int)(lp - rw->loops), .slot = si};
        return hs_b_parameter(b, rw->next_param++, &sh, name);
    }
    hs_instruction *whole = another_runs_ys(lp, s);
    if (whole || !hs_builder_ok(b))
        return whole;
    hs_instruction **parts = malloc(sizeof *parts * (size_t)p->L);
    if (!parts)
        return NULL;
    bool ok = true;
    for (int j = 0; j < p->L && ok; j++) {
        hs_instruction *v = outside_value(rw, plan_slot_value(p, s, j),
                                          p->layer_path[j]);
        parts[j] = v ? with_unit_axis(b, v) : NULL;
        ok = parts[j] != NULL;
    }
    hs_instruction *r = ok ? hs_b_concatenate(b, parts, p->L, 0) : NULL;
    free(parts);
    return r;
}

static bool emit_while(loop *lp)
{
    rewrite *rw = lp->rw;
    plan *p = lp->p;
    hs_builder *b = rw->b;
    if (lp->emitting) {
        hs_builder_fail(b, HS_ERR_INVALID,
                        "%s reads a value computed from its own results "
                        "through another run",
                        p->layer_path[0]);
        return false;
    }
    lp->emitting = true;
    int nc = p->n_carry + p->n_invariant;
    hs_instruction **init = calloc((size_t)nc + 1, sizeof *init);
    hs_instruction **xs = calloc((size_t)p->n_xs + 1, sizeof *xs);
    lp->carry_out = hs_arena_alloc(rw->dst->arena,
                                   sizeof *lp->carry_out * ((size_t)nc + 1));
    lp->body_map = calloc((size_t)p->n, sizeof *lp->body_map);
    lp->slot_body = calloc((size_t)p->n_slots + 1, sizeof *lp->slot_body);
    bool ok = init && xs && lp->carry_out && lp->body_map && lp->slot_body;
    for (int s = 0; s < p->n_slots && ok; s++) {
        const slot *x = &p->slots[s];
        if (x->kind == SLOT_STACKED || x->kind == SLOT_STACKED_PARAM) {
            xs[x->index] = stacked_input(lp, s);
            ok = xs[x->index] != NULL;
            continue;
        }
        if (x->kind == SLOT_CONSTANT)
            continue;
        hs_instruction *v = outside_value(rw, x->v0, p->layer_path[0]);
        ok = v != NULL;
        for (int e = 0; v && e < slot_carry_width(x); e++)
            init[(x->kind == SLOT_CARRY ? 0 : p->n_carry) + x->index + e] =
                hs_shape_is_tuple(&x->v0->shape)
                    ? hs_b_get_tuple_element(b, v, e)
                    : v;
    }
    if (ok) {
        hs_scan_options so = {.scope = "reroll"};
        int n_ys = 0;
        lp->while_i = hs_scan(b, body_fn, lp, init, nc, xs, p->n_xs, &so,
                              lp->carry_out, lp->ys_out, &n_ys);
        ok = lp->while_i != NULL;
    }
    free(init);
    free(xs);
    lp->emitting = false;
    return ok;
}

/* The new entry's value for v, an instruction of lp's run read after it:
 * the last layer's carry, else its row of the ys. */
static hs_instruction *run_output(loop *lp, const hs_instruction *v)
{
    rewrite *rw = lp->rw;
    plan *p = lp->p;
    if (!lp->while_i && !emit_while(lp))
        return NULL;
    int j = plan_layer_of(p, v), k = p->pos_of[v->id];
    if (p->y_of[k] < 0 || j == p->L - 1) {
        for (int s = 0; s < p->n_slots; s++)
            if (p->slots[s].kind == SLOT_CARRY && p->slots[s].p == k &&
                j == p->L - 1)
                return hs_shape_is_tuple(&v->shape)
                           ? hs_b_tuple(rw->b,
                                        &lp->carry_out[p->slots[s].index],
                                        v->shape.n_elems)
                           : lp->carry_out[p->slots[s].index];
    }
    hs_instruction *ys = lp->ys_out[p->y_of[k]];
    int64_t start[HS_MAX_RANK] = {0}, limit[HS_MAX_RANK];
    for (int d = 0; d < ys->shape.rank; d++)
        limit[d] = ys->shape.dims[d];
    start[0] = j;
    limit[0] = j + 1;
    hs_instruction *r = hs_b_reshape(
        rw->b, hs_b_slice(rw->b, ys, start, limit, NULL), v->shape.rank,
        v->shape.dims);
    if (r && r->shape.dtype != v->shape.dtype)
        r = hs_b_convert(rw->b, r, v->shape.dtype);
    return r;
}

bool hs__reroll_stacked_away(plan *const *plans, int n,
                             const hs_instruction *i)
{
    for (int q = 0; q < n; q++) {
        const plan *p = plans[q];
        for (int s = 0; s < p->n_slots; s++)
            if (p->slots[s].kind == SLOT_STACKED_PARAM)
                for (int j = 0; j < p->L; j++)
                    if (plan_slot_value(p, &p->slots[s], j) == i)
                        return true;
    }
    return false;
}

/* Whether a constant is copied into a body rather than the new entry: one
 * layer of a run is its only reader. */
static bool body_constant(const rewrite *rw, const hs_instruction *s)
{
    if (s->opcode != HS_OP_CONSTANT)
        return false;
    for (int q = 0; q < rw->n_loops; q++)
        if (rw->loops[q].p->reader_layer[s->id] >= 0)
            return true;
    return false;
}

/* Copies the entry, each run replaced by its while, into dst's new
 * entry. */
static bool rewrite_entry(rewrite *rw, plan *const *plans)
{
    const hs_computation *c = rw->c;
    hs_instruction *ops_small[16];
    int param = 0;
    for (int k = 0; k < c->n_params; k++) {
        hs_shape sh;
        if (hs__reroll_stacked_away(plans, rw->n_loops, c->params[k]))
            continue;
        if (!hs_shape_copy(rw->dst->arena, &sh, &c->params[k]->shape))
            return false;
        rw->map[c->params[k]->id] =
            hs_b_parameter(rw->b, param++, &sh, c->params[k]->name);
    }
    rw->next_param = param;
    for (int k = 0; k < c->n_instrs && hs_builder_ok(rw->b); k++) {
        const hs_instruction *s = c->instrs[k];
        if (rw->loop_of[s->id] >= 0 || s->opcode == HS_OP_PARAMETER ||
            body_constant(rw, s))
            continue;
        hs_instruction **ops = ops_small;
        if (s->n_operands > 16 &&
            !(ops = malloc(sizeof *ops * (size_t)s->n_operands)))
            return false;
        bool ok = true;
        for (int o = 0; o < s->n_operands && ok; o++) {
            const hs_instruction *v = s->operands[o];
            if (!rw->map[v->id] && rw->loop_of[v->id] >= 0)
                rw->map[v->id] = run_output(&rw->loops[rw->loop_of[v->id]], v);
            ops[o] = rw->map[v->id];
            ok = ops[o] != NULL;
        }
        rw->map[s->id] = ok ? copy_into(rw, hs_builder_computation(rw->b),
                                        s, ops)
                            : NULL;
        if (ops != ops_small)
            free(ops);
        if (!rw->map[s->id])
            return false;
    }
    /* A run none of whose values is read still becomes its loop. */
    for (int q = 0; q < rw->n_loops; q++)
        if (!rw->loops[q].while_i && !emit_while(&rw->loops[q]))
            return false;
    const hs_instruction *root = c->root;
    if (!rw->map[root->id] && rw->loop_of[root->id] >= 0)
        rw->map[root->id] = run_output(&rw->loops[rw->loop_of[root->id]],
                                       root);
    return rw->map[root->id] != NULL;
}

static void rewrite_free(rewrite *rw)
{
    for (int q = 0; rw->loops && q < rw->n_loops; q++) {
        free(rw->loops[q].body_map);
        free(rw->loops[q].slot_body);
    }
    free(rw->loops);
    free(rw->loop_of);
    free(rw->map);
}

/* Unlinks computation old from dst: called by nothing now (it stays in
 * the arena). */
static void unlink_computation(hs_module *dst, hs_computation *old)
{
    int at_old = hs_computation_index(dst, old);
    memmove(&dst->comps[at_old], &dst->comps[at_old + 1],
            sizeof *dst->comps * (size_t)(dst->n_comps - at_old - 1));
    dst->n_comps--;
    for (int k = 0; k < dst->n_comps; k++)
        dst->comps[k]->id = k;
}

hs_module *hs__reroll_rewrite(const hs_module *m, plan *const *plans, int n,
                              hs__reroll_param **params, int *n_params,
                              char *why, size_t size)
{
    *params = NULL;
    *n_params = 0;
    hs_module *dst = hs_module_clone(m);
    rewrite rw = {.m = m, .c = m->entry, .dst = dst, .n_loops = n};
    size_t n_ids = (size_t)m->next_id + 1;
    int stacked = 1;
    for (int q = 0; q < n; q++)
        stacked += plans[q]->n_xs;
    rw.map = calloc(n_ids, sizeof *rw.map);
    rw.loops = calloc((size_t)n + 1, sizeof *rw.loops);
    rw.loop_of = malloc(sizeof *rw.loop_of * n_ids);
    rw.params = malloc(sizeof *rw.params * (size_t)stacked);
    if (!dst || !rw.map || !rw.loops || !rw.loop_of || !rw.params) {
        snprintf(why, size, "out of host memory");
        goto fail;
    }
    for (size_t k = 0; k < n_ids; k++)
        rw.loop_of[k] = -1;
    for (int q = 0; q < n; q++) {
        rw.loops[q] = (loop){.rw = &rw, .p = plans[q]};
        for (int k = 0; k < m->entry->n_instrs; k++) {
            const hs_instruction *i = m->entry->instrs[k];
            if (plan_layer_of(plans[q], i) >= 0)
                rw.loop_of[i->id] = q;
        }
    }
    hs_computation *old = dst->comps[hs_computation_index(m, m->entry)];
    const char *name = old->name;
    old->name = hs_arena_printf(dst->arena, "%s.unrolled", name);
    old->is_entry = false;
    rw.b = hs_builder_new(dst, name, true);
    bool ok = rw.b && rewrite_entry(&rw, plans);
    hs_error e;
    hs_error_clear(&e);
    hs_computation *entry = NULL;
    if (ok) {
        entry = hs_builder_finish(rw.b, rw.map[m->entry->root->id], &e);
        if (!entry)
            snprintf(why, size, "%s", e.message);
    } else if (rw.b) {
        const hs_error *be = hs_builder_error(rw.b);
        snprintf(why, size, "%s",
                 be && be->status != HS_OK ? be->message
                                           : "out of host memory");
        hs_builder_free(rw.b);
    } else {
        snprintf(why, size, "out of host memory");
    }
    if (!entry)
        goto fail;
    unlink_computation(dst, old);
    if (hs_module_verify(dst, &e) != HS_OK) {
        snprintf(why, size, "the rerolled module does not verify: %.400s",
                 e.message);
        goto fail;
    }
    *params = rw.params;
    *n_params = rw.n_params;
    rw.params = NULL;
    rewrite_free(&rw);
    return dst;
fail:
    free(rw.params);
    rewrite_free(&rw);
    hs_module_free(dst);
    return NULL;
}
