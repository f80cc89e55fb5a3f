/* kopt optimize's tables: search trees, their nodes (as JSON: the search module owns the
 * fields), and the search memory kept across runs. */
#include "kopt/store.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

kopt_status kopt_store_opt_tree_put(kopt_store *s, kopt_ctx *ctx, int64_t tree_id,
                                    const char *problem_hash, const char *problem_path,
                                    const char *options_json)
{
    sqlite3_stmt *st = NULL;
    kopt_status rc = KOPT_OK;

    if (sqlite3_prepare_v2(s->db, "INSERT OR IGNORE INTO opt_trees (tree_id, problem_hash, "
                           "problem_path, options_json) VALUES (?,?,?,?)", -1, &st,
                           NULL) != SQLITE_OK)
        return kopt__store_err(s, ctx, "record a search tree");
    sqlite3_bind_int64(st, 1, tree_id);
    kopt__store_bind_text(st, 2, problem_hash);
    kopt__store_bind_text(st, 3, problem_path);
    kopt__store_bind_text(st, 4, options_json);
    if (sqlite3_step(st) != SQLITE_DONE)
        rc = kopt__store_err(s, ctx, "record a search tree");
    sqlite3_finalize(st);
    return rc;
}

kopt_status kopt_store_opt_tree_get(kopt_store *s, kopt_ctx *ctx, int64_t tree_id,
                                    char **problem_path, char **options_json)
{
    sqlite3_stmt *st = NULL;
    kopt_status rc = KOPT_OK;

    *problem_path = *options_json = NULL;
    if (sqlite3_prepare_v2(s->db, "SELECT problem_path, options_json FROM opt_trees WHERE "
                           "tree_id=?", -1, &st, NULL) != SQLITE_OK)
        return kopt__store_err(s, ctx, "read a search tree");
    sqlite3_bind_int64(st, 1, tree_id);
    if (sqlite3_step(st) == SQLITE_ROW) {
        *problem_path = kopt__store_dup_col(st, 0);
        *options_json = kopt__store_dup_col(st, 1);
    } else {
        rc = kopt_seterr(ctx, KOPT_E_NOT_FOUND, "run %lld has no search tree in the store",
                         (long long)tree_id);
    }
    sqlite3_finalize(st);
    return rc;
}

kopt_status kopt_store_opt_node_put(kopt_store *s, kopt_ctx *ctx, int64_t tree_id, int node,
                                    int parent, const char *state, const char *source_hash,
                                    const char *verdict, const char *node_json,
                                    const kopt_tune_where *where)
{
    sqlite3_stmt *st = NULL;
    kopt_status rc = KOPT_OK;

    if (sqlite3_prepare_v2(s->db, "INSERT OR REPLACE INTO opt_nodes (tree_id, node, parent, "
                           "state, source_hash, verdict, node_json, device_index, device_name, "
                           "host) VALUES (?,?,?,?,?,?,?,?,?,?)", -1, &st, NULL) != SQLITE_OK)
        return kopt__store_err(s, ctx, "store a search node");
    sqlite3_bind_int64(st, 1, tree_id);
    sqlite3_bind_int(st, 2, node);
    if (parent >= 0)
        sqlite3_bind_int(st, 3, parent);
    else
        sqlite3_bind_null(st, 3);
    kopt__store_bind_text(st, 4, state);
    kopt__store_bind_text(st, 5, source_hash);
    kopt__store_bind_text(st, 6, verdict);
    kopt__store_bind_text(st, 7, node_json);
    if (where && where->known) {      /* the GPU that evaluated it (migration 9 -> 10) */
        sqlite3_bind_int(st, 8, where->device);
        kopt__store_bind_text(st, 9, where->name[0] ? where->name : NULL);
        kopt__store_bind_text(st, 10, where->host[0] ? where->host : NULL);
    }
    if (sqlite3_step(st) != SQLITE_DONE)
        rc = kopt__store_err(s, ctx, "store a search node");
    sqlite3_finalize(st);
    return rc;
}

kopt_status kopt_store_opt_nodes(kopt_store *s, kopt_ctx *ctx, int64_t tree_id, char ***out,
                                 int *n)
{
    sqlite3_stmt *st = NULL;
    char **v = NULL;
    int len = 0, cap = 0;
    kopt_status rc = KOPT_OK;

    *out = NULL;
    *n = 0;
    if (sqlite3_prepare_v2(s->db, "SELECT node_json FROM opt_nodes WHERE tree_id=? ORDER BY "
                           "node", -1, &st, NULL) != SQLITE_OK)
        return kopt__store_err(s, ctx, "read search nodes");
    sqlite3_bind_int64(st, 1, tree_id);
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (len == cap) {
            char **nv = realloc(v, (size_t)(cap = cap ? cap * 2 : 32) * sizeof(*v));
            if (!nv) {
                rc = kopt_seterr(ctx, KOPT_E_NOMEM, "search nodes");
                break;
            }
            v = nv;
        }
        if (!(v[len] = kopt__store_dup_col(st, 0))) {
            rc = kopt_seterr(ctx, KOPT_E_NOMEM, "search nodes");
            break;
        }
        len++;
    }
    sqlite3_finalize(st);
    if (rc != KOPT_OK) {
        for (int i = 0; i < len; i++)
            free(v[i]);
        free(v);
        return rc;
    }
    *out = v;
    *n = len;
    return KOPT_OK;
}

kopt_status kopt_store_opt_memory_put(kopt_store *s, kopt_ctx *ctx,
                                      const kopt_store_opt_memory *m)
{
    sqlite3_stmt *st = NULL;
    kopt_status rc = KOPT_OK;

    if (sqlite3_prepare_v2(s->db, "INSERT OR IGNORE INTO opt_memory (problem_hash, problem, "
                           "class, plan_kind, tool, predicted_gain, realized_gain, verdict, "
                           "tree_id, node) VALUES (?,?,?,?,?,?,?,?,?,?)", -1, &st,
                           NULL) != SQLITE_OK)
        return kopt__store_err(s, ctx, "store search memory");
    kopt__store_bind_text(st, 1, m->problem_hash);
    kopt__store_bind_text(st, 2, m->problem);
    kopt__store_bind_text(st, 3, m->cls);
    kopt__store_bind_text(st, 4, m->plan_kind);
    kopt__store_bind_text(st, 5, m->tool);
    sqlite3_bind_double(st, 6, m->predicted_gain);
    sqlite3_bind_double(st, 7, m->realized_gain);
    kopt__store_bind_text(st, 8, m->verdict);
    sqlite3_bind_int64(st, 9, m->tree_id);
    sqlite3_bind_int(st, 10, m->node);
    if (sqlite3_step(st) != SQLITE_DONE)
        rc = kopt__store_err(s, ctx, "store search memory");
    sqlite3_finalize(st);
    return rc;
}

kopt_status kopt_store_opt_memory_get(kopt_store *s, kopt_ctx *ctx, const char *problem_hash,
                                      int64_t before_tree, int64_t tree_id, int limit,
                                      kopt_store_opt_memory **out, int *n)
{
    sqlite3_stmt *st = NULL;
    kopt_store_opt_memory *v = NULL;
    int len = 0, cap = 0;
    kopt_status rc = KOPT_OK;

    *out = NULL;
    *n = 0;
    if (sqlite3_prepare_v2(s->db, "SELECT problem_hash, problem, class, plan_kind, tool, "
                           "verdict, predicted_gain, realized_gain, tree_id, node FROM "
                           "opt_memory WHERE (?1 IS NULL OR problem_hash=?1) AND (tree_id < ?3 OR "
                           "tree_id = ?4) ORDER BY (tree_id = ?4) DESC, id DESC LIMIT ?2", -1, &st,
                           NULL) != SQLITE_OK)
        return kopt__store_err(s, ctx, "read search memory");
    kopt__store_bind_text(st, 1, problem_hash);
    sqlite3_bind_int(st, 2, limit > 0 ? limit : -1);
    sqlite3_bind_int64(st, 3, before_tree);
    sqlite3_bind_int64(st, 4, tree_id);
    while (sqlite3_step(st) == SQLITE_ROW) {
        kopt_store_opt_memory *m;
        if (len == cap) {
            kopt_store_opt_memory *nv = realloc(v, (size_t)(cap = cap ? cap * 2 : 16) *
                                                       sizeof(*v));
            if (!nv) {
                rc = kopt_seterr(ctx, KOPT_E_NOMEM, "search memory");
                break;
            }
            v = nv;
        }
        m = &v[len++];
        memset(m, 0, sizeof(*m));
        kopt__store_copy_col(st, 0, m->problem_hash, sizeof(m->problem_hash));
        kopt__store_copy_col(st, 1, m->problem, sizeof(m->problem));
        kopt__store_copy_col(st, 2, m->cls, sizeof(m->cls));
        kopt__store_copy_col(st, 3, m->plan_kind, sizeof(m->plan_kind));
        kopt__store_copy_col(st, 4, m->tool, sizeof(m->tool));
        kopt__store_copy_col(st, 5, m->verdict, sizeof(m->verdict));
        m->predicted_gain = sqlite3_column_double(st, 6);
        m->realized_gain = sqlite3_column_double(st, 7);
        m->tree_id = sqlite3_column_int64(st, 8);
        m->node = sqlite3_column_int(st, 9);
    }
    sqlite3_finalize(st);
    if (rc != KOPT_OK) {
        free(v);
        return rc;
    }
    *out = v;
    *n = len;
    return KOPT_OK;
}

kopt_status kopt_store_opt_search_put(kopt_store *s, kopt_ctx *ctx,
                                      const kopt_store_opt_search *x)
{
    sqlite3_stmt *st = NULL;
    kopt_status rc = KOPT_OK;

    if (sqlite3_prepare_v2(s->db, "INSERT OR REPLACE INTO opt_searches (tree_id, key, turn, "
                           "idx, query, result, hits_json, nhits, query_ms) VALUES "
                           "(?,?,?,?,?,?,?,?,?)", -1, &st, NULL) != SQLITE_OK)
        return kopt__store_err(s, ctx, "store a code search");
    sqlite3_bind_int64(st, 1, x->tree_id);
    kopt__store_bind_text(st, 2, x->key);
    sqlite3_bind_int(st, 3, x->turn);
    sqlite3_bind_int(st, 4, x->idx);
    kopt__store_bind_text(st, 5, x->query);
    kopt__store_bind_text(st, 6, x->result);
    kopt__store_bind_text(st, 7, x->hits_json);
    sqlite3_bind_int(st, 8, x->nhits);
    sqlite3_bind_double(st, 9, x->query_ms);
    if (sqlite3_step(st) != SQLITE_DONE)
        rc = kopt__store_err(s, ctx, "store a code search");
    sqlite3_finalize(st);
    return rc;
}

kopt_status kopt_store_opt_search_get(kopt_store *s, kopt_ctx *ctx, int64_t tree_id,
                                      const char *key, int turn, int idx, const char *query,
                                      char **result, char **hits_json, int *nhits)
{
    sqlite3_stmt *st = NULL;

    *result = NULL;
    if (hits_json)
        *hits_json = NULL;
    if (nhits)
        *nhits = 0;
    if (sqlite3_prepare_v2(s->db, "SELECT result, hits_json, nhits FROM opt_searches WHERE "
                           "tree_id=? AND key=? AND turn=? AND idx=? AND query=?", -1, &st,
                           NULL) != SQLITE_OK)
        return kopt__store_err(s, ctx, "read a code search");
    sqlite3_bind_int64(st, 1, tree_id);
    kopt__store_bind_text(st, 2, key);
    sqlite3_bind_int(st, 3, turn);
    sqlite3_bind_int(st, 4, idx);
    kopt__store_bind_text(st, 5, query);
    if (sqlite3_step(st) == SQLITE_ROW) {
        *result = kopt__store_dup_col(st, 0);
        if (hits_json)
            *hits_json = kopt__store_dup_col(st, 1);
        if (nhits)
            *nhits = sqlite3_column_int(st, 2);
    }
    sqlite3_finalize(st);
    return KOPT_OK;
}
