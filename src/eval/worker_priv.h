/*
 * Internal: the worker's state and what its files share. Only the worker process uses
 * these. Each file calls only files below it (no circle):
 *
 *   worker.c            the main loop: jobs taken, set up, run, answered
 *   worker_profile.c    the "profile" op: CUPTI's range profiler around runs
 *   worker_energy.c     energy per run (NVML's counter around back-to-back runs)
 *   worker_ceilings.c   the device's ceilings (bandwidth and compute microbenchmarks)
 *   worker_run.c        a phase: tensors, launches, inputs, runs, trials, the timed loop
 *   worker_setup.c      the context, runtime module, cuRAND, buffers, the candidate, sandbox
 *   worker_util.c       events on fd 3, CUDA failures (CU()), runtime launches, the trace
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
    int ordinal;
    double early_ms;             /* the context made before the job came (--early-device) */
    CUcontext pctx;
    CUstream stream;
    CUmodule rt, mod;
    char rt_path[4096];          /* the runtime module loaded (rt) */
    double early_setup_ms;       /* wk_early_setup done before the job came */
    json_t *dev_info;            /* device_json's answer, asked by wk_early_setup */
    CUfunction f_from_f32, f_from_f64, f_set, f_fill, f_flush, f_copy, f_read, f_write, f_fma;
    CUfunction f_empty, f_checksum, f_hash_random;
    curandGenerator_t gen;
    CUdeviceptr rand_buf, flush_buf, sink;
    size_t rand_cap, flush_n4;
    int sm_count;
    void *so;
    kopt_candidate_run_fn host_run;
    int sandboxed;               /* host mode under the sandbox: check after every call */
    int records;                 /* record the kernels of the first call (allow_libraries: false) */
    json_t *gpu_kernels;         /* what that call ran, other than kopt's own kernels */
    int no_poison;               /* leave outputs and scratch unwritten (initcheck runs) */
    json_t *trace;               /* step -> wall ms, summed over trials (the result's "trace") */
    int pinned;                  /* shm is registered with CUDA */
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

/* worker_util.c */
/* Write one event line on fd 3 (takes the reference). */
void wk_emit(json_t *obj);
void wk_progress(worker *w, int phase, const char *what);
/* Record a CUDA failure on the worker and context. Returns KOPT_E_CUDA. */
kopt_status wk_cufail(worker *w, CUresult r, const char *what);
/* Launch runtime kernel f over n elements (256 threads a block) on the worker's stream. */
kopt_status wk_launch_rt(worker *w, CUfunction f, long long n, void **params, const char *what);
/* Add the wall time since `t0` (kopt_now_ms) to step `step` of the worker's trace. */
void wk_trace(worker *w, const char *step, double t0);
/* worker.c calls the three below; they call worker_run.c and worker_util.c. */
/* Measure DRAM bandwidth and compute rates into `out` (worker_ceilings.c). */
kopt_status wk_measure_ceilings(worker *w, json_t *out);
/* Profile the job's first phase with CUPTI's range profiler into `result` (worker_profile.c). */
kopt_status wk_profile(worker *w, json_t *job, json_t *result);
/* Energy per run: back-to-back runs for `energy_s` seconds between NVML counter updates
 * (worker_energy.c); adds "energy" {power_w, mj_per_run, ms_per_run, runs, window_s} or
 * "energy_error" to `out`. `est_ms`: a run's time, to size the chunks. */
kopt_status wk_measure_energy(worker *w, double energy_s, double est_ms, json_t *out);
/* worker_run.c's phase steps, for the files above it: set up a phase (tensors, launches);
 * generate inputs from `seed` and poison outputs, synchronized; poison again (restores
 * in-out tensors); one run of the candidate; free the phase. */
kopt_status wk_setup_phase(worker *w, json_t *ph, json_t *kernels_out);
kopt_status wk_prepare_inputs(worker *w, uint64_t seed);
kopt_status wk_restore(worker *w);
kopt_status wk_run_once(worker *w);
void wk_free_phase(worker *w);
/* qsort's comparison of floats (worker_run.c; the ceilings' medians too). */
int wk_cmp_float(const void *a, const void *b);
/* 1 when the median of n sorted samples is known to within `precision` of itself (95%;
 * tests/unit/test_verify.c tests it). */
int wk_median_known(const float *sorted, int n, double precision);
/* worker_run.c, for the main loop: a phase's trials (outputs at their offsets, the
 * inputs' checksums into `sums`), its timed loop into `result`, the median of its samples. */
kopt_status wk_run_trials(worker *w, int phase, json_t *trials, json_t *sums);
kopt_status wk_run_timing(worker *w, int phase, json_t *tm, json_t *result);
double wk_median_sample(json_t *samples);
/* worker_setup.c, for the main loop: the context on device `ordinal`; the rest of the
 * set-up an early worker does before its job comes; the job's set-up (its "device" object
 * into *dev); the candidate's module or shared object; the sandbox around host code. */
kopt_status wk_make_context(worker *w, int ordinal);
void wk_early_setup(worker *w);
kopt_status wk_setup(worker *w, json_t *job, json_t **dev);
kopt_status wk_load_candidate(worker *w, json_t *job);
kopt_status wk_guard_candidate(worker *w, json_t *job, json_t *dev);

#define CU(call, what)                                  \
    do {                                                \
        CUresult r_ = w->cu->call;                      \
        if (r_ != CUDA_SUCCESS)                         \
            return wk_cufail(w, r_, what);                 \
    } while (0)

#endif
