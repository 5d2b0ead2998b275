/* vjp_dot.c - the VJP of a general dot (dot_general).
 *
 * y = dot(lhs, rhs) has dimensions [batch..., lhs free..., rhs free...].
 * The cotangent of lhs contracts gy with rhs over rhs's free dimensions
 * (batch dimensions stay batch dimensions):
 *
 *     g_lhs = dot(gy, rhs)   -> [batch..., lhs free..., rhs contracting...]
 *
 * and a transpose puts those dimensions back in lhs's order (the rhs
 * contracting dimensions stand for the lhs contracting dimensions they were
 * paired with). g_rhs is the same with the roles swapped. For a Linear
 * layer y = x W^T this is g_x = gy W and g_W = gy^T x, with no transpose. */
#include <string.h>

#include "autodiff/autodiff_internal.h"

/* One side's view of the dot: `self` is the operand whose cotangent is
 * built, `other` the operand it is contracted against. */
typedef struct side {
    const hs_shape *self, *other;
    int nb, nc;
    const int64_t *self_batch, *self_contracting;
    const int64_t *other_batch, *other_contracting;
    int gy_free_start; /* where other's free dimensions start in gy */
} side;

static int free_dims(const hs_shape *s, const int64_t *batch,
                     const int64_t *contracting, int nb, int nc,
                     int64_t *out)
{
    bool used[HS_MAX_RANK] = {false};
    for (int k = 0; k < nb; k++)
        used[batch[k]] = true;
    for (int k = 0; k < nc; k++)
        used[contracting[k]] = true;
    int n = 0;
    for (int d = 0; d < s->rank; d++)
        if (!used[d])
            out[n++] = d;
    return n;
}

static hs_instruction *cotangent_of(hs_builder *b, const side *s,
                                    hs_instruction *gy, hs_instruction *other)
{
    int64_t self_free[HS_MAX_RANK], other_free[HS_MAX_RANK];
    int n_self_free = free_dims(s->self, s->self_batch, s->self_contracting,
                                s->nb, s->nc, self_free);
    int n_other_free = free_dims(s->other, s->other_batch,
                                 s->other_contracting, s->nb, s->nc,
                                 other_free);
    hs_dot_dims d;
    memset(&d, 0, sizeof d);
    d.n_lhs_batch = d.n_rhs_batch = s->nb;
    for (int k = 0; k < s->nb; k++) {
        d.lhs_batch[k] = k; /* gy's batch dimensions come first */
        d.rhs_batch[k] = s->other_batch[k];
    }
    d.n_lhs_contracting = d.n_rhs_contracting = n_other_free;
    for (int k = 0; k < n_other_free; k++) {
        d.lhs_contracting[k] = s->gy_free_start + k;
        d.rhs_contracting[k] = other_free[k];
    }
    hs_instruction *g = hs_b_dot(b, gy, other, &d);
    /* g's dimensions: batch, self free, then other's contracting dimensions
     * in increasing order; map each to the self dimension it stands for. */
    int64_t from[HS_MAX_RANK]; /* g dimension -> self dimension */
    int n = 0;
    for (int k = 0; k < s->nb; k++)
        from[n++] = s->self_batch[k];
    for (int k = 0; k < n_self_free; k++)
        from[n++] = self_free[k];
    for (int od = 0; od < s->other->rank; od++)
        for (int k = 0; k < s->nc; k++)
            if (s->other_contracting[k] == od)
                from[n++] = s->self_contracting[k];
    int64_t perm[HS_MAX_RANK]; /* self dimension -> g dimension */
    for (int k = 0; k < n; k++)
        perm[from[k]] = k;
    return hs__ad_transpose(b, g, perm);
}

void hs__vjp_dot(hs_vjp *v, hs_instruction *y)
{
    hs_builder *b = hs__vjp_builder(v);
    hs_instruction *gy = hs__vjp_cotangent(v, y);
    hs_instruction *lhs = y->operands[0], *rhs = y->operands[1];
    static const hs_dot_dims none;
    const hs_dot_dims *dd = y->dot ? y->dot : &none;
    int nb = dd->n_lhs_batch, nc = dd->n_lhs_contracting;
    int lhs_free = lhs->shape.rank - nb - nc;
    if (hs__vjp_active(v, lhs)) {
        side s = {&lhs->shape, &rhs->shape, nb, nc,
                  dd->lhs_batch, dd->lhs_contracting,
                  dd->rhs_batch, dd->rhs_contracting, nb + lhs_free};
        hs__vjp_acc(v, lhs, cotangent_of(b, &s, gy, rhs));
    }
    if (hs__vjp_active(v, rhs)) {
        side s = {&rhs->shape, &lhs->shape, nb, nc,
                  dd->rhs_batch, dd->rhs_contracting,
                  dd->lhs_batch, dd->lhs_contracting, nb};
        hs__vjp_acc(v, rhs, cotangent_of(b, &s, gy, lhs));
    }
}
