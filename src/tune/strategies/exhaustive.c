/*
 * src/tune/strategies/exhaustive.c: every valid point once, in enumeration order (point id
 * 0 upwards), found lazily with kopt_tune_space_next_valid and proposed in batches of the
 * size the driver asks for. No options.
 */
#include "common.h"

#include <stdlib.h>

typedef struct exhaustive {
    const kopt_tune_space *space;
    uint64_t cursor;          /* the next point id to look at */
    int done;
} exhaustive;

static kopt_status exhaustive_create(void **state, kopt_ctx *ctx, const kopt_tune_space *space,
                                     const kopt_tune_strategy_opts *opts)
{
    static const char *const known[] = {NULL};
    exhaustive *e;
    double unused;
    kopt_status rc = kopt_tune_option(ctx, opts ? opts->options : NULL, known, "", 0, &unused);

    if (rc != KOPT_OK)
        return rc;
    if (!(e = calloc(1, sizeof(*e))))
        return kopt_seterr(ctx, KOPT_E_NOMEM, "out of memory");
    e->space = space;
    *state = e;
    return KOPT_OK;
}

static int exhaustive_ask(void *state, const kopt_tune_history *h, uint64_t *points, int max)
{
    exhaustive *e = state;
    int n = 0;

    (void)h;
    while (!e->done && n < max) {
        uint64_t q;
        if (e->cursor >= e->space->npoints ||
            kopt_tune_space_next_valid(e->space, e->cursor, &q) != 0 || q < e->cursor) {
            e->done = 1;                       /* no valid point left before the end */
            break;
        }
        points[n++] = q;
        e->cursor = q + 1;
    }
    return n;
}

static void exhaustive_tell(void *state, uint64_t point, const kopt_tune_outcome *o)
{
    (void)state;
    (void)point;
    (void)o;
}

static void exhaustive_destroy(void *state)
{
    free(state);
}

const kopt_tune_strategy kopt_tune_strategy_exhaustive = {
    .name = "exhaustive",
    .summary = "every valid point in enumeration order (the ground truth for small spaces)",
    .wants_findings = 0,
    .create = exhaustive_create,
    .ask = exhaustive_ask,
    .tell = exhaustive_tell,
    .destroy = exhaustive_destroy,
    .blind = 1,
};
