/*
 * src/tune/strategies/greedy_ils.c: greedy iterated local search.
 *
 * From a random valid start, descend over the adjacent neighbourhood
 * (kopt_tune_space_neighbors): best-improvement proposes every unproposed neighbour of the
 * current point at once (a batch that compiles in parallel) and moves to the best of them
 * if it beats the current point; first-improvement (first=1) proposes `batch` random
 * neighbours at a time and moves to the first one that beats it. When no unproposed
 * neighbour is left the current point is a local optimum: it becomes the incumbent if it
 * is the best local optimum of this restart, and the search perturbs the incumbent (sets
 * `perturb` random params to random values) and descends again from there. After
 * `patience` told outcomes without improving this restart's best, it restarts at a random
 * valid point.
 *
 * Options: first (0 or 1, default 0), batch (first-improvement, default 2), perturb
 * (default 2), patience (default 50).
 */
#include "common.h"

#include <stdlib.h>

typedef struct greedy_ils {
    const kopt_tune_space *space;
    kopt_rng rng;
    kopt_tune_objective objective;
    kopt_tune__map seen;
    int first, batch, perturb, patience;
    int started;
    uint64_t cur;             /* the point the descent stands on */
    uint64_t inc;             /* the restart's best local optimum */
    int has_inc;
    double run_best;          /* best value since the last restart */
    int no_improve;
    uint64_t nb[2 * KOPT_TUNE_MAX_PARAMS];   /* neighbours proposed from cur, not judged */
    int nnb;
    int done;
} greedy_ils;

static void gils_destroy(void *state)
{
    greedy_ils *g = state;

    if (!g)
        return;
    kopt_tune__map_free(&g->seen);
    free(g);
}

static kopt_status gils_create(void **state, kopt_ctx *ctx, const kopt_tune_space *space,
                               const kopt_tune_strategy_opts *opts)
{
    static const char *const known[] = {"first", "batch", "perturb", "patience", NULL};
    greedy_ils *g = calloc(1, sizeof(*g));
    kopt_status rc;

    if (!g)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "out of memory");
    g->space = space;
    kopt_rng_seed(&g->rng, opts ? opts->seed : 1);
    g->objective = opts ? opts->objective : KOPT_TUNE_TIME;
    if ((rc = kopt_tune__opt_int(ctx, opts, known, "first", 0, 0, 1, &g->first)) ||
        (rc = kopt_tune__opt_int(ctx, opts, known, "batch", 2, 1, 2 * KOPT_TUNE_MAX_PARAMS,
                                 &g->batch)) ||
        (rc = kopt_tune__opt_int(ctx, opts, known, "perturb", 2, 1, KOPT_TUNE_MAX_PARAMS,
                                 &g->perturb)) ||
        (rc = kopt_tune__opt_int(ctx, opts, known, "patience", 50, 1, 100000000,
                                 &g->patience)))
        goto fail;
    if (kopt_tune__map_init(&g->seen, 256) != 0) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "out of memory");
        goto fail;
    }
    g->run_best = INFINITY;
    *state = g;
    return KOPT_OK;
fail:
    gils_destroy(g);
    return rc;
}

static double value_of(greedy_ils *g, const kopt_tune_history *h, uint64_t p)
{
    double v;

    return kopt_tune__value(&g->seen, h, p, &v) ? v : NAN;
}

/* Move cur to the best judged neighbour when it beats cur; drop judged neighbours. */
static void digest(greedy_ils *g, const kopt_tune_history *h)
{
    double vcur = value_of(g, h, g->cur), vbest = vcur;
    uint64_t best = g->cur;
    int k = 0;

    for (int i = 0; i < g->nnb; i++) {
        double v = value_of(g, h, g->nb[i]);
        if (isnan(v)) {
            g->nb[k++] = g->nb[i];               /* still pending */
            continue;
        }
        if (kopt_tune__better(v, vbest) && !isinf(v)) {
            vbest = v;
            best = g->nb[i];
        }
    }
    g->nnb = k;
    if (best != g->cur) {
        g->cur = best;
        g->nnb = 0;                              /* pending ones belong to the old point */
    }
}

/* The incumbent with `perturb` params set to random values: valid and unproposed. */
static int perturbed(greedy_ils *g, uint64_t *out)
{
    const kopt_tune_space *s = g->space;
    int idx[KOPT_TUNE_MAX_PARAMS];

    for (int tries = 0; tries < 32 && s->nparams > 0; tries++) {
        kopt_tune_space_decode(s, g->has_inc ? g->inc : g->cur, idx);
        for (int k = 0; k < g->perturb; k++) {
            int j = (int)kopt_rng_below(&g->rng, (uint64_t)s->nparams);
            idx[j] = (int)kopt_rng_below(&g->rng, (uint64_t)s->params[j].nvalues);
        }
        *out = kopt_tune_space_encode(s, idx);
        if (!kopt_tune__map_get(&g->seen, *out, NULL) && kopt_tune_space_valid(s, *out, NULL, 0))
            return 0;
    }
    return kopt_tune__fresh(s, &g->rng, &g->seen, out);
}

static int restart(greedy_ils *g, uint64_t *points, int max)
{
    int n = 0;

    if (kopt_tune__fresh(g->space, &g->rng, &g->seen, &g->cur) != 0) {
        g->done = 1;
        return 0;
    }
    g->started = 1;
    g->has_inc = 0;
    g->nnb = 0;
    g->run_best = INFINITY;
    g->no_improve = 0;
    kopt_tune__propose(g->space, &g->seen, g->cur, points, &n, max);
    return n;
}

static int gils_ask(void *state, const kopt_tune_history *h, uint64_t *points, int max)
{
    greedy_ils *g = state;
    uint64_t cand[2 * KOPT_TUNE_MAX_PARAMS], p;
    int n = 0, k, want;
    double vcur, vinc;

    if (g->done || max <= 0)
        return 0;
    if (!g->started || g->no_improve >= g->patience)
        return restart(g, points, max);
    digest(g, h);
    k = kopt_tune_space_neighbors(g->space, g->cur, cand, 2 * KOPT_TUNE_MAX_PARAMS);
    want = g->first ? g->batch : k;
    while (k > 0 && n < want && n < max && g->nnb < 2 * KOPT_TUNE_MAX_PARAMS) {
        int j = (int)kopt_rng_below(&g->rng, (uint64_t)k);
        if (kopt_tune__propose(g->space, &g->seen, cand[j], points, &n, max))
            g->nb[g->nnb++] = cand[j];
        cand[j] = cand[--k];
    }
    if (n > 0)
        return n;
    /* A local optimum (or a failed point with no way out): perturb the incumbent. */
    vcur = value_of(g, h, g->cur);
    vinc = g->has_inc ? value_of(g, h, g->inc) : NAN;
    if (!g->has_inc || kopt_tune__better(vcur, vinc)) {
        g->inc = g->cur;
        g->has_inc = 1;
    }
    if (perturbed(g, &p) != 0) {
        g->done = 1;
        return 0;
    }
    g->cur = p;
    g->nnb = 0;
    kopt_tune__propose(g->space, &g->seen, p, points, &n, max);
    return n;
}

static void gils_tell(void *state, uint64_t point, const kopt_tune_outcome *o)
{
    greedy_ils *g = state;
    double v = kopt_tune_outcome_objective(o, g->objective);

    kopt_tune__map_put(&g->seen, point, v);
    if (v < g->run_best) {
        g->run_best = v;
        g->no_improve = 0;
    } else {
        g->no_improve++;
    }
}

const kopt_tune_strategy kopt_tune_strategy_greedy_ils = {
    .name = "greedy_ils",
    .summary = "greedy iterated local search: descend, perturb the best local optimum, restart",
    .wants_findings = 0,
    .create = gils_create,
    .ask = gils_ask,
    .tell = gils_tell,
    .destroy = gils_destroy,
};
