/*
 * Evaluation sessions: many candidates against one problem (docs/internals/eval.md,
 * "Sessions"). kopt_eval_session_open fixes the seed; each kopt_eval_session_run is one
 * kopt__eval_core (eval.c) that keeps, in struct kopt_eval_session (eval_int.h), the
 * reference's outputs, the serving worker and the ceilings; _warm starts the first run's
 * workers ahead (or takes them from the pool the open was given), and _close ends every
 * worker the session still holds.
 */
#include "eval_int.h"
#include "worker_int.h"

#include <stdlib.h>

kopt_status kopt_eval_session_open(kopt_eval_session **out, kopt_ctx *ctx,
                                   const kopt_problem *prob, const kopt_eval_opts *opts)
{
    kopt_eval_opts dflt = KOPT_EVAL_OPTS_INIT;
    kopt_eval_session *s;

    *out = NULL;
    if (!prob)
        return kopt_seterr(ctx, KOPT_E_INVALID, "evaluation session: no problem");
    if (!(s = calloc(1, sizeof(*s))))
        return kopt_seterr(ctx, KOPT_E_NOMEM, "evaluation session");
    s->prob = prob;
    s->opts = opts ? *opts : dflt;
    if (!s->opts.seed)
        s->opts.seed = kopt__fresh_seed();
    s->handed = s->opts.pool;          /* the first workers' source, nothing more */
    s->opts.pool = NULL;
    if (s->opts.ceilings && s->opts.ceilings->valid) {
        s->ceilings = *s->opts.ceilings;
        s->asked_ceilings = 1;
    }
    *out = s;
    return KOPT_OK;
}

kopt_status kopt_eval_session_run(kopt_eval_session *s, kopt_ctx *ctx,
                                  const kopt_candidate *cand, kopt_eval_result **out)
{
    *out = NULL;
    if (!s || !cand)
        return kopt_seterr(ctx, KOPT_E_INVALID, "evaluation session: no candidate");
    return kopt__eval_core(out, ctx, s->prob, cand, &s->opts, s);
}

/* The session's options after the run it was opened with is gone (kopt_run_session_attach):
 * the store its host-mode candidates may not touch, and the device's ceilings (the
 * session's own copy once it has them, else `ceilings`, borrowed like the open's). */
void kopt__eval_session_rebind(kopt_eval_session *s, const char *db_path,
                               const kopt_ceilings *ceilings)
{
    if (!s)
        return;
    s->opts.db_path = db_path;
    if (s->asked_ceilings)
        s->opts.ceilings = s->ceilings.valid ? &s->ceilings : NULL;
    else
        s->opts.ceilings = ceilings && ceilings->valid ? ceilings : NULL;
}

void kopt_eval_session_counts(const kopt_eval_session *s, int *runs, int *workers)
{
    if (runs)
        *runs = s ? s->runs : 0;
    if (workers)
        *workers = s ? s->workers : 0;
}

kopt_status kopt_eval_session_warm(kopt_eval_session *s, kopt_ctx *ctx)
{
    kopt_device_info nvml;
    kopt_status rc;

    if (!s)
        return kopt_seterr(ctx, KOPT_E_INVALID, "evaluation session: none to warm");
    if (s->runs > 0 || s->opts.no_prestart)
        return KOPT_OK;                /* nothing to start ahead */
    if (s->prob->ref_torch)            /* its workers fork from the zygote: torch imported */
        return kopt__torch_session_warm(ctx, s);
    if (kopt_device_nvml(NULL, s->opts.device, &nvml, NULL) != KOPT_OK)
        return KOPT_OK;                /* no GPU to start them on */
    /* workers started even earlier, by the caller's pool (a tuning run starts them before
     * it measures the ceilings), first */
    if (!s->pre_ref)
        s->pre_ref = kopt__eval_pool_hand_over(s->handed, s->opts.device);
    if (!s->pre_cand)
        s->pre_cand = kopt__eval_pool_hand_over(s->handed, s->opts.device);
    s->handed = NULL;
    if (!s->pre_ref && (rc = kopt__worker_prestart(ctx, s->opts.device, &s->pre_ref)) != KOPT_OK)
        return rc;
    if (!s->pre_cand &&
        (rc = kopt__worker_prestart(ctx, s->opts.device, &s->pre_cand)) != KOPT_OK)
        return rc;
    return KOPT_OK;
}

void kopt_eval_session_close(kopt_eval_session *s)
{
    if (!s)
        return;
    kopt__worker_proc_release(s->pre_ref);
    kopt__worker_proc_release(s->pre_cand);
    kopt__worker_proc_free(s->cand);
    for (int a = 0; a < KOPT_AHEAD_MAX; a++)
        kopt__worker_proc_release(s->ahead[a]);
    kopt__worker_proc_release(s->ref_proc);
    kopt__worker_run_free(&s->ref_run);
    kopt__zygote_free(s->zygote);      /* after its workers: their ends were its to report */
    free(s);
}
