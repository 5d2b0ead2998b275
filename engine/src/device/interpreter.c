/*
 * interpreter.c - runs plans: the evaluation loop with its roofline clock,
 * and hs_device_run, which binds arguments, runs the entry computation and
 * hands back its outputs and statistics.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/device_internal.h"

static void release_frame(dev_ctx *x, dev_val **f, int n)
{
    for (int i = 0; i < n; i++) {
        dev_release(x, f[i]);
        f[i] = NULL;
    }
}

/* Charges a compute-stream wait to the transfer that caused it. */
static void wait_for(dev_ctx *x, const hs_instruction *done, double wait)
{
    x->exposed_seconds += wait;
    hs_memory_timeline *t = x->tl;
    if (!t || done->n_operands < 1)
        return;
    for (int k = t->n_transfers - 1; k >= 0; k--)
        if (t->transfers[k].async &&
            t->transfers[k].instruction == done->operands[0]->name) {
            t->transfers[k].exposed_seconds += wait;
            return;
        }
}

/* A host-link transfer on the DMA stream, which runs one copy at a time.
 * copy-start returns at once (its copy-done waits); a synchronous move
 * holds the compute stream until its copy is done. */
static void dma(dev_ctx *x, const dev_step *s, dev_val *out)
{
    bool async = s->in->opcode == HS_OP_COPY_START;
    double start = x->dma_free > x->now ? x->dma_free : x->now;
    double end = start + s->seconds;
    x->dma_free = end;
    double issued = x->now, exposed = 0;
    if (async) {
        if (out)
            out->ready = end;
    } else {
        exposed = end - x->now;
        x->exposed_seconds += exposed;
        x->now = end;
    }
    hs_memory_timeline *t = x->tl;
    if (!t)
        return;
    if (t->n_transfers == t->cap_transfers) {
        int cap = t->cap_transfers ? 2 * t->cap_transfers : 64;
        hs_transfer_record *r = realloc(t->transfers, sizeof *r * (size_t)cap);
        if (!r)
            return;
        t->transfers = r;
        t->cap_transfers = cap;
    }
    hs_transfer_record *r = &t->transfers[t->n_transfers++];
    const hs_instruction *in = s->in;
    const hs_shape *d = async && in->shape.dtype == HS_TUPLE &&
                                in->shape.n_elems > 0
                            ? &in->shape.elems[0]
                            : &in->shape;
    r->instruction = in->name;
    r->op_name = in->op_name;
    r->bytes = hs_shape_bytes(d);
    r->to_memory_space = d->memory_space == HS_MEMSPACE_HOST
                             ? HS_MEMSPACE_HOST
                             : HS_MEMSPACE_DEVICE;
    r->async = async;
    r->issue_step = x->step_now;
    r->issue_time = issued;
    r->start_time = start;
    r->end_time = end;
    r->exposed_seconds = exposed;
}

/* A run past its deadline or cancelled by its caller stops here, between
 * two instructions, releasing what it holds like any other error. */
static hs_status check_cancelled(dev_ctx *x)
{
    if (x->cancel && atomic_load(x->cancel))
        return hs_error_set(x->err, HS_ERR_CANCELLED, "run cancelled");
    if (x->deadline_ns) {
        if (hs_now_ns() > x->deadline_ns)
            return hs_error_set(x->err, HS_ERR_CANCELLED,
                                "run stopped at its deadline after %lld "
                                "instructions",
                                (long long)x->step_now);
    }
    return HS_OK;
}

hs_status dev_eval(dev_ctx *x, dev_plan *p, dev_val **args, int n_args,
                   dev_val **result)
{
    if (n_args != p->n_params) {
        for (int i = 0; i < n_args; i++)
            dev_release(x, args[i]);
        return hs_error_set(x->err, HS_ERR_INVALID,
                            "computation %s takes %d parameters, given %d",
                            p->comp->name, p->n_params, n_args);
    }
    /* A plan's frame is reused; a second activation (which HLO's lack of
     * recursion rules out, but a hostile module may try) gets its own. */
    dev_val **f = p->frame;
    bool own = p->busy;
    if (own && !(f = calloc((size_t)p->n_slots, sizeof *f))) {
        for (int i = 0; i < n_args; i++)
            dev_release(x, args[i]);
        return dev_oom(x);
    }
    p->busy = true;
    for (int i = 0; i < n_args; i++) {
        if (p->param_dead[i])
            dev_release(x, args[i]);
        else
            f[p->param_slots[i]] = args[i];
    }
    hs_status st = HS_OK;
    const dev_step *s = p->steps, *end = s + p->n_steps;
    double flops = 0, bytes = 0, tsec = 0, tbytes = 0;
    for (; s < end; s++) {
        x->cur = s->in;
        /* Checked before every heavy instruction and every 64 light ones,
         * so a run overshoots its deadline by at most one instruction. */
        if ((x->deadline_ns || x->cancel) &&
            ((x->step_now & 63) == 0 || s->flops + s->bytes > 1e6) &&
            (st = check_cancelled(x)) != HS_OK)
            break;
        dev_val *out = NULL;
        /* copy-done waits for its transfer on the DMA stream. */
        double ready = s->in->opcode == HS_OP_COPY_DONE && s->n_ops > 0 &&
                               f[s->ops[0]]
                           ? f[s->ops[0]]->ready
                           : 0;
        if (ready > x->now) {
            wait_for(x, s->in, ready - x->now);
            x->now = ready;
        }
        st = s->kern(x, s, f, &out);
        if (st)
            break;
        f[s->slot] = out;
        flops += s->flops;
        bytes += s->bytes;
        if (s->host_transfer) {
            tsec += s->seconds;
            tbytes += s->bytes;
            dma(x, s, out);
        } else {
            x->now += s->seconds;
        }
        x->step_now++;
        for (int r = 0; r < s->n_release; r++) {
            int slot = s->release[r];
            if (f[slot]) {
                dev_release(x, f[slot]);
                f[slot] = NULL;
            }
        }
    }
    x->instructions += s - p->steps;
    x->sim_seconds = x->now;
    x->flops += flops;
    x->bytes += bytes;
    x->transfer_seconds += tsec;
    x->transfer_bytes += tbytes;
    if (!st) {
        *result = f[p->root_slot];
        f[p->root_slot] = NULL;
    } else {
        if (!x->err->instruction[0] && s < end)
            snprintf(x->err->instruction, sizeof x->err->instruction, "%s",
                     s->in->name);
        release_frame(x, f, p->n_slots);
    }
    if (own)
        free(f);
    else
        p->busy = false;
    return st;
}

/* ---- arguments and outputs ------------------------------------------- */

/* Wraps the caller's tensors (never written, never freed) as the value of
 * a parameter of shape s, consuming args from *next. pins collects one
 * extra reference per leaf, held until the end of the run so that
 * parameters count for the whole run and are never updated in place;
 * an array parameter that input_output_alias donates is not pinned: it
 * leaves the device's live bytes at its last use, as buffer assignment
 * plans (the caller's memory is still never written). */
static hs_status bind_param(dev_ctx *x, const hs_shape *s,
                            hs_tensor *const *args, int *next,
                            dev_val **pins, int *n_pins, bool donated,
                            dev_val **out)
{
    if (s->dtype == HS_TUPLE) {
        dev_val *t = dev_tuple_new(x, s, s->n_elems);
        if (!t)
            return x->err->status;
        for (int i = 0; i < s->n_elems; i++) {
            hs_status st = bind_param(x, &s->elems[i], args, next, pins,
                                      n_pins, false, &t->elems[i]);
            if (st) {
                t->n = i;
                dev_release(x, t);
                return st;
            }
        }
        *out = t;
        return HS_OK;
    }
    const hs_tensor *a = args[*next];
    if (!a || !hs_shape_compatible(&a->shape, s)) {
        char want[128], got[128] = "null";
        hs_shape_print(s, false, want, sizeof want);
        if (a)
            hs_shape_print(&a->shape, false, got, sizeof got);
        return hs_error_set(x->err, HS_ERR_INVALID,
                            "argument %d has shape %s, the parameter "
                            "expects %s", *next, got, want);
    }
    dev_val *v = dev_array_wrap(x, s, a->data, true);
    if (!v)
        return x->err->status;
    (*next)++;
    if (!donated) {
        dev_ref(v);
        pins[(*n_pins)++] = v;
    }
    *out = v;
    return HS_OK;
}

static hs_tensor *tensor_from(dev_ctx *x, dev_val *v)
{
    dev_block *b = v->block;
    if (b->cap && b->refs == 1 && v->refs == 1) {
        /* Sole owner: hand the buffer over (aligned_alloc'd like
         * hs_tensor_new's, so hs_tensor_free releases it). */
        hs_tensor *t = calloc(1, sizeof *t);
        if (!t)
            return NULL;
        t->shape = *v->shape;
        t->shape.elems = NULL;
        t->shape.layout_tail = NULL;
        t->data = b->data;
        b->cap = 0;
        return t;
    }
    hs_tensor *t = hs_tensor_new(v->shape);
    if (t)
        memcpy(t->data, b->data, (size_t)hs_shape_bytes(v->shape));
    return t;
}

static bool collect_outputs(dev_ctx *x, dev_val *v, hs_tensor **ts, int *n)
{
    if (v->elems) {
        for (int i = 0; i < v->n; i++)
            if (!collect_outputs(x, v->elems[i], ts, n))
                return false;
        return true;
    }
    ts[*n] = tensor_from(x, v);
    if (!ts[*n])
        return false;
    (*n)++;
    return true;
}

void hs_tensors_free(hs_tensor **ts, int n)
{
    if (!ts)
        return;
    for (int i = 0; i < n; i++)
        hs_tensor_free(ts[i]);
    free(ts);
}

static double now_seconds(void)
{
    return (double)hs_now_ns() * 1e-9;
}

hs_status hs_device_run(const hs_module *m, const hs_device_spec *spec,
                        hs_tensor *const *args, int n_args,
                        hs_tensor ***outputs, int *n_outputs,
                        hs_run_stats *stats, hs_error *err)
{
    return hs_device_run_ex(m, spec, args, n_args, outputs, n_outputs, NULL,
                            stats, err);
}

void hs_memory_timeline_free(hs_memory_timeline *t)
{
    if (!t)
        return;
    free(t->buffers);
    free(t->transfers);
    memset(t, 0, sizeof *t);
}

hs_status hs_device_run_ex(const hs_module *m, const hs_device_spec *spec,
                           hs_tensor *const *args, int n_args,
                           hs_tensor ***outputs, int *n_outputs,
                           const hs_run_options *opts, hs_run_stats *stats,
                           hs_error *err)
{
    double t0 = now_seconds();
    hs_error local;
    if (!err)
        err = &local;
    hs_error_clear(err);
    if (outputs)
        *outputs = NULL;
    if (n_outputs)
        *n_outputs = 0;
    if (!m || !m->entry)
        return hs_error_set(err, HS_ERR_INVALID, "module has no entry "
                                                 "computation");
    if (!spec)
        spec = hs_device_find(hs_device_default_name());
    dev_ctx x = {.m = m, .spec = spec, .err = err};
    if (opts && opts->timeline) {
        hs_memory_timeline_free(opts->timeline);
        x.tl = opts->timeline;
    }
    if (opts) {
        x.deadline_ns = opts->deadline_ns;
        x.cancel = opts->cancel;
    }
    const hs_computation *entry = m->entry;
    dev_val **params = NULL, **pins = NULL;
    dev_val *root = NULL;
    int n_pins = 0;
    hs_status st = dev_plan_module(&x, entry);
    int want = 0;
    for (int i = 0; !st && i < entry->n_params; i++)
        want += hs_shape_leaf_count(&entry->params[i]->shape);
    if (!st && want != n_args)
        st = hs_error_set(err, HS_ERR_INVALID,
                          "entry computation %s takes %d arguments, given %d",
                          entry->name, want, n_args);
    if (!st) {
        params = calloc((size_t)entry->n_params + 1, sizeof *params);
        pins = calloc((size_t)want + 1, sizeof *pins);
        if (!params || !pins)
            st = dev_oom(&x);
    }
    const hs_io_alias *don = m->io_aliases;
    int next = 0, bound = 0;
    for (; !st && bound < entry->n_params; bound++) {
        bool donated = false;
        for (int d = 0; d < m->n_io_aliases; d++)
            donated |= don[d].param == bound && don[d].param_index_len == 0;
        x.cur = entry->params[bound];
        st = bind_param(&x, &entry->params[bound]->shape, args, &next, pins,
                        &n_pins, donated, &params[bound]);
    }
    if (!st) {
        st = dev_eval(&x, dev_plan_of(&x, entry), params, entry->n_params,
                      &root);
        bound = 0; /* consumed */
    }
    hs_tensor **ts = NULL;
    int n_ts = 0;
    if (!st) {
        ts = calloc((size_t)hs_shape_leaf_count(root->shape) + 1, sizeof *ts);
        if (!ts || !collect_outputs(&x, root, ts, &n_ts)) {
            hs_tensors_free(ts, n_ts);
            ts = NULL;
            st = dev_oom(&x);
        }
    }
    /* Whatever the DMA stream still runs ends the run. */
    if (x.dma_free > x.now)
        x.now = x.dma_free;
    x.sim_seconds = x.now;
    if (x.tl) {
        x.tl->steps = x.step_now;
        x.tl->end_time = x.now;
    }
    x.tl = NULL; /* outputs and arguments stay live to the end */
    for (int i = 0; i < bound; i++)
        dev_release(&x, params[i]);
    dev_release(&x, root);
    for (int i = 0; i < n_pins; i++)
        dev_release(&x, pins[i]);
    free(params);
    free(pins);
    dev_plans_free(&x);
    dev_ctx_cleanup(&x);
    if (stats) {
        memset(stats, 0, sizeof *stats);
        stats->sim_seconds = x.sim_seconds;
        stats->flops = x.flops;
        stats->bytes_accessed = x.bytes;
        stats->instructions = x.instructions;
        stats->peak_device_bytes = x.peak[0];
        stats->peak_host_bytes = x.peak[1];
        stats->host_transfer_seconds = x.transfer_seconds;
        stats->host_transfer_bytes = x.transfer_bytes;
        stats->exposed_transfer_seconds = x.exposed_seconds;
        stats->wall_seconds = now_seconds() - t0;
    }
    if (st)
        return st;
    if (outputs)
        *outputs = ts;
    else
        hs_tensors_free(ts, n_ts);
    if (n_outputs)
        *n_outputs = n_ts;
    return HS_OK;
}
