/* params.c - parameter records and deterministic initial values from a
 * counter-based generator keyed by (seed, name). */
#include "model/params.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_tensor.h"
#include "numerics/element_types.h"

/* ---- generator ---------------------------------------------------------- */

static uint64_t splitmix64(uint64_t z)
{
    z += UINT64_C(0x9E3779B97F4A7C15);
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static uint64_t fnv1a64(const char *s)
{
    uint64_t h = UINT64_C(0xCBF29CE484222325);
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= UINT64_C(0x100000001B3);
    }
    return h;
}

void hs_model_fill_uniform(uint64_t seed, const char *stream, float lo,
                           float hi, float *out, int64_t n)
{
    /* splitmix64(x) already adds the golden gamma once, so element i mixes
     * key + (i + 1) * gamma as documented. */
    uint64_t key = splitmix64(splitmix64(seed) ^ fnv1a64(stream));
    float span = hi - lo;
    for (int64_t i = 0; i < n; i++) {
        uint64_t bits = splitmix64(key + (uint64_t)i *
                                             UINT64_C(0x9E3779B97F4A7C15));
        float u = (float)(bits >> 40) * (1.0f / 16777216.0f);
        out[i] = lo + span * u;
    }
}

void hs_model_fill_param(uint64_t seed, const hs_model_param *p, float *out)
{
    int64_t n = hs_shape_elements(&p->shape);
    switch (p->init_kind) {
    case HS_INIT_UNIFORM:
        hs_model_fill_uniform(seed, p->name, -p->bound, p->bound, out, n);
        break;
    case HS_INIT_ZEROS:
        memset(out, 0, (size_t)n * sizeof *out);
        break;
    case HS_INIT_ONES:
        for (int64_t i = 0; i < n; i++)
            out[i] = 1.0f;
        break;
    case HS_INIT_VALUES:
        memcpy(out, p->values, (size_t)n * sizeof *out);
        break;
    }
}

float hs__param_fan_in_bound(const hs_shape *s)
{
    int64_t fan_in = 1;
    if (s->rank == 1)
        fan_in = s->dims[0];
    for (int i = 1; i < s->rank; i++)
        fan_in *= s->dims[i];
    return (float)(1.0 / sqrt((double)fan_in));
}

/* ---- records ------------------------------------------------------------ */

void hs__param_list_free(hs_param_list *l)
{
    free(l->v);
    memset(l, 0, sizeof *l);
}

bool hs__param_list_add(hs_param_list *l, hs_arena *a, const char *name,
                        const hs_shape *shape, int64_t number,
                        hs_init_kind kind, float bound, const float *values)
{
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 16;
        hs_model_param *v = realloc(l->v, (size_t)cap * sizeof *v);
        if (!v)
            return false;
        l->v = v;
        l->cap = cap;
    }
    hs_model_param *p = &l->v[l->n];
    memset(p, 0, sizeof *p);
    p->name = hs_arena_strdup(a, name);
    if (!p->name)
        return false;
    p->shape = *shape;
    p->number = number;
    p->slice = -1;
    p->stack = -1;
    p->init_kind = kind;
    p->bound = bound;
    p->values = kind == HS_INIT_VALUES ? values : NULL;
    l->n++;
    return true;
}

/* A parameter held by a stack is a view of its slice: a tensor header of
 * its own whose data points into the stack's tensor, so the values exist
 * once and a change through either name is seen through the other. */
static hs_tensor *slice_view(const hs_model_param *p,
                             const hs_model_stack *stacks)
{
    const hs_tensor *st = stacks[p->stack].value;
    hs_tensor *t = st ? calloc(1, sizeof *t) : NULL;
    if (!t)
        return NULL;
    t->shape = p->shape;
    t->shape.elems = NULL;
    t->shape.layout_tail = NULL;
    t->data = (char *)st->data + (size_t)p->slice *
                                     (size_t)hs_shape_bytes(&p->shape);
    return t;
}

bool hs__params_materialize(uint64_t seed, hs_model_param *ps, int n,
                            const hs_model_stack *stacks)
{
    for (int i = 0; i < n; i++) {
        ps[i].value = ps[i].stack >= 0 ? slice_view(&ps[i], stacks)
                                       : hs_tensor_new(&ps[i].shape);
        if (!ps[i].value)
            return false;
        if (ps[i].shape.dtype == HS_F32) {
            ps[i].init = hs_tensor_f32(ps[i].value);
            hs_model_fill_param(seed, &ps[i], ps[i].init);
        } else if (!hs__fill_narrow(ps[i].value, seed, &ps[i])) {
            return false;
        }
    }
    return true;
}

bool hs__fill_narrow(hs_tensor *t, uint64_t seed, const hs_model_param *p)
{
    /* A bf16/f16 model draws the f32 values an f32 model would and rounds
     * them to nearest even, as module.to(torch.bfloat16) does. */
    int64_t n = hs_shape_elements(&t->shape);
    float *wide = malloc((size_t)(n > 0 ? n : 1) * sizeof *wide);
    if (!wide)
        return false;
    if (p)
        hs_model_fill_param(seed, p, wide);
    else
        hs_model_fill_uniform(seed, "input", -1, 1, wide, n);
    elem_convert(HS_F32, t->shape.dtype, wide, t->data, n);
    free(wide);
    return true;
}

void hs__params_release(hs_model_param *ps, int n)
{
    for (int i = 0; i < n; i++) {
        if (ps[i].stack >= 0)
            free(ps[i].value); /* a view: the stack owns the data */
        else
            hs_tensor_free(ps[i].value);
        ps[i].value = NULL;
        ps[i].init = NULL;
    }
}

/* ---- stacked parameters of scanned repeats -------------------------------- */

void hs__entry_params_free(hs_entry_params *e)
{
    hs__param_list_free(&e->list);
    free(e->stacks);
    e->stacks = NULL;
    e->n_stacks = e->cap_stacks = 0;
}

int hs__entry_params_add_stack(hs_entry_params *e, const char *name,
                               const char *local, int64_t number,
                               int64_t first_layer, const hs_shape *shape)
{
    if (e->n_stacks == e->cap_stacks) {
        int cap = e->cap_stacks ? e->cap_stacks * 2 : 8;
        hs_model_stack *v = realloc(e->stacks, (size_t)cap * sizeof *v);
        if (!v)
            return -1;
        e->stacks = v;
        e->cap_stacks = cap;
    }
    hs_model_stack *s = &e->stacks[e->n_stacks];
    memset(s, 0, sizeof *s);
    s->name = hs_arena_strdup(e->arena, name);
    s->local = hs_arena_strdup(e->arena, local);
    if (!s->name || !s->local)
        return -1;
    s->number = number;
    s->first_layer = first_layer;
    s->shape = *shape;
    return e->n_stacks++;
}

bool hs__stacks_materialize(hs_model_stack *stacks, int n_stacks)
{
    for (int s = 0; s < n_stacks; s++)
        if (!(stacks[s].value = hs_tensor_new(&stacks[s].shape)))
            return false;
    return true;
}
