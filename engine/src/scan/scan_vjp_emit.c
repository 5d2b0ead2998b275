/*
 * scan_vjp.c - the reverse scan: autodiff's while-loop hook
 * (hs_autodiff_options.while_vjp) for loops with scan's lowering.
 *
 * A while loop keeps no per-iteration values, so its VJP is a second loop
 * that runs the steps backwards, each one the VJP of the forward body,
 * reading what the forward loop saved (the residuals):
 *
 *   forward'  the original loop, rebuilt so that every step also writes
 *             what the backward step reads into stacked [N, ...] buffers:
 *               save     the residuals, on the device
 *               offload  the residuals, moved to host memory
 *                        (annotate_device_placement "pinned_host"; the
 *                        host-offload pass makes them MoveToHost and S(5))
 *               remat    only the carries entering each step
 *               remat_offload  the same carries, in host memory
 *                        (fetched back one step ahead in the backward
 *                        pass, like offload's residuals)
 *             The original loop's users are moved onto forward', so the
 *             forward pass runs once.
 *   reverse   while(j < N): i = N-1-j; the forward body is inlined for
 *             step i (cheap values - counters, weight slices - are
 *             recomputed; under remat everything is, from the saved
 *             carry), its VJP is taken from the carries' cotangents
 *             (hs_autodiff_vjp), and the VJP's reads of carry-dependent
 *             forward values are redirected to the saved residuals, so the
 *             recomputation is dead code and removed. Weight gradients of
 *             step i are written at slice i of a stacked gradient.
 *
 * Which forward values are residuals is found by building the reverse step
 * once in a scratch module and looking at what the VJP instructions read
 * (JAX's partial evaluation does the same on the linearized jaxpr).
 *
 * State layouts and the residual report are in docs/TRAINING.md.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scan/scan_vjp_internal.h"

/* ---- building blocks --------------------------------------------------- */

static hs_instruction *zeros(hs_builder *b, const hs_shape *s)
{
    hs_instruction *z = s->dtype == HS_S32    ? hs_b_const_s32(b, 0)
                        : s->dtype == HS_PRED ? hs_b_const_pred(b, false)
                                              : hs_b_const_f32(b, 0);
    hs_shape t = hs_shape_make(s->dtype, s->rank, s->dims);
    return hs_b_broadcast(b, z, &t, NULL, 0);
}


static hs_instruction *annotate(hs_builder *b, hs_instruction *x, bool host)
{
    hs_shape s = hs_shape_make(x ? x->shape.dtype : HS_F32,
                               x ? x->shape.rank : 0, x ? x->shape.dims : NULL);
    hs_instruction *y = hs_b_custom_call(b, HS_PLACEMENT_TARGET, &x, 1, &s);
    if (y)
        (void)hs_instruction_set_placement(y, host);
    return y;
}

/* Slice i of stack [N, ...] as the per-step shape (moved to the device
 * first when host). */
static hs_instruction *read_slice(hs_builder *b, hs_instruction *stack,
                                  hs_instruction *i, const hs_shape *step,
                                  bool host)
{
    hs_instruction *starts[HS_MAX_RANK];
    int64_t sizes[HS_MAX_RANK];
    hs_instruction *zero = hs_b_const_s32(b, 0);
    int r = step->rank + 1;
    starts[0] = i;
    sizes[0] = 1;
    for (int d = 1; d < r; d++) {
        starts[d] = zero;
        sizes[d] = step->dims[d - 1];
    }
    hs_instruction *s = hs_b_dynamic_slice(b, stack, starts, sizes);
    if (host)
        s = annotate(b, s, false);
    return hs_b_reshape(b, s, step->rank, step->dims);
}

/* stack with slice i replaced by v (per-step shape). */
static hs_instruction *write_slice(hs_builder *b, hs_instruction *stack,
                                   hs_instruction *v, hs_instruction *i,
                                   bool host)
{
    if (!v)
        return NULL;
    hs_instruction *starts[HS_MAX_RANK];
    int64_t d[HS_MAX_RANK];
    hs_instruction *zero = hs_b_const_s32(b, 0);
    int r = v->shape.rank + 1;
    d[0] = 1;
    starts[0] = i;
    for (int k = 1; k < r; k++) {
        d[k] = v->shape.dims[k - 1];
        starts[k] = zero;
    }
    hs_instruction *u = hs_b_reshape(b, v, r, d);
    if (host)
        u = annotate(b, u, true);
    return hs_b_dynamic_update_slice(b, stack, u, starts);
}

static void set_trip_count(hs_builder *b, hs_instruction *w, int64_t n)
{
    if (!w)
        return;
    char config[96];
    snprintf(config, sizeof config,
             "{\"known_trip_count\":{\"n\":\"%" PRId64 "\"}}", n);
    w->known_trip_count = n;
    w->backend_config = hs_arena_strdup(hs_builder_module(b)->arena, config);
}

static const char *fresh_name(hs_module *m, const char *base, char *buf,
                              size_t size)
{
    size_t k = 0;
    for (const char *c = base; *c && k + 16 < size; c++) {
        bool ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                  (*c >= '0' && *c <= '9') || *c == '_' || *c == '-';
        buf[k++] = ok ? *c : '_';
    }
    buf[k] = 0;
    size_t len = strlen(buf);
    for (int i = 1; hs_module_find_computation(m, buf); i++)
        snprintf(buf + len, size - len, ".%d", i);
    return buf;
}

/* ---- the reverse step ---------------------------------------------------- */

/* Emits one backward step into rb. slot[0..n_slots) are the reverse state's
 * values; reads[body position] (or NULL) replace residuals. Fills next[]
 * (the next reverse state) and, for the analysis, *fwd_hi (the position
 * after the inlined forward copies) and map (body position -> copy). */
bool hs__svjp_reverse_step(loopinfo *L, hs_builder *rb, hs_instruction **slot,
                           hs_instruction **reads, hs_instruction **next,
                           hs_instruction **map, int *fwd_hi)
{
    int n = L->n;
    hs_computation *rc = hs_builder_computation(rb);
    hs_instruction *j = slot[0];
    hs_instruction *i = hs_b_binary(rb, HS_OP_SUBTRACT,
                                    hs_b_const_s32(rb, (int32_t)(L->N - 1)), j);
    hs_instruction **arg = calloc((size_t)n, sizeof *arg);
    hs_instruction **outs = calloc((size_t)n, sizeof *outs);
    hs_instruction **cts = calloc((size_t)n, sizeof *cts);
    hs_instruction **wrt = calloc((size_t)(n + L->n_ds + 1), sizeof *wrt);
    hs_instruction **grads = calloc((size_t)(n + L->n_ds + 1), sizeof *grads);
    bool ok = arg && outs && cts && wrt && grads;
    if (!ok)
        hs_builder_fail(rb, HS_ERR_NOMEM, "scan VJP: out of host memory");
    arg[0] = i;
    for (int k = 1; ok && k < n; k++) {
        const hs_shape *e = &L->loop->shape.elems[k];
        switch (L->kind[k]) {
        case E_CARRY:
            arg[k] = NULL;
            /* remat: the saved carry, prefetched to the device a step
             * ahead when it is in host memory. */
            for (int s = 0; s < L->n_stacks; s++)
                if (remat_policy(L) && L->stack_src[s] == k)
                    arg[k] = L->stack_pre[s] >= 0
                                 ? slot[L->stack_pre[s]]
                                 : read_slice(rb, slot[L->slot_stack0 + s],
                                              i, e, L->res_host[s]);
            if (!arg[k])
                arg[k] = zeros(rb, e); /* never read: residuals replace it */
            break;
        case E_XS:
        case E_INV:
            arg[k] = slot[L->slot_val[k]];
            break;
        case E_ACC:
            arg[k] = L->slot_acc[k] >= 0 ? slot[L->slot_acc[k]] : zeros(rb, e);
            break;
        default:
            break;
        }
    }
    hs_instruction *t = ok ? hs_b_tuple(rb, arg, n) : NULL;
    hs_instruction *root = t ? hs_autodiff_inline(rb, L->body, &t, 1, map)
                             : NULL;
    if (fwd_hi)
        *fwd_hi = rc->n_instrs;
    int n_out = 0, n_wrt = 0;
    for (int k = 1; root && k < n; k++) {
        if (L->kind[k] == E_CARRY) {
            outs[n_out] = root->operands[k];
            cts[n_out++] = slot[L->slot_ct[k]];
            wrt[n_wrt++] = arg[k];
        } else if (L->kind[k] == E_ACC && L->slot_acc[k] >= 0) {
            outs[n_out] = root->operands[k];
            cts[n_out++] = slot[L->slot_acc[k]];
        } else if (L->kind[k] == E_INV && L->slot_ct[k] >= 0) {
            wrt[n_wrt++] = arg[k];
        }
    }
    int first_ds = n_wrt;
    for (int d = 0; root && d < L->n_ds; d++)
        wrt[n_wrt++] = map[L->ds_pos[d]];
    hs_autodiff_options o = {.scope = "backward",
                             .while_vjp = hs_scan_while_vjp,
                             .while_user = (void *)L->opts};
    hs_error e;
    /* Gradient op_names are "backward/<forward op_name>", not nested under
     * the loop machinery's scope. */
    hs_builder_pop_scope(rb);
    if (root && hs_autodiff_vjp(rb, outs, cts, n_out, wrt, n_wrt, &o, grads,
                                &e) != HS_OK)
        root = NULL;
    hs_builder_push_scope(rb, L->scope);
    /* The next state. */
    if (root) {
        next[0] = hs_b_binary(rb, HS_OP_ADD, j, hs_b_const_s32(rb, 1));
        for (int s = 1; s < L->n_slots; s++)
            next[s] = slot[s];
        int g = 0;
        for (int k = 1; k < n; k++) {
            if (L->kind[k] == E_CARRY)
                next[L->slot_ct[k]] = grads[g++];
            else if (L->kind[k] == E_INV && L->slot_ct[k] >= 0)
                next[L->slot_ct[k]] = hs_b_binary(rb, HS_OP_ADD,
                                                  slot[L->slot_ct[k]],
                                                  grads[g++]);
        }
        for (int d = 0; d < L->n_ds; d++) {
            int k = L->ds_elem[d];
            hs_instruction *ds = map[L->ds_pos[d]];
            hs_instruction *gd = grads[first_ds + d];
            hs_instruction *acc = next[L->slot_ct[k]];
            hs_instruction *starts[HS_MAX_RANK];
            for (int q = 1; q < ds->n_operands; q++)
                starts[q - 1] = ds->operands[q];
            /* Every step writes its own slice: the first write needs no
             * add (bit-identical to an unrolled layer's gradient). */
            bool alone = L->w->cotangent[k] == NULL;
            for (int d2 = 0; d2 < L->n_ds; d2++)
                if (d2 != d && L->ds_elem[d2] == k)
                    alone = false;
            if (!alone)
                gd = hs_b_binary(rb, HS_OP_ADD,
                                 hs_b_dynamic_slice(rb, acc, starts, ds->dims),
                                 gd);
            next[L->slot_ct[k]] = hs_b_dynamic_update_slice(rb, acc, gd,
                                                            starts);
        }
    }
    /* Residuals: the VJP reads the saved values, not the recomputation. */
    if (root && reads) {
        int n_ids = L->m->next_id;
        hs_instruction **to = calloc((size_t)n_ids + 1, sizeof *to);
        if (!to) {
            hs_builder_fail(rb, HS_ERR_NOMEM, "scan VJP: out of host memory");
            root = NULL;
        } else {
            for (int p = 0; p < L->body->n_instrs; p++)
                if (reads[p] && map[p] && map[p]->id < n_ids)
                    to[map[p]->id] = reads[p];
            for (int q = *fwd_hi; q < rc->n_instrs; q++) {
                hs_instruction *y = rc->instrs[q];
                for (int o2 = 0; o2 < y->n_operands; o2++) {
                    hs_instruction *x = y->operands[o2];
                    if (x->id < n_ids && to[x->id])
                        y->operands[o2] = to[x->id];
                }
            }
            /* Kept cheap copies recompute from the residuals. */
            for (int p = 0; L->keep && p < L->body->n_instrs; p++) {
                hs_instruction *y = L->keep[p] ? map[p] : NULL;
                for (int o2 = 0; y && o2 < y->n_operands; o2++) {
                    hs_instruction *x = y->operands[o2];
                    if (x->id < n_ids && to[x->id])
                        y->operands[o2] = to[x->id];
                }
            }
            for (int s = 0; s < L->n_slots; s++)
                if (next[s] && next[s]->id < n_ids && to[next[s]->id])
                    next[s] = to[next[s]->id];
            free(to);
        }
    }
    free(arg);
    free(outs);
    free(cts);
    free(wrt);
    free(grads);
    return root != NULL && hs_builder_ok(rb);
}

/* ---- the forward loop that saves --------------------------------------- */

/* Offloaded residuals are stored one step late (write-behind): step i
 * moves step i-1's residuals, carried on the device, to the host stack, so
 * that the copy overlaps step i's compute rather than waiting at the end
 * of step i-1. The last step's stay on the device: the reverse loop
 * starts with them. */
static bool write_behind(const loopinfo *L, int s)
{
    return !remat_policy(L) && L->res_host[s] && !L->opts->no_prefetch;
}

static hs_instruction *forward_loop(loopinfo *L, hs_error *err)
{
    hs_builder *b = L->b;
    hs_module *m = L->m;
    int n = L->n, ns = L->n_stacks;
    bool remat = remat_policy(L);
    /* pend[s]: the element carrying stack s's pending step, or -1 */
    int *pend = calloc((size_t)ns + 1, sizeof *pend);
    int np = 0;
    for (int s = 0; pend && s < ns; s++)
        pend[s] = write_behind(L, s) ? n + ns + np++ : -1;
    L->final_stack = calloc((size_t)ns + 1, sizeof *L->final_stack);
    hs_shape *el = hs_arena_alloc(m->arena,
                                  sizeof(hs_shape) * (size_t)(n + ns + np + 1));
    if (!el || !pend || !L->final_stack) {
        free(pend);
        hs_error_set(err, HS_ERR_NOMEM, "scan VJP: out of host memory");
        return NULL;
    }
    for (int k = 0; k < n; k++)
        el[k] = L->loop->shape.elems[k];
    for (int s = 0; s < ns; s++) {
        el[n + s] = stacked(&L->stack_shape[s], L->N);
        if (pend[s] >= 0)
            el[pend[s]] = L->stack_shape[s];
    }
    int nt = n + ns + np;
    hs_shape st = hs_shape_tuple(m->arena, nt, el);
    char name[256];
    const char *scope = L->loop->op_name ? L->loop->op_name : "scan";
    /* body */
    snprintf(name, sizeof name, "%s_body", L->body->name);
    hs_builder *fb = hs_builder_new(m, fresh_name(m, name, name, sizeof name),
                                    false);
    hs_builder *cb = NULL;
    hs_instruction **g = calloc((size_t)nt + 1, sizeof *g);
    hs_instruction **out = calloc((size_t)nt + 1, sizeof *out);
    hs_instruction **map = calloc((size_t)L->body->n_instrs + 1, sizeof *map);
    hs_computation *body = NULL, *cond = NULL;
    if (!fb || !g || !out || !map)
        goto done;
    hs_builder_push_scope(fb, scope);
    hs_instruction *P = hs_b_parameter(fb, 0, &st, NULL);
    for (int k = 0; k < nt; k++)
        g[k] = hs_b_get_tuple_element(fb, P, k);
    hs_instruction *t = hs_b_tuple(fb, g, n);
    hs_instruction *r = hs_autodiff_inline(fb, L->body, &t, 1, map);
    for (int k = 0; r && k < n; k++)
        out[k] = r->operands[k];
    hs_instruction *prev = NULL;
    if (np > 0)
        prev = hs_b_binary(fb, HS_OP_MAXIMUM,
                           hs_b_binary(fb, HS_OP_SUBTRACT, g[0],
                                       hs_b_const_s32(fb, 1)),
                           hs_b_const_s32(fb, 0));
    for (int s = 0; r && s < ns; s++) {
        hs_instruction *v = remat ? g[L->stack_src[s]] : map[L->stack_src[s]];
        if (pend[s] >= 0) {
            /* Step i stores step i-1's (step 0 stores the zero init at
             * slice 0, which step 1 overwrites). */
            out[n + s] = write_slice(fb, g[n + s], g[pend[s]], prev, true);
            out[pend[s]] = v;
        } else {
            out[n + s] = write_slice(fb, g[n + s], v, g[0], L->res_host[s]);
        }
    }
    hs_error e;
    body = hs_builder_finish(fb, r ? hs_b_tuple(fb, out, nt) : NULL, &e);
    fb = NULL;
    if (!body) {
        *err = e;
        goto done;
    }
    hs_computation_remove_dead(body);
    /* condition */
    snprintf(name, sizeof name, "%s_cond", L->cond->name);
    cb = hs_builder_new(m, fresh_name(m, name, name, sizeof name), false);
    if (!cb)
        goto done;
    hs_builder_push_scope(cb, scope);
    P = hs_b_parameter(cb, 0, &st, NULL);
    for (int k = 0; k < n; k++)
        g[k] = hs_b_get_tuple_element(cb, P, k);
    t = hs_b_tuple(cb, g, n);
    r = hs_autodiff_inline(cb, L->cond, &t, 1, NULL);
    cond = hs_builder_finish(cb, r, &e);
    cb = NULL;
    if (!cond) {
        *err = e;
        goto done;
    }
    hs_computation_remove_dead(cond);
done:
    hs_builder_free(fb);
    hs_builder_free(cb);
    free(map);
    if (!body || !cond) {
        free(g);
        free(out);
        free(pend);
        if (err->status == HS_OK)
            hs_error_set(err, HS_ERR_NOMEM, "scan VJP: cannot build the "
                                            "forward loop");
        return NULL;
    }
    /* The loop in the caller's computation, placed right after the old one,
     * which it replaces. */
    hs_computation *c = hs_builder_computation(b);
    int first = c->n_instrs;
    hs_instruction *init = L->w->init;
    for (int k = 0; k < n; k++)
        g[k] = init->opcode == HS_OP_TUPLE
                   ? init->operands[k]
                   : hs_b_get_tuple_element(b, init, k);
    for (int s = 0; s < ns; s++) {
        g[n + s] = zeros(b, &el[n + s]);
        if (pend[s] >= 0)
            g[pend[s]] = zeros(b, &el[pend[s]]);
    }
    hs_instruction *w = hs_b_while(b, cond, body, hs_b_tuple(b, g, nt));
    free(g);
    free(out);
    if (!w) {
        free(pend);
        *err = *hs_builder_error(b);
        return NULL;
    }
    w->op_name = L->loop->op_name;
    set_trip_count(b, w, L->N);
    /* The last step's residuals, on the device. */
    for (int s = 0; s < ns; s++)
        if (pend[s] >= 0)
            L->final_stack[s] = hs_b_get_tuple_element(b, w, pend[s]);
    free(pend);
    int old = -1;
    for (int k = 0; k < first; k++)
        if (c->instrs[k] == L->loop)
            old = k;
    if (old < 0 || c->root == L->loop) {
        hs_error_set(err, HS_ERR_UNSUPPORTED,
                     "scan VJP: the loop %s is the computation's root",
                     L->loop->name);
        return NULL;
    }
    int moved = c->n_instrs - first;
    hs_instruction **tmp = malloc(sizeof *tmp * (size_t)moved);
    if (!tmp) {
        hs_error_set(err, HS_ERR_NOMEM, "scan VJP: out of host memory");
        return NULL;
    }
    memcpy(tmp, c->instrs + first, sizeof *tmp * (size_t)moved);
    memmove(c->instrs + old + 1 + moved, c->instrs + old + 1,
            sizeof *tmp * (size_t)(first - old - 1));
    memcpy(c->instrs + old + 1, tmp, sizeof *tmp * (size_t)moved);
    free(tmp);
    for (int k = old + 1 + moved; k < c->n_instrs; k++) {
        hs_instruction *y = c->instrs[k];
        for (int o = 0; o < y->n_operands; o++)
            if (y->operands[o] == L->loop)
                y->operands[o] = w;
    }
    return w;
}

/* ---- the reverse loop ------------------------------------------------------ */

static hs_status reverse_loop(loopinfo *L, hs_instruction *fw, hs_error *err)
{
    hs_builder *b = L->b;
    hs_module *m = L->m;
    int S = L->n_slots;
    hs_shape *el = hs_arena_alloc(m->arena, sizeof(hs_shape) * (size_t)S);
    hs_instruction **slot = calloc((size_t)S + 1, sizeof *slot);
    hs_instruction **next = calloc((size_t)S + 1, sizeof *next);
    hs_instruction **reads =
        calloc((size_t)L->body->n_instrs + 1, sizeof *reads);
    hs_instruction **map = calloc((size_t)L->body->n_instrs + 1, sizeof *map);
    hs_instruction **init = calloc((size_t)S + 1, sizeof *init);
    hs_status st = HS_ERR_NOMEM;
    hs_builder *rb = NULL, *cb = NULL;
    if (!el || !slot || !next || !reads || !map || !init)
        goto out;
    for (int s = 0; s < S; s++)
        el[s] = hs__svjp_slot_shape(L, s);
    hs_shape sh = hs_shape_tuple(m->arena, S, el);
    bool remat = remat_policy(L);
    /* body */
    char name[256];
    snprintf(name, sizeof name, "%s_reverse_body", L->body->name);
    rb = hs_builder_new(m, fresh_name(m, name, name, sizeof name), false);
    if (!rb)
        goto out;
    hs_builder_push_scope(rb, L->scope);
    hs_instruction *P = hs_b_parameter(rb, 0, &sh, NULL);
    for (int s = 0; s < S; s++)
        slot[s] = hs_b_get_tuple_element(rb, P, s);
    hs_instruction *i = hs_b_binary(rb, HS_OP_SUBTRACT,
                                    hs_b_const_s32(rb, (int32_t)(L->N - 1)),
                                    slot[0]);
    for (int s = 0; !remat && s < L->n_stacks; s++) {
        int p = L->stack_src[s];
        if (L->stack_pre[s] >= 0)
            reads[p] = slot[L->stack_pre[s]];
        else
            reads[p] = read_slice(rb, slot[L->slot_stack0 + s], i,
                                  &L->stack_shape[s], L->res_host[s]);
    }
    int hi = 0;
    bool ok = hs__svjp_reverse_step(L, rb, slot, remat ? NULL : reads, next, map, &hi);
    /* Prefetch: the next step's residuals move to the device while this
     * step computes (clamped at the last step). */
    for (int s = 0; ok && s < L->n_stacks; s++) {
        if (L->stack_pre[s] < 0)
            continue;
        hs_instruction *nx = hs_b_binary(
            rb, HS_OP_MAXIMUM,
            hs_b_binary(rb, HS_OP_SUBTRACT, i, hs_b_const_s32(rb, 1)),
            hs_b_const_s32(rb, 0));
        next[L->stack_pre[s]] = read_slice(rb, slot[L->slot_stack0 + s], nx,
                                           &L->stack_shape[s], true);
    }
    hs_error e;
    hs_computation *rbody =
        hs_builder_finish(rb, ok ? hs_b_tuple(rb, next, S) : NULL, &e);
    rb = NULL;
    if (!rbody) {
        *err = e;
        st = e.status ? e.status : HS_ERR_INVALID;
        goto out;
    }
    hs_computation_remove_dead(rbody);
    /* condition: j < N */
    snprintf(name, sizeof name, "%s_reverse_cond", L->body->name);
    cb = hs_builder_new(m, fresh_name(m, name, name, sizeof name), false);
    if (!cb)
        goto out;
    hs_builder_push_scope(cb, L->scope);
    P = hs_b_parameter(cb, 0, &sh, NULL);
    hs_instruction *lt = hs_b_compare(
        cb, HS_DIR_LT, hs_b_get_tuple_element(cb, P, 0),
        hs_b_const_s32(cb, (int32_t)L->N));
    hs_computation *rcond = hs_builder_finish(cb, lt, &e);
    cb = NULL;
    if (!rcond) {
        *err = e;
        st = e.status ? e.status : HS_ERR_INVALID;
        goto out;
    }
    /* init */
    init[0] = hs_b_const_s32(b, 0);
    for (int k = 0; k < L->n; k++) {
        const hs_shape *e2 = &L->loop->shape.elems[k];
        if (L->slot_ct[k] >= 0)
            init[L->slot_ct[k]] = L->w->cotangent[k] ? L->w->cotangent[k]
                                                     : zeros(b, e2);
        if (L->slot_val[k] >= 0)
            init[L->slot_val[k]] = hs_b_get_tuple_element(b, fw, k);
        if (L->slot_acc[k] >= 0)
            init[L->slot_acc[k]] = L->w->cotangent[k];
    }
    for (int s = 0; s < L->n_stacks; s++) {
        init[L->slot_stack0 + s] = hs_b_get_tuple_element(b, fw, L->n + s);
        if (L->stack_pre[s] >= 0)
            init[L->stack_pre[s]] =
                L->final_stack && L->final_stack[s]
                    ? L->final_stack[s]
                    : read_slice(b, init[L->slot_stack0 + s],
                                 hs_b_const_s32(b, (int32_t)(L->N - 1)),
                                 &L->stack_shape[s], true);
    }
    hs_instruction *rw = hs_b_while(b, rcond, rbody, hs_b_tuple(b, init, S));
    set_trip_count(b, rw, L->N);
    for (int k = 0; rw && k < L->n; k++)
        if (L->slot_ct[k] >= 0)
            L->w->init_cotangent[k] =
                hs_b_get_tuple_element(b, rw, L->slot_ct[k]);
    st = hs_builder_ok(b) ? HS_OK : hs_builder_error(b)->status;
    if (st != HS_OK)
        *err = *hs_builder_error(b);
out:
    hs_builder_free(rb);
    hs_builder_free(cb);
    free(slot);
    free(next);
    free(reads);
    free(map);
    free(init);
    if (st == HS_ERR_NOMEM && err->status == HS_OK)
        hs_error_set(err, st, "scan VJP: out of host memory");
    return st;
}

static void free_info(loopinfo *L)
{
    free(L->kind);
    free(L->idx_by_id);
    free(L->dep);
    free(L->ds_pos);
    free(L->ds_elem);
    free(L->res);
    free(L->res_host);
    free(L->all_pos);
    free(L->all_remat);
    free(L->all_host);
    free(L->keep);
    free(L->slot_ct);
    free(L->slot_val);
    free(L->slot_acc);
    free(L->stack_src);
    free(L->stack_pre);
    free(L->stack_shape);
    free(L->final_stack);
}

hs_status hs_scan_while_vjp(hs_builder *b, hs_autodiff_while *w, void *user,
                            hs_error *err)
{
    static const hs_scan_vjp_options save = {.policy = HS_SCAN_SAVE};
    const hs_scan_vjp_options *opts = user ? user : &save;
    loopinfo L = {.b = b, .m = hs_builder_module(b), .w = w, .opts = opts,
                  .loop = w->loop};
    hs_error_clear(err);
    const char *sc = hs_builder_scope(b);
    snprintf(L.scope, sizeof L.scope, "%s", sc && sc[0] ? sc : "backward/scan");
    hs_status st = hs__svjp_analyse(&L, err);
    if (st == HS_OK)
        st = hs__svjp_find_residuals(&L, err);
    if (st == HS_OK && !hs__svjp_layout(&L))
        st = hs_error_set(err, HS_ERR_NOMEM, "scan VJP: out of host memory");
    hs_instruction *fw = st == HS_OK ? forward_loop(&L, err) : NULL;
    if (st == HS_OK && !fw)
        st = err->status ? err->status : HS_ERR_INVALID;
    if (st == HS_OK)
        st = reverse_loop(&L, fw, err);
    if (st == HS_OK)
        hs__svjp_report(&L);
    free_info(&L);
    return st;
}
