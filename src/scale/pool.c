/*
 * The dispatcher (kopt/scale.h): one thread per slot, one queue of job indices. A batch is
 * put in the queue; every idle slot thread takes the head (so the first free slot gets the
 * next job), evaluates it with its own ctx, and appends the outcome to a completion list
 * that the caller's thread drains, calling hooks->done there (the store is written from
 * the caller's thread only). A slot that reports itself lost puts its job back at the
 * head of the queue and takes no more; a slot's error stops the batch.
 */
#include "kopt/scale.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { JOB_QUEUED = 0, JOB_RUNNING, JOB_DONE };

typedef struct slot_rec {
    struct kopt_scale_pool *pool;
    int index;
    kopt_scale_slot *slot;
    pthread_t th;
    int lost;
    kopt_scale_slot_stats st;
} slot_rec;

struct kopt_scale_pool {
    pthread_mutex_t mu;
    pthread_cond_t work_cv;          /* slots wait here for a job */
    pthread_cond_t done_cv;          /* the caller waits here for outcomes */
    slot_rec *slots[KOPT_SCALE_MAX_SLOTS];
    int nslots, alive, shutdown;
    /* the batch being run (jobs == NULL: none) */
    const kopt_scale_job *jobs;
    const kopt_scale_hooks *hooks;
    int n;
    int *queue, head, tail;          /* queue[head..tail): job indices; requeue at head */
    unsigned char *state;
    kopt_tune_outcome *outs;
    int *finished, nfinished;        /* completion order, drained by the caller */
    int inflight, stopping;
    kopt_status err;
    char errmsg[1024];
};

static void drop_log(kopt_log_level level, const char *msg, void *user)
{
    (void)level;
    (void)user;
    fprintf(stderr, "kopt: %s\n", msg);
}

/* A job for slot r, or -1 to keep waiting. */
static int take(kopt_scale_pool *p, const slot_rec *r)
{
    if (!p->jobs || p->stopping || r->lost || p->head == p->tail)
        return -1;
    if (p->hooks->only_slot >= 0 && p->hooks->only_slot != r->index)
        return -1;
    if (p->hooks->slot_of) {   /* the first queued job this slot may run, the order kept */
        for (int i = p->head; i < p->tail; i++) {
            const int j = p->queue[i], s = p->hooks->slot_of[j];
            if (s < 0 || s == r->index) {
                memmove(&p->queue[p->head + 1], &p->queue[p->head],
                        (size_t)(i - p->head) * sizeof(*p->queue));
                p->head++;
                return j;
            }
        }
        return -1;
    }
    return p->queue[p->head++];
}

/* A queued job bound to a slot that was lost (it would wait for ever): that slot, or -1. */
static int bound_to_lost(const kopt_scale_pool *p)
{
    for (int i = p->head; p->hooks->slot_of && i < p->tail; i++) {
        const int s = p->hooks->slot_of[p->queue[i]];
        if (s >= 0 && p->slots[s]->lost)
            return s;
    }
    return -1;
}

static void *slot_main(void *arg)
{
    slot_rec *r = arg;
    kopt_scale_pool *p = r->pool;
    kopt_ctx *ctx = kopt_ctx_new();

    if (ctx)
        kopt_log_set(ctx, drop_log, NULL, KOPT_LOG_WARN);
    pthread_mutex_lock(&p->mu);
    for (;;) {
        kopt_tune_outcome o;
        const kopt_scale_job *job;
        int j, lost = 0;
        double t0;
        kopt_status rc;

        while (!p->shutdown && (j = take(p, r)) < 0)
            pthread_cond_wait(&p->work_cv, &p->mu);
        if (p->shutdown)
            break;
        p->state[j] = JOB_RUNNING;
        p->inflight++;
        job = &p->jobs[j];
        pthread_mutex_unlock(&p->mu);

        if (p->hooks->ready)
            p->hooks->ready(p->hooks->user, j);
        memset(&o, 0, sizeof(o));
        t0 = kopt_now_ms();
        rc = ctx ? r->slot->eval(r->slot->user, ctx, job, &o, &lost) : KOPT_E_NOMEM;

        pthread_mutex_lock(&p->mu);
        r->st.busy_s += (kopt_now_ms() - t0) / 1000.0;
        if (rc != KOPT_OK) {
            if (p->err == KOPT_OK) {
                p->err = rc;
                snprintf(p->errmsg, sizeof(p->errmsg), "%s: %s", r->slot->kind,
                         ctx ? kopt_errmsg(ctx) : "out of memory");
            }
            p->stopping = 1;
            p->state[j] = JOB_QUEUED;
        } else if (lost) {               /* back to the head of the queue, for another slot */
            r->lost = 1;
            r->st.lost = 1;
            r->st.requeued++;
            p->alive--;
            p->queue[--p->head] = j;
            p->state[j] = JOB_QUEUED;
        } else {
            if (!o.where.known)
                o.where = r->slot->where;
            r->st.jobs++;
            p->outs[j] = o;
            p->state[j] = JOB_DONE;
            p->finished[p->nfinished++] = j;
        }
        p->inflight--;
        pthread_cond_broadcast(&p->work_cv);
        pthread_cond_broadcast(&p->done_cv);
    }
    pthread_mutex_unlock(&p->mu);
    kopt_ctx_free(ctx);
    return NULL;
}

kopt_status kopt_scale_pool_create(kopt_scale_pool **out, kopt_ctx *ctx)
{
    kopt_scale_pool *p = calloc(1, sizeof(*p));

    *out = NULL;
    if (!p)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "scale pool");
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->work_cv, NULL);
    pthread_cond_init(&p->done_cv, NULL);
    *out = p;
    return KOPT_OK;
}

void kopt_scale_slot_free(kopt_scale_slot *s)
{
    if (!s)
        return;
    if (s->close)
        s->close(s->user);
    free(s);
}

kopt_status kopt_scale_pool_add(kopt_scale_pool *p, kopt_ctx *ctx, kopt_scale_slot *slot)
{
    slot_rec *r;

    if (!slot)
        return kopt_seterr(ctx, KOPT_E_INVALID, "scale pool: no slot");
    if (p->nslots == KOPT_SCALE_MAX_SLOTS) {
        kopt_scale_slot_free(slot);
        return kopt_seterr(ctx, KOPT_E_INVALID, "scale pool: at most %d slots",
                           KOPT_SCALE_MAX_SLOTS);
    }
    if (!(r = calloc(1, sizeof(*r)))) {
        kopt_scale_slot_free(slot);
        return kopt_seterr(ctx, KOPT_E_NOMEM, "scale pool");
    }
    r->pool = p;
    r->index = p->nslots;
    r->slot = slot;
    snprintf(r->st.kind, sizeof(r->st.kind), "%s", slot->kind);
    r->st.where = slot->where;
    pthread_mutex_lock(&p->mu);
    if (pthread_create(&r->th, NULL, slot_main, r) != 0) {
        pthread_mutex_unlock(&p->mu);
        kopt_scale_slot_free(slot);
        free(r);
        return kopt_seterr(ctx, KOPT_E_ERROR, "scale pool: cannot start a thread");
    }
    p->slots[p->nslots++] = r;
    p->alive++;
    pthread_mutex_unlock(&p->mu);
    return KOPT_OK;
}

int kopt_scale_pool_size(const kopt_scale_pool *p)
{
    return p ? p->nslots : 0;
}

int kopt_scale_pool_alive(const kopt_scale_pool *p)
{
    return p ? p->alive : 0;
}

kopt_scale_slot *kopt_scale_pool_slot(kopt_scale_pool *p, int i)
{
    return p && i >= 0 && i < p->nslots ? p->slots[i]->slot : NULL;
}

/* Wait on done_cv at most 50 ms (so a stop request is seen). */
static void wait_done(kopt_scale_pool *p)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 50 * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&p->done_cv, &p->mu, &ts);
}

kopt_status kopt_scale_pool_run(kopt_scale_pool *p, kopt_ctx *ctx, const kopt_scale_job *jobs,
                                int n, const kopt_scale_hooks *hooks)
{
    return kopt_scale_pool_run_meanwhile(p, ctx, jobs, n, hooks, NULL, NULL);
}

kopt_status kopt_scale_pool_run_meanwhile(kopt_scale_pool *p, kopt_ctx *ctx,
                                          const kopt_scale_job *jobs, int n,
                                          const kopt_scale_hooks *hooks,
                                          void (*meanwhile)(void *user), void *user)
{
    int delivered = 0, drained = 0, lost_for;
    kopt_status rc = KOPT_OK;

    if (n <= 0)
        return KOPT_OK;
    if (!p || !hooks || !hooks->done)
        return kopt_seterr(ctx, KOPT_E_INVALID, "scale pool: no pool or no done hook");
    if (hooks->only_slot >= p->nslots)
        return kopt_seterr(ctx, KOPT_E_INVALID, "scale pool: no slot %d", hooks->only_slot);
    for (int i = 0; hooks->slot_of && i < n; i++)
        if (hooks->slot_of[i] >= p->nslots)
            return kopt_seterr(ctx, KOPT_E_INVALID, "scale pool: job %d is for slot %d of %d",
                               i, hooks->slot_of[i], p->nslots);
    p->queue = malloc((size_t)(n + KOPT_SCALE_MAX_SLOTS) * sizeof(*p->queue));
    p->state = calloc((size_t)n, 1);
    p->outs = calloc((size_t)n, sizeof(*p->outs));
    p->finished = malloc((size_t)n * sizeof(*p->finished));
    if (!p->queue || !p->state || !p->outs || !p->finished) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "scale pool");
        goto cleanup;
    }
    pthread_mutex_lock(&p->mu);
    p->head = p->tail = KOPT_SCALE_MAX_SLOTS;  /* room to requeue at the head */
    for (int i = 0; i < n; i++)
        p->queue[p->tail++] = i;
    p->jobs = jobs;
    p->hooks = hooks;
    p->n = n;
    p->nfinished = 0;
    p->inflight = 0;
    p->stopping = 0;
    p->err = KOPT_OK;
    pthread_cond_broadcast(&p->work_cv);
    if (meanwhile) {   /* the slots are at work: the caller's own work, then the outcomes */
        pthread_mutex_unlock(&p->mu);
        meanwhile(user);
        pthread_mutex_lock(&p->mu);
    }
    for (;;) {
        while (drained < p->nfinished) {           /* hand outcomes over, on this thread */
            int j = p->finished[drained++];
            kopt_tune_outcome o = p->outs[j];
            pthread_mutex_unlock(&p->mu);
            hooks->done(hooks->user, j, &o);
            pthread_mutex_lock(&p->mu);
            delivered++;
        }
        if (delivered == n)
            break;
        if (hooks->stop && *hooks->stop)
            p->stopping = 1;
        if ((p->stopping || p->err != KOPT_OK) && p->inflight == 0 && drained == p->nfinished)
            break;
        if (p->alive == 0 && p->inflight == 0 && drained == p->nfinished) {
            rc = kopt_seterr(ctx, KOPT_E_NO_DEVICE, "scale: every slot was lost with %d "
                             "evaluation(s) left", n - delivered);
            break;
        }
        if (p->alive > 0 && hooks->only_slot >= 0 && p->slots[hooks->only_slot]->lost &&
            p->inflight == 0) {
            rc = kopt_seterr(ctx, KOPT_E_NO_DEVICE, "scale: slot %d was lost",
                             hooks->only_slot);
            break;
        }
        if (p->alive > 0 && p->inflight == 0 && (lost_for = bound_to_lost(p)) >= 0) {
            rc = kopt_seterr(ctx, KOPT_E_NO_DEVICE, "scale: slot %d, which a job was for, "
                             "was lost", lost_for);
            break;
        }
        wait_done(p);
    }
    if (rc == KOPT_OK && p->err != KOPT_OK)
        rc = kopt_seterr(ctx, p->err, "%s", p->errmsg);
    p->jobs = NULL;
    p->hooks = NULL;
    p->head = p->tail;
    pthread_mutex_unlock(&p->mu);
cleanup:
    free(p->queue);
    free(p->state);
    free(p->outs);
    free(p->finished);
    p->queue = NULL;
    p->state = NULL;
    p->outs = NULL;
    p->finished = NULL;
    return rc;
}

void kopt_scale_pool_stats(const kopt_scale_pool *p, kopt_scale_slot_stats *out)
{
    if (!p)
        return;
    pthread_mutex_lock((pthread_mutex_t *)&p->mu);
    for (int i = 0; i < p->nslots; i++)
        out[i] = p->slots[i]->st;
    pthread_mutex_unlock((pthread_mutex_t *)&p->mu);
}

void kopt_scale_pool_free(kopt_scale_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->shutdown = 1;
    pthread_cond_broadcast(&p->work_cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->nslots; i++) {
        pthread_join(p->slots[i]->th, NULL);
        kopt_scale_slot_free(p->slots[i]->slot);
        free(p->slots[i]);
    }
    pthread_cond_destroy(&p->work_cv);
    pthread_cond_destroy(&p->done_cv);
    pthread_mutex_destroy(&p->mu);
    free(p);
}
