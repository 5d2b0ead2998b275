/*
 * hashset.c - open-addressing pointer map (linear probing).
 */
#include "ir/hashset.h"

#include <stdlib.h>
#include <string.h>

static size_t capacity_for(size_t expected)
{
    size_t cap = 16;
    while (cap < expected * 2 + 1)
        cap <<= 1;
    return cap;
}

static size_t hash_pointer(const void *p)
{
    /* MurmurHash3's finalizer: arena pointers share their low bits, so
     * every bit must reach the low bits that index the table. */
    uint64_t h = (uint64_t)(uintptr_t)p;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return (size_t)h;
}

bool hs__ptrmap_init(hs__ptrmap *m, size_t expected)
{
    size_t cap = capacity_for(expected);
    m->keys = calloc(cap, sizeof *m->keys);
    m->values = malloc(cap * sizeof *m->values);
    m->mask = cap - 1;
    if (!m->keys || !m->values) {
        hs__ptrmap_free(m);
        return false;
    }
    return true;
}

void hs__ptrmap_free(hs__ptrmap *m)
{
    free(m->keys);
    free(m->values);
    m->keys = NULL;
    m->values = NULL;
}

void hs__ptrmap_put(hs__ptrmap *m, const void *key, int64_t value)
{
    size_t k = hash_pointer(key) & m->mask;
    while (m->keys[k] && m->keys[k] != key)
        k = (k + 1) & m->mask;
    m->keys[k] = key;
    m->values[k] = value;
}

bool hs__ptrmap_get(const hs__ptrmap *m, const void *key, int64_t *value)
{
    size_t k = hash_pointer(key) & m->mask;
    while (m->keys[k]) {
        if (m->keys[k] == key) {
            *value = m->values[k];
            return true;
        }
        k = (k + 1) & m->mask;
    }
    return false;
}
