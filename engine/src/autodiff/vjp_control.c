/* vjp_control.c - VJP rules of tuples, while loops and custom-calls.
 *
 * Tuples carry one cotangent per element, so tuple / get-tuple-element just
 * route them. A while loop is handed to the hook in hs_autodiff_options
 * (scan's reverse scan); without one it is an error. Of the custom-calls,
 * the placement annotations torch_xla's place_to_host / place_to_device
 * trace to are differentiated:
 *
 *     y = place_to_host(x)     g_x = place_to_device(g_y)
 *     y = place_to_device(h)   g_h = g_y
 *
 * The value an activation is offloaded as lives on the host, but its
 * cotangent is made and consumed on the device: the gradient of
 * place_to_host is annotated for the device (as JAX transposes a
 * device_put to host memory into one back to the source memory), and the
 * gradient of place_to_device passes through unchanged rather than making
 * a round trip to host memory. */
#include <stdlib.h>
#include <string.h>

#include "autodiff/autodiff_internal.h"

void hs__vjp_tuple(hs_vjp *v, hs_instruction *y)
{
    for (int k = 0; k < y->n_operands; k++) {
        hs_instruction *g = hs__vjp_cotangent_elem(v, y, k);
        hs_instruction *x = y->operands[k];
        if (!g || !hs__vjp_active(v, x))
            continue;
        if (x->shape.dtype == HS_TUPLE) {
            hs__vjp_fail(v, y, HS_ERR_UNSUPPORTED,
                         "autodiff: nested tuples are not differentiated "
                         "(instruction %s, element %d)",
                         y->name, k);
            return;
        }
        hs__vjp_acc(v, x, g);
    }
}

void hs__vjp_get_tuple_element(hs_vjp *v, hs_instruction *y)
{
    if (y->shape.dtype == HS_TUPLE) {
        hs__vjp_fail(v, y, HS_ERR_UNSUPPORTED,
                     "autodiff: nested tuples are not differentiated "
                     "(instruction %s)",
                     y->name);
        return;
    }
    hs__vjp_acc_elem(v, y->operands[0], (int)y->index,
                     hs__vjp_cotangent(v, y));
}

/* Element k of the loop's initial state is wanted when it holds floats
 * and depends on a differentiated input. */
static bool init_element_active(const hs_vjp *v, const hs_instruction *init,
                                int k)
{
    if (!hs__vjp_active(v, init))
        return false;
    if (init->opcode == HS_OP_TUPLE)
        return hs__vjp_active(v, init->operands[k]);
    const hs_shape *e = &init->shape.elems[k];
    return e->dtype != HS_TUPLE && hs_dtype_is_float(e->dtype);
}

void hs__vjp_while(hs_vjp *v, hs_instruction *y)
{
    const hs_autodiff_options *o = hs__vjp_options(v);
    if (!o->while_vjp) {
        hs__vjp_fail(v, y, HS_ERR_UNSUPPORTED,
                     "autodiff: while loops are differentiated by scan's "
                     "reverse scan (not yet): instruction %s%s%s",
                     y->name, y->op_name ? ", op_name " : "",
                     y->op_name ? y->op_name : "");
        return;
    }
    hs_instruction *init = y->operands[0];
    int n = y->shape.dtype == HS_TUPLE ? y->shape.n_elems : 0;
    hs_instruction **ct = calloc((size_t)n + 1, sizeof *ct);
    hs_instruction **init_ct = calloc((size_t)n + 1, sizeof *init_ct);
    bool *active = calloc((size_t)n + 1, sizeof *active);
    if (!ct || !init_ct || !active) {
        hs__vjp_fail(v, y, HS_ERR_NOMEM, "autodiff: out of host memory");
        goto done;
    }
    for (int k = 0; k < n; k++) {
        ct[k] = hs__vjp_cotangent_elem(v, y, k);
        active[k] = init_element_active(v, init, k);
    }
    hs_autodiff_while w = {.loop = y, .init = init, .n = n, .cotangent = ct,
                           .active = active, .init_cotangent = init_ct};
    hs_error e;
    hs_error_clear(&e);
    hs_builder *b = hs__vjp_builder(v);
    hs_status st = o->while_vjp(b, &w, o->while_user, &e);
    if (st != HS_OK) {
        hs__vjp_fail(v, y, st, "%s", e.message[0] ? e.message
                                                  : "while-loop VJP failed");
        goto done;
    }
    for (int k = 0; k < n && hs_builder_ok(b); k++)
        if (active[k])
            hs__vjp_acc_elem(v, init, k, init_ct[k]);
done:
    free(ct);
    free(init_ct);
    free(active);
}

void hs__vjp_custom_call(hs_vjp *v, hs_instruction *y)
{
    const char *t = y->custom_call_target ? y->custom_call_target : "";
    if (strcmp(t, "TopK") == 0) { /* the top-k of torch_xla and JAX dumps */
        hs__vjp_topk(v, y);
        return;
    }
    hs_instruction *gy = hs__vjp_cotangent(v, y);
    hs_placement place = hs_instruction_placement(y);
    bool to_host = place == HS_PLACEMENT_HOST || strcmp(t, "MoveToHost") == 0;
    bool to_device =
        place == HS_PLACEMENT_DEVICE || strcmp(t, "MoveToDevice") == 0;
    if ((!to_host && !to_device) || y->n_operands != 1) {
        hs__vjp_fail(v, y, HS_ERR_UNSUPPORTED,
                     "autodiff: no gradient rule for custom-call target '%s' "
                     "(instruction %s%s%s)",
                     t, y->name, y->op_name ? ", op_name " : "",
                     y->op_name ? y->op_name : "");
        return;
    }
    if (to_device) {
        hs__vjp_acc(v, y->operands[0], gy);
        return;
    }
    hs_builder *b = hs__vjp_builder(v);
    hs_shape s = hs_shape_make(gy->shape.dtype, gy->shape.rank,
                               gy->shape.dims);
    hs_instruction *g = hs_b_custom_call(b, HS_PLACEMENT_TARGET, &gy, 1, &s);
    if (g)
        (void)hs_instruction_set_placement(g, false);
    hs__vjp_acc(v, y->operands[0], g);
}
