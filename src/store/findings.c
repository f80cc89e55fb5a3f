/*
 * Profiles, micro-tool findings and their resolutions in the store (store.h): which tools
 * fired on which candidate, and, when a later candidate of the same problem no longer shows
 * a tool's finding, how much faster it actually got, so each tool's predictions can be
 * scored against what happened (kopt profile --tool-stats).
 */
#include "store_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void bind_positive_or_null(sqlite3_stmt *st, int i, double v)
{
    if (v > 0)
        sqlite3_bind_double(st, i, v);
    else
        sqlite3_bind_null(st, i);
}

/* The baseline's latest profile before `before_id`: its id and median; 0 when none. */
static kopt_status find_baseline(kopt_store *s, kopt_ctx *ctx, const kopt_store_profile *p,
                                 int64_t before_id, int64_t *id, double *median_ms,
                                 char *hash, size_t hash_len)
{
    sqlite3_stmt *st = NULL;
    const char *sql = p->baseline_hash
        ? "SELECT id, median_ms, candidate_hash FROM profiles WHERE problem_hash=?1 AND "
          "candidate_hash=?3 AND id<?4 ORDER BY id DESC LIMIT 1"
        : "SELECT id, median_ms, candidate_hash FROM profiles WHERE problem_hash=?1 AND "
          "candidate_hash<>?2 AND id<?4 ORDER BY id DESC LIMIT 1";

    *id = 0;
    *median_ms = 0;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
        return kopt__store_err(s, ctx, "find the baseline profile");
    sqlite3_bind_text(st, 1, p->problem_hash, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, p->candidate_hash, -1, SQLITE_TRANSIENT);
    kopt__store_bind_text(st, 3, p->baseline_hash);
    sqlite3_bind_int64(st, 4, before_id);
    if (sqlite3_step(st) == SQLITE_ROW) {
        *id = sqlite3_column_int64(st, 0);
        *median_ms = sqlite3_column_double(st, 1);
        snprintf(hash, hash_len, "%s", (const char *)sqlite3_column_text(st, 2));
    }
    sqlite3_finalize(st);
    return KOPT_OK;
}

static int has_tool(const kopt_store_finding *f, int nf, const char *tool)
{
    for (int i = 0; i < nf; i++)
        if (f[i].tool && strcmp(f[i].tool, tool) == 0)
            return 1;
    return 0;
}

/* Resolutions of the baseline's tools that this profile no longer shows. */
static kopt_status resolve(kopt_store *s, kopt_ctx *ctx, const kopt_store_profile *p,
                           int64_t prof_id, const kopt_store_finding *f, int nf, int *nresolved)
{
    sqlite3_stmt *q = NULL, *ins = NULL;
    int64_t base_id;
    double base_ms;
    char base_hash[128] = "";
    kopt_status rc;

    if ((rc = find_baseline(s, ctx, p, prof_id, &base_id, &base_ms, base_hash,
                            sizeof(base_hash))) != KOPT_OK || !base_id)
        return rc;
    if (sqlite3_prepare_v2(s->db, "SELECT tool, MAX(gain) FROM findings WHERE profile_id=? "
                           "GROUP BY tool ORDER BY tool", -1, &q, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(s->db, "INSERT INTO resolutions (problem_hash, tool, "
                           "earlier_candidate, later_candidate, earlier_profile, later_profile, "
                           "predicted_gain, realized_gain, earlier_ms, later_ms) VALUES "
                           "(?,?,?,?,?,?,?,?,?,?)", -1, &ins, NULL) != SQLITE_OK) {
        rc = kopt__store_err(s, ctx, "resolutions");
        goto cleanup;
    }
    sqlite3_bind_int64(q, 1, base_id);
    while (sqlite3_step(q) == SQLITE_ROW) {
        const char *tool = (const char *)sqlite3_column_text(q, 0);
        if (!tool || has_tool(f, nf, tool))
            continue;
        sqlite3_reset(ins);
        sqlite3_bind_text(ins, 1, p->problem_hash, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(ins, 2, tool, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(ins, 3, base_hash, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(ins, 4, p->candidate_hash, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(ins, 5, base_id);
        sqlite3_bind_int64(ins, 6, prof_id);
        sqlite3_bind_double(ins, 7, sqlite3_column_double(q, 1));
        if (base_ms > 0 && p->median_ms > 0)
            sqlite3_bind_double(ins, 8, 1.0 - p->median_ms / base_ms);
        else
            sqlite3_bind_null(ins, 8);
        bind_positive_or_null(ins, 9, base_ms);
        bind_positive_or_null(ins, 10, p->median_ms);
        if (sqlite3_step(ins) != SQLITE_DONE) {
            rc = kopt__store_err(s, ctx, "record a resolution");
            goto cleanup;
        }
        if (nresolved)
            (*nresolved)++;
    }
cleanup:
    sqlite3_finalize(q);
    sqlite3_finalize(ins);
    return rc;
}

kopt_status kopt_store_put_profile(kopt_store *s, kopt_ctx *ctx, const kopt_store_profile *p,
                                   const kopt_store_finding *f, int nf, int64_t *id,
                                   int *nresolved)
{
    sqlite3_stmt *st = NULL;
    int64_t prof_id;
    kopt_status rc = KOPT_OK;

    if (id)
        *id = 0;
    if (nresolved)
        *nresolved = 0;
    if (!p || !p->problem_hash || !p->candidate_hash || (nf && !f))
        return kopt_seterr(ctx, KOPT_E_INVALID, "store a profile: problem and candidate hashes "
                           "are needed");
    if (sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        return kopt__store_err(s, ctx, "store a profile");
    if (sqlite3_prepare_v2(s->db, "INSERT INTO profiles (problem_hash, candidate_hash, eval_id, "
                           "source, median_ms, collect_ms, passes, metrics_json, run_id) VALUES "
                           "(?,?,?,?,?,?,?,?,?)", -1, &st, NULL) != SQLITE_OK) {
        rc = kopt__store_err(s, ctx, "store a profile");
        goto cleanup;
    }
    sqlite3_bind_text(st, 1, p->problem_hash, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, p->candidate_hash, -1, SQLITE_TRANSIENT);
    if (p->eval_id)
        sqlite3_bind_int64(st, 3, p->eval_id);
    else
        sqlite3_bind_null(st, 3);
    kopt__store_bind_text(st, 4, p->source);
    if (p->run_id)
        sqlite3_bind_int64(st, 9, p->run_id);
    bind_positive_or_null(st, 5, p->median_ms);
    sqlite3_bind_double(st, 6, p->collect_ms);
    sqlite3_bind_int(st, 7, p->passes);
    kopt__store_bind_text(st, 8, p->metrics_json);
    if (sqlite3_step(st) != SQLITE_DONE) {
        rc = kopt__store_err(s, ctx, "store a profile");
        goto cleanup;
    }
    sqlite3_finalize(st);
    st = NULL;
    prof_id = sqlite3_last_insert_rowid(s->db);
    if (sqlite3_prepare_v2(s->db, "INSERT INTO findings (profile_id, problem_hash, "
                           "candidate_hash, tool, kernel, title, gain, confidence, median_ms) "
                           "VALUES (?,?,?,?,?,?,?,?,?)", -1, &st, NULL) != SQLITE_OK) {
        rc = kopt__store_err(s, ctx, "store findings");
        goto cleanup;
    }
    for (int i = 0; i < nf; i++) {
        if (!f[i].tool) {
            rc = kopt_seterr(ctx, KOPT_E_INVALID, "store findings: finding %d has no tool", i);
            goto cleanup;
        }
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, prof_id);
        sqlite3_bind_text(st, 2, p->problem_hash, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 3, p->candidate_hash, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 4, f[i].tool, -1, SQLITE_TRANSIENT);
        kopt__store_bind_text(st, 5, f[i].kernel);
        kopt__store_bind_text(st, 6, f[i].title);
        sqlite3_bind_double(st, 7, f[i].gain);
        sqlite3_bind_double(st, 8, f[i].confidence);
        bind_positive_or_null(st, 9, p->median_ms);
        if (sqlite3_step(st) != SQLITE_DONE) {
            rc = kopt__store_err(s, ctx, "store findings");
            goto cleanup;
        }
    }
    if ((rc = resolve(s, ctx, p, prof_id, f, nf, nresolved)) != KOPT_OK)
        goto cleanup;
    if (id)
        *id = prof_id;
cleanup:
    sqlite3_finalize(st);
    if (rc == KOPT_OK && sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        rc = kopt__store_err(s, ctx, "store a profile");
    if (rc != KOPT_OK) {
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
        if (id)
            *id = 0;
        if (nresolved)
            *nresolved = 0;
    }
    return rc;
}

kopt_status kopt_store_tool_stats(kopt_store *s, kopt_ctx *ctx, kopt_tool_stats **out, int *n)
{
    static const char *const sql =
        "WITH tools AS (SELECT tool FROM findings UNION SELECT tool FROM resolutions) "
        "SELECT t.tool,"
        " (SELECT COUNT(DISTINCT profile_id) FROM findings f WHERE f.tool=t.tool),"
        " (SELECT COUNT(*) FROM resolutions r WHERE r.tool=t.tool),"
        " (SELECT COUNT(realized_gain) FROM resolutions r WHERE r.tool=t.tool),"
        " (SELECT COUNT(*) FROM resolutions r WHERE r.tool=t.tool AND realized_gain>0),"
        " (SELECT AVG(predicted_gain) FROM resolutions r WHERE r.tool=t.tool),"
        " (SELECT AVG(realized_gain) FROM resolutions r WHERE r.tool=t.tool) "
        "FROM tools t ORDER BY t.tool";
    sqlite3_stmt *st = NULL;
    kopt_tool_stats *v = NULL;
    int cnt = 0, cap = 0, step;

    *out = NULL;
    *n = 0;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
        return kopt__store_err(s, ctx, "tool statistics");
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        kopt_tool_stats *t;
        if (cnt == cap) {
            kopt_tool_stats *g = realloc(v, (size_t)(cap = cap * 2 + 16) * sizeof(*v));
            if (!g) {
                free(v);
                sqlite3_finalize(st);
                return kopt_seterr(ctx, KOPT_E_NOMEM, "tool statistics");
            }
            v = g;
        }
        t = &v[cnt++];
        memset(t, 0, sizeof(*t));
        snprintf(t->tool, sizeof(t->tool), "%s", (const char *)sqlite3_column_text(st, 0));
        t->fired = sqlite3_column_int(st, 1);
        t->resolved = sqlite3_column_int(st, 2);
        t->resolved_timed = sqlite3_column_int(st, 3);
        t->improved = sqlite3_column_int(st, 4);
        t->mean_predicted = sqlite3_column_double(st, 5);
        t->mean_realized = sqlite3_column_double(st, 6);
        t->precision = t->resolved_timed ? (double)t->improved / t->resolved_timed : -1;
    }
    sqlite3_finalize(st);
    if (step != SQLITE_DONE) {
        free(v);
        return kopt__store_err(s, ctx, "tool statistics");
    }
    *out = v;
    *n = cnt;
    return KOPT_OK;
}
