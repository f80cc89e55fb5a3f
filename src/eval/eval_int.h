/* Internal pieces of evaluation shared between its files. */
#ifndef KOPT_EVAL_INT_H
#define KOPT_EVAL_INT_H

#include "kopt/eval.h"

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
/* What the candidate's worker applied, as JSON into `report`; into `note` (or "") the
 * warning that the result must carry when the lockdown was asked for and not installed. */
struct kopt__worker_run;
void kopt__torch_sandbox_report(const struct kopt__worker_run *run, int asked, char *report,
                                size_t cap, char *note, size_t ncap);

#endif
