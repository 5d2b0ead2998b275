/*
 * builder_ops.c - one function per traced op (hs_b_* in hs_builder.h).
 *
 * Each op fills a stack prototype (opcode, operands, attributes), lets
 * hs__b_emit infer the shape and append the instruction, then copies the
 * attributes that must outlive the call into the module arena.
 */
#include <math.h>
#include <string.h>

#include "trace/builder_internal.h"

/* Copies dims into i, recording host OOM as the sticky error. */
static hs_instruction *with_dims(hs_builder *b, hs_instruction *i,
                                 const int64_t *dims, int n)
{
    if (!i || n <= 0)
        return i;
    hs_instruction_set_dims(i, dims, n);
    if (i->n_dims != n) {
        hs_builder_fail(b, HS_ERR_NOMEM, "builder: out of memory");
        return NULL;
    }
    return i;
}

static hs_instruction *with_called(hs_builder *b, hs_instruction *i,
                                   hs_computation *const *c, int n)
{
    if (!i)
        return NULL;
    hs_instruction_set_called(i, c, n);
    if (i->n_called != n) {
        hs_builder_fail(b, HS_ERR_NOMEM, "builder: out of memory");
        return NULL;
    }
    return i;
}

static bool valid_rank(hs_builder *b, const char *what, int rank)
{
    if (rank >= 0 && rank <= HS_MAX_RANK)
        return true;
    hs_builder_fail(b, HS_ERR_SHAPE, "%s: rank %d is outside 0..%d", what,
                    rank, HS_MAX_RANK);
    return false;
}

/* A shape the user wrote (a parameter, a constant): within the array size
 * limit, so that nothing downstream can overflow on it. */
static bool valid_shape(hs_builder *b, const char *what, const hs_shape *s)
{
    if (s->dtype != HS_TUPLE && !valid_rank(b, what, s->rank))
        return false;
    hs_error e;
    if (hs_shape_check_size(s, &e) == HS_OK)
        return true;
    hs_builder_fail(b, e.status, "%s: %s", what, e.message);
    return false;
}

/* ------------------------------------------------------------------------ */
/* Leaves                                                                   */
/* ------------------------------------------------------------------------ */

hs_instruction *hs_b_parameter(hs_builder *b, int64_t number,
                               const hs_shape *shape, const char *name)
{
    if (b->failed)
        return NULL;
    if (!shape || number < 0) {
        hs_builder_fail(b, HS_ERR_INVALID,
                        "parameter %lld: needs a shape and a number >= 0",
                        (long long)number);
        return NULL;
    }
    hs_computation *c = b->c;
    if (number < c->n_params && c->params[number]) {
        hs_builder_fail(b, HS_ERR_INVALID,
                        "parameter %lld is defined twice (%s and %s)",
                        (long long)number, c->params[number]->name,
                        name ? name : "a new one");
        return NULL;
    }
    if (!valid_shape(b, "parameter", shape))
        return NULL;
    hs_instruction *i = hs_computation_add_parameter(c, number, shape, name);
    if (!i) {
        hs_builder_fail(b, HS_ERR_NOMEM, "builder: out of memory");
        return NULL;
    }
    i->op_name = b->op_name;
    return i;
}

/* A constant of shape holding bytes (copied). */
static hs_instruction *constant(hs_builder *b, const hs_shape *shape,
                                const void *bytes, size_t size)
{
    hs_instruction *i = hs__b_add(b, HS_OP_CONSTANT, shape, NULL, 0);
    if (i && !(i->literal = hs__b_copy(b, bytes, size)))
        return NULL;
    return i;
}

static hs_instruction *scalar(hs_builder *b, hs_dtype t, const void *bytes,
                              size_t size)
{
    if (b->failed)
        return NULL;
    hs_shape s = hs_shape_scalar(t);
    return constant(b, &s, bytes, size);
}

hs_instruction *hs_b_const_f32(hs_builder *b, float v)
{
    return scalar(b, HS_F32, &v, sizeof v);
}

hs_instruction *hs_b_const_s32(hs_builder *b, int32_t v)
{
    return scalar(b, HS_S32, &v, sizeof v);
}

hs_instruction *hs_b_const_pred(hs_builder *b, bool v)
{
    uint8_t byte = v ? 1 : 0;
    return scalar(b, HS_PRED, &byte, 1);
}

hs_instruction *hs_b_const_array(hs_builder *b, const hs_shape *shape,
                                 const void *data)
{
    if (b->failed)
        return NULL;
    if (!shape || !data || shape->dtype == HS_TUPLE) {
        hs_builder_fail(b, HS_ERR_INVALID,
                        "constant: needs an array shape and its data");
        return NULL;
    }
    if (!valid_shape(b, "constant", shape))
        return NULL;
    hs_shape s = hs_shape_make(shape->dtype, shape->rank, shape->dims);
    int64_t bytes = hs_shape_bytes(&s);
    return constant(b, &s, data, (size_t)(bytes > 0 ? bytes : 0));
}

hs_instruction *hs_b_iota(hs_builder *b, const hs_shape *shape,
                          int64_t dimension)
{
    if (b->failed)
        return NULL;
    if (!shape) {
        hs_builder_fail(b, HS_ERR_INVALID, "iota: needs a shape");
        return NULL;
    }
    hs_instruction p;
    hs__b_proto(&p, HS_OP_IOTA, NULL, 0);
    p.shape = *shape;
    p.dims = &dimension;
    p.n_dims = 1;
    return with_dims(b, hs__b_emit(b, &p), &dimension, 1);
}

/* ------------------------------------------------------------------------ */
/* Element-wise                                                             */
/* ------------------------------------------------------------------------ */

/* Opcodes that hs_b_unary / hs_b_binary take: element-wise with the given
 * arity and no attribute of their own. */
static bool plain_elementwise(hs_opcode op, int arity)
{
    return (unsigned)op < HS_OP_COUNT &&
           hs_opcode_category(op) == HS_CAT_ELEMENTWISE &&
           hs_opcode_arity(op) == arity && op != HS_OP_CONVERT &&
           op != HS_OP_BITCAST_CONVERT && op != HS_OP_COMPARE;
}

hs_instruction *hs_b_unary(hs_builder *b, hs_opcode op, hs_instruction *x)
{
    if (!hs__b_usable(b, &x, 1))
        return NULL;
    if (!plain_elementwise(op, 1)) {
        hs_builder_fail(b, HS_ERR_INVALID,
                        "hs_b_unary: %s is not a unary element-wise op",
                        (unsigned)op < HS_OP_COUNT ? hs_opcode_name(op) : "?");
        return NULL;
    }
    hs_instruction p;
    hs__b_proto(&p, op, &x, 1);
    return hs__b_emit(b, &p);
}

hs_instruction *hs_b_binary(hs_builder *b, hs_opcode op, hs_instruction *x,
                            hs_instruction *y)
{
    hs_instruction *ops[2] = {x, y};
    if (!hs__b_usable(b, ops, 2))
        return NULL;
    if (!plain_elementwise(op, 2)) {
        hs_builder_fail(b, HS_ERR_INVALID,
                        "hs_b_binary: %s is not a binary element-wise op",
                        (unsigned)op < HS_OP_COUNT ? hs_opcode_name(op) : "?");
        return NULL;
    }
    hs_instruction p;
    hs__b_proto(&p, op, ops, 2);
    return hs__b_emit(b, &p);
}

hs_instruction *hs_b_compare(hs_builder *b, hs_direction d,
                             hs_instruction *x, hs_instruction *y)
{
    hs_instruction *ops[2] = {x, y};
    if (!hs__b_usable(b, ops, 2))
        return NULL;
    if (d < HS_DIR_EQ || d > HS_DIR_GE) {
        hs_builder_fail(b, HS_ERR_INVALID, "compare: invalid direction %d",
                        (int)d);
        return NULL;
    }
    hs_instruction p;
    hs__b_proto(&p, HS_OP_COMPARE, ops, 2);
    hs_instruction *i = hs__b_emit(b, &p);
    if (i)
        i->direction = d;
    return i;
}

hs_instruction *hs_b_select(hs_builder *b, hs_instruction *pred,
                            hs_instruction *on_true, hs_instruction *on_false)
{
    hs_instruction *ops[3] = {pred, on_true, on_false};
    if (!hs__b_usable(b, ops, 3))
        return NULL;
    hs_instruction p;
    hs__b_proto(&p, HS_OP_SELECT, ops, 3);
    return hs__b_emit(b, &p);
}

hs_instruction *hs_b_convert(hs_builder *b, hs_instruction *x, hs_dtype to)
{
    if (!hs__b_usable(b, &x, 1))
        return NULL;
    hs_instruction p;
    hs__b_proto(&p, HS_OP_CONVERT, &x, 1);
    p.shape.dtype = to; /* convert's target type lives in its shape */
    return hs__b_emit(b, &p);
}

/* ------------------------------------------------------------------------ */
/* Data movement                                                            */
/* ------------------------------------------------------------------------ */

hs_instruction *hs_b_broadcast(hs_builder *b, hs_instruction *x,
                               const hs_shape *out, const int64_t *dims,
                               int n_dims)
{
    if (!hs__b_usable(b, &x, 1))
        return NULL;
    if (!out) {
        hs_builder_fail(b, HS_ERR_INVALID, "broadcast: needs a result shape");
        return NULL;
    }
    hs_instruction p;
    hs__b_proto(&p, HS_OP_BROADCAST, &x, 1);
    p.shape = *out; /* dimensions only; the type is the operand's */
    p.dims = (int64_t *)dims;
    p.n_dims = n_dims;
    return with_dims(b, hs__b_emit(b, &p), dims, n_dims);
}

hs_instruction *hs_b_broadcast_trailing(hs_builder *b, hs_instruction *x,
                                        const hs_shape *out)
{
    if (!hs__b_usable(b, &x, 1))
        return NULL;
    int r = x->shape.rank;
    if (!out || x->shape.dtype == HS_TUPLE || r > out->rank) {
        hs_builder_fail(b, HS_ERR_SHAPE,
                        "broadcast: operand %s has more dimensions than the "
                        "result",
                        x->name);
        return NULL;
    }
    int64_t dims[HS_MAX_RANK];
    for (int k = 0; k < r; k++)
        dims[k] = out->rank - r + k;
    return hs_b_broadcast(b, x, out, dims, r);
}

hs_instruction *hs_b_reshape(hs_builder *b, hs_instruction *x, int rank,
                             const int64_t *dims)
{
    if (!hs__b_usable(b, &x, 1))
        return NULL;
    if (!valid_rank(b, "reshape", rank))
        return NULL;
    hs_instruction p;
    hs__b_proto(&p, HS_OP_RESHAPE, &x, 1);
    p.shape = hs_shape_make(x->shape.dtype, rank, dims);
    return hs__b_emit(b, &p);
}

hs_instruction *hs_b_transpose(hs_builder *b, hs_instruction *x,
                               const int64_t *perm)
{
    if (!hs__b_usable(b, &x, 1))
        return NULL;
    int n = x->shape.dtype == HS_TUPLE ? 0 : x->shape.rank;
    hs_instruction p;
    hs__b_proto(&p, HS_OP_TRANSPOSE, &x, 1);
    p.dims = (int64_t *)perm;
    p.n_dims = n;
    return with_dims(b, hs__b_emit(b, &p), perm, n);
}

hs_instruction *hs_b_slice(hs_builder *b, hs_instruction *x,
                           const int64_t *start, const int64_t *limit,
                           const int64_t *stride)
{
    if (!hs__b_usable(b, &x, 1))
        return NULL;
    hs_slice_dims sd;
    memset(&sd, 0, sizeof sd);
    sd.rank = x->shape.dtype == HS_TUPLE ? 0 : x->shape.rank;
    for (int k = 0; k < sd.rank; k++) {
        sd.start[k] = start[k];
        sd.limit[k] = limit[k];
        sd.stride[k] = stride ? stride[k] : 1;
    }
    hs_instruction p;
    hs__b_proto(&p, HS_OP_SLICE, &x, 1);
    p.slice = &sd;
    hs_instruction *i = hs__b_emit(b, &p);
    if (i && !(i->slice = hs__b_copy(b, &sd, sizeof sd)))
        return NULL;
    return i;
}

hs_instruction *hs_b_concatenate(hs_builder *b, hs_instruction *const *xs,
                                 int n, int64_t dimension)
{
    if (b->failed || n < 0 || (n > 0 && !xs) || !hs__b_usable(b, xs, n))
        return NULL;
    hs_instruction p;
    hs__b_proto(&p, HS_OP_CONCATENATE, (hs_instruction **)xs, n);
    p.dims = &dimension;
    p.n_dims = 1;
    return with_dims(b, hs__b_emit(b, &p), &dimension, 1);
}

static bool have_starts(hs_builder *b, const hs_instruction *x,
                        hs_instruction *const *starts)
{
    if (starts || x->shape.dtype == HS_TUPLE || x->shape.rank == 0)
        return true;
    hs_builder_fail(b, HS_ERR_INVALID, "dynamic slicing of %s needs start "
                    "indices", x->name);
    return false;
}

/* Operand list {x, [update,] starts...} on the stack. */
static int slice_operands(hs_instruction **ops, hs_instruction *x,
                          hs_instruction *update,
                          hs_instruction *const *starts)
{
    int n = 0, rank = x->shape.dtype == HS_TUPLE ? 0 : x->shape.rank;
    ops[n++] = x;
    if (update)
        ops[n++] = update;
    for (int k = 0; k < rank; k++)
        ops[n++] = starts[k];
    return n;
}

hs_instruction *hs_b_dynamic_slice(hs_builder *b, hs_instruction *x,
                                   hs_instruction *const *starts,
                                   const int64_t *sizes)
{
    if (!hs__b_usable(b, &x, 1) || !have_starts(b, x, starts))
        return NULL;
    hs_instruction *ops[1 + HS_MAX_RANK];
    int n = slice_operands(ops, x, NULL, starts);
    if (!hs__b_usable(b, ops, n))
        return NULL;
    hs_instruction p;
    hs__b_proto(&p, HS_OP_DYNAMIC_SLICE, ops, n);
    p.dims = (int64_t *)sizes;
    p.n_dims = n - 1;
    return with_dims(b, hs__b_emit(b, &p), sizes, n - 1);
}

hs_instruction *hs_b_dynamic_update_slice(hs_builder *b, hs_instruction *x,
                                          hs_instruction *update,
                                          hs_instruction *const *starts)
{
    hs_instruction *xu[2] = {x, update};
    if (!hs__b_usable(b, xu, 2) || !have_starts(b, x, starts))
        return NULL;
    hs_instruction *ops[2 + HS_MAX_RANK];
    int n = slice_operands(ops, x, update, starts);
    if (!hs__b_usable(b, ops, n))
        return NULL;
    hs_instruction p;
    hs__b_proto(&p, HS_OP_DYNAMIC_UPDATE_SLICE, ops, n);
    return hs__b_emit(b, &p);
}

/* ------------------------------------------------------------------------ */
/* Compute                                                                  */
/* ------------------------------------------------------------------------ */

hs_instruction *hs_b_dot(hs_builder *b, hs_instruction *lhs,
                         hs_instruction *rhs, const hs_dot_dims *dims)
{
    hs_instruction *ops[2] = {lhs, rhs};
    if (!hs__b_usable(b, ops, 2))
        return NULL;
    static const hs_dot_dims outer; /* no dims: an outer product */
    const hs_dot_dims *d = dims ? dims : &outer;
    hs_instruction p;
    hs__b_proto(&p, HS_OP_DOT, ops, 2);
    p.dot = (hs_dot_dims *)d;
    p.shape.dtype = lhs->shape.dtype;
    hs_instruction *i = hs__b_emit(b, &p);
    if (i && !(i->dot = hs__b_copy(b, d, sizeof *d)))
        return NULL;
    return i;
}

hs_instruction *hs_b_matmul_nt(hs_builder *b, hs_instruction *x,
                               hs_instruction *w)
{
    hs_instruction *ops[2] = {x, w};
    if (!hs__b_usable(b, ops, 2))
        return NULL;
    int r = x->shape.rank;
    if (x->shape.dtype == HS_TUPLE || w->shape.dtype == HS_TUPLE || r < 1 ||
        w->shape.rank != 2) {
        hs_builder_fail(b, HS_ERR_SHAPE,
                        "matmul_nt: needs x of rank >= 1 and a weight of rank "
                        "2, got %s (rank %d) and %s (rank %d)",
                        x->name, r, w->name, w->shape.rank);
        return NULL;
    }
    hs_dot_dims d;
    memset(&d, 0, sizeof d);
    d.n_lhs_contracting = d.n_rhs_contracting = 1;
    d.lhs_contracting[0] = r - 1;
    d.rhs_contracting[0] = 1;
    return hs_b_dot(b, x, w, &d);
}

/* The reducers' identity (init) values, as literal bytes of type t. */
static hs_instruction *reducer_init(hs_builder *b, hs_opcode op, hs_dtype t)
{
    union {
        float f32;
        double f64;
        int64_t s64;
        int32_t s32;
        int16_t s16;
        int8_t s8;
        uint16_t bits16;
        uint8_t bytes[16];
    } v;
    memset(&v, 0, sizeof v);
    int bits = hs_dtype_bits(t);
    size_t size = bits > 8 ? (size_t)bits / 8 : 1;
    if (op == HS_OP_MAXIMUM) {
        switch (t) {
        case HS_F32: v.f32 = -INFINITY; break;
        case HS_F64: v.f64 = -INFINITY; break;
        case HS_BF16: v.bits16 = 0xff80; break;
        case HS_F16: v.bits16 = 0xfc00; break;
        case HS_S8: v.s8 = INT8_MIN; break;
        case HS_S16: v.s16 = INT16_MIN; break;
        case HS_S32: v.s32 = INT32_MIN; break;
        case HS_S64: v.s64 = INT64_MIN; break;
        case HS_PRED: case HS_U8: case HS_U16: case HS_U32: case HS_U64:
            break; /* zero is the lowest value */
        default:
            hs_builder_fail(b, HS_ERR_UNSUPPORTED,
                            "reduce-max: no initial value for %s",
                            hs_dtype_name(t));
            return NULL;
        }
    } else if (op != HS_OP_ADD) {
        hs_builder_fail(b, HS_ERR_INVALID, "reduce: no initial value for %s",
                        hs_opcode_name(op));
        return NULL;
    } else if (t == HS_TUPLE || t == HS_TOKEN || size > sizeof v) {
        hs_builder_fail(b, HS_ERR_UNSUPPORTED, "reduce-sum: cannot sum %s",
                        hs_dtype_name(t));
        return NULL;
    }
    return scalar(b, t, v.bytes, size);
}

hs_instruction *hs_b_reduce(hs_builder *b, hs_instruction *x,
                            hs_instruction *init, const int64_t *dims,
                            int n_dims, hs_opcode reducer)
{
    hs_instruction *ops[2] = {x, init};
    if (!hs__b_usable(b, ops, 2))
        return NULL;
    if (init->shape.dtype == HS_TUPLE || init->shape.rank != 0) {
        hs_builder_fail(b, HS_ERR_SHAPE,
                        "reduce: init value %s must be a scalar", init->name);
        return NULL;
    }
    hs_computation *to_apply = hs__b_reducer(b, reducer, init->shape.dtype);
    if (!to_apply)
        return NULL;
    hs_instruction p;
    hs__b_proto(&p, HS_OP_REDUCE, ops, 2);
    p.dims = (int64_t *)dims;
    p.n_dims = n_dims;
    p.called = &to_apply;
    p.n_called = 1;
    hs_instruction *i = hs__b_emit(b, &p);
    return with_called(b, with_dims(b, i, dims, n_dims), &to_apply, 1);
}

static hs_instruction *reduce_with(hs_builder *b, hs_instruction *x,
                                   const int64_t *dims, int n_dims,
                                   hs_opcode reducer)
{
    if (!hs__b_usable(b, &x, 1))
        return NULL;
    hs_instruction *init = reducer_init(b, reducer, x->shape.dtype);
    return hs_b_reduce(b, x, init, dims, n_dims, reducer);
}

hs_instruction *hs_b_reduce_sum(hs_builder *b, hs_instruction *x,
                                const int64_t *dims, int n_dims)
{
    return reduce_with(b, x, dims, n_dims, HS_OP_ADD);
}

hs_instruction *hs_b_reduce_max(hs_builder *b, hs_instruction *x,
                                const int64_t *dims, int n_dims)
{
    return reduce_with(b, x, dims, n_dims, HS_OP_MAXIMUM);
}

/* ------------------------------------------------------------------------ */
/* Tuples and control                                                       */
/* ------------------------------------------------------------------------ */

hs_instruction *hs_b_tuple(hs_builder *b, hs_instruction *const *xs, int n)
{
    if (b->failed || n < 0 || (n > 0 && !xs) || !hs__b_usable(b, xs, n))
        return NULL;
    hs_instruction p;
    hs__b_proto(&p, HS_OP_TUPLE, (hs_instruction **)xs, n);
    return hs__b_emit(b, &p);
}

hs_instruction *hs_b_get_tuple_element(hs_builder *b, hs_instruction *t,
                                       int64_t index)
{
    if (!hs__b_usable(b, &t, 1))
        return NULL;
    hs_instruction p;
    hs__b_proto(&p, HS_OP_GET_TUPLE_ELEMENT, &t, 1);
    p.index = index;
    hs_instruction *i = hs__b_emit(b, &p);
    if (i)
        i->index = index;
    return i;
}

/* A NULL computation usually comes from a sub-builder that failed; saying
 * so here beats a later "no root". */
static bool have_computation(hs_builder *b, const char *op, const char *role,
                             const hs_computation *c)
{
    if (c)
        return true;
    hs_builder_fail(b, HS_ERR_INVALID, "%s: the %s computation is NULL", op,
                    role);
    return false;
}

hs_instruction *hs_b_while(hs_builder *b, hs_computation *condition,
                           hs_computation *body, hs_instruction *init)
{
    if (!hs__b_usable(b, &init, 1) ||
        !have_computation(b, "while", "condition", condition) ||
        !have_computation(b, "while", "body", body) ||
        !hs__b_order_callee(b, condition) || !hs__b_order_callee(b, body))
        return NULL;
    hs_computation *called[2] = {condition, body};
    hs_instruction p;
    hs__b_proto(&p, HS_OP_WHILE, &init, 1);
    p.called = called;
    p.n_called = 2;
    return with_called(b, hs__b_emit(b, &p), called, 2);
}

hs_instruction *hs_b_call(hs_builder *b, hs_computation *callee,
                          hs_instruction *const *args, int n)
{
    if (b->failed || n < 0 || (n > 0 && !args) ||
        !hs__b_usable(b, args, n) ||
        !have_computation(b, "call", "callee", callee) ||
        !hs__b_order_callee(b, callee))
        return NULL;
    hs_instruction p;
    hs__b_proto(&p, HS_OP_CALL, (hs_instruction **)args, n);
    p.called = &callee;
    p.n_called = 1;
    return with_called(b, hs__b_emit(b, &p), &callee, 1);
}

hs_instruction *hs_b_custom_call(hs_builder *b, const char *target,
                                 hs_instruction *const *args, int n,
                                 const hs_shape *shape)
{
    if (b->failed || n < 0 || (n > 0 && !args) || !hs__b_usable(b, args, n))
        return NULL;
    if (!target || !shape) {
        hs_builder_fail(b, HS_ERR_INVALID,
                        "custom-call: needs a target and a result shape");
        return NULL;
    }
    hs_instruction *i = hs__b_add(b, HS_OP_CUSTOM_CALL, shape, args, n);
    if (i && !(i->custom_call_target = hs_arena_strdup(b->m->arena, target))) {
        hs_builder_fail(b, HS_ERR_NOMEM, "builder: out of memory");
        return NULL;
    }
    return i;
}
