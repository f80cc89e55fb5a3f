/*
 * kopt/run.h: the run API. A run is one piece of work kopt does for a caller (kopt eval,
 * kopt profile, kopt tune; kopt optimize, kopt bench and each kopt mcp request next): it
 * owns its store (a path, or none), records itself there as a `runs` row with its command
 * line and environment (kopt version, host, device, driver, NVRTC), knows each device's
 * ceilings once (from the store, or measured by the first evaluation and stored), and
 * evaluates, profiles and tunes through it, linking every stored evaluation, profile and
 * tuning run to its id. A run with no store does the same work and records nothing.
 *
 *   kopt_run *run;
 *   kopt_run_opts ro = KOPT_RUN_OPTS_INIT;
 *   ro.kind = KOPT_RUN_EVAL; ro.db_path = "kopt.db";
 *   kopt_run_open(&run, ctx, &ro);
 *   kopt_run_eval(run, ctx, prob, cand, &eval_opts, NULL, &result);
 *   kopt_run_finish(run, ctx, KOPT_RUN_OK, NULL);
 *   kopt_run_close(run);
 *
 * Ownership: kopt_run_open gives a handle owned by the caller (kopt_run_close, NULL-safe);
 * closing a run that was not finished records it as failed. Sessions belong to the caller
 * and must be closed before their run. Every result (kopt_eval_result, kopt_run_profile,
 * kopt_run_tune) is owned by the caller and freed with its _free (NULL-safe). Problems and
 * candidates are borrowed: they must outlive the call, or the session or result that names
 * them. Strings and pointers in opts structs are borrowed for the call (for a tune or
 * profile result: until it is freed). Not thread-safe: one caller at a time per run (one
 * session per GPU, each used by one thread, is the way to scale out).
 */
#ifndef KOPT_RUN_H
#define KOPT_RUN_H

#include <signal.h>
#include <stdio.h>

#include "kopt/analyze.h"
#include "kopt/eval.h"
#include "kopt/profile.h"
#include "kopt/scale.h"
#include "kopt/store.h"
#include "kopt/tune.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- a run ------------------------------------------------------------------------------ */

typedef enum kopt_run_kind {
    KOPT_RUN_EVAL = 0, KOPT_RUN_PROFILE, KOPT_RUN_TUNE, KOPT_RUN_OPTIMIZE, KOPT_RUN_BENCH,
    KOPT_RUN_MCP
} kopt_run_kind;
const char *kopt_run_kind_name(kopt_run_kind k);   /* "eval", "profile", ... */

typedef enum kopt_run_status {
    KOPT_RUN_RUNNING = 0,  /* recorded at open; a run left so was killed */
    KOPT_RUN_OK,           /* done (whatever the verdicts: the run itself worked) */
    KOPT_RUN_FAILED,       /* kopt failed, or the run was closed without kopt_run_finish */
    KOPT_RUN_INTERRUPTED,  /* stopped by the caller (Ctrl-C): a tune run can be resumed */
    KOPT_RUN_SKIPPED       /* nothing to do here (no GPU) */
} kopt_run_status;
const char *kopt_run_status_name(kopt_run_status s);

/* What made the last step of a run fail (kopt_run_fault), for a command's exit code. */
typedef enum kopt_run_fault {
    KOPT_RUN_FAULT_NONE = 0,
    KOPT_RUN_FAULT_USAGE,    /* the options do not fit the inputs (a size set, a replay's sizes) */
    KOPT_RUN_FAULT_INPUT,    /* an input is invalid or missing: problem, template, cache, run */
    KOPT_RUN_FAULT_COMPILE,  /* profile: the candidate does not compile */
    KOPT_RUN_FAULT_LAUNCH,   /* profile: its launch plan does not hold at the sizes */
    KOPT_RUN_FAULT_KOPT      /* kopt itself failed */
} kopt_run_fault;

typedef struct kopt_run kopt_run;

typedef struct kopt_run_opts {
    int version;
    kopt_run_kind kind;
    const char *db_path;       /* the store; NULL: none (nothing is recorded) */
    int db_optional;           /* a store that cannot be opened is a warning and the run
                                * goes on without one (kopt eval), not an error */
    int argc;                  /* the command line, recorded in the run's row */
    char *const *argv;
    int device;                /* the GPU ordinal whose environment is recorded */
    const char *cache_dir;     /* compile cache (ceilings measurement) */
    int64_t parent_id;         /* the run this one resumes or replays; 0: none */
    int no_record;             /* use the store without adding a run row (queries) */
} kopt_run_opts;
#define KOPT_RUN_OPTS_INIT {1, KOPT_RUN_EVAL, NULL, 0, 0, NULL, 0, NULL, 0, 0}

/* Open a run: open (and migrate) its store, note the environment (NVML: device name,
 * UUID, compute capability; host, kopt and NVRTC versions; no CUDA context is made) and
 * record the run. A store that cannot be opened fails the open (KOPT_E_DB) unless
 * db_optional. */
kopt_status kopt_run_open(kopt_run **out, kopt_ctx *ctx, const kopt_run_opts *opts);
/* Record the run's final status and a one-line summary (NULL: none). Once per run. */
kopt_status kopt_run_finish(kopt_run *run, kopt_ctx *ctx, kopt_run_status status,
                            const char *summary);
void kopt_run_close(kopt_run *run);

int64_t kopt_run_id(const kopt_run *run);           /* its row in the store; 0: none */
kopt_store *kopt_run_store(kopt_run *run);          /* borrowed; NULL without a store */
const char *kopt_run_db_path(const kopt_run *run);  /* NULL without a store */
/* The environment as recorded so far (the device's driver and clocks appear once a worker
 * has reported them). */
const kopt_store_run *kopt_run_env(const kopt_run *run);
kopt_run_fault kopt_run_last_fault(const kopt_run *run);

/* The ceilings of GPU `device`: known to the run, else from the store, else measured now
 * (a worker, about a second) and stored. *out is left invalid (valid = 0) with a warning
 * when they cannot be measured; KOPT_OK either way. */
kopt_status kopt_run_ceilings(kopt_run *run, kopt_ctx *ctx, int device, kopt_ceilings *out);
/* The same for n distinct devices at once: those neither known to the run nor stored are
 * measured together, one thread each (a measurement takes ~2 s of one GPU; in turn, four
 * held a 4-GPU tuning run seconds before its first point), then stored in device order. */
kopt_status kopt_run_ceilings_many(kopt_run *run, kopt_ctx *ctx, const int *devices, int n,
                                   kopt_ceilings *out);

/* ---- evaluation ------------------------------------------------------------------------- */

/* kopt_eval_run through the run: the device's ceilings from the run (the store), what the
 * evaluation measured noted and stored, the result stored linked to the run with `tag`
 * (NULL: none; a search-tree node, a config label) unless its verdict is ERROR. A store
 * write that fails is a warning (r->eval_id stays 0). Same return as kopt_eval_run. */
kopt_status kopt_run_eval(kopt_run *run, kopt_ctx *ctx, const kopt_problem *prob,
                          const kopt_candidate *cand, const kopt_eval_opts *opts,
                          const char *tag, kopt_eval_result **out);
/* What kopt eval prints on stdout for `r` of problem `p` (cand_path as given, NULL: the
 * reference), as text or (`json`) its JSON (src/run/print_eval.c). `session` (NULL: none):
 * the name of the kopt serve session it ran in, `evaluations` its count so far: a "session"
 * line saying what the session reused, or "session" {name, evaluations, reference_reused}
 * in the JSON. */
void kopt_run_eval_print(FILE *f, const kopt_problem *p, const char *cand_path,
                         const kopt_eval_result *r, const char *session, int evaluations,
                         int json);

/* Many one-shot evaluations spread over GPUs (scale-out, docs/scale.md): jobs[i] evaluated
 * as kopt_run_eval would, on the first free GPU of gpus[0..ngpus) (each with its own
 * ceilings from the run), stored linked to the run with `tag`; done(user, i, gpu, rc, r)
 * is called on the caller's thread as each finishes, in any order, and owns r (NULL when
 * rc is an error; the message is on ctx). Returns an error only when the dispatch itself
 * fails. */
typedef struct kopt_run_eval_job {
    const kopt_problem *prob;
    const kopt_candidate *cand;
} kopt_run_eval_job;
typedef void (*kopt_run_eval_done_fn)(void *user, int index, int gpu, kopt_status rc,
                                      kopt_eval_result *r, kopt_ctx *ctx);
kopt_status kopt_run_eval_many(kopt_run *run, kopt_ctx *ctx, const kopt_run_eval_job *jobs,
                               int n, const kopt_eval_opts *opts, const int *gpus, int ngpus,
                               const char *tag, kopt_run_eval_done_fn done, void *user);

/* An evaluation session (kopt_eval_session) through the run: many candidates of one
 * problem on one GPU, the ceilings from the run. With `store` each evaluation is stored
 * like kopt_run_eval's; without (tuning: its outcomes go to the tuning tables) none is. */
typedef struct kopt_run_session kopt_run_session;
kopt_status kopt_run_session_open(kopt_run_session **out, kopt_run *run, kopt_ctx *ctx,
                                  const kopt_problem *prob, const kopt_eval_opts *opts,
                                  int store);
kopt_status kopt_run_session_eval(kopt_run_session *s, kopt_ctx *ctx,
                                  const kopt_candidate *cand, const char *tag,
                                  kopt_eval_result **out);
kopt_eval_session *kopt_run_session_eval_session(kopt_run_session *s);   /* borrowed */
/* A session that outlives the run it was opened with (kopt serve keeps sessions across
 * requests, each request a run of its own): its next evaluations are noted and stored
 * through `run` (the store its host-mode candidates may not touch is then run's, the
 * ceilings those run knows unless the session has its own). NULL detaches it (before that
 * run is closed); kopt_run_session_eval then fails until a run is attached. The store's
 * torch.compile baselines stay those read when the session was opened. */
void kopt_run_session_attach(kopt_run_session *s, kopt_ctx *ctx, kopt_run *run);
/* For a session on one GPU of several, used from a thread of its own (kopt optimize
 * --gpus): evaluate without touching the run or the store (give the session its ceilings
 * when it is opened), then, on the run's thread, commit the result: noted and (with
 * `store`) stored as kopt_run_session_eval would have (r->eval_id set). */
kopt_status kopt_run_session_eval_detached(kopt_run_session *s, kopt_ctx *ctx,
                                           const kopt_candidate *cand, kopt_eval_result **out);
void kopt_run_session_commit(kopt_run_session *s, kopt_ctx *ctx, const kopt_candidate *cand,
                             const char *tag, kopt_eval_result *r);
void kopt_run_session_close(kopt_run_session *s);

/* ---- profiling -------------------------------------------------------------------------- */

typedef struct kopt_run_profile_opts {
    int version;
    kopt_eval_opts eval;          /* the correctness check first (sizes, device, arch, ...) */
    kopt_profile_opts profile;    /* metric collection (ncu, sets, metrics, repeat) */
    int static_only;              /* no GPU work: compile, SASS and resources only */
    const char *import;           /* analyze this saved ncu report instead of profiling */
    int all_tools;                /* every tool whatever the class */
    const char *only_tool;        /* NULL: all that apply */
    const kopt_candidate *parent; /* baseline for resolutions; NULL: the problem's last one */
    int parent_is_reference;      /* the baseline is the problem's reference */
    int detached;                 /* touch neither the run nor the store (another thread may
                                   * use them; give eval.ceilings): kopt_run_profile_commit
                                   * stores it later, on the run's thread */
} kopt_run_profile_opts;
#define KOPT_RUN_PROFILE_OPTS_INIT {1, KOPT_EVAL_OPTS_INIT, KOPT_PROFILE_OPTS_INIT, 0, NULL, \
                                    0, NULL, NULL, 0, 0}

/* A profile: what kopt profile prints. */
typedef struct kopt_run_profile {
    const kopt_problem *prob;         /* borrowed */
    const kopt_candidate *subject;    /* the candidate, or the reference (owned here) */
    kopt_eval_result *eval;           /* the correctness check; NULL when static_only */
    int stopped;                      /* its verdict was not OK: nothing more was done */
    kopt_compiled *comp;
    kopt_bound *bound;
    kopt_sass *sass;                  /* NULL: see sass_note */
    kopt_profile *prof;               /* NULL: see metrics_note */
    kopt_analysis *an;
    int static_only, matmul_like, nviews;
    kopt_kernel_view *views;
    char sass_note[768], metrics_note[2400], static_note[2100];
    double compile_ms, sass_ms, metrics_ms, analyze_ms, eval_ms;
    int64_t profile_id;               /* stored profile; 0: not stored */
    int nresolved;                    /* resolutions of earlier findings recorded */
    kopt_candidate *ref;              /* the problem's reference (owned) */
    int detached;                     /* made detached: not stored yet */
    int device;                       /* the GPU of its correctness check */
    char baseline_hash[65];           /* the baseline of its resolutions ("" none) */
    char *program;                    /* a PyTorch program: its analysis as text (the kernel
                                       * table, host gaps, fusion, class); else NULL */
    char *program_json;               /* the same: its record with the analysis under
                                       * "analysis" (kopt_run_program_document); else NULL */
    double program_ms;                /* the same: its forward's time (CUDA events) */
} kopt_run_profile;

/* Correct first (kopt_run_eval, unless static_only; a verdict other than OK stops with
 * r->stopped, SKIPPED turns the rest static), then compile info, SASS, metrics (CUPTI,
 * ncu, or an imported report), the analysis, and the profile with its findings and
 * resolutions into the store. On an error *out may still hold what was done; the fault
 * (COMPILE, LAUNCH, KOPT) says which step failed. A PyTorch program (the reference of a
 * problem with a PyTorch reference, or a ModelNew .py candidate) is not evaluated here (the
 * caller did): its kernels are recorded and analyzed (kopt_profile_program,
 * kopt_program_analyze) into `an` (the program's class, the findings), `program` (the
 * analysis as text) and `program_json`, and stored as a profile of source "program" (its
 * metrics: the record with its analysis; its median: the forward's time) with its findings
 * and resolutions against the baseline; KOPT_E_UNSUPPORTED, saying why, when it ran no
 * kernel on a GPU or could not be recorded. */
kopt_status kopt_run_profile_candidate(kopt_run *run, kopt_ctx *ctx, const kopt_problem *prob,
                                       const kopt_candidate *cand,
                                       const kopt_run_profile_opts *opts,
                                       kopt_run_profile **out);
void kopt_run_profile_free(kopt_run_profile *p);
/* A PyTorch program's record (kopt_profile_program's JSON) read into *prog and analyzed on
 * the problem's terms (its compute type, whether it is a contraction, its outputs' rtol) and
 * the device's ceilings: `ceil` when valid, else the run's for `device` (run NULL: none).
 * *prog is set whenever the record was read (free both). */
kopt_status kopt_run_program_analyze(kopt_run *run, kopt_ctx *ctx, const kopt_problem *prob,
                                     int device, const kopt_ceilings *ceil, const char *record,
                                     kopt_program **prog, kopt_program_analysis **out);
/* A program's record (kopt_profile_program's JSON) with its analysis (kopt_program_json;
 * NULL: null) under "analysis": kopt profile --json's document, and a stored program
 * profile's metrics. Caller frees; NULL when the record is not JSON. */
char *kopt_run_program_document(const char *record, const kopt_program_analysis *a);
/* A program's analysis `a` of `record` into the run's store, as kopt_run_profile_candidate
 * stores one (source "program", the document of kopt_run_program_document, the findings, the
 * resolutions against the subject profiled most recently): `subject` the candidate, NULL
 * the reference. *profile_id (may be NULL): its row, 0 when the run has no store; *nresolved
 * (may be NULL): resolutions recorded. */
kopt_status kopt_run_program_store(kopt_run *run, kopt_ctx *ctx, const kopt_problem *prob,
                                   const kopt_candidate *subject, kopt_program_analysis *a,
                                   const char *record, int64_t *profile_id, int *nresolved);
/* A profile made with `detached`: its correctness check noted and stored, then the profile
 * and its findings, as kopt_run_profile_candidate would have (on the run's thread). */
void kopt_run_profile_commit(kopt_run *run, kopt_ctx *ctx, kopt_run_profile *p);
/* The per-kernel metrics as compact JSON (the store's metrics_json; kopt profile --json's
 * "metrics"); caller frees; NULL without a profile. */
char *kopt_run_profile_metrics_json(const kopt_profile *p);
/* What kopt profile prints on stdout, as text or (`json`) indented JSON (src/run/
 * print_profile.c): the profile (`cand_path` as given, NULL: the reference; `only`: the one
 * tool asked for, NULL: all), or, when it stopped, the check's verdict (kopt_run_profile_
 * print_stopped: the evaluation's JSON, or its verdict and that no profile was taken); the
 * micro-tools with their classes and needs; their scores stored at `db_path`
 * (kopt_run_tool_stats; a table with a note on the columns). */
void kopt_run_profile_print(FILE *f, const kopt_run_profile *s, const char *cand_path,
                            const char *only, int json);
void kopt_run_profile_print_stopped(FILE *f, const kopt_eval_result *r, int json);
void kopt_run_tools_print(FILE *f, int json);
kopt_status kopt_run_tool_stats_print(FILE *f, kopt_ctx *ctx, const char *db_path, int json);

/* ---- tuning ----------------------------------------------------------------------------- */

#define KOPT_RUN_TUNE_MAX_SHAPES 32

/* Progress of a tuning run: the driver's, with the shape it belongs to; p is NULL once
 * when a shape ends. */
typedef void (*kopt_run_tune_progress_fn)(void *user, int shape, int nshapes,
                                          const kopt_tune_space *space,
                                          const kopt_tune_progress *p);

typedef struct kopt_run_tune_opts {
    int version;
    const char *problem_path;     /* live: required; replay: default the template's folder */
    const char *template_path;    /* live: required; replay: default the recording's */
    const char *replay;           /* NULL: live; a cache file, or a stored run's id ("42") */
    int nshapes;                  /* size sets to tune for, in turn; 0: the problem's own */
    const kopt_vars *shapes;      /* (or, in a replay, the recording's) */
    const kopt_vars *overrides;   /* sizes set in every shape (NULL: none) */
    const char *strategy;         /* default "annealing" */
    const char *options;          /* strategy hyper-parameters */
    uint64_t seed;                /* default 1 */
    int budget;                   /* evaluations (0: unbounded; default 200) */
    double seconds;               /* wall time per shape; 0: none */
    kopt_tune_objective objective;
    double energy_s, energy_slack;
    int compile_threads, lookahead;   /* unless given (KOPT_RUN_TUNE_GIVEN_COMPILE_THREADS,
                                   * _LOOKAHEAD), a live run sets them from the usable CPUs
                                   * and the GPUs: kopt_tune_default_compile_threads and
                                   * kopt_tune_default_lookahead (docs/scale.md) */
    unsigned given;               /* KOPT_RUN_TUNE_GIVEN_*: what --resume must not replace */
    int resume;                   /* continue the unfinished stored run of each key */
    int fresh;                    /* ignore stored outcomes */
    int allow_spills, one_shot, findings;   /* as kopt_tune_live_opts */
    kopt_eval_opts eval;          /* each point's evaluation */
    const char *out, *record, *export_kt, *export_t4;  /* files to write (several shapes:
                                   * FILE-1.ext, FILE-2.ext, ...); NULL: none */
    kopt_run_tune_progress_fn progress;
    void *progress_user;
    volatile sig_atomic_t *stop;  /* set non-zero to stop after the current evaluation */
    double replay_delay_ms;       /* replay: sleep before each evaluation (tests) */
    int64_t resume_id;            /* continue this stored tuning run (tune_runs id; its key
                                   * must be the shape's); 0: with resume, the latest
                                   * unfinished one of the key */
    /* scale-out (kopt/scale.h, docs/scale.md) */
    int ngpus;                    /* evaluate on these GPUs at once, one session each (--gpus);
                                   * 0: on eval.device alone, as before */
    const int *gpus;
    struct kopt_scale_mpi *mpi;   /* under mpirun/srun: rank 0 searches and stores, the other
                                   * ranks evaluate (kopt_run_tune_go serves there); NULL */
} kopt_run_tune_opts;
enum {
    KOPT_RUN_TUNE_GIVEN_STRATEGY = 1, KOPT_RUN_TUNE_GIVEN_OPTIONS = 2,
    KOPT_RUN_TUNE_GIVEN_SEED = 4, KOPT_RUN_TUNE_GIVEN_BUDGET = 8,
    KOPT_RUN_TUNE_GIVEN_OBJECTIVE = 16,
    KOPT_RUN_TUNE_GIVEN_COMPILE_THREADS = 32,  /* else a share of the usable CPUs */
    KOPT_RUN_TUNE_GIVEN_LOOKAHEAD = 64         /* else twice the compile threads */
};
#define KOPT_RUN_TUNE_OPTS_INIT {1, NULL, NULL, NULL, 0, NULL, NULL, "annealing", NULL, 1, 200, \
    0.0, KOPT_TUNE_TIME, 1.0, 0.05, 2, 8, 0, 0, 0, 0, 0, 0, KOPT_EVAL_OPTS_INIT, NULL, NULL, \
    NULL, NULL, NULL, NULL, NULL, 0.0, 0, 0, NULL, NULL}

/* KOPT_RUN_TUNE_OPTS_INIT with tuning's evaluation defaults: hundreds of points are
 * evaluated, so one trial, a 30 ms timing budget (10 ms warm-up, at least 5 runs) and the
 * reference run once, untimed, per point; the winner is checked in full at the end. */
void kopt_run_tune_opts_default(kopt_run_tune_opts *o);

/* "time", "energy", "time-energy" (or "time_energy", as stored) into *o; -1 for another. */
int kopt_run_tune_objective_parse(const char *s, kopt_tune_objective *o);
const char *kopt_run_tune_objective_name(kopt_tune_objective o);   /* "time-energy", ... */

/* One shape (size set) of a tuning run. */
typedef struct kopt_run_tune_shape {
    kopt_vars sizes;
    kopt_tune_key key;
    kopt_tune_space *space;
    kopt_tune_cache *cache;           /* NULL until the shape ran */
    kopt_tune_result *res;            /* NULL when it did not run */
    size_t loaded;                    /* outcomes known before the run (store) */
    size_t reevaluated;               /* of those, evaluated again (must be 0) */
    uint64_t *evaluated;              /* points evaluated this run, in order */
    size_t nevaluated;
    int64_t tune_run_id;              /* its tune_runs row; 0: none */
    int64_t resumed_from;             /* the unfinished tuning run continued; 0: none */
    int resumed;
    char strategy[64], options[256];  /* as run (options "" when none) */
    uint64_t seed;
    int budget;
    kopt_eval_result *final;          /* live: the winner evaluated as kopt eval would */
    char out_path[4096], record_path[4096], kt_path[4096], t4_path[4096];  /* "" if none */
} kopt_run_tune_shape;

/* A tuning run: kopt_run_tune_open sets it up, kopt_run_tune_go runs it. */
typedef struct kopt_run_tune {
    kopt_problem *prob;
    kopt_candidate *tmpl;
    const char *tmpl_path;            /* as given (or resolved from the recording) */
    const char *tmpl_record;          /* the template path written to caches and the store */
    int replay;                       /* outcomes from a recording */
    int has_device;                   /* live: a GPU to tune on */
    char why_no_device[512];
    kopt_device_info dev;             /* live: the GPU; replay: the recorded name and UUID */
    kopt_tune_limits limits;
    char limits_text[256];
    kopt_tune_objective objective;    /* as given, or from the resumed run */
    int nshapes;
    kopt_run_tune_shape shapes[KOPT_RUN_TUNE_MAX_SHAPES];
    int nrun;                         /* shapes that ran (kopt_run_tune_go) */
    int interrupted;                  /* stopped by opts->stop */
    /* scale-out (docs/scale.md): the slots that evaluated (several GPUs, MPI ranks, CPU
     * stand-ins); nslots 0: one GPU, as before */
    int nslots;
    kopt_scale_slot_stats *slots;     /* owned; counts as of the end of the run */
    char mixed[512];                  /* the slots' GPUs differ (names them); "" when alike */
    int retimed;                      /* mixed: finalists re-timed on the first slot */
    int standin;                      /* CPU stand-ins evaluated (KOPT_SCALE_STANDIN) */
    int compile_helpers;              /* NVRTC helper processes running at the run's end
                                       * (a live run turns one on per compile thread:
                                       * docs/scale.md) */
    int compile_threads, lookahead;   /* live: as the run used them (the defaults from the
                                       * usable CPUs and the GPUs, or as given) */
    int cpus_usable;                  /* live: kopt_cpus_usable() when the run began */
    int mpi_rank;                     /* > 0: this process only served rank 0 */
    int served;                       /* evaluations served (mpi_rank > 0) */
    struct kopt_run_tune_priv *priv;
    /* live: where the GPUs' time went over the tuning runs (gpu_count GPUs, or slots, x the
     * runs' time): busy evaluating, waiting for compiles, idle otherwise (between rounds, in
     * the driver and the store); held_back says in words what held them back ("" when they
     * were busy most of the time, or too little was evaluated to say) */
    int gpu_count;
    double gpu_busy, gpu_compile_wait, gpu_idle;
    char held_back[512];
} kopt_run_tune;

/* Set a tuning run up: problem and template (a replay: from the recording and the store),
 * the device (live; none is not an error: t->has_device = 0 says why), each shape's sizes,
 * space and key. Nothing is evaluated and nothing stored. The fault says USAGE (a size set,
 * sizes a replay lacks) or INPUT (files, a non-template, a stored run without outcomes). */
kopt_status kopt_run_tune_open(kopt_run_tune **out, kopt_run *run, kopt_ctx *ctx,
                               const kopt_run_tune_opts *opts);
/* Tune each shape in turn (needs t->has_device or a replay): stored outcomes loaded
 * (unless fresh), --resume's run continued, a tune_runs row begun, the strategy run with
 * every outcome stored as it arrives, the row finished, the winner checked on fresh inputs
 * (live), the output files written. A stop request ends the current shape (t->interrupted)
 * and skips the rest; it is not an error. On an error t->nrun counts the shapes with
 * results. */
kopt_status kopt_run_tune_go(kopt_run_tune *t, kopt_ctx *ctx);
void kopt_run_tune_free(kopt_run_tune *t);

/* A progress line: "37/200 evals (shape 1/2), 3 cached, 1 failed, 12.5 s; best 0.0123 ms
 * BM=64,BN=128". */
void kopt_run_tune_progress_text(const kopt_run_tune *t, int shape,
                                 const kopt_tune_space *space, const kopt_tune_progress *p,
                                 char *buf, size_t n);
/* The result as JSON (kopt tune --json: run fields, the first shape's at the top, every
 * shape under "shapes"); the spaces (kopt tune --space --json; skipped: no GPU, the reason
 * given); stored tuning runs (kopt tune --runs --json). Caller frees; NULL on failure. */
char *kopt_run_tune_json(const kopt_run_tune *t);
char *kopt_run_tune_space_json(const kopt_run_tune *t, int skipped);
char *kopt_run_tune_runs_json(const kopt_store_tune_run *v, int n);

/* What kopt tune prints on stdout, as text or (`json`) the JSON above on a line
 * (src/run/print_tune.c): the result (each shape's stop, store, convergence, Pareto set,
 * final check and files, the scale-out slots, then the best configuration per shape); each
 * shape's space (`skipped`: no GPU, said last); the tuning runs stored at `db_path`
 * (kopt_run_tune_list; as a table, saying so when there are none); the strategies. */
void kopt_run_tune_print(FILE *f, const kopt_run_tune *t, int json);
void kopt_run_tune_space_print(FILE *f, const kopt_run_tune *t, int skipped, int json);
kopt_status kopt_run_tune_runs_print(FILE *f, kopt_ctx *ctx, const char *db_path, int json);
void kopt_run_tune_strategies_print(FILE *f, int json);
/* A progress display on `out` for kopt_run_tune_opts.progress (progress_user: the meter),
 * set up by kopt_run_tune_meter_init once the run is open (`t`; the budget in seconds is its
 * options'; nothing shown unless `enabled`): on a terminal a bar redrawn in place, else a
 * "kopt tune: " line per 10% of the budget (or of the seconds; without either, every 50
 * evaluations). */
typedef struct kopt_run_tune_meter {
    const kopt_run_tune *t;
    FILE *out;
    int tty, enabled;
    double max_seconds;        /* the wall-time budget per shape (0: none) */
    int shape, last_tenth;     /* the shape shown, the last 10% step printed (not a tty) */
    size_t last_count;
    int drew;                  /* a tty: a line is on screen */
} kopt_run_tune_meter;
void kopt_run_tune_meter_init(kopt_run_tune_meter *m, const kopt_run_tune *t, FILE *out,
                              int enabled);
void kopt_run_tune_meter_show(void *user, int shape, int nshapes, const kopt_tune_space *space,
                              const kopt_tune_progress *p);
/* After a stop request: that the best so far was printed, whether every outcome is stored,
 * and the command that continues: "kopt tune" and the verb's arguments (argv[0] is the
 * verb), quoted where a shell needs it, without --fresh and with --resume. */
void kopt_run_tune_print_stopped(FILE *f, const kopt_run_tune *t, int argc, char *const *argv);
/* Under mpirun/srun (kopt_scale_mpi_launched), for a live run (no o->replay): the MPI world
 * opened into *mpi and o->mpi (*mpi NULL otherwise). The process's rank: 0 searches, stores
 * and prints (also without MPI); another only evaluates for rank 0; -1 when MPI could not be
 * opened (the error on ctx). */
int kopt_run_tune_mpi(kopt_run_tune_opts *o, kopt_ctx *ctx, struct kopt_scale_mpi **mpi);

/* ---- stored runs ------------------------------------------------------------------------- */

/* Runs in the store at `db_path`, newest first (kind NULL: all; limit 0: all). */
kopt_status kopt_run_list(kopt_ctx *ctx, const char *db_path, const char *kind, int limit,
                          kopt_store_run **out, int *n);
/* One stored run by id. */
kopt_status kopt_run_get(kopt_ctx *ctx, const char *db_path, int64_t id, kopt_store_run *out);
/* Tuning runs (tune_runs), newest first. */
kopt_status kopt_run_tune_list(kopt_ctx *ctx, const char *db_path, kopt_store_tune_run **out,
                               int *n);
/* The micro-tools' scores (kopt profile --tool-stats). */
kopt_status kopt_run_tool_stats(kopt_ctx *ctx, const char *db_path, kopt_tool_stats **out,
                                int *n);

/* ---- stored runs as documents, and recorded work imported (src/run/run_doc.c) ------------ */

/* Everything stored of run `id` as one JSON object (compact text, caller frees): "run" (its
 * row: kind, status, command, started/finished, kopt_version, host, "device" {name, uuid,
 * cc, driver_version, nvrtc_version, clock_khz, mem_clock_khz}, counts), "evaluations",
 * "profiles", "tune_runs" (as kopt_store_evals_json, _profiles_json, _tune_runs_json),
 * "devices" (those its rows name, with their stored ceilings) and "reader" {kopt_version}.
 * kopt report and kopt mcp's kopt://run/ID read this. KOPT_E_NOT_FOUND naming the id. */
kopt_status kopt_run_document_json(kopt_ctx *ctx, const char *db_path, int64_t id, char **out);
/* One stored item as a JSON object: `what` is "evaluation", "profile" or "tune_run".
 * KOPT_E_NOT_FOUND when there is none, KOPT_E_INVALID for another `what`. */
kopt_status kopt_run_item_json(kopt_ctx *ctx, const char *db_path, const char *what, int64_t id,
                               char **out);
/* kopt_run_list as a JSON array of rows (as "run" above). */
kopt_status kopt_run_list_json(kopt_ctx *ctx, const char *db_path, const char *kind, int limit,
                               char **out);
/* The newest run's id (kind NULL: any kind); KOPT_E_NOT_FOUND when there is none. */
kopt_status kopt_run_last(kopt_ctx *ctx, const char *db_path, const char *kind, int64_t *id);

/* A device and its measured ceilings from a measuring worker's answer (a "result" line with
 * "device" and "ceilings", as tests/data/ceilings/ records): stored, spec rates filling the
 * rest, and noted as the run's device (name, UUID, cc, driver, clocks). */
kopt_status kopt_run_import_device(kopt_run *run, kopt_ctx *ctx, const char *worker_result_path);
/* The evaluation of a report recorded elsewhere (kopt profile --json's verdict, median and
 * roofline) stored as this run's, tagged "imported"; `cand` NULL: the
 * reference. Needs a store; no GPU. *eval_id may be NULL. */
kopt_status kopt_run_import_eval(kopt_run *run, kopt_ctx *ctx, const kopt_problem *prob,
                                 const kopt_candidate *cand, const char *report_path,
                                 int64_t *eval_id);
/* A profile recorded elsewhere (kopt profile --json's report, as tests/data/cupti/ records)
 * stored as this run's: an evaluation with the report's verdict, median and roofline
 * (tagged "imported"), the per-kernel metrics and the findings, and resolutions against
 * `parent` (NULL: the problem's last profiled candidate) as kopt_run_profile_candidate
 * records them. `cand` NULL: the reference. Needs a store; no GPU. *profile_id may be NULL. */
kopt_status kopt_run_import_profile(kopt_run *run, kopt_ctx *ctx, const kopt_problem *prob,
                                    const kopt_candidate *cand, const kopt_candidate *parent,
                                    const char *report_path, int64_t *profile_id);

#ifdef __cplusplus
}
#endif
#endif
