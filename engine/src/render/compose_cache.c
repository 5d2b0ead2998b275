/* compose_cache.c - laid-out pieces of composed drawings, kept for reuse.
 *
 * A piece is the canonical DOT of one box of a composed drawing (compose.c):
 * positional node names, fixed sizes, no labels, so everything Graphviz's
 * layout depends on is in the text and nothing else is. Structurally
 * identical layers give the same text, so the text is the key: a layer is
 * laid out once, in this request or in an earlier one, and every identical
 * layer (and every later view that shows it) reuses the result. Keying by
 * the whole text rather than by the group's fingerprint alone means a hash
 * collision or two layers that differ only in their label widths can never
 * share a wrong layout.
 *
 * Process-wide and shared by the server's threads: one mutex, entries
 * copied in and out, at most HS_COMPOSE_CACHE_BYTES held (the oldest go
 * first). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "render/compose_internal.h"

#define HS_COMPOSE_CACHE_BYTES ((size_t)32 << 20)
#define HS_COMPOSE_CACHE_ENTRIES 4096

typedef struct entry {
    uint64_t hash;
    char *key;
    size_t key_len;
    hs_piece *piece;
    size_t bytes;
} entry;

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static entry cache[HS_COMPOSE_CACHE_ENTRIES];
static int cache_head, cache_n; /* a ring: oldest at cache_head */
static size_t cache_bytes;

static size_t piece_bytes(const hs_piece *p)
{
    return sizeof *p + sizeof(double) * 2 * (size_t)(p->n_items + 1) +
           sizeof(hs_piece_edge) * (size_t)p->n_edges +
           sizeof(double) * 2 * (size_t)p->n_points;
}

void hs__piece_free(hs_piece *p)
{
    if (!p)
        return;
    free(p->x);
    free(p->y);
    free(p->edges);
    free(p->points);
    free(p);
}

hs_piece *hs__piece_copy(const hs_piece *p)
{
    hs_piece *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    *c = *p;
    size_t ni = (size_t)p->n_items + 1;
    c->x = malloc(sizeof *c->x * ni);
    c->y = malloc(sizeof *c->y * ni);
    c->edges = malloc(sizeof *c->edges * ((size_t)p->n_edges + 1));
    c->points = malloc(sizeof *c->points * 2 * ((size_t)p->n_points + 1));
    if (!c->x || !c->y || !c->edges || !c->points) {
        hs__piece_free(c);
        return NULL;
    }
    memcpy(c->x, p->x, sizeof *c->x * ni);
    memcpy(c->y, p->y, sizeof *c->y * ni);
    memcpy(c->edges, p->edges, sizeof *c->edges * (size_t)p->n_edges);
    memcpy(c->points, p->points, sizeof *c->points * 2 * (size_t)p->n_points);
    return c;
}

static void drop_oldest(void)
{
    entry *e = &cache[cache_head];
    cache_bytes -= e->bytes;
    free(e->key);
    hs__piece_free(e->piece);
    memset(e, 0, sizeof *e);
    cache_head = (cache_head + 1) % HS_COMPOSE_CACHE_ENTRIES;
    cache_n--;
}

hs_piece *hs__piece_cache_get(const char *key, size_t len)
{
    uint64_t h = XXH3_64bits(key, len);
    hs_piece *found = NULL;
    pthread_mutex_lock(&cache_lock);
    for (int k = 0; k < cache_n && !found; k++) {
        const entry *e = &cache[(cache_head + k) % HS_COMPOSE_CACHE_ENTRIES];
        if (e->hash == h && e->key_len == len && memcmp(e->key, key, len) == 0)
            found = hs__piece_copy(e->piece);
    }
    pthread_mutex_unlock(&cache_lock);
    return found;
}

void hs__piece_cache_put(const char *key, size_t len, const hs_piece *p)
{
    size_t bytes = piece_bytes(p) + len;
    if (bytes > HS_COMPOSE_CACHE_BYTES / 4)
        return; /* one piece may not push out everything else */
    char *k = malloc(len + 1);
    hs_piece *c = hs__piece_copy(p);
    if (!k || !c) {
        free(k);
        hs__piece_free(c);
        return;
    }
    memcpy(k, key, len);
    k[len] = '\0';
    pthread_mutex_lock(&cache_lock);
    while (cache_n > 0 && (cache_n == HS_COMPOSE_CACHE_ENTRIES ||
                           cache_bytes + bytes > HS_COMPOSE_CACHE_BYTES))
        drop_oldest();
    int slot = (cache_head + cache_n) % HS_COMPOSE_CACHE_ENTRIES;
    cache[slot] = (entry){XXH3_64bits(key, len), k, len, c, bytes};
    cache_n++;
    cache_bytes += bytes;
    pthread_mutex_unlock(&cache_lock);
}

void hs_render_compose_cache_clear(void)
{
    pthread_mutex_lock(&cache_lock);
    while (cache_n > 0)
        drop_oldest();
    cache_head = 0;
    pthread_mutex_unlock(&cache_lock);
}
