/*
 * Tuning through a run (kopt tune): set up the problem, template, device and one search
 * space per shape (run_tune_setup.c does a replay's part), then tune each shape in turn:
 * stored outcomes loaded, a resumed run continued, the tune_runs row begun and finished,
 * the strategy run live or on a recording, the winner checked on fresh inputs, the output
 * files written.
 */
#include "run_tune_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RECORD_SCAN_LIMIT 4000000  /* --record adds device-pruned points up to this size */

/* ---- the evaluator wrapper: which points were really evaluated, and a test-only delay ---- */

typedef struct eval_wrap {
    const kopt_tune_evaluator *inner;
    double delay_ms;             /* replay only (tests) */
    volatile sig_atomic_t *stop;
    const uint64_t *known;       /* sorted points known before the run (loaded) */
    size_t nknown;
    uint64_t *evaluated;         /* points evaluated this run, in order */
    size_t n, cap;
    size_t reevaluated;          /* of which were already known: must stay 0 */
} eval_wrap;

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static kopt_status wrap_prepare(void *user, kopt_ctx *ctx, uint64_t point)
{
    eval_wrap *w = user;
    return w->inner->prepare(w->inner->user, ctx, point);
}

static kopt_status wrap_warm(void *user, kopt_ctx *ctx)
{
    eval_wrap *w = user;
    return w->inner->warm(w->inner->user, ctx);
}

/* Note a point evaluated this run (and whether it was known before); -1 without memory. */
static int note_point(eval_wrap *w, uint64_t point)
{
    if (w->n == w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 256;
        uint64_t *p = realloc(w->evaluated, cap * sizeof(*p));
        if (!p)
            return -1;
        w->evaluated = p;
        w->cap = cap;
    }
    w->evaluated[w->n++] = point;
    if (w->nknown && bsearch(&point, w->known, w->nknown, sizeof(uint64_t), cmp_u64))
        w->reevaluated++;
    return 0;
}

static kopt_status wrap_evaluate(void *user, kopt_ctx *ctx, uint64_t point, int want_findings,
                                 kopt_tune_outcome *out)
{
    eval_wrap *w = user;

    if (w->delay_ms > 0) {
        struct timespec ts = {(time_t)(w->delay_ms / 1000),
                              (long)(fmod(w->delay_ms, 1000.0) * 1e6)};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR && !(w->stop && *w->stop))
            ;
    }
    if (note_point(w, point) != 0)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "evaluated points");
    return w->inner->evaluate(w->inner->user, ctx, point, want_findings, out);
}

/* A batch (scale-out): each point is noted as its outcome arrives. */
typedef struct wrap_batch {
    eval_wrap *w;
    const kopt_tune_batch *outer;
    const uint64_t *points;
} wrap_batch;

static void wrap_ready(void *user, uint64_t point)
{
    wrap_batch *wb = user;
    if (wb->outer->ready)
        wb->outer->ready(wb->outer->user, point);
}

static void wrap_done(void *user, int index, const kopt_tune_outcome *o)
{
    wrap_batch *wb = user;
    note_point(wb->w, wb->points[index]);   /* without memory the count is short: a report */
    wb->outer->done(wb->outer->user, index, o);
}

static kopt_status wrap_many(void *user, kopt_ctx *ctx, const uint64_t *points, int n,
                             int want_findings, const kopt_tune_batch *b)
{
    eval_wrap *w = user;
    wrap_batch wb = {w, b, points};
    kopt_tune_batch mine = *b;

    mine.user = &wb;
    mine.ready = wrap_ready;
    mine.done = wrap_done;
    return w->inner->evaluate_many(w->inner->user, ctx, points, n, want_findings, &mine);
}

/* ---- the store --------------------------------------------------------------------------- */

/* Stored outcomes of the key into the cache (before the persist hook is set). */
static kopt_status store_load(kopt_run_tune *t, kopt_ctx *ctx, kopt_run_tune_shape *sr)
{
    size_t n = 0;
    kopt_status rc = kopt_store_tune_load(t->priv->run->store, ctx, sr->cache, &n);
    if (rc == KOPT_OK && n)
        kopt_log(ctx, KOPT_LOG_INFO, "tune: %zu outcome(s) for %s from the store", n,
                 sr->key.sizes);
    return rc;
}

/* Resume: the unfinished run of this key (or the one asked for) gives the strategy,
 * options, seed, budget and objective, unless they are given again. */
static kopt_status store_resume(kopt_run_tune *t, kopt_ctx *ctx, kopt_run_tune_shape *sr)
{
    kopt__run_tune_priv *P = t->priv;
    kopt_store_tune_run run;
    int found = 0;
    kopt_status rc;

    if (P->o.resume_id) {
        if ((rc = kopt_store_tune_get_run(P->run->store, ctx, P->o.resume_id, &run)) != KOPT_OK)
            return rc;
        if ((rc = kopt_tune_key_compare(ctx, "the resumed run", &run.key, &sr->key)) != KOPT_OK)
            return rc;
        found = 1;
    } else if ((rc = kopt_store_tune_find_unfinished(P->run->store, ctx, &sr->key, &run,
                                                     &found)) != KOPT_OK) {
        return rc;
    }
    if (!found) {
        kopt_log(ctx, KOPT_LOG_WARN, "no unfinished run for %s at %s in the store: starting "
                 "a new one (stored outcomes are still reused)", sr->key.problem,
                 sr->key.sizes);
        return KOPT_OK;
    }
    if (!(P->o.given & KOPT_RUN_TUNE_GIVEN_STRATEGY) && kopt_tune_strategy_find(run.strategy))
        snprintf(sr->strategy, sizeof(sr->strategy), "%s", run.strategy);
    if (!(P->o.given & KOPT_RUN_TUNE_GIVEN_OPTIONS))
        snprintf(sr->options, sizeof(sr->options), "%s", run.options);
    if (!(P->o.given & KOPT_RUN_TUNE_GIVEN_SEED))
        sr->seed = run.seed;
    if (!(P->o.given & KOPT_RUN_TUNE_GIVEN_BUDGET))
        sr->budget = run.max_evals;
    if (!(P->o.given & KOPT_RUN_TUNE_GIVEN_OBJECTIVE))
        kopt_run_tune_objective_parse(run.objective, &t->objective);
    sr->resumed = 1;
    sr->resumed_from = run.id;
    if (run.run_id)
        kopt__run_set_parent(P->run, ctx, run.run_id);
    return KOPT_OK;
}

/* A new run row; every outcome put into the cache from now on is stored at once. */
static kopt_status store_begin(kopt_run_tune *t, kopt_ctx *ctx, kopt_run_tune_shape *sr)
{
    kopt__run_tune_priv *P = t->priv;
    kopt_store *store = P->run->store;
    kopt__run_tune_sink *sink = &P->sinks[sr - t->shapes];
    int64_t id = 0;
    kopt_status rc = kopt_store_tune_begin(store, ctx, &sr->key, t->tmpl_record, sr->strategy,
                                           sr->options[0] ? sr->options : NULL, sr->seed,
                                           t->objective, sr->budget, &id);
    if (rc != KOPT_OK)
        return rc;
    sr->tune_run_id = id;
    if (P->run->id && (rc = kopt_store_tune_set_run(store, ctx, id, P->run->id)) != KOPT_OK)
        return rc;
    sink->sink.store = store;
    sink->sink.run_id = id;
    sink->sink.key = sr->key;
    kopt_tune_cache_set_persist(sr->cache, kopt_store_tune_persist, &sink->sink);
    /* the run continued here is over: a later --resume must not pick it again */
    if (sr->resumed_from)
        rc = kopt_store_tune_finish(store, ctx, sr->resumed_from, KOPT_TUNE_STOP_INTERRUPTED,
                                    NULL, 0);
    return rc;
}

/* The run's stop reason and best; an interrupted run stays unfinished (resume finds it). */
static kopt_status store_finish(kopt_run_tune *t, kopt_ctx *ctx, kopt_run_tune_shape *sr)
{
    const kopt_tune_result *r = sr->res;
    char *label = NULL;
    kopt_status rc;

    if (!sr->tune_run_id || r->stop == KOPT_TUNE_STOP_INTERRUPTED)
        return KOPT_OK;
    if (r->has_best)
        label = kopt_tune_space_label(sr->space, r->best_point);
    rc = kopt_store_tune_finish(t->priv->run->store, ctx, sr->tune_run_id, r->stop, label,
                                r->has_best ? kopt_tune_outcome_objective(&r->best,
                                                                          t->objective) : 0);
    free(label);
    return rc;
}

/* ---- one shape ----------------------------------------------------------------------------- */

/* Live runs: evaluate the winner as `kopt eval` would (3 fresh trials at every size set,
 * the reference timed), so the reported time and speedup are not the tuning's quick ones. */
static void final_check(kopt_run_tune *t, kopt_ctx *ctx, kopt_run_tune_shape *sr)
{
    const kopt_eval_opts *te = &t->priv->o.eval;
    kopt_eval_opts eo = KOPT_EVAL_OPTS_INIT;
    kopt_vars vals = KOPT_VARS_INIT;
    kopt_candidate *c = NULL;

    if (t->replay || t->standin || !sr->res || !sr->res->has_best || kopt__run_tune_stopped(t))
        return;
    eo.device = te->device;
    eo.arch = te->arch;
    eo.cache_dir = te->cache_dir;
    eo.timeout_s = te->timeout_s;
    eo.sizes = &sr->sizes;
    eo.no_flush = te->no_flush;
    eo.ceilings = t->priv->ceilings.valid ? &t->priv->ceilings : NULL;
    if (kopt_tune_space_values(sr->space, sr->res->best_point, &vals) != KOPT_OK ||
        kopt_candidate_instantiate(&c, ctx, t->tmpl, &vals) != KOPT_OK ||
        kopt_eval_run(&sr->final, ctx, t->prob, c, &eo) != KOPT_OK)
        kopt_log(ctx, KOPT_LOG_WARN, "final check of the winner failed: %s", kopt_errmsg(ctx));
    kopt_candidate_free(c);
    kopt_vars_free(&vals);
}

static kopt_status run_shape(kopt_run_tune *t, kopt_ctx *ctx, int index)
{
    kopt__run_tune_priv *P = t->priv;
    const kopt_run_tune_opts *a = &P->o;
    kopt_run_tune_shape *sr = &t->shapes[index];
    kopt_tune_evaluator *inner = NULL;
    kopt_tune_evaluator wrapped;
    kopt_tune_opts to = KOPT_TUNE_OPTS_INIT;
    eval_wrap w;
    uint64_t *known = NULL;
    kopt_status rc;

    memset(&w, 0, sizeof(w));
    snprintf(sr->strategy, sizeof(sr->strategy), "%s", a->strategy ? a->strategy : "annealing");
    snprintf(sr->options, sizeof(sr->options), "%s", a->options ? a->options : "");
    sr->seed = a->seed;
    sr->budget = a->budget;
    if ((rc = kopt_tune_cache_create(&sr->cache, ctx, sr->space, &sr->key)) != KOPT_OK ||
        (rc = kopt_tune_cache_set_template(sr->cache, ctx, t->tmpl_record)) != KOPT_OK)
        return rc;
    if (P->run->store && !P->store_is_recording) {
        if (!a->fresh && (rc = store_load(t, ctx, sr)) != KOPT_OK)
            return rc;
        if ((a->resume || a->resume_id) && (rc = store_resume(t, ctx, sr)) != KOPT_OK)
            return rc;
        if ((rc = store_begin(t, ctx, sr)) != KOPT_OK)
            return rc;
    }
    sr->loaded = kopt_tune_cache_count(sr->cache);

    if (P->recorded) {
        rc = kopt_tune_evaluator_replay(&inner, ctx, sr->space, P->recorded);
    } else if (P->pool) {
        rc = kopt__run_tune_scale_shape(t, ctx, index, &inner);
    } else {
        kopt_tune_live_opts lo;
        kopt__run_tune_live_opts(t, index, a->eval.device,
                                 P->ceilings.valid ? &P->ceilings : NULL, &P->eval, &lo);
        rc = kopt_tune_evaluator_live(&inner, ctx, t->prob, t->tmpl, sr->space, &lo);
    }
    if (rc != KOPT_OK)
        goto done;

    /* the points known before the run, sorted, so a re-evaluation would be seen */
    if (sr->loaded) {
        if (!(known = malloc(sr->loaded * sizeof(*known)))) {
            rc = kopt_seterr(ctx, KOPT_E_NOMEM, "known points");
            goto done;
        }
        for (size_t i = 0; i < sr->loaded; i++) {
            const kopt_tune_outcome *o;
            kopt_tune_cache_entry(sr->cache, i, &known[i], &o);
        }
        qsort(known, sr->loaded, sizeof(*known), cmp_u64);
    }
    w.inner = inner;
    w.known = known;
    w.nknown = sr->loaded;
    w.stop = a->stop;
    if (P->recorded)
        w.delay_ms = a->replay_delay_ms;
    memset(&wrapped, 0, sizeof(wrapped));   /* fields added later stay NULL */
    wrapped.user = &w;
    wrapped.prepare = inner->prepare ? wrap_prepare : NULL;
    wrapped.evaluate = wrap_evaluate;
    wrapped.destroy = NULL;
    wrapped.evaluate_many = inner->evaluate_many ? wrap_many : NULL;
    wrapped.warm = inner->warm ? wrap_warm : NULL;

    to.strategy = sr->strategy;
    to.strategy_options = sr->options[0] ? sr->options : NULL;
    to.seed = sr->seed;
    to.max_evals = sr->budget;
    to.max_seconds = a->seconds;
    to.objective = t->objective;
    to.energy_slack = a->energy_slack;
    to.compile_threads = P->recorded ? 0 : a->compile_threads;
    to.lookahead = a->lookahead;
    to.progress = a->progress ? kopt__run_tune_progress : NULL;
    to.progress_user = t;
    to.stop = a->stop;
    P->shape = index;
    double t0 = kopt_now_ms();
    rc = kopt_tune_run(&sr->res, ctx, sr->space, sr->cache, &wrapped, &to);
    kopt_tune_trace_step("search", t0);
    t0 = kopt_now_ms();
    if (a->progress)
        a->progress(a->progress_user, index, t->nshapes, sr->space, NULL);
    sr->evaluated = w.evaluated;
    sr->nevaluated = w.n;
    sr->reevaluated = w.reevaluated;
    w.evaluated = NULL;
    if (rc == KOPT_OK && P->pool && t->mixed[0])
        rc = kopt__run_tune_scale_retime(t, ctx, index);
    if (rc == KOPT_OK && P->pool && !P->store_is_recording)
        rc = kopt__run_tune_scale_record(t, ctx, index);
    if (rc == KOPT_OK && P->run->store && !P->store_is_recording)
        rc = store_finish(t, ctx, sr);
    kopt_tune_trace_step("record", t0);
    t0 = kopt_now_ms();
    if (rc == KOPT_OK)
        final_check(t, ctx, sr);
    kopt_tune_trace_step("final_check", t0);
done:
    free(w.evaluated);
    free(known);
    kopt_tune_evaluator_free(inner);
    return rc;
}

/* ---- output files ------------------------------------------------------------------------ */

/* "best.cu" + 2 -> "best-2.cu" (several shapes); one shape keeps the name. */
static void numbered_path(const char *path, int i, int nshapes, char *buf, size_t n)
{
    const char *slash = strrchr(path, '/'), *dot = strrchr(path, '.');
    if (nshapes <= 1) {
        snprintf(buf, n, "%s", path);
        return;
    }
    if (!dot || (slash && dot < slash) || dot == path || (slash && dot == slash + 1))
        snprintf(buf, n, "%s-%d", path, i + 1);
    else
        snprintf(buf, n, "%.*s-%d%s", (int)(dot - path), path, i + 1, dot);
}

/* The record: the run's cache, plus a "pruned" entry for every point that only this
 * device's limits prune (threads, shared memory, registers), so that the file replays
 * completely on a machine that knows nothing of the device (a replay checks the
 * constraints alone). */
static kopt_status record_cache(kopt_run_tune *t, kopt_ctx *ctx, kopt_run_tune_shape *sr)
{
    kopt_tune_space *plain = NULL;
    kopt_tune_cache *out = NULL;
    kopt_status rc;

    if (!t->has_device || sr->space->npoints > RECORD_SCAN_LIMIT)
        return kopt_tune_cache_write(sr->cache, ctx, sr->record_path);
    if ((rc = kopt_tune_space_create(&plain, ctx, t->tmpl, &sr->sizes, NULL)) != KOPT_OK ||
        (rc = kopt_tune_cache_create(&out, ctx, sr->space, &sr->key)) != KOPT_OK ||
        (rc = kopt_tune_cache_set_template(out, ctx, t->tmpl_record)) != KOPT_OK)
        goto done;
    for (size_t i = 0; i < kopt_tune_cache_count(sr->cache) && rc == KOPT_OK; i++) {
        uint64_t p;
        const kopt_tune_outcome *o;
        kopt_tune_cache_entry(sr->cache, i, &p, &o);
        rc = kopt_tune_cache_put(out, ctx, p, o);
    }
    for (uint64_t p = 0; p < sr->space->npoints && rc == KOPT_OK; p++) {
        kopt_tune_outcome o;
        if (kopt_tune_cache_get(out, p) || !kopt_tune_space_valid(plain, p, NULL, 0))
            continue;
        memset(&o, 0, sizeof(o));
        if (kopt_tune_space_valid(sr->space, p, o.message, sizeof(o.message)))
            continue;   /* valid here and not evaluated: the recording is not complete */
        o.state = KOPT_TUNE_PRUNED;
        rc = kopt_tune_cache_put(out, ctx, p, &o);
    }
    if (rc == KOPT_OK)
        rc = kopt_tune_cache_write(out, ctx, sr->record_path);
done:
    kopt_tune_cache_free(out);
    kopt_tune_space_free(plain);
    return rc;
}

static void outcome_summary(const kopt_tune_outcome *o, char *buf, size_t n)
{
    if (o->state != KOPT_TUNE_OK)
        snprintf(buf, n, "%s%s%s", kopt_tune_state_name(o->state), o->message[0] ? ": " : "",
                 o->message);
    else if (o->energy_mj > 0)
        snprintf(buf, n, "%.4f ms, %.3f mJ, %.0f W", o->time_ms, o->energy_mj, o->power_w);
    else
        snprintf(buf, n, "%.4f ms", o->time_ms);
}

/* Write the record, the exports and the winner for one shape. */
static kopt_status write_outputs(kopt_run_tune *t, kopt_ctx *ctx, int index)
{
    const kopt_run_tune_opts *a = &t->priv->o;
    kopt_run_tune_shape *sr = &t->shapes[index];
    kopt_status rc = KOPT_OK;

    if (a->record) {
        numbered_path(a->record, index, t->nshapes, sr->record_path, sizeof(sr->record_path));
        if ((rc = record_cache(t, ctx, sr)) != KOPT_OK)
            return rc;
    }
    if (a->export_kt) {
        numbered_path(a->export_kt, index, t->nshapes, sr->kt_path, sizeof(sr->kt_path));
        if ((rc = kopt_tune_cache_write_kt(sr->cache, ctx, sr->kt_path, t->prob->name)) !=
            KOPT_OK)
            return rc;
    }
    if (a->export_t4) {
        numbered_path(a->export_t4, index, t->nshapes, sr->t4_path, sizeof(sr->t4_path));
        if ((rc = kopt_tune_cache_write_t4(sr->cache, ctx, sr->t4_path, t->objective)) !=
            KOPT_OK)
            return rc;
    }
    if (a->out && sr->res && sr->res->has_best) {
        kopt_vars vals = KOPT_VARS_INIT;
        char note[1024], ob[320];
        numbered_path(a->out, index, t->nshapes, sr->out_path, sizeof(sr->out_path));
        outcome_summary(&sr->res->best, ob, sizeof(ob));
        snprintf(note, sizeof(note), "tuned by kopt %s on %s at %s: %s (%s, %zu evaluations%s)",
                 KOPT_VERSION, sr->key.device[0] ? sr->key.device : "an unknown device",
                 sr->key.sizes, ob, sr->strategy, sr->res->evaluated + sr->res->cached,
                 t->replay ? ", replayed" : "");
        rc = kopt_tune_space_values(sr->space, sr->res->best_point, &vals);
        if (rc == KOPT_OK)
            rc = kopt_candidate_write_fixed(ctx, t->tmpl, &vals, sr->out_path, note);
        kopt_vars_free(&vals);
    }
    return rc;
}

/* ---- the compile depth --------------------------------------------------------------------- */

void kopt__run_tune_depth_open(kopt_run_tune *t, kopt_ctx *ctx)
{
    kopt__run_tune_priv *P = t->priv;
    kopt_run_tune_opts *o = &P->o;
    int gpus = P->pool ? kopt_scale_pool_size(P->pool) : 1;

    t->cpus_usable = kopt_cpus_usable();
    /* a share of the CPUs this process may use, split over the GPUs (a first run of a
     * compile-heavy template waits for its compiles: bench/results/2026-11-26-h200x4-scale-
     * warmfix, section 6), and rounds twice as deep as the threads, so that the round asked
     * ahead is compiled while this one evaluates */
    if (!(o->given & KOPT_RUN_TUNE_GIVEN_COMPILE_THREADS))
        o->compile_threads = kopt_tune_default_compile_threads(t->cpus_usable, gpus);
    if (o->compile_threads > KOPT_TUNE_MAX_COMPILE_THREADS)
        o->compile_threads = KOPT_TUNE_MAX_COMPILE_THREADS;
    if (o->compile_threads < 0)
        o->compile_threads = 0;
    if (!(o->given & KOPT_RUN_TUNE_GIVEN_LOOKAHEAD))
        o->lookahead = kopt_tune_default_lookahead(o->compile_threads, gpus);
    else if (P->pool && o->lookahead < KOPT_TUNE_LOOKAHEAD_MIN_PER_GPU * gpus)
        o->lookahead = KOPT_TUNE_LOOKAHEAD_MIN_PER_GPU * gpus;   /* a round for every slot */
    if (o->lookahead > KOPT_TUNE_MAX_LOOKAHEAD)
        o->lookahead = KOPT_TUNE_MAX_LOOKAHEAD;
    if (o->lookahead < 1)
        o->lookahead = 1;
    t->compile_threads = o->compile_threads;
    t->lookahead = o->lookahead;
    /* each compile thread's NVRTC call goes to a helper process of its own, on one GPU as on
     * several: NVRTC calls overlap in one process, but less well (at 16 ways 1.45x slower
     * than 16 processes), and a first 4-GPU run of budget 512 took 27.0 s with helpers, 30.3 s
     * without (bench/results/2026-11-26-h200x4-scale-2). Stand-ins compile nothing.
     * $KOPT_COMPILE_PROCS overrides (0: off). */
    if (!t->standin && o->compile_threads > 1) {
        P->procs_before = kopt_compile_procs_set(o->compile_threads);
        P->procs_set = 1;
    }
    kopt_log(ctx, KOPT_LOG_INFO, "tune: %d compile thread(s)%s, %d point(s) asked ahead, for "
             "%d GPU(s) on %d usable CPU(s)", t->compile_threads,
             P->procs_set ? " (helper processes)" : "", t->lookahead, gpus, t->cpus_usable);
}

void kopt__run_tune_depth_close(kopt_run_tune *t)
{
    kopt__run_tune_priv *P = t->priv;

    if (!t->replay)
        t->compile_helpers = kopt_compile_procs_running();
    if (!P->procs_set)
        return;
    kopt_compile_procs_set(P->procs_before);   /* the caller's setting (stops the helpers) */
    P->procs_set = 0;
}

/* ---- the run --------------------------------------------------------------------------------- */

static kopt_status go_shapes(kopt_run_tune *t, kopt_ctx *ctx)
{
    kopt__run_tune_priv *P = t->priv;
    kopt_run *run = P->run;
    kopt_status rc;

    /* replay: the recorded outcomes */
    if (t->replay && (rc = kopt__run_tune_load_recording(t, ctx)) != KOPT_OK)
        return rc;

    /* each shape in turn; a stop request ends the current one and skips the rest */
    t->nrun = t->nshapes;
    for (int i = 0; i < t->nshapes; i++) {
        if (kopt__run_tune_stopped(t))
            break;
        if ((rc = run_shape(t, ctx, i)) != KOPT_OK) {
            /* a replay that reaches a point the recording lacks: the input is incomplete */
            t->nrun = i + (t->shapes[i].res != NULL);
            return kopt__run_fail(run, P->recorded && rc == KOPT_E_NOT_FOUND
                                       ? KOPT_RUN_FAULT_INPUT : KOPT_RUN_FAULT_KOPT, rc);
        }
        if ((rc = write_outputs(t, ctx, i)) != KOPT_OK) {
            t->nrun = i + 1;
            return kopt__run_fail(run, KOPT_RUN_FAULT_KOPT, rc);
        }
        if (t->shapes[i].res->stop == KOPT_TUNE_STOP_INTERRUPTED) {
            t->interrupted = 1;
            t->nrun = i + 1;
            break;
        }
    }
    return KOPT_OK;
}

kopt_status kopt_run_tune_go(kopt_run_tune *t, kopt_ctx *ctx)
{
    kopt__run_tune_priv *P;
    kopt_status rc;

    if (!t || !t->priv)
        return kopt_seterr(ctx, KOPT_E_INVALID, "tune: not set up");
    P = t->priv;
    if (!t->replay && !t->has_device)
        return kopt__run_fail(P->run, KOPT_RUN_FAULT_KOPT,
                              kopt_seterr(ctx, KOPT_E_NO_DEVICE, "tuning needs a GPU (%s)",
                                          t->why_no_device));
    /* MPI ranks > 0 evaluate for rank 0 instead (docs/scale.md) */
    if (!t->replay && P->o.mpi && kopt_scale_mpi_rank(P->o.mpi) > 0)
        return kopt__run_tune_serve(t, ctx);

    /* live: the device's ceilings once for the whole run (every evaluation needs them for
     * its roofline and SUSPECT checks), from the store or measured now and stored; with
     * --gpus every GPU's at once, each its own worker, the run's device among them, so the
     * slots find theirs measured (kopt__run_tune_scale_open). Meanwhile each GPU's first
     * two workers start and make their CUDA contexts (kopt__run_tune_prestart). */
    double t0 = kopt_now_ms();
    if (!t->replay && !t->standin) {
        int devs[KOPT_SCALE_MAX_SLOTS + 1], n = 0;
        kopt_ceilings got[KOPT_SCALE_MAX_SLOTS + 1];
        kopt__run_ceilings_wave *wave;
        devs[n++] = P->o.eval.device;
        for (int i = 0; !P->o.mpi && i < P->o.ngpus && i < KOPT_SCALE_MAX_SLOTS; i++)
            if (P->o.gpus[i] != P->o.eval.device)
                devs[n++] = P->o.gpus[i];
        memset(got, 0, sizeof(got[0]) * (size_t)n);
        wave = kopt__run_ceilings_begin(P->run, ctx, devs, n, 1);
        kopt__run_tune_prestart(t, ctx);
        kopt__run_ceilings_end(wave, ctx, got);
        P->ceilings = got[0];
    }
    kopt_tune_trace_step("ceilings", t0);
    /* scale-out: the slots (several GPUs, MPI ranks, stand-ins), when asked for */
    t0 = kopt_now_ms();
    if (!t->replay && (rc = kopt__run_tune_scale_open(t, ctx)) != KOPT_OK) {
        kopt__run_tune_scale_close(t);
        return kopt__run_fail(P->run, KOPT_RUN_FAULT_KOPT, rc);
    }
    kopt_tune_trace_step("scale_open", t0);
    /* live: the compile threads, the rounds asked ahead and the compile helpers */
    t0 = kopt_now_ms();
    if (!t->replay)
        kopt__run_tune_depth_open(t, ctx);
    kopt_tune_trace_step("depth_open", t0);
    rc = go_shapes(t, ctx);
    t0 = kopt_now_ms();
    kopt__run_tune_prestart_close(t);
    kopt__run_tune_scale_close(t);
    kopt__run_tune_depth_close(t);
    kopt_tune_trace_step("close", t0);
    if (!t->replay)
        kopt__run_tune_held_back(t);
    return rc;
}
