/*
 * kernels_batch_norm.c - batch-norm-training, -inference and -grad, run
 * directly (XLA's BatchNormExpander would rewrite them into reduces and
 * element-wise ops first; hloscope keeps them as one instruction each, so
 * the graph shows what the frontend emitted).
 *
 * The operand is viewed as [outer, C, inner] around its feature dimension
 * (feature_index=); every per-feature statistic covers N = outer * inner
 * elements. Sums accumulate in double and the variance is two-pass (the
 * mean first, then the mean of squared deviations), so a feature whose
 * mean is large against its spread keeps its variance; E[x^2] - E[x]^2 in
 * f32 would cancel it. Results are rounded to f32 once. f16, bf16 and
 * the f8 types compute in f32 and round once when stored, as XLA's CPU
 * backend does (widen.c).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "device/device_internal.h"

typedef struct bn_view {
    int64_t outer, c, inner, n; /* n = outer * inner per feature */
    float eps;
} bn_view;

static hs_status view_of(dev_ctx *x, const hs_instruction *in,
                         dev_val **f, const dev_step *s, bn_view *v)
{
    for (int k = 0; k < s->n_ops; k++) {
        const dev_val *o = dev_op(s, f, k);
        if (o->elems || o->shape->dtype != HS_F32)
            return dev_unsupported(x, in, "a batch norm that is not of "
                                          "float types (f32, f16, bf16, f8)");
    }
    const hs_shape *xs = dev_op(s, f, 0)->shape;
    hs_batch_norm bn;
    hs_status st = hs_instruction_batch_norm(in, xs->rank, &bn, x->err);
    if (st)
        return st;
    v->outer = v->inner = 1;
    for (int d = 0; d < xs->rank; d++) {
        if (d < bn.feature_index)
            v->outer = hs_sat_mul(v->outer, xs->dims[d]);
        else if (d > bn.feature_index)
            v->inner = hs_sat_mul(v->inner, xs->dims[d]);
    }
    v->c = xs->dims[bn.feature_index];
    v->n = hs_sat_mul(v->outer, v->inner);
    /* An empty operand walks nothing (its statistics are 0), however
     * large its other dimensions. */
    if (hs_shape_elements(xs) == 0)
        v->outer = v->inner = 0;
    v->eps = bn.epsilon;
    for (int k = 1; k < s->n_ops; k++) {
        const hs_shape *o = dev_op(s, f, k)->shape;
        bool feature = !(in->opcode == HS_OP_BATCH_NORM_GRAD && k == 4);
        if (feature ? hs_shape_elements(o) != v->c
                    : hs_shape_elements(o) != hs_shape_elements(xs))
            return dev_unsupported(x, in, "a batch norm whose operands do "
                                          "not match its feature dimension");
    }
    return HS_OK;
}

static const float *data_of(const dev_step *s, dev_val **f, int k)
{
    return dev_op(s, f, k)->block->data;
}

/* out[c] = the sum over feature c's elements k of EXPR (double). Four
 * partial sums per row, so the additions are four independent chains
 * rather than one (the compiler may not reorder them itself). */
#define FEATURE_SUMS(v, out, EXPR)                                         \
    do {                                                                   \
        for (int64_t c_ = 0; c_ < (v)->c; c_++)                            \
            (out)[c_] = 0;                                                 \
        for (int64_t o_ = 0; o_ < (v)->outer; o_++)                        \
            for (int64_t c = 0; c < (v)->c; c++) {                         \
                int64_t i_ = (o_ * (v)->c + c) * (v)->inner;               \
                int64_t end_ = i_ + (v)->inner;                            \
                double s0 = 0, s1 = 0, s2 = 0, s3 = 0;                     \
                for (; i_ + 4 <= end_; i_ += 4) {                          \
                    { int64_t k = i_; s0 += (EXPR); }                      \
                    { int64_t k = i_ + 1; s1 += (EXPR); }                  \
                    { int64_t k = i_ + 2; s2 += (EXPR); }                  \
                    { int64_t k = i_ + 3; s3 += (EXPR); }                  \
                }                                                          \
                for (; i_ < end_; i_++) {                                  \
                    int64_t k = i_;                                        \
                    s0 += (EXPR);                                          \
                }                                                          \
                (out)[c] += (s0 + s1) + (s2 + s3);                         \
            }                                                              \
    } while (0)

/* y = (x - mean[c]) * scale[c] / sqrt(var[c] + eps) + offset[c] */
static void normalise(const bn_view *v, const float *xd, const float *mean,
                      const float *var, const float *scale,
                      const float *offset, float *y)
{
    for (int64_t o = 0; o < v->outer; o++)
        for (int64_t c = 0; c < v->c; c++) {
            float m = mean[c];
            float k = scale[c] / sqrtf(var[c] + v->eps);
            float b = offset[c];
            int64_t base = (o * v->c + c) * v->inner;
            const float *xr = xd + base;
            float *yr = y + base;
            VLOOP(v->inner, yr[i] = (xr[i] - m) * k + b);
        }
}

/* A tuple of three new arrays shaped like in's result. NULL: error set. */
static dev_val *tuple3(dev_ctx *x, const hs_instruction *in)
{
    dev_val *t = dev_tuple_new(x, &in->shape, 3);
    for (int k = 0; t && k < 3; k++)
        if (!(t->elems[k] = dev_array_new(x, &in->shape.elems[k]))) {
            dev_release(x, t);
            return NULL;
        }
    return t;
}

/* What training and grad start with: the view, their result tuple and
 * room for two per-feature double vectors (freed by the caller). */
static hs_status begin_tuple(dev_ctx *x, const dev_step *s, dev_val **f,
                             bn_view *v, dev_val **t, double **scratch)
{
    hs_status st = view_of(x, s->in, f, s, v);
    if (st)
        return st;
    *scratch = malloc((size_t)(v->c ? 2 * v->c : 1) * sizeof **scratch);
    *t = *scratch ? tuple3(x, s->in) : NULL;
    if (*t)
        return HS_OK;
    st = *scratch ? x->err->status : dev_oom(x);
    free(*scratch);
    return st;
}

hs_status dev_k_batch_norm_training(dev_ctx *x, const dev_step *s,
                                    dev_val **f, dev_val **out)
{
    if (dev_step_is_narrow_float(s, f))
        return dev_run_in_f32(x, s, f, out, dev_k_batch_norm_training);
    bn_view v;
    dev_val *t;
    double *sum; /* sum[0..C) then the double mean mu[0..C) */
    hs_status st = begin_tuple(x, s, f, &v, &t, &sum);
    if (st)
        return st;
    double *mu = sum + v.c;
    const float *xd = data_of(s, f, 0);
    float *mean = t->elems[1]->block->data, *var = t->elems[2]->block->data;
    double n = v.n > 0 ? (double)v.n : 1.0;
    FEATURE_SUMS(&v, sum, xd[k]);
    for (int64_t c = 0; c < v.c; c++) {
        mu[c] = sum[c] / n;
        mean[c] = (float)mu[c];
    }
    FEATURE_SUMS(&v, sum, ((double)xd[k] - mu[c]) * ((double)xd[k] - mu[c]));
    for (int64_t c = 0; c < v.c; c++)
        var[c] = (float)(sum[c] / n);
    free(sum);
    normalise(&v, xd, mean, var, data_of(s, f, 1), data_of(s, f, 2),
              t->elems[0]->block->data);
    *out = t;
    return HS_OK;
}

hs_status dev_k_batch_norm_inference(dev_ctx *x, const dev_step *s,
                                     dev_val **f, dev_val **out)
{
    if (dev_step_is_narrow_float(s, f))
        return dev_run_in_f32(x, s, f, out, dev_k_batch_norm_inference);
    bn_view v;
    hs_status st = view_of(x, s->in, f, s, &v);
    if (st)
        return st;
    dev_val *y = dev_array_new(x, &s->in->shape);
    if (!y)
        return x->err->status;
    normalise(&v, data_of(s, f, 0), data_of(s, f, 3), data_of(s, f, 4),
              data_of(s, f, 1), data_of(s, f, 2), y->block->data);
    *out = y;
    return HS_OK;
}

/* XLA's batch-norm-grad, with r = 1 / sqrt(var + eps):
 *   grad_offset[c]  = sum gy
 *   grad_scale[c]   = sum gy * (x - mean) * r
 *   grad_operand    = scale * r / N * (N * gy - grad_offset
 *                       - (x - mean) * r^2 * sum gy * (x - mean)) */
hs_status dev_k_batch_norm_grad(dev_ctx *x, const dev_step *s, dev_val **f,
                                dev_val **out)
{
    if (dev_step_is_narrow_float(s, f))
        return dev_run_in_f32(x, s, f, out, dev_k_batch_norm_grad);
    bn_view v;
    dev_val *t;
    double *sum_gy; /* sum_gy[0..C) then sum_gyx[0..C) */
    hs_status st = begin_tuple(x, s, f, &v, &t, &sum_gy);
    if (st)
        return st;
    double *sum_gyx = sum_gy + v.c;
    const float *xd = data_of(s, f, 0), *scale = data_of(s, f, 1),
                *mean = data_of(s, f, 2), *var = data_of(s, f, 3),
                *gy = data_of(s, f, 4);
    float *gx = t->elems[0]->block->data, *gscale = t->elems[1]->block->data,
          *goffset = t->elems[2]->block->data;
    FEATURE_SUMS(&v, sum_gy, gy[k]);
    FEATURE_SUMS(&v, sum_gyx, (double)gy[k] * ((double)xd[k] - mean[c]));
    double n = v.n > 0 ? (double)v.n : 1.0;
    for (int64_t c = 0; c < v.c; c++) {
        double r = 1.0 / sqrt((double)var[c] + v.eps);
        goffset[c] = (float)sum_gy[c];
        gscale[c] = (float)(sum_gyx[c] * r);
    }
    for (int64_t o = 0; o < v.outer; o++)
        for (int64_t c = 0; c < v.c; c++) {
            double r = 1.0 / sqrt((double)var[c] + v.eps);
            double k = scale[c] * r / n, m = mean[c];
            double a = sum_gy[c], b = sum_gyx[c] * r * r;
            int64_t base = (o * v.c + c) * v.inner;
            const float *gyr = gy + base, *xr = xd + base;
            float *gxr = gx + base;
            VLOOP(v.inner, gxr[i] = (float)(k * (n * gyr[i] - a -
                                                 ((double)xr[i] - m) * b)));
        }
    free(sum_gy);
    *out = t;
    return HS_OK;
}
