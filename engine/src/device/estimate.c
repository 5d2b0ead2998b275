/*
 * estimate.c - hs_device_estimate: the device's clock without running it.
 *
 * Walks a compiled module in its schedule as the interpreter does (dead
 * instructions skipped, a while's condition and body once per iteration of
 * its known trip count, calls inlined, a fused computation charged as one
 * instruction) and charges every instruction the roofline cost the
 * interpreter charges (dev_cost). Host transfers run on the same model of
 * the DMA stream: one copy at a time, a copy-start returns at once and its
 * copy-done waits for the copy; a synchronous move waits for the stream
 * and its whole copy. No values are computed, so a shapes-only module (a
 * train step of a 128-layer scan) is timed in microseconds per
 * instruction, and the result is the run's sim_seconds exactly for modules
 * whose control flow does not depend on data (counted loops).
 */
#include <stdlib.h>
#include <string.h>

#include "device/device_internal.h"

enum { MAX_DEPTH = 64 };

/* Instructions the walk visits before a long loop is extrapolated: far
 * above any traced model (a 128-layer scan's step walks about 10^5), so
 * those stay exact; a hostile trip count (10^15) costs three iterations. */
#define WALK_BUDGET (INT64_C(1) << 24)
/* Instructions the walk may visit at all, extrapolation included (loops
 * nested deeper than the budget allows are refused, not walked). */
#define WALK_LIMIT (INT64_C(1) << 27)

typedef struct est {
    const hs_device_spec *spec;
    const hs_module *m;
    double now, dma_free, exposed;
    double flops, bytes, tsec, tbytes;
    int64_t instructions; /* charged, extrapolated iterations included */
    int64_t walked;       /* visited: the work the walk really did */
    double *ready; /* by instruction id: when a copy-start's copy ends */
    bool unknown_trip;
    double *entry_finish; /* by entry position: the clock after it, or NULL */
    /* Per instruction id (hs_device_estimate_each), or NULL. Charged in the
     * first pass of every enclosing loop only, times the executions of
     * that pass (`times`), so that an extrapolated loop's body is counted
     * as often as the totals count it. */
    hs_instruction_cost *each;
    double times, charged_seconds;
    bool counting;
    /* Made once per estimate, not once per iteration walked: the live set
     * of each computation (by hs_computation_index) and each instruction's
     * cost (by id). A loop walks its body up to WALK_BUDGET instructions
     * before it is extrapolated, and remaking a module-sized live set or
     * re-costing a fusion's body on every iteration once took seconds. */
    bool **live;
    double (*cost)[3]; /* flops, bytes, seconds */
    bool *costed;
} est;

/* Live instructions of c: reachable from the root through operands. */
static bool *live_set(const hs_module *m, const hs_computation *c)
{
    bool *live = calloc((size_t)m->next_id + 1, sizeof *live);
    const hs_instruction **stack =
        malloc(sizeof *stack * ((size_t)c->n_instrs + 1));
    if (!live || !stack) {
        free(live);
        free(stack);
        return NULL;
    }
    int n = 0;
    if (c->root && c->root->id >= 0 && c->root->id < m->next_id) {
        live[c->root->id] = true;
        stack[n++] = c->root;
    }
    while (n > 0) {
        const hs_instruction *i = stack[--n];
        for (int o = 0; o < i->n_operands; o++) {
            const hs_instruction *x = i->operands[o];
            if (x && x->id >= 0 && x->id < m->next_id && !live[x->id] &&
                n < c->n_instrs) {
                live[x->id] = true;
                stack[n++] = x;
            }
        }
    }
    free(stack);
    return live;
}

/* A while, call or conditional is charged nothing itself; its figures are
 * what its computations were charged in this execution (extrapolated
 * iterations included), times its executions. */
static bool is_control(const hs_instruction *in)
{
    return in->opcode == HS_OP_WHILE || in->opcode == HS_OP_CALL ||
           in->opcode == HS_OP_CONDITIONAL;
}

static void charge_inclusive(est *e, const est *before,
                             const hs_instruction *in)
{
    if (in->id < 0 || in->id >= e->m->next_id)
        return;
    hs_instruction_cost *c = &e->each[in->id];
    c->flops += (e->flops - before->flops) * e->times;
    c->bytes_accessed += (e->bytes - before->bytes) * e->times;
    c->seconds += (e->charged_seconds - before->charged_seconds) * e->times;
    c->executions += e->times;
}

/* The live set of c, made on first use (NULL when out of memory). */
static const bool *live_of(est *e, const hs_computation *c)
{
    int k = hs_computation_index(e->m, c);
    if (k < 0)
        return NULL;
    if (!e->live[k])
        e->live[k] = live_set(e->m, c);
    return e->live[k];
}

static void charge(est *e, const hs_instruction *in)
{
    double f, b, sec;
    if (in->id >= 0 && in->id < e->m->next_id) {
        double *c = e->cost[in->id];
        if (!e->costed[in->id]) {
            dev_cost(e->spec, in, &c[0], &c[1], &c[2]);
            e->costed[in->id] = true;
        }
        f = c[0], b = c[1], sec = c[2];
    } else {
        dev_cost(e->spec, in, &f, &b, &sec);
    }
    e->flops += f;
    e->bytes += b;
    e->charged_seconds += sec;
    if (e->each && e->counting && in->id >= 0 && in->id < e->m->next_id) {
        hs_instruction_cost *c = &e->each[in->id];
        c->flops += f * e->times;
        c->bytes_accessed += b * e->times;
        c->seconds += sec * e->times;
        c->executions += e->times;
    }
    e->instructions = hs_sat_add(e->instructions, 1);
    e->walked++;
    if (in->opcode == HS_OP_COPY_DONE && in->n_operands > 0) {
        int id = in->operands[0]->id;
        double ready = id >= 0 && id < e->m->next_id ? e->ready[id] : 0;
        if (ready > e->now) {
            e->exposed += ready - e->now;
            e->now = ready;
        }
    }
    if (!dev_is_host_transfer(in)) {
        e->now += sec;
        return;
    }
    e->tsec += sec;
    e->tbytes += b;
    double start = e->dma_free > e->now ? e->dma_free : e->now;
    double end = start + sec;
    e->dma_free = end;
    if (in->opcode == HS_OP_COPY_START) {
        if (in->id >= 0 && in->id < e->m->next_id)
            e->ready[in->id] = end;
    } else {
        e->exposed += end - e->now;
        e->now = end;
    }
}

/* Whether walking `rest` more iterations like the one since `first`
 * would pass the budget. */
static bool past_budget(const est *e, const est *first, int64_t rest)
{
    int64_t per = e->walked - first->walked;
    return per > 0 && rest > (WALK_BUDGET - e->walked) / per;
}

/* Adds `rest` more iterations like the one since `first`: a counted loop's
 * steady state repeats, and the DMA stream's lag behind the compute stream
 * carries over unchanged from one iteration to the next. */
static void extrapolate(est *e, const est *first, int64_t rest)
{
    double r = (double)rest;
    e->now += r * (e->now - first->now);
    e->dma_free += r * (e->dma_free - first->dma_free);
    e->exposed += r * (e->exposed - first->exposed);
    e->flops += r * (e->flops - first->flops);
    e->bytes += r * (e->bytes - first->bytes);
    e->tsec += r * (e->tsec - first->tsec);
    e->tbytes += r * (e->tbytes - first->tbytes);
    e->charged_seconds += r * (e->charged_seconds - first->charged_seconds);
    e->instructions = hs_sat_add(
        e->instructions,
        hs_sat_mul(rest, e->instructions - first->instructions));
}

static hs_status walk(est *e, const hs_computation *c, int depth,
                      hs_error *err)
{
    if (depth > MAX_DEPTH)
        return hs_error_set(err, HS_ERR_LIMIT,
                            "estimate: computations nested more than %d "
                            "deep at %s", MAX_DEPTH, c->name);
    const bool *live = live_of(e, c);
    if (!live)
        return hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
    hs_status st = HS_OK;
    for (int k = 0; st == HS_OK && k < c->n_instrs; k++) {
        const hs_instruction *in = c->instrs[k];
        if (depth == 0 && e->entry_finish)
            e->entry_finish[k] = e->now; /* until it is charged below */
        if (in->id < 0 || in->id >= e->m->next_id || !live[in->id] ||
            in->opcode == HS_OP_PARAMETER)
            continue;
        est before = *e; /* for a control instruction's inclusive figures */
        switch (in->opcode) {
        case HS_OP_WHILE: {
            int64_t trip = in->known_trip_count;
            if (trip < 0) {
                e->unknown_trip = true;
                trip = 1;
            }
            e->instructions = hs_sat_add(e->instructions, 1);
            e->walked++;
            est first = *e; /* at the start of iteration 1 */
            double times = e->times;
            bool counting = e->counting;
            for (int64_t t = 0; st == HS_OK; t++) {
                if (t == 1) {
                    first = *e;
                    e->counting = false; /* iteration 0 counted them all */
                }
                if (t == 2 && trip > 2 && past_budget(e, &first, trip - 2)) {
                    extrapolate(e, &first, trip - 2);
                    t = trip; /* the last evaluation of the condition */
                }
                if (e->walked > WALK_LIMIT) {
                    st = hs_error_set(err, HS_ERR_LIMIT,
                                      "estimate: loops nested in %s need "
                                      "more than 2^27 instructions walked",
                                      in->name);
                    break;
                }
                e->times = times * (double)(trip + 1); /* the condition */
                if (in->n_called > 0)
                    st = walk(e, in->called[0], depth + 1, err);
                if (t == trip) /* the condition said stop */
                    break;
                e->times = times * (double)trip;
                if (st == HS_OK && in->n_called > 1)
                    st = walk(e, in->called[1], depth + 1, err);
            }
            e->times = times;
            e->counting = counting;
            break;
        }
        case HS_OP_CALL:
            e->instructions = hs_sat_add(e->instructions, 1);
            e->walked++;
            if (in->n_called > 0)
                st = walk(e, in->called[0], depth + 1, err);
            break;
        case HS_OP_CONDITIONAL:
            /* The first branch: which one runs depends on data. */
            e->instructions = hs_sat_add(e->instructions, 1);
            e->walked++;
            if (in->n_called > 0)
                st = walk(e, in->called[0], depth + 1, err);
            break;
        default:
            charge(e, in);
            break;
        }
        if (e->each && e->counting && is_control(in))
            charge_inclusive(e, &before, in);
        if (depth == 0 && e->entry_finish)
            e->entry_finish[k] = e->now;
    }
    return st;
}

hs_status hs_device_estimate(const hs_module *m, const hs_device_spec *spec,
                             hs_run_stats *stats, hs_error *err)
{
    return hs_device_estimate_clock(m, spec, NULL, stats, err);
}

static hs_status estimate(const hs_module *m, const hs_device_spec *spec,
                          double *finish, hs_instruction_cost *each,
                          hs_run_stats *stats, hs_error *err)
{
    memset(stats, 0, sizeof *stats);
    if (!m || !m->entry)
        return hs_error_set(err, HS_ERR_INVALID, "estimate: no module");
    if (!spec)
        spec = hs_device_find(hs_device_default_name());
    est e = {.spec = spec, .m = m, .entry_finish = finish, .each = each,
             .times = 1, .counting = true};
    if (each)
        memset(each, 0, sizeof *each * (size_t)m->next_id);
    e.ready = calloc((size_t)m->next_id + 1, sizeof *e.ready);
    e.live = calloc((size_t)m->n_comps + 1, sizeof *e.live);
    e.cost = malloc(((size_t)m->next_id + 1) * sizeof *e.cost);
    e.costed = calloc((size_t)m->next_id + 1, sizeof *e.costed);
    hs_status st = e.ready && e.live && e.cost && e.costed
                       ? walk(&e, m->entry, 0, err)
                       : hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
    for (int k = 0; e.live && k < m->n_comps; k++)
        free(e.live[k]);
    free(e.live);
    free(e.cost);
    free(e.costed);
    free(e.ready);
    if (st != HS_OK)
        return st;
    /* The run ends when both streams are idle. */
    double end = e.dma_free > e.now ? e.dma_free : e.now;
    stats->sim_seconds = end;
    stats->flops = e.flops;
    stats->bytes_accessed = e.bytes;
    stats->instructions = e.instructions;
    stats->host_transfer_seconds = e.tsec;
    stats->host_transfer_bytes = e.tbytes;
    stats->exposed_transfer_seconds = e.exposed;
    return HS_OK;
}

hs_status hs_device_estimate_clock(const hs_module *m,
                                   const hs_device_spec *spec,
                                   double *finish, hs_run_stats *stats,
                                   hs_error *err)
{
    return estimate(m, spec, finish, NULL, stats, err);
}

hs_status hs_device_estimate_each(const hs_module *m,
                                  const hs_device_spec *spec,
                                  hs_instruction_cost *each,
                                  hs_run_stats *stats, hs_error *err)
{
    return estimate(m, spec, NULL, each, stats, err);
}
