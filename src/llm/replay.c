/* The "replay" backend: answers from recorded exchanges, without network or cost. The
 * record is a JSONL file (kopt_llm_exchange_json lines: what --llm-record writes) or a stored
 * run (loaded through options.load_run). By default a request gets the first unused
 * recorded answer with the same request hash (kopt_llm_request_hash); "@order" hands them
 * out in recorded order role by role (a planner gets the next planner answer, whatever it
 * asks), an answer recorded twice for the same request kept once (manual mode records a
 * reply file again when a later step reads it): the prompts may then differ from the
 * recording's (other templates, a restated problem). Spec: replay:FILE|RUN[@order]. */
#include "llm_int.h"

#include <ctype.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct rec {
    char hash[65];
    char role[24];              /* "" unknown */
    kopt_llm_outcome outcome;
    char *text, *finish_reason, *model, *error;
    kopt_llm_usage usage;
    int used;
} rec;

typedef struct replay_state {
    rec *r;
    int n, in_order;
    char *source;
    pthread_mutex_t lock;
} replay_state;

static void close_replay(void *state)
{
    replay_state *s = state;

    if (!s)
        return;
    for (int i = 0; i < s->n; i++) {
        free(s->r[i].text);
        free(s->r[i].finish_reason);
        free(s->r[i].model);
        free(s->r[i].error);
    }
    free(s->r);
    free(s->source);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

static char *dup_member(json_t *o, const char *k)
{
    const char *v = json_string_value(json_object_get(o, k));
    return v ? strdup(v) : NULL;
}

/* One JSONL line into s->r[s->n]. */
static kopt_status parse_line(replay_state *s, kopt_ctx *ctx, const char *line, size_t len,
                              int lineno)
{
    json_error_t err;
    json_t *j = json_loadb(line, len, 0, &err), *reply, *u;
    const char *hash, *oname;
    rec *r;
    int o;
    kopt_status rc = KOPT_OK;

    if (!j)
        return kopt_seterr(ctx, KOPT_E_INVALID, "replay: %s:%d: %s", s->source, lineno,
                           err.text);
    reply = json_object_get(j, "reply");
    hash = json_string_value(json_object_get(j, "request_hash"));
    oname = json_string_value(json_object_get(reply, "outcome"));
    if (!json_is_object(reply) || !hash || strlen(hash) != 64 || !oname ||
        (o = kopt_llm_outcome_parse(oname)) < 0) {
        rc = kopt_seterr(ctx, KOPT_E_INVALID, "replay: %s:%d: want an exchange with "
                         "\"request_hash\" and a \"reply\" with a known \"outcome\"", s->source,
                         lineno);
        goto cleanup;
    }
    if (s->in_order) {           /* the same request answered the same way: once */
        const char *t = json_string_value(json_object_get(reply, "text"));
        for (int i = 0; i < s->n; i++)
            if (strcmp(s->r[i].hash, hash) == 0 && s->r[i].text && t &&
                strcmp(s->r[i].text, t) == 0)
                goto cleanup;
    }
    r = &s->r[s->n++];
    memset(r, 0, sizeof(*r));
    memcpy(r->hash, hash, 65);
    snprintf(r->role, sizeof(r->role), "%s",
             json_string_value(json_object_get(j, "role")) ? json_string_value(
                 json_object_get(j, "role")) : "");
    r->outcome = (kopt_llm_outcome)o;
    r->text = dup_member(reply, "text");
    r->finish_reason = dup_member(reply, "finish_reason");
    r->model = dup_member(reply, "model");
    if (!r->model)
        r->model = dup_member(j, "model");
    r->error = dup_member(reply, "error");
    u = json_object_get(reply, "usage");
    r->usage.prompt_tokens = kopt__llm_count(u, "prompt_tokens");
    r->usage.completion_tokens = kopt__llm_count(u, "completion_tokens");
    r->usage.cached_tokens = kopt__llm_count(u, "cached_tokens");
cleanup:
    json_decref(j);
    return rc;
}

static kopt_status parse_jsonl(replay_state *s, kopt_ctx *ctx, const char *text)
{
    size_t lines = 1;
    int lineno = 0;

    for (const char *p = text; *p; p++)
        lines += *p == '\n';
    if (!(s->r = calloc(lines, sizeof(*s->r))))
        return kopt_seterr(ctx, KOPT_E_NOMEM, "replay");
    for (const char *p = text; *p;) {
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        size_t k = 0;
        kopt_status rc;
        lineno++;
        while (k < len && isspace((unsigned char)p[k]))
            k++;
        if (k < len && (rc = parse_line(s, ctx, p, len, lineno)) != KOPT_OK)
            return rc;
        p = end ? end + 1 : p + len;
    }
    return KOPT_OK;
}

static int all_digits(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s))
            return 0;
    return 1;
}

static kopt_status open_replay(void **state, kopt_ctx *ctx, const char *arg,
                               const kopt_llm_options *o, char **model)
{
    replay_state *s = calloc(1, sizeof(*s));
    char *text = NULL;
    size_t len, n;
    kopt_status rc = KOPT_OK;

    *state = NULL;
    if (!s || !(s->source = strdup(arg))) {
        free(s);
        return kopt_seterr(ctx, KOPT_E_NOMEM, "replay");
    }
    pthread_mutex_init(&s->lock, NULL);
    n = strlen(s->source);
    if (n > 6 && strcmp(s->source + n - 6, "@order") == 0) {
        s->in_order = 1;
        s->source[n - 6] = '\0';
    }
    if (all_digits(s->source) && access(s->source, F_OK) != 0) {   /* a stored run */
        if (!o->load_run) {
            rc = kopt_seterr(ctx, KOPT_E_UNSUPPORTED, "replay: run %s: no store to read it "
                             "from (give a JSONL file instead)", s->source);
            goto cleanup;
        }
        if ((rc = o->load_run(o->load_user, ctx, strtoll(s->source, NULL, 10), &text)) !=
            KOPT_OK)
            goto cleanup;
    } else if ((rc = kopt_file_read(ctx, s->source, &text, &len)) != KOPT_OK) {
        kopt_adderr(ctx, rc, "replay");
        goto cleanup;
    }
    if ((rc = parse_jsonl(s, ctx, text)) != KOPT_OK)
        goto cleanup;
    if (s->n == 0) {
        rc = kopt_seterr(ctx, KOPT_E_NOT_FOUND, "replay: %s holds no exchange", s->source);
        goto cleanup;
    }
    if (!(*model = strdup(s->r[0].model ? s->r[0].model : "replay"))) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "replay");
        goto cleanup;
    }
    *state = s;
    s = NULL;
cleanup:
    free(text);
    close_replay(s);
    return rc;
}

static void call_replay(void *state, const kopt_llm_request *rq, const char *request_json,
                        kopt_llm_reply *out)
{
    replay_state *s = state;
    rec *r = NULL;
    int used = 0;

    (void)request_json;
    pthread_mutex_lock(&s->lock);
    if (s->in_order) {           /* the next unused one of this role (any, without roles) */
        for (int i = 0; i < s->n && !r; i++)
            if (!s->r[i].used && (!rq->role || !s->r[i].role[0] ||
                                  strcmp(s->r[i].role, rq->role) == 0))
                r = &s->r[i];
    } else {
        for (int i = 0; i < s->n && !r; i++)
            if (!s->r[i].used && strcmp(s->r[i].hash, out->request_hash) == 0)
                r = &s->r[i];
    }
    if (r)
        r->used = 1;
    for (int i = 0; i < s->n; i++)
        used += s->r[i].used;
    pthread_mutex_unlock(&s->lock);
    out->attempts = 1;
    if (!r) {
        kopt__llm_fail(out, KOPT_LLM_REPLAY_MISS, "replay: %s: no recorded answer for request "
                       "%.12s (role %s); %d recorded, %d used", s->source, out->request_hash,
                       rq->role ? rq->role : "none", s->n, used);
        return;
    }
    out->outcome = r->outcome;
    out->usage = r->usage;
    kopt__llm_set_str(&out->text, r->text);
    kopt__llm_set_str(&out->finish_reason, r->finish_reason);
    kopt__llm_set_str(&out->model, r->model);
    kopt__llm_set_str(&out->error, r->error);
}

const kopt__llm_backend_i kopt__llm_replay = {
    "replay", KOPT_LLM_API_VERSION, open_replay, call_replay, close_replay,
};
