/*
 * offload.c - the offload what-if (issue 15, item 2): what host offloading
 * of saved activations would do to a user's own training step.
 *
 *   1. The module is compiled as it is (the default pipeline) for the
 *      device: its device peak is peak_before, and its schedule, buffers
 *      and clock say which values it saves for later (lifetimes.c).
 *   2. A module with none, or whose saved values do not nest (no backward
 *      pass consuming them in reverse), is not a training step: the section
 *      says so.
 *   3. Against the budget (o->budget, else the device's HBM), the largest
 *      value idle across the predicted peak is chosen until the prediction
 *      fits, then the choices the others made unnecessary are dropped.
 *   4. The compiled module is annotated as place_to_host / place_to_device
 *      would have written it (an annotate_device_placement pair per chosen
 *      value, its uses after the gap reading the value brought back), and
 *      the offload passes lower it: host-offload, host-offload-async,
 *      schedule. The copies are then timed on the device's clock
 *      (prefetch.c), and buffer assignment and the device estimate give
 *      peak_after, bytes_moved and exposed_seconds.
 *   5. When the measured peak misses the budget, the target is lowered by
 *      the miss and more values are chosen (a few rounds); the first set
 *      that fits is the answer, else the one with the lowest peak.
 * docs/WHATIF.md, "Host offload".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_buffers.h"
#include "hloscope/hs_compile.h"
#include "hloscope/hs_device.h"
#include "whatif/offload_internal.h"
#include "whatif/whatif_internal.h"

/* What lowers the annotations of an already compiled module: no fusion
 * (its fusions are formed) and no simplification (nothing to fold). */
#define OFFLOAD_PIPELINE "verify,host-offload,host-offload-async,schedule"
/* Compiles of the annotated module before settling on the best found. */
#define MAX_ROUNDS 4

typedef struct attempt {
    hs_module *module; /* compiled, copies placed */
    double peak, bytes_moved, exposed;
    const char *peak_at; /* the instruction at the device peak */
    int n_chosen;
    const char **chosen;
} attempt;

static void attempt_free(attempt *a)
{
    hs_module_free(a->module);
    memset(a, 0, sizeof *a);
}

static bool stops_everything(hs_status st)
{
    return st == HS_ERR_CANCELLED || st == HS_ERR_NOMEM;
}

static void not_analysed(hs_whatif_offload *r, const char *fmt, const char *a)
{
    r->analysed = false;
    snprintf(r->reason, sizeof r->reason, fmt, a);
}

/* place_to_host(x) (host) or place_to_device(x), appended to c, under
 * the op_name of the value v it moves. NULL on host OOM. */
static hs_instruction *placement(hs_computation *c, hs_instruction *x,
                                 const hs_instruction *v, bool host)
{
    hs_instruction *p =
        hs_computation_add(c, HS_OP_CUSTOM_CALL, &v->shape, &x, 1, NULL);
    if (!p)
        return NULL;
    p->custom_call_target = HS_PLACEMENT_TARGET;
    p->op_name = v->op_name;
    return hs_instruction_set_placement(p, host) ? p : NULL;
}

/* The compiled module a annotated for the chosen values: a pair of
 * annotate_device_placement custom-calls right after each value, and its
 * uses after the idle gap reading the value brought back. *ours receives
 * the annotations' ids (the copy-dones they become keep them). */
static hs_module *annotate(const hs_module *a, const hs__lifetimes *l,
                           bool **ours, int *n_ours)
{
    hs_module *b = hs_module_clone(a);
    if (!b)
        return NULL;
    hs_computation *c = b->entry;
    int n0 = c->n_instrs;
    hs_instruction **by_id = calloc((size_t)b->next_id + 1, sizeof *by_id);
    int *pos = malloc(sizeof *pos * ((size_t)b->next_id + 1));
    /* The annotations (and the get-tuple-elements moved up to their
     * producer) to place after a position, in order. */
    int n_extra = 0;
    hs_instruction **extra = malloc(sizeof *extra * ((size_t)l->n * 3 + 1));
    int *extra_at = malloc(sizeof *extra_at * ((size_t)l->n * 3 + 1));
    bool *moved = calloc((size_t)n0 + 1, sizeof *moved);
    if (!by_id || !pos || !extra || !extra_at || !moved)
        goto fail;
    for (int k = 0; k < n0; k++) {
        by_id[c->instrs[k]->id] = c->instrs[k];
        pos[c->instrs[k]->id] = k;
    }
    for (int q = 0; q < l->n; q++) {
        const hs__saved_value *sv = &l->values[q];
        if (!sv->chosen)
            continue;
        hs_instruction *v = by_id[sv->value->id];
        if (!v)
            goto fail;
        hs_instruction *h = placement(c, v, v, true);
        hs_instruction *d = h ? placement(c, h, v, false) : NULL;
        if (!d)
            goto fail;
        /* An element read late by its get-tuple-element: the read moves up
         * to the producer, so the copy leaves when the bytes are made. */
        int at = pos[v->id];
        if (v->opcode == HS_OP_GET_TUPLE_ELEMENT && sv->def < at) {
            moved[at] = true;
            at = sv->def;
            extra_at[n_extra] = at;
            extra[n_extra++] = v;
        }
        extra_at[n_extra] = at;
        extra[n_extra++] = h;
        extra_at[n_extra] = at;
        extra[n_extra++] = d;
        /* Uses after the gap (views of v whose uses all lie after it
         * read d as a whole). */
        for (int k = sv->idle_to; k < n0; k++) {
            hs_instruction *u = c->instrs[k];
            for (int o = 0; o < u->n_operands; o++)
                if (u->operands[o] == v)
                    u->operands[o] = d;
        }
        for (int k = sv->def + 1; k < sv->idle_to; k++) {
            hs_instruction *u = c->instrs[k];
            if (u->opcode != HS_OP_BITCAST && u->opcode != HS_OP_RESHAPE)
                continue;
            if (u->operands[0] != v)
                continue;
            bool late = true, used = false;
            for (int j = k + 1; j < n0; j++)
                for (int o = 0; o < c->instrs[j]->n_operands; o++)
                    if (c->instrs[j]->operands[o] == u) {
                        used = true;
                        late &= j >= sv->idle_to;
                    }
            if (used && late)
                u->operands[0] = d;
        }
    }
    /* Each pair right after its value (a post order again; the schedule
     * pass orders the rest). */
    int n = c->n_instrs;
    hs_instruction **order = malloc(sizeof *order * (size_t)n);
    *n_ours = b->next_id + 1;
    *ours = calloc((size_t)*n_ours, sizeof **ours);
    if (!order || !*ours) {
        free(order);
        goto fail;
    }
    int w = 0;
    for (int k = 0; k < n0; k++) {
        if (!moved[k])
            order[w++] = c->instrs[k];
        for (int e = 0; e < n_extra; e++)
            if (extra_at[e] == k) {
                order[w++] = extra[e];
                if (extra[e]->opcode == HS_OP_CUSTOM_CALL)
                    (*ours)[extra[e]->id] = true;
            }
    }
    memcpy(c->instrs, order, sizeof *order * (size_t)w);
    free(order);
    free(by_id);
    free(pos);
    free(extra);
    free(extra_at);
    free(moved);
    return b;
fail:
    free(*ours);
    *ours = NULL;
    free(by_id);
    free(pos);
    free(extra);
    free(extra_at);
    free(moved);
    hs_module_free(b);
    return NULL;
}

/* The name a value has in the user's module: a fusion the compile formed
 * is named after the instruction it computes (its fused root keeps the
 * name it had). */
static const char *user_name(const hs_instruction *v)
{
    if (v->opcode == HS_OP_FUSION && v->n_called == 1 && v->called[0]->root &&
        v->called[0]->root->opcode != HS_OP_TUPLE &&
        v->called[0]->root->opcode != HS_OP_PARAMETER)
        return v->called[0]->root->name;
    return v->name;
}

/* Lowers, places and measures one choice of values. */
static hs_status try_choice(const hs_module *a, const hs__lifetimes *l,
                            const hs_device_spec *spec,
                            const hs_whatif_options *o, hs_whatif *w,
                            attempt *out, hs_error *err)
{
    memset(out, 0, sizeof *out);
    bool *ours = NULL;
    int n_ours = 0;
    hs_module *b = annotate(a, l, &ours, &n_ours);
    if (!b)
        return hs_error_set(err, HS_ERR_NOMEM, "offload: out of host memory");
    hs_compile_options co;
    hs__whatif_compile_options(o, spec->name, OFFLOAD_PIPELINE, &co);
    hs_executable *exe = NULL;
    hs_status st = hs_compile(b, &co, NULL, NULL, &exe, err);
    hs_module_free(b);
    if (st != HS_OK) {
        free(ours);
        return st;
    }
    out->module = hs_module_clone(hs_executable_module(exe));
    hs_executable_release(exe);
    if (!out->module) {
        free(ours);
        return hs_error_set(err, HS_ERR_NOMEM, "offload: out of host memory");
    }
    st = hs__place_offload_copies(out->module, spec, ours, n_ours, err);
    free(ours);
    if (st == HS_OK)
        st = hs_module_verify(out->module, err);
    hs_buffer_assignment *ba = NULL;
    if (st == HS_OK && !(ba = hs_assign_buffers(out->module, err)))
        st = err && err->status != HS_OK ? err->status : HS_ERR_NOMEM;
    hs_run_stats est;
    if (st == HS_OK)
        st = hs_device_estimate(out->module, spec, &est, err);
    if (st != HS_OK) {
        hs_buffers_free(ba);
        attempt_free(out);
        return st;
    }
    hs_buffer_peak pk = hs_buffers_peak(ba, HS_MEMSPACE_DEVICE);
    out->peak = (double)pk.bytes;
    out->peak_at = pk.instruction
                       ? hs_arena_strdup(w->arena, pk.instruction->name)
                       : NULL;
    out->bytes_moved = est.host_transfer_bytes;
    out->exposed = est.exposed_transfer_seconds;
    hs_buffers_free(ba);
    for (int q = 0; q < l->n; q++)
        out->n_chosen += l->values[q].chosen;
    out->chosen = hs_arena_alloc(w->arena, sizeof *out->chosen *
                                               ((size_t)out->n_chosen + 1));
    if (!out->chosen) {
        attempt_free(out);
        return hs_error_set(err, HS_ERR_NOMEM, "offload: out of host memory");
    }
    int k = 0;
    for (int q = 0; q < l->n; q++)
        if (l->values[q].chosen &&
            !(out->chosen[k++] =
                  hs_arena_strdup(w->arena, user_name(l->values[q].value)))) {
            attempt_free(out);
            return hs_error_set(err, HS_ERR_NOMEM,
                                "offload: out of host memory");
        }
    return HS_OK;
}

static void report(hs_whatif_offload *r, attempt *a)
{
    if (a->peak > r->budget) {
        char b1[32], b2[32];
        hs_format_bytes((int64_t)a->peak, b1, sizeof b1);
        hs_format_bytes((int64_t)r->budget, b2, sizeof b2);
        snprintf(r->reason, sizeof r->reason,
                 "no choice fits: with the %d saved value%s idle across "
                 "the peak on the host, the device still needs %s of %s, "
                 "at %s (arguments, outputs and the values computed there "
                 "stay)",
                 a->n_chosen, a->n_chosen == 1 ? "" : "s", b1, b2,
                 a->peak_at ? a->peak_at : "?");
    }
    r->peak_after = a->peak;
    r->bytes_moved = a->bytes_moved;
    r->exposed_seconds = a->exposed;
    r->fits = a->peak <= r->budget;
    r->n_chosen = a->n_chosen;
    r->chosen = a->chosen;
    r->offloaded = a->module;
    a->module = NULL;
}

/* Chooses, lowers and measures until a choice fits or no round helps. */
static hs_status search(const hs_module *a, hs__lifetimes *l,
                        const hs_device_spec *spec,
                        const hs_whatif_options *o, hs_whatif *w,
                        hs_error *err)
{
    hs_whatif_offload *r = &w->offload;
    int64_t budget = (int64_t)r->budget, target = budget;
    attempt best = {0};
    hs_status st = HS_OK;
    int before = -1;
    for (int round = 0; round < MAX_ROUNDS; round++) {
        hs__choose_saved_values(l, target);
        int chosen = 0;
        for (int q = 0; q < l->n; q++)
            chosen += l->values[q].chosen;
        if (chosen == 0 || chosen == before)
            break; /* nothing idle across the peak is left to move */
        before = chosen;
        if ((st = hs__whatif_stopped(o, "the offload analysis", err)) != HS_OK)
            break;
        attempt cur;
        st = try_choice(a, l, spec, o, w, &cur, err);
        if (st != HS_OK)
            break;
        if (!best.module || cur.peak < best.peak) {
            attempt_free(&best);
            best = cur;
        } else {
            attempt_free(&cur);
        }
        if (best.peak <= (double)budget)
            break;
        /* The prediction missed by this much: aim lower. */
        target -= (int64_t)(best.peak - (double)budget);
        if (target <= 0)
            break;
    }
    if (st == HS_OK && best.module)
        report(r, &best);
    else if (st == HS_OK)
        r->peak_after = r->peak_before; /* nothing could be moved */
    attempt_free(&best);
    return st;
}

/* The device values left out of the choice, said with why (the JSON's
 * not_candidates). */
static void say_not_candidates(const hs__lifetimes *l, hs_whatif_offload *r)
{
    if (l->called.count > 0)
        r->not_candidates[r->n_not_candidates++] = (hs_whatif_not_candidate){
            .kind = "called_computation",
            .count = l->called.count,
            .bytes = (double)l->called.bytes,
            .reason = "defined inside a loop body or a called computation: "
                      "it lives for one run of that computation, within one "
                      "instruction of the entry, so it is never idle on the "
                      "entry's clock; a scanned model moves its per-step "
                      "residuals with its residual policy, which places the "
                      "copies inside the body"};
    if (l->shared_elements.count > 0)
        r->not_candidates[r->n_not_candidates++] = (hs_whatif_not_candidate){
            .kind = "shared_tuple_element",
            .count = l->shared_elements.count,
            .bytes = (double)l->shared_elements.bytes,
            .reason = "an element of a tuple-shaped result read by several "
                      "get-tuple-elements: the placement annotation moves "
                      "one value, and each reader would keep the element on "
                      "the device"};
}

hs_status hs__whatif_offload(const hs_module *m, const hs__whatif_shared *sh,
                             const hs_whatif_options *o, hs_whatif *w,
                             hs_error *err)
{
    (void)m;
    hs_whatif_offload *r = &w->offload;
    memset(r, 0, sizeof *r);
    const char *dev = o->device ? o->device : hs_device_default_name();
    const hs_device_spec *spec = hs_device_find(dev);
    if (!spec)
        return hs_error_set(err, HS_ERR_INVALID, "unknown device '%s'", dev);
    r->budget = o->budget > 0 ? o->budget : spec->hbm_bytes;
    hs_status st = hs__whatif_stopped(o, "the offload analysis", err);
    if (st != HS_OK)
        return st;

    /* The module compiled as it is: the driver's one compile. */
    const hs_executable *exe = sh->exe;
    if (!exe) {
        char msg[400];
        hs_error_format(&sh->why, msg, sizeof msg);
        not_analysed(r, "the module does not compile: %s", msg);
        return HS_OK;
    }
    const hs_module *a = hs_executable_module(exe);
    const hs_buffer_assignment *ba = hs_executable_buffers(exe);
    r->peak_before =
        (double)hs_buffers_peak(ba, HS_MEMSPACE_DEVICE).bytes;
    r->peak_after = r->peak_before;
    r->fits = r->peak_before <= r->budget;

    int n = a->entry->n_instrs;
    double *finish = malloc(sizeof *finish * ((size_t)n + 1));
    hs__lifetimes l = {0};
    hs_run_stats est;
    if (!finish) {
        st = hs_error_set(err, HS_ERR_NOMEM, "offload: out of host memory");
        goto out;
    }
    if ((st = hs_device_estimate_clock(a, spec, finish, &est, err)) != HS_OK ||
        (st = hs__find_saved_values(a, ba, finish, &l, err)) != HS_OK)
        goto out;
    say_not_candidates(&l, r);
    if (l.n == 0) {
        not_analysed(r, "%s",
                     "no array the entry computation defines (or a loop "
                     "or a tuple-shaped result carries out) stays idle on "
                     "the device for a quarter of the step's compute "
                     "time: nothing is saved for later (an inference "
                     "module?)");
        goto out;
    }
    if (!l.nested) {
        char why[256];
        snprintf(why, sizeof why, "%d value%s idle for a quarter of the step "
                 "(the largest %s), but none is consumed in reverse order "
                 "of definition, as a backward pass consumes its saved "
                 "activations: a forward-only module?",
                 l.n, l.n == 1 ? " stays" : "s stay", l.values[0].value->name);
        not_analysed(r, "%s", why);
        goto out;
    }
    r->analysed = true;
    if (r->fits) {
        /* Nothing has to move: what auto does when save fits. */
        char b1[32], b2[32];
        hs_format_bytes((int64_t)r->peak_before, b1, sizeof b1);
        hs_format_bytes((int64_t)r->budget, b2, sizeof b2);
        snprintf(r->reason, sizeof r->reason,
                 "the step fits without offloading (%s of %s); give a "
                 "smaller budget to see what would move", b1, b2);
        goto out;
    }
    hs_error serr;
    hs_error_clear(&serr);
    st = search(a, &l, spec, o, w, &serr);
    if (stops_everything(st) && err)
        *err = serr;
    if (st == HS_OK && r->n_chosen == 0) {
        char b1[32];
        hs_format_bytes((int64_t)r->peak_before, b1, sizeof b1);
        snprintf(r->reason, sizeof r->reason,
                 "no saved value is idle across the peak (%s): what is live "
                 "there is needed there (arguments, outputs, the values "
                 "being computed)", b1);
    }
    if (st != HS_OK && !stops_everything(st)) {
        /* A rewrite the passes refuse is this section's failure, said
         * where, not the whole analysis's. */
        char msg[400];
        hs_error_format(&serr, msg, sizeof msg);
        r->analysed = false;
        snprintf(r->reason, sizeof r->reason,
                 "the offloaded module could not be built: %s", msg);
        st = HS_OK;
    }
out:
    hs__lifetimes_free(&l);
    free(finish);
    return st;
}
