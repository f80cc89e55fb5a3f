/* kopt tune PROBLEM TEMPLATE.cu | --replay RUN_ID|CACHE.json: search a template's params
 * with one of the strategies, live on the GPU or against recorded measurements, one size set
 * (shape) after another; every outcome is cached in the store so an interrupted run resumes
 * without re-evaluating anything. docs/tuning.md is the guide. */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_SHAPES 32
#define SPACE_SCAN_LIMIT 1000000   /* points scanned when counting valid points */
#define SPACE_REASONS 5            /* pruning reasons shown */
#define RECORD_SCAN_LIMIT 4000000  /* --record adds device-pruned points up to this size */

static void help(FILE *f)
{
    fprintf(f,
        "usage: kopt tune PROBLEM TEMPLATE.cu [options]\n"
        "       kopt tune --replay RUN_ID|CACHE.json [PROBLEM [TEMPLATE.cu]] [options]\n"
        "       kopt tune PROBLEM TEMPLATE.cu --space\n"
        "       kopt tune --list-strategies\n"
        "\n"
        "Search the params of a template candidate (front matter \"params\" with lists, ranges\n"
        "or powers of two, and \"constraints\") for the fastest correct configuration: each\n"
        "point is compiled (ahead, on CPU threads), verified and timed as by kopt eval. Every\n"
        "outcome is stored (--db) as soon as it is known and reused by later runs with the same\n"
        "problem, sizes, template source and device; --resume continues an interrupted run\n"
        "with its strategy, seed and options. --replay runs a strategy on recorded measurements\n"
        "without a GPU. Without a GPU (and without --replay) the space is printed and the run\n"
        "is skipped (exit 0). Guide: docs/tuning.md.\n"
        "\n"
        "search:\n"
        "  --strategy NAME       default annealing (--list-strategies)\n"
        "  --options k=v,...     strategy hyper-parameters\n"
        "  --budget N            evaluations (new + cached; default 200, 0: unbounded)\n"
        "  --time SECONDS        wall-time budget per shape (default: none)\n"
        "  --seed N              strategy seed (default 1)\n"
        "  --objective O         time (default), energy, or time-energy (time first, then\n"
        "                        the least energy within --energy-slack of the best time)\n"
        "  --energy-window S     seconds of back-to-back runs per energy reading (default 1)\n"
        "  --energy-slack F      time-energy: fraction of the best time (default 0.05)\n"
        "  --compile-threads N   CPU threads compiling ahead (default 2; 0: no pipeline)\n"
        "  --lookahead N         points asked ahead for compiling (default 8)\n"
        "shapes:\n"
        "  --sizes K=V,K=V       one size set to tune for (repeatable: each is tuned in turn)\n"
        "  --size K=V            override a size in every set (repeatable)\n"
        "cache and store:\n"
        "  --db PATH             store (default ./kopt.db or $KOPT_DB; with --replay: none\n"
        "                        unless given); --no-store to skip\n"
        "  --resume              continue the unfinished run of this key (its strategy, seed,\n"
        "                        options and budget, unless given again)\n"
        "  --fresh               ignore stored outcomes (everything is evaluated again)\n"
        "  --replay RUN|FILE     outcomes from a kopt cache file or a stored run (no GPU)\n"
        "  --template FILE       with --replay: the template (default: the path in the cache,\n"
        "                        relative to the cache file's folders or the working folder)\n"
        "  --problem DIR         with --replay: the problem (default: the template's folder)\n"
        "output:\n"
        "  --space               print the search space and exit (no GPU needed)\n"
        "  --out FILE.cu         write the winner with its params fixed (several shapes:\n"
        "                        FILE-1.cu, FILE-2.cu, ... in --sizes order)\n"
        "  --record FILE.json    write the run's complete cache (kopt's format; several\n"
        "                        shapes: FILE-1.json, ...)\n"
        "  --export-kt FILE      the cache in Kernel Tuner's cache format\n"
        "  --export-t4 FILE      the results in T4 format\n"
        "  --json                print the result as JSON\n"
        "  --no-progress         no progress display on stderr\n"
        "  -v, --verbose         log progress to stderr\n"
        "evaluation (as kopt eval):\n"
        "  --trials N (default 1), --budget-ms MS (default 30), --reps MIN:MAX (default 5:1000),\n"
        "  --no-flush, --no-check-sizes,\n"
        "  --timeout S, --device N, --arch sm_XX, --cache-dir DIR, --allow-spills\n"
        "  --findings            static micro-tool findings for every point (stored and\n"
        "                        recorded, for profile_guided replays; costs nvdisasm time)\n"
        "  --one-shot            evaluate each point as kopt eval does (fresh inputs, new\n"
        "                        workers); default: one session (one seed, the reference run\n"
        "                        once, one long-lived worker; the winner's final check is\n"
        "                        on fresh inputs either way)\n"
        "\n"
        "exit codes: 0 done (or skipped: no GPU), 2 usage, 9 invalid input file (problem,\n"
        "template, cache), 10 kopt error, 130 interrupted (the best so far is printed).\n");
}

/* ---- options ------------------------------------------------------------------------------ */

typedef struct tune_args {
    const char *strategy, *options;
    int budget;
    double seconds;
    uint64_t seed;
    int seed_set, strategy_set, options_set, budget_set, objective_set, runs;
    kopt_tune_objective objective;
    double energy_s, energy_slack;
    int compile_threads, lookahead;
    int nshapes;
    kopt_vars shapes[MAX_SHAPES];   /* --sizes sets */
    kopt_vars overrides;            /* --size */
    const char *out, *record, *export_kt, *export_t4;
    const char *replay, *template_path, *problem_path;
    const char *db_path;
    int db_given, no_store, resume, fresh, space_only, list, json, progress, allow_spills;
    int one_shot, findings;
    kopt_eval_opts eo;
    int argc;
    char **argv;
} tune_args;

static int parse_objective(const char *s, kopt_tune_objective *o)
{
    if (strcmp(s, "time") == 0)
        *o = KOPT_TUNE_TIME;
    else if (strcmp(s, "energy") == 0)
        *o = KOPT_TUNE_ENERGY;
    else if (strcmp(s, "time-energy") == 0 || strcmp(s, "time_energy") == 0)
        *o = KOPT_TUNE_TIME_ENERGY;
    else
        return -1;
    return 0;
}

static const char *objective_name(kopt_tune_objective o)
{
    return o == KOPT_TUNE_ENERGY ? "energy" : o == KOPT_TUNE_TIME_ENERGY ? "time-energy" : "time";
}

/* "K=V,K=V" into a fresh set; -1 with a message naming the bad piece. */
static int parse_sizes_set(kopt_ctx *ctx, const char *arg, kopt_vars *out)
{
    char *copy = strdup(arg), *save = NULL;
    int rc = 0, n = 0;

    if (!copy)
        return -1;
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save), n++)
        if (cli_parse_size(ctx, "tune", t, out) != 0) {
            fprintf(stderr, "kopt tune: in --sizes '%s'\n", arg);
            rc = -1;
            break;
        }
    if (!rc && !n) {
        fprintf(stderr, "kopt tune: --sizes '%s' names no size (K=V,K=V)\n", arg);
        rc = -1;
    }
    free(copy);
    return rc;
}

/* The command that resumes this run: the original arguments plus --resume. */
static void resume_command(const tune_args *a, char *buf, size_t n)
{
    size_t at = (size_t)snprintf(buf, n, "kopt tune");
    int has_resume = 0;

    for (int i = 1; i < a->argc && at < n; i++) {
        const char *s = a->argv[i];
        int plain = strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                              "0123456789_-=,./:+") == strlen(s);
        has_resume |= strcmp(s, "--resume") == 0;
        if (strcmp(s, "--fresh") == 0)
            continue;
        at += (size_t)snprintf(buf + at, n - at, plain ? " %s" : " '%s'", s);
    }
    if (!has_resume && at < n)
        snprintf(buf + at, n - at, " --resume");
}

/* ---- Ctrl-C --------------------------------------------------------------------------------- */

static volatile sig_atomic_t g_stop;

static void on_sigint(int sig)
{
    static const char msg[] = "\nkopt tune: stopping after the current evaluation "
                              "(Ctrl-C again to quit now; everything evaluated is stored)\n";
    (void)sig;
    if (g_stop)
        _exit(130);
    g_stop = 1;
    if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0)
        g_stop = 1;
}

/* ---- progress ------------------------------------------------------------------------------- */

typedef struct progress_state {
    const kopt_tune_space *space;
    kopt_tune_objective objective;
    int tty, enabled, shape, nshapes;
    double max_seconds;
    int last_tenth;            /* non-terminal: the last 10% step printed */
    size_t last_count;
    int drew;                  /* terminal: a line is on screen */
} progress_state;

static void progress_line(const progress_state *ps, const kopt_tune_progress *p, char *buf,
                          size_t n)
{
    size_t done = p->evaluated + p->cached, at;
    char *label = NULL;

    if (p->budget)
        at = (size_t)snprintf(buf, n, "%zu/%zu evals", done, p->budget);
    else
        at = (size_t)snprintf(buf, n, "%zu evals", done);
    if (ps->nshapes > 1)
        at += (size_t)snprintf(buf + at, at < n ? n - at : 0, " (shape %d/%d)", ps->shape + 1,
                               ps->nshapes);
    at += (size_t)snprintf(buf + at, at < n ? n - at : 0, ", %zu cached, %zu failed, %.1f s",
                           p->cached, p->failed, p->elapsed_s);
    if (p->has_best) {
        label = kopt_tune_space_label(ps->space, p->best_point);
        snprintf(buf + at, at < n ? n - at : 0, "; best %.4g %s %s",
                 p->best_objective, ps->objective == KOPT_TUNE_ENERGY ? "mJ" : "ms",
                 label ? label : "?");
        free(label);
    }
}

static void on_progress(void *user, const kopt_tune_progress *p)
{
    progress_state *ps = user;
    char line[512];
    size_t done = p->evaluated + p->cached;
    int tenth = -1;

    if (!ps->enabled)
        return;
    if (ps->tty) {
        int width = 24, fill;
        double frac = p->budget ? (double)done / (double)p->budget
                    : ps->max_seconds > 0 ? p->elapsed_s / ps->max_seconds : 0;
        char bar[32];
        if (frac > 1)
            frac = 1;
        fill = (int)(frac * width + 0.5);
        for (int i = 0; i < width; i++)
            bar[i] = i < fill ? '#' : '.';
        bar[width] = '\0';
        progress_line(ps, p, line, sizeof(line));
        fprintf(stderr, "\r\033[K[%s] %.*s", bar, 150, line);
        fflush(stderr);
        ps->drew = 1;
        return;
    }
    /* a log, not a terminal: one line per 10% of the budget (or every 50 evaluations) */
    if (p->budget)
        tenth = (int)(10 * done / p->budget);
    else if (ps->max_seconds > 0)
        tenth = (int)(10 * p->elapsed_s / ps->max_seconds);
    if (tenth >= 0 ? tenth <= ps->last_tenth : done < ps->last_count + 50)
        return;
    ps->last_tenth = tenth;
    ps->last_count = done;
    progress_line(ps, p, line, sizeof(line));
    fprintf(stderr, "kopt tune: %s\n", line);
}

static void progress_end(progress_state *ps)
{
    if (ps->drew)
        fprintf(stderr, "\n");
    ps->drew = 0;
}

/* ---- the evaluator wrapper: which points were really evaluated, and a test-only delay ---- */

typedef struct eval_wrap {
    const kopt_tune_evaluator *inner;
    double delay_ms;             /* KOPT_TUNE_REPLAY_DELAY_MS, replay only (tests) */
    const uint64_t *known;       /* sorted points known before the run (loaded) */
    size_t nknown;
    uint64_t *evaluated;         /* points evaluated this run, in order */
    size_t n, cap;
    size_t reevaluated;          /* of which were already known: must stay 0 */
} eval_wrap;

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static kopt_status wrap_prepare(void *user, kopt_ctx *ctx, uint64_t point)
{
    eval_wrap *w = user;
    return w->inner->prepare(w->inner->user, ctx, point);
}

static kopt_status wrap_evaluate(void *user, kopt_ctx *ctx, uint64_t point, int want_findings,
                                 kopt_tune_outcome *out)
{
    eval_wrap *w = user;

    if (w->delay_ms > 0) {
        struct timespec ts = {(time_t)(w->delay_ms / 1000),
                              (long)(fmod(w->delay_ms, 1000.0) * 1e6)};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR && !g_stop)
            ;
    }
    if (w->n == w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 256;
        uint64_t *p = realloc(w->evaluated, cap * sizeof(*p));
        if (!p)
            return kopt_seterr(ctx, KOPT_E_NOMEM, "evaluated points");
        w->evaluated = p;
        w->cap = cap;
    }
    w->evaluated[w->n++] = point;
    if (w->nknown && bsearch(&point, w->known, w->nknown, sizeof(uint64_t), cmp_u64))
        w->reevaluated++;
    return w->inner->evaluate(w->inner->user, ctx, point, want_findings, out);
}

/* ---- store glue (src/store/tune.c) ------------------------------------------------------- */

typedef struct tune_env tune_env;
typedef struct shape_run shape_run;

/* "42": a stored run's id (anything else is a cache file). */
static int replay_is_run_id(const char *s)
{
    if (!s || !*s)
        return 0;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return 0;
    return 1;
}

static kopt_status store_load(tune_env *e, shape_run *sr);
static kopt_status store_resume(tune_env *e, shape_run *sr);
static kopt_status store_begin(tune_env *e, shape_run *sr);
static kopt_status store_finish(tune_env *e, shape_run *sr);
static void final_check(tune_env *e, shape_run *sr);
static kopt_status store_replay_run(tune_env *e, char **template_path);
static kopt_status store_replay_cache(tune_env *e, shape_run *sr, kopt_tune_cache **out);
static json_t *key_json(const kopt_tune_key *k);

/* ---- the space -------------------------------------------------------------------------- */

typedef struct reason_count {
    char text[160];
    uint64_t n;
} reason_count;

typedef struct space_summary {
    uint64_t valid, scanned;
    int exact;
    int nreasons;
    reason_count reasons[64];
    uint64_t other_reasons;   /* invalid points whose reason did not fit the table */
} space_summary;

/* Count valid points (scanning at most SPACE_SCAN_LIMIT) and tally why the others fail. */
static void summarize_space(const kopt_tune_space *s, space_summary *sum)
{
    uint64_t limit = s->npoints < SPACE_SCAN_LIMIT ? s->npoints : SPACE_SCAN_LIMIT;

    memset(sum, 0, sizeof(*sum));
    for (uint64_t p = 0; p < limit; p++) {
        char why[160];
        int k;
        why[0] = '\0';
        if (kopt_tune_space_valid(s, p, why, sizeof(why))) {
            sum->valid++;
            continue;
        }
        for (k = 0; k < sum->nreasons; k++)
            if (strcmp(sum->reasons[k].text, why) == 0)
                break;
        if (k == sum->nreasons) {
            if (k == (int)(sizeof(sum->reasons) / sizeof(sum->reasons[0]))) {
                sum->other_reasons++;
                continue;
            }
            snprintf(sum->reasons[k].text, sizeof(sum->reasons[k].text), "%s", why);
            sum->nreasons++;
        }
        sum->reasons[k].n++;
    }
    sum->scanned = limit;
    sum->exact = limit == s->npoints;
    for (int i = 1; i < sum->nreasons; i++)   /* most frequent first (insertion sort) */
        for (int j = i; j > 0 && sum->reasons[j].n > sum->reasons[j - 1].n; j--) {
            reason_count t = sum->reasons[j];
            sum->reasons[j] = sum->reasons[j - 1];
            sum->reasons[j - 1] = t;
        }
}

static void print_space(const kopt_tune_space *s, const space_summary *sum, const char *limits)
{
    printf("space      %d params, %llu points; %s%llu valid%s\n", s->nparams,
           (unsigned long long)s->npoints, sum->exact ? "" : "at least ",
           (unsigned long long)sum->valid,
           sum->exact ? "" : " (counted among the first points only)");
    if (!sum->exact)
        printf("           (scanned %llu of %llu points)\n", (unsigned long long)sum->scanned,
               (unsigned long long)s->npoints);
    for (int i = 0; i < s->nparams; i++) {
        const kopt_param_spec *p = &s->params[i];
        printf("  param    %-12s", p->name);
        for (int v = 0; v < p->nvalues; v++)
            printf("%s%lld", v ? "," : " ", (long long)p->values[v]);
        printf("  (%d value%s%s%s)\n", p->nvalues, p->nvalues == 1 ? "" : "s",
               p->role[0] ? ", role " : "", p->role);
    }
    for (int i = 0; i < s->nconstraints; i++)
        printf("  require  %s\n", s->constraints[i]);
    printf("limits     %s\n", limits);
    for (int i = 0; i < sum->nreasons && i < SPACE_REASONS; i++)
        printf("  pruned   %llu: %s\n", (unsigned long long)sum->reasons[i].n,
               sum->reasons[i].text);
    if (sum->nreasons > SPACE_REASONS || sum->other_reasons)
        printf("  pruned   ... and %d more reason(s)\n",
               sum->nreasons - SPACE_REASONS > 0 ? sum->nreasons - SPACE_REASONS : 1);
}

static json_t *space_json(const kopt_tune_space *s, const space_summary *sum, const char *limits)
{
    json_t *o = json_object(), *params = json_array(), *reasons = json_array(), *cons;

    for (int i = 0; i < s->nparams; i++) {
        json_t *vals = json_array();
        for (int v = 0; v < s->params[i].nvalues; v++)
            json_array_append_new(vals, json_integer(s->params[i].values[v]));
        json_array_append_new(params, json_pack("{s:s, s:o, s:s}", "name", s->params[i].name,
                                                "values", vals, "role", s->params[i].role));
    }
    cons = json_array();
    for (int i = 0; i < s->nconstraints; i++)
        json_array_append_new(cons, json_string(s->constraints[i]));
    for (int i = 0; i < sum->nreasons && i < SPACE_REASONS; i++)
        json_array_append_new(reasons, json_pack("{s:s, s:I}", "reason", sum->reasons[i].text,
                                                 "count", (json_int_t)sum->reasons[i].n));
    json_object_set_new(o, "params", params);
    json_object_set_new(o, "constraints", cons);
    json_object_set_new(o, "points", json_integer((json_int_t)s->npoints));
    json_object_set_new(o, "valid", json_integer((json_int_t)sum->valid));
    json_object_set_new(o, "valid_exact", json_boolean(sum->exact));
    json_object_set_new(o, "scanned", json_integer((json_int_t)sum->scanned));
    json_object_set_new(o, "limits", json_string(limits));
    json_object_set_new(o, "pruned", reasons);
    return o;
}

static void limits_text(const kopt_tune_limits *l, int known, char *buf, size_t n)
{
    if (!known)
        snprintf(buf, n, "none (no device: only the constraints prune)");
    else
        snprintf(buf, n, "%d threads/block, %d B smem/block, %d regs/SM, %d threads/SM",
                 l->max_threads_per_block, l->max_smem_per_block, l->regs_per_sm,
                 l->max_threads_per_sm);
}

/* ---- keys and sizes --------------------------------------------------------------------- */

static void sizes_text(const kopt_vars *v, char *buf, size_t n)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < v->n && at < n; i++)
        at += (size_t)snprintf(buf + at, n - at, "%s%s=%lld", i ? "," : "", v->names[i],
                               (long long)v->values[i]);
}

/* "B=4096,N=4096" (a key's sizes) into `out`. */
static kopt_status sizes_parse(kopt_ctx *ctx, const char *text, kopt_vars *out)
{
    char *copy = strdup(text), *save = NULL;
    kopt_status rc = KOPT_OK;

    if (!copy)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "sizes");
    for (char *t = strtok_r(copy, ",", &save); t && rc == KOPT_OK;
         t = strtok_r(NULL, ",", &save)) {
        char *name = NULL;
        int64_t v;
        if ((rc = kopt_vars_parse_assign(ctx, t, &name, &v)) == KOPT_OK)
            rc = kopt_vars_set(out, name, v);
        free(name);
    }
    free(copy);
    return rc;
}

static void make_key(kopt_tune_key *k, const kopt_problem *p, const kopt_candidate *tmpl,
                     const kopt_vars *sizes, const kopt_device_info *dev)
{
    memset(k, 0, sizeof(*k));
    snprintf(k->problem, sizeof(k->problem), "%s", p->name);
    snprintf(k->problem_hash, sizeof(k->problem_hash), "%s", p->hash);
    snprintf(k->template_hash, sizeof(k->template_hash), "%s", tmpl->hash);
    sizes_text(sizes, k->sizes, sizeof(k->sizes));
    if (dev) {
        snprintf(k->device, sizeof(k->device), "%s", dev->name);
        snprintf(k->device_uuid, sizeof(k->device_uuid), "%s", dev->uuid);
    }
}

/* "best.cu" + 2 -> "best-2.cu" (several shapes); one shape keeps the name. */
static void numbered_path(const char *path, int i, int nshapes, char *buf, size_t n)
{
    const char *slash = strrchr(path, '/'), *dot = strrchr(path, '.');
    if (nshapes <= 1) {
        snprintf(buf, n, "%s", path);
        return;
    }
    if (!dot || (slash && dot < slash) || dot == path || (slash && dot == slash + 1))
        snprintf(buf, n, "%s-%d", path, i + 1);
    else
        snprintf(buf, n, "%.*s-%d%s", (int)(dot - path), path, i + 1, dot);
}

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The template named in a cache: absolute, or relative to the cache file's folder or one of
 * its ancestors (a cache kept in tests/data/ names examples/...), or to the working folder. */
static int resolve_template(const char *cache_path, const char *tp, char *buf, size_t n)
{
    char dir[PATH_MAX];

    if (tp[0] == '/') {
        snprintf(buf, n, "%s", tp);
        return file_exists(buf) ? 0 : -1;
    }
    if (!realpath(cache_path, dir))
        snprintf(dir, sizeof(dir), "%s", cache_path);
    for (char *slash = strrchr(dir, '/'); slash; slash = strrchr(dir, '/')) {
        *slash = '\0';
        if ((size_t)snprintf(buf, n, "%s/%s", dir[0] ? dir : "", tp) >= n)
            continue;
        if (file_exists(buf))
            return 0;
    }
    snprintf(buf, n, "%s", tp);
    return file_exists(buf) ? 0 : -1;
}

/* ---- one shape -------------------------------------------------------------------------- */

struct shape_run {
    kopt_vars sizes;
    kopt_tune_key key;
    kopt_tune_space *space;
    kopt_tune_cache *cache;
    kopt_tune_result *res;
    size_t loaded;              /* outcomes known before the run (store) */
    size_t reevaluated;         /* of those, evaluated again (must be 0) */
    uint64_t *evaluated;        /* points evaluated this run */
    size_t nevaluated;
    int64_t run_id;             /* in the store, 0: none */
    int64_t resumed_from;       /* the unfinished run continued, 0: none */
    kopt_store_tune_sink sink;  /* the cache's persist hook */
    char strategy_buf[64], options_buf[256];
    char out_path[PATH_MAX], record_path[PATH_MAX], kt_path[PATH_MAX], t4_path[PATH_MAX];
    const char *strategy, *options;
    uint64_t seed;
    int budget;
    int resumed;                /* continued a stored unfinished run */
    kopt_eval_result *final;    /* live runs: the winner evaluated in full (kopt eval's
                                 * defaults: 3 trials, fresh inputs, the reference timed) */
};

struct tune_env {
    tune_args *a;
    kopt_ctx *ctx;
    kopt_problem *prob;
    kopt_candidate *tmpl;
    const char *tmpl_path;
    const char *tmpl_record;             /* the template's path as --record writes it */
    char tmpl_record_buf[PATH_MAX];      /* replay: the path the recording names */
    int has_device;
    kopt_device_info dev;
    kopt_tune_limits limits;
    kopt_ceilings ceilings;              /* live: from the store, or measured once */
    const kopt_tune_cache *recorded;     /* replay */
    kopt_tune_key recorded_key;
    kopt_store *store;
    int store_is_recording;              /* --replay RUN_ID: the store is only read */
    progress_state ps;
};

static void outcome_summary(const kopt_tune_outcome *o, char *buf, size_t n)
{
    if (o->state != KOPT_TUNE_OK)
        snprintf(buf, n, "%s%s%s", kopt_tune_state_name(o->state), o->message[0] ? ": " : "",
                 o->message);
    else if (o->energy_mj > 0)
        snprintf(buf, n, "%.4f ms, %.3f mJ, %.0f W", o->time_ms, o->energy_mj, o->power_w);
    else
        snprintf(buf, n, "%.4f ms", o->time_ms);
}

static kopt_status run_shape(tune_env *e, shape_run *sr, int index)
{
    tune_args *a = e->a;
    kopt_ctx *ctx = e->ctx;
    kopt_tune_evaluator *inner = NULL;
    kopt_tune_evaluator wrapped;
    kopt_tune_opts to = KOPT_TUNE_OPTS_INIT;
    eval_wrap w;
    uint64_t *known = NULL;
    kopt_status rc;
    const char *delay;

    memset(&w, 0, sizeof(w));
    sr->strategy = a->strategy;
    sr->options = a->options;
    sr->seed = a->seed;
    sr->budget = a->budget;
    if ((rc = kopt_tune_cache_create(&sr->cache, ctx, sr->space, &sr->key)) != KOPT_OK ||
        (rc = kopt_tune_cache_set_template(sr->cache, ctx, e->tmpl_record)) != KOPT_OK)
        return rc;
    if (e->store && !e->store_is_recording) {
        if (!a->fresh && (rc = store_load(e, sr)) != KOPT_OK)
            return rc;
        if (a->resume && (rc = store_resume(e, sr)) != KOPT_OK)
            return rc;
        if ((rc = store_begin(e, sr)) != KOPT_OK)
            return rc;
    }
    sr->loaded = kopt_tune_cache_count(sr->cache);

    if (e->recorded)
        rc = kopt_tune_evaluator_replay(&inner, ctx, sr->space, e->recorded);
    else {
        kopt_tune_live_opts lo = KOPT_TUNE_LIVE_OPTS_INIT;
        lo.eval = &a->eo;
        lo.objective = a->objective;
        lo.energy_s = a->energy_s;
        lo.allow_spills = a->allow_spills;
        lo.one_shot = a->one_shot;
        lo.findings = a->findings;
        a->eo.sizes = &sr->sizes;
        rc = kopt_tune_evaluator_live(&inner, ctx, e->prob, e->tmpl, sr->space, &lo);
    }
    if (rc != KOPT_OK)
        goto done;

    /* the points known before the run, sorted, so a re-evaluation would be seen */
    if (sr->loaded) {
        if (!(known = malloc(sr->loaded * sizeof(*known)))) {
            rc = kopt_seterr(ctx, KOPT_E_NOMEM, "known points");
            goto done;
        }
        for (size_t i = 0; i < sr->loaded; i++) {
            const kopt_tune_outcome *o;
            kopt_tune_cache_entry(sr->cache, i, &known[i], &o);
        }
        qsort(known, sr->loaded, sizeof(*known), cmp_u64);
    }
    w.inner = inner;
    w.known = known;
    w.nknown = sr->loaded;
    delay = getenv("KOPT_TUNE_REPLAY_DELAY_MS");
    if (e->recorded && delay)
        w.delay_ms = strtod(delay, NULL);
    wrapped.user = &w;
    wrapped.prepare = inner->prepare ? wrap_prepare : NULL;
    wrapped.evaluate = wrap_evaluate;
    wrapped.destroy = NULL;

    to.strategy = sr->strategy;
    to.strategy_options = sr->options;
    to.seed = sr->seed;
    to.max_evals = sr->budget;
    to.max_seconds = a->seconds;
    to.objective = a->objective;
    to.energy_slack = a->energy_slack;
    to.compile_threads = e->recorded ? 0 : a->compile_threads;
    to.lookahead = a->lookahead;
    to.progress = on_progress;
    to.progress_user = &e->ps;
    to.stop = &g_stop;
    e->ps.space = sr->space;
    e->ps.objective = a->objective;
    e->ps.shape = index;
    e->ps.max_seconds = a->seconds;
    e->ps.last_tenth = 0;
    e->ps.last_count = 0;
    rc = kopt_tune_run(&sr->res, ctx, sr->space, sr->cache, &wrapped, &to);
    progress_end(&e->ps);
    sr->evaluated = w.evaluated;
    sr->nevaluated = w.n;
    sr->reevaluated = w.reevaluated;
    w.evaluated = NULL;
    if (rc == KOPT_OK && e->store && !e->store_is_recording)
        rc = store_finish(e, sr);
    if (rc == KOPT_OK)
        final_check(e, sr);
done:
    free(w.evaluated);
    free(known);
    kopt_tune_evaluator_free(inner);
    return rc;
}

/* Live runs: evaluate the winner as `kopt eval` would (3 fresh trials at every size set,
 * the reference timed), so the reported time and speedup are not the tuning's quick ones. */
static void final_check(tune_env *e, shape_run *sr)
{
    kopt_eval_opts eo = KOPT_EVAL_OPTS_INIT;
    kopt_vars vals = KOPT_VARS_INIT;
    kopt_candidate *c = NULL;

    if (e->recorded || !sr->res || !sr->res->has_best || g_stop)
        return;
    eo.device = e->a->eo.device;
    eo.arch = e->a->eo.arch;
    eo.cache_dir = e->a->eo.cache_dir;
    eo.timeout_s = e->a->eo.timeout_s;
    eo.sizes = &sr->sizes;
    eo.no_flush = e->a->eo.no_flush;
    eo.ceilings = e->a->eo.ceilings;
    if (kopt_tune_space_values(sr->space, sr->res->best_point, &vals) != KOPT_OK ||
        kopt_candidate_instantiate(&c, e->ctx, e->tmpl, &vals) != KOPT_OK ||
        kopt_eval_run(&sr->final, e->ctx, e->prob, c, &eo) != KOPT_OK)
        kopt_log(e->ctx, KOPT_LOG_WARN, "final check of the winner failed: %s",
                 kopt_errmsg(e->ctx));
    kopt_candidate_free(c);
    kopt_vars_free(&vals);
}

/* --record: the run's cache, plus a "pruned" entry for every point that only this device's
 * limits prune (threads, shared memory, registers), so that the file replays completely on a
 * machine that knows nothing of the device (a replay checks the constraints alone). */
static kopt_status record_cache(tune_env *e, shape_run *sr)
{
    kopt_ctx *ctx = e->ctx;
    kopt_tune_space *plain = NULL;
    kopt_tune_cache *out = NULL;
    kopt_status rc;

    if (!e->has_device || sr->space->npoints > RECORD_SCAN_LIMIT)
        return kopt_tune_cache_write(sr->cache, ctx, sr->record_path);
    if ((rc = kopt_tune_space_create(&plain, ctx, e->tmpl, &sr->sizes, NULL)) != KOPT_OK ||
        (rc = kopt_tune_cache_create(&out, ctx, sr->space, &sr->key)) != KOPT_OK ||
        (rc = kopt_tune_cache_set_template(out, ctx, e->tmpl_record)) != KOPT_OK)
        goto done;
    for (size_t i = 0; i < kopt_tune_cache_count(sr->cache) && rc == KOPT_OK; i++) {
        uint64_t p;
        const kopt_tune_outcome *o;
        kopt_tune_cache_entry(sr->cache, i, &p, &o);
        rc = kopt_tune_cache_put(out, ctx, p, o);
    }
    for (uint64_t p = 0; p < sr->space->npoints && rc == KOPT_OK; p++) {
        kopt_tune_outcome o;
        if (kopt_tune_cache_get(out, p) || !kopt_tune_space_valid(plain, p, NULL, 0))
            continue;
        memset(&o, 0, sizeof(o));
        if (kopt_tune_space_valid(sr->space, p, o.message, sizeof(o.message)))
            continue;   /* valid here and not evaluated: the recording is not complete */
        o.state = KOPT_TUNE_PRUNED;
        rc = kopt_tune_cache_put(out, ctx, p, &o);
    }
    if (rc == KOPT_OK)
        rc = kopt_tune_cache_write(out, ctx, sr->record_path);
done:
    kopt_tune_cache_free(out);
    kopt_tune_space_free(plain);
    return rc;
}

/* Write --record, --export-kt, --export-t4 and --out for one shape. */
static kopt_status write_outputs(tune_env *e, shape_run *sr, int index)
{
    tune_args *a = e->a;
    kopt_ctx *ctx = e->ctx;
    kopt_status rc = KOPT_OK;

    if (a->record) {
        numbered_path(a->record, index, a->nshapes, sr->record_path, sizeof(sr->record_path));
        if ((rc = record_cache(e, sr)) != KOPT_OK)
            return rc;
    }
    if (a->export_kt) {
        numbered_path(a->export_kt, index, a->nshapes, sr->kt_path, sizeof(sr->kt_path));
        if ((rc = kopt_tune_cache_write_kt(sr->cache, ctx, sr->kt_path, e->prob->name)) != KOPT_OK)
            return rc;
    }
    if (a->export_t4) {
        numbered_path(a->export_t4, index, a->nshapes, sr->t4_path, sizeof(sr->t4_path));
        if ((rc = kopt_tune_cache_write_t4(sr->cache, ctx, sr->t4_path, a->objective)) != KOPT_OK)
            return rc;
    }
    if (a->out && sr->res && sr->res->has_best) {
        kopt_vars vals = KOPT_VARS_INIT;
        char note[1024], ob[320];
        numbered_path(a->out, index, a->nshapes, sr->out_path, sizeof(sr->out_path));
        outcome_summary(&sr->res->best, ob, sizeof(ob));
        snprintf(note, sizeof(note), "tuned by kopt %s on %s at %s: %s (%s, %zu evaluations%s)",
                 KOPT_VERSION, sr->key.device[0] ? sr->key.device : "an unknown device",
                 sr->key.sizes, ob, sr->strategy ? sr->strategy : "annealing",
                 sr->res->evaluated + sr->res->cached, e->recorded ? ", replayed" : "");
        rc = kopt_tune_space_values(sr->space, sr->res->best_point, &vals);
        if (rc == KOPT_OK)
            rc = kopt_candidate_write_fixed(ctx, e->tmpl, &vals, sr->out_path, note);
        kopt_vars_free(&vals);
    }
    return rc;
}

/* ---- results ------------------------------------------------------------------------------ */

static json_t *outcome_json(const kopt_tune_outcome *o)
{
    json_t *j = json_pack("{s:s, s:f, s:f, s:f, s:f, s:f, s:i, s:i, s:i, s:s, s:s}",
                          "state", kopt_tune_state_name(o->state), "time_ms", o->time_ms,
                          "energy_mj", o->energy_mj, "power_w", o->power_w,
                          "compile_ms", o->compile_ms, "eval_ms", o->eval_ms,
                          "registers", o->registers, "spill_bytes", o->spill_bytes,
                          "smem_bytes", o->smem_bytes, "verdict", o->verdict,
                          "message", o->message);
    return j ? j : json_object();
}

static json_t *params_json(const kopt_tune_space *s, uint64_t point)
{
    json_t *o = json_object();
    int idx[KOPT_TUNE_MAX_PARAMS];

    kopt_tune_space_decode(s, point, idx);
    for (int i = 0; i < s->nparams; i++)
        json_object_set_new(o, s->params[i].name, json_integer(s->params[i].values[idx[i]]));
    return o;
}

static json_t *point_json(const kopt_tune_space *s, uint64_t point, const kopt_tune_outcome *o)
{
    char *label = kopt_tune_space_label(s, point);
    json_t *j = json_pack("{s:I, s:s, s:o}", "point", (json_int_t)point, "label",
                          label ? label : "", "params", params_json(s, point));
    free(label);
    if (o)
        json_object_set_new(j, "outcome", outcome_json(o));
    return j;
}

static json_t *key_json(const kopt_tune_key *k)
{
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "problem", k->problem, "problem_hash",
                     k->problem_hash, "template_hash", k->template_hash, "sizes", k->sizes,
                     "device", k->device, "device_uuid", k->device_uuid);
}

static json_t *shape_json(const tune_env *e, const shape_run *sr)
{
    const kopt_tune_result *r = sr->res;
    json_t *o = json_object(), *conv = json_array(), *pareto = json_array(), *evals;

    json_object_set_new(o, "sizes", json_string(sr->key.sizes));
    json_object_set_new(o, "key", key_json(&sr->key));
    json_object_set_new(o, "strategy", json_string(sr->strategy ? sr->strategy : "annealing"));
    json_object_set_new(o, "options", sr->options ? json_string(sr->options) : json_null());
    json_object_set_new(o, "seed", json_integer((json_int_t)sr->seed));
    json_object_set_new(o, "budget", json_integer(sr->budget));
    json_object_set_new(o, "resumed", json_boolean(sr->resumed));
    json_object_set_new(o, "run_id", sr->run_id ? json_integer((json_int_t)sr->run_id)
                                                : json_null());
    json_object_set_new(o, "points", json_integer((json_int_t)sr->space->npoints));
    json_object_set_new(o, "stored_before", json_integer((json_int_t)sr->loaded));
    json_object_set_new(o, "reevaluated", json_integer((json_int_t)sr->reevaluated));
    if (!r) {
        json_object_set_new(o, "stop", json_null());
        return o;
    }
    json_object_set_new(o, "stop", json_string(kopt_tune_stop_name(r->stop)));
    json_object_set_new(o, "evaluated", json_integer((json_int_t)r->evaluated));
    json_object_set_new(o, "cached", json_integer((json_int_t)r->cached));
    json_object_set_new(o, "failed", json_integer((json_int_t)r->failed));
    json_object_set_new(o, "elapsed_s", json_real(r->elapsed_s));
    json_object_set_new(o, "eval_s", json_real(r->eval_s));
    json_object_set_new(o, "compile_wait_s", json_real(r->compile_wait_s));
    json_object_set_new(o, "best", r->has_best ? point_json(sr->space, r->best_point, &r->best)
                                               : json_null());
    for (size_t i = 0; i < r->nimprovements; i++)
        json_array_append_new(conv, json_pack("{s:I, s:f}", "evaluations",
                                              (json_int_t)r->best_after[i], "objective",
                                              r->best_value[i]));
    json_object_set_new(o, "convergence", conv);
    for (size_t i = 0; i < r->npareto; i++)
        json_array_append_new(pareto, point_json(sr->space, r->pareto[i],
                                                 kopt_tune_cache_get(sr->cache, r->pareto[i])));
    json_object_set_new(o, "pareto", pareto);
    evals = json_array();
    for (size_t i = 0; i < sr->nevaluated; i++) {
        char *label = kopt_tune_space_label(sr->space, sr->evaluated[i]);
        json_array_append_new(evals, json_string(label ? label : ""));
        free(label);
    }
    json_object_set_new(o, "evaluated_points", evals);
    json_object_set_new(o, "cache_entries",
                        json_integer((json_int_t)kopt_tune_cache_count(sr->cache)));
    if (sr->final) {
        const kopt_eval_result *f = sr->final;
        json_t *fj = json_pack("{s:s, s:s, s:f, s:f}", "verdict", kopt_verdict_name(f->verdict),
                               "message", f->message, "median_ms", f->timing.median_ms,
                               "speedup", f->speedup);
        if (f->roofline.valid)
            json_object_set_new(fj, "pct_of_roofline", json_real(f->roofline.pct_of_bound));
        json_object_set_new(o, "final_check", fj);
    } else {
        json_object_set_new(o, "final_check", json_null());
    }
    json_object_set_new(o, "out", sr->out_path[0] ? json_string(sr->out_path) : json_null());
    json_object_set_new(o, "record", sr->record_path[0] ? json_string(sr->record_path)
                                                        : json_null());
    (void)e;
    return o;
}

static void print_json(const tune_env *e, shape_run *runs, int n, const char *mode)
{
    json_t *o = json_object(), *shapes = json_array();

    json_object_set_new(o, "mode", json_string(mode));
    json_object_set_new(o, "problem", json_string(e->prob->name));
    json_object_set_new(o, "template", json_string(e->tmpl_path));
    json_object_set_new(o, "device", json_string(runs[0].key.device));
    json_object_set_new(o, "objective", json_string(objective_name(e->a->objective)));
    for (int i = 0; i < n; i++)
        json_array_append_new(shapes, shape_json(e, &runs[i]));
    /* the first shape's fields at the top level: the common one-shape case reads easily */
    if (n > 0) {
        json_t *first = json_array_get(shapes, 0);
        const char *k;
        json_t *v;
        json_object_foreach(first, k, v)
            if (!json_object_get(o, k))
                json_object_set(o, k, v);
    }
    json_object_set_new(o, "shapes", shapes);
    cli_print_json(o);
}

static void print_text(const tune_env *e, shape_run *runs, int n, const char *mode)
{
    const tune_args *a = e->a;

    printf("problem    %s (%s)\n", e->prob->name, e->prob->path);
    printf("template   %s: %d params\n", e->tmpl_path, e->tmpl->ntemplate_params);
    printf("device     %s%s\n", runs[0].key.device[0] ? runs[0].key.device : "unknown",
           strcmp(mode, "replay") == 0 ? " (replayed: no GPU used)" : "");
    printf("strategy   %s%s%s (seed %llu), objective %s, budget ", runs[0].strategy,
           runs[0].options ? " " : "", runs[0].options ? runs[0].options : "",
           (unsigned long long)runs[0].seed, objective_name(a->objective));
    if (runs[0].budget)
        printf("%d evaluations", runs[0].budget);
    else
        printf("unbounded");
    if (a->seconds > 0)
        printf(", %.0f s", a->seconds);
    printf("\n");
    for (int i = 0; i < n; i++) {
        const shape_run *sr = &runs[i];
        const kopt_tune_result *r = sr->res;
        if (!r)
            continue;
        printf("shape %-4d %s: stopped (%s) after %zu evaluations (%zu new, %zu cached, "
               "%zu failed) in %.1f s%s\n", i + 1, sr->key.sizes, kopt_tune_stop_name(r->stop),
               r->evaluated + r->cached, r->evaluated, r->cached, r->failed, r->elapsed_s,
               sr->resumed ? "; resumed" : "");
        if (sr->loaded)
            printf("  store    %zu outcomes known before the run, %zu evaluated again\n",
                   sr->loaded, sr->reevaluated);
        if (r->nimprovements)
            printf("  converge %zu improvements; the last after %zu evaluations\n",
                   r->nimprovements, r->best_after[r->nimprovements - 1]);
        if (r->npareto > 1) {
            printf("  pareto   %zu points (time vs energy):", r->npareto);
            for (size_t p = 0; p < r->npareto && p < 6; p++) {
                const kopt_tune_outcome *o = kopt_tune_cache_get(sr->cache, r->pareto[p]);
                if (o)
                    printf(" %.4f ms/%.3f mJ", o->time_ms, o->energy_mj);
            }
            printf("%s\n", r->npareto > 6 ? " ..." : "");
        }
        if (sr->final && sr->final->verdict == KOPT_VERDICT_OK)
            printf("  checked  the winner as kopt eval would: OK, median %.4f ms, %.2fx the "
                   "reference%s%.1f%% of the roofline bound\n", sr->final->timing.median_ms,
                   sr->final->speedup, sr->final->roofline.valid ? ", " : "",
                   sr->final->roofline.valid ? sr->final->roofline.pct_of_bound : 0.0);
        else if (sr->final)
            printf("  checked  the winner as kopt eval would: %s: %s\n",
                   kopt_verdict_name(sr->final->verdict), sr->final->message);
        if (sr->out_path[0])
            printf("  wrote    %s\n", sr->out_path);
        if (sr->record_path[0])
            printf("  recorded %s\n", sr->record_path);
        if (sr->kt_path[0])
            printf("  exported %s (Kernel Tuner cache)\n", sr->kt_path);
        if (sr->t4_path[0])
            printf("  exported %s (T4)\n", sr->t4_path);
    }
    printf("\nbest per shape:\n  %-3s %-28s %12s %12s  %s\n", "#", "sizes",
           a->objective == KOPT_TUNE_ENERGY ? "energy mJ" : "time ms", "1st/best", "params");
    for (int i = 0; i < n; i++) {
        const shape_run *sr = &runs[i];
        const kopt_tune_result *r = sr->res;
        char *label;
        double first = INFINITY, best;
        if (!r || !r->has_best) {
            printf("  %-3d %-28s %12s %12s  (no correct configuration)\n", i + 1, sr->key.sizes,
                   "-", "-");
            continue;
        }
        best = kopt_tune_outcome_objective(&r->best, a->objective);
        for (size_t k = 0; k < r->n && !isfinite(first); k++)
            first = kopt_tune_outcome_objective(&r->outcomes[k], a->objective);
        label = kopt_tune_space_label(sr->space, r->best_point);
        printf("  %-3d %-28s %12.4f %11.2fx  %s\n", i + 1, sr->key.sizes, best,
               isfinite(first) && best > 0 ? first / best : 1.0, label ? label : "?");
        free(label);
    }
}

/* ---- setup -------------------------------------------------------------------------------- */

static int list_strategies(int json)
{
    json_t *arr = json ? json_array() : NULL;

    for (int i = 0; kopt_tune_strategies[i]; i++) {
        const kopt_tune_strategy *s = kopt_tune_strategies[i];
        if (arr)
            json_array_append_new(arr, json_pack("{s:s, s:s, s:b}", "name", s->name, "summary",
                                                 s->summary, "wants_findings",
                                                 s->wants_findings));
        else
            printf("%-16s %s\n", s->name, s->summary);
    }
    if (arr)
        cli_print_json(arr);
    return 0;
}

/* Options; returns -1 (and the exit code in *code) to stop. */
static int parse_args(tune_args *a, kopt_ctx *ctx, int argc, char **argv, int *code)
{
    static const struct option opts[] = {
        {"strategy", required_argument, NULL, 'y'}, {"options", required_argument, NULL, 'O'},
        {"list-strategies", no_argument, NULL, 'l'}, {"budget", required_argument, NULL, 'n'},
        {"time", required_argument, NULL, 'W'}, {"seed", required_argument, NULL, 'S'},
        {"objective", required_argument, NULL, 'o'},
        {"energy-window", required_argument, NULL, 'E'},
        {"energy-slack", required_argument, NULL, 'K'},
        {"compile-threads", required_argument, NULL, 'P'},
        {"lookahead", required_argument, NULL, 'A'}, {"sizes", required_argument, NULL, 'Z'},
        {"size", required_argument, NULL, 's'}, {"out", required_argument, NULL, 'u'},
        {"space", no_argument, NULL, 'x'}, {"resume", no_argument, NULL, 'r'},
        {"fresh", no_argument, NULL, 'f'}, {"replay", required_argument, NULL, 'R'},
        {"template", required_argument, NULL, 'M'}, {"problem", required_argument, NULL, 'Q'},
        {"record", required_argument, NULL, 'w'}, {"export-kt", required_argument, NULL, 'k'},
        {"export-t4", required_argument, NULL, '4'}, {"json", no_argument, NULL, 'j'},
        {"no-progress", no_argument, NULL, 'G'}, {"db", required_argument, NULL, 'D'},
        {"no-store", no_argument, NULL, 'N'}, {"cache-dir", required_argument, NULL, 'c'},
        {"trials", required_argument, NULL, 't'}, {"budget-ms", required_argument, NULL, 'b'},
        {"reps", required_argument, NULL, 'p'}, {"no-flush", no_argument, NULL, 'F'},
        {"no-check-sizes", no_argument, NULL, 'C'}, {"timeout", required_argument, NULL, 'T'},
        {"device", required_argument, NULL, 'd'}, {"arch", required_argument, NULL, 'a'},
        {"allow-spills", no_argument, NULL, 'B'}, {"verbose", no_argument, NULL, 'v'},
        {"runs", no_argument, NULL, 'U'}, {"one-shot", no_argument, NULL, 1001},
        {"findings", no_argument, NULL, 1002},
        {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
    };
    char *end;
    long v;
    int c;

    optind = 1;
    while ((c = getopt_long(argc, argv, "vh", opts, NULL)) != -1) {
        switch (c) {
        case 'y': a->strategy = optarg; a->strategy_set = 1; break;
        case 'O': a->options = optarg; a->options_set = 1; break;
        case 'l': a->list = 1; break;
        case 'n': v = strtol(optarg, &end, 10);
            if (*end || v < 0 || v > INT_MAX) goto bad_number;
            a->budget = (int)v;
            a->budget_set = 1;
            break;
        case 'W': a->seconds = strtod(optarg, &end);
            if (*end || a->seconds < 0) goto bad_number;
            break;
        case 'S': a->seed = strtoull(optarg, &end, 0);
            if (*end) goto bad_number;
            a->seed_set = 1;
            break;
        case 'o':
            a->objective_set = 1;
            if (parse_objective(optarg, &a->objective) != 0) {
                fprintf(stderr, "kopt tune: --objective '%s': use time, energy or "
                        "time-energy\n", optarg);
                goto usage;
            }
            break;
        case 'E': a->energy_s = strtod(optarg, &end);
            if (*end || a->energy_s <= 0) goto bad_number;
            break;
        case 'K': a->energy_slack = strtod(optarg, &end);
            if (*end || a->energy_slack < 0) goto bad_number;
            break;
        case 'P': v = strtol(optarg, &end, 10);
            if (*end || v < 0 || v > 256) goto bad_number;
            a->compile_threads = (int)v;
            break;
        case 'A': v = strtol(optarg, &end, 10);
            if (*end || v < 1 || v > 4096) goto bad_number;
            a->lookahead = (int)v;
            break;
        case 'Z':
            if (a->nshapes == MAX_SHAPES) {
                fprintf(stderr, "kopt tune: at most %d --sizes sets\n", MAX_SHAPES);
                goto usage;
            }
            if (parse_sizes_set(ctx, optarg, &a->shapes[a->nshapes]) != 0) {
                kopt_vars_free(&a->shapes[a->nshapes]);
                goto usage;
            }
            a->nshapes++;
            break;
        case 's':
            if (cli_parse_size(ctx, "tune", optarg, &a->overrides) != 0)
                goto usage;
            break;
        case 'u': a->out = optarg; break;
        case 'x': a->space_only = 1; break;
        case 'r': a->resume = 1; break;
        case 'f': a->fresh = 1; break;
        case 'R': a->replay = optarg; break;
        case 'M': a->template_path = optarg; break;
        case 'Q': a->problem_path = optarg; break;
        case 'w': a->record = optarg; break;
        case 'k': a->export_kt = optarg; break;
        case '4': a->export_t4 = optarg; break;
        case 'j': a->json = 1; break;
        case 'G': a->progress = 0; break;
        case 'D': a->db_path = optarg; a->db_given = 1; break;
        case 'N': a->no_store = 1; break;
        case 'c': a->eo.cache_dir = optarg; break;
        case 't': v = strtol(optarg, &end, 10);
            if (*end || v < 1 || v > 16) goto bad_number;
            a->eo.trials = (int)v;
            break;
        case 'b': a->eo.budget_ms = strtod(optarg, &end);
            if (*end || a->eo.budget_ms <= 0) goto bad_number;
            break;
        case 'p':
            if (sscanf(optarg, "%d:%d", &a->eo.min_reps, &a->eo.max_reps) != 2 ||
                a->eo.min_reps < 1 || a->eo.max_reps < a->eo.min_reps)
                goto bad_number;
            break;
        case 'F': a->eo.no_flush = 1; break;
        case 'C': a->eo.skip_check_sizes = 1; break;
        case 'T': a->eo.timeout_s = strtod(optarg, &end);
            if (*end || a->eo.timeout_s <= 0) goto bad_number;
            break;
        case 'd': v = strtol(optarg, &end, 10);
            if (*end || v < 0 || v > 64) goto bad_number;
            a->eo.device = (int)v;
            break;
        case 'a': a->eo.arch = optarg; break;
        case 'B': a->allow_spills = 1; break;
        case 1001: a->one_shot = 1; break;
        case 1002: a->findings = 1; break;
        case 'U': a->runs = 1; break;
        case 'v': kopt_log_set(ctx, NULL, NULL, KOPT_LOG_INFO); break;
        case 'h': help(stdout); *code = 0; return -1;
        default: goto usage;
        }
        continue;
bad_number:
        fprintf(stderr, "kopt tune: bad value '%s' (see kopt tune --help)\n", optarg);
        *code = KOPT_EXIT_USAGE;
        return -1;
    }
    if (a->resume && a->fresh) {
        fprintf(stderr, "kopt tune: --resume and --fresh contradict each other\n");
        goto usage_quiet;
    }
    if (a->list || a->runs)
        return 0;
    if (a->replay ? argc - optind > 2 : argc - optind != 2) {
        if (!a->replay && argc - optind < 2)
            fprintf(stderr, "kopt tune: needs PROBLEM and TEMPLATE.cu (or --replay)\n");
        goto usage;
    }
    return 0;
usage:
    help(stderr);
usage_quiet:
    *code = KOPT_EXIT_USAGE;
    return -1;
}

/* The problem and template of a replay, from the cache file's key (or the stored run). */
static int replay_setup(tune_env *e, int argc, char **argv, int *code)
{
    tune_args *a = e->a;
    kopt_ctx *ctx = e->ctx;
    char *tp = NULL, tbuf[PATH_MAX], pbuf[PATH_MAX];
    const char *tpath = a->template_path, *ppath = a->problem_path;
    int npos = argc - optind;

    if (npos >= 1 && !ppath)
        ppath = argv[optind];
    if (npos >= 2 && !tpath)
        tpath = argv[optind + 1];
    if (replay_is_run_id(a->replay)) {
        if (store_replay_run(e, &tp) != KOPT_OK) {
            cli_error(ctx);
            *code = KOPT_EXIT_INVALID;
            return -1;
        }
    } else if (kopt_tune_cache_read_key(ctx, a->replay, &e->recorded_key, &tp) != KOPT_OK) {
        cli_error(ctx);
        *code = KOPT_EXIT_INVALID;
        return -1;
    }
    if (!tpath) {
        if (!tp || !tp[0]) {
            fprintf(stderr, "kopt tune: %s names no template: give --template FILE\n",
                    a->replay);
            free(tp);
            *code = KOPT_EXIT_INVALID;
            return -1;
        }
        if (resolve_template(replay_is_run_id(a->replay) ? "./x" : a->replay, tp, tbuf,
                             sizeof(tbuf)) != 0) {
            fprintf(stderr, "kopt tune: the template of %s, '%s', was not found (looked "
                    "beside the cache file, in its parent folders and in the working "
                    "folder): give --template FILE\n", a->replay, tp);
            free(tp);
            *code = KOPT_EXIT_INVALID;
            return -1;
        }
        tpath = tbuf;
    }
    if (tp && !a->template_path && npos < 2)
        snprintf(e->tmpl_record_buf, sizeof(e->tmpl_record_buf), "%s", tp);
    free(tp);
    if (!ppath) {
        const char *slash = strrchr(tpath, '/');
        snprintf(pbuf, sizeof(pbuf), "%.*s", slash ? (int)(slash - tpath) : 1,
                 slash ? tpath : ".");
        ppath = pbuf;
    }
    if (kopt_problem_load(&e->prob, ctx, ppath) != KOPT_OK ||
        kopt_candidate_load(&e->tmpl, ctx, tpath, e->prob) != KOPT_OK) {
        cli_error(ctx);
        *code = KOPT_EXIT_INVALID;
        return -1;
    }
    e->tmpl_path = e->tmpl->path;
    if (e->tmpl_record_buf[0])
        e->tmpl_record = e->tmpl_record_buf;
    if (strcmp(e->recorded_key.template_hash, e->tmpl->hash) != 0 ||
        strcmp(e->recorded_key.problem, e->prob->name) != 0) {
        fprintf(stderr, "kopt tune: %s was recorded for %s (problem '%s', template_hash "
                "%.12s...), not for %s (problem '%s', template_hash %.12s...): the template "
                "source differs\n", a->replay, "another template", e->recorded_key.problem,
                e->recorded_key.template_hash, tpath, e->prob->name, e->tmpl->hash);
        *code = KOPT_EXIT_INVALID;
        return -1;
    }
    return 0;
}

/* A replay needs every valid point recorded: say so up front when some are missing. */
static void warn_incomplete(const tune_env *e, const kopt_tune_space *s)
{
    uint64_t missing = 0, valid = 0;

    if (s->npoints > SPACE_SCAN_LIMIT)
        return;
    for (uint64_t p = 0; p < s->npoints; p++)
        if (kopt_tune_space_valid(s, p, NULL, 0)) {
            valid++;
            missing += kopt_tune_cache_get(e->recorded, p) == NULL;
        }
    if (missing)
        fprintf(stderr, "kopt tune: %s%s records %llu of the %llu valid points; a strategy "
                "that reaches a missing one stops with an error (record complete caches with "
                "--strategy exhaustive --budget 0 --record FILE)\n",
                e->store_is_recording ? "stored run " : "", e->a->replay,
                (unsigned long long)(valid - missing), (unsigned long long)valid);
}

/* ---- store glue, bodies ----------------------------------------------------------------- */

/* Stored outcomes of the key into the cache (before the persist hook is set). */
static kopt_status store_load(tune_env *e, shape_run *sr)
{
    size_t n = 0;
    kopt_status rc = kopt_store_tune_load(e->store, e->ctx, sr->cache, &n);
    if (rc == KOPT_OK && n)
        kopt_log(e->ctx, KOPT_LOG_INFO, "tune: %zu outcome(s) for %s from the store", n,
                 sr->key.sizes);
    return rc;
}

/* --resume: the latest unfinished run of this key gives the strategy, options, seed,
 * budget and objective, unless they are given again. */
static kopt_status store_resume(tune_env *e, shape_run *sr)
{
    kopt_store_tune_run run;
    int found = 0;
    kopt_status rc = kopt_store_tune_find_unfinished(e->store, e->ctx, &sr->key, &run, &found);

    if (rc != KOPT_OK)
        return rc;
    if (!found) {
        fprintf(stderr, "kopt tune: no unfinished run for %s at %s in the store: starting a "
                "new one (stored outcomes are still reused)\n", sr->key.problem,
                sr->key.sizes);
        return KOPT_OK;
    }
    if (!e->a->strategy_set && kopt_tune_strategy_find(run.strategy)) {
        snprintf(sr->strategy_buf, sizeof(sr->strategy_buf), "%s", run.strategy);
        sr->strategy = sr->strategy_buf;
    }
    if (!e->a->options_set) {
        snprintf(sr->options_buf, sizeof(sr->options_buf), "%s", run.options);
        sr->options = sr->options_buf[0] ? sr->options_buf : NULL;
    }
    if (!e->a->seed_set)
        sr->seed = run.seed;
    if (!e->a->budget_set)
        sr->budget = run.max_evals;
    if (!e->a->objective_set)
        parse_objective(run.objective, &e->a->objective);
    sr->resumed = 1;
    sr->resumed_from = run.id;
    return KOPT_OK;
}

/* A new run row; every outcome put into the cache from now on is stored at once. */
static kopt_status store_begin(tune_env *e, shape_run *sr)
{
    int64_t id = 0;
    kopt_status rc = kopt_store_tune_begin(e->store, e->ctx, &sr->key, e->tmpl_record,
                                           sr->strategy, sr->options, sr->seed,
                                           e->a->objective, sr->budget, &id);
    if (rc != KOPT_OK)
        return rc;
    sr->run_id = id;
    sr->sink.store = e->store;
    sr->sink.run_id = id;
    sr->sink.key = sr->key;
    kopt_tune_cache_set_persist(sr->cache, kopt_store_tune_persist, &sr->sink);
    /* the run continued here is over: a later --resume must not pick it again */
    if (sr->resumed_from)
        rc = kopt_store_tune_finish(e->store, e->ctx, sr->resumed_from,
                                    KOPT_TUNE_STOP_INTERRUPTED, NULL, 0);
    return rc;
}

/* The run's stop reason and best; an interrupted run stays unfinished (--resume finds it). */
static kopt_status store_finish(tune_env *e, shape_run *sr)
{
    const kopt_tune_result *r = sr->res;
    char *label = NULL;
    kopt_status rc;

    if (!sr->run_id || r->stop == KOPT_TUNE_STOP_INTERRUPTED)
        return KOPT_OK;
    if (r->has_best)
        label = kopt_tune_space_label(sr->space, r->best_point);
    rc = kopt_store_tune_finish(e->store, e->ctx, sr->run_id, r->stop, label,
                                r->has_best ? kopt_tune_outcome_objective(&r->best,
                                                                          e->a->objective) : 0);
    free(label);
    return rc;
}

/* --replay RUN_ID: the run's key and template path. */
static kopt_status store_replay_run(tune_env *e, char **template_path)
{
    kopt_store_tune_run run;
    kopt_status rc;

    *template_path = NULL;
    rc = kopt_store_tune_get_run(e->store, e->ctx, strtoll(e->a->replay, NULL, 10), &run);
    if (rc != KOPT_OK)
        return rc;
    e->recorded_key = run.key;
    if (!(*template_path = strdup(run.template_path)))
        return kopt_seterr(e->ctx, KOPT_E_NOMEM, "template path");
    return KOPT_OK;
}

/* --replay RUN_ID: every outcome stored under the run's key, as the recording. */
static kopt_status store_replay_cache(tune_env *e, shape_run *sr, kopt_tune_cache **out)
{
    size_t n = 0;
    kopt_status rc = kopt_tune_cache_create(out, e->ctx, sr->space, &e->recorded_key);

    if (rc == KOPT_OK)
        rc = kopt_store_tune_load(e->store, e->ctx, *out, &n);
    if (rc == KOPT_OK && !n)
        rc = kopt_seterr(e->ctx, KOPT_E_NOT_FOUND, "%s: run %s has no stored outcomes",
                         e->a->db_path, e->a->replay);
    return rc;
}

/* --runs: the stored runs, newest first. */
static int list_runs(tune_env *e)
{
    kopt_store_tune_run *v = NULL;
    int n = 0;

    if (kopt_store_tune_runs(e->store, e->ctx, &v, &n) != KOPT_OK) {
        cli_error(e->ctx);
        return KOPT_EXIT_ERROR;
    }
    if (e->a->json) {
        json_t *arr = json_array();
        for (int i = 0; i < n; i++) {
            json_t *r = json_pack("{s:I, s:s, s:o, s:s, s:s, s:s, s:I, s:s, s:i, s:b, s:s, "
                                  "s:s, s:f, s:I}", "id", (json_int_t)v[i].id, "created_at",
                                  v[i].created_at, "key", key_json(&v[i].key), "template",
                                  v[i].template_path, "strategy", v[i].strategy, "options",
                                  v[i].options, "seed", (json_int_t)v[i].seed, "objective",
                                  v[i].objective, "budget", v[i].max_evals, "finished",
                                  v[i].finished, "stop", v[i].stop, "best", v[i].best_label,
                                  "best_value", v[i].best_value, "evaluations",
                                  (json_int_t)v[i].nevals);
            json_array_append_new(arr, r ? r : json_object());
        }
        cli_print_json(arr);
    } else {
        printf("%-5s %-20s %-12s %-24s %-12s %-11s %6s  %s\n", "run", "created", "problem",
               "sizes", "strategy", "stop", "evals", "best");
        for (int i = 0; i < n; i++)
            printf("%-5lld %-20.20s %-12.12s %-24.24s %-12.12s %-11s %6lld  %s\n",
                   (long long)v[i].id, v[i].created_at, v[i].key.problem, v[i].key.sizes,
                   v[i].strategy, v[i].finished ? v[i].stop : "unfinished",
                   (long long)v[i].nevals, v[i].best_label);
        if (!n)
            printf("(no tuning runs in %s)\n", e->a->db_path);
    }
    free(v);
    return 0;
}

int cmd_tune(int argc, char **argv)
{
    tune_args a;
    tune_env e;
    shape_run runs[MAX_SHAPES];
    kopt_tune_cache *recorded = NULL;
    kopt_ctx *ctx = cli_ctx(0);
    const char *mode;
    char lim[256], why_skip[512] = "";
    int code = 0, nruns = 0, interrupted = 0;
    struct sigaction sa, old_sa;
    kopt_eval_opts eo_init = KOPT_EVAL_OPTS_INIT;

    memset(&a, 0, sizeof(a));
    memset(&e, 0, sizeof(e));
    memset(runs, 0, sizeof(runs));
    a.strategy = "annealing";
    a.budget = 200;
    a.seed = 1;
    a.energy_s = 1.0;
    a.energy_slack = 0.05;
    a.compile_threads = 2;
    a.lookahead = 8;
    a.progress = 1;
    a.eo = eo_init;
    /* tuning evaluates hundreds of points: one trial, a short timing budget, and the
     * reference run once (not timed) per point; the winner is checked in full at the end */
    a.eo.trials = 1;
    a.eo.budget_ms = 30;
    a.eo.warmup_ms = 10;
    a.eo.min_reps = 5;
    a.eo.no_ref_timing = 1;
    a.argc = argc;
    a.argv = argv;
    a.db_path = cli_default_db();
    e.a = &a;
    e.ctx = ctx;
    g_stop = 0;

    if (parse_args(&a, ctx, argc, argv, &code) != 0)
        goto done;
    if (a.list) {
        code = list_strategies(a.json);
        goto done;
    }
    if (!kopt_tune_strategy_find(a.strategy)) {
        fprintf(stderr, "kopt tune: unknown strategy '%s' (kopt tune --list-strategies)\n",
                a.strategy);
        code = KOPT_EXIT_USAGE;
        goto done;
    }
    if (a.no_store || (a.replay && !a.db_given && !replay_is_run_id(a.replay)))
        a.db_path = NULL;
    if (a.runs) {
        if (!a.db_path) {
            fprintf(stderr, "kopt tune: --runs needs a store (--db PATH)\n");
            code = KOPT_EXIT_USAGE;
        } else if (kopt_store_open(&e.store, ctx, a.db_path) != KOPT_OK) {
            cli_error(ctx);
            code = KOPT_EXIT_ERROR;
        } else {
            code = list_runs(&e);
        }
        goto done;
    }
    e.store_is_recording = a.replay && replay_is_run_id(a.replay);
    if ((a.resume || (a.replay && replay_is_run_id(a.replay))) && !a.db_path) {
        fprintf(stderr, "kopt tune: %s needs a store (--db PATH)\n",
                a.resume ? "--resume" : "--replay RUN_ID");
        code = KOPT_EXIT_USAGE;
        goto done;
    }
    if (a.db_path && !a.space_only && kopt_store_open(&e.store, ctx, a.db_path) != KOPT_OK) {
        cli_error(ctx);
        code = KOPT_EXIT_ERROR;
        goto done;
    }

    /* problem and template */
    if (a.replay) {
        if (replay_setup(&e, argc, argv, &code) != 0)
            goto done;
    } else {
        if (kopt_problem_load(&e.prob, ctx, argv[optind]) != KOPT_OK) {
            cli_error(ctx);
            code = KOPT_EXIT_INVALID;
            goto done;
        }
        if (kopt_candidate_load(&e.tmpl, ctx, argv[optind + 1], e.prob) != KOPT_OK) {
            cli_error(ctx);
            code = KOPT_EXIT_INVALID;
            goto done;
        }
        e.tmpl_path = argv[optind + 1];
    }
    if (!e.tmpl_record)
        e.tmpl_record = e.tmpl_path;
    if (e.tmpl->ntemplate_params <= 0) {
        fprintf(stderr, "kopt tune: %s is not a template: its front matter has no \"params\" "
                "with several values (a list, {\"range\": [lo, hi]} or {\"pow2\": [lo, hi]}); "
                "docs/tuning.md\n", e.tmpl_path);
        code = KOPT_EXIT_INVALID;
        goto done;
    }

    /* the device (live) or the recorded one (replay) */
    if (a.replay) {
        snprintf(e.dev.name, sizeof(e.dev.name), "%s", e.recorded_key.device);
        snprintf(e.dev.uuid, sizeof(e.dev.uuid), "%s", e.recorded_key.device_uuid);
    } else {
        int count = 0;
        if (kopt_device_nvml(ctx, a.eo.device, &e.dev, &count) != KOPT_OK ||
            a.eo.device >= count) {
            snprintf(why_skip, sizeof(why_skip), "%s", count ? "no such GPU" : kopt_errmsg(ctx));
        } else if (kopt_device_query(ctx, a.eo.device, &e.dev) != KOPT_OK) {
            snprintf(why_skip, sizeof(why_skip), "%s", kopt_errmsg(ctx));
        } else {
            e.has_device = 1;
            kopt_tune_limits_from_device(&e.limits, &e.dev);
        }
    }
    limits_text(&e.limits, e.has_device, lim, sizeof(lim));

    /* shapes: --sizes sets (or the replayed one, or the problem's own), with --size on top */
    if (!a.nshapes) {
        if (a.replay &&
            sizes_parse(ctx, e.recorded_key.sizes, &a.shapes[0]) != KOPT_OK) {
            fprintf(stderr, "kopt tune: %s: key.sizes '%s': %s\n", a.replay,
                    e.recorded_key.sizes, kopt_errmsg(ctx));
            code = KOPT_EXIT_INVALID;
            goto done;
        }
        a.nshapes = 1;
    }
    for (int i = 0; i < a.nshapes; i++) {
        shape_run *sr = &runs[i];
        kopt_vars want = KOPT_VARS_INIT;
        kopt_status rc = kopt_vars_copy(&want, &a.shapes[i]);
        for (int k = 0; rc == KOPT_OK && k < a.overrides.n; k++)
            rc = kopt_vars_set(&want, a.overrides.names[k], a.overrides.values[k]);
        if (rc == KOPT_OK)
            rc = kopt_sizes_resolve(&sr->sizes, ctx, e.prob, &want);
        kopt_vars_free(&want);
        nruns = i + 1;
        if (rc != KOPT_OK) {
            fprintf(stderr, "kopt tune: --sizes set %d: %s\n", i + 1, kopt_errmsg(ctx));
            code = KOPT_EXIT_USAGE;
            goto done;
        }
        if (kopt_tune_space_create(&sr->space, ctx, e.tmpl, &sr->sizes,
                                   e.has_device ? &e.limits : NULL) != KOPT_OK) {
            cli_error(ctx);
            code = KOPT_EXIT_INVALID;
            goto done;
        }
        make_key(&sr->key, e.prob, e.tmpl, &sr->sizes,
                 e.has_device || a.replay ? &e.dev : NULL);
    }

    /* --space, or no GPU: the space summary */
    if (a.space_only || (!a.replay && !e.has_device)) {
        json_t *jo = a.json ? json_object() : NULL, *arr = jo ? json_array() : NULL;
        if (!a.space_only)
            fprintf(stderr, "kopt tune: tuning needs a GPU (%s); printing the space only "
                    "(kopt tune --replay runs on recorded measurements without one)\n",
                    why_skip);
        if (!jo) {
            printf("problem    %s (%s)\n", e.prob->name, e.prob->path);
            printf("template   %s\n", e.tmpl_path);
        }
        for (int i = 0; i < nruns; i++) {
            space_summary sum;
            summarize_space(runs[i].space, &sum);
            if (jo) {
                json_t *sj = space_json(runs[i].space, &sum, lim);
                json_object_set_new(sj, "sizes", json_string(runs[i].key.sizes));
                json_object_set_new(sj, "key", key_json(&runs[i].key));
                json_array_append_new(arr, sj);
            } else {
                printf("sizes      %s\n", runs[i].key.sizes);
                print_space(runs[i].space, &sum, lim);
            }
        }
        if (jo) {
            json_object_set_new(jo, "problem", json_string(e.prob->name));
            json_object_set_new(jo, "template", json_string(e.tmpl_path));
            json_object_set_new(jo, "skipped", json_boolean(!a.space_only));
            json_object_set_new(jo, "reason", a.space_only ? json_null()
                                                           : json_string(why_skip));
            json_object_set_new(jo, "space", json_copy(json_array_get(arr, 0)));
            json_object_set_new(jo, "shapes", arr);
            cli_print_json(jo);
        } else if (!a.space_only) {
            printf("verdict    SKIPPED: no GPU here; nothing was tuned\n");
        }
        code = 0;
        goto done;
    }

    /* live: the device's ceilings once for the whole run (every evaluation needs them for
     * its roofline and SUSPECT checks), from the store or measured now and stored */
    if (!a.replay) {
        int found = 0;
        kopt_device_info measured;
        if (!(e.store && kopt_store_get_ceilings(e.store, ctx, e.dev.uuid, &e.ceilings,
                                                 &found) == KOPT_OK && found) &&
            kopt_device_measure(ctx, a.eo.device, a.eo.cache_dir, &measured, &e.ceilings) ==
                KOPT_OK && e.store)
            kopt_store_put_device(e.store, ctx, &measured, &e.ceilings);
        if (e.ceilings.valid)
            a.eo.ceilings = &e.ceilings;
        else
            kopt_log(ctx, KOPT_LOG_WARN, "device ceilings not measured: %s", kopt_errmsg(ctx));
    }

    /* replay: the recorded outcomes */
    if (a.replay) {
        if (!replay_is_run_id(a.replay)) {
            kopt_tune_key want = e.recorded_key;
            if (a.nshapes > 1 || strcmp(runs[0].key.sizes, e.recorded_key.sizes) != 0) {
                fprintf(stderr, "kopt tune: %s holds measurements at %s only; --sizes/--size "
                        "cannot change them in a replay\n", a.replay, e.recorded_key.sizes);
                code = KOPT_EXIT_USAGE;
                goto done;
            }
            if (kopt_tune_cache_load(&recorded, ctx, a.replay, runs[0].space, &want) != KOPT_OK) {
                cli_error(ctx);
                code = KOPT_EXIT_INVALID;
                goto done;
            }
        } else if (store_replay_cache(&e, &runs[0], &recorded) != KOPT_OK) {
            cli_error(ctx);
            code = KOPT_EXIT_INVALID;
            goto done;
        }
        e.recorded = recorded;
        runs[0].key = e.recorded_key;
        warn_incomplete(&e, runs[0].space);
    }

    /* run each shape in turn; Ctrl-C stops the current one and skips the rest */
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_sa);
    e.ps.enabled = a.progress;
    e.ps.tty = isatty(STDERR_FILENO);
    e.ps.nshapes = nruns;
    mode = a.replay ? "replay" : "live";
    for (int i = 0; i < nruns; i++) {
        if (g_stop)
            break;
        kopt_status rc = run_shape(&e, &runs[i], i);
        if (rc != KOPT_OK) {
            cli_error(ctx);
            /* a replay that reaches a point the recording lacks: the input is incomplete */
            code = e.recorded && rc == KOPT_E_NOT_FOUND ? KOPT_EXIT_INVALID : KOPT_EXIT_ERROR;
            nruns = i + (runs[i].res != NULL);
            break;
        }
        if (write_outputs(&e, &runs[i], i) != KOPT_OK) {
            cli_error(ctx);
            code = KOPT_EXIT_ERROR;
            nruns = i + 1;
            break;
        }
        if (runs[i].res->stop == KOPT_TUNE_STOP_INTERRUPTED) {
            interrupted = 1;
            nruns = i + 1;
            break;
        }
    }
    sigaction(SIGINT, &old_sa, NULL);
    if (nruns > 0 && runs[0].res) {
        if (a.json)
            print_json(&e, runs, nruns, mode);
        else
            print_text(&e, runs, nruns, mode);
    }
    if (interrupted || g_stop) {
        char cmd[4096];
        resume_command(&a, cmd, sizeof(cmd));
        fprintf(stderr, "kopt tune: interrupted; the best so far is above%s. Continue with:\n"
                "  %s\n", e.store ? " and every outcome is stored" : " (no store: "
                "nothing was kept)", cmd);
        if (!code)
            code = 130;
    }
done:
    kopt_tune_cache_free(recorded);   /* borrows the first shape's space */
    for (int i = 0; i < MAX_SHAPES; i++) {
        kopt_tune_result_free(runs[i].res);
        kopt_eval_result_free(runs[i].final);
        kopt_tune_cache_free(runs[i].cache);
        kopt_tune_space_free(runs[i].space);
        kopt_vars_free(&runs[i].sizes);
        free(runs[i].evaluated);
        kopt_vars_free(&a.shapes[i]);
    }
    kopt_vars_free(&a.overrides);
    kopt_store_close(e.store);
    kopt_candidate_free(e.tmpl);
    kopt_problem_free(e.prob);
    kopt_ctx_free(ctx);
    return code;
}
