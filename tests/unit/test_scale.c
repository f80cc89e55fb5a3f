/*
 * Unit tests of the scale-out dispatcher (kopt/scale.h) on CPU stand-in slots, no GPU:
 * --gpus parsing; the first free slot gets the next job (a fast slot does most of the work,
 * which round-robin would not); a lost slot's job goes back to the queue and is done once
 * by another slot, and the lost slot takes no more; every slot lost is an error; a stop
 * leaves unstarted jobs alone; the speed-up arithmetic and a measured speed-up on 4 slots;
 * mixed device models are seen; and the tuning driver through the pool's evaluator takes
 * the same path, with the same outcomes in the same order, as with one evaluator, while
 * recording on every outcome the slot that measured it.
 */
#include "ktest.h"
#include "tune_fixture.h"

#include "kopt/scale.h"
#include "kopt/tune.h"

#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>

static kopt_ctx *ctx;

/* ---- helpers -------------------------------------------------------------------------- */

typedef struct collect {
    int n;
    int count[256];           /* outcomes per job */
    int device[256];          /* the slot (device index) that measured it */
    double time_ms[256];
    volatile sig_atomic_t *stop_after_flag;
    int stop_after;           /* set the flag once this many are done (0: never) */
    int done;
} collect;

static void on_done(void *user, int index, const kopt_tune_outcome *o)
{
    collect *c = user;
    c->count[index]++;
    c->device[index] = o->where.known ? o->where.device : -1;
    c->time_ms[index] = o->time_ms;
    c->done++;
    if (c->stop_after && c->done >= c->stop_after)
        *c->stop_after_flag = 1;
}

static kopt_scale_pool *standin_pool(const double *ms, int n)
{
    kopt_scale_pool *p = NULL;

    if (kopt_scale_pool_create(&p, ctx) != KOPT_OK)
        return NULL;
    for (int i = 0; i < n; i++) {
        kopt_scale_slot *s = NULL;
        if (kopt_scale_slot_standin(&s, ctx, i, ms[i], NULL) != KOPT_OK ||
            kopt_scale_pool_add(p, ctx, s) != KOPT_OK) {
            kopt_scale_pool_free(p);
            return NULL;
        }
    }
    return p;
}

static void make_jobs(kopt_scale_job *jobs, int n)
{
    for (int i = 0; i < n; i++) {
        jobs[i].shape = 0;
        jobs[i].point = (uint64_t)(1000 + 7 * i);
        jobs[i].want_findings = 0;
    }
}

static kopt_scale_hooks hooks_for(collect *c)
{
    kopt_scale_hooks h;
    memset(&h, 0, sizeof(h));
    h.user = c;
    h.done = on_done;
    h.only_slot = -1;
    return h;
}

/* ---- a slot that dies on its second job --------------------------------------------------- */

typedef struct dying {
    int calls;
    int die_at;               /* the call (1-based) that reports the slot lost */
} dying;

static kopt_status dying_eval(void *user, kopt_ctx *c, const kopt_scale_job *job,
                              kopt_tune_outcome *out, int *lost)
{
    dying *d = user;
    struct timespec ts = {0, 5 * 1000000L};
    (void)c;
    nanosleep(&ts, NULL);
    if (++d->calls >= d->die_at) {
        *lost = 1;
        return KOPT_OK;
    }
    *lost = 0;
    memset(out, 0, sizeof(*out));
    out->state = KOPT_TUNE_OK;
    out->time_ms = kopt_scale_standin_time(job->shape, job->point);
    return KOPT_OK;
}

static kopt_scale_slot *dying_slot(int index, int die_at)
{
    kopt_scale_slot *s = calloc(1, sizeof(*s));
    dying *d = calloc(1, sizeof(*d));
    if (!s || !d) {
        free(s);
        free(d);
        return NULL;
    }
    d->die_at = die_at;
    s->kind = "dying";
    s->user = d;
    s->eval = dying_eval;
    s->close = free;
    s->where.known = 1;
    s->where.device = index;
    snprintf(s->where.name, sizeof(s->where.name), "kopt stand-in");
    return s;
}

/* ---- cases -------------------------------------------------------------------------------- */

static void test_devices_parse(void)
{
    int d[16], n = -1;

    CHECK_EQ_INT(kopt_scale_devices_parse(ctx, "all", 4, d, 16, &n), KOPT_OK);
    CHECK_EQ_INT(n, 4);
    CHECK(d[0] == 0 && d[3] == 3);
    CHECK_EQ_INT(kopt_scale_devices_parse(ctx, "0,2,5", 8, d, 16, &n), KOPT_OK);
    CHECK_EQ_INT(n, 3);
    CHECK(d[0] == 0 && d[1] == 2 && d[2] == 5);
    CHECK_EQ_INT(kopt_scale_devices_parse(ctx, "3", -1, d, 16, &n), KOPT_OK);
    CHECK(n == 1 && d[0] == 3);
    CHECK_EQ_INT(kopt_scale_devices_parse(ctx, "0,0", 4, d, 16, &n), KOPT_E_INVALID);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "twice");
    CHECK_EQ_INT(kopt_scale_devices_parse(ctx, "9", 4, d, 16, &n), KOPT_E_INVALID);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "no GPU 9");
    CHECK_EQ_INT(kopt_scale_devices_parse(ctx, "a", 4, d, 16, &n), KOPT_E_INVALID);
    CHECK_EQ_INT(kopt_scale_devices_parse(ctx, "1,", 4, d, 16, &n), KOPT_E_INVALID);
    CHECK_EQ_INT(kopt_scale_devices_parse(ctx, "", 4, d, 16, &n), KOPT_E_INVALID);
    CHECK_EQ_INT(kopt_scale_devices_parse(ctx, "all", 0, d, 16, &n), KOPT_E_NO_DEVICE);
}

/* A fast and a slow slot: the fast one, free sooner, takes most jobs. */
static void test_first_free(void)
{
    const double ms[2] = {4, 60};
    kopt_scale_pool *p = standin_pool(ms, 2);
    kopt_scale_job jobs[30];
    kopt_scale_slot_stats st[2];
    collect c;
    kopt_scale_hooks h = hooks_for(&c);

    memset(&c, 0, sizeof(c));
    make_jobs(jobs, 30);
    CHECK(p != NULL);
    if (!p)
        return;
    CHECK_EQ_INT(kopt_scale_pool_run(p, ctx, jobs, 30, &h), KOPT_OK);
    kopt_scale_pool_stats(p, st);
    for (int i = 0; i < 30; i++) {
        CHECK_EQ_INT(c.count[i], 1);
        CHECK(c.device[i] == 0 || c.device[i] == 1);
        CHECK_NEAR(c.time_ms[i], kopt_scale_standin_time(0, jobs[i].point), 1e-12);
    }
    CHECK_EQ_INT(st[0].jobs + st[1].jobs, 30);
    CHECK(st[0].jobs >= 4 * st[1].jobs);   /* round-robin would give 15 and 15 */
    kopt_scale_pool_free(p);
}

/* kopt_scale_pool_run_meanwhile: the caller's work runs on its thread while the slots
 * evaluate, and no outcome is handed over before it returns (--overlap asks the model so). */
typedef struct mw {
    kopt_scale_pool *p;
    collect *c;
    pthread_t caller;
    int calls, on_caller, done_before, done_after, evaluated_meanwhile;
} mw;

static void meanwhile(void *user)
{
    mw *m = user;
    kopt_scale_slot_stats st[2];
    struct timespec ts = {0, 300 * 1000000L};   /* the 2 x 2 stand-in jobs take 2 x 20 ms */

    m->calls++;
    m->on_caller += pthread_equal(pthread_self(), m->caller) != 0;
    m->done_before = m->c->done;
    while (nanosleep(&ts, &ts) != 0)
        ;
    kopt_scale_pool_stats(m->p, st);
    m->evaluated_meanwhile = st[0].jobs + st[1].jobs;
    m->done_after = m->c->done;
}

static void test_meanwhile(void)
{
    const double ms[2] = {20, 20};
    kopt_scale_pool *p = standin_pool(ms, 2);
    kopt_scale_job jobs[4];
    collect c;
    kopt_scale_hooks h = hooks_for(&c);
    mw m;

    memset(&c, 0, sizeof(c));
    memset(&m, 0, sizeof(m));
    make_jobs(jobs, 4);
    CHECK(p != NULL);
    if (!p)
        return;
    m.p = p;
    m.c = &c;
    m.caller = pthread_self();
    CHECK_EQ_INT(kopt_scale_pool_run_meanwhile(p, ctx, jobs, 4, &h, meanwhile, &m), KOPT_OK);
    CHECK_EQ_INT(m.calls, 1);
    CHECK_EQ_INT(m.on_caller, 1);
    CHECK_EQ_INT(m.done_before, 0);
    CHECK_EQ_INT(m.done_after, 0);           /* outcomes wait for it */
    CHECK_EQ_INT(m.evaluated_meanwhile, 4);  /* while the slots worked */
    CHECK_EQ_INT(c.done, 4);
    for (int i = 0; i < 4; i++)
        CHECK_EQ_INT(c.count[i], 1);
    /* no jobs: nothing runs, meanwhile neither (the caller does its work itself) */
    m.calls = 0;
    CHECK_EQ_INT(kopt_scale_pool_run_meanwhile(p, ctx, jobs, 0, &h, meanwhile, &m), KOPT_OK);
    CHECK_EQ_INT(m.calls, 0);
    kopt_scale_pool_free(p);
}

/* A slot lost on its second job: that job is done once, elsewhere; the slot takes no more. */
static void test_lost_requeue(void)
{
    const double ms[2] = {5, 5};
    kopt_scale_pool *p = standin_pool(ms, 2);
    kopt_scale_job jobs[20];
    kopt_scale_slot_stats st[3];
    collect c;
    kopt_scale_hooks h = hooks_for(&c);

    memset(&c, 0, sizeof(c));
    make_jobs(jobs, 20);
    CHECK(p && kopt_scale_pool_add(p, ctx, dying_slot(2, 2)) == KOPT_OK);
    if (!p)
        return;
    CHECK_EQ_INT(kopt_scale_pool_run(p, ctx, jobs, 20, &h), KOPT_OK);
    kopt_scale_pool_stats(p, st);
    for (int i = 0; i < 20; i++)
        CHECK_EQ_INT(c.count[i], 1);
    CHECK_EQ_INT(st[2].lost, 1);
    CHECK_EQ_INT(st[2].requeued, 1);
    CHECK_EQ_INT(st[2].jobs, 1);
    CHECK_EQ_INT(st[0].jobs + st[1].jobs + st[2].jobs, 20);
    CHECK_EQ_INT(kopt_scale_pool_alive(p), 2);
    /* a second batch: the lost slot gets nothing */
    memset(&c, 0, sizeof(c));
    CHECK_EQ_INT(kopt_scale_pool_run(p, ctx, jobs, 20, &h), KOPT_OK);
    kopt_scale_pool_stats(p, st);
    CHECK_EQ_INT(st[2].jobs, 1);
    for (int i = 0; i < 20; i++)
        CHECK(c.count[i] == 1 && c.device[i] != 2);
    kopt_scale_pool_free(p);
}

static void test_all_lost(void)
{
    kopt_scale_pool *p = NULL;
    kopt_scale_job jobs[6];
    collect c;
    kopt_scale_hooks h = hooks_for(&c);

    memset(&c, 0, sizeof(c));
    make_jobs(jobs, 6);
    CHECK_EQ_INT(kopt_scale_pool_create(&p, ctx), KOPT_OK);
    CHECK_EQ_INT(kopt_scale_pool_add(p, ctx, dying_slot(0, 2)), KOPT_OK);
    CHECK_EQ_INT(kopt_scale_pool_add(p, ctx, dying_slot(1, 3)), KOPT_OK);
    CHECK_EQ_INT(kopt_scale_pool_run(p, ctx, jobs, 6, &h), KOPT_E_NO_DEVICE);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "every slot was lost");
    CHECK_EQ_INT(c.done, 3);                 /* 1 + 2 done before each died */
    for (int i = 0; i < 6; i++)
        CHECK(c.count[i] <= 1);
    kopt_scale_pool_free(p);
}

/* Jobs bound to a slot (a GPU getting itself ready) run there and nowhere else, the others
 * on any slot; a slot that does not exist is refused, and a bound job whose slot is lost
 * ends the batch with an error instead of waiting for ever. */
static void test_bound_jobs(void)
{
    const double ms[3] = {2, 2, 40};
    kopt_scale_pool *p = standin_pool(ms, 3);
    kopt_scale_job jobs[10];
    int slot_of[10];
    collect c;
    kopt_scale_hooks h = hooks_for(&c);

    CHECK(p != NULL);
    if (!p)
        return;
    memset(&c, 0, sizeof(c));
    make_jobs(jobs, 10);
    for (int i = 0; i < 10; i++)
        slot_of[i] = -1;
    slot_of[0] = 2;        /* the slow slot */
    slot_of[1] = 1;
    slot_of[9] = 2;
    h.slot_of = slot_of;
    CHECK_EQ_INT(kopt_scale_pool_run(p, ctx, jobs, 10, &h), KOPT_OK);
    for (int i = 0; i < 10; i++)
        CHECK_EQ_INT(c.count[i], 1);
    CHECK(c.device[0] == 2 && c.device[1] == 1 && c.device[9] == 2);
    slot_of[3] = 7;
    CHECK_EQ_INT(kopt_scale_pool_run(p, ctx, jobs, 10, &h), KOPT_E_INVALID);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "job 3 is for slot 7 of 3");
    kopt_scale_pool_free(p);

    p = standin_pool(ms, 1);
    CHECK(p && kopt_scale_pool_add(p, ctx, dying_slot(1, 1)) == KOPT_OK);
    if (!p)
        return;
    memset(&c, 0, sizeof(c));
    slot_of[0] = 1;        /* its slot dies taking it */
    slot_of[3] = -1;
    slot_of[9] = -1;
    slot_of[1] = -1;
    CHECK_EQ_INT(kopt_scale_pool_run(p, ctx, jobs, 4, &h), KOPT_E_NO_DEVICE);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "slot 1, which a job was for, was lost");
    CHECK_EQ_INT(c.count[0], 0);
    kopt_scale_pool_free(p);
}

static void test_stop(void)
{
    const double ms[2] = {10, 10};
    kopt_scale_pool *p = standin_pool(ms, 2);
    kopt_scale_job jobs[40];
    volatile sig_atomic_t stop = 0;
    collect c;
    kopt_scale_hooks h = hooks_for(&c);

    memset(&c, 0, sizeof(c));
    c.stop_after_flag = &stop;
    c.stop_after = 5;
    h.stop = &stop;
    make_jobs(jobs, 40);
    if (!p)
        return;
    CHECK_EQ_INT(kopt_scale_pool_run(p, ctx, jobs, 40, &h), KOPT_OK);
    CHECK(c.done >= 5 && c.done <= 8);       /* the ones in flight finish, no more start */
    for (int i = 0; i < 40; i++)
        CHECK(c.count[i] <= 1);
    kopt_scale_pool_free(p);
}

static double run_wall(int nslots, double ms, int njobs)
{
    double msv[8];
    kopt_scale_pool *p;
    kopt_scale_job jobs[64];
    collect c;
    kopt_scale_hooks h = hooks_for(&c);
    double t0;

    for (int i = 0; i < nslots; i++)
        msv[i] = ms;
    p = standin_pool(msv, nslots);
    memset(&c, 0, sizeof(c));
    make_jobs(jobs, njobs);
    t0 = kopt_now_ms();
    if (!p || kopt_scale_pool_run(p, ctx, jobs, njobs, &h) != KOPT_OK || c.done != njobs)
        t0 = -1e12;
    t0 = (kopt_now_ms() - t0) / 1000.0;
    kopt_scale_pool_free(p);
    return t0;
}

static void test_speedup(void)
{
    double eff, t1, t4, s;

    CHECK_NEAR(kopt_scale_speedup(10.0, 2.5, 4, &eff), 4.0, 1e-12);
    CHECK_NEAR(eff, 1.0, 1e-12);
    CHECK_NEAR(kopt_scale_speedup(10.0, 4.0, 4, &eff), 2.5, 1e-12);
    CHECK_NEAR(eff, 0.625, 1e-12);
    CHECK_EQ_INT((int)kopt_scale_speedup(0, 1, 2, &eff), 0);
    /* measured: 48 jobs of 25 ms on 1 and on 4 slots (sleeps: no CPU needed) */
    t1 = run_wall(1, 25, 48);
    t4 = run_wall(4, 25, 48);
    s = kopt_scale_speedup(t1, t4, 4, &eff);
    printf("  1 slot %.3f s, 4 slots %.3f s: speed-up %.2f, efficiency %.2f\n", t1, t4, s, eff);
    CHECK(t1 > 1.1);
    CHECK(eff >= 0.85);
}

static void test_mixed(void)
{
    kopt_scale_pool *p = NULL;
    kopt_scale_slot *a = NULL, *b = NULL, *c2 = NULL;
    char buf[256];

    CHECK_EQ_INT(kopt_scale_pool_create(&p, ctx), KOPT_OK);
    kopt_scale_slot_standin(&a, ctx, 0, 1, "Model A");
    kopt_scale_slot_standin(&b, ctx, 1, 1, "Model A");
    kopt_scale_pool_add(p, ctx, a);
    kopt_scale_pool_add(p, ctx, b);
    CHECK_EQ_INT(kopt_scale_pool_mixed(p, buf, sizeof(buf)), 0);
    kopt_scale_slot_standin(&c2, ctx, 2, 1, "Model B");
    kopt_scale_pool_add(p, ctx, c2);
    CHECK_EQ_INT(kopt_scale_pool_mixed(p, buf, sizeof(buf)), 1);
    CHECK_STR_CONTAINS(buf, "slot 2: Model B");
    kopt_scale_pool_free(p);
    setenv("KOPT_SCALE_STANDIN_MODELS", "X,Y", 1);
    CHECK_EQ_STR(kopt_scale_standin_model(0, buf, sizeof(buf)), "X");
    CHECK_EQ_STR(kopt_scale_standin_model(5, buf, sizeof(buf)), "Y");
    unsetenv("KOPT_SCALE_STANDIN_MODELS");
    CHECK(kopt_scale_standin_model(0, buf, sizeof(buf)) == NULL);
}

/* ---- the driver through the pool ---------------------------------------------------------- */

static const char *const TEMPLATE =
    "/*@kopt\n{\"params\": {\"A\": {\"range\": [0, 31]}, \"B\": [1, 2, 3, 4]},"
    " \"constraints\": [\"A % 8 != 7\"]}\n*/\n"
    "__global__ void k(const float *x, float *y, int n) {}\n";

static kopt_status seq_eval(void *user, kopt_ctx *c, uint64_t point, int wf,
                            kopt_tune_outcome *out)
{
    (void)user;
    (void)c;
    (void)wf;
    memset(out, 0, sizeof(*out));
    out->state = KOPT_TUNE_OK;
    out->time_ms = kopt_scale_standin_time(0, point);
    return KOPT_OK;
}

static void test_driver_batch(void)
{
    char *tmp = ktest_tmpdir("scale");
    kopt_problem *prob = tmp ? tune_fixture_problem(ctx, tmp, "sc", 0) : NULL;
    kopt_candidate *tmpl = NULL;
    kopt_tune_space *space = NULL;
    kopt_tune_cache *cache = NULL;
    kopt_tune_result *r1 = NULL, *r3 = NULL;
    kopt_tune_evaluator seq, *scaled = NULL;
    kopt_tune_opts to = KOPT_TUNE_OPTS_INIT;
    const double ms[3] = {3, 3, 3};
    kopt_scale_pool *p = standin_pool(ms, 3);
    kopt_scale_slot_stats st[3];
    int used[3] = {0, 0, 0};

    CHECK(prob && p);
    if (!prob || !p ||
        kopt_candidate_parse(&tmpl, ctx, TEMPLATE, "t.cu", prob) != KOPT_OK ||
        kopt_tune_space_create(&space, ctx, tmpl, &prob->sizes, NULL) != KOPT_OK) {
        KTEST_FAIL("setup: %s", kopt_errmsg(ctx));
        goto done;
    }
    to.strategy = "random";
    to.max_evals = 30;
    to.lookahead = 12;
    to.compile_threads = 0;
    memset(&seq, 0, sizeof(seq));
    seq.evaluate = seq_eval;
    CHECK_EQ_INT(kopt_tune_run(&r1, ctx, space, NULL, &seq, &to), KOPT_OK);
    CHECK_EQ_INT(kopt_scale_tune_evaluator(&scaled, ctx, p, 0, NULL), KOPT_OK);
    CHECK_EQ_INT(kopt_tune_cache_create(&cache, ctx, space, NULL), KOPT_OK);
    CHECK_EQ_INT(kopt_tune_run(&r3, ctx, space, cache, scaled, &to), KOPT_OK);
    if (!r1 || !r3)
        goto done;
    CHECK_EQ_INT((int)r3->evaluated, 30);
    CHECK_EQ_INT((int)r1->n, (int)r3->n);
    for (size_t i = 0; i < r1->n && i < r3->n; i++) {
        CHECK(r1->points[i] == r3->points[i]);
        CHECK_NEAR(r1->outcomes[i].time_ms, r3->outcomes[i].time_ms, 1e-12);
    }
    CHECK(r1->best_point == r3->best_point);
    CHECK_EQ_INT((int)kopt_tune_cache_count(cache), 30);
    for (size_t i = 0; i < kopt_tune_cache_count(cache); i++) {
        uint64_t pt;
        const kopt_tune_outcome *o;
        kopt_tune_cache_entry(cache, i, &pt, &o);
        CHECK(o->where.known && o->where.device >= 0 && o->where.device < 3);
        if (o->where.device >= 0 && o->where.device < 3)
            used[o->where.device]++;
    }
    kopt_scale_pool_stats(p, st);
    for (int i = 0; i < 3; i++)
        CHECK_EQ_INT(st[i].jobs, used[i]);
    CHECK(used[0] > 0 && used[1] > 0 && used[2] > 0);
done:
    kopt_tune_result_free(r1);
    kopt_tune_result_free(r3);
    kopt_tune_evaluator_free(scaled);
    kopt_tune_cache_free(cache);
    kopt_scale_pool_free(p);
    kopt_tune_space_free(space);
    kopt_candidate_free(tmpl);
    kopt_problem_free(prob);
    if (tmp)
        ktest_rmtree(tmp);
    free(tmp);
}

/* A GPU slot warms the evaluator it is given on the caller's thread, at once: the workers
 * warm starts end with the thread that started them, so it must not be a thread that ends
 * before the slot evaluates (a warming thread did that: each GPU's first point was lost). */
static pthread_t warm_thread;
static int warm_calls;

static kopt_status slot_warm(void *user, kopt_ctx *c)
{
    (void)user;
    (void)c;
    warm_thread = pthread_self();
    warm_calls++;
    return KOPT_OK;
}

static void test_gpu_slot_warms_on_callers_thread(void)
{
    kopt_scale_slot *s = NULL;
    kopt_tune_evaluator *e = calloc(1, sizeof(*e));

    if (!CHECK(e) || !CHECK_EQ_INT(kopt_scale_slot_gpu(&s, ctx, 0), KOPT_OK)) {
        free(e);
        return;
    }
    e->warm = slot_warm;
    warm_calls = 0;
    kopt_scale_slot_gpu_set(s, 0, e);    /* the slot owns e now */
    CHECK_EQ_INT(warm_calls, 1);
    CHECK(warm_calls == 1 && pthread_equal(warm_thread, pthread_self()));
    kopt_scale_slot_free(s);
}

int main(int argc, char **argv)
{
    static const ktest_case cases[] = {
        KTEST(test_devices_parse),
        KTEST(test_first_free),
        KTEST(test_meanwhile),
        KTEST(test_lost_requeue),
        KTEST(test_all_lost),
        KTEST(test_bound_jobs),
        KTEST(test_stop),
        KTEST(test_speedup),
        KTEST(test_mixed),
        KTEST(test_driver_batch),
        KTEST(test_gpu_slot_warms_on_callers_thread),
    };
    int rc;

    ctx = kopt_ctx_new();
    if (!ctx)
        return 1;
    unsetenv("KOPT_SCALE_STANDIN_LOG");
    rc = ktest_main(argc, argv, cases, KTEST_COUNT(cases));
    kopt_ctx_free(ctx);
    return rc;
}
