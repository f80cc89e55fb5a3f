/*
 * The CPU stand-in slot: what the scale-out tests and dry runs evaluate with when there is
 * no GPU (KOPT_SCALE_STANDIN=MS). It sleeps MS milliseconds and returns an OK outcome whose
 * time is a hash of the job, so every rank and slot gives the same answer for the same
 * point and a test can check the store against it. With KOPT_SCALE_STANDIN_LOG it appends
 * "start RANK PID SHAPE POINT" before and "done ..." after each job (one write each, with
 * O_APPEND, so lines from several processes do not mix). KOPT_SCALE_STANDIN_COMPILE=MS adds
 * a stand-in of compiling ahead: each point's prepare sleeps MS.
 */
#include "kopt/scale.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct standin {
    double ms;
} standin;

double kopt_scale_standin_time(int shape, uint64_t point)
{
    uint64_t x = point * 0x9E3779B97F4A7C15ull ^ ((uint64_t)shape + 1) * 0xBF58476D1CE4E5B9ull;

    x ^= x >> 31;
    x *= 0x94D049BB133111EBull;
    x ^= x >> 29;
    return 0.010 + (double)(x % 100000) / 10000.0;   /* 0.01 .. 10.01 ms */
}

double kopt_scale_standin_env(void)
{
    const char *v = getenv("KOPT_SCALE_STANDIN");
    char *end;
    double ms;

    if (!v || !*v)
        return -1;
    ms = strtod(v, &end);
    return *end || ms < 0 ? -1 : ms;
}

const char *kopt_scale_standin_model(int index, char *buf, size_t n)
{
    const char *v = getenv("KOPT_SCALE_STANDIN_MODELS"), *s;
    int i = 0;

    if (!v || !*v)
        return NULL;
    for (s = v; i < index && strchr(s, ','); i++)
        s = strchr(s, ',') + 1;
    snprintf(buf, n, "%.*s", (int)strcspn(s, ","), s);
    return buf;
}

static void log_line(const char *what, const kopt_tune_where *w, const kopt_scale_job *job)
{
    const char *path = getenv("KOPT_SCALE_STANDIN_LOG");
    char line[160];
    int fd, len;

    if (!path || !*path)
        return;
    len = snprintf(line, sizeof(line), "%s %d %ld %d %llu\n", what, w->rank, (long)getpid(),
                   job->shape, (unsigned long long)job->point);
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

    ts.tv_sec = (time_t)(ms / 1000);
    ts.tv_nsec = (long)((ms - 1000.0 * (double)ts.tv_sec) * 1e6);
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static kopt_status standin_eval(void *user, kopt_ctx *ctx, const kopt_scale_job *job,
                                kopt_tune_outcome *out, int *lost)
{
    kopt_scale_slot *s = user;
    standin *st = (standin *)(s + 1);

    (void)ctx;
    *lost = 0;
    log_line("start", &s->where, job);
    sleep_ms(st->ms);
    memset(out, 0, sizeof(*out));
    out->state = KOPT_TUNE_OK;
    out->time_ms = kopt_scale_standin_time(job->shape, job->point);
    out->eval_ms = st->ms;
    snprintf(out->verdict, sizeof(out->verdict), "OK");
    out->where = s->where;
    log_line("done", &s->where, job);
    return KOPT_OK;
}

kopt_status kopt_scale_slot_standin(kopt_scale_slot **out, kopt_ctx *ctx, int index,
                                    double ms, const char *model)
{
    /* the slot and its state in one block: the slot is its own user */
    kopt_scale_slot *s = calloc(1, sizeof(*s) + sizeof(standin));

    *out = NULL;
    if (!s)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "stand-in slot");
    ((standin *)(s + 1))->ms = ms;
    s->kind = "stand-in";
    s->user = s;
    s->eval = standin_eval;
    s->close = NULL;
    s->where.known = 1;
    s->where.device = index;
    snprintf(s->where.name, sizeof(s->where.name), "%s", model ? model : "kopt stand-in");
    gethostname(s->where.host, sizeof(s->where.host) - 1);
    *out = s;
    return KOPT_OK;
}

/* ---- compiling ahead, stood in for (KOPT_SCALE_STANDIN_COMPILE=MS) ------------------------- */

static kopt_status compile_prepare(void *user, kopt_ctx *ctx, uint64_t point)
{
    (void)ctx;
    (void)point;
    sleep_ms(*(double *)user);
    return KOPT_OK;
}

kopt_status kopt_scale_standin_compiler(kopt_tune_evaluator **out, kopt_ctx *ctx)
{
    const char *v = getenv("KOPT_SCALE_STANDIN_COMPILE");
    kopt_tune_evaluator *e;
    double *ms;
    char *end;

    *out = NULL;
    if (!v || !*v)
        return KOPT_OK;
    if (!(e = calloc(1, sizeof(*e) + sizeof(double))))
        return kopt_seterr(ctx, KOPT_E_NOMEM, "stand-in compiler");
    ms = (double *)(e + 1);
    *ms = strtod(v, &end);
    if (*end || *ms < 0) {
        free(e);
        return kopt_seterr(ctx, KOPT_E_INVALID, "KOPT_SCALE_STANDIN_COMPILE=%s: want the "
                           "milliseconds each stand-in compile takes", v);
    }
    e->user = ms;
    e->prepare = compile_prepare;
    *out = e;                          /* freed whole by kopt_tune_evaluator_free */
    return KOPT_OK;
}
