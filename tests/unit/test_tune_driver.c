/*
 * Unit tests of the tuning driver (kopt_tune_run) on replayed, synthetic measurements: the
 * budget counts unique points (new and cached), cached points are not evaluated again,
 * pruned points are neither evaluated nor counted, the stop flag, the time budget, stall
 * and exhaustion detection, convergence records, the time/energy Pareto set and the
 * TIME_ENERGY choice, the compile-ahead pipeline (every point prepared before its
 * evaluation, in parallel, no thread left running), and a replay-driven run killed with
 * SIGKILL midway that resumes from the store with zero re-evaluations and the same best.
 *
 * The space: A in 0..31 x B in {1, 2, 3, 4}, constraint A % 8 != 7 (128 points, 112 valid).
 * Synthetic outcomes: a time and an energy from a fixed formula; A == 5 fails to compile.
 */
#include "ktest.h"
#include "tune_fixture.h"

#include "kopt/store.h"
#include "kopt/tune.h"

#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static kopt_ctx *ctx;
static char *tmp;
static kopt_problem *prob;
static kopt_candidate *tmpl;
static kopt_tune_space *space;
static kopt_tune_cache *recorded;   /* every point's synthetic outcome */

static const char *const TEMPLATE =
    "/*@kopt\n{\"params\": {\"A\": {\"range\": [0, 31]}, \"B\": [1, 2, 3, 4]},"
    " \"constraints\": [\"A % 8 != 7\"]}\n*/\n"
    "__global__ void k(const float *x, float *y, int n) {}\n";

static void synthetic(uint64_t p, kopt_tune_outcome *o)
{
    int idx[2];
    int a, b;

    kopt_tune_space_decode(space, p, idx);
    a = (int)space->params[0].values[idx[0]];
    b = (int)space->params[1].values[idx[1]];
    memset(o, 0, sizeof(*o));
    if (a == 5) {
        o->state = KOPT_TUNE_COMPILE_ERROR;
        snprintf(o->message, sizeof(o->message), "does not compile");
        return;
    }
    o->state = KOPT_TUNE_OK;
    o->time_ms = 1.0 + (double)((a * 37 + b * 11) % 53) / 10.0;
    /* power: the fastest configurations draw the most, the others vary (ties included) */
    o->power_w = o->time_ms > 1.05 ? 150.0 + 40.0 * ((a * 13 + b * 5) % 9) : 500.0;
    o->energy_mj = o->time_ms * o->power_w / 1000.0;
    o->compile_ms = 100 + a;
    o->eval_ms = 200 + b;
    snprintf(o->verdict, sizeof(o->verdict), "OK");
}

static kopt_tune_key test_key(void)
{
    kopt_tune_key k;

    memset(&k, 0, sizeof(k));
    snprintf(k.problem, sizeof(k.problem), "td");
    snprintf(k.problem_hash, sizeof(k.problem_hash), "%s", prob->hash);
    snprintf(k.template_hash, sizeof(k.template_hash), "%s", tmpl->hash);
    snprintf(k.sizes, sizeof(k.sizes), "N=1024");
    snprintf(k.device, sizeof(k.device), "Synthetic GPU");
    return k;
}

static size_t count_valid(void)
{
    size_t n = 0;
    for (uint64_t p = 0; p < space->npoints; p++)
        n += (size_t)kopt_tune_space_valid(space, p, NULL, 0);
    return n;
}

/* ---- a counting evaluator around the replay one --------------------------------------- */

typedef struct counter {
    kopt_tune_evaluator *inner;
    int sleep_ms;             /* per evaluate */
    int prepare_sleep_ms;     /* > 0: offer prepare */
    uint64_t fail_prepare;    /* prepare fails for this point (UINT64_MAX: none) */
    pthread_mutex_t mu;
    int evals, prepares, active, max_active, bad_order, pruned_evaluated;
    unsigned char evaluated[128], prepared[128];
    uint64_t order[4096];     /* evaluated points in order */
} counter;

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static kopt_status counter_prepare(void *user, kopt_ctx *c, uint64_t point)
{
    counter *k = user;

    pthread_mutex_lock(&k->mu);
    k->active++;
    if (k->active > k->max_active)
        k->max_active = k->active;
    pthread_mutex_unlock(&k->mu);
    sleep_ms(k->prepare_sleep_ms);
    pthread_mutex_lock(&k->mu);
    k->active--;
    k->prepares++;
    if (point < 128)
        k->prepared[point] = 1;
    pthread_mutex_unlock(&k->mu);
    if (point == k->fail_prepare)
        return kopt_seterr(c, KOPT_E_COMPILE, "prepare failed on purpose");
    return KOPT_OK;
}

static kopt_status counter_evaluate(void *user, kopt_ctx *c, uint64_t point, int want_findings,
                                    kopt_tune_outcome *out)
{
    counter *k = user;
    kopt_status rc;

    pthread_mutex_lock(&k->mu);
    if (k->prepare_sleep_ms > 0 && point < 128 && !k->prepared[point])
        k->bad_order++;
    if (point < 128)
        k->evaluated[point]++;
    if (k->evals < 4096)
        k->order[k->evals] = point;
    k->evals++;
    if (!kopt_tune_space_valid(space, point, NULL, 0))
        k->pruned_evaluated++;
    pthread_mutex_unlock(&k->mu);
    if (k->sleep_ms > 0)
        sleep_ms(k->sleep_ms);
    rc = k->inner->evaluate(k->inner->user, c, point, want_findings, out);
    if (rc == KOPT_OK && point == k->fail_prepare) {
        out->state = KOPT_TUNE_COMPILE_ERROR;     /* evaluate compiles again and reports */
        snprintf(out->message, sizeof(out->message), "reported by evaluate");
    }
    return rc;
}

static void counter_init(counter *k, kopt_tune_evaluator *ev)
{
    memset(k, 0, sizeof(*k));
    pthread_mutex_init(&k->mu, NULL);
    k->fail_prepare = UINT64_MAX;
    if (kopt_tune_evaluator_replay(&k->inner, ctx, space, recorded) != KOPT_OK)
        KTEST_FAIL("replay: %s", kopt_errmsg(ctx));
    memset(ev, 0, sizeof(*ev));
    ev->user = k;
    ev->evaluate = counter_evaluate;
}

static void counter_done(counter *k)
{
    kopt_tune_evaluator_free(k->inner);
    pthread_mutex_destroy(&k->mu);
}

/* ---- in-test strategies ------------------------------------------------------------------ */

/* "scan": points from `start` in enumeration order, `batch` per ask, pruned ones included
 * (to see the driver prune them); `repeat` > 0 proposes point `start` forever. */
static struct scan_cfg {
    uint64_t start;
    int batch;
    int repeat;
    int tells;
} scan_cfg;

typedef struct scan_state {
    uint64_t next;
} scan_state;

static kopt_status scan_create(void **state, kopt_ctx *c, const kopt_tune_space *s,
                               const kopt_tune_strategy_opts *o)
{
    scan_state *st = calloc(1, sizeof(*st));
    (void)s;
    (void)o;
    if (!st)
        return kopt_seterr(c, KOPT_E_NOMEM, "scan");
    st->next = scan_cfg.start;
    scan_cfg.tells = 0;
    *state = st;
    return KOPT_OK;
}

static int scan_ask(void *state, const kopt_tune_history *h, uint64_t *points, int max)
{
    scan_state *st = state;
    int n = 0;

    (void)h;
    if (scan_cfg.repeat) {
        points[0] = scan_cfg.start;
        return 1;
    }
    while (n < max && n < scan_cfg.batch && st->next < space->npoints)
        points[n++] = st->next++;
    return n;
}

static void scan_tell(void *state, uint64_t point, const kopt_tune_outcome *o)
{
    (void)state;
    (void)point;
    (void)o;
    scan_cfg.tells++;
}

static void scan_destroy(void *state)
{
    free(state);
}

static const kopt_tune_strategy scan_strategy = {
    "scan", "in order, for tests", 0, scan_create, scan_ask, scan_tell, scan_destroy, 0,
};
/* the same, saying it is blind (its proposals never depend on outcomes): the driver asks
 * its next round ahead */
static const kopt_tune_strategy scan_blind_strategy = {
    "scan_blind", "in order, blind", 0, scan_create, scan_ask, scan_tell, scan_destroy, 1,
};

static int none_ask(void *state, const kopt_tune_history *h, uint64_t *points, int max)
{
    (void)state;
    (void)h;
    (void)points;
    (void)max;
    return 0;
}

static const kopt_tune_strategy none_strategy = {
    "none", "proposes nothing", 0, scan_create, none_ask, scan_tell, scan_destroy, 0,
};

static kopt_tune_opts base_opts(int max_evals)
{
    kopt_tune_opts o = KOPT_TUNE_OPTS_INIT;
    o.max_evals = max_evals;
    o.compile_threads = 0;
    return o;
}

static size_t count_state(const kopt_tune_result *r, kopt_tune_state s)
{
    size_t n = 0;
    for (size_t i = 0; i < r->n; i++)
        n += r->outcomes[i].state == s;
    return n;
}

/* ---- tests --------------------------------------------------------------------------------- */

static void test_budget_and_pruned(void)
{
    kopt_tune_evaluator ev;
    kopt_tune_result *r = NULL;
    kopt_tune_cache *c = NULL;
    kopt_tune_opts o = base_opts(30);
    counter k;

    counter_init(&k, &ev);
    scan_cfg = (struct scan_cfg){0, 4, 0, 0};
    CHECK_EQ_INT(kopt_tune_cache_create(&c, ctx, space, NULL), KOPT_OK);
    if (!CHECK_EQ_INT(kopt_tune_run_strategy(&r, ctx, space, c, &ev, &scan_strategy, &o),
                      KOPT_OK))
        goto cleanup;
    CHECK_EQ_INT(r->stop, KOPT_TUNE_STOP_BUDGET);
    CHECK_EQ_STR(kopt_tune_stop_name(r->stop), "budget");
    CHECK_EQ_INT(r->evaluated, 30);
    CHECK_EQ_INT(k.evals, 30);
    CHECK_EQ_INT(r->cached, 0);
    CHECK_EQ_INT(k.pruned_evaluated, 0);
    /* the first 30 valid points among points 0..33: A = 0..7 x 4 has 4 pruned (A = 7) and
     * A = 8 brings 2 more valid: 34 outcomes, 4 of them pruned */
    CHECK_EQ_INT(count_state(r, KOPT_TUNE_PRUNED), 4);
    CHECK_EQ_INT(r->n, 34);
    CHECK_EQ_INT(scan_cfg.tells, 34);
    CHECK_EQ_INT(r->failed, 4);                  /* A = 5 does not compile */
    CHECK_EQ_INT(kopt_tune_cache_count(c), 30);  /* pruned points are not cached */
    for (size_t i = 0; i < r->n; i++)
        if (r->outcomes[i].state == KOPT_TUNE_PRUNED)
            CHECK_STR_CONTAINS(r->outcomes[i].message, "A % 8 != 7");
cleanup:
    kopt_tune_result_free(r);
    kopt_tune_result_free(NULL);
    kopt_tune_cache_free(c);
    counter_done(&k);
}

static void test_cached_not_evaluated(void)
{
    kopt_tune_evaluator ev;
    kopt_tune_result *r = NULL;
    kopt_tune_cache *c = NULL;
    kopt_tune_opts o = base_opts(20);
    kopt_tune_outcome oc;
    counter k;
    int stored = 0;

    counter_init(&k, &ev);
    scan_cfg = (struct scan_cfg){0, 3, 0, 0};
    CHECK_EQ_INT(kopt_tune_cache_create(&c, ctx, space, NULL), KOPT_OK);
    /* an earlier run evaluated every other valid point among the first 16 */
    for (uint64_t p = 0; p < 16; p += 2)
        if (kopt_tune_space_valid(space, p, NULL, 0)) {
            synthetic(p, &oc);
            CHECK_EQ_INT(kopt_tune_cache_put(c, ctx, p, &oc), KOPT_OK);
            stored++;
        }
    if (!CHECK_EQ_INT(kopt_tune_run_strategy(&r, ctx, space, c, &ev, &scan_strategy, &o),
                      KOPT_OK))
        goto cleanup;
    CHECK_EQ_INT(r->stop, KOPT_TUNE_STOP_BUDGET);
    CHECK_EQ_INT(r->cached, stored);
    CHECK_EQ_INT(r->evaluated + r->cached, 20);
    CHECK_EQ_INT(k.evals, 20 - stored);
    for (uint64_t p = 0; p < 16; p += 2)
        CHECK_EQ_INT(k.evaluated[p], 0);
cleanup:
    kopt_tune_result_free(r);
    kopt_tune_cache_free(c);
    counter_done(&k);
}

static void test_exhausted_and_finished(void)
{
    kopt_tune_evaluator ev;
    kopt_tune_result *r = NULL;
    kopt_tune_opts o = base_opts(0);
    counter k;

    counter_init(&k, &ev);
    scan_cfg = (struct scan_cfg){0, 5, 0, 0};
    /* no budget: every valid point once, then "exhausted" (the scan would go on to 127) */
    if (CHECK_EQ_INT(kopt_tune_run_strategy(&r, ctx, space, NULL, &ev, &scan_strategy, &o),
                     KOPT_OK)) {
        CHECK_EQ_INT(r->stop, KOPT_TUNE_STOP_EXHAUSTED);
        CHECK_EQ_INT(r->evaluated, count_valid());
        CHECK_EQ_INT(k.evals, count_valid());
    }
    kopt_tune_result_free(r);
    r = NULL;
    if (CHECK_EQ_INT(kopt_tune_run_strategy(&r, ctx, space, NULL, &ev, &none_strategy, &o),
                     KOPT_OK)) {
        CHECK_EQ_INT(r->stop, KOPT_TUNE_STOP_FINISHED);
        CHECK_EQ_INT(r->n, 0);
        CHECK_EQ_INT(r->has_best, 0);
    }
    kopt_tune_result_free(r);
    counter_done(&k);
}

typedef struct stop_after {
    volatile sig_atomic_t flag;
    int calls, at;
} stop_after;

static void progress_stop(void *user, const kopt_tune_progress *p)
{
    stop_after *s = user;
    (void)p;
    if (++s->calls == s->at)
        s->flag = 1;
}

static void test_stop_flag(void)
{
    kopt_tune_evaluator ev;
    kopt_tune_result *r = NULL;
    kopt_tune_opts o = base_opts(50);
    stop_after st = {0, 0, 7};
    counter k;

    counter_init(&k, &ev);
    scan_cfg = (struct scan_cfg){0, 4, 0, 0};
    o.progress = progress_stop;
    o.progress_user = &st;
    o.stop = &st.flag;
    if (CHECK_EQ_INT(kopt_tune_run_strategy(&r, ctx, space, NULL, &ev, &scan_strategy, &o),
                     KOPT_OK)) {
        CHECK_EQ_INT(r->stop, KOPT_TUNE_STOP_INTERRUPTED);
        CHECK_EQ_INT(r->n, 7);                   /* stopped right after the 7th outcome */
        CHECK_EQ_INT(st.calls, 7);               /* progress after every outcome */
        CHECK(r->has_best);
    }
    kopt_tune_result_free(r);
    counter_done(&k);
}

static void test_time_budget(void)
{
    kopt_tune_evaluator ev;
    kopt_tune_result *r = NULL;
    kopt_tune_opts o = base_opts(0);
    counter k;

    counter_init(&k, &ev);
    k.sleep_ms = 10;
    scan_cfg = (struct scan_cfg){0, 2, 0, 0};
    o.max_seconds = 0.1;
    if (CHECK_EQ_INT(kopt_tune_run_strategy(&r, ctx, space, NULL, &ev, &scan_strategy, &o),
                     KOPT_OK)) {
        CHECK_EQ_INT(r->stop, KOPT_TUNE_STOP_TIME);
        CHECK(r->evaluated >= 3 && r->evaluated <= 11);
        CHECK(r->elapsed_s >= 0.1);
        CHECK(r->eval_s > 0.02 && r->eval_s <= r->elapsed_s);
    }
    kopt_tune_result_free(r);
    counter_done(&k);
}

static void test_stalled(void)
{
    kopt_tune_evaluator ev;
    kopt_tune_result *r = NULL;
    kopt_tune_opts o = base_opts(10);
    counter k;

    counter_init(&k, &ev);
    scan_cfg = (struct scan_cfg){9, 1, 1, 0};
    if (CHECK_EQ_INT(kopt_tune_run_strategy(&r, ctx, space, NULL, &ev, &scan_strategy, &o),
                     KOPT_OK)) {
        CHECK_EQ_INT(r->stop, KOPT_TUNE_STOP_STALLED);
        CHECK_EQ_INT(k.evals, 1);                /* a repeat is never evaluated again */
        CHECK_EQ_INT(r->evaluated, 1);
        CHECK_EQ_INT(r->cached, KOPT_TUNE_STALL_ASKS);
        CHECK_EQ_INT(r->n, KOPT_TUNE_STALL_ASKS + 1);
        CHECK_EQ_INT(r->nimprovements, 1);
    }
    kopt_tune_result_free(r);
    r = NULL;
    /* a strategy stuck on a pruned point stalls too, with nothing evaluated */
    scan_cfg = (struct scan_cfg){28, 1, 1, 0};   /* A = 7: pruned */
    if (CHECK_EQ_INT(kopt_tune_run_strategy(&r, ctx, space, NULL, &ev, &scan_strategy, &o),
                     KOPT_OK)) {
        CHECK_EQ_INT(r->stop, KOPT_TUNE_STOP_STALLED);
        CHECK_EQ_INT(r->evaluated, 0);
        CHECK_EQ_INT(r->has_best, 0);
    }
    kopt_tune_result_free(r);
    counter_done(&k);
}

static int dominated(uint64_t p, uint64_t q)
{
    const kopt_tune_outcome *a = kopt_tune_cache_get(recorded, p);
    const kopt_tune_outcome *b = kopt_tune_cache_get(recorded, q);
    return b->time_ms <= a->time_ms && b->energy_mj <= a->energy_mj &&
           (b->time_ms < a->time_ms || b->energy_mj < a->energy_mj);
}

static void test_pareto_time_energy_convergence(void)
{
    kopt_tune_evaluator ev;
    kopt_tune_result *r = NULL;
    kopt_tune_opts o = base_opts(0);
    double best_t = INFINITY, least_e = INFINITY;
    uint64_t want_pick = 0, fastest = 0;
    size_t npareto = 0;
    counter k;

    counter_init(&k, &ev);
    scan_cfg = (struct scan_cfg){0, 8, 0, 0};
    o.objective = KOPT_TUNE_TIME_ENERGY;
    o.energy_slack = 0.10;
    /* what the answers must be, by brute force over the recording */
    for (uint64_t p = 0; p < space->npoints; p++) {
        const kopt_tune_outcome *x = kopt_tune_cache_get(recorded, p);
        if (x && x->state == KOPT_TUNE_OK && x->time_ms < best_t) {
            best_t = x->time_ms;
            fastest = p;
        }
    }
    for (uint64_t p = 0; p < space->npoints; p++) {
        const kopt_tune_outcome *x = kopt_tune_cache_get(recorded, p);
        int dom = 0;
        if (!x || x->state != KOPT_TUNE_OK)
            continue;
        if (x->time_ms <= best_t * 1.10 && x->energy_mj < least_e) {
            least_e = x->energy_mj;
            want_pick = p;
        }
        for (uint64_t q = 0; q < space->npoints && !dom; q++) {
            const kopt_tune_outcome *y = kopt_tune_cache_get(recorded, q);
            dom = y && y->state == KOPT_TUNE_OK && dominated(p, q);
        }
        npareto += !dom;
    }
    CHECK(want_pick != fastest);                 /* the data makes the choice matter */
    if (!CHECK_EQ_INT(kopt_tune_run_strategy(&r, ctx, space, NULL, &ev, &scan_strategy, &o),
                      KOPT_OK))
        goto cleanup;
    CHECK(r->has_best);
    CHECK_EQ_INT(r->best_point, want_pick);
    CHECK(r->best.energy_mj == least_e);
    /* the Pareto set: exactly the non-dominated points */
    CHECK_EQ_INT(r->npareto, npareto);
    CHECK(npareto >= 2);
    for (size_t i = 0; i < r->npareto; i++)
        for (uint64_t q = 0; q < space->npoints; q++) {
            const kopt_tune_outcome *y = kopt_tune_cache_get(recorded, q);
            if (y && y->state == KOPT_TUNE_OK && dominated(r->pareto[i], q))
                KTEST_FAIL("pareto point %llu is dominated by %llu",
                           (unsigned long long)r->pareto[i], (unsigned long long)q);
        }
    /* convergence: each improvement strictly better, counted at a growing evaluation */
    if (CHECK(r->nimprovements >= 2)) {
        for (size_t i = 1; i < r->nimprovements; i++) {
            CHECK(r->best_value[i] < r->best_value[i - 1]);
            CHECK(r->best_after[i] > r->best_after[i - 1]);
        }
        CHECK(r->best_value[r->nimprovements - 1] == best_t);
        CHECK_EQ_INT(r->best_after[0], 1);
    }
    kopt_tune_result_free(r);
    r = NULL;
    /* the TIME objective picks the fastest */
    o.objective = KOPT_TUNE_TIME;
    if (CHECK_EQ_INT(kopt_tune_run_strategy(&r, ctx, space, NULL, &ev, &scan_strategy, &o),
                     KOPT_OK))
        CHECK_EQ_INT(r->best_point, fastest);
cleanup:
    kopt_tune_result_free(r);
    counter_done(&k);
}

static void test_pipeline(void)
{
    kopt_tune_evaluator ev;
    kopt_tune_result *r = NULL;
    kopt_tune_opts o = base_opts(0);
    counter k;
    int prepares_at_return;
    uint64_t fail_point = 10;                   /* A = 2, B = 3: valid */

    counter_init(&k, &ev);
    ev.prepare = counter_prepare;
    k.prepare_sleep_ms = 5;
    k.fail_prepare = fail_point;
    scan_cfg = (struct scan_cfg){0, 8, 0, 0};
    o.compile_threads = 3;
    o.lookahead = 8;
    o.max_evals = 40;
    if (!CHECK_EQ_INT(kopt_tune_run_strategy(&r, ctx, space, NULL, &ev, &scan_strategy, &o),
                      KOPT_OK))
        goto cleanup;
    pthread_mutex_lock(&k.mu);
    CHECK_EQ_INT(k.active, 0);                   /* no prepare runs after the return */
    prepares_at_return = k.prepares;
    pthread_mutex_unlock(&k.mu);
    CHECK_EQ_INT(k.bad_order, 0);                /* each point prepared before evaluated */
    CHECK_EQ_INT(k.evals, 40);
    CHECK_EQ_INT(k.prepares, 40);                /* only points that needed evaluating */
    CHECK(k.max_active >= 2);                    /* in parallel */
    CHECK(k.max_active <= 3);
    CHECK(r->compile_wait_s >= 0);
    CHECK(r->first_eval_s > 0 && r->first_eval_s <= r->elapsed_s);   /* the first compile */
    /* a failed prepare is no outcome of its own: evaluate's report is */
    for (size_t i = 0; i < r->n; i++)
        if (r->points[i] == fail_point)
            CHECK_STR_CONTAINS(r->outcomes[i].message, "reported by evaluate");
    kopt_tune_result_free(r);
    r = NULL;
    /* stopped while points are still queued: the queue is dropped, the threads joined */
    {
        stop_after st = {0, 0, 2};
        memset(k.prepared, 0, sizeof(k.prepared));
        k.evals = 0;
        o.progress = progress_stop;
        o.progress_user = &st;
        o.stop = &st.flag;
        o.max_evals = 0;
        k.prepare_sleep_ms = 20;
        if (CHECK_EQ_INT(kopt_tune_run_strategy(&r, ctx, space, NULL, &ev, &scan_strategy, &o),
                         KOPT_OK)) {
            CHECK_EQ_INT(r->stop, KOPT_TUNE_STOP_INTERRUPTED);
            CHECK_EQ_INT(k.evals, 2);
        }
        pthread_mutex_lock(&k.mu);
        CHECK_EQ_INT(k.active, 0);
        prepares_at_return = k.prepares;
        pthread_mutex_unlock(&k.mu);
        sleep_ms(60);
        CHECK_EQ_INT(k.prepares, prepares_at_return);   /* nothing ran on afterwards */
    }
cleanup:
    kopt_tune_result_free(r);
    counter_done(&k);
}

/* ---- a round asked ahead (blind strategies) ------------------------------------------------ */

/* evaluate, but at point `watch` first wait (up to 500 ms) for point `wait_for` to be
 * prepared: it is when the next round was asked ahead and is compiling meanwhile */
static struct {
    uint64_t watch, wait_for;
    int seen;
} ahead;

static kopt_status ahead_evaluate(void *user, kopt_ctx *c, uint64_t point, int want_findings,
                                  kopt_tune_outcome *out)
{
    counter *k = user;

    if (point == ahead.watch) {
        for (int i = 0; i < 100 && !ahead.seen; i++) {
            pthread_mutex_lock(&k->mu);
            ahead.seen = k->prepared[ahead.wait_for];
            pthread_mutex_unlock(&k->mu);
            if (!ahead.seen)
                sleep_ms(5);
        }
    }
    return counter_evaluate(user, c, point, want_findings, out);
}

/* One run of scan_blind (rounds of 8, 2 compile threads) with budget `budget`; the points
 * evaluated in order into order[] (their count returned), ahead.seen set as it went. */
static int ahead_run(int budget, uint64_t *order, int *prepares)
{
    kopt_tune_evaluator ev;
    kopt_tune_result *r = NULL;
    kopt_tune_opts o = base_opts(budget);
    counter k;
    int n = -1;

    counter_init(&k, &ev);
    ev.prepare = counter_prepare;
    ev.evaluate = ahead_evaluate;
    k.prepare_sleep_ms = 2;
    scan_cfg = (struct scan_cfg){0, 8, 0, 0};
    o.compile_threads = 2;
    o.lookahead = 8;
    ahead.seen = 0;
    if (CHECK_EQ_INT(kopt_tune_run_strategy(&r, ctx, space, NULL, &ev, &scan_blind_strategy,
                                            &o), KOPT_OK)) {
        n = k.evals < 4096 ? k.evals : 4096;
        memcpy(order, k.order, (size_t)n * sizeof(*order));
        CHECK_EQ_INT(k.bad_order, 0);            /* each point prepared before evaluated */
        *prepares = k.prepares;
    }
    kopt_tune_result_free(r);
    counter_done(&k);
    return n;
}

static void test_round_ahead(void)
{
    static uint64_t with[4096], without[4096];
    int budgets[] = {24, 13, 7};
    uint64_t valid[16];
    int nvalid = 0;

    /* the last valid point of the first round (0..7) and the first of the second (8..15) */
    for (uint64_t p = 0; p < 16 && p < space->npoints; p++)
        if (kopt_tune_space_valid(space, p, NULL, 0))
            valid[nvalid++] = p;
    for (int i = 0; i < nvalid; i++) {
        if (valid[i] < 8)
            ahead.watch = valid[i];
        else if (ahead.wait_for < 8)
            ahead.wait_for = valid[i];
    }
    if (!CHECK(ahead.watch < 8 && ahead.wait_for >= 8))
        return;
    for (size_t b = 0; b < sizeof(budgets) / sizeof(budgets[0]); b++) {
        int n_with, n_without, seen_with, prep_with, prep_without;
        unsetenv("KOPT_TUNE_ROUND_AHEAD");
        n_with = ahead_run(budgets[b], with, &prep_with);
        seen_with = ahead.seen;
        setenv("KOPT_TUNE_ROUND_AHEAD", "0", 1);
        n_without = ahead_run(budgets[b], without, &prep_without);
        unsetenv("KOPT_TUNE_ROUND_AHEAD");
        printf("  budget %d: %d evaluated ahead (%d prepared), %d without (%d prepared)\n",
               budgets[b], n_with, prep_with, n_without, prep_without);
        /* the same points in the same order, and the budget kept */
        CHECK_EQ_INT(n_with, budgets[b]);
        CHECK_EQ_INT(n_without, budgets[b]);
        if (n_with == n_without)
            CHECK(memcmp(with, without, (size_t)n_with * sizeof(*with)) == 0);
        /* compiled ahead: the second round's first point while the first round evaluated
         * (when there is a second round); not without */
        if (budgets[b] > 8)
            CHECK(seen_with);
        CHECK(!ahead.seen);
        /* at most one round compiled beyond what was evaluated */
        CHECK(prep_with <= budgets[b] + 8);
        CHECK_EQ_INT(prep_without, budgets[b]);
    }
}

/* ---- warm: on the caller's thread, once, before the first evaluate ------------------------ */

/* The live evaluator's warm starts worker processes that Linux kills when the thread that
 * started them ends: the driver must call warm on its own (long-lived) thread, not on a
 * thread of its own that ends before the workers are used (it did: on the GPU every
 * session's first point was lost, its reference worker killed). */
static struct {
    pthread_t thread;
    int calls, evals_before;
    counter *k;
} warmed;

static kopt_status record_warm(void *user, kopt_ctx *c)
{
    (void)c;
    warmed.thread = pthread_self();
    warmed.calls++;
    pthread_mutex_lock(&warmed.k->mu);
    warmed.evals_before = warmed.k->evals;
    pthread_mutex_unlock(&warmed.k->mu);
    (void)user;
    return KOPT_OK;
}

static void test_warm_on_callers_thread(void)
{
    for (int threads = 0; threads <= 2; threads += 2) {   /* without and with compile threads */
        kopt_tune_evaluator ev;
        kopt_tune_result *r = NULL;
        kopt_tune_opts o = base_opts(6);
        counter k;

        counter_init(&k, &ev);
        if (threads) {
            ev.prepare = counter_prepare;
            k.prepare_sleep_ms = 1;
        }
        ev.warm = record_warm;
        memset(&warmed, 0, sizeof(warmed));
        warmed.k = &k;
        scan_cfg = (struct scan_cfg){0, 4, 0, 0};
        o.compile_threads = threads;
        CHECK_EQ_INT(kopt_tune_run_strategy(&r, ctx, space, NULL, &ev, &scan_strategy, &o),
                     KOPT_OK);
        CHECK_EQ_INT(warmed.calls, 1);
        CHECK(warmed.calls == 1 && pthread_equal(warmed.thread, pthread_self()));
        CHECK_EQ_INT(warmed.evals_before, 0);
        CHECK_EQ_INT(k.evals, 6);
        kopt_tune_result_free(r);
        counter_done(&k);
    }
}

/* ---- kill -9 and resume -------------------------------------------------------------------- */

#define RESUME_BUDGET 40
#define RESUME_SEED 7

static const kopt_tune_strategy *resume_strategy(void)
{
    const kopt_tune_strategy *s = kopt_tune_strategy_find("random");
    return s ? s : &scan_strategy;
}

static int64_t stored_rows(const char *path)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int64_t n = -1;

    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, "SELECT count(*) FROM tune_evals", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
}

/* The child: a replay-driven run persisting into the store, 20 ms per evaluation. */
static void resume_child(const char *path)
{
    kopt_ctx *c = kopt_ctx_new();
    kopt_store *s = NULL;
    kopt_tune_cache *cache = NULL;
    kopt_tune_evaluator ev;
    kopt_tune_result *r = NULL;
    kopt_tune_opts o = base_opts(RESUME_BUDGET);
    kopt_store_tune_sink sink;
    counter k;

    counter_init(&k, &ev);
    k.sleep_ms = 20;
    o.seed = RESUME_SEED;
    memset(&sink, 0, sizeof(sink));
    sink.key = test_key();
    if (kopt_store_open(&s, c, path) != KOPT_OK ||
        kopt_store_tune_begin(s, c, &sink.key, "t.cu", "random", NULL, RESUME_SEED,
                              KOPT_TUNE_TIME, RESUME_BUDGET, &sink.run_id) != KOPT_OK ||
        kopt_tune_cache_create(&cache, c, space, &sink.key) != KOPT_OK)
        _exit(2);
    sink.store = s;
    kopt_tune_cache_set_persist(cache, kopt_store_tune_persist, &sink);
    kopt_tune_run_strategy(&r, c, space, cache, &ev, resume_strategy(), &o);
    _exit(3);   /* should have been killed long before */
}

static void test_kill9_resume(void)
{
    char *path = kopt_path_join(tmp, "resume.db");
    kopt_tune_evaluator ev, ev2;
    kopt_tune_result *ref = NULL, *r = NULL;
    kopt_tune_cache *cache = NULL;
    kopt_store *s = NULL;
    kopt_store_tune_sink sink;
    kopt_store_tune_run run;
    kopt_tune_opts o = base_opts(RESUME_BUDGET);
    counter k, k2;
    int64_t rows = 0;
    size_t loaded = 0;
    int status = 0, found = 0, reevaluated = 0;
    unsigned char stored[128];
    pid_t pid;

    counter_init(&k, &ev);
    counter_init(&k2, &ev2);
    o.seed = RESUME_SEED;
    /* the uninterrupted run */
    if (!CHECK_EQ_INT(kopt_tune_run_strategy(&ref, ctx, space, NULL, &ev, resume_strategy(), &o),
                      KOPT_OK))
        goto cleanup;
    CHECK_EQ_INT(ref->stop, KOPT_TUNE_STOP_BUDGET);
    /* a store with the tables, made before the child starts */
    if (!CHECK_EQ_INT(kopt_store_open(&s, ctx, path), KOPT_OK))
        goto cleanup;
    kopt_store_close(s);
    s = NULL;
    fflush(NULL);
    pid = fork();
    if (pid == 0)
        resume_child(path);
    if (!CHECK(pid > 0))
        goto cleanup;
    for (int waited = 0; waited < 30000; waited += 5) {   /* until a third is stored */
        rows = stored_rows(path);
        if (rows >= RESUME_BUDGET / 3 || waitpid(pid, &status, WNOHANG) == pid)
            break;
        sleep_ms(5);
    }
    if (kill(pid, SIGKILL) == 0)
        waitpid(pid, &status, 0);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    rows = stored_rows(path);
    if (!CHECK(rows >= RESUME_BUDGET / 3 && rows < RESUME_BUDGET))
        fprintf(stderr, "  %lld rows stored before the kill\n", (long long)rows);
    /* resume: what is stored is loaded, the same run goes on */
    if (!CHECK_EQ_INT(kopt_store_open(&s, ctx, path), KOPT_OK))
        goto cleanup;
    memset(&sink, 0, sizeof(sink));
    sink.store = s;
    sink.key = test_key();
    CHECK_EQ_INT(kopt_store_tune_find_unfinished(s, ctx, &sink.key, &run, &found), KOPT_OK);
    CHECK_EQ_INT(found, 1);
    CHECK_EQ_INT(run.seed, RESUME_SEED);
    sink.run_id = run.id;
    CHECK_EQ_INT(kopt_tune_cache_create(&cache, ctx, space, &sink.key), KOPT_OK);
    CHECK_EQ_INT(kopt_store_tune_load(s, ctx, cache, &loaded), KOPT_OK);
    CHECK_EQ_INT(loaded, rows);
    memset(stored, 0, sizeof(stored));
    for (size_t i = 0; i < kopt_tune_cache_count(cache); i++) {
        uint64_t p;
        kopt_tune_cache_entry(cache, i, &p, NULL);
        if (p < 128)
            stored[p] = 1;
    }
    kopt_tune_cache_set_persist(cache, kopt_store_tune_persist, &sink);
    if (!CHECK_EQ_INT(kopt_tune_run_strategy(&r, ctx, space, cache, &ev2, resume_strategy(),
                                             &o), KOPT_OK))
        goto cleanup;
    for (uint64_t p = 0; p < 128; p++)
        reevaluated += stored[p] && k2.evaluated[p];
    CHECK_EQ_INT(reevaluated, 0);                /* zero re-evaluations */
    CHECK_EQ_INT(r->cached, (size_t)rows);
    CHECK_EQ_INT(k2.evals, (int)ref->evaluated - (int)rows);
    CHECK_EQ_INT(r->stop, ref->stop);
    CHECK(r->has_best && ref->has_best);
    CHECK_EQ_INT(r->best_point, ref->best_point);
    CHECK(r->best.time_ms == ref->best.time_ms);
    CHECK_EQ_INT(r->n, ref->n);
    CHECK_EQ_INT(kopt_store_tune_finish(s, ctx, run.id, r->stop, NULL, 0), KOPT_OK);
    CHECK_EQ_INT(stored_rows(path), ref->evaluated);
cleanup:
    kopt_tune_result_free(ref);
    kopt_tune_result_free(r);
    kopt_tune_cache_free(cache);
    kopt_store_close(s);
    counter_done(&k);
    counter_done(&k2);
    free(path);
}

static void test_unknown_strategy(void)
{
    kopt_tune_evaluator ev;
    kopt_tune_result *r = NULL;
    kopt_tune_opts o = base_opts(5);
    counter k;

    counter_init(&k, &ev);
    o.strategy = "hill_dancing";
    CHECK_EQ_INT(kopt_tune_run(&r, ctx, space, NULL, &ev, &o), KOPT_E_INVALID);
    CHECK(r == NULL);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "unknown strategy 'hill_dancing'");
    /* an evaluator error stops the run with its status (replay lacking a valid point) */
    {
        kopt_tune_cache *empty = NULL;
        kopt_tune_evaluator *bare = NULL;
        scan_cfg = (struct scan_cfg){0, 4, 0, 0};
        CHECK_EQ_INT(kopt_tune_cache_create(&empty, ctx, space, NULL), KOPT_OK);
        CHECK_EQ_INT(kopt_tune_evaluator_replay(&bare, ctx, space, empty), KOPT_OK);
        CHECK_EQ_INT(kopt_tune_run_strategy(&r, ctx, space, NULL, bare, &scan_strategy, &o),
                     KOPT_E_NOT_FOUND);
        CHECK(r == NULL);
        CHECK_STR_CONTAINS(kopt_errmsg(ctx), "A=0,B=1 is not in the recorded cache");
        kopt_tune_evaluator_free(bare);
        kopt_tune_cache_free(empty);
    }
    counter_done(&k);
}

/* The compile depth by default (docs/scale.md): the usable CPUs less one per GPU, shared
 * over the GPUs, 2 to 16 a GPU, never more than the CPUs (but at least 2) nor 64; the
 * lookahead twice the threads, at least 8 a GPU, at most 4096. */
static void test_compile_depth_defaults(void)
{
    static const struct {
        int cpus, gpus, threads, lookahead;
    } cases[] = {
        {64, 4, 60, 120},   /* the 4-GPU H200 host of bench/results/2026-11-26-h200x4-*: 15 a GPU */
        {64, 1, 16, 32},    /* one GPU of it: the most a GPU gets */
        {16, 1, 15, 30},    /* a one-GPU H100 machine */
        {128, 8, 64, 128},  /* at most 64 threads */
        {128, 2, 32, 64},
        {32, 4, 28, 56},
        {8, 4, 8, 32},      /* 1 a GPU left: the minimum 2 a GPU, all the CPUs */
        {6, 4, 6, 32},      /* ... but never more than the CPUs */
        {2, 1, 2, 8},       /* a small machine: the old default of 2, 8 ahead */
        {2, 4, 2, 32},
        {1, 1, 2, 8},       /* at least 2 */
        {0, 1, 2, 8},       /* CPUs unknown: as one */
        {4, 0, 3, 8},       /* no GPU count: as one */
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int t = kopt_tune_default_compile_threads(cases[i].cpus, cases[i].gpus);
        int l = kopt_tune_default_lookahead(t, cases[i].gpus);
        if (!CHECK_EQ_INT(t, cases[i].threads) || !CHECK_EQ_INT(l, cases[i].lookahead))
            fprintf(stderr, "  %d CPUs, %d GPUs\n", cases[i].cpus, cases[i].gpus);
    }
    /* threads given: the lookahead follows them (section 6's 12/24 and 48/96) */
    CHECK_EQ_INT(kopt_tune_default_lookahead(12, 1), 24);
    CHECK_EQ_INT(kopt_tune_default_lookahead(48, 4), 96);
    CHECK_EQ_INT(kopt_tune_default_lookahead(0, 4), 32);     /* no pipeline: 8 a GPU */
    CHECK_EQ_INT(kopt_tune_default_lookahead(3, 1), 8);
    CHECK_EQ_INT(kopt_tune_default_lookahead(5000, 1), KOPT_TUNE_MAX_LOOKAHEAD);
    CHECK_EQ_INT(kopt_tune_default_lookahead(-1, -1), 8);
    /* every default is something the driver takes as it is */
    for (int cpus = 0; cpus <= 300; cpus++)
        for (int gpus = 1; gpus <= 64; gpus++) {
            int t = kopt_tune_default_compile_threads(cpus, gpus);
            if (t < KOPT_TUNE_COMPILE_MIN_PER_GPU || t > KOPT_TUNE_MAX_COMPILE_THREADS ||
                (cpus >= 2 && t > cpus) || t > KOPT_TUNE_COMPILE_MAX_PER_GPU * gpus) {
                KTEST_FAIL("%d CPUs, %d GPUs: %d threads", cpus, gpus, t);
                return;
            }
        }
}

/* A cgroup's CPU quota as whole CPUs (what kopt_cpus_usable caps the affinity with) */
static void test_cpus_from_cpu_max(void)
{
    CHECK_EQ_INT(kopt_cpus_from_cpu_max("1600000 100000\n"), 16);
    CHECK_EQ_INT(kopt_cpus_from_cpu_max("150000 100000"), 2);      /* 1.5 CPUs: rounded up */
    CHECK_EQ_INT(kopt_cpus_from_cpu_max("50000 100000"), 1);
    CHECK_EQ_INT(kopt_cpus_from_cpu_max("max 100000\n"), 0);        /* no quota */
    CHECK_EQ_INT(kopt_cpus_from_cpu_max(""), 0);
    CHECK_EQ_INT(kopt_cpus_from_cpu_max("-1 100000"), 0);
    CHECK_EQ_INT(kopt_cpus_from_cpu_max(NULL), 0);
    CHECK(kopt_cpus_usable() >= 1);
    CHECK(kopt_cpus_usable() <= sysconf(_SC_NPROCESSORS_ONLN));
}

int main(int argc, char **argv)
{
    static const ktest_case cases[] = {
        KTEST(test_budget_and_pruned),
        KTEST(test_cached_not_evaluated),
        KTEST(test_exhausted_and_finished),
        KTEST(test_stop_flag),
        KTEST(test_time_budget),
        KTEST(test_stalled),
        KTEST(test_pareto_time_energy_convergence),
        KTEST(test_pipeline),
        KTEST(test_round_ahead),
        KTEST(test_warm_on_callers_thread),
        KTEST(test_kill9_resume),
        KTEST(test_unknown_strategy),
        KTEST(test_compile_depth_defaults),
        KTEST(test_cpus_from_cpu_max),
    };
    int rc = 1;

    ctx = kopt_ctx_new();
    tmp = ktest_tmpdir("tune_driver");
    if (!ctx || !tmp)
        return 1;
    if (!(prob = tune_fixture_problem(ctx, tmp, "td", 0)))
        rc = 1;               /* said why on stderr */
    else if (kopt_candidate_parse(&tmpl, ctx, TEMPLATE, "t.cu", prob) != KOPT_OK)
        fprintf(stderr, "the test template does not parse: %s\n", kopt_errmsg(ctx));
    else if (kopt_tune_space_create(&space, ctx, tmpl, &prob->sizes, NULL) != KOPT_OK)
        fprintf(stderr, "the test space: %s\n", kopt_errmsg(ctx));
    else if (space->npoints != 128 ||
             kopt_tune_cache_create(&recorded, ctx, space, NULL) != KOPT_OK)
        fprintf(stderr, "the test space has %llu points, not 128\n",
                (unsigned long long)space->npoints);
    else {
        for (uint64_t p = 0; p < space->npoints; p++) {
            kopt_tune_outcome o;
            if (!kopt_tune_space_valid(space, p, NULL, 0))
                continue;
            synthetic(p, &o);
            kopt_tune_cache_put(recorded, ctx, p, &o);
        }
        rc = ktest_main(argc, argv, cases, KTEST_COUNT(cases));
    }
    kopt_tune_cache_free(recorded);
    kopt_tune_space_free(space);
    kopt_candidate_free(tmpl);
    kopt_problem_free(prob);
    ktest_rmtree(tmp);
    free(tmp);
    kopt_ctx_free(ctx);
    return rc;
}
