/*
 * Scale-out of a tuning run (docs/scale.md): the pool of slots a run evaluates on when it
 * spreads, one per GPU of --gpus (each with its own live evaluator, so its own session and
 * worker, and its own ceilings), one per other MPI rank on rank 0, or CPU stand-ins
 * (KOPT_SCALE_STANDIN, for tests); each shape's evaluator over the pool; the re-timing of
 * finalists when the GPUs differ; and, on MPI ranks > 0, serving rank 0 instead of tuning.
 * Compilation is shared: every slot compiles into the one compile cache, and the driver's
 * compile-ahead threads fill it before the slots need it.
 */
#include "run_tune_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HELLO_TIMEOUT_S 120.0   /* rank 0 waits this long for the other ranks to start */
#define RETIME_FINALISTS 4      /* mixed GPUs: the best few re-timed on the first slot */

/* What every rank must be tuning: problem, template and each shape's sizes. */
static void spaces_hash(const kopt_run_tune *t, char out[72])
{
    kopt_hash *h = kopt_hash_new();
    char hex[65];

    if (!h) {
        snprintf(out, 72, "?");
        return;
    }
    for (int i = 0; i < t->nshapes; i++) {
        kopt_hash_add_str(h, t->shapes[i].key.problem_hash);
        kopt_hash_add_str(h, t->shapes[i].key.template_hash);
        kopt_hash_add_str(h, t->shapes[i].key.sizes);
    }
    kopt_hash_hex(h, hex);
    snprintf(out, 72, "%s", hex);
}

/* The local slot for device `index` of the list (a stand-in or a GPU with its ceilings). */
static kopt_status local_slot(kopt_run_tune *t, kopt_ctx *ctx, int i, kopt_scale_slot **out)
{
    kopt__run_tune_priv *P = t->priv;
    char model[64];

    if (t->standin)
        return kopt_scale_slot_standin(out, ctx, P->devs[i], P->standin_ms,
                                       kopt_scale_standin_model(P->devs[i], model,
                                                                sizeof(model)));
    /* each GPU's own ceilings (GPUs of one run may differ), measured for all at once */
    if (P->devs[i] == P->o.eval.device && P->ceilings.valid)
        P->dev_ceil[i] = P->ceilings;
    return kopt_scale_slot_gpu(out, ctx, P->devs[i]);
}

kopt_status kopt__run_tune_scale_open(kopt_run_tune *t, kopt_ctx *ctx)
{
    kopt__run_tune_priv *P = t->priv;
    kopt_scale_mpi *mpi = P->o.mpi;
    kopt_status rc;

    if (!mpi && P->o.ngpus == 0 && !t->standin)
        return KOPT_OK;                 /* one GPU: the plain path */
    spaces_hash(t, P->spaces);
    if ((rc = kopt_scale_pool_create(&P->pool, ctx)) != KOPT_OK)
        return rc;
    /* this process's own slots: its GPUs (not on MPI rank 0, which searches and stores) */
    P->ndevs = 0;
    if (!mpi) {
        if (P->o.ngpus > 0)
            for (int i = 0; i < P->o.ngpus && i < KOPT_SCALE_MAX_SLOTS; i++)
                P->devs[P->ndevs++] = P->o.gpus[i];
        else
            P->devs[P->ndevs++] = P->o.eval.device;
    }
    if (!t->standin && P->ndevs > 0)
        kopt_run_ceilings_many(P->run, ctx, P->devs, P->ndevs, P->dev_ceil);
    for (int i = 0; i < P->ndevs; i++) {
        kopt_scale_slot *s = NULL;
        if ((rc = local_slot(t, ctx, i, &s)) != KOPT_OK ||
            (rc = kopt_scale_pool_add(P->pool, ctx, s)) != KOPT_OK)
            return rc;
    }
    if (mpi && (rc = kopt_scale_mpi_add_slots(mpi, ctx, P->pool, P->spaces, HELLO_TIMEOUT_S,
                                              kopt_scale_lost_s())) != KOPT_OK)
        return rc;
    if (kopt_scale_pool_size(P->pool) == 0)
        return kopt_seterr(ctx, KOPT_E_NO_DEVICE, "scale: nothing to evaluate on (no GPU "
                           "given, no MPI rank answered)");
    if (kopt_scale_pool_mixed(P->pool, t->mixed, sizeof(t->mixed)))
        kopt_log(ctx, KOPT_LOG_WARN, "scale: the GPUs of this run differ (%s): times are only "
                 "compared within one model; the best %d of each shape are re-timed on slot 0",
                 t->mixed, RETIME_FINALISTS);
    /* the compile threads and the round size (kopt__run_tune_depth_open) grow with the
     * slots: rounds of at least 8 points per slot, so the compile wave is paid once per
     * round and slots idle less at its end */
    kopt_log(ctx, KOPT_LOG_INFO, "scale: %d slot(s) evaluate (%d local, %d MPI rank(s))",
             kopt_scale_pool_size(P->pool), P->ndevs,
             kopt_scale_pool_size(P->pool) - P->ndevs);
    return KOPT_OK;
}

kopt_status kopt__run_tune_scale_shape(kopt_run_tune *t, kopt_ctx *ctx, int index,
                                       kopt_tune_evaluator **out)
{
    kopt__run_tune_priv *P = t->priv;
    kopt_tune_evaluator *prep = NULL;
    const kopt_tune_space *space = t->shapes[index].space;
    kopt_status rc;

    *out = NULL;
    if (t->standin) {                   /* compiling ahead stood in for too, when asked */
        if ((rc = kopt_scale_standin_compiler(&prep, ctx)) != KOPT_OK)
            return rc;
        return kopt_scale_tune_evaluator(out, ctx, P->pool, index, prep);
    }
    /* every local GPU slot gets this shape's live evaluator (its own session, on its GPU) */
    for (int i = 0; i < P->ndevs; i++) {
        kopt_eval_opts *eo = malloc(sizeof(*eo));
        kopt_tune_live_opts lo;
        kopt_tune_evaluator *e = NULL;
        if (!eo)
            return kopt_seterr(ctx, KOPT_E_NOMEM, "scale");
        kopt__run_tune_live_opts(t, index, P->devs[i], &P->dev_ceil[i], eo, &lo);
        rc = kopt_tune_evaluator_live(&e, ctx, t->prob, t->tmpl, space, &lo);
        free(eo);                       /* the live evaluator keeps a copy */
        if (rc != KOPT_OK)
            return rc;
        kopt_scale_slot_gpu_set(kopt_scale_pool_slot(P->pool, i), index, e);
    }
    /* compiling ahead into the shared cache, for the GPU of this host that comes first */
    if (P->ndevs > 0 || t->has_device) {
        kopt_eval_opts eo;
        kopt_tune_live_opts lo;
        kopt__run_tune_live_opts(t, index, P->ndevs ? P->devs[0] : P->o.eval.device, NULL,
                                 &eo, &lo);
        if ((rc = kopt_tune_evaluator_live(&prep, ctx, t->prob, t->tmpl, space, &lo)) !=
            KOPT_OK)
            return rc;
    }
    return kopt_scale_tune_evaluator(out, ctx, P->pool, index, prep);
}

/* The devices the pool evaluated on, into the shape's tune_runs row. */
kopt_status kopt__run_tune_scale_record(kopt_run_tune *t, kopt_ctx *ctx, int index)
{
    kopt__run_tune_priv *P = t->priv;
    int n = kopt_scale_pool_size(P->pool);
    kopt_scale_slot_stats *st;
    kopt_buf b = KOPT_BUF_INIT;
    kopt_status rc;

    if (!P->pool || !P->run->store || !t->shapes[index].tune_run_id || n == 0)
        return KOPT_OK;
    if (!(st = calloc((size_t)n, sizeof(*st))))
        return kopt_seterr(ctx, KOPT_E_NOMEM, "scale");
    kopt_scale_pool_stats(P->pool, st);
    for (int i = 0; i < n; i++) {
        if (strcmp(st[i].kind, "mpi") == 0)
            kopt_buf_printf(&b, "%srank %d: %s %d@%s", i ? ", " : "", st[i].where.rank,
                            st[i].where.name, st[i].where.device, st[i].where.host);
        else
            kopt_buf_printf(&b, "%s%s %d: %s@%s", i ? ", " : "", st[i].kind,
                            st[i].where.device, st[i].where.name, st[i].where.host);
    }
    rc = kopt_store_tune_set_devices(P->run->store, ctx, t->shapes[index].tune_run_id,
                                     kopt_buf_cstr(&b));
    kopt_buf_free(&b);
    free(st);
    return rc;
}

/* ---- mixed GPUs: re-time the finalists on slot 0 ---------------------------------------- */

typedef struct retime {
    kopt_tune_cache *cache;
    kopt_ctx *ctx;
    const uint64_t *points;
    kopt_tune_outcome *outs;
    int *got;
    kopt_status rc;
} retime;

static void retimed(void *user, int index, const kopt_tune_outcome *o)
{
    retime *r = user;
    kopt_status rc;

    r->outs[index] = *o;
    r->got[index] = 1;
    /* the store keeps the slot-0 measurement: the one the ranking used */
    if ((rc = kopt_tune_cache_put(r->cache, r->ctx, r->points[index], o)) != KOPT_OK &&
        r->rc == KOPT_OK)
        r->rc = rc;
}

kopt_status kopt__run_tune_scale_retime(kopt_run_tune *t, kopt_ctx *ctx, int index)
{
    kopt__run_tune_priv *P = t->priv;
    kopt_run_tune_shape *sr = &t->shapes[index];
    kopt_tune_result *res = sr->res;
    kopt_scale_job jobs[RETIME_FINALISTS];
    uint64_t points[RETIME_FINALISTS];
    kopt_tune_outcome outs[RETIME_FINALISTS];
    int got[RETIME_FINALISTS], n = 0, best = -1;
    kopt_scale_hooks h;
    retime r;
    kopt_status rc;

    if (!res || !res->has_best || kopt__run_tune_stopped(t))
        return KOPT_OK;
    /* the best few OK outcomes of this run, by the objective (each point once) */
    for (int k = 0; k < RETIME_FINALISTS; k++) {
        double pick_v = INFINITY;
        long pick = -1;
        for (size_t i = 0; i < res->n; i++) {
            double v = kopt_tune_outcome_objective(&res->outcomes[i], t->objective);
            int taken = 0;
            for (int j = 0; j < n; j++)
                taken |= points[j] == res->points[i];
            if (!taken && isfinite(v) && v < pick_v) {
                pick_v = v;
                pick = (long)i;
            }
        }
        if (pick < 0)
            break;
        points[n] = res->points[pick];
        outs[n++] = res->outcomes[pick];
    }
    memset(got, 0, sizeof(got));
    for (int k = 0; k < n; k++) {
        jobs[k].shape = index;
        jobs[k].point = points[k];
        jobs[k].want_findings = 0;
    }
    memset(&h, 0, sizeof(h));
    r.cache = sr->cache;
    r.ctx = ctx;
    r.points = points;
    r.outs = outs;
    r.got = got;
    r.rc = KOPT_OK;
    h.user = &r;
    h.done = retimed;
    h.stop = P->o.stop;
    h.only_slot = 0;
    if ((rc = kopt_scale_pool_run(P->pool, ctx, jobs, n, &h)) != KOPT_OK)
        return rc;
    if (r.rc != KOPT_OK)
        return r.rc;
    for (int k = 0; k < n; k++)
        if (got[k] && isfinite(kopt_tune_outcome_objective(&outs[k], t->objective)) &&
            (best < 0 || kopt_tune_outcome_objective(&outs[k], t->objective) <
                             kopt_tune_outcome_objective(&outs[best], t->objective)))
            best = k;
    if (best >= 0) {
        res->best_point = points[best];
        res->best = outs[best];
    }
    t->retimed = n;
    kopt_log(ctx, KOPT_LOG_INFO, "scale: %d finalist(s) re-timed on slot 0", n);
    return KOPT_OK;
}

void kopt__run_tune_scale_close(kopt_run_tune *t)
{
    kopt__run_tune_priv *P = t->priv;
    int n = kopt_scale_pool_size(P->pool);

    if (!P->pool)
        return;
    free(t->slots);
    t->slots = n ? calloc((size_t)n, sizeof(*t->slots)) : NULL;
    t->nslots = t->slots ? n : 0;
    if (t->slots)
        kopt_scale_pool_stats(P->pool, t->slots);
    kopt_scale_mpi_stop_all(P->o.mpi);
    kopt_scale_pool_free(P->pool);
    P->pool = NULL;
}

/* ---- what held the GPUs back --------------------------------------------------------------- */

#define HELD_BUSY_ENOUGH 0.80          /* busy at least this much: nothing to say */

void kopt__run_tune_held_back(kopt_run_tune *t)
{
    kopt__run_tune_priv *P = t->priv;
    double elapsed = 0, busy = 0, wait = 0, total, per_round = 0;
    size_t evaluated = 0, rounds = 0;
    int n = t->nslots > 0 ? t->nslots : 1;
    const char *strategy = "";

    t->held_back[0] = '\0';
    for (int i = 0; i < t->nrun; i++) {
        const kopt_tune_result *r = t->shapes[i].res;
        if (!r)
            continue;
        elapsed += r->elapsed_s;
        wait += r->compile_wait_s;
        evaluated += r->evaluated;
        rounds += r->rounds;
        if (t->nslots == 0)
            busy += r->eval_s;          /* one GPU: the time in evaluate */
        strategy = t->shapes[i].strategy;
    }
    for (int i = 0; i < t->nslots; i++)
        busy += t->slots[i].busy_s;
    t->gpu_count = n;
    total = elapsed * n;
    if (total <= 0 || evaluated == 0)
        return;
    t->gpu_busy = busy / total;
    t->gpu_compile_wait = wait / total;
    t->gpu_idle = 1.0 - t->gpu_busy - t->gpu_compile_wait;
    if (t->gpu_idle < 0)
        t->gpu_idle = 0;
    /* a handful of evaluations per GPU says more about the start than the run */
    if (t->gpu_busy >= HELD_BUSY_ENOUGH || evaluated < (size_t)(4 * n))
        return;
    if (rounds > 0)
        per_round = (double)evaluated / (double)rounds;
    if (t->gpu_compile_wait >= t->gpu_idle)
        snprintf(t->held_back, sizeof(t->held_back), "the %s %s busy %.0f%% of the run and "
                 "waited %.0f%% for compiles: %d compile thread(s) compile each point once "
                 "(a second run finds them in the compile cache); give more with "
                 "--compile-threads if CPUs are free", n > 1 ? "GPUs" : "GPU",
                 n > 1 ? "were" : "was", 100 * t->gpu_busy, 100 * t->gpu_compile_wait,
                 P->o.compile_threads);
    else if (n > 1 && per_round > 0 && per_round < 2.0 * n)
        snprintf(t->held_back, sizeof(t->held_back), "the GPUs were busy %.0f%% of the run "
                 "and idle %.0f%% between rounds: %s proposed %.1f new point(s) a round for "
                 "%d GPUs (random, exhaustive, genetic, pso and diff_evolution propose many; "
                 "annealing and forest take --options batch=N)", 100 * t->gpu_busy,
                 100 * t->gpu_idle, strategy[0] ? strategy : "the strategy", per_round, n);
    else
        snprintf(t->held_back, sizeof(t->held_back), "the %s %s busy %.0f%% of the run and "
                 "idle %.0f%% outside evaluations and compiles (the driver, the store, the "
                 "strategy)", n > 1 ? "GPUs" : "GPU", n > 1 ? "were" : "was",
                 100 * t->gpu_busy, 100 * t->gpu_idle);
}

/* ---- MPI ranks > 0 ------------------------------------------------------------------------ */

typedef struct server {
    kopt_run_tune *t;
    kopt_scale_slot *slot;
    int device;
    kopt_ceilings ceil;
} server;

/* Before the first job of a shape: the GPU slot gets that shape's live evaluator. */
static kopt_status serve_shape(void *user, kopt_ctx *ctx, int shape)
{
    server *sv = user;
    kopt_eval_opts *eo;
    kopt_tune_live_opts lo;
    kopt_tune_evaluator *e = NULL;
    kopt_status rc;

    if (shape < 0 || shape >= sv->t->nshapes)
        return kopt_seterr(ctx, KOPT_E_INVALID, "mpi: rank 0 asks for shape %d of %d",
                           shape + 1, sv->t->nshapes);
    if (sv->t->standin)
        return KOPT_OK;
    if (!(eo = malloc(sizeof(*eo))))
        return kopt_seterr(ctx, KOPT_E_NOMEM, "mpi");
    kopt__run_tune_live_opts(sv->t, shape, sv->device, &sv->ceil, eo, &lo);
    rc = kopt_tune_evaluator_live(&e, ctx, sv->t->prob, sv->t->tmpl, sv->t->shapes[shape].space,
                                  &lo);
    free(eo);
    if (rc == KOPT_OK)
        kopt_scale_slot_gpu_set(sv->slot, shape, e);
    return rc;
}

kopt_status kopt__run_tune_serve(kopt_run_tune *t, kopt_ctx *ctx)
{
    kopt__run_tune_priv *P = t->priv;
    kopt_scale_mpi *mpi = P->o.mpi;
    int local = kopt_scale_mpi_local_rank(mpi), count = 0;
    server sv;
    kopt_device_info info;
    char model[64];
    kopt_status rc;

    memset(&sv, 0, sizeof(sv));
    sv.t = t;
    t->mpi_rank = kopt_scale_mpi_rank(mpi);
    spaces_hash(t, P->spaces);
    /* the rank's GPU: the local rank's turn in --gpus (default: every GPU of the host) */
    if (P->o.ngpus > 0)
        sv.device = P->o.gpus[local % P->o.ngpus];
    else if (!t->standin && kopt_device_nvml(NULL, 0, &info, &count) == KOPT_OK && count > 0)
        sv.device = local % count;
    else
        sv.device = local;
    if (t->standin) {
        rc = kopt_scale_slot_standin(&sv.slot, ctx, sv.device, P->standin_ms,
                                     kopt_scale_standin_model(sv.device, model, sizeof(model)));
    } else {
        kopt_run_ceilings(P->run, ctx, sv.device, &sv.ceil);
        rc = kopt_scale_slot_gpu(&sv.slot, ctx, sv.device);
    }
    if (rc == KOPT_OK) {
        sv.slot->where.rank = t->mpi_rank;
        rc = kopt_scale_mpi_serve(mpi, ctx, P->spaces, sv.slot, serve_shape, &sv, &t->served);
    }
    kopt_scale_slot_free(sv.slot);
    if (rc != KOPT_OK)
        return kopt__run_fail(P->run, KOPT_RUN_FAULT_KOPT, rc);
    kopt_log(ctx, KOPT_LOG_INFO, "mpi: rank %d served %d evaluation(s) on %s %d", t->mpi_rank,
             t->served, t->standin ? "stand-in" : "GPU", sv.device);
    return KOPT_OK;
}
