/*
 * store.h - what the REST server keeps: every accepted request and its
 * result summary in SQLite (store_sqlite.c), and heavy artefacts (HLO
 * text, graphs) in an in-memory LRU bounded in bytes (store_lru.c).
 *
 * Results are content-addressed: the id is the XXH3-128 of the canonical
 * request, so the SQLite row is enough to recompute any artefact after an
 * eviction or a restart.
 */
#ifndef HLOSCOPE_STORE_H
#define HLOSCOPE_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hloscope/hs_ir.h"

/* ---- SQLite: requests and result summaries ------------------------------ */

typedef struct store store;

typedef struct store_row {
    char *endpoint; /* "compile" | "run" | "compare" */
    char *request;  /* canonical request JSON */
    int status;     /* HTTP status of the result; 0 while pending */
    char *summary;  /* result JSON, NULL while pending */
    char *metrics;  /* compile report + metrics JSON, NULL while pending */
} store_row;

/* Opens (creating) DIR/hloscope.sqlite in WAL mode with a busy timeout.
 * NULL with *e set (HS_ERR_IO) on failure. */
store *store_open(const char *dir, hs_error *e);
void store_close(store *s);
/* Records an accepted request as pending unless the id is already known. */
int store_put_request(store *s, const char *id, const char *endpoint,
                      const char *request);
/* Records the outcome of a request (the row must exist). */
int store_put_result(store *s, const char *id, int status, const char *summary,
                     const char *metrics);
/* 1 and *row filled (free with store_row_free) when found, 0 when not, -1
 * on a database error. */
int store_get(store *s, const char *id, store_row *row);
void store_row_free(store_row *row);
int64_t store_count(store *s);

/* ---- in-memory LRU of artefacts ------------------------------------------ */

typedef struct store_lru store_lru;

store_lru *store_lru_new(size_t max_bytes);
void store_lru_free(store_lru *l);
/* On a hit, *data is a malloc'ed copy (NUL-terminated) and *type the
 * content type it was stored with. */
bool store_lru_get(store_lru *l, const char *key, char **data, size_t *len,
                   const char **type);
/* Inserts or replaces; evicts least recently used entries beyond the byte
 * budget. A value larger than the whole budget is not kept. type must be
 * a static string. */
void store_lru_put(store_lru *l, const char *key, const char *data,
                   size_t len, const char *type);
void store_lru_usage(store_lru *l, size_t *bytes, size_t *entries);

#endif
