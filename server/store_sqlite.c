/* store_sqlite.c - requests and result summaries in SQLite, so that a
 * result link survives a restart or a kill -9. WAL mode with
 * synchronous=NORMAL: a committed row survives the process dying; one
 * connection shared under a mutex (writes are a few per request).
 *
 * The store is bounded (store_set_limit): after a write that takes the
 * used pages past the cap, the oldest finished rows that are not pinned
 * become tombstones (status 410, no request, no summary) and their pages
 * return to SQLite's free list, where the next rows reuse them; a new
 * database is created with incremental auto-vacuum, so its file shrinks
 * too. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <sqlite3.h>

#include "hloscope/hs_npy.h"
#include "store.h"

struct store {
    sqlite3 *db;
    char path[4096];
    pthread_mutex_t mu;
    sqlite3_stmt *put_request, *put_result, *get, *count, *fail_one, *fail_all;
    sqlite3_stmt *page_count, *freelist, *oldest, *evict_delete, *evict_insert;
    sqlite3_stmt *drop_tombstones;
    int64_t page_size, max_bytes, evictions;
    store_pin_fn pinned;
    void *pin_user;
    store_evict_fn evicted;
    void *evict_user;
    atomic_bool full; /* the last write failed for lack of space */
};

/* auto_vacuum only takes effect on a database that has no table yet. */
static const char k_schema[] =
    "PRAGMA auto_vacuum=INCREMENTAL;"
    "PRAGMA journal_mode=WAL;"
    "PRAGMA synchronous=NORMAL;"
    "PRAGMA journal_size_limit=4194304;"
    "CREATE TABLE IF NOT EXISTS results ("
    "  id TEXT PRIMARY KEY,"
    "  endpoint TEXT NOT NULL,"
    "  request TEXT NOT NULL,"
    "  status INTEGER NOT NULL DEFAULT 0,"
    "  summary TEXT,"
    "  metrics TEXT,"
    "  created_at INTEGER NOT NULL,"
    "  updated_at INTEGER NOT NULL);";

/* Stores made before the cap existed lack the pinned column. */
static const char k_migrate[] =
    "ALTER TABLE results ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0;";
static const char k_index[] =
    "CREATE INDEX IF NOT EXISTS results_age ON results(created_at);";

static int prepare(store *s, const char *sql, sqlite3_stmt **st, hs_error *e)
{
    if (sqlite3_prepare_v2(s->db, sql, -1, st, NULL) == SQLITE_OK)
        return 0;
    hs_error_set(e, HS_ERR_IO, "sqlite: %s", sqlite3_errmsg(s->db));
    return -1;
}

static int exec(store *s, const char *sql, hs_error *e)
{
    char *msg = NULL;
    if (sqlite3_exec(s->db, sql, NULL, NULL, &msg) == SQLITE_OK)
        return 0;
    hs_error_set(e, HS_ERR_IO, "%s: %s", s->path, msg ? msg : sqlite3_errmsg(s->db));
    sqlite3_free(msg);
    return -1;
}

static int64_t pragma_int(store *s, sqlite3_stmt *st)
{
    int64_t v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
    sqlite3_reset(st);
    return v;
}

store *store_open(const char *dir, hs_error *e)
{
    if (hs_mkdirs(dir, e) != HS_OK)
        return NULL;
    store *s = calloc(1, sizeof *s);
    if (!s) {
        hs_error_set(e, HS_ERR_NOMEM, "out of host memory");
        return NULL;
    }
    snprintf(s->path, sizeof s->path, "%s/hloscope.sqlite", dir);
    pthread_mutex_init(&s->mu, NULL);
    if (sqlite3_open_v2(s->path, &s->db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                            SQLITE_OPEN_FULLMUTEX,
                        NULL) != SQLITE_OK) {
        hs_error_set(e, HS_ERR_IO, "%s: %s", s->path,
                     s->db ? sqlite3_errmsg(s->db) : "cannot open");
        goto fail;
    }
    sqlite3_busy_timeout(s->db, 5000);
    if (exec(s, k_schema, e) != 0)
        goto fail;
    sqlite3_stmt *probe = NULL;
    if (sqlite3_prepare_v2(s->db, "SELECT pinned FROM results LIMIT 0", -1, &probe,
                           NULL) != SQLITE_OK &&
        exec(s, k_migrate, e) != 0)
        goto fail;
    sqlite3_finalize(probe);
    if (exec(s, k_index, e) != 0)
        goto fail;
    /* Posting a request again retries it: a stored failure, an interrupted
     * or an evicted request becomes pending again, a result does not. */
    if (prepare(s,
                "INSERT INTO results(id, endpoint, request, status, created_at,"
                " updated_at, pinned) VALUES(?1, ?2, ?3, 0, ?4, ?4, ?5)"
                " ON CONFLICT(id) DO UPDATE SET request=excluded.request, status=0,"
                " summary=NULL, metrics=NULL, updated_at=excluded.updated_at,"
                " pinned=excluded.pinned WHERE results.status != 200",
                &s->put_request, e) ||
        prepare(s,
                "UPDATE results SET status=?2, summary=?3, metrics=?4,"
                " updated_at=?5 WHERE id=?1",
                &s->put_result, e) ||
        prepare(s,
                "SELECT endpoint, request, status, summary, metrics, updated_at"
                " FROM results WHERE id=?1",
                &s->get, e) ||
        prepare(s, "SELECT count(*) FROM results", &s->count, e) ||
        prepare(s,
                "UPDATE results SET status=?2, summary=?3, updated_at=?4"
                " WHERE id=?1 AND status=0",
                &s->fail_one, e) ||
        prepare(s,
                "UPDATE results SET status=?2, summary=?3, updated_at=?4"
                " WHERE status=0",
                &s->fail_all, e) ||
        prepare(s, "PRAGMA page_count", &s->page_count, e) ||
        prepare(s, "PRAGMA freelist_count", &s->freelist, e) ||
        prepare(s,
                "SELECT id, endpoint, created_at, length(request) +"
                " ifnull(length(summary), 0) + ifnull(length(metrics), 0) + 100 FROM results"
                " WHERE pinned=0 AND status NOT IN (0, 410)"
                " ORDER BY created_at, rowid LIMIT 64",
                &s->oldest, e) ||
        prepare(s, "DELETE FROM results WHERE id=?1", &s->evict_delete, e) ||
        prepare(s,
                "INSERT INTO results(id, endpoint, request, status, created_at,"
                " updated_at, pinned) VALUES(?1, ?2, '', 410, ?3, ?4, 0)",
                &s->evict_insert, e) ||
        prepare(s,
                "DELETE FROM results WHERE rowid IN (SELECT rowid FROM results"
                " WHERE status=410 ORDER BY updated_at, rowid LIMIT 256)",
                &s->drop_tombstones, e))
        goto fail;
    sqlite3_stmt *ps = NULL;
    if (prepare(s, "PRAGMA page_size", &ps, e) != 0)
        goto fail;
    s->page_size = pragma_int(s, ps);
    sqlite3_finalize(ps);
    return s;
fail:
    store_close(s);
    return NULL;
}

void store_close(store *s)
{
    if (!s)
        return;
    sqlite3_stmt *all[] = {s->put_request, s->put_result, s->get,      s->count,
                           s->fail_one,    s->fail_all,   s->page_count, s->freelist,
                           s->oldest,      s->evict_delete, s->evict_insert,
                           s->drop_tombstones};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
        sqlite3_finalize(all[k]);
    sqlite3_close(s->db);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

/* A write that failed because the disk (or the cap) has no room, as
 * opposed to any other I/O error: it is answered 507, not 500. */
static bool no_space(store *s, int rc)
{
    return rc == SQLITE_FULL ||
           ((rc & 0xff) == SQLITE_IOERR && sqlite3_system_errno(s->db) == ENOSPC);
}

static int write_done(store *s, sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (rc == SQLITE_DONE) {
        atomic_store(&s->full, false);
        return 0;
    }
    if (no_space(s, rc))
        atomic_store(&s->full, true);
    return -1;
}

static int64_t used_bytes(store *s)
{
    return (pragma_int(s, s->page_count) - pragma_int(s, s->freelist)) * s->page_size;
}

/* Turns the oldest unpinned results (64 at most) into tombstones until
 * what they held covers need bytes; when no result is left to evict, drops
 * the oldest tombstones instead. Returns the bytes the rows held (an estimate: the pages
 * tell the truth afterwards). Called with the mutex held.
 *
 * A tombstone is a new row, not the old one updated in place: rowids grow
 * with time, so an update would leave each old leaf page holding its
 * tombstones and the leaf's share of the evicted row forever (measured:
 * the store then evicts everything and still does not shrink), while a
 * delete empties the old leaves, which SQLite merges and frees. */
static int64_t evict_some(store *s, int64_t need)
{
    char ids[64][40], endpoint[64][16];
    int64_t size[64], created[64], freed = 0;
    int n = 0;
    while (n < 64 && sqlite3_step(s->oldest) == SQLITE_ROW) {
        const unsigned char *id = sqlite3_column_text(s->oldest, 0);
        const unsigned char *ep = sqlite3_column_text(s->oldest, 1);
        snprintf(ids[n], sizeof ids[n], "%s", id ? (const char *)id : "");
        snprintf(endpoint[n], sizeof endpoint[n], "%s", ep ? (const char *)ep : "");
        created[n] = sqlite3_column_int64(s->oldest, 2);
        size[n++] = sqlite3_column_int64(s->oldest, 3);
    }
    sqlite3_reset(s->oldest);
    if (sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        return 0;
    int64_t now = (int64_t)time(NULL);
    int k = 0;
    for (; k < n && freed < need; k++) {
        sqlite3_bind_text(s->evict_delete, 1, ids[k], -1, SQLITE_STATIC);
        sqlite3_bind_text(s->evict_insert, 1, ids[k], -1, SQLITE_STATIC);
        sqlite3_bind_text(s->evict_insert, 2, endpoint[k], -1, SQLITE_STATIC);
        sqlite3_bind_int64(s->evict_insert, 3, created[k]);
        sqlite3_bind_int64(s->evict_insert, 4, now);
        if (write_done(s, s->evict_delete) != 0 || write_done(s, s->evict_insert) != 0)
            break;
        freed += size[k];
    }
    int done = k;
    /* Tombstones go only once no result is left to evict. */
    if (n == 0 && write_done(s, s->drop_tombstones) == 0)
        freed += 100 * (int64_t)sqlite3_changes(s->db);
    if (sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
        return 0;
    }
    s->evictions += done;
    if (s->evicted && done > 0) {
        const char *list[64];
        for (int j = 0; j < done; j++)
            list[j] = ids[j];
        s->evicted(list, done, s->evict_user);
    }
    return freed;
}

/* Keeps the used pages under the cap, down to 256 KiB (or 10%) below it:
 * eviction runs once per many writes rather than at every one, and each
 * run is short (the writes wait for it: the p99 of distinct compiles went
 * from 55 to 180 ms with 10% of a 16 MiB cap at a time). Returns false when
 * the cap is exceeded and nothing is left to evict. Mutex held. */
static bool enforce_limit(store *s)
{
    if (s->max_bytes <= 0)
        return true;
    int64_t used = used_bytes(s);
    if (used <= s->max_bytes)
        return true;
    int64_t slack = s->max_bytes / 10 < (256 << 10) ? s->max_bytes / 10 : (256 << 10);
    int64_t target = s->max_bytes - slack;
    for (int round = 0; round < 64 && used > target; round++) {
        if (evict_some(s, used - target) == 0)
            break;
        used = used_bytes(s);
    }
    /* New rows reuse the free pages, so the file stays near the cap; it is
     * shrunk (a database created with auto_vacuum=INCREMENTAL; a no-op on
     * an older one) only when much of it is free, after the cap was
     * lowered: moving pages costs a write per page. */
    if (pragma_int(s, s->freelist) * s->page_size > s->max_bytes / 4)
        sqlite3_exec(s->db, "PRAGMA incremental_vacuum", NULL, NULL, NULL);
    return used <= s->max_bytes;
}

int store_put_request(store *s, const char *id, const char *endpoint,
                      const char *request)
{
    bool pin = s->pinned && s->pinned(request, s->pin_user);
    pthread_mutex_lock(&s->mu);
    int rc = 0;
    if (!enforce_limit(s) && !pin) {
        /* Everything left is pinned or pending: refuse new work (507)
         * rather than grow past the cap. */
        atomic_store(&s->full, true);
        rc = -1;
    }
    if (rc == 0) {
        sqlite3_bind_text(s->put_request, 1, id, -1, SQLITE_STATIC);
        sqlite3_bind_text(s->put_request, 2, endpoint, -1, SQLITE_STATIC);
        sqlite3_bind_text(s->put_request, 3, request, -1, SQLITE_STATIC);
        sqlite3_bind_int64(s->put_request, 4, (sqlite3_int64)time(NULL));
        sqlite3_bind_int(s->put_request, 5, pin);
        rc = write_done(s, s->put_request);
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int store_put_result(store *s, const char *id, int status, const char *summary,
                     const char *metrics)
{
    pthread_mutex_lock(&s->mu);
    sqlite3_bind_text(s->put_result, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_int(s->put_result, 2, status);
    sqlite3_bind_text(s->put_result, 3, summary, -1, SQLITE_STATIC);
    sqlite3_bind_text(s->put_result, 4, metrics, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s->put_result, 5, (sqlite3_int64)time(NULL));
    int rc = write_done(s, s->put_result);
    if (rc == 0)
        enforce_limit(s);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int64_t store_fail_pending(store *s, const char *id, int status, const char *summary)
{
    pthread_mutex_lock(&s->mu);
    sqlite3_stmt *st = id ? s->fail_one : s->fail_all;
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 2, status);
    sqlite3_bind_text(st, 3, summary, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, (sqlite3_int64)time(NULL));
    int64_t n = write_done(s, st) == 0 ? (int64_t)sqlite3_changes(s->db) : -1;
    pthread_mutex_unlock(&s->mu);
    return n;
}

static char *column_dup(sqlite3_stmt *st, int k)
{
    const unsigned char *t = sqlite3_column_text(st, k);
    return t ? strdup((const char *)t) : NULL;
}

int store_get(store *s, const char *id, store_row *row)
{
    memset(row, 0, sizeof *row);
    pthread_mutex_lock(&s->mu);
    sqlite3_bind_text(s->get, 1, id, -1, SQLITE_STATIC);
    int rc = sqlite3_step(s->get), found = 0;
    if (rc == SQLITE_ROW) {
        row->endpoint = column_dup(s->get, 0);
        row->request = column_dup(s->get, 1);
        row->status = sqlite3_column_int(s->get, 2);
        row->summary = column_dup(s->get, 3);
        row->metrics = column_dup(s->get, 4);
        row->updated_at = sqlite3_column_int64(s->get, 5);
        found = row->endpoint && row->request ? 1 : -1;
    } else if (rc != SQLITE_DONE) {
        found = -1;
    }
    sqlite3_reset(s->get);
    sqlite3_clear_bindings(s->get);
    pthread_mutex_unlock(&s->mu);
    if (found != 1)
        store_row_free(row);
    return found;
}

void store_row_free(store_row *row)
{
    free(row->endpoint);
    free(row->request);
    free(row->summary);
    free(row->metrics);
    memset(row, 0, sizeof *row);
}

int64_t store_count(store *s)
{
    pthread_mutex_lock(&s->mu);
    int64_t n = pragma_int(s, s->count);
    pthread_mutex_unlock(&s->mu);
    return n;
}

int store_set_pins(store *s, store_pin_fn pinned, void *user, uint32_t generation)
{
    sqlite3_stmt *all = NULL, *set = NULL, *version = NULL;
    pthread_mutex_lock(&s->mu);
    s->pinned = pinned;
    s->pin_user = user;
    /* The generation is kept in the database header's user_version. */
    int rc = -1;
    if (sqlite3_prepare_v2(s->db, "PRAGMA user_version", -1, &version, NULL) == SQLITE_OK &&
        (uint32_t)pragma_int(s, version) == generation) {
        sqlite3_finalize(version);
        pthread_mutex_unlock(&s->mu);
        return 0;
    }
    sqlite3_finalize(version);
    if (sqlite3_prepare_v2(s->db, "SELECT id, request FROM results WHERE status != 410",
                           -1, &all, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(s->db, "UPDATE results SET pinned=?2 WHERE id=?1", -1, &set,
                           NULL) != SQLITE_OK ||
        sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        goto done;
    /* Updating the rows the SELECT walks is fine in SQLite: the update
     * changes no indexed column. */
    while (sqlite3_step(all) == SQLITE_ROW) {
        const char *req = (const char *)sqlite3_column_text(all, 1);
        sqlite3_bind_text(set, 1, (const char *)sqlite3_column_text(all, 0), -1,
                          SQLITE_TRANSIENT);
        sqlite3_bind_int(set, 2, pinned && req && pinned(req, user));
        if (write_done(s, set) != 0)
            break;
    }
    sqlite3_reset(all);
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA user_version=%d", (int)generation);
    sqlite3_exec(s->db, sql, NULL, NULL, NULL);
    rc = sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
    if (rc != 0)
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
done:
    sqlite3_finalize(all);
    sqlite3_finalize(set);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

void store_set_limit(store *s, int64_t max_bytes)
{
    pthread_mutex_lock(&s->mu);
    s->max_bytes = max_bytes;
    enforce_limit(s);
    pthread_mutex_unlock(&s->mu);
}

void store_set_evict_hook(store *s, store_evict_fn fn, void *user)
{
    pthread_mutex_lock(&s->mu);
    s->evicted = fn;
    s->evict_user = user;
    pthread_mutex_unlock(&s->mu);
}

bool store_full(store *s)
{
    return atomic_load(&s->full);
}

static int64_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (int64_t)st.st_size : 0;
}

void store_get_usage(store *s, store_usage *u)
{
    memset(u, 0, sizeof *u);
    sqlite3_stmt *st = NULL;
    pthread_mutex_lock(&s->mu);
    u->bytes = used_bytes(s);
    u->evictions = s->evictions;
    if (sqlite3_prepare_v2(s->db,
                           "SELECT count(*), total(pinned), total(status=410) FROM results",
                           -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
        u->rows = sqlite3_column_int64(st, 0);
        u->pinned = (int64_t)sqlite3_column_double(st, 1);
        u->evicted = (int64_t)sqlite3_column_double(st, 2);
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&s->mu);
    char wal[4200];
    snprintf(wal, sizeof wal, "%s-wal", s->path);
    u->file_bytes = file_size(s->path) + file_size(wal);
}
