/* heap.c - the server's heap, as the process sees it.
 *
 * What a request frees stays in the malloc arena of the thread that freed it
 * (glibc keeps one arena per allocating thread, and returns memory to the
 * system only from the top of the main heap). A long-running server whose
 * working set is bounded (the artefact LRU, SQLite's page cache) therefore
 * drifts in resident size while the bytes it holds stay flat: the soak of
 * issue 12 saw RSS move between 49 and 59 MiB around a constant 37 MiB heap
 * (heaptrack: no leak). srv_heap_release gives the free pages of every
 * arena back (malloc_trim), at most once a second, so RSS tracks what the
 * server holds. srv_heap_configure, at the start of the server and of each
 * worker, keeps the blocks that come and go with the artefact LRU (SVGs,
 * JSON replies of tens to hundreds of KiB) out of the arenas: glibc raises
 * its mmap threshold to the largest block freed so far (up to 32 MiB), after
 * which such blocks fragment the arenas instead of going back to the system
 * when freed; a fixed 64 KiB threshold and at most 4 arenas keep them apart.
 * Measured in bench/bench_soak.sh (docs/BENCHMARKS.md, "Soak").
 * Elsewhere than glibc these functions do nothing. */
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "http.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#define RELEASE_INTERVAL_NS 1000000000LL

static _Atomic int64_t last_release_ns;

static int64_t monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void srv_heap_configure(void)
{
#if defined(__GLIBC__)
    mallopt(M_MMAP_THRESHOLD, 64 * 1024);
#endif
}

void srv_heap_release(void)
{
#if defined(__GLIBC__)
    int64_t now = monotonic_ns(), last = atomic_load(&last_release_ns);
    if (now - last < RELEASE_INTERVAL_NS)
        return;
    /* One thread trims; the others go on (a trim walks every arena). */
    if (atomic_compare_exchange_strong(&last_release_ns, &last, now))
        malloc_trim(0);
#endif
}

size_t srv_heap_in_use(void)
{
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd; /* allocated in arenas + mmapped chunks */
#else
    return 0;
#endif
}
