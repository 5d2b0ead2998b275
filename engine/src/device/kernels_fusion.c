/*
 * kernels_fusion.c - executes fusion instructions.
 *
 * A fusion compiled to an element-wise program (fusion_program.h) runs
 * block by block: per block, every value is produced into a register of
 * DEV_FUSION_BLOCK elements (or read in place from its operand) and the
 * root op writes straight into the result. Only the result is a device
 * buffer; the intermediates never are, which is what fusion buys.
 *
 * Any other fusion is evaluated like a call of its fused computation: the
 * intermediates are then materialised (and accounted), but the clock is
 * still charged the fusion's own cost only, as if it had been fused.
 */
#include <stdlib.h>
#include <string.h>

#include "device/fusion_program.h"

/* ---- index maps --------------------------------------------------------- */

/* Calls run(ctx, dst_offset, index, stride, count) for each run of the
 * result elements [i0, i0 + len) that is a straight line in the index
 * space: index, index + stride, ... */
typedef void (*run_fn)(void *ctx, int64_t at, int64_t index, int64_t stride,
                       int64_t count);

static void walk(const dev_index_map *m, int64_t i0, int64_t len, run_fn run,
                 void *ctx)
{
    if (len <= 0)
        return;
    int r = m->rank;
    int64_t c[HS_MAX_RANK], idx = m->base, rem = i0;
    for (int d = r - 1; d >= 0; d--) {
        c[d] = rem % m->dims[d];
        rem /= m->dims[d];
        idx += c[d] * m->strides[d];
    }
    int64_t s = m->strides[r - 1], inner = m->dims[r - 1], at = 0;
    while (len > 0) {
        int64_t count = inner - c[r - 1];
        if (count > len)
            count = len;
        run(ctx, at, idx, s, count);
        at += count;
        len -= count;
        idx += count * s;
        c[r - 1] += count;
        if (c[r - 1] < inner || len == 0)
            continue;
        idx -= inner * s;
        c[r - 1] = 0;
        for (int d = r - 2; d >= 0; d--) {
            idx += m->strides[d];
            if (++c[d] < m->dims[d])
                break;
            idx -= m->dims[d] * m->strides[d];
            c[d] = 0;
        }
    }
}

typedef struct gather_ctx {
    char *dst;
    const char *src;
    int es;
} gather_ctx;

static void gather_run(void *vc, int64_t at, int64_t idx, int64_t s,
                       int64_t count)
{
    gather_ctx *g = vc;
    int es = g->es;
    char *d = g->dst + at * es;
    const char *src = g->src + idx * es;
    if (s == 1) {
        memcpy(d, src, (size_t)(count * es));
        return;
    }
    switch (es) {
    case 4: {
        uint32_t *restrict dp = (uint32_t *)d;
        const uint32_t *sp = (const uint32_t *)src;
        if (s == 0) {
            /* A broadcast along the run: blocks of 8 vectorise. */
            uint32_t v = *sp;
            VLOOP(count, dp[i] = v);
        } else {
            for (int64_t i = 0; i < count; i++)
                dp[i] = sp[i * s];
        }
        break;
    }
    case 2: {
        uint16_t *restrict dp = (uint16_t *)d;
        const uint16_t *sp = (const uint16_t *)src;
        for (int64_t i = 0; i < count; i++)
            dp[i] = sp[i * s];
        break;
    }
    case 1:
        if (s == 0)
            memset(d, *src, (size_t)count);
        else
            for (int64_t i = 0; i < count; i++)
                d[i] = src[i * s];
        break;
    default: {
        uint64_t *restrict dp = (uint64_t *)d;
        const uint64_t *sp = (const uint64_t *)src;
        for (int64_t i = 0; i < count; i++)
            dp[i] = sp[i * s];
        break;
    }
    }
}

typedef struct iota_ctx {
    char *dst;
    hs_dtype type;
} iota_ctx;

static void iota_run(void *vc, int64_t at, int64_t idx, int64_t s,
                     int64_t count)
{
    iota_ctx *g = vc;
    /* The same conversions as the iota kernel. */
    for (int64_t i = 0; i < count; i++) {
        int64_t j = idx + i * s;
        dev_store_index(g->type, g->dst, at + i, j);
    }
}

/* ---- the program ---------------------------------------------------------- */

static void run_op(const dev_fusion_program *p, const dev_fop *op,
                   const void *const *rv, const void *const *operands,
                   void *dst, int64_t i0, int64_t len)
{
    const void *a = op->n_src > 0 ? rv[op->src[0]] : NULL;
    const void *b = op->n_src > 1 ? rv[op->src[1]] : NULL;
    const void *c = op->n_src > 2 ? rv[op->src[2]] : NULL;
    switch (op->kind) {
    case DEV_FOP_LOAD: {
        gather_ctx g = {dst, op->operand >= 0 ? operands[op->operand]
                                              : op->literal,
                        dev_esize(op->type)};
        walk(&op->map, i0, len, gather_run, &g);
        break;
    }
    case DEV_FOP_IOTA: {
        iota_ctx g = {dst, op->type};
        walk(&op->map, i0, len, iota_run, &g);
        break;
    }
    case DEV_FOP_UNARY:
        dev_unary_loop(op->op, op->type, a, dst, len);
        break;
    case DEV_FOP_BINARY:
        dev_binary_loop(op->op, op->type, a, b, dst, len);
        break;
    case DEV_FOP_COMPARE:
        dev_compare_loop(op->dir, op->in_type, a, b, dst, len);
        break;
    case DEV_FOP_SELECT:
        dev_select_loop(dev_esize(op->type), a, 1, b, c, dst, len);
        break;
    case DEV_FOP_CLAMP:
        dev_clamp_loop(op->type, a, 1, b, c, 1, dst, len);
        break;
    case DEV_FOP_CONVERT:
        dev_convert_loop(op->in_type, op->type, a, dst, len);
        break;
    case DEV_FOP_BITCAST:
        memcpy(dst, a, (size_t)(len * dev_esize(op->type)));
        break;
    }
    (void)p;
}

hs_status dev_fusion_execute(dev_ctx *x, const dev_fusion_program *p,
                             const void *const *operands, void *out)
{
    /* Written in place over an operand, the root goes through one more
     * slot: an op never writes over its inputs (restrict loops). */
    bool alias = false;
    for (int k = 0; k < p->n_operands; k++)
        alias |= operands[k] == out;
    int n_slots = p->n_slots + 1;
    size_t need = (size_t)n_slots * DEV_FUSION_SLOT_BYTES +
                  sizeof(void *) * (size_t)p->n_values;
    if (need > x->fusion_scratch_cap) {
        size_t cap = (need + 63) & ~(size_t)63;
        void *s = aligned_alloc(64, cap);
        if (!s)
            return dev_oom(x);
        free(x->fusion_scratch);
        x->fusion_scratch = s;
        x->fusion_scratch_cap = cap;
    }
    char *slots = x->fusion_scratch;
    const void **rv =
        (const void **)(slots + (size_t)n_slots * DEV_FUSION_SLOT_BYTES);
    int64_t n = p->n;
    int es = dev_esize(p->type);
    if (p->has_invariants) {
        int64_t len = n < DEV_FUSION_BLOCK ? n : DEV_FUSION_BLOCK;
        for (int k = 0; k < p->n_values; k++) {
            const dev_fop *op = &p->ops[k];
            if (op->place != DEV_FPLACE_INVARIANT)
                continue;
            void *dst = slots + (size_t)op->slot * DEV_FUSION_SLOT_BYTES;
            run_op(p, op, rv, operands, dst, 0, len);
            rv[k] = dst;
        }
    }
    for (int64_t i0 = 0; i0 < n; i0 += DEV_FUSION_BLOCK) {
        int64_t len = n - i0 < DEV_FUSION_BLOCK ? n - i0 : DEV_FUSION_BLOCK;
        for (int k = 0; k < p->n_values; k++) {
            const dev_fop *op = &p->ops[k];
            void *dst;
            switch (op->place) {
            case DEV_FPLACE_INVARIANT:
                continue;
            case DEV_FPLACE_DIRECT: {
                const char *src = op->operand >= 0 ? operands[op->operand]
                                                   : op->literal;
                rv[k] = src + (op->map.base + i0) * dev_esize(op->type);
                continue;
            }
            case DEV_FPLACE_OUT:
                dst = alias ? slots + (size_t)p->n_slots *
                                          DEV_FUSION_SLOT_BYTES
                            : (char *)out + i0 * es;
                break;
            default:
                dst = slots + (size_t)op->slot * DEV_FUSION_SLOT_BYTES;
                break;
            }
            run_op(p, op, rv, operands, dst, i0, len);
            rv[k] = dst;
        }
        if (p->ops[p->root].place != DEV_FPLACE_OUT || alias)
            memcpy((char *)out + i0 * es, rv[p->root], (size_t)(len * es));
    }
    return HS_OK;
}

/* ---- the kernel ----------------------------------------------------------- */

/* Evaluates the fused computation like a call, charging nothing for its
 * instructions: the step already carries the fusion's cost. */
static hs_status fusion_as_call(dev_ctx *x, const dev_step *s, dev_val **f,
                                dev_val **out)
{
    double sim = x->sim_seconds, flops = x->flops, bytes = x->bytes;
    double tsec = x->transfer_seconds, tbytes = x->transfer_bytes;
    int64_t instructions = x->instructions;
    hs_status st = dev_k_call(x, s, f, out);
    x->sim_seconds = sim;
    x->flops = flops;
    x->bytes = bytes;
    x->transfer_seconds = tsec;
    x->transfer_bytes = tbytes;
    x->instructions = instructions;
    return st;
}

hs_status dev_k_fusion(dev_ctx *x, const dev_step *s, dev_val **f,
                       dev_val **out)
{
    const dev_fusion_program *p = s->data;
    if (!p)
        return fusion_as_call(x, s, f, out);
    const void *small[16];
    const void **ops = s->n_ops <= 16 ? small
                                      : malloc(sizeof *ops * (size_t)s->n_ops);
    if (!ops)
        return dev_oom(x);
    for (int k = 0; k < s->n_ops; k++)
        ops[k] = dev_op(s, f, k)->block->data;
    dev_val *v = dev_result(x, s, f);
    hs_status st = v ? dev_fusion_execute(x, p, ops, v->block->data)
                     : x->err->status;
    if (ops != small)
        free(ops);
    if (st) {
        dev_release(x, v);
        return st;
    }
    *out = v;
    return HS_OK;
}
