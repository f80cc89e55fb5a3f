/*
 * src/tune/strategies/forest.c: model-based search with a random-forest surrogate.
 *
 * After `init` random valid points, every ask fits `trees` regression trees to the measured
 * points (features: the params' index coordinates; target: log of the objective, failed
 * points imputed at the worst measured log value + log 2 so the model steers away from
 * them). Each tree sees a bootstrap sample and, at every node, a random subset of the
 * params (all of them up to 4 params), splits on the threshold that most reduces the
 * squared error, and stops at depth 10 or fewer than 3 samples. The ensemble's mean and
 * spread across trees give a prediction and its uncertainty for each candidate: every
 * unproposed valid point when the space is small, otherwise `pool` random unproposed valid
 * points plus the unproposed points within two steps of the five best measured ones. The
 * candidates with the highest expected improvement over the best measured value (acq=0),
 * or the lowest mean - kappa x spread (acq=1), are proposed, `batch` per ask.
 * Without a finite measurement yet, it keeps sampling at random.
 *
 * Options: init (default 10, at most a third of a known budget), trees (24), pool (512),
 * batch (1), acq (0: expected improvement, 1: lower confidence bound), kappa (1.96),
 * xi (EI margin in log units, 0.01).
 */
#include "common.h"

#include <stdlib.h>
#include <string.h>

#define FOREST_MAX_DEPTH 10
#define FOREST_MIN_SPLIT 3
#define FOREST_SMALL_SPACE 4096      /* enumerate all candidates below this many points */
#define FOREST_HIST_MAX 4096         /* params with at most this many values split by bins */

typedef struct tnode {
    int feature;              /* -1: leaf */
    double threshold;         /* go left when x[feature] <= threshold */
    int left, right;
    double value;
} tnode;

typedef struct tree {
    tnode *nodes;
    int n, cap;
} tree;

typedef struct forest {
    const kopt_tune_space *space;
    kopt_rng rng;
    kopt_tune_objective objective;
    kopt_tune__map seen;
    int init, ntrees, pool, batch, acq;
    double kappa, xi;
    int done;
    /* scratch for one fit */
    int n, dim;
    double *X, *y;            /* n x dim features, n targets */
    tree *trees;
    int *hcnt;                /* per-value bins for one feature's split search */
    double *hsum, *hsq;
} forest;

static void forest_destroy(void *state)
{
    forest *f = state;

    if (!f)
        return;
    kopt_tune__map_free(&f->seen);
    for (int t = 0; f->trees && t < f->ntrees; t++)
        free(f->trees[t].nodes);
    free(f->trees);
    free(f->X);
    free(f->y);
    free(f->hcnt);
    free(f->hsum);
    free(f->hsq);
    free(f);
}

static kopt_status forest_create(void **state, kopt_ctx *ctx, const kopt_tune_space *space,
                                 const kopt_tune_strategy_opts *opts)
{
    static const char *const known[] = {"init", "trees", "pool", "batch", "acq", "kappa", "xi",
                                        NULL};
    forest *f = calloc(1, sizeof(*f));
    kopt_status rc;
    int init_def = 10;

    if (!f)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "out of memory");
    f->space = space;
    f->dim = space->nparams;
    kopt_rng_seed(&f->rng, opts ? opts->seed : 1);
    f->objective = opts ? opts->objective : KOPT_TUNE_TIME;
    if (opts && opts->max_evals > 0 && opts->max_evals / 3 < init_def)
        init_def = opts->max_evals / 3 > 2 ? opts->max_evals / 3 : 2;
    if ((rc = kopt_tune__opt_int(ctx, opts, known, "init", init_def, 1, 100000, &f->init)) ||
        (rc = kopt_tune__opt_int(ctx, opts, known, "trees", 24, 1, 1000, &f->ntrees)) ||
        (rc = kopt_tune__opt_int(ctx, opts, known, "pool", 512, 1, 1000000, &f->pool)) ||
        (rc = kopt_tune__opt_int(ctx, opts, known, "batch", 1, 1, 1024, &f->batch)) ||
        (rc = kopt_tune__opt_int(ctx, opts, known, "acq", 0, 0, 1, &f->acq)) ||
        (rc = kopt_tune__opt_double(ctx, opts, known, "kappa", 1.96, 0.0, 100.0, &f->kappa)) ||
        (rc = kopt_tune__opt_double(ctx, opts, known, "xi", 0.01, 0.0, 10.0, &f->xi)))
        goto fail;
    f->trees = calloc((size_t)f->ntrees, sizeof(*f->trees));
    f->hcnt = calloc(FOREST_HIST_MAX, sizeof(*f->hcnt));
    f->hsum = calloc(FOREST_HIST_MAX, sizeof(*f->hsum));
    f->hsq = calloc(FOREST_HIST_MAX, sizeof(*f->hsq));
    if (!f->trees || !f->hcnt || !f->hsum || !f->hsq || kopt_tune__map_init(&f->seen, 256) != 0) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "out of memory");
        goto fail;
    }
    *state = f;
    return KOPT_OK;
fail:
    forest_destroy(f);
    return rc;
}

/* ---- regression trees ------------------------------------------------------------------ */

static int add_node(tree *t)
{
    if (t->n == t->cap) {
        int cap = t->cap ? 2 * t->cap : 64;
        tnode *bigger = realloc(t->nodes, (size_t)cap * sizeof(*bigger));
        if (!bigger)
            return -1;
        t->nodes = bigger;
        t->cap = cap;
    }
    memset(&t->nodes[t->n], 0, sizeof(t->nodes[0]));
    t->nodes[t->n].feature = -1;
    return t->n++;
}

typedef struct keyed {
    double x;
    int i;
} keyed;

static int by_key(const void *a, const void *b)
{
    const keyed *x = a, *y = b;

    if (x->x != y->x)
        return x->x < y->x ? -1 : 1;
    return x->i - y->i;
}

/* Grow the subtree over samples idx[0..m); returns the node index or -1 (out of memory). */
static int grow(forest *f, tree *t, int *idx, int m, int depth)
{
    int node = add_node(t), best_feat = -1, mtry, feats[KOPT_TUNE_MAX_PARAMS], nf = f->dim;
    double sum = 0, sumsq = 0, best_gain = 1e-12, best_thr = 0;
    keyed *ks;

    if (node < 0)
        return -1;
    for (int i = 0; i < m; i++) {
        sum += f->y[idx[i]];
        sumsq += f->y[idx[i]] * f->y[idx[i]];
    }
    t->nodes[node].value = sum / m;
    if (depth >= FOREST_MAX_DEPTH || m < FOREST_MIN_SPLIT)
        return node;
    if (!(ks = malloc((size_t)m * sizeof(*ks))))
        return -1;
    for (int j = 0; j < nf; j++)
        feats[j] = j;
    mtry = nf <= 4 ? nf : (nf * 3 + 4) / 5;
    for (int j = 0; j < mtry; j++) {            /* a random subset: partial shuffle */
        int k = j + (int)kopt_rng_below(&f->rng, (uint64_t)(nf - j)), tmp = feats[j];
        feats[j] = feats[k];
        feats[k] = tmp;
    }
    for (int jj = 0; jj < mtry; jj++) {
        int j = feats[jj], nv = f->space->params[j].nvalues;
        double ls = 0, lsq = 0, gain;
        int nl = 0;
        if (nv <= FOREST_HIST_MAX) {
            /* Index coordinates are small whole numbers: bin the samples by value, then
             * scan the bins in order (no sort). */
            for (int v = 0; v < nv; v++) {
                f->hcnt[v] = 0;
                f->hsum[v] = f->hsq[v] = 0;
            }
            for (int i = 0; i < m; i++) {
                int v = (int)f->X[(size_t)idx[i] * f->dim + j];
                double yi = f->y[idx[i]];
                f->hcnt[v]++;
                f->hsum[v] += yi;
                f->hsq[v] += yi * yi;
            }
            for (int v = 0, prev = -1; v < nv; v++) {
                if (!f->hcnt[v])
                    continue;
                if (prev >= 0 && nl < m) {    /* split between prev and v */
                    int nr = m - nl;
                    gain = (sumsq - sum * sum / m) - (lsq - ls * ls / nl) -
                           ((sumsq - lsq) - (sum - ls) * (sum - ls) / nr);
                    if (gain > best_gain) {
                        best_gain = gain;
                        best_feat = j;
                        best_thr = 0.5 * (prev + v);
                    }
                }
                nl += f->hcnt[v];
                ls += f->hsum[v];
                lsq += f->hsq[v];
                prev = v;
            }
            continue;
        }
        for (int i = 0; i < m; i++) {
            ks[i].x = f->X[(size_t)idx[i] * f->dim + j];
            ks[i].i = idx[i];
        }
        qsort(ks, (size_t)m, sizeof(*ks), by_key);
        for (int i = 0; i < m - 1; i++) {
            double yi = f->y[ks[i].i], xa = ks[i].x, xb = ks[i + 1].x;
            int nr;
            nl = i + 1;
            nr = m - nl;
            ls += yi;
            lsq += yi * yi;
            if (xa == xb)
                continue;
            /* SSE(parent) - SSE(left) - SSE(right) */
            gain = (sumsq - sum * sum / m) - (lsq - ls * ls / nl) -
                   ((sumsq - lsq) - (sum - ls) * (sum - ls) / nr);
            if (gain > best_gain) {
                best_gain = gain;
                best_feat = j;
                best_thr = 0.5 * (xa + xb);
            }
        }
    }
    free(ks);
    if (best_feat < 0)
        return node;
    {
        int lo = 0, hi = m - 1, l, r;
        while (lo <= hi) {                      /* partition: left side first */
            if (f->X[(size_t)idx[lo] * f->dim + best_feat] <= best_thr) {
                lo++;
            } else {
                int tmp = idx[lo];
                idx[lo] = idx[hi];
                idx[hi--] = tmp;
            }
        }
        if (lo == 0 || lo == m)
            return node;
        l = grow(f, t, idx, lo, depth + 1);
        r = grow(f, t, idx + lo, m - lo, depth + 1);
        if (l < 0 || r < 0)
            return -1;
        t->nodes[node].feature = best_feat;
        t->nodes[node].threshold = best_thr;
        t->nodes[node].left = l;
        t->nodes[node].right = r;
    }
    return node;
}

static double predict_tree(const tree *t, const double *x)
{
    int k = 0;

    while (t->nodes[k].feature >= 0)
        k = x[t->nodes[k].feature] <= t->nodes[k].threshold ? t->nodes[k].left
                                                             : t->nodes[k].right;
    return t->nodes[k].value;
}

static void predict(const forest *f, const double *x, double *mean, double *sd)
{
    double s = 0, sq = 0;

    for (int t = 0; t < f->ntrees; t++) {
        double v = predict_tree(&f->trees[t], x);
        s += v;
        sq += v * v;
    }
    *mean = s / f->ntrees;
    *sd = sqrt(fmax(sq / f->ntrees - *mean * *mean, 0.0));
    if (*sd < 1e-3)
        *sd = 1e-3;
}

/* Fit the forest on every measured point; 1 when fitted, 0 without a finite value. */
static int fit(forest *f, double *ybest)
{
    const kopt_tune__map *m = &f->seen;
    double worst = -INFINITY;
    int *idx = NULL, ok = 0;
    size_t k = 0;

    free(f->X);
    free(f->y);
    f->X = malloc((m->n + 1) * (size_t)(f->dim ? f->dim : 1) * sizeof(double));
    f->y = malloc((m->n + 1) * sizeof(double));
    idx = malloc((m->n + 1) * sizeof(int));
    if (!f->X || !f->y || !idx)
        goto done;
    *ybest = INFINITY;
    for (size_t i = 0; i < m->cap; i++) {
        int ix[KOPT_TUNE_MAX_PARAMS];
        if (m->keys[i] == KOPT_TUNE__EMPTY || isnan(m->vals[i]))
            continue;
        kopt_tune_space_decode(f->space, m->keys[i], ix);
        for (int j = 0; j < f->dim; j++)
            f->X[k * f->dim + j] = ix[j];
        f->y[k] = isinf(m->vals[i]) || m->vals[i] <= 0 ? INFINITY : log(m->vals[i]);
        if (isfinite(f->y[k])) {
            worst = fmax(worst, f->y[k]);
            *ybest = fmin(*ybest, f->y[k]);
        }
        k++;
    }
    f->n = (int)k;
    if (!isfinite(worst))
        goto done;
    for (size_t i = 0; i < k; i++)
        if (!isfinite(f->y[i]))
            f->y[i] = worst + log(2.0);
    for (int t = 0; t < f->ntrees; t++) {
        f->trees[t].n = 0;
        for (int i = 0; i < f->n; i++)          /* bootstrap sample */
            idx[i] = (int)kopt_rng_below(&f->rng, (uint64_t)f->n);
        if (grow(f, &f->trees[t], idx, f->n, 0) < 0)
            goto done;
    }
    ok = 1;
done:
    free(idx);
    return ok;
}

/* ---- candidates and acquisition ------------------------------------------------------- */

typedef struct cand {
    uint64_t point;
    double score;             /* higher is better */
} cand;

static int by_score(const void *a, const void *b)
{
    const cand *x = a, *y = b;

    if (x->score != y->score)
        return x->score > y->score ? -1 : 1;
    return x->point < y->point ? -1 : x->point > y->point;
}

static int add_cand(forest *f, kopt_tune__map *inpool, cand **c, int *n, int *cap, uint64_t p)
{
    if (kopt_tune__map_get(&f->seen, p, NULL) || kopt_tune__map_get(inpool, p, NULL) ||
        !kopt_tune_space_valid(f->space, p, NULL, 0))
        return 0;
    if (*n == *cap) {
        int nc = *cap ? 2 * *cap : 256;
        cand *bigger = realloc(*c, (size_t)nc * sizeof(*bigger));
        if (!bigger)
            return -1;
        *c = bigger;
        *cap = nc;
    }
    if (kopt_tune__map_put(inpool, p, 0) != 0)
        return -1;
    (*c)[(*n)++].point = p;
    return 0;
}

/* The (up to) `k` <= 8 best measured points, best first, written to best[]. */
static int top_points(const forest *f, uint64_t *best, int k)
{
    double bv[8];
    int n = 0;

    for (size_t i = 0; i < f->seen.cap; i++) {
        double v = f->seen.vals[i];
        int j;
        if (f->seen.keys[i] == KOPT_TUNE__EMPTY || !isfinite(v))
            continue;
        if (n == k && !(v < bv[n - 1]))
            continue;
        if (n < k)
            n++;
        for (j = n - 1; j > 0 && v < bv[j - 1]; j--) {   /* insertion, dropping the worst */
            bv[j] = bv[j - 1];
            best[j] = best[j - 1];
        }
        bv[j] = v;
        best[j] = f->seen.keys[i];
    }
    return n;
}

static int gather(forest *f, cand **c, int *cap)
{
    const kopt_tune_space *s = f->space;
    kopt_tune__map inpool = {0};
    uint64_t top[5], n1[2 * KOPT_TUNE_MAX_PARAMS], n2[2 * KOPT_TUNE_MAX_PARAMS], p, q;
    int n = 0, ntop;

    if (s->npoints <= FOREST_SMALL_SPACE) {
        for (p = 0; p < s->npoints && kopt_tune_space_next_valid(s, p, &q) == 0 && q >= p;
             p = q + 1)
            if (add_cand(f, &inpool, c, &n, cap, q) != 0)
                break;
        kopt_tune__map_free(&inpool);
        return n;
    }
    for (int i = 0; n < f->pool && i < 4 * f->pool; i++) {
        if (kopt_tune_space_random_valid(s, &f->rng, &p) != 0 ||
            add_cand(f, &inpool, c, &n, cap, p) != 0)
            break;
    }
    ntop = top_points(f, top, 5);
    for (int t = 0; t < ntop; t++) {
        int k1 = kopt_tune_space_neighbors(s, top[t], n1, 2 * KOPT_TUNE_MAX_PARAMS);
        for (int i = 0; i < k1; i++) {
            int k2 = kopt_tune_space_neighbors(s, n1[i], n2, 2 * KOPT_TUNE_MAX_PARAMS);
            add_cand(f, &inpool, c, &n, cap, n1[i]);
            for (int j = 0; j < k2; j++)
                add_cand(f, &inpool, c, &n, cap, n2[j]);
        }
    }
    kopt_tune__map_free(&inpool);
    return n;
}

static double expected_improvement(double ybest, double mean, double sd, double xi)
{
    double imp = ybest - mean - xi, z = imp / sd;
    double cdf = 0.5 * erfc(-z / sqrt(2.0)), pdf = exp(-0.5 * z * z) / sqrt(2.0 * M_PI);

    return imp * cdf + sd * pdf;
}

static int forest_ask(void *state, const kopt_tune_history *h, uint64_t *points, int max)
{
    forest *f = state;
    cand *c = NULL;
    int n = 0, nc, cap = 0;
    double ybest;

    (void)h;
    if (f->done || max <= 0)
        return 0;
    if ((int)f->seen.n < f->init || !fit(f, &ybest)) {
        int want = (int)f->seen.n < f->init ? f->init - (int)f->seen.n : f->batch;
        while (n < want && n < max) {
            uint64_t p;
            if (kopt_tune__fresh(f->space, &f->rng, &f->seen, &p) != 0) {
                f->done = n == 0;
                break;
            }
            kopt_tune__propose(f->space, &f->seen, p, points, &n, max);
        }
        return n;
    }
    nc = gather(f, &c, &cap);
    for (int i = 0; i < nc; i++) {
        double x[KOPT_TUNE_MAX_PARAMS], mean, sd;
        int ix[KOPT_TUNE_MAX_PARAMS];
        kopt_tune_space_decode(f->space, c[i].point, ix);
        for (int j = 0; j < f->dim; j++)
            x[j] = ix[j];
        predict(f, x, &mean, &sd);
        c[i].score = f->acq == 0 ? expected_improvement(ybest, mean, sd, f->xi)
                                 : -(mean - f->kappa * sd);
    }
    qsort(c, (size_t)nc, sizeof(*c), by_score);
    for (int i = 0; i < nc && n < f->batch && n < max; i++)
        kopt_tune__propose(f->space, &f->seen, c[i].point, points, &n, max);
    free(c);
    if (n == 0) {                               /* pool came up empty: any fresh point */
        uint64_t p;
        if (kopt_tune__fresh(f->space, &f->rng, &f->seen, &p) != 0)
            f->done = 1;
        else
            kopt_tune__propose(f->space, &f->seen, p, points, &n, max);
    }
    return n;
}

static void forest_tell(void *state, uint64_t point, const kopt_tune_outcome *o)
{
    forest *f = state;

    kopt_tune__map_put(&f->seen, point, kopt_tune_outcome_objective(o, f->objective));
}

const kopt_tune_strategy kopt_tune_strategy_forest = {
    .name = "forest",
    .summary = "random-forest surrogate with expected improvement over a candidate pool",
    .wants_findings = 0,
    .create = forest_create,
    .ask = forest_ask,
    .tell = forest_tell,
    .destroy = forest_destroy,
};
