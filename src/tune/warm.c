/*
 * Warming a tuning evaluator on a thread of its own (kopt_tune_evaluator.warm): the tune
 * driver and each GPU slot of a scale-out run start it while the first points compile and
 * wait for it before their first evaluation.
 */
#include "kopt/tune.h"

#include <pthread.h>
#include <stdlib.h>

struct kopt_tune_warming {
    pthread_t th;
    const kopt_tune_evaluator *e;
};

static void *warm_main(void *arg)
{
    const kopt_tune_warming *w = arg;
    kopt_ctx *ctx = kopt_ctx_new();

    if (ctx && w->e->warm(w->e->user, ctx) != KOPT_OK)   /* evaluate tries again and says */
        kopt_log(ctx, KOPT_LOG_DEBUG, "warming the evaluator: %s", kopt_errmsg(ctx));
    kopt_ctx_free(ctx);
    return NULL;
}

kopt_tune_warming *kopt_tune_warm_begin(const kopt_tune_evaluator *e)
{
    kopt_tune_warming *w;

    if (!e || !e->warm || !(w = calloc(1, sizeof(*w))))
        return NULL;
    w->e = e;
    if (pthread_create(&w->th, NULL, warm_main, w) != 0) {
        free(w);
        return NULL;
    }
    return w;
}

void kopt_tune_warm_end(kopt_tune_warming **w)
{
    if (!*w)
        return;
    pthread_join((*w)->th, NULL);
    free(*w);
    *w = NULL;
}
