/*
 * hashset.h - a small open-addressing map from pointers to integers, used by
 * the verifier (computations) and the module-order helper. Heap-allocated
 * with a fixed capacity chosen up front (twice the expected count, rounded
 * to a power of two), so inserts never rehash and every operation is O(1)
 * on average. Inserting more keys than `expected` is a programming error.
 */
#ifndef HLOSCOPE_IR_HASHSET_H
#define HLOSCOPE_IR_HASHSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A map from non-NULL pointers to int64 values. */
typedef struct hs__ptrmap {
    size_t mask;
    const void **keys;
    int64_t *values;
} hs__ptrmap;

bool hs__ptrmap_init(hs__ptrmap *m, size_t expected);
void hs__ptrmap_free(hs__ptrmap *m);
/* Inserts or overwrites key. */
void hs__ptrmap_put(hs__ptrmap *m, const void *key, int64_t value);
/* Returns true and sets *value when key is present. */
bool hs__ptrmap_get(const hs__ptrmap *m, const void *key, int64_t *value);

#endif
