/*
 * kopt/tune.h: autotuning of a template candidate's parameters.
 *
 * A template is a candidate whose front matter gives `params` as lists, ranges or powers
 * of two (kopt_param_spec in problem.h) and `constraints` over params and sizes. Tuning
 * has four parts, each behind a small interface so the later LLM search can reuse them:
 *
 *   space      the cross product of the params' values, enumerated lazily as mixed-radix
 *              point ids (a million points are never materialized), pruned by the
 *              constraints and the device's limits (src/tune/space.c);
 *   strategy   proposes points and learns from outcomes (ask/tell), one per file in
 *              src/tune/strategies/;
 *   evaluator  turns a point into an outcome: live (compile + kopt_eval_run on the GPU,
 *              src/tune/live.c) or replay (a recorded cache, src/tune/replay.c);
 *   cache      every outcome, keyed by problem, sizes, template source, params and device
 *              (src/tune/cache.c), persisted in the store as it grows so an interrupted run
 *              resumes without re-evaluating anything, and written to/read from JSON files
 *              (kopt's own format, Kernel Tuner's cache format, T4).
 *
 * The driver (src/tune/driver.c) runs a strategy against an evaluator within a budget,
 * answers repeated points from the cache, compiles ahead on CPU threads while the GPU
 * evaluates, and reports progress.
 *
 * Ownership: every create, load and run function returns an object owned by the caller,
 * freed by the matching _free function (NULL is safe). Spaces borrow nothing once made.
 */
#ifndef KOPT_TUNE_H
#define KOPT_TUNE_H

#include "kopt/core.h"
#include "kopt/expr.h"
#include "kopt/problem.h"
#include "kopt/device.h"
#include "kopt/eval.h"

#include <signal.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KOPT_TUNE_MAX_PARAMS 32

/* ---- random numbers (xoshiro256**; every strategy draws from its own seeded stream) ---- */
typedef struct kopt_rng {
    uint64_t s[4];
} kopt_rng;
void kopt_rng_seed(kopt_rng *r, uint64_t seed);
uint64_t kopt_rng_next(kopt_rng *r);
/* Uniform in [0, n) (n > 0), without modulo bias. */
uint64_t kopt_rng_below(kopt_rng *r, uint64_t n);
/* Uniform in [0, 1). */
double kopt_rng_unit(kopt_rng *r);
/* Standard normal. */
double kopt_rng_normal(kopt_rng *r);

/* ---- search space ---------------------------------------------------------------------- */

/* Device limits used to prune before compiling; 0 means "not known, do not prune". */
typedef struct kopt_tune_limits {
    int max_threads_per_block;
    int max_smem_per_block;      /* opt-in maximum, bytes */
    int regs_per_sm;             /* 32-bit registers per SM (also the per-block maximum) */
    int max_threads_per_sm;
    int min_regs_per_thread;     /* the fewest registers a thread can use (default 16) */
} kopt_tune_limits;

typedef struct kopt_tune_space {
    int nparams;
    kopt_param_spec *params;     /* owned copies, in the template's order */
    int nconstraints;
    char **constraints;          /* owned copies of the template's constraints */
    kopt_vars sizes;             /* the size set the constraints and launch dims see */
    kopt_plan plan;              /* owned copy of the template's launch plan (block, smem) */
    kopt_tune_limits limits;
    uint64_t npoints;            /* product of the params' value counts (< 2^62) */
    uint64_t radix[KOPT_TUNE_MAX_PARAMS]; /* point = sum(idx[i] * radix[i]); radix of the
                                            * last param is 1 (it varies fastest) */
} kopt_tune_space;

/* The space of `tmpl` at `sizes` (a full size set, see kopt_sizes_resolve). `limits` may be
 * NULL. KOPT_E_INVALID when the candidate is not a template, when it has more than
 * KOPT_TUNE_MAX_PARAMS params, when the space has 2^62 points or more, or when a
 * constraint does not parse or names something that is neither a param nor a size (the
 * message names the file, the constraint and the unknown name). */
kopt_status kopt_tune_space_create(kopt_tune_space **out, kopt_ctx *ctx,
                                   const kopt_candidate *tmpl, const kopt_vars *sizes,
                                   const kopt_tune_limits *limits);
void kopt_tune_space_free(kopt_tune_space *s);
/* Limits of a device (threads, shared memory, registers). */
void kopt_tune_limits_from_device(kopt_tune_limits *out, const kopt_device_info *dev);

/* Point id <-> per-param value indices (idx has nparams entries). */
void kopt_tune_space_decode(const kopt_tune_space *s, uint64_t point, int *idx);
uint64_t kopt_tune_space_encode(const kopt_tune_space *s, const int *idx);
/* The params' values at `point` (replaces the contents of *out). */
kopt_status kopt_tune_space_values(const kopt_tune_space *s, uint64_t point, kopt_vars *out);
/* The point whose values are `vals` (every param present, each value one of its list);
 * KOPT_E_NOT_FOUND otherwise, naming the param. */
kopt_status kopt_tune_space_find(const kopt_tune_space *s, kopt_ctx *ctx,
                                 const kopt_vars *vals, uint64_t *point);
/* "BM=64,BN=128,..." in param order: the cache key of a point. Caller frees. */
char *kopt_tune_space_label(const kopt_tune_space *s, uint64_t point);

/* 1 when `point` passes every constraint and the device limits; 0 otherwise, with the
 * reason ("constraint 'BM*BN <= 8192' fails" / "1024 threads per block exceed 512") in
 * why (may be NULL). Evaluation errors (division by zero) count as failing. */
int kopt_tune_space_valid(const kopt_tune_space *s, uint64_t point, char *why, size_t whylen);
/* The first valid point at or after `from` in enumeration order (wrapping around once);
 * 0 when found, -1 when the space has no valid point. */
int kopt_tune_space_next_valid(const kopt_tune_space *s, uint64_t from, uint64_t *out);
/* A uniformly drawn valid point (rejection sampling, falling back to next_valid from a
 * random start when valid points are rare); 0 or -1 as above. */
int kopt_tune_space_random_valid(const kopt_tune_space *s, kopt_rng *rng, uint64_t *out);
/* Count valid points, scanning at most `limit` points (0: all); *exact = 0 when stopped. */
uint64_t kopt_tune_space_count_valid(const kopt_tune_space *s, uint64_t limit, int *exact);
/* Valid neighbours of `point`: each param moved one step up or down its list (the
 * "adjacent" neighbourhood); writes at most `max`, returns how many. */
int kopt_tune_space_neighbors(const kopt_tune_space *s, uint64_t point, uint64_t *out, int max);

/* ---- search space: notes added by the space helper --------------------------------------
 * A kopt_tune_space carries private state after its public fields (the template's fixed
 * params, which constraints and launch dims may name): make spaces only with
 * kopt_tune_space_create, never by hand or by copying the struct. */

/* ---- outcomes --------------------------------------------------------------------------- */

typedef enum kopt_tune_state {
    KOPT_TUNE_OK = 0,
    KOPT_TUNE_PRUNED,         /* constraint or device limit, before compiling */
    KOPT_TUNE_COMPILE_ERROR,
    KOPT_TUNE_RESOURCES,      /* after compiling: spills, too many registers, zero occupancy */
    KOPT_TUNE_FAILED,         /* the evaluation's verdict was not OK (wrong, crash, ...) */
    KOPT_TUNE_STATE_COUNT
} kopt_tune_state;
const char *kopt_tune_state_name(kopt_tune_state s);   /* "ok", "pruned", ... */
/* The state called `name`; -1 when none. */
int kopt_tune_state_parse(const char *name);

typedef enum kopt_tune_objective {
    KOPT_TUNE_TIME = 0,       /* median time per run */
    KOPT_TUNE_ENERGY,         /* energy per run (NVML counter over >= 1 s of runs) */
    KOPT_TUNE_TIME_ENERGY     /* search on time; pick the least energy within `slack` */
} kopt_tune_objective;

/* Where an outcome was measured: a time is only compared with times of the same device
 * model and clocks (docs/scale.md). known = 0: not recorded (a replay of an old cache). */
typedef struct kopt_tune_where {
    int known;
    int device;               /* GPU ordinal on its host */
    int rank;                 /* MPI rank that measured it (0: this process) */
    int clock_mhz, mem_clock_mhz;   /* 0: unknown */
    char name[64];            /* "NVIDIA H100 80GB HBM3" */
    char uuid[48];
    char host[64];
} kopt_tune_where;

#define KOPT_TUNE_MAX_FINDINGS 8
typedef struct kopt_tune_outcome {
    kopt_tune_state state;
    double time_ms;           /* median per run; 0 unless OK */
    double energy_mj;         /* per run; 0 when not measured */
    double power_w;           /* mean power while measuring energy; 0 when not measured */
    double compile_ms;        /* wall time of the compile (0 on a compile-cache hit) */
    double eval_ms;           /* wall time of the evaluation (verify + time + energy) */
    int registers, spill_bytes, smem_bytes;   /* of the costliest kernel; 0 unknown */
    int nfindings;            /* static micro-tool findings, best first (profile-guided) */
    struct {
        char tool[32];
        double gain;          /* estimated fraction of time saved, 0..1 */
    } findings[KOPT_TUNE_MAX_FINDINGS];
    char verdict[24];         /* eval verdict name ("OK", "WRONG", ...) or "" */
    char message[256];        /* why it failed, one line */
    kopt_tune_where where;    /* the device that measured it (scale-out: one of several) */
} kopt_tune_outcome;

/* The value minimized: time_ms for TIME and TIME_ENERGY, energy_mj for ENERGY; INFINITY
 * when the state is not OK or the value was not measured. */
double kopt_tune_outcome_objective(const kopt_tune_outcome *o, kopt_tune_objective obj);

/* How many points of a space are valid (scanning at most `scan_limit` points; exact when
 * the space is no larger) and why the others are not, the most frequent reason first. */
typedef struct kopt_tune_space_reason {
    char text[160];
    uint64_t n;
} kopt_tune_space_reason;
typedef struct kopt_tune_space_summary {
    uint64_t valid, scanned;
    int exact;
    int nreasons;
    kopt_tune_space_reason reasons[64];
    uint64_t other_reasons;   /* invalid points whose reason did not fit the table */
} kopt_tune_space_summary;
void kopt_tune_space_summarize(const kopt_tune_space *s, uint64_t scan_limit,
                               kopt_tune_space_summary *out);

/* ---- cache ------------------------------------------------------------------------------ */

/* What a cache's outcomes are valid for. Two caches with different keys never mix. */
typedef struct kopt_tune_key {
    char problem[128];        /* problem name */
    char problem_hash[65];
    char template_hash[65];   /* the template's source hash */
    char sizes[256];          /* "B=4096,N=4096" */
    char device[256];         /* device name ("NVIDIA H200") */
    char device_uuid[64];
} kopt_tune_key;

typedef struct kopt_tune_cache kopt_tune_cache;

/* An empty cache for `space` (borrowed: it must outlive the cache) and `key`. */
kopt_status kopt_tune_cache_create(kopt_tune_cache **out, kopt_ctx *ctx,
                                   const kopt_tune_space *space, const kopt_tune_key *key);
void kopt_tune_cache_free(kopt_tune_cache *c);
const kopt_tune_key *kopt_tune_cache_key(const kopt_tune_cache *c);
/* The outcome recorded for `point`, or NULL. */
const kopt_tune_outcome *kopt_tune_cache_get(const kopt_tune_cache *c, uint64_t point);
/* Record (or replace) an outcome; calls the persist hook, if any, before returning. */
kopt_status kopt_tune_cache_put(kopt_tune_cache *c, kopt_ctx *ctx, uint64_t point,
                                const kopt_tune_outcome *o);
size_t kopt_tune_cache_count(const kopt_tune_cache *c);
/* The i-th recorded entry in insertion order (0 <= i < count). */
void kopt_tune_cache_entry(const kopt_tune_cache *c, size_t i, uint64_t *point,
                           const kopt_tune_outcome **o);
/* Called after every put, so an entry is on disk before the next evaluation starts. */
typedef kopt_status (*kopt_tune_persist_fn)(void *user, kopt_ctx *ctx, const char *label,
                                            const kopt_tune_outcome *o);
void kopt_tune_cache_set_persist(kopt_tune_cache *c, kopt_tune_persist_fn fn, void *user);

/* kopt's cache file (JSON: key, params with their values, one entry per point by label).
 * Loading checks that the file's params and values match `space` and that its key matches
 * `key` when key != NULL (a cache from another device or template is refused, naming the
 * field that differs); entries whose label is not in the space are an error naming them. */
kopt_status kopt_tune_cache_write(const kopt_tune_cache *c, kopt_ctx *ctx, const char *path);
kopt_status kopt_tune_cache_load(kopt_tune_cache **out, kopt_ctx *ctx, const char *path,
                                 const kopt_tune_space *space, const kopt_tune_key *key);
/* Read only the key of a cache file (to find the template and sizes it was made for). */
kopt_status kopt_tune_cache_read_key(kopt_ctx *ctx, const char *path, kopt_tune_key *key,
                                     char **template_path);
/* Kernel Tuner's cache format (device_name, kernel_name, problem_size, tune_params_keys,
 * tune_params, objective, cache{"v1,v2,..": {params, time, times, compile_time, ...}},
 * failed points marked with its error strings) and the T4 results format. */
kopt_status kopt_tune_cache_write_kt(const kopt_tune_cache *c, kopt_ctx *ctx, const char *path,
                                     const char *kernel_name);
kopt_status kopt_tune_cache_write_t4(const kopt_tune_cache *c, kopt_ctx *ctx, const char *path,
                                     kopt_tune_objective obj);

/* ---- evaluators ------------------------------------------------------------------------- */

/* The driver's side of evaluate_many. */
typedef struct kopt_tune_batch {
    void *user;
    void (*ready)(void *user, uint64_t point);
    void (*done)(void *user, int index, const kopt_tune_outcome *o);
    volatile sig_atomic_t *stop;
} kopt_tune_batch;

typedef struct kopt_tune_evaluator {
    void *user;
    /* Optional: get `point` ready (compile it into the compile cache). Called from worker
     * threads ahead of evaluate, several at once with their own ctx; must be thread-safe. */
    kopt_status (*prepare)(void *user, kopt_ctx *ctx, uint64_t point);
    /* Produce the outcome of `point` (called from the driver's thread only). An error
     * status means kopt itself failed (the run stops); a bad configuration is an outcome. */
    kopt_status (*evaluate)(void *user, kopt_ctx *ctx, uint64_t point, int want_findings,
                            kopt_tune_outcome *out);
    void (*destroy)(void *user);
    /* Optional: evaluate points[0..n) at once (several GPUs or MPI ranks, kopt/scale.h),
     * called from the driver's thread instead of evaluate for a round's new points. Each
     * outcome is handed to b->done on the calling thread as it arrives (in any order);
     * b->ready is called from the evaluating thread before a point is evaluated (it waits
     * for the point's compile ahead). Once b->stop is set, points not yet started are left
     * without an outcome. An error status means kopt itself failed. */
    kopt_status (*evaluate_many)(void *user, kopt_ctx *ctx, const uint64_t *points, int n,
                                 int want_findings, const kopt_tune_batch *b);
    /* Optional: get ready to evaluate ahead of the first evaluate (the live evaluator opens
     * its session and starts its two workers, which make their CUDA contexts while the
     * first points compile). Called once, on a thread that lives as long as the evaluator
     * (the workers end with the thread that started them). A failure here is not reported:
     * evaluate tries again and says. */
    kopt_status (*warm)(void *user, kopt_ctx *ctx);
} kopt_tune_evaluator;

void kopt_tune_evaluator_free(kopt_tune_evaluator *e);

/* e->warm on the calling thread, which must live as long as e (src/tune/warm.c); nothing
 * when e has none. It returns at once: the workers make their contexts in their own
 * processes. A failure is logged at debug level only (evaluate tries again and says). */
void kopt_tune_warm(const kopt_tune_evaluator *e);

/* Replay: outcomes come from `recorded` (borrowed); a point it lacks is an error naming
 * the point (a complete cache holds every valid point). Pruned points not recorded are
 * answered from the space's own check. */
kopt_status kopt_tune_evaluator_replay(kopt_tune_evaluator **out, kopt_ctx *ctx,
                                       const kopt_tune_space *space,
                                       const kopt_tune_cache *recorded);

/* Live: compile and evaluate on the GPU (src/tune/live.c). */
typedef struct kopt_tune_live_opts {
    int version;
    const kopt_eval_opts *eval;        /* device, cache_dir, timing budget, trials, ... */
    kopt_tune_objective objective;
    double energy_s;          /* window of back-to-back runs for energy (default 1.0) */
    int allow_spills;         /* keep configurations that spill (default: RESOURCES) */
    int one_shot;             /* evaluate each point as kopt_eval_run does (fresh seed, new
                               * workers); default: one kopt_eval_session for the run */
    int findings;             /* static findings for every point, whatever the strategy
                               * wants (so a recording serves profile_guided in replay) */
} kopt_tune_live_opts;
#define KOPT_TUNE_LIVE_OPTS_INIT {1, NULL, KOPT_TUNE_TIME, 1.0, 0, 0, 0}
kopt_status kopt_tune_evaluator_live(kopt_tune_evaluator **out, kopt_ctx *ctx,
                                     const kopt_problem *prob, const kopt_candidate *tmpl,
                                     const kopt_tune_space *space,
                                     const kopt_tune_live_opts *opts);

/* $KOPT_TUNE_TRACE (a file): where a run's time goes, one JSON line per evaluation and per
 * compile done ahead (live.c), and one per step of the run around them (`step` from
 * `start_ms` to now, on the same clock, kopt_now_ms): the ceilings, the GPUs' slots, the
 * compile helpers, each shape's search, its final check. Nothing when it is unset. */
void kopt_tune_trace_step(const char *step, double start_ms);

/* ---- strategies ------------------------------------------------------------------------- */

/* What a strategy sees of the run so far (borrowed, valid during the call). */
typedef struct kopt_tune_history {
    size_t n;                 /* outcomes told so far, in order */
    const uint64_t *points;
    const kopt_tune_outcome *outcomes;
    long best;                /* index of the best OK outcome, -1 when none */
    kopt_tune_objective objective;
    const kopt_tune_cache *cache;   /* every outcome known (including earlier runs) */
} kopt_tune_history;

typedef struct kopt_tune_strategy_opts {
    uint64_t seed;
    int max_evals;            /* the run's budget, so strategies can plan (0: unknown) */
    kopt_tune_objective objective;
    const char *options;      /* "popsize=20,T0=1.5": strategy hyper-parameters, or NULL */
} kopt_tune_strategy_opts;

typedef struct kopt_tune_strategy {
    const char *name;         /* "exhaustive", "random", "annealing", ... */
    const char *summary;      /* one line for `kopt tune --list-strategies` */
    int wants_findings;       /* ask the evaluator for static micro-tool findings */
    /* Set up for `space` (borrowed for the strategy's lifetime). Bad `options` give
     * KOPT_E_INVALID naming the option. */
    kopt_status (*create)(void **state, kopt_ctx *ctx, const kopt_tune_space *space,
                          const kopt_tune_strategy_opts *opts);
    /* Up to `max` valid points to evaluate next, written to `points`; returns how many,
     * 0 when the strategy has nothing more to propose (it finished). Points already in
     * h->cache may be proposed: the driver answers them at no cost. Population strategies
     * return a whole generation so it can compile in parallel. */
    int (*ask)(void *state, const kopt_tune_history *h, uint64_t *points, int max);
    /* The outcome of a proposed point (in the order the driver obtained them). */
    void (*tell)(void *state, uint64_t point, const kopt_tune_outcome *o);
    void (*destroy)(void *state);
    /* 1: what ask proposes never depends on the outcomes told (random, exhaustive), so the
     * driver may ask for the next round before this one is answered and compile it while
     * this one evaluates (the points proposed, in order, are the same) */
    int blind;
} kopt_tune_strategy;

/* All strategies, NULL-terminated (src/tune/strategies.c lists them). */
extern const kopt_tune_strategy *const kopt_tune_strategies[];
const kopt_tune_strategy *kopt_tune_strategy_find(const char *name);
/* Read "k=v,k=v" options: the value of `key` as a double, or `def` when absent. Unknown
 * keys (not in `known`, NULL-terminated) give KOPT_E_INVALID naming them. */
kopt_status kopt_tune_option(kopt_ctx *ctx, const char *options, const char *const *known,
                             const char *key, double def, double *out);

/* ---- the driver ------------------------------------------------------------------------- */

typedef struct kopt_tune_progress {
    size_t evaluated;         /* new evaluations this run */
    size_t cached;            /* answered from the cache (earlier runs, repeats) */
    size_t failed;            /* not OK among the new ones */
    size_t budget;            /* max_evals, 0 when unbounded */
    double elapsed_s;
    int has_best;
    uint64_t best_point;
    double best_objective;
} kopt_tune_progress;
typedef void (*kopt_tune_progress_fn)(void *user, const kopt_tune_progress *p);

typedef struct kopt_tune_opts {
    int version;
    const char *strategy;     /* default "annealing" */
    const char *strategy_options;
    uint64_t seed;            /* default 1 */
    int max_evals;            /* unique new+cached valid evaluations; 0: unbounded */
    double max_seconds;       /* wall-time budget; 0: unbounded */
    kopt_tune_objective objective;
    double energy_slack;      /* TIME_ENERGY: configurations within this fraction of the
                               * best time compete on energy (default 0.05) */
    int compile_threads;      /* threads compiling ahead (default 2; 0: no pipeline) */
    int lookahead;            /* points asked ahead for compiling (default 8) */
    kopt_tune_progress_fn progress;
    void *progress_user;
    volatile sig_atomic_t *stop;   /* set non-zero (e.g. by SIGINT) to stop after the
                                    * current evaluation; the result is still returned */
} kopt_tune_opts;
#define KOPT_TUNE_OPTS_INIT {1, NULL, NULL, 1, 0, 0.0, KOPT_TUNE_TIME, 0.05, 2, 8, NULL, NULL, \
                             NULL}

typedef enum kopt_tune_stop {
    KOPT_TUNE_STOP_BUDGET = 0, KOPT_TUNE_STOP_TIME, KOPT_TUNE_STOP_FINISHED,
    KOPT_TUNE_STOP_EXHAUSTED, KOPT_TUNE_STOP_INTERRUPTED, KOPT_TUNE_STOP_STALLED
} kopt_tune_stop;
const char *kopt_tune_stop_name(kopt_tune_stop s);

typedef struct kopt_tune_result {
    kopt_tune_stop stop;
    size_t evaluated, cached, failed;
    double elapsed_s;
    double eval_s, compile_wait_s;    /* time in evaluate, time waiting for compiles (with
                                       * several GPUs: summed over them, GPU-seconds) */
    double first_eval_s;              /* from the run's start to its first evaluation's
                                       * start (what the run pays before a GPU works); 0
                                       * when nothing was evaluated */
    int has_best;
    uint64_t best_point;              /* by the objective (TIME_ENERGY: see energy_slack) */
    kopt_tune_outcome best;
    size_t n;                         /* this run's outcomes, in order */
    uint64_t *points;
    kopt_tune_outcome *outcomes;
    size_t *best_after;               /* best_after[i]: evaluations (new + cached) done when
                                       * the i-th improvement happened, for convergence */
    double *best_value;               /* the objective after that improvement */
    size_t nimprovements;
    size_t npareto;                   /* time/energy Pareto set (points with energy) */
    uint64_t *pareto;
    size_t rounds;                    /* rounds whose new points were evaluated at once
                                       * (evaluate_many: several GPUs); 0 one at a time */
} kopt_tune_result;

/* Run `opts->strategy` on `space` with `eval`. Known outcomes come from `cache` and every
 * new one is put there (so its persist hook stores it at once). */
kopt_status kopt_tune_run(kopt_tune_result **out, kopt_ctx *ctx, const kopt_tune_space *space,
                          kopt_tune_cache *cache, const kopt_tune_evaluator *eval,
                          const kopt_tune_opts *opts);
void kopt_tune_result_free(kopt_tune_result *r);

/* ---- additions by the driver/cache work (cache.c, driver.c) ------------------------------ */

/* The template path a cache was made for (written to and read from kopt's cache file;
 * NULL until set). The string is copied. */
kopt_status kopt_tune_cache_set_template(kopt_tune_cache *c, kopt_ctx *ctx, const char *path);
const char *kopt_tune_cache_template(const kopt_tune_cache *c);
const kopt_tune_space *kopt_tune_cache_space(const kopt_tune_cache *c);
/* The point of a label "BM=64,BN=128" (every param once, in any order). KOPT_E_NOT_FOUND
 * for a value not in the space ("'BM=96' is not in the space (BM takes 32, 64, 128)"),
 * KOPT_E_INVALID for a malformed label, an unknown or missing param. */
kopt_status kopt_tune_label_parse(const kopt_tune_space *s, kopt_ctx *ctx, const char *label,
                                  uint64_t *point);
/* KOPT_E_INVALID when `have` (recorded) and `want` (this run) differ in device,
 * template_hash, sizes or problem_hash, naming the field; fields empty in `want` are not
 * compared. `what` names the source in the message (a file, "store"). */
kopt_status kopt_tune_key_compare(kopt_ctx *ctx, const char *what, const kopt_tune_key *have,
                                  const kopt_tune_key *want);
/* kopt_tune_run with the strategy given directly (kopt_tune_run looks opts->strategy up by
 * name and calls this); opts->strategy is ignored. */
kopt_status kopt_tune_run_strategy(kopt_tune_result **out, kopt_ctx *ctx,
                                   const kopt_tune_space *space, kopt_tune_cache *cache,
                                   const kopt_tune_evaluator *eval,
                                   const kopt_tune_strategy *strategy,
                                   const kopt_tune_opts *opts);
/* The driver stops as "stalled" after this many consecutive asks that bring no point new
 * to the run (counted against the budget). */
#define KOPT_TUNE_STALL_ASKS 1000

/* ---- compile depth: the defaults of compile_threads and lookahead (kopt tune, docs/scale.md) */

#define KOPT_TUNE_MAX_COMPILE_THREADS 64   /* the driver takes at most this many */
#define KOPT_TUNE_MAX_LOOKAHEAD 4096
#define KOPT_TUNE_COMPILE_MIN_PER_GPU 2    /* compile threads per GPU by default: at least */
#define KOPT_TUNE_COMPILE_MAX_PER_GPU 16   /* ... and at most (memory: a helper per thread) */
#define KOPT_TUNE_LOOKAHEAD_MIN_PER_GPU 8  /* points asked ahead per GPU: at least */

/* The compile threads of a tuning run on `gpus` GPUs (or slots; < 1 counts as 1) by a
 * process that may use `cpus` CPUs (kopt_cpus_usable: its affinity and cgroup): the CPUs
 * left after one per GPU (its session's thread and worker) shared over the GPUs, each GPU
 * given 2 to 16; never more than the CPUs (but at least 2) nor more than 64. E.g. 64 CPUs
 * and 4 GPUs: 60 (15 a GPU); 16 CPUs and 1 GPU: 15; 2 CPUs and 1 GPU: 2. Pure. */
int kopt_tune_default_compile_threads(int cpus, int gpus);
/* The points asked ahead (the round size) for `threads` compile threads over `gpus` GPUs:
 * twice the threads, so that each compile thread has two points of the round asked ahead
 * while the GPUs evaluate this one; at least 8 per GPU; at most 4096. Pure. */
int kopt_tune_default_lookahead(int threads, int gpus);

#ifdef __cplusplus
}
#endif
#endif
