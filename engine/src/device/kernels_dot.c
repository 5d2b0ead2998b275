/*
 * kernels_dot.c - dot with any batch and contracting dimensions on OpenBLAS.
 *
 * The result of a dot is laid out [batch..., lhs free..., rhs free...], i.e.
 * [B, M, N] row-major. Each operand is read in place as a strided matrix
 * per batch element: its outer dimensions (M for lhs, K for rhs) and its
 * inner ones (K, N) must each merge into one strided dimension, one of the
 * two with unit stride; the other stride is the leading dimension
 * (CblasTrans when the outer one has unit stride). The batch dimensions
 * may sit anywhere and only move the matrix's start. So x[M,K] . W[N,K]^T,
 * the linear layer, and the attention dots over [B, S, H, D] heads never
 * copy; only operands whose free or contracting dimensions interleave are
 * transposed into the canonical form first.
 */
#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#include "device/device_internal.h"

typedef struct operand_view {
    const float *data;
    bool trans;   /* outer dimension has unit stride: [inner, outer] */
    int64_t ld;   /* stride of the non-unit-stride dimension */
    int64_t batch_strides[HS_MAX_RANK]; /* per batch dimension, in order */
    float *owned; /* canonical copy when the order needed one */
} operand_view;

static bool contains(const int64_t *v, int n, int64_t d)
{
    for (int i = 0; i < n; i++)
        if (v[i] == d)
            return true;
    return false;
}

/* Merges dimensions dims[0..n) (in that order) of a row-major array with
 * strides st into one: *size and *stride; false when they are not one
 * strided line. Unit dimensions are skipped; none at all is size 1. */
static bool merge_dims(const hs_shape *s, const int64_t *st,
                       const int64_t *dims, int n, int64_t *size,
                       int64_t *stride)
{
    *size = 1;
    *stride = 0;
    bool any = false;
    for (int i = 0; i < n; i++) {
        int64_t d = dims[i], len = s->dims[d];
        if (len == 1)
            continue;
        if (any && *stride != st[d] * len)
            return false;
        *size *= len;
        *stride = st[d];
        any = true;
    }
    return true;
}

/* batch/outer/inner: dimension lists of the operand. Picks a strided
 * view that needs no copy, else transposes to [batch, outer, inner]. */
static bool view_operand(const dev_val *v, const int64_t *batch, int nb,
                         const int64_t *outer, int no, const int64_t *inner,
                         int ni, operand_view *out)
{
    const hs_shape *s = v->shape;
    int64_t st[HS_MAX_RANK];
    dev_row_major_strides(s->dims, s->rank, st);
    out->data = v->block->data;
    out->owned = NULL;
    out->trans = false;
    int64_t os, ostr, is, istr;
    if (merge_dims(s, st, outer, no, &os, &ostr) &&
        merge_dims(s, st, inner, ni, &is, &istr)) {
        for (int i = 0; i < nb; i++)
            out->batch_strides[i] = st[batch[i]];
        if (is == 1 || istr == 1) {
            /* [outer, inner] rows of ld >= inner elements. */
            out->ld = os == 1 ? (is > 1 ? is : 1) : ostr;
            if (out->ld >= is)
                return true;
        }
        if (os == 1 || ostr == 1) {
            out->trans = true;
            out->ld = is == 1 ? (os > 1 ? os : 1) : istr;
            if (out->ld >= os)
                return true;
        }
        out->trans = false;
    }
    int64_t perm[HS_MAX_RANK];
    int n = 0;
    for (int i = 0; i < nb; i++)
        perm[n++] = batch[i];
    for (int i = 0; i < no; i++)
        perm[n++] = outer[i];
    for (int i = 0; i < ni; i++)
        perm[n++] = inner[i];
    size_t bytes = (size_t)hs_shape_elements(s) * sizeof(float);
    size_t cap = (bytes + 63) & ~(size_t)63;
    out->owned = aligned_alloc(64, cap ? cap : 64);
    if (!out->owned)
        return false;
    dev_transpose(out->owned, v->block->data, s->dims, s->rank, perm, 4);
    out->data = out->owned;
    /* [batch..., outer, inner] row-major. */
    int64_t os2 = 1, is2 = 1;
    for (int i = 0; i < no; i++)
        os2 *= s->dims[outer[i]];
    for (int i = 0; i < ni; i++)
        is2 *= s->dims[inner[i]];
    int64_t step = os2 * is2;
    for (int i = nb - 1; i >= 0; i--) {
        out->batch_strides[i] = step;
        step *= s->dims[batch[i]];
    }
    out->ld = is2 > 1 ? is2 : 1;
    return true;
}

hs_status dev_k_dot(dev_ctx *x, const dev_step *s, dev_val **f,
                    dev_val **out)
{
    const hs_instruction *in = s->in;
    const hs_dot_dims *d = in->dot;
    const dev_val *l = dev_op(s, f, 0), *r = dev_op(s, f, 1);
    const hs_shape *ls = l->shape, *rs = r->shape;
    if (ls->dtype != HS_F32 || rs->dtype != HS_F32)
        return dev_unsupported(x, in, "a dot that is not f32");
    int64_t lfree[HS_MAX_RANK], rfree[HS_MAX_RANK];
    int nlf = 0, nrf = 0;
    int64_t B = 1, M = 1, N = 1, K = 1;
    for (int i = 0; i < ls->rank; i++)
        if (!contains(d->lhs_batch, d->n_lhs_batch, i) &&
            !contains(d->lhs_contracting, d->n_lhs_contracting, i)) {
            lfree[nlf++] = i;
            M *= ls->dims[i];
        }
    for (int i = 0; i < rs->rank; i++)
        if (!contains(d->rhs_batch, d->n_rhs_batch, i) &&
            !contains(d->rhs_contracting, d->n_rhs_contracting, i)) {
            rfree[nrf++] = i;
            N *= rs->dims[i];
        }
    for (int i = 0; i < d->n_lhs_batch; i++)
        B *= ls->dims[d->lhs_batch[i]];
    for (int i = 0; i < d->n_lhs_contracting; i++)
        K *= ls->dims[d->lhs_contracting[i]];
    dev_val *v = dev_array_new(x, &in->shape);
    if (!v)
        return x->err->status;
    float *c = v->block->data;
    if (M * N * B == 0) {
        *out = v;
        return HS_OK;
    }
    if (K == 0) {
        memset(c, 0, (size_t)(B * M * N) * sizeof(float));
        *out = v;
        return HS_OK;
    }
    operand_view a, b;
    bool ok = view_operand(l, d->lhs_batch, d->n_lhs_batch, lfree, nlf,
                           d->lhs_contracting, d->n_lhs_contracting, &a);
    ok = ok && view_operand(r, d->rhs_batch, d->n_rhs_batch,
                            d->rhs_contracting, d->n_rhs_contracting, rfree,
                            nrf, &b);
    if (!ok) {
        free(a.owned);
        dev_release(x, v);
        return dev_oom(x);
    }
    int nb = d->n_lhs_batch;
    int64_t idx[HS_MAX_RANK] = {0}, aoff = 0, boff = 0;
    for (int64_t k = 0; k < B; k++) {
        const float *ap = a.data + aoff, *bp = b.data + boff;
        float *cp = c + k * M * N;
        if (M == 1) {
            /* A row vector times a matrix: gemv, as eager frameworks do.
             * The vector's elements are ld apart when stored as a column. */
            int inc = a.trans ? (int)a.ld : 1;
            if (b.trans)
                cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)N, (int)K, 1.0f,
                            bp, (int)b.ld, ap, inc, 0.0f, cp, 1);
            else
                cblas_sgemv(CblasRowMajor, CblasTrans, (int)K, (int)N, 1.0f,
                            bp, (int)b.ld, ap, inc, 0.0f, cp, 1);
        } else {
            cblas_sgemm(CblasRowMajor, a.trans ? CblasTrans : CblasNoTrans,
                        b.trans ? CblasTrans : CblasNoTrans, (int)M, (int)N,
                        (int)K, 1.0f, ap, (int)a.ld, bp, (int)b.ld, 0.0f, cp,
                        (int)N);
        }
        /* Next batch element: odometer over the batch dimensions. */
        for (int i = nb - 1; i >= 0; i--) {
            int64_t len = ls->dims[d->lhs_batch[i]];
            aoff += a.batch_strides[i];
            boff += b.batch_strides[i];
            if (++idx[i] < len)
                break;
            aoff -= len * a.batch_strides[i];
            boff -= len * b.batch_strides[i];
            idx[i] = 0;
        }
    }
    free(a.owned);
    free(b.owned);
    *out = v;
    return HS_OK;
}
