/* `kopt serve`'s evaluation sessions (`kopt eval --server --session[=NAME]`): a small table
 * of open evaluation sessions (kopt_run_session, as kopt tune and kopt optimize use
 * in-process), so that a search driven from outside (manual mode, MCP) pays for the
 * reference's run once: its outputs, time and torch.compile baseline at the session's seed
 * serve every later candidate. A session is found by its name and by its plan: everything
 * the reference's run depends on (the problem file's hash and path, every evaluation
 * option, the store, the KOPT_* settings); a request with the same name and another plan
 * opens a session of its own. The table is bounded (the least recently used session is
 * closed when a new one needs its place) and sessions idle too long are closed; closing
 * one ends its workers and frees its reference outputs. One thread (the server's). */
#include "cli.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

typedef struct serve_session {
    char *name;
    char *key;                  /* the plan (cli_serve_session_key) */
    kopt_problem *prob;         /* owned: the session borrows it */
    kopt_vars sizes;            /* the options' borrowed pieces, owned here */
    char *arch, *cache_dir;
    kopt_run_session *rs;
    int evaluations;
    double opened, last_used;   /* monotonic seconds */
} serve_session;

struct cli_serve_sessions {
    int max;
    double idle_s;
    int n;
    serve_session *s[CLI_SERVE_MAX_SESSIONS];
    char note[512];             /* what the last request did with the table */
};

cli_serve_sessions *cli_eval_sessions;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void note(cli_serve_sessions *t, const char *fmt, ...) KOPT_PRINTF(2, 3);
static void note(cli_serve_sessions *t, const char *fmt, ...)
{
    size_t len = strlen(t->note);
    va_list ap;

    va_start(ap, fmt);
    if (len < sizeof(t->note) - 1)
        vsnprintf(t->note + len, sizeof(t->note) - len, fmt, ap);
    va_end(ap);
}

cli_serve_sessions *cli_serve_sessions_new(int max, double idle_s)
{
    cli_serve_sessions *t = calloc(1, sizeof(*t));

    if (t) {
        t->max = max < 1 ? 1 : max > CLI_SERVE_MAX_SESSIONS ? CLI_SERVE_MAX_SESSIONS : max;
        t->idle_s = idle_s;
    }
    return t;
}

static void session_free(serve_session *e)
{
    if (!e)
        return;
    kopt_run_session_close(e->rs);   /* its workers end, its reference outputs go */
    kopt_problem_free(e->prob);
    kopt_vars_free(&e->sizes);
    free(e->arch);
    free(e->cache_dir);
    free(e->name);
    free(e->key);
    free(e);
}

static void drop(cli_serve_sessions *t, int i)
{
    session_free(t->s[i]);
    memmove(&t->s[i], &t->s[i + 1], (size_t)(t->n - i - 1) * sizeof(t->s[0]));
    t->n--;
}

int cli_serve_sessions_expire(cli_serve_sessions *t, FILE *log)
{
    double now = now_s();
    int closed = 0;

    for (int i = 0; t && i < t->n;) {
        if (t->idle_s > 0 && now - t->s[i]->last_used >= t->idle_s) {
            if (log)
                fprintf(log, "kopt serve: session %s closed after %.0f s idle (%d evaluation%s)\n",
                        t->s[i]->name, now - t->s[i]->last_used, t->s[i]->evaluations,
                        t->s[i]->evaluations == 1 ? "" : "s");
            drop(t, i);
            closed++;
        } else {
            i++;
        }
    }
    return closed;
}

void cli_serve_sessions_free(cli_serve_sessions *t)
{
    while (t && t->n)
        drop(t, t->n - 1);
    free(t);
}

int cli_serve_sessions_count(const cli_serve_sessions *t)
{
    return t ? t->n : 0;
}

const char *cli_serve_sessions_note(cli_serve_sessions *t)
{
    return t ? t->note : "";
}

void cli_serve_sessions_note_clear(cli_serve_sessions *t)
{
    if (t)
        t->note[0] = '\0';
}

/* ---- the plan --------------------------------------------------------------------------- */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Append "name=value" items sorted (sizes and settings in any order are the same plan). */
static void put_sorted(kopt_buf *k, const char *label, char **items, int n)
{
    qsort(items, (size_t)n, sizeof(*items), cmp_str);
    kopt_buf_printf(k, "%s:", label);
    for (int i = 0; i < n; i++)
        kopt_buf_printf(k, "%s%s", i ? "," : "", items[i]);
    kopt_buf_printf(k, "\n");
}

char *cli_serve_session_key(const kopt_problem *prob, const kopt_eval_opts *o,
                            const char *db_path)
{
    kopt_buf k = KOPT_BUF_INIT;
    char real[PATH_MAX], cwd[PATH_MAX], **items;
    int n = 0, cap = 0;

    /* the problem: its content (problem.json and the reference) and where it is */
    kopt_buf_printf(&k, "problem:%s %s\n", prob->hash,
                    realpath(prob->path, real) ? real : prob->path);
    /* every evaluation option (those the reference's run does not read too: a session
     * reopened needlessly costs one reference run, a wrong one reused costs a verdict) */
    kopt_buf_printf(&k, "opts:trials=%d seed=%llu check=%d time=%d timeout=%.17g warmup=%.17g "
                    "budget=%.17g reps=%d:%d flush=%d device=%d arch=%s cache=%s margin=%.17g "
                    "sandbox=%d:%.17g:%.17g:%.17g sanitize=%u energy=%.17g ref_time=%d "
                    "precision=%.17g prestart=%d compile=%d\n",
                    o->trials, (unsigned long long)o->seed, !o->skip_check_sizes, !o->no_timing,
                    o->timeout_s, o->warmup_ms, o->budget_ms, o->min_reps, o->max_reps,
                    !o->no_flush, o->device, o->arch ? o->arch : "-",
                    o->cache_dir ? o->cache_dir : "-", o->suspect_margin, !o->no_sandbox,
                    o->sandbox_cpu_s, o->sandbox_fsize_mb, o->sandbox_as_extra_mb, o->sanitize,
                    o->energy_s, !o->no_ref_timing, o->precision, !o->no_prestart,
                    o->torch_compile);
    /* the sizes given, sorted */
    cap = (o->sizes ? o->sizes->n : 0) + 1;
    items = calloc((size_t)cap, sizeof(*items));
    for (int i = 0; items && o->sizes && i < o->sizes->n; i++) {
        kopt_buf b = KOPT_BUF_INIT;
        kopt_buf_printf(&b, "%s=%lld", o->sizes->names[i], (long long)o->sizes->values[i]);
        items[n++] = b.ptr ? kopt_buf_detach(&b) : strdup("");
    }
    if (items)
        put_sorted(&k, "sizes", items, n);
    for (int i = 0; i < n; i++)
        free(items[i]);
    free(items);
    /* the store (its torch.compile baselines; the file host-mode candidates may not touch) */
    if (!db_path)
        kopt_buf_printf(&k, "store:-\n");
    else if (db_path[0] == '/')
        kopt_buf_printf(&k, "store:%s\n", db_path);
    else
        kopt_buf_printf(&k, "store:%s/%s\n", getcwd(cwd, sizeof(cwd)) ? cwd : ".", db_path);
    /* the settings an evaluation reads from the environment (what a client sends) */
    n = 0;
    for (char **e = environ; *e; e++)
        n++;
    items = calloc((size_t)n + 1, sizeof(*items));
    n = 0;
    for (char **e = environ; items && *e; e++)
        if ((strncmp(*e, "KOPT_", 5) == 0 && strncmp(*e, "KOPT_SERVER=", 12) != 0) ||
            strncmp(*e, "CUTLASS_PATH=", 13) == 0)
            items[n++] = *e;
    if (items)
        put_sorted(&k, "env", items, n);
    free(items);
    return kopt_buf_detach(&k);
}

/* ---- sessions --------------------------------------------------------------------------- */

serve_session *cli_serve_session_find(cli_serve_sessions *t, const char *name, const char *key)
{
    double now = now_s();

    for (int i = 0; t && key && i < t->n; i++) {
        serve_session *e = t->s[i];
        if (strcmp(e->name, name) != 0 || strcmp(e->key, key) != 0)
            continue;
        if (t->idle_s > 0 && now - e->last_used >= t->idle_s) {   /* the sweep had not run */
            note(t, "; session %s closed after %.0f s idle", e->name, now - e->last_used);
            drop(t, i);
            return NULL;
        }
        e->last_used = now;
        return e;
    }
    return NULL;
}

kopt_status cli_serve_session_open(cli_serve_sessions *t, kopt_ctx *ctx, kopt_run *run,
                                   const char *name, char **key, kopt_problem **prob,
                                   const kopt_eval_opts *opts, serve_session **out)
{
    serve_session *e;
    kopt_eval_opts o = *opts;
    int same_name = 0;
    kopt_status rc;

    *out = NULL;
    for (int i = 0; i < t->n; i++)
        same_name += strcmp(t->s[i]->name, name) == 0;
    if (t->n >= t->max) {                 /* the least recently used makes room */
        int lru = 0;
        for (int i = 1; i < t->n; i++)
            if (t->s[i]->last_used < t->s[lru]->last_used)
                lru = i;
        note(t, "; session %s closed (the least recently used of --sessions %d, after %d "
                "evaluation%s)", t->s[lru]->name, t->max, t->s[lru]->evaluations,
             t->s[lru]->evaluations == 1 ? "" : "s");
        drop(t, lru);
    }
    if (!(e = calloc(1, sizeof(*e))) || !(e->name = strdup(name)))
        return free(e), kopt_seterr(ctx, KOPT_E_NOMEM, "session");
    e->key = *key;
    *key = NULL;
    e->prob = *prob;
    *prob = NULL;
    if (opts->sizes && kopt_vars_copy(&e->sizes, opts->sizes) != KOPT_OK) {
        session_free(e);
        return kopt_seterr(ctx, KOPT_E_NOMEM, "session");
    }
    o.sizes = opts->sizes ? &e->sizes : NULL;
    o.arch = opts->arch ? (e->arch = strdup(opts->arch)) : NULL;
    o.cache_dir = opts->cache_dir ? (e->cache_dir = strdup(opts->cache_dir)) : NULL;
    o.pool = NULL;                        /* a session keeps workers of its own */
    o.ceilings = NULL;                    /* the run's, when it knows them */
    o.torch_baselines = NULL;             /* the store's, read at the open */
    o.ntorch_baselines = 0;
    if ((rc = kopt_run_session_open(&e->rs, run, ctx, e->prob, &o, 1)) != KOPT_OK) {
        session_free(e);
        return rc;
    }
    kopt_run_session_attach(e->rs, ctx, NULL);   /* attached for each request's evaluation */
    e->opened = e->last_used = now_s();
    t->s[t->n++] = e;
    note(t, "; session %s opened%s", name,
         same_name ? " (its name was in use with another plan: that session stays)" : "");
    *out = e;
    return KOPT_OK;
}

kopt_status cli_serve_session_eval(cli_serve_sessions *t, serve_session *e, kopt_ctx *ctx,
                                   kopt_run *run, const kopt_candidate *cand,
                                   kopt_eval_result **out)
{
    kopt_status rc;

    kopt_run_session_attach(e->rs, ctx, run);
    rc = kopt_run_session_eval(e->rs, ctx, cand, NULL, out);
    kopt_run_session_attach(e->rs, ctx, NULL);
    e->last_used = now_s();
    if (rc != KOPT_OK) {                  /* kopt failed mid-way: trust nothing it kept */
        for (int i = 0; i < t->n; i++)
            if (t->s[i] == e) {
                note(t, "; session %s closed (the evaluation failed)", e->name);
                drop(t, i);
                break;
            }
        return rc;
    }
    e->evaluations++;
    note(t, "; session %s: evaluation %d, reference %s", e->name, e->evaluations,
         (*out)->ref_reused ? "reused" : "run");
    return KOPT_OK;
}

const kopt_problem *cli_serve_session_problem(const serve_session *e)
{
    return e->prob;
}

const char *cli_serve_session_name(const serve_session *e)
{
    return e->name;
}

int cli_serve_session_evaluations(const serve_session *e)
{
    return e->evaluations;
}
