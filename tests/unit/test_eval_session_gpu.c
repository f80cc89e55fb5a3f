/*
 * GPU checks of evaluation sessions (kopt_eval_session, src/eval/session.c): candidates of
 * vector_add run one after another in one serving worker against the reference's outputs
 * from the first run; wrong, crashing and hanging candidates get the verdicts kopt_eval_run
 * gives them, and the session replaces the worker they ended; a session's first workers
 * taken from a pool started before it. Skips ("skipped: no GPU")
 * without a driver or device. Its workers are the build tree's kopt-worker (kopt/worker.h).
 */
#include "ktest.h"

#include "kopt/device.h"
#include "kopt/eval.h"
#include "kopt/problem.h"

#define CANDIDATES KOPT_TEST_DATA_DIR "/../gpu/candidates"

static kopt_ctx *ctx;
static int have_gpu = -1;

static int gpu(void)
{
    kopt_device_info d;

    if (have_gpu < 0)
        have_gpu = kopt_device_nvml(ctx, 0, &d, NULL) == KOPT_OK;
    if (!have_gpu)
        KTEST_SKIP("no GPU");
    return have_gpu;
}

/* Evaluate `path` in session s; returns the result (caller frees) or NULL. */
static const kopt_problem *prob;

static kopt_eval_result *run(kopt_eval_session *s, const char *path)
{
    kopt_candidate *c = NULL;
    kopt_eval_result *r = NULL;

    if (kopt_candidate_load(&c, ctx, path, prob) != KOPT_OK) {
        fprintf(stderr, "cannot load %s: %s\n", path, kopt_errmsg(ctx));
        CHECK(!"candidate loads");
        return NULL;
    }
    CHECK(kopt_eval_session_run(s, ctx, c, &r) == KOPT_OK);
    kopt_candidate_free(c);
    if (r)
        printf("  %-40s %s %.4f ms (cand setup %.0f ms, ref setup %.0f ms, total %.0f ms)\n",
               strrchr(path, '/') + 1, kopt_verdict_name(r->verdict), r->timing.median_ms,
               r->cand_setup_ms, r->ref_setup_ms, r->total_ms);
    return r;
}

static void test_session_verdicts_and_workers(void)
{
    kopt_problem *p = NULL;
    kopt_eval_session *s = NULL;
    kopt_eval_opts o = KOPT_EVAL_OPTS_INIT;
    kopt_eval_result *r;
    uint64_t seed = 0;
    int runs = 0, workers = 0;

    if (!gpu())
        return;
    o.trials = 1;
    o.budget_ms = 10;
    o.timeout_s = 5;
    o.no_ref_timing = 1;
    CHECK(kopt_problem_load(&p, ctx, KOPT_EXAMPLES_DIR "/vector_add") == KOPT_OK);
    CHECK(kopt_eval_session_open(&s, ctx, p, &o) == KOPT_OK);
    if (!p || !s)
        goto done;
    prob = p;

    /* first: the reference runs, a serving worker starts */
    if ((r = run(s, KOPT_EXAMPLES_DIR "/vector_add/fast.cu"))) {
        CHECK_EQ_INT(r->verdict, KOPT_VERDICT_OK);
        CHECK(r->ref_setup_ms > 0 && r->cand_setup_ms > 0);
        CHECK(!r->ref_setup.context_early && !r->cand_setup.context_early);   /* not warmed */
        CHECK(r->timing.n > 0 && r->timing.median_ms > 0);
        seed = r->seed;
        kopt_eval_result_free(r);
    }
    /* served: no setup for either, the same seed */
    if ((r = run(s, CANDIDATES "/vector_add_correct_nofm.cu"))) {
        CHECK_EQ_INT(r->verdict, KOPT_VERDICT_OK);
        CHECK(r->ref_setup_ms == 0 && r->cand_setup_ms == 0);
        CHECK(r->seed == seed);
        kopt_eval_result_free(r);
    }
    /* a wrong answer is caught against the kept reference outputs; the worker stays */
    if ((r = run(s, CANDIDATES "/vector_add_off_by_one.cu"))) {
        CHECK_EQ_INT(r->verdict, KOPT_VERDICT_WRONG);
        kopt_eval_result_free(r);
    }
    kopt_eval_session_counts(s, &runs, &workers);
    CHECK_EQ_INT(runs, 3);
    CHECK_EQ_INT(workers, 1);
    /* a crash ends the worker; the next candidate gets a new one */
    if ((r = run(s, CANDIDATES "/vector_add_crash.cu"))) {
        CHECK_EQ_INT(r->verdict, KOPT_VERDICT_CRASH);
        kopt_eval_result_free(r);
    }
    if ((r = run(s, KOPT_EXAMPLES_DIR "/vector_add/fast.cu"))) {
        CHECK_EQ_INT(r->verdict, KOPT_VERDICT_OK);
        CHECK(r->cand_setup_ms > 0);          /* a new worker */
        CHECK(r->ref_setup_ms == 0);          /* the reference is not run again */
        kopt_eval_result_free(r);
    }
    /* a hang is killed after the timeout, and again the session goes on */
    if ((r = run(s, CANDIDATES "/vector_add_hang.cu"))) {
        CHECK_EQ_INT(r->verdict, KOPT_VERDICT_TIMEOUT);
        kopt_eval_result_free(r);
    }
    if ((r = run(s, KOPT_EXAMPLES_DIR "/vector_add/fast.cu"))) {
        CHECK_EQ_INT(r->verdict, KOPT_VERDICT_OK);
        kopt_eval_result_free(r);
    }
    kopt_eval_session_counts(s, &runs, &workers);
    CHECK_EQ_INT(runs, 7);
    CHECK_EQ_INT(workers, 3);
done:
    kopt_eval_session_close(s);
    kopt_problem_free(p);
}

/* A session of vector_add (given `pool`, or none) warmed twice (the second starts nothing),
 * then fast.cu (OK, both workers started ahead: their contexts made before their jobs came)
 * and an off-by-one candidate (WRONG, served: no worker started). */
static void warm_and_run(kopt_eval_pool *pool)
{
    kopt_problem *p = NULL;
    kopt_eval_session *s = NULL;
    kopt_eval_opts o = KOPT_EVAL_OPTS_INIT;
    kopt_eval_pool_stats st;
    kopt_eval_result *r;

    o.trials = 1;
    o.budget_ms = 10;
    o.timeout_s = 5;
    o.pool = pool;
    CHECK(kopt_problem_load(&p, ctx, KOPT_EXAMPLES_DIR "/vector_add") == KOPT_OK);
    CHECK(kopt_eval_session_open(&s, ctx, p, &o) == KOPT_OK);
    if (!p || !s)
        goto done;
    prob = p;
    CHECK(kopt_eval_session_warm(s, ctx) == KOPT_OK);
    CHECK(kopt_eval_session_warm(s, ctx) == KOPT_OK);     /* again: nothing more started */
    if (pool) {                        /* both taken from the pool */
        kopt_eval_pool_stats_get(pool, &st);
        CHECK_EQ_INT(st.idle, 0);
        CHECK_EQ_INT((int)st.taken, 2);
    }
    if ((r = run(s, KOPT_EXAMPLES_DIR "/vector_add/fast.cu"))) {
        CHECK_EQ_INT(r->verdict, KOPT_VERDICT_OK);
        CHECK(r->ref_setup.context_early && r->cand_setup.context_early);
        CHECK(r->timing.n > 0 && r->timing.median_ms > 0);
        kopt_eval_result_free(r);
    }
    if ((r = run(s, CANDIDATES "/vector_add_off_by_one.cu"))) {   /* served, as before */
        CHECK_EQ_INT(r->verdict, KOPT_VERDICT_WRONG);
        CHECK(r->ref_setup_ms == 0 && r->cand_setup_ms == 0);
        kopt_eval_result_free(r);
    }
done:
    kopt_eval_session_close(s);
    kopt_problem_free(p);
}

/* kopt_eval_session_warm: both workers of the first run were started ahead, and the run's
 * verdicts are unchanged */
static void test_session_warm(void)
{
    if (gpu())
        warm_and_run(NULL);
}

/* a session opened with a pool takes its first two workers from it at the warm (both
 * started before the session was), nothing replaces them there, and the runs are as before */
static void test_session_takes_pool_workers(void)
{
    kopt_eval_pool *pool = NULL;
    kopt_eval_pool_stats st;

    if (!gpu())
        return;
    CHECK(kopt_eval_pool_open(&pool, ctx, 0, 2) == KOPT_OK);
    if (!pool)
        return;
    CHECK(kopt_eval_pool_fill(pool, ctx) == KOPT_OK);
    CHECK_EQ_INT(kopt_eval_pool_idle(pool), 2);
    warm_and_run(pool);
    kopt_eval_pool_stats_get(pool, &st);   /* the session never went back to the pool */
    CHECK_EQ_INT((int)st.started, 2);
    CHECK_EQ_INT(st.idle, 0);
    kopt_eval_pool_close(pool);
}

/* a session warmed and closed without a run: warm succeeds (without a GPU it starts
 * nothing) and close releases the workers started ahead, with or without a GPU */
static void test_session_warm_unused(void)
{
    kopt_problem *p = NULL;
    kopt_eval_session *s = NULL;

    CHECK(kopt_problem_load(&p, ctx, KOPT_EXAMPLES_DIR "/vector_add") == KOPT_OK);
    CHECK(kopt_eval_session_open(&s, ctx, p, NULL) == KOPT_OK);
    CHECK(kopt_eval_session_warm(s, ctx) == KOPT_OK);
    kopt_eval_session_close(s);
    kopt_problem_free(p);
}

int main(int argc, char **argv)
{
    static const ktest_case cases[] = {
        KTEST(test_session_verdicts_and_workers),
        KTEST(test_session_warm),
        KTEST(test_session_takes_pool_workers),
        KTEST(test_session_warm_unused),
    };
    int rc;

    ctx = kopt_ctx_new();
    rc = ktest_main(argc, argv, cases, KTEST_COUNT(cases));
    kopt_ctx_free(ctx);
    /* nothing ran without a GPU: tell CTest (SKIP_RETURN_CODE 77) rather than pass */
    return rc == 0 && have_gpu == 0 ? 77 : rc;
}
