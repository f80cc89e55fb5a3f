/*
 * The worker's ceiling microbenchmarks: DRAM copy/read/write bandwidth and compute rates,
 * each the median of repeated timed launches of kopt's runtime kernels.
 */
#include "worker_priv.h"

#include <stdlib.h>


/* Median over `reps` timed launches of f (after one warm-up launch). */
static kopt_status time_kernel(worker *w, CUfunction f, unsigned grid, unsigned block,
                               void **params, int reps, float *median_ms)
{
    CUevent a = NULL, b = NULL;
    float t[32];

    CU(cuEventCreate(&a, CU_EVENT_DEFAULT), "events");
    CU(cuEventCreate(&b, CU_EVENT_DEFAULT), "events");
    CU(cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, w->stream, params, NULL), "ceiling warm-up");
    for (int r = 0; r < reps && r < 32; r++) {
        CU(cuEventRecord(a, w->stream), "event");
        CU(cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, w->stream, params, NULL), "ceiling");
        CU(cuEventRecord(b, w->stream), "event");
        CU(cuEventSynchronize(b), "ceiling");
        w->cu->cuEventElapsedTime(&t[r], a, b);
    }
    qsort(t, (size_t)reps, sizeof(float), wk_cmp_float);
    *median_ms = t[reps / 2];
    w->cu->cuEventDestroy(a);
    w->cu->cuEventDestroy(b);
    return KOPT_OK;
}

kopt_status wk_measure_ceilings(worker *w, json_t *out)
{
    size_t free_b = 0, total_b = 0, bytes;
    CUdeviceptr a = 0, b = 0;
    long long n4;
    float ms;
    kopt_status rc;
    unsigned grid = (unsigned)w->sm_count * 8;

    CU(cuMemGetInfo(&free_b, &total_b), "memory info");
    bytes = (size_t)1 << 30;
    while (bytes * 2 > free_b / 2 && bytes > ((size_t)64 << 20))
        bytes /= 2;
    n4 = (long long)(bytes / 16);
    CU(cuMemAlloc(&a, bytes), "allocate");
    CU(cuMemAlloc(&b, bytes), "allocate");
    CU(cuMemsetD8(a, 1, bytes), "memset");
    {
        void *p[] = {&a, &b, &n4};
        if ((rc = time_kernel(w, w->f_copy, grid, 256, p, 15, &ms)) != KOPT_OK)
            return rc;
        json_object_set_new(out, "dram_copy_gbs", json_real(2.0 * (double)bytes / (ms * 1e6)));
    }
    {
        void *p[] = {&a, &n4, &w->sink};
        if ((rc = time_kernel(w, w->f_read, grid, 256, p, 15, &ms)) != KOPT_OK)
            return rc;
        json_object_set_new(out, "dram_read_gbs", json_real((double)bytes / (ms * 1e6)));
    }
    {
        void *p[] = {&b, &n4};
        if ((rc = time_kernel(w, w->f_write, grid, 256, p, 15, &ms)) != KOPT_OK)
            return rc;
        json_object_set_new(out, "dram_write_gbs", json_real((double)bytes / (ms * 1e6)));
    }
    {
        int iters = 8192;
        float fa = 0.999f, fb = 0.001f;
        unsigned g = (unsigned)w->sm_count * 16, blk = 256;
        void *p[] = {&w->sink, &iters, &fa, &fb};
        if ((rc = time_kernel(w, w->f_fma, g, blk, p, 9, &ms)) != KOPT_OK)
            return rc;
        json_object_set_new(out, "fp32_gflops",
                            json_real((double)g * blk * iters * 16.0 / (ms * 1e6)));
    }
    w->cu->cuMemFree(a);
    w->cu->cuMemFree(b);
    return KOPT_OK;
}

