/*
 * Evaluations spread over GPUs through a run (kopt_run_eval_many; kopt bench --gpus): one
 * GPU slot of a scale pool per GPU, each job a kopt_eval_run on the slot's GPU with that
 * GPU's ceilings, run on the slot's thread; the result is noted and stored by the run on
 * the caller's thread (the run is not thread-safe), then handed to the caller.
 */
#include "run_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct many {
    kopt_run *run;
    const kopt_run_eval_job *jobs;
    kopt_eval_opts opts;               /* the caller's, with the store's path */
    const int *gpus;
    kopt_ceilings *ceil;               /* per GPU of gpus */
    int ngpus;
    const char *tag;
    kopt_eval_result **res;            /* per job, set on a slot's thread */
    kopt_status *rc;
    char (*msg)[1024];
    int *gpu;
    kopt_torch_baseline **baselines;   /* per job: the store's torch.compile baselines */
    int *nbaselines;
    kopt_run_eval_done_fn done;
    void *user;
    kopt_ctx *ctx;                     /* the caller's */
} many;

static kopt_status one(void *user, kopt_ctx *ctx, int device, uint64_t job)
{
    many *m = user;
    kopt_eval_opts o = m->opts;
    int i = (int)job;

    o.device = device;
    o.ceilings = NULL;
    for (int k = 0; k < m->ngpus; k++)
        if (m->gpus[k] == device && m->ceil[k].valid)
            o.ceilings = &m->ceil[k];
    m->gpu[i] = device;
    o.torch_baselines = m->baselines[i];
    o.ntorch_baselines = m->nbaselines[i];
    m->rc[i] = kopt_eval_run(&m->res[i], ctx, m->jobs[i].prob, m->jobs[i].cand, &o);
    if (m->rc[i] != KOPT_OK)
        snprintf(m->msg[i], sizeof(m->msg[i]), "%s", kopt_errmsg(ctx));
    return KOPT_OK;                    /* a failed evaluation is the job's result */
}

static void finished(void *user, int index, const kopt_tune_outcome *o)
{
    many *m = user;
    kopt_eval_result *r = m->res[index];

    (void)o;
    m->res[index] = NULL;
    if (m->rc[index] == KOPT_OK) {
        kopt__run_note_result(m->run, m->ctx, m->gpu[index], r);
        kopt__run_store_eval(m->run, m->ctx, m->jobs[index].prob, m->jobs[index].cand, r,
                             m->tag);
    } else {
        kopt_seterr(m->ctx, m->rc[index], "%s", m->msg[index]);
    }
    m->done(m->user, index, m->gpu[index], m->rc[index], r, m->ctx);
}

kopt_status kopt_run_eval_many(kopt_run *run, kopt_ctx *ctx, const kopt_run_eval_job *jobs,
                               int n, const kopt_eval_opts *opts, const int *gpus, int ngpus,
                               const char *tag, kopt_run_eval_done_fn done, void *user)
{
    static const kopt_eval_opts init = KOPT_EVAL_OPTS_INIT;
    kopt_scale_pool *pool = NULL;
    kopt_scale_job *sj = NULL;
    kopt_scale_hooks h;
    many m;
    kopt_status rc;

    if (!run || !done || ngpus <= 0)
        return kopt_seterr(ctx, KOPT_E_INVALID, "eval many: no run, no done, or no GPU");
    memset(&m, 0, sizeof(m));
    m.run = run;
    m.jobs = jobs;
    m.opts = opts ? *opts : init;
    m.opts.db_path = run->db_path;     /* guarded from host-mode candidates */
    m.gpus = gpus;
    m.ngpus = ngpus;
    m.tag = tag;
    m.done = done;
    m.user = user;
    m.ctx = ctx;
    m.ceil = calloc((size_t)ngpus, sizeof(*m.ceil));
    m.res = calloc((size_t)(n > 0 ? n : 1), sizeof(*m.res));
    m.rc = calloc((size_t)(n > 0 ? n : 1), sizeof(*m.rc));
    m.msg = calloc((size_t)(n > 0 ? n : 1), sizeof(*m.msg));
    m.gpu = calloc((size_t)(n > 0 ? n : 1), sizeof(*m.gpu));
    m.baselines = calloc((size_t)(n > 0 ? n : 1), sizeof(*m.baselines));
    m.nbaselines = calloc((size_t)(n > 0 ? n : 1), sizeof(*m.nbaselines));
    sj = calloc((size_t)(n > 0 ? n : 1), sizeof(*sj));
    if (!m.ceil || !m.res || !m.rc || !m.msg || !m.gpu || !m.baselines || !m.nbaselines || !sj) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "eval many");
        goto cleanup;
    }
    for (int i = 0; i < n; i++) {      /* read here: the run's store is this thread's */
        kopt_eval_opts o = m.opts;
        m.baselines[i] = kopt__run_load_baselines(run, ctx, jobs[i].prob, &o);
        m.nbaselines[i] = m.baselines[i] ? o.ntorch_baselines : 0;
    }
    if ((rc = kopt_scale_pool_create(&pool, ctx)) != KOPT_OK)
        goto cleanup;
    for (int k = 0; k < ngpus; k++) {
        kopt_scale_slot *s = NULL;
        kopt_run_ceilings(run, ctx, gpus[k], &m.ceil[k]);   /* each GPU's own */
        if ((rc = kopt_scale_slot_call(&s, ctx, gpus[k], one, &m)) != KOPT_OK ||
            (rc = kopt_scale_pool_add(pool, ctx, s)) != KOPT_OK)
            goto cleanup;
    }
    for (int i = 0; i < n; i++)
        sj[i].point = (uint64_t)i;
    memset(&h, 0, sizeof(h));
    h.user = &m;
    h.done = finished;
    h.only_slot = -1;
    rc = kopt_scale_pool_run(pool, ctx, sj, n, &h);
cleanup:
    kopt_scale_pool_free(pool);        /* joins the slots' threads */
    for (int i = 0; m.res && i < n; i++)
        kopt_eval_result_free(m.res[i]);   /* results not handed over (a failed dispatch) */
    free(m.ceil);
    free(m.res);
    free(m.rc);
    free(m.msg);
    free(m.gpu);
    for (int i = 0; m.baselines && i < n; i++)
        free(m.baselines[i]);
    free(m.baselines);
    free(m.nbaselines);
    free(sj);
    return rc;
}
