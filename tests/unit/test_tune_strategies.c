/*
 * Unit tests of the search strategies (src/tune/strategies/): option parsing and its
 * errors; the strategy list; and every strategy run on template spaces with synthetic,
 * deterministic objectives through a small in-test loop (ask -> evaluate -> tell, budget,
 * repeats counted): a ~200-point "bowl" with noise, constraint-pruned and failing regions;
 * a deceptive two-basin objective; spaces of 3 points, of mostly invalid points, and where
 * every evaluation fails; budgets smaller than a population. Checks that only valid,
 * unrepeated points are proposed, that a seed fixes the path, that each strategy reaches
 * the global optimum within a budget for most seeds (the measured numbers are printed),
 * and, through kopt_tune_run with a replay evaluator, that the real driver does the same.
 */
#include "ktest.h"
#include "tune_fixture.h"

#include "kopt/problem.h"
#include "kopt/tune.h"

#include <math.h>

static kopt_ctx *ctx;
static char *tmp;
static kopt_problem *prob;

/* A template space from `params` and `constraints` (JSON fragments). */
static kopt_tune_space *make_space(const char *params, const char *constraints)
{
    kopt_buf b = KOPT_BUF_INIT;
    kopt_candidate *c = NULL;
    kopt_tune_space *s = NULL;
    char *text;

    kopt_buf_printf(&b, "/*@kopt\n{\"params\": {%s}", params);
    if (constraints)
        kopt_buf_printf(&b, ", \"constraints\": [%s]", constraints);
    kopt_buf_printf(&b, "}\n*/\n__global__ void k(const float *x, float *y, int n) {}\n");
    text = kopt_buf_detach(&b);
    if (kopt_candidate_parse(&c, ctx, text, "t.cu", prob) != KOPT_OK)
        KTEST_FAIL("template does not parse: %s", kopt_errmsg(ctx));
    else if (kopt_tune_space_create(&s, ctx, c, &prob->sizes, NULL) != KOPT_OK)
        KTEST_FAIL("space: %s", kopt_errmsg(ctx));
    kopt_candidate_free(c);
    free(text);
    return s;
}

/* BM x BN x VEC x STAGES = 5 x 5 x 4 x 2 = 200 points, 176 valid (BM*BN <= 16384). */
static kopt_tune_space *bowl_space(void)
{
    return make_space("\"BM\": [16, 32, 64, 128, 256], \"BN\": {\"pow2\": [16, 256]},"
                      " \"VEC\": {\"values\": [1, 2, 4, 8], \"role\": \"vector\"},"
                      " \"STAGES\": {\"range\": [1, 2], \"role\": \"stages\"}",
                      "\"BM * BN <= 16384\"");
}

/* ---- synthetic objectives ---------------------------------------------------------------- */

/* BOWL_PLAIN: the bowl's values without findings. */
typedef enum { OBJ_BOWL, OBJ_BOWL_PLAIN, OBJ_DECEPTIVE, OBJ_ALL_FAIL, OBJ_FLAT } objective_kind;

static uint64_t mix(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* Deterministic noise in [-1, 1). */
static double noise(uint64_t point)
{
    return (double)(mix(point) >> 11) * 0x1.0p-52 - 1.0;
}

/* The bowl's optimum: BM=64, BN=128, VEC=4, STAGES=2 (indices 2, 3, 2, 1). */
static const int BOWL_OPT[4] = {2, 3, 2, 1};
/* The deceptive objective's narrow global optimum (BM=128, BN=16, VEC=1, STAGES=1) and
 * its broad local basin (BM=16, BN=128, VEC=8, STAGES=2). */
static const int DEC_OPT[4] = {3, 0, 0, 0};
static const int DEC_LOCAL[4] = {0, 3, 3, 1};

static double dist2(const int *a, const int *b, const double *w)
{
    double d = 0;

    for (int i = 0; i < 4; i++)
        d += w[i] * (a[i] - b[i]) * (a[i] - b[i]);
    return d;
}

static void evaluate(const kopt_tune_space *s, objective_kind kind, uint64_t point,
                     kopt_tune_outcome *o)
{
    static const double wb[4] = {0.08, 0.06, 0.1, 0.15}, wd[4] = {0.05, 0.05, 0.05, 0.05},
                        wn[4] = {0.25, 0.25, 0.25, 0.25};
    int idx[KOPT_TUNE_MAX_PARAMS];
    double t;

    memset(o, 0, sizeof(*o));
    kopt_tune_space_decode(s, point, idx);
    if (kind == OBJ_ALL_FAIL || (s->nparams == 4 && idx[2] == 3 && idx[0] == 0)) {
        o->state = KOPT_TUNE_COMPILE_ERROR;       /* VEC=8 with BM=16 does not compile */
        snprintf(o->message, sizeof(o->message), "synthetic compile error");
        return;
    }
    if (s->nparams == 4 && idx[1] == 4 && idx[3] == 1) {
        o->state = KOPT_TUNE_RESOURCES;           /* BN=256 with 2 stages: too much smem */
        return;
    }
    if (kind == OBJ_FLAT || s->nparams != 4) {
        t = 1.0 + 0.5 * (noise(point) + 1.0);     /* small spaces: noise only */
    } else if (kind == OBJ_BOWL || kind == OBJ_BOWL_PLAIN) {
        t = 1.0 + dist2(idx, BOWL_OPT, wb) + 0.03 * (idx[0] - 2) * (idx[1] - 3);
        t *= 1.0 + 0.02 * noise(point);
    } else {
        double local = 1.3 + dist2(idx, DEC_LOCAL, wd), spike = 1.0 + dist2(idx, DEC_OPT, wn);
        t = (local < spike ? local : spike) * (1.0 + 0.01 * noise(point));
    }
    o->state = KOPT_TUNE_OK;
    o->time_ms = t;
    snprintf(o->verdict, sizeof(o->verdict), "OK");
    /* Findings the profile-guided strategy can read, as micro-tools would give them. */
    if (kind == OBJ_BOWL && s->nparams == 4) {
        int n = 0;
        if (idx[0] > BOWL_OPT[0] || idx[1] > BOWL_OPT[1]) {
            snprintf(o->findings[n].tool, sizeof(o->findings[n].tool), "register_spills");
            o->findings[n++].gain = 0.2;
            o->spill_bytes = 64;
        }
        if (idx[2] < BOWL_OPT[2]) {
            snprintf(o->findings[n].tool, sizeof(o->findings[n].tool), "non_vectorized_loads");
            o->findings[n++].gain = 0.15;
        }
        if (idx[3] < BOWL_OPT[3]) {
            snprintf(o->findings[n].tool, sizeof(o->findings[n].tool), "missing_async_copy");
            o->findings[n++].gain = 0.1;
        }
        if (idx[0] < BOWL_OPT[0] || idx[1] < BOWL_OPT[1]) {
            snprintf(o->findings[n].tool, sizeof(o->findings[n].tool), "sector_efficiency");
            o->findings[n++].gain = 0.05;
        }
        o->nfindings = n;
    }
}

/* The best valid OK point of a space under an objective (by scanning every point). */
static uint64_t optimum_of(const kopt_tune_space *s, objective_kind kind, double *best)
{
    uint64_t arg = UINT64_MAX;

    *best = INFINITY;
    for (uint64_t p = 0; p < s->npoints; p++) {
        kopt_tune_outcome o;
        double v;
        if (!kopt_tune_space_valid(s, p, NULL, 0))
            continue;
        evaluate(s, kind, p, &o);
        v = kopt_tune_outcome_objective(&o, KOPT_TUNE_TIME);
        if (v < *best) {
            *best = v;
            arg = p;
        }
    }
    return arg;
}

/* ---- the in-test driver ------------------------------------------------------------------ */

#define MAX_RUN 4096

typedef struct run_log {
    int evals;                /* distinct points evaluated */
    int to_opt;               /* evaluations when the optimum was first seen, or -1 */
    int invalid;              /* proposed points the space rejects */
    int repeats;              /* points proposed twice */
    int overfull;             /* asks that returned more than max */
    int looped;               /* the loop guard fired */
    int finished;             /* ask returned 0 */
    uint64_t seq[MAX_RUN];    /* proposed points in order */
    int nseq;
} run_log;

static int run_strategy(const kopt_tune_strategy *st, const kopt_tune_space *s,
                        objective_kind kind, uint64_t seed, int budget, const char *options,
                        uint64_t opt, run_log *log)
{
    static uint64_t points[MAX_RUN];
    static kopt_tune_outcome outcomes[MAX_RUN];
    kopt_tune_strategy_opts so = {seed, budget, KOPT_TUNE_TIME, options};
    void *state = NULL;
    long best = -1;
    int asks = 0;

    memset(log, 0, sizeof(*log));
    log->to_opt = -1;
    if (st->create(&state, ctx, s, &so) != KOPT_OK) {
        KTEST_FAIL("%s: create: %s", st->name, kopt_errmsg(ctx));
        return -1;
    }
    while (log->evals < budget && log->evals < MAX_RUN) {
        uint64_t round[8];
        int max = budget - log->evals < 8 ? budget - log->evals : 8, n;
        kopt_tune_history h = {(size_t)log->evals, points, outcomes, best, KOPT_TUNE_TIME,
                               NULL};

        if (++asks > 20 * budget + 100) {
            log->looped = 1;
            break;
        }
        n = st->ask(state, &h, round, max);
        if (n <= 0) {
            log->finished = 1;
            break;
        }
        if (n > max) {
            log->overfull++;
            n = max;
        }
        for (int i = 0; i < n; i++) {
            uint64_t p = round[i];
            int seen = 0;
            kopt_tune_outcome o;

            if (log->nseq < MAX_RUN)
                log->seq[log->nseq++] = p;
            if (p >= s->npoints || !kopt_tune_space_valid(s, p, NULL, 0)) {
                log->invalid++;
                memset(&o, 0, sizeof(o));
                o.state = KOPT_TUNE_PRUNED;
                st->tell(state, p, &o);
                continue;
            }
            for (int j = 0; j < log->evals && !seen; j++)
                seen = points[j] == p;
            if (seen) {
                log->repeats++;
                evaluate(s, kind, p, &o);
                st->tell(state, p, &o);
                continue;
            }
            evaluate(s, kind, p, &o);
            points[log->evals] = p;
            outcomes[log->evals] = o;
            if (o.state == KOPT_TUNE_OK &&
                (best < 0 || o.time_ms < outcomes[best].time_ms))
                best = log->evals;
            log->evals++;
            if (p == opt && log->to_opt < 0)
                log->to_opt = log->evals;
            st->tell(state, p, &o);
        }
    }
    st->destroy(state);
    return 0;
}

/* The strategies that must find optima (all but exhaustive), in list order. */
static const char *const SEARCHERS[] = {"random",     "annealing", "genetic",
                                        "diff_evolution", "pso",   "greedy_ils",
                                        "forest",     "profile_guided"};
#define NSEARCHERS ((int)(sizeof(SEARCHERS) / sizeof(SEARCHERS[0])))

static const kopt_tune_strategy *find(const char *name)
{
    const kopt_tune_strategy *st = kopt_tune_strategy_find(name);

    if (!st)
        KTEST_FAIL("strategy %s is not listed", name);
    return st;
}

/* ---- options and the list ------------------------------------------------------------ */

static void test_option_parsing(void)
{
    static const char *const known[] = {"T0", "alpha", "restarts", NULL};
    double v = -1;

    CHECK_EQ_INT(kopt_tune_option(ctx, NULL, known, "T0", 1.5, &v), KOPT_OK);
    CHECK_NEAR(v, 1.5, 0);
    CHECK_EQ_INT(kopt_tune_option(ctx, "", known, "T0", 2.5, &v), KOPT_OK);
    CHECK_NEAR(v, 2.5, 0);
    CHECK_EQ_INT(kopt_tune_option(ctx, "T0=0.25,alpha=0.9", known, "T0", 1, &v), KOPT_OK);
    CHECK_NEAR(v, 0.25, 0);
    CHECK_EQ_INT(kopt_tune_option(ctx, " T0 = 0.25 , alpha = 0.9 ,", known, "alpha", 1, &v),
                 KOPT_OK);
    CHECK_NEAR(v, 0.9, 0);
    CHECK_EQ_INT(kopt_tune_option(ctx, "restarts=3", known, "alpha", 0.5, &v), KOPT_OK);
    CHECK_NEAR(v, 0.5, 0);                        /* absent: the default */
    CHECK_EQ_INT(kopt_tune_option(ctx, "restarts=1e3", known, "restarts", 0, &v), KOPT_OK);
    CHECK_NEAR(v, 1000, 0);

    CHECK_EQ_INT(kopt_tune_option(ctx, "T0=1,temp=3", known, "T0", 1, &v), KOPT_E_INVALID);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "'temp'");
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "T0, alpha, restarts");
    CHECK_EQ_INT(kopt_tune_option(ctx, "alpha=fast", known, "T0", 1, &v), KOPT_E_INVALID);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "'alpha'");
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "'fast'");
    CHECK_EQ_INT(kopt_tune_option(ctx, "alpha=0.9x", known, "alpha", 1, &v), KOPT_E_INVALID);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "'0.9x' is not a number");
    CHECK_EQ_INT(kopt_tune_option(ctx, "alpha=", known, "alpha", 1, &v), KOPT_E_INVALID);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "'alpha'");
    CHECK_EQ_INT(kopt_tune_option(ctx, "restarts", known, "T0", 1, &v), KOPT_E_INVALID);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "'restarts' has no value");
    CHECK_EQ_INT(kopt_tune_option(ctx, "T0=1,T0=2", known, "T0", 1, &v), KOPT_E_INVALID);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "given twice");
    CHECK_EQ_INT(kopt_tune_option(ctx, "=3", known, "T0", 1, &v), KOPT_E_INVALID);
    CHECK_EQ_INT(kopt_tune_option(ctx, "T0=nan", known, "T0", 1, &v), KOPT_E_INVALID);
}

static void test_strategy_options(void)
{
    kopt_tune_space *s = bowl_space();
    static const struct {
        const char *strategy, *options, *named;
    } bad[] = {
        {"annealing", "T0=-1", "'T0'"},          {"annealing", "restarts=1.5", "'restarts'"},
        {"genetic", "popsize=1", "'popsize'"},   {"genetic", "mutation=2", "'mutation'"},
        {"diff_evolution", "CR=1.5", "'CR'"},    {"pso", "w=x", "'w'"},
        {"greedy_ils", "first=2", "'first'"},    {"forest", "acq=7", "'acq'"},
        {"profile_guided", "batch=0", "'batch'"}, {"exhaustive", "popsize=3", "'popsize'"},
        {"random", "x=1", "'x'"},
    };

    if (!s)
        return;
    /* Every strategy refuses an unknown key, naming it. */
    for (int i = 0; kopt_tune_strategies[i]; i++) {
        const kopt_tune_strategy *st = kopt_tune_strategies[i];
        kopt_tune_strategy_opts so = {1, 100, KOPT_TUNE_TIME, "bogus_key=1"};
        void *state = NULL;
        CHECK_EQ_INT(st->create(&state, ctx, s, &so), KOPT_E_INVALID);
        CHECK_STR_CONTAINS(kopt_errmsg(ctx), "'bogus_key'");
        CHECK(state == NULL);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const kopt_tune_strategy *st = find(bad[i].strategy);
        kopt_tune_strategy_opts so = {1, 100, KOPT_TUNE_TIME, bad[i].options};
        void *state = NULL;
        if (!st)
            continue;
        if (!CHECK_EQ_INT(st->create(&state, ctx, s, &so), KOPT_E_INVALID))
            st->destroy(state);
        else
            CHECK_STR_CONTAINS(kopt_errmsg(ctx), bad[i].named);
    }
    /* Good options are taken. */
    {
        static const char *const good[][2] = {
            {"annealing", "T0=1,alpha=0.99,restarts=0,batch=2"},
            {"genetic", "popsize=10,elite=1,tournament=2,mutation=0.3"},
            {"diff_evolution", "popsize=8,F=0.5,CR=0.9"}, {"pso", "popsize=8,w=0.7,c1=1,c2=2"},
            {"greedy_ils", "first=1,batch=3,perturb=1,patience=20"},
            {"forest", "init=5,trees=8,pool=64,batch=2,acq=1,kappa=1,xi=0"},
            {"profile_guided", "init=4,batch=1,perturb=3"},
        };
        for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
            const kopt_tune_strategy *st = find(good[i][0]);
            kopt_tune_strategy_opts so = {1, 100, KOPT_TUNE_TIME, good[i][1]};
            void *state = NULL;
            if (st && CHECK_EQ_INT(st->create(&state, ctx, s, &so), KOPT_OK))
                st->destroy(state);
        }
    }
    kopt_tune_space_free(s);
}

static void test_strategy_list(void)
{
    static const char *const names[] = {"exhaustive", "random", "annealing", "genetic",
                                        "diff_evolution", "pso", "greedy_ils", "forest",
                                        "profile_guided"};
    int n = 0;

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        const kopt_tune_strategy *st = kopt_tune_strategy_find(names[i]);
        if (!CHECK(st != NULL))
            continue;
        CHECK_EQ_STR(st->name, names[i]);
        CHECK(st->summary && strlen(st->summary) > 10);
        CHECK(st->create && st->ask && st->tell && st->destroy);
        CHECK_EQ_INT(st->wants_findings, strcmp(names[i], "profile_guided") == 0);
    }
    for (int i = 0; kopt_tune_strategies[i]; i++, n++)
        for (int j = 0; j < i; j++)
            CHECK(strcmp(kopt_tune_strategies[i]->name, kopt_tune_strategies[j]->name) != 0);
    CHECK_EQ_INT(n, 9);
    CHECK(kopt_tune_strategy_find("brute_force") == kopt_tune_strategy_find("exhaustive"));
    CHECK(kopt_tune_strategy_find("diff_evo") == kopt_tune_strategy_find("diff_evolution"));
    CHECK(kopt_tune_strategy_find("simulated_annealing") ==
          kopt_tune_strategy_find("annealing"));
    CHECK(kopt_tune_strategy_find("hill_climbing") == NULL);
    CHECK(kopt_tune_strategy_find(NULL) == NULL);
}

/* ---- exhaustive ---------------------------------------------------------------------- */

static void test_exhaustive(void)
{
    kopt_tune_space *s = bowl_space();
    static run_log log;
    double best;
    uint64_t opt;
    int exact = 0;
    uint64_t nvalid;

    if (!s)
        return;
    nvalid = kopt_tune_space_count_valid(s, 0, &exact);
    CHECK_EQ_INT(nvalid, 176);
    opt = optimum_of(s, OBJ_BOWL, &best);
    run_strategy(find("exhaustive"), s, OBJ_BOWL, 1, 1000, NULL, opt, &log);
    CHECK_EQ_INT(log.evals, (long long)nvalid);    /* exactly the valid points */
    CHECK(log.finished);
    CHECK_EQ_INT(log.invalid, 0);
    CHECK_EQ_INT(log.repeats, 0);
    CHECK(log.to_opt > 0);
    for (int i = 1; i < log.nseq; i++)
        CHECK(log.seq[i] > log.seq[i - 1]);       /* enumeration order */
    /* A budget cut short stops it at the budget (the loop asks for no more). */
    run_strategy(find("exhaustive"), s, OBJ_BOWL, 1, 50, NULL, opt, &log);
    CHECK_EQ_INT(log.evals, 50);
    kopt_tune_space_free(s);
}

/* ---- reaching the optimum ------------------------------------------------------------- */

/* Runs every searcher over 10 seeds; prints successes and the mean evaluations to the
 * optimum; checks each succeeded for at least min_ok[i] seeds, proposed nothing invalid
 * and repeated nothing. */
static void reach(objective_kind kind, int budget, const int *min_ok, const char *what)
{
    kopt_tune_space *s = bowl_space();
    static run_log log;
    double best;
    uint64_t opt;

    if (!s)
        return;
    opt = optimum_of(s, kind, &best);
    printf("  %s: optimum %.4f at point %llu, budget %d, 10 seeds\n", what, best,
           (unsigned long long)opt, budget);
    for (int i = 0; i < NSEARCHERS; i++) {
        const kopt_tune_strategy *st = find(SEARCHERS[i]);
        int ok = 0, sum = 0;
        char list[256] = "";
        if (!st)
            continue;
        for (uint64_t seed = 1; seed <= 10; seed++) {
            size_t len = strlen(list);
            run_strategy(st, s, kind, seed, budget, NULL, opt, &log);
            CHECK_EQ_INT(log.invalid, 0);
            CHECK_EQ_INT(log.repeats, 0);
            CHECK_EQ_INT(log.overfull, 0);
            CHECK(!log.looped);
            if (log.to_opt > 0) {
                ok++;
                sum += log.to_opt;
            }
            snprintf(list + len, sizeof(list) - len, " %d", log.to_opt);
        }
        printf("    %-15s reached %2d/10, mean %5.1f evals; per seed:%s\n", SEARCHERS[i], ok,
               ok ? (double)sum / ok : 0.0, list);
        if (ok < min_ok[i])
            KTEST_FAIL("%s reached the optimum for %d of 10 seeds (want >= %d)", SEARCHERS[i],
                       ok, min_ok[i]);
    }
    kopt_tune_space_free(s);
}

static void test_reach_bowl(void)
{
    /* random, annealing, genetic, diff_evolution, pso, greedy_ils, forest, profile_guided */
    static const int min_ok[NSEARCHERS] = {5, 8, 8, 8, 8, 8, 8, 8};
    reach(OBJ_BOWL, 120, min_ok, "bowl");
}

static void test_reach_deceptive(void)
{
    static const int min_ok[NSEARCHERS] = {6, 8, 8, 8, 8, 8, 8, 8};
    reach(OBJ_DECEPTIVE, 150, min_ok, "deceptive");
}

/* ---- determinism ------------------------------------------------------------------ */

static void test_determinism(void)
{
    kopt_tune_space *s = bowl_space();
    static run_log a, b, c;
    double best;
    uint64_t opt;

    if (!s)
        return;
    opt = optimum_of(s, OBJ_BOWL, &best);
    for (int i = 0; kopt_tune_strategies[i]; i++) {
        const kopt_tune_strategy *st = kopt_tune_strategies[i];
        run_strategy(st, s, OBJ_BOWL, 42, 80, NULL, opt, &a);
        run_strategy(st, s, OBJ_BOWL, 42, 80, NULL, opt, &b);
        run_strategy(st, s, OBJ_BOWL, 43, 80, NULL, opt, &c);
        if (!CHECK_EQ_INT(a.nseq, b.nseq))
            continue;
        if (memcmp(a.seq, b.seq, (size_t)a.nseq * sizeof(a.seq[0])) != 0)
            KTEST_FAIL("%s: the same seed gave two different paths", st->name);
        if (strcmp(st->name, "exhaustive") != 0 && a.nseq == c.nseq &&
            memcmp(a.seq, c.seq, (size_t)a.nseq * sizeof(a.seq[0])) == 0)
            KTEST_FAIL("%s: seeds 42 and 43 gave the same path", st->name);
    }
    kopt_tune_space_free(s);
}

/* ---- small, sparse and failing spaces ------------------------------------------------- */

static void test_tiny_space(void)
{
    kopt_tune_space *s = make_space("\"A\": [1, 2, 3]", NULL);
    static run_log log;

    if (!s)
        return;
    for (int i = 0; kopt_tune_strategies[i]; i++) {
        const kopt_tune_strategy *st = kopt_tune_strategies[i];
        run_strategy(st, s, OBJ_FLAT, 7, 100, NULL, UINT64_MAX, &log);
        if (!CHECK(log.finished && !log.looped))
            fprintf(stderr, "  %s did not finish on 3 points\n", st->name);
        CHECK_EQ_INT(log.evals, 3);
        CHECK_EQ_INT(log.repeats + log.invalid, 0);
    }
    kopt_tune_space_free(s);
}

static void test_mostly_invalid(void)
{
    /* 2500 points, 2 valid: (17, 23) and (23, 17). */
    kopt_tune_space *s = make_space("\"P\": {\"range\": [1, 50]}, \"Q\": {\"range\": [1, 50]}",
                                    "\"P * Q == 391\"");
    static run_log log;

    if (!s)
        return;
    for (int i = 0; kopt_tune_strategies[i]; i++) {
        const kopt_tune_strategy *st = kopt_tune_strategies[i];
        run_strategy(st, s, OBJ_FLAT, 3, 100, NULL, UINT64_MAX, &log);
        if (!CHECK(log.finished && !log.looped))
            fprintf(stderr, "  %s did not finish on a sparse space\n", st->name);
        CHECK_EQ_INT(log.evals, 2);
        CHECK_EQ_INT(log.repeats + log.invalid, 0);
    }
    kopt_tune_space_free(s);
}

static void test_all_failing(void)
{
    kopt_tune_space *s = bowl_space();
    static run_log log;

    if (!s)
        return;
    for (int i = 0; kopt_tune_strategies[i]; i++) {
        const kopt_tune_strategy *st = kopt_tune_strategies[i];
        /* Nothing ever succeeds: each proposes every valid point once, then stops. */
        run_strategy(st, s, OBJ_ALL_FAIL, 5, 1000, NULL, UINT64_MAX, &log);
        if (!CHECK(log.finished && !log.looped))
            fprintf(stderr, "  %s did not finish when everything fails\n", st->name);
        CHECK_EQ_INT(log.evals, 176);
        CHECK_EQ_INT(log.repeats + log.invalid, 0);
    }
    kopt_tune_space_free(s);
}

static void test_small_budget(void)
{
    kopt_tune_space *s = bowl_space();
    static run_log log;

    if (!s)
        return;
    for (int budget = 1; budget <= 5; budget += 2)
        for (int i = 0; kopt_tune_strategies[i]; i++) {
            const kopt_tune_strategy *st = kopt_tune_strategies[i];
            run_strategy(st, s, OBJ_BOWL, 9, budget, NULL, UINT64_MAX, &log);
            CHECK_EQ_INT(log.evals, budget);     /* popsize 20 > budget: still proposes */
            CHECK_EQ_INT(log.overfull + log.repeats + log.invalid, 0);
        }
    kopt_tune_space_free(s);
}

/* A space of 2 million points, 2/3 of them valid: every strategy works lazily (nothing
 * sized by the space) and proposes 60 valid, distinct points quickly. */
static void test_large_space(void)
{
    kopt_tune_space *s = make_space(
        "\"BM\": {\"pow2\": [1, 512]}, \"BN\": {\"pow2\": [1, 512]}, \"VEC\": [1, 2, 4, 8],"
        " \"STAGES\": {\"range\": [1, 8]}, \"UNROLL\": {\"range\": [1, 16]},"
        " \"WARPS\": [1, 2, 4, 8, 16], \"SPLIT\": {\"range\": [1, 8]}",
        "\"(BM + BN + STAGES) % 3 != 0\"");
    static run_log log;

    if (!s)
        return;
    CHECK_EQ_INT(s->npoints, 2048000);
    for (int i = 0; kopt_tune_strategies[i]; i++) {
        const kopt_tune_strategy *st = kopt_tune_strategies[i];
        double t0 = kopt_now_ms();
        run_strategy(st, s, OBJ_FLAT, 11, 60, NULL, UINT64_MAX, &log);
        printf("    %-15s 60 points of 2M in %7.2f ms\n", st->name, kopt_now_ms() - t0);
        CHECK_EQ_INT(log.evals, 60);
        CHECK_EQ_INT(log.repeats + log.invalid + log.overfull, 0);
    }
    kopt_tune_space_free(s);
}

/* The examples' real templates (their constraints over params and sizes): every strategy
 * proposes only valid, distinct points and stops at the budget or when all are spent. */
static void test_example_templates(void)
{
    static const char *const names[] = {"softmax", "layernorm", "reduce_sum", "transpose",
                                        "sgemm"};
    static run_log log;
    int tried = 0;

    for (size_t e = 0; e < sizeof(names) / sizeof(names[0]); e++) {
        char dir[1024], path[1200];
        kopt_problem *p = NULL;
        kopt_candidate *c = NULL;
        kopt_vars sizes = KOPT_VARS_INIT;
        kopt_tune_space *s = NULL;
        uint64_t nvalid;
        int exact;

        snprintf(dir, sizeof(dir), "%s/%s", KOPT_EXAMPLES_DIR, names[e]);
        snprintf(path, sizeof(path), "%s/tune.cu", dir);
        if (access(path, R_OK) != 0)
            continue;                             /* not written yet */
        tried++;
        if (!CHECK_EQ_INT(kopt_problem_load(&p, ctx, dir), KOPT_OK) ||
            !CHECK_EQ_INT(kopt_candidate_load(&c, ctx, path, p), KOPT_OK) ||
            !CHECK_EQ_INT(kopt_sizes_resolve(&sizes, ctx, p, NULL), KOPT_OK) ||
            !CHECK_EQ_INT(kopt_tune_space_create(&s, ctx, c, &sizes, NULL), KOPT_OK)) {
            fprintf(stderr, "  %s: %s\n", names[e], kopt_errmsg(ctx));
            goto next;
        }
        nvalid = kopt_tune_space_count_valid(s, 0, &exact);
        printf("    %-10s %8llu points, %6llu valid\n", names[e],
               (unsigned long long)s->npoints, (unsigned long long)nvalid);
        for (int i = 0; kopt_tune_strategies[i]; i++) {
            const kopt_tune_strategy *st = kopt_tune_strategies[i];
            run_strategy(st, s, OBJ_FLAT, 5, 100, NULL, UINT64_MAX, &log);
            CHECK_EQ_INT(log.evals, nvalid < 100 ? (long long)nvalid : 100);
            if (log.repeats + log.invalid + log.overfull + log.looped)
                KTEST_FAIL("%s on %s: %d repeats, %d invalid, %d overfull, looped %d",
                           st->name, names[e], log.repeats, log.invalid, log.overfull,
                           log.looped);
        }
    next:
        kopt_tune_space_free(s);
        kopt_vars_free(&sizes);
        kopt_candidate_free(c);
        kopt_problem_free(p);
    }
    if (!tried)
        KTEST_SKIP("no examples/*/tune.cu yet");
}

/* ---- profile-guided ----------------------------------------------------------------- */

static void test_profile_guided_uses_findings(void)
{
    kopt_tune_space *s = bowl_space();
    static run_log with, without;
    double best;
    uint64_t opt;
    int sum_with = 0, sum_without = 0, differ = 0;

    if (!s)
        return;
    opt = optimum_of(s, OBJ_BOWL, &best);
    /* The same values with and without findings (which point toward the optimum): the
     * findings must change the path and, here, shorten it. Runs that miss count as 176. */
    for (uint64_t seed = 1; seed <= 10; seed++) {
        run_strategy(find("profile_guided"), s, OBJ_BOWL, seed, 176, NULL, opt, &with);
        run_strategy(find("profile_guided"), s, OBJ_BOWL_PLAIN, seed, 176, NULL, opt,
                     &without);
        sum_with += with.to_opt > 0 ? with.to_opt : 176;
        sum_without += without.to_opt > 0 ? without.to_opt : 176;
        differ += with.nseq != without.nseq ||
                  memcmp(with.seq, without.seq, (size_t)with.nseq * sizeof(uint64_t)) != 0;
    }
    printf("  bowl, profile_guided's mean evaluations to the optimum over 10 seeds: %.1f with "
           "findings, %.1f without\n", sum_with / 10.0, sum_without / 10.0);
    CHECK_EQ_INT(differ, 10);
    CHECK(sum_with < sum_without);
    kopt_tune_space_free(s);
}

/* ---- through the real driver ----------------------------------------------------------- */

/* Every strategy through kopt_tune_run, replaying a complete recording of the bowl: the
 * driver must take the same path as the in-test loop (same asks, same tells), and find the
 * optimum as often. */
static void test_driver_replay(void)
{
    kopt_tune_space *s = bowl_space();
    kopt_tune_cache *recorded = NULL;
    kopt_tune_evaluator *ev = NULL;
    kopt_tune_key key;
    static run_log log;
    double best;
    uint64_t opt;

    if (!s)
        return;
    memset(&key, 0, sizeof(key));
    snprintf(key.problem, sizeof(key.problem), "tst");
    snprintf(key.device, sizeof(key.device), "synthetic");
    opt = optimum_of(s, OBJ_BOWL, &best);
    if (!CHECK_EQ_INT(kopt_tune_cache_create(&recorded, ctx, s, &key), KOPT_OK))
        goto done;
    for (uint64_t p = 0; p < s->npoints; p++) {
        kopt_tune_outcome o;
        if (!kopt_tune_space_valid(s, p, NULL, 0))
            continue;
        evaluate(s, OBJ_BOWL, p, &o);
        if (!CHECK_EQ_INT(kopt_tune_cache_put(recorded, ctx, p, &o), KOPT_OK))
            goto done;
    }
    if (!CHECK_EQ_INT(kopt_tune_evaluator_replay(&ev, ctx, s, recorded), KOPT_OK))
        goto done;
    for (int i = 0; kopt_tune_strategies[i]; i++) {
        const kopt_tune_strategy *st = kopt_tune_strategies[i];
        int ok = 0, same = 0;
        for (uint64_t seed = 1; seed <= 10; seed++) {
            kopt_tune_opts opts = KOPT_TUNE_OPTS_INIT;
            kopt_tune_cache *cache = NULL;
            kopt_tune_result *res = NULL;
            opts.strategy = st->name;
            opts.seed = seed;
            opts.max_evals = 120;
            opts.compile_threads = 0;
            opts.lookahead = 8;
            if (!CHECK_EQ_INT(kopt_tune_cache_create(&cache, ctx, s, &key), KOPT_OK))
                break;
            if (!CHECK_EQ_INT(kopt_tune_run(&res, ctx, s, cache, ev, &opts), KOPT_OK)) {
                fprintf(stderr, "  %s: %s\n", st->name, kopt_errmsg(ctx));
                kopt_tune_cache_free(cache);
                break;
            }
            run_strategy(st, s, OBJ_BOWL, seed, 120, NULL, opt, &log);
            CHECK_EQ_INT(res->evaluated, log.evals);
            ok += res->has_best && res->best_point == opt;
            if (res->n == (size_t)log.nseq)
                same += memcmp(res->points, log.seq, res->n * sizeof(uint64_t)) == 0;
            kopt_tune_result_free(res);
            kopt_tune_cache_free(cache);
        }
        printf("    %-15s through kopt_tune_run: optimum %2d/10, same path as the test loop "
               "%2d/10\n", st->name, ok, same);
        CHECK_EQ_INT(same, 10);
        CHECK(ok >= (strcmp(st->name, "random") == 0 ? 5 : 8));
    }
done:
    kopt_tune_evaluator_free(ev);
    kopt_tune_cache_free(recorded);
    kopt_tune_space_free(s);
}

int main(int argc, char **argv)
{
    static const ktest_case cases[] = {
        KTEST(test_option_parsing),
        KTEST(test_strategy_options),
        KTEST(test_strategy_list),
        KTEST(test_exhaustive),
        KTEST(test_reach_bowl),
        KTEST(test_reach_deceptive),
        KTEST(test_determinism),
        KTEST(test_tiny_space),
        KTEST(test_mostly_invalid),
        KTEST(test_all_failing),
        KTEST(test_small_budget),
        KTEST(test_large_space),
        KTEST(test_example_templates),
        KTEST(test_profile_guided_uses_findings),
        KTEST(test_driver_replay),
    };
    int rc = 1;

    ctx = kopt_ctx_new();
    tmp = ktest_tmpdir("tune_strategies");
    if (!ctx || !tmp)
        return 1;
    if (!(prob = tune_fixture_problem(ctx, tmp, "tst", 1)))
        rc = 1;               /* said why on stderr */
    else
        rc = ktest_main(argc, argv, cases, KTEST_COUNT(cases));
    kopt_problem_free(prob);
    ktest_rmtree(tmp);
    free(tmp);
    kopt_ctx_free(ctx);
    return rc;
}
