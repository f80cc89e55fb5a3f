/*
 * src/tune/strategies/pso.c: particle swarm optimization on continuous index coordinates
 * (each param's position in its value list, clamped to [0, values - 1]; a particle's point
 * is its rounded position).
 *
 * `popsize` particles start at random valid points with random velocities. Each iteration
 * moves every particle: v = w v + c1 r1 (own best - x) + c2 r2 (swarm best - x), x += v
 * (r1, r2 uniform per coordinate; |v| at most half a param's range). A position that rounds
 * to an invalid or already proposed point is nudged one step in a random param (up to 8
 * times), else the particle jumps to a random unproposed valid point; one that rounds to a
 * measured point updates the bests without an evaluation. One iteration is proposed per
 * ask. Failed points (INFINITY) never become a best.
 *
 * Options: popsize (default 20; with a known budget and no popsize given, at most
 * max(4, budget/4)), w (default 0.5), c1 (default 1.5), c2 (default 1.5).
 */
#include "common.h"

#include <stdlib.h>
#include <string.h>

typedef struct particle {
    double x[KOPT_TUNE_MAX_PARAMS], v[KOPT_TUNE_MAX_PARAMS], best[KOPT_TUNE_MAX_PARAMS];
    uint64_t point;           /* the rounded position, proposed or measured */
    double best_value;        /* INFINITY until a measured OK point */
} particle;

typedef struct pso {
    const kopt_tune_space *space;
    kopt_rng rng;
    kopt_tune_objective objective;
    kopt_tune__map seen;
    int np, n;
    double w, c1, c2;
    particle *swarm;
    double gbest[KOPT_TUNE_MAX_PARAMS], gbest_value;
    uint64_t *queue;
    int nqueue, qnext;
    int done;
} pso;

static void pso_destroy(void *state)
{
    pso *p = state;

    if (!p)
        return;
    kopt_tune__map_free(&p->seen);
    free(p->swarm);
    free(p->queue);
    free(p);
}

static kopt_status pso_create(void **state, kopt_ctx *ctx, const kopt_tune_space *space,
                              const kopt_tune_strategy_opts *opts)
{
    static const char *const known[] = {"popsize", "w", "c1", "c2", NULL};
    pso *p = calloc(1, sizeof(*p));
    kopt_status rc;

    if (!p)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "out of memory");
    p->space = space;
    kopt_rng_seed(&p->rng, opts ? opts->seed : 1);
    p->objective = opts ? opts->objective : KOPT_TUNE_TIME;
    p->gbest_value = INFINITY;
    if ((rc = kopt_tune__opt_int(ctx, opts, known, "popsize", 20, 1, 1000, &p->np)) ||
        (rc = kopt_tune__opt_double(ctx, opts, known, "w", 0.5, 0.0, 2.0, &p->w)) ||
        (rc = kopt_tune__opt_double(ctx, opts, known, "c1", 1.5, 0.0, 4.0, &p->c1)) ||
        (rc = kopt_tune__opt_double(ctx, opts, known, "c2", 1.5, 0.0, 4.0, &p->c2)))
        goto fail;
    p->np = kopt_tune__fit_population(opts, "popsize", p->np);
    p->swarm = calloc((size_t)p->np, sizeof(*p->swarm));
    p->queue = calloc((size_t)p->np, sizeof(*p->queue));
    if (!p->swarm || !p->queue || kopt_tune__map_init(&p->seen, 4 * (size_t)p->np) != 0) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "out of memory");
        goto fail;
    }
    *state = p;
    return KOPT_OK;
fail:
    pso_destroy(p);
    return rc;
}

static void set_position(const kopt_tune_space *s, particle *q, uint64_t point)
{
    int idx[KOPT_TUNE_MAX_PARAMS];

    kopt_tune_space_decode(s, point, idx);
    for (int j = 0; j < s->nparams; j++)
        q->x[j] = idx[j];
    q->point = point;
}

/* Fold measured positions into the particles' and the swarm's bests. */
static void update_bests(pso *p, const kopt_tune_history *h)
{
    int dim = p->space->nparams;

    for (int i = 0; i < p->n; i++) {
        particle *q = &p->swarm[i];
        double v;
        if (!kopt_tune__value(&p->seen, h, q->point, &v) || !(v < q->best_value))
            continue;
        q->best_value = v;
        memcpy(q->best, q->x, (size_t)dim * sizeof(double));
        if (v < p->gbest_value) {
            p->gbest_value = v;
            memcpy(p->gbest, q->x, (size_t)dim * sizeof(double));
        }
    }
}

/* A valid unproposed point near `point` (one step in a random param), else a random one. */
static int repair(pso *p, uint64_t *point)
{
    const kopt_tune_space *s = p->space;
    int idx[KOPT_TUNE_MAX_PARAMS];

    kopt_tune_space_decode(s, *point, idx);
    for (int tries = 0; tries < 8 && s->nparams > 0; tries++) {
        int j = (int)kopt_rng_below(&p->rng, (uint64_t)s->nparams);
        int nv = s->params[j].nvalues, step = kopt_rng_unit(&p->rng) < 0.5 ? -1 : 1;
        if (nv < 2)
            continue;
        if (idx[j] + step < 0 || idx[j] + step >= nv)
            step = -step;
        idx[j] += step;
        *point = kopt_tune_space_encode(s, idx);
        if (!kopt_tune__map_get(&p->seen, *point, NULL) &&
            kopt_tune_space_valid(s, *point, NULL, 0))
            return 0;
    }
    return kopt_tune__fresh(s, &p->rng, &p->seen, point);
}

static void plan(pso *p, const kopt_tune_history *h)
{
    const kopt_tune_space *s = p->space;
    int dim = s->nparams;

    p->nqueue = p->qnext = 0;
    if (p->n < p->np) {                        /* the first positions */
        while (p->n < p->np) {
            particle *q = &p->swarm[p->n];
            uint64_t pt;
            if (kopt_tune__fresh(s, &p->rng, &p->seen, &pt) != 0 ||
                kopt_tune__map_put(&p->seen, pt, NAN) != 0)
                break;
            set_position(s, q, pt);
            q->best_value = INFINITY;
            memcpy(q->best, q->x, sizeof(q->x));
            for (int j = 0; j < dim; j++)
                q->v[j] = (kopt_rng_unit(&p->rng) - 0.5) * 0.5 * (s->params[j].nvalues - 1);
            p->queue[p->nqueue++] = pt;
            p->n++;
        }
        if (p->nqueue == 0)
            p->done = 1;
        return;
    }
    for (int round = 0; round < 4 && p->nqueue == 0; round++) {
        update_bests(p, h);
        for (int i = 0; i < p->n; i++) {
            particle *q = &p->swarm[i];
            const double *g = isinf(p->gbest_value) ? q->best : p->gbest;
            uint64_t pt;
            double known;
            for (int j = 0; j < dim; j++) {
                double hi = s->params[j].nvalues - 1, vmax = hi > 1 ? hi / 2 : 1;
                double v = p->w * q->v[j] +
                           p->c1 * kopt_rng_unit(&p->rng) * (q->best[j] - q->x[j]) +
                           p->c2 * kopt_rng_unit(&p->rng) * (g[j] - q->x[j]);
                q->v[j] = v < -vmax ? -vmax : v > vmax ? vmax : v;
                q->x[j] += q->v[j];
                q->x[j] = q->x[j] < 0 ? 0 : q->x[j] > hi ? hi : q->x[j];
            }
            pt = kopt_tune__round(s, q->x);
            q->point = pt;
            if (kopt_tune__value(&p->seen, h, pt, &known))
                continue;                      /* measured: counts at the next update */
            if (kopt_tune__map_get(&p->seen, pt, NULL) || !kopt_tune_space_valid(s, pt, NULL, 0)) {
                if (repair(p, &pt) != 0)
                    continue;
                set_position(s, q, pt);
            }
            if (kopt_tune__map_put(&p->seen, pt, NAN) != 0)
                continue;
            p->queue[p->nqueue++] = pt;
        }
    }
    if (p->nqueue == 0) {
        uint64_t pt;
        if (kopt_tune__fresh(s, &p->rng, &p->seen, &pt) == 0 &&
            kopt_tune__map_put(&p->seen, pt, NAN) == 0) {
            set_position(s, &p->swarm[kopt_rng_below(&p->rng, (uint64_t)p->n)], pt);
            p->queue[p->nqueue++] = pt;        /* a converged swarm: scatter one particle */
        } else {
            p->done = 1;
        }
    }
}

static int pso_ask(void *state, const kopt_tune_history *h, uint64_t *points, int max)
{
    pso *p = state;
    int n = 0;

    if (p->qnext >= p->nqueue && !p->done)
        plan(p, h);
    while (n < max && p->qnext < p->nqueue)
        points[n++] = p->queue[p->qnext++];
    return n;
}

static void pso_tell(void *state, uint64_t point, const kopt_tune_outcome *o)
{
    pso *p = state;

    kopt_tune__map_put(&p->seen, point, kopt_tune_outcome_objective(o, p->objective));
}

const kopt_tune_strategy kopt_tune_strategy_pso = {
    .name = "pso",
    .summary = "particle swarm on rounded index coordinates",
    .wants_findings = 0,
    .create = pso_create,
    .ask = pso_ask,
    .tell = pso_tell,
    .destroy = pso_destroy,
};
