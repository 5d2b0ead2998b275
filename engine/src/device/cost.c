/*
 * cost.c - the roofline cost of one instruction on a device spec:
 *     seconds = max(flops / peak_flops, bytes / hbm_bandwidth)
 * flops: dot 2*M*N*K*batch, element-wise ops one per output element
 * (transcendentals count 1), reduce one per input element. bytes: operands
 * plus result, except for instructions that move no data (parameters,
 * constants, tuples, get-tuple-element, aliasing reshapes and bitcasts,
 * control flow: their callees are charged as they run). Dynamic slices
 * touch only the slice (XLA updates in place). Transfers between device and
 * host memory run at the host-link bandwidth instead.
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
    case HS_CAT_COPY:
        b = arr_bytes(&in->shape);
        host_link = in->n_operands > 0 &&
                    dev_space_index(in->operands[0]->shape.memory_space) !=
                        dev_space_index(in->shape.memory_space);
        if (!host_link)
            b += operand_bytes(in);
        break;
    case HS_CAT_CUSTOM_CALL: {
        const char *t = in->custom_call_target;
        if (t && (strcmp(t, "MoveToHost") == 0 ||
                  strcmp(t, "MoveToDevice") == 0)) {
            b = arr_bytes(&in->shape);
            host_link = true;
        }
        break;
    }
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
