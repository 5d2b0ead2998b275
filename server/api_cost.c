/* api_cost.c - how much work one execution of a module is: FLOPs by a
 * roofline-style count (2*M*N*K for dot, one per element otherwise) and
 * bytes read and written, with while bodies counted known_trip_count
 * times. The server checks `run` requests against its limits with it
 * before drawing any weights. */
#include "api.h"

static int64_t elements(const hs_shape *s)
{
    if (!hs_shape_is_tuple(s))
        return hs_shape_elements(s);
    int64_t n = 0;
    for (int k = 0; k < s->n_elems; k++)
        n += elements(&s->elems[k]);
    return n;
}

static double dot_flops(const hs_instruction *in)
{
    double k = 1;
    const hs_shape *lhs = &in->operands[0]->shape;
    if (in->dot)
        for (int d = 0; d < in->dot->n_lhs_contracting; d++) {
            int64_t dim = in->dot->lhs_contracting[d];
            if (dim >= 0 && dim < lhs->rank)
                k *= (double)lhs->dims[dim];
        }
    return 2.0 * (double)elements(&in->shape) * k;
}

static void cost_of(const hs_computation *c, double mult, int depth,
                    double *flops, double *bytes)
{
    if (depth > 64)
        return;
    for (int k = 0; k < c->n_instrs; k++) {
        const hs_instruction *in = c->instrs[k];
        switch (in->opcode) {
        case HS_OP_PARAMETER:
        case HS_OP_TUPLE:
        case HS_OP_GET_TUPLE_ELEMENT:
        case HS_OP_CONSTANT:
            continue;
        case HS_OP_WHILE: {
            double trip = in->known_trip_count > 0 ? (double)in->known_trip_count : 1;
            if (in->n_called >= 2) {
                cost_of(in->called[0], mult * (trip + 1), depth + 1, flops, bytes);
                cost_of(in->called[1], mult * trip, depth + 1, flops, bytes);
            }
            continue;
        }
        case HS_OP_CALL:
        case HS_OP_CONDITIONAL:
        case HS_OP_FUSION:
            for (int j = 0; j < in->n_called; j++)
                cost_of(in->called[j], mult, depth + 1, flops, bytes);
            continue;
        case HS_OP_DOT:
            *flops += mult * dot_flops(in);
            break;
        case HS_OP_REDUCE:
            *flops += mult * (double)elements(&in->operands[0]->shape);
            break;
        default:
            if (hs_opcode_is_elementwise(in->opcode))
                *flops += mult * (double)elements(&in->shape);
            break;
        }
        double b = (double)hs_shape_total_bytes(&in->shape);
        if (in->opcode == HS_OP_DYNAMIC_SLICE || in->opcode == HS_OP_SLICE)
            b *= 2; /* reads only the slice */
        else if (in->opcode == HS_OP_DYNAMIC_UPDATE_SLICE && in->n_operands > 1)
            b = 2.0 * (double)hs_shape_total_bytes(&in->operands[1]->shape);
        else
            for (int j = 0; j < in->n_operands; j++)
                b += (double)hs_shape_total_bytes(&in->operands[j]->shape);
        *bytes += mult * b;
    }
}

void api_cost_estimate(const hs_module *m, double *flops, double *bytes)
{
    *flops = 0, *bytes = 0;
    if (m && m->entry)
        cost_of(m->entry, 1, 0, flops, bytes);
}
