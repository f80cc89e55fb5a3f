/* What a search reports: the tree as JSON, the path from the reference to the best node
 * with each step's plan, the advice that led to it, and predicted against realized gain,
 * and the GPUs that evaluated its nodes. */
#include "search_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The path root -> best as node indices (root first); its length. */
static int path_of(const kopt_search *s, int *out, int cap)
{
    int tmp[1024], k = 0, n = 0;

    for (int i = s->best; i >= 0 && k < 1024; i = s->nodes[i].parent)
        tmp[k++] = i;
    while (k > 0 && n < cap)
        out[n++] = tmp[--k];
    return n;
}

static double node_speedup(const kopt_search *s, const kopt_search_node *n)
{
    return n->ok && s->nodes[0].ok && n->time_ms > 0 ? s->nodes[0].time_ms / n->time_ms : 0.0;
}

/* The GPUs that evaluated nodes of the tree, by index: {gpu, name, host, evaluations}. */
static json_t *gpus_json(const kopt_search *s)
{
    json_t *a = json_array();
    int done[KOPT_SCALE_MAX_SLOTS] = {0}, nd = 0;

    for (;;) {
        int g = -1, count = 0;
        const kopt_search_node *first = NULL;
        for (int i = 0; i < s->n; i++) {   /* the lowest index not listed yet */
            const kopt_search_node *n = &s->nodes[i];
            int seen = 0;
            if (!n->where.known)
                continue;
            for (int k = 0; k < nd; k++)
                seen |= done[k] == n->where.device;
            if (!seen && (g < 0 || n->where.device < g))
                g = n->where.device;
        }
        if (g < 0 || nd == KOPT_SCALE_MAX_SLOTS)
            break;
        done[nd++] = g;
        for (int i = 0; i < s->n; i++)
            if (s->nodes[i].where.known && s->nodes[i].where.device == g) {
                count++;
                first = first ? first : &s->nodes[i];
            }
        json_array_append_new(a, json_pack("{s:i, s:s, s:s, s:i}", "gpu", g, "name",
                                           first->where.name, "host", first->where.host,
                                           "evaluations", count));
    }
    return a;
}

char *kopt_search_gpus_text(const kopt_search *s)
{
    json_t *a = gpus_json(s), *g;
    kopt_buf b = KOPT_BUF_INIT;
    size_t i;

    json_array_foreach(a, i, g)
        kopt_buf_printf(&b, "%sgpu %d (%s) %d", i ? ", " : "",
                        (int)json_integer_value(json_object_get(g, "gpu")),
                        json_string_value(json_object_get(g, "name")),
                        (int)json_integer_value(json_object_get(g, "evaluations")));
    json_decref(a);
    return b.len ? kopt_buf_detach(&b) : NULL;
}

char *kopt_search_json(const kopt_search *s)
{
    json_t *o = json_object(), *nodes = json_array(), *path = json_array(), *st = json_object();
    int p[1024], np;
    char sig[65], *text;

    json_object_set_new(o, "tree_id", json_integer(s->tree_id));
    json_object_set_new(o, "problem", json_string(s->prob ? s->prob->name : s->view_problem ? s->view_problem : ""));
    json_object_set_new(o, "policy", json_string(kopt_search_policy_name(s->o.policy)));
    json_object_set_new(o, "objective",
                        json_string(kopt_run_tune_objective_name(s->o.objective)));
    json_object_set_new(o, "width", json_integer(s->o.width > 1 ? s->o.width : 1));
    json_object_set_new(o, "overlap", json_boolean(s->o.overlap));
    json_object_set_new(o, "gpus", gpus_json(s));
    for (int i = 0; i < s->n; i++) {
        const kopt_search_node *n = &s->nodes[i];
        json_t *j = kopt__search_node_to_json(n);
        json_object_del(j, "source");
        json_object_del(j, "log");
        json_object_del(j, "findings");
        json_object_del(j, "facts");
        json_object_del(j, "tuned_from");
        json_object_set_new(j, "reward", json_real(n->reward));
        json_object_set_new(j, "visits", json_integer(n->visits));
        json_object_set_new(j, "speedup", json_real(node_speedup(s, n)));
        if (n->closed)
            json_object_set_new(j, "closed", json_string(n->closed_reason));
        json_array_append_new(nodes, j);
    }
    json_object_set_new(o, "nodes", nodes);
    if (s->best >= 0) {
        const kopt_search_node *b = &s->nodes[s->best];
        json_t *bj = json_object();
        json_object_set_new(bj, "id", json_integer(b->id));
        json_object_set_new(bj, "time_ms", json_real(b->time_ms));
        json_object_set_new(bj, "speedup", json_real(node_speedup(s, b)));
        json_object_set_new(bj, "hash", json_string(b->hash));
        json_object_set_new(o, "best", bj);
    }
    np = path_of(s, p, 1024);
    for (int k = 0; k < np; k++) {
        const kopt_search_node *n = &s->nodes[p[k]];
        json_t *j = json_object();
        json_object_set_new(j, "id", json_integer(n->id));
        json_object_set_new(j, "kind", json_string(n->kind));
        json_object_set_new(j, "plan", json_string(n->plan.text));
        json_object_set_new(j, "plan_kind", json_string(n->plan.kind));
        json_object_set_new(j, "advice", json_string(n->advice));
        json_object_set_new(j, "predicted_gain", json_real(n->plan.gain));
        json_object_set_new(j, "realized_gain", json_real(k ? kopt__search_gain(s, p[k]) : 1.0));
        json_object_set_new(j, "time_ms", json_real(n->time_ms));
        json_array_append_new(path, j);
    }
    json_object_set_new(o, "path", path);
    kopt_search_signature(s, sig);
    json_object_set_new(o, "signature", json_string(sig));
    json_object_set_new(st, "searches", json_integer(s->st.searches));
    json_object_set_new(st, "search_ms", json_real(s->st.search_ms));
    json_object_set_new(st, "expansions", json_integer(s->st.expansions));
    json_object_set_new(st, "evaluated", json_integer(s->st.evaluated));
    json_object_set_new(st, "pending", json_integer(s->st.pending));
    json_object_set_new(st, "llm_requests", json_integer(s->st.llm_requests));
    json_object_set_new(st, "waiting", json_integer(s->st.waiting));
    json_object_set_new(st, "wall_ms", json_real(s->st.wall_ms));
    json_object_set_new(st, "llm_ms", json_real(s->st.llm_ms));
    json_object_set_new(st, "eval_ms", json_real(s->st.eval_ms));
    json_object_set_new(st, "prepare_ms", json_real(s->st.prepare_ms));
    json_object_set_new(st, "overhead_ms_per_iter", json_real(s->st.overhead_ms_per_iter));
    json_object_set_new(st, "stop_reason", json_string(s->st.stop_reason));
    if (s->st.root_unevaluated)   /* --propose on a root never evaluated: nothing asked */
        json_object_set_new(st, "root_unevaluated", json_true());
    json_object_set_new(o, "stats", st);
    text = json_dumps(o, JSON_INDENT(2));
    json_decref(o);
    return text;
}

char *kopt_search_path_text(const kopt_search *s)
{
    kopt_buf b = KOPT_BUF_INIT;
    int p[1024], np = path_of(s, p, 1024);

    if (np == 0) {
        kopt_buf_printf(&b, "no correct kernel yet\n");
        return kopt_buf_detach(&b);
    }
    for (int k = 0; k < np; k++) {
        const kopt_search_node *n = &s->nodes[p[k]];
        if (k == 0) {
            kopt_buf_printf(&b, "n%d  reference                       %.4f ms", n->id,
                            n->time_ms);
            if (n->where.known)
                kopt_buf_printf(&b, " gpu %d", n->where.device);
            kopt_buf_printf(&b, "\n");
            continue;
        }
        if (n->ok)
            kopt_buf_printf(&b, "n%d  %-6s [%s] %.4f ms (%.2fx)", n->id, n->kind,
                            n->plan.kind, n->time_ms, node_speedup(s, n));
        else
            kopt_buf_printf(&b, "n%d  %-6s [%s] %s", n->id, n->kind, n->plan.kind,
                            n->failure[0] ? n->failure : kopt_verdict_name(n->verdict));
        if (n->where.known)   /* the GPU that evaluated it */
            kopt_buf_printf(&b, " gpu %d", n->where.device);
        kopt_buf_printf(&b, ": %s\n", n->plan.text);
        if (n->advice[0])
            kopt_buf_printf(&b, "      advice: %s\n", n->advice);
        if (n->searches && n->queries) {   /* "q1 (4 hits)\nq2 (0 hits)\n" on one line */
            kopt_buf_printf(&b, "      searched:");
            for (const char *q = n->queries; *q;) {
                const char *e = strchr(q, '\n');
                size_t len = e ? (size_t)(e - q) : strlen(q);
                kopt_buf_printf(&b, "%s %.*s", q == n->queries ? "" : ";", (int)len, q);
                q += len + (e ? 1 : 0);
            }
            kopt_buf_printf(&b, "\n");
        }
        if (strcmp(n->kind, "repair") == 0)
            kopt_buf_printf(&b, "      repaired n%d (%s)\n", n->parent,
                            s->nodes[n->parent].failure[0] ? s->nodes[n->parent].failure :
                            kopt_verdict_name(s->nodes[n->parent].verdict));
        else if (!n->ok)
            continue;
        else if (n->plan.gain > 0)
            kopt_buf_printf(&b, "      gain: predicted %.2fx, realized %.2fx\n", n->plan.gain,
                            kopt__search_gain(s, p[k]));
        else
            kopt_buf_printf(&b, "      gain: predicted -, realized %.2fx\n",
                            kopt__search_gain(s, p[k]));
    }
    return kopt_buf_detach(&b);
}
