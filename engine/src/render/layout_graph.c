/* layout_graph.c - reading a job's DOT into a cgraph graph whose drawing
 * depends on the DOT alone, not on what the worker did before.
 *
 * Graphviz's output depends on addresses and counters: cgraph orders
 * subgraphs (clusters) by their ids, and a named object's id is the address
 * of its interned name, so with malloc the same DOT can come out with its
 * clusters in another order. Measured with malloc: a worker that had laid
 * out other graphs differed from a fresh one in 18 of 30 layouts of the
 * decoder's views, and even fresh workers differed among themselves (4 to 6
 * in 20 for a graph of 8 clusters: Pango's warm-up thread allocates
 * concurrently and moves where the strings land). An anonymous object's id
 * comes from a counter that cgraph never resets, and shows as the title of
 * an anonymous graph ("%15").
 *
 * So a job's graph gets two cgraph disciplines: memory from a bump arena,
 * whose addresses grow in the order the parser meets names and which starts
 * over (zeroed) for every job, and anonymous ids counted from 1 for every
 * graph. The same DOT then gives the same bytes in every worker, first job
 * or hundredth. */
#include <gvc.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "render/layout_internal.h"

/* ---- memory: the arena ----------------------------------------------------- */

/* A reservation of address space, touched as the graph grows. When it is
 * full, or cannot be had (strict overcommit), the graph falls back to
 * calloc: correct, only no longer in a fixed order. */
#define ARENA_BYTES ((size_t)4 << 30)

static char *arena;
static size_t arena_used;

static void *arena_open(Agdisc_t *disc)
{
    (void)disc;
    if (!arena) {
        void *p = mmap(NULL, ARENA_BYTES, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        arena = p == MAP_FAILED ? NULL : p;
    }
    return &arena_used; /* cgraph wants a state; ours is global */
}

static bool in_arena(const void *p)
{
    return arena && (const char *)p >= arena &&
           (const char *)p < arena + ARENA_BYTES;
}

/* Zeroed memory, as cgraph's own discipline (calloc) gives. */
static void *arena_alloc(void *state, size_t req)
{
    (void)state;
    size_t n = (req + 15) & ~(size_t)15;
    if (arena && n >= req && n <= ARENA_BYTES - arena_used) {
        void *p = arena + arena_used;
        arena_used += n;
        return p;
    }
    return calloc(1, req ? req : 1);
}

static void *arena_resize(void *state, void *ptr, size_t old, size_t req)
{
    void *p = arena_alloc(state, req);
    if (p && ptr) {
        memcpy(p, ptr, old < req ? old : req);
        if (!in_arena(ptr))
            free(ptr);
    }
    return p;
}

/* Arena memory comes back all at once, when the job is over. */
static void arena_free(void *state, void *ptr)
{
    (void)state;
    if (!in_arena(ptr))
        free(ptr);
}

static void arena_close(void *state)
{
    (void)state;
}

static Agmemdisc_t arena_disc = {arena_open, arena_alloc, arena_resize,
                                 arena_free, arena_close};

/* ---- ids: anonymous ones counted per graph ------------------------------- */

/* Named ids stay cgraph's own (the interned name, now in the arena); only
 * the counter of anonymous ones (odd numbers, as cgraph's) starts over. */
static struct {
    void *inner; /* cgraph's own discipline's state */
    IDTYPE next;
} ids;

static void *ids_open(Agraph_t *g, Agdisc_t *disc)
{
    ids.inner = AgIdDisc.open(g, disc);
    ids.next = 1;
    return &ids;
}

static long ids_map(void *state, int objtype, char *str, IDTYPE *id,
                    int createflag)
{
    (void)state;
    if (str)
        return AgIdDisc.map(ids.inner, objtype, str, id, createflag);
    *id = ids.next;
    ids.next += 2;
    return 1;
}

static long ids_alloc(void *state, int objtype, IDTYPE id)
{
    (void)state;
    return AgIdDisc.alloc(ids.inner, objtype, id);
}

static void ids_free(void *state, int objtype, IDTYPE id)
{
    (void)state;
    AgIdDisc.free(ids.inner, objtype, id);
}

static char *ids_print(void *state, int objtype, IDTYPE id)
{
    (void)state;
    return AgIdDisc.print(ids.inner, objtype, id);
}

static void ids_close(void *state)
{
    (void)state;
    AgIdDisc.close(ids.inner);
}

static void ids_register(void *state, int objtype, void *obj)
{
    (void)state;
    AgIdDisc.idregister(ids.inner, objtype, obj);
}

static Agiddisc_t id_disc = {ids_open,  ids_map,   ids_alloc,   ids_free,
                             ids_print, ids_close, ids_register};

/* ---- the job's graph ------------------------------------------------------- */

Agraph_t *hs__layout_read_graph(char *dot, size_t len)
{
    FILE *f = len ? fmemopen(dot, len, "r") : NULL;
    if (!f)
        return NULL;
    Agdisc_t disc = {&arena_disc, &id_disc, &AgIoDisc};
    Agraph_t *g = agread(f, &disc);
    fclose(f);
    return g;
}

void hs__layout_graph_closed(void)
{
    if (!arena || arena_used == 0)
        return;
    /* The pages go back to the system and read as zeros when touched
     * again: the next graph starts from the same, empty arena. */
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    madvise(arena, (arena_used + page - 1) / page * page, MADV_DONTNEED);
    arena_used = 0;
}
