/*
 * Evaluating through a run: one-shot (kopt_eval_run) or in a session (kopt_eval_session),
 * with the device's ceilings from the run, and each result stored linked to the run (a
 * session of one GPU among several evaluates on a thread of its own and commits the result
 * on the run's thread).
 */
#include "run_int.h"
#include "eval/eval_int.h"

#include <stdlib.h>

/* The caller's options with the run's ceilings (unless the caller gave its own) and the
 * store's path (guarded from host-mode candidates; eval never opens it). */
static kopt_eval_opts with_run(kopt_run *run, kopt_ctx *ctx, const kopt_eval_opts *opts)
{
    kopt_eval_opts o = KOPT_EVAL_OPTS_INIT;

    if (opts)
        o = *opts;
    if (!(o.ceilings && o.ceilings->valid))
        o.ceilings = kopt__run_known_ceilings(run, ctx, o.device);
    o.db_path = run->db_path;
    return o;
}

kopt_status kopt_run_eval(kopt_run *run, kopt_ctx *ctx, const kopt_problem *prob,
                          const kopt_candidate *cand, const kopt_eval_opts *opts,
                          const char *tag, kopt_eval_result **out)
{
    kopt_eval_opts o;
    kopt_torch_baseline *baselines;    /* the store's torch.compile baselines, or NULL */
    kopt_status rc;

    *out = NULL;
    if (!run)
        return kopt_seterr(ctx, KOPT_E_INVALID, "evaluation: no run");
    o = with_run(run, ctx, opts);
    if (kopt__run_servable(&o, prob, cand)) {      /* in kopt serve's session, stored here */
        if ((rc = kopt__run_served_eval(ctx, prob, cand, &o, out)) != KOPT_OK)
            return kopt__run_fail(run, KOPT_RUN_FAULT_KOPT, rc);
        kopt__run_note_result(run, ctx, o.device, *out);
        kopt__run_store_eval(run, ctx, prob, cand, *out, tag);
        return KOPT_OK;
    }
    baselines = kopt__run_load_baselines(run, ctx, prob, &o);
    if ((rc = kopt_eval_run(out, ctx, prob, cand, &o)) != KOPT_OK) {
        free(baselines);
        return kopt__run_fail(run, KOPT_RUN_FAULT_KOPT, rc);
    }
    free(baselines);
    kopt__run_note_result(run, ctx, o.device, *out);
    kopt__run_store_eval(run, ctx, prob, cand, *out, tag);
    return KOPT_OK;
}

struct kopt_run_session {
    kopt_run *run;                  /* borrowed */
    const kopt_problem *prob;       /* borrowed */
    kopt_eval_session *session;
    int device;
    int store;
    kopt_torch_baseline *baselines;  /* the store's torch.compile baselines (the session's
                                      * options borrow them), or NULL */
    kopt_eval_opts opts;            /* as opened (a served evaluation's options) */
};

kopt_status kopt_run_session_open(kopt_run_session **out, kopt_run *run, kopt_ctx *ctx,
                                  const kopt_problem *prob, const kopt_eval_opts *opts,
                                  int store)
{
    kopt_run_session *s;
    kopt_eval_opts o;
    kopt_status rc;

    *out = NULL;
    if (!run)
        return kopt_seterr(ctx, KOPT_E_INVALID, "evaluation session: no run");
    if (!(s = calloc(1, sizeof(*s))))
        return kopt_seterr(ctx, KOPT_E_NOMEM, "evaluation session");
    o = with_run(run, ctx, opts);
    s->opts = o;
    s->run = run;
    s->prob = prob;
    s->device = o.device;
    s->store = store;
    s->baselines = kopt__run_load_baselines(run, ctx, prob, &o);
    if ((rc = kopt_eval_session_open(&s->session, ctx, prob, &o)) != KOPT_OK) {
        free(s->baselines);
        free(s);
        return kopt__run_fail(run, KOPT_RUN_FAULT_KOPT, rc);
    }
    *out = s;
    return KOPT_OK;
}

/* One candidate through the session: in kopt serve's session when the options name a
 * server and the candidate can go there, else in this process's own. */
static kopt_status session_run(kopt_run_session *s, kopt_ctx *ctx, const kopt_candidate *cand,
                               kopt_eval_result **out)
{
    /* the options as asked (the session's own copy has its seed fixed: a served session
     * fixes its own, the same for every process that sends there) */
    if (kopt__run_servable(&s->opts, s->prob, cand))
        return kopt__run_served_eval(ctx, s->prob, cand, &s->opts, out);
    return kopt_eval_session_run(s->session, ctx, cand, out);
}

kopt_status kopt_run_session_eval(kopt_run_session *s, kopt_ctx *ctx,
                                  const kopt_candidate *cand, const char *tag,
                                  kopt_eval_result **out)
{
    kopt_status rc;

    *out = NULL;
    if (!s || !s->run)
        return kopt_seterr(ctx, KOPT_E_INVALID, "evaluation session: %s", s ? "no run attached"
                                                                            : "none");
    if ((rc = session_run(s, ctx, cand, out)) != KOPT_OK)
        return kopt__run_fail(s->run, KOPT_RUN_FAULT_KOPT, rc);
    kopt__run_note_result(s->run, ctx, s->device, *out);
    if (s->store)
        kopt__run_store_eval(s->run, ctx, s->prob, cand, *out, tag);
    return KOPT_OK;
}

kopt_status kopt_run_session_eval_detached(kopt_run_session *s, kopt_ctx *ctx,
                                           const kopt_candidate *cand, kopt_eval_result **out)
{
    *out = NULL;
    if (!s)
        return kopt_seterr(ctx, KOPT_E_INVALID, "evaluation session: none");
    return session_run(s, ctx, cand, out);
}

void kopt_run_session_commit(kopt_run_session *s, kopt_ctx *ctx, const kopt_candidate *cand,
                             const char *tag, kopt_eval_result *r)
{
    if (!s || !r)
        return;
    kopt__run_note_result(s->run, ctx, s->device, r);
    if (s->store)
        kopt__run_store_eval(s->run, ctx, s->prob, cand, r, tag);
}

void kopt_run_session_attach(kopt_run_session *s, kopt_ctx *ctx, kopt_run *run)
{
    if (!s)
        return;
    s->run = run;
    kopt__eval_session_rebind(s->session, run ? run->db_path : NULL,
                              run ? kopt__run_known_ceilings(run, ctx, s->device) : NULL);
}

kopt_eval_session *kopt_run_session_eval_session(kopt_run_session *s)
{
    return s ? s->session : NULL;
}

void kopt_run_session_close(kopt_run_session *s)
{
    if (!s)
        return;
    kopt_eval_session_close(s->session);
    free(s->baselines);
    free(s);
}
