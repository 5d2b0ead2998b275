/* name_index.c - see name_index.h. */
#include "model/name_index.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t hash_name(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

bool hs__name_index_init(hs__name_index *ix, size_t expected)
{
    size_t cap = 16;
    while (cap < 2 * expected)
        cap *= 2;
    ix->mask = cap - 1;
    ix->keys = calloc(cap, sizeof *ix->keys);
    ix->values = calloc(cap, sizeof *ix->values);
    if (!ix->keys || !ix->values) {
        hs__name_index_free(ix);
        return false;
    }
    return true;
}

void hs__name_index_free(hs__name_index *ix)
{
    free(ix->keys);
    free(ix->values);
    ix->keys = NULL;
    ix->values = NULL;
    ix->mask = 0;
}

/* The slot of key, or the empty slot where it would go. */
static size_t slot_of(const hs__name_index *ix, const char *key)
{
    size_t k = (size_t)hash_name(key) & ix->mask;
    while (ix->keys[k] && strcmp(ix->keys[k], key) != 0)
        k = (k + 1) & ix->mask;
    return k;
}

void hs__name_index_put(hs__name_index *ix, const char *key, int value)
{
    size_t k = slot_of(ix, key);
    ix->keys[k] = key;
    ix->values[k] = value;
}

int hs__name_index_get(const hs__name_index *ix, const char *key)
{
    if (!ix->keys)
        return -1;
    size_t k = slot_of(ix, key);
    return ix->keys[k] ? ix->values[k] : -1;
}
