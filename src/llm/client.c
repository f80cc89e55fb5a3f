/* src/llm: LLM backends behind one table (openai, anthropic, command, replay), libcurl,
 * retries, budgets, prices. Calls go one way: client.c -> the backends (openai.c and
 * anthropic.c -> http.c -> retry.c; command.c, replay.c) -> request.c, reply.c; client.c
 * also -> budget.c, price.c.
 * This file: the LLM client: spec parsing, the backend table, one call or many in flight on
 * threads, budgets, cost estimates, canonical request JSON and hashes, and the record hook. */
#include "llm_int.h"

#include <ctype.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const kopt__llm_backend_i *const backends[] = {
    &kopt__llm_openai, &kopt__llm_anthropic, &kopt__llm_command, &kopt__llm_replay,
};

struct kopt_llm_client {
    const kopt__llm_backend_i *be;
    void *state;
    char *model;
    kopt_llm_options o;           /* resolved; its strings point into the copies below */
    int parallel_given;           /* options.parallel was set (--llm-parallel): a cap kept */
    char *key_env, *prices_path;
    kopt__llm_prices *prices;
    pthread_mutex_t lock;         /* budget */
    kopt__llm_budget budget;
};

void kopt__llm_options_resolve(kopt_llm_options *out, const kopt_llm_options *in)
{
    static const kopt_llm_options dflt = KOPT_LLM_OPTIONS_INIT;

    *out = in ? *in : dflt;
    if (out->connect_timeout_s <= 0)
        out->connect_timeout_s = 10;
    if (out->timeout_s <= 0)
        out->timeout_s = 300;
    if (out->max_retries < 0)
        out->max_retries = 4;
    if (out->backoff_base_s <= 0)
        out->backoff_base_s = 1;
    if (out->backoff_max_s <= 0)
        out->backoff_max_s = 60;
    if (out->parallel <= 0)
        out->parallel = 4;
    if (out->max_reply_bytes == 0)
        out->max_reply_bytes = (size_t)8 << 20;
    if (out->seed == 0)
        out->seed = (uint64_t)(kopt_now_ms() * 1e3) | 1;
}

kopt_status kopt__llm_spec_split(kopt_ctx *ctx, const char *spec, char *name, size_t name_cap,
                                 const char **arg)
{
    const char *colon = spec ? strchr(spec, ':') : NULL;
    size_t n = colon ? (size_t)(colon - spec) : 0;

    if (!colon || n == 0 || n >= name_cap || !colon[1])
        return kopt_seterr(ctx, KOPT_E_INVALID, "LLM spec '%s': want BACKEND:ARG "
                           "(openai:MODEL[@BASE_URL], anthropic:MODEL, command:PROGRAM [ARGS], "
                           "replay:FILE|RUN)", spec ? spec : "");
    for (size_t i = 0; i < n; i++)
        if (!islower((unsigned char)spec[i]))
            return kopt_seterr(ctx, KOPT_E_INVALID, "LLM spec '%s': backend name '%.*s' is not "
                               "lowercase letters", spec, (int)n, spec);
    memcpy(name, spec, n);
    name[n] = '\0';
    *arg = colon + 1;
    return KOPT_OK;
}

kopt_status kopt_llm_open(kopt_llm_client **out, kopt_ctx *ctx, const char *spec,
                          const kopt_llm_options *o)
{
    kopt_llm_client *c = NULL;
    kopt_status rc = KOPT_OK;
    char name[32];
    const char *arg;

    *out = NULL;
    if (!spec || !spec[0])
        spec = getenv("KOPT_LLM");
    if (!spec || !spec[0])
        return kopt_seterr(ctx, KOPT_E_INVALID, "no LLM given: use --llm SPEC or set KOPT_LLM "
                           "(see docs/llm.md)");
    if ((rc = kopt__llm_spec_split(ctx, spec, name, sizeof(name), &arg)) != KOPT_OK)
        return rc;
    if (!(c = calloc(1, sizeof(*c))))
        return kopt_seterr(ctx, KOPT_E_NOMEM, "LLM client");
    pthread_mutex_init(&c->lock, NULL);
    kopt__llm_options_resolve(&c->o, o);
    c->parallel_given = o && o->parallel > 0;
    if ((c->o.key_env && !(c->key_env = strdup(c->o.key_env))) ||
        (c->o.prices_path && !(c->prices_path = strdup(c->o.prices_path)))) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "LLM client");
        goto cleanup;
    }
    c->o.key_env = c->key_env;
    c->o.prices_path = c->prices_path;
    c->budget.max_calls = c->o.max_calls;
    c->budget.max_tokens = c->o.max_tokens_total;
    c->budget.max_cost = c->o.max_cost;
    for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++)
        if (strcmp(backends[i]->name, name) == 0)
            c->be = backends[i];
    if (!c->be) {
        rc = kopt_seterr(ctx, KOPT_E_INVALID, "LLM spec '%s': unknown backend '%s' (openai, "
                         "anthropic, command, replay)", spec, name);
        goto cleanup;
    }
    if (c->be->api_version != KOPT_LLM_API_VERSION) {
        rc = kopt_seterr(ctx, KOPT_E_UNSUPPORTED, "LLM backend %s: API version %d, want %d",
                         name, c->be->api_version, KOPT_LLM_API_VERSION);
        c->be = NULL;
        goto cleanup;
    }
    if ((rc = kopt__llm_prices_load(&c->prices, ctx, c->o.prices_path)) != KOPT_OK)
        goto cleanup;
    if ((rc = c->be->open(&c->state, ctx, arg, &c->o, &c->model)) != KOPT_OK) {
        c->be = NULL;   /* nothing to close */
        goto cleanup;
    }
    *out = c;
    c = NULL;
cleanup:
    kopt_llm_close(c);
    return rc;
}

void kopt_llm_close(kopt_llm_client *c)
{
    if (!c)
        return;
    if (c->be)
        c->be->close(c->state);
    kopt__llm_prices_free(c->prices);
    pthread_mutex_destroy(&c->lock);
    free(c->model);
    free(c->key_env);
    free(c->prices_path);
    free(c);
}

const char *kopt_llm_backend(const kopt_llm_client *c)
{
    return c->be->name;
}

const char *kopt_llm_model(const kopt_llm_client *c)
{
    return c->model;
}

int kopt_llm_price_of(const kopt_llm_client *c, const char *model, kopt_llm_price *out)
{
    return kopt__llm_prices_find(c->prices, model, out);
}

void kopt_llm_budget(kopt_llm_client *c, kopt_llm_budget_state *out)
{
    pthread_mutex_lock(&c->lock);
    kopt__llm_budget_exhausted(&c->budget);
    *out = c->budget.spent;
    pthread_mutex_unlock(&c->lock);
}

/* ---- requests as JSON ------------------------------------------------------------------- */

/* The hashed part of a request (checked by request_problem first); NULL when out of memory. */
static json_t *request_obj(const kopt_llm_request *rq)
{
    json_t *o = json_object(), *msgs = kopt__llm_messages_json(rq, 0);

    if (!o || !msgs)
        goto fail;
    if (rq->system && json_object_set_new(o, "system", json_string(rq->system)) != 0)
        goto fail;
    json_object_set_new(o, "messages", msgs);
    msgs = NULL;
    json_object_set_new(o, "max_tokens", json_integer(kopt__llm_max_tokens(rq)));
    if (rq->temperature >= 0)
        json_object_set_new(o, "temperature", json_real(rq->temperature));
    if (rq->role && json_object_set_new(o, "role", json_string(rq->role)) != 0)
        goto fail;
    return o;
fail:
    json_decref(msgs);
    json_decref(o);
    return NULL;
}

char *kopt_llm_request_json(const kopt_llm_request *rq, const char *model)
{
    json_t *o = request_obj(rq);
    char *s;

    if (!o)
        return NULL;
    if (model)
        json_object_set_new(o, "model", json_string(model));
    if (rq->tag)
        json_object_set_new(o, "tag", json_string(rq->tag));
    if (rq->version >= 2 && rq->name)
        json_object_set_new(o, "name", json_string(rq->name));
    s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(9));
    json_decref(o);
    return s;
}

void kopt_llm_request_hash(const kopt_llm_request *rq, char out[65])
{
    json_t *o = request_obj(rq);
    char *s = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(9)) : NULL;

    kopt_sha256_hex(s ? s : "", s ? strlen(s) : 0, out);
    free(s);
    json_decref(o);
}

/* A reason the request cannot be sent, or NULL. */
static const char *request_problem(const kopt_llm_request *rq)
{
    if (rq->nmessages < 0 || (rq->nmessages > 0 && !rq->messages))
        return "no messages";
    if (rq->system && !kopt__llm_utf8_valid(rq->system, strlen(rq->system)))
        return "the system prompt is not valid UTF-8";
    for (int i = 0; i < rq->nmessages; i++) {
        const kopt_llm_message *m = &rq->messages[i];
        if (!m->role || !m->content)
            return "a message without role or content";
        if (strcmp(m->role, "user") != 0 && strcmp(m->role, "assistant") != 0)
            return "a message role other than user or assistant";
        if (!kopt__llm_utf8_valid(m->content, strlen(m->content)))
            return "a message is not valid UTF-8";
    }
    if (rq->role && !kopt__llm_utf8_valid(rq->role, strlen(rq->role)))
        return "the role is not valid UTF-8";
    if (rq->tag && !kopt__llm_utf8_valid(rq->tag, strlen(rq->tag)))
        return "the tag is not valid UTF-8";
    if (rq->version >= 2 && rq->name && !kopt__llm_utf8_valid(rq->name, strlen(rq->name)))
        return "the name is not valid UTF-8";
    return NULL;
}

char *kopt_llm_exchange_json(const kopt_llm_exchange *x)
{
    const kopt_llm_reply *r = x->reply;
    json_t *req = x->request_json ? json_loads(x->request_json, 0, NULL) : NULL;
    json_t *o = json_pack(
        "{s:s, s:s, s:s, s:s, s:s?, s:o, s:{s:s, s:s?, s:s?, s:s?, s:s?, s:i, s:i,"
        " s:{s:I, s:I, s:I}, s:f, s:f, s:b}}",
        "backend", x->backend ? x->backend : "", "model", x->model ? x->model : "", "role",
        x->role ? x->role : "", "tag", x->tag ? x->tag : "", "request_hash",
        r->request_hash[0] ? r->request_hash : NULL, "request", req ? req : json_null(),
        "reply", "outcome", kopt_llm_outcome_name(r->outcome), "text", r->text,
        "finish_reason", r->finish_reason, "model", r->model, "error", r->error, "http_status",
        r->http_status, "attempts", r->attempts, "usage", "prompt_tokens",
        (json_int_t)r->usage.prompt_tokens, "completion_tokens",
        (json_int_t)r->usage.completion_tokens, "cached_tokens",
        (json_int_t)r->usage.cached_tokens, "latency_ms", r->latency_ms, "cost", r->cost,
        "cost_known", r->cost_known);
    char *s;

    if (!o)
        return NULL;
    if (x->run_id)
        json_object_set_new(o, "run_id", json_integer(x->run_id));
    s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    return s;
}

kopt_status kopt_llm_record_jsonl(void *file, kopt_ctx *ctx, const kopt_llm_exchange *x)
{
    char *s = kopt_llm_exchange_json(x);
    int bad = !s || fprintf((FILE *)file, "%s\n", s) < 0 || fflush((FILE *)file) != 0;

    free(s);
    return bad ? kopt_seterr(ctx, KOPT_E_IO, "cannot write an LLM exchange") : KOPT_OK;
}

/* ---- calls ---------------------------------------------------------------------------------- */

/* One request through the backend: budget, call, latency, cost. Thread-safe. */
static void run_one(kopt_llm_client *c, const kopt_llm_request *rq, const char *req_json,
                    kopt_llm_reply *out)
{
    kopt_llm_price price;
    char why[sizeof(c->budget.spent.why)];
    int ok;
    double t0;

    pthread_mutex_lock(&c->lock);
    ok = kopt__llm_budget_reserve(&c->budget);
    memcpy(why, c->budget.spent.why, sizeof(why));
    pthread_mutex_unlock(&c->lock);
    if (!ok) {
        kopt__llm_fail(out, KOPT_LLM_BUDGET, "%s: not sent: budget spent: %s", c->be->name, why);
        return;
    }
    t0 = kopt_now_ms();
    c->be->call(c->state, rq, req_json, out);
    out->latency_ms = kopt_now_ms() - t0;
    if (kopt__llm_prices_find(c->prices, out->model ? out->model : c->model, &price) ||
        kopt__llm_prices_find(c->prices, c->model, &price)) {
        out->cost = kopt_llm_cost(&price, &out->usage);
        out->cost_known = 1;
    }
    pthread_mutex_lock(&c->lock);
    kopt__llm_budget_add(&c->budget, &out->usage, out->cost, out->cost_known);
    pthread_mutex_unlock(&c->lock);
}

/* Prepare a reply for `rq`: its hash and JSON (*req_json, caller frees). 0 when the request
 * cannot be sent (the reply says why). */
static int prepare(kopt_llm_client *c, const kopt_llm_request *rq, kopt_llm_reply *out,
                   char **req_json)
{
    const char *why = request_problem(rq);

    memset(out, 0, sizeof(*out));
    *req_json = NULL;
    if (!why && !(*req_json = kopt_llm_request_json(rq, c->model)))
        why = "out of memory";
    if (why) {
        kopt__llm_fail(out, KOPT_LLM_MALFORMED, "%s: bad request: %s", c->be->name, why);
        return 0;
    }
    kopt_llm_request_hash(rq, out->request_hash);
    return 1;
}

/* After a call: a text that is never NULL, and the exchange recorded when it was sent. */
static void finish(kopt_llm_client *c, kopt_ctx *ctx, const kopt_llm_request *rq,
                   const char *req_json, kopt_llm_reply *out)
{
    if (!out->text)
        kopt__llm_set_str(&out->text, "");
    if (c->o.record && out->attempts > 0) {
        kopt_llm_exchange x = {rq->run_id, rq->role ? rq->role : "", rq->tag ? rq->tag : "",
                               c->be->name, c->model, req_json, out};
        if (c->o.record(c->o.record_user, ctx, &x) != KOPT_OK)
            kopt_log(ctx, KOPT_LOG_WARN, "LLM exchange not recorded: %s", kopt_errmsg(ctx));
    }
}

kopt_status kopt_llm_call(kopt_llm_client *c, kopt_ctx *ctx, const kopt_llm_request *rq,
                          kopt_llm_reply *out)
{
    char *req_json = NULL;

    if (!prepare(c, rq, out, &req_json)) {
        kopt__llm_set_str(&out->text, "");
        return kopt_seterr(ctx, KOPT_E_INVALID, "%s", out->error);
    }
    run_one(c, rq, req_json, out);
    finish(c, ctx, rq, req_json, out);
    free(req_json);
    if (out->outcome == KOPT_LLM_OK)
        return KOPT_OK;
    return kopt_seterr(ctx, out->outcome == KOPT_LLM_TIMEOUT ? KOPT_E_TIMEOUT : KOPT_E_ERROR,
                       "%s", out->error ? out->error : kopt_llm_outcome_name(out->outcome));
}

typedef struct many {
    kopt_llm_client *c;
    const kopt_llm_request *rq;
    kopt_llm_reply *out;
    char **req_json;
    int *ready;
    int n, next;
    pthread_mutex_t lock;
} many;

static void *many_worker(void *arg)
{
    many *m = arg;

    for (;;) {
        int i;
        pthread_mutex_lock(&m->lock);
        while (m->next < m->n && !m->ready[m->next])
            m->next++;
        i = m->next < m->n ? m->next++ : -1;
        pthread_mutex_unlock(&m->lock);
        if (i < 0)
            return NULL;
        run_one(m->c, &m->rq[i], m->req_json[i], &m->out[i]);
    }
}

/* n requests, at most `in_flight` at once. */
static kopt_status call_many(kopt_llm_client *c, kopt_ctx *ctx, const kopt_llm_request *rq,
                             int n, kopt_llm_reply *out, int in_flight)
{
    many m = {c, rq, out, NULL, NULL, n, 0, PTHREAD_MUTEX_INITIALIZER};
    pthread_t *th = NULL;
    int nth, started = 0;
    kopt_status rc = KOPT_OK;

    if (n < 0 || (n > 0 && (!c || !rq || !out)))
        return kopt_seterr(ctx, KOPT_E_INVALID, "kopt_llm_call_many: bad arguments");
    if (n == 0)
        return KOPT_OK;
    nth = n < in_flight ? n : in_flight;
    m.req_json = calloc((size_t)n, sizeof(*m.req_json));
    m.ready = calloc((size_t)n, sizeof(*m.ready));
    th = calloc((size_t)nth, sizeof(*th));
    if (!m.req_json || !m.ready || !th) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "kopt_llm_call_many");
        goto cleanup;
    }
    for (int i = 0; i < n; i++)
        m.ready[i] = prepare(c, &rq[i], &out[i], &m.req_json[i]);
    /* the calling thread works too: nth - 1 helpers */
    for (int t = 0; t + 1 < nth; t++)
        if (pthread_create(&th[t], NULL, many_worker, &m) == 0)
            started++;
    many_worker(&m);
    for (int t = 0; t < started; t++)
        pthread_join(th[t], NULL);
    for (int i = 0; i < n; i++)
        finish(c, ctx, &rq[i], m.req_json[i], &out[i]);
cleanup:
    if (m.req_json)
        for (int i = 0; i < n; i++)
            free(m.req_json[i]);
    free(m.req_json);
    free(m.ready);
    free(th);
    pthread_mutex_destroy(&m.lock);
    return rc;
}

kopt_status kopt_llm_call_many(kopt_llm_client *c, kopt_ctx *ctx, const kopt_llm_request *rq,
                               int n, kopt_llm_reply *out)
{
    return call_many(c, ctx, rq, n, out, c ? c->o.parallel : 1);
}

kopt_status kopt_llm_call_together(kopt_llm_client *c, kopt_ctx *ctx,
                                   const kopt_llm_request *rq, int n, kopt_llm_reply *out)
{
    /* call_many keeps to n */
    return call_many(c, ctx, rq, n, out,
                     c && c->parallel_given ? c->o.parallel : KOPT_LLM_TOGETHER_MAX);
}
