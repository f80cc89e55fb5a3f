/*
 * The ranks of a tuning run under MPI (kopt/scale.h). Rank 0 owns the search and the store;
 * each other rank says hello (what it tunes, on which device), then evaluates the jobs
 * rank 0 sends, one at a time, and answers each with its outcome. While it evaluates it
 * sends a heartbeat every second, so rank 0 tells a slow evaluation from a dead rank: a
 * rank silent for KOPT_SCALE_LOST_S seconds is lost, and its job goes back to the queue
 * (the pool does that), to be evaluated by another rank. Nothing is lost but the time
 * spent on that job; nothing is evaluated twice, since the lost rank's outcome never
 * reached rank 0 and so never reached the store.
 *
 * On rank 0 every remote rank is a slot of the pool (a thread polling that rank); on the
 * other ranks the main thread talks to rank 0 while a helper thread evaluates.
 */
#include "scale_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BEAT_MS 1000.0
#define POLL_MS 2

static void nap(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

int kopt__mpi_send(kopt_scale_mpi *m, const void *buf, int n, int dest, int tag,
                   double timeout_s)
{
    void *req = NULL;
    double t0 = kopt_now_ms();
    int rc, flag = 0;
    kopt__mpi_status st;

    pthread_mutex_lock(&m->mu);
    rc = kopt__mpi.Isend(buf, n, kopt__mpi.byte, dest, tag, kopt__mpi.comm_world, &req);
    pthread_mutex_unlock(&m->mu);
    if (rc != 0)
        return -1;
    for (;;) {
        pthread_mutex_lock(&m->mu);
        rc = kopt__mpi.Test(&req, &flag, &st);
        pthread_mutex_unlock(&m->mu);
        if (rc != 0)
            return -1;
        if (flag)
            return 0;
        if (kopt_now_ms() - t0 > timeout_s * 1000.0)
            return -1;         /* the request is left behind: its peer is gone */
        nap(1);
    }
}

int kopt__mpi_poll(kopt_scale_mpi *m, int source, void *buf, int n)
{
    kopt__mpi_status st;
    int flag = 0, rc;

    memset(&st, 0, sizeof(st));
    pthread_mutex_lock(&m->mu);
    rc = kopt__mpi.Iprobe(source, KOPT__MPI_ANY_TAG, kopt__mpi.comm_world, &flag, &st);
    if (rc == 0 && flag)
        rc = kopt__mpi.Recv(buf, n, kopt__mpi.byte, source, st.tag, kopt__mpi.comm_world, &st);
    pthread_mutex_unlock(&m->mu);
    if (rc != 0)
        return -1;
    return flag ? st.tag : 0;
}

/* ---- rank 0: a slot per remote rank --------------------------------------------------------- */

typedef struct rank_slot {
    kopt_scale_mpi *m;
    int rank;
    double lost_s;
} rank_slot;

static kopt_status rank_eval(void *user, kopt_ctx *ctx, const kopt_scale_job *job,
                             kopt_tune_outcome *out, int *lost)
{
    rank_slot *rs = user;
    kopt_scale_mpi *m = rs->m;
    kopt__job_msg jm;
    kopt__result_msg *res = malloc(sizeof(*res));
    double last;
    kopt_status rc = KOPT_OK;

    *lost = 0;
    if (!res)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "mpi");
    memset(&jm, 0, sizeof(jm));
    jm.shape = job->shape;
    jm.want_findings = job->want_findings;
    jm.point = job->point;
    if (kopt__mpi_send(m, &jm, (int)sizeof(jm), rs->rank, KOPT__TAG_JOB, rs->lost_s) != 0)
        goto gone;
    last = kopt_now_ms();
    for (;;) {
        int tag = kopt__mpi_poll(m, rs->rank, res, (int)sizeof(*res));
        if (tag < 0)
            goto gone;
        if (tag == KOPT__TAG_RESULT) {
            if (res->rc != KOPT_OK)
                rc = kopt_seterr(ctx, (kopt_status)res->rc, "rank %d: %s", rs->rank,
                                 res->message);
            else
                *out = res->o;
            free(res);
            return rc;
        }
        if (tag > 0)
            last = kopt_now_ms();        /* a heartbeat: still at work */
        else if (kopt_now_ms() - last > rs->lost_s * 1000.0)
            goto gone;
        else
            nap(POLL_MS);
    }
gone:
    pthread_mutex_lock(&m->mu);
    m->lost_any = 1;
    m->alive[rs->rank] = 0;
    pthread_mutex_unlock(&m->mu);
    kopt_log(ctx, KOPT_LOG_WARN, "mpi: rank %d lost (no word for %.0f s); its evaluation "
             "goes back to the queue", rs->rank, rs->lost_s);
    free(res);
    *lost = 1;
    return KOPT_OK;
}

static kopt_status rank_slot_new(kopt_scale_slot **out, kopt_ctx *ctx, kopt_scale_mpi *m,
                                 int rank, double lost_s, const kopt_tune_where *where)
{
    kopt_scale_slot *s = calloc(1, sizeof(*s));
    rank_slot *rs = calloc(1, sizeof(*rs));

    *out = NULL;
    if (!s || !rs) {
        free(s);
        free(rs);
        return kopt_seterr(ctx, KOPT_E_NOMEM, "mpi slot");
    }
    rs->m = m;
    rs->rank = rank;
    rs->lost_s = lost_s;
    s->kind = "mpi";
    s->user = rs;
    s->eval = rank_eval;
    s->close = free;
    s->where = *where;
    s->where.rank = rank;
    *out = s;
    return KOPT_OK;
}

kopt_status kopt_scale_mpi_add_slots(kopt_scale_mpi *m, kopt_ctx *ctx, kopt_scale_pool *pool,
                                     const char *spaces, double timeout_s, double lost_s)
{
    unsigned char heard[KOPT_SCALE_MAX_SLOTS];
    int left = m->size - 1, added = 0;
    double t0 = kopt_now_ms();
    kopt_status rc;

    if (m->size > KOPT_SCALE_MAX_SLOTS)
        return kopt_seterr(ctx, KOPT_E_INVALID, "mpi: at most %d ranks", KOPT_SCALE_MAX_SLOTS);
    memset(heard, 0, sizeof(heard));
    while (left > 0 && kopt_now_ms() - t0 < timeout_s * 1000.0) {
        int progress = 0;
        for (int r = 1; r < m->size; r++) {
            kopt__hello_msg h;
            kopt_scale_slot *s;
            int tag;
            if (heard[r])
                continue;
            memset(&h, 0, sizeof(h));
            if ((tag = kopt__mpi_poll(m, r, &h, (int)sizeof(h))) == 0)
                continue;
            progress = 1;
            if (tag != KOPT__TAG_HELLO)
                continue;
            heard[r] = 1;
            left--;
            h.spaces[sizeof(h.spaces) - 1] = '\0';
            if (h.magic != KOPT__MPI_MAGIC || h.outcome_size != sizeof(kopt_tune_outcome) ||
                strcmp(h.spaces, spaces) != 0) {
                kopt__job_msg stop = {1, 0, 0, 0, 0};
                kopt_log(ctx, KOPT_LOG_WARN, "mpi: rank %d is refused: %s", r,
                         h.magic != KOPT__MPI_MAGIC || h.outcome_size != sizeof(kopt_tune_outcome)
                         ? "another kopt version" : "it tunes something else (another "
                         "problem, template or sizes: every rank must run the same command)");
                kopt__mpi_send(m, &stop, (int)sizeof(stop), r, KOPT__TAG_JOB, 5.0);
                continue;
            }
            if ((rc = rank_slot_new(&s, ctx, m, r, lost_s, &h.where)) != KOPT_OK ||
                (rc = kopt_scale_pool_add(pool, ctx, s)) != KOPT_OK)
                return rc;
            m->alive[r] = m->had_slot[r] = 1;
            added++;
        }
        if (!progress)
            nap(POLL_MS);
    }
    for (int r = 1; r < m->size; r++)
        if (!heard[r]) {
            m->lost_any = 1;
            kopt_log(ctx, KOPT_LOG_WARN, "mpi: rank %d did not say hello within %.0f s; the "
                     "run goes on without it", r, timeout_s);
        }
    kopt_log(ctx, KOPT_LOG_INFO, "mpi: %d of %d ranks evaluate for rank 0", added, m->size - 1);
    return KOPT_OK;
}

void kopt_scale_mpi_stop_all(kopt_scale_mpi *m)
{
    kopt__job_msg stop;

    if (!m || m->rank != 0)
        return;
    memset(&stop, 0, sizeof(stop));
    stop.stop = m->lost_any ? 2 : 1;
    /* a rank taken for lost may only have been slow: tell it too, briefly */
    for (int r = 1; r < m->size && r < KOPT_SCALE_MAX_SLOTS; r++)
        if (m->had_slot[r])
            kopt__mpi_send(m, &stop, (int)sizeof(stop), r, KOPT__TAG_JOB,
                           m->alive[r] ? 5.0 : 1.0);
}

/* ---- ranks > 0: serve ------------------------------------------------------------------------ */

typedef struct serving {
    kopt_scale_slot *local;
    kopt_scale_job job;
    kopt__result_msg *res;
    pthread_mutex_t mu;
    int done;
} serving;

static void *serve_one(void *arg)
{
    serving *sv = arg;
    kopt_ctx *ctx = kopt_ctx_new();
    int lost = 0;
    kopt_status rc;

    rc = ctx ? sv->local->eval(sv->local->user, ctx, &sv->job, &sv->res->o, &lost)
             : KOPT_E_NOMEM;
    if (rc == KOPT_OK && lost)
        rc = kopt_seterr(ctx, KOPT_E_NO_DEVICE, "its device was lost");
    sv->res->rc = rc;
    if (rc != KOPT_OK)
        snprintf(sv->res->message, sizeof(sv->res->message), "%s",
                 ctx ? kopt_errmsg(ctx) : "out of memory");
    kopt_ctx_free(ctx);
    pthread_mutex_lock(&sv->mu);
    sv->done = 1;
    pthread_mutex_unlock(&sv->mu);
    return NULL;
}

/* Evaluate one job on a helper thread, sending heartbeats meanwhile. */
static kopt_status serve_job(kopt_scale_mpi *m, kopt_ctx *ctx, kopt_scale_slot *local,
                             const kopt__job_msg *jm, kopt__result_msg *res)
{
    serving sv;
    pthread_t th;
    double beat = kopt_now_ms();
    int done = 0, b = 0;

    memset(&sv, 0, sizeof(sv));
    memset(res, 0, sizeof(*res));
    sv.local = local;
    sv.job.shape = jm->shape;
    sv.job.point = jm->point;
    sv.job.want_findings = jm->want_findings;
    sv.res = res;
    pthread_mutex_init(&sv.mu, NULL);
    if (pthread_create(&th, NULL, serve_one, &sv) != 0) {
        pthread_mutex_destroy(&sv.mu);
        return kopt_seterr(ctx, KOPT_E_ERROR, "mpi: cannot start a thread");
    }
    while (!done) {
        nap(5);
        pthread_mutex_lock(&sv.mu);
        done = sv.done;
        pthread_mutex_unlock(&sv.mu);
        if (!done && kopt_now_ms() - beat >= BEAT_MS) {
            kopt__mpi_send(m, &b, (int)sizeof(b), 0, KOPT__TAG_BEAT, 10.0);
            beat = kopt_now_ms();
        }
    }
    pthread_join(th, NULL);
    pthread_mutex_destroy(&sv.mu);
    res->o.where.rank = m->rank;
    return KOPT_OK;
}

kopt_status kopt_scale_mpi_serve(kopt_scale_mpi *m, kopt_ctx *ctx, const char *spaces,
                                 kopt_scale_slot *local,
                                 kopt_status (*shape_fn)(void *user, kopt_ctx *ctx, int shape),
                                 void *shape_user, int *served)
{
    kopt__hello_msg h;
    kopt__result_msg *res = calloc(1, sizeof(*res));
    const char *idle_env = getenv("KOPT_SCALE_IDLE_S");
    double idle_s = idle_env && atof(idle_env) > 0 ? atof(idle_env) : 3600.0, idle;
    int shape = -1;
    kopt_status rc = KOPT_OK;

    *served = 0;
    if (!res)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "mpi");
    memset(&h, 0, sizeof(h));
    h.magic = KOPT__MPI_MAGIC;
    h.outcome_size = sizeof(kopt_tune_outcome);
    snprintf(h.spaces, sizeof(h.spaces), "%s", spaces);
    h.where = local->where;
    h.where.rank = m->rank;
    if (kopt__mpi_send(m, &h, (int)sizeof(h), 0, KOPT__TAG_HELLO, 60.0) != 0) {
        free(res);
        return kopt_seterr(ctx, KOPT_E_ERROR, "mpi: rank 0 does not answer");
    }
    idle = kopt_now_ms();
    for (;;) {
        kopt__job_msg jm;
        int tag = kopt__mpi_poll(m, 0, &jm, (int)sizeof(jm));
        if (tag < 0) {
            rc = kopt_seterr(ctx, KOPT_E_ERROR, "mpi: rank 0 cannot be reached");
            break;
        }
        if (tag != KOPT__TAG_JOB) {
            if (kopt_now_ms() - idle > idle_s * 1000.0) {
                rc = kopt_seterr(ctx, KOPT_E_TIMEOUT, "mpi: no word from rank 0 for %.0f s "
                                 "(KOPT_SCALE_IDLE_S)", idle_s);
                break;
            }
            nap(POLL_MS);
            continue;
        }
        if (jm.stop) {
            if (jm.stop == 2)
                m->lost_any = 1;         /* a rank is gone: finalizing would wait for it */
            break;
        }
        if (jm.shape != shape && shape_fn &&
            (rc = shape_fn(shape_user, ctx, jm.shape)) != KOPT_OK) {
            memset(res, 0, sizeof(*res));
            res->rc = rc;
            snprintf(res->message, sizeof(res->message), "%s", kopt_errmsg(ctx));
        } else {
            shape = jm.shape;
            if ((rc = serve_job(m, ctx, local, &jm, res)) != KOPT_OK)
                break;
            if (res->rc == KOPT_OK)
                (*served)++;
        }
        rc = KOPT_OK;
        if (kopt__mpi_send(m, res, (int)sizeof(*res), 0, KOPT__TAG_RESULT, 60.0) != 0) {
            rc = kopt_seterr(ctx, KOPT_E_ERROR, "mpi: rank 0 does not take a result");
            break;
        }
        idle = kopt_now_ms();
    }
    free(res);
    return rc;
}
