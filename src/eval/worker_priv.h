/*
 * Internal: the worker's state and the helpers shared by its files (worker.c runs jobs;
 * worker_ceilings.c measures the device's ceilings). Only the worker process uses these.
 */
#ifndef KOPT_WORKER_PRIV_H
#define KOPT_WORKER_PRIV_H

#include "worker_int.h"
#include "kopt/candidate.h"
#include "kopt/problem.h"
#include "../cuda/cuda_int.h"

#include <jansson.h>

#define MAX_ARGS 64

typedef union argval {
    CUdeviceptr p;
    int32_t i32;
    int64_t i64;
    float f32;
    double f64;
} argval;

typedef struct wtensor {
    kopt_btensor t;
    CUdeviceptr ptr;
    CUdeviceptr pristine;        /* inout: the generated values, restored before each run */
} wtensor;

typedef struct wlaunch {
    int is_memset;
    int tensor;
    double value;
    CUfunction fn;
    char name[256];
    unsigned grid[3], block[3], smem;
    int nargs;
    argval vals[MAX_ARGS];
    void *params[MAX_ARGS];
} wlaunch;

typedef struct worker {
    kopt_ctx *ctx;
    const kopt_cu_api *cu;
    const kopt_curand_api *cr;
    CUdevice dev;
    CUcontext pctx;
    CUstream stream;
    CUmodule rt, mod;
    CUfunction f_from_f32, f_from_f64, f_set, f_fill, f_flush, f_copy, f_read, f_write, f_fma;
    CUfunction f_empty, f_checksum;
    curandGenerator_t gen;
    CUdeviceptr rand_buf, flush_buf, sink;
    size_t rand_cap, flush_n4;
    int sm_count;
    void *so;
    kopt_candidate_run_fn host_run;
    unsigned char *shm;
    size_t shm_size;
    /* the current phase */
    int ntensors;
    wtensor *tensors;
    int nlaunches;
    wlaunch *launches;
    kopt_vars sizes;
    const char *phase_label;
    /* last failure */
    const char *fail_kind;
    int fail_cuda;
    char fail_step[128];
} worker;

/* Write one event line on fd 3 (takes the reference). */
void wk_emit(json_t *obj);
void wk_progress(worker *w, int phase, const char *what);
/* Record a CUDA failure on the worker and context. Returns KOPT_E_CUDA. */
kopt_status wk_cufail(worker *w, CUresult r, const char *what);
unsigned wk_grid_for(worker *w, long long n);
kopt_status wk_launch_rt(worker *w, CUfunction f, long long n, void **params, const char *what);
int wk_cmp_float(const void *a, const void *b);
/* Measure DRAM bandwidth and compute rates into `out` (worker_ceilings.c). */
kopt_status wk_measure_ceilings(worker *w, json_t *out);

#define CU(call, what)                                  \
    do {                                                \
        CUresult r_ = w->cu->call;                      \
        if (r_ != CUDA_SUCCESS)                         \
            return wk_cufail(w, r_, what);                 \
    } while (0)

#endif
