/* infer_rng.c - the shape rule of rng, after XLA's
 * ShapeInference for kRng: distribution=rng_uniform draws from [a, b)
 * (floats or integers), rng_normal from N(a, b) with a the mean and b the
 * standard deviation (floats); a and b are scalars of the result's type,
 * whose dimensions only the written shape carries. */
#include <string.h>

#include "ir/infer_internal.h"

hs_status hs__infer_rng(const hs_instruction *i, hs_arena *a, hs_shape *out,
                        hs_error *err)
{
    (void)a;
    const char *dist = hs_instruction_attr(i, "distribution");
    bool uniform = dist && strcmp(dist, "rng_uniform") == 0;
    bool normal = dist && strcmp(dist, "rng_normal") == 0;
    if (!uniform && !normal)
        return fail(err, "rng: distribution=%s is neither rng_uniform nor "
                         "rng_normal", dist ? dist : "(missing)");
    if (i->n_operands != 2)
        return fail(err, "rng: needs 2 parameters, got %d", i->n_operands);
    const hs_shape *r = &i->shape;
    if (r->dtype == HS_TUPLE || !is_array_type(r->dtype))
        return fail(err, "rng: the result must be an array, got %s",
                    SHAPE_TEXT(r));
    if (normal ? !is_real_float(r->dtype)
               : !(is_real_float(r->dtype) || is_integer(r->dtype)))
        return fail(err, "rng: %s cannot draw %s", dist,
                    hs_dtype_name(r->dtype));
    for (int k = 0; k < 2; k++) {
        const hs_shape *p = &i->operands[k]->shape;
        if (p->dtype != r->dtype || p->rank != 0)
            return fail(err, "rng: parameter %d must be a %s scalar, got %s",
                        k, hs_dtype_name(r->dtype), SHAPE_TEXT(p));
    }
    set_array(out, r->dtype, r->rank, r->dims);
    return HS_OK;
}
