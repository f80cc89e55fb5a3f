/*
 * src/tune/strategies/random.c: uniformly random valid points without repeats.
 *
 * Small spaces (fewer than 100,000 points, or fewer than 4x the budget, up to 2^22 points)
 * are enumerated once and their valid ids shuffled, so every valid point comes exactly once
 * and the run ends when they are all proposed. Larger spaces draw with
 * kopt_tune_space_random_valid and remember what they proposed. No options.
 */
#include "common.h"

#include <stdlib.h>

#define RANDOM_ENUMERATE_BELOW 100000u
#define RANDOM_ENUMERATE_MAX ((uint64_t)1 << 22)

typedef struct random_state {
    const kopt_tune_space *space;
    kopt_rng rng;
    uint64_t *order;          /* shuffled valid ids (small spaces), or NULL */
    size_t norder, next;
    kopt_tune__map seen;      /* proposed points (large spaces) */
    int done;
} random_state;

static void random_destroy(void *state)
{
    random_state *r = state;

    if (!r)
        return;
    free(r->order);
    kopt_tune__map_free(&r->seen);
    free(r);
}

static kopt_status enumerate(random_state *r, kopt_ctx *ctx)
{
    const kopt_tune_space *s = r->space;
    size_t cap = 64;
    uint64_t p = 0, q;

    if (!(r->order = malloc(cap * sizeof(*r->order))))
        return kopt_seterr(ctx, KOPT_E_NOMEM, "out of memory");
    while (p < s->npoints && kopt_tune_space_next_valid(s, p, &q) == 0 && q >= p) {
        if (r->norder == cap) {
            uint64_t *bigger = realloc(r->order, 2 * cap * sizeof(*bigger));
            if (!bigger)
                return kopt_seterr(ctx, KOPT_E_NOMEM, "out of memory");
            r->order = bigger;
            cap *= 2;
        }
        r->order[r->norder++] = q;
        p = q + 1;
    }
    for (size_t i = r->norder; i > 1; i--) {   /* Fisher-Yates */
        size_t j = (size_t)kopt_rng_below(&r->rng, i);
        uint64_t t = r->order[i - 1];
        r->order[i - 1] = r->order[j];
        r->order[j] = t;
    }
    return KOPT_OK;
}

static kopt_status random_create(void **state, kopt_ctx *ctx, const kopt_tune_space *space,
                                 const kopt_tune_strategy_opts *opts)
{
    static const char *const known[] = {NULL};
    random_state *r;
    double unused;
    uint64_t budget = opts && opts->max_evals > 0 ? (uint64_t)opts->max_evals : 0;
    kopt_status rc = kopt_tune_option(ctx, opts ? opts->options : NULL, known, "", 0, &unused);

    if (rc != KOPT_OK)
        return rc;
    if (!(r = calloc(1, sizeof(*r))))
        return kopt_seterr(ctx, KOPT_E_NOMEM, "out of memory");
    r->space = space;
    kopt_rng_seed(&r->rng, opts ? opts->seed : 1);
    if (space->npoints <= RANDOM_ENUMERATE_MAX &&
        (space->npoints < RANDOM_ENUMERATE_BELOW || space->npoints < 4 * budget))
        rc = enumerate(r, ctx);
    else if (kopt_tune__map_init(&r->seen, budget ? budget : 1024) != 0)
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "out of memory");
    if (rc != KOPT_OK) {
        random_destroy(r);
        return rc;
    }
    *state = r;
    return KOPT_OK;
}

static int random_ask(void *state, const kopt_tune_history *h, uint64_t *points, int max)
{
    random_state *r = state;
    int n = 0;

    (void)h;
    if (r->order) {
        while (n < max && r->next < r->norder)
            points[n++] = r->order[r->next++];
        return n;
    }
    while (!r->done && n < max) {
        uint64_t p;
        if (kopt_tune__fresh(r->space, &r->rng, &r->seen, &p) != 0) {
            r->done = 1;
            break;
        }
        if (kopt_tune__map_put(&r->seen, p, NAN) != 0)
            break;
        points[n++] = p;
    }
    return n;
}

static void random_tell(void *state, uint64_t point, const kopt_tune_outcome *o)
{
    (void)state;
    (void)point;
    (void)o;
}

const kopt_tune_strategy kopt_tune_strategy_random = {
    .name = "random",
    .summary = "uniformly random valid points without repeats (the baseline)",
    .wants_findings = 0,
    .create = random_create,
    .ask = random_ask,
    .tell = random_tell,
    .destroy = random_destroy,
    .blind = 1,
};
