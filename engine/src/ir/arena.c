/* arena.c - the bump allocator that owns everything in a module. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_ir.h"

typedef struct hs_chunk {
    struct hs_chunk *next;
    size_t size; /* usable bytes after the header */
    size_t used;
    _Alignas(16) unsigned char data[];
} hs_chunk;

enum { HS_ARENA_MAX_CHUNK = 4 << 20 };

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
    a->chunk_bytes = chunk_bytes ? chunk_bytes : 64 * 1024;
    return a;
}

void hs_arena_free(hs_arena *a)
{
    if (!a)
        return;
    hs_chunk *c = a->head;
    while (c) {
        hs_chunk *next = c->next;
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
    /* calloc hands back zeroed memory (fresh pages from the OS for large
     * chunks), so allocations need no memset of their own. */
    hs_chunk *c = calloc(1, sizeof *c + size);
    if (!c)
        return NULL;
    c->size = size;
    c->used = 0;
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
    void *p = c->data + c->used; /* zero: chunks are calloc'ed, never reused */
    c->used += size;
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
