/* kopt bench's tables: suites and their per-problem rows (the row's fields as JSON: the
 * CLI owns them). */
#include "kopt/store.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

kopt_status kopt_store_bench_suite_put(kopt_store *s, kopt_ctx *ctx, int64_t suite_id,
                                       const char *problems_dir, const char *candidates,
                                       const char *options_json, const char *summary_json)
{
    sqlite3_stmt *st = NULL;
    kopt_status rc = KOPT_OK;

    if (sqlite3_prepare_v2(s->db, "INSERT INTO bench_suites (suite_id, problems_dir, "
                           "candidates, options_json, summary_json) VALUES (?,?,?,?,?) "
                           "ON CONFLICT(suite_id) DO UPDATE SET summary_json = "
                           "coalesce(excluded.summary_json, summary_json)", -1, &st,
                           NULL) != SQLITE_OK)
        return kopt__store_err(s, ctx, "record a bench suite");
    sqlite3_bind_int64(st, 1, suite_id);
    kopt__store_bind_text(st, 2, problems_dir);
    kopt__store_bind_text(st, 3, candidates);
    kopt__store_bind_text(st, 4, options_json);
    kopt__store_bind_text(st, 5, summary_json);
    if (sqlite3_step(st) != SQLITE_DONE)
        rc = kopt__store_err(s, ctx, "record a bench suite");
    sqlite3_finalize(st);
    return rc;
}

kopt_status kopt_store_bench_suite_get(kopt_store *s, kopt_ctx *ctx, int64_t suite_id,
                                       char **problems_dir, char **candidates,
                                       char **options_json)
{
    sqlite3_stmt *st = NULL;
    kopt_status rc = KOPT_OK;

    *problems_dir = *candidates = *options_json = NULL;
    if (sqlite3_prepare_v2(s->db, "SELECT problems_dir, candidates, options_json FROM "
                           "bench_suites WHERE suite_id=?", -1, &st, NULL) != SQLITE_OK)
        return kopt__store_err(s, ctx, "read a bench suite");
    sqlite3_bind_int64(st, 1, suite_id);
    if (sqlite3_step(st) == SQLITE_ROW) {
        *problems_dir = kopt__store_dup_col(st, 0);
        *candidates = kopt__store_dup_col(st, 1);
        *options_json = kopt__store_dup_col(st, 2);
    } else {
        rc = kopt_seterr(ctx, KOPT_E_NOT_FOUND, "no bench suite %lld in the store",
                         (long long)suite_id);
    }
    sqlite3_finalize(st);
    return rc;
}

kopt_status kopt_store_bench_row_put(kopt_store *s, kopt_ctx *ctx, int64_t suite_id,
                                     const char *problem, int64_t run_id, const char *verdict,
                                     const char *row_json)
{
    sqlite3_stmt *st = NULL;
    kopt_status rc = KOPT_OK;

    if (sqlite3_prepare_v2(s->db, "INSERT OR REPLACE INTO bench_rows (suite_id, problem, "
                           "run_id, verdict, row_json) VALUES (?,?,?,?,?)", -1, &st,
                           NULL) != SQLITE_OK)
        return kopt__store_err(s, ctx, "record a bench row");
    sqlite3_bind_int64(st, 1, suite_id);
    kopt__store_bind_text(st, 2, problem);
    sqlite3_bind_int64(st, 3, run_id);
    kopt__store_bind_text(st, 4, verdict);
    kopt__store_bind_text(st, 5, row_json);
    if (sqlite3_step(st) != SQLITE_DONE)
        rc = kopt__store_err(s, ctx, "record a bench row");
    sqlite3_finalize(st);
    return rc;
}

kopt_status kopt_store_bench_rows(kopt_store *s, kopt_ctx *ctx, int64_t suite_id, char ***out,
                                  int *n)
{
    sqlite3_stmt *st = NULL;
    char **rows = NULL;
    int cap = 0, count = 0;

    *out = NULL;
    *n = 0;
    if (sqlite3_prepare_v2(s->db, "SELECT row_json FROM bench_rows WHERE suite_id=? ORDER BY "
                           "problem", -1, &st, NULL) != SQLITE_OK)
        return kopt__store_err(s, ctx, "read bench rows");
    sqlite3_bind_int64(st, 1, suite_id);
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (count == cap) {
            char **grown = realloc(rows, (size_t)(cap = cap ? 2 * cap : 16) * sizeof(char *));
            if (!grown) {
                for (int i = 0; i < count; i++)
                    free(rows[i]);
                free(rows);
                sqlite3_finalize(st);
                return kopt_seterr(ctx, KOPT_E_NOMEM, "bench rows");
            }
            rows = grown;
        }
        rows[count++] = kopt__store_dup_col(st, 0);
    }
    sqlite3_finalize(st);
    *out = rows;
    *n = count;
    return KOPT_OK;
}
