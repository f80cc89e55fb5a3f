/*
 * src/tune/strategies/common.c: helpers shared by the search strategies (see common.h):
 * the point map, the search for an unproposed valid point, option readers.
 */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Random draws before falling back to a scan, and the longest scan (points). */
#define KOPT_TUNE__FRESH_DRAWS 64
#define KOPT_TUNE__FRESH_SCAN ((uint64_t)1 << 22)

static size_t slot_of(uint64_t key, size_t cap)
{
    uint64_t h = key * 0x9E3779B97F4A7C15ull;
    h ^= h >> 29;
    return (size_t)(h & (cap - 1));
}

int kopt_tune__map_init(kopt_tune__map *m, size_t hint)
{
    size_t cap = 16;

    while (cap < hint * 2)
        cap *= 2;
    m->keys = malloc(cap * sizeof(*m->keys));
    m->vals = malloc(cap * sizeof(*m->vals));
    m->cap = cap;
    m->n = 0;
    if (!m->keys || !m->vals) {
        kopt_tune__map_free(m);
        return -1;
    }
    for (size_t i = 0; i < cap; i++)
        m->keys[i] = KOPT_TUNE__EMPTY;
    return 0;
}

void kopt_tune__map_free(kopt_tune__map *m)
{
    if (!m)
        return;
    free(m->keys);
    free(m->vals);
    m->keys = NULL;
    m->vals = NULL;
    m->cap = m->n = 0;
}

static int grow(kopt_tune__map *m)
{
    kopt_tune__map big;

    if (kopt_tune__map_init(&big, m->cap) != 0)
        return -1;
    for (size_t i = 0; i < m->cap; i++)
        if (m->keys[i] != KOPT_TUNE__EMPTY && kopt_tune__map_put(&big, m->keys[i], m->vals[i]))
            return kopt_tune__map_free(&big), -1;
    kopt_tune__map_free(m);
    *m = big;
    return 0;
}

int kopt_tune__map_put(kopt_tune__map *m, uint64_t key, double val)
{
    size_t i;

    if (!m->keys && kopt_tune__map_init(m, 16) != 0)
        return -1;
    if ((m->n + 1) * 2 > m->cap && grow(m) != 0)
        return -1;
    for (i = slot_of(key, m->cap); m->keys[i] != KOPT_TUNE__EMPTY; i = (i + 1) & (m->cap - 1))
        if (m->keys[i] == key) {
            m->vals[i] = val;
            return 0;
        }
    m->keys[i] = key;
    m->vals[i] = val;
    m->n++;
    return 0;
}

int kopt_tune__map_get(const kopt_tune__map *m, uint64_t key, double *val)
{
    if (!m->keys)
        return 0;
    for (size_t i = slot_of(key, m->cap); m->keys[i] != KOPT_TUNE__EMPTY;
         i = (i + 1) & (m->cap - 1))
        if (m->keys[i] == key) {
            if (val)
                *val = m->vals[i];
            return 1;
        }
    return 0;
}

int kopt_tune__value(const kopt_tune__map *told, const kopt_tune_history *h, uint64_t point,
                     double *val)
{
    double v;

    if (kopt_tune__map_get(told, point, &v) && !isnan(v)) {
        *val = v;
        return 1;
    }
    if (h && h->cache) {
        const kopt_tune_outcome *o = kopt_tune_cache_get(h->cache, point);
        if (o) {
            *val = kopt_tune_outcome_objective(o, h->objective);
            return 1;
        }
    }
    return 0;
}

int kopt_tune__fresh(const kopt_tune_space *s, kopt_rng *rng, const kopt_tune__map *seen,
                     uint64_t *out)
{
    uint64_t p, q, walked = 0, limit;

    if (s->npoints == 0)
        return -1;
    for (int i = 0; i < KOPT_TUNE__FRESH_DRAWS; i++) {
        if (kopt_tune_space_random_valid(s, rng, &p) != 0)
            return -1;                         /* no valid point at all */
        if (!kopt_tune__map_get(seen, p, NULL)) {
            *out = p;
            return 0;
        }
    }
    /* Mostly seen: walk the valid points from a random start, once around at most. */
    limit = s->npoints < KOPT_TUNE__FRESH_SCAN ? s->npoints : KOPT_TUNE__FRESH_SCAN;
    p = kopt_rng_below(rng, s->npoints);
    while (walked < limit) {
        if (kopt_tune_space_next_valid(s, p, &q) != 0)
            return -1;
        walked += (q >= p ? q - p : q + s->npoints - p) + 1;
        if (walked > limit)
            break;
        if (!kopt_tune__map_get(seen, q, NULL)) {
            *out = q;
            return 0;
        }
        p = q + 1 == s->npoints ? 0 : q + 1;
    }
    return -1;
}

int kopt_tune__propose(const kopt_tune_space *s, kopt_tune__map *seen, uint64_t p,
                       uint64_t *points, int *n, int max)
{
    if (*n >= max || p >= s->npoints || kopt_tune__map_get(seen, p, NULL) ||
        !kopt_tune_space_valid(s, p, NULL, 0))
        return 0;
    if (kopt_tune__map_put(seen, p, NAN) != 0)
        return 0;
    points[(*n)++] = p;
    return 1;
}

kopt_status kopt_tune__opt_double(kopt_ctx *ctx, const kopt_tune_strategy_opts *o,
                                  const char *const *known, const char *key, double def,
                                  double lo, double hi, double *out)
{
    kopt_status rc = kopt_tune_option(ctx, o ? o->options : NULL, known, key, def, out);

    if (rc != KOPT_OK)
        return rc;
    if (*out < lo || *out > hi)
        return kopt_seterr(ctx, KOPT_E_INVALID,
                           "strategy option '%s' = %g is out of range [%g, %g]", key, *out, lo,
                           hi);
    return KOPT_OK;
}

kopt_status kopt_tune__opt_int(kopt_ctx *ctx, const kopt_tune_strategy_opts *o,
                               const char *const *known, const char *key, int def, int lo,
                               int hi, int *out)
{
    double v;
    kopt_status rc = kopt_tune_option(ctx, o ? o->options : NULL, known, key, def, &v);

    if (rc != KOPT_OK)
        return rc;
    if (v != floor(v))
        return kopt_seterr(ctx, KOPT_E_INVALID,
                           "strategy option '%s' = %g must be a whole number", key, v);
    if (v < lo || v > hi)
        return kopt_seterr(ctx, KOPT_E_INVALID,
                           "strategy option '%s' = %g is out of range [%d, %d]", key, v, lo,
                           hi);
    *out = (int)v;
    return KOPT_OK;
}

int kopt_tune__opt_given(const kopt_tune_strategy_opts *o, const char *key)
{
    size_t len = strlen(key);
    const char *p = o ? o->options : NULL;

    while (p && *p) {
        while (*p == ' ' || *p == ',')
            p++;
        if (strncmp(p, key, len) == 0) {
            const char *q = p + len;
            while (*q == ' ')
                q++;
            if (*q == '=')
                return 1;
        }
        p = strchr(p, ',');
    }
    return 0;
}

int kopt_tune__fit_population(const kopt_tune_strategy_opts *o, const char *key, int pop)
{
    int cap;

    if (!o || o->max_evals <= 0 || kopt_tune__opt_given(o, key))
        return pop;
    cap = o->max_evals / 4 > 4 ? o->max_evals / 4 : 4;
    return pop < cap ? pop : cap;
}

uint64_t kopt_tune__round(const kopt_tune_space *s, const double *x)
{
    int idx[KOPT_TUNE_MAX_PARAMS];

    for (int i = 0; i < s->nparams; i++) {
        double v = floor(x[i] + 0.5);
        int hi = s->params[i].nvalues - 1;
        idx[i] = !(v > 0) ? 0 : v > hi ? hi : (int)v;
    }
    return kopt_tune_space_encode(s, idx);
}
