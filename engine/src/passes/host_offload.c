/*
 * host_offload.c - host offloading as XLA represents it.
 *
 * `host-offload` (XLA's HostOffloadLegalize + HostOffloader): the
 * annotations that place_to_host / place_to_device trace to,
 *
 *     custom-call(x), custom_call_target="annotate_device_placement",
 *       frontend_attributes={_xla_buffer_placement="pinned_host"}  (or "device")
 *
 * become custom-call "MoveToHost" / "MoveToDevice", and every buffer the
 * moved value flows into - through dynamic-update-slice into a stacked
 * buffer, tuples, get-tuple-element, while loops (state, body and
 * condition parameters, body root), dynamic-slice, reshape and bitcast -
 * gets memory space S(5) in its layout, including the broadcast that
 * initialises a stacked buffer. A "device" annotation of a value that is
 * already on the device is dropped. A host buffer read by anything but
 * those data movements (arithmetic on host memory) is an error naming the
 * instruction.
 *
 * `host-offload-async`: each MoveToHost / MoveToDevice becomes an async
 * pair, as XLA's memory-space assignment emits them,
 *
 *     cs = (f32[..]{..:S(5)}, f32[..], u32[]) copy-start(x)
 *     y  = f32[..]{..:S(5)} copy-done(cs)
 *
 * and hs__place_async_copies (called by `schedule` on the order it keeps)
 * issues every copy-start right after its operand is defined and waits in
 * copy-done right before the first use, so that the transfer runs on the
 * device's DMA stream while the instructions in between compute. A
 * dynamic-update-slice that stores a moved value into a host buffer that is
 * only returned (a scan's stacked residuals) is sunk to the end of the
 * computation with it. docs/PASSES.md, "Host offloading".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/host_offload.h"
#include "passes/passes_internal.h"

static bool target_is(const hs_instruction *i, const char *t)
{
    return i->opcode == HS_OP_CUSTOM_CALL && i->custom_call_target &&
           strcmp(i->custom_call_target, t) == 0;
}

static bool placed_on_host(const hs_instruction *i)
{
    return hs_instruction_placement(i) == HS_PLACEMENT_HOST;
}

static bool placed_on_device(const hs_instruction *i)
{
    return hs_instruction_placement(i) == HS_PLACEMENT_DEVICE;
}

/* ---- slots: one per array value (an array result, or a tuple element) ---- */

typedef struct slots {
    int n_ids;
    int *base;   /* by id: first slot, -1 */
    int n;
    int *parent; /* union-find */
    bool *host;  /* by root slot after propagation */
} slots;

static int width(const hs_instruction *i)
{
    return i->shape.dtype == HS_TUPLE ? i->shape.n_elems : 1;
}

static int slot_of(const slots *s, const hs_instruction *i, int k)
{
    if (!i || i->id < 0 || i->id >= s->n_ids || s->base[i->id] < 0)
        return -1;
    if (i->shape.dtype == HS_TUPLE) {
        if (k < 0 || k >= i->shape.n_elems ||
            i->shape.elems[k].dtype == HS_TUPLE)
            return -1;
        return s->base[i->id] + k;
    }
    return s->base[i->id];
}

static int find(slots *s, int a)
{
    while (s->parent[a] != a)
        a = s->parent[a] = s->parent[s->parent[a]];
    return a;
}

static void join(slots *s, int a, int b)
{
    if (a < 0 || b < 0)
        return;
    a = find(s, a);
    b = find(s, b);
    if (a != b)
        s->parent[a] = b;
}

static void join_tuples(slots *s, const hs_instruction *a,
                        const hs_instruction *b)
{
    if (!a || !b || a->shape.dtype != HS_TUPLE || b->shape.dtype != HS_TUPLE)
        return;
    int n = a->shape.n_elems < b->shape.n_elems ? a->shape.n_elems
                                                : b->shape.n_elems;
    for (int k = 0; k < n; k++)
        join(s, slot_of(s, a, k), slot_of(s, b, k));
}

static bool build_slots(const hs_module *m, slots *s)
{
    s->n_ids = m->next_id;
    s->base = malloc(sizeof(int) * ((size_t)s->n_ids + 1));
    if (!s->base)
        return false;
    for (int k = 0; k <= s->n_ids; k++)
        s->base[k] = -1;
    int n = 0;
    for (int c = 0; c < m->n_comps; c++)
        for (int k = 0; k < m->comps[c]->n_instrs; k++) {
            hs_instruction *i = m->comps[c]->instrs[k];
            if (i->id >= 0 && i->id < s->n_ids) {
                s->base[i->id] = n;
                n += width(i);
            }
        }
    s->n = n;
    s->parent = malloc(sizeof(int) * ((size_t)n + 1));
    s->host = calloc((size_t)n + 1, sizeof(bool));
    if (!s->parent || !s->host)
        return false;
    for (int k = 0; k < n; k++)
        s->parent[k] = k;
    for (int c = 0; c < m->n_comps; c++) {
        const hs_computation *cc = m->comps[c];
        for (int k = 0; k < cc->n_instrs; k++) {
            hs_instruction *i = cc->instrs[k];
            switch (i->opcode) {
            case HS_OP_GET_TUPLE_ELEMENT:
                join(s, slot_of(s, i, 0),
                     slot_of(s, i->operands[0], (int)i->index));
                break;
            case HS_OP_TUPLE:
                for (int o = 0; o < i->n_operands; o++)
                    if (i->operands[o]->shape.dtype != HS_TUPLE)
                        join(s, slot_of(s, i, o),
                             slot_of(s, i->operands[o], 0));
                break;
            case HS_OP_WHILE:
                if (i->n_called == 2) {
                    const hs_computation *cond = i->called[0];
                    const hs_computation *body = i->called[1];
                    join_tuples(s, i, i->operands[0]);
                    if (body->n_params == 1)
                        join_tuples(s, i, body->params[0]);
                    join_tuples(s, i, body->root);
                    if (cond->n_params == 1)
                        join_tuples(s, i, cond->params[0]);
                }
                break;
            case HS_OP_DYNAMIC_UPDATE_SLICE:
                join(s, slot_of(s, i, 0), slot_of(s, i->operands[0], 0));
                join(s, slot_of(s, i, 0), slot_of(s, i->operands[1], 0));
                break;
            case HS_OP_DYNAMIC_SLICE:
            case HS_OP_RESHAPE:
            case HS_OP_BITCAST:
                join(s, slot_of(s, i, 0), slot_of(s, i->operands[0], 0));
                break;
            default:
                break;
            }
        }
    }
    for (int c = 0; c < m->n_comps; c++)
        for (int k = 0; k < m->comps[c]->n_instrs; k++) {
            hs_instruction *i = m->comps[c]->instrs[k];
            if (placed_on_host(i) || target_is(i, "MoveToHost")) {
                int a = slot_of(s, i, 0);
                if (a >= 0)
                    s->host[find(s, a)] = true;
            }
        }
    return true;
}

static bool slot_host(slots *s, const hs_instruction *i, int k)
{
    int a = slot_of(s, i, k);
    return a >= 0 && s->host[find(s, a)];
}

static bool any_host(slots *s, const hs_instruction *i)
{
    for (int k = 0; k < width(i); k++)
        if (slot_host(s, i, k))
            return true;
    return false;
}

/* What may define or read a host buffer: data movement only. */
static bool host_ok(const hs_instruction *i, bool is_entry_param)
{
    switch (i->opcode) {
    case HS_OP_GET_TUPLE_ELEMENT: case HS_OP_TUPLE: case HS_OP_WHILE:
    case HS_OP_DYNAMIC_UPDATE_SLICE: case HS_OP_DYNAMIC_SLICE:
    case HS_OP_RESHAPE: case HS_OP_BITCAST: case HS_OP_BROADCAST:
    case HS_OP_CONSTANT:
        return true;
    case HS_OP_PARAMETER:
        return !is_entry_param;
    case HS_OP_CUSTOM_CALL:
        return placed_on_host(i) || placed_on_device(i) ||
               target_is(i, "MoveToHost") || target_is(i, "MoveToDevice");
    default:
        return false;
    }
}

static bool set_space(hs_arena *a, hs_instruction *i, slots *s)
{
    if (i->shape.dtype != HS_TUPLE) {
        if (slot_host(s, i, 0))
            i->shape.memory_space = HS_MEMSPACE_HOST;
        return true;
    }
    if (!any_host(s, i))
        return true;
    /* Tuple shapes may share their element array with other
     * instructions: give this one its own before writing into it. */
    int n = i->shape.n_elems;
    hs_shape *e = hs_arena_alloc(a, sizeof *e * (size_t)n);
    if (!e)
        return false;
    memcpy(e, i->shape.elems, sizeof *e * (size_t)n);
    i->shape.elems = e;
    for (int k = 0; k < n; k++)
        if (slot_host(s, i, k))
            e[k].memory_space = HS_MEMSPACE_HOST;
    return true;
}

/* A loop's init tuple may hold one broadcast several times, or one that
 * other instructions also read: CSE merges the zero broadcasts that
 * initialise a scan's equal-shaped stacks. When only some of those stacks
 * are offloaded, the shared init would tie host and device stacks to one
 * memory space; each init element gets its own broadcast instead (a copy
 * placed right before the tuple). Returns false on host OOM. */
static bool unshare_loop_inits(hs_module *m, bool *changed)
{
    for (int c = 0; c < m->n_comps; c++) {
        hs_computation *cc = m->comps[c];
        hs_user_list *users = hs_computation_users(cc);
        if (!users)
            return false;
        int n0 = cc->n_instrs;
        for (int k = 0; k < cc->n_instrs; k++) {
            hs_instruction *w = cc->instrs[k];
            if (w->opcode != HS_OP_WHILE || w->n_operands != 1 ||
                w->operands[0]->opcode != HS_OP_TUPLE)
                continue;
            hs_instruction *t = w->operands[0];
            for (int o = 0; o < t->n_operands; o++) {
                hs_instruction *x = t->operands[o];
                if (x->opcode != HS_OP_BROADCAST ||
                    x->shape.dtype == HS_TUPLE || x->scratch < 0 ||
                    x->scratch >= n0)
                    continue;
                int uses = 0;
                const hs_user_list *ul = &users[x->scratch];
                for (int u = 0; u < ul->n; u++)
                    for (int q = 0; q < ul->users[u]->n_operands; q++)
                        uses += ul->users[u]->operands[q] == x;
                if (uses < 2)
                    continue;
                hs_shape sh;
                if (!hs_shape_copy(hs_instruction_arena(x), &sh, &x->shape))
                    return false;
                hs_instruction *y = hs_computation_add(
                    cc, x->opcode, &sh, x->operands, x->n_operands, NULL);
                if (!y || !hs_instruction_copy_attributes(y, x))
                    return false;
                y->scratch = -1;
                /* Move y from the end to just before the tuple. */
                int pt = -1;
                for (int q = 0; q < cc->n_instrs; q++)
                    if (cc->instrs[q] == t)
                        pt = q;
                int py = cc->n_instrs - 1;
                if (pt < 0 || cc->instrs[py] != y)
                    return false;
                memmove(cc->instrs + pt + 1, cc->instrs + pt,
                        sizeof *cc->instrs * (size_t)(py - pt));
                cc->instrs[pt] = y;
                t->operands[o] = y;
                /* x has one use fewer; the users list is not read again
                 * for y, and x keeps the others. */
                for (int u = 0; u < ul->n; u++)
                    if (ul->users[u] == t) {
                        bool still = false;
                        for (int q = 0; q < t->n_operands; q++)
                            still |= t->operands[q] == x;
                        if (!still)
                            ul->users[u] = ul->users[--users[x->scratch].n];
                        break;
                    }
                *changed = true;
            }
        }
    }
    return true;
}

hs_status hs_pass_host_offload_run(hs_module *m, hs_pass_context *ctx,
                                   bool *changed, hs_error *err)
{
    (void)ctx;
    bool any = false;
    for (int c = 0; c < m->n_comps && !any; c++)
        for (int k = 0; k < m->comps[c]->n_instrs && !any; k++)
            any = placed_on_host(m->comps[c]->instrs[k]) ||
                  placed_on_device(m->comps[c]->instrs[k]);
    if (!any)
        return HS_OK;
    slots s = {0};
    hs_status st = HS_OK;
    if (!unshare_loop_inits(m, changed) || !build_slots(m, &s)) {
        st = hs_error_set(err, HS_ERR_NOMEM, "host-offload: out of host memory");
        goto out;
    }
    /* Check: host buffers are only moved, sliced and stored. */
    for (int c = 0; c < m->n_comps && st == HS_OK; c++) {
        hs_computation *cc = m->comps[c];
        for (int k = 0; k < cc->n_instrs && st == HS_OK; k++) {
            hs_instruction *i = cc->instrs[k];
            bool entry_param = cc->is_entry && i->opcode == HS_OP_PARAMETER;
            if (any_host(&s, i) && !host_ok(i, entry_param)) {
                st = hs_error_set(err, HS_ERR_INVALID,
                                  "host-offload: %s (%s) would be computed "
                                  "in host memory; only data movement "
                                  "(dynamic-update-slice, dynamic-slice, "
                                  "tuples, loops) may touch an offloaded "
                                  "buffer",
                                  i->name, hs_opcode_name(i->opcode));
                snprintf(err->instruction, sizeof err->instruction, "%s",
                         i->name);
            }
            for (int o = 0; st == HS_OK && o < i->n_operands; o++) {
                const hs_instruction *x = i->operands[o];
                if (x->shape.dtype == HS_TUPLE || !slot_host(&s, x, 0) ||
                    host_ok(i, false))
                    continue;
                st = hs_error_set(err, HS_ERR_INVALID,
                                  "host-offload: %s (%s) reads %s, which is "
                                  "in host memory; move it back with "
                                  "place_to_device first",
                                  i->name, hs_opcode_name(i->opcode),
                                  x->name);
                snprintf(err->instruction, sizeof err->instruction, "%s",
                         i->name);
            }
        }
    }
    /* Rewrite. */
    for (int c = 0; c < m->n_comps && st == HS_OK; c++) {
        hs_computation *cc = m->comps[c];
        bool dropped = false;
        for (int k = 0; k < cc->n_instrs && st == HS_OK; k++) {
            hs_instruction *i = cc->instrs[k];
            if (placed_on_host(i)) {
                i->custom_call_target = "MoveToHost";
                i->frontend_attributes = NULL;
            } else if (placed_on_device(i)) {
                if (slot_host(&s, i->operands[0], 0)) {
                    i->custom_call_target = "MoveToDevice";
                    i->frontend_attributes = NULL;
                } else {
                    /* Already on the device: the annotation goes. */
                    hs_instruction *x = i->operands[0];
                    for (int u = k + 1; u < cc->n_instrs; u++)
                        for (int o = 0; o < cc->instrs[u]->n_operands; o++)
                            if (cc->instrs[u]->operands[o] == i)
                                cc->instrs[u]->operands[o] = x;
                    if (cc->root == i)
                        cc->root = x;
                    dropped = true;
                }
            }
            if (!set_space(m->arena, i, &s))
                st = hs_error_set(err, HS_ERR_NOMEM,
                                  "host-offload: out of host memory");
        }
        if (dropped)
            hs_computation_remove_dead(cc);
    }
    if (st == HS_OK)
        *changed = true;
out:
    free(s.base);
    free(s.parent);
    free(s.host);
    return st;
}

/* ---- async copies ------------------------------------------------------- */

hs_status hs_pass_host_offload_async_run(hs_module *m, hs_pass_context *ctx,
                                         bool *changed, hs_error *err)
{
    (void)ctx;
    for (int c = 0; c < m->n_comps; c++) {
        hs_computation *cc = m->comps[c];
        for (int k = 0; k < cc->n_instrs; k++) {
            hs_instruction *i = cc->instrs[k];
            if (!(target_is(i, "MoveToHost") || target_is(i, "MoveToDevice")) ||
                i->n_operands != 1 || i->shape.dtype == HS_TUPLE)
                continue;
            hs_instruction *x = i->operands[0];
            hs_shape el[3] = {i->shape, x->shape, hs_shape_scalar(HS_U32)};
            hs_shape ts = hs_shape_tuple(m->arena, 3, el);
            hs_instruction *cs =
                hs_computation_add(cc, HS_OP_COPY_START, &ts, &x, 1, NULL);
            if (!cs)
                return hs_error_set(err, HS_ERR_NOMEM,
                                    "host-offload-async: out of host memory");
            cs->op_name = i->op_name;
            /* hs_computation_add appended cs; i becomes the copy-done in
             * place and cs goes right before it. */
            memmove(cc->instrs + k + 1, cc->instrs + k,
                    sizeof *cc->instrs * (size_t)(cc->n_instrs - 1 - k));
            cc->instrs[k] = cs;
            i->opcode = HS_OP_COPY_DONE;
            i->custom_call_target = NULL;
            i->operands[0] = cs;
            k++;
            *changed = true;
        }
    }
    return HS_OK;
}

/* Moves instrs[from] to position to (before the instruction now there). */
static void move(hs_computation *c, int from, int to)
{
    hs_instruction *x = c->instrs[from];
    if (from < to) {
        memmove(c->instrs + from, c->instrs + from + 1,
                sizeof *c->instrs * (size_t)(to - 1 - from));
        c->instrs[to - 1] = x;
    } else if (from > to) {
        memmove(c->instrs + to + 1, c->instrs + to,
                sizeof *c->instrs * (size_t)(from - to));
        c->instrs[to] = x;
    }
}

static int position(const hs_computation *c, const hs_instruction *x)
{
    for (int k = 0; k < c->n_instrs; k++)
        if (c->instrs[k] == x)
            return k;
    return -1;
}

static int first_user(const hs_computation *c, const hs_instruction *x,
                      int *n_users, const hs_instruction **only)
{
    int first = -1;
    *n_users = 0;
    for (int k = 0; k < c->n_instrs; k++)
        for (int o = 0; o < c->instrs[k]->n_operands; o++)
            if (c->instrs[k]->operands[o] == x) {
                if (first < 0)
                    first = k;
                (*n_users)++;
                *only = c->instrs[k];
            }
    return first;
}

/* Moves x up to just after the last of its operands, hoisting first
 * those that cost nothing to move early (scalars such as a loop counter's
 * index arithmetic, and host-memory slices). Returns x's position. */
static int hoist(hs_computation *c, hs_instruction *x, int depth, bool *moved)
{
    int k = position(c, x);
    if (k < 0 || x->opcode == HS_OP_PARAMETER || depth > 16)
        return k;
    int after = -1;
    for (int o = 0; o < x->n_operands; o++) {
        hs_instruction *y = x->operands[o];
        bool cheap = y->opcode != HS_OP_PARAMETER &&
                     y->shape.dtype != HS_TUPLE &&
                     (hs_shape_elements(&y->shape) == 1 ||
                      y->shape.memory_space == HS_MEMSPACE_HOST);
        if (cheap)
            hoist(c, y, depth + 1, moved);
    }
    /* Positions after every hoist (a later one may shift an earlier). */
    for (int o = 0; o < x->n_operands; o++) {
        int q = position(c, x->operands[o]);
        if (q > after)
            after = q;
    }
    k = position(c, x);
    int at = after + 1;
    while (at < k && c->instrs[at]->opcode == HS_OP_PARAMETER)
        at++;
    if (at < k) {
        move(c, k, at);
        *moved = true;
        return at;
    }
    return k;
}

/* A copy placed on the device's clock (HS_PLACED_ATTRIBUTE: the offload
 * what-if's) stays where it is. */
static bool placed_already(const hs_instruction *i)
{
    return i->frontend_attributes &&
           strstr(i->frontend_attributes, HS_PLACED_ATTRIBUTE) != NULL;
}

bool hs__place_async_copies(hs_computation *c)
{
    bool moved = false;
    /* A fetch from host memory (a scan's prefetch of the next step's
     * residuals) depends only on the step counter: its slice of the host
     * buffer is taken first, so that the copy overlaps the whole step. */
    /* A store of a value that a reshape or bitcast of an earlier one
     * makes (a scan's carry entering the step, under remat_offload) is
     * issued as soon as that value exists: the view moves up with it. */
    for (int k = 0; k < c->n_instrs; k++) {
        hs_instruction *cs = c->instrs[k];
        if (cs->opcode != HS_OP_COPY_START || cs->n_operands != 1 ||
            cs->operands[0]->shape.dtype == HS_TUPLE || placed_already(cs))
            continue;
        hs_opcode op = cs->operands[0]->opcode;
        if (cs->operands[0]->shape.memory_space == HS_MEMSPACE_HOST ||
            op == HS_OP_RESHAPE || op == HS_OP_BITCAST)
            hoist(c, cs->operands[0], 0, &moved);
    }
    for (int k = 0; k < c->n_instrs; k++) {
        hs_instruction *cs = c->instrs[k];
        if (cs->opcode != HS_OP_COPY_START || cs->n_operands != 1 ||
            placed_already(cs))
            continue;
        /* Issue as early as possible: right after the operand (or at the
         * top when it is a parameter or defined elsewhere). */
        int p = position(c, cs->operands[0]);
        int at = p + 1;
        while (at < k && c->instrs[at]->opcode == HS_OP_PARAMETER)
            at++;
        if (at < k) {
            move(c, k, at);
            moved = true;
        }
    }
    for (int k = c->n_instrs - 1; k >= 0; k--) {
        hs_instruction *cd = c->instrs[k];
        if (cd->opcode != HS_OP_COPY_DONE || cd == c->root ||
            placed_already(cd))
            continue;
        int n_users = 0;
        const hs_instruction *only = NULL;
        int u = first_user(c, cd, &n_users, &only);
        if (u < 0)
            continue;
        /* A store into a host buffer that is only returned waits until the
         * end, so the transfer overlaps everything after the value. */
        hs_instruction *user = c->instrs[u];
        if (n_users == 1 && user->opcode == HS_OP_DYNAMIC_UPDATE_SLICE &&
            user->shape.memory_space == HS_MEMSPACE_HOST && c->root &&
            c->root != user) {
            int nu2 = 0;
            const hs_instruction *o2 = NULL;
            first_user(c, user, &nu2, &o2);
            int r = position(c, c->root);
            if (nu2 == 1 && o2 == c->root && u < r - 1) {
                move(c, u, r);
                moved = true;
                u = position(c, user);
            }
        }
        /* A view of a fetched value (the reshape that drops a scan
         * stack's step dimension) waits with it until it is used. */
        if (n_users == 1 && c->root != user &&
            (user->opcode == HS_OP_RESHAPE || user->opcode == HS_OP_BITCAST)) {
            int nu2 = 0;
            const hs_instruction *o2 = NULL;
            int u2 = first_user(c, user, &nu2, &o2);
            if (u2 > u + 1) {
                move(c, u, u2);
                moved = true;
                u = position(c, user);
            }
        }
        if (k < u - 1) {
            move(c, k, u);
            moved = true;
        }
    }
    return moved;
}
