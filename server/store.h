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

/* The status of a row whose result was evicted to keep the store under
 * --max-store-bytes: a tombstone (id, endpoint, times) is kept so that its
 * link answers 410 instead of 404. */
#define STORE_EVICTED 410

typedef struct store_row {
    char *endpoint; /* "compile" | "run" | "compare" */
    char *request;  /* canonical request JSON ("" in a tombstone) */
    int status;     /* HTTP status of the result; 0 while pending */
    char *summary;  /* result JSON, NULL while pending */
    char *metrics;  /* compile report + metrics JSON, NULL while pending */
    int64_t updated_at; /* seconds since the epoch: recorded, finished or evicted */
} store_row;

/* Opens (creating) DIR/hloscope.sqlite in WAL mode with a busy timeout.
 * NULL with *e set (HS_ERR_IO) on failure. */
store *store_open(const char *dir, hs_error *e);
void store_close(store *s);
/* Records an accepted request as pending. A row that already has a result
 * (200) is left alone; any other (a stored failure, an interrupted or an
 * evicted request) is pending again: posting a request is how a client
 * retries it. -1 when it cannot be written (see store_full). */
int store_put_request(store *s, const char *id, const char *endpoint,
                      const char *request);
/* Records the outcome of a request (the row must exist). */
int store_put_result(store *s, const char *id, int status, const char *summary,
                     const char *metrics);
/* Marks pending rows as failed with status and summary: every pending row
 * (id NULL; at start, when nothing can be computing) or the row id if it
 * is still pending. Returns the rows changed, -1 on error. Nothing marks a
 * failed row pending again but store_put_request: a request that crashed
 * the server is never recomputed on its own. */
int64_t store_fail_pending(store *s, const char *id, int status, const char *summary);
/* 1 and *row filled (free with store_row_free) when found, 0 when not, -1
 * on a database error. */
int store_get(store *s, const char *id, store_row *row);
void store_row_free(store_row *row);
int64_t store_count(store *s);

/* Which rows are pinned (never evicted): pinned(request) on the canonical
 * request text, for every new row. The rows already stored are pinned
 * again only when generation (a hash of what pinned() matches) differs
 * from the one the store was last opened with: not a scan of the whole
 * store at every start. */
typedef bool (*store_pin_fn)(const char *request, void *user);
int store_set_pins(store *s, store_pin_fn pinned, void *user, uint32_t generation);
/* Caps the database at max_bytes (0: no cap) of used pages: past it the
 * oldest finished rows that are not pinned become tombstones, then the
 * oldest tombstones go. */
void store_set_limit(store *s, int64_t max_bytes);
/* Called with the ids of the rows just evicted (the store's lock held: the
 * hook must not call the store), so that their cached artefacts go too. */
typedef void (*store_evict_fn)(const char *const *ids, int n, void *user);
void store_set_evict_hook(store *s, store_evict_fn fn, void *user);
/* True while writes fail for lack of space: the disk is full (SQLITE_FULL,
 * ENOSPC) or the cap is reached with nothing left to evict. Cleared by the
 * next write that succeeds. Reads go on. */
bool store_full(store *s);

/* What the store holds (printed at start). */
typedef struct store_usage {
    int64_t bytes;      /* used pages */
    int64_t file_bytes; /* database file and WAL on disk */
    int64_t rows, pinned, evicted;
    int64_t evictions;  /* rows evicted since start */
} store_usage;
void store_get_usage(store *s, store_usage *u);

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
/* Drops every entry whose key starts with one of the n result ids ("<id>/..."). */
void store_lru_drop_ids(store_lru *l, const char *const *ids, int n);

#endif
