/* Comparing a candidate's output with the reference's, element by element (allclose
 * semantics, NaN only where the reference is NaN), and summarizing timing samples. */
#include "eval_int.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The common case, f32, without a per-element type switch: a fast scan, falling back to
 * the general loop only to describe mismatches and errors exactly. Large tensors are
 * scanned by several threads (outputs of hundreds of MB are checked per evaluation). */
typedef struct f32_part {
    const float *g, *w;
    int64_t n;
    double atol, rtol;
    double max_abs, max_rel;
    int ok;
} f32_part;

static void *f32_scan(void *arg)
{
    f32_part *p = arg;
    double ma = 0, mr = 0;

    p->ok = 0;
    for (int64_t i = 0; i < p->n; i++) {
        double a = p->g[i], b = p->w[i], e = fabs(a - b), fb = fabs(b);
        if (!(e <= p->atol + p->rtol * fb))   /* NaN fails here too */
            return NULL;
        if (e > ma)
            ma = e;
        if (e > mr * fb && b != 0)          /* divide only for a new maximum */
            mr = e / fb;
    }
    p->max_abs = ma;
    p->max_rel = mr;
    p->ok = 1;
    return NULL;
}

#define F32_THREADS 8
#define F32_PER_THREAD (1 << 22)   /* elements below which another thread is not worth it */

static int f32_all_close(const kopt_btensor *t, const float *g, const float *w, double *max_abs,
                         double *max_rel)
{
    f32_part parts[F32_THREADS];
    pthread_t tid[F32_THREADS];
    int started[F32_THREADS] = {0};
    long cpus = kopt_cpus_usable();
    int n = (int)(t->count / F32_PER_THREAD) + 1, ok = 1;
    int64_t per;

    if (n > F32_THREADS)
        n = F32_THREADS;
    if (cpus > 0 && n > cpus)
        n = (int)cpus;
    per = (t->count + n - 1) / n;
    for (int i = 0; i < n; i++) {
        int64_t from = (int64_t)i * per, to = from + per < t->count ? from + per : t->count;
        parts[i] = (f32_part){g + from, w + from, to > from ? to - from : 0, t->atol, t->rtol,
                              0, 0, 0};
        if (i > 0)
            started[i] = pthread_create(&tid[i], NULL, f32_scan, &parts[i]) == 0;
    }
    f32_scan(&parts[0]);
    for (int i = 1; i < n; i++) {
        if (started[i])
            pthread_join(tid[i], NULL);
        else
            f32_scan(&parts[i]);        /* no thread: scan it here */
    }
    *max_abs = *max_rel = 0;
    for (int i = 0; i < n; i++) {
        ok &= parts[i].ok;
        if (parts[i].max_abs > *max_abs)
            *max_abs = parts[i].max_abs;
        if (parts[i].max_rel > *max_rel)
            *max_rel = parts[i].max_rel;
    }
    return ok;
}

void kopt__compare(const kopt_btensor *t, const void *got, const void *want, kopt_check *c)
{
    c->count = t->count;
    c->mismatches = 0;
    c->max_abs_err = c->max_rel_err = 0;
    c->atol = t->atol;
    c->rtol = t->rtol;
    c->first_index = -1;
    c->ndim = t->ndim;
    if (t->dtype == KOPT_F32 && f32_all_close(t, got, want, &c->max_abs_err, &c->max_rel_err))
        return;
    c->max_abs_err = c->max_rel_err = 0;
    for (int64_t i = 0; i < t->count; i++) {
        double g, w, abs_err, rel_err;
        int bad;
        if (t->dtype == KOPT_I64 || t->dtype == KOPT_I32) {
            int64_t gi = t->dtype == KOPT_I64 ? ((const int64_t *)got)[i] : ((const int32_t *)got)[i];
            int64_t wi = t->dtype == KOPT_I64 ? ((const int64_t *)want)[i] : ((const int32_t *)want)[i];
            g = (double)gi;
            w = (double)wi;
            abs_err = gi == wi ? 0 : fabs(g - w);
            rel_err = wi ? abs_err / fabs(w) : (gi ? INFINITY : 0);
            bad = gi != wi && abs_err > t->atol + t->rtol * fabs(w);
        } else {
            g = kopt_dtype_load(t->dtype, got, i);
            w = kopt_dtype_load(t->dtype, want, i);
            if (isnan(w) || isnan(g)) {
                bad = !(isnan(w) && isnan(g));
                abs_err = rel_err = bad ? INFINITY : 0;
            } else if (isinf(w) || isinf(g)) {
                bad = g != w;
                abs_err = rel_err = bad ? INFINITY : 0;
            } else {
                abs_err = fabs(g - w);
                rel_err = w != 0 ? abs_err / fabs(w) : (abs_err ? INFINITY : 0);
                bad = abs_err > t->atol + t->rtol * fabs(w);
            }
        }
        if (abs_err > c->max_abs_err)
            c->max_abs_err = abs_err;
        if (rel_err > c->max_rel_err && (w != 0 || abs_err == 0))
            c->max_rel_err = rel_err;
        if (bad) {
            if (c->mismatches == 0) {
                int64_t rem = i;
                c->first_index = i;
                c->first_got = g;
                c->first_want = w;
                for (int d = t->ndim - 1; d >= 0; d--) {
                    int64_t ext = t->shape[d] ? t->shape[d] : 1;
                    c->first_coord[d] = rem % ext;
                    rem /= ext;
                }
            }
            c->mismatches++;
        }
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double quantile(const double *s, int n, double q)
{
    double pos = q * (n - 1);
    int lo = (int)floor(pos), hi = lo + 1 < n ? lo + 1 : lo;
    return s[lo] + (s[hi] - s[lo]) * (pos - lo);
}

void kopt__timing_from_samples(const double *samples, int n, int warmup, kopt_timing *t)
{
    double *s;
    double sum = 0;

    memset(t, 0, sizeof(*t));
    if (n <= 0 || !(s = malloc((size_t)n * sizeof(double))))
        return;
    memcpy(s, samples, (size_t)n * sizeof(double));
    qsort(s, (size_t)n, sizeof(double), cmp_double);
    for (int i = 0; i < n; i++)
        sum += s[i];
    t->n = n;
    t->warmup_runs = warmup;
    t->min_ms = s[0];
    t->max_ms = s[n - 1];
    t->mean_ms = sum / n;
    t->median_ms = quantile(s, n, 0.5);
    t->p10_ms = quantile(s, n, 0.1);
    t->p90_ms = quantile(s, n, 0.9);
    free(s);
}
