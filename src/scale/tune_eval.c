/*
 * A tuning evaluator over a scale pool (kopt/scale.h): the driver's evaluate_many hands a
 * round's new points to the pool, each to the first free slot, and every outcome is given
 * back to the driver as it arrives. Compiles ahead through `prepare` (one live evaluator
 * writing the shared compile cache), so the slots find their points compiled.
 */
#include "kopt/scale.h"

#include <stdlib.h>
#include <string.h>

typedef struct scale_eval {
    kopt_scale_pool *pool;           /* borrowed */
    int shape;
    kopt_tune_evaluator *prep;       /* owned; NULL: no compiling ahead */
} scale_eval;

typedef struct batch_ctx {
    const uint64_t *points;
    const kopt_tune_batch *b;
} batch_ctx;

static void on_ready(void *user, int index)
{
    batch_ctx *c = user;
    if (c->b->ready)
        c->b->ready(c->b->user, c->points[index]);
}

static void on_done(void *user, int index, const kopt_tune_outcome *o)
{
    batch_ctx *c = user;
    c->b->done(c->b->user, index, o);
}

static kopt_status se_many(void *user, kopt_ctx *ctx, const uint64_t *points, int n,
                           int want_findings, const kopt_tune_batch *b)
{
    scale_eval *se = user;
    kopt_scale_job *jobs = calloc((size_t)n, sizeof(*jobs));
    kopt_scale_hooks h;
    batch_ctx c = {points, b};
    kopt_status rc;

    if (!jobs)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "scale: jobs");
    for (int i = 0; i < n; i++) {
        jobs[i].shape = se->shape;
        jobs[i].point = points[i];
        jobs[i].want_findings = want_findings;
    }
    memset(&h, 0, sizeof(h));
    h.user = &c;
    h.ready = on_ready;
    h.done = on_done;
    h.stop = b->stop;
    h.only_slot = -1;
    rc = kopt_scale_pool_run(se->pool, ctx, jobs, n, &h);
    free(jobs);
    return rc;
}

typedef struct one_ctx {
    kopt_tune_outcome *out;
    int got;
} one_ctx;

static void one_done(void *user, int index, const kopt_tune_outcome *o)
{
    one_ctx *c = user;
    (void)index;
    *c->out = *o;
    c->got = 1;
}

static kopt_status se_one(void *user, kopt_ctx *ctx, uint64_t point, int want_findings,
                          kopt_tune_outcome *out)
{
    scale_eval *se = user;
    kopt_scale_job job = {se->shape, point, want_findings};
    one_ctx c = {out, 0};
    kopt_scale_hooks h;
    kopt_status rc;

    memset(&h, 0, sizeof(h));
    h.user = &c;
    h.done = one_done;
    h.only_slot = -1;
    if ((rc = kopt_scale_pool_run(se->pool, ctx, &job, 1, &h)) == KOPT_OK && !c.got)
        rc = kopt_seterr(ctx, KOPT_E_ERROR, "scale: no outcome");
    return rc;
}

static kopt_status se_prepare(void *user, kopt_ctx *ctx, uint64_t point)
{
    scale_eval *se = user;
    return se->prep->prepare(se->prep->user, ctx, point);
}

static void se_destroy(void *user)
{
    scale_eval *se = user;

    if (!se)
        return;
    kopt_tune_evaluator_free(se->prep);
    free(se);
}

kopt_status kopt_scale_tune_evaluator(kopt_tune_evaluator **out, kopt_ctx *ctx,
                                      kopt_scale_pool *pool, int shape,
                                      kopt_tune_evaluator *prepare)
{
    kopt_tune_evaluator *e = calloc(1, sizeof(*e));
    scale_eval *se = calloc(1, sizeof(*se));

    *out = NULL;
    if (!e || !se) {
        free(e);
        free(se);
        kopt_tune_evaluator_free(prepare);
        return kopt_seterr(ctx, KOPT_E_NOMEM, "scale evaluator");
    }
    se->pool = pool;
    se->shape = shape;
    se->prep = prepare;
    e->user = se;
    e->prepare = prepare && prepare->prepare ? se_prepare : NULL;
    e->evaluate = se_one;
    e->evaluate_many = se_many;
    e->destroy = se_destroy;
    *out = e;
    return KOPT_OK;
}
