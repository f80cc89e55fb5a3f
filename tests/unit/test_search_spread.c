/* The spread evaluator of kopt optimize --gpus (src/search/eval_spread.c) and the CPU
 * stand-in of a GPU (eval_standin.c): a batch runs on every evaluator at once, each outcome
 * comes back once, on the caller's thread, after its evaluator's commit (also on the
 * caller's thread), saying which GPU measured it (none for a candidate that never reached
 * one, e.g. a compile error); a single evaluation runs on the first
 * GPU; an evaluator's error stops the batch and comes back with its message. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kopt/kopt.h"
#include "ktest.h"

#define NGPU 4
#define DELAY_MS 100

/* An evaluator that records on which thread it was called. */
typedef struct rec {
    int index;
    pthread_t caller;
    int evals, evals_on_caller;
    int commits, commits_off_caller;
    const char *fail_tag;           /* evaluate fails on this node */
} rec;

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

static kopt_status rec_evaluate(void *self, kopt_ctx *ctx, const char *source, const char *tag,
                                kopt_search_outcome *out)
{
    rec *r = self;

    (void)source;
    r->evals++;
    r->evals_on_caller += pthread_equal(pthread_self(), r->caller) != 0;
    if (r->fail_tag && strcmp(tag, r->fail_tag) == 0)
        return kopt_seterr(ctx, KOPT_E_ERROR, "boom on %s", tag);
    sleep_ms(DELAY_MS);
    out->log = strdup(tag);         /* owned: handed over with the outcome */
    if (strcmp(tag, "compile_error") == 0) {
        out->verdict = KOPT_VERDICT_COMPILE_ERROR;   /* never reached a GPU: no where */
        return KOPT_OK;
    }
    out->verdict = KOPT_VERDICT_OK;
    out->where.known = 1;           /* as a live evaluator says where it measured */
    out->where.device = 10 + r->index;
    snprintf(out->where.name, sizeof(out->where.name), "GPU %d", 10 + r->index);
    out->time_ms = r->index + 1;
    return KOPT_OK;
}

static kopt_status rec_commit(void *self, kopt_ctx *ctx, const char *tag,
                              kopt_search_outcome *out)
{
    rec *r = self;

    (void)ctx;
    (void)tag;
    r->commits++;
    r->commits_off_caller += !pthread_equal(pthread_self(), r->caller);
    out->eval_id = 100 + r->index;
    return KOPT_OK;
}

typedef struct spread_run {
    kopt_ctx *ctx;
    rec recs[NGPU];
    kopt_search_evaluator ev;
    pthread_t caller;
    int got[16], off_caller, bad;
} spread_run;

static void open_spread(spread_run *s, const char *fail_tag)
{
    kopt_search_evaluator evs[NGPU];
    kopt_tune_where where[NGPU];

    memset(s, 0, sizeof(*s));
    s->ctx = kopt_ctx_new();
    s->caller = pthread_self();
    memset(evs, 0, sizeof(evs));
    memset(where, 0, sizeof(where));
    for (int i = 0; i < NGPU; i++) {
        s->recs[i].index = i;
        s->recs[i].caller = s->caller;
        s->recs[i].fail_tag = fail_tag;
        evs[i].api_version = KOPT_SEARCH_API_VERSION;
        evs[i].name = "rec";
        evs[i].self = &s->recs[i];
        evs[i].evaluate = rec_evaluate;
        evs[i].commit = rec_commit;
        where[i].known = 1;
        where[i].device = 10 + i;
        snprintf(where[i].name, sizeof(where[i].name), "GPU %d", 10 + i);
    }
    CHECK_EQ_INT(kopt_search_evaluator_spread(&s->ev, s->ctx, evs, where, NGPU), KOPT_OK);
    CHECK(evs[0].self == NULL);      /* taken */
}

static void close_spread(spread_run *s)
{
    kopt_search_evaluator_close(&s->ev);
    kopt_ctx_free(s->ctx);
}

static void done(void *user, int index, kopt_search_outcome *out)
{
    spread_run *s = user;
    int slot = out->where.device - 10;
    char tag[16];

    snprintf(tag, sizeof(tag), "n%d", index);
    s->got[index]++;
    s->off_caller += !pthread_equal(pthread_self(), s->caller);
    /* measured and committed by the same GPU's evaluator, where it says */
    if (!out->where.known || slot < 0 || slot >= NGPU || out->eval_id != 100 + slot ||
        out->time_ms != slot + 1 || !out->log || strcmp(out->log, tag) != 0)
        s->bad++;
    free(out->log);                  /* taken */
    out->log = NULL;
}

static void test_batch_at_once(void)
{
    static const char *const tags[8] = {"n0", "n1", "n2", "n3", "n4", "n5", "n6", "n7"};
    kopt_search_job jobs[8];
    spread_run s;
    double t0, ms;
    int evals = 0, commits = 0, on_caller = 0, off = 0;

    open_spread(&s, NULL);
    CHECK(s.ev.evaluate_many != NULL);
    for (int i = 0; i < 8; i++) {
        jobs[i].source = "__global__ void k() {}";
        jobs[i].tag = tags[i];
    }
    t0 = kopt_now_ms();
    CHECK_EQ_INT(s.ev.evaluate_many(s.ev.self, s.ctx, jobs, 8, done, &s), KOPT_OK);
    ms = kopt_now_ms() - t0;
    for (int i = 0; i < 8; i++)
        CHECK_EQ_INT(s.got[i], 1);
    CHECK_EQ_INT(s.bad, 0);
    CHECK_EQ_INT(s.off_caller, 0);
    for (int i = 0; i < NGPU; i++) {
        evals += s.recs[i].evals;
        on_caller += s.recs[i].evals_on_caller;
        commits += s.recs[i].commits;
        off += s.recs[i].commits_off_caller;
        CHECK(s.recs[i].evals >= 1);  /* every GPU took part */
    }
    CHECK_EQ_INT(evals, 8);
    CHECK_EQ_INT(on_caller, 0);      /* evaluated on the slots' threads */
    CHECK_EQ_INT(commits, 8);
    CHECK_EQ_INT(off, 0);            /* committed on the caller's */
    /* 8 evaluations of 100 ms on 4 GPUs: two rounds, not eight */
    CHECK(ms < 0.6 * 8 * DELAY_MS);
    close_spread(&s);
}

static void test_single_on_first(void)
{
    spread_run s;
    kopt_search_outcome out;

    open_spread(&s, NULL);
    for (int k = 0; k < 3; k++) {
        memset(&out, 0, sizeof(out));
        CHECK_EQ_INT(s.ev.evaluate(s.ev.self, s.ctx, "__global__ void k() {}", "n0", &out),
                     KOPT_OK);
        CHECK_EQ_INT(out.where.device, 10);
        CHECK_EQ_STR(out.where.name, "GPU 10");
        CHECK_EQ_INT(out.eval_id, 100);
        CHECK_EQ_STR(out.log, "n0");
        kopt_search_outcome_clear(&out);
    }
    /* a candidate that never reached a GPU names none (the slot's is not lent to it) */
    memset(&out, 0, sizeof(out));
    CHECK_EQ_INT(s.ev.evaluate(s.ev.self, s.ctx, "x", "compile_error", &out), KOPT_OK);
    CHECK_EQ_INT(out.verdict, KOPT_VERDICT_COMPILE_ERROR);
    CHECK(!out.where.known);
    kopt_search_outcome_clear(&out);
    CHECK_EQ_INT(s.recs[0].evals, 4);
    CHECK_EQ_INT(s.recs[0].commits, 4);
    close_spread(&s);
}

static void test_error_stops(void)
{
    static const char *const tags[4] = {"n0", "n1", "n2", "n3"};
    kopt_search_job jobs[4];
    spread_run s;
    kopt_status rc;

    open_spread(&s, "n2");
    for (int i = 0; i < 4; i++) {
        jobs[i].source = "x";
        jobs[i].tag = tags[i];
    }
    rc = s.ev.evaluate_many(s.ev.self, s.ctx, jobs, 4, done, &s);
    CHECK(rc != KOPT_OK);
    CHECK_STR_CONTAINS(kopt_errmsg(s.ctx), "boom on n2");
    CHECK_EQ_INT(s.got[2], 0);
    CHECK_EQ_INT(s.bad, 0);
    close_spread(&s);
}

static void test_standin(void)
{
    kopt_ctx *ctx = kopt_ctx_new();
    kopt_search_evaluator ev;
    kopt_search_outcome out;

    CHECK_EQ_INT(kopt_search_evaluator_standin(&ev, ctx, 2.0, 5, 1, "Model A"), KOPT_OK);
    memset(&out, 0, sizeof(out));
    CHECK_EQ_INT(ev.evaluate(ev.self, ctx, "__global__ void k() {}\n// kopt-test: verdict=OK "
                             "time=0.5 class=memory\n", "n1", &out), KOPT_OK);
    CHECK_EQ_INT(out.verdict, KOPT_VERDICT_OK);
    CHECK_NEAR(out.time_ms, 0.5, 1e-12);
    CHECK_EQ_INT(out.where.known, 1);
    CHECK_EQ_INT(out.where.device, 5);
    CHECK_EQ_STR(out.where.name, "Model A");
    kopt_search_outcome_clear(&out);
    memset(&out, 0, sizeof(out));
    CHECK_EQ_INT(ev.evaluate(ev.self, ctx, "__global__ void k() {}", "n2", &out), KOPT_OK);
    CHECK_NEAR(out.time_ms, 2.0, 1e-12);   /* no marker: the reference's time */
    kopt_search_outcome_clear(&out);
    kopt_search_evaluator_close(&ev);
    kopt_ctx_free(ctx);
}

int main(int argc, char **argv)
{
    static const ktest_case cases[] = {
        KTEST(test_batch_at_once), KTEST(test_single_on_first), KTEST(test_error_stops),
        KTEST(test_standin)};
    return ktest_main(argc, argv, cases, KTEST_COUNT(cases));
}
