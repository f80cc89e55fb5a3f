/* Internal pieces of evaluation shared between its files (the folder's map: eval.c). */
#ifndef KOPT_EVAL_INT_H
#define KOPT_EVAL_INT_H

#include "kopt/eval.h"
#include "worker_int.h"

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
/* kopt_device_nvml (nvml.c, the same cached answer), and *mig = 1 when the GPU is in MIG
 * mode: CUDA then sees its instances, not the GPU's UUID. */
kopt_status kopt__device_nvml_mig(int ordinal, kopt_device_info *out, int *mig);
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

/* The short name the evaluation's files use for kopt__set_verdict (verdicts.c). */
#define set_verdict kopt__set_verdict

/* ---- plan and bind (plan.c) ------------------------------------------------------------ */

/* One size set's phase: its bound sizes for the reference and the candidate, its trials'
 * seeds, whether it is timed, and where its runs' outputs lie in the shared buffer. */
typedef struct phase_plan {
    const char *label;
    kopt_bound *ref, *cand;
    int ntrials;
    uint64_t seeds[16];
    int timed;
    uint64_t timing_seed;
    size_t slot;               /* bytes of the compared tensors of one run */
    size_t base;               /* offset of this phase in shm */
    int stream;                /* its runs handed over one at a time (torch_stream.c): two
                                * slots, trial 0's kept for the repeat */
} phase_plan;

/* Add the wall time from *t to now to step `step` of the parent's trace, and when it ran to
 * trace["parent_at"]; *t becomes now. */
void kopt__trace_step(json_t *trace, const char *step, double *t);
/* The trace as text, its WHO_at objects as offsets from "at_base_ms" (free()). */
char *kopt__trace_dump(json_t *trace);
/* Bytes of one run's outputs: the compared tensors in order, back to back. */
size_t kopt__slot_bytes(const kopt_bound *b);
/* Offset of `run`'s outputs (trial; n = the repeat of trial 0; n+1 = the last timed run). */
size_t kopt__out_at(const phase_plan *ph, int run);
/* A phase as the worker's job carries it, bound as `b` (`comp`: its kernels' names). */
json_t *kopt__phase_json(const phase_plan *ph, const kopt_bound *b, const kopt_compiled *comp,
                         const kopt_eval_opts *o);
/* Bytes of a phase's runs in the output buffer. */
size_t kopt__phase_size(const phase_plan *ph);
/* Streaming (torch_stream.c): two slots of the largest run's outputs; the phases laid out
 * in them (returns kopt__stream_bytes). */
size_t kopt__stream_bytes(const phase_plan *phases, int nphases);
size_t kopt__layout_stream(phase_plan *phases, int nphases);
/* Lay out the phases in the output buffer; return its size. */
size_t kopt__layout(phase_plan *phases, int nphases);
/* The "run" job of a subject (`measured`: its time is the one reported), with `extra`'s
 * fields; and a worker started for it (`serve`: it stays up for further candidates; a
 * prestarted *proc is sent the job). */
json_t *kopt__subject_job(int is_ref, int measured, const phase_plan *phases, int nphases,
                          const kopt_compiled *comp, const kopt_compiled *rt,
                          const kopt_eval_opts *o, json_t *extra);
kopt_status kopt__start_subject(kopt_ctx *ctx, int is_ref, int measured, int serve,
                                const phase_plan *phases, int nphases, size_t total,
                                const kopt_compiled *comp, const kopt_compiled *rt,
                                const kopt_eval_opts *o, json_t *extra,
                                kopt__worker_proc **proc);
/* A worker's start, step by step, from its "device" object. */
void kopt__setup_from_device(json_t *dev, kopt_worker_setup *out);
/* A fresh seed (/dev/urandom), positive as a signed 64-bit integer. */
uint64_t kopt__fresh_seed(void);
/* The compiled kernels' resources into r->kernels. */
void kopt__add_kernels(kopt_eval_result *r, const kopt_compiled *c);
/* The plan of both paths, in their order: the sizes (with the check sizes), the compile
 * target, the phases (returns how many), the seeds with room for the checks, the ceilings
 * (the session's, the caller's or measured; a session asks once). */
kopt_status kopt__plan_sizes(kopt_eval_result *r, kopt_ctx *ctx, const kopt_problem *prob,
                             const kopt_eval_opts *o);
void kopt__plan_arch(kopt_eval_result *r, const char *arch, const kopt_device_info *nvml);
int kopt__plan_phases(phase_plan *phases, const kopt_eval_result *r, int no_timing);
kopt_status kopt__plan_seeds(kopt_eval_result *r, kopt_ctx *ctx, phase_plan *phases, int nphases,
                             const kopt_eval_opts *o, const kopt_problem *prob);
void kopt__plan_ceilings(kopt_ctx *ctx, kopt_eval_result *r, const kopt_eval_opts *o,
                         kopt_eval_session *S);
/* Job fields for host-mode code: the sandbox, and CUPTI kernel records where the problem
 * forbids libraries (`wrapped`: under a wrapper such as compute-sanitizer). */
json_t *kopt__host_job_fields(const kopt_problem *prob, const kopt_eval_opts *o, int wrapped);

/* ---- the paths (eval.c, torch_eval.c) and sessions (session.c) ------------------------- */

/* One evaluation; with a session S, what S keeps across its runs. A problem with a PyTorch
 * reference goes on to kopt__eval_torch. */
kopt_status kopt__eval_core(kopt_eval_result **out, kopt_ctx *ctx, const kopt_problem *prob,
                            const kopt_candidate *cand, const kopt_eval_opts *opts,
                            kopt_eval_session *S);
kopt_status kopt__eval_torch(kopt_eval_result **out, kopt_ctx *ctx, const kopt_problem *prob,
                             const kopt_candidate *cand, const kopt_eval_opts *opts,
                             kopt_eval_session *S);
/* kopt_eval_session_warm for a PyTorch reference (torch_eval.c): the session's zygote
 * starts now, so that torch is imported before its first evaluation forks the workers. */
kopt_status kopt__torch_session_warm(kopt_ctx *ctx, kopt_eval_session *S);


struct kopt_eval_session {
    const kopt_problem *prob;       /* borrowed */
    kopt_eval_opts opts;            /* the caller's, with the seed fixed */
    kopt_ceilings ceilings;         /* as the first evaluation found them */
    int asked_ceilings;
    kopt_device_info nvml;          /* NVML's answer, once there was one */
    int has_nvml;
    kopt__worker_run ref_run;       /* the reference's outputs at the seed (result != NULL) */
    size_t ref_total;               /* the output layout they fill */
    kopt__worker_proc *ref_proc;    /* a streaming PyTorch reference's worker, kept up to
                                     * compare the session's candidates (torch_stream.c) */
    int ref_stream;                 /* ref_run is a streaming reference's (no outputs) */
    kopt__worker_proc *cand;        /* the serving candidate worker, or NULL */
    size_t cand_total;
    int runs, workers;
    /* a PyTorch reference's torch.compile baseline, once measured at the seed */
    int cmp_cached, cmp_has;
    kopt_timing cmp_timing;
    char cmp_note[512];
    __typeof__(((kopt_eval_result *)0)->bracket[2]) cmp_bracket;
    int cmp_base_cached;            /* it came from opts.torch_baselines (an earlier run) */
    kopt_torch_baseline cmp_base;   /* its key and numbers (kopt_eval_result's) */
    /* the next candidate's PyTorch worker, started (torch importing) once the last
     * evaluation's timing was over, and the subject it was started for */
    /* how many: two, one more each time a candidate's worker taken from them was not ready
     * yet (back to back, evaluations faster than a worker's start), up to ahead_cap() */
#define KOPT_AHEAD_MAX 6
    kopt__worker_proc *ahead[KOPT_AHEAD_MAX];   /* oldest first: the next candidate takes [0] */
    char ahead_subject[KOPT_AHEAD_MAX][16];
    int ahead_want;
    /* workers started by kopt_eval_session_warm, each making its CUDA context: the first
     * run's reference and serving candidate workers */
    kopt__worker_proc *pre_ref, *pre_cand;
    /* opts.pool at the open (borrowed): warm takes pre_ref and pre_cand from it before it
     * starts any; the session's runs never use a pool */
    struct kopt_eval_pool *handed;
    /* the PyTorch workers' zygote (zygote.c): started at the first PyTorch evaluation, it
     * forks the later ones' workers with torch imported ($KOPT_TORCH_ZYGOTE=0: none) */
    kopt__zygote *zygote;
};

/* ---- verify and time (verify.c) -------------------------------------------------------- */

/* The timing of `phase` of a run, its samples less `overhead` (< 0: the run's own
 * measurement of the bracket); _from_run: less the run's own. */
void kopt__timing_less(const kopt__worker_run *run, int phase, double overhead, kopt_timing *t);
void kopt__timing_from_run(const kopt__worker_run *run, int phase, kopt_timing *t);
/* Wall time a worker spent in its timed loops (warm-up included). */
double kopt__timing_wall(const kopt__worker_run *run);
/* Every run's outputs against the reference's (or the streamed checks `sp`), appended to
 * r->checks; the number of failing checks. */
int kopt__compare_phase(kopt_eval_result *r, const phase_plan *ph, const unsigned char *got,
                        const unsigned char *want, const kopt__stream_phase *sp);
/* Runs [from, to) of a phase against the reference's, appended to checks[*nchecks...]
 * (the repeat and an untimed phase's timed run skipped); the number failing. */
int kopt__compare_runs(kopt_check *checks, int *nchecks, const phase_plan *ph,
                       const unsigned char *got, const unsigned char *want, int from, int to);
/* The checks of a phase's trials made while the candidate's worker times it (its "trials"
 * event; kopt__worker_on_trials): the repeat and the trials' comparisons, kept and used
 * in the order and with the outcome they would have had afterwards. $KOPT_EARLY_CHECKS=0:
 * every check after the worker's result, as before. */
typedef struct kopt__early_checks {
    const phase_plan *phases;
    int nphases;
    const unsigned char *want;  /* the reference's outputs */
    int done[2], rep_fail[2];
    kopt_check rep[2];
    kopt_check *checks;         /* the trials' comparisons, phase after phase */
    int nchecks, from[2], count[2];
    double ms;                  /* spent in them, overlapping the timing */
} kopt__early_checks;
/* 1 set up (0: turned off or no memory: every check is made afterwards) */
int kopt__early_checks_init(kopt__early_checks *e, const phase_plan *phases, int nphases,
                            const unsigned char *want, int capacity);
void kopt__early_checks_on_trials(void *arg, int phase, const unsigned char *got);
/* kopt__check_repeat and kopt__compare_phase (no streaming) of phase p, from what was
 * checked early where it was */
int kopt__early_repeat(const kopt__early_checks *e, int p, const phase_plan *ph,
                       const unsigned char *got, kopt_check *c);
int kopt__early_compare(kopt_eval_result *r, const kopt__early_checks *e, int p,
                        const phase_plan *ph, const unsigned char *got,
                        const unsigned char *want);
void kopt__early_checks_free(kopt__early_checks *e);
/* Room in r->checks for every comparison the phases make. */
int kopt__checks_capacity(int trials, int ntensors);
/* The repeat of trial 0 against trial 0 (RACE): 1 with the first differing tensor in *c. */
int kopt__check_repeat(const phase_plan *ph, const unsigned char *got, kopt_check *c,
                       const kopt__stream_phase *sp);
/* The candidate's input checksums against the reference worker's: 1 with a message. */
int kopt__check_inputs(int phase, const char *label, const kopt__worker_run *cand,
                       const kopt__worker_run *ref, char *msg, size_t n);

/* ---- the PyTorch path's streaming (torch_stream.c) ------------------------------------- */

/* Whether the PyTorch path compares on the GPU; a job with its "stream" field (takes
 * `job`); a subject's streamed checks, one per phase, and their release. */
int kopt__torch_stream_mode(int cpu, int has_device, const kopt_device_info *nvml,
                            size_t export_bytes);
json_t *kopt__torch_streaming(json_t *job, int stream, int is_ref, size_t export);
kopt__stream_phase *kopt__stream_phases(const phase_plan *phases, int nphases);
void kopt__stream_phases_free(kopt__stream_phase *sp, int nphases);

/* ---- verdicts (verdicts.c) and guards (guards.c) --------------------------------------- */

/* The verdict of a worker that did not finish with "result" (`who`: "candidate", ...);
 * _reference_failed: the reference's, an ERROR unless SKIPPED (`what` names it). */
void kopt__worker_failure(kopt_eval_result *r, const kopt__worker_run *run, const char *who,
                          const kopt_eval_opts *o, int host_mode);
void kopt__reference_failed(kopt_eval_result *r, const kopt__worker_run *run,
                            const kopt_eval_opts *o, const char *what);
/* "allow_libraries": false: every kernel that ran must be the candidate's own; 1 when the
 * verdict was set. */
int kopt__check_libraries(kopt_ctx *ctx, kopt_eval_result *r, const kopt__worker_run *run,
                          const kopt_compiled *comp);
/* The verdicts --sanitize looks behind, and its runs under compute-sanitizer folded into
 * the verdict. */
int kopt__sanitizable(kopt_verdict v);
void kopt__run_sanitizers(kopt_ctx *ctx, kopt_eval_result *r, const kopt_problem *prob,
                          const phase_plan *phases, int nphases, const kopt_compiled *comp,
                          const kopt_compiled *rt, const kopt_eval_opts *o, int is_ref);

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
/* The lowest precision the SASS listing `sass` (nvdisasm or cuobjdump -sass) computes or
 * rounds values at: "fp8", "int8", "bf16", "fp16", "tf32" (tensor-core and packed half
 * instructions, conversions to bf16 and fp16), or "" when it stays at FP32 or wider. */
void kopt__sass_precision(const char *sass, char *out, size_t n);
/* The same of a shared object or cubin, through `cuobjdump -sass` ($KOPT_CUOBJDUMP, PATH,
 * the CUDA toolkit); without cuobjdump, or when it fails, out is "" and note says why. */
void kopt__binary_precision(kopt_ctx *ctx, const char *binary, char *out, size_t n,
                            char *note, size_t nn);
/* The same in a thread of its own, started as soon as the binary exists (cuobjdump takes
 * ~0.2 s a function, up to 4 read at once: it runs while the workers start);
 * _wait joins it (a job never started is a no-op) and fills out and note. A binary this
 * process read before (same file, size and mtime), or is reading ahead, is not read again:
 * _wait fills out from that read (or reads it itself when that read failed). */
/* The host's available memory in bytes: $KOPT_HOST_MEMORY_GB when set, else MemAvailable of
 * /proc/meminfo; 0 when unknown. */
size_t kopt__host_available_bytes(void);
typedef struct kopt__precision_job {
    pthread_t thread;
    int started, cached, have_stat;   /* cached: out comes from an earlier or ongoing read of
                                       * this file (_wait takes it) */
    int waited;
    struct stat st;
    char binary[4096], out[16], note[256];
} kopt__precision_job;
void kopt__binary_precision_start(kopt__precision_job *j, const char *binary);
void kopt__binary_precision_wait(kopt__precision_job *j);
/* Only joins the job's thread, if any (an evaluation that needs no more of it). */
void kopt__binary_precision_end(kopt__precision_job *j);
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
