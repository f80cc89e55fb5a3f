/*
 * src/tune/strategies/annealing.c: simulated annealing over the "adjacent" neighbourhood
 * (one param one step up or down its list, kopt_tune_space_neighbors), with random
 * restarts.
 *
 * A walk starts at a random valid point and proposes unproposed neighbours of its current
 * point; a told neighbour replaces the current point when it is better, or when it is worse
 * by the relative change d = (new - cur) / cur with probability exp(-d / T) (a failed
 * neighbour, objective INFINITY, is never taken unless the current point failed too). T
 * starts at T0 and is multiplied by alpha after every told outcome. With a known budget the
 * run is cut into restarts + 1 equal segments: each starts a new walk at a random valid
 * point with T = T0, and alpha (unless given) takes T from T0 to T0/1000 over a segment.
 * A walk with no unproposed point within two steps restarts early.
 *
 * Options: T0 (default 0.5), alpha (default from the budget, 0.995 without one), restarts
 * (default 2), batch (neighbours proposed per ask, default 1).
 */
#include "common.h"

#include <stdlib.h>

typedef struct annealing {
    const kopt_tune_space *space;
    kopt_rng rng;
    kopt_tune_objective objective;
    kopt_tune__map seen;      /* proposed points -> told value (NAN until told) */
    double T0, T, alpha;
    int restarts, restarts_done, batch;
    int seg_len, seg_steps;   /* evaluations per segment (0: unknown budget) */
    int has_cur, need_restart;
    uint64_t cur;
    double vcur;              /* NAN until told */
    int done;
} annealing;

static void annealing_destroy(void *state)
{
    annealing *a = state;

    if (!a)
        return;
    kopt_tune__map_free(&a->seen);
    free(a);
}

static kopt_status annealing_create(void **state, kopt_ctx *ctx, const kopt_tune_space *space,
                                    const kopt_tune_strategy_opts *opts)
{
    static const char *const known[] = {"T0", "alpha", "restarts", "batch", NULL};
    annealing *a = calloc(1, sizeof(*a));
    kopt_status rc;
    double alpha_def = 0.995;
    int budget = opts ? opts->max_evals : 0;

    if (!a)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "out of memory");
    a->space = space;
    kopt_rng_seed(&a->rng, opts ? opts->seed : 1);
    a->objective = opts ? opts->objective : KOPT_TUNE_TIME;
    if ((rc = kopt_tune__opt_double(ctx, opts, known, "T0", 0.5, 1e-9, 1e9, &a->T0)) ||
        (rc = kopt_tune__opt_int(ctx, opts, known, "restarts", 2, 0, 1000000,
                                 &a->restarts)) ||
        (rc = kopt_tune__opt_int(ctx, opts, known, "batch", 1, 1, 1024, &a->batch)))
        goto fail;
    if (budget > 0) {
        a->seg_len = budget / (a->restarts + 1);
        if (a->seg_len < 1)
            a->seg_len = 1;
        alpha_def = pow(1e-3, 1.0 / a->seg_len);
    }
    if ((rc = kopt_tune__opt_double(ctx, opts, known, "alpha", alpha_def, 1e-6, 1.0,
                                    &a->alpha)))
        goto fail;
    if (kopt_tune__map_init(&a->seen, budget > 0 ? (size_t)budget : 256) != 0) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "out of memory");
        goto fail;
    }
    a->T = a->T0;
    a->need_restart = 1;
    *state = a;
    return KOPT_OK;
fail:
    annealing_destroy(a);
    return rc;
}

/* Unproposed points one step from cur, else two steps; how many were written. */
static int candidates(annealing *a, uint64_t *out, int max)
{
    const kopt_tune_space *s = a->space;
    uint64_t n1[2 * KOPT_TUNE_MAX_PARAMS], n2[2 * KOPT_TUNE_MAX_PARAMS];
    int k1 = kopt_tune_space_neighbors(s, a->cur, n1, 2 * KOPT_TUNE_MAX_PARAMS), n = 0;

    for (int i = 0; i < k1 && n < max; i++)
        if (!kopt_tune__map_get(&a->seen, n1[i], NULL))
            out[n++] = n1[i];
    for (int i = 0; i < k1 && n == 0; i++) {
        int k2 = kopt_tune_space_neighbors(s, n1[i], n2, 2 * KOPT_TUNE_MAX_PARAMS);
        for (int j = 0; j < k2 && n < max; j++)
            if (n2[j] != a->cur && !kopt_tune__map_get(&a->seen, n2[j], NULL))
                out[n++] = n2[j];
    }
    return n;
}

static int annealing_ask(void *state, const kopt_tune_history *h, uint64_t *points, int max)
{
    annealing *a = state;
    uint64_t cand[4 * KOPT_TUNE_MAX_PARAMS * KOPT_TUNE_MAX_PARAMS];
    int n = 0, k;

    (void)h;
    if (a->done || max <= 0)
        return 0;
    if (!a->need_restart) {
        k = candidates(a, cand, (int)(sizeof(cand) / sizeof(cand[0])));
        while (k > 0 && n < a->batch && n < max) {   /* random order, no repeats */
            int j = (int)kopt_rng_below(&a->rng, (uint64_t)k);
            kopt_tune__propose(a->space, &a->seen, cand[j], points, &n, max);
            cand[j] = cand[--k];
        }
        if (n > 0)
            return n;
        a->need_restart = 1;                         /* stuck: nothing new nearby */
    }
    if (kopt_tune__fresh(a->space, &a->rng, &a->seen, &a->cur) != 0) {
        a->done = 1;
        return 0;
    }
    a->need_restart = 0;
    a->has_cur = 1;
    a->vcur = NAN;
    a->T = a->T0;
    a->seg_steps = 0;
    kopt_tune__propose(a->space, &a->seen, a->cur, points, &n, max);
    return n;
}

static int accept(annealing *a, double v)
{
    double d;

    if (isnan(a->vcur) || isinf(a->vcur))
        return 1;                  /* a failed or unknown current point: any move is fine */
    if (isinf(v))
        return 0;
    if (v <= a->vcur)
        return 1;
    d = (v - a->vcur) / a->vcur;
    return kopt_rng_unit(&a->rng) < exp(-d / (a->T > 1e-300 ? a->T : 1e-300));
}

static void annealing_tell(void *state, uint64_t point, const kopt_tune_outcome *o)
{
    annealing *a = state;
    double v = kopt_tune_outcome_objective(o, a->objective);

    kopt_tune__map_put(&a->seen, point, v);
    if (a->has_cur && point == a->cur) {
        a->vcur = v;
    } else if (a->has_cur && accept(a, v)) {
        a->cur = point;
        a->vcur = v;
    }
    a->T *= a->alpha;
    if (a->seg_len > 0 && ++a->seg_steps >= a->seg_len && a->restarts_done < a->restarts) {
        a->restarts_done++;
        a->need_restart = 1;
    }
}

const kopt_tune_strategy kopt_tune_strategy_annealing = {
    .name = "annealing",
    .summary = "simulated annealing over adjacent neighbours with random restarts (default)",
    .wants_findings = 0,
    .create = annealing_create,
    .ask = annealing_ask,
    .tell = annealing_tell,
    .destroy = annealing_destroy,
};
