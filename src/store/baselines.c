/* torch.compile baselines of PyTorch references, kept across runs (store.h, schema version
 * 11; docs/kernelbench.md): written and read by the run (src/run), used by eval through
 * opts.torch_baselines. */
#include "kopt/store.h"

#include <jansson.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

/* The timing and bracket of a baseline as stored (timing_json). */
static char *timing_text(const kopt_torch_baseline *b)
{
    const kopt_timing *t = &b->timing;
    json_t *j = json_pack("{s:i, s:i, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:i}",
                          "n", t->n, "warmup_runs", t->warmup_runs, "median_ms", t->median_ms,
                          "mean_ms", t->mean_ms, "min_ms", t->min_ms, "max_ms", t->max_ms,
                          "p10_ms", t->p10_ms, "p90_ms", t->p90_ms, "raw_median_ms",
                          t->raw_median_ms, "overhead_ms", t->overhead_ms, "issue_ms",
                          b->issue_ms, "hold_ms", b->hold_ms, "exposed_runs", b->exposed_runs);
    char *s = j ? json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;

    json_decref(j);
    return s;
}

static double jnum(json_t *o, const char *k)
{
    return json_number_value(json_object_get(o, k));
}

kopt_status kopt_store_torch_baseline_put(kopt_store *s, kopt_ctx *ctx,
                                          const kopt_torch_baseline *b, int64_t run_id,
                                          int64_t eval_id, int64_t *id)
{
    sqlite3_stmt *st = NULL;
    kopt_status rc = KOPT_OK;
    char *tj = timing_text(b);

    if (id)
        *id = 0;
    if (!tj)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "baseline");
    if (sqlite3_prepare_v2(s->db, "INSERT OR REPLACE INTO torch_baselines (problem_hash, "
                           "device, torch_version, sizes, settings, median_ms, eager_ms, "
                           "timing_json, note, measured_at, run_id, eval_id) VALUES "
                           "(?,?,?,?,?,?,?,?,?,?,?,?)", -1, &st, NULL) != SQLITE_OK) {
        free(tj);
        return kopt__store_err(s, ctx, "record a torch.compile baseline");
    }
    kopt__store_bind_text(st, 1, b->problem_hash);
    kopt__store_bind_text(st, 2, b->device);
    kopt__store_bind_text(st, 3, b->torch_version);
    kopt__store_bind_text(st, 4, b->sizes);
    kopt__store_bind_text(st, 5, b->settings);
    sqlite3_bind_double(st, 6, b->timing.median_ms);
    if (b->eager_ms > 0)
        sqlite3_bind_double(st, 7, b->eager_ms);
    else
        sqlite3_bind_null(st, 7);
    kopt__store_bind_text(st, 8, tj);
    kopt__store_bind_text(st, 9, b->note[0] ? b->note : NULL);
    kopt__store_bind_text(st, 10, b->measured_at);
    if (run_id)
        sqlite3_bind_int64(st, 11, run_id);
    else
        sqlite3_bind_null(st, 11);
    if (eval_id)
        sqlite3_bind_int64(st, 12, eval_id);
    else
        sqlite3_bind_null(st, 12);
    if (sqlite3_step(st) != SQLITE_DONE)
        rc = kopt__store_err(s, ctx, "record a torch.compile baseline");
    else if (id)
        *id = sqlite3_last_insert_rowid(s->db);
    sqlite3_finalize(st);
    free(tj);
    return rc;
}

kopt_status kopt_store_torch_baselines(kopt_store *s, kopt_ctx *ctx, const char *problem_hash,
                                       int max, kopt_torch_baseline **out, int *n)
{
    sqlite3_stmt *st = NULL;
    kopt_torch_baseline *v = NULL;
    int k = 0;

    *out = NULL;
    *n = 0;
    if (max <= 0)
        return KOPT_OK;
    if (sqlite3_prepare_v2(s->db, "SELECT id, problem_hash, device, torch_version, sizes, "
                           "settings, eager_ms, timing_json, note, measured_at FROM "
                           "torch_baselines WHERE problem_hash=? ORDER BY id DESC LIMIT ?", -1,
                           &st, NULL) != SQLITE_OK)
        return kopt__store_err(s, ctx, "read torch.compile baselines");
    kopt__store_bind_text(st, 1, problem_hash);
    sqlite3_bind_int(st, 2, max);
    if (!(v = calloc((size_t)max, sizeof(*v)))) {
        sqlite3_finalize(st);
        return kopt_seterr(ctx, KOPT_E_NOMEM, "baselines");
    }
    while (k < max && sqlite3_step(st) == SQLITE_ROW) {
        kopt_torch_baseline *b = &v[k];
        const unsigned char *tt = sqlite3_column_text(st, 7);
        json_t *j = tt ? json_loads((const char *)tt, 0, NULL) : NULL;
        if (!j)
            continue;            /* unreadable: as if absent */
        b->id = sqlite3_column_int64(st, 0);
        kopt__store_copy_col(st, 1, b->problem_hash, sizeof(b->problem_hash));
        kopt__store_copy_col(st, 2, b->device, sizeof(b->device));
        kopt__store_copy_col(st, 3, b->torch_version, sizeof(b->torch_version));
        kopt__store_copy_col(st, 4, b->sizes, sizeof(b->sizes));
        kopt__store_copy_col(st, 5, b->settings, sizeof(b->settings));
        b->eager_ms = sqlite3_column_double(st, 6);
        kopt__store_copy_col(st, 8, b->note, sizeof(b->note));
        kopt__store_copy_col(st, 9, b->measured_at, sizeof(b->measured_at));
        b->timing.n = (int)json_integer_value(json_object_get(j, "n"));
        b->timing.warmup_runs = (int)json_integer_value(json_object_get(j, "warmup_runs"));
        b->timing.median_ms = jnum(j, "median_ms");
        b->timing.mean_ms = jnum(j, "mean_ms");
        b->timing.min_ms = jnum(j, "min_ms");
        b->timing.max_ms = jnum(j, "max_ms");
        b->timing.p10_ms = jnum(j, "p10_ms");
        b->timing.p90_ms = jnum(j, "p90_ms");
        b->timing.raw_median_ms = jnum(j, "raw_median_ms");
        b->timing.overhead_ms = jnum(j, "overhead_ms");
        b->issue_ms = jnum(j, "issue_ms");
        b->hold_ms = jnum(j, "hold_ms");
        b->exposed_runs = (int)json_integer_value(json_object_get(j, "exposed_runs"));
        json_decref(j);
        k++;
    }
    sqlite3_finalize(st);
    if (!k) {
        free(v);
        v = NULL;
    }
    *out = v;
    *n = k;
    return KOPT_OK;
}
