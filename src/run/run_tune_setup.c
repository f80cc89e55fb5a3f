/*
 * Setting a tuning run up (kopt_run_tune_open): the problem and template (for a replay,
 * found from the recording: a kopt cache file or a stored tuning run), the device, and each
 * shape's sizes, search space and key; the recording read when the run starts; freeing;
 * the live evaluator's options of a shape (for run_tune.c and run_scale.c, which call this
 * file; it calls neither).
 */
#include "run_tune_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int kopt_run_tune_objective_parse(const char *s, kopt_tune_objective *o)
{
    if (strcmp(s, "time") == 0)
        *o = KOPT_TUNE_TIME;
    else if (strcmp(s, "energy") == 0)
        *o = KOPT_TUNE_ENERGY;
    else if (strcmp(s, "time-energy") == 0 || strcmp(s, "time_energy") == 0)
        *o = KOPT_TUNE_TIME_ENERGY;
    else
        return -1;
    return 0;
}

const char *kopt_run_tune_objective_name(kopt_tune_objective o)
{
    return o == KOPT_TUNE_ENERGY ? "energy" : o == KOPT_TUNE_TIME_ENERGY ? "time-energy" : "time";
}

void kopt_run_tune_opts_default(kopt_run_tune_opts *o)
{
    kopt_run_tune_opts init = KOPT_RUN_TUNE_OPTS_INIT;

    *o = init;
    o->eval.trials = 1;
    o->eval.budget_ms = 30;
    o->eval.warmup_ms = 10;
    o->eval.min_reps = 5;
    o->eval.no_ref_timing = 1;
}

int kopt__run_tune_stopped(const kopt_run_tune *t)
{
    return t->priv->o.stop && *t->priv->o.stop;
}

void kopt__run_tune_progress(void *user, const kopt_tune_progress *p)
{
    kopt_run_tune *t = user;
    const kopt_run_tune_opts *o = &t->priv->o;

    o->progress(o->progress_user, t->priv->shape, t->nshapes, t->shapes[t->priv->shape].space,
                p);
}

/* "42": a stored run's id (anything else is a cache file). */
static int is_run_id(const char *s)
{
    if (!s || !*s)
        return 0;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return 0;
    return 1;
}

static void sizes_text(const kopt_vars *v, char *buf, size_t n)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < v->n && at < n; i++)
        at += (size_t)snprintf(buf + at, n - at, "%s%s=%lld", i ? "," : "", v->names[i],
                               (long long)v->values[i]);
}

static void make_key(kopt_tune_key *k, const kopt_problem *p, const kopt_candidate *tmpl,
                     const kopt_vars *sizes, const kopt_device_info *dev)
{
    memset(k, 0, sizeof(*k));
    snprintf(k->problem, sizeof(k->problem), "%s", p->name);
    snprintf(k->problem_hash, sizeof(k->problem_hash), "%s", p->hash);
    snprintf(k->template_hash, sizeof(k->template_hash), "%s", tmpl->hash);
    sizes_text(sizes, k->sizes, sizeof(k->sizes));
    if (dev) {
        snprintf(k->device, sizeof(k->device), "%s", dev->name);
        snprintf(k->device_uuid, sizeof(k->device_uuid), "%s", dev->uuid);
    }
}

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The template named in a cache: absolute, or relative to the cache file's folder or one of
 * its ancestors (a cache kept in tests/data/ names examples/...), or to the working folder. */
static int resolve_template(const char *cache_path, const char *tp, char *buf, size_t n)
{
    char dir[PATH_MAX];

    if (tp[0] == '/') {
        snprintf(buf, n, "%s", tp);
        return file_exists(buf) ? 0 : -1;
    }
    if (!realpath(cache_path, dir))
        snprintf(dir, sizeof(dir), "%s", cache_path);
    for (char *slash = strrchr(dir, '/'); slash; slash = strrchr(dir, '/')) {
        *slash = '\0';
        if ((size_t)snprintf(buf, n, "%s/%s", dir[0] ? dir : "", tp) >= n)
            continue;
        if (file_exists(buf))
            return 0;
    }
    snprintf(buf, n, "%s", tp);
    return file_exists(buf) ? 0 : -1;
}

/* A replay of a stored run: its key and template path. */
static kopt_status stored_run_key(kopt_run_tune *t, kopt_ctx *ctx, char **template_path)
{
    kopt__run_tune_priv *P = t->priv;
    kopt_store_tune_run run;
    kopt_status rc;

    *template_path = NULL;
    if (!P->run->store)
        return kopt_seterr(ctx, KOPT_E_INVALID, "replaying run %s needs a store", P->o.replay);
    rc = kopt_store_tune_get_run(P->run->store, ctx, strtoll(P->o.replay, NULL, 10), &run);
    if (rc != KOPT_OK)
        return rc;
    P->recorded_key = run.key;
    if (run.run_id)
        kopt__run_set_parent(P->run, ctx, run.run_id);
    if (!(*template_path = strdup(run.template_path)))
        return kopt_seterr(ctx, KOPT_E_NOMEM, "template path");
    return KOPT_OK;
}

/* The problem and template of a replay, from the cache file's key (or the stored run). */
static kopt_status replay_setup(kopt_run_tune *t, kopt_ctx *ctx)
{
    kopt__run_tune_priv *P = t->priv;
    const char *replay = P->o.replay, *tpath = P->o.template_path, *ppath = P->o.problem_path;
    char *tp = NULL, tbuf[PATH_MAX], pbuf[PATH_MAX];
    kopt_status rc;

    rc = P->store_is_recording ? stored_run_key(t, ctx, &tp)
                               : kopt_tune_cache_read_key(ctx, replay, &P->recorded_key, &tp);
    if (rc != KOPT_OK)
        return rc;
    if (!tpath) {
        if (!tp || !tp[0]) {
            free(tp);
            return kopt_seterr(ctx, KOPT_E_INVALID, "%s names no template: give --template "
                               "FILE", replay);
        }
        if (resolve_template(P->store_is_recording ? "./x" : replay, tp, tbuf,
                             sizeof(tbuf)) != 0) {
            rc = kopt_seterr(ctx, KOPT_E_NOT_FOUND, "the template of %s, '%s', was not found "
                             "(looked beside the cache file, in its parent folders and in the "
                             "working folder): give --template FILE", replay, tp);
            free(tp);
            return rc;
        }
        tpath = tbuf;
        snprintf(P->tmpl_record_buf, sizeof(P->tmpl_record_buf), "%s", tp ? tp : "");
    }
    free(tp);
    if (!ppath) {
        const char *slash = strrchr(tpath, '/');
        snprintf(pbuf, sizeof(pbuf), "%.*s", slash ? (int)(slash - tpath) : 1,
                 slash ? tpath : ".");
        ppath = pbuf;
    }
    if ((rc = kopt_problem_load(&t->prob, ctx, ppath)) != KOPT_OK ||
        (rc = kopt_candidate_load(&t->tmpl, ctx, tpath, t->prob)) != KOPT_OK)
        return rc;
    t->tmpl_path = t->tmpl->path;
    if (P->tmpl_record_buf[0])
        t->tmpl_record = P->tmpl_record_buf;
    if (strcmp(P->recorded_key.template_hash, t->tmpl->hash) != 0 ||
        strcmp(P->recorded_key.problem, t->prob->name) != 0)
        return kopt_seterr(ctx, KOPT_E_INVALID, "%s was recorded for %s (problem '%s', "
                           "template_hash %.12s...), not for %s (problem '%s', template_hash "
                           "%.12s...): the template source differs", replay,
                           "another template", P->recorded_key.problem,
                           P->recorded_key.template_hash, tpath, t->prob->name, t->tmpl->hash);
    return KOPT_OK;
}

/* The device (live) or the recorded one (replay). */
static void find_device(kopt_run_tune *t, kopt_ctx *ctx)
{
    kopt__run_tune_priv *P = t->priv;
    int count = 0, ordinal = P->o.eval.device;

    if (t->replay) {
        snprintf(t->dev.name, sizeof(t->dev.name), "%s", P->recorded_key.device);
        snprintf(t->dev.uuid, sizeof(t->dev.uuid), "%s", P->recorded_key.device_uuid);
    } else if (t->standin) {            /* KOPT_SCALE_STANDIN: CPU stand-ins, no GPU */
        char model[64];
        snprintf(t->dev.name, sizeof(t->dev.name), "%s",
                 kopt_scale_standin_model(0, model, sizeof(model)) ? model : "kopt stand-in");
        snprintf(t->dev.uuid, sizeof(t->dev.uuid), "stand-in");
        t->has_device = 1;              /* no limits: only the constraints prune */
    } else if (kopt_device_nvml(ctx, ordinal, &t->dev, &count) != KOPT_OK ||
               ordinal >= count) {
        snprintf(t->why_no_device, sizeof(t->why_no_device), "%s",
                 count ? "no such GPU" : kopt_errmsg(ctx));
    } else if (kopt_device_query(ctx, ordinal, &t->dev) != KOPT_OK) {
        snprintf(t->why_no_device, sizeof(t->why_no_device), "%s", kopt_errmsg(ctx));
    } else {
        t->has_device = 1;
        kopt_tune_limits_from_device(&t->limits, &t->dev);
    }
    if (!t->has_device || t->standin)
        snprintf(t->limits_text, sizeof(t->limits_text),
                 "none (no device: only the constraints prune)");
    else
        snprintf(t->limits_text, sizeof(t->limits_text),
                 "%d threads/block, %d B smem/block, %d regs/SM, %d threads/SM",
                 t->limits.max_threads_per_block, t->limits.max_smem_per_block,
                 t->limits.regs_per_sm, t->limits.max_threads_per_sm);
}

/* Shapes: the size sets given (or the replayed one, or the problem's own), with the
 * overrides on top; each with its space and key. */
static kopt_status make_shapes(kopt_run_tune *t, kopt_ctx *ctx)
{
    kopt__run_tune_priv *P = t->priv;
    const kopt_run_tune_opts *o = &P->o;
    kopt_vars recorded = KOPT_VARS_INIT;
    kopt_status rc = KOPT_OK;
    int n = o->nshapes;

    if (!n) {
        if (t->replay && (rc = kopt_vars_parse_list(ctx, P->recorded_key.sizes, &recorded)) != KOPT_OK) {
            kopt_vars_free(&recorded);
            return kopt__run_fail(P->run, KOPT_RUN_FAULT_INPUT,
                                  kopt_adderr(ctx, rc, "%s: key.sizes '%s'", o->replay,
                                              P->recorded_key.sizes));
        }
        n = 1;
    }
    for (int i = 0; i < n; i++) {
        kopt_run_tune_shape *sr = &t->shapes[i];
        kopt_vars want = KOPT_VARS_INIT;
        rc = kopt_vars_copy(&want, o->nshapes ? &o->shapes[i] : &recorded);
        for (int k = 0; rc == KOPT_OK && o->overrides && k < o->overrides->n; k++)
            rc = kopt_vars_set(&want, o->overrides->names[k], o->overrides->values[k]);
        if (rc == KOPT_OK)
            rc = kopt_sizes_resolve(&sr->sizes, ctx, t->prob, &want);
        kopt_vars_free(&want);
        t->nshapes = i + 1;
        if (rc != KOPT_OK) {
            rc = kopt__run_fail(P->run, KOPT_RUN_FAULT_USAGE,
                                kopt_adderr(ctx, rc, "--sizes set %d", i + 1));
            break;
        }
        if ((rc = kopt_tune_space_create(&sr->space, ctx, t->tmpl, &sr->sizes,
                                         t->has_device ? &t->limits : NULL)) != KOPT_OK) {
            kopt__run_fail(P->run, KOPT_RUN_FAULT_INPUT, rc);
            break;
        }
        make_key(&sr->key, t->prob, t->tmpl, &sr->sizes,
                 t->has_device || t->replay ? &t->dev : NULL);
    }
    kopt_vars_free(&recorded);
    return rc;
}

kopt_status kopt_run_tune_open(kopt_run_tune **out, kopt_run *run, kopt_ctx *ctx,
                               const kopt_run_tune_opts *opts)
{
    kopt_run_tune_opts dflt = KOPT_RUN_TUNE_OPTS_INIT;
    kopt_run_tune *t;
    kopt_status rc;

    *out = NULL;
    if (!run)
        return kopt_seterr(ctx, KOPT_E_INVALID, "tune: no run");
    if (!opts)
        opts = &dflt;
    if (opts->nshapes > KOPT_RUN_TUNE_MAX_SHAPES)
        return kopt__run_fail(run, KOPT_RUN_FAULT_USAGE,
                              kopt_seterr(ctx, KOPT_E_INVALID, "at most %d size sets",
                                          KOPT_RUN_TUNE_MAX_SHAPES));
    if (!(t = calloc(1, sizeof(*t))) || !(t->priv = calloc(1, sizeof(*t->priv)))) {
        free(t);
        return kopt_seterr(ctx, KOPT_E_NOMEM, "tune");
    }
    *out = t;
    t->priv->run = run;
    t->priv->o = *opts;
    t->priv->standin_ms = opts->replay ? -1 : kopt_scale_standin_env();
    t->standin = t->priv->standin_ms >= 0;
    t->objective = opts->objective;
    t->replay = opts->replay != NULL;
    t->priv->store_is_recording = t->replay && is_run_id(opts->replay);
    run->fault = KOPT_RUN_FAULT_NONE;

    /* problem and template */
    if (t->replay) {
        if ((rc = replay_setup(t, ctx)) != KOPT_OK)
            return kopt__run_fail(run, KOPT_RUN_FAULT_INPUT, rc);
    } else {
        if (!opts->problem_path || !opts->template_path)
            return kopt__run_fail(run, KOPT_RUN_FAULT_USAGE,
                                  kopt_seterr(ctx, KOPT_E_INVALID, "tune: needs a problem and "
                                              "a template"));
        if ((rc = kopt_problem_load(&t->prob, ctx, opts->problem_path)) != KOPT_OK ||
            (rc = kopt_candidate_load(&t->tmpl, ctx, opts->template_path, t->prob)) != KOPT_OK)
            return kopt__run_fail(run, KOPT_RUN_FAULT_INPUT, rc);
        t->tmpl_path = opts->template_path;
    }
    if (!t->tmpl_record)
        t->tmpl_record = t->tmpl_path;
    if (t->tmpl->ntemplate_params <= 0)
        return kopt__run_fail(run, KOPT_RUN_FAULT_INPUT,
                              kopt_seterr(ctx, KOPT_E_INVALID, "%s is not a template: its front "
                                          "matter has no \"params\" with several values (a "
                                          "list, {\"range\": [lo, hi]} or {\"pow2\": [lo, hi]}); "
                                          "docs/tuning.md", t->tmpl_path));
    find_device(t, ctx);
    return make_shapes(t, ctx);
}

/* A replay needs every valid point recorded: say so up front when some are missing. */
static void warn_incomplete(const kopt_run_tune *t, kopt_ctx *ctx)
{
    const kopt_tune_space *s = t->shapes[0].space;
    uint64_t missing = 0, valid = 0;

    if (s->npoints > KOPT__RUN_SPACE_SCAN_LIMIT)
        return;
    for (uint64_t p = 0; p < s->npoints; p++)
        if (kopt_tune_space_valid(s, p, NULL, 0)) {
            valid++;
            missing += kopt_tune_cache_get(t->priv->recorded, p) == NULL;
        }
    if (missing)
        kopt_log(ctx, KOPT_LOG_WARN, "%s%s records %llu of the %llu valid points; a strategy "
                 "that reaches a missing one stops with an error (record complete caches with "
                 "--strategy exhaustive --budget 0 --record FILE)",
                 t->priv->store_is_recording ? "stored run " : "", t->priv->o.replay,
                 (unsigned long long)(valid - missing), (unsigned long long)valid);
}

kopt_status kopt__run_tune_load_recording(kopt_run_tune *t, kopt_ctx *ctx)
{
    kopt__run_tune_priv *P = t->priv;
    kopt_run_tune_shape *sr = &t->shapes[0];
    kopt_status rc;

    if (!P->store_is_recording) {
        kopt_tune_key want = P->recorded_key;
        if (t->nshapes > 1 || strcmp(sr->key.sizes, P->recorded_key.sizes) != 0)
            return kopt__run_fail(P->run, KOPT_RUN_FAULT_USAGE,
                                  kopt_seterr(ctx, KOPT_E_INVALID, "%s holds measurements at "
                                              "%s only; --sizes/--size cannot change them in "
                                              "a replay", P->o.replay, P->recorded_key.sizes));
        if ((rc = kopt_tune_cache_load(&P->recorded, ctx, P->o.replay, sr->space, &want)) !=
            KOPT_OK)
            return kopt__run_fail(P->run, KOPT_RUN_FAULT_INPUT, rc);
    } else {
        size_t n = 0;
        rc = kopt_tune_cache_create(&P->recorded, ctx, sr->space, &P->recorded_key);
        if (rc == KOPT_OK)
            rc = kopt_store_tune_load(P->run->store, ctx, P->recorded, &n);
        if (rc == KOPT_OK && !n)
            rc = kopt_seterr(ctx, KOPT_E_NOT_FOUND, "%s: run %s has no stored outcomes",
                             P->run->db_path, P->o.replay);
        if (rc != KOPT_OK)
            return kopt__run_fail(P->run, KOPT_RUN_FAULT_INPUT, rc);
    }
    sr->key = P->recorded_key;
    warn_incomplete(t, ctx);
    return KOPT_OK;
}

void kopt_run_tune_free(kopt_run_tune *t)
{
    if (!t)
        return;
    if (t->priv) {
        kopt__run_tune_prestart_close(t);
        kopt_tune_cache_free(t->priv->recorded);   /* borrows the first shape's space */
    }
    for (int i = 0; i < KOPT_RUN_TUNE_MAX_SHAPES; i++) {
        kopt_run_tune_shape *sr = &t->shapes[i];
        kopt_tune_result_free(sr->res);
        kopt_eval_result_free(sr->final);
        kopt_tune_cache_free(sr->cache);
        kopt_tune_space_free(sr->space);
        kopt_vars_free(&sr->sizes);
        free(sr->evaluated);
    }
    kopt_candidate_free(t->tmpl);
    kopt_problem_free(t->prob);
    free(t->slots);
    free(t->priv);
    free(t);
}

/* ---- each GPU's first workers, started with the ceilings ----------------------------------- */

/* The first two workers of every GPU that evaluates here, started while the ceilings are
 * measured (kopt_run_tune_go), so that their CUDA contexts are made meanwhile: each
 * worker's cuInit takes ~1 s (side by side) and the host makes the contexts one at a time
 * (~0.12 s each), so the 8 of 4 GPUs held the first evaluations 1.8 s; started there, 16-35
 * ms (bench/results/2026-11-28-h200x4-prestart). Started earlier, as the run opens, before
 * its device query, they gained nothing on 2 GPUs (bench/results/2026-11-28-h200x2-waiting42).
 * The live evaluators' sessions take them at their warm (kopt__run_tune_live_opts passes the
 * pool). Not for replays, stand-ins, PyTorch references (their workers differ), one-shot
 * evaluations, MPI rank 0 (nothing local), KOPT_TUNE_WARM=0 or KOPT_TUNE_PRESTART=0 (to
 * measure what it saves). */
void kopt__run_tune_prestart(kopt_run_tune *t, kopt_ctx *ctx)
{
    kopt__run_tune_priv *P = t->priv;
    const char *off = getenv("KOPT_TUNE_PRESTART"), *warm = getenv("KOPT_TUNE_WARM");
    int n = P->o.ngpus > 0 ? P->o.ngpus : 1;

    if (t->replay || t->standin || P->o.mpi || P->o.one_shot || P->o.eval.no_prestart ||
        !t->prob || t->prob->ref_torch || P->nprestart > 0 || (off && strcmp(off, "0") == 0) ||
        (warm && strcmp(warm, "0") == 0))
        return;
    for (int i = 0; i < n && i < KOPT_SCALE_MAX_SLOTS; i++) {
        int device = P->o.ngpus > 0 ? P->o.gpus[i] : P->o.eval.device;
        kopt_eval_pool *pool = NULL;
        if (kopt_eval_pool_open(&pool, ctx, device, 2) != KOPT_OK)
            break;
        P->prestart_dev[P->nprestart] = device;
        P->prestart[P->nprestart++] = pool;
        if (kopt_eval_pool_fill(pool, ctx) != KOPT_OK) {   /* the session starts its own */
            kopt_log(ctx, KOPT_LOG_INFO, "tune: GPU %d's workers not started ahead: %s",
                     device, kopt_errmsg(ctx));
            break;
        }
    }
}

/* The workers no session took (a shape that failed early, a stop, a run that ended before
 * its search) end; kopt_run_tune_go and kopt_run_tune_free. */
void kopt__run_tune_prestart_close(kopt_run_tune *t)
{
    kopt__run_tune_priv *P = t->priv;

    for (int i = 0; i < P->nprestart; i++)
        kopt_eval_pool_close(P->prestart[i]);
    P->nprestart = 0;
}

/* The pool of GPU `device`'s workers started with the ceilings, or NULL. */
kopt_eval_pool *kopt__run_tune_prestarted(kopt_run_tune *t, int device)
{
    kopt__run_tune_priv *P = t->priv;

    for (int i = 0; i < P->nprestart; i++)
        if (P->prestart_dev[i] == device)
            return P->prestart[i];
    return NULL;
}

void kopt__run_tune_live_opts(kopt_run_tune *t, int index, int device, const kopt_ceilings *ceil,
                              kopt_eval_opts *eval, kopt_tune_live_opts *lo)
{
    static const kopt_tune_live_opts init = KOPT_TUNE_LIVE_OPTS_INIT;
    const kopt_run_tune_opts *a = &t->priv->o;
    kopt_eval_pool *pool;

    *eval = a->eval;
    eval->device = device;
    eval->sizes = &t->shapes[index].sizes;
    eval->ceilings = ceil && ceil->valid ? ceil : NULL;
    if ((pool = kopt__run_tune_prestarted(t, device)) != NULL)   /* its first workers */
        eval->pool = pool;
    *lo = init;
    lo->eval = eval;
    lo->objective = t->objective;
    lo->energy_s = a->energy_s;
    lo->allow_spills = a->allow_spills;
    lo->one_shot = a->one_shot;
    lo->findings = a->findings;
}
