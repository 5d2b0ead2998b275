/*
 * kernels_data.c - data movement: constants, iota, aliases, copies
 * (copy, copy-start / copy-done), broadcast, transpose, slice, concatenate,
 * reverse, pad, dynamic-slice and dynamic-update-slice. Data is dense
 * row-major; every strided access goes through one n-d copy that merges
 * contiguous dimensions first, so the common cases end in memcpy or a
 * tight element loop.
 *
 * A dynamic-slice of a contiguous run of its operand (a layer of stacked
 * weights: start on the leading dimensions only) is a view: it shares the
 * operand's buffer and keeps it alive, and copies nothing. A
 * dynamic-update-slice then never writes in place into a buffer that a
 * view still reads (copy-on-write).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/device_internal.h"
#include "numerics/element_types.h"
#include "hloscope/hs_infer.h"

void dev_row_major_strides(const int64_t *dims, int rank, int64_t *strides)
{
    int64_t s = 1;
    for (int i = rank - 1; i >= 0; i--) {
        strides[i] = s;
        s *= dims[i];
    }
}

static void copy_line(char *d, int64_t ds, const char *s, int64_t ss,
                      int64_t n, int esize)
{
    if (ds == 1 && ss == 1) {
        memcpy(d, s, (size_t)(n * esize));
        return;
    }
    switch (esize) {
    case 4: {
        uint32_t *restrict dp = (uint32_t *)d;
        const uint32_t *restrict sp = (const uint32_t *)s;
        if (ds == 1)
            for (int64_t i = 0; i < n; i++)
                dp[i] = sp[i * ss];
        else
            for (int64_t i = 0; i < n; i++)
                dp[i * ds] = sp[i * ss];
        break;
    }
    case 1:
        for (int64_t i = 0; i < n; i++)
            d[i * ds] = s[i * ss];
        break;
    case 2: {
        uint16_t *dp = (uint16_t *)d;
        const uint16_t *sp = (const uint16_t *)s;
        for (int64_t i = 0; i < n; i++)
            dp[i * ds] = sp[i * ss];
        break;
    }
    case 8: {
        uint64_t *dp = (uint64_t *)d;
        const uint64_t *sp = (const uint64_t *)s;
        for (int64_t i = 0; i < n; i++)
            dp[i * ds] = sp[i * ss];
        break;
    }
    default:
        for (int64_t i = 0; i < n; i++)
            memcpy(d + i * ds * esize, s + i * ss * esize, (size_t)esize);
        break;
    }
}

void dev_copy_strided(void *dst, const int64_t *dst_strides, const void *src,
                      const int64_t *src_strides, const int64_t *dims,
                      int rank, int esize)
{
    int64_t d[HS_MAX_RANK], ss[HS_MAX_RANK], ds[HS_MAX_RANK];
    int r = 0;
    for (int i = 0; i < rank; i++) {
        if (dims[i] == 0)
            return;
        if (dims[i] == 1)
            continue;
        if (r > 0 && ss[r - 1] == src_strides[i] * dims[i] &&
            ds[r - 1] == dst_strides[i] * dims[i]) {
            d[r - 1] *= dims[i];
            ss[r - 1] = src_strides[i];
            ds[r - 1] = dst_strides[i];
        } else {
            d[r] = dims[i];
            ss[r] = src_strides[i];
            ds[r] = dst_strides[i];
            r++;
        }
    }
    if (r == 0) {
        memcpy(dst, src, (size_t)esize);
        return;
    }
    int inner = r - 1;
    int64_t idx[HS_MAX_RANK] = {0};
    char *dp = dst;
    const char *sp = src;
    for (;;) {
        copy_line(dp, ds[inner], sp, ss[inner], d[inner], esize);
        int k = inner - 1;
        for (; k >= 0; k--) {
            dp += ds[k] * esize;
            sp += ss[k] * esize;
            if (++idx[k] < d[k])
                break;
            dp -= ds[k] * d[k] * esize;
            sp -= ss[k] * d[k] * esize;
            idx[k] = 0;
        }
        if (k < 0)
            return;
    }
}

void dev_transpose(void *dst, const void *src, const int64_t *src_dims,
                   int rank, const int64_t *perm, int esize)
{
    int64_t ss[HS_MAX_RANK], pss[HS_MAX_RANK], od[HS_MAX_RANK],
        ds[HS_MAX_RANK];
    dev_row_major_strides(src_dims, rank, ss);
    for (int i = 0; i < rank; i++) {
        od[i] = src_dims[perm[i]];
        pss[i] = ss[perm[i]];
    }
    dev_row_major_strides(od, rank, ds);
    dev_copy_strided(dst, ds, src, pss, od, rank, esize);
}

/* ---- leaves ----------------------------------------------------------- */

hs_status dev_k_constant(dev_ctx *x, const dev_step *s, dev_val **f,
                         dev_val **out)
{
    /* The literal is read in place: never written, never freed. */
    *out = dev_array_wrap(x, &s->in->shape, s->in->literal, true);
    return *out ? HS_OK : x->err->status;
}

hs_status dev_k_iota(dev_ctx *x, const dev_step *s, dev_val **f,
                     dev_val **out)
{
    const hs_instruction *in = s->in;
    const hs_shape *sh = &in->shape;
    int dim = in->n_dims > 0 ? (int)in->dims[0] : 0;
    if (dim < 0 || dim >= sh->rank) {
        if (sh->rank != 0)
            return dev_unsupported(x, in, "an iota with a bad dimension");
        dim = 0;
    }
    dev_val *v = dev_array_new(x, sh);
    if (!v)
        return x->err->status;
    int64_t outer = 1, len = sh->rank ? sh->dims[dim] : 1, inner = 1;
    for (int i = 0; i < dim; i++)
        outer *= sh->dims[i];
    for (int i = dim + 1; i < sh->rank; i++)
        inner *= sh->dims[i];
    void *d = v->block->data;
    int64_t p = 0;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < len; j++)
            for (int64_t i = 0; i < inner; i++, p++) {
                dev_store_index(sh->dtype, d, p, j);
            }
    *out = v;
    return HS_OK;
}

/* An array of no elements, whatever its operands hold: what XLA's
 * ZeroSizedHloElimination makes of such an instruction (an empty constant).
 * Its other dimensions can still multiply past any loop a kernel could
 * finish: s16[4294967296,0] is legal and empty (plan.c picks this kernel). */
hs_status dev_k_empty(dev_ctx *x, const dev_step *s, dev_val **f,
                      dev_val **out)
{
    *out = dev_array_new(x, &s->in->shape);
    return *out ? HS_OK : x->err->status;
}

/* ---- aliases and copies ------------------------------------------------ */

/* reshape, bitcast, bitcast-convert and opt-barrier: same bytes, new
 * shape, no copy. */
hs_status dev_k_alias(dev_ctx *x, const dev_step *s, dev_val **f,
                      dev_val **out)
{
    dev_val *v = dev_take(s, f, 0);
    if (v->elems || v->refs == 1) {
        if (!v->elems)
            v->shape = &s->in->shape;
        *out = v;
        return HS_OK;
    }
    *out = dev_array_alias(x, &s->in->shape, v->block);
    dev_release(x, v);
    return *out ? HS_OK : x->err->status;
}

hs_status dev_k_copy(dev_ctx *x, const dev_step *s, dev_val **f,
                     dev_val **out)
{
    dev_val *a = dev_op(s, f, 0);
    if (a->elems)
        return dev_unsupported(x, s->in, "a copy of a tuple");
    dev_val *v = dev_array_new(x, &s->in->shape);
    if (!v)
        return x->err->status;
    memcpy(v->block->data, a->block->data, (size_t)v->block->bytes);
    *out = v;
    return HS_OK;
}

/* copy-start returns (destination, source, context) as in XLA. The copy
 * happens here, into the destination's memory space; copy-done only hands
 * the destination on. The steps are marked host_transfer when the spaces
 * differ, for a DMA stream to pick up. */
hs_status dev_k_copy_start(dev_ctx *x, const dev_step *s, dev_val **f,
                           dev_val **out)
{
    const hs_shape *sh = &s->in->shape;
    const dev_val *a = dev_op(s, f, 0);
    if (a->elems)
        return dev_unsupported(x, s->in, "a copy-start of a tuple");
    dev_val *t = dev_tuple_new(x, sh, sh->n_elems);
    if (!t)
        return x->err->status;
    dev_val *d = dev_array_new(x, &sh->elems[0]);
    if (d)
        memcpy(d->block->data, a->block->data, (size_t)d->block->bytes);
    t->elems[0] = d;
    if (d)
        t->elems[1] = dev_take(s, f, 0);
    for (int k = 2; d && k < sh->n_elems; k++) {
        /* The context (u32[] in XLA) is opaque: zeroed scalars. */
        const hs_shape *cs = &sh->elems[k];
        if (cs->dtype == HS_TUPLE)
            t->elems[k] = dev_tuple_new(x, cs, 0);
        else if ((t->elems[k] = dev_array_new(x, cs)))
            memset(t->elems[k]->block->data, 0, t->elems[k]->block->cap);
        if (!t->elems[k])
            d = NULL;
    }
    if (!d) {
        dev_release(x, t);
        return x->err->status;
    }
    *out = t;
    return HS_OK;
}

hs_status dev_k_copy_done(dev_ctx *x, const dev_step *s, dev_val **f,
                          dev_val **out)
{
    const dev_val *t = dev_op(s, f, 0);
    if (!t->elems || t->n < 1 || !t->elems[0])
        return dev_unsupported(x, s->in, "a copy-done of something other "
                                         "than a copy-start");
    dev_val *tv = dev_take(s, f, 0);
    dev_val *e = tv->elems[0];
    dev_ref(e);
    dev_release(x, tv);
    *out = e;
    return HS_OK;
}

/* ---- layout-changing copies -------------------------------------------- */

hs_status dev_k_broadcast(dev_ctx *x, const dev_step *s, dev_val **f,
                          dev_val **out)
{
    const hs_instruction *in = s->in;
    const dev_val *a = dev_op(s, f, 0);
    const hs_shape *os = a->shape, *rs = &in->shape;
    int es = dev_esize(rs->dtype);
    dev_val *v = dev_array_new(x, rs);
    if (!v)
        return x->err->status;
    int64_t n = hs_shape_elements(rs);
    if (hs_shape_elements(os) == 1) {
        const char *src = a->block->data;
        char *d = v->block->data;
        if (es == 4) {
            uint32_t val;
            memcpy(&val, src, 4);
            uint32_t *restrict dp = (uint32_t *)d;
            for (int64_t i = 0; i < n; i++)
                dp[i] = val;
        } else {
            for (int64_t i = 0; i < n; i++)
                memcpy(d + i * es, src, (size_t)es);
        }
    } else {
        int64_t ostr[HS_MAX_RANK], sstr[HS_MAX_RANK] = {0}, dstr[HS_MAX_RANK];
        dev_row_major_strides(os->dims, os->rank, ostr);
        for (int i = 0; i < os->rank && i < in->n_dims; i++)
            sstr[in->dims[i]] = ostr[i];
        dev_row_major_strides(rs->dims, rs->rank, dstr);
        dev_copy_strided(v->block->data, dstr, a->block->data, sstr,
                         rs->dims, rs->rank, es);
    }
    *out = v;
    return HS_OK;
}

hs_status dev_k_transpose(dev_ctx *x, const dev_step *s, dev_val **f,
                          dev_val **out)
{
    const dev_val *a = dev_op(s, f, 0);
    dev_val *v = dev_array_new(x, &s->in->shape);
    if (!v)
        return x->err->status;
    dev_transpose(v->block->data, a->block->data, a->shape->dims,
                  a->shape->rank, s->in->dims, dev_esize(a->shape->dtype));
    *out = v;
    return HS_OK;
}

hs_status dev_k_slice(dev_ctx *x, const dev_step *s, dev_val **f,
                      dev_val **out)
{
    const hs_instruction *in = s->in;
    const dev_val *a = dev_op(s, f, 0);
    const hs_shape *os = a->shape, *rs = &in->shape;
    int es = dev_esize(rs->dtype);
    int64_t ostr[HS_MAX_RANK], sstr[HS_MAX_RANK], dstr[HS_MAX_RANK];
    dev_row_major_strides(os->dims, os->rank, ostr);
    dev_row_major_strides(rs->dims, rs->rank, dstr);
    int64_t off = 0;
    for (int i = 0; i < rs->rank; i++) {
        int64_t st = hs_slice_step(in->slice, rs->dims, i);
        off += in->slice->start[i] * ostr[i];
        sstr[i] = ostr[i] * st;
    }
    dev_val *v = dev_array_new(x, rs);
    if (!v)
        return x->err->status;
    dev_copy_strided(v->block->data, dstr, (const char *)a->block->data +
                                               off * es,
                     sstr, rs->dims, rs->rank, es);
    *out = v;
    return HS_OK;
}

hs_status dev_k_concatenate(dev_ctx *x, const dev_step *s, dev_val **f,
                            dev_val **out)
{
    const hs_instruction *in = s->in;
    const hs_shape *rs = &in->shape;
    int d = in->n_dims > 0 ? (int)in->dims[0] : 0;
    int es = dev_esize(rs->dtype);
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < d; i++)
        outer *= rs->dims[i];
    for (int i = d + 1; i < rs->rank; i++)
        inner *= rs->dims[i];
    dev_val *v = dev_array_new(x, rs);
    if (!v)
        return x->err->status;
    size_t row = (size_t)(rs->dims[d] * inner * es);
    size_t at = 0;
    for (int k = 0; k < s->n_ops; k++) {
        const dev_val *a = dev_op(s, f, k);
        size_t chunk = (size_t)(a->shape->dims[d] * inner * es);
        const char *src = a->block->data;
        char *dst = (char *)v->block->data + at;
        for (int64_t o = 0; o < outer; o++)
            memcpy(dst + (size_t)o * row, src + (size_t)o * chunk, chunk);
        at += chunk;
    }
    *out = v;
    return HS_OK;
}

hs_status dev_k_reverse(dev_ctx *x, const dev_step *s, dev_val **f,
                        dev_val **out)
{
    const hs_instruction *in = s->in;
    const dev_val *a = dev_op(s, f, 0);
    const hs_shape *rs = &in->shape;
    int es = dev_esize(rs->dtype);
    int64_t sstr[HS_MAX_RANK], dstr[HS_MAX_RANK];
    dev_row_major_strides(rs->dims, rs->rank, sstr);
    dev_row_major_strides(rs->dims, rs->rank, dstr);
    int64_t off = 0;
    for (int k = 0; k < in->n_dims; k++) {
        int i = (int)in->dims[k];
        off += (rs->dims[i] - 1) * sstr[i];
        sstr[i] = -sstr[i];
    }
    dev_val *v = dev_array_new(x, rs);
    if (!v)
        return x->err->status;
    dev_copy_strided(v->block->data, dstr,
                     (const char *)a->block->data + off * es, sstr,
                     rs->dims, rs->rank, es);
    *out = v;
    return HS_OK;
}

/* ---- dynamic slices ---------------------------------------------------- */

/* Index k of an integer index operand; an unsigned index above INT64_MAX
 * reads as INT64_MAX (clamped like any index past the end). */
static int64_t read_index(const dev_val *v, int64_t k)
{
    hs_dtype t = v->shape->dtype;
    elem_class c = elem_class_of(t);
    if (c != ELEM_SINT && c != ELEM_UINT)
        return 0;
    int64_t i;
    elem_convert(t, HS_S64, (const char *)v->block->data + k * elem_bytes(t),
                 &i, 1);
    return c == ELEM_UINT && i < 0 ? INT64_MAX : i;
}

/* Start indices from scalar operands first..first+rank-1 (or one rank-1
 * index vector, the old form), clamped as XLA does so that the window
 * stays inside the operand. */
static void start_indices(const dev_step *s, dev_val **f, int first,
                          const hs_shape *os, const int64_t *window,
                          int64_t *start)
{
    bool vector_form = s->n_ops == first + 1 && os->rank > 1;
    for (int i = 0; i < os->rank; i++) {
        int64_t v = 0;
        if (vector_form)
            v = read_index(dev_op(s, f, first), i);
        else if (first + i < s->n_ops)
            v = read_index(dev_op(s, f, first + i), 0);
        int64_t hi = os->dims[i] - window[i];
        start[i] = v < 0 ? 0 : v > hi ? hi : v;
    }
}

hs_status dev_k_dynamic_slice(dev_ctx *x, const dev_step *s, dev_val **f,
                              dev_val **out)
{
    const dev_val *a = dev_op(s, f, 0);
    const hs_shape *os = a->shape, *rs = &s->in->shape;
    int es = dev_esize(rs->dtype);
    int64_t start[HS_MAX_RANK], ostr[HS_MAX_RANK], dstr[HS_MAX_RANK];
    start_indices(s, f, 1, os, rs->dims, start);
    dev_row_major_strides(os->dims, os->rank, ostr);
    dev_row_major_strides(rs->dims, rs->rank, dstr);
    int64_t off = 0;
    for (int i = 0; i < os->rank; i++)
        off += start[i] * ostr[i];
    if (s->aux == 1) {
        /* A contiguous window (plan time: dev_dynamic_slice_is_view). */
        *out = dev_array_view(x, rs, a->block, off * es);
        return *out ? HS_OK : x->err->status;
    }
    dev_val *v = dev_array_new(x, rs);
    if (!v)
        return x->err->status;
    dev_copy_strided(v->block->data, dstr,
                     (const char *)a->block->data + off * es, ostr,
                     rs->dims, rs->rank, es);
    *out = v;
    return HS_OK;
}

hs_status dev_k_dynamic_update_slice(dev_ctx *x, const dev_step *s,
                                     dev_val **f, dev_val **out)
{
    const hs_instruction *in = s->in;
    const dev_val *u = dev_op(s, f, 1);
    const hs_shape *us = u->shape;
    int es = dev_esize(in->shape.dtype);
    int64_t start[HS_MAX_RANK], ostr[HS_MAX_RANK], ustr[HS_MAX_RANK];
    start_indices(s, f, 2, dev_op(s, f, 0)->shape, us->dims, start);
    /* Update in place when nobody else can see the operand's buffer: a
     * loop-carried buffer is then never copied per iteration. */
    dev_val *a = dev_take(s, f, 0);
    dev_val *v;
    if (a->refs == 1 && !dev_block_shared(a->block) &&
        a->block->space == dev_space_index(in->shape.memory_space)) {
        v = a;
        v->shape = &in->shape;
    } else {
        v = dev_array_new(x, &in->shape);
        if (v)
            memcpy(v->block->data, a->block->data, (size_t)v->block->bytes);
        dev_release(x, a);
        if (!v)
            return x->err->status;
    }
    const hs_shape *os = &in->shape;
    dev_row_major_strides(os->dims, os->rank, ostr);
    dev_row_major_strides(us->dims, us->rank, ustr);
    int64_t off = 0;
    for (int i = 0; i < os->rank; i++)
        off += start[i] * ostr[i];
    dev_copy_strided((char *)v->block->data + off * es, ostr,
                     u->block->data, ustr, us->dims, us->rank, es);
    *out = v;
    return HS_OK;
}

/* ---- pad ----------------------------------------------------------------- */

/* The padding as lo, hi, interior per dimension, checked against the
 * shapes by the pad shape rule (again here: the kernel's offsets rely on
 * it, and a module may reach the device without the verifier). */
int64_t *dev_pad_config(dev_ctx *x, const hs_instruction *in)
{
    int rank = in->shape.rank;
    hs_padding pad;
    hs_shape rule;
    hs_error e;
    hs_status st = hs_infer_shape(in, x->arena, &rule, &e);
    if (st == HS_OK && !hs_shape_compatible(&rule, &in->shape)) {
        const char *text = "(missing)";
        for (int k = 0; k < in->n_extra; k++)
            if (strcmp(in->extra[k].key, "padding") == 0)
                text = in->extra[k].value;
        st = hs_error_set(&e, HS_ERR_SHAPE, "padding=%s does not pad its "
                          "operand to its shape", text);
    }
    if (st == HS_OK)
        st = hs_instruction_padding(in, in->operands[0]->shape.rank, &pad,
                                    &e);
    if (st != HS_OK) {
        snprintf(x->err->instruction, sizeof x->err->instruction, "%s",
                 in->name);
        hs_error_set(x->err, HS_ERR_INVALID, "instruction %s: %s", in->name,
                     e.message);
        return NULL;
    }
    int64_t *cfg = hs_arena_alloc(x->arena,
                                  sizeof(int64_t) * 3 * (size_t)(rank + 1));
    if (!cfg) {
        dev_oom(x);
        return NULL;
    }
    for (int d = 0; d < rank; d++) {
        cfg[3 * d] = pad.lo[d];
        cfg[3 * d + 1] = pad.hi[d];
        cfg[3 * d + 2] = pad.interior[d];
    }
    return cfg;
}

hs_status dev_k_pad(dev_ctx *x, const dev_step *s, dev_val **f,
                    dev_val **out)
{
    const int64_t *cfg = s->data;
    const dev_val *a = dev_op(s, f, 0), *pv = dev_op(s, f, 1);
    const hs_shape *os = a->shape, *rs = &s->in->shape;
    int es = dev_esize(rs->dtype), rank = rs->rank;
    dev_val *v = dev_array_new(x, rs);
    if (!v)
        return x->err->status;
    int64_t n = hs_shape_elements(rs);
    char *y = v->block->data;
    for (int64_t i = 0; i < n; i++)
        memcpy(y + i * es, pv->block->data, (size_t)es);
    /* Operand element a lands at lo + a * (interior + 1) when that is
     * inside the result (negative padding crops). */
    int64_t ostr[HS_MAX_RANK], rstr[HS_MAX_RANK], src_str[HS_MAX_RANK],
        dst_str[HS_MAX_RANK], count[HS_MAX_RANK];
    dev_row_major_strides(os->dims, rank, ostr);
    dev_row_major_strides(rs->dims, rank, rstr);
    int64_t src_off = 0, dst_off = 0;
    for (int d = 0; d < rank; d++) {
        int64_t lo = cfg[3 * d], step = cfg[3 * d + 2] + 1;
        int64_t a0 = lo < 0 ? (-lo + step - 1) / step : 0;
        int64_t p0 = lo + a0 * step;
        count[d] = 0;
        if (a0 < os->dims[d] && p0 < rs->dims[d]) {
            count[d] = (rs->dims[d] - p0 + step - 1) / step;
            if (count[d] > os->dims[d] - a0)
                count[d] = os->dims[d] - a0;
        }
        if (count[d] <= 0) {
            *out = v;
            return HS_OK;
        }
        src_off += a0 * ostr[d];
        dst_off += p0 * rstr[d];
        src_str[d] = ostr[d];
        dst_str[d] = rstr[d] * step;
    }
    dev_copy_strided(y + dst_off * es, dst_str,
                     (const char *)a->block->data + src_off * es, src_str,
                     count, rank, es);
    *out = v;
    return HS_OK;
}
