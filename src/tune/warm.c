/*
 * Warming a tuning evaluator (kopt_tune_evaluator.warm) on the caller's thread: the tune
 * driver before its first round, and the caller that sets each GPU slot's evaluator. Not
 * on a thread of its own: the workers warm starts are killed by Linux when the thread that
 * started them ends (their parent-death signal is the thread's, src/eval/spawn.c), so a
 * short-lived warming thread killed them before their first job. Warm only forks the
 * workers; each makes its CUDA context in its own process meanwhile.
 */
#include "kopt/tune.h"

void kopt_tune_warm(const kopt_tune_evaluator *e)
{
    kopt_ctx *ctx;

    if (!e || !e->warm || !(ctx = kopt_ctx_new()))
        return;
    if (e->warm(e->user, ctx) != KOPT_OK)   /* evaluate tries again and says */
        kopt_log(ctx, KOPT_LOG_DEBUG, "warming the evaluator: %s", kopt_errmsg(ctx));
    kopt_ctx_free(ctx);
}
