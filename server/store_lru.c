/* store_lru.c - an LRU of artefacts bounded in bytes: a chained hash table
 * for lookup and a doubly linked list for recency, under one mutex. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "store.h"

typedef struct entry {
    char *key;
    char *data;
    size_t len;
    const char *type;
    struct entry *hnext;       /* hash chain */
    struct entry *prev, *next; /* recency: head is the most recent */
} entry;

struct store_lru {
    pthread_mutex_t mu;
    size_t max_bytes, bytes, n;
    size_t n_buckets;
    entry **buckets;
    entry *head, *tail;
};

static size_t cost(const entry *e)
{
    return e->len + strlen(e->key) + sizeof *e;
}

store_lru *store_lru_new(size_t max_bytes)
{
    store_lru *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    l->n_buckets = 4096;
    l->buckets = calloc(l->n_buckets, sizeof(entry *));
    if (!l->buckets) {
        free(l);
        return NULL;
    }
    l->max_bytes = max_bytes;
    pthread_mutex_init(&l->mu, NULL);
    return l;
}

static void entry_free(entry *e)
{
    free(e->key);
    free(e->data);
    free(e);
}

void store_lru_free(store_lru *l)
{
    if (!l)
        return;
    for (entry *e = l->head, *next; e; e = next) {
        next = e->next;
        entry_free(e);
    }
    free(l->buckets);
    pthread_mutex_destroy(&l->mu);
    free(l);
}

static entry **slot(store_lru *l, const char *key)
{
    size_t h = (size_t)XXH3_64bits(key, strlen(key)) % l->n_buckets;
    entry **p = &l->buckets[h];
    while (*p && strcmp((*p)->key, key) != 0)
        p = &(*p)->hnext;
    return p;
}

static void unlink_recency(store_lru *l, entry *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        l->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        l->tail = e->prev;
    e->prev = e->next = NULL;
}

static void push_front(store_lru *l, entry *e)
{
    e->next = l->head;
    e->prev = NULL;
    if (l->head)
        l->head->prev = e;
    l->head = e;
    if (!l->tail)
        l->tail = e;
}

static void remove_entry(store_lru *l, entry *e)
{
    entry **p = slot(l, e->key);
    *p = e->hnext;
    unlink_recency(l, e);
    l->bytes -= cost(e);
    l->n--;
    entry_free(e);
}

bool store_lru_get(store_lru *l, const char *key, char **data, size_t *len,
                   const char **type)
{
    pthread_mutex_lock(&l->mu);
    entry *e = *slot(l, key);
    bool hit = false;
    if (e) {
        unlink_recency(l, e);
        push_front(l, e);
        *data = malloc(e->len + 1);
        if (*data) {
            memcpy(*data, e->data, e->len);
            (*data)[e->len] = '\0';
            *len = e->len;
            *type = e->type;
            hit = true;
        }
    }
    pthread_mutex_unlock(&l->mu);
    return hit;
}

void store_lru_put(store_lru *l, const char *key, const char *data,
                   size_t len, const char *type)
{
    entry *e = calloc(1, sizeof *e);
    if (!e)
        return;
    e->key = strdup(key);
    e->data = malloc(len ? len : 1);
    if (!e->key || !e->data) {
        entry_free(e);
        return;
    }
    memcpy(e->data, data, len);
    e->len = len;
    e->type = type;
    if (cost(e) > l->max_bytes) {
        entry_free(e);
        return;
    }
    pthread_mutex_lock(&l->mu);
    entry *old = *slot(l, key);
    if (old)
        remove_entry(l, old);
    while (l->tail && l->bytes + cost(e) > l->max_bytes)
        remove_entry(l, l->tail);
    entry **p = slot(l, key);
    *p = e;
    push_front(l, e);
    l->bytes += cost(e);
    l->n++;
    pthread_mutex_unlock(&l->mu);
}

void store_lru_usage(store_lru *l, size_t *bytes, size_t *entries)
{
    pthread_mutex_lock(&l->mu);
    *bytes = l->bytes;
    *entries = l->n;
    pthread_mutex_unlock(&l->mu);
}

static int id_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void store_lru_drop_ids(store_lru *l, const char *const *ids, int n)
{
    if (n <= 0)
        return;
    const char **sorted = malloc(sizeof *sorted * (size_t)n);
    if (!sorted)
        return;
    memcpy(sorted, ids, sizeof *sorted * (size_t)n);
    qsort(sorted, (size_t)n, sizeof *sorted, id_cmp);
    pthread_mutex_lock(&l->mu);
    /* One pass over the entries: an eviction drops a few dozen ids. */
    for (entry *e = l->head, *next; e; e = next) {
        next = e->next;
        const char *slash = strchr(e->key, '/');
        if (!slash || slash - e->key >= 64)
            continue;
        char id[64];
        memcpy(id, e->key, (size_t)(slash - e->key));
        id[slash - e->key] = '\0';
        const char *key = id;
        if (bsearch(&key, sorted, (size_t)n, sizeof *sorted, id_cmp))
            remove_entry(l, e);
    }
    pthread_mutex_unlock(&l->mu);
    free(sorted);
}
