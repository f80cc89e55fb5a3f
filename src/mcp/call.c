/*
 * The MCP tools called in-process (kopt/mcp.h, kopt_mcp_call) and evaluation sessions
 * with the eval tool's arguments (kopt_mcp_session_*): JSON in, JSON out, for bindings
 * (the Python package, python/kopt) that should not mirror the library's structs.
 */
#include "mcp_int.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Copies the caller's stop flag into the call's cancelled flag while the call runs. */
typedef struct stop_watch {
    volatile sig_atomic_t *stop;
    kopt__mcp_call *c;
    volatile int done;
} stop_watch;

static void *watch_main(void *arg)
{
    stop_watch *w = arg;
    struct timespec ts = {0, 20 * 1000 * 1000};

    while (!w->done) {
        if (*w->stop)
            w->c->cancelled = 1;
        nanosleep(&ts, NULL);
    }
    return NULL;
}

/* args_json parsed into an object ("" or NULL: {}); the message says what is wrong. */
static kopt_status parse_args(kopt_ctx *ctx, const char *args_json, json_t **out)
{
    json_error_t err;

    *out = args_json && args_json[0] ? json_loads(args_json, 0, &err) : json_object();
    if (!*out)
        return kopt_seterr(ctx, KOPT_E_INVALID, "arguments: line %d: %s", err.line, err.text);
    if (!json_is_object(*out)) {
        json_decref(*out);
        *out = NULL;
        return kopt_seterr(ctx, KOPT_E_INVALID, "arguments: expected a JSON object");
    }
    return KOPT_OK;
}

static char *dump(json_t *j)
{
    return json_dumps(j, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
}

kopt_status kopt_mcp_call(kopt_ctx *ctx, const kopt_mcp_opts *opts, const char *tool,
                          const char *args_json, volatile sig_atomic_t *stop, char **out,
                          char **summary)
{
    const kopt__mcp_tool *t = kopt__mcp_tool_find(tool);
    kopt__mcp_call c;
    stop_watch w = {stop, &c, 0};
    pthread_t th;
    int watching = 0;
    json_t *result = NULL;
    kopt_buf text = KOPT_BUF_INIT;
    char msg[512];
    kopt_status rc;

    *out = NULL;
    if (summary)
        *summary = NULL;
    if (!t)
        return kopt_seterr(ctx, KOPT_E_NOT_FOUND, "unknown tool '%s'", tool ? tool : "(null)");
    memset(&c, 0, sizeof(c));
    if ((rc = parse_args(ctx, args_json, &c.args)) != KOPT_OK)
        return rc;
    if (kopt__mcp_check_args(t->schema, c.args, msg, sizeof(msg))) {
        json_decref(c.args);
        return kopt_seterr(ctx, KOPT_E_INVALID, "%s (%s)", msg, tool);
    }
    if (!(c.srv = kopt__mcp_server_new(ctx, -1, opts))) {
        json_decref(c.args);
        return kopt_seterr(ctx, KOPT_E_NOMEM, "mcp call");
    }
    c.tool = t;
    if (stop)
        watching = pthread_create(&th, NULL, watch_main, &w) == 0;
    rc = t->run(&c, ctx, &result, &text);
    w.done = 1;
    if (watching)
        pthread_join(th, NULL);
    if (rc == KOPT_OK) {
        if (!result)
            result = json_object();
        if (!(*out = dump(result)))
            rc = kopt_seterr(ctx, KOPT_E_NOMEM, "mcp call: the result as JSON");
        else if (summary)
            *summary = kopt_buf_detach(&text);
    }
    json_decref(result);
    kopt_buf_free(&text);
    json_decref(c.args);
    kopt__mcp_server_free(c.srv);
    return rc;
}

/* ---- sessions ---------------------------------------------------------------------------- */

struct kopt_mcp_session {
    kopt__mcp_server *srv;
    kopt__mcp_call c;             /* the open's arguments (the subject's, for its life) */
    subject subj;
    kopt_eval_opts eo;
    kopt_run_session *rs;
    int n;                        /* evaluations so far */
    int opened;                   /* subj is open */
};

void kopt_mcp_session_close(kopt_mcp_session *s)
{
    kopt_ctx *ctx;

    if (!s)
        return;
    if (s->rs) {   /* opened: the run did its work */
        kopt_run_session_close(s->rs);
        if ((ctx = kopt_ctx_new())) {
            kopt_run_finish(s->subj.run, ctx, KOPT_RUN_OK, NULL);
            kopt_ctx_free(ctx);
        }
    }
    if (s->opened)
        kopt__mcp_subject_close(&s->subj);
    json_decref(s->c.args);
    kopt__mcp_server_free(s->srv);
    free(s);
}

kopt_status kopt_mcp_session_open(kopt_mcp_session **out, kopt_ctx *ctx,
                                  const kopt_mcp_opts *opts, const char *args_json)
{
    const kopt__mcp_tool *t = kopt__mcp_tool_find("eval");
    kopt_mcp_session *s = calloc(1, sizeof(*s));
    kopt_eval_opts init = KOPT_EVAL_OPTS_INIT;
    char msg[512];
    kopt_status rc;

    *out = NULL;
    if (!s)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "mcp session");
    s->eo = init;
    if ((rc = parse_args(ctx, args_json, &s->c.args)) != KOPT_OK)
        goto fail;
    if (json_object_get(s->c.args, "candidate_path") ||
        json_object_get(s->c.args, "candidate_source")) {
        rc = kopt_seterr(ctx, KOPT_E_INVALID, "arguments: a session takes its candidates one "
                         "evaluation at a time, not at open");
        goto fail;
    }
    if (kopt__mcp_check_args(t->schema, s->c.args, msg, sizeof(msg))) {
        rc = kopt_seterr(ctx, KOPT_E_INVALID, "%s (session)", msg);
        goto fail;
    }
    if (!(s->srv = kopt__mcp_server_new(ctx, -1, opts))) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "mcp session");
        goto fail;
    }
    s->c.srv = s->srv;
    s->c.tool = t;
    s->eo.no_timing = json_is_true(json_object_get(s->c.args, "no_timing"));
    s->opened = 1;
    if ((rc = kopt__mcp_subject_open(&s->subj, &s->c, ctx, KOPT_RUN_EVAL, &s->eo)) != KOPT_OK ||
        (rc = kopt_run_session_open(&s->rs, s->subj.run, ctx, s->subj.prob, &s->eo, 1)) !=
        KOPT_OK)
        goto fail;
    *out = s;
    return KOPT_OK;
fail:
    kopt_mcp_session_close(s);
    return rc;
}

kopt_status kopt_mcp_session_eval(kopt_mcp_session *s, kopt_ctx *ctx, const char *args_json,
                                  char **out)
{
    kopt__mcp_call c = s->c;
    kopt_candidate *cand = NULL;
    kopt_eval_result *r = NULL;
    json_t *args = NULL, *v, *doc = NULL;
    const char *k, *tag;
    char tmpdir[4096] = "";
    kopt_status rc;

    *out = NULL;
    if ((rc = parse_args(ctx, args_json, &args)) != KOPT_OK)
        return rc;
    json_object_foreach(args, k, v) {
        if (strcmp(k, "candidate_path") && strcmp(k, "candidate_source") && strcmp(k, "tag")) {
            rc = kopt_seterr(ctx, KOPT_E_INVALID, "arguments.%s: unknown argument (a session's "
                             "evaluation takes candidate_path or candidate_source, and tag)", k);
            goto done;
        }
        if (!json_is_string(v)) {
            rc = kopt_seterr(ctx, KOPT_E_INVALID, "arguments.%s: expected a string", k);
            goto done;
        }
    }
    tag = json_string_value(json_object_get(args, "tag"));
    c.args = args;
    if ((rc = kopt__mcp_load_candidate(&c, ctx, s->subj.prob, &cand, tmpdir, sizeof(tmpdir))) !=
        KOPT_OK)
        goto done;
    if ((rc = kopt_run_session_eval(s->rs, ctx, cand, tag, &r)) != KOPT_OK)
        goto done;
    s->n++;
    {
        char *text = kopt_eval_result_json(r);
        doc = text ? json_loads(text, 0, NULL) : NULL;
        free(text);
    }
    if (!doc) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "mcp session: the result as JSON");
        goto done;
    }
    json_object_set_new(doc, "run_id", json_integer((json_int_t)kopt_run_id(s->subj.run)));
    json_object_set_new(doc, "session", json_pack("{s:i}", "evaluations", s->n));
    if (!(*out = dump(doc)))
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "mcp session: the result as JSON");
done:
    json_decref(doc);
    kopt_eval_result_free(r);
    kopt_candidate_free(cand);
    kopt__mcp_remove_tmp(tmpdir);
    json_decref(args);
    return rc;
}
