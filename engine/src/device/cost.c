/*
 * cost.c - the roofline cost of one instruction on a device spec:
 *     seconds = max(flops / peak_flops, bytes / hbm_bandwidth)
 * flops: dot 2*M*N*K*batch, element-wise ops one per output element
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

void dev_cost(const hs_device_spec *spec, const hs_instruction *in,
              double *flops, double *bytes, double *seconds)
{
    double f = 0, b = 0;
    bool host_link = false;
    switch (hs_opcode_category(in->opcode)) {
    case HS_CAT_ELEMENTWISE:
        if (in->opcode == HS_OP_BITCAST_CONVERT)
            break;
        f = (double)hs_shape_elements(&in->shape);
        b = operand_bytes(in) + arr_bytes(&in->shape);
        break;
    case HS_CAT_DOT:
        f = dot_flops(in);
        b = operand_bytes(in) + arr_bytes(&in->shape);
        break;
    case HS_CAT_REDUCTION:
        f = in->n_operands ? (double)hs_shape_elements(
                                 &in->operands[0]->shape)
                           : 0;
        b = operand_bytes(in) + arr_bytes(&in->shape);
        break;
    case HS_CAT_DATA_MOVEMENT:
        if (in->opcode == HS_OP_RESHAPE || in->opcode == HS_OP_BITCAST)
            break;
        if (dev_dynamic_slice_is_view(in))
            break;
        if (in->opcode == HS_OP_DYNAMIC_SLICE)
            b = 2 * arr_bytes(&in->shape);
        else if (in->opcode == HS_OP_DYNAMIC_UPDATE_SLICE)
            b = in->n_operands > 1 ? 2 * arr_bytes(&in->operands[1]->shape)
                                   : 0;
        else
            b = operand_bytes(in) + arr_bytes(&in->shape);
        break;
    case HS_CAT_CONSTANT:
        if (in->opcode == HS_OP_IOTA)
            b = arr_bytes(&in->shape);
        break;
    case HS_CAT_COPY: {
        /* copy-done waits for its copy-start, which moved the data. */
        const hs_shape *d = copy_dest(in);
        if (!d)
            break;
        b = arr_bytes(d);
        host_link = dev_is_host_transfer(in);
        if (!host_link)
            b += operand_bytes(in);
        break;
    }
    case HS_CAT_CUSTOM_CALL:
        if (dev_is_host_transfer(in)) {
            b = arr_bytes(&in->shape);
            host_link = true;
        }
        break;
    case HS_CAT_FUSION:
        f = fused_flops(spec, in, 0);
        b = operand_bytes(in) + arr_bytes(&in->shape);
        break;
    default:
        break;
    }
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
