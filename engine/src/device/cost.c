/*
 * cost.c - the roofline cost of one instruction on a device spec:
 *     seconds = max(flops / peak_flops, bytes / hbm_bandwidth)
 * flops: dot 2*M*N*K*batch, convolution 2*outputs*taps*features per
 * group, element-wise ops one per output element
 * (transcendentals count 1), reduce one per input element. bytes: operands
 * plus result, except for instructions that move no data (parameters,
 * constants, tuples, get-tuple-element, aliasing reshapes and bitcasts,
 * control flow: their callees are charged as they run). Dynamic slices
 * touch only the slice (XLA updates in place), and a dynamic-slice that is
 * a contiguous view of its operand moves nothing. A fusion is charged the
 * flops of the instructions it fuses but only the bytes of its operands
 * and result: its intermediates never reach memory. Transfers between
 * device and host memory run at the host-link bandwidth instead.
 */
#include <string.h>

#include "device/device_internal.h"

static double arr_bytes(const hs_shape *s)
{
    return s->dtype == HS_TUPLE ? 0.0 : (double)hs_shape_bytes(s);
}

static double operand_bytes(const hs_instruction *in)
{
    double b = 0;
    for (int i = 0; i < in->n_operands; i++)
        b += arr_bytes(&in->operands[i]->shape);
    return b;
}

static double dot_flops(const hs_instruction *in)
{
    const hs_shape *l = &in->operands[0]->shape;
    const hs_dot_dims *d = in->dot;
    double k = 1;
    for (int i = 0; d && i < d->n_lhs_contracting; i++)
        k *= (double)l->dims[d->lhs_contracting[i]];
    /* The result holds batch x M x N elements. */
    return 2.0 * (double)hs_shape_elements(&in->shape) * k;
}

bool dev_dynamic_slice_is_view(const hs_instruction *in)
{
    if (in->opcode != HS_OP_DYNAMIC_SLICE || in->n_operands < 1)
        return false;
    const hs_shape *o = &in->operands[0]->shape, *r = &in->shape;
    if (o->dtype == HS_TUPLE || r->dtype != o->dtype || r->rank != o->rank ||
        dev_space_index(o->memory_space) != dev_space_index(r->memory_space))
        return false;
    int i = r->rank - 1;
    while (i >= 0 && r->dims[i] == o->dims[i])
        i--;
    for (int k = 0; k < i; k++)
        if (r->dims[k] != 1)
            return false;
    return true;
}

static const hs_shape *copy_dest(const hs_instruction *in)
{
    /* copy-start returns (destination, source, context). */
    if (in->opcode == HS_OP_COPY_START)
        return in->shape.dtype == HS_TUPLE && in->shape.n_elems > 0
                   ? &in->shape.elems[0]
                   : NULL;
    return in->opcode == HS_OP_COPY ? &in->shape : NULL;
}

bool dev_is_host_transfer(const hs_instruction *in)
{
    const char *t = in->custom_call_target;
    if (in->opcode == HS_OP_CUSTOM_CALL)
        return t && (strcmp(t, "MoveToHost") == 0 ||
                     strcmp(t, "MoveToDevice") == 0);
    const hs_shape *d = copy_dest(in);
    return d && in->n_operands > 0 &&
           in->operands[0]->shape.dtype != HS_TUPLE &&
           dev_space_index(in->operands[0]->shape.memory_space) !=
               dev_space_index(d->memory_space);
}

/* The flops of a fused computation: those of every instruction in it. */
static double fused_flops(const hs_device_spec *spec, const hs_instruction *in,
                          int depth)
{
    double f = 0;
    for (int c = 0; c < in->n_called && depth < 16; c++) {
        const hs_computation *comp = in->called[c];
        for (int k = 0; comp && k < comp->n_instrs; k++) {
            const hs_instruction *i = comp->instrs[k];
            if (i->opcode == HS_OP_FUSION) {
                f += fused_flops(spec, i, depth + 1);
            } else {
                double fl, by, se;
                dev_cost(spec, i, &fl, &by, &se);
                f += fl;
            }
        }
    }
    return f;
}

/* ---- cost rules ----------------------------------------------------------
 * Each rule sets the flops and bytes of one instruction and whether its
 * bytes cross the host link instead of HBM. */
typedef struct cost {
    double flops, bytes;
    bool host_link;
} cost;
typedef void (*cost_rule)(const hs_device_spec *spec,
                          const hs_instruction *in, cost *c);

/* Moves no data: parameters, constants, tuples, aliases, control flow
 * (callees are charged as they run). */
static void cost_free(const hs_device_spec *spec, const hs_instruction *in,
                      cost *c)
{
    (void)spec, (void)in, (void)c;
}

static void cost_elementwise(const hs_device_spec *spec,
                             const hs_instruction *in, cost *c)
{
    (void)spec;
    c->flops = (double)hs_shape_elements(&in->shape);
    c->bytes = operand_bytes(in) + arr_bytes(&in->shape);
}

/* Reads its operands and writes its result, computing nothing. */
static void cost_move(const hs_device_spec *spec, const hs_instruction *in,
                      cost *c)
{
    (void)spec;
    c->bytes = operand_bytes(in) + arr_bytes(&in->shape);
}

static void cost_write(const hs_device_spec *spec, const hs_instruction *in,
                       cost *c)
{
    (void)spec;
    c->bytes = arr_bytes(&in->shape);
}

static void cost_dot(const hs_device_spec *spec, const hs_instruction *in,
                     cost *c)
{
    (void)spec;
    c->flops = dot_flops(in);
    c->bytes = operand_bytes(in) + arr_bytes(&in->shape);
}

/* A multiply-add per output element, window tap and input feature of its
 * group (the kernel's input feature dimension), as XLA's cost analysis
 * counts; bytes as for dot. Malformed attributes charge the bytes only. */
static void cost_convolution(const hs_device_spec *spec,
                             const hs_instruction *in, cost *c)
{
    (void)spec;
    c->bytes = operand_bytes(in) + arr_bytes(&in->shape);
    hs_conv conv;
    hs_error e;
    if (in->n_operands != 2 || hs_instruction_conv(in, &conv, &e) != HS_OK)
        return;
    const hs_shape *r = &in->operands[1]->shape;
    double taps = 1;
    for (int k = 0; k < conv.dims.n_spatial; k++)
        taps *= (double)r->dims[conv.dims.rhs_spatial[k]];
    c->flops = 2.0 * (double)hs_shape_elements(&in->shape) * taps *
               (double)r->dims[conv.dims.rhs_input];
}

static void cost_reduce(const hs_device_spec *spec, const hs_instruction *in,
                        cost *c)
{
    (void)spec;
    c->flops = in->n_operands
                   ? (double)hs_shape_elements(&in->operands[0]->shape)
                   : 0;
    c->bytes = operand_bytes(in) + arr_bytes(&in->shape);
}

/* Bytes of every array of a result (tuples: their elements). */
static double result_bytes(const hs_shape *s)
{
    if (s->dtype != HS_TUPLE)
        return arr_bytes(s);
    double b = 0;
    for (int i = 0; i < s->n_elems; i++)
        b += result_bytes(&s->elems[i]);
    return b;
}

/* Elements of one window of operand 0 (the product of window sizes). */
static double window_elements(const hs_instruction *in)
{
    hs_window w;
    hs_error e;
    if (in->n_operands < 1 ||
        hs_instruction_window(in, in->operands[0]->shape.rank, &w, &e))
        return 0;
    double n = 1;
    for (int d = 0; d < w.rank; d++)
        n *= (double)w.dim[d].size;
    return n;
}

/* One reducer application per window element, per output element and
 * input (XLA's HloCostAnalysis). */
static void cost_reduce_window(const hs_device_spec *spec,
                               const hs_instruction *in, cost *c)
{
    (void)spec;
    const hs_shape *r = in->shape.dtype == HS_TUPLE && in->shape.n_elems
                            ? &in->shape.elems[0] : &in->shape;
    c->flops = (double)hs_shape_elements(r) * window_elements(in) *
               (double)(in->n_operands / 2);
    c->bytes = operand_bytes(in) + result_bytes(&in->shape);
}

/* A select per window element and a scatter per source element. */
static void cost_select_and_scatter(const hs_device_spec *spec,
                                    const hs_instruction *in, cost *c)
{
    (void)spec;
    double src = in->n_operands > 1
                     ? (double)hs_shape_elements(&in->operands[1]->shape)
                     : 0;
    c->flops = src * (window_elements(in) + 1);
    c->bytes = operand_bytes(in) + result_bytes(&in->shape);
}

/* One update computation per update element (XLA's HloCostAnalysis:
 * the to_apply's cost per element of the updates), reading operands,
 * indices and updates and writing the result. */
static void cost_scatter(const hs_device_spec *spec, const hs_instruction *in,
                         cost *c)
{
    (void)spec;
    int n = (in->n_operands - 1) / 2;
    double updates = 0;
    for (int k = n + 1; k < in->n_operands; k++)
        updates += (double)hs_shape_elements(&in->operands[k]->shape);
    c->flops = updates;
    c->bytes = operand_bytes(in) + result_bytes(&in->shape);
}

/* A comparison per element and level of the merge: n * ceil(log2(len))
 * along the sorted dimension, each comparator call counted as one FLOP. */
static void cost_sort(const hs_device_spec *spec, const hs_instruction *in,
                      cost *c)
{
    (void)spec;
    if (in->n_operands < 1)
        return;
    const hs_shape *x = &in->operands[0]->shape;
    int64_t len = in->n_dims == 1 && in->dims && x->rank
                      ? x->dims[in->dims[0] < x->rank ? in->dims[0] : 0]
                      : 1;
    /* ceil(log2(len)): the bit length of len - 1 (no doubling loop,
     * which would overflow for a dimension near 2^63) */
    double levels = 0;
    for (uint64_t w = len > 1 ? (uint64_t)(len - 1) : 0; w; w >>= 1)
        levels++;
    c->flops = (double)hs_shape_elements(x) * levels;
    c->bytes = operand_bytes(in) + result_bytes(&in->shape);
}

/* topk (and the TopK custom-call): a selection of k out of each row of
 * n, charged as XLA's CPU runtime does it (std::partial_sort: about
 * n * log2(k) comparisons a row), reading x and writing the values and
 * indices. */
static void cost_topk(const hs_device_spec *spec, const hs_instruction *in,
                      cost *c)
{
    (void)spec;
    if (in->n_operands < 1 || in->shape.dtype != HS_TUPLE ||
        in->shape.n_elems < 1)
        return;
    const hs_shape *x = &in->operands[0]->shape;
    const hs_shape *v = &in->shape.elems[0];
    int64_t k = v->rank ? v->dims[v->rank - 1] : 1;
    double levels = 0;
    for (uint64_t w = k > 1 ? (uint64_t)(k - 1) : 0; w; w >>= 1)
        levels++;
    c->flops = (double)hs_shape_elements(x) * (levels > 0 ? levels : 1);
    c->bytes = operand_bytes(in) + result_bytes(&in->shape);
}

/* rng: one generator evaluation per element, counted as one FLOP, and
 * the result written. */
static void cost_rng(const hs_device_spec *spec, const hs_instruction *in,
                     cost *c)
{
    (void)spec;
    c->flops = (double)hs_shape_elements(&in->shape);
    c->bytes = operand_bytes(in) + arr_bytes(&in->shape);
}

/* rng-bit-generator: one generator evaluation per element of the result,
 * state and bits alike, as XLA's HloCostAnalysis counts each a
 * transcendental (ElementsInRecursive); the state is read, both results
 * written. */
static void cost_rng_bit_generator(const hs_device_spec *spec,
                                   const hs_instruction *in, cost *c)
{
    (void)spec;
    const hs_shape *r = &in->shape;
    double n = 0;
    for (int k = 0; r->dtype == HS_TUPLE && k < r->n_elems; k++)
        n += (double)hs_shape_elements(&r->elems[k]);
    c->flops = n;
    c->bytes = operand_bytes(in) + result_bytes(r);
}

/* The element-wise work of XLA's BatchNormExpander per operand element:
 * training 7 (sum, deviation, square and sum, normalise: subtract,
 * multiply, multiply, add), inference 4 (the normalisation), grad 9 (two
 * sums with a subtract and multiply, and the operand's gradient). */
static void cost_batch_norm(const hs_device_spec *spec,
                            const hs_instruction *in, cost *c)
{
    (void)spec;
    double per = in->opcode == HS_OP_BATCH_NORM_TRAINING    ? 7
                 : in->opcode == HS_OP_BATCH_NORM_INFERENCE ? 4
                                                            : 9;
    c->flops = in->n_operands
                   ? per * (double)hs_shape_elements(&in->operands[0]->shape)
                   : 0;
    c->bytes = operand_bytes(in) + result_bytes(&in->shape);
}

/* The slice is read and written; a contiguous view moves nothing. */
static void cost_dynamic_slice(const hs_device_spec *spec,
                               const hs_instruction *in, cost *c)
{
    (void)spec;
    if (!dev_dynamic_slice_is_view(in))
        c->bytes = 2 * arr_bytes(&in->shape);
}

/* XLA updates in place: only the update is read and written. */
static void cost_dynamic_update_slice(const hs_device_spec *spec,
                                      const hs_instruction *in, cost *c)
{
    (void)spec;
    c->bytes = in->n_operands > 1 ? 2 * arr_bytes(&in->operands[1]->shape)
                                  : 0;
}

/* copy-done waits for its copy-start, which moved the data. */
static void cost_copy(const hs_device_spec *spec, const hs_instruction *in,
                      cost *c)
{
    (void)spec;
    const hs_shape *d = copy_dest(in);
    if (!d)
        return;
    c->bytes = arr_bytes(d);
    c->host_link = dev_is_host_transfer(in);
    if (!c->host_link)
        c->bytes += operand_bytes(in);
}

static void cost_custom_call(const hs_device_spec *spec,
                             const hs_instruction *in, cost *c)
{
    (void)spec;
    if (dev_is_host_transfer(in)) {
        c->bytes = arr_bytes(&in->shape);
        c->host_link = true;
    } else if (dev_is_spmd_shape_call(in) && in->n_operands == 1) {
        /* the tile read (or written) and the result written */
        double a = arr_bytes(&in->operands[0]->shape),
               r = arr_bytes(&in->shape);
        c->bytes = (a < r ? a : r) + r;
    }
    if (dev_is_topk_call(in))
        cost_topk(spec, in, c);
}

static void cost_fusion(const hs_device_spec *spec, const hs_instruction *in,
                        cost *c)
{
    c->flops = fused_flops(spec, in, 0);
    c->bytes = operand_bytes(in) + arr_bytes(&in->shape);
}

/* ---- the table -------------------------------------------------------------
 * Generated from HS_OPCODE_LIST: an element-wise opcode takes its family's
 * rule, every other opcode E its rule COST_E, so a new opcode without a
 * cost decision does not compile. NOT_COSTED(why)
 * charges nothing and says why (dev_cost_not_modelled). */
#define COSTED(rule) {rule, NULL}
#define NOT_COSTED(why) {cost_free, why}

#define COST_OF_UNARY_ANY(e) COSTED(cost_elementwise)
#define COST_OF_UNARY_FLOAT(e) COSTED(cost_elementwise)
#define COST_OF_UNARY_LOGICAL(e) COSTED(cost_elementwise)
#define COST_OF_BINARY_ANY(e) COSTED(cost_elementwise)
#define COST_OF_BINARY_LOGICAL(e) COSTED(cost_elementwise)
#define COST_OF_OWN(e) COST_##e

#define COST_PARAMETER COSTED(cost_free)
#define COST_CONSTANT COSTED(cost_free)
#define COST_IOTA COSTED(cost_write)
#define COST_CONVERT COSTED(cost_elementwise)
#define COST_BITCAST_CONVERT COSTED(cost_free) /* reinterprets in place */
#define COST_COMPARE COSTED(cost_elementwise)
#define COST_IS_FINITE COSTED(cost_elementwise)
#define COST_REDUCE_PRECISION COSTED(cost_elementwise)
#define COST_SELECT COSTED(cost_elementwise)
#define COST_CLAMP COSTED(cost_elementwise)
#define COST_MAP COSTED(cost_elementwise)
#define COST_BROADCAST COSTED(cost_move)
#define COST_RESHAPE COSTED(cost_free) /* an alias of its operand */
#define COST_BITCAST COSTED(cost_free)
#define COST_TRANSPOSE COSTED(cost_move)
#define COST_SLICE COSTED(cost_move)
#define COST_CONCATENATE COSTED(cost_move)
#define COST_REVERSE COSTED(cost_move)
#define COST_PAD COSTED(cost_move)
#define COST_DYNAMIC_SLICE COSTED(cost_dynamic_slice)
#define COST_DYNAMIC_UPDATE_SLICE COSTED(cost_dynamic_update_slice)
#define COST_GATHER COSTED(cost_move)
#define COST_SCATTER COSTED(cost_scatter)
#define COST_DOT COSTED(cost_dot)
#define COST_CONVOLUTION COSTED(cost_convolution)
#define COST_REDUCE COSTED(cost_reduce)
#define COST_REDUCE_WINDOW COSTED(cost_reduce_window)
#define COST_SELECT_AND_SCATTER COSTED(cost_select_and_scatter)
#define COST_BATCH_NORM_TRAINING COSTED(cost_batch_norm)
#define COST_BATCH_NORM_INFERENCE COSTED(cost_batch_norm)
#define COST_BATCH_NORM_GRAD COSTED(cost_batch_norm)
#define COST_SORT COSTED(cost_sort)
#define COST_TOPK COSTED(cost_topk)
#define COST_RNG COSTED(cost_rng)
#define COST_RNG_BIT_GENERATOR COSTED(cost_rng_bit_generator)
#define COST_TUPLE COSTED(cost_free)
#define COST_GET_TUPLE_ELEMENT COSTED(cost_free)
#define COST_WHILE COSTED(cost_free) /* its body is charged as it runs */
#define COST_CALL COSTED(cost_free)
#define COST_CONDITIONAL COSTED(cost_free)
#define COST_FUSION COSTED(cost_fusion)
#define COST_CUSTOM_CALL COSTED(cost_custom_call)
#define COST_OPTIMIZATION_BARRIER COSTED(cost_free)
#define COST_AFTER_ALL COSTED(cost_free)
#define COST_COPY COSTED(cost_copy)
#define COST_COPY_START COSTED(cost_copy)
#define COST_COPY_DONE COSTED(cost_copy)
#define COST_ALL_REDUCE NOT_COSTED("collectives: one device has no links")
#define COST_ALL_GATHER NOT_COSTED("collectives: one device has no links")
#define COST_REDUCE_SCATTER NOT_COSTED("collectives: one device has no links")
#define COST_ALL_TO_ALL NOT_COSTED("collectives: one device has no links")
#define COST_COLLECTIVE_PERMUTE                                             \
    NOT_COSTED("collectives: one device has no links")
#define COST_PARTITION_ID COSTED(cost_free)
#define COST_REPLICA_ID COSTED(cost_free)
#define COST_UNKNOWN NOT_COSTED("an unknown opcode has no cost rule")

static const struct {
    cost_rule rule;
    const char *not_modelled;
} table[] = {
#define HS_X(e, n, a, c, f) [HS_OP_##e] = COST_OF_##f(e),
    HS_OPCODE_LIST(HS_X)
#undef HS_X
};
_Static_assert(sizeof table / sizeof table[0] == HS_OP_COUNT,
               "every opcode has a cost entry");

const char *dev_cost_not_modelled(hs_opcode op)
{
    return (unsigned)op < HS_OP_COUNT ? table[op].not_modelled
                                      : table[HS_OP_UNKNOWN].not_modelled;
}

void dev_cost(const hs_device_spec *spec, const hs_instruction *in,
              double *flops, double *bytes, double *seconds)
{
    cost c = {0, 0, false};
    unsigned op = (unsigned)in->opcode;
    table[op < HS_OP_COUNT ? op : HS_OP_UNKNOWN].rule(spec, in, &c);
    double f = c.flops, b = c.bytes;
    bool host_link = c.host_link;
    *flops = f;
    *bytes = b;
    double t;
    if (host_link) {
        t = spec->host_link_bandwidth > 0 ? b / spec->host_link_bandwidth
                                          : 0;
    } else {
        double tf = spec->peak_flops > 0 ? f / spec->peak_flops : 0;
        double tb = spec->hbm_bandwidth > 0 ? b / spec->hbm_bandwidth : 0;
        t = tf > tb ? tf : tb;
    }
    *seconds = t;
}
