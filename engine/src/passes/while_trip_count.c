/* while_trip_count.c - the `while-loop-trip-count` pass, after XLA's
 * WhileLoopTripCountAnnotator: recognises the counted loop that scan
 * lowers to and records its trip count.
 *
 *   init:       tuple(..., c0, ...)            c0 an s32 constant at index k
 *   body root:  tuple(..., add(gte(p, k), 1), ...)   (or add(1, gte))
 *   condition:  compare(gte(p, k), N), direction=LT  (or N GT gte)
 *
 * gives max(N - c0, 0) iterations. The while gets known_trip_count and
 * backend_config={"known_trip_count":{"n":"N"}}, as XLA prints it. */
#include <stdio.h>
#include <string.h>

#include "passes/passes_internal.h"

static bool scalar_s32_constant(const hs_instruction *i, int64_t *v)
{
    if (i->opcode != HS_OP_CONSTANT || i->shape.dtype != HS_S32 ||
        i->shape.rank != 0 || !i->literal)
        return false;
    *v = *(const int32_t *)i->literal;
    return true;
}

/* i is get-tuple-element(parameter 0 of c), index returned in *k. */
static bool gte_of_param(const hs_instruction *i, const hs_computation *c,
                         int64_t *k)
{
    if (i->opcode != HS_OP_GET_TUPLE_ELEMENT || i->n_operands != 1 ||
        c->n_params < 1 || i->operands[0] != c->params[0])
        return false;
    *k = i->index;
    return true;
}

/* The condition's root is gte(p, k) < N: returns k and N. */
static bool counter_condition(const hs_computation *cond, int64_t *k,
                              int64_t *limit)
{
    const hs_instruction *r = cond->root;
    if (!r || r->opcode != HS_OP_COMPARE || r->n_operands != 2)
        return false;
    const hs_instruction *a = r->operands[0], *b = r->operands[1];
    if (r->direction == HS_DIR_LT)
        return gte_of_param(a, cond, k) && scalar_s32_constant(b, limit);
    if (r->direction == HS_DIR_GT)
        return gte_of_param(b, cond, k) && scalar_s32_constant(a, limit);
    return false;
}

/* The body returns gte(p, k) + 1 at index k. */
static bool counter_increment(const hs_computation *body, int64_t k)
{
    const hs_instruction *r = body->root;
    if (!r || r->opcode != HS_OP_TUPLE || k < 0 || k >= r->n_operands)
        return false;
    const hs_instruction *add = r->operands[k];
    if (add->opcode != HS_OP_ADD || add->n_operands != 2)
        return false;
    int64_t one, idx;
    for (int side = 0; side < 2; side++) {
        const hs_instruction *g = add->operands[side];
        const hs_instruction *c = add->operands[1 - side];
        if (gte_of_param(g, body, &idx) && idx == k &&
            scalar_s32_constant(c, &one) && one == 1)
            return true;
    }
    return false;
}

/* The trip count of while instruction w, or -1 when it is not a counted
 * loop of this form. */
static int64_t trip_count(const hs_instruction *w)
{
    if (w->n_called != 2 || w->n_operands != 1)
        return -1;
    const hs_computation *cond = w->called[0], *body = w->called[1];
    const hs_instruction *init = w->operands[0];
    int64_t k, limit, start;
    if (!cond || !body || !counter_condition(cond, &k, &limit) ||
        !counter_increment(body, k) || init->opcode != HS_OP_TUPLE ||
        k >= init->n_operands || !scalar_s32_constant(init->operands[k], &start))
        return -1;
    return limit > start ? limit - start : 0;
}

hs_status hs_pass_while_loop_trip_count_run(hs_module *m,
                                            hs_pass_context *ctx,
                                            bool *changed, hs_error *err)
{
    int64_t tick = 0;
    for (int c = 0; c < m->n_comps; c++) {
        hs_computation *comp = m->comps[c];
        for (int k = 0; k < comp->n_instrs; k++) {
            hs_status st = hs__pass_poll(ctx, &tick, err);
            if (st != HS_OK)
                return st;
            hs_instruction *w = comp->instrs[k];
            if (w->opcode != HS_OP_WHILE)
                continue;
            int64_t n = trip_count(w);
            if (n < 0)
                continue;
            char config[96];
            snprintf(config, sizeof config,
                     "{\"known_trip_count\":{\"n\":\"%lld\"}}", (long long)n);
            if (w->known_trip_count == n && w->backend_config &&
                strcmp(w->backend_config, config) == 0)
                continue;
            w->known_trip_count = n;
            w->backend_config =
                hs_arena_strdup(hs_instruction_arena(w), config);
            *changed = true;
        }
    }
    return HS_OK;
}
