/*
 * The replay evaluator (tune.h): outcomes come from a recorded cache instead of the GPU,
 * so any strategy can run against real measurements on a machine without one. A point the
 * recording lacks is an error naming it, unless the space itself prunes it (a complete
 * recording holds every valid point). Also the generic evaluator destructor.
 */
#include "kopt/tune.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct replay {
    const kopt_tune_space *space;
    const kopt_tune_cache *recorded;
} replay;

static kopt_status replay_evaluate(void *user, kopt_ctx *ctx, uint64_t point, int want_findings,
                                   kopt_tune_outcome *out)
{
    replay *r = user;
    const kopt_tune_outcome *o = kopt_tune_cache_get(r->recorded, point);
    char why[256];
    char *label;

    (void)want_findings;   /* recorded findings come as they were recorded */
    if (o) {
        *out = *o;
        return KOPT_OK;
    }
    memset(out, 0, sizeof(*out));
    if (!kopt_tune_space_valid(r->space, point, why, sizeof(why))) {
        out->state = KOPT_TUNE_PRUNED;
        snprintf(out->message, sizeof(out->message), "%s", why);
        return KOPT_OK;
    }
    label = kopt_tune_space_label(r->space, point);
    kopt_seterr(ctx, KOPT_E_NOT_FOUND, "replay: %s is not in the recorded cache (a replay "
                "needs a complete recording of every valid point)", label ? label : "a point");
    free(label);
    return KOPT_E_NOT_FOUND;
}

static void replay_destroy(void *user)
{
    free(user);
}

kopt_status kopt_tune_evaluator_replay(kopt_tune_evaluator **out, kopt_ctx *ctx,
                                       const kopt_tune_space *space,
                                       const kopt_tune_cache *recorded)
{
    kopt_tune_evaluator *e = calloc(1, sizeof(*e));
    replay *r = calloc(1, sizeof(*r));

    *out = NULL;
    if (!e || !r) {
        free(e);
        free(r);
        return kopt_seterr(ctx, KOPT_E_NOMEM, "replay evaluator");
    }
    r->space = space;
    r->recorded = recorded;
    e->user = r;
    e->evaluate = replay_evaluate;
    e->destroy = replay_destroy;
    *out = e;
    return KOPT_OK;
}

void kopt_tune_evaluator_free(kopt_tune_evaluator *e)
{
    if (!e)
        return;
    if (e->destroy)
        e->destroy(e->user);
    free(e);
}
