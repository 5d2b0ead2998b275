/*
 * unique_names.h - finds a repeated string among many (instruction names
 * across a module) in O(n) with sequential memory access: hashes are radix
 * sorted, and only strings whose hashes collide are compared. A hash set
 * does the same work but touches one random cache line per name, which
 * dominates verification of million-instruction modules.
 */
#ifndef HLOSCOPE_IR_UNIQUE_NAMES_H
#define HLOSCOPE_IR_UNIQUE_NAMES_H

#include <stdbool.h>
#include <stdint.h>

/* The hash the search uses; callers compute it while the string is in
 * cache (the verifier, as it walks the instructions). */
uint32_t hs__name_hash(const char *s);

/* Returns the smallest k such that names[k] equals some names[j], j < k,
 * with *first = j; -1 when all names differ. hashes[k] is
 * hs__name_hash(names[k]). n must be below 2^32. Returns -2 on host OOM. */
int64_t hs__find_duplicate_name(const char *const *names,
                                const uint32_t *hashes, int64_t n,
                                int64_t *first);

#endif
