/* vjp_window.c - the VJP of reduce-window, as JAX writes it:
 *
 *     max (min)  select-and-scatter(x, gy, 0) over the forward's window,
 *                select = compare GE (LE), scatter = add: each window's
 *                cotangent goes to the first element of the window that
 *                is its maximum (minimum), summed where windows overlap
 *                (JAX's _select_and_scatter_add, XLA's max-pool gradient)
 *     add        the cotangent padded (strides become interior padding,
 *                the edges what the window reached past) and summed over
 *                the same window at stride 1: JAX's
 *                _reduce_window_sum_transpose_rule. Average pooling is
 *                this with its divide differentiated on its own.
 *
 * Any other reducer, a variadic reduce-window, an active init value and
 * max/min pooling over a dilated window are errors naming the instruction.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "autodiff/autodiff_internal.h"

static void vjp_extremum(hs_vjp *v, hs_instruction *y, hs_instruction *gy,
                         const hs_window *w, bool max)
{
    hs_builder *b = hs__vjp_builder(v);
    hs_instruction *x = y->operands[0];
    for (int d = 0; d < w->rank; d++)
        if (w->dim[d].lhs_dilate != 1 || w->dim[d].rhs_dilate != 1) {
            hs__vjp_fail(v, y, HS_ERR_UNSUPPORTED,
                         "autodiff: no gradient rule for a %s reduce-window "
                         "with a dilated window (instruction %s)",
                         max ? "max" : "min", y->name);
            return;
        }
    hs_dtype t = x->shape.dtype;
    char sel_name[32], add_name[32];
    snprintf(sel_name, sizeof sel_name, "%s_%s", max ? "ge" : "le",
             hs_dtype_name(t));
    snprintf(add_name, sizeof add_name, "add_%s", hs_dtype_name(t));
    hs_computation *called[2] = {
        hs__ad_scalar_comp(b, sel_name, HS_OP_COMPARE, max ? HS_DIR_GE : HS_DIR_LE,
                    t),
        hs__ad_scalar_comp(b, add_name, HS_OP_ADD, HS_DIR_NONE, t)};
    if (!called[0] || !called[1])
        return;
    hs_attr window = {"window", hs_instruction_attr(y, "window")};
    hs_instruction *ops[3] = {x, gy, hs_b_const_f32(b, 0.0f)};
    hs__vjp_acc(v, x, hs__ad_emit(b, HS_OP_SELECT_AND_SCATTER, ops, 3,
                                  called, 2, &window, 1));
}

/* Appends "<lo>_<hi>_<interior>" for dimension d ('x'-separated). */
static void put_pair(char *buf, size_t size, int d, int64_t lo, int64_t hi,
                     const int64_t *interior)
{
    size_t len = strlen(buf);
    snprintf(buf + len, size - len, "%s%" PRId64 "_%" PRId64 "_%" PRId64,
             d ? "x" : "", lo, hi, *interior);
}

static int64_t dilated(int64_t n, int64_t d) { return n ? 1 + d * (n - 1) : 0; }

/* JAX's _reduce_window_sum_transpose_rule: pad gy by what a window at
 * stride 1 must see (_conv_general_vjp_lhs_padding, strides as interior
 * padding), then sum it over the same window at the base dilation's
 * stride. */
static void vjp_sum(hs_vjp *v, hs_instruction *y, hs_instruction *gy,
                    const hs_window *w)
{
    hs_builder *b = hs__vjp_builder(v);
    hs_instruction *x = y->operands[0];
    if (hs__vjp_active(v, y->operands[1])) {
        hs__vjp_fail(v, y, HS_ERR_UNSUPPORTED,
                     "autodiff: the init value of a reduce-window (%s) is "
                     "not differentiated", y->name);
        return;
    }
    if (!hs__vjp_active(v, x))
        return;
    char padding[HS_MAX_RANK * 64] = "", window[HS_MAX_RANK * 160];
    /* the same window at the base dilation's stride, no padding */
    hs_window tw = *w;
    for (int d = 0; d < w->rank; d++) {
        const hs_window_dim *wd = &w->dim[d];
        int64_t in_dil = dilated(x->shape.dims[d], wd->lhs_dilate);
        int64_t win_dil = dilated(wd->size, wd->rhs_dilate);
        int64_t out_dil = dilated(y->shape.dims[d], wd->stride);
        int64_t lo = win_dil - wd->pad_lo - 1;
        int64_t hi = in_dil + win_dil - 1 - out_dil - lo;
        int64_t interior = wd->stride - 1;
        put_pair(padding, sizeof padding, d, lo, hi, &interior);
        tw.dim[d].stride = wd->lhs_dilate;
        tw.dim[d].pad_lo = tw.dim[d].pad_hi = 0;
        tw.dim[d].lhs_dilate = 1;
    }
    if (!hs_window_print(&tw, window, sizeof window)) {
        hs__vjp_fail(v, y, HS_ERR_LIMIT, "autodiff: the window of %s does "
                     "not fit its text", y->name);
        return;
    }
    hs_instruction *zero = hs_b_const_f32(b, 0.0f);
    hs_attr pad_attr = {"padding", padding};
    hs_instruction *pad_ops[2] = {gy, zero};
    hs_instruction *padded = hs__ad_emit(b, HS_OP_PAD, pad_ops, 2, NULL, 0,
                                         &pad_attr, 1);
    hs_attr rw_attr = {"window", window};
    hs_instruction *rw_ops[2] = {padded, zero};
    hs__vjp_acc(v, x, hs__ad_emit(b, HS_OP_REDUCE_WINDOW, rw_ops, 2,
                                  y->called, 1, &rw_attr, 1));
}

void hs__vjp_reduce_window(hs_vjp *v, hs_instruction *y)
{
    if (y->n_operands != 2 || y->shape.dtype == HS_TUPLE) {
        hs__vjp_fail(v, y, HS_ERR_UNSUPPORTED,
                     "autodiff: no gradient rule for a variadic "
                     "reduce-window (instruction %s)", y->name);
        return;
    }
    hs_window w;
    hs_error e;
    if (hs_instruction_window(y, y->operands[0]->shape.rank, &w, &e)) {
        hs__vjp_fail(v, y, e.status, "autodiff: %s", e.message);
        return;
    }
    hs_instruction *gy = hs__vjp_cotangent(v, y);
    int op = hs__vjp_reducer_op(y);
    switch (op) {
    case HS_OP_ADD:
        vjp_sum(v, y, gy, &w);
        return;
    case HS_OP_MAXIMUM:
    case HS_OP_MINIMUM:
        if (hs__vjp_active(v, y->operands[1])) {
            hs__vjp_fail(v, y, HS_ERR_UNSUPPORTED,
                         "autodiff: the init value of a max/min "
                         "reduce-window (%s) is not differentiated",
                         y->name);
            return;
        }
        if (hs__vjp_active(v, y->operands[0]))
            vjp_extremum(v, y, gy, &w, op == HS_OP_MAXIMUM);
        return;
    default:
        hs__vjp_fail(v, y, HS_ERR_UNSUPPORTED,
                     "autodiff: no gradient rule for reduce-window with "
                     "reducer %s (instruction %s); sum, max and min are "
                     "differentiated",
                     y->n_called ? y->called[0]->name : "?", y->name);
    }
}
