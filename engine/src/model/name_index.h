/*
 * name_index.h - the names of a graph block ("x", its params, its ops) to
 * their position, for the loader (graph_desc.c) and the tracer
 * (trace_graph.c). An open-addressing table whose capacity is fixed up front
 * (the block says how many names it has before the first lookup), so every
 * lookup is O(1) on average. With linear lookups a block of n names cost
 * O(n^2) string compares: 30,000 params in a 770 KB body held a server
 * worker for 20 s to compile and 44 s to run (tests/api/hostile_test.py).
 */
#ifndef HLOSCOPE_MODEL_NAME_INDEX_H
#define HLOSCOPE_MODEL_NAME_INDEX_H

#include <stdbool.h>
#include <stddef.h>

typedef struct hs__name_index {
    size_t mask;
    const char **keys; /* not copied: the caller keeps them alive */
    int *values;
} hs__name_index;

/* Room for `expected` distinct names; false when out of host memory. */
bool hs__name_index_init(hs__name_index *ix, size_t expected);
void hs__name_index_free(hs__name_index *ix);
/* Inserts key, or gives an existing key (and its pointer) a new value.
 * More than `expected` distinct keys is a programming error. */
void hs__name_index_put(hs__name_index *ix, const char *key, int value);
/* The value of key, or -1 when it is not there. */
int hs__name_index_get(const hs__name_index *ix, const char *key);

#endif
