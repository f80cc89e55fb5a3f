/*
 * Unit tests of the store's profiles, findings and resolutions (src/store/findings.c) on a
 * temporary database with synthetic rows: a tool that stops firing on a later candidate is
 * resolved with the realized gain 1 - later/earlier median; a tool that keeps firing is not;
 * per-tool statistics (fired, resolved, mean predicted vs realized, precision); an explicit
 * baseline; a version-1 database migrates to version 2 and keeps its evaluations.
 */
#include "ktest.h"

#include "kopt/store.h"

#include <sqlite3.h>

static kopt_ctx *ctx;
static char *tmp;

static kopt_store *open_db(const char *name, char **path)
{
    kopt_store *s = NULL;

    *path = kopt_path_join(tmp, name);
    if (!CHECK_EQ_INT(kopt_store_open(&s, ctx, *path), KOPT_OK))
        fprintf(stderr, "  %s\n", kopt_errmsg(ctx));
    return s;
}

static kopt_store_profile prof(const char *cand, double median_ms)
{
    kopt_store_profile p;

    memset(&p, 0, sizeof(p));
    p.problem_hash = "problem-A";
    p.candidate_hash = cand;
    p.source = "cupti";
    p.median_ms = median_ms;
    p.collect_ms = 42.5;
    p.passes = 2;
    p.metrics_json = "{\"k\":{\"gpu__time_duration.sum\":1000}}";
    return p;
}

static const kopt_tool_stats *stat_of(const kopt_tool_stats *v, int n, const char *tool)
{
    for (int i = 0; i < n; i++)
        if (strcmp(v[i].tool, tool) == 0)
            return &v[i];
    return NULL;
}

static void test_resolutions_and_stats(void)
{
    char *path;
    kopt_store *s = open_db("findings.db", &path);
    const kopt_store_finding f1[] = {
        {"bank_conflicts", "k", "32-way conflicts", 0.40, 0.9},
        {"bank_conflicts", "k2", "8-way conflicts", 0.10, 0.8},
        {"small_grid", "k", "8 blocks", 0.20, 0.7},
    };
    const kopt_store_finding f2[] = {{"small_grid", "k", "8 blocks", 0.25, 0.7}};
    const kopt_store_finding f3[] = {{"occupancy_limiter", "k", "registers", 0.05, 0.5}};
    kopt_store_profile p1 = prof("cand-1", 2.0), p2 = prof("cand-2", 1.5), p3 = prof("cand-3", 1.8);
    kopt_tool_stats *st = NULL;
    const kopt_tool_stats *t;
    int64_t id1 = 0, id2 = 0, id3 = 0;
    int nres = -1, n = 0;

    if (!s)
        goto cleanup;
    CHECK_EQ_INT(kopt_store_schema_version(s), KOPT_STORE_SCHEMA_VERSION);
    CHECK_EQ_INT(kopt_store_put_profile(s, ctx, &p1, f1, 3, &id1, &nres), KOPT_OK);
    CHECK(id1 > 0);
    CHECK_EQ_INT(nres, 0);                    /* nothing earlier */
    /* cand-2: bank_conflicts gone (resolved, 25% faster); small_grid stays */
    CHECK_EQ_INT(kopt_store_put_profile(s, ctx, &p2, f2, 1, &id2, &nres), KOPT_OK);
    CHECK(id2 > id1);
    CHECK_EQ_INT(nres, 1);
    /* cand-3 against cand-2 (the latest): small_grid gone, but 20% slower */
    CHECK_EQ_INT(kopt_store_put_profile(s, ctx, &p3, f3, 1, &id3, &nres), KOPT_OK);
    CHECK_EQ_INT(nres, 1);
    if (!CHECK_EQ_INT(kopt_store_tool_stats(s, ctx, &st, &n), KOPT_OK))
        goto cleanup;
    CHECK_EQ_INT(n, 3);
    if ((t = stat_of(st, n, "bank_conflicts")) && CHECK(t != NULL)) {
        CHECK_EQ_INT(t->fired, 1);            /* one profile, two kernels */
        CHECK_EQ_INT(t->resolved, 1);
        CHECK_NEAR(t->mean_predicted, 0.40, 1e-12);   /* the largest of its gains */
        CHECK_NEAR(t->mean_realized, 1.0 - 1.5 / 2.0, 1e-12);
        CHECK_NEAR(t->precision, 1.0, 1e-12);
    } else {
        CHECK(!"bank_conflicts missing");
    }
    if ((t = stat_of(st, n, "small_grid"))) {
        CHECK_EQ_INT(t->fired, 2);
        CHECK_EQ_INT(t->resolved, 1);
        CHECK_NEAR(t->mean_predicted, 0.25, 1e-12);   /* cand-2's prediction */
        CHECK_NEAR(t->mean_realized, 1.0 - 1.8 / 1.5, 1e-12);
        CHECK_NEAR(t->precision, 0.0, 1e-12);
    } else {
        CHECK(!"small_grid missing");
    }
    if ((t = stat_of(st, n, "occupancy_limiter"))) {
        CHECK_EQ_INT(t->fired, 1);
        CHECK_EQ_INT(t->resolved, 0);
        CHECK_NEAR(t->precision, -1, 0);
    } else {
        CHECK(!"occupancy_limiter missing");
    }
cleanup:
    free(st);
    kopt_store_close(s);
    free(path);
}

static void test_baseline_and_untimed(void)
{
    char *path;
    kopt_store *s = open_db("baseline.db", &path);
    const kopt_store_finding fa[] = {{"divergence", "k", "odd lanes", 0.3, 0.9}};
    const kopt_store_finding fb[] = {{"unfused_fp", "k", "FMUL+FADD", 0.1, 0.9}};
    kopt_store_profile a = prof("cand-a", 1.0), b = prof("cand-b", 0.8), c = prof("cand-c", 0);
    kopt_tool_stats *st = NULL;
    const kopt_tool_stats *t;
    int nres = -1, n = 0;

    if (!s)
        goto cleanup;
    CHECK_EQ_INT(kopt_store_put_profile(s, ctx, &a, fa, 1, NULL, &nres), KOPT_OK);
    CHECK_EQ_INT(kopt_store_put_profile(s, ctx, &b, fb, 1, NULL, &nres), KOPT_OK);
    CHECK_EQ_INT(nres, 1);                    /* divergence resolved by cand-b */
    /* an untimed candidate resolved against an explicit baseline (cand-a): no realized gain */
    c.baseline_hash = "cand-a";
    CHECK_EQ_INT(kopt_store_put_profile(s, ctx, &c, NULL, 0, NULL, &nres), KOPT_OK);
    CHECK_EQ_INT(nres, 1);                    /* divergence again, not unfused_fp */
    if (!CHECK_EQ_INT(kopt_store_tool_stats(s, ctx, &st, &n), KOPT_OK))
        goto cleanup;
    if ((t = stat_of(st, n, "divergence"))) {
        CHECK_EQ_INT(t->resolved, 2);
        CHECK_EQ_INT(t->resolved_timed, 1);
        CHECK_EQ_INT(t->improved, 1);
        CHECK_NEAR(t->mean_realized, 0.2, 1e-12);
        CHECK_NEAR(t->precision, 1.0, 1e-12);
    } else {
        CHECK(!"divergence missing");
    }
    if ((t = stat_of(st, n, "unfused_fp")))
        CHECK_EQ_INT(t->resolved, 0);
    else
        CHECK(!"unfused_fp missing");
    /* bad input: no hashes */
    c.problem_hash = NULL;
    CHECK_EQ_INT(kopt_store_put_profile(s, ctx, &c, NULL, 0, NULL, NULL), KOPT_E_INVALID);
cleanup:
    free(st);
    kopt_store_close(s);
    free(path);
}

/* A database at schema version 1 (as kopt wrote it before profiles) migrates forward. */
static void test_migration_from_v1(void)
{
    static const char v1[] =
        "CREATE TABLE devices (uuid TEXT PRIMARY KEY, name TEXT NOT NULL, cc TEXT NOT NULL,"
        "  sm_count INTEGER, info_json TEXT, ceilings_json TEXT, measured_at TEXT);"
        "CREATE TABLE problems (hash TEXT PRIMARY KEY, name TEXT NOT NULL, path TEXT,"
        "  first_seen TEXT);"
        "CREATE TABLE candidates (hash TEXT PRIMARY KEY, problem_hash TEXT, path TEXT,"
        "  source TEXT NOT NULL, is_reference INTEGER NOT NULL DEFAULT 0);"
        "CREATE TABLE evaluations (id INTEGER PRIMARY KEY AUTOINCREMENT, created_at TEXT,"
        "  problem_hash TEXT NOT NULL, candidate_hash TEXT, device_uuid TEXT, arch TEXT,"
        "  sizes_json TEXT, seed INTEGER, verdict TEXT NOT NULL, message TEXT,"
        "  median_ms REAL, min_ms REAL, p10_ms REAL, p90_ms REAL, reps INTEGER,"
        "  ref_median_ms REAL, speedup REAL, pct_of_bound REAL, achieved_gbs REAL,"
        "  achieved_gflops REAL, compile_cache_hit INTEGER, compile_ms REAL, verify_ms REAL,"
        "  time_ms REAL, total_ms REAL, compile_log TEXT, result_json TEXT);"
        "INSERT INTO evaluations (problem_hash, verdict) VALUES ('p', 'OK');"
        "PRAGMA user_version=1;";
    char *path = kopt_path_join(tmp, "v1.db");
    sqlite3 *db = NULL;
    kopt_store *s = NULL;
    kopt_store_profile p = prof("cand-x", 1.0);
    int64_t n = 0, id = 0;

    if (!CHECK_EQ_INT(sqlite3_open(path, &db), SQLITE_OK) ||
        !CHECK_EQ_INT(sqlite3_exec(db, v1, NULL, NULL, NULL), SQLITE_OK))
        goto cleanup;
    sqlite3_close(db);
    db = NULL;
    if (!CHECK_EQ_INT(kopt_store_open(&s, ctx, path), KOPT_OK))
        goto cleanup;
    CHECK_EQ_INT(kopt_store_schema_version(s), KOPT_STORE_SCHEMA_VERSION);
    CHECK_EQ_INT(kopt_store_count_evals(s, ctx, &n), KOPT_OK);
    CHECK_EQ_INT(n, 1);
    CHECK_EQ_INT(kopt_store_put_profile(s, ctx, &p, NULL, 0, &id, NULL), KOPT_OK);
    CHECK(id > 0);
cleanup:
    sqlite3_close(db);
    kopt_store_close(s);
    free(path);
}

int main(int argc, char **argv)
{
    static const ktest_case cases[] = {
        KTEST(test_resolutions_and_stats), KTEST(test_baseline_and_untimed),
        KTEST(test_migration_from_v1),
    };
    int rc;

    ctx = kopt_ctx_new();
    tmp = ktest_tmpdir("store-findings");
    rc = ktest_main(argc, argv, cases, KTEST_COUNT(cases));
    if (tmp)
        ktest_rmtree(tmp);
    free(tmp);
    kopt_ctx_free(ctx);
    return rc;
}
