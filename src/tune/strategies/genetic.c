/*
 * src/tune/strategies/genetic.c: a genetic algorithm in index space.
 *
 * Generation 0 is `popsize` random valid points. Each later generation keeps the `elite`
 * best members of the last one (already measured, so not proposed again) and breeds the
 * rest: two parents by tournament (`tournament` members drawn, the best wins), uniform
 * crossover (each param's index from either parent), then per-param mutation with
 * probability `mutation` (default 1/params; half the time one step up or down, otherwise a
 * random index). A child that is invalid or already proposed is repaired by mutating one
 * more param (up to 16 times), else replaced by a random unproposed valid point. A whole
 * generation is proposed per ask (or in pieces when the driver asks for fewer).
 * Failed members (objective INFINITY) lose every tournament against measured ones.
 *
 * Options: popsize (default 20; with a known budget and no popsize given, at most
 * max(4, budget/4)), elite (default 2), tournament (default 3), mutation (default
 * 1/params).
 */
#include "common.h"

#include <stdlib.h>
#include <string.h>

typedef struct member {
    uint64_t point;
    double value;             /* NAN until told */
} member;

typedef struct genetic {
    const kopt_tune_space *space;
    kopt_rng rng;
    kopt_tune_objective objective;
    kopt_tune__map seen;      /* proposed -> value */
    int popsize, elite, tournament;
    double mutation;
    member *pop;              /* the current generation (popsize slots) */
    int npop;
    uint64_t *queue;          /* this generation's points not yet handed out */
    int nqueue, qnext;
    int done;
} genetic;

static void genetic_destroy(void *state)
{
    genetic *g = state;

    if (!g)
        return;
    kopt_tune__map_free(&g->seen);
    free(g->pop);
    free(g->queue);
    free(g);
}

static kopt_status genetic_create(void **state, kopt_ctx *ctx, const kopt_tune_space *space,
                                  const kopt_tune_strategy_opts *opts)
{
    static const char *const known[] = {"popsize", "elite", "tournament", "mutation", NULL};
    genetic *g = calloc(1, sizeof(*g));
    kopt_status rc;
    double mdef = space->nparams > 0 ? 1.0 / space->nparams : 1.0;

    if (!g)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "out of memory");
    g->space = space;
    kopt_rng_seed(&g->rng, opts ? opts->seed : 1);
    g->objective = opts ? opts->objective : KOPT_TUNE_TIME;
    if ((rc = kopt_tune__opt_int(ctx, opts, known, "popsize", 20, 2, 1000, &g->popsize)) ||
        (rc = kopt_tune__opt_int(ctx, opts, known, "elite", 2, 0, 1000, &g->elite)) ||
        (rc = kopt_tune__opt_int(ctx, opts, known, "tournament", 3, 1, 100000,
                                 &g->tournament)) ||
        (rc = kopt_tune__opt_double(ctx, opts, known, "mutation", mdef, 0.0, 1.0,
                                    &g->mutation)))
        goto fail;
    g->popsize = kopt_tune__fit_population(opts, "popsize", g->popsize);
    if (g->elite >= g->popsize)
        g->elite = g->popsize - 1;
    g->pop = calloc((size_t)g->popsize, sizeof(*g->pop));
    g->queue = calloc((size_t)g->popsize, sizeof(*g->queue));
    if (!g->pop || !g->queue || kopt_tune__map_init(&g->seen, 4 * (size_t)g->popsize) != 0) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "out of memory");
        goto fail;
    }
    *state = g;
    return KOPT_OK;
fail:
    genetic_destroy(g);
    return rc;
}

static int by_value(const void *a, const void *b)
{
    const member *x = a, *y = b;

    if (kopt_tune__better(x->value, y->value))
        return -1;
    if (kopt_tune__better(y->value, x->value))
        return 1;
    return x->point < y->point ? -1 : x->point > y->point;
}

static const member *tournament(genetic *g, const member *pool, int npool)
{
    const member *best = &pool[kopt_rng_below(&g->rng, (uint64_t)npool)];

    for (int i = 1; i < g->tournament; i++) {
        const member *m = &pool[kopt_rng_below(&g->rng, (uint64_t)npool)];
        if (kopt_tune__better(m->value, best->value))
            best = m;
    }
    return best;
}

static void mutate_one(genetic *g, int *idx, int i)
{
    int nv = g->space->params[i].nvalues;

    if (nv < 2)
        return;
    if (kopt_rng_unit(&g->rng) < 0.5) {
        int step = kopt_rng_unit(&g->rng) < 0.5 ? -1 : 1;
        if (idx[i] + step < 0 || idx[i] + step >= nv)
            step = -step;
        idx[i] += step;
    } else {
        int v = (int)kopt_rng_below(&g->rng, (uint64_t)(nv - 1));
        idx[i] = v >= idx[i] ? v + 1 : v;      /* a different index */
    }
}

/* A child of two parents: valid, unproposed, or -1 when repair failed. */
static int breed(genetic *g, const member *a, const member *b, uint64_t *out)
{
    const kopt_tune_space *s = g->space;
    int ia[KOPT_TUNE_MAX_PARAMS], ib[KOPT_TUNE_MAX_PARAMS], c[KOPT_TUNE_MAX_PARAMS];

    kopt_tune_space_decode(s, a->point, ia);
    kopt_tune_space_decode(s, b->point, ib);
    for (int i = 0; i < s->nparams; i++) {
        c[i] = kopt_rng_unit(&g->rng) < 0.5 ? ia[i] : ib[i];
        if (kopt_rng_unit(&g->rng) < g->mutation)
            mutate_one(g, c, i);
    }
    for (int tries = 0; tries <= 16; tries++) {
        uint64_t p = kopt_tune_space_encode(s, c);
        if (!kopt_tune__map_get(&g->seen, p, NULL) && kopt_tune_space_valid(s, p, NULL, 0)) {
            *out = p;
            return 0;
        }
        if (s->nparams > 0)
            mutate_one(g, c, (int)kopt_rng_below(&g->rng, (uint64_t)s->nparams));
    }
    return -1;
}

/* Plan the next generation into pop/queue; 0 points planned means the search is over. */
static void next_generation(genetic *g, const kopt_tune_history *h)
{
    member parents[1000], *pool = g->pop;
    int npool = 0, nkeep = 0;

    /* The last generation's members with known values become the parents. */
    for (int i = 0; i < g->npop; i++)
        if (kopt_tune__value(&g->seen, h, g->pop[i].point, &g->pop[i].value))
            g->pop[npool++] = g->pop[i];
    qsort(pool, (size_t)npool, sizeof(*pool), by_value);
    if (npool > (int)(sizeof(parents) / sizeof(parents[0])))
        npool = (int)(sizeof(parents) / sizeof(parents[0]));
    memcpy(parents, pool, (size_t)npool * sizeof(*pool));
    nkeep = npool < g->elite ? npool : g->elite;
    g->npop = nkeep;                           /* elites stay, measured */
    g->nqueue = g->qnext = 0;
    while (g->npop < g->popsize) {
        uint64_t p;
        if (npool < 2 || breed(g, tournament(g, parents, npool),
                               tournament(g, parents, npool), &p) != 0) {
            if (kopt_tune__fresh(g->space, &g->rng, &g->seen, &p) != 0)
                break;                         /* every valid point was proposed */
        }
        if (kopt_tune__map_put(&g->seen, p, NAN) != 0)
            break;
        g->pop[g->npop].point = p;
        g->pop[g->npop++].value = NAN;
        g->queue[g->nqueue++] = p;
    }
    if (g->nqueue == 0)
        g->done = 1;
}

static int genetic_ask(void *state, const kopt_tune_history *h, uint64_t *points, int max)
{
    genetic *g = state;
    int n = 0;

    if (g->qnext >= g->nqueue && !g->done)
        next_generation(g, h);
    while (n < max && g->qnext < g->nqueue)
        points[n++] = g->queue[g->qnext++];
    return n;
}

static void genetic_tell(void *state, uint64_t point, const kopt_tune_outcome *o)
{
    genetic *g = state;

    kopt_tune__map_put(&g->seen, point, kopt_tune_outcome_objective(o, g->objective));
}

const kopt_tune_strategy kopt_tune_strategy_genetic = {
    .name = "genetic",
    .summary = "genetic algorithm: tournament selection, uniform crossover, mutation, elitism",
    .wants_findings = 0,
    .create = genetic_create,
    .ask = genetic_ask,
    .tell = genetic_tell,
    .destroy = genetic_destroy,
};
