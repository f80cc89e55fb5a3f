/* LLM exchanges in the store: the record hook of an LLM client writes each one (no key ever
 * reaches it: the client records the request as kopt built it, without headers), and a
 * stored run's exchanges are read back as the replay backend's JSONL. */
#include "kopt/store.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

static kopt_status sqlerr(kopt_store *s, kopt_ctx *ctx, const char *what)
{
    return kopt_seterr(ctx, KOPT_E_DB, "%s: %s", what, sqlite3_errmsg(s->db));
}

kopt_status kopt_store_llm_put(kopt_store *s, kopt_ctx *ctx, const kopt_llm_exchange *x,
                               int64_t *id)
{
    const kopt_llm_reply *r = x->reply;
    sqlite3_stmt *st = NULL;
    kopt_status rc = KOPT_OK;

    if (sqlite3_prepare_v2(s->db,
            "INSERT INTO llm_exchanges (run_id, role, tag, backend, model, request_hash,"
            " request_json, outcome, reply_text, finish_reason, reply_model, error, http_status,"
            " attempts, prompt_tokens, completion_tokens, cached_tokens, latency_ms, cost,"
            " cost_known) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", -1, &st, NULL) !=
        SQLITE_OK)
        return sqlerr(s, ctx, "store LLM exchange");
    if (x->run_id)
        sqlite3_bind_int64(st, 1, x->run_id);
    else
        sqlite3_bind_null(st, 1);
    kopt__store_bind_text(st, 2, x->role && x->role[0] ? x->role : NULL);
    kopt__store_bind_text(st, 3, x->tag && x->tag[0] ? x->tag : NULL);
    kopt__store_bind_text(st, 4, x->backend ? x->backend : "");
    kopt__store_bind_text(st, 5, x->model);
    kopt__store_bind_text(st, 6, r->request_hash);
    kopt__store_bind_text(st, 7, x->request_json ? x->request_json : "{}");
    kopt__store_bind_text(st, 8, kopt_llm_outcome_name(r->outcome));
    kopt__store_bind_text(st, 9, r->text);
    kopt__store_bind_text(st, 10, r->finish_reason);
    kopt__store_bind_text(st, 11, r->model);
    kopt__store_bind_text(st, 12, r->error);
    sqlite3_bind_int(st, 13, r->http_status);
    sqlite3_bind_int(st, 14, r->attempts);
    sqlite3_bind_int64(st, 15, r->usage.prompt_tokens);
    sqlite3_bind_int64(st, 16, r->usage.completion_tokens);
    sqlite3_bind_int64(st, 17, r->usage.cached_tokens);
    sqlite3_bind_double(st, 18, r->latency_ms);
    sqlite3_bind_double(st, 19, r->cost);
    sqlite3_bind_int(st, 20, r->cost_known);
    if (sqlite3_step(st) != SQLITE_DONE)
        rc = sqlerr(s, ctx, "store LLM exchange");
    else if (id)
        *id = sqlite3_last_insert_rowid(s->db);
    sqlite3_finalize(st);
    return rc;
}

kopt_status kopt_store_llm_record(void *store, kopt_ctx *ctx, const kopt_llm_exchange *x)
{
    return kopt_store_llm_put(store, ctx, x, NULL);
}

static const char *col(sqlite3_stmt *st, int i)
{
    return (const char *)sqlite3_column_text(st, i);
}

kopt_status kopt_store_llm_load_run(void *store, kopt_ctx *ctx, int64_t run_id, char **jsonl)
{
    kopt_store *s = store;
    sqlite3_stmt *st = NULL;
    kopt_buf b = KOPT_BUF_INIT;
    kopt_status rc = KOPT_OK;
    int n = 0, step;

    *jsonl = NULL;
    if (sqlite3_prepare_v2(s->db,
            "SELECT run_id, role, tag, backend, model, request_json, request_hash, outcome,"
            " reply_text, finish_reason, reply_model, error, http_status, attempts,"
            " prompt_tokens, completion_tokens, cached_tokens, latency_ms, cost, cost_known"
            " FROM llm_exchanges WHERE run_id = ? ORDER BY id", -1, &st, NULL) != SQLITE_OK)
        return sqlerr(s, ctx, "read LLM exchanges");
    sqlite3_bind_int64(st, 1, run_id);
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        kopt_llm_reply r = {0};
        kopt_llm_exchange x = {sqlite3_column_int64(st, 0), col(st, 1), col(st, 2), col(st, 3),
                               col(st, 4), col(st, 5), &r};
        int o = kopt_llm_outcome_parse(col(st, 7));
        char *line;
        snprintf(r.request_hash, sizeof(r.request_hash), "%s", col(st, 6) ? col(st, 6) : "");
        r.outcome = o < 0 ? KOPT_LLM_MALFORMED : (kopt_llm_outcome)o;
        r.text = (char *)col(st, 8);
        r.finish_reason = (char *)col(st, 9);
        r.model = (char *)col(st, 10);
        r.error = (char *)col(st, 11);
        r.http_status = sqlite3_column_int(st, 12);
        r.attempts = sqlite3_column_int(st, 13);
        r.usage.prompt_tokens = sqlite3_column_int64(st, 14);
        r.usage.completion_tokens = sqlite3_column_int64(st, 15);
        r.usage.cached_tokens = sqlite3_column_int64(st, 16);
        r.latency_ms = sqlite3_column_double(st, 17);
        r.cost = sqlite3_column_double(st, 18);
        r.cost_known = sqlite3_column_int(st, 19);
        line = kopt_llm_exchange_json(&x);
        if (!line || kopt_buf_printf(&b, "%s\n", line) != 0) {
            free(line);
            rc = kopt_seterr(ctx, KOPT_E_NOMEM, "read LLM exchanges");
            goto cleanup;
        }
        free(line);
        n++;
    }
    if (step != SQLITE_DONE) {
        rc = sqlerr(s, ctx, "read LLM exchanges");
        goto cleanup;
    }
    if (n == 0) {
        rc = kopt_seterr(ctx, KOPT_E_NOT_FOUND, "run %lld has no stored LLM exchange",
                         (long long)run_id);
        goto cleanup;
    }
    *jsonl = kopt_buf_detach(&b);
cleanup:
    sqlite3_finalize(st);
    kopt_buf_free(&b);
    return rc;
}

/* One integer from a query with at most one bound integer (bind < 0: none). */
static kopt_status scalar(kopt_store *s, kopt_ctx *ctx, const char *sql, int64_t bind,
                          int64_t *out)
{
    sqlite3_stmt *st = NULL;
    kopt_status rc = KOPT_OK;

    *out = 0;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
        return sqlerr(s, ctx, "count LLM exchanges");
    if (bind >= 0 && sqlite3_bind_parameter_count(st) > 0)
        sqlite3_bind_int64(st, 1, bind);
    if (sqlite3_step(st) == SQLITE_ROW)
        *out = sqlite3_column_int64(st, 0);
    else
        rc = sqlerr(s, ctx, "count LLM exchanges");
    sqlite3_finalize(st);
    return rc;
}

kopt_status kopt_store_llm_count(kopt_store *s, kopt_ctx *ctx, int64_t run_id, int64_t *n)
{
    if (run_id < 0)
        return scalar(s, ctx, "SELECT count(*) FROM llm_exchanges", -1, n);
    if (run_id == 0)
        return scalar(s, ctx, "SELECT count(*) FROM llm_exchanges WHERE run_id IS NULL", -1, n);
    return scalar(s, ctx, "SELECT count(*) FROM llm_exchanges WHERE run_id = ?", run_id, n);
}

kopt_status kopt_store_llm_last_id(kopt_store *s, kopt_ctx *ctx, int64_t *id)
{
    return scalar(s, ctx, "SELECT coalesce(max(id), 0) FROM llm_exchanges", -1, id);
}
