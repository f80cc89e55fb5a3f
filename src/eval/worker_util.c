/*
 * The worker's bottom helpers, shared by all its files: the events it writes on fd 3
 * (wk_emit, wk_progress), a CUDA failure recorded and classified (wk_cufail, which the CU()
 * macro calls), a kopt runtime kernel launched over n elements (wk_launch_rt), and the
 * trace's step times (wk_trace). It calls no other worker file (worker_priv.h draws the
 * order). From wk_emit to wk_trace.
 */
#include "worker_priv.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- events ------------------------------------------------------------------------------ */

void wk_emit(json_t *obj)
{
    char *s = json_dumps(obj, JSON_COMPACT);
    if (s) {
        size_t n = strlen(s), off = 0;
        s[n] = '\n';   /* json_dumps leaves room for the NUL; replace it */
        while (off < n + 1) {
            ssize_t w = write(KOPT_WORKER_EVENT_FD, s + off, n + 1 - off);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                break;
            off += (size_t)w;
        }
        free(s);
    }
    json_decref(obj);
}

void wk_progress(worker *w, int phase, const char *what)
{
    wk_emit(json_pack("{s:s, s:i, s:s}", "event", "progress", "phase", phase, "what", what));
    (void)w;
}

/* Classify a CUDA error as the verdict family the parent will report. */
static const char *classify(CUresult r)
{
    switch (r) {
    case CUDA_ERROR_OUT_OF_MEMORY: return "oom";
    case CUDA_ERROR_LAUNCH_TIMEOUT: return "timeout";
    case CUDA_ERROR_INVALID_VALUE:
    case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES:
    case CUDA_ERROR_INVALID_HANDLE:
    case CUDA_ERROR_NOT_FOUND:
    case CUDA_ERROR_INVALID_IMAGE:
    case CUDA_ERROR_NO_BINARY_FOR_GPU:
    case CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE:
        return "launch";
    default: return "crash";
    }
}

/* Record a CUDA failure on the worker and context. Returns KOPT_E_CUDA. */
kopt_status wk_cufail(worker *w, CUresult r, const char *what)
{
    char buf[256];
    w->fail_kind = classify(r);
    w->fail_cuda = (int)r;
    snprintf(w->fail_step, sizeof(w->fail_step), "%s", what);
    return kopt_seterr(w->ctx, KOPT_E_CUDA, "%s: %s", what, kopt__cu_errstr(r, buf, sizeof(buf)));
}

/* ---- helpers ------------------------------------------------------------------------------- */

static unsigned grid_for(worker *w, long long n)
{
    long long g = (n + 255) / 256, cap = (long long)w->sm_count * 16;
    if (g < 1)
        g = 1;
    return (unsigned)(g < cap ? g : cap);
}

kopt_status wk_launch_rt(worker *w, CUfunction f, long long n, void **params, const char *what)
{
    CU(cuLaunchKernel(f, grid_for(w, n), 1, 1, 256, 1, 1, 0, w->stream, params, NULL), what);
    return KOPT_OK;
}

void wk_trace(worker *w, const char *step, double t0)
{
    double ms = kopt_now_ms() - t0;
    json_t *v;

    if (!w->trace)
        w->trace = json_object();
    v = json_object_get(w->trace, step);
    json_object_set_new(w->trace, step, json_real(ms + (v ? json_number_value(v) : 0)));
}
