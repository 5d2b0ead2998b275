/* infer_window.c - shape rules of the windowed reductions, as XLA's
 * ShapeInference writes them:
 *
 *   reduce-window(inputs..., inits...)  each input's dimensions become the
 *       number of window positions along them (window={...}, with stride,
 *       padding and both dilations); a tuple when variadic; the element
 *       types are the init values'. The to_apply reducer is checked as
 *       reduce's is.
 *   select-and-scatter(operand, source, init)  the operand's shape; source
 *       has the shape of the operand's windows; select= is (T, T) -> pred
 *       over the operand's type T, scatter= a reducer of the init type. */
#include <string.h>

#include "ir/infer_internal.h"

/* The windowed result dimensions of `of`, or an error naming i. */
static hs_status window_dims(const hs_instruction *i, const hs_shape *of,
                             int64_t *dims, hs_error *err)
{
    hs_window w;
    hs_status st = hs_instruction_window(i, of->rank, &w, err);
    if (st != HS_OK)
        return st;
    for (int d = 0; d < of->rank; d++) {
        if (w.dim[d].reversal)
            return fail(err, "%s: instruction %s: window reversal is a "
                             "convolution's; a %s cannot reverse its window",
                        hs_opcode_name(i->opcode), i->name,
                        hs_opcode_name(i->opcode));
        dims[d] = hs_window_output_extent(&w.dim[d], of->dims[d]);
    }
    return HS_OK;
}

hs_status hs__infer_reduce_window(const hs_instruction *i, hs_arena *a,
                                  hs_shape *out, hs_error *err)
{
    if (i->n_operands < 2 || i->n_operands % 2 != 0)
        return fail(err,
                    "reduce-window: instruction %s: expects inputs then as "
                    "many init values, got %d operands",
                    i->name, i->n_operands);
    int n = i->n_operands / 2;
    const hs_shape *x0 = NULL;
    hs_status st = hs__array_operand(i, 0, &x0, err);
    for (int k = 0; st == HS_OK && k < n; k++) {
        const hs_shape *x = NULL, *init = NULL;
        if ((st = hs__array_operand(i, k, &x, err)) != HS_OK ||
            (st = hs__array_operand(i, n + k, &init, err)) != HS_OK)
            return st;
        if (!same_dims(x, x0))
            return fail(err, "reduce-window: instruction %s: input %d %s "
                             "does not match input 0 %s",
                        i->name, k, SHAPE_TEXT(x), SHAPE_TEXT(x0));
        if (init->rank != 0)
            return fail(err, "reduce-window: instruction %s: init value %d "
                             "must be a scalar, got %s",
                        i->name, k, SHAPE_TEXT(init));
    }
    if (st == HS_OK)
        st = hs__check_reducer(i, n, err);
    int64_t dims[HS_MAX_RANK];
    if (st == HS_OK)
        st = window_dims(i, x0, dims, err);
    if (st != HS_OK)
        return st;
    if (n == 1) {
        set_array(out, i->operands[1]->shape.dtype, x0->rank, dims);
        return HS_OK;
    }
    hs_shape *elems = a ? hs_arena_alloc(a, (size_t)n * sizeof *elems) : NULL;
    if (!elems)
        return hs_error_set(err, HS_ERR_NOMEM, "reduce-window: out of memory");
    for (int k = 0; k < n; k++)
        set_array(&elems[k], i->operands[n + k]->shape.dtype, x0->rank, dims);
    memset(out, 0, sizeof *out);
    out->dtype = HS_TUPLE;
    out->n_elems = n;
    out->elems = elems;
    return HS_OK;
}

bool hs_select_and_scatter_computations(const hs_instruction *i,
                                        hs_computation **select,
                                        hs_computation **scatter)
{
    bool two = i->n_called == 2 && i->called;
    *select = two ? i->called[0] : NULL;
    *scatter = two ? i->called[1] : NULL;
    return *select && *scatter;
}

/* select= (T[], T[]) -> pred[] over the operand's element type T. */
static hs_status check_select(const hs_instruction *i,
                              const hs_computation *c, hs_dtype t,
                              hs_error *err)
{
    bool ok = c->n_params == 2 && c->root &&
              c->root->shape.dtype == HS_PRED && c->root->shape.rank == 0;
    for (int k = 0; ok && k < 2; k++)
        ok = c->params[k] && c->params[k]->shape.rank == 0 &&
             c->params[k]->shape.dtype == t;
    if (!ok)
        return fail(err, "select-and-scatter: instruction %s: select "
                         "computation %s must take two %s[] and return "
                         "pred[]",
                    i->name, c->name, hs_dtype_name(t));
    return HS_OK;
}

/* scatter= (T[], T[]) -> T[] over the init value's type T, which is also
 * the source's. */
static hs_status check_scatter(const hs_instruction *i,
                               const hs_computation *c, hs_dtype t,
                               hs_error *err)
{
    bool ok = c->n_params == 2 && c->root && c->root->shape.dtype == t &&
              c->root->shape.rank == 0;
    for (int k = 0; ok && k < 2; k++)
        ok = c->params[k] && c->params[k]->shape.rank == 0 &&
             c->params[k]->shape.dtype == t;
    if (!ok)
        return fail(err, "select-and-scatter: instruction %s: scatter "
                         "computation %s must take two %s[] and return %s[]",
                    i->name, c->name, hs_dtype_name(t), hs_dtype_name(t));
    return HS_OK;
}

hs_status hs__infer_select_and_scatter(const hs_instruction *i, hs_arena *a,
                                       hs_shape *out, hs_error *err)
{
    (void)a;
    const hs_shape *x = NULL, *src = NULL, *init = NULL;
    hs_status st = hs__array_operand(i, 0, &x, err);
    if (st == HS_OK)
        st = hs__array_operand(i, 1, &src, err);
    if (st == HS_OK)
        st = hs__array_operand(i, 2, &init, err);
    if (st != HS_OK)
        return st;
    if (init->rank != 0 || init->dtype != src->dtype)
        return fail(err, "select-and-scatter: instruction %s: the init "
                         "value %s must be a scalar of the source's type %s",
                    i->name, SHAPE_TEXT(init), hs_dtype_name(src->dtype));
    hs_computation *sel, *sca;
    if (!hs_select_and_scatter_computations(i, &sel, &sca))
        return fail(err, "select-and-scatter: instruction %s: needs "
                         "select= and scatter= computations",
                    i->name);
    if ((st = check_select(i, sel, x->dtype, err)) != HS_OK ||
        (st = check_scatter(i, sca, src->dtype, err)) != HS_OK)
        return st;
    int64_t dims[HS_MAX_RANK];
    if ((st = window_dims(i, x, dims, err)) != HS_OK)
        return st;
    hs_shape want = hs_shape_make(src->dtype, x->rank, dims);
    if (!same_dims(src, &want))
        return fail(err, "select-and-scatter: instruction %s: source %s "
                         "does not have the shape of the operand's windows "
                         "%s",
                    i->name, SHAPE_TEXT(src), SHAPE_TEXT(&want));
    set_array(out, src->dtype, x->rank, x->dims);
    return HS_OK;
}
