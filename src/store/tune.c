/*
 * Tuning runs and their evaluations in the store (store.h, schema version 3). Every outcome
 * a run obtains is committed as it arrives (the cache's persist hook), keyed by a hash of
 * the tuning key and the configuration's label, so an interrupted `kopt tune` resumes from
 * the store without evaluating anything twice, and `kopt tune --replay RUN` finds the key
 * and template of a recorded run.
 */
#include "store_int.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The hash of the fields that decide whether outcomes can be reused (kopt_tune_key_compare
 * compares the same four). */
static void key_hash(const kopt_tune_key *k, char out[65])
{
    kopt_hash *h = kopt_hash_new();

    if (!h) {
        out[0] = '\0';
        return;
    }
    kopt_hash_add_str(h, "kopt-tune-key-1");
    kopt_hash_add_str(h, k->problem_hash);
    kopt_hash_add_str(h, k->template_hash);
    kopt_hash_add_str(h, k->sizes);
    kopt_hash_add_str(h, k->device);
    kopt_hash_hex(h, out);
}

const char *kopt_store_tune_objective_name(kopt_tune_objective o)
{
    switch (o) {
    case KOPT_TUNE_TIME: return "time";
    case KOPT_TUNE_ENERGY: return "energy";
    case KOPT_TUNE_TIME_ENERGY: return "time_energy";
    }
    return "?";
}

kopt_status kopt_store_tune_begin(kopt_store *s, kopt_ctx *ctx, const kopt_tune_key *key,
                                  const char *template_path, const char *strategy,
                                  const char *options, uint64_t seed,
                                  kopt_tune_objective objective, int max_evals,
                                  int64_t *run_id)
{
    sqlite3_stmt *st = NULL;
    char hash[65];
    kopt_status rc = KOPT_OK;

    *run_id = 0;
    key_hash(key, hash);
    if (sqlite3_prepare_v2(s->db,
            "INSERT INTO tune_runs (key_hash, problem, problem_hash, template_hash, sizes,"
            " device, device_uuid, template_path, strategy, options, seed, objective,"
            " max_evals) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)", -1, &st, NULL) != SQLITE_OK)
        return kopt__store_err(s, ctx, "begin a tuning run");
    sqlite3_bind_text(st, 1, hash, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, key->problem, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, key->problem_hash, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 4, key->template_hash, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 5, key->sizes, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 6, key->device, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 7, key->device_uuid, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 8, template_path ? template_path : "", -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 9, strategy ? strategy : "", -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 10, options ? options : "", -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 11, (sqlite3_int64)seed);
    sqlite3_bind_text(st, 12, kopt_store_tune_objective_name(objective), -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 13, max_evals);
    if (sqlite3_step(st) != SQLITE_DONE)
        rc = kopt__store_err(s, ctx, "begin a tuning run");
    else
        *run_id = sqlite3_last_insert_rowid(s->db);
    sqlite3_finalize(st);
    return rc;
}

static char *findings_json(const kopt_tune_outcome *o)
{
    json_t *a = json_array();
    char *text;

    for (int i = 0; i < o->nfindings && i < KOPT_TUNE_MAX_FINDINGS; i++) {
        json_t *f = json_object();
        json_object_set_new(f, "tool", json_string(o->findings[i].tool));
        json_object_set_new(f, "gain", json_real(o->findings[i].gain));
        json_array_append_new(a, f);
    }
    text = json_dumps(a, JSON_COMPACT);
    json_decref(a);
    return text;
}

kopt_status kopt_store_tune_put(kopt_store *s, kopt_ctx *ctx, int64_t run_id,
                                const kopt_tune_key *key, const char *label,
                                const kopt_tune_outcome *o)
{
    sqlite3_stmt *st = NULL;
    char hash[65], *findings = findings_json(o);
    kopt_status rc = KOPT_OK;

    key_hash(key, hash);
    if (sqlite3_prepare_v2(s->db,
            "INSERT OR REPLACE INTO tune_evals (run_id, key_hash, label, state, time_ms,"
            " energy_mj, power_w, compile_ms, eval_ms, registers, spill_bytes, smem_bytes,"
            " verdict, message, findings_json, device_index, device_name, device_uuid,"
            " clock_mhz, mem_clock_mhz, host, rank)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", -1, &st,
            NULL) != SQLITE_OK) {
        rc = kopt__store_err(s, ctx, "record a tuning outcome");
        goto cleanup;
    }
    if (run_id > 0)
        sqlite3_bind_int64(st, 1, run_id);
    else
        sqlite3_bind_null(st, 1);
    sqlite3_bind_text(st, 2, hash, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, label, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 4, kopt_tune_state_name(o->state), -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 5, o->time_ms);
    sqlite3_bind_double(st, 6, o->energy_mj);
    sqlite3_bind_double(st, 7, o->power_w);
    sqlite3_bind_double(st, 8, o->compile_ms);
    sqlite3_bind_double(st, 9, o->eval_ms);
    sqlite3_bind_int(st, 10, o->registers);
    sqlite3_bind_int(st, 11, o->spill_bytes);
    sqlite3_bind_int(st, 12, o->smem_bytes);
    sqlite3_bind_text(st, 13, o->verdict, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 14, o->message, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 15, findings ? findings : "[]", -1, SQLITE_TRANSIENT);
    if (o->where.known) {             /* where it was measured (migration 8 -> 9) */
        sqlite3_bind_int(st, 16, o->where.device);
        kopt__store_bind_text(st, 17, o->where.name[0] ? o->where.name : NULL);
        kopt__store_bind_text(st, 18, o->where.uuid[0] ? o->where.uuid : NULL);
        if (o->where.clock_mhz > 0)
            sqlite3_bind_int(st, 19, o->where.clock_mhz);
        if (o->where.mem_clock_mhz > 0)
            sqlite3_bind_int(st, 20, o->where.mem_clock_mhz);
        kopt__store_bind_text(st, 21, o->where.host[0] ? o->where.host : NULL);
        sqlite3_bind_int(st, 22, o->where.rank);
    }
    /* autocommit: the row is committed when the step returns */
    if (sqlite3_step(st) != SQLITE_DONE)
        rc = kopt__store_err(s, ctx, "record a tuning outcome");
cleanup:
    sqlite3_finalize(st);
    free(findings);
    return rc;
}

kopt_status kopt_store_tune_persist(void *sink, kopt_ctx *ctx, const char *label,
                                    const kopt_tune_outcome *o)
{
    kopt_store_tune_sink *k = sink;
    return kopt_store_tune_put(k->store, ctx, k->run_id, &k->key, label, o);
}

/* Findings of a stored row into the outcome (a malformed list is ignored: advisory data). */
static void parse_findings(const char *text, kopt_tune_outcome *o)
{
    json_t *a = text ? json_loads(text, 0, NULL) : NULL;

    for (size_t i = 0; json_is_array(a) && i < json_array_size(a) &&
                       o->nfindings < KOPT_TUNE_MAX_FINDINGS; i++) {
        json_t *f = json_array_get(a, i);
        const char *tool = json_string_value(json_object_get(f, "tool"));
        if (!tool)
            continue;
        snprintf(o->findings[o->nfindings].tool, sizeof(o->findings[0].tool), "%s", tool);
        o->findings[o->nfindings].gain = json_number_value(json_object_get(f, "gain"));
        o->nfindings++;
    }
    json_decref(a);
}

kopt_status kopt_store_tune_load(kopt_store *s, kopt_ctx *ctx, kopt_tune_cache *cache,
                                 size_t *nloaded)
{
    const kopt_tune_space *space = kopt_tune_cache_space(cache);
    sqlite3_stmt *st = NULL;
    char hash[65];
    kopt_status rc = KOPT_OK;
    size_t n = 0;
    int step;

    if (nloaded)
        *nloaded = 0;
    key_hash(kopt_tune_cache_key(cache), hash);
    if (sqlite3_prepare_v2(s->db,
            "SELECT label, state, time_ms, energy_mj, power_w, compile_ms, eval_ms, registers,"
            " spill_bytes, smem_bytes, verdict, message, findings_json FROM tune_evals"
            " WHERE key_hash=? ORDER BY id", -1, &st, NULL) != SQLITE_OK)
        return kopt__store_err(s, ctx, "load tuning outcomes");
    sqlite3_bind_text(st, 1, hash, -1, SQLITE_TRANSIENT);
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        const char *label = (const char *)sqlite3_column_text(st, 0);
        const char *state = (const char *)sqlite3_column_text(st, 1);
        kopt_tune_outcome o;
        uint64_t point;
        int sv = kopt_tune_state_parse(state);

        if (!label || sv < 0) {
            rc = kopt_seterr(ctx, KOPT_E_DB, "store: tune_evals: a row of label '%s' has the "
                             "unknown state '%s'", label ? label : "", state ? state : "");
            goto cleanup;
        }
        if ((rc = kopt_tune_label_parse(space, ctx, label, &point)) != KOPT_OK) {
            rc = kopt_adderr(ctx, KOPT_E_INVALID, "store: tune_evals");
            goto cleanup;
        }
        memset(&o, 0, sizeof(o));
        o.state = (kopt_tune_state)sv;
        o.time_ms = sqlite3_column_double(st, 2);
        o.energy_mj = sqlite3_column_double(st, 3);
        o.power_w = sqlite3_column_double(st, 4);
        o.compile_ms = sqlite3_column_double(st, 5);
        o.eval_ms = sqlite3_column_double(st, 6);
        o.registers = sqlite3_column_int(st, 7);
        o.spill_bytes = sqlite3_column_int(st, 8);
        o.smem_bytes = sqlite3_column_int(st, 9);
        kopt__store_copy_col(st, 10, o.verdict, sizeof(o.verdict));
        kopt__store_copy_col(st, 11, o.message, sizeof(o.message));
        parse_findings((const char *)sqlite3_column_text(st, 12), &o);
        if ((rc = kopt_tune_cache_put(cache, ctx, point, &o)) != KOPT_OK)
            goto cleanup;
        n++;
    }
    if (step != SQLITE_DONE)
        rc = kopt__store_err(s, ctx, "load tuning outcomes");
cleanup:
    sqlite3_finalize(st);
    if (nloaded)
        *nloaded = n;
    return rc;
}

#define RUN_COLUMNS                                                                           \
    "r.id, r.created_at, r.problem, r.problem_hash, r.template_hash, r.sizes, r.device,"      \
    " r.device_uuid, r.template_path, r.strategy, r.options, r.seed, r.objective,"            \
    " r.max_evals, r.finished, r.stop, r.best_label, r.best_value,"                           \
    " (SELECT count(*) FROM tune_evals e WHERE e.run_id = r.id), r.run_id"

static void read_run(sqlite3_stmt *st, kopt_store_tune_run *r)
{
    memset(r, 0, sizeof(*r));
    r->id = sqlite3_column_int64(st, 0);
    kopt__store_copy_col(st, 1, r->created_at, sizeof(r->created_at));
    kopt__store_copy_col(st, 2, r->key.problem, sizeof(r->key.problem));
    kopt__store_copy_col(st, 3, r->key.problem_hash, sizeof(r->key.problem_hash));
    kopt__store_copy_col(st, 4, r->key.template_hash, sizeof(r->key.template_hash));
    kopt__store_copy_col(st, 5, r->key.sizes, sizeof(r->key.sizes));
    kopt__store_copy_col(st, 6, r->key.device, sizeof(r->key.device));
    kopt__store_copy_col(st, 7, r->key.device_uuid, sizeof(r->key.device_uuid));
    kopt__store_copy_col(st, 8, r->template_path, sizeof(r->template_path));
    kopt__store_copy_col(st, 9, r->strategy, sizeof(r->strategy));
    kopt__store_copy_col(st, 10, r->options, sizeof(r->options));
    r->seed = (uint64_t)sqlite3_column_int64(st, 11);
    kopt__store_copy_col(st, 12, r->objective, sizeof(r->objective));
    r->max_evals = sqlite3_column_int(st, 13);
    r->finished = sqlite3_column_int(st, 14);
    kopt__store_copy_col(st, 15, r->stop, sizeof(r->stop));
    kopt__store_copy_col(st, 16, r->best_label, sizeof(r->best_label));
    r->best_value = sqlite3_column_double(st, 17);
    r->nevals = sqlite3_column_int64(st, 18);
    r->run_id = sqlite3_column_int64(st, 19);
}

kopt_status kopt_store_tune_find_unfinished(kopt_store *s, kopt_ctx *ctx,
                                            const kopt_tune_key *key, kopt_store_tune_run *out,
                                            int *found)
{
    sqlite3_stmt *st = NULL;
    char hash[65];
    int step;

    *found = 0;
    memset(out, 0, sizeof(*out));
    key_hash(key, hash);
    if (sqlite3_prepare_v2(s->db, "SELECT " RUN_COLUMNS " FROM tune_runs r WHERE r.key_hash=?"
                           " AND r.finished=0 ORDER BY r.id DESC LIMIT 1", -1, &st, NULL) !=
        SQLITE_OK)
        return kopt__store_err(s, ctx, "find an unfinished tuning run");
    sqlite3_bind_text(st, 1, hash, -1, SQLITE_TRANSIENT);
    step = sqlite3_step(st);
    if (step == SQLITE_ROW) {
        read_run(st, out);
        *found = 1;
    }
    sqlite3_finalize(st);
    if (step != SQLITE_ROW && step != SQLITE_DONE)
        return kopt__store_err(s, ctx, "find an unfinished tuning run");
    return KOPT_OK;
}

kopt_status kopt_store_tune_finish(kopt_store *s, kopt_ctx *ctx, int64_t run_id,
                                   kopt_tune_stop stop, const char *best_label,
                                   double best_value)
{
    sqlite3_stmt *st = NULL;
    kopt_status rc = KOPT_OK;

    if (sqlite3_prepare_v2(s->db, "UPDATE tune_runs SET finished=1, stop=?, best_label=?,"
                           " best_value=?, finished_at=strftime('%Y-%m-%dT%H:%M:%SZ','now')"
                           " WHERE id=?", -1, &st, NULL) != SQLITE_OK)
        return kopt__store_err(s, ctx, "finish a tuning run");
    sqlite3_bind_text(st, 1, kopt_tune_stop_name(stop), -1, SQLITE_STATIC);
    if (best_label)
        sqlite3_bind_text(st, 2, best_label, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, 2);
    if (best_label)
        sqlite3_bind_double(st, 3, best_value);
    else
        sqlite3_bind_null(st, 3);
    sqlite3_bind_int64(st, 4, run_id);
    if (sqlite3_step(st) != SQLITE_DONE)
        rc = kopt__store_err(s, ctx, "finish a tuning run");
    else if (sqlite3_changes(s->db) == 0)
        rc = kopt_seterr(ctx, KOPT_E_NOT_FOUND, "store: no tuning run %lld", (long long)run_id);
    sqlite3_finalize(st);
    return rc;
}

kopt_status kopt_store_tune_runs(kopt_store *s, kopt_ctx *ctx, kopt_store_tune_run **out,
                                 int *n)
{
    sqlite3_stmt *st = NULL;
    kopt_store_tune_run *runs = NULL;
    int count = 0, cap = 0, step;
    kopt_status rc = KOPT_OK;

    *out = NULL;
    *n = 0;
    if (sqlite3_prepare_v2(s->db, "SELECT " RUN_COLUMNS " FROM tune_runs r ORDER BY r.id DESC",
                           -1, &st, NULL) != SQLITE_OK)
        return kopt__store_err(s, ctx, "list tuning runs");
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        if (count == cap) {
            int ncap = cap ? cap * 2 : 16;
            kopt_store_tune_run *g = realloc(runs, (size_t)ncap * sizeof(*g));
            if (!g) {
                rc = kopt_seterr(ctx, KOPT_E_NOMEM, "list tuning runs");
                goto cleanup;
            }
            runs = g;
            cap = ncap;
        }
        read_run(st, &runs[count++]);
    }
    if (step != SQLITE_DONE) {
        rc = kopt__store_err(s, ctx, "list tuning runs");
        goto cleanup;
    }
    *out = runs;
    *n = count;
    runs = NULL;
cleanup:
    sqlite3_finalize(st);
    free(runs);
    return rc;
}

kopt_status kopt_store_tune_get_run(kopt_store *s, kopt_ctx *ctx, int64_t run_id,
                                    kopt_store_tune_run *out)
{
    sqlite3_stmt *st = NULL;
    int step;

    memset(out, 0, sizeof(*out));
    if (sqlite3_prepare_v2(s->db, "SELECT " RUN_COLUMNS " FROM tune_runs r WHERE r.id=?", -1,
                           &st, NULL) != SQLITE_OK)
        return kopt__store_err(s, ctx, "read a tuning run");
    sqlite3_bind_int64(st, 1, run_id);
    step = sqlite3_step(st);
    if (step == SQLITE_ROW)
        read_run(st, out);
    sqlite3_finalize(st);
    if (step == SQLITE_DONE)
        return kopt_seterr(ctx, KOPT_E_NOT_FOUND, "store: no tuning run %lld (kopt tune --runs "
                           "lists them)", (long long)run_id);
    if (step != SQLITE_ROW)
        return kopt__store_err(s, ctx, "read a tuning run");
    return KOPT_OK;
}

kopt_status kopt_store_tune_set_devices(kopt_store *s, kopt_ctx *ctx, int64_t tune_run_id,
                                        const char *devices)
{
    sqlite3_stmt *st = NULL;
    kopt_status rc = KOPT_OK;

    if (sqlite3_prepare_v2(s->db, "UPDATE tune_runs SET devices=? WHERE id=?", -1, &st, NULL) !=
        SQLITE_OK)
        return kopt__store_err(s, ctx, "record a tuning run's devices");
    kopt__store_bind_text(st, 1, devices);
    sqlite3_bind_int64(st, 2, tune_run_id);
    if (sqlite3_step(st) != SQLITE_DONE)
        rc = kopt__store_err(s, ctx, "record a tuning run's devices");
    sqlite3_finalize(st);
    return rc;
}
