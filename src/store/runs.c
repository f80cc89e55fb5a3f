/*
 * Runs in the store (store.h, schema version 4): one row per piece of work kopt did for a
 * caller (kopt eval, profile, tune; later optimize, bench, mcp requests), with its command
 * line, its environment and its outcome. Evaluations, profiles and tuning runs point at it
 * through their run_id column. The run API (src/run) writes these rows.
 */
#include "store_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RUN_COLUMNS                                                                          \
    "id, kind, status, command, parent_id, started_at, finished_at, kopt_version, host,"    \
    " device_name, device_uuid, device_cc, driver_version, nvrtc_version, clock_khz,"        \
    " mem_clock_khz, summary,"                                                               \
    " (SELECT count(*) FROM evaluations e WHERE e.run_id = runs.id),"                        \
    " (SELECT count(*) FROM profiles p WHERE p.run_id = runs.id),"                           \
    " (SELECT count(*) FROM tune_runs t WHERE t.run_id = runs.id)"

static void bind_int_or_null(sqlite3_stmt *st, int i, int64_t v)
{
    if (v)
        sqlite3_bind_int64(st, i, v);
    else
        sqlite3_bind_null(st, i);
}

static void bind_text_or_null_if_empty(sqlite3_stmt *st, int i, const char *v)
{
    kopt__store_bind_text(st, i, v && v[0] ? v : NULL);
}

/* The environment's fields, bound from parameter `first` on (9 of them). */
static void bind_env(sqlite3_stmt *st, int first, const kopt_store_run *r)
{
    bind_text_or_null_if_empty(st, first, r->kopt_version);
    bind_text_or_null_if_empty(st, first + 1, r->host);
    bind_text_or_null_if_empty(st, first + 2, r->device_name);
    bind_text_or_null_if_empty(st, first + 3, r->device_uuid);
    bind_text_or_null_if_empty(st, first + 4, r->device_cc);
    bind_int_or_null(st, first + 5, r->driver_version);
    bind_text_or_null_if_empty(st, first + 6, r->nvrtc_version);
    bind_int_or_null(st, first + 7, r->clock_khz);
    bind_int_or_null(st, first + 8, r->mem_clock_khz);
}

kopt_status kopt_store_run_begin(kopt_store *s, kopt_ctx *ctx, const kopt_store_run *r,
                                 int64_t *id)
{
    sqlite3_stmt *st = NULL;
    kopt_status rc = KOPT_OK;

    if (sqlite3_prepare_v2(s->db, "INSERT INTO runs (kind, status, command, parent_id,"
                           " kopt_version, host, device_name, device_uuid, device_cc,"
                           " driver_version, nvrtc_version, clock_khz, mem_clock_khz)"
                           " VALUES (?,'running',?,?,?,?,?,?,?,?,?,?,?)", -1, &st, NULL) !=
        SQLITE_OK)
        return kopt__store_err(s, ctx, "record a run");
    sqlite3_bind_text(st, 1, r->kind, -1, SQLITE_TRANSIENT);
    bind_text_or_null_if_empty(st, 2, r->command);
    bind_int_or_null(st, 3, r->parent_id);
    bind_env(st, 4, r);
    if (sqlite3_step(st) != SQLITE_DONE)
        rc = kopt__store_err(s, ctx, "record a run");
    else if (id)
        *id = sqlite3_last_insert_rowid(s->db);
    sqlite3_finalize(st);
    return rc;
}

kopt_status kopt_store_run_set_env(kopt_store *s, kopt_ctx *ctx, int64_t id,
                                   const kopt_store_run *r)
{
    sqlite3_stmt *st = NULL;
    kopt_status rc = KOPT_OK;

    if (sqlite3_prepare_v2(s->db, "UPDATE runs SET kopt_version=?1, host=?2, device_name=?3,"
                           " device_uuid=?4, device_cc=?5, driver_version=?6,"
                           " nvrtc_version=?7, clock_khz=?8, mem_clock_khz=?9, parent_id=?11 WHERE id=?10",
                           -1, &st, NULL) != SQLITE_OK)
        return kopt__store_err(s, ctx, "update a run");
    bind_env(st, 1, r);
    sqlite3_bind_int64(st, 10, id);
    bind_int_or_null(st, 11, r->parent_id);
    if (sqlite3_step(st) != SQLITE_DONE)
        rc = kopt__store_err(s, ctx, "update a run");
    sqlite3_finalize(st);
    return rc;
}

kopt_status kopt_store_run_finish(kopt_store *s, kopt_ctx *ctx, int64_t id, const char *status,
                                  const char *summary)
{
    sqlite3_stmt *st = NULL;
    kopt_status rc = KOPT_OK;

    if (sqlite3_prepare_v2(s->db, "UPDATE runs SET status=?1, summary=?2, finished_at="
                           "strftime('%Y-%m-%dT%H:%M:%SZ','now') WHERE id=?3", -1, &st,
                           NULL) != SQLITE_OK)
        return kopt__store_err(s, ctx, "finish a run");
    sqlite3_bind_text(st, 1, status, -1, SQLITE_TRANSIENT);
    kopt__store_bind_text(st, 2, summary);
    sqlite3_bind_int64(st, 3, id);
    if (sqlite3_step(st) != SQLITE_DONE)
        rc = kopt__store_err(s, ctx, "finish a run");
    sqlite3_finalize(st);
    return rc;
}

static void read_run(sqlite3_stmt *st, kopt_store_run *r)
{
    memset(r, 0, sizeof(*r));
    r->id = sqlite3_column_int64(st, 0);
    kopt__store_copy_col(st, 1, r->kind, sizeof(r->kind));
    kopt__store_copy_col(st, 2, r->status, sizeof(r->status));
    kopt__store_copy_col(st, 3, r->command, sizeof(r->command));
    r->parent_id = sqlite3_column_int64(st, 4);
    kopt__store_copy_col(st, 5, r->started_at, sizeof(r->started_at));
    kopt__store_copy_col(st, 6, r->finished_at, sizeof(r->finished_at));
    kopt__store_copy_col(st, 7, r->kopt_version, sizeof(r->kopt_version));
    kopt__store_copy_col(st, 8, r->host, sizeof(r->host));
    kopt__store_copy_col(st, 9, r->device_name, sizeof(r->device_name));
    kopt__store_copy_col(st, 10, r->device_uuid, sizeof(r->device_uuid));
    kopt__store_copy_col(st, 11, r->device_cc, sizeof(r->device_cc));
    r->driver_version = sqlite3_column_int(st, 12);
    kopt__store_copy_col(st, 13, r->nvrtc_version, sizeof(r->nvrtc_version));
    r->clock_khz = sqlite3_column_int(st, 14);
    r->mem_clock_khz = sqlite3_column_int(st, 15);
    kopt__store_copy_col(st, 16, r->summary, sizeof(r->summary));
    r->nevals = sqlite3_column_int64(st, 17);
    r->nprofiles = sqlite3_column_int64(st, 18);
    r->ntune_runs = sqlite3_column_int64(st, 19);
}

kopt_status kopt_store_run_get(kopt_store *s, kopt_ctx *ctx, int64_t id, kopt_store_run *out)
{
    sqlite3_stmt *st = NULL;
    kopt_status rc = KOPT_OK;

    if (sqlite3_prepare_v2(s->db, "SELECT " RUN_COLUMNS " FROM runs WHERE id=?", -1, &st,
                           NULL) != SQLITE_OK)
        return kopt__store_err(s, ctx, "read a run");
    sqlite3_bind_int64(st, 1, id);
    if (sqlite3_step(st) == SQLITE_ROW)
        read_run(st, out);
    else
        rc = kopt_seterr(ctx, KOPT_E_NOT_FOUND, "no run %lld in the store", (long long)id);
    sqlite3_finalize(st);
    return rc;
}

kopt_status kopt_store_runs(kopt_store *s, kopt_ctx *ctx, const char *kind, int limit,
                            kopt_store_run **out, int *n)
{
    sqlite3_stmt *st = NULL;
    kopt_store_run *v = NULL;
    int cap = 0, step;

    *out = NULL;
    *n = 0;
    if (sqlite3_prepare_v2(s->db, "SELECT " RUN_COLUMNS " FROM runs WHERE ?1 IS NULL OR kind=?1"
                           " ORDER BY id DESC LIMIT ?2", -1, &st, NULL) != SQLITE_OK)
        return kopt__store_err(s, ctx, "list runs");
    kopt__store_bind_text(st, 1, kind);
    sqlite3_bind_int(st, 2, limit > 0 ? limit : -1);
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) {
            kopt_store_run *p = realloc(v, (size_t)(cap = cap ? 2 * cap : 16) * sizeof(*v));
            if (!p) {
                free(v);
                sqlite3_finalize(st);
                return kopt_seterr(ctx, KOPT_E_NOMEM, "runs");
            }
            v = p;
        }
        read_run(st, &v[(*n)++]);
    }
    sqlite3_finalize(st);
    if (step != SQLITE_DONE) {
        free(v);
        *n = 0;
        return kopt__store_err(s, ctx, "list runs");
    }
    *out = v;
    return KOPT_OK;
}

kopt_status kopt_store_tune_set_run(kopt_store *s, kopt_ctx *ctx, int64_t tune_run_id,
                                    int64_t run_id)
{
    sqlite3_stmt *st = NULL;
    kopt_status rc = KOPT_OK;

    if (sqlite3_prepare_v2(s->db, "UPDATE tune_runs SET run_id=? WHERE id=?", -1, &st, NULL) !=
        SQLITE_OK)
        return kopt__store_err(s, ctx, "link a tuning run");
    bind_int_or_null(st, 1, run_id);
    sqlite3_bind_int64(st, 2, tune_run_id);
    if (sqlite3_step(st) != SQLITE_DONE)
        rc = kopt__store_err(s, ctx, "link a tuning run");
    sqlite3_finalize(st);
    return rc;
}
