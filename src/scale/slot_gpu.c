/*
 * A GPU slot: one GPU of this host with the live evaluator (and so the evaluation session,
 * the one long-lived worker) of the shape being tuned. The evaluator is made on the
 * caller's thread (kopt_scale_slot_gpu_set), which also warms it there (its workers are
 * started and make their CUDA contexts while the first points compile; they must be
 * started by a thread that outlives them, as the caller's does); the slot's thread then
 * evaluates with it.
 */
#include "kopt/scale.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct gpu_slot {
    int device, shape;
    kopt_tune_evaluator *ev;         /* for `shape`; owned */
} gpu_slot;

static kopt_status gpu_eval(void *user, kopt_ctx *ctx, const kopt_scale_job *job,
                            kopt_tune_outcome *out, int *lost)
{
    gpu_slot *g = user;

    *lost = 0;
    if (!g->ev || g->shape != job->shape)
        return kopt_seterr(ctx, KOPT_E_INVALID, "GPU %d: no evaluator for shape %d",
                           g->device, job->shape + 1);
    return g->ev->evaluate(g->ev->user, ctx, job->point, job->want_findings, out);
}

static void gpu_close(void *user)
{
    gpu_slot *g = user;

    if (!g)
        return;
    kopt_tune_evaluator_free(g->ev);
    free(g);
}

kopt_status kopt_scale_slot_gpu(kopt_scale_slot **out, kopt_ctx *ctx, int device)
{
    kopt_scale_slot *s = calloc(1, sizeof(*s));
    gpu_slot *g = calloc(1, sizeof(*g));
    kopt_device_info nvml;

    *out = NULL;
    if (!s || !g) {
        free(s);
        free(g);
        return kopt_seterr(ctx, KOPT_E_NOMEM, "GPU slot");
    }
    g->device = device;
    g->shape = -1;
    s->kind = "gpu";
    s->user = g;
    s->eval = gpu_eval;
    s->close = gpu_close;
    s->where.known = 1;
    s->where.device = device;
    if (kopt_device_nvml(NULL, device, &nvml, NULL) == KOPT_OK) {
        snprintf(s->where.name, sizeof(s->where.name), "%.63s", nvml.name);
        snprintf(s->where.uuid, sizeof(s->where.uuid), "%.47s", nvml.uuid);
    }
    gethostname(s->where.host, sizeof(s->where.host) - 1);
    *out = s;
    return KOPT_OK;
}

void kopt_scale_slot_gpu_set(kopt_scale_slot *s, int shape, kopt_tune_evaluator *e)
{
    gpu_slot *g = s ? s->user : NULL;

    if (!g) {
        kopt_tune_evaluator_free(e);
        return;
    }
    kopt_tune_evaluator_free(g->ev);
    g->ev = e;
    g->shape = shape;
    kopt_tune_warm(e);
}

/* ---- a GPU slot that runs any job (kopt_scale_slot_call) ------------------------------------ */

typedef struct call_slot {
    int device;
    kopt_scale_call_fn fn;
    void *user;
} call_slot;

static kopt_status call_eval(void *user, kopt_ctx *ctx, const kopt_scale_job *job,
                             kopt_tune_outcome *out, int *lost)
{
    call_slot *c = user;

    *lost = 0;
    memset(out, 0, sizeof(*out));
    out->state = KOPT_TUNE_OK;
    return c->fn(c->user, ctx, c->device, job->point);
}

kopt_status kopt_scale_slot_call(kopt_scale_slot **out, kopt_ctx *ctx, int device,
                                 kopt_scale_call_fn fn, void *user)
{
    kopt_scale_slot *s = NULL;
    call_slot *c = calloc(1, sizeof(*c));
    kopt_status rc;

    *out = NULL;
    if (!c)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "GPU slot");
    if ((rc = kopt_scale_slot_gpu(&s, ctx, device)) != KOPT_OK) {
        free(c);
        return rc;
    }
    gpu_close(s->user);                /* the same slot, with a call instead of an evaluator */
    c->device = device;
    c->fn = fn;
    c->user = user;
    s->user = c;
    s->eval = call_eval;
    s->close = free;
    *out = s;
    return KOPT_OK;
}
