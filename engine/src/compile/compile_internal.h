/*
 * compile_internal.h - pieces shared by the files of engine/src/compile/:
 * the executable and the compile cache.
 */
#ifndef HLOSCOPE_COMPILE_INTERNAL_H
#define HLOSCOPE_COMPILE_INTERNAL_H

#include <stdint.h>

#include "hloscope/hs_compile.h"
#include "hloscope/hs_ir.h"

/* A new executable holding one reference; it owns m. NULL on host OOM
 * (m is then still the caller's). */
hs_executable *hs__executable_new(hs_module *m, uint64_t fingerprint,
                                  const hs_compile_report *report);
/* Gives e the buffer assignment of its module (e owns it). */
void hs__executable_set_buffers(hs_executable *e, hs_buffer_assignment *ba);

/* The cache key: what was compiled, for which device, by which pipeline.
 * The device name and pipeline are hashed into options_hash and also kept
 * as text, so that a hash collision there cannot give a wrong hit. */
typedef struct hs__cache_key {
    uint64_t fingerprint;
    uint64_t options_hash;
    char device[64];
    char pipeline[256];
    int64_t fold_max_elements;
} hs__cache_key;

/* A new reference to the executable cached under k, or NULL. */
hs_executable *hs__cache_lookup(hs_compile_cache *c, const hs__cache_key *k);
/* Caches e under k (the cache takes its own reference) and returns the
 * executable now cached under k with one reference for the caller: e
 * itself, or the one another thread inserted first (e is then released).
 * Evicts the least recently used entry when full. */
hs_executable *hs__cache_insert(hs_compile_cache *c, const hs__cache_key *k,
                                hs_executable *e);

#endif
