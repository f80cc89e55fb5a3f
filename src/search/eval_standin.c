/* The CPU stand-in of one GPU for a search spread over GPUs (kopt optimize --gpus with the
 * scripted evaluator or $KOPT_SCALE_STANDIN, docs/scale.md): what the tests of the spread
 * search evaluate with where there is no GPU. Each evaluation sleeps the stand-in's delay,
 * then answers as the scripted evaluator, and says which "GPU" measured it; with
 * $KOPT_SCALE_STANDIN_LOG it appends "start GPU PID NODE HASH" before and "done ..." after
 * (one write each, with O_APPEND, so lines of several threads do not mix), which shows the
 * tests how many were in flight at once; getting ready beside the root (warm) logs
 * "warm-start" and "warm-done". */
#include "search_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct standin {
    kopt_search_evaluator fake;   /* the scripted evaluator that answers */
    double ms;
    kopt_tune_where where;
} standin;

static void log_line(const standin *st, const char *what, const char *tag, const char *source)
{
    const char *path = getenv("KOPT_SCALE_STANDIN_LOG");
    char line[200], hash[65];
    int fd, len;

    if (!path || !*path)
        return;
    if (source)
        kopt_sha256_hex(source, strlen(source), hash);
    else
        snprintf(hash, sizeof(hash), "-");
    len = snprintf(line, sizeof(line), "%s %d %ld %s %s\n", what, st->where.device,
                   (long)getpid(), tag, hash);
    if ((fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644)) < 0)
        return;
    if (write(fd, line, (size_t)len) != len) {
        /* a test log: a short write shows up as a failed check */
    }
    close(fd);
}

static void sleep_ms(double ms)
{
    struct timespec ts;

    if (ms <= 0)
        return;
    ts.tv_sec = (time_t)(ms / 1000);
    ts.tv_nsec = (long)((ms - 1000.0 * (double)ts.tv_sec) * 1e6);
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static kopt_status standin_evaluate(void *self, kopt_ctx *ctx, const char *source,
                                    const char *tag, kopt_search_outcome *out)
{
    standin *st = self;
    kopt_status rc;

    log_line(st, "start", tag, source);
    sleep_ms(st->ms);
    rc = st->fake.evaluate(st->fake.self, ctx, source, tag, out);
    out->where = st->where;
    log_line(st, "done", tag, source);
    return rc;
}

static kopt_status standin_tune(void *self, kopt_ctx *ctx, const char *source, const char *tag,
                                int budget, kopt_search_outcome *out)
{
    standin *st = self;
    kopt_status rc;

    log_line(st, "start", tag, source);
    sleep_ms(st->ms);
    rc = st->fake.tune(st->fake.self, ctx, source, tag, budget, out);
    out->where = st->where;
    log_line(st, "done", tag, source);
    return rc;
}

/* Gets ready as a GPU would beside the root: the delay, logged as "warm-start" and
 * "warm-done" (GPU PID - -). */
static kopt_status standin_warm(void *self, kopt_ctx *ctx)
{
    standin *st = self;

    (void)ctx;
    log_line(st, "warm-start", "-", NULL);
    sleep_ms(st->ms);
    log_line(st, "warm-done", "-", NULL);
    return KOPT_OK;
}

static void standin_close(void *self)
{
    standin *st = self;

    kopt_search_evaluator_close(&st->fake);
    free(st);
}

kopt_status kopt_search_evaluator_standin(kopt_search_evaluator *out, kopt_ctx *ctx,
                                          double ref_ms, int index, double ms,
                                          const char *model)
{
    standin *st = calloc(1, sizeof(*st));
    kopt_status rc;

    memset(out, 0, sizeof(*out));
    if (!st)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "stand-in evaluator");
    if ((rc = kopt_search_evaluator_fake(&st->fake, ctx, ref_ms)) != KOPT_OK) {
        free(st);
        return rc;
    }
    st->ms = ms > 0 ? ms : 0;
    st->where.known = 1;
    st->where.device = index;
    snprintf(st->where.name, sizeof(st->where.name), "%s", model && *model ? model :
             "kopt stand-in");
    gethostname(st->where.host, sizeof(st->where.host) - 1);
    out->api_version = KOPT_SEARCH_API_VERSION;
    out->name = "stand-in";
    out->self = st;
    out->evaluate = standin_evaluate;
    out->tune = standin_tune;
    out->warm = standin_warm;
    out->close = standin_close;
    return KOPT_OK;
}
