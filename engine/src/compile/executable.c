/* executable.c - the result of a compile: the optimized module, its
 * compilation report and the fingerprint it was compiled from. Shared
 * between the cache and its users by reference counting. */
#include <stdatomic.h>
#include <stdlib.h>

#include "compile/compile_internal.h"
#include "hloscope/hs_compile.h"

struct hs_executable {
    atomic_int refs;
    hs_module *module;
    uint64_t fingerprint;
    hs_compile_report report;
    hs_buffer_assignment *buffers;
};

hs_executable *hs__executable_new(hs_module *m, uint64_t fingerprint,
                                  const hs_compile_report *report)
{
    hs_executable *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    atomic_init(&e->refs, 1);
    e->module = m;
    e->fingerprint = fingerprint;
    if (report)
        e->report = *report;
    return e;
}

const hs_module *hs_executable_module(const hs_executable *e)
{
    return e->module;
}

const hs_compile_report *hs_executable_report(const hs_executable *e)
{
    return &e->report;
}

uint64_t hs_executable_fingerprint(const hs_executable *e)
{
    return e->fingerprint;
}

const hs_buffer_assignment *hs_executable_buffers(const hs_executable *e)
{
    return e->buffers;
}

void hs__executable_set_buffers(hs_executable *e, hs_buffer_assignment *ba)
{
    hs_buffers_free(e->buffers);
    e->buffers = ba;
}

hs_executable *hs_executable_retain(hs_executable *e)
{
    if (e)
        atomic_fetch_add_explicit(&e->refs, 1, memory_order_relaxed);
    return e;
}

void hs_executable_release(hs_executable *e)
{
    if (!e)
        return;
    if (atomic_fetch_sub_explicit(&e->refs, 1, memory_order_acq_rel) == 1) {
        hs_buffers_free(e->buffers);
        hs_module_free(e->module);
        free(e);
    }
}
