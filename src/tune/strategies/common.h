/*
 * src/tune/strategies/common.h: helpers shared by the search strategies (internal, not part
 * of the public API): a point -> value hash map (what was proposed, what was told), the
 * search for a valid point not proposed yet, option readers with ranges, and small numeric
 * helpers.
 *
 * Conventions every strategy follows:
 * - it proposes only valid points and never the same point twice in one run (a map of the
 *   points it proposed); it returns 0 from ask only when no unproposed valid point can be
 *   found, so it always terminates, even on a 3-point space;
 * - a point's value is kopt_tune_outcome_objective() (INFINITY for failures), taken from
 *   tell, else from the history's cache (which may be NULL);
 * - ask may come again before every proposed point was told (a driver that asks ahead):
 *   strategies then go on with what they know instead of stopping.
 * Ownership: maps own their arrays; kopt_tune__map_free(NULL) is safe.
 */
#ifndef KOPT_TUNE_STRATEGIES_COMMON_H
#define KOPT_TUNE_STRATEGIES_COMMON_H

#include "kopt/tune.h"

#include <math.h>

/* Open-addressing map from point ids (< 2^62) to a double (NAN: "proposed, not told"). */
typedef struct kopt_tune__map {
    uint64_t *keys;           /* KOPT_TUNE__EMPTY marks a free slot */
    double *vals;
    size_t cap, n;
} kopt_tune__map;
#define KOPT_TUNE__EMPTY UINT64_MAX

/* 0, or -1 when out of memory. */
int kopt_tune__map_init(kopt_tune__map *m, size_t hint);
/* Insert or replace; 0, or -1 when out of memory. */
int kopt_tune__map_put(kopt_tune__map *m, uint64_t key, double val);
/* 1 and *val (may be NULL) when present, 0 otherwise. */
int kopt_tune__map_get(const kopt_tune__map *m, uint64_t key, double *val);
void kopt_tune__map_free(kopt_tune__map *m);

/* The value of `point`: what tell said (in `told`), else the history's cache; 1 when
 * known, 0 when not (yet). */
int kopt_tune__value(const kopt_tune__map *told, const kopt_tune_history *h, uint64_t point,
                     double *val);

/* A valid point not in `seen`: random draws first, then a scan from a random start over
 * the space (bounded, so a huge space with everything seen cannot hang). 0 and *out, or -1
 * when none was found. */
int kopt_tune__fresh(const kopt_tune_space *s, kopt_rng *rng, const kopt_tune__map *seen,
                     uint64_t *out);
/* `p` when valid and not seen: marks it seen (value NAN) and appends it to points[*n];
 * returns 1 when appended, 0 otherwise (invalid, seen, full or out of memory). */
int kopt_tune__propose(const kopt_tune_space *s, kopt_tune__map *seen, uint64_t p,
                       uint64_t *points, int *n, int max);

/* Option readers: the value of `key` (or `def`), checked to lie in [lo, hi]; ints must be
 * whole numbers. KOPT_E_INVALID naming the option otherwise. */
kopt_status kopt_tune__opt_double(kopt_ctx *ctx, const kopt_tune_strategy_opts *o,
                                  const char *const *known, const char *key, double def,
                                  double lo, double hi, double *out);
kopt_status kopt_tune__opt_int(kopt_ctx *ctx, const kopt_tune_strategy_opts *o,
                               const char *const *known, const char *key, int def, int lo,
                               int hi, int *out);
/* 1 when `key` appears in the options string (to tell an explicit value from a default). */
int kopt_tune__opt_given(const kopt_tune_strategy_opts *o, const char *key);

/* A population size that fits the budget: `pop` unless the budget is known and the user did
 * not set it, then at most max(4, max_evals / 4). */
int kopt_tune__fit_population(const kopt_tune_strategy_opts *o, const char *key, int pop);

/* Point <-> continuous index coordinates (rounded and clamped to each param's range). */
uint64_t kopt_tune__round(const kopt_tune_space *s, const double *x);

/* Strictly better, with INFINITY/NAN treated as worst. */
static inline int kopt_tune__better(double a, double b)
{
    if (isnan(a))
        return 0;
    if (isnan(b))
        return 1;
    return a < b;
}

#endif
