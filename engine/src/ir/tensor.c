/* tensor.c - host-owned array values. */
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_tensor.h"

hs_tensor *hs_tensor_new(const hs_shape *shape)
{
    /* A tuple, or an array without a size ('?' dimensions). */
    if (shape->dtype == HS_TUPLE || hs_shape_bytes(shape) < 0)
        return NULL;
    hs_tensor *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->shape = *shape;
    t->shape.elems = NULL;
    t->shape.layout_tail = NULL; /* points into a module arena otherwise */
    size_t bytes = (size_t)hs_shape_bytes(shape);
    size_t rounded = (bytes + 63) & ~(size_t)63;
    t->data = aligned_alloc(64, rounded ? rounded : 64);
    if (!t->data) {
        free(t);
        return NULL;
    }
    memset(t->data, 0, rounded ? rounded : 64);
    return t;
}

hs_tensor *hs_tensor_copy(const hs_tensor *src)
{
    hs_tensor *t = hs_tensor_new(&src->shape);
    if (t)
        memcpy(t->data, src->data, (size_t)hs_shape_bytes(&src->shape));
    return t;
}

void hs_tensor_free(hs_tensor *t)
{
    if (!t)
        return;
    free(t->data);
    free(t);
}

int64_t hs_tensor_elements(const hs_tensor *t)
{
    return hs_shape_elements(&t->shape);
}
