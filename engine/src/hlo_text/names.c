/* names.c - an open-addressing map from names to pointers. The parser
 * resolves every operand and called computation through it, so lookups
 * must stay O(1) for modules with 100k instructions. Keys point into the
 * text being parsed and are not copied. */
#include <stdlib.h>
#include <string.h>

#include "hlo_text/hlo_text_internal.h"

struct hs_name_slot {
    const char *key; /* NULL: empty */
    size_t len;
    uint64_t hash;
    void *value;
};

static uint64_t hash_name(const char *key, size_t len)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t k = 0; k < len; k++) {
        h ^= (unsigned char)key[k];
        h *= 1099511628211ull;
    }
    return h;
}

void hs__map_free(hs_name_map *m)
{
    free(m->slots);
    m->slots = NULL;
    m->cap = m->n = 0;
}

static struct hs_name_slot *find(const hs_name_map *m, const char *key,
                                 size_t len, uint64_t h)
{
    size_t mask = m->cap - 1;
    for (size_t k = h & mask;; k = (k + 1) & mask) {
        struct hs_name_slot *sl = &m->slots[k];
        if (!sl->key)
            return sl;
        if (sl->hash == h && sl->len == len && memcmp(sl->key, key, len) == 0)
            return sl;
    }
}

static bool grow(hs_name_map *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    struct hs_name_slot *old = m->slots;
    size_t old_cap = m->cap;
    m->slots = calloc(cap, sizeof *m->slots);
    if (!m->slots) {
        m->slots = old;
        return false;
    }
    m->cap = cap;
    for (size_t k = 0; k < old_cap; k++)
        if (old[k].key)
            *find(m, old[k].key, old[k].len, old[k].hash) = old[k];
    free(old);
    return true;
}

void *hs__map_get(const hs_name_map *m, const char *key, size_t len)
{
    if (!m->cap)
        return NULL;
    struct hs_name_slot *sl = find(m, key, len, hash_name(key, len));
    return sl->key ? sl->value : NULL;
}

bool hs__map_put(hs_name_map *m, const char *key, size_t len, void *value,
                 void **existing)
{
    if ((m->n + 1) * 2 > m->cap && !grow(m))
        return false;
    uint64_t h = hash_name(key, len);
    struct hs_name_slot *sl = find(m, key, len, h);
    if (sl->key) {
        if (existing)
            *existing = sl->value;
        return true;
    }
    if (existing)
        *existing = NULL;
    sl->key = key;
    sl->len = len;
    sl->hash = h;
    sl->value = value;
    m->n++;
    return true;
}

void hs__map_set(hs_name_map *m, const char *key, size_t len, void *value)
{
    if (!m->cap)
        return;
    struct hs_name_slot *sl = find(m, key, len, hash_name(key, len));
    if (sl->key)
        sl->value = value;
}
