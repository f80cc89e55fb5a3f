/* A search evaluator over several others, one per GPU (kopt optimize --gpus, docs/scale.md),
 * spread by a scale pool (kopt/scale.h): each GPU's evaluator is a slot of the pool with a
 * thread of its own, so it keeps its own long-lived evaluation session; a batch's jobs go to
 * the first free slot, and each outcome comes back on the caller's thread, after the
 * evaluator's commit (where the live one stores it through the run), as it arrives. A single
 * evaluation runs on the first GPU, and the first one (the root) has every other GPU
 * get ready meanwhile (its evaluator's warm: a PyTorch problem's reference run and workers),
 * so no GPU pays for that in the first steps; tunes and compiling ahead go to the first
 * GPU's evaluator on the caller's thread. */
#include "search_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct spread spread;

typedef struct member {       /* a slot's user: which evaluator it runs */
    spread *sp;
    int index;
} member;

struct spread {
    kopt_scale_pool *pool;
    kopt_search_evaluator *evs;   /* one per slot, owned */
    kopt_tune_where *where;       /* each slot's GPU, owned */
    int n;
    /* the batch being run: set on the caller's thread before the pool runs it; slot
     * threads write only their own job's entries */
    const kopt_search_job *jobs;
    kopt_search_outcome *outs;
    int *slot_of;
    kopt_search_done_fn done;
    void *user;
    kopt_ctx *ctx;                /* the caller's */
    kopt_status rc;               /* the first commit that failed */
    int warmed;                   /* the others were asked to get ready (once) */
    double warm_ms[KOPT_SCALE_MAX_SLOTS];      /* each slot's warm, for the log */
    char warm_err[KOPT_SCALE_MAX_SLOTS][160];  /* "" ready */
};

/* A job of a batch that only gets its slot ready (see spread_evaluate). */
static int is_warm(const kopt_search_job *job)
{
    return job->source == NULL;
}

/* On a slot's thread: job `point` of the batch with this slot's evaluator. */
static kopt_status member_eval(void *user, kopt_ctx *ctx, const kopt_scale_job *job,
                               kopt_tune_outcome *out, int *lost)
{
    member *m = user;
    spread *sp = m->sp;
    kopt_search_evaluator *ev = &sp->evs[m->index];
    int j = (int)job->point;

    *lost = 0;
    memset(out, 0, sizeof(*out));
    out->state = KOPT_TUNE_OK;
    out->where = sp->where[m->index];
    sp->slot_of[j] = m->index;
    if (is_warm(&sp->jobs[j])) {   /* not ready is no failure: its first evaluation pays */
        const double t0 = kopt_now_ms();
        if (ev->warm(ev->self, ctx) != KOPT_OK)
            snprintf(sp->warm_err[m->index], sizeof(sp->warm_err[0]), "%s", kopt_errmsg(ctx));
        sp->warm_ms[m->index] = kopt_now_ms() - t0;
        return KOPT_OK;
    }
    return ev->evaluate(ev->self, ctx, sp->jobs[j].source, sp->jobs[j].tag, &sp->outs[j]);
}

/* On the caller's thread: the evaluator's commit, then the outcome to the caller. */
static void member_done(void *user, int index, const kopt_tune_outcome *o)
{
    spread *sp = user;
    kopt_search_outcome *out = &sp->outs[index];
    kopt_search_evaluator *ev = &sp->evs[sp->slot_of[index]];
    kopt_status rc;

    if (is_warm(&sp->jobs[index])) {
        const int s = sp->slot_of[index];
        if (sp->warm_err[s][0])
            kopt_log(sp->ctx, KOPT_LOG_INFO, "optimize: GPU %d not made ready ahead (%.0f ms): "
                     "%s", sp->where[s].device, sp->warm_ms[s], sp->warm_err[s]);
        else
            kopt_log(sp->ctx, KOPT_LOG_INFO, "optimize: GPU %d made ready beside the root "
                     "(its reference evaluated, result dropped) in %.0f ms",
                     sp->where[s].device, sp->warm_ms[s]);
        return;
    }
    if (ev->commit && (rc = ev->commit(ev->self, sp->ctx, sp->jobs[index].tag, out)) !=
                          KOPT_OK && sp->rc == KOPT_OK)
        sp->rc = rc;
    (void)o;   /* where: only what the evaluator measured on (none for a compile error) */
    sp->done(sp->user, index, out);
    kopt_search_outcome_clear(out);
}

static kopt_status run_batch(spread *sp, kopt_ctx *ctx, const kopt_search_job *jobs, int n,
                             kopt_search_done_fn done, void *user, const int *slot_of,
                             void (*meanwhile)(void *), void *mw_user)
{
    kopt_scale_job *sj = calloc((size_t)n, sizeof(*sj));
    kopt_scale_hooks h;
    kopt_status rc;

    sp->outs = calloc((size_t)n, sizeof(*sp->outs));
    sp->slot_of = calloc((size_t)n, sizeof(*sp->slot_of));
    if (!sj || !sp->outs || !sp->slot_of) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "spread evaluation");
        goto out;
    }
    for (int i = 0; i < n; i++)
        sj[i].point = (uint64_t)i;
    sp->jobs = jobs;
    sp->done = done;
    sp->user = user;
    sp->ctx = ctx;
    sp->rc = KOPT_OK;
    memset(&h, 0, sizeof(h));
    h.user = sp;
    h.done = member_done;
    h.only_slot = -1;
    h.slot_of = slot_of;
    rc = kopt_scale_pool_run_meanwhile(sp->pool, ctx, sj, n, &h, meanwhile, mw_user);
    if (rc == KOPT_OK)
        rc = sp->rc;
out:
    for (int i = 0; sp->outs && i < n; i++)   /* outcomes not handed over (a failed batch) */
        kopt_search_outcome_clear(&sp->outs[i]);
    free(sp->outs);
    free(sp->slot_of);
    free(sj);
    sp->outs = NULL;
    sp->slot_of = NULL;
    sp->jobs = NULL;
    return rc;
}

static kopt_status spread_many(void *self, kopt_ctx *ctx, const kopt_search_job *jobs, int n,
                               kopt_search_done_fn done, void *user)
{
    return n > 0 ? run_batch(self, ctx, jobs, n, done, user, NULL, NULL, NULL) : KOPT_OK;
}

kopt_status kopt__search_spread_many(kopt_search_evaluator *ev, kopt_ctx *ctx,
                                     const kopt_search_job *jobs, int n,
                                     kopt_search_done_fn done, void *user,
                                     void (*meanwhile)(void *), void *mw_user)
{
    if (ev->evaluate_many == spread_many && n > 0)
        return run_batch(ev->self, ctx, jobs, n, done, user, NULL, meanwhile, mw_user);
    if (meanwhile)
        meanwhile(mw_user);
    return ev->evaluate_many(ev->self, ctx, jobs, n, done, user);
}

typedef struct one {
    kopt_search_outcome *out;
    int got;
} one;

static void one_done(void *user, int index, kopt_search_outcome *out)
{
    one *o = user;

    (void)index;
    *o->out = *out;                 /* takes its owned parts */
    memset(out, 0, sizeof(*out));
    o->got = 1;
}

static kopt_status spread_evaluate(void *self, kopt_ctx *ctx, const char *source,
                                   const char *tag, kopt_search_outcome *out)
{
    spread *sp = self;
    const char *off = getenv("KOPT_OPTIMIZE_WARM");   /* "0": no warm (to measure it) */
    kopt_search_job jobs[KOPT_SCALE_MAX_SLOTS];
    int slot_of[KOPT_SCALE_MAX_SLOTS], n = 1;
    one o = {out, 0};
    kopt_status rc;

    memset(out, 0, sizeof(*out));
    /* alone (the reference, a start kernel): on the first GPU, whose evaluator compiles
     * ahead for the others */
    jobs[0].source = source;
    jobs[0].tag = tag;
    slot_of[0] = 0;
    /* the first time (the root): every other GPU gets ready meanwhile, on its own thread,
     * so the first steps do not wait for each GPU's reference run and workers */
    if (off && strcmp(off, "0") == 0)
        sp->warmed = 1;
    for (int i = 1; !sp->warmed && i < sp->n && i < KOPT_SCALE_MAX_SLOTS; i++)
        if (sp->evs[i].warm) {
            jobs[n].source = jobs[n].tag = NULL;
            slot_of[n++] = i;
        }
    sp->warmed = 1;
    if ((rc = run_batch(sp, ctx, jobs, n, one_done, &o, slot_of, NULL, NULL)) == KOPT_OK && !o.got)
        rc = kopt_seterr(ctx, KOPT_E_ERROR, "%s: no outcome", tag);
    return rc;
}

static kopt_status spread_tune(void *self, kopt_ctx *ctx, const char *source, const char *tag,
                               int budget, kopt_search_outcome *out)
{
    spread *sp = self;
    /* where: what the tuning's evaluator measured on, if anything (not a failed compile) */
    return sp->evs[0].tune(sp->evs[0].self, ctx, source, tag, budget, out);
}

static void spread_prepare(void *self, kopt_ctx *ctx, const char *const *sources,
                           const char *const *tags, int n)
{
    spread *sp = self;

    sp->evs[0].prepare(sp->evs[0].self, ctx, sources, tags, n);
}

static void spread_close(void *self)
{
    spread *sp = self;

    if (!sp)
        return;
    kopt_scale_pool_free(sp->pool);   /* joins the slots' threads first */
    for (int i = 0; sp->evs && i < sp->n; i++)
        kopt_search_evaluator_close(&sp->evs[i]);
    free(sp->evs);
    free(sp->where);
    free(sp);
}

kopt_status kopt_search_evaluator_spread(kopt_search_evaluator *out, kopt_ctx *ctx,
                                         kopt_search_evaluator *evs,
                                         const kopt_tune_where *where, int n)
{
    spread *sp = calloc(1, sizeof(*sp));
    kopt_status rc;

    memset(out, 0, sizeof(*out));
    if (!sp || n <= 0 || !(sp->evs = calloc((size_t)n, sizeof(*sp->evs))) ||
        !(sp->where = calloc((size_t)n, sizeof(*sp->where)))) {
        for (int i = 0; i < n; i++)
            kopt_search_evaluator_close(&evs[i]);
        if (sp) {
            free(sp->evs);
            free(sp);
        }
        return kopt_seterr(ctx, n <= 0 ? KOPT_E_INVALID : KOPT_E_NOMEM, "spread evaluator");
    }
    sp->n = n;
    for (int i = 0; i < n; i++) {   /* taken now: closed with the spread evaluator */
        sp->evs[i] = evs[i];
        sp->where[i] = where[i];
        memset(&evs[i], 0, sizeof(evs[i]));
    }
    if ((rc = kopt_scale_pool_create(&sp->pool, ctx)) != KOPT_OK)
        goto fail;
    for (int i = 0; i < n; i++) {
        kopt_scale_slot *slot = calloc(1, sizeof(*slot));
        member *m = calloc(1, sizeof(*m));
        if (!slot || !m) {
            free(slot);
            free(m);
            rc = kopt_seterr(ctx, KOPT_E_NOMEM, "spread evaluator");
            goto fail;
        }
        m->sp = sp;
        m->index = i;
        slot->kind = strcmp(sp->evs[i].name ? sp->evs[i].name : "", "stand-in") == 0 ?
                     "stand-in" : "gpu";
        slot->user = m;
        slot->eval = member_eval;
        slot->close = free;
        slot->where = sp->where[i];
        if ((rc = kopt_scale_pool_add(sp->pool, ctx, slot)) != KOPT_OK)   /* takes the slot */
            goto fail;
    }
    out->api_version = KOPT_SEARCH_API_VERSION;
    out->name = sp->evs[0].name;
    out->self = sp;
    out->evaluate = spread_evaluate;
    out->evaluate_many = spread_many;
    out->tune = sp->evs[0].tune ? spread_tune : NULL;
    out->prepare = sp->evs[0].prepare ? spread_prepare : NULL;
    out->close = spread_close;
    return KOPT_OK;
fail:
    spread_close(sp);
    return rc;
}
