/* Internal pieces of evaluation shared between its files. */
#ifndef KOPT_EVAL_INT_H
#define KOPT_EVAL_INT_H

#include "kopt/eval.h"

#include <pthread.h>
#include <sys/stat.h>

/* Compare one tensor's output (`got`) with the reference (`want`) into *c. */
void kopt__compare(const kopt_btensor *t, const void *got, const void *want, kopt_check *c);
/* Median, mean, min, max, p10, p90 of n samples. */
void kopt__timing_from_samples(const double *samples, int n, int warmup, kopt_timing *t);
/* Roofline position of a timing for the given work and ceilings. */
void kopt__roofline(kopt_roofline *r, double flops, double bytes, int compute,
                    const kopt_ceilings *c, double median_ms);
/* The GPUs a CUDA process sees: CUDA_VISIBLE_DEVICES `env` (NULL: unset, all `n`) as a
 * comma list of NVML indices or GPU-UUID prefixes (`uuids[i]` is NVML device i's), read as
 * CUDA reads it: up to the first entry that names no GPU, names one twice or repeats one.
 * map[k] = the NVML index of CUDA ordinal k; returns how many (at most `max`). */
#define KOPT_MAX_VISIBLE 64
int kopt__visible_map(const char *env, int n, const char *const *uuids, int *map, int max);
/* The fastest arithmetic (a kopt_compute) a correct candidate may use for work of
 * `compute` bound as `b`, at its outputs' tolerance: the speed-of-light guard's rate. */
int kopt__guard_compute(int compute, const kopt_bound *b);

/* src/eval/verdicts.c: the verdict and its message into r. */
void kopt__set_verdict(kopt_eval_result *r, kopt_verdict v, const char *fmt, ...)
    KOPT_PRINTF(3, 4);
/* WRONG naming the first failing check of r->checks (the comparison with `ref_name`), or
 * SHAPE_SPECIFIC when every failing check is at the problem's check_sizes. */
void kopt__wrong_verdict(kopt_eval_result *r, const char *ref_name);
/* The candidate's and the reference's roofline from the timed phase's work counts `b`,
 * and SUSPECT for a median at or below zero after the timer's cost is subtracted, or below
 * the speed-of-light bound (divided by `margin`). 1 when SUSPECT. */
/* The speed-of-light guard's ceilings: the measured ones, none below this share of the
 * spec-derived rate (verdicts.c). */
#define KOPT_GUARD_SPEC_FLOOR 0.9
void kopt__guard_ceilings(kopt_ceilings *g, const kopt_ceilings *c, const kopt_device_info *d);
int kopt__speed_of_light(kopt_eval_result *r, const kopt_bound *b, const kopt_problem *prob,
                         double margin);

/* The worker job that runs `comp` once at the bound sizes `b` on the inputs of `seed`
 * (one phase shaped as eval's "run" job, untimed; host mode: sandbox fields). The caller
 * sets "op" and adds its fields, and owns the result; *shm_size is the output buffer the
 * job needs. NULL on allocation failure. */
#include <jansson.h>
json_t *kopt__eval_job(const kopt_problem *prob, const kopt_bound *b, const kopt_compiled *comp,
                       const kopt_compiled *rt, const kopt_eval_opts *o, uint64_t seed,
                       size_t *shm_size);

/* The PyTorch worker's sandbox (torch_sandbox.c): the job's "sandbox" object for `subject`
 * ("modelnew" or "host"; NULL for the reference and torch.compile, or with no_sandbox),
 * owned by the caller. */
json_t *kopt__torch_sandbox_job(kopt_ctx *ctx, const char *subject, const kopt_eval_opts *o);
struct kopt__worker_run;
/* The PyTorch worker's timed samples as libkopt's clock kept them (its "clock" events)
 * put in place of those its Python reported (src/eval/torch_checks.c). 1, with a message,
 * when the two differ: something between the clock and the report changed them. */
int kopt__torch_clock_apply(struct kopt__worker_run *run, char *msg, size_t n);
/* The kernel census of the candidate's checked call (phase 0's "kernels") and the clock
 * it was timed with, into r (timer, census, kernels_launched, own_kernels, precision). */
void kopt__torch_census(kopt_eval_result *r, const struct kopt__worker_run *run);
/* 1 when a kernel's (mangled) name is a library's: PyTorch's aten and c10, cuBLAS(Lt),
 * cuDNN, CUTLASS, cub/thrust, NVIDIA's generated GEMMs (xmma, nvjet, sm90_...): the
 * origin table of src/profile/kernel_name.c (kopt_kernel_origin_of). */
int kopt__kernel_from_library(const char *name);
/* The lowest precision the SASS listing `sass` (nvdisasm or cuobjdump -sass) computes at:
 * "fp8", "int8", "bf16", "fp16", "tf32" (tensor-core and packed half instructions), or ""
 * when it computes at FP32 or wider. */
void kopt__sass_precision(const char *sass, char *out, size_t n);
/* The same of a shared object or cubin, through `cuobjdump -sass` ($KOPT_CUOBJDUMP, PATH,
 * the CUDA toolkit); without cuobjdump, or when it fails, out is "" and note says why. */
void kopt__binary_precision(kopt_ctx *ctx, const char *binary, char *out, size_t n,
                            char *note, size_t nn);
/* The same in a thread of its own, started as soon as the binary exists (cuobjdump takes
 * about a second and a half on a host-mode candidate: it runs while the workers start);
 * _wait joins it (a job never started is a no-op) and fills out and note. A binary this
 * process read before (same file, size and mtime) is not read again: _start fills out. */
/* The host's available memory in bytes: $KOPT_HOST_MEMORY_GB when set, else MemAvailable of
 * /proc/meminfo; 0 when unknown. */
size_t kopt__host_available_bytes(void);
typedef struct kopt__precision_job {
    pthread_t thread;
    int started, cached, have_stat;   /* cached: out came from an earlier read of this file */
    struct stat st;
    char binary[4096], out[16], note[256];
} kopt__precision_job;
void kopt__binary_precision_start(kopt__precision_job *j, const char *binary);
void kopt__binary_precision_wait(kopt__precision_job *j);
/* What the candidate's worker applied, as JSON into `report`; into `note` (or "") the
 * warning that the result must carry when the lockdown was asked for and not installed. */
void kopt__torch_sandbox_report(const struct kopt__worker_run *run, int asked, char *report,
                                size_t cap, char *note, size_t ncap);

/* torch_baseline.c: the torch.compile baseline kept across runs (docs/kernelbench.md).
 * The key of an evaluation's baseline (torch_version left ""): the problem, the device
 * ("cpu" with `cpu`, else NVML's UUID, else its name and cc), the main sizes, and the
 * settings that change the number (kopt's version, the timing options, torch.compile's mode
 * and environment). */
void kopt__torch_baseline_key(kopt_torch_baseline *key, const kopt_problem *prob,
                              const kopt_vars *sizes, const kopt_eval_opts *o, int cpu,
                              const kopt_device_info *nvml);
/* How many of o->torch_baselines have `key` (any torch version) and a time. */
int kopt__torch_baseline_candidates(const kopt_eval_opts *o, const kopt_torch_baseline *key);
/* The first of o->torch_baselines with `key` and `torch_version` (as the reference's worker
 * reported it), if eager's median then (b->eager_ms) and now (eager_ms) are within
 * KOPT_BASELINE_EAGER_DRIFT (not compared on the CPU); else NULL, with why none was taken in `why`.
 * Only the first of that version counts (the store gives the newest first). */
const kopt_torch_baseline *kopt__torch_baseline_pick(const kopt_eval_opts *o,
                                                     const kopt_torch_baseline *key,
                                                     const char *torch_version,
                                                     double eager_ms, char *why, size_t nwhy);
/* KernelBench v3's baseline into r: baseline_ms, the faster of eager and torch.compile when
 * both were timed (else 0), and speedup_best, it over r->timing's median (0 when unknown). */
void kopt__torch_best_baseline(kopt_eval_result *r);
/* Now, UTC, "YYYY-MM-DDTHH:MM:SSZ". */
void kopt__utc_now(char *out, size_t n);
/* A session's store path and ceilings set again (kopt_run_session_attach: what it borrowed
 * from the run it was opened with is gone). */
void kopt__eval_session_rebind(kopt_eval_session *s, const char *db_path,
                               const kopt_ceilings *ceilings);

#endif
