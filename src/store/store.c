/* The SQLite store: schema, migrations, and the few writes and reads kopt needs. */
#include "kopt/store.h"

#include <jansson.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store_int.h"

/* Schema versions in order; migration i brings user_version from i to i + 1. */
static const char *const migrations[] = {
    /* 0 -> 1 */
    KOPT__STORE_BASE_SCHEMA,
    /* 1 -> 2: profiles, findings and their resolutions (findings.c) */
    KOPT__STORE_FINDINGS_SCHEMA,
    /* 2 -> 3: tuning runs and their evaluations (tune.c) */
    KOPT__STORE_TUNE_SCHEMA,
    /* 3 -> 4: runs, and the run of each evaluation, profile and tuning run (runs.c) */
    KOPT__STORE_RUNS_SCHEMA,
    /* 4 -> 5: LLM exchanges (llm.c) */
    KOPT__STORE_LLM_SCHEMA,
    /* 5 -> 6: kopt optimize's search trees and search memory (opt.c) */
    KOPT__STORE_OPT_SCHEMA,
    /* 6 -> 7: the agents' code searches (opt.c) */
    KOPT__STORE_OPT_SEARCH_SCHEMA,
    /* 7 -> 8: kopt bench's suites and rows (bench.c) */
    KOPT__STORE_BENCH_SCHEMA,
    /* 8 -> 9: where each measurement was taken (scale-out; tune.c, evaluations) */
    KOPT__STORE_SCALE_SCHEMA,
    /* 9 -> 10: the GPU that evaluated each search node (kopt optimize --gpus; opt.c) */
    KOPT__STORE_OPT_GPU_SCHEMA,
    /* 10 -> 11: torch.compile baselines kept across runs (baselines.c) */
    KOPT__STORE_BASELINES_SCHEMA,
};

kopt_status kopt__store_err(kopt_store *s, kopt_ctx *ctx, const char *what)
{
    return kopt_seterr(ctx, KOPT_E_DB, "%s: %s", what, sqlite3_errmsg(s->db));
}

void kopt__store_bind_text(sqlite3_stmt *st, int i, const char *v)
{
    if (v)
        sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, i);
}

char *kopt__store_dup_col(sqlite3_stmt *st, int col)
{
    const unsigned char *t = sqlite3_column_text(st, col);
    return t ? strdup((const char *)t) : NULL;
}

void kopt__store_copy_col(sqlite3_stmt *st, int col, char *buf, size_t len)
{
    const unsigned char *t = sqlite3_column_text(st, col);
    snprintf(buf, len, "%s", t ? (const char *)t : "");
}

int kopt_store_schema_version(kopt_store *s)
{
    sqlite3_stmt *st = NULL;
    int v = -1;

    if (sqlite3_prepare_v2(s->db, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* Every commit of this process's stores, counted (kopt_store_commits): the file guard
 * of a running candidate tells kopt's own writes from a candidate's by it. */
static int count_commit(void *user)
{
    (void)user;
    kopt__store_commit_seen();
    return 0;
}

kopt_status kopt_store_open(kopt_store **out, kopt_ctx *ctx, const char *path)
{
    kopt_store *s = calloc(1, sizeof(*s));
    kopt_status rc = KOPT_OK;
    int v;

    *out = NULL;
    if (!s)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "store");
    if (sqlite3_open(path, &s->db) != SQLITE_OK) {
        rc = kopt_seterr(ctx, KOPT_E_DB, "%s: %s", path, s->db ? sqlite3_errmsg(s->db) : "open");
        goto cleanup;
    }
    sqlite3_busy_timeout(s->db, 5000);
    sqlite3_commit_hook(s->db, count_commit, NULL);
    sqlite3_exec(s->db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL);
    /* in WAL mode, NORMAL keeps every commit through a crash or kill of kopt (only a power
     * loss can drop the last ones) and does not wait for the disk at each commit: an
     * evaluation's rows are several commits */
    sqlite3_exec(s->db, "PRAGMA synchronous=NORMAL", NULL, NULL, NULL);
    v = kopt_store_schema_version(s);
    if (v < 0) {
        rc = kopt_seterr(ctx, KOPT_E_DB, "%s: not a SQLite database", path);
        goto cleanup;
    }
    if (v > KOPT_STORE_SCHEMA_VERSION) {
        rc = kopt_seterr(ctx, KOPT_E_DB, "%s: schema version %d is newer than this kopt (%d)",
                         path, v, KOPT_STORE_SCHEMA_VERSION);
        goto cleanup;
    }
    for (; v < KOPT_STORE_SCHEMA_VERSION; v++) {
        char *err = NULL, pragma[64];
        snprintf(pragma, sizeof(pragma), "PRAGMA user_version=%d", v + 1);
        if (sqlite3_exec(s->db, "BEGIN", NULL, NULL, &err) != SQLITE_OK ||
            sqlite3_exec(s->db, migrations[v], NULL, NULL, &err) != SQLITE_OK ||
            sqlite3_exec(s->db, pragma, NULL, NULL, &err) != SQLITE_OK ||
            sqlite3_exec(s->db, "COMMIT", NULL, NULL, &err) != SQLITE_OK) {
            rc = kopt_seterr(ctx, KOPT_E_DB, "%s: migration to version %d: %s", path, v + 1,
                             err ? err : "failed");
            sqlite3_free(err);
            sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
            goto cleanup;
        }
    }
    *out = s;
    s = NULL;
cleanup:
    kopt_store_close(s);
    return rc;
}

void kopt_store_close(kopt_store *s)
{
    if (!s)
        return;
    sqlite3_close(s->db);
    free(s);
}

kopt_status kopt_store_group_begin(kopt_store *s, kopt_ctx *ctx)
{
    if (sqlite3_exec(s->db, "SAVEPOINT kopt_group", NULL, NULL, NULL) != SQLITE_OK)
        return kopt__store_err(s, ctx, "begin a group of writes");
    return KOPT_OK;
}

kopt_status kopt_store_group_end(kopt_store *s, kopt_ctx *ctx, int commit)
{
    if (commit && sqlite3_exec(s->db, "RELEASE kopt_group", NULL, NULL, NULL) == SQLITE_OK)
        return KOPT_OK;
    if (commit) {
        kopt_status rc = kopt__store_err(s, ctx, "commit a group of writes");
        sqlite3_exec(s->db, "ROLLBACK TO kopt_group", NULL, NULL, NULL);
        sqlite3_exec(s->db, "RELEASE kopt_group", NULL, NULL, NULL);
        return rc;
    }
    sqlite3_exec(s->db, "ROLLBACK TO kopt_group", NULL, NULL, NULL);
    sqlite3_exec(s->db, "RELEASE kopt_group", NULL, NULL, NULL);
    return KOPT_OK;
}

kopt_status kopt_store_get_ceilings(kopt_store *s, kopt_ctx *ctx, const char *uuid,
                                    kopt_ceilings *out, int *found)
{
    sqlite3_stmt *st = NULL;
    kopt_status rc = KOPT_OK;

    memset(out, 0, sizeof(*out));
    *found = 0;
    if (sqlite3_prepare_v2(s->db, "SELECT ceilings_json, measured_at FROM devices WHERE uuid=?",
                           -1, &st, NULL) != SQLITE_OK)
        return kopt__store_err(s, ctx, "read ceilings");
    sqlite3_bind_text(st, 1, uuid, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0)) {
        json_t *j = json_loads((const char *)sqlite3_column_text(st, 0), 0, NULL), *g, *m;
        if (j) {
            out->valid = 1;
            out->dram_copy_gbs = json_number_value(json_object_get(j, "dram_copy_gbs"));
            out->dram_read_gbs = json_number_value(json_object_get(j, "dram_read_gbs"));
            out->dram_write_gbs = json_number_value(json_object_get(j, "dram_write_gbs"));
            g = json_object_get(j, "gflops");
            m = json_object_get(j, "measured");
            for (int k = 0; k < KOPT_NCOMPUTE; k++) {
                out->gflops[k] = json_number_value(json_array_get(g, (size_t)k));
                out->measured[k] = (int)json_integer_value(json_array_get(m, (size_t)k));
            }
            /* absent in rows written before kopt measured them: 0, not measured */
            out->l2_gbs = json_number_value(json_object_get(j, "l2_gbs"));
            out->smem_gbs = json_number_value(json_object_get(j, "smem_gbs"));
            out->l2_measured = json_is_true(json_object_get(j, "l2_measured"));
            out->smem_measured = json_is_true(json_object_get(j, "smem_measured"));
            out->fp64_fma_gflops = json_number_value(json_object_get(j, "fp64_fma_gflops"));
            out->fp64_tc_gflops = json_number_value(json_object_get(j, "fp64_tc_gflops"));
            snprintf(out->measured_at, sizeof(out->measured_at), "%s",
                     sqlite3_column_text(st, 1) ? (const char *)sqlite3_column_text(st, 1) : "");
            *found = 1;
            json_decref(j);
        }
    }
    sqlite3_finalize(st);
    return rc;
}

kopt_status kopt_store_put_device(kopt_store *s, kopt_ctx *ctx, const kopt_device_info *d,
                                  const kopt_ceilings *c)
{
    json_t *cj = json_object(), *g = json_array(), *m = json_array();
    char *ctext, cc[16];
    sqlite3_stmt *st = NULL;
    kopt_status rc = KOPT_OK;

    for (int k = 0; k < KOPT_NCOMPUTE; k++) {
        json_array_append_new(g, json_real(c->gflops[k]));
        json_array_append_new(m, json_integer(c->measured[k]));
    }
    json_object_set_new(cj, "dram_copy_gbs", json_real(c->dram_copy_gbs));
    json_object_set_new(cj, "dram_read_gbs", json_real(c->dram_read_gbs));
    json_object_set_new(cj, "dram_write_gbs", json_real(c->dram_write_gbs));
    json_object_set_new(cj, "gflops", g);
    json_object_set_new(cj, "measured", m);
    json_object_set_new(cj, "l2_gbs", json_real(c->l2_gbs));
    json_object_set_new(cj, "l2_measured", json_boolean(c->l2_measured));
    json_object_set_new(cj, "smem_gbs", json_real(c->smem_gbs));
    json_object_set_new(cj, "smem_measured", json_boolean(c->smem_measured));
    json_object_set_new(cj, "fp64_fma_gflops", json_real(c->fp64_fma_gflops));
    json_object_set_new(cj, "fp64_tc_gflops", json_real(c->fp64_tc_gflops));
    ctext = json_dumps(cj, JSON_COMPACT);
    json_decref(cj);
    snprintf(cc, sizeof(cc), "%d.%d", d->cc_major, d->cc_minor);
    if (sqlite3_prepare_v2(s->db, "INSERT OR REPLACE INTO devices (uuid, name, cc, sm_count, "
                           "ceilings_json, measured_at) VALUES (?,?,?,?,?,?)", -1, &st,
                           NULL) != SQLITE_OK) {
        rc = kopt__store_err(s, ctx, "write device");
        goto cleanup;
    }
    sqlite3_bind_text(st, 1, d->uuid, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, d->name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, cc, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 4, d->sm_count);
    sqlite3_bind_text(st, 5, ctext, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 6, c->measured_at, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(st) != SQLITE_DONE)
        rc = kopt__store_err(s, ctx, "write device");
cleanup:
    sqlite3_finalize(st);
    free(ctext);
    return rc;
}

kopt_status kopt_store_put_eval(kopt_store *s, kopt_ctx *ctx, const kopt_problem *p,
                                const kopt_candidate *c, const kopt_eval_result *r,
                                const char *result_json, int64_t *id)
{
    return kopt_store_put_eval_in_run(s, ctx, 0, NULL, p, c, r, result_json, id);
}

kopt_status kopt_store_put_eval_in_run(kopt_store *s, kopt_ctx *ctx, int64_t run_id,
                                       const char *tag, const kopt_problem *p,
                                       const kopt_candidate *c, const kopt_eval_result *r,
                                       const char *result_json, int64_t *id)
{
    sqlite3_stmt *st = NULL;
    json_t *sizes = json_object();
    char *sizes_text, host[256] = "";
    kopt_status rc = KOPT_OK;

    for (int i = 0; i < r->sizes.n; i++)
        json_object_set_new(sizes, r->sizes.names[i], json_integer(r->sizes.values[i]));
    sizes_text = json_dumps(sizes, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(sizes);
    if (sqlite3_exec(s->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
        rc = kopt__store_err(s, ctx, "begin");
        goto cleanup;
    }
    if (sqlite3_prepare_v2(s->db, "INSERT OR IGNORE INTO problems (hash, name, path) VALUES "
                           "(?,?,?)", -1, &st, NULL) != SQLITE_OK)
        goto fail;
    sqlite3_bind_text(st, 1, p->hash, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, p->name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, p->path, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(st) != SQLITE_DONE)
        goto fail;
    sqlite3_finalize(st);
    st = NULL;
    if (c) {
        if (sqlite3_prepare_v2(s->db, "INSERT OR IGNORE INTO candidates (hash, problem_hash, path,"
                               " source, is_reference) VALUES (?,?,?,?,?)", -1, &st, NULL) !=
            SQLITE_OK)
            goto fail;
        sqlite3_bind_text(st, 1, c->hash, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 2, p->hash, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 3, c->path, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 4, c->source, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int(st, 5, c->is_reference);
        if (sqlite3_step(st) != SQLITE_DONE)
            goto fail;
        sqlite3_finalize(st);
        st = NULL;
    }
    if (sqlite3_prepare_v2(s->db,
            "INSERT INTO evaluations (problem_hash, candidate_hash, device_uuid, arch, sizes_json,"
            " seed, verdict, message, median_ms, min_ms, p10_ms, p90_ms, reps, ref_median_ms,"
            " speedup, pct_of_bound, achieved_gbs, achieved_gflops, compile_cache_hit,"
            " compile_ms, verify_ms, time_ms, total_ms, compile_log, result_json, run_id, tag,"
            " device_index, host)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", -1, &st, NULL) !=
        SQLITE_OK)
        goto fail;
    sqlite3_bind_text(st, 1, p->hash, -1, SQLITE_TRANSIENT);
    kopt__store_bind_text(st, 2, c ? c->hash : NULL);
    kopt__store_bind_text(st, 3, r->has_device ? r->device.uuid : NULL);
    sqlite3_bind_text(st, 4, r->arch, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 5, sizes_text, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 6, (sqlite3_int64)r->seed);
    sqlite3_bind_text(st, 7, kopt_verdict_name(r->verdict), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 8, r->message, -1, SQLITE_TRANSIENT);
    if (r->timing.n) {
        sqlite3_bind_double(st, 9, r->timing.median_ms);
        sqlite3_bind_double(st, 10, r->timing.min_ms);
        sqlite3_bind_double(st, 11, r->timing.p10_ms);
        sqlite3_bind_double(st, 12, r->timing.p90_ms);
        sqlite3_bind_int(st, 13, r->timing.n);
    }
    if (r->ref_timing.n)
        sqlite3_bind_double(st, 14, r->ref_timing.median_ms);
    if (r->speedup > 0)
        sqlite3_bind_double(st, 15, r->speedup);
    if (r->roofline.valid) {
        sqlite3_bind_double(st, 16, r->roofline.pct_of_bound);
        sqlite3_bind_double(st, 17, r->roofline.achieved_gbs);
        sqlite3_bind_double(st, 18, r->roofline.achieved_gflops);
    }
    sqlite3_bind_int(st, 19, r->compile_cache_hit);
    sqlite3_bind_double(st, 20, r->compile_ms);
    sqlite3_bind_double(st, 21, r->verify_ms);
    sqlite3_bind_double(st, 22, r->time_ms);
    sqlite3_bind_double(st, 23, r->total_ms);
    kopt__store_bind_text(st, 24, r->compile_log);
    kopt__store_bind_text(st, 25, result_json);
    if (run_id)
        sqlite3_bind_int64(st, 26, run_id);
    kopt__store_bind_text(st, 27, tag);
    if (r->has_device)                /* where it was measured (migration 8 -> 9) */
        sqlite3_bind_int(st, 28, r->device.ordinal);
    if (gethostname(host, sizeof(host) - 1) == 0)
        sqlite3_bind_text(st, 29, host, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(st) != SQLITE_DONE)
        goto fail;
    if (id)
        *id = sqlite3_last_insert_rowid(s->db);
    sqlite3_finalize(st);
    st = NULL;
    if (sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        goto fail;
    goto cleanup;
fail:
    rc = kopt__store_err(s, ctx, "record evaluation");
    sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
cleanup:
    sqlite3_finalize(st);
    free(sizes_text);
    return rc;
}

kopt_status kopt_store_count_evals(kopt_store *s, kopt_ctx *ctx, int64_t *n)
{
    sqlite3_stmt *st = NULL;

    *n = 0;
    if (sqlite3_prepare_v2(s->db, "SELECT count(*) FROM evaluations", -1, &st, NULL) != SQLITE_OK)
        return kopt__store_err(s, ctx, "count");
    if (sqlite3_step(st) == SQLITE_ROW)
        *n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return KOPT_OK;
}
