/* store_sqlite.c - requests and result summaries in SQLite, so that a
 * result link survives a restart or a kill -9. WAL mode with
 * synchronous=NORMAL: a committed row survives the process dying; one
 * connection shared under a mutex (writes are a few per request). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include "hloscope/hs_npy.h"
#include "store.h"

struct store {
    sqlite3 *db;
    pthread_mutex_t mu;
    sqlite3_stmt *put_request, *put_result, *get, *count;
};

static const char k_schema[] =
    "PRAGMA journal_mode=WAL;"
    "PRAGMA synchronous=NORMAL;"
    "CREATE TABLE IF NOT EXISTS results ("
    "  id TEXT PRIMARY KEY,"
    "  endpoint TEXT NOT NULL,"
    "  request TEXT NOT NULL,"
    "  status INTEGER NOT NULL DEFAULT 0,"
    "  summary TEXT,"
    "  metrics TEXT,"
    "  created_at INTEGER NOT NULL,"
    "  updated_at INTEGER NOT NULL);";

static int prepare(store *s, const char *sql, sqlite3_stmt **st, hs_error *e)
{
    if (sqlite3_prepare_v2(s->db, sql, -1, st, NULL) == SQLITE_OK)
        return 0;
    hs_error_set(e, HS_ERR_IO, "sqlite: %s", sqlite3_errmsg(s->db));
    return -1;
}

store *store_open(const char *dir, hs_error *e)
{
    if (hs_mkdirs(dir, e) != HS_OK)
        return NULL;
    char path[4096];
    snprintf(path, sizeof path, "%s/hloscope.sqlite", dir);
    store *s = calloc(1, sizeof *s);
    if (!s) {
        hs_error_set(e, HS_ERR_NOMEM, "out of host memory");
        return NULL;
    }
    pthread_mutex_init(&s->mu, NULL);
    char *msg = NULL;
    if (sqlite3_open_v2(path, &s->db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                            SQLITE_OPEN_FULLMUTEX,
                        NULL) != SQLITE_OK) {
        hs_error_set(e, HS_ERR_IO, "%s: %s", path,
                     s->db ? sqlite3_errmsg(s->db) : "cannot open");
        goto fail;
    }
    sqlite3_busy_timeout(s->db, 5000);
    if (sqlite3_exec(s->db, k_schema, NULL, NULL, &msg) != SQLITE_OK) {
        hs_error_set(e, HS_ERR_IO, "%s: %s", path, msg ? msg : "schema");
        sqlite3_free(msg);
        goto fail;
    }
    if (prepare(s,
                "INSERT OR IGNORE INTO results(id, endpoint, request, status,"
                " created_at, updated_at) VALUES(?1, ?2, ?3, 0, ?4, ?4)",
                &s->put_request, e) ||
        prepare(s,
                "UPDATE results SET status=?2, summary=?3, metrics=?4,"
                " updated_at=?5 WHERE id=?1",
                &s->put_result, e) ||
        prepare(s,
                "SELECT endpoint, request, status, summary, metrics FROM results"
                " WHERE id=?1",
                &s->get, e) ||
        prepare(s, "SELECT count(*) FROM results", &s->count, e))
        goto fail;
    return s;
fail:
    store_close(s);
    return NULL;
}

void store_close(store *s)
{
    if (!s)
        return;
    sqlite3_finalize(s->put_request);
    sqlite3_finalize(s->put_result);
    sqlite3_finalize(s->get);
    sqlite3_finalize(s->count);
    sqlite3_close(s->db);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

static int step_done(sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return rc == SQLITE_DONE ? 0 : -1;
}

int store_put_request(store *s, const char *id, const char *endpoint,
                      const char *request)
{
    pthread_mutex_lock(&s->mu);
    sqlite3_bind_text(s->put_request, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_text(s->put_request, 2, endpoint, -1, SQLITE_STATIC);
    sqlite3_bind_text(s->put_request, 3, request, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s->put_request, 4, (sqlite3_int64)time(NULL));
    int rc = step_done(s->put_request);
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
    int rc = step_done(s->put_result);
    pthread_mutex_unlock(&s->mu);
    return rc;
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
    int64_t n = sqlite3_step(s->count) == SQLITE_ROW
                    ? (int64_t)sqlite3_column_int64(s->count, 0)
                    : -1;
    sqlite3_reset(s->count);
    pthread_mutex_unlock(&s->mu);
    return n;
}
