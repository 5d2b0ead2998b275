/*
 * kernels_dot.c - dot with any batch and contracting dimensions on OpenBLAS.
 *
 * The result of a dot is laid out [batch..., lhs free..., rhs free...], i.e.
 * [B, M, N] row-major. An operand whose dimensions already read, in memory
 * order, as [batch, M, K] or [batch, K, M] (lhs; [batch, K, N] or [batch, N,
 * K] for rhs) goes to cblas_sgemm as is, with CblasTrans for the second
 * form: x[M,K] . W[N,K]^T, the linear layer, never copies. Only other
 * orders are transposed into the canonical form first.
 */
#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#include "device/device_internal.h"

typedef struct operand_view {
    const float *data;
    bool trans;   /* stored as [B, inner, outer] instead of [B, outer, inner] */
    float *owned; /* canonical copy when the order needed one */
} operand_view;

static bool contains(const int64_t *v, int n, int64_t d)
{
    for (int i = 0; i < n; i++)
        if (v[i] == d)
            return true;
    return false;
}

/* True when the non-unit dimensions of s, in memory order, are exactly
 * the non-unit ones of the sequence a ++ b ++ c. */
static bool reads_as(const hs_shape *s, const int64_t *a, int na,
                     const int64_t *b, int nb, const int64_t *c, int nc)
{
    int64_t seq[3 * HS_MAX_RANK];
    int n = 0;
    for (int i = 0; i < na; i++)
        seq[n++] = a[i];
    for (int i = 0; i < nb; i++)
        seq[n++] = b[i];
    for (int i = 0; i < nc; i++)
        seq[n++] = c[i];
    int j = 0;
    for (int i = 0; i < s->rank; i++) {
        if (s->dims[i] == 1)
            continue;
        while (j < n && s->dims[seq[j]] == 1)
            j++;
        if (j == n || seq[j] != i)
            return false;
        j++;
    }
    while (j < n && s->dims[seq[j]] == 1)
        j++;
    return j == n;
}

/* batch/outer/inner: dimension lists of the operand. Picks the layout
 * that needs no copy, else transposes to [batch, outer, inner]. */
static bool view_operand(const dev_val *v, const int64_t *batch, int nb,
                         const int64_t *outer, int no, const int64_t *inner,
                         int ni, operand_view *out)
{
    const hs_shape *s = v->shape;
    out->data = v->block->data;
    out->owned = NULL;
    out->trans = false;
    if (reads_as(s, batch, nb, outer, no, inner, ni))
        return true;
    if (reads_as(s, batch, nb, inner, ni, outer, no)) {
        out->trans = true;
        return true;
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
    for (int64_t k = 0; k < B; k++) {
        const float *ap = a.data + k * M * K, *bp = b.data + k * K * N;
        float *cp = c + k * M * N;
        if (M == 1) {
            /* A row vector times a matrix: gemv, as eager frameworks do. */
            if (b.trans)
                cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)N, (int)K, 1.0f,
                            bp, (int)K, ap, 1, 0.0f, cp, 1);
            else
                cblas_sgemv(CblasRowMajor, CblasTrans, (int)K, (int)N, 1.0f,
                            bp, (int)N, ap, 1, 0.0f, cp, 1);
        } else {
            cblas_sgemm(CblasRowMajor, a.trans ? CblasTrans : CblasNoTrans,
                        b.trans ? CblasTrans : CblasNoTrans, (int)M, (int)N,
                        (int)K, 1.0f, ap, a.trans ? (int)M : (int)K, bp,
                        b.trans ? (int)K : (int)N, 0.0f, cp, (int)N);
        }
    }
    free(a.owned);
    free(b.owned);
    *out = v;
    return HS_OK;
}
