/*
 * kopt/eval.h: evaluating a candidate against its problem's reference.
 *
 * kopt_eval_run() compiles the reference and the candidate (cached), runs each in its own
 * worker process (the calling process never creates a CUDA context), checks every output
 * element of every trial against the reference's output for the same inputs, times both
 * with CUDA events (warm-up, L2 flushed before each run, the outputs of timed runs checked
 * too), places the result on the device's measured roofline, and gives a verdict.
 * Without a GPU it compiles, reports resources and returns verdict KOPT_VERDICT_SKIPPED.
 * Nothing is stored: the run API (kopt/run.h) evaluates through these calls and records
 * the results in its store.
 *
 * Ownership: *out is owned by the caller (kopt_eval_result_free). Borrowed pointers in
 * the options must outlive the call.
 */
#ifndef KOPT_EVAL_H
#define KOPT_EVAL_H

#include "kopt/compile.h"
#include "kopt/device.h"
#include "kopt/problem.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum kopt_verdict {
    KOPT_VERDICT_OK = 0,        /* correct; timed */
    KOPT_VERDICT_WRONG,         /* an output differs from the reference beyond tolerance */
    KOPT_VERDICT_COMPILE_ERROR, /* the compiler rejected it */
    KOPT_VERDICT_CRASH,         /* illegal address, trap, the worker died */
    KOPT_VERDICT_TIMEOUT,       /* no progress within the timeout */
    KOPT_VERDICT_OOM,           /* out of device memory */
    KOPT_VERDICT_SUSPECT,       /* faster than the device's physical bound: not trusted */
    KOPT_VERDICT_LAUNCH_ERROR,  /* the launch was refused (configuration, arguments) */
    KOPT_VERDICT_SKIPPED,       /* no GPU: static work only */
    KOPT_VERDICT_ERROR,         /* kopt itself failed (bad problem, harness error) */
    KOPT_VERDICT_RACE,          /* two runs on the same inputs disagree beyond tolerance */
    KOPT_VERDICT_INPUT_MUTATED, /* the candidate changed an input tensor */
    KOPT_VERDICT_STATEFUL,      /* a repeated run on the same inputs left outputs unwritten */
    KOPT_VERDICT_OFF_STREAM,    /* host mode: work ran outside the stream it was given */
    KOPT_VERDICT_TAMPER,        /* host mode: the candidate interfered with the harness */
    KOPT_VERDICT_FORBIDDEN_LIBRARY, /* a library kernel ran where "allow_libraries" is false */
    KOPT_VERDICT_SANITIZER,     /* compute-sanitizer found errors (--sanitize) */
    KOPT_VERDICT_SHAPE_SPECIFIC, /* correct at the benchmark sizes, wrong at the problem's
                                  * check_sizes: written for one shape */
    KOPT_VERDICT_COUNT
} kopt_verdict;
const char *kopt_verdict_name(kopt_verdict v);
/* The CLI's exit code for a verdict (documented in docs/cli.md). */
int kopt_verdict_exit_code(kopt_verdict v);

typedef struct kopt_check {
    char tensor[64];
    char sizes_label[16];       /* "main" or "check" */
    char run[24];               /* "trial 0", ..., "timed" */
    uint64_t seed;
    int64_t count;
    int64_t mismatches;
    double max_abs_err, max_rel_err;
    double atol, rtol;
    int64_t first_index;        /* -1 when none */
    int ndim;
    int64_t first_coord[KOPT_MAX_DIMS];
    double first_got, first_want;
} kopt_check;

/* Times are CUDA-event brackets around one run, minus the bracket's own cost (an empty
 * kernel timed the same way, `overhead_ms`), so they match the kernels' GPU duration. */
typedef struct kopt_timing {
    int n;                      /* timed repetitions (0: not timed) */
    int warmup_runs;
    double median_ms, mean_ms, min_ms, max_ms, p10_ms, p90_ms;
    double raw_median_ms;       /* before subtracting overhead_ms */
    double overhead_ms;
} kopt_timing;

typedef struct kopt_kernel_resources {
    char name[256];
    int registers, static_smem, stack_frame, spill_stores, spill_loads;
    int max_threads_per_block;  /* from the driver; 0 when not run */
} kopt_kernel_resources;

typedef struct kopt_roofline {
    int valid;
    double flops, bytes;        /* the problem's work at the timed sizes */
    double achieved_gbs, achieved_gflops;
    double bound_ms;            /* max(bytes / bandwidth, flops / compute rate) */
    double pct_of_bound;        /* bound_ms / median_ms * 100 */
    const char *limiter;        /* "memory" or "compute" */
    const char *compute_source; /* "measured" or "spec" */
} kopt_roofline;

/* One compute-sanitizer tool's findings (--sanitize). */
typedef struct kopt_sanitizer_report {
    char tool[16];              /* "memcheck", "racecheck", "initcheck" */
    int ran;                    /* 0: could not run (summary says why) */
    int errors;                 /* from its ERROR SUMMARY */
    char summary[1536];         /* the first findings, one per line */
} kopt_sanitizer_report;

/* Where a worker's start went, in wall milliseconds (docs/eval.md, "Where the time goes"). */
typedef struct kopt_worker_setup {
    double exec_ms;             /* fork to the worker's main: exec, dynamic loading */
    double context_ms;          /* libcuda loaded, cuInit, the primary context */
    double module_ms;           /* kopt's own kernels loaded */
    double curand_ms;           /* cuRAND loaded and its generator made */
    double buffers_ms;          /* the L2 flush buffer allocated and cleared */
    double pin_ms;              /* the shared output buffer mapped and pinned */
    double candidate_ms;        /* the subject's module (or shared object) loaded, guarded */
    double total_ms;            /* main to ready (exec_ms not included) */
    int context_early;          /* 1: the context was made before the job came (a worker
                                 * started ahead: kopt_eval_pool, kopt_eval_session_warm) */
} kopt_worker_setup;

/* A PyTorch reference's torch.compile baseline, as one evaluation measured it
 * (docs/kernelbench.md, "Baselines and timing"): the key that says where it may be reused,
 * and what it measured. The store keeps them across runs (kopt/store.h, torch_baselines);
 * kopt_run_eval looks them up and passes them in opts.torch_baselines. */
typedef struct kopt_torch_baseline {
    /* the key: every field must equal the evaluation's own for the baseline to be reused */
    char problem_hash[65];
    char device[128];           /* NVML's UUID of the GPU ("name cc X.Y" without one), or
                                 * "cpu" (KOPT_TORCH_DEVICE=cpu) */
    char torch_version[64];     /* torch.__version__ as the reference's worker reported it */
    char sizes[512];            /* the main sizes it was timed at: "K=V,K=V" */
    char settings[256];         /* what else changes the number: kopt's version, the timing
                                 * settings (warm-up, budget, repetitions, L2 flush,
                                 * precision), torch.compile's mode, a digest of the
                                 * TORCHINDUCTOR_* / TORCHDYNAMO_* / TORCH_COMPILE_*
                                 * environment */
    /* what was measured */
    kopt_timing timing;         /* torch.compile's, with eager's event overhead removed */
    double eager_ms;            /* eager's median in the same run (reuse checks it) */
    double issue_ms, hold_ms;   /* its bracket (kopt_eval_result.bracket[2]) */
    int exposed_runs;
    char note[512];             /* said with it ("" for a trusted one) */
    char measured_at[32];       /* UTC, "YYYY-MM-DDTHH:MM:SSZ" */
    int64_t id;                 /* its row in the store; 0: not stored */
} kopt_torch_baseline;

typedef struct kopt_eval_result {
    kopt_verdict verdict;
    char message[2048];         /* why, in one paragraph */
    char *compile_log;          /* the candidate's compiler output (errors annotated) */
    char *worker_log;           /* the tail of the worker's stdout/stderr, if any */
    char *program;              /* kopt_eval_torch_program: the worker's "program" JSON */
    int has_device;
    kopt_device_info device;
    kopt_ceilings ceilings;
    char arch[24];
    uint64_t seed;
    kopt_vars sizes, check_sizes;   /* the size sets used (check_sizes.n == 0: none) */
    int nchecks;
    kopt_check *checks;         /* one per (size set, run, compared tensor) */
    int nkernels;
    kopt_kernel_resources *kernels;
    int ncandidate_kernels;
    kopt_timing timing;         /* the candidate (or the reference when evaluated alone) */
    kopt_timing ref_timing;
    double speedup;             /* reference median / candidate median; 0 when unknown */
    kopt_roofline roofline, ref_roofline;
    kopt_roofline fast_roofline; /* the candidate against a faster rate the problem admits
                                 * (an FP32 contraction whose tolerance admits TF32: the TF32
                                 * tensor-core rate), the bound of the speed-of-light check;
                                 * valid only where there is one */
    int fast_compute;           /* its kopt_compute (with fast_roofline) */
    int compile_cache_hit;
    double compile_ms, verify_ms, time_ms, total_ms;  /* wall time of each stage */
    double ref_setup_ms, cand_setup_ms;   /* each worker's start: process, context, modules */
    kopt_worker_setup ref_setup, cand_setup;   /* the same, step by step (0: not known) */
    double compare_ms;          /* the parent's comparison of every output with the reference */
    int is_reference;           /* no candidate: the reference was evaluated */
    char candidate_hash[65];
    char problem_hash[65];
    int64_t eval_id;            /* row id in the store, 0 when not stored */
    char sandbox[512];          /* host mode and ModelNew: what the sandbox applied (JSON),
                                 * "" if none; a ModelNew's says "locked" (docs/kernelbench.md) */
    int ngpu_kernels;
    char gpu_kernels[16][256];  /* kernels that ran, from CUPTI (allow_libraries: false) */
    int nsanitizer;
    kopt_sanitizer_report sanitizer[3];
    /* energy (opts.energy_s > 0 and NVML's counter available): per run of the candidate */
    int has_energy;
    double energy_mj, power_w;  /* per run; mean power over the window */
    int energy_runs;            /* runs in the measured window */
    double energy_window_s;
    /* Where the wall time went, step by step: JSON {"parent": {step: ms}, "reference":
     * {...}, "candidate": {...}} (docs/eval.md, "Where the time goes"); NULL when unknown */
    char *trace;
    /* a problem with a PyTorch reference (docs/kernelbench.md): ref_timing is PyTorch eager;
     * with opts.torch_compile, torch.compile (default mode) timed the same way, in the same
     * run, its outputs checked against eager's */
    int torch_ref;
    int has_compile;            /* compile_timing is valid */
    kopt_timing compile_timing;
    double compile_speedup;     /* compile median / candidate median; 0 when unknown */
    char compile_note[512];     /* why the compile baseline is missing or not trusted */
    /* where compile_timing came from: compile_fresh, measured by this evaluation (a trusted
     * one is what the run stores); compile_cached, one of opts.torch_baselines, measured by
     * an earlier run (compile_baseline.measured_at) with the same key and torch version. In
     * a session, later candidates reuse the first's (ref_reused), keeping compile_cached.
     * compile_baseline: its key and numbers (valid when has_compile; its torch_version also
     * when not: what the reference's worker reported, "" if nothing) */
    int compile_fresh, compile_cached;
    kopt_torch_baseline compile_baseline;
    /* KernelBench v3's baseline: the faster of eager and torch.compile (both timed, else
     * 0), and the candidate's speedup over it (baseline_ms / its median; 0 when unknown) */
    double baseline_ms, speedup_best;
    int baseline_is_compile;    /* 1: torch.compile was the faster */
    /* how each PyTorch-worker subject was bracketed (candidate, eager, compile;
     * docs/kernelbench.md): the host's median time to queue one call (what the hold on the
     * GPU hides), the hold, and the timed runs whose e0 passed before the host was done */
    struct { double issue_ms, hold_ms; int exposed_runs, timed; } bracket[3];
    int has_work;               /* the problem's work counts at the timed sizes: */
    double work_bytes, work_flops;   /* (kopt bench's speed-of-light guard) */
    /* 1: in a session, the reference's outputs and time (and a PyTorch reference's
     * torch.compile baseline) are those of its first run at the session's seed */
    int ref_reused;
    /* 1: the candidate's PyTorch worker was started ahead, at the end of the session's
     * previous evaluation (torch imported while the search worked) */
    int worker_ahead;
    /* 1: the candidate's PyTorch worker was forked by the session's zygote, torch imported
     * there once (docs/kernelbench.md, "Workers forked ready-imported") */
    int worker_forked;
    /* 1: a one-shot evaluation in kopt serve ran the reference in the pool's serving worker
     * (fresh seeds as always; only the candidate's worker is a fresh process) */
    int ref_served;
    /* PyTorch path: which clock timed the candidate ("libkopt": CUDA events kept in C, out
     * of the candidate's reach; otherwise why not), and the kernel census of its checked
     * call (CUPTI activity): kernels launched, those not from a library (torch's aten,
     * cuBLAS, cuDNN, CUTLASS, cub/thrust: the candidate's own), their names, and the
     * lowest precision the kernels' names show ("" when none does). census < 0: no census
     * (census_note says why); 0: none taken (the CPU, CUDA-path candidates). */
    char timer[128];
    int census;
    int kernels_launched, own_kernels;
    char own_kernel_names[256];
    char precision[16];
    char own_precision[16];     /* host mode: the lowest its own SASS computes at (cuobjdump) */
    char census_note[256];
} kopt_eval_result;

typedef struct kopt_eval_opts {
    int version;
    int trials;                 /* verification trials per size set (>= 1; default 3) */
    uint64_t seed;              /* 0: fresh random seed */
    const kopt_vars *sizes;     /* overrides of the problem's sizes, or NULL */
    int skip_check_sizes;       /* do not verify at the problem's check_sizes */
    int no_timing;              /* verify only */
    double timeout_s;           /* per step of a worker (default 10) */
    double warmup_ms;           /* default 25 */
    double budget_ms;           /* GPU time to spend on timed runs (default 100) */
    int min_reps, max_reps;     /* default 10, 1000 */
    int no_flush;               /* do not flush the L2 before timed runs */
    int device;                 /* ordinal */
    const char *arch;           /* override ("sm_90a") */
    const char *cache_dir;
    const char *db_path;        /* the store's path, or NULL. Deprecated as a way to store:
                                 * kopt_eval_run never opens it (kopt_run_eval in kopt/run.h
                                 * stores results); host-mode candidates may not touch the
                                 * file (the sandbox guards it) */
    double suspect_margin;      /* faster than bound * (1 / margin) is SUSPECT; default 1.10 */
    /* sandbox of host-mode code and of the PyTorch worker's candidates (docs/integrity.md,
     * docs/kernelbench.md) */
    int no_sandbox;             /* run candidates without it (trusted code only) */
    double sandbox_cpu_s;       /* CPU seconds of the candidate's worker (default 120) */
    double sandbox_fsize_mb;    /* largest file it may write (default 64) */
    double sandbox_as_extra_mb; /* address space beyond what CUDA reserved (default 65536) */
    unsigned sanitize;          /* KOPT_SANITIZE_* tools to run after the verdict */
    double energy_s;            /* > 0: after timing, run back-to-back for this long (at
                                 * least 1 s is sensible) and read NVML's energy counter */
    int no_ref_timing;          /* run the reference's timed inputs once, untimed (tuning:
                                 * no speedup is reported, the candidate is still checked on
                                 * the outputs of its timed runs) */
    const kopt_ceilings *ceilings;  /* the device's ceilings when the caller has them (valid):
                                 * not measured again; without them they are measured in a
                                 * worker for each call (once per session) and not stored */
    double precision;           /* > 0: timed runs stop, after at least KOPT_PRECISION_MIN_REPS
                                 * (and min_reps), once the median is known to within this
                                 * fraction (half-width of its distribution-free 95% confidence
                                 * interval over the median); default 0.005. 0: spend the whole
                                 * budget (or max_reps) */
    int no_prestart;            /* a one-shot evaluation of device code starts its workers
                                 * before compiling, so their CUDA contexts are made
                                 * meanwhile; 1: start them once their jobs are ready */
    struct kopt_eval_pool *pool;    /* workers started ahead (kopt_eval_pool_*), or NULL;
                                     * a session takes only its first two from it, at
                                     * kopt_eval_session_warm */
    int torch_compile;          /* PyTorch reference: also time torch.compile (default mode) */
    /* torch.compile baselines measured before (the store's, newest first; kopt_run_eval
     * passes them), or NULL. With torch_compile, the first whose key equals this
     * evaluation's and whose torch version is the one the reference's worker reports, with
     * eager's median now within KOPT_BASELINE_EAGER_DRIFT of then, is used and no
     * torch.compile worker runs (result: compile_cached). While some have this
     * evaluation's key, the worker is started only once the reference has run (its
     * version known) and none of them fits: a baseline of another torch version is never
     * used. Borrowed for the call (a session: for its life). */
    const kopt_torch_baseline *torch_baselines;
    int ntorch_baselines;
    /* the socket of a running `kopt serve` (kopt/serve.h), or NULL: kopt_run_eval and the
     * run's sessions (kopt/run.h) send each candidate there, to the server's session for this
     * problem and plan, and store the result here; the reference's outputs and time, its
     * torch.compile baseline and the workers started ahead are then shared by every process
     * sending there. kopt_eval_run itself ignores it. Candidates without a file, and options
     * `kopt eval` has no flag for (no_ref_timing, warmup_ms, ...), are evaluated here. */
    const char *server;
    /* kopt_eval_torch_program's (leave them 0): the one subject's kernels recorded instead
     * of an evaluation, its worker started under `program_wrap` (an argv prefix: ncu) */
    int program_profile;
    char *const *program_wrap;
} kopt_eval_opts;
/* A cached torch.compile baseline is reused only while eager's median now is within this
 * factor of eager's when it was measured (either way): else the conditions changed (clocks,
 * load, another process on the device) and it is measured again. Not applied on the CPU
 * build of PyTorch (KOPT_TORCH_DEVICE=cpu: the tests), whose wall-clock times move with the
 * machine's load by far more. */
#define KOPT_BASELINE_EAGER_DRIFT 1.5
#define KOPT_EVAL_OPTS_INIT {1, 3, 0, NULL, 0, 0, 10.0, 25.0, 100.0, 10, 1000, 0, 0, NULL, NULL, \
                             NULL, 1.10, 0, 120.0, 64.0, 65536.0, 0, 0.0, 0, NULL, 0.005, 0, NULL, \
                             0, NULL, 0, NULL, 0, NULL}
#define KOPT_PRECISION_MIN_REPS 50
enum { KOPT_SANITIZE_MEMCHECK = 1, KOPT_SANITIZE_RACECHECK = 2, KOPT_SANITIZE_INITCHECK = 4 };

/* Evaluate `cand` (NULL: the reference alone, timed and placed on the roofline). Returns
 * KOPT_OK whenever a verdict was reached (including WRONG, CRASH, SKIPPED, ...); an error
 * status only when kopt itself failed before one could be given. */
kopt_status kopt_eval_run(kopt_eval_result **out, kopt_ctx *ctx, const kopt_problem *prob,
                          const kopt_candidate *cand, const kopt_eval_opts *opts);
void kopt_eval_result_free(kopt_eval_result *r);

/* An evaluation session: many candidates of one problem under the same options (a tuning
 * run at one shape), each evaluated as kopt_eval_run would, faster:
 *   - one seed for the whole session (opts->seed, or a fresh one drawn at open): the
 *     reference runs with the first candidate, and its outputs and input checksums check
 *     every later one, so it is not run again;
 *   - the device's ceilings are measured once (unless opts->ceilings);
 *   - device-code candidates run one after another in one long-lived worker, which loads
 *     each candidate's module in turn. A worker that fails in any way (error, crash, hang)
 *     ends and the next candidate gets a new one; host-mode candidates, --sanitize and
 *     wrapped runs use a worker of their own, as in kopt_eval_run.
 * Trials on the session's one seed are what a search needs to compare points; they do not
 * replace a final kopt_eval_run on fresh inputs. Not thread-safe: one caller at a time.
 * Workers end when the thread that started them ends (Linux's parent-death signal belongs
 * to the thread): warm and run a session from threads that live as long as it does. */
/* A pool of workers started ahead of their jobs, each making its CUDA context on `device`
 * while it waits (the slow part of a worker's start, 0.2-0.5 s), then mapping and pinning
 * an output buffer at the size the last evaluation needed. A one-shot evaluation of device
 * code given the pool (opts.pool) takes its two workers from it instead of starting them:
 * the readiest (buffer made, else context made, else the one started longest ago), never a
 * starting one while a ready one is there, and each worker taken is replaced at once, so
 * the replacements make their contexts while that evaluation runs (in other processes,
 * which launch nothing before their own job). With `workers` = 4 (two evaluations'
 * reference and candidate workers) requests sent back to back find theirs ready.
 * kopt_eval_pool_fill drops workers that ended, starts any that are missing and gives the
 * idle ones their buffer at the last evaluation's size (call it between evaluations).
 * Every evaluation still runs in fresh processes: a worker is used once. For a long-lived
 * caller such as `kopt serve`. */
typedef struct kopt_eval_pool kopt_eval_pool;
typedef struct kopt_eval_pool_stats {
    int want;                 /* workers the pool keeps */
    int idle;                 /* workers in it now */
    int context;              /* of them, with their context made */
    int ready;                /* of them, with their output buffer made too (at the last
                               * evaluation's size, when one was noted) */
    long started;             /* workers started since the pool was opened */
    long taken;               /* handed to evaluations, of which: */
    long taken_ready;         /*   ready */
    long taken_context;       /*   context made, buffer still being made */
    long taken_starting;      /*   still making its context (none was further): waited for */
    long failed;              /* starts that failed */
    long lost;                /* idle workers that ended on their own (dropped) */
    int ref_serving;          /* a reference's serving worker is up (see kopt serve) */
    long ref_served;          /* evaluations whose reference ran in it */
} kopt_eval_pool_stats;
kopt_status kopt_eval_pool_open(kopt_eval_pool **out, kopt_ctx *ctx, int device, int workers);
kopt_status kopt_eval_pool_fill(kopt_eval_pool *p, kopt_ctx *ctx);
int kopt_eval_pool_idle(const kopt_eval_pool *p);
/* The counts, and the idle workers' states as they have said so far (read without waiting). */
void kopt_eval_pool_stats_get(kopt_eval_pool *p, kopt_eval_pool_stats *out);
void kopt_eval_pool_close(kopt_eval_pool *p);

typedef struct kopt_eval_session kopt_eval_session;
kopt_status kopt_eval_session_open(kopt_eval_session **out, kopt_ctx *ctx,
                                   const kopt_problem *prob, const kopt_eval_opts *opts);
kopt_status kopt_eval_session_run(kopt_eval_session *s, kopt_ctx *ctx,
                                  const kopt_candidate *cand, kopt_eval_result **out);
/* Start the session's two workers ahead of its first run, each making its CUDA context
 * while the caller does other work (compiles the first candidates): the first run then
 * skips their start. Given a pool at the open (opts.pool, on the session's device), it
 * takes them from there first, without replacement, and never uses the pool again: a
 * caller can start a session's workers before it knows the session's options. For a
 * PyTorch reference it starts the session's zygote instead, the process its PyTorch
 * workers fork from, which imports torch meanwhile (~5 s; KOPT_TORCH_ZYGOTE=0: none).
 * Only before the first run; without a GPU (or with opts.no_prestart) it does nothing. A
 * worker that ended meanwhile is replaced at the run. Same thread rules as
 * kopt_eval_session_run: a thread that ends before the session's runs takes the workers
 * it started with it. */
kopt_status kopt_eval_session_warm(kopt_eval_session *s, kopt_ctx *ctx);
/* Read ahead, into this process's memory, what an evaluation of `comp` (compiled for a
 * candidate of `prob`) will read from its binary, so that the evaluation finds it there:
 * for a host-mode candidate of a PyTorch reference, its own kernels' precision from their
 * SASS (cuobjdump, 0.3-1.5 s, otherwise waited for after the candidate's run). Returns at
 * once: the read runs in a thread of its own, and an evaluation of the binary that starts
 * meanwhile waits for it instead of reading again. For callers that compile ahead (kopt
 * optimize's step); nothing for other candidates. Any thread. */
void kopt_eval_read_ahead(const kopt_problem *prob, const kopt_compiled *comp);
/* Candidates run, and workers started for them (1 when the first one served them all). */
void kopt_eval_session_counts(const kopt_eval_session *s, int *runs, int *workers);
void kopt_eval_session_close(kopt_eval_session *s);

/* The whole result as pretty JSON (the CLI's --json output and the store's copy).
 * Caller frees. */
char *kopt_eval_result_json(const kopt_eval_result *r);
/* What a PyTorch program (the problem's PyTorch reference when `cand` is NULL, else a
 * ModelNew or host-mode candidate) runs on the GPU at the main sizes, kernel by kernel
 * (libexec/kopt_torch_program.py): *program (malloc'd) the JSON object {"subject",
 * "device", "forward_ms", "sizes", "kernels": [{"name", "op", "grid", "block",
 * "registers", "static_smem", "dynamic_smem", "start_us", "dur_us"}]}, with
 * "compulsory_bytes" added (the problem's bytes at those sizes: what any program must
 * move). `wrap` (NULL-terminated, or NULL): an argv prefix the worker runs under (ncu, told
 * to profile the NVTX range "kopt_profile": one more forward). *program is NULL, and the
 * status KOPT_E_ERROR saying why, when the subject failed. */
kopt_status kopt_eval_torch_program(kopt_ctx *ctx, const kopt_problem *prob,
                                    const kopt_candidate *cand, const kopt_eval_opts *opts,
                                    char *const *wrap, char **program);
/* A result read back from that JSON (an answer of `kopt serve`, the store's copy): every
 * field it carries, so that kopt_eval_result_json of it gives the same JSON; the rest zero.
 * KOPT_E_INVALID (line and reason) for text that is not such a result. Free with
 * kopt_eval_result_free. */
kopt_status kopt_eval_result_from_json(kopt_eval_result **out, kopt_ctx *ctx, const char *text);

/* Entry point of the worker process (the CLI's hidden `__worker` verb). */
int kopt_worker_main(void);
/* The same, with the worker's arguments after "__worker" ("--early-device=N": make the
 * CUDA context on device N before reading the job). */
int kopt_worker_main_args(int argc, char **argv);

#ifdef __cplusplus
}
#endif
#endif
