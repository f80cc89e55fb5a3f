/*
 * The tuning driver (tune.h): runs a strategy against an evaluator within a budget.
 *
 * Each round asks the strategy for up to `lookahead` points (fewer when the budget has
 * less left), then answers them in order: a point already seen in this run is answered
 * again from the run's own record, a point in the cache from the cache (no evaluation),
 * a point the space prunes with a PRUNED outcome (no evaluation, not counted), and any
 * other point by the evaluator, whose outcome goes into the cache at once (its persist
 * hook stores it before the next evaluation starts, so a killed run resumes with nothing
 * evaluated twice). The budget counts unique points answered, new or cached, so a resumed
 * run with the same seed takes the same path as an uninterrupted one.
 *
 * Pipeline: with an evaluator that can prepare (compile) points and compile_threads > 0,
 * worker threads prepare the round's points that need evaluating, in order, while the
 * driver's thread evaluates; evaluate waits for its point's prepare. A failed prepare is
 * only logged: evaluate compiles again and reports the failure as the point's outcome.
 * Every thread is joined before kopt_tune_run returns.
 *
 * Batches: an evaluator with evaluate_many (scale-out, kopt/scale.h) gets each round's new
 * points at once, to spread over several GPUs or MPI ranks; each outcome goes into the
 * cache (and the store) as it arrives, and the round is then answered in order as above,
 * so the strategy hears the same outcomes in the same order as with one GPU.
 */
#include "kopt/tune.h"
#include "strategies/common.h"   /* the point map */

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_LOOKAHEAD KOPT_TUNE_MAX_LOOKAHEAD
#define MAX_COMPILE_THREADS KOPT_TUNE_MAX_COMPILE_THREADS
#define EXHAUSTED_SCAN_LIMIT ((uint64_t)1 << 20)   /* count valid points up to this size */

const char *kopt_tune_stop_name(kopt_tune_stop s)
{
    switch (s) {
    case KOPT_TUNE_STOP_BUDGET: return "budget";
    case KOPT_TUNE_STOP_TIME: return "time";
    case KOPT_TUNE_STOP_FINISHED: return "finished";
    case KOPT_TUNE_STOP_EXHAUSTED: return "exhausted";
    case KOPT_TUNE_STOP_INTERRUPTED: return "interrupted";
    case KOPT_TUNE_STOP_STALLED: return "stalled";
    }
    return "?";
}

void kopt_tune_result_free(kopt_tune_result *r)
{
    if (!r)
        return;
    free(r->points);
    free(r->outcomes);
    free(r->best_after);
    free(r->best_value);
    free(r->pareto);
    free(r);
}

/* ---- the compile depth by default --------------------------------------------------------- */

int kopt_tune_default_compile_threads(int cpus, int gpus)
{
    int per, n;

    if (gpus < 1)
        gpus = 1;
    if (cpus < 1)
        cpus = 1;
    per = (cpus - gpus) / gpus;          /* one CPU per GPU for its session and worker */
    if (per < KOPT_TUNE_COMPILE_MIN_PER_GPU)
        per = KOPT_TUNE_COMPILE_MIN_PER_GPU;
    if (per > KOPT_TUNE_COMPILE_MAX_PER_GPU)
        per = KOPT_TUNE_COMPILE_MAX_PER_GPU;
    n = per * gpus;
    if (n > cpus)
        n = cpus > KOPT_TUNE_COMPILE_MIN_PER_GPU ? cpus : KOPT_TUNE_COMPILE_MIN_PER_GPU;
    return n > MAX_COMPILE_THREADS ? MAX_COMPILE_THREADS : n;
}

int kopt_tune_default_lookahead(int threads, int gpus)
{
    long n;

    if (gpus < 1)
        gpus = 1;
    if (threads < 0)
        threads = 0;
    n = 2L * threads;
    if (n < (long)KOPT_TUNE_LOOKAHEAD_MIN_PER_GPU * gpus)
        n = (long)KOPT_TUNE_LOOKAHEAD_MIN_PER_GPU * gpus;
    return n > MAX_LOOKAHEAD ? MAX_LOOKAHEAD : (int)n;
}

/* ---- the compile-ahead pipeline ---------------------------------------------------------- */

enum { JOB_QUEUED = 0, JOB_RUNNING, JOB_DONE };

typedef struct job {
    uint64_t point;
    int state;
    kopt_status rc;
    char msg[256];
} job;

typedef struct pipeline {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    const kopt_tune_evaluator *eval;
    job *jobs;                /* points to prepare: this round's, and the next round's when
                               * it was asked ahead (capacity: 2 x lookahead) */
    int njobs, cap, next;     /* next: the first job no worker has taken */
    int shutdown;
    pthread_t *threads;
    int nthreads;
} pipeline;

static void drop_log(kopt_log_level level, const char *msg, void *user)
{
    (void)level;
    (void)msg;
    (void)user;
}

static void *worker_main(void *arg)
{
    pipeline *p = arg;
    kopt_ctx *ctx = kopt_ctx_new();

    if (ctx)   /* the worker's own context: its logs are dropped, failures reported below */
        kopt_log_set(ctx, drop_log, NULL, KOPT_LOG_ERROR);
    pthread_mutex_lock(&p->mu);
    for (;;) {
        job *j;
        uint64_t point;
        kopt_status rc;
        while (!p->shutdown && p->next >= p->njobs)
            pthread_cond_wait(&p->cv, &p->mu);
        if (p->shutdown)
            break;
        j = &p->jobs[p->next++];
        j->state = JOB_RUNNING;
        point = j->point;
        pthread_mutex_unlock(&p->mu);
        rc = ctx ? p->eval->prepare(p->eval->user, ctx, point) : KOPT_E_NOMEM;
        pthread_mutex_lock(&p->mu);
        /* found again by its point: a submit may have moved the jobs meanwhile */
        j = NULL;
        for (int i = 0; i < p->njobs && !j; i++)
            if (p->jobs[i].point == point && p->jobs[i].state == JOB_RUNNING)
                j = &p->jobs[i];
        if (j) {
            j->rc = rc;
            if (rc != KOPT_OK)
                snprintf(j->msg, sizeof(j->msg), "%s", ctx ? kopt_errmsg(ctx) : "out of memory");
            j->state = JOB_DONE;
        }
        pthread_cond_broadcast(&p->cv);
    }
    pthread_mutex_unlock(&p->mu);
    kopt_ctx_free(ctx);
    return NULL;
}

/* Stop the workers (each finishes the prepare it is in) and join them. */
static void pipeline_free(pipeline *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->shutdown = 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->nthreads; i++)
        pthread_join(p->threads[i], NULL);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p->threads);
    free(p->jobs);
    free(p);
}

/* NULL (no pipeline) when threads cannot be had; the run goes on without one. */
static pipeline *pipeline_new(kopt_ctx *ctx, const kopt_tune_evaluator *eval, int nthreads,
                              int lookahead)
{
    pipeline *p = calloc(1, sizeof(*p));

    if (!p)
        return NULL;
    p->eval = eval;
    p->cap = 2 * lookahead;
    p->jobs = calloc((size_t)p->cap, sizeof(*p->jobs));
    p->threads = calloc((size_t)nthreads, sizeof(*p->threads));
    if (!p->jobs || !p->threads || pthread_mutex_init(&p->mu, NULL) != 0) {
        free(p->jobs);
        free(p->threads);
        free(p);
        return NULL;
    }
    if (pthread_cond_init(&p->cv, NULL) != 0) {
        pthread_mutex_destroy(&p->mu);
        free(p->jobs);
        free(p->threads);
        free(p);
        return NULL;
    }
    for (int i = 0; i < nthreads; i++) {
        if (pthread_create(&p->threads[p->nthreads], NULL, worker_main, p) != 0) {
            kopt_log(ctx, KOPT_LOG_WARN, "tune: could only start %d of %d compile threads",
                     p->nthreads, nthreads);
            break;
        }
        p->nthreads++;
    }
    if (p->nthreads == 0) {
        pipeline_free(p);
        return NULL;
    }
    return p;
}

/* Replace the jobs with `points` (the previous round's are all done by now). */
/* Queue a round's points (n <= lookahead). The jobs done are dropped first (their points
 * are compiled: a wait for one finds nothing and returns at once), and so are those still
 * queued unless `append` (the next round asked ahead joins this one's queue). A job being
 * prepared stays until its worker is done with it. */
static void pipeline_submit(pipeline *p, const uint64_t *points, int n, int append)
{
    int k = 0;

    pthread_mutex_lock(&p->mu);
    for (int i = 0; i < p->njobs; i++)
        if (p->jobs[i].state == JOB_RUNNING || (append && p->jobs[i].state == JOB_QUEUED))
            p->jobs[k++] = p->jobs[i];
    p->njobs = k;
    for (p->next = 0; p->next < k && p->jobs[p->next].state != JOB_QUEUED; p->next++)
        ;
    for (int i = 0; i < n && p->njobs < p->cap; i++) {
        job *j = &p->jobs[p->njobs++];
        memset(j, 0, sizeof(*j));
        j->point = points[i];
        j->state = JOB_QUEUED;
    }
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

/* Wait until the job of `point` (if any) is prepared; its status, message and wait. */
static void pipeline_wait(pipeline *p, uint64_t point, kopt_status *rc, char *msg, size_t len,
                          double *waited_ms)
{
    double t0 = kopt_now_ms();

    *rc = KOPT_OK;
    msg[0] = '\0';
    *waited_ms = 0;
    pthread_mutex_lock(&p->mu);
    for (int i = 0; i < p->njobs; i++) {
        if (p->jobs[i].point != point)
            continue;
        while (p->jobs[i].state != JOB_DONE)
            pthread_cond_wait(&p->cv, &p->mu);
        *rc = p->jobs[i].rc;
        snprintf(msg, len, "%s", p->jobs[i].msg);
        *waited_ms = kopt_now_ms() - t0;
        break;
    }
    pthread_mutex_unlock(&p->mu);
}

/* ---- the run ------------------------------------------------------------------------------ */

typedef struct run {
    pthread_mutex_t wait_mu;  /* res->compile_wait_s, added to by the slots' threads */
    kopt_ctx *ctx;
    const kopt_tune_space *space;
    kopt_tune_cache *cache;
    const kopt_tune_evaluator *eval;
    const kopt_tune_strategy *strat;
    void *sstate;
    kopt_tune_opts opts;
    kopt_tune_result *res;
    size_t cap, impr_cap;
    unsigned char *repeat;    /* per outcome: 1 when the point was already answered */
    kopt_tune__map seen;      /* point -> index of its first outcome in this run */
    pipeline *pipe;
    /* the next round, asked ahead of this one's answers (a blind strategy) and queued for
     * the compile threads: nnext points in `next` once have_next */
    uint64_t *next, *next_scratch;
    int nnext, have_next, round_ahead;
    size_t used;              /* unique points counted against the budget */
    size_t seen_valid;        /* unique points answered with a state other than PRUNED */
    uint64_t nvalid;
    int nvalid_exact;
    double best_obj;
    long best_idx;
    double t0;
    int batch_counted;        /* the current round brought a point new to the run */
    /* evaluate_many: the round's new points, their outcomes as they arrived */
    uint64_t *bpoints;
    kopt_tune_outcome *bout;
    unsigned char *bdone;
    int nb;
    int batch_short;          /* a point of the batch got no outcome (stopped) */
    kopt_status batch_rc;     /* the first failure to record an outcome */
} run;

static kopt_tune_objective search_objective(kopt_tune_objective o)
{
    return o == KOPT_TUNE_TIME_ENERGY ? KOPT_TUNE_TIME : o;
}

static kopt_status record(run *r, uint64_t point, const kopt_tune_outcome *o, int repeat)
{
    kopt_tune_result *res = r->res;
    double v;

    if (res->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 64;
        uint64_t *p = realloc(res->points, cap * sizeof(*p));
        kopt_tune_outcome *oc;
        unsigned char *rp;
        if (p)
            res->points = p;
        oc = p ? realloc(res->outcomes, cap * sizeof(*oc)) : NULL;
        if (oc)
            res->outcomes = oc;
        rp = oc ? realloc(r->repeat, cap) : NULL;
        if (!rp)
            return kopt_seterr(r->ctx, KOPT_E_NOMEM, "tune");
        r->repeat = rp;
        r->cap = cap;
    }
    res->points[res->n] = point;
    res->outcomes[res->n] = *o;
    r->repeat[res->n] = (unsigned char)repeat;
    if (!repeat && kopt_tune__map_put(&r->seen, point, (double)res->n) != 0)
        return kopt_seterr(r->ctx, KOPT_E_NOMEM, "tune");
    res->n++;
    v = kopt_tune_outcome_objective(o, search_objective(r->opts.objective));
    if (!repeat && isfinite(v) && v < r->best_obj) {
        if (res->nimprovements == r->impr_cap) {
            size_t cap = r->impr_cap ? r->impr_cap * 2 : 16;
            size_t *a = realloc(res->best_after, cap * sizeof(*a));
            double *b;
            if (a)
                res->best_after = a;
            b = a ? realloc(res->best_value, cap * sizeof(*b)) : NULL;
            if (!b)
                return kopt_seterr(r->ctx, KOPT_E_NOMEM, "tune");
            res->best_value = b;
            r->impr_cap = cap;
        }
        res->best_after[res->nimprovements] = r->used;
        res->best_value[res->nimprovements] = v;
        res->nimprovements++;
        r->best_obj = v;
        r->best_idx = (long)res->n - 1;
    }
    return KOPT_OK;
}

static void report(run *r)
{
    kopt_tune_progress p;

    if (!r->opts.progress)
        return;
    memset(&p, 0, sizeof(p));
    p.evaluated = r->res->evaluated;
    p.cached = r->res->cached;
    p.failed = r->res->failed;
    p.budget = r->opts.max_evals > 0 ? (size_t)r->opts.max_evals : 0;
    p.elapsed_s = (kopt_now_ms() - r->t0) / 1000.0;
    if (r->best_idx >= 0) {
        p.has_best = 1;
        p.best_point = r->res->points[r->best_idx];
        p.best_objective = r->best_obj;
    }
    r->opts.progress(r->opts.progress_user, &p);
}

/* ---- batches (evaluate_many) --------------------------------------------------------------- */

static int batch_find(const run *r, uint64_t point)
{
    for (int i = 0; i < r->nb; i++)
        if (r->bpoints[i] == point)
            return i;
    return -1;
}

/* The round's points that need evaluating: not answered in this run, not cached, valid,
 * each once; written to out, returns how many. */
static int new_points(run *r, const uint64_t *points, int n, uint64_t *out)
{
    int k = 0;

    for (int i = 0; i < n; i++) {
        int dup = 0;
        for (int j = 0; j < k; j++)
            dup |= out[j] == points[i];
        if (dup || kopt_tune__map_get(&r->seen, points[i], NULL) ||
            kopt_tune_cache_get(r->cache, points[i]) ||
            !kopt_tune_space_valid(r->space, points[i], NULL, 0))
            continue;
        out[k++] = points[i];
    }
    return k;
}

/* The first evaluation starts now (the first to call this; with several GPUs, under
 * wait_mu). */
static void first_eval_seen(run *r)
{
    if (r->res->first_eval_s == 0)
        r->res->first_eval_s = (kopt_now_ms() - r->t0) / 1000.0;
}

static void batch_ready(void *user, uint64_t point)
{
    run *r = user;
    kopt_status rc;
    char msg[256];
    double waited;

    if (!r->pipe) {
        pthread_mutex_lock(&r->wait_mu);
        first_eval_seen(r);
        pthread_mutex_unlock(&r->wait_mu);
        return;
    }
    pipeline_wait(r->pipe, point, &rc, msg, sizeof(msg), &waited);
    pthread_mutex_lock(&r->wait_mu);   /* each slot's wait: GPU-seconds idle for compiles */
    r->res->compile_wait_s += waited / 1000.0;
    first_eval_seen(r);
    pthread_mutex_unlock(&r->wait_mu);
}

/* An outcome arrived (on the driver's thread): into the cache, so the store has it now. */
static void batch_done(void *user, int index, const kopt_tune_outcome *o)
{
    run *r = user;
    kopt_status rc;

    if (index < 0 || index >= r->nb || r->bdone[index])
        return;
    r->bout[index] = *o;
    r->bdone[index] = 1;
    if ((rc = kopt_tune_cache_put(r->cache, r->ctx, r->bpoints[index], o)) != KOPT_OK &&
        r->batch_rc == KOPT_OK)
        r->batch_rc = kopt_adderr(r->ctx, rc, "tune: recording an outcome");
}

/* Evaluate the round's new points at once. */
static kopt_status run_batch(run *r, const uint64_t *points, int n)
{
    kopt_tune_batch b;
    double t;
    kopt_status rc;

    r->nb = new_points(r, points, n, r->bpoints);
    r->batch_short = 0;
    r->batch_rc = KOPT_OK;
    memset(r->bdone, 0, (size_t)r->nb);
    if (r->nb == 0)
        return KOPT_OK;
    b.user = r;
    b.ready = batch_ready;
    b.done = batch_done;
    b.stop = r->opts.stop;
    r->res->rounds++;
    t = kopt_now_ms();
    rc = r->eval->evaluate_many(r->eval->user, r->ctx, r->bpoints, r->nb,
                                r->strat->wants_findings, &b);
    r->res->eval_s += (kopt_now_ms() - t) / 1000.0;
    return rc != KOPT_OK ? rc : r->batch_rc;
}

/* Answer one point (see the top of the file), record it, tell the strategy. */
static kopt_status answer(run *r, uint64_t point)
{
    kopt_tune_result *res = r->res;
    const kopt_tune_outcome *known;
    kopt_tune_outcome o;
    double first;
    int repeat = 0, bi;
    kopt_status rc;

    memset(&o, 0, sizeof(o));
    if (kopt_tune__map_get(&r->seen, point, &first)) {
        o = res->outcomes[(size_t)first];
        repeat = 1;
        res->cached++;
    } else if ((bi = batch_find(r, point)) >= 0) {
        if (!r->bdone[bi]) {              /* stopped before it was evaluated */
            r->batch_short = 1;
            return KOPT_OK;
        }
        o = r->bout[bi];                  /* already in the cache (batch_done) */
        res->evaluated++;
        if (o.state != KOPT_TUNE_OK)
            res->failed++;
        r->used++;
        r->seen_valid++;
        r->batch_counted = 1;
    } else if ((known = kopt_tune_cache_get(r->cache, point)) != NULL) {
        o = *known;
        res->cached++;
        if (o.state != KOPT_TUNE_PRUNED) {
            r->used++;
            r->seen_valid++;
            r->batch_counted = 1;
        }
    } else if (!kopt_tune_space_valid(r->space, point, o.message, sizeof(o.message))) {
        o.state = KOPT_TUNE_PRUNED;
    } else {
        double t;
        if (r->pipe) {
            kopt_status prc;
            char msg[256];
            double waited;
            pipeline_wait(r->pipe, point, &prc, msg, sizeof(msg), &waited);
            res->compile_wait_s += waited / 1000.0;
            if (prc != KOPT_OK) {
                char *label = kopt_tune_space_label(r->space, point);
                kopt_log(r->ctx, KOPT_LOG_DEBUG, "tune: preparing %s failed (%s); the "
                         "evaluation will report it", label ? label : "?", msg);
                free(label);
            }
        }
        first_eval_seen(r);
        t = kopt_now_ms();
        rc = r->eval->evaluate(r->eval->user, r->ctx, point, r->strat->wants_findings, &o);
        res->eval_s += (kopt_now_ms() - t) / 1000.0;
        if (rc != KOPT_OK)
            return rc;
        if ((rc = kopt_tune_cache_put(r->cache, r->ctx, point, &o)) != KOPT_OK)
            return kopt_adderr(r->ctx, rc, "tune: recording an outcome");
        res->evaluated++;
        if (o.state != KOPT_TUNE_OK)
            res->failed++;
        r->used++;
        r->seen_valid++;
        r->batch_counted = 1;
    }
    if ((rc = record(r, point, &o, repeat)) != KOPT_OK)
        return rc;
    if (r->strat->tell)
        r->strat->tell(r->sstate, point, &o);
    report(r);
    return KOPT_OK;
}

/* 1 and *why when the run must stop before answering another point. */
static int should_stop(run *r, kopt_tune_stop *why)
{
    if (r->opts.stop && *r->opts.stop) {
        *why = KOPT_TUNE_STOP_INTERRUPTED;
        return 1;
    }
    if (r->nvalid_exact && r->seen_valid >= r->nvalid) {
        *why = KOPT_TUNE_STOP_EXHAUSTED;
        return 1;
    }
    if (r->opts.max_evals > 0 && r->used >= (size_t)r->opts.max_evals) {
        *why = KOPT_TUNE_STOP_BUDGET;
        return 1;
    }
    if (r->opts.max_seconds > 0 && (kopt_now_ms() - r->t0) / 1000.0 >= r->opts.max_seconds) {
        *why = KOPT_TUNE_STOP_TIME;
        return 1;
    }
    return 0;
}

/* Queue the round's points that will need evaluating for the compile threads (`append`:
 * behind the current round's, for the round asked ahead). */
static void submit_round(run *r, const uint64_t *points, int n, uint64_t *scratch, int append)
{
    pipeline_submit(r->pipe, scratch, new_points(r, points, n, scratch), append);
}

/* A blind strategy's next round, asked now (before this round's answers) and queued behind
 * this round for the compile threads, so they compile it while this round evaluates. Its
 * size assumes every new point of this round counts against the budget: the rounds asked
 * later make up for any that do not, and the points come in the same order. */
static void ask_ahead(run *r, const kopt_tune_strategy *strategy, const kopt_tune_history *h,
                      const uint64_t *round, int nround)
{
    long left = r->opts.lookahead;

    r->have_next = 0;
    if (r->opts.max_evals > 0) {
        long fresh = new_points(r, round, nround, r->next_scratch);
        left = (long)r->opts.max_evals - (long)r->used - fresh;
        if (left <= 0)
            return;                    /* this round may end the run: nothing to ask */
        if (left > r->opts.lookahead)
            left = r->opts.lookahead;
    }
    r->nnext = strategy->ask(r->sstate, h, r->next, (int)left);
    if (r->nnext > left)
        r->nnext = (int)left;
    r->have_next = 1;                  /* 0 points: the strategy finished */
    if (r->nnext > 0)
        submit_round(r, r->next, r->nnext, r->next_scratch, 1);
}

static int cmp_time_energy(const void *a, const void *b, void *ctx)
{
    const kopt_tune_outcome *o = ctx;
    const kopt_tune_outcome *x = &o[*(const size_t *)a], *y = &o[*(const size_t *)b];

    if (x->time_ms != y->time_ms)
        return x->time_ms < y->time_ms ? -1 : 1;
    if (x->energy_mj != y->energy_mj)
        return x->energy_mj < y->energy_mj ? -1 : 1;
    return 0;
}

/* The best outcome by the objective, then the time/energy Pareto set. */
static kopt_status finish(run *r)
{
    kopt_tune_result *res = r->res;
    size_t *idx = NULL, m = 0;
    double min_energy = INFINITY, min_energy_time = -1;

    if (r->best_idx >= 0) {
        long pick = r->best_idx;
        if (r->opts.objective == KOPT_TUNE_TIME_ENERGY) {
            double limit = res->outcomes[r->best_idx].time_ms * (1.0 + r->opts.energy_slack);
            double least = INFINITY;
            for (size_t i = 0; i < res->n; i++) {
                const kopt_tune_outcome *o = &res->outcomes[i];
                if (r->repeat[i] || o->state != KOPT_TUNE_OK || !(o->energy_mj > 0) ||
                    !(o->time_ms <= limit))
                    continue;
                if (o->energy_mj < least ||
                    (o->energy_mj == least && o->time_ms < res->outcomes[pick].time_ms)) {
                    least = o->energy_mj;
                    pick = (long)i;
                }
            }
        }
        res->has_best = 1;
        res->best_point = res->points[pick];
        res->best = res->outcomes[pick];
    }
    if (res->n && !(idx = malloc(res->n * sizeof(*idx))))
        return kopt_seterr(r->ctx, KOPT_E_NOMEM, "tune");
    for (size_t i = 0; i < res->n; i++)
        if (!r->repeat[i] && res->outcomes[i].state == KOPT_TUNE_OK &&
            res->outcomes[i].energy_mj > 0 && res->outcomes[i].time_ms > 0)
            idx[m++] = i;
    if (m) {
        qsort_r(idx, m, sizeof(*idx), cmp_time_energy, res->outcomes);
        if (!(res->pareto = malloc(m * sizeof(*res->pareto)))) {
            free(idx);
            return kopt_seterr(r->ctx, KOPT_E_NOMEM, "tune");
        }
        for (size_t i = 0; i < m; i++) {
            /* in time order: kept when it uses less energy than every faster one (or ties
             * with the kept point that set the least energy: neither dominates the other) */
            const kopt_tune_outcome *o = &res->outcomes[idx[i]];
            if (o->energy_mj < min_energy ||
                (o->energy_mj == min_energy && o->time_ms == min_energy_time)) {
                res->pareto[res->npareto++] = res->points[idx[i]];
                min_energy = o->energy_mj;
                min_energy_time = o->time_ms;
            }
        }
    }
    free(idx);
    return KOPT_OK;
}

kopt_status kopt_tune_run_strategy(kopt_tune_result **out, kopt_ctx *ctx,
                                   const kopt_tune_space *space, kopt_tune_cache *cache,
                                   const kopt_tune_evaluator *eval,
                                   const kopt_tune_strategy *strategy,
                                   const kopt_tune_opts *opts)
{
    static const kopt_tune_opts defaults = KOPT_TUNE_OPTS_INIT;
    kopt_tune_strategy_opts sopts;
    uint64_t *round = NULL, *scratch = NULL;
    int nround = 0, pos = 0, stalled = 0, from_ahead = 0;
    kopt_tune_stop why = KOPT_TUNE_STOP_FINISHED;
    kopt_status rc = KOPT_OK;
    run r;

    *out = NULL;
    memset(&r, 0, sizeof(r));
    r.wait_mu = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
    r.ctx = ctx;
    r.space = space;
    r.cache = cache;
    r.eval = eval;
    r.strat = strategy;
    r.opts = opts ? *opts : defaults;
    r.best_obj = INFINITY;
    r.best_idx = -1;
    r.t0 = kopt_now_ms();
    if (r.opts.lookahead < 1)
        r.opts.lookahead = 1;
    if (r.opts.lookahead > MAX_LOOKAHEAD)
        r.opts.lookahead = MAX_LOOKAHEAD;
    if (r.opts.compile_threads > MAX_COMPILE_THREADS)
        r.opts.compile_threads = MAX_COMPILE_THREADS;
    /* said only when the affinity is what limits: a small machine is not worth a warning */
    if (r.opts.compile_threads > 1 && kopt_cpus_usable() < r.opts.compile_threads &&
        kopt_cpus_usable() < sysconf(_SC_NPROCESSORS_ONLN))
        kopt_log(ctx, KOPT_LOG_WARN, "tune: %d compile threads, but this process may run on "
                 "only %d CPU(s) (its CPU affinity: mpirun binds each rank to one core unless "
                 "started with --bind-to none or --map-by ...:PE=N): compiling will be slower",
                 r.opts.compile_threads, kopt_cpus_usable());
    if (!(r.opts.energy_slack >= 0))
        r.opts.energy_slack = defaults.energy_slack;
    if (!eval || !eval->evaluate || !strategy || !strategy->ask)
        return kopt_seterr(ctx, KOPT_E_INVALID, "tune: no evaluator or no strategy");
    if (cache && kopt_tune_cache_space(cache) != space)
        return kopt_seterr(ctx, KOPT_E_INVALID, "tune: the cache was made for another space");
    if (!(r.res = calloc(1, sizeof(*r.res))) ||
        !(round = malloc((size_t)r.opts.lookahead * sizeof(*round))) ||
        !(scratch = malloc((size_t)r.opts.lookahead * sizeof(*scratch))) ||
        !(r.bpoints = malloc((size_t)r.opts.lookahead * sizeof(*r.bpoints))) ||
        !(r.bout = malloc((size_t)r.opts.lookahead * sizeof(*r.bout))) ||
        !(r.bdone = malloc((size_t)r.opts.lookahead)) ||
        !(r.next = malloc((size_t)r.opts.lookahead * sizeof(*r.next))) ||
        !(r.next_scratch = malloc((size_t)r.opts.lookahead * sizeof(*r.next_scratch)))) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "tune");
        goto cleanup;
    }
    if (!cache) {
        if ((rc = kopt_tune_cache_create(&r.cache, ctx, space, NULL)) != KOPT_OK)
            goto cleanup;
    }
    if (space->npoints <= EXHAUSTED_SCAN_LIMIT) {
        r.nvalid = kopt_tune_space_count_valid(space, 0, &r.nvalid_exact);
    }
    memset(&sopts, 0, sizeof(sopts));
    sopts.seed = r.opts.seed;
    sopts.max_evals = r.opts.max_evals;
    sopts.objective = r.opts.objective;
    sopts.options = r.opts.strategy_options;
    if (strategy->create &&
        (rc = strategy->create(&r.sstate, ctx, space, &sopts)) != KOPT_OK) {
        rc = kopt_adderr(ctx, rc, "strategy %s", strategy->name);
        goto cleanup;
    }
    if (eval->prepare && r.opts.compile_threads > 0)
        r.pipe = pipeline_new(ctx, eval, r.opts.compile_threads, r.opts.lookahead);
    kopt_tune_warm(eval);      /* here: the workers it starts live as long as this thread */
    {   /* asking a round ahead; KOPT_TUNE_ROUND_AHEAD=0 turns it off (to measure it) */
        const char *e = getenv("KOPT_TUNE_ROUND_AHEAD");
        r.round_ahead = r.pipe && strategy->blind && !(e && strcmp(e, "0") == 0);
    }

    for (;;) {
        /* a batch's round is answered to its end first: its outcomes are stored already, so
         * the strategy and the result hear of them (a stop shows as a point without one) */
        if (!(r.nb > 0 && pos < nround) && should_stop(&r, &why))
            break;
        if (pos == nround) {
            kopt_tune_history h;
            int max = r.opts.lookahead;
            if (r.opts.max_evals > 0 && (size_t)r.opts.max_evals - r.used < (size_t)max)
                max = (int)((size_t)r.opts.max_evals - r.used);
            h.n = r.res->n;
            h.points = r.res->points;
            h.outcomes = r.res->outcomes;
            h.best = r.best_idx;
            h.objective = r.opts.objective;
            h.cache = r.cache;
            from_ahead = r.have_next;  /* asked ahead, and queued for compiling already */
            if (from_ahead) {
                nround = r.nnext;
                memcpy(round, r.next, (size_t)(nround > 0 ? nround : 0) * sizeof(*round));
            } else {
                nround = strategy->ask(r.sstate, &h, round, max);
            }
            r.have_next = 0;
            pos = 0;
            if (nround <= 0) {
                nround = 0;
                why = KOPT_TUNE_STOP_FINISHED;
                break;
            }
            if (nround > max) {
                if (from_ahead) {      /* the rest is the following round, in order */
                    r.nnext = nround - max;
                    memmove(r.next, round + max, (size_t)r.nnext * sizeof(*r.next));
                    r.have_next = 1;
                }
                nround = max;
            }
            r.batch_counted = 0;
            if (r.pipe && !from_ahead)
                submit_round(&r, round, nround, scratch, 0);
            if (r.round_ahead && !r.have_next)
                ask_ahead(&r, strategy, &h, round, nround);
            if (eval->evaluate_many && (rc = run_batch(&r, round, nround)) != KOPT_OK)
                goto cleanup;
        }
        if ((rc = answer(&r, round[pos++])) != KOPT_OK)
            goto cleanup;
        if (r.batch_short) {
            why = KOPT_TUNE_STOP_INTERRUPTED;
            break;
        }
        if (pos == nround) {
            stalled = r.batch_counted ? 0 : stalled + 1;
            if (stalled >= KOPT_TUNE_STALL_ASKS) {
                why = KOPT_TUNE_STOP_STALLED;
                break;
            }
        }
    }
    pipeline_free(r.pipe);
    r.pipe = NULL;
    r.res->stop = why;
    if ((rc = finish(&r)) != KOPT_OK)
        goto cleanup;
    r.res->elapsed_s = (kopt_now_ms() - r.t0) / 1000.0;
    *out = r.res;
    r.res = NULL;
cleanup:
    pipeline_free(r.pipe);   /* joins every thread before returning */
    if (r.sstate && strategy->destroy)
        strategy->destroy(r.sstate);
    if (r.cache != cache)
        kopt_tune_cache_free(r.cache);
    kopt_tune_result_free(r.res);
    kopt_tune__map_free(&r.seen);
    free(r.repeat);
    free(round);
    free(scratch);
    free(r.bpoints);
    free(r.bout);
    free(r.next);
    free(r.next_scratch);
    free(r.bdone);
    return rc;
}

kopt_status kopt_tune_run(kopt_tune_result **out, kopt_ctx *ctx, const kopt_tune_space *space,
                          kopt_tune_cache *cache, const kopt_tune_evaluator *eval,
                          const kopt_tune_opts *opts)
{
    const char *name = opts && opts->strategy ? opts->strategy : "annealing";
    const kopt_tune_strategy *s = kopt_tune_strategy_find(name);

    *out = NULL;
    if (!s) {
        kopt_buf known = KOPT_BUF_INIT;
        for (int i = 0; kopt_tune_strategies[i]; i++)
            kopt_buf_printf(&known, "%s%s", i ? ", " : "", kopt_tune_strategies[i]->name);
        kopt_seterr(ctx, KOPT_E_INVALID, "unknown strategy '%s' (known: %s)", name,
                    kopt_buf_cstr(&known));
        kopt_buf_free(&known);
        return KOPT_E_INVALID;
    }
    return kopt_tune_run_strategy(out, ctx, space, cache, eval, s, opts);
}
