/* A pool of workers started ahead of their jobs (each makes its CUDA context while it
 * waits): a long-lived caller (kopt serve) hands them to one-shot evaluations, which then
 * skip the context's creation. Every evaluation still gets fresh worker processes.
 *
 * Each prestarted worker says when its context is made and when its output buffer is
 * mapped ("idle" events, read here without waiting). An evaluation takes the readiest
 * workers (buffer mapped at the last evaluation's size, else context made, else the one
 * started longest ago), oldest first. "Context made" means set up for any job: a worker
 * started ahead also loads kopt's runtime module, makes cuRAND's generator and its L2 flush
 * buffer while it waits (worker_setup.c, wk_early_setup). Each worker taken is replaced once the
 * evaluation's workers have their jobs set up (kopt__eval_pool_replace): the replacements
 * make their contexts while this evaluation runs and are ready for the one after the next
 * (with two evaluations' workers, kopt serve's default), and no context is being made
 * while the taken workers load their jobs, which a context's creation on the same GPU
 * slows (measured: bench/results/2026-11-27-h100-serve-early). */
#include "worker_int.h"
#include "kopt/eval.h"

#include <stdlib.h>
#include <string.h>

#define POOL_MAX 8
/* output buffers made ahead, all workers together: what two workers of 8 GB held before */
#define POOL_BUFFERS_MAX ((size_t)16 << 30)

struct kopt_eval_pool {
    int device, want, n;
    size_t shm_size;                  /* the last evaluation's buffer: made ahead at it */
    int owed;                         /* workers taken and not replaced yet */
    /* the reference's serving worker: one-shot evaluations with a candidate run their
     * reference there (kopt's code and the problem's reference only, never a candidate's),
     * so each starts one fresh process, the candidate's, and not two */
    kopt__worker_proc *ref;
    size_t ref_total;                 /* the output buffer it was started with */
    uint64_t ref_env;                 /* the environment then (kopt serve applies each
                                       * client's: another one gets another worker) */
    kopt__worker_proc *idle[POOL_MAX];   /* oldest first */
    kopt_eval_pool_stats st;
};

kopt_status kopt_eval_pool_open(kopt_eval_pool **out, kopt_ctx *ctx, int device, int workers)
{
    kopt_eval_pool *p;

    *out = NULL;
    if (workers < 1 || workers > POOL_MAX)
        return kopt_seterr(ctx, KOPT_E_INVALID, "a worker pool holds 1 to %d workers, not %d",
                           POOL_MAX, workers);
    if (!(p = calloc(1, sizeof(*p))))
        return kopt_seterr(ctx, KOPT_E_NOMEM, "worker pool");
    p->device = device;
    p->want = workers;
    *out = p;
    return KOPT_OK;
}

/* Drop the workers that ended on their own (crashed, killed), keeping the others' order. */
static void prune(kopt_eval_pool *p)
{
    int k = 0;

    for (int i = 0; i < p->n; i++) {
        if (kopt__worker_early_state(p->idle[i], 0) < 0) {
            kopt__worker_proc_release(p->idle[i]);
            p->st.lost++;
        } else {
            p->idle[k++] = p->idle[i];
        }
    }
    p->n = k;
}

/* Start workers until the pool has its number, each given its output buffer at the last
 * evaluation's size: the new ones only (`all` 0), or all of them (a no-op for those that
 * have it; one of another size waits for its earlier buffer's faulting threads). */
static kopt_status top_up(kopt_eval_pool *p, kopt_ctx *ctx, int all)
{
    int from = all ? 0 : p->n;

    while (p->n < p->want) {
        kopt_status rc = kopt__worker_prestart(ctx, p->device, &p->idle[p->n]);
        if (rc != KOPT_OK) {
            p->st.failed++;
            return rc;
        }
        p->st.started++;
        p->n++;
    }
    for (int i = from; p->shm_size && i < p->n; i++)
        if (kopt__worker_buffer(ctx, p->idle[i], p->shm_size) != KOPT_OK)
            return KOPT_E_IO;
    return KOPT_OK;
}

kopt_status kopt_eval_pool_fill(kopt_eval_pool *p, kopt_ctx *ctx)
{
    prune(p);
    p->owed = 0;
    return top_up(p, ctx, 1);
}

int kopt_eval_pool_idle(const kopt_eval_pool *p)
{
    return p ? p->n : 0;
}

void kopt_eval_pool_stats_get(kopt_eval_pool *p, kopt_eval_pool_stats *out)
{
    memset(out, 0, sizeof(*out));
    if (!p)
        return;
    *out = p->st;
    out->want = p->want;
    out->ref_serving = p->ref && kopt__worker_alive(p->ref);
    out->idle = p->n;
    for (int i = 0; i < p->n; i++) {
        int s = kopt__worker_early_state(p->idle[i], p->shm_size);
        out->context += s >= 1;
        out->ready += s == 2;
    }
}

void kopt_eval_pool_close(kopt_eval_pool *p)
{
    if (!p)
        return;
    kopt__worker_proc_free(p->ref);
    for (int i = 0; i < p->n; i++)
        kopt__worker_proc_release(p->idle[i]);
    free(p);
}

int kopt__eval_pool_pids(const kopt_eval_pool *p, int *pids, int max)
{
    int n = 0;

    for (int i = 0; p && i < p->n && n < max; i++)
        pids[n++] = kopt__worker_pid(p->idle[i]);
    return n;
}

void kopt__eval_pool_note_size(kopt_eval_pool *p, size_t shm_size)
{
    if (p)   /* too large to keep for every worker: none made ahead, each makes its own */
        p->shm_size = shm_size <= POOL_BUFFERS_MAX / (size_t)p->want ? shm_size : 0;
}

/* KOPT_POOL_REPLACE=take: replacements start as their workers are taken (before 0.1.x's
 * default; kept to compare): they then make their contexts while the taken workers load
 * their jobs, and a new context's creation slows another process's module loads and
 * allocations on the same GPU. By default they start once the taken workers are set up. */
static int replace_at_take(void)
{
    const char *e = getenv("KOPT_POOL_REPLACE");
    return e && strcmp(e, "take") == 0;
}

void kopt__eval_pool_replace(kopt_eval_pool *p, kopt_ctx *ctx)
{
    kopt_ctx *scratch;

    if (!p || !p->owed)
        return;
    p->owed = 0;
    /* the replacements make their contexts while the evaluation runs, for the one after the
     * next. A failure is the caller's evaluation's concern only in the log. */
    if ((scratch = kopt_ctx_new())) {
        if (top_up(p, scratch, 0) != KOPT_OK)
            kopt_log(ctx, KOPT_LOG_WARN, "worker pool: no replacement started: %s",
                     kopt_errmsg(scratch));
        kopt_ctx_free(scratch);
    }
}

/* The readiest idle worker for `device` out of the pool (counted as taken), or NULL. */
static kopt__worker_proc *take_readiest(kopt_eval_pool *p, int device)
{
    kopt__worker_proc *w;
    int best = -1, best_state = -1;

    if (!p || p->device != device)
        return NULL;
    prune(p);
    for (int i = 0; i < p->n; i++) {   /* the readiest, the oldest of those */
        int s = kopt__worker_early_state(p->idle[i], p->shm_size);
        if (s > best_state) {
            best = i;
            best_state = s;
        }
    }
    if (best < 0)
        return NULL;
    w = p->idle[best];
    memmove(&p->idle[best], &p->idle[best + 1], (size_t)(p->n - best - 1) * sizeof(p->idle[0]));
    p->n--;
    p->st.taken++;
    if (best_state == 2)
        p->st.taken_ready++;
    else if (best_state == 1)
        p->st.taken_context++;
    else
        p->st.taken_starting++;
    return w;
}

kopt__worker_proc *kopt__eval_pool_take(kopt_eval_pool *p, kopt_ctx *ctx, int device)
{
    kopt__worker_proc *w = take_readiest(p, device);

    if (!w)
        return NULL;
    p->owed++;
    if (replace_at_take())
        kopt__eval_pool_replace(p, ctx);
    return w;
}

kopt__worker_proc *kopt__eval_pool_hand_over(kopt_eval_pool *p, int device)
{
    return take_readiest(p, device);    /* not owed: no replacement */
}

kopt__worker_proc *kopt__eval_pool_serving_ref(kopt_eval_pool *p, int device)
{
    if (!p || p->device != device || !p->ref)
        return NULL;
    if (!kopt__worker_alive(p->ref) || p->ref_env != kopt__env_hash()) {
        kopt__worker_proc_free(p->ref);
        p->ref = NULL;
        return NULL;
    }
    return p->ref;
}

size_t kopt__eval_pool_serving_total(const kopt_eval_pool *p)
{
    return p && p->ref ? p->ref_total : 0;
}

void kopt__eval_pool_drop_ref(kopt_eval_pool *p)
{
    if (p && p->ref) {
        kopt__worker_proc_release(p->ref);
        p->ref = NULL;
    }
}

int kopt__eval_pool_keep_ref(kopt_eval_pool *p, kopt__worker_proc *w, size_t total)
{
    if (!p || !w || !kopt__worker_alive(w))
        return 0;
    if (p->ref != w)
        kopt__eval_pool_drop_ref(p);
    p->ref = w;
    p->ref_total = total;
    p->ref_env = kopt__env_hash();
    p->st.ref_served++;
    return 1;
}
