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
 *
 * Element types, as XLA's CPU backend computes them: a dot whose result is
 * a float of at most 32 bits (f32, bf16, f16, f8) converts its operands
 * to f32, multiplies with sgemm and rounds the f32 result once into the
 * result type; an f64 result uses dgemm; an integer result is a plain
 * loop in 64-bit arithmetic that wraps at the result's width.
 */
#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#include "device/device_internal.h"
#include "numerics/element_types.h"

typedef struct operand_view {
    const char *data;
    bool trans;   /* outer dimension has unit stride: [inner, outer] */
    int64_t ld;   /* stride of the non-unit-stride dimension */
    int64_t batch_strides[HS_MAX_RANK]; /* per batch dimension, in order */
    char *owned; /* canonical copy when the order needed one */
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
static bool view_operand(const dev_val *v, int es, const int64_t *batch,
                         int nb,
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
    size_t bytes = (size_t)hs_shape_elements(s) * (size_t)es;
    size_t cap = (bytes + 63) & ~(size_t)63;
    out->owned = aligned_alloc(64, cap ? cap : 64);
    if (!out->owned)
        return false;
    dev_transpose(out->owned, v->block->data, s->dims, s->rank, perm, es);
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

/* C[M,N] = A[M,K] B[K,N] in 64-bit integers (wrapping), each operand a
 * strided view. */
static void dot_int(const operand_view *a, const int64_t *ap,
                    const operand_view *b, const int64_t *bp, int64_t *cp,
                    int64_t M, int64_t N, int64_t K)
{
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            uint64_t acc = 0;
            for (int64_t k = 0; k < K; k++) {
                uint64_t x = (uint64_t)(a->trans ? ap[k * a->ld + m]
                                                 : ap[m * a->ld + k]);
                uint64_t y = (uint64_t)(b->trans ? bp[n * b->ld + k]
                                                 : bp[k * b->ld + n]);
                acc += x * y;
            }
            cp[m * N + n] = (int64_t)acc;
        }
}

/* One batch element: C[M,N] = A B in the compute type ct. */
static void gemm(hs_dtype ct, const operand_view *a, const char *ap,
                 const operand_view *b, const char *bp, char *cp, int64_t M,
                 int64_t N, int64_t K)
{
    if (ct == HS_S64) {
        dot_int(a, (const int64_t *)ap, b, (const int64_t *)bp,
                (int64_t *)cp, M, N, K);
        return;
    }
    bool f64 = ct == HS_F64;
    if (M == 1) {
        /* A row vector times a matrix: gemv, as eager frameworks do.
         * The vector's elements are ld apart when stored as a column. */
        int inc = a->trans ? (int)a->ld : 1;
        enum CBLAS_TRANSPOSE tr = b->trans ? CblasNoTrans : CblasTrans;
        int rows = b->trans ? (int)N : (int)K, cols = b->trans ? (int)K
                                                                : (int)N;
        if (f64)
            cblas_dgemv(CblasRowMajor, tr, rows, cols, 1.0,
                        (const double *)bp, (int)b->ld, (const double *)ap,
                        inc, 0.0, (double *)cp, 1);
        else
            cblas_sgemv(CblasRowMajor, tr, rows, cols, 1.0f,
                        (const float *)bp, (int)b->ld, (const float *)ap,
                        inc, 0.0f, (float *)cp, 1);
        return;
    }
    enum CBLAS_TRANSPOSE ta = a->trans ? CblasTrans : CblasNoTrans;
    enum CBLAS_TRANSPOSE tb = b->trans ? CblasTrans : CblasNoTrans;
    if (f64)
        cblas_dgemm(CblasRowMajor, ta, tb, (int)M, (int)N, (int)K, 1.0,
                    (const double *)ap, (int)a->ld, (const double *)bp,
                    (int)b->ld, 0.0, (double *)cp, (int)N);
    else
        cblas_sgemm(CblasRowMajor, ta, tb, (int)M, (int)N, (int)K, 1.0f,
                    (const float *)ap, (int)a->ld, (const float *)bp,
                    (int)b->ld, 0.0f, (float *)cp, (int)N);
}

/* The type a dot with result type t computes in. */
static hs_dtype compute_type(hs_dtype t)
{
    switch (elem_class_of(t)) {
    case ELEM_F64: return HS_F64;
    case ELEM_SINT: case ELEM_UINT: return HS_S64;
    default: return HS_F32;
    }
}

/* *v itself when it is already of type ct, otherwise a converted copy in
 * *tmp (its data malloc'ed into *owned). NULL when out of memory. */
static const dev_val *as_type(const dev_val *v, hs_dtype ct, dev_val *tmp,
                              dev_block *blk, hs_shape *sh, void **owned)
{
    *owned = NULL;
    if (v->shape->dtype == ct)
        return v;
    int64_t n = hs_shape_elements(v->shape);
    *owned = malloc((size_t)(n > 0 ? n : 1) * (size_t)elem_bytes(ct));
    if (!*owned)
        return NULL;
    elem_convert(v->shape->dtype, ct, v->block->data, *owned, n);
    *sh = *v->shape;
    sh->dtype = ct;
    memset(tmp, 0, sizeof *tmp);
    memset(blk, 0, sizeof *blk);
    blk->data = *owned;
    tmp->shape = sh;
    tmp->block = blk;
    return tmp;
}

hs_status dev_k_dot(dev_ctx *x, const dev_step *s, dev_val **f,
                    dev_val **out)
{
    const hs_instruction *in = s->in;
    const hs_dot_dims *d = in->dot;
    const dev_val *l0 = dev_op(s, f, 0), *r0 = dev_op(s, f, 1);
    hs_dtype t = in->shape.dtype, ct = compute_type(t);
    int es = elem_bytes(ct);
    dev_val lt, rt;
    dev_block lb, rb;
    hs_shape lsh, rsh;
    void *lown, *rown;
    const dev_val *l = as_type(l0, ct, &lt, &lb, &lsh, &lown);
    const dev_val *r = l ? as_type(r0, ct, &rt, &rb, &rsh, &rown) : NULL;
    if (!r) {
        free(lown);
        return dev_oom(x);
    }
    const hs_shape *ls = l->shape, *rs = r->shape;
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
    /* The product in the compute type: the result itself, or a buffer
     * rounded into it once at the end. */
    char *c = v && t != ct ? malloc((size_t)(B * M * N > 0 ? B * M * N : 1) *
                                    (size_t)es)
                           : v ? v->block->data : NULL;
    operand_view a = {0}, b = {0};
    bool ok = v && c;
    if (ok && M * N * B > 0 && K > 0) {
        ok = view_operand(l, es, d->lhs_batch, d->n_lhs_batch, lfree, nlf,
                          d->lhs_contracting, d->n_lhs_contracting, &a);
        ok = ok && view_operand(r, es, d->rhs_batch, d->n_rhs_batch,
                                d->rhs_contracting, d->n_rhs_contracting,
                                rfree, nrf, &b);
    }
    if (!ok) {
        free(lown);
        free(rown);
        free(a.owned);
        if (c && v && c != v->block->data)
            free(c);
        if (v)
            dev_release(x, v);
        return v ? dev_oom(x) : x->err->status;
    }
    if (M * N * B == 0 || K == 0) {
        memset(c, 0, (size_t)(B * M * N) * (size_t)es);
        goto done;
    }
    int nb = d->n_lhs_batch;
    int64_t idx[HS_MAX_RANK] = {0}, aoff = 0, boff = 0;
    for (int64_t k = 0; k < B; k++) {
        gemm(ct, &a, a.data + aoff * es, &b, b.data + boff * es,
             c + k * M * N * es, M, N, K);
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
done:
    free(lown); /* the views may have read the converted operands */
    free(rown);
    if (c != v->block->data) {
        elem_store(t, ct, c, v->block->data, B * M * N);
        free(c);
    }
    *out = v;
    return HS_OK;
}

void hs_device_warm_up(void)
{
    /* Large enough to pass OpenBLAS's small-matrix path, which takes no
     * buffer; sgemm and dgemm share the one it takes. */
    enum { N = 128 };
    float *m = calloc((size_t)3 * N * N, sizeof *m);
    if (!m)
        return;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, N, N, 1.0f, m, N,
                m + N * N, N, 0.0f, m + 2 * N * N, N);
    free(m);
}
