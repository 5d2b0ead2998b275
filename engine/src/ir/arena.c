/* arena.c - the bump allocator that owns everything in a module. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_ir.h"

typedef struct hs_chunk {
    struct hs_chunk *next;
    size_t size;   /* usable bytes after the header */
    size_t used;
    size_t zeroed; /* data[0, zeroed) is zero or handed out */
    _Alignas(16) unsigned char data[];
} hs_chunk;

enum { HS_ARENA_MAX_CHUNK = 4 << 20 };
/* Chunks are zeroed lazily, this many bytes at a time, as allocations reach
 * them. */
enum { HS_ARENA_ZERO_STEP = 4096 };

/* Freed chunks of the geometric sizes (64 KiB << k, up to the largest
 * chunk) are kept in a process-wide pool, up to HS_ARENA_POOL_BYTES in all,
 * for the next arena. Without it a program that loads repeatedly (the
 * server) hands its chunks back to the kernel at every free -- glibc trims
 * the heap top and unmaps large blocks -- and takes a page fault on every
 * page of the next module: half the time of a small trace. The pool is
 * shared by every thread under a mutex, taken once per chunk. Under
 * AddressSanitizer there is no pool, so a use after hs_arena_free is still
 * reported. */
enum {
    HS_ARENA_MIN_CHUNK = 64 * 1024,
    HS_ARENA_POOL_CLASSES = 7, /* 64 KiB ... 4 MiB */
    HS_ARENA_POOL_BYTES = 16 << 20,
};

#if defined(__SANITIZE_ADDRESS__)
#define HS_ARENA_POOL 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HS_ARENA_POOL 0
#endif
#endif
#ifndef HS_ARENA_POOL
#define HS_ARENA_POOL 1
#endif

static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static hs_chunk *pool[HS_ARENA_POOL_CLASSES];
static size_t pool_bytes;

/* The pool class of a chunk of this many usable bytes, or -1. */
static int pool_class(size_t size)
{
    if (!HS_ARENA_POOL)
        return -1;
    for (int k = 0; k < HS_ARENA_POOL_CLASSES; k++)
        if (size == (size_t)HS_ARENA_MIN_CHUNK << k)
            return k;
    return -1;
}

static hs_chunk *pool_take(size_t size)
{
    int k = pool_class(size);
    if (k < 0)
        return NULL;
    pthread_mutex_lock(&pool_mu);
    hs_chunk *c = pool[k];
    if (c) {
        pool[k] = c->next;
        pool_bytes -= size;
    }
    pthread_mutex_unlock(&pool_mu);
    return c;
}

/* Keeps c in the pool if it fits; returns false when the caller must free
 * it. */
static bool pool_give(hs_chunk *c)
{
    int k = pool_class(c->size);
    if (k < 0)
        return false;
    bool kept = false;
    pthread_mutex_lock(&pool_mu);
    if (pool_bytes + c->size <= HS_ARENA_POOL_BYTES) {
        c->next = pool[k];
        pool[k] = c;
        pool_bytes += c->size;
        kept = true;
    }
    pthread_mutex_unlock(&pool_mu);
    return kept;
}

struct hs_arena {
    hs_chunk *head;
    size_t chunk_bytes;
    size_t reserved;
};

hs_arena *hs_arena_new(size_t chunk_bytes)
{
    hs_arena *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->chunk_bytes = chunk_bytes ? chunk_bytes : HS_ARENA_MIN_CHUNK;
    return a;
}

void hs_arena_free(hs_arena *a)
{
    if (!a)
        return;
    hs_chunk *c = a->head;
    while (c) {
        hs_chunk *next = c->next;
        if (!pool_give(c))
            free(c);
        c = next;
    }
    free(a);
}

static hs_chunk *new_chunk(hs_arena *a, size_t need)
{
    size_t size = a->chunk_bytes;
    if (need > size / 4)
        size = need; /* a large object gets a chunk of its own */
    else if (a->chunk_bytes < HS_ARENA_MAX_CHUNK)
        a->chunk_bytes *= 2; /* geometric growth: few chunks for big modules */
    /* Not calloc: a pooled or recycled chunk would be cleared in full,
     * every page of it, though the last chunk of a geometric series is
     * mostly unused. hs_arena_alloc zeroes what it hands out, a step at a
     * time. */
    hs_chunk *c = pool_take(size);
    if (!c)
        c = malloc(sizeof *c + size);
    if (!c)
        return NULL;
    c->size = size;
    c->used = 0;
    c->zeroed = 0;
    a->reserved += sizeof *c + size;
    if (need == size && a->head) {
        /* Keep the current head open for small allocations. */
        c->next = a->head->next;
        a->head->next = c;
    } else {
        c->next = a->head;
        a->head = c;
    }
    return c;
}

void *hs_arena_alloc(hs_arena *a, size_t size)
{
    size = (size + 15) & ~(size_t)15;
    if (size == 0)
        size = 16;
    hs_chunk *c = a->head;
    if (!c || c->size - c->used < size) {
        c = new_chunk(a, size);
        if (!c)
            return NULL;
    }
    void *p = c->data + c->used;
    c->used += size;
    if (c->used > c->zeroed) {
        size_t z = (c->used + HS_ARENA_ZERO_STEP - 1) &
                   ~(size_t)(HS_ARENA_ZERO_STEP - 1);
        if (z > c->size)
            z = c->size;
        memset(c->data + c->zeroed, 0, z - c->zeroed);
        c->zeroed = z;
    }
    return p;
}

char *hs_arena_strndup(hs_arena *a, const char *s, size_t n)
{
    char *p = hs_arena_alloc(a, n + 1);
    if (!p)
        return NULL;
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *hs_arena_strdup(hs_arena *a, const char *s)
{
    return s ? hs_arena_strndup(a, s, strlen(s)) : NULL;
}

char *hs_arena_printf(hs_arena *a, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return NULL;
    if ((size_t)n < sizeof small)
        return hs_arena_strndup(a, small, (size_t)n);
    char *p = hs_arena_alloc(a, (size_t)n + 1);
    if (!p)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}

size_t hs_arena_bytes(const hs_arena *a)
{
    return a->reserved;
}
