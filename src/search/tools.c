/* The code-search tool of the coder and debugger: a reply may ask for searches of the
 * CUTLASS/CuTe code base (```cute-search blocks) instead of code; kopt runs them on the
 * index of src/cute and feeds the ranked hits back in the next turn of the same
 * conversation, a bounded number per node. Every search is stored with its result, and a
 * replay answers from that record, so the conversation (and the tree) comes out the same. */
#include "search_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOOL_NAME "cute-search"
#define HITS_PER_SEARCH 4      /* hits fed back per query */
#define SNIPPET_CHARS 1200     /* characters per hit (about 300 tokens) */

/* The tool as the replayed tree's root recorded it ("" when not described). */
static kopt_status recorded_tools(kopt_search *s, kopt_ctx *ctx, int64_t tree, char *out,
                                  size_t len)
{
    char **rows = NULL;
    int n = 0;
    kopt_status rc;

    out[0] = 0;
    if (!s->store)
        return KOPT_OK;
    if ((rc = kopt_store_opt_nodes(s->store, ctx, tree, &rows, &n)) != KOPT_OK)
        return rc;
    if (n > 0) {
        json_t *j = json_loads(rows[0], 0, NULL);
        const char *t = json_string_value(json_object_get(j, "tools"));
        snprintf(out, len, "%s", t ? t : "");
        json_decref(j);
    }
    for (int i = 0; i < n; i++)
        free(rows[i]);
    free(rows);
    return KOPT_OK;
}

static void find_cutlass(kopt_search *s, kopt_ctx *ctx)
{
    kopt__search_tool *t = &s->tool;

    if (t->looked)
        return;
    t->looked = 1;
    if (kopt_cutlass_find(&t->cl, ctx, s->o.cutlass_dir) == KOPT_OK) {
        t->found = 1;
    } else {
        snprintf(t->why, sizeof(t->why), "%s", kopt_errmsg(ctx));
    }
}

kopt_status kopt__search_tool_open(kopt_search *s, kopt_ctx *ctx, int fresh)
{
    kopt__search_tool *t = &s->tool;
    kopt_search_node *root = &s->nodes[0];
    kopt_agent_var v[1];
    char max[16], *tmpl = NULL;
    kopt_status rc;

    t->max = s->o.max_searches == 0 ? KOPT_SEARCH_DEFAULT_SEARCHES :
             s->o.max_searches < 0 ? 0 : s->o.max_searches;
    t->active = s->o.cute >= 0 && t->max > 0;
    if (s->o.replay_of) {
        char rec[24];
        if ((rc = recorded_tools(s, ctx, s->o.replay_of, rec, sizeof(rec))) != KOPT_OK)
            return rc;
        t->described = rec[0] != 0;
    } else if (!fresh) {
        /* a tree already under way keeps what its prompts said */
        t->described = root->tools[0] != 0;
    } else if (t->active) {
        if (s->o.cute > 0) {
            t->described = 1;
        } else {
            find_cutlass(s, ctx);
            t->described = t->found;
        }
    }
    if (t->described) {
        if ((rc = kopt_agent_prompt_load_named(ctx, s->prompts_dir, "cute_search", &tmpl)) !=
            KOPT_OK) {
            if (s->o.cute > 0 || s->o.replay_of || !fresh)
                return rc;
            kopt_log(ctx, KOPT_LOG_WARN, "the code-search tool is not described to the "
                     "agents: %s", kopt_errmsg(ctx));
            t->described = 0;
        } else {
            snprintf(max, sizeof(max), "%d", t->max);
            v[0] = (kopt_agent_var){"max_searches", max};
            t->description = kopt_agent_render(tmpl, v, 1);
            free(tmpl);
            if (!t->description)
                return kopt_seterr(ctx, KOPT_E_NOMEM, "tool description");
        }
    }
    if (!t->active)
        t->described = 0;
    snprintf(root->tools, sizeof(root->tools), "%s", t->described ? TOOL_NAME : "");
    return KOPT_OK;
}

void kopt__search_tool_close(kopt__search_tool *t)
{
    kopt_cute_index_free(t->ix);
    free(t->description);
    memset(t, 0, sizeof(*t));
}

/* One search: its text for the model into b; the hits' count (-1: none could run). */
static int run_one(kopt_search *s, kopt_ctx *ctx, const char *key, int turn, int idx,
                   const char *query, kopt_buf *b)
{
    kopt__search_tool *t = &s->tool;
    kopt_store_opt_search rec = {s->tree_id, key, turn, idx, query, NULL, NULL, 0, 0.0};
    kopt_buf r = KOPT_BUF_INIT;
    kopt_cute_hits *h = NULL;
    char *hits_json = NULL, *text = NULL;
    double t0 = kopt_now_ms();
    int n = -1;

    if (s->o.replay_of) {
        /* a replay: the answer the original run gave (the hits are in its record) */
        if (s->store)
            kopt_store_opt_search_get(s->store, ctx, s->o.replay_of, key, turn, idx, query,
                                      &text, &hits_json, &n);
        if (!text)
            kopt_buf_printf(&r, "### `%s`\n(run %lld recorded no answer for this search)\n",
                            query, (long long)s->o.replay_of);
        else
            kopt_buf_printf(&r, "%s", text);
        free(text);
    } else {
        find_cutlass(s, ctx);
        if (t->found && !t->ix && !t->ix_error[0]) {
            kopt_cute_index_opts io = KOPT_CUTE_INDEX_OPTS_INIT;
            io.cache_dir = s->o.cache_dir;
            if (kopt_cute_index_open(&t->ix, ctx, &t->cl, &io) != KOPT_OK) {
                snprintf(t->ix_error, sizeof(t->ix_error), "%s", kopt_errmsg(ctx));
            }
        }
        if (!t->found) {
            kopt_buf_printf(&r, "### `%s`\nNo CUTLASS headers were found, so the search "
                            "cannot answer (%s). Write the code without CuTe/CUTLASS.\n",
                            query, t->why);
        } else if (!t->ix) {
            kopt_buf_printf(&r, "### `%s`\nThe CUTLASS %s code index could not be opened "
                            "(%s).\n", query, t->cl.version, t->ix_error);
        } else {
            kopt_cute_search_opts so = KOPT_CUTE_SEARCH_OPTS_INIT;
            so.limit = HITS_PER_SEARCH;
            so.max_snippet_chars = SNIPPET_CHARS;
            if (kopt_cute_search(&h, ctx, t->ix, query, &so) != KOPT_OK) {
                kopt_buf_printf(&r, "### `%s`\nNot a query: %s\n", query, kopt_errmsg(ctx));
            } else if (h->n == 0) {
                kopt_buf_printf(&r, "### `%s`\nNo match in CUTLASS %s. Try an identifier or "
                                "other words.\n", query, t->cl.version);
                n = 0;
            } else {
                char *ht = kopt_cute_hits_text(h);
                kopt_buf_printf(&r, "### `%s`: %d hit%s in CUTLASS %s\n%s", query, h->n,
                                h->n == 1 ? "" : "s", t->cl.version, ht ? ht : "");
                free(ht);
                hits_json = kopt_cute_hits_json(h, query);
                n = h->n;
            }
        }
    }
    rec.result = r.ptr ? r.ptr : "";
    rec.hits_json = hits_json;
    rec.nhits = n > 0 ? n : 0;
    rec.query_ms = h ? h->query_ms : kopt_now_ms() - t0;
    if (s->store && kopt_store_opt_search_put(s->store, ctx, &rec) != KOPT_OK) {
        kopt_log(ctx, KOPT_LOG_WARN, "%s", kopt_errmsg(ctx));
    }
    if (r.len)
        kopt_buf_append(b, r.ptr, r.len);
    kopt_buf_free(&r);
    kopt_cute_hits_free(h);
    free(hits_json);
    s->st.search_ms += kopt_now_ms() - t0;
    return n;
}

char *kopt__search_tool_answer(kopt_search *s, kopt_ctx *ctx, const char *key, int turn,
                               char **q, int nq, int nasked, int *used, int *over,
                               kopt_buf *qlog)
{
    kopt_buf b = KOPT_BUF_INIT;
    int max = s->tool.max;

    kopt_buf_printf(&b, "## Code search results\n\n");
    for (int i = 0; i < nq; i++) {
        int n;
        if (*used >= max) {
            kopt_buf_printf(&b, "### `%s`\nNot run: the bound of %d searches for this kernel "
                            "is reached.\n\n", q[i], max);
            continue;
        }
        n = run_one(s, ctx, key, turn, i, q[i], &b);
        kopt_buf_printf(&b, "\n");
        (*used)++;
        s->st.searches++;
        kopt_buf_printf(qlog, "%s (%d hit%s)\n", q[i], n > 0 ? n : 0, n == 1 ? "" : "s");
    }
    if (nasked > nq)
        kopt_buf_printf(&b, "(%d more queries in your reply were not run.)\n\n", nasked - nq);
    if (*used >= max) {
        *over = 1;
        kopt_buf_printf(&b, "No searches left (%d of %d used). Reply now with the code, as "
                        "the first message's reply contract says; a reply that searches "
                        "again is a failure.\n", *used, max);
    } else {
        kopt_buf_printf(&b, "%d search%s left for this kernel. Reply with the code, as the "
                        "first message's reply contract says, or with more ```" TOOL_NAME
                        " blocks.\n", max - *used, max - *used == 1 ? "" : "es");
    }
    return kopt_buf_detach(&b);
}
