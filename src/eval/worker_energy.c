/*
 * Energy per run of the candidate, in the worker: NVML's total-energy counter (mJ) only
 * changes every ~100 ms and a read costs a few milliseconds, so kopt never differences it
 * around a short kernel. Instead the candidate runs back to back, in chunks of ~10 ms of
 * GPU work with at most two chunks in flight, for at least `energy_s` seconds; the window
 * starts and ends at counter updates seen while the GPU is busy, which gives the mean
 * power; events around all the chunks give the back-to-back time per run, and
 * energy per run = mean power x time per run.
 */
#include "worker_priv.h"

#include <stdio.h>
#include <string.h>

#define MAX_CHUNKS 4096

typedef struct energy_reader {
    const kopt_nvml_api *nv;
    kopt_nvml_device dev;
} energy_reader;

static int reader_open(worker *w, energy_reader *er, char *why, size_t n)
{
    CUuuid u;
    char uuid[64];
    const unsigned char *b = (const unsigned char *)u.bytes;

    if (kopt__nvml_load(w->ctx, &er->nv) != KOPT_OK || !er->nv->nvmlDeviceGetHandleByUUID ||
        !er->nv->nvmlDeviceGetTotalEnergyConsumption) {
        snprintf(why, n, "NVML or its energy counter is not available");
        return 0;
    }
    if (er->nv->nvmlInit_v2() != 0) {
        snprintf(why, n, "nvmlInit failed");
        return 0;
    }
    if (w->cu->cuDeviceGetUuid(&u, w->dev) != CUDA_SUCCESS) {
        snprintf(why, n, "cuDeviceGetUuid failed");
        er->nv->nvmlShutdown();
        return 0;
    }
    snprintf(uuid, sizeof(uuid),
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
             b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
    if (er->nv->nvmlDeviceGetHandleByUUID(uuid, &er->dev) != 0) {
        snprintf(why, n, "NVML does not know %s", uuid);
        er->nv->nvmlShutdown();
        return 0;
    }
    return 1;
}

static int read_mj(energy_reader *er, unsigned long long *mj)
{
    return er->nv->nvmlDeviceGetTotalEnergyConsumption(er->dev, mj) == 0;
}

/* Enqueue `runs` back-to-back runs followed by event `ev`. */
static kopt_status enqueue_chunk(worker *w, int runs, CUevent ev)
{
    kopt_status rc;
    for (int r = 0; r < runs; r++)
        if ((rc = wk_run_once(w)) != KOPT_OK)
            return rc;
    CU(cuEventRecord(ev, w->stream), "energy chunk event");
    return KOPT_OK;
}

kopt_status wk_measure_energy(worker *w, double energy_s, double est_ms, json_t *out)
{
    energy_reader er;
    char why[160] = "";
    CUevent start = NULL, ev[2] = {NULL, NULL};
    unsigned long long e0 = 0, e1 = 0, e = 0, prev = 0;
    double t0 = 0, t1 = 0, wall0;
    int chunk_runs, runs = 0, chunks = 0, started = 0, done = 0, ok, nvml_open = 0;
    float gpu_ms = 0;
    kopt_status rc = KOPT_OK;

    if (energy_s <= 0)
        return KOPT_OK;
    chunk_runs = est_ms > 0 ? (int)(10.0 / est_ms) : 1;
    if (chunk_runs < 1)
        chunk_runs = 1;
    if (chunk_runs > 100000)
        chunk_runs = 100000;
    CU(cuEventCreate(&start, CU_EVENT_DEFAULT), "energy events");
    if (w->cu->cuEventCreate(&ev[0], CU_EVENT_DEFAULT) != CUDA_SUCCESS ||
        w->cu->cuEventCreate(&ev[1], CU_EVENT_DEFAULT) != CUDA_SUCCESS) {
        rc = wk_cufail(w, CUDA_ERROR_OUT_OF_MEMORY, "energy events");
        goto cleanup;
    }
    if (!(nvml_open = reader_open(w, &er, why, sizeof(why)))) {
        json_object_set_new(out, "energy_error", json_string(why));
        goto cleanup;
    }
    if ((rc = wk_restore(w)) != KOPT_OK)
        goto cleanup;
    if (w->cu->cuEventRecord(start, w->stream) != CUDA_SUCCESS) {
        rc = wk_cufail(w, CUDA_ERROR_UNKNOWN, "energy start event");
        goto cleanup;
    }
    wall0 = kopt_now_ms();
    if (!read_mj(&er, &prev)) {
        json_object_set_new(out, "energy_error", json_string("reading the energy counter failed"));
        goto cleanup;
    }
    /* keep two chunks in flight; poll the counter between them */
    while (!done) {
        CUevent cur = ev[chunks % 2];
        if (chunks >= 2) {
            CUresult r = w->cu->cuEventSynchronize(cur);   /* the chunk before last is done */
            if (r != CUDA_SUCCESS) {
                rc = wk_cufail(w, r, "energy runs");
                goto cleanup;
            }
        }
        if ((rc = enqueue_chunk(w, chunk_runs, cur)) != KOPT_OK)
            goto cleanup;
        chunks++;
        runs += chunk_runs;
        if (chunks < 2)
            continue;              /* the GPU is not busy long enough yet */
        ok = read_mj(&er, &e);
        if (!ok)
            break;
        if (e != prev) {
            double now = kopt_now_ms();
            if (!started) {
                started = 1;
                e0 = e;
                t0 = now;
            } else if (now - t0 >= energy_s * 1000.0) {
                e1 = e;
                t1 = now;
                done = 1;
            }
            prev = e;
        }
        if (chunks >= MAX_CHUNKS || kopt_now_ms() - wall0 > energy_s * 1000.0 * 4 + 2000.0)
            break;                 /* the counter stopped moving: give up, say so */
    }
    {
        CUresult r = w->cu->cuStreamSynchronize(w->stream);
        if (r != CUDA_SUCCESS) {
            rc = wk_cufail(w, r, "energy runs");
            goto cleanup;
        }
    }
    w->cu->cuEventElapsedTime(&gpu_ms, start, ev[(chunks - 1) % 2]);
    if (!done) {
        json_object_set_new(out, "energy_error",
                            json_string("NVML's energy counter did not advance over the window"));
        goto cleanup;
    }
    {
        double power_w = (double)(e1 - e0) / (t1 - t0);   /* mJ per ms = W */
        double per_run_ms = gpu_ms / runs;
        json_object_set_new(out, "energy", json_pack("{s:f, s:f, s:f, s:i, s:f}", "power_w",
                                                     power_w, "mj_per_run", power_w * per_run_ms,
                                                     "ms_per_run", per_run_ms, "runs", runs,
                                                     "window_s", (t1 - t0) / 1000.0));
    }
cleanup:
    if (start)
        w->cu->cuEventDestroy(start);
    for (int i = 0; i < 2; i++)
        if (ev[i])
            w->cu->cuEventDestroy(ev[i]);
    if (nvml_open)
        er.nv->nvmlShutdown();
    return rc;
}
