/* A pool of workers started ahead of their jobs (each makes its CUDA context while it
 * waits): a long-lived caller (kopt serve) hands them to one-shot evaluations, which then
 * skip the context's creation. Every evaluation still gets fresh worker processes. */
#include "worker_int.h"
#include "kopt/eval.h"

#include <stdlib.h>

#define POOL_MAX 8

struct kopt_eval_pool {
    int device, want, n;
    size_t shm_size;                  /* the last evaluation's buffer: made ahead at it */
    kopt__worker_proc *idle[POOL_MAX];
};

kopt_status kopt_eval_pool_open(kopt_eval_pool **out, kopt_ctx *ctx, int device, int workers)
{
    kopt_eval_pool *p = calloc(1, sizeof(*p));

    *out = NULL;
    if (!p)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "worker pool");
    if (workers < 1 || workers > POOL_MAX) {
        free(p);
        return kopt_seterr(ctx, KOPT_E_INVALID, "a worker pool holds 1 to %d workers, not %d",
                           POOL_MAX, workers);
    }
    p->device = device;
    p->want = workers;
    *out = p;
    return KOPT_OK;
}

kopt_status kopt_eval_pool_fill(kopt_eval_pool *p, kopt_ctx *ctx)
{
    for (int i = 0; i < p->n;)         /* one that ended (no GPU, killed) is dropped */
        if (!kopt__worker_alive(p->idle[i])) {
            kopt__worker_proc_release(p->idle[i]);
            p->idle[i] = p->idle[--p->n];
        } else {
            i++;
        }
    while (p->n < p->want) {
        kopt_status rc = kopt__worker_prestart(ctx, p->device, &p->idle[p->n]);
        if (rc != KOPT_OK)
            return rc;
        p->n++;
    }
    for (int i = 0; p->shm_size && i < p->n; i++)
        if (kopt__worker_buffer(ctx, p->idle[i], p->shm_size) != KOPT_OK)
            return KOPT_E_IO;
    return KOPT_OK;
}

int kopt_eval_pool_idle(const kopt_eval_pool *p)
{
    return p ? p->n : 0;
}

void kopt_eval_pool_close(kopt_eval_pool *p)
{
    if (!p)
        return;
    for (int i = 0; i < p->n; i++)
        kopt__worker_proc_release(p->idle[i]);
    free(p);
}

void kopt__eval_pool_note_size(kopt_eval_pool *p, size_t shm_size)
{
    if (p && shm_size <= ((size_t)8 << 30))   /* a buffer kept ahead, up to 8 GB */
        p->shm_size = shm_size;
}

kopt__worker_proc *kopt__eval_pool_take(kopt_eval_pool *p, int device)
{
    if (!p || p->device != device || p->n == 0)
        return NULL;
    return p->idle[--p->n];
}
