/* cache.c - the compile cache: executables by key, bounded, least recently
 * used evicted first. Capacities are small (tens to hundreds of entries),
 * so a linear scan under one mutex is both simple and fast enough. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "compile/compile_internal.h"
#include "hloscope/hs_compile.h"

typedef struct entry {
    hs__cache_key key;
    hs_executable *exe; /* NULL: free slot */
    uint64_t last_used;
} entry;

struct hs_compile_cache {
    pthread_mutex_t mu;
    int capacity;
    uint64_t tick;
    entry *entries;
};

hs_compile_cache *hs_compile_cache_new(int capacity)
{
    if (capacity <= 0)
        capacity = 64;
    hs_compile_cache *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->entries = calloc((size_t)capacity, sizeof *c->entries);
    if (!c->entries || pthread_mutex_init(&c->mu, NULL) != 0) {
        free(c->entries);
        free(c);
        return NULL;
    }
    c->capacity = capacity;
    return c;
}

void hs_compile_cache_clear(hs_compile_cache *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    for (int k = 0; k < c->capacity; k++) {
        hs_executable_release(c->entries[k].exe);
        c->entries[k].exe = NULL;
    }
    pthread_mutex_unlock(&c->mu);
}

void hs_compile_cache_free(hs_compile_cache *c)
{
    if (!c)
        return;
    hs_compile_cache_clear(c);
    pthread_mutex_destroy(&c->mu);
    free(c->entries);
    free(c);
}

int hs_compile_cache_size(hs_compile_cache *c)
{
    int n = 0;
    pthread_mutex_lock(&c->mu);
    for (int k = 0; k < c->capacity; k++)
        n += c->entries[k].exe != NULL;
    pthread_mutex_unlock(&c->mu);
    return n;
}

int hs_compile_cache_capacity(const hs_compile_cache *c)
{
    return c->capacity;
}

static bool key_equal(const hs__cache_key *a, const hs__cache_key *b)
{
    return a->fingerprint == b->fingerprint &&
           a->options_hash == b->options_hash &&
           a->fold_max_elements == b->fold_max_elements &&
           strcmp(a->device, b->device) == 0 &&
           strcmp(a->pipeline, b->pipeline) == 0;
}

/* Called with the mutex held. */
static entry *find(hs_compile_cache *c, const hs__cache_key *k)
{
    for (int i = 0; i < c->capacity; i++)
        if (c->entries[i].exe && key_equal(&c->entries[i].key, k))
            return &c->entries[i];
    return NULL;
}

hs_executable *hs__cache_lookup(hs_compile_cache *c, const hs__cache_key *k)
{
    pthread_mutex_lock(&c->mu);
    entry *e = find(c, k);
    hs_executable *exe = NULL;
    if (e) {
        e->last_used = ++c->tick;
        exe = hs_executable_retain(e->exe);
    }
    pthread_mutex_unlock(&c->mu);
    return exe;
}

hs_executable *hs__cache_insert(hs_compile_cache *c, const hs__cache_key *k,
                                hs_executable *exe)
{
    hs_executable *evicted = NULL, *result;
    pthread_mutex_lock(&c->mu);
    entry *e = find(c, k);
    if (e) {
        /* Another thread compiled the same key meanwhile: share its
         * executable so that every caller sees one. */
        e->last_used = ++c->tick;
        result = hs_executable_retain(e->exe);
        evicted = exe;
    } else {
        entry *slot = &c->entries[0];
        for (int i = 0; i < c->capacity; i++) {
            entry *x = &c->entries[i];
            if (!x->exe) {
                slot = x;
                break;
            }
            if (x->last_used < slot->last_used)
                slot = x;
        }
        evicted = slot->exe;
        slot->key = *k;
        slot->exe = hs_executable_retain(exe);
        slot->last_used = ++c->tick;
        result = exe;
    }
    pthread_mutex_unlock(&c->mu);
    /* Freeing a module can take a while: outside the lock. */
    hs_executable_release(evicted);
    return result;
}
