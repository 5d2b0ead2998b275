/*
 * scan_vjp_analyse.c - the first part of the reverse scan (scan_vjp_emit.c
 * has the whole picture): which element of the loop's state is the
 * counter, a carry, an xs-like input read one slice per step, an invariant
 * or an accumulator, and which body values depend on a carry.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scan/scan_vjp_internal.h"

hs_status hs__svjp_fail(loopinfo *L, hs_error *err, hs_status s,
                        const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    hs_error_set(err, s, "scan VJP (%s): %s",
                 L->loop && L->loop->name ? L->loop->name : "while", msg);
    return s;
}

static bool is_gte_of(const hs_instruction *i, const hs_instruction *p, int k)
{
    return i->opcode == HS_OP_GET_TUPLE_ELEMENT && i->operands[0] == p &&
           (k < 0 || i->index == k);
}

/* ---- analysis of the loop ------------------------------------------------ */

static bool xs_like(loopinfo *L, int k, int *n_ds_out)
{
    hs_computation *c = L->body;
    hs_instruction *P = c->params[0];
    const hs_shape *e = &P->shape.elems[k];
    if (e->dtype != HS_F32 || e->rank < 1)
        return false;
    int n_ds = 0;
    for (int a = 0; a < c->n_instrs; a++) {
        hs_instruction *g = c->instrs[a];
        if (!is_gte_of(g, P, k))
            continue;
        for (int u = 0; u < c->n_instrs; u++) {
            hs_instruction *y = c->instrs[u];
            for (int o = 0; o < y->n_operands; o++) {
                if (y->operands[o] != g)
                    continue;
                if (y == c->root && o == k)
                    continue;
                if (y->opcode != HS_OP_DYNAMIC_SLICE || o != 0 ||
                    y->n_dims != e->rank || y->dims[0] != 1)
                    return false;
                for (int d = 1; d < e->rank; d++)
                    if (y->dims[d] != e->dims[d])
                        return false;
                n_ds++;
            }
        }
    }
    *n_ds_out = n_ds;
    return true;
}

hs_status hs__svjp_analyse(loopinfo *L, hs_error *err)
{
    hs_instruction *loop = L->loop;
    if (loop->n_called != 2 || loop->shape.dtype != HS_TUPLE)
        return hs__svjp_fail(L, err, HS_ERR_UNSUPPORTED, "not a while over a tuple");
    L->cond = loop->called[0];
    L->body = loop->called[1];
    L->n = loop->shape.n_elems;
    L->N = loop->known_trip_count;
    if (L->N <= 0)
        return hs__svjp_fail(L, err, HS_ERR_UNSUPPORTED,
                             "the trip count is not known; only scan loops (counted, "
                             "known_trip_count) are differentiated");
    hs_computation *c = L->body;
    hs_instruction *P = c->n_params == 1 ? c->params[0] : NULL;
    hs_instruction *R = c->root;
    if (!P || !R || R->opcode != HS_OP_TUPLE || R->n_operands != L->n)
        return hs__svjp_fail(L, err, HS_ERR_UNSUPPORTED,
                             "the body does not return a tuple of its state");
    const hs_shape *s0 = &loop->shape.elems[0];
    if (s0->dtype != HS_S32 || s0->rank != 0)
        return hs__svjp_fail(L, err, HS_ERR_UNSUPPORTED,
                             "state element 0 is not an s32 counter");
    int n = L->n;
    L->kind = calloc((size_t)n, sizeof *L->kind);
    L->idx_by_id = malloc(sizeof(int) * ((size_t)L->m->next_id + 1));
    L->dep = calloc((size_t)c->n_instrs + 1, sizeof *L->dep);
    L->ds_pos = calloc((size_t)c->n_instrs + 1, sizeof(int));
    L->ds_elem = calloc((size_t)c->n_instrs + 1, sizeof(int));
    if (!L->kind || !L->idx_by_id || !L->dep || !L->ds_pos || !L->ds_elem)
        return hs_error_set(err, HS_ERR_NOMEM, "scan VJP: out of host memory");
    for (int k = 0; k <= L->m->next_id; k++)
        L->idx_by_id[k] = -1;
    for (int k = 0; k < c->n_instrs; k++)
        L->idx_by_id[c->instrs[k]->id] = k;
    L->kind[0] = E_COUNTER;
    for (int k = 1; k < n; k++) {
        hs_instruction *r = R->operands[k];
        const hs_shape *e = &loop->shape.elems[k];
        if (e->dtype == HS_TUPLE)
            return hs__svjp_fail(L, err, HS_ERR_UNSUPPORTED,
                                 "state element %d is a tuple", k);
        int nds = 0;
        if (is_gte_of(r, P, k))
            L->kind[k] = xs_like(L, k, &nds) ? E_XS : E_INV;
        else if (r->opcode == HS_OP_DYNAMIC_UPDATE_SLICE &&
                 is_gte_of(r->operands[0], P, k))
            L->kind[k] = E_ACC;
        else
            L->kind[k] = E_CARRY;
        if (L->kind[k] == E_CARRY && e->dtype != HS_F32)
            return hs__svjp_fail(L, err, HS_ERR_UNSUPPORTED,
                                 "carry %d is %s; only f32 carries are differentiated",
                                 k, hs_dtype_name(e->dtype));
    }
    for (int a = 0; a < c->n_instrs; a++) {
        hs_instruction *y = c->instrs[a];
        if (y->opcode == HS_OP_GET_TUPLE_ELEMENT && y->operands[0] == P) {
            ekind k = L->kind[y->index];
            L->dep[a] = k == E_CARRY || k == E_ACC;
        } else {
            for (int o = 0; o < y->n_operands && !L->dep[a]; o++) {
                int p = L->idx_by_id[y->operands[o]->id];
                L->dep[a] = p >= 0 && L->dep[p];
            }
        }
        if (y->opcode == HS_OP_DYNAMIC_SLICE &&
            y->operands[0]->opcode == HS_OP_GET_TUPLE_ELEMENT &&
            y->operands[0]->operands[0] == P &&
            L->kind[y->operands[0]->index] == E_XS &&
            L->w->active[y->operands[0]->index]) {
            L->ds_pos[L->n_ds] = a;
            L->ds_elem[L->n_ds++] = (int)y->operands[0]->index;
        }
    }
    return HS_OK;
}
