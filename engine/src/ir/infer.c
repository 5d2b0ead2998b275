/*
 * infer.c - shape inference: the rule of every opcode, as a table indexed
 * by hs_opcode, and what the rules of every family share. The rules live
 * in infer_<family>.c.
 *
 * The tracer calls hs_infer_shape for every instruction it creates and the
 * verifier calls it for every instruction it checks, so the common rules
 * (element-wise, broadcast, reshape, dot) avoid formatting and allocation on
 * success: messages are only built when a rule fails.
 *
 * Rules follow XLA's ShapeInference, including its leniency: floating-point
 * operands of different precision may be mixed in element-wise ops, dot and
 * convert take their result type from the instruction's written shape
 * (preferred_element_type), and results use the default layout in device
 * memory. Attributes that only the written shape carries (the target type of
 * convert, the result dimensions of broadcast, reshape and iota) are read from
 * i->shape.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ir/infer_internal.h"

hs__shape_text hs__shape_text_of(const hs_shape *s)
{
    hs__shape_text t;
    hs_shape_print(s, false, t.s, sizeof t.s);
    return t;
}

hs_status hs__infer_fail(hs_error *err, const char *fmt, ...)
{
    char buf[sizeof err->message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    hs_error_set(err, HS_ERR_SHAPE, "%s", buf);
    return HS_ERR_SHAPE;
}

hs_status hs__infer_unsupported(const hs_instruction *i, hs_error *err)
{
    hs_error_set(err, HS_ERR_UNSUPPORTED, "%s: no shape inference rule",
                 hs_opcode_name(i->opcode));
    return HS_ERR_UNSUPPORTED;
}

hs_status hs__array_operand(const hs_instruction *i, int k,
                               const hs_shape **s, hs_error *err)
{
    const hs_shape *shape = &i->operands[k]->shape;
    if (shape->dtype == HS_TUPLE || shape->dtype == HS_TOKEN)
        return fail(err, "%s: operand %d must be an array, got %s",
                    hs_opcode_name(i->opcode), k, SHAPE_TEXT(shape));
    *s = shape;
    return HS_OK;
}

hs_status hs__check_dim_list(const hs_instruction *i, const char *what,
                                const int64_t *dims, int n, int rank,
                                const hs_shape *of, bool *used,
                                hs_error *err)
{
    if (n > 0 && !dims)
        return fail(err, "%s: %d %ss declared but none given",
                    hs_opcode_name(i->opcode), n, what);
    for (int k = 0; k < n; k++) {
        int64_t d = dims[k];
        if (d < 0 || d >= rank)
            return fail(err, "%s: %s %lld is out of range for %s",
                        hs_opcode_name(i->opcode), what, (long long)d,
                        SHAPE_TEXT(of));
        if (used[d])
            return fail(err, "%s: %s %lld is listed twice",
                        hs_opcode_name(i->opcode), what, (long long)d);
        used[d] = true;
    }
    return HS_OK;
}

hs_status hs__set_operand_arrays(const hs_instruction *i, int n,
                                 const hs_shape *like, hs_arena *a,
                                 hs_shape *out, hs_error *err)
{
    if (n == 1) {
        set_array(out, i->operands[0]->shape.dtype, like->rank, like->dims);
        return HS_OK;
    }
    hs_shape *elems = a ? hs_arena_alloc(a, (size_t)n * sizeof *elems) : NULL;
    if (!elems)
        return hs_error_set(err, HS_ERR_NOMEM, "%s: out of memory",
                            hs_opcode_name(i->opcode));
    for (int k = 0; k < n; k++)
        set_array(&elems[k], i->operands[k]->shape.dtype, like->rank,
                  like->dims);
    memset(out, 0, sizeof *out);
    out->dtype = HS_TUPLE;
    out->n_elems = n;
    out->elems = elems;
    return HS_OK;
}

hs_status hs__infer_token(const hs_instruction *i, hs_arena *a,
                          hs_shape *out, hs_error *err)
{
    (void)i, (void)a, (void)err;
    *out = hs_shape_scalar(HS_TOKEN);
    return HS_OK;
}

hs_status hs__infer_u32_scalar(const hs_instruction *i, hs_arena *a,
                               hs_shape *out, hs_error *err)
{
    (void)i, (void)a, (void)err;
    *out = hs_shape_scalar(HS_U32);
    return HS_OK;
}

/* ------------------------------------------------------------------------ */
/* The table                                                                */
/* ------------------------------------------------------------------------ */

/* Generated from HS_OPCODE_LIST (hs_opcode.h): an element-wise opcode
 * takes its family's rule, every other opcode E its entry SHAPE_E, so a
 * new opcode without a shape decision does not compile. RULE(f) infers; WRITTEN(why) has no rule and says why: the
 * verifier then trusts the shape the instruction was written with. */
#define RULE(f) {hs__infer_##f, NULL}
#define WRITTEN(why) {NULL, why}

/* the element-wise families of the opcode list */
#define SHAPE_OF_UNARY_ANY(e) RULE(unary_any)
#define SHAPE_OF_UNARY_FLOAT(e) RULE(unary_float)
#define SHAPE_OF_UNARY_LOGICAL(e) RULE(unary_logical)
#define SHAPE_OF_BINARY_ANY(e) RULE(binary_any)
#define SHAPE_OF_BINARY_LOGICAL(e) RULE(binary_logical)
/* every other opcode: its own entry */
#define SHAPE_OF_OWN(e) SHAPE_##e

/* leaves */
#define SHAPE_PARAMETER WRITTEN("a parameter's shape is its declaration")
#define SHAPE_CONSTANT WRITTEN("a constant's shape is its literal's")
#define SHAPE_IOTA RULE(iota)
/* element-wise */
#define SHAPE_CONVERT RULE(convert)
#define SHAPE_BITCAST_CONVERT RULE(convert)
#define SHAPE_COMPARE RULE(binary_any)
#define SHAPE_IS_FINITE RULE(is_finite)
#define SHAPE_REDUCE_PRECISION RULE(unary_float)
#define SHAPE_SELECT RULE(select)
#define SHAPE_CLAMP RULE(clamp)
#define SHAPE_MAP WRITTEN("map's rule needs its mapped computation's "   \
                          "signature checked; not written yet")
/* data movement */
#define SHAPE_BROADCAST RULE(broadcast)
#define SHAPE_RESHAPE RULE(reshape)
#define SHAPE_BITCAST WRITTEN("a bitcast may change layout and shape "     \
                              "together; only bytes must agree")
#define SHAPE_TRANSPOSE RULE(transpose)
#define SHAPE_SLICE RULE(slice)
#define SHAPE_CONCATENATE RULE(concatenate)
#define SHAPE_REVERSE RULE(reverse)
#define SHAPE_PAD RULE(pad)
#define SHAPE_DYNAMIC_SLICE RULE(dynamic_slice)
#define SHAPE_DYNAMIC_UPDATE_SLICE RULE(dynamic_update_slice)
#define SHAPE_GATHER RULE(gather)
#define SHAPE_SCATTER RULE(scatter)
/* compute */
#define SHAPE_DOT RULE(dot)
#define SHAPE_CONVOLUTION RULE(convolution)
#define SHAPE_REDUCE RULE(reduce)
#define SHAPE_REDUCE_WINDOW RULE(reduce_window)
#define SHAPE_SELECT_AND_SCATTER RULE(select_and_scatter)
#define SHAPE_BATCH_NORM_TRAINING RULE(batch_norm_training)
#define SHAPE_BATCH_NORM_INFERENCE RULE(batch_norm_inference)
#define SHAPE_BATCH_NORM_GRAD RULE(batch_norm_grad)
#define SHAPE_SORT RULE(sort)
#define SHAPE_TOPK RULE(topk)
#define SHAPE_RNG RULE(rng)
#define SHAPE_RNG_BIT_GENERATOR RULE(rng_bit_generator)
/* tuples and control flow */
#define SHAPE_TUPLE RULE(tuple)
#define SHAPE_GET_TUPLE_ELEMENT RULE(get_tuple_element)
#define SHAPE_WHILE RULE(while)
#define SHAPE_CALL RULE(call)
#define SHAPE_CONDITIONAL WRITTEN("conditional's branches are not checked " \
                                  "yet")
#define SHAPE_FUSION WRITTEN("a fusion's shape is its fused root's, "     \
                             "checked when the fused computation is")
#define SHAPE_CUSTOM_CALL WRITTEN("a custom-call's target defines its "   \
                                  "shape")
#define SHAPE_OPTIMIZATION_BARRIER RULE(copy)
#define SHAPE_AFTER_ALL RULE(token)
/* memory */
#define SHAPE_COPY RULE(copy)
#define SHAPE_COPY_START WRITTEN("copy-start's context element is opaque")
#define SHAPE_COPY_DONE WRITTEN("copy-done's shape is its copy-start's "  \
                                "destination")
/* collectives */
#define SHAPE_ALL_REDUCE WRITTEN("collectives are parsed for analysis")
#define SHAPE_ALL_GATHER WRITTEN("collectives are parsed for analysis")
#define SHAPE_REDUCE_SCATTER WRITTEN("collectives are parsed for analysis")
#define SHAPE_ALL_TO_ALL WRITTEN("collectives are parsed for analysis")
#define SHAPE_COLLECTIVE_PERMUTE WRITTEN("collectives are parsed for "    \
                                         "analysis")
#define SHAPE_PARTITION_ID RULE(u32_scalar)
#define SHAPE_REPLICA_ID RULE(u32_scalar)
#define SHAPE_UNKNOWN WRITTEN("the opcode is not one hloscope knows")

static const struct {
    hs__shape_rule rule;
    const char *written;
} table[] = {
#define HS_X(e, n, a, c, f) [HS_OP_##e] = SHAPE_OF_##f(e),
    HS_OPCODE_LIST(HS_X)
#undef HS_X
};
_Static_assert(sizeof table / sizeof table[0] == HS_OP_COUNT,
               "every opcode has a shape entry");

const char *hs_infer_written_only(hs_opcode op)
{
    return (unsigned)op < HS_OP_COUNT ? table[op].written : NULL;
}

/* Every rule's result is checked against the array size limit, so a shape
 * that only overflows once combined (a dot of two large operands, a long
 * concatenation) is refused where it is made. */
hs_status hs_infer_shape(const hs_instruction *i, hs_arena *a, hs_shape *out,
                         hs_error *err)
{
    hs_opcode op = i->opcode;
    if ((unsigned)op >= HS_OP_COUNT)
        return fail(err, "opcode %d is not valid", (int)op);
    int arity = hs_opcode_arity(op);
    if (arity >= 0 && i->n_operands != arity)
        return fail(err, "%s: expects %d operands, got %d",
                    hs_opcode_name(op), arity, i->n_operands);
    for (int k = 0; k < i->n_operands; k++)
        if (!i->operands[k])
            return fail(err, "%s: operand %d is missing",
                        hs_opcode_name(op), k);
    if (!table[op].rule)
        return hs__infer_unsupported(i, err);
    hs_status st = table[op].rule(i, a, out, err);
    if (st != HS_OK)
        return st;
    hs_error e;
    if (hs_shape_check_size(out, &e) != HS_OK)
        return fail(err, "%s: result %s", hs_opcode_name(op),
                    e.message);
    return HS_OK;
}
