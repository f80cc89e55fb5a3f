/*
 * The worker's ceiling microbenchmarks: DRAM copy/read/write bandwidth, L2 and shared-memory
 * bandwidth, FP32 and FP64 FMA rates, and dense tensor-core rates (FP64, FP16, BF16, TF32,
 * FP8), each the median of repeated timed launches of kopt's runtime kernels
 * (src/cuda/runtime_kernels.c). Compute benchmarks scale their iteration count until one
 * launch takes about TARGET_MS, so launch overhead does not count. Tensor-core rates are the
 * best of the portable mma.sync path (sm_80+) and, on compute capability 9.0 (built for
 * sm_90a), the wgmma path that reaches Hopper's peak. The JSON fields are read by
 * src/eval/device.c; the extra "*_wgmma_*", "*_mma_*" and "*_fma_*" fields say which path gave
 * what. A CUDA failure after the DRAM and FP32 benchmarks stops the rest, which stay
 * unmeasured, and is named in "failed".
 */
#include "worker_priv.h"

#include <stdlib.h>
#include <string.h>

#define TARGET_MS 2.0      /* wanted length of one timed launch */
#define RATE_REPS 9        /* timed launches per benchmark (the median is kept) */

/* Median over `reps` timed launches of f (after one warm-up launch). */
static kopt_status time_kernel(worker *w, CUfunction f, unsigned grid, unsigned block,
                               void **params, int reps, float *median_ms)
{
    CUevent a = NULL, b = NULL;
    float t[32];

    if (reps > 32)
        reps = 32;
    CU(cuEventCreate(&a, CU_EVENT_DEFAULT), "events");
    CU(cuEventCreate(&b, CU_EVENT_DEFAULT), "events");
    CU(cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, w->stream, params, NULL), "ceiling warm-up");
    for (int r = 0; r < reps; r++) {
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

/* One compute or cache benchmark: a kernel whose work grows linearly with *iters (one of
 * its parameters). `work` is the work (FLOP or bytes) of the whole grid per iteration; the
 * rate comes out in G per second. *iters is raised until a launch takes about TARGET_MS. */
static kopt_status measure_rate(worker *w, const char *kernel, unsigned grid, unsigned block,
                                void **params, int *iters, double work, double *rate)
{
    CUfunction f;
    float ms = 0.f;
    kopt_status rc;

    *rate = 0;
    CU(cuModuleGetFunction(&f, w->rt, kernel), kernel);
    for (int round = 0; round < 6; round++) {
        double scale;
        if ((rc = time_kernel(w, f, grid, block, params, 1, &ms)) != KOPT_OK)
            return rc;
        if (ms >= TARGET_MS * 0.5)
            break;
        scale = ms > 0 ? TARGET_MS / ms : 64.0;
        if (scale > 64.0)
            scale = 64.0;
        if ((double)*iters * scale > 1 << 28)
            break;
        *iters = (int)((double)*iters * scale) + 1;
    }
    if ((rc = time_kernel(w, f, grid, block, params, RATE_REPS, &ms)) != KOPT_OK)
        return rc;
    /* a kernel whose time does not grow with its iterations (its body compiled out for
     * this architecture) measures nothing: rate 0 */
    if (ms >= TARGET_MS * 0.25)
        *rate = work * (double)*iters / ((double)ms * 1e6);
    return KOPT_OK;
}

/* Set a measured rate; 0 (not measured) leaves the field out. */
static void put_rate(json_t *out, const char *key, double rate)
{
    if (rate > 0)
        json_object_set_new(out, key, json_real(rate));
}

static int device_attr(worker *w, CUdevice_attribute a)
{
    int v = 0;
    if (w->cu->cuDeviceGetAttribute(&v, a, w->dev) != CUDA_SUCCESS)
        return 0;
    return v;
}

/* DRAM copy, read and write bandwidth over two buffers of `bytes`; `a` is left holding
 * ones for the L2 benchmark. */
static kopt_status measure_dram(worker *w, CUdeviceptr a, CUdeviceptr b, size_t bytes,
                                json_t *out)
{
    long long n4 = (long long)(bytes / 16);
    unsigned grid = (unsigned)w->sm_count * 8;
    float ms;
    kopt_status rc;

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
    return KOPT_OK;
}

/* L2 read bandwidth: a buffer of about a quarter of the L2 (well inside it even where the L2
 * is split in two partitions; at most half of it), read over and over by up to 8 blocks of
 * 256 threads per SM, each thread with 4 loads of 16 bytes in flight. */
static kopt_status measure_l2(worker *w, CUdeviceptr buf, size_t cap, json_t *out)
{
    unsigned per_sm = 8, grid, block = 256;
    long long l2 = device_attr(w, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE), chunk, n;
    int iters = 16;
    double gbs;
    kopt_status rc;

    if (l2 <= 0)
        return KOPT_OK;
    /* one pass of the grid reads `chunk` 16-byte words: keep it within half the L2 */
    while (per_sm > 1 && 4LL * w->sm_count * per_sm * block * 16 > l2 / 2)
        per_sm /= 2;
    grid = (unsigned)w->sm_count * per_sm;
    chunk = 4LL * grid * block;
    n = l2 / 4 / 16 / chunk * chunk;
    if (n < chunk)
        n = chunk;
    if ((size_t)n * 16 > cap || n * 16 > l2 / 2 + l2 / 8)
        return KOPT_OK;        /* too many SMs for this L2: not measured */
    {
        void *p[] = {&buf, &n, &iters, &w->sink};
        if ((rc = measure_rate(w, "kopt_l2_read", grid, block, p, &iters, 16.0 * (double)n,
                               &gbs)) != KOPT_OK)
            return rc;
    }
    put_rate(out, "l2_gbs", gbs);
    json_object_set_new(out, "l2_buffer_bytes", json_integer(n * 16));
    return KOPT_OK;
}

/* Shared-memory read bandwidth: 2 blocks of 1024 threads per SM, 16-byte loads. */
static kopt_status measure_smem(worker *w, json_t *out)
{
    unsigned grid = (unsigned)w->sm_count * 2, block = 1024;
    int iters = 64;
    double gbs;
    kopt_status rc;
    void *p[] = {&iters, &w->sink};

    if ((rc = measure_rate(w, "kopt_smem_read", grid, block, p, &iters,
                           128.0 * grid * block, &gbs)) != KOPT_OK)
        return rc;
    put_rate(out, "smem_gbs", gbs);
    return KOPT_OK;
}

/* FP32 and FP64 FMA: 16 blocks of 256 threads per SM, 8 chains of FMAs per thread. */
static kopt_status measure_fma(worker *w, json_t *out, double *fp64)
{
    unsigned grid = (unsigned)w->sm_count * 16, block = 256;
    double rate;
    kopt_status rc;
    {
        int iters = 256;
        float fa = 0.999f, fb = 0.001f;
        void *p[] = {&w->sink, &iters, &fa, &fb};
        if ((rc = measure_rate(w, "kopt_fma_f32", grid, block, p, &iters, 16.0 * grid * block,
                               &rate)) != KOPT_OK)
            return rc;
        put_rate(out, "fp32_gflops", rate);
    }
    {
        int iters = 32;
        double da = 0.999, db = 0.001;
        void *p[] = {&w->sink, &iters, &da, &db};
        if ((rc = measure_rate(w, "kopt_fma_f64", grid, block, p, &iters, 16.0 * grid * block,
                               &rate)) != KOPT_OK)
            return rc;
        put_rate(out, "fp64_fma_gflops", rate);
        *fp64 = rate;
    }
    return KOPT_OK;
}

/* The tensor-core precisions, in the order of kopt_compute from fp16 on. */
typedef struct tc_kind {
    const char *name;              /* JSON prefix */
    const char *mma, *wgmma;       /* kernels */
    double mma_flop, wgmma_flop;   /* FLOP of one instruction */
    int mma_min_cc;                /* major*10+minor from which mma.sync is native */
} tc_kind;

static const tc_kind tc_kinds[] = {
    {"fp16", "kopt_mma_f16", "kopt_wgmma_f16", 2.0 * 16 * 8 * 16, 2.0 * 64 * 256 * 16, 80},
    {"bf16", "kopt_mma_bf16", "kopt_wgmma_bf16", 2.0 * 16 * 8 * 16, 2.0 * 64 * 256 * 16, 80},
    {"tf32", "kopt_mma_tf32", "kopt_wgmma_tf32", 2.0 * 16 * 8 * 8, 2.0 * 64 * 256 * 8, 80},
    {"fp8", "kopt_mma_fp8", "kopt_wgmma_fp8", 2.0 * 16 * 8 * 32, 2.0 * 64 * 256 * 32, 89},
};

/* mma.sync: 4 blocks of 8 warps per SM, each warp 8 instructions per iteration. (The
 * compute kernels' never-taken result stores index the 4 KB sink by threadIdx.x: keep their
 * blocks at 256 threads or fewer.) */
static kopt_status mma_rate(worker *w, const char *kernel, double flop, double *rate)
{
    unsigned grid = (unsigned)w->sm_count * 4, block = 256;
    int iters = 64;
    void *p[] = {&w->sink, &iters};

    return measure_rate(w, kernel, grid, block, p, &iters, flop * 8.0 * grid * (block / 32),
                        rate);
}

/* wgmma: one block of 2 warpgroups per SM, each warpgroup 4 wgmmas per iteration. */
static kopt_status wgmma_rate(worker *w, const char *kernel, double flop, double *rate)
{
    unsigned grid = (unsigned)w->sm_count, block = 256;
    int iters = 16;
    void *p[] = {&w->sink, &iters};

    return measure_rate(w, kernel, grid, block, p, &iters, flop * 4.0 * grid * (block / 128),
                        rate);
}

static kopt_status measure_tensor(worker *w, json_t *out, double fp64_fma)
{
    int cc = device_attr(w, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) * 10 +
             device_attr(w, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    int hopper = cc == 90;          /* the runtime module is built for sm_90a there */
    char key[64];
    kopt_status rc;
    double rate, best;

    if (cc >= 80) {                 /* FP64 tensor cores (DMMA) */
        /* m16n8k16 on sm_90+, m8n8k4 before */
        double flop = cc >= 90 ? 2.0 * 16 * 8 * 16 : 2.0 * 8 * 8 * 4;
        if ((rc = mma_rate(w, "kopt_mma_f64", flop, &rate)) != KOPT_OK)
            return rc;
        put_rate(out, "fp64_tc_gflops", rate);
        put_rate(out, "fp64_gflops", rate > fp64_fma ? rate : fp64_fma);
    }
    for (size_t k = 0; k < sizeof(tc_kinds) / sizeof(tc_kinds[0]); k++) {
        const tc_kind *t = &tc_kinds[k];
        best = 0;
        /* fp8 mma.sync is emulated on sm_90 (no QMMA in its SASS): only wgmma is timed */
        int mma_native = cc >= t->mma_min_cc && !(hopper && t->mma_min_cc == 89);
        if (mma_native) {
            if ((rc = mma_rate(w, t->mma, t->mma_flop, &rate)) != KOPT_OK)
                return rc;
            snprintf(key, sizeof(key), "%s_tc_mma_gflops", t->name);
            put_rate(out, key, rate);
            best = rate;
        }
        if (hopper) {
            if ((rc = wgmma_rate(w, t->wgmma, t->wgmma_flop, &rate)) != KOPT_OK)
                return rc;
            snprintf(key, sizeof(key), "%s_tc_wgmma_gflops", t->name);
            put_rate(out, key, rate);
            if (rate > best)
                best = rate;
        }
        snprintf(key, sizeof(key), "%s_tc_gflops", t->name);
        put_rate(out, key, best);
    }
    return KOPT_OK;
}

kopt_status wk_measure_ceilings(worker *w, json_t *out)
{
    size_t free_b = 0, total_b = 0, bytes;
    CUdeviceptr a = 0, b = 0;
    double fp64 = 0;
    double t0 = kopt_now_ms();
    kopt_status rc;

    CU(cuMemGetInfo(&free_b, &total_b), "memory info");
    bytes = (size_t)1 << 30;
    while (bytes * 2 > free_b / 2 && bytes > ((size_t)64 << 20))
        bytes /= 2;
    CU(cuMemAlloc(&a, bytes), "allocate");
    CU(cuMemAlloc(&b, bytes), "allocate");
    if ((rc = measure_dram(w, a, b, bytes, out)) != KOPT_OK)
        return rc;
    if ((rc = measure_fma(w, out, &fp64)) != KOPT_OK)
        return rc;
    put_rate(out, "fp64_gflops", fp64);
    /* the rest is optional: a failure leaves the fields out and is reported */
    if ((rc = measure_l2(w, a, bytes, out)) != KOPT_OK || (rc = measure_smem(w, out)) != KOPT_OK ||
        (rc = measure_tensor(w, out, fp64)) != KOPT_OK) {
        json_object_set_new(out, "failed", json_string(kopt_errmsg(w->ctx)));
        w->fail_kind = NULL;
    }
    json_object_set_new(out, "measure_ms", json_real(kopt_now_ms() - t0));
    w->cu->cuMemFree(a);
    w->cu->cuMemFree(b);
    return KOPT_OK;
}
