/*
 * scan_vjp_residuals.c - the second part of the reverse scan
 * (scan_vjp_emit.c has the whole picture): the forward values the
 * backward step reads (found by building that step once in a scratch
 * module), which are recomputed, stacked on the device or offloaded to
 * the host, the reverse state's layout that holds them, and the residual
 * report.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scan/scan_vjp_internal.h"

/* ---- reverse-state layout -------------------------------------------------- */

bool hs__svjp_layout(loopinfo *L)
{
    int n = L->n;
    L->slot_ct = malloc(sizeof(int) * (size_t)n);
    L->slot_val = malloc(sizeof(int) * (size_t)n);
    L->slot_acc = malloc(sizeof(int) * (size_t)n);
    if (!L->slot_ct || !L->slot_val || !L->slot_acc)
        return false;
    int s = 1;
    for (int k = 0; k < n; k++) {
        L->slot_ct[k] = L->slot_val[k] = L->slot_acc[k] = -1;
        bool act = L->w->active[k];
        if (L->kind[k] == E_CARRY ||
            ((L->kind[k] == E_XS || L->kind[k] == E_INV) && act &&
             L->loop->shape.elems[k].dtype == HS_F32))
            L->slot_ct[k] = s++;
    }
    for (int k = 0; k < n; k++)
        if (L->kind[k] == E_XS || L->kind[k] == E_INV)
            L->slot_val[k] = s++;
    for (int k = 0; k < n; k++)
        if (L->kind[k] == E_ACC && L->w->cotangent[k])
            L->slot_acc[k] = s++;
    L->slot_stack0 = s;
    s += L->n_stacks;
    L->slot_pre0 = s;
    for (int t = 0; t < L->n_stacks; t++) {
        L->stack_pre[t] = -1;
        if (L->res_host[t] && !L->opts->no_prefetch)
            L->stack_pre[t] = s++;
    }
    L->n_slots = s;
    return true;
}

hs_shape hs__svjp_slot_shape(const loopinfo *L, int s)
{
    if (s == 0)
        return hs_shape_scalar(HS_S32);
    for (int k = 0; k < L->n; k++)
        if (L->slot_ct[k] == s || L->slot_val[k] == s || L->slot_acc[k] == s)
            return hs_shape_make(L->loop->shape.elems[k].dtype,
                                 L->loop->shape.elems[k].rank,
                                 L->loop->shape.elems[k].dims);
    for (int t = 0; t < L->n_stacks; t++) {
        if (s == L->slot_stack0 + t)
            return stacked(&L->stack_shape[t], L->N);
        if (s == L->stack_pre[t])
            return L->stack_shape[t];
    }
    return hs_shape_scalar(HS_S32);
}

/* ---- residuals ------------------------------------------------------------ */

static bool name_matches(const char *op_name, const char *want)
{
    if (!op_name || !want || !want[0])
        return false;
    /* Against the whole op_name, and without its first component
     * ("layers.(*)/attn/q_proj" is also "attn/q_proj"). */
    for (int pass = 0; pass < 2; pass++) {
        const char *s = op_name;
        if (pass == 1) {
            s = strchr(op_name, '/');
            if (!s)
                return false;
            s++;
        }
        size_t n = strlen(want);
        if (strncmp(s, want, n) == 0 && (s[n] == 0 || s[n] == '/'))
            return true;
    }
    return false;
}

static bool cheap(const hs_instruction *y)
{
    switch (y->opcode) {
    case HS_OP_BROADCAST: case HS_OP_RESHAPE: case HS_OP_BITCAST:
    case HS_OP_TRANSPOSE: case HS_OP_CONVERT:
        return true;
    default:
        return false;
    }
}

/* A residual that is a broadcast (or reshape, transpose) of another value
 * is recomputed from that value: a broadcast row of norms is saved as the
 * row, not as the full activation it is broadcast to. */
static void cheap_recompute(loopinfo *L)
{
    hs_computation *body = L->body;
    bool *in_r = calloc((size_t)body->n_instrs + 1, sizeof *in_r);
    if (!in_r || !L->keep) {
        free(in_r);
        return;
    }
    for (int r = 0; r < L->n_res; r++)
        in_r[L->res[r]] = true;
    /* Later positions first: an operand is always earlier. */
    for (int p = body->n_instrs - 1; p >= 0; p--) {
        const hs_instruction *y = body->instrs[p];
        if (!in_r[p] || !cheap(y))
            continue;
        const hs_instruction *x = y->operands[0];
        int q = L->idx_by_id[x->id];
        if (q < 0 || x->shape.dtype == HS_TUPLE ||
            x->opcode == HS_OP_PARAMETER ||
            hs_shape_bytes(&x->shape) > hs_shape_bytes(&y->shape))
            continue;
        in_r[p] = false;
        L->keep[p] = true;
        if (L->dep[q])
            in_r[q] = true;
    }
    L->n_res = 0;
    for (int p = 0; p < body->n_instrs; p++)
        if (in_r[p])
            L->res[L->n_res++] = p;
    free(in_r);
}

/* Whether residual y (body position p) can be recomputed in the backward
 * step: every carry-dependent operand is stacked or recomputed itself. */
static bool can_remat(const loopinfo *L, int p, const bool *stacked_at)
{
    const hs_instruction *y = L->body->instrs[p];
    if (y->shape.dtype == HS_TUPLE || y->n_called > 0 ||
        y->opcode == HS_OP_PARAMETER || y->opcode == HS_OP_RNG)
        return false;
    for (int o = 0; o < y->n_operands; o++) {
        int q = L->idx_by_id[y->operands[o]->id];
        if (q < 0)
            return false;
        if (L->dep[q] && !stacked_at[q] && !L->keep[q])
            return false;
    }
    return true;
}

/* Where each residual goes: the policy, the offload list, then the
 * per-residual placement; the stacks are the residuals not recomputed. */
static void place_residuals(loopinfo *L)
{
    const hs_scan_vjp_options *o = L->opts;
    hs_computation *body = L->body;
    int base = o->cursor ? *o->cursor : 0;
    bool *stacked_at = calloc((size_t)body->n_instrs + 1, sizeof *stacked_at);
    L->n_all = L->n_res;
    for (int r = 0; r < L->n_res; r++) {
        const hs_instruction *y = body->instrs[L->res[r]];
        bool host = o->policy == HS_SCAN_OFFLOAD;
        for (int q = 0; !host && q < o->n_offload; q++)
            host = name_matches(y->op_name, o->offload[q]);
        int k = base + r;
        if (o->placement && k < o->n_placement)
            host = o->placement[k] == HS_SCAN_OFFLOAD;
        L->all_pos[r] = L->res[r];
        L->all_host[r] = host;
        if (stacked_at)
            stacked_at[L->res[r]] = true;
    }
    /* Recomputed residuals, in program order, so that a chain of them
     * ends at stacked values. */
    for (int r = 0; stacked_at && o->placement && r < L->n_res; r++) {
        int k = base + r;
        if (k >= o->n_placement || o->placement[k] != HS_SCAN_REMAT)
            continue;
        stacked_at[L->res[r]] = false;
        if (can_remat(L, L->res[r], stacked_at)) {
            L->all_remat[r] = true;
            L->all_host[r] = false;
            L->keep[L->res[r]] = true;
        } else {
            stacked_at[L->res[r]] = true;
        }
    }
    free(stacked_at);
    if (o->cursor)
        *o->cursor = base + L->n_res;
    int n = 0;
    for (int r = 0; r < L->n_all; r++) {
        if (L->all_remat[r])
            continue;
        const hs_instruction *y = body->instrs[L->all_pos[r]];
        L->res[n] = L->all_pos[r];
        L->res_host[n] = L->all_host[r];
        L->stack_src[n] = L->all_pos[r];
        L->stack_shape[n] = hs_shape_make(y->shape.dtype, y->shape.rank,
                                          y->shape.dims);
        n++;
    }
    L->n_res = L->n_stacks = n;
}

/* Builds the reverse step in a scratch module and lists the carry-dependent
 * forward values the VJP reads. */
hs_status hs__svjp_find_residuals(loopinfo *L, hs_error *err)
{
    hs_computation *body = L->body;
    size_t cap = (size_t)(body->n_instrs > L->n ? body->n_instrs : L->n) + 1;
    L->res = calloc(cap, sizeof(int));
    L->res_host = calloc(cap, sizeof(bool));
    L->stack_src = calloc(cap, sizeof(int));
    L->stack_pre = calloc(cap, sizeof(int));
    L->stack_shape = calloc(cap, sizeof(hs_shape));
    L->keep = calloc(cap, sizeof(bool));
    L->all_pos = calloc(cap, sizeof(int));
    L->all_remat = calloc(cap, sizeof(bool));
    L->all_host = calloc(cap, sizeof(bool));
    if (!L->res || !L->res_host || !L->stack_src || !L->stack_pre ||
        !L->stack_shape || !L->keep || !L->all_pos || !L->all_remat ||
        !L->all_host)
        return hs_error_set(err, HS_ERR_NOMEM, "scan VJP: out of host memory");
    if (remat_policy(L)) {
        for (int k = 1; k < L->n; k++)
            if (L->kind[k] == E_CARRY) {
                L->res_host[L->n_stacks] =
                    L->opts->policy == HS_SCAN_REMAT_OFFLOAD;
                L->stack_src[L->n_stacks] = k;
                L->stack_shape[L->n_stacks++] = hs_shape_make(
                    HS_F32, L->loop->shape.elems[k].rank,
                    L->loop->shape.elems[k].dims);
            }
        return HS_OK;
    }
    hs_module *sm = hs_module_new("scan_vjp_analysis");
    hs_builder *sb = sm ? hs_builder_new(sm, "step", true) : NULL;
    hs_instruction **map = calloc((size_t)body->n_instrs + 1, sizeof *map);
    if (!sb || !map || !hs__svjp_layout(L)) {
        hs_builder_free(sb);
        hs_module_free(sm);
        free(map);
        return hs_error_set(err, HS_ERR_NOMEM, "scan VJP: out of host memory");
    }
    hs_builder_push_scope(sb, L->scope);
    hs_instruction **slot = calloc((size_t)L->n_slots + 1, sizeof *slot);
    hs_instruction **next = calloc((size_t)L->n_slots + 1, sizeof *next);
    for (int s = 0; slot && s < L->n_slots; s++) {
        hs_shape sh = hs__svjp_slot_shape(L, s);
        slot[s] = hs_b_parameter(sb, s, &sh, NULL);
    }
    int hi = 0;
    bool ok = slot && next && hs__svjp_reverse_step(L, sb, slot, NULL, next, map, &hi);
    hs_status st = HS_OK;
    if (!ok) {
        st = hs_error_set(err, hs_builder_error(sb)->status
                                   ? hs_builder_error(sb)->status
                                   : HS_ERR_NOMEM,
                          "scan VJP: %s", hs_builder_error(sb)->message);
    } else {
        hs_computation *sc = hs_builder_computation(sb);
        int n_ids = sm->next_id;
        int *pos_of = malloc(sizeof(int) * ((size_t)n_ids + 1));
        bool *used = calloc((size_t)n_ids + 1, sizeof *used);
        if (!pos_of || !used) {
            st = hs_error_set(err, HS_ERR_NOMEM, "scan VJP: out of host memory");
        } else {
            for (int q = hi; q < sc->n_instrs; q++)
                for (int o = 0; o < sc->instrs[q]->n_operands; o++)
                    used[sc->instrs[q]->operands[o]->id] = true;
            for (int s = 0; s < L->n_slots; s++)
                if (next[s])
                    used[next[s]->id] = true;
            for (int p = 0; p < body->n_instrs; p++) {
                hs_instruction *cp = map[p];
                if (!cp || !L->dep[p] || !used[cp->id] ||
                    body->instrs[p]->opcode == HS_OP_PARAMETER)
                    continue;
                if (cp->shape.dtype == HS_TUPLE) {
                    st = hs__svjp_fail(L, err, HS_ERR_UNSUPPORTED,
                                       "the backward step reads tuple %s",
                                       body->instrs[p]->name);
                    break;
                }
                L->res[L->n_res++] = p;
            }
            cheap_recompute(L);
        }
        free(pos_of);
        free(used);
    }
    hs_builder_free(sb);
    hs_module_free(sm);
    free(map);
    free(slot);
    free(next);
    free(L->slot_ct);
    free(L->slot_val);
    free(L->slot_acc);
    L->slot_ct = L->slot_val = L->slot_acc = NULL;
    if (st != HS_OK)
        return st;
    place_residuals(L);
    return HS_OK;
}

void hs__svjp_report(loopinfo *L)
{
    hs_scan_vjp_report *r = L->opts->report;
    if (!r)
        return;
    r->n_loops++;
    if (!remat_policy(L)) {
        for (int a = 0; a < L->n_all; a++) {
            const hs_instruction *y = L->body->instrs[L->all_pos[a]];
            int64_t bytes = hs_shape_bytes(&y->shape);
            if (L->all_remat[a])
                ;
            else if (L->all_host[a])
                r->host_bytes += bytes * L->N;
            else
                r->device_bytes += bytes * L->N;
            if (r->n_residuals >= HS_SCAN_REPORT_MAX)
                continue;
            hs_scan_residual_info *ri = &r->residuals[r->n_residuals++];
            snprintf(ri->name, sizeof ri->name, "%s",
                     y->op_name ? y->op_name : y->name);
            snprintf(ri->opcode, sizeof ri->opcode, "%s",
                     hs_opcode_name(y->opcode));
            hs_shape_print(&y->shape, false, ri->shape, sizeof ri->shape);
            ri->bytes = bytes;
            ri->steps = L->N;
            ri->host = L->all_host[a];
            ri->remat = L->all_remat[a];
        }
        return;
    }
    for (int s = 0; s < L->n_stacks; s++) {
        bool host = L->res_host[s];
        int64_t bytes = hs_shape_bytes(&L->stack_shape[s]);
        if (host)
            r->host_bytes += bytes * L->N;
        else
            r->device_bytes += bytes * L->N;
        if (r->n_residuals >= HS_SCAN_REPORT_MAX)
            continue;
        hs_scan_residual_info *ri = &r->residuals[r->n_residuals++];
        const hs_instruction *y =
            remat_policy(L) ? NULL : L->body->instrs[L->stack_src[s]];
        snprintf(ri->name, sizeof ri->name, "%s",
                 y ? (y->op_name ? y->op_name : y->name) : "carry");
        snprintf(ri->opcode, sizeof ri->opcode, "%s",
                 y ? hs_opcode_name(y->opcode) : "carry");
        hs_shape_print(&L->stack_shape[s], false, ri->shape, sizeof ri->shape);
        ri->bytes = bytes;
        ri->steps = L->N;
        ri->host = host;
    }
}
