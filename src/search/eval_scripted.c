/* Two evaluators that need no GPU: the scripted one of the tests (outcomes written in the
 * candidates' sources) and the replay of a stored tree (outcomes by source hash). */
#include "search_int.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- scripted ------------------------------------------------------------------------------ */

typedef struct fake {
    double ref_ms;
} fake;

/* The value of `key=` on the marker line [a, e), copied to buf (to the next space, or for
 * "advice" to the end of the line). 1 when present. */
static int marker_get(const char *a, const char *e, const char *key, char *buf, size_t len)
{
    size_t k = strlen(key);

    for (const char *p = a; p + k < e; p++) {
        const char *v, *end;
        if ((p != a && p[-1] != ' ') || strncmp(p, key, k) != 0 || p[k] != '=')
            continue;
        v = p + k + 1;
        end = v;
        if (strcmp(key, "advice") == 0)
            end = e;
        else
            while (end < e && *end != ' ')
                end++;
        snprintf(buf, len, "%.*s", (int)(end - v), v);
        return 1;
    }
    return 0;
}

static kopt_status fake_outcome(fake *f, kopt_ctx *ctx, const char *source, int tuned,
                                kopt_search_outcome *out)
{
    const char *m = strstr(source, "kopt-test:"), *e;
    char v[512];

    memset(out, 0, sizeof(*out));
    out->verdict = KOPT_VERDICT_OK;
    out->time_ms = f->ref_ms;
    if (!strstr(source, "__global__") && !strstr(source, "kopt_candidate_run") &&
        !strstr(source, "class Model")) {    /* a PyTorch reference (the root) runs too */
        out->verdict = KOPT_VERDICT_COMPILE_ERROR;
        snprintf(out->message, sizeof(out->message), "no kernel");
        out->log = strdup("error: no __global__ function in the source");
        return KOPT_OK;
    }
    if (!m)
        return KOPT_OK;
    e = strchr(m, '\n');
    if (!e)
        e = m + strlen(m);
    m += strlen("kopt-test:");
    if (marker_get(m, e, "verdict", v, sizeof(v))) {
        for (int k = 0; k < KOPT_VERDICT_COUNT; k++)
            if (strcmp(kopt_verdict_name((kopt_verdict)k), v) == 0)
                out->verdict = (kopt_verdict)k;
    }
    if (marker_get(m, e, "time", v, sizeof(v)))
        out->time_ms = strtod(v, NULL);
    if (tuned && marker_get(m, e, "tuned", v, sizeof(v)))
        out->time_ms = strtod(v, NULL);
    if (marker_get(m, e, "energy", v, sizeof(v)))
        out->energy_mj = strtod(v, NULL);
    if (marker_get(m, e, "class", v, sizeof(v)))
        snprintf(out->cls, sizeof(out->cls), "%.23s", v);
    if (marker_get(m, e, "tool", v, sizeof(v)))
        snprintf(out->tool, sizeof(out->tool), "%.47s", v);
    if (marker_get(m, e, "advice", v, sizeof(v)))
        out->advice = strdup(v);
    snprintf(out->message, sizeof(out->message), "scripted: %s",
             kopt_verdict_name(out->verdict));
    switch (out->verdict) {
    case KOPT_VERDICT_COMPILE_ERROR:
        out->log = strdup("kernel.cu(12): error: identifier \"undefined_symbol\" is undefined");
        break;
    case KOPT_VERDICT_WRONG:
        out->log = strdup("tensor y: 1048576 of 16777216 elements differ; first at [0, 3]: got "
                          "0.5 want 0.25; max abs error 0.25 (atol 1e-05, rtol 1e-05)");
        break;
    default:
        break;
    }
    if (marker_get(m, e, "logfile", v, sizeof(v))) {   /* a recorded log (a real compiler's) */
        char *text = NULL;
        if (kopt_file_read(ctx, v, &text, NULL) == KOPT_OK) {
            free(out->log);
            out->log = text;
        }
    }
    if (out->verdict != KOPT_VERDICT_OK && out->verdict != KOPT_VERDICT_SUSPECT)
        out->time_ms = 0;
    return KOPT_OK;
}

/* $KOPT_FAKE_EVAL_LOG: a file that gets "TAG HASH" for every evaluation, so a test can
 * see that nothing was evaluated twice. */
static void fake_log(const char *tag, const char *source)
{
    const char *path = getenv("KOPT_FAKE_EVAL_LOG");
    char hash[65];
    FILE *f;

    if (!path || !path[0] || !(f = fopen(path, "a")))
        return;
    kopt_sha256_hex(source, strlen(source), hash);
    fprintf(f, "%s %s\n", tag, hash);
    fclose(f);
}

/* $KOPT_FAKE_EVAL_DELAY_MS: each evaluation takes that long (tests of progress and
 * cancellation, where a real evaluation would). */
static void fake_delay(void)
{
    const char *d = getenv("KOPT_FAKE_EVAL_DELAY_MS");
    double ms = d ? strtod(d, NULL) : 0;
    struct timespec ts;

    if (ms <= 0)
        return;
    ts.tv_sec = (time_t)(ms / 1000);
    ts.tv_nsec = (long)((ms - (double)ts.tv_sec * 1000) * 1e6);
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* A front matter whose "params" give ranges or lists of values: a template, which the live
 * evaluator refuses as well (a single number is a fixed define). */
static int is_template(const char *source)
{
    const char *fm = strstr(source, "/*@kopt"), *end = fm ? strstr(fm, "*/") : NULL, *k;
    json_t *doc, *v;
    int t = 0;

    if (!end)
        return 0;
    fm += strlen("/*@kopt");
    doc = json_loadb(fm, (size_t)(end - fm), 0, NULL);
    json_object_foreach(json_object_get(doc, "params"), k, v)
        t |= json_is_array(v) || json_is_object(v);
    json_decref(doc);
    return t;
}

static kopt_status fake_evaluate(void *self, kopt_ctx *ctx, const char *source, const char *tag,
                                 kopt_search_outcome *out)
{
    fake_delay();
    fake_log(tag, source);
    if (is_template(source)) {
        memset(out, 0, sizeof(*out));
        out->verdict = KOPT_VERDICT_COMPILE_ERROR;
        snprintf(out->message, sizeof(out->message), "the candidate is a template, not a kernel");
        out->log = strdup(out->message);
        return KOPT_OK;
    }
    return fake_outcome(self, ctx, source, 0, out);
}

static kopt_status fake_tune(void *self, kopt_ctx *ctx, const char *source, const char *tag,
                             int budget, kopt_search_outcome *out)
{
    kopt_status rc = fake_outcome(self, ctx, source, 1, out);
    kopt_buf b = KOPT_BUF_INIT;

    (void)ctx;
    (void)budget;
    fake_log(tag, source);
    /* the "best instantiation": the template with a note of the point chosen */
    kopt_buf_printf(&b, "// kopt: tuned instantiation (scripted)\n%s", source);
    out->tuned_source = kopt_buf_detach(&b);
    return rc;
}

kopt_status kopt_search_evaluator_fake(kopt_search_evaluator *out, kopt_ctx *ctx, double ref_ms)
{
    fake *f = calloc(1, sizeof(*f));

    memset(out, 0, sizeof(*out));
    if (!f)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "evaluator");
    f->ref_ms = ref_ms > 0 ? ref_ms : 1.0;
    out->api_version = KOPT_SEARCH_API_VERSION;
    out->name = "fake";
    out->self = f;
    out->evaluate = fake_evaluate;
    out->tune = fake_tune;
    out->close = free;
    return KOPT_OK;
}

/* ---- replay --------------------------------------------------------------------------------- */

typedef struct replay {
    kopt_search_node *nodes;
    int n;
} replay;

static void replay_close(void *self)
{
    replay *r = self;

    for (int i = 0; i < r->n; i++)
        kopt__search_node_clear(&r->nodes[i]);
    free(r->nodes);
    free(r);
}

static kopt_status replay_lookup(replay *r, const char *source, const char *tag,
                                 kopt_search_outcome *out)
{
    char hash[65];

    memset(out, 0, sizeof(*out));
    kopt_sha256_hex(source, strlen(source), hash);
    for (int i = 0; i < r->n; i++) {
        const kopt_search_node *n = &r->nodes[i];
        if (n->state != KOPT_SEARCH_DONE || n->failure[0] || strcmp(n->hash, hash) != 0)
            continue;
        out->verdict = n->verdict;
        out->time_ms = n->time_ms;
        out->energy_mj = n->energy_mj;
        snprintf(out->message, sizeof(out->message), "%s", n->message);
        snprintf(out->cls, sizeof(out->cls), "%s", n->cls);
        snprintf(out->profile_note, sizeof(out->profile_note), "%s", n->profile_note);
        snprintf(out->tool, sizeof(out->tool), "%s", n->tool);
        out->log = n->log ? strdup(n->log) : NULL;
        out->advice = n->findings ? strdup(n->findings) : NULL;
        out->facts = n->facts ? strdup(n->facts) : NULL;
        out->eval_id = n->eval_id;
        out->where = n->where;   /* the GPU that measured the recorded outcome */
        if (n->tuned_from)
            out->tuned_source = strdup(n->source);
        return KOPT_OK;
    }
    out->verdict = KOPT_VERDICT_ERROR;
    snprintf(out->message, sizeof(out->message), "replay: %s: this source was not evaluated in "
             "the recorded tree", tag);
    return KOPT_OK;
}

static kopt_status replay_evaluate(void *self, kopt_ctx *ctx, const char *source,
                                   const char *tag, kopt_search_outcome *out)
{
    (void)ctx;
    return replay_lookup(self, source, tag, out);
}

static kopt_status replay_tune(void *self, kopt_ctx *ctx, const char *source, const char *tag,
                               int budget, kopt_search_outcome *out)
{
    (void)ctx;
    (void)budget;
    return replay_lookup(self, source, tag, out);
}

kopt_status kopt_search_evaluator_replay(kopt_search_evaluator *out, kopt_ctx *ctx,
                                         kopt_store *store, int64_t tree_id)
{
    replay *r = calloc(1, sizeof(*r));
    char **rows = NULL;
    int n = 0;
    kopt_status rc;

    memset(out, 0, sizeof(*out));
    if (!r)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "evaluator");
    if ((rc = kopt_store_opt_nodes(store, ctx, tree_id, &rows, &n)) != KOPT_OK)
        goto fail;
    if (n == 0) {
        rc = kopt_seterr(ctx, KOPT_E_NOT_FOUND, "run %lld has no search tree to replay",
                         (long long)tree_id);
        goto fail;
    }
    if (!(r->nodes = calloc((size_t)n, sizeof(*r->nodes)))) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "evaluator");
        goto fail;
    }
    for (int i = 0; i < n; i++) {
        json_t *j = json_loads(rows[i], 0, NULL);
        if (j)
            kopt__search_node_from_json(&r->nodes[r->n++], j);
        json_decref(j);
    }
    out->api_version = KOPT_SEARCH_API_VERSION;
    out->name = "replay";
    out->self = r;
    out->evaluate = replay_evaluate;
    out->tune = replay_tune;
    out->close = replay_close;
    r = NULL;
fail:
    for (int i = 0; i < n; i++)
        free(rows[i]);
    free(rows);
    if (r)
        replay_close(r);
    return rc;
}
