/*
 * kernels_window.c - reduce-window and select-and-scatter.
 *
 * Both walk the windows of an operand (window={...}: size, stride,
 * padding, base and window dilation). For each output position the
 * window's elements are listed as offsets into the operand, in window
 * order (row-major over the window's dimensions), skipping positions that
 * fall into the padding or between dilated base elements: as XLA's
 * evaluator and CPU emitter do, a window starts from the init value and
 * reduces only the operand elements it covers (for an init value that is
 * the reducer's identity this is the same as padding with it).
 *
 * Fast paths (f32): a reduce-window whose reducer is add, maximum or
 * minimum of its two parameters; a select-and-scatter whose select is a
 * compare GE, GT, LE or LT of its parameters and whose scatter is add.
 * Anything else interprets the computations once per element, for any
 * element type (values are copied by element size) and for variadic
 * reduce-window.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "device/device_internal.h"
#include "numerics/element_ops.h"

/* The windows of one operand: for each dimension d and output coordinate
 * o, the operand offsets (element index * row-major stride) that window
 * position o covers along d, in window order: off[d][start[d][o] ..
 * start[d][o + 1]). */
typedef struct win_geom {
    int rank;
    int64_t out_dims[HS_MAX_RANK];
    int64_t *start[HS_MAX_RANK], *off[HS_MAX_RANK];
    int64_t max_window; /* elements of the largest window */
    int64_t *buf;       /* room for one window's offsets */
    int64_t *steps;     /* and another */
    bool empty;         /* no window positions: nothing to walk */
    void *mem;
} win_geom;

static void geom_free(win_geom *g) { free(g->mem); }

static hs_status geom_build(dev_ctx *x, const hs_instruction *in,
                            const hs_shape *of, win_geom *g)
{
    memset(g, 0, sizeof *g);
    hs_window w;
    hs_status st = hs_instruction_window(in, of->rank, &w, x->err);
    if (st != HS_OK)
        return st;
    /* At least two dimensions (leading ones of size 1 with a window of
     * one), so that the fast loops always walk [outer..., rows, columns]. */
    hs_shape view = *of;
    int lead = of->rank < 2 ? 2 - of->rank : 0;
    if (lead) {
        hs_window_dim one = {.size = 1, .stride = 1, .lhs_dilate = 1,
                             .rhs_dilate = 1};
        for (int d = of->rank - 1; d >= 0; d--) {
            view.dims[d + lead] = of->dims[d];
            w.dim[d + lead] = w.dim[d];
        }
        for (int d = 0; d < lead; d++) {
            view.dims[d] = 1;
            w.dim[d] = one;
        }
        view.rank = 2;
        of = &view;
    }
    g->rank = of->rank;
    int64_t strides[HS_MAX_RANK];
    dev_row_major_strides(of->dims, of->rank, strides);
    int64_t words = 0;
    g->max_window = 1;
    for (int d = 0; d < of->rank; d++) {
        g->out_dims[d] = hs_window_output_extent(&w.dim[d], of->dims[d]);
        g->empty |= g->out_dims[d] == 0;
        words = hs_sat_add(words, hs_sat_add(hs_sat_add(g->out_dims[d], 1),
                                             hs_sat_mul(g->out_dims[d],
                                                        w.dim[d].size)));
        g->max_window = hs_sat_mul(g->max_window, w.dim[d].size);
    }
    /* An empty result (a zero-sized or too small operand) walks nothing;
     * the tables of a non-empty one are a few words per output position
     * along each dimension and per window element. */
    if (g->empty)
        return HS_OK;
    words = hs_sat_add(words, hs_sat_mul(2, g->max_window));
    if (words > ((int64_t)1 << 32))
        return dev_unsupported(x, in, "a window whose index tables need "
                                      "more than 2^32 entries");
    g->mem = malloc((size_t)words * sizeof(int64_t));
    if (!g->mem)
        return dev_oom(x);
    int64_t *p = g->mem;
    g->buf = p + words - 2 * g->max_window;
    g->steps = g->buf + g->max_window;
    for (int d = 0; d < of->rank; d++) {
        const hs_window_dim *wd = &w.dim[d];
        g->start[d] = p;
        p += g->out_dims[d] + 1;
        g->off[d] = p;
        int64_t n = 0;
        for (int64_t o = 0; o < g->out_dims[d]; o++) {
            g->start[d][o] = n;
            for (int64_t k = 0; k < wd->size; k++) {
                /* position in the padded, base-dilated operand */
                /* saturating: hostile strides and paddings stay defined */
                int64_t lo = wd->pad_lo == INT64_MIN ? INT64_MAX
                                                     : -wd->pad_lo;
                int64_t pos = hs_sat_add(
                    hs_sat_add(hs_sat_mul(o, wd->stride),
                               hs_sat_mul(k, wd->rhs_dilate)),
                    lo);
                if (pos < 0 || pos % wd->lhs_dilate != 0)
                    continue;
                int64_t e = pos / wd->lhs_dilate;
                if (e < of->dims[d])
                    p[n++] = e * strides[d];
            }
        }
        g->start[d][g->out_dims[d]] = n;
        p += g->out_dims[d] * wd->size;
    }
    return HS_OK;
}

/* The offsets of the window at output coordinates oc into buf (room for
 * g->max_window), in window order; returns how many. */
static int64_t window_offsets(const win_geom *g, const int64_t *oc,
                              int64_t *buf)
{
    const int64_t *lo[HS_MAX_RANK];
    int64_t cnt[HS_MAX_RANK], k[HS_MAX_RANK] = {0};
    int rank = g->rank;
    for (int d = 0; d < rank; d++) {
        lo[d] = g->off[d] + g->start[d][oc[d]];
        cnt[d] = g->start[d][oc[d] + 1] - g->start[d][oc[d]];
        if (cnt[d] == 0)
            return 0;
    }
    if (rank == 0) {
        buf[0] = 0;
        return 1;
    }
    int64_t n = 0;
    for (;;) {
        int64_t base = 0;
        for (int d = 0; d < rank - 1; d++)
            base += lo[d][k[d]];
        const int64_t *last = lo[rank - 1];
        for (int64_t j = 0; j < cnt[rank - 1]; j++)
            buf[n++] = base + last[j];
        int d = rank - 2;
        for (; d >= 0; d--) {
            if (++k[d] < cnt[d])
                break;
            k[d] = 0;
        }
        if (d < 0)
            return n;
    }
}

static int64_t count_of(const int64_t *dims, int rank)
{
    int64_t n = 1;
    for (int d = 0; d < rank; d++)
        n = hs_sat_mul(n, dims[d]);
    return n;
}

/* ---- reduce-window ----------------------------------------------------- */

/* The fast loops walk the outputs as [outer..., rows, columns]: for each
 * coordinate of the outer dimensions the offsets their windows cover are
 * listed once (one offset, 0, for the batch and feature dimensions of a
 * pooling window), then every output of the plane combines
 * outer offsets x its rows x its columns. */
typedef struct plane_walk {
    int64_t oc[HS_MAX_RANK]; /* outer coordinate */
    int64_t n_outer;         /* outer output coordinates */
    int64_t *obuf;           /* the outer window's offsets */
} plane_walk;

/* Lists the outer window's offsets for the coordinate in w->oc (the two
 * last coordinates are 0) into w->obuf; returns how many. */
static int64_t outer_offsets(const win_geom *g, plane_walk *w)
{
    win_geom outer = *g;
    outer.rank = g->rank - 2;
    if (outer.rank)
        return window_offsets(&outer, w->oc, w->obuf);
    w->obuf[0] = 0;
    return 1;
}

/* max and min without a branch per element (random data mispredicts
 * half of them): a NaN is tracked apart and wins at the end, as XLA's
 * NaN-propagating maximum and minimum give. Each row of the window is
 * reduced on its own first, so rows and neighbouring outputs are
 * independent chains the processor overlaps. */
/* ties (-0 and +0) go to the later element, as binary_f32's maximum
 * and minimum give them in the interpreted reducer */
#define PICK_MAX(acc, v) ((acc) > (v) ? (acc) : (v))
#define PICK_MIN(acc, v) ((acc) < (v) ? (acc) : (v))
#define PICK_ADD(acc, v) ((acc) + (v))

#define RW_PLANE(PICK, IDENT, TRACK_NAN)                                   \
    for (int64_t q = 0; q < w.n_outer; q++) {                              \
        int64_t no = outer_offsets(g, &w);                                 \
        for (int64_t r = 0; r < rows; r++) {                               \
            const int64_t *ro = g->off[hd] + g->start[hd][r];              \
            int64_t nr = g->start[hd][r + 1] - g->start[hd][r];            \
            for (int64_t c = 0; c < cols; c++) {                           \
                const int64_t *co = g->off[wd] + g->start[wd][c];          \
                int64_t nc = g->start[wd][c + 1] - g->start[wd][c];        \
                float acc = init;                                          \
                int nan = 0;                                               \
                for (int64_t o = 0; o < no; o++)                           \
                    for (int64_t i = 0; i < nr; i++) {                     \
                        const float *row = a + w.obuf[o] + ro[i];          \
                        float part = IDENT;                                \
                        for (int64_t j = 0; j < nc; j++) {                 \
                            float v = row[co[j]];                          \
                            part = PICK(part, v);                          \
                            if (TRACK_NAN)                                 \
                                nan |= v != v;                             \
                        }                                                  \
                        acc = PICK(acc, part);                             \
                    }                                                      \
                *y++ = TRACK_NAN && (nan | (init != init)) ? NAN : acc;    \
            }                                                              \
        }                                                                  \
        dev_index_next(w.oc, g->out_dims, g->rank - 2);                        \
    }

static void reduce_window_f32(hs_opcode op, const win_geom *g,
                              const float *restrict a, float init,
                              float *restrict y, int64_t *buf)
{
    int hd = g->rank - 2, wd = g->rank - 1;
    int64_t rows = g->out_dims[hd], cols = g->out_dims[wd];
    plane_walk w = {.n_outer = count_of(g->out_dims, g->rank - 2),
                    .obuf = buf};
    switch (op) {
    case HS_OP_ADD: RW_PLANE(PICK_ADD, -0.0f, 0) break;
    case HS_OP_MAXIMUM: RW_PLANE(PICK_MAX, -INFINITY, 1) break;
    default: RW_PLANE(PICK_MIN, INFINITY, 1) break;
    }
}

/* Applies computation p to (acc[0..n), elements at a[k] + off) and leaves
 * the new accumulators in acc (references are consumed and replaced). */
static hs_status apply_reducer(dev_ctx *x, const hs_instruction *in,
                               dev_plan *p, int n, dev_val **acc,
                               const char *const *a, int64_t off)
{
    dev_val *args[2 * HS_MAX_RANK * 4];
    for (int k = 0; k < n; k++) {
        args[k] = acc[k];
        acc[k] = NULL;
    }
    for (int k = 0; k < n; k++) {
        const hs_shape *es = &p->comp->params[n + k]->shape;
        args[n + k] = dev_scalar_of(x, es, a[k] + off * dev_esize(es->dtype));
        if (!args[n + k]) {
            for (int j = 0; j < n + k; j++)
                dev_release(x, args[j]);
            return x->err->status;
        }
    }
    dev_val *res = NULL;
    hs_status st = dev_eval(x, p, args, 2 * n, &res);
    if (st)
        return st;
    if (n == 1 && !res->elems) {
        acc[0] = res;
        return HS_OK;
    }
    if (!res->elems || res->n != n) {
        dev_release(x, res);
        return dev_unsupported(x, in, "a reducer that does not return its "
                                      "accumulators");
    }
    for (int k = 0; k < n; k++) {
        acc[k] = res->elems[k];
        dev_ref(acc[k]);
    }
    dev_release(x, res);
    return HS_OK;
}

/* Any reducer, any element type, n inputs: the reducer interpreted once
 * per covered element. */
static hs_status reduce_window_interpreted(dev_ctx *x, const dev_step *s,
                                           dev_val **f, const win_geom *g,
                                           dev_val *const *outs,
                                           int64_t *buf)
{
    int n = s->n_ops / 2;
    const char *a[HS_MAX_RANK * 4];
    for (int k = 0; k < n; k++)
        a[k] = dev_op(s, f, k)->block->data;
    int64_t oc[HS_MAX_RANK] = {0};
    int64_t n_out = count_of(g->out_dims, g->rank);
    hs_status st = HS_OK;
    for (int64_t o = 0; o < n_out && !st; o++) {
        dev_val *acc[HS_MAX_RANK * 4];
        for (int k = 0; k < n; k++) {
            acc[k] = dev_op(s, f, n + k);
            dev_ref(acc[k]);
        }
        int64_t cnt = window_offsets(g, oc, buf);
        for (int64_t j = 0; j < cnt && !st; j++)
            st = apply_reducer(x, s->in, s->callee[0], n, acc, a, buf[j]);
        for (int k = 0; k < n; k++) {
            if (!st) {
                int es = dev_esize(outs[k]->shape->dtype);
                memcpy((char *)outs[k]->block->data + o * es,
                       acc[k]->block->data, (size_t)es);
            }
            if (acc[k])
                dev_release(x, acc[k]);
        }
        dev_index_next(oc, g->out_dims, g->rank);
    }
    return st;
}

hs_status dev_k_reduce_window(dev_ctx *x, const dev_step *s, dev_val **f,
                              dev_val **out)
{
    const hs_instruction *in = s->in;
    int n = s->n_ops / 2;
    if (n < 1 || s->n_ops % 2 || n > HS_MAX_RANK * 4)
        return dev_unsupported(x, in, "a reduce-window without matching "
                                      "inputs and init values (or more than "
                                      "32)");
    const dev_val *a0 = dev_op(s, f, 0);
    for (int k = 0; k < n; k++) {
        const dev_val *v = dev_op(s, f, k), *iv = dev_op(s, f, n + k);
        if (v->elems || iv->elems || iv->shape->dtype != v->shape->dtype ||
            hs_shape_elements(iv->shape) != 1)
            return dev_unsupported(x, in, "a reduce-window whose init "
                                          "values are not scalars of its "
                                          "inputs' types");
    }
    win_geom g;
    hs_status st = geom_build(x, in, a0->shape, &g);
    if (st)
        return st;
    dev_val *res = n == 1 ? dev_array_new(x, &in->shape)
                          : dev_tuple_new(x, &in->shape, n);
    dev_val *outs[HS_MAX_RANK * 4];
    if (!res)
        st = x->err->status;
    for (int k = 0; !st && n > 1 && k < n; k++)
        if (!(res->elems[k] = dev_array_new(x, &in->shape.elems[k])))
            st = x->err->status;
    if (!st) {
        for (int k = 0; k < n; k++)
            outs[k] = n == 1 ? res : res->elems[k];
        int fast = n == 1 ? dev_reducer_fast_op(in->called[0]) : -1;
        if (g.empty)
            ; /* no output elements */
        else if (a0->shape->dtype == HS_F32 &&
            (fast == HS_OP_ADD || fast == HS_OP_MAXIMUM ||
             fast == HS_OP_MINIMUM))
            reduce_window_f32((hs_opcode)fast, &g, a0->block->data,
                              *(const float *)dev_op(s, f, 1)->block->data,
                              res->block->data, g.buf);
        else
            st = reduce_window_interpreted(x, s, f, &g, outs, g.buf);
    }
    geom_free(&g);
    if (st) {
        if (res)
            dev_release(x, res);
        return st;
    }
    *out = res;
    return HS_OK;
}

/* ---- select-and-scatter -------------------------------------------------- */

/* The direction of a select computation (p0, p1) -> compare(p0, p1), or
 * HS_DIR_NONE. */
static hs_direction select_direction(const hs_computation *c)
{
    const hs_instruction *r = c->root;
    if (c->n_params != 2 || !r || r->opcode != HS_OP_COMPARE ||
        r->n_operands != 2 || r->operands[0] != c->params[0] ||
        r->operands[1] != c->params[1] ||
        (r->compare_type && strcmp(r->compare_type, "FLOAT") != 0))
        return HS_DIR_NONE;
    return r->direction;
}

/* Whether select(a, b) keeps a (the element selected so far). NaN never
 * compares true, so a NaN is replaced by the next element, as XLA's
 * compare-based select does. */
#define KEEP_GE(a, b) ((a) >= (b))
#define KEEP_GT(a, b) ((a) > (b))
#define KEEP_LE(a, b) ((a) <= (b))
#define KEEP_LT(a, b) ((a) < (b))

typedef float sas_v4f __attribute__((vector_size(16)));
typedef int32_t sas_v4i __attribute__((vector_size(16)));

/* Whether outputs c .. c + 3 of a row see the same window shifted: as
 * many columns each, lane l's offsets lane 0's plus d[l] (the interior of
 * a plane). They then select side by side in four vector lanes. */
static bool four_shifted(const win_geom *g, int wd, int64_t c, int64_t cols,
                         int64_t *d)
{
    if (c + 4 > cols || g->max_window > INT32_MAX)
        return false;
    const int64_t *st = g->start[wd] + c;
    int64_t nc = st[1] - st[0];
    if (nc <= 0)
        return false;
    const int64_t *c0 = g->off[wd] + st[0];
    for (int l = 1; l < 4; l++) {
        if (st[l + 1] - st[l] != nc)
            return false;
        const int64_t *cl = g->off[wd] + st[l];
        d[l] = cl[0] - c0[0];
        for (int64_t j = 1; j < nc; j++)
            if (cl[j] - c0[j] != d[l])
                return false;
    }
    return true;
}

/* Selection without a branch per element: the choice is a conditional
 * move. In a plane's interior four neighbouring outputs run in vector
 * lanes, each lane the same sequential walk of its window (ties and NaNs
 * resolve as in one walk) keeping the value and step of its choice; the
 * four scatters follow in source order. */
#define SAS_PLANE(KEEP)                                                    \
    for (int64_t q = 0; q < w.n_outer; q++) {                              \
        int64_t no = outer_offsets(g, &w);                                 \
        for (int64_t r = 0; r < rows; r++) {                               \
            const int64_t *ro = g->off[hd] + g->start[hd][r];              \
            int64_t nr = g->start[hd][r + 1] - g->start[hd][r];            \
            for (int64_t c = 0; c < cols; c++, src++) {                    \
                const int64_t *co = g->off[wd] + g->start[wd][c];          \
                int64_t nc = g->start[wd][c + 1] - g->start[wd][c];        \
                if (no == 0 || nr == 0 || nc == 0)                         \
                    continue;                                              \
                int64_t d[4] = {0};                                        \
                if (four_shifted(g, wd, c, cols, d)) {                     \
                    int64_t at0 = w.obuf[0] + ro[0] + co[0];               \
                    sas_v4f bv = {a[at0], a[at0 + d[1]], a[at0 + d[2]],    \
                                  a[at0 + d[3]]};                          \
                    sas_v4i bk = {0, 0, 0, 0};                             \
                    int32_t k = 0;                                         \
                    for (int64_t o = 0; o < no; o++)                       \
                        for (int64_t i = 0; i < nr; i++) {                 \
                            int64_t base = w.obuf[o] + ro[i];              \
                            for (int64_t j = 0; j < nc; j++, k++) {        \
                                int64_t at = base + co[j];                 \
                                g->steps[k] = at;                          \
                                sas_v4f v = {a[at], a[at + d[1]],          \
                                             a[at + d[2]], a[at + d[3]]};  \
                                sas_v4i keep = KEEP(bv, v);                \
                                sas_v4i kv = {k, k, k, k};                 \
                                bk = (bk & keep) | (kv & ~keep);           \
                                bv = (sas_v4f)(((sas_v4i)bv & keep) |      \
                                               ((sas_v4i)v & ~keep));      \
                            }                                              \
                        }                                                  \
                    for (int l = 0; l < 4; l++)                            \
                        y[g->steps[bk[l]] + d[l]] += src[l];               \
                    c += 3, src += 3;                                      \
                    continue;                                              \
                }                                                          \
                /* The first element selects itself (select(e, e) keeps  \
                 * it or takes it, the same element either way). */      \
                int64_t best = w.obuf[0] + ro[0] + co[0];                  \
                for (int64_t o = 0; o < no; o++)                           \
                    for (int64_t i = 0; i < nr; i++) {                     \
                        int64_t base = w.obuf[o] + ro[i];                  \
                        for (int64_t j = 0; j < nc; j++) {                 \
                            int64_t at = base + co[j];                     \
                            /* all ones when select drops best */         \
                            int64_t m = -(int64_t)!KEEP(a[best], a[at]);   \
                            best = (at & m) | (best & ~m);                 \
                        }                                                  \
                    }                                                      \
                y[best] += *src;                                           \
            }                                                              \
        }                                                                  \
        dev_index_next(w.oc, g->out_dims, g->rank - 2);                        \
    }

static void select_and_scatter_f32(hs_direction d, const win_geom *g,
                                   const float *restrict a,
                                   const float *restrict src, float *y,
                                   int64_t *buf)
{
    int hd = g->rank - 2, wd = g->rank - 1;
    int64_t rows = g->out_dims[hd], cols = g->out_dims[wd];
    plane_walk w = {.n_outer = count_of(g->out_dims, g->rank - 2),
                    .obuf = buf};
    switch (d) {
    case HS_DIR_GE: SAS_PLANE(KEEP_GE) break;
    case HS_DIR_GT: SAS_PLANE(KEEP_GT) break;
    case HS_DIR_LE: SAS_PLANE(KEEP_LE) break;
    default: SAS_PLANE(KEEP_LT) break;
    }
}

/* select(a[best], a[cand]) through the select computation: true keeps
 * best. */
static hs_status select_keeps(dev_ctx *x, const hs_instruction *in,
                              dev_plan *p, const char *a, int es,
                              int64_t best, int64_t cand, bool *keep)
{
    dev_val *args[2];
    const hs_shape *ps = &p->comp->params[0]->shape;
    args[0] = dev_scalar_of(x, ps, a + best * es);
    args[1] = args[0] ? dev_scalar_of(x, ps, a + cand * es) : NULL;
    if (!args[1]) {
        if (args[0])
            dev_release(x, args[0]);
        return x->err->status;
    }
    dev_val *res = NULL;
    hs_status st = dev_eval(x, p, args, 2, &res);
    if (st)
        return st;
    if (res->elems || res->shape->dtype != HS_PRED) {
        dev_release(x, res);
        return dev_unsupported(x, in, "a select computation that does not "
                                      "return pred[]");
    }
    *keep = *(const uint8_t *)res->block->data != 0;
    dev_release(x, res);
    return HS_OK;
}

static hs_status select_and_scatter_interpreted(
    dev_ctx *x, const hs_instruction *in, dev_plan *sel, dev_plan *sca,
    const win_geom *g, const dev_val *av, const dev_val *sv, dev_val *yv,
    int64_t *buf)
{
    const char *a = av->block->data, *src = sv->block->data;
    char *y = yv->block->data;
    int ea = dev_esize(av->shape->dtype), ey = dev_esize(yv->shape->dtype);
    const hs_shape *acc_s = &sca->comp->params[0]->shape;
    int64_t oc[HS_MAX_RANK] = {0};
    int64_t n_src = count_of(g->out_dims, g->rank);
    hs_status st = HS_OK;
    for (int64_t o = 0; o < n_src && !st; o++) {
        int64_t cnt = window_offsets(g, oc, buf);
        dev_index_next(oc, g->out_dims, g->rank);
        if (cnt == 0)
            continue;
        int64_t best = buf[0];
        for (int64_t j = 1; j < cnt && !st; j++) {
            bool keep = true;
            st = select_keeps(x, in, sel, a, ea, best, buf[j], &keep);
            if (!keep)
                best = buf[j];
        }
        if (st)
            break;
        const char *srcp = src + o * ey;
        dev_val *acc = dev_scalar_of(x, acc_s, y + best * ey);
        dev_val *arg = acc ? dev_scalar_of(x, acc_s, srcp) : NULL;
        if (!arg) {
            if (acc)
                dev_release(x, acc);
            return x->err->status;
        }
        dev_val *args[2] = {acc, arg}, *res = NULL;
        if ((st = dev_eval(x, sca, args, 2, &res)))
            break;
        if (res->elems || res->shape->dtype != yv->shape->dtype) {
            dev_release(x, res);
            return dev_unsupported(x, in, "a scatter computation that does "
                                          "not return its accumulator");
        }
        memcpy(y + best * ey, res->block->data, (size_t)ey);
        dev_release(x, res);
    }
    return st;
}

/* The computation that adds its two parameters (scatter=add). */
static bool is_add(const hs_computation *c)
{
    const hs_instruction *r = c->root;
    return c->n_params == 2 && r && r->opcode == HS_OP_ADD &&
           r->n_operands == 2 && r->operands[0] != r->operands[1] &&
           r->operands[0]->opcode == HS_OP_PARAMETER &&
           r->operands[1]->opcode == HS_OP_PARAMETER &&
           r->operands[0]->parent == c && r->operands[1]->parent == c;
}

hs_status dev_k_select_and_scatter(dev_ctx *x, const dev_step *s,
                                   dev_val **f, dev_val **out)
{
    const hs_instruction *in = s->in;
    const dev_val *av = dev_op(s, f, 0), *sv = dev_op(s, f, 1),
                  *iv = dev_op(s, f, 2);
    hs_computation *selc, *scac;
    dev_plan *sel = NULL, *sca = NULL;
    if (hs_select_and_scatter_computations(in, &selc, &scac)) {
        sel = dev_plan_of(x, selc);
        sca = dev_plan_of(x, scac);
    }
    if (!sel || !sca || sel->n_params != 2 || sca->n_params != 2)
        return dev_unsupported(x, in, "a select-and-scatter without "
                                      "select= and scatter= computations of "
                                      "two parameters");
    if (av->elems || sv->elems || iv->elems ||
        iv->shape->dtype != sv->shape->dtype ||
        in->shape.dtype != sv->shape->dtype)
        return dev_unsupported(x, in, "a select-and-scatter whose source, "
                                      "init value and result types differ");
    win_geom g;
    hs_status st = geom_build(x, in, av->shape, &g);
    if (st)
        return st;
    if (count_of(g.out_dims, g.rank) != hs_shape_elements(sv->shape)) {
        geom_free(&g);
        return dev_unsupported(x, in, "a source that does not have the "
                                      "shape of the operand's windows");
    }
    dev_val *y = dev_array_new(x, &in->shape);
    if (!y)
        st = x->err->status;
    if (!st) {
        int ey = dev_esize(in->shape.dtype);
        int64_t n = hs_shape_elements(&in->shape);
        char *yd = y->block->data;
        /* init everywhere: one element, then copies that double */
        if (n > 0)
            memcpy(yd, iv->block->data, (size_t)ey);
        for (int64_t done = 1; done < n; done *= 2)
            memcpy(yd + done * ey, yd,
                   (size_t)((done < n - done ? done : n - done) * ey));
        hs_direction d = select_direction(selc);
        if (g.empty)
            ; /* no source elements: the init value everywhere */
        else if (av->shape->dtype == HS_F32 && in->shape.dtype == HS_F32 &&
            d != HS_DIR_NONE && d != HS_DIR_EQ && d != HS_DIR_NE &&
            is_add(scac))
            select_and_scatter_f32(d, &g, av->block->data, sv->block->data,
                                   (float *)yd, g.buf);
        else
            st = select_and_scatter_interpreted(x, in, sel, sca, &g, av, sv,
                                                y, g.buf);
    }
    geom_free(&g);
    if (st) {
        if (y)
            dev_release(x, y);
        return st;
    }
    *out = y;
    return HS_OK;
}
