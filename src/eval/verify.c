/* Verify and time, once the workers have run (eval.c, torch_eval.c call in): a candidate's
 * output against the reference's, element by element (allclose semantics, NaN only where
 * the reference is NaN), every run of a phase so (kopt__compare_phase), the repeat of
 * trial 0 (kopt__check_repeat) and the inputs' checksums (kopt__check_inputs); the timing
 * samples summarized, and read from a worker's run less the event bracket's cost. The
 * checks and timings go into the result; the verdict is verdicts.c's. */
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

/* The run's event-bracket cost in `phase` (0 when it did not measure one). */
static double run_overhead(const kopt__worker_run *run, int phase)
{
    json_t *ph = json_array_get(json_object_get(run->result, "phases"), (size_t)phase);

    return json_number_value(json_object_get(ph, "event_overhead_ms"));
}

/* The timing of `phase` of a run, its samples less `overhead` (the bracket's own cost; < 0:
 * the run's own measurement of it). */
void kopt__timing_less(const kopt__worker_run *run, int phase, double overhead, kopt_timing *t)
{
    json_t *ph = json_array_get(json_object_get(run->result, "phases"), (size_t)phase);
    json_t *s = json_object_get(ph, "samples_ms");
    size_t n = json_array_size(s);
    double *v = calloc(n + 1, sizeof(double)), raw;

    if (overhead < 0)
        overhead = run_overhead(run, phase);

    for (size_t i = 0; v && i < n; i++)
        v[i] = json_number_value(json_array_get(s, i));
    kopt__timing_from_samples(v, (int)n, (int)json_integer_value(json_object_get(ph, "warmup_runs")), t);
    raw = t->median_ms;
    for (size_t i = 0; v && i < n; i++)
        v[i] = v[i] > overhead ? v[i] - overhead : 0;
    kopt__timing_from_samples(v, (int)n, t->warmup_runs, t);
    t->raw_median_ms = raw;
    t->overhead_ms = overhead;
    free(v);
}


void kopt__timing_from_run(const kopt__worker_run *run, int phase, kopt_timing *t)
{
    kopt__timing_less(run, phase, -1, t);
}

/* Compare every run's outputs with the reference's; append checks to r. Returns the
 * number of failing checks. */
int kopt__compare_phase(kopt_eval_result *r, const phase_plan *ph, const unsigned char *got,
                        const unsigned char *want, const kopt__stream_phase *sp)
{
    int failing = 0;

    if (!sp)
        return kopt__compare_runs(r->checks, &r->nchecks, ph, got, want, 0, ph->ntrials + 2);
    for (int run = 0; run < ph->ntrials + 2; run++) {
        if (run == ph->ntrials || (run == ph->ntrials + 1 && !ph->timed))
            continue;   /* the repeat is compared with trial 0 (check_repeat) */
        for (int k = 0; k < sp->nout; k++) {   /* compared by the reference's worker */
            r->checks[r->nchecks] = sp->checks[run * sp->nout + k];
            failing += r->checks[r->nchecks++].mismatches > 0;
        }
    }
    return failing;
}

int kopt__compare_runs(kopt_check *checks, int *nchecks, const phase_plan *ph,
                       const unsigned char *got, const unsigned char *want, int from, int to)
{
    int failing = 0;

    for (int run = from; run < to && run < ph->ntrials + 2; run++) {
        size_t off;
        if (run == ph->ntrials || (run == ph->ntrials + 1 && !ph->timed))
            continue;   /* the repeat is compared with trial 0 (check_repeat) */
        off = kopt__out_at(ph, run);
        for (int i = 0; i < ph->ref->ntensors; i++) {
            const kopt_btensor *t = &ph->ref->tensors[i];
            kopt_check *c;
            if (t->role != KOPT_ROLE_OUTPUT && t->role != KOPT_ROLE_INOUT)
                continue;
            c = &checks[(*nchecks)++];
            memset(c, 0, sizeof(*c));
            snprintf(c->tensor, sizeof(c->tensor), "%s", t->name);
            snprintf(c->sizes_label, sizeof(c->sizes_label), "%s", ph->label);
            if (run < ph->ntrials)
                snprintf(c->run, sizeof(c->run), "trial %d", run);
            else
                snprintf(c->run, sizeof(c->run), "timed");
            c->seed = run < ph->ntrials ? ph->seeds[run] : ph->timing_seed;
            kopt__compare(t, got + off, want + off, c);
            failing += c->mismatches > 0;
            off += t->bytes;
        }
    }
    return failing;
}


/* Two runs of the candidate on the same inputs must agree within tolerance (RACE).
 * Returns 1 and fills *c with the first differing tensor when they do not. */
int kopt__check_repeat(const phase_plan *ph, const unsigned char *got, kopt_check *c,
                       const kopt__stream_phase *sp)
{
    size_t a = kopt__out_at(ph, 0), b = kopt__out_at(ph, ph->ntrials);

    if (sp) {
        for (int k = 0; k < sp->nout; k++)
            if (sp->checks[ph->ntrials * sp->nout + k].mismatches) {
                *c = sp->checks[ph->ntrials * sp->nout + k];
                return 1;
            }
        return 0;
    }

    for (int i = 0; i < ph->ref->ntensors; i++) {
        const kopt_btensor *t = &ph->ref->tensors[i];
        if (t->role != KOPT_ROLE_OUTPUT && t->role != KOPT_ROLE_INOUT)
            continue;
        memset(c, 0, sizeof(*c));
        snprintf(c->tensor, sizeof(c->tensor), "%s", t->name);
        snprintf(c->sizes_label, sizeof(c->sizes_label), "%s", ph->label);
        snprintf(c->run, sizeof(c->run), "repeat of trial 0");
        c->seed = ph->seeds[0];
        kopt__compare(t, got + b, got + a, c);
        if (c->mismatches)
            return 1;
        a += t->bytes;
        b += t->bytes;
    }
    return 0;
}

/* ---- checks made while the candidate is timed ------------------------------------------ */

int kopt__early_checks_init(kopt__early_checks *e, const phase_plan *phases, int nphases,
                            const unsigned char *want, int capacity)
{
    const char *off = getenv("KOPT_EARLY_CHECKS");

    memset(e, 0, sizeof(*e));
    if ((off && strcmp(off, "0") == 0) || !want || nphases > 2)
        return 0;
    for (int p = 0; p < nphases; p++)
        if (phases[p].stream)
            return 0;
    if (!(e->checks = calloc((size_t)capacity, sizeof(*e->checks))))
        return 0;
    e->phases = phases;
    e->nphases = nphases;
    e->want = want;
    return 1;
}

void kopt__early_checks_on_trials(void *arg, int phase, const unsigned char *got)
{
    kopt__early_checks *e = arg;
    const phase_plan *ph;
    double t0 = kopt_now_ms();

    if (!e->checks || phase < 0 || phase >= e->nphases || e->done[phase])
        return;
    ph = &e->phases[phase];
    e->rep_fail[phase] = kopt__check_repeat(ph, got, &e->rep[phase], NULL);
    e->from[phase] = e->nchecks;
    kopt__compare_runs(e->checks, &e->nchecks, ph, got, e->want, 0, ph->ntrials);
    e->count[phase] = e->nchecks - e->from[phase];
    e->done[phase] = 1;
    e->ms += kopt_now_ms() - t0;
}

int kopt__early_repeat(const kopt__early_checks *e, int p, const phase_plan *ph,
                       const unsigned char *got, kopt_check *c)
{
    if (!e->done[p])
        return kopt__check_repeat(ph, got, c, NULL);
    if (e->rep_fail[p])
        *c = e->rep[p];
    return e->rep_fail[p];
}

int kopt__early_compare(kopt_eval_result *r, const kopt__early_checks *e, int p,
                        const phase_plan *ph, const unsigned char *got,
                        const unsigned char *want)
{
    int failing = 0;

    if (!e->done[p])
        return kopt__compare_runs(r->checks, &r->nchecks, ph, got, want, 0, ph->ntrials + 2);
    for (int k = 0; k < e->count[p]; k++) {
        r->checks[r->nchecks] = e->checks[e->from[p] + k];
        failing += r->checks[r->nchecks++].mismatches > 0;
    }
    return failing + kopt__compare_runs(r->checks, &r->nchecks, ph, got, want, ph->ntrials,
                                        ph->ntrials + 2);
}

void kopt__early_checks_free(kopt__early_checks *e)
{
    free(e->checks);
    e->checks = NULL;
}

/* The candidate's inputs after a run must be what they were: their checksums (taken on
 * the GPU after trial 0 and after the timed runs) must equal the reference worker's, which
 * saw the same generated inputs. Returns 1 and says which input changed. */
int kopt__check_inputs(int phase, const char *label, const kopt__worker_run *cand,
                       const kopt__worker_run *ref, char *msg, size_t n)
{
    json_t *cs = json_object_get(json_array_get(json_object_get(cand->result, "phases"),
                                                (size_t)phase), "input_sums");
    json_t *rs = json_object_get(json_array_get(json_object_get(ref->result, "phases"),
                                                (size_t)phase), "input_sums");
    const char *key;
    json_t *carr;

    json_object_foreach(cs, key, carr) {
        json_t *rarr = json_object_get(rs, key), *c;
        size_t i;
        json_array_foreach(carr, i, c) {
            const char *a = json_string_value(json_object_get(c, "sum"));
            const char *b = json_string_value(json_object_get(json_array_get(rarr, i), "sum"));
            if (a && b && strcmp(a, b) != 0) {
                snprintf(msg, n, "the candidate changed its input '%s' (at the %s sizes, seen "
                         "after %s): inputs are read-only",
                         json_string_value(json_object_get(c, "tensor")), label,
                         strcmp(key, "timed") == 0 ? "the timed runs" : key);
                return 1;
            }
        }
    }
    return 0;
}

/* Wall time a worker spent in its timed loops (warm-up included). */
double kopt__timing_wall(const kopt__worker_run *run)
{
    json_t *phs = json_object_get(run->result, "phases"), *ph;
    size_t i;
    double ms = 0;

    json_array_foreach(phs, i, ph)
        ms += json_number_value(json_object_get(ph, "timing_wall_ms"));
    return ms;
}
