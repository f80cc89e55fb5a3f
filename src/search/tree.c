/* The search tree: nodes, their JSON form (the store's node_json), what is derived from
 * them (rewards, visits, dead ends, the best node: the backup), the search's math, and the
 * stored tree loaded (kopt__search_load_tree). The bottom of the folder's call order
 * (search_int.h): it calls no other file of the folder. */
#include "search_int.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- math -------------------------------------------------------------------------------- */

int kopt_search_widen_limit(double c, double alpha, int visits)
{
    double k = ceil(c * pow(visits > 0 ? visits : 0, alpha) - 1e-9);
    return k < 1 ? 1 : (int)k;
}

double kopt_search_uct(double value, int visits, int parent_visits, double c)
{
    if (visits <= 0)
        return INFINITY;
    return value / visits + c * sqrt(log(parent_visits > 1 ? parent_visits : 1) / visits);
}

double kopt_search_raw_reward(kopt_tune_objective obj, double ref_ms, double ms, double ref_mj,
                              double mj)
{
    double t = ref_ms > 0 && ms > 0 ? log(ref_ms / ms) : 0.0;
    double e = ref_mj > 0 && mj > 0 ? log(ref_mj / mj) : 0.0;

    switch (obj) {
    case KOPT_TUNE_ENERGY: return e;
    case KOPT_TUNE_TIME_ENERGY: return t + e;
    default: return t;
    }
}

void kopt_search_normalize(const double *raw, const int *ok, int n, double *out)
{
    double lo = INFINITY, hi = -INFINITY;

    for (int i = 0; i < n; i++)
        if (ok[i]) {
            lo = raw[i] < lo ? raw[i] : lo;
            hi = raw[i] > hi ? raw[i] : hi;
        }
    for (int i = 0; i < n; i++) {
        if (!ok[i])
            out[i] = 0.0;
        else if (hi - lo < 1e-12)
            out[i] = 1.0;
        else
            out[i] = 0.1 + 0.9 * (raw[i] - lo) / (hi - lo);
    }
}

int kopt_search_dead_end(const double *gains, int n, int m, double eps, char *why, size_t len)
{
    int failed = 0, flat = 0;

    if (m <= 0 || n < m)
        return 0;
    for (int i = n - m; i < n; i++) {
        if (gains[i] <= 0)
            failed++;
        else if (gains[i] < 1.0 + eps)
            flat++;
        else
            return 0;
    }
    if (why && len)
        snprintf(why, len, "last %d children: %d failed, %d gained < %.0f%%", m, failed, flat,
                 eps * 100);
    return 1;
}

/* ---- nodes ------------------------------------------------------------------------------- */

kopt_search_node *kopt__search_add(kopt_search *s)
{
    kopt_search_node *n;

    if (s->n == s->cap) {
        int cap = s->cap ? s->cap * 2 : 32;
        kopt_search_node *nv = realloc(s->nodes, (size_t)cap * sizeof(*nv));
        if (!nv)
            return NULL;
        s->nodes = nv;
        s->cap = cap;
    }
    n = &s->nodes[s->n];
    memset(n, 0, sizeof(*n));
    n->id = s->n++;
    n->step = s->step;
    n->parent = -1;
    n->verdict = KOPT_VERDICT_ERROR;
    return n;
}

void kopt__search_node_clear(kopt_search_node *n)
{
    free(n->source);
    free(n->log);
    free(n->findings);
    free(n->facts);
    free(n->tuned_from);
    free(n->queries);
    memset(n, 0, sizeof(*n));
}

int kopt__search_is_cheat(kopt_verdict v)
{
    switch (v) {
    case KOPT_VERDICT_SUSPECT: case KOPT_VERDICT_RACE: case KOPT_VERDICT_INPUT_MUTATED:
    case KOPT_VERDICT_STATEFUL: case KOPT_VERDICT_OFF_STREAM: case KOPT_VERDICT_TAMPER:
    case KOPT_VERDICT_FORBIDDEN_LIBRARY: case KOPT_VERDICT_SANITIZER:
        return 1;
    default:
        return 0;
    }
}

static void set_str(json_t *o, const char *k, const char *v)
{
    if (v && v[0])
        json_object_set_new(o, k, json_string(v));
}

json_t *kopt__search_node_to_json(const kopt_search_node *n)
{
    json_t *o = json_object(), *p = json_object();

    json_object_set_new(o, "id", json_integer(n->id));
    json_object_set_new(o, "parent", json_integer(n->parent));
    json_object_set_new(o, "kind", json_string(n->kind));
    json_object_set_new(o, "expansion", json_integer(n->expansion));
    json_object_set_new(o, "proposal", json_integer(n->proposal));
    if (n->step > 0)
        json_object_set_new(o, "step", json_integer(n->step));
    set_str(p, "text", n->plan.text);
    set_str(p, "kind", n->plan.kind);
    set_str(p, "tool", n->plan.tool);
    json_object_set_new(p, "gain", json_real(n->plan.gain));
    json_object_set_new(o, "plan", p);
    set_str(o, "advice", n->advice);
    set_str(o, "advice_tool", n->advice_tool);
    json_object_set_new(o, "state", json_string(n->state == KOPT_SEARCH_DONE ? "done" :
                                                "pending"));
    set_str(o, "hash", n->hash);
    if (n->arrived)
        json_object_set_new(o, "arrived", json_true());
    if (n->state == KOPT_SEARCH_DONE || n->arrived) {
        json_object_set_new(o, "verdict", json_string(n->failure[0] ? n->failure :
                                                      kopt_verdict_name(n->verdict)));
        if (n->failure[0])
            json_object_set_new(o, "failure", json_string(n->failure));
        json_object_set_new(o, "time_ms", json_real(n->time_ms));
        if (n->energy_mj > 0)
            json_object_set_new(o, "energy_mj", json_real(n->energy_mj));
    }
    set_str(o, "message", n->message);
    set_str(o, "class", n->cls);
    set_str(o, "profile_note", n->profile_note);
    set_str(o, "tool", n->tool);
    if (n->eval_id)
        json_object_set_new(o, "eval_id", json_integer(n->eval_id));
    set_str(o, "source", n->source);
    set_str(o, "log", n->log);
    set_str(o, "findings", n->findings);
    set_str(o, "facts", n->facts);
    set_str(o, "tuned_from", n->tuned_from);
    if (n->searches)
        json_object_set_new(o, "searches", json_integer(n->searches));
    set_str(o, "queries", n->queries);
    set_str(o, "tools", n->tools);
    if (n->where.known) {   /* the GPU that evaluated it (several with --gpus) */
        json_object_set_new(o, "gpu", json_integer(n->where.device));
        set_str(o, "gpu_name", n->where.name);
        set_str(o, "host", n->where.host);
    }
    return o;
}

static void get_str(const json_t *o, const char *k, char *buf, size_t len)
{
    const char *v = json_string_value(json_object_get(o, k));
    snprintf(buf, len, "%s", v ? v : "");
}

static char *get_dup(const json_t *o, const char *k)
{
    const char *v = json_string_value(json_object_get(o, k));
    return v ? strdup(v) : NULL;
}

int kopt__search_node_from_json(kopt_search_node *n, const json_t *o)
{
    const json_t *p = json_object_get(o, "plan");
    const char *verdict = json_string_value(json_object_get(o, "verdict"));

    n->id = (int)json_integer_value(json_object_get(o, "id"));
    n->parent = (int)json_integer_value(json_object_get(o, "parent"));
    get_str(o, "kind", n->kind, sizeof(n->kind));
    n->expansion = (int)json_integer_value(json_object_get(o, "expansion"));
    n->proposal = (int)json_integer_value(json_object_get(o, "proposal"));
    n->step = (int)json_integer_value(json_object_get(o, "step"));
    get_str(p, "text", n->plan.text, sizeof(n->plan.text));
    get_str(p, "kind", n->plan.kind, sizeof(n->plan.kind));
    get_str(p, "tool", n->plan.tool, sizeof(n->plan.tool));
    n->plan.gain = json_number_value(json_object_get(p, "gain"));
    get_str(o, "advice", n->advice, sizeof(n->advice));
    get_str(o, "advice_tool", n->advice_tool, sizeof(n->advice_tool));
    n->state = strcmp(json_string_value(json_object_get(o, "state")) ?
                      json_string_value(json_object_get(o, "state")) : "", "done") == 0 ?
               KOPT_SEARCH_DONE : KOPT_SEARCH_PENDING;
    get_str(o, "hash", n->hash, sizeof(n->hash));
    n->arrived = n->state == KOPT_SEARCH_PENDING && json_is_true(json_object_get(o, "arrived"));
    get_str(o, "failure", n->failure, sizeof(n->failure));
    n->verdict = KOPT_VERDICT_ERROR;
    if (verdict && !n->failure[0])
        for (int v = 0; v < KOPT_VERDICT_COUNT; v++)
            if (strcmp(kopt_verdict_name((kopt_verdict)v), verdict) == 0)
                n->verdict = (kopt_verdict)v;
    n->time_ms = json_number_value(json_object_get(o, "time_ms"));
    n->energy_mj = json_number_value(json_object_get(o, "energy_mj"));
    get_str(o, "message", n->message, sizeof(n->message));
    get_str(o, "class", n->cls, sizeof(n->cls));
    get_str(o, "profile_note", n->profile_note, sizeof(n->profile_note));
    get_str(o, "tool", n->tool, sizeof(n->tool));
    n->eval_id = json_integer_value(json_object_get(o, "eval_id"));
    n->source = get_dup(o, "source");
    n->log = get_dup(o, "log");
    n->findings = get_dup(o, "findings");
    n->facts = get_dup(o, "facts");
    n->tuned_from = get_dup(o, "tuned_from");
    n->searches = (int)json_integer_value(json_object_get(o, "searches"));
    n->queries = get_dup(o, "queries");
    get_str(o, "tools", n->tools, sizeof(n->tools));
    memset(&n->where, 0, sizeof(n->where));
    if (json_is_integer(json_object_get(o, "gpu"))) {
        n->where.known = 1;
        n->where.device = (int)json_integer_value(json_object_get(o, "gpu"));
        get_str(o, "gpu_name", n->where.name, sizeof(n->where.name));
        get_str(o, "host", n->where.host, sizeof(n->where.host));
    }
    return n->source ? 0 : -1;
}

/* The kill tests' hook, KOPT_TEST_KILL_AFTER_SAVE=NODE[:K]: this process kills itself with
 * SIGKILL right after its K-th (default 1st) write of node NODE, committed or still inside a
 * group (a kill -9 at an exact point instead of after a sleep). Read once. */
static void test_kill_after_save(int node)
{
    static int want = -2, times = 1, seen = 0;

    if (want == -2) {
        const char *e = getenv("KOPT_TEST_KILL_AFTER_SAVE");
        want = -1;
        if (e && e[0] && sscanf(e, "%d:%d", &want, &times) < 1)
            want = -1;
    }
    if (want >= 0 && node == want && ++seen == times)
        raise(SIGKILL);
}

kopt_status kopt__search_group_begin(kopt_search *s, kopt_ctx *ctx)
{
    return s->store ? kopt_store_group_begin(s->store, ctx) : KOPT_OK;
}

kopt_status kopt__search_group_end(kopt_search *s, kopt_ctx *ctx, kopt_status rc)
{
    kopt_status erc;

    if (!s->store)
        return rc;
    erc = kopt_store_group_end(s->store, ctx, rc == KOPT_OK);
    return rc != KOPT_OK ? rc : erc;
}

kopt_status kopt__search_save(kopt_search *s, kopt_ctx *ctx, int i)
{
    const kopt_search_node *n = &s->nodes[i];
    json_t *j;
    char *text;
    kopt_status rc;

    if (!s->store)
        return KOPT_OK;
    j = kopt__search_node_to_json(n);
    text = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (!text)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "search node");
    rc = kopt_store_opt_node_put(s->store, ctx, s->tree_id, n->id, n->parent,
                                 n->state == KOPT_SEARCH_DONE ? "done" : "pending", n->hash,
                                 n->state == KOPT_SEARCH_DONE ?
                                     (n->failure[0] ? n->failure : kopt_verdict_name(n->verdict))
                                     : NULL, text, &n->where);
    free(text);
    test_kill_after_save(i);
    return rc;
}

/* ---- derived ------------------------------------------------------------------------------ */

int kopt__search_chain_end(const kopt_search *s, int i)
{
    /* a repair chain: each repair is the only repair child of the node it repairs */
    for (;;) {
        int next = -1;
        for (int k = i + 1; k < s->n; k++)
            if (s->nodes[k].parent == i && strcmp(s->nodes[k].kind, "repair") == 0) {
                next = k;
                break;
            }
        if (next < 0)
            return i;
        i = next;
    }
}

double kopt__search_gain(const kopt_search *s, int i)
{
    const kopt_search_node *n = &s->nodes[i];
    int base = i, pi;

    /* a repair's gain is over the parent of the node its chain started from */
    while (base >= 0 && strcmp(s->nodes[base].kind, "repair") == 0)
        base = s->nodes[base].parent;
    pi = base >= 0 ? s->nodes[base].parent : -1;
    if (pi < 0 || !n->ok || !s->nodes[pi].ok || n->time_ms <= 0)
        return 0.0;
    return s->nodes[pi].time_ms / n->time_ms;
}

void kopt__search_derive(kopt_search *s)
{
    double *raw = calloc((size_t)s->n + 1, sizeof(double)), *norm = calloc((size_t)s->n + 1,
                                                                           sizeof(double));
    int *ok = calloc((size_t)s->n + 1, sizeof(int));
    const kopt_search_node *root = s->n ? &s->nodes[0] : NULL;

    if (!raw || !norm || !ok)
        goto out;
    s->best = -1;
    for (int i = 0; i < s->n; i++) {
        kopt_search_node *n = &s->nodes[i];
        n->ok = n->state == KOPT_SEARCH_DONE && !n->failure[0] && n->verdict == KOPT_VERDICT_OK;
        n->raw_reward = n->ok && root && root->ok ?
            kopt_search_raw_reward(s->o.objective, root->time_ms, n->time_ms, root->energy_mj,
                                   n->energy_mj) : 0.0;
        raw[i] = n->raw_reward;
        ok[i] = n->ok;
        n->visits = 0;
        n->value = 0;
        n->plan_children = 0;
        n->closed = 0;
        n->closed_reason[0] = 0;
        n->repair_depth = strcmp(n->kind, "repair") == 0 && n->parent >= 0 ?
                          s->nodes[n->parent].repair_depth + 1 : 0;
        if (n->ok && (s->best < 0 || n->raw_reward > s->nodes[s->best].raw_reward))
            s->best = i;
    }
    kopt_search_normalize(raw, ok, s->n, norm);
    /* children come after their parents: back-propagate from the end */
    for (int i = s->n - 1; i >= 0; i--) {
        kopt_search_node *n = &s->nodes[i];
        n->reward = norm[i];
        if (n->state == KOPT_SEARCH_DONE) {
            n->visits += 1;
            n->value += n->reward;
        }
        if (n->parent >= 0) {
            s->nodes[n->parent].visits += n->visits;
            s->nodes[n->parent].value += n->value;
            if (strcmp(n->kind, "repair") != 0)
                s->nodes[n->parent].plan_children++;
        }
    }
    /* dead ends: over each node's plan children in order, by the end of their repair chain */
    for (int i = 0; i < s->n; i++) {
        kopt_search_node *n = &s->nodes[i];
        double gains[256];
        int k = 0, open = 0;
        if (!n->ok || n->plan_children < s->o.prune_m)
            continue;
        for (int c = i + 1; c < s->n && k < 256; c++) {
            const kopt_search_node *ch = &s->nodes[c];
            int end;
            if (ch->parent != i || strcmp(ch->kind, "repair") == 0)
                continue;
            end = kopt__search_chain_end(s, c);
            if (s->nodes[end].state != KOPT_SEARCH_DONE) {
                open = 1;
                continue;
            }
            gains[k++] = s->nodes[end].ok && s->nodes[end].time_ms > 0 ?
                         n->time_ms / s->nodes[end].time_ms : 0.0;
        }
        if (!open)
            n->closed = kopt_search_dead_end(gains, k, s->o.prune_m, s->o.prune_eps,
                                             n->closed_reason, sizeof(n->closed_reason));
    }
out:
    free(raw);
    free(norm);
    free(ok);
}

void kopt_search_signature(const kopt_search *s, char out[65])
{
    kopt_hash *h = kopt_hash_new();
    char line[256];

    for (int i = 0; i < s->n; i++) {
        const kopt_search_node *n = &s->nodes[i];
        snprintf(line, sizeof(line), "%d %d %s %s %d %s %.6g", n->id, n->parent, n->kind,
                 n->hash, (int)n->state, n->failure[0] ? n->failure :
                 kopt_verdict_name(n->verdict), n->time_ms);
        kopt_hash_add_str(h, line);
    }
    kopt_hash_hex(h, out);
}

int kopt_search_count(const kopt_search *s)
{
    return s ? s->n : 0;
}

const kopt_search_node *kopt_search_node_at(const kopt_search *s, int i)
{
    return s && i >= 0 && i < s->n ? &s->nodes[i] : NULL;
}

const kopt_search_node *kopt_search_best(const kopt_search *s)
{
    return s && s->best >= 0 ? &s->nodes[s->best] : NULL;
}

void kopt_search_get_stats(const kopt_search *s, kopt_search_stats *out)
{
    *out = s->st;
}

static const char *const policy_names[] = {"mcts", "greedy", "beam", "best-of-n"};

const char *kopt_search_policy_name(kopt_search_policy p)
{
    return (unsigned)p < 4 ? policy_names[p] : "?";
}

int kopt_search_policy_parse(const char *str, kopt_search_policy *out)
{
    for (int i = 0; i < 4; i++)
        if (str && strcmp(str, policy_names[i]) == 0) {
            *out = (kopt_search_policy)i;
            return 0;
        }
    return -1;
}

void kopt_search_outcome_clear(kopt_search_outcome *o)
{
    free(o->log);
    free(o->advice);
    free(o->tuned_source);
    free(o->facts);
    memset(o, 0, sizeof(*o));
}

void kopt_search_evaluator_close(kopt_search_evaluator *ev)
{
    if (ev && ev->close)
        ev->close(ev->self);
    if (ev)
        memset(ev, 0, sizeof(*ev));
}

/* The stored nodes appended to s (nothing without a store). */
kopt_status kopt__search_load_tree(kopt_search *s, kopt_ctx *ctx)
{
    char **rows = NULL;
    int nrows = 0;
    kopt_status rc;

    if (!s->store)
        return KOPT_OK;
    if ((rc = kopt_store_opt_nodes(s->store, ctx, s->tree_id, &rows, &nrows)) != KOPT_OK)
        return rc;
    for (int i = 0; i < nrows && rc == KOPT_OK; i++) {
        json_t *j = json_loads(rows[i], 0, NULL);
        kopt_search_node *n = kopt__search_add(s);
        if (!j || !n || kopt__search_node_from_json(n, j) != 0 || n->id != i)
            rc = kopt_seterr(ctx, KOPT_E_DB, "tree %lld: node %d is damaged in the store",
                             (long long)s->tree_id, i);
        json_decref(j);
    }
    for (int i = 0; i < nrows; i++)
        free(rows[i]);
    free(rows);
    return rc;
}
