/*
 * kernels_conv.c - convolution with XLA's full semantics on OpenBLAS.
 *
 * What a convolution computes (per group t of T = feature_group_count or
 * batch_group_count groups; one of them is 1):
 *
 *   y[n, o, p] = sum over taps k and input features c of the group of
 *                x[n', c, in(p, k)] * w[c, o, k]
 *
 * where in(p, k), per spatial dimension, is the input element that output
 * position p meets at window tap k: position p*stride + k*rhs_dilate -
 * pad_lo of the input dilated by lhs_dilate (no element when it falls
 * outside, in the padding, or between dilated elements), and k runs
 * backwards where the window reverses. One table per spatial dimension
 * holds in(p, k) (-1: no element), so strides, padding of either sign and
 * both dilations cost nothing in the loops below.
 *
 * Layouts are read through strides, so any dim_labels work without
 * transposing the input. The output decides the orientation of the GEMM:
 *
 *   channels last (b01f):  rows = output positions (the whole batch in
 *     one GEMM when it is contiguous), patches [rows, taps x Cg] times
 *     the kernel as [taps x Cg, O] (01io: read in place);
 *   channels first (bf01, fb01): per batch element, the kernel as
 *     [O, Cg x taps] (oi01: read in place) times patches [Cg x taps,
 *     positions], written straight into the output planes, as
 *     PyTorch's CPU convolution does.
 *
 * A 1x1 window with unit stride, no padding or dilation uses the input as
 * its own patch matrix (no im2col). A kernel in another layout is packed
 * once into the one the orientation needs; an output in any other layout
 * is computed channels-last into scratch and transposed. Depthwise
 * convolutions (one input feature per group) skip the GEMM: a direct
 * loop over the taps, vectorised along the features (channels last) or
 * along output rows (channels first).
 *
 * Element types: f32 only for now; other types are refused by name.
 * Results are bit-stable: the same loops and the same OpenBLAS calls in
 * the same order every run.
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/device_internal.h"

/* Patch matrices are built in chunks of at most this many floats (32 MiB),
 * so a large batch never needs a patch matrix of its full size. */
#define PATCH_FLOATS (INT64_C(8) << 20)

typedef struct conv_geom {
    int ns;                          /* spatial dimensions */
    int64_t N, C, O;                 /* input batch, features; outputs */
    int64_t Nout, T, Cg, Ot;         /* output batch, groups, per group */
    bool feature_grouped;            /* groups split features (else batch) */
    int64_t in_sp[HS_MAX_RANK], out_sp[HS_MAX_RANK], k_sp[HS_MAX_RANK];
    int64_t P, Ksp;                  /* output positions, taps */
    int64_t x_b, x_f, x_s[HS_MAX_RANK]; /* input strides */
    int64_t y_b, y_f, y_s[HS_MAX_RANK]; /* output strides */
    int64_t *tab[HS_MAX_RANK];       /* in(p, k): [k * out_sp + p] */
} conv_geom;

static void *scratch(size_t floats)
{
    size_t bytes = floats * sizeof(float);
    size_t cap = (bytes + 63) & ~(size_t)63;
    return aligned_alloc(64, cap ? cap : 64);
}

/* The element of the input each (tap, output position) meets, per
 * dimension. */
static bool build_tables(conv_geom *g, const hs_window *w)
{
    for (int d = 0; d < g->ns; d++) {
        const hs_window_dim *wd = &w->dim[d];
        int64_t K = g->k_sp[d], Od = g->out_sp[d], n = g->in_sp[d];
        int64_t dilated = n > 0 ? (n - 1) * wd->lhs_dilate + 1 : 0;
        int64_t *t = malloc((size_t)(K * Od > 0 ? K * Od : 1) *
                            sizeof *t);
        if (!t)
            return false;
        g->tab[d] = t;
        for (int64_t kw = 0; kw < K; kw++) {
            int64_t k = wd->reversal ? K - 1 - kw : kw;
            for (int64_t o = 0; o < Od; o++) {
                int64_t pos = o * wd->stride + k * wd->rhs_dilate -
                              wd->pad_lo;
                int64_t idx = -1;
                if (pos >= 0 && pos < dilated && pos % wd->lhs_dilate == 0)
                    idx = pos / wd->lhs_dilate;
                t[kw * Od + o] = idx;
            }
        }
    }
    return true;
}

static void free_tables(conv_geom *g)
{
    for (int d = 0; d < g->ns; d++)
        free(g->tab[d]);
}

/* Offset in the input (spatial part) of output position om at tap km, or
 * -1 when it falls into padding or a dilation hole. */
static int64_t tap_offset(const conv_geom *g, const int64_t *om,
                          const int64_t *km)
{
    int64_t off = 0;
    for (int d = 0; d < g->ns; d++) {
        int64_t i = g->tab[d][km[d] * g->out_sp[d] + om[d]];
        if (i < 0)
            return -1;
        off += i * g->x_s[d];
    }
    return off;
}

static void unravel(int64_t flat, const int64_t *dims, int n, int64_t *idx)
{
    for (int d = n - 1; d >= 0; d--) {
        idx[d] = dims[d] ? flat % dims[d] : 0;
        flat = dims[d] ? flat / dims[d] : 0;
    }
}

/* The input batch element and first feature that group t reads for
 * output batch element n. */
static int64_t group_base(const conv_geom *g, int64_t t, int64_t n)
{
    if (g->feature_grouped)
        return n * g->x_b + t * g->Cg * g->x_f;
    return (t * g->Nout + n) * g->x_b;
}

/* Channels-last patches: rows [r0, r1) of the output (flattened batch and
 * positions), columns tap * Cg + c. */
static void patches_rows(const conv_geom *g, const float *x, int64_t t,
                         int64_t r0, int64_t r1, float *pm)
{
    int64_t KK = g->Ksp * g->Cg;
    int64_t om[HS_MAX_RANK], km[HS_MAX_RANK];
    unravel(r0 % g->P, g->out_sp, g->ns, om);
    int64_t n = r0 / g->P;
    for (int64_t r = r0; r < r1; r++) {
        const float *base = x + group_base(g, t, n);
        float *row = pm + (r - r0) * KK;
        memset(km, 0, sizeof km);
        for (int64_t k = 0; k < g->Ksp; k++, dev_index_next(km, g->k_sp, g->ns)) {
            float *dst = row + k * g->Cg;
            int64_t off = tap_offset(g, om, km);
            if (off < 0) {
                memset(dst, 0, (size_t)g->Cg * sizeof *dst);
            } else if (g->x_f == 1) {
                memcpy(dst, base + off, (size_t)g->Cg * sizeof *dst);
            } else {
                const float *src = base + off;
                for (int64_t c = 0; c < g->Cg; c++)
                    dst[c] = src[c * g->x_f];
            }
        }
        dev_index_next(om, g->out_sp, g->ns);
        if (r + 1 < r1 && (r + 1) % g->P == 0)
            n++;
    }
}

/* The valid run [lo, hi) of n table entries e[j * gap] (an entry >= 0
 * names an element), and whether the entries of the run are evenly
 * spaced, first + (j - lo) * step: then a loop over the run needs neither
 * the table nor a branch. */
typedef struct table_run {
    int64_t lo, hi, first, step;
    bool even;
} table_run;

static table_run run_of(const int64_t *e, int64_t n, int64_t gap)
{
    table_run r = {0, n, 0, 1, false};
    while (r.lo < n && e[r.lo * gap] < 0)
        r.lo++;
    while (r.hi > r.lo && e[(r.hi - 1) * gap] < 0)
        r.hi--;
    if (r.lo == r.hi)
        return r;
    r.first = e[r.lo * gap];
    if (r.hi - r.lo > 1)
        r.step = e[(r.lo + 1) * gap] - r.first;
    r.even = true;
    for (int64_t j = r.lo; r.even && j < r.hi; j++)
        r.even = e[j * gap] == r.first + (j - r.lo) * r.step;
    return r;
}

/* The input offset of output position om at tap km along the dimensions
 * before `last`; false when one of them falls outside the input. */
static bool outer_offset(const conv_geom *g, const int64_t *om,
                         const int64_t *km, int last, int64_t *off)
{
    *off = 0;
    for (int d = 0; d < last; d++) {
        int64_t i = g->tab[d][km[d] * g->out_sp[d] + om[d]];
        if (i < 0)
            return false;
        *off += i * g->x_s[d];
    }
    return true;
}

/* patches_cols over whole output planes, a row of the last output
 * dimension at a time: the outer dimensions' offset once per row, and the
 * row itself one memcpy between zeroed edges where the last dimension
 * has unit stride and no dilation of the input (im2col as Caffe and
 * PyTorch write it). */
static void patches_planes(const conv_geom *g, const float *x, int64_t t,
                           int64_t n, float *pm, int64_t ld)
{
    int ns = g->ns, last = ns - 1;
    int64_t OW = g->out_sp[last], rows = OW ? g->P / OW : 0;
    int64_t xs = g->x_s[last];
    const float *base = x + group_base(g, t, n);
    int64_t km[HS_MAX_RANK] = {0};
    for (int64_t k = 0; k < g->Ksp; k++, dev_index_next(km, g->k_sp, ns)) {
        const int64_t *tl = g->tab[last] + km[last] * OW;
        /* The row's valid run, contiguous in the input or not. */
        table_run tr = run_of(tl, OW, 1);
        int64_t lo = tr.lo, hi = tr.hi;
        bool run = tr.even && tr.step == 1 && xs == 1;
        int64_t om[HS_MAX_RANK] = {0};
        for (int64_t r = 0; r < rows; r++, dev_index_next(om, g->out_sp, last)) {
            int64_t oo;
            bool ok = outer_offset(g, om, km, last, &oo);
            for (int64_t c = 0; c < g->Cg; c++) {
                float *dst = pm + (c * g->Ksp + k) * ld + r * OW;
                const float *src = base + c * g->x_f + oo;
                if (!ok || lo >= hi) {
                    memset(dst, 0, (size_t)OW * sizeof *dst);
                } else if (run) {
                    memset(dst, 0, (size_t)lo * sizeof *dst);
                    memcpy(dst + lo, src + tl[lo],
                           (size_t)(hi - lo) * sizeof *dst);
                    memset(dst + hi, 0, (size_t)(OW - hi) * sizeof *dst);
                } else {
                    for (int64_t o = 0; o < OW; o++)
                        dst[o] = tl[o] < 0 ? 0.0f : src[tl[o] * xs];
                }
            }
        }
    }
}

/* The patches of patches_cols transposed: row p of P, column c * Ksp +
 * tap, KK = Cg * Ksp floats per row, a run of the last window dimension
 * at a time. For windows longer than the output's last dimension (a
 * kernel gradient: the window is the forward output, the output the
 * forward kernel's 3x3), where patches_cols would copy rows of 3. */
static void patches_taps(const conv_geom *g, const float *x, int64_t t,
                         int64_t n, float *pt)
{
    int ns = g->ns, last = ns - 1;
    int64_t K = g->k_sp[last], OW = g->out_sp[last], xs = g->x_s[last];
    int64_t KK = g->Ksp * g->Cg, krows = K ? g->Ksp / K : 0;
    const float *base = x + group_base(g, t, n);
    int64_t om[HS_MAX_RANK] = {0};
    for (int64_t p = 0; p < g->P; p++, dev_index_next(om, g->out_sp, ns)) {
        const int64_t *tl = g->tab[last] + om[last];
#define TAP(k) tl[(k) * OW]
        table_run tr = run_of(tl, K, OW);
        int64_t lo = tr.lo, hi = tr.hi;
        bool run = tr.even && tr.step == 1 && xs == 1;
        int64_t kmo[HS_MAX_RANK] = {0};
        for (int64_t kr = 0; kr < krows; kr++, dev_index_next(kmo, g->k_sp, last)) {
            int64_t oo;
            bool ok = outer_offset(g, om, kmo, last, &oo);
            for (int64_t c = 0; c < g->Cg; c++) {
                float *dst = pt + p * KK + c * g->Ksp + kr * K;
                const float *src = base + c * g->x_f + oo;
                if (!ok || lo >= hi) {
                    memset(dst, 0, (size_t)K * sizeof *dst);
                } else if (run) {
                    memset(dst, 0, (size_t)lo * sizeof *dst);
                    memcpy(dst + lo, src + TAP(lo),
                           (size_t)(hi - lo) * sizeof *dst);
                    memset(dst + hi, 0, (size_t)(K - hi) * sizeof *dst);
                } else {
                    for (int64_t k = 0; k < K; k++)
                        dst[k] = TAP(k) < 0 ? 0.0f : src[TAP(k) * xs];
                }
            }
        }
#undef TAP
    }
}

/* The sum of a[i] * b[i] over n floats: eight float lanes (vectorised,
 * a fixed order) added in double. */
static double dot_run(const float *a, const float *b, int64_t n)
{
    float lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++)
            lane[j] += a[i + j] * b[i + j];
    double s = 0;
    for (int j = 0; j < 8; j++)
        s += lane[j];
    for (; i < n; i++)
        s += (double)a[i] * b[i];
    return s;
}

/* Outputs with few features and a window longer than their rows (the
 * kernel gradient of a depthwise convolution: one output feature per
 * batch group, 3x3 positions, a window the size of the forward output):
 * each output is one long dot product of input runs and kernel runs,
 * computed in place instead of through a patch matrix that would be
 * written and read once for a GEMM of one row. Kernel as [O, I, taps]. */
static void conv_dots(const conv_geom *g, const float *x, const float *w,
                      float *y)
{
    int ns = g->ns, last = ns - 1;
    int64_t K = g->k_sp[last], OW = g->out_sp[last], xs = g->x_s[last];
    int64_t krows = K ? g->Ksp / K : 0;
    for (int64_t t = 0; t < g->T; t++)
        for (int64_t n = 0; n < g->Nout; n++) {
            const float *base = x + group_base(g, t, n);
            int64_t om[HS_MAX_RANK] = {0};
            for (int64_t p = 0; p < g->P; p++, dev_index_next(om, g->out_sp, ns)) {
                const int64_t *tl = g->tab[last] + om[last];
                int64_t off_y = n * g->y_b;
                for (int d = 0; d < ns; d++)
                    off_y += om[d] * g->y_s[d];
                for (int64_t o = 0; o < g->Ot; o++) {
                    const float *wo = w + (t * g->Ot + o) * g->Cg * g->Ksp;
                    double acc = 0;
                    int64_t kmo[HS_MAX_RANK] = {0};
                    for (int64_t kr = 0; kr < krows;
                         kr++, dev_index_next(kmo, g->k_sp, last)) {
                        int64_t oo;
                        if (!outer_offset(g, om, kmo, last, &oo))
                            continue;
                        table_run tr = run_of(tl, K, OW);
                        int64_t lo = tr.lo, hi = tr.hi;
                        bool run = tr.even && tr.step == 1 && xs == 1;
                        for (int64_t c = 0; c < g->Cg; c++) {
                            const float *src = base + c * g->x_f + oo;
                            const float *wr = wo + c * g->Ksp + kr * K;
                            if (run && lo < hi) {
                                acc += dot_run(src + tl[lo * OW], wr + lo,
                                               hi - lo);
                                continue;
                            }
                            for (int64_t k = lo; k < hi; k++)
                                if (tl[k * OW] >= 0)
                                    acc += (double)src[tl[k * OW] * xs] *
                                           wr[k];
                        }
                    }
                    y[off_y + (t * g->Ot + o) * g->y_f] = (float)acc;
                }
            }
        }
}

/* Channels-first patches of batch element n: rows c * Ksp + tap (ld
 * floats apart), columns output positions [p0, p1). off (p1 - p0
 * entries) is scratch. */
static void patches_cols(const conv_geom *g, const float *x, int64_t t,
                         int64_t n, int64_t p0, int64_t p1, float *pm,
                         int64_t ld, int64_t *off)
{
    if (p0 == 0 && p1 == g->P && g->ns > 0) {
        patches_planes(g, x, t, n, pm, ld);
        return;
    }
    int64_t pc = p1 - p0;
    const float *base = x + group_base(g, t, n);
    int64_t km[HS_MAX_RANK] = {0}, om[HS_MAX_RANK];
    for (int64_t k = 0; k < g->Ksp; k++, dev_index_next(km, g->k_sp, g->ns)) {
        unravel(p0, g->out_sp, g->ns, om);
        for (int64_t p = 0; p < pc; p++, dev_index_next(om, g->out_sp, g->ns))
            off[p] = tap_offset(g, om, km);
        for (int64_t c = 0; c < g->Cg; c++) {
            float *dst = pm + (c * g->Ksp + k) * ld;
            const float *src = base + c * g->x_f;
            for (int64_t p = 0; p < pc; p++)
                dst[p] = off[p] < 0 ? 0.0f : src[off[p]];
        }
    }
}

/* Strides of a row-major shape, and whether dimensions `dims[0..n)` are
 * contiguous in that order with the last of stride `inner`. */
static bool in_order(const int64_t *st, const int64_t *dims,
                     const int64_t *size, int n, int64_t inner)
{
    int64_t want = inner;
    for (int d = n - 1; d >= 0; d--) {
        if (size[d] != 1 && st[dims[d]] != want)
            return false;
        want *= size[d];
    }
    return true;
}

static bool window_trivial(const hs_window *w)
{
    for (int d = 0; d < w->rank; d++) {
        const hs_window_dim *wd = &w->dim[d];
        if (wd->size != 1 || wd->stride != 1 || wd->pad_lo || wd->pad_hi ||
            wd->lhs_dilate != 1 || wd->rhs_dilate != 1)
            return false;
    }
    return true;
}

/* The kernel's data in the order a path reads it, and the packed copy
 * when one was needed (freed by the caller). */
typedef struct kernel_view {
    const float *w;
    float *owned;
} kernel_view;

/* The kernel with its dimensions in the order perm[0..rank): read in
 * place when it already is, else packed. */
static bool kernel_in(const dev_val *r, const int64_t *perm, kernel_view *kv)
{
    const hs_shape *s = r->shape;
    int64_t st[HS_MAX_RANK], size[HS_MAX_RANK];
    dev_row_major_strides(s->dims, s->rank, st);
    for (int k = 0; k < s->rank; k++)
        size[k] = s->dims[perm[k]];
    kv->w = r->block->data;
    kv->owned = NULL;
    if (in_order(st, perm, size, s->rank, 1))
        return true;
    kv->owned = scratch((size_t)hs_shape_elements(s));
    if (!kv->owned)
        return false;
    dev_transpose(kv->owned, r->block->data, s->dims, s->rank, perm, 4);
    kv->w = kv->owned;
    return true;
}

/* The kernel dimensions in the order a path reads them. */
enum kernel_order { TAPS_I_O, O_I_TAPS, O_TAPS_I };

static bool kernel_as(const dev_val *r, const hs_conv_dims *d,
                      enum kernel_order order, kernel_view *kv)
{
    int64_t perm[HS_MAX_RANK];
    int n = 0;
    if (order != TAPS_I_O)
        perm[n++] = d->rhs_output;
    if (order == O_I_TAPS)
        perm[n++] = d->rhs_input;
    for (int k = 0; k < d->n_spatial; k++)
        perm[n++] = d->rhs_spatial[k];
    if (order != O_I_TAPS)
        perm[n++] = d->rhs_input;
    if (order == TAPS_I_O)
        perm[n++] = d->rhs_output;
    return kernel_in(r, perm, kv);
}

/* Channels last into y with rows of y_row floats (O, or the canonical
 * scratch's O): the whole output batch as rows where contiguous. */
static bool conv_rows(const conv_geom *g, const float *x, const float *w,
                      float *y, int64_t ldy, bool direct)
{
    int64_t KK = g->Ksp * g->Cg, rows = g->Nout * g->P;
    int64_t chunk = KK > 0 ? PATCH_FLOATS / KK : rows;
    if (chunk < 1)
        chunk = 1;
    float *pm = direct ? NULL : scratch((size_t)(chunk < rows ? chunk : rows)
                                        * (size_t)KK);
    if (!direct && !pm)
        return false;
    for (int64_t t = 0; t < g->T; t++) {
        const float *wt = w + t * g->Ot;
        float *yt = y + t * g->Ot;
        if (direct) {
            /* The input rows are the patches: x[n, p, c] with ld C, the
             * group's batch in one GEMM when its images are adjacent. */
            bool whole = g->x_b == g->P * g->C;
            for (int64_t n = 0; n < (whole ? 1 : g->Nout); n++)
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans,
                            (int)(whole ? rows : g->P), (int)g->Ot, (int)KK,
                            1.0f, x + group_base(g, t, n), (int)g->C, wt,
                            (int)g->O, 0.0f, yt + n * g->P * ldy, (int)ldy);
            continue;
        }
        for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
            int64_t r1 = r0 + chunk < rows ? r0 + chunk : rows;
            patches_rows(g, x, t, r0, r1, pm);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans,
                        (int)(r1 - r0), (int)g->Ot, (int)KK, 1.0f, pm,
                        (int)KK, wt, (int)g->O, 0.0f, yt + r0 * ldy,
                        (int)ldy);
        }
    }
    free(pm);
    return true;
}

/* Channels first, straight into y's planes (feature stride y_f). */
static bool conv_planes(const conv_geom *g, const float *x, const float *w,
                        float *y, bool direct)
{
    int64_t KK = g->Ksp * g->Cg;
    int64_t chunk = KK > 0 ? PATCH_FLOATS / KK : g->P;
    if (chunk < 1)
        chunk = 1;
    if (chunk > g->P * g->Nout)
        chunk = g->P * g->Nout;
    float *pm = direct ? NULL : scratch((size_t)(chunk * KK));
    int64_t *off = direct ? NULL : malloc((size_t)chunk * sizeof *off);
    if (!direct && (!pm || !off)) {
        free(pm);
        free(off);
        return false;
    }
    /* Few output positions per batch element (a kernel gradient's
     * output is the kernel: 3x3 positions) make thin GEMMs; when the
     * batch's planes are adjacent (fb01) the columns take several batch
     * elements at once. */
    int64_t nb = g->P > 0 ? chunk / g->P : 0;
    bool batched = !direct && g->y_b == g->P && g->Nout > 1 && nb > 1;
    /* Windows longer than the output rows: patches by window runs. */
    bool by_taps = !direct && nb >= 1 && g->ns > 0 &&
                   g->k_sp[g->ns - 1] > g->out_sp[g->ns - 1];
    for (int64_t t = 0; batched && t < g->T; t++) {
        const float *wt = w + t * g->Ot * KK;
        for (int64_t n0 = 0; n0 < g->Nout; n0 += nb) {
            int64_t n1 = n0 + nb < g->Nout ? n0 + nb : g->Nout;
            int64_t cols = (n1 - n0) * g->P;
            for (int64_t n = n0; n < n1; n++)
                if (by_taps)
                    patches_taps(g, x, t, n, pm + (n - n0) * g->P * KK);
                else
                    patches_cols(g, x, t, n, 0, g->P, pm + (n - n0) * g->P,
                                 cols, off);
            cblas_sgemm(CblasRowMajor, CblasNoTrans,
                        by_taps ? CblasTrans : CblasNoTrans, (int)g->Ot,
                        (int)cols, (int)KK, 1.0f, wt, (int)KK, pm,
                        (int)(by_taps ? KK : cols), 0.0f,
                        y + n0 * g->P + t * g->Ot * g->y_f, (int)g->y_f);
        }
    }
    for (int64_t t = 0; !batched && t < g->T; t++) {
        const float *wt = w + t * g->Ot * KK;
        for (int64_t n = 0; n < g->Nout; n++) {
            float *yt = y + n * g->y_b + t * g->Ot * g->y_f;
            if (direct) {
                /* x[c, p] planes with ld = the feature stride. */
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans,
                            (int)g->Ot, (int)g->P, (int)KK, 1.0f, wt,
                            (int)KK, x + group_base(g, t, n), (int)g->x_f,
                            0.0f, yt, (int)g->y_f);
                continue;
            }
            if (by_taps) {
                patches_taps(g, x, t, n, pm);
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans,
                            (int)g->Ot, (int)g->P, (int)KK, 1.0f, wt,
                            (int)KK, pm, (int)KK, 0.0f, yt, (int)g->y_f);
                continue;
            }
            for (int64_t p0 = 0; p0 < g->P; p0 += chunk) {
                int64_t p1 = p0 + chunk < g->P ? p0 + chunk : g->P;
                patches_cols(g, x, t, n, p0, p1, pm, p1 - p0, off);
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans,
                            (int)g->Ot, (int)(p1 - p0), (int)KK, 1.0f, wt,
                            (int)KK, pm, (int)(p1 - p0), 0.0f, yt + p0,
                            (int)g->y_f);
            }
        }
    }
    free(pm);
    free(off);
    return true;
}

/* Depthwise, channels last: kernel [taps, 1, O] (O = C * multiplier),
 * features contiguous in input and output. */
static void depthwise_rows(const conv_geom *g, const float *x,
                           const float *w, float *y)
{
    int64_t m = g->Ot, O = g->O;
    int64_t om[HS_MAX_RANK] = {0}, km[HS_MAX_RANK];
    for (int64_t r = 0; r < g->Nout * g->P; r++) {
        int64_t n = r / g->P;
        float *acc = y + n * g->y_b + (r % g->P) * O;
        memset(acc, 0, (size_t)O * sizeof *acc);
        memset(km, 0, sizeof km);
        for (int64_t k = 0; k < g->Ksp; k++, dev_index_next(km, g->k_sp, g->ns)) {
            int64_t off = tap_offset(g, om, km);
            if (off < 0)
                continue;
            const float *xi = x + n * g->x_b + off, *wk = w + k * O;
            if (m == 1)
                VLOOP(O, acc[i] += xi[i] * wk[i]);
            else
                for (int64_t o = 0; o < O; o++)
                    acc[o] += xi[o / m] * wk[o];
        }
        dev_index_next(om, g->out_sp, g->ns);
    }
}

/* Depthwise, channels first: kernel [O, 1, taps], output planes with
 * positions contiguous; per tap, whole output rows at once. */
static void depthwise_planes(const conv_geom *g, const float *x,
                             const float *w, float *y)
{
    int ns = g->ns, last = ns - 1;
    int64_t OW = g->out_sp[last];
    int64_t rows = OW ? g->P / OW : 0;
    for (int64_t n = 0; n < g->Nout; n++)
        for (int64_t o = 0; o < g->O; o++) {
            const float *xp = x + n * g->x_b + (o / g->Ot) * g->x_f;
            float *yp = y + n * g->y_b + o * g->y_f;
            memset(yp, 0, (size_t)g->P * sizeof *yp);
            int64_t km[HS_MAX_RANK] = {0};
            for (int64_t k = 0; k < g->Ksp; k++, dev_index_next(km, g->k_sp, ns)) {
                float wv = w[o * g->Ksp + k];
                const int64_t *tl = g->tab[last] + km[last] * OW;
                /* The row's valid run [lo, hi), and its input positions
                 * i0 + j * di when they are evenly spaced (no input
                 * dilation): then a branch-free, vectorised loop. */
                table_run tr = run_of(tl, OW, 1);
                int64_t lo = tr.lo, hi = tr.hi, i0 = tr.first, di = tr.step;
                bool even = tr.even || lo == hi;
                int64_t om[HS_MAX_RANK] = {0};
                for (int64_t r = 0; r < rows; r++, dev_index_next(om, g->out_sp, last)) {
                    /* The outer dimensions' offset, once per row. */
                    int64_t off;
                    if (!outer_offset(g, om, km, last, &off))
                        continue;
                    const float *xr = xp + off;
                    float *yr = yp + r * OW;
                    int64_t xs = g->x_s[last];
                    if (even && di * xs == 1) {
                        const float *xa = xr + i0;
                        float *ya = yr + lo;
                        VLOOP(hi - lo, ya[i] += wv * xa[i]);
                    } else if (even) {
                        const float *xa = xr + i0 * xs;
                        float *ya = yr + lo;
                        int64_t st = di * xs;
                        VLOOP(hi - lo, ya[i] += wv * xa[i * st]);
                    } else {
                        for (int64_t ow = lo; ow < hi; ow++)
                            if (tl[ow] >= 0)
                                yr[ow] += wv * xr[tl[ow] * xs];
                    }
                }
            }
        }
}

/* Transposed convolutions (lhs_dilate > 1, the input gradient of a
 * strided convolution): im2col would multiply mostly inserted zeros.
 * Instead each input element is multiplied by the whole kernel in one
 * GEMM, Z[(o, tap), i] = sum_c w[c, o, tap] x[c, i] (kernel as
 * [O, taps, I]), and Z is added into the outputs each (tap, i) reaches
 * (col2im, as PyTorch's transposed convolution does): the FLOPs of the
 * undilated input. stab[d][tap * in_sp + i] is the output position, -1
 * none. x_planar: the input is [c, i] planes (ld x_f), else [i, c] rows
 * (ld C). */
static bool conv_scatter(const conv_geom *g, const hs_window *w,
                         const float *x, bool x_planar, const float *wp,
                         float *y)
{
    int ns = g->ns, last = ns - 1;
    int64_t Pin = 1;
    int64_t *stab[HS_MAX_RANK] = {0};
    bool ok = true;
    for (int d = 0; d < ns; d++) {
        const hs_window_dim *wd = &w->dim[d];
        int64_t K = g->k_sp[d], n = g->in_sp[d];
        Pin *= n;
        stab[d] = malloc((size_t)(K * n > 0 ? K * n : 1) * sizeof **stab);
        if (!stab[d]) {
            ok = false;
            continue;
        }
        for (int64_t kw = 0; kw < K; kw++) {
            int64_t k = wd->reversal ? K - 1 - kw : kw;
            for (int64_t i = 0; i < n; i++) {
                int64_t at = i * wd->lhs_dilate + wd->pad_lo -
                             k * wd->rhs_dilate;
                int64_t o = at >= 0 && at % wd->stride == 0
                                ? at / wd->stride
                                : -1;
                stab[d][kw * n + i] = o < g->out_sp[d] ? o : -1;
            }
        }
    }
    int64_t rowsz = g->Ot * g->Ksp;
    int64_t chunk = rowsz > 0 ? PATCH_FLOATS / rowsz : Pin;
    if (chunk < 1)
        chunk = 1;
    if (chunk > Pin)
        chunk = Pin;
    float *z = ok ? scratch((size_t)(rowsz * chunk)) : NULL;
    ok = ok && z;
    int64_t IW = ns > 0 ? g->in_sp[last] : 1;
    for (int64_t t = 0; ok && t < g->T; t++)
        for (int64_t n = 0; n < g->Nout; n++) {
            const float *xb = x + group_base(g, t, n);
            float *yb = y + n * g->y_b + t * g->Ot * g->y_f;
            for (int64_t p0 = 0; p0 < Pin; p0 += chunk) {
                int64_t p1 = p0 + chunk < Pin ? p0 + chunk : Pin, pc = p1 - p0;
                if (x_planar)
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans,
                                (int)rowsz, (int)pc, (int)g->Cg, 1.0f,
                                wp + t * rowsz * g->Cg, (int)g->Cg, xb + p0,
                                (int)g->x_f, 0.0f, z, (int)pc);
                else
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans,
                                (int)rowsz, (int)pc, (int)g->Cg, 1.0f,
                                wp + t * rowsz * g->Cg, (int)g->Cg,
                                xb + p0 * g->C, (int)g->C, 0.0f, z, (int)pc);
                /* col2im: runs of the last input dimension at a time */
                for (int64_t o = 0; o < g->Ot; o++) {
                    int64_t km[HS_MAX_RANK] = {0};
                    for (int64_t k = 0; k < g->Ksp;
                         k++, dev_index_next(km, g->k_sp, ns)) {
                        const float *zr = z + (o * g->Ksp + k) * pc;
                        const int64_t *sl = stab[last] + km[last] * IW;
                        /* The row's valid run [lo, hi); when its outputs
                         * are evenly spaced (q0 + j * dq), whole rows are
                         * one branch-free strided loop. */
                        table_run tr = run_of(sl, IW, 1);
                        int64_t lo = tr.lo, hi = tr.hi, q0 = tr.first,
                                dq = tr.step;
                        bool even = tr.even;
                        int64_t im[HS_MAX_RANK];
                        unravel(p0, g->in_sp, ns, im);
                        for (int64_t i = p0; i < p1;) {
                            int64_t off = o * g->y_f;
                            bool hit = true;
                            for (int d = 0; d < last; d++) {
                                int64_t q = stab[d][km[d] * g->in_sp[d] +
                                                    im[d]];
                                hit = hit && q >= 0;
                                off += q * g->y_s[d];
                            }
                            int64_t run = IW - im[last];
                            if (run > p1 - i)
                                run = p1 - i;
                            if (hit && even && run == IW) {
                                float *ya = yb + off + q0 * g->y_s[last];
                                const float *za = zr + (i - p0) + lo;
                                int64_t st = dq * g->y_s[last];
                                VLOOP(hi - lo, ya[i * st] += za[i]);
                            } else if (hit) {
                                for (int64_t j = 0; j < run; j++) {
                                    int64_t q = sl[im[last] + j];
                                    if (q >= 0)
                                        yb[off + q * g->y_s[last]] +=
                                            zr[i - p0 + j];
                                }
                            }
                            i += run;
                            im[last] += run - 1;
                            dev_index_next(im, g->in_sp, ns);
                        }
                    }
                }
            }
        }
    free(z);
    for (int d = 0; d < ns; d++)
        free(stab[d]);
    return ok;
}

hs_status dev_k_convolution(dev_ctx *x, const dev_step *s, dev_val **f,
                            dev_val **out)
{
    const hs_instruction *in = s->in;
    const dev_val *l = dev_op(s, f, 0), *r = dev_op(s, f, 1);
    if (!l->elems && !r->elems && in->shape.dtype != HS_TUPLE &&
        dev_step_is_narrow_float(s, f))
        return dev_run_in_f32(x, s, f, out, dev_k_convolution);
    if (l->shape->dtype != HS_F32 || r->shape->dtype != HS_F32 ||
        in->shape.dtype != HS_F32) {
        char what[128];
        snprintf(what, sizeof what, "a convolution of %s and %s into %s "
                 "(convolutions run at f32, f16, bf16 and the f8 types)",
                 hs_dtype_name(l->shape->dtype), hs_dtype_name(r->shape->dtype),
                 hs_dtype_name(in->shape.dtype));
        return dev_unsupported(x, in, what);
    }
    hs_conv c;
    if (hs_instruction_conv(in, &c, x->err) != HS_OK)
        return x->err->status;
    const hs_conv_dims *d = &c.dims;
    const hs_shape *ls = l->shape, *rs = r->shape, *os = &in->shape;
    conv_geom g;
    memset(&g, 0, sizeof g);
    g.ns = d->n_spatial;
    g.N = ls->dims[d->lhs_batch];
    g.C = ls->dims[d->lhs_feature];
    g.O = rs->dims[d->rhs_output];
    g.feature_grouped = c.batch_groups == 1;
    g.T = g.feature_grouped ? c.feature_groups : c.batch_groups;
    g.Cg = rs->dims[d->rhs_input];
    g.Ot = g.O / g.T;
    g.Nout = os->dims[d->out_batch];
    g.P = 1;
    g.Ksp = 1;
    int64_t lst[HS_MAX_RANK], ost[HS_MAX_RANK];
    dev_row_major_strides(ls->dims, ls->rank, lst);
    dev_row_major_strides(os->dims, os->rank, ost);
    g.x_b = lst[d->lhs_batch];
    g.x_f = lst[d->lhs_feature];
    g.y_b = ost[d->out_batch];
    g.y_f = ost[d->out_feature];
    for (int k = 0; k < g.ns; k++) {
        g.in_sp[k] = ls->dims[d->lhs_spatial[k]];
        g.out_sp[k] = os->dims[d->out_spatial[k]];
        g.k_sp[k] = rs->dims[d->rhs_spatial[k]];
        g.x_s[k] = lst[d->lhs_spatial[k]];
        g.y_s[k] = ost[d->out_spatial[k]];
        g.P *= g.out_sp[k];
        g.Ksp *= g.k_sp[k];
    }
    dev_val *v = dev_array_new(x, os);
    if (!v)
        return x->err->status;
    float *y = v->block->data;
    int64_t total = hs_shape_elements(os);
    if (total == 0) {
        *out = v;
        return HS_OK;
    }
    if (g.Cg == 0 || g.Ksp == 0) {
        memset(y, 0, (size_t)total * sizeof *y);
        *out = v;
        return HS_OK;
    }
    const float *xd = l->block->data;
    bool ok = build_tables(&g, &c.window);
    /* Which orientation writes y in place. */
    bool rows_in_place = g.y_f == 1 &&
                         in_order(ost, d->out_spatial, g.out_sp, g.ns, g.O) &&
                         g.y_b == g.P * g.O;
    bool planes_in_place = !rows_in_place &&
                           in_order(ost, d->out_spatial, g.out_sp, g.ns, 1) &&
                           g.y_f >= g.P;
    bool depthwise = g.feature_grouped && g.Cg == 1 && g.T > 1 &&
                     !window_trivial(&c.window);
    bool direct = window_trivial(&c.window);
    kernel_view kv = {0};
    float *canon = NULL;
    bool dilated_input = false;
    for (int k = 0; k < g.ns; k++)
        dilated_input = dilated_input || c.window.dim[k].lhs_dilate > 1;
    bool x_planar = in_order(lst, d->lhs_spatial, g.in_sp, g.ns, 1) &&
                    g.x_f >= hs_shape_elements(ls) / (g.N * g.C > 0
                                                          ? g.N * g.C
                                                          : 1);
    bool x_rows = g.x_f == 1 &&
                  in_order(lst, d->lhs_spatial, g.in_sp, g.ns, g.C);
    if (ok && dilated_input && g.ns > 0 && (x_planar || x_rows) &&
        !(depthwise && (planes_in_place || g.x_f == 1))) {
        memset(y, 0, (size_t)total * sizeof *y);
        ok = kernel_as(r, d, O_TAPS_I, &kv) &&
             conv_scatter(&g, &c.window, xd, x_planar, kv.w, y);
    } else if (ok && planes_in_place) {
        ok = kernel_as(r, d, O_I_TAPS, &kv);
        if (ok && depthwise) {
            depthwise_planes(&g, xd, kv.w, y);
        } else if (ok && g.Ot <= 2 && g.ns > 0 &&
                   g.k_sp[g.ns - 1] > g.out_sp[g.ns - 1]) {
            conv_dots(&g, xd, kv.w, y);
        } else if (ok) {
            bool dir = direct && in_order(lst, d->lhs_spatial, g.in_sp, g.ns,
                                          1) && g.x_f >= g.P;
            ok = conv_planes(&g, xd, kv.w, y, dir);
        }
    } else if (ok) {
        ok = kernel_as(r, d, TAPS_I_O, &kv);
        float *yc = y;
        conv_geom gc = g;
        if (ok && !rows_in_place) {
            /* Canonical [b, spatial..., f] scratch, transposed at the end. */
            yc = canon = scratch((size_t)total);
            ok = canon != NULL;
            gc.y_b = g.P * g.O;
            gc.y_f = 1;
        }
        bool dir = direct && g.x_f == 1 &&
                   in_order(lst, d->lhs_spatial, g.in_sp, g.ns, g.C);
        if (ok && depthwise && g.x_f == 1)
            depthwise_rows(&gc, xd, kv.w, yc);
        else if (ok)
            ok = conv_rows(&gc, xd, kv.w, yc, g.O, dir);
        if (ok && canon) {
            int64_t cdims[HS_MAX_RANK], perm[HS_MAX_RANK];
            cdims[0] = g.Nout;
            cdims[g.ns + 1] = g.O;
            perm[d->out_batch] = 0;
            perm[d->out_feature] = g.ns + 1;
            for (int k = 0; k < g.ns; k++) {
                cdims[k + 1] = g.out_sp[k];
                perm[d->out_spatial[k]] = k + 1;
            }
            dev_transpose(y, canon, cdims, g.ns + 2, perm, 4);
        }
    }
    free(canon);
    free(kv.owned);
    free_tables(&g);
    if (!ok) {
        dev_release(x, v);
        return dev_oom(x);
    }
    *out = v;
    return HS_OK;
}
