/*
 * Reading stored rows back as JSON (kopt_store_*_json): what reports and the MCP server
 * show of a run. One generic step turns a result row into an object (a column's SQLite
 * type gives the JSON type; a column named "x_json" is parsed and named "x"), so the
 * documents follow the schema as it grows.
 */
#include "store_int.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* The row under `st` as an object. */
static json_t *row_json(sqlite3_stmt *st)
{
    json_t *o = json_object();
    int n = sqlite3_column_count(st);

    for (int i = 0; i < n; i++) {
        const char *name = sqlite3_column_name(st, i);
        size_t len = strlen(name);
        json_t *v;
        switch (sqlite3_column_type(st, i)) {
        case SQLITE_INTEGER: v = json_integer((json_int_t)sqlite3_column_int64(st, i)); break;
        case SQLITE_FLOAT: v = json_real(sqlite3_column_double(st, i)); break;
        case SQLITE_TEXT: {
            const char *t = (const char *)sqlite3_column_text(st, i);
            if (len > 5 && strcmp(name + len - 5, "_json") == 0) {
                char key[64];
                snprintf(key, sizeof(key), "%.*s", (int)(len - 5), name);
                v = json_loads(t, JSON_DECODE_ANY, NULL);
                json_object_set_new(o, key, v ? v : json_null());
                continue;
            }
            v = json_string(t);
            break;
        }
        default: v = json_null(); break;
        }
        json_object_set_new(o, name, v ? v : json_null());
    }
    return o;
}

/* Every row of `sql` (its ?1 and ?2 bound to a and b; a text ?3 to t when given) as an
 * array in *out. */
static kopt_status rows_json(kopt_store *s, kopt_ctx *ctx, const char *sql, int64_t a,
                             int64_t b, const char *t, json_t **out)
{
    sqlite3_stmt *st = NULL;
    json_t *arr = json_array();
    int step;

    *out = NULL;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) {
        json_decref(arr);
        return kopt__store_err(s, ctx, "read rows");
    }
    sqlite3_bind_int64(st, 1, a);
    sqlite3_bind_int64(st, 2, b);
    if (t)
        sqlite3_bind_text(st, 3, t, -1, SQLITE_TRANSIENT);
    while ((step = sqlite3_step(st)) == SQLITE_ROW)
        json_array_append_new(arr, row_json(st));
    sqlite3_finalize(st);
    if (step != SQLITE_DONE) {
        json_decref(arr);
        return kopt__store_err(s, ctx, "read rows");
    }
    *out = arr;
    return KOPT_OK;
}

static kopt_status dump_to(json_t *j, char **out, kopt_ctx *ctx)
{
    *out = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(9));
    json_decref(j);
    return *out ? KOPT_OK : kopt_seterr(ctx, KOPT_E_NOMEM, "JSON of stored rows");
}

kopt_status kopt_store_evals_json(kopt_store *s, kopt_ctx *ctx, int64_t run_id, int64_t eval_id,
                                  char **out)
{
    json_t *arr = NULL;
    kopt_status rc = rows_json(s, ctx,
        "SELECT e.id, e.created_at, e.run_id, e.tag, e.problem_hash, p.name AS problem,"
        " p.path AS problem_path, e.candidate_hash, c.path AS candidate_path,"
        " c.is_reference, e.device_uuid, e.arch, e.sizes_json, e.seed, e.verdict, e.message,"
        " e.median_ms, e.min_ms, e.p10_ms, e.p90_ms, e.reps, e.ref_median_ms, e.speedup,"
        " e.pct_of_bound, e.achieved_gbs, e.achieved_gflops, e.compile_cache_hit,"
        " e.compile_ms, e.verify_ms, e.time_ms, e.total_ms, e.result_json"
        " FROM evaluations e LEFT JOIN problems p ON p.hash = e.problem_hash"
        " LEFT JOIN candidates c ON c.hash = e.candidate_hash"
        " WHERE (?1 != 0 AND e.run_id = ?1) OR (?2 != 0 AND e.id = ?2) ORDER BY e.id",
        run_id, eval_id, NULL, &arr);

    *out = NULL;
    return rc ? rc : dump_to(arr, out, ctx);
}

/* For each row of `arr`, the rows of `sql` (its ?1 bound to the row's id) under `key`. */
static kopt_status add_children(kopt_store *s, kopt_ctx *ctx, json_t *arr, const char *key,
                                const char *sql)
{
    json_t *v, *kids;
    size_t i;
    kopt_status rc;

    json_array_foreach(arr, i, v) {
        if ((rc = rows_json(s, ctx, sql, json_integer_value(json_object_get(v, "id")), 0, NULL,
                            &kids)) != KOPT_OK)
            return rc;
        json_object_set_new(v, key, kids);
    }
    return KOPT_OK;
}

/* rows_json, then add_children for each (key, sql) pair given (NULL-terminated), dumped. */
static kopt_status rows_with_children(kopt_store *s, kopt_ctx *ctx, const char *sql, int64_t a,
                                      int64_t b, char **out, const char *const *children)
{
    json_t *arr = NULL;
    kopt_status rc = rows_json(s, ctx, sql, a, b, NULL, &arr);

    *out = NULL;
    for (int i = 0; !rc && children[i]; i += 2)
        rc = add_children(s, ctx, arr, children[i], children[i + 1]);
    if (rc) {
        json_decref(arr);
        return rc;
    }
    return dump_to(arr, out, ctx);
}

kopt_status kopt_store_profiles_json(kopt_store *s, kopt_ctx *ctx, int64_t run_id,
                                     int64_t profile_id, char **out)
{
    static const char *const children[] = {
        "findings", "SELECT tool, kernel, title, gain, confidence FROM findings"
                    " WHERE profile_id = ?1 AND ?2 = ?2 ORDER BY gain DESC, id",
        "resolutions", "SELECT r.tool, r.earlier_candidate, c.path AS earlier_path,"
                       " r.earlier_profile, r.predicted_gain, r.realized_gain, r.earlier_ms,"
                       " r.later_ms FROM resolutions r"
                       " LEFT JOIN candidates c ON c.hash = r.earlier_candidate"
                       " WHERE r.later_profile = ?1 AND ?2 = ?2 ORDER BY r.id",
        NULL};

    return rows_with_children(s, ctx,
        "SELECT f.id, f.created_at, f.run_id, f.problem_hash, p.name AS problem,"
        " f.candidate_hash, c.path AS candidate_path, c.is_reference, f.eval_id, f.source,"
        " f.median_ms, f.collect_ms, f.passes, f.metrics_json"
        " FROM profiles f LEFT JOIN problems p ON p.hash = f.problem_hash"
        " LEFT JOIN candidates c ON c.hash = f.candidate_hash"
        " WHERE (?1 != 0 AND f.run_id = ?1) OR (?2 != 0 AND f.id = ?2) ORDER BY f.id",
        run_id, profile_id, out, children);
}

kopt_status kopt_store_tune_runs_json(kopt_store *s, kopt_ctx *ctx, int64_t run_id,
                                      int64_t tune_run_id, char **out)
{
    static const char *const children[] = {
        "evals", "SELECT id, label, state, time_ms, energy_mj, power_w, compile_ms, eval_ms,"
                 " registers, spill_bytes, smem_bytes, verdict, message FROM tune_evals"
                 " WHERE run_id = ?1 AND ?2 = ?2 ORDER BY id",
        NULL};

    return rows_with_children(s, ctx,
        "SELECT id, created_at, run_id, key_hash, problem, problem_hash, template_hash, sizes,"
        " device, device_uuid, template_path, strategy, options, seed, objective, max_evals,"
        " finished, finished_at, stop, best_label, best_value FROM tune_runs"
        " WHERE (?1 != 0 AND run_id = ?1) OR (?2 != 0 AND id = ?2) ORDER BY id",
        run_id, tune_run_id, out, children);
}

kopt_status kopt_store_devices_json(kopt_store *s, kopt_ctx *ctx, const char *uuid, char **out)
{
    json_t *arr = NULL;
    kopt_status rc = rows_json(s, ctx,
        "SELECT uuid, name, cc, sm_count, info_json, ceilings_json, measured_at FROM devices"
        " WHERE ?1 = ?1 AND ?2 = ?2 AND (?3 IS NULL OR uuid = ?3) ORDER BY name, uuid",
        0, 0, uuid, &arr);

    *out = NULL;
    return rc ? rc : dump_to(arr, out, ctx);
}
