/*
 * src/tune/strategies/diff_evolution.c: differential evolution, DE/rand/1/bin, on
 * continuous index coordinates (each param's position in its value list, as a real number
 * clamped to [0, values - 1]; a point is the rounded coordinates).
 *
 * The first generation is `popsize` random valid points. For each member x_i a trial is
 * built from three other members: v = x_a + F (x_b - x_c), crossed with x_i param by param
 * (v's coordinate with probability CR, and at least one), rounded. A trial that rounds to an
 * invalid or already proposed point is nudged one step in a random param (up to 8 times),
 * else replaced by a random unproposed valid point; a trial that rounds to a point already
 * measured is judged at once without an evaluation. Once measured, a trial replaces its
 * member when it is at least as good. A generation of trials is proposed per ask.
 *
 * Options: popsize (default 20; with a known budget and no popsize given, at most
 * max(4, budget/4)), F (default 0.7), CR (default 0.6).
 */
#include "common.h"

#include <stdlib.h>
#include <string.h>

typedef struct diff_evolution {
    const kopt_tune_space *space;
    kopt_rng rng;
    kopt_tune_objective objective;
    kopt_tune__map seen;      /* proposed -> value */
    int np, n;                /* popsize, members so far */
    double F, CR;
    double *x;                /* np x nparams member coordinates */
    uint64_t *xp;             /* members' points */
    double *u;                /* np x nparams trial coordinates */
    uint64_t *up;             /* trials' points */
    int *has_trial;
    uint64_t *queue;
    int nqueue, qnext;
    int done;
} diff_evolution;

static void de_destroy(void *state)
{
    diff_evolution *d = state;

    if (!d)
        return;
    kopt_tune__map_free(&d->seen);
    free(d->x);
    free(d->xp);
    free(d->u);
    free(d->up);
    free(d->has_trial);
    free(d->queue);
    free(d);
}

static kopt_status de_create(void **state, kopt_ctx *ctx, const kopt_tune_space *space,
                             const kopt_tune_strategy_opts *opts)
{
    static const char *const known[] = {"popsize", "F", "CR", NULL};
    diff_evolution *d = calloc(1, sizeof(*d));
    kopt_status rc;
    size_t np, dim = space->nparams > 0 ? (size_t)space->nparams : 1;

    if (!d)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "out of memory");
    d->space = space;
    kopt_rng_seed(&d->rng, opts ? opts->seed : 1);
    d->objective = opts ? opts->objective : KOPT_TUNE_TIME;
    if ((rc = kopt_tune__opt_int(ctx, opts, known, "popsize", 20, 4, 1000, &d->np)) ||
        (rc = kopt_tune__opt_double(ctx, opts, known, "F", 0.7, 0.0, 2.0, &d->F)) ||
        (rc = kopt_tune__opt_double(ctx, opts, known, "CR", 0.6, 0.0, 1.0, &d->CR)))
        goto fail;
    d->np = kopt_tune__fit_population(opts, "popsize", d->np);
    np = (size_t)d->np;
    d->x = calloc(np * dim, sizeof(*d->x));
    d->u = calloc(np * dim, sizeof(*d->u));
    d->xp = calloc(np, sizeof(*d->xp));
    d->up = calloc(np, sizeof(*d->up));
    d->has_trial = calloc(np, sizeof(*d->has_trial));
    d->queue = calloc(np, sizeof(*d->queue));
    if (!d->x || !d->u || !d->xp || !d->up || !d->has_trial || !d->queue ||
        kopt_tune__map_init(&d->seen, 4 * np) != 0) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "out of memory");
        goto fail;
    }
    *state = d;
    return KOPT_OK;
fail:
    de_destroy(d);
    return rc;
}

static void coords_of(const kopt_tune_space *s, uint64_t p, double *x)
{
    int idx[KOPT_TUNE_MAX_PARAMS];

    kopt_tune_space_decode(s, p, idx);
    for (int j = 0; j < s->nparams; j++)
        x[j] = idx[j];
}

/* Nudge the rounded trial until it is valid and unproposed; 0 and *p, or -1. */
static int repair(diff_evolution *d, double *u, uint64_t *p)
{
    const kopt_tune_space *s = d->space;
    int idx[KOPT_TUNE_MAX_PARAMS];

    kopt_tune_space_decode(s, *p, idx);
    for (int tries = 0; tries < 8 && s->nparams > 0; tries++) {
        int j = (int)kopt_rng_below(&d->rng, (uint64_t)s->nparams);
        int nv = s->params[j].nvalues, step = kopt_rng_unit(&d->rng) < 0.5 ? -1 : 1;
        if (nv < 2)
            continue;
        if (idx[j] + step < 0 || idx[j] + step >= nv)
            step = -step;
        idx[j] += step;
        *p = kopt_tune_space_encode(s, idx);
        if (!kopt_tune__map_get(&d->seen, *p, NULL) && kopt_tune_space_valid(s, *p, NULL, 0)) {
            for (int k = 0; k < s->nparams; k++)
                u[k] = idx[k];
            return 0;
        }
    }
    if (kopt_tune__fresh(s, &d->rng, &d->seen, p) != 0)
        return -1;
    coords_of(s, *p, u);
    return 0;
}

/* Replace members by their measured trials when at least as good. */
static void select_trials(diff_evolution *d, const kopt_tune_history *h)
{
    int dim = d->space->nparams;

    for (int i = 0; i < d->n; i++) {
        double vt, vx;
        if (!d->has_trial[i] || !kopt_tune__value(&d->seen, h, d->up[i], &vt))
            continue;                          /* no trial, or not measured (yet) */
        d->has_trial[i] = 0;
        if (kopt_tune__value(&d->seen, h, d->xp[i], &vx) && kopt_tune__better(vx, vt))
            continue;
        d->xp[i] = d->up[i];
        memcpy(d->x + (size_t)i * dim, d->u + (size_t)i * dim, (size_t)dim * sizeof(double));
    }
}

static void plan(diff_evolution *d, const kopt_tune_history *h)
{
    const kopt_tune_space *s = d->space;
    int dim = s->nparams;

    d->nqueue = d->qnext = 0;
    if (d->n < d->np) {                        /* fill the first generation */
        while (d->n < d->np) {
            uint64_t p;
            if (kopt_tune__fresh(s, &d->rng, &d->seen, &p) != 0 ||
                kopt_tune__map_put(&d->seen, p, NAN) != 0)
                break;
            d->xp[d->n] = p;
            coords_of(s, p, d->x + (size_t)d->n * dim);
            d->queue[d->nqueue++] = p;
            d->n++;
        }
        if (d->nqueue == 0)
            d->done = 1;
        return;
    }
    for (int round = 0; round < 4 && d->nqueue == 0 && d->n >= 4; round++) {
        select_trials(d, h);
        for (int i = 0; i < d->n; i++) {
            int a, b, c, jr = dim > 0 ? (int)kopt_rng_below(&d->rng, (uint64_t)dim) : 0;
            double *u = d->u + (size_t)i * dim, vt;
            uint64_t p;

            do a = (int)kopt_rng_below(&d->rng, (uint64_t)d->n); while (a == i);
            do b = (int)kopt_rng_below(&d->rng, (uint64_t)d->n); while (b == i || b == a);
            do c = (int)kopt_rng_below(&d->rng, (uint64_t)d->n);
            while (c == i || c == a || c == b);
            for (int j = 0; j < dim; j++) {
                double v = d->x[(size_t)a * dim + j] +
                           d->F * (d->x[(size_t)b * dim + j] - d->x[(size_t)c * dim + j]);
                double hi = s->params[j].nvalues - 1;
                if (!(kopt_rng_unit(&d->rng) < d->CR || j == jr))
                    v = d->x[(size_t)i * dim + j];
                u[j] = v < 0 ? 0 : v > hi ? hi : v;
            }
            p = kopt_tune__round(s, u);
            d->up[i] = p;
            d->has_trial[i] = 1;
            if (kopt_tune__value(&d->seen, h, p, &vt))
                continue;                      /* measured already: judged next round */
            if ((kopt_tune__map_get(&d->seen, p, NULL) || !kopt_tune_space_valid(s, p, NULL, 0))
                && repair(d, u, &p) != 0) {
                d->has_trial[i] = 0;
                continue;
            }
            d->up[i] = p;
            if (kopt_tune__map_put(&d->seen, p, NAN) != 0)
                continue;
            d->queue[d->nqueue++] = p;
        }
    }
    if (d->nqueue == 0) {
        uint64_t p;
        if (kopt_tune__fresh(s, &d->rng, &d->seen, &p) == 0 &&
            kopt_tune__map_put(&d->seen, p, NAN) == 0)
            d->queue[d->nqueue++] = p;         /* stagnant: a random point keeps it going */
        else
            d->done = 1;
    }
}

static int de_ask(void *state, const kopt_tune_history *h, uint64_t *points, int max)
{
    diff_evolution *d = state;
    int n = 0;

    if (d->qnext >= d->nqueue && !d->done)
        plan(d, h);
    while (n < max && d->qnext < d->nqueue)
        points[n++] = d->queue[d->qnext++];
    return n;
}

static void de_tell(void *state, uint64_t point, const kopt_tune_outcome *o)
{
    diff_evolution *d = state;

    kopt_tune__map_put(&d->seen, point, kopt_tune_outcome_objective(o, d->objective));
}

const kopt_tune_strategy kopt_tune_strategy_diff_evolution = {
    .name = "diff_evolution",
    .summary = "differential evolution (rand/1/bin) on rounded index coordinates",
    .wants_findings = 0,
    .create = de_create,
    .ask = de_ask,
    .tell = de_tell,
    .destroy = de_destroy,
};
