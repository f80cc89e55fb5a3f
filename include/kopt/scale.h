/*
 * kopt/scale.h: scale-out. Tuning spread over every GPU of a host (one evaluation session,
 * one worker, per GPU) and over hosts with MPI, behind one dispatcher (docs/scale.md):
 *
 *   slot   one place that evaluates one job at a time: a GPU of this host (its own live
 *          evaluator and session), a remote MPI rank, or a CPU stand-in (tests, no GPU);
 *   pool   the slots, each on a thread of its own, and a queue: kopt_scale_pool_run hands
 *          a batch of jobs to the first free slot, returns each outcome on the caller's
 *          thread as it arrives, and puts the job of a slot that died (a lost rank) back
 *          at the head of the queue for another slot;
 *   mpi    libmpi.so.40 (OpenMPI) loaded with dlopen when kopt runs under mpirun or srun,
 *          so the same binary runs everywhere: rank 0 owns the search and the store, the
 *          other ranks evaluate what it sends and return the outcomes.
 *
 * Every outcome says where it was measured (kopt_tune_where: GPU, clocks, host, rank).
 *
 * Ownership: pools, slots and MPI handles are owned by the caller and freed with their
 * _free / _close (NULL-safe); kopt_scale_pool_add takes the slot (also on failure).
 * Evaluators given to a GPU slot become the slot's. A pool's threads call only their own
 * slot; the caller's thread alone calls the pool.
 */
#ifndef KOPT_SCALE_H
#define KOPT_SCALE_H

#include "kopt/tune.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KOPT_SCALE_MAX_SLOTS 256

/* ---- the device set ----------------------------------------------------------------------- */

/* How many GPUs `--gpus` may name here: -1 (any index) with CPU stand-ins
 * (KOPT_SCALE_STANDIN), else those this process sees through NVML (0: none). */
int kopt_scale_gpus_here(void);
/* "all" (0 .. count-1) or "0,2,5" (each < count, none twice; count < 0: not checked) into
 * out[] (at most max); *n how many. KOPT_E_INVALID naming the bad item. */
kopt_status kopt_scale_devices_parse(kopt_ctx *ctx, const char *spec, int count, int *out,
                                     int max, int *n);

/* ---- slots -------------------------------------------------------------------------------- */

typedef struct kopt_scale_job {
    int shape;                /* the tuning run's shape (size set) */
    uint64_t point;           /* the point of that shape's space */
    int want_findings;
} kopt_scale_job;

typedef struct kopt_scale_slot {
    const char *kind;         /* "gpu", "mpi", "stand-in" */
    void *user;
    /* Evaluate one job into *out (called from the slot's thread, with its own ctx). *lost
     * = 1: the slot is gone (a dead rank) and the job was not evaluated; it goes back to
     * the queue and the slot takes no more. An error status: kopt failed (the run stops). */
    kopt_status (*eval)(void *user, kopt_ctx *ctx, const kopt_scale_job *job,
                        kopt_tune_outcome *out, int *lost);
    void (*close)(void *user);
    kopt_tune_where where;    /* what it measures on, as far as known before it runs */
} kopt_scale_slot;
void kopt_scale_slot_free(kopt_scale_slot *s);

/* A GPU of this host: evaluates with the evaluator set for the current shape. */
kopt_status kopt_scale_slot_gpu(kopt_scale_slot **out, kopt_ctx *ctx, int device);
/* Give the slot `e` (a live evaluator on its device) for jobs of `shape`; the slot owns it
 * and frees the one it had. Call between batches only. */
void kopt_scale_slot_gpu_set(kopt_scale_slot *s, int shape, kopt_tune_evaluator *e);

/* A CPU stand-in for tests and dry runs: sleeps `ms`, then returns a deterministic OK
 * outcome (time_ms a hash of shape and point), measured on "device" `index` of model
 * `model` (NULL: "kopt stand-in"). With the environment's KOPT_SCALE_STANDIN_LOG each
 * start and end is appended to that file as "start|done RANK PID SHAPE POINT". */
kopt_status kopt_scale_slot_standin(kopt_scale_slot **out, kopt_ctx *ctx, int index,
                                    double ms, const char *model);
/* The stand-in's time for a job (what the tests expect). */
double kopt_scale_standin_time(int shape, uint64_t point);
/* KOPT_SCALE_STANDIN=MS in the environment: the stand-in's delay; -1 when not set. */
double kopt_scale_standin_env(void);
/* KOPT_SCALE_STANDIN_COMPILE=MS in the environment: a stand-in of compiling ahead, an
 * evaluator whose prepare sleeps MS (the scale evaluator's `prepare`); *out NULL when not
 * set. */
kopt_status kopt_scale_standin_compiler(kopt_tune_evaluator **out, kopt_ctx *ctx);
/* The stand-in model of device `index` from KOPT_SCALE_STANDIN_MODELS ("A,A,B"; the last
 * repeats); NULL when not set. Copied into buf. */
const char *kopt_scale_standin_model(int index, char *buf, size_t n);

/* A slot for work other than a tuning point (kopt bench's evaluations): each job calls
 * fn(user, ctx, device, job->point) on the slot's thread; the outcome is an empty OK one
 * that says where it ran. */
typedef kopt_status (*kopt_scale_call_fn)(void *user, kopt_ctx *ctx, int device, uint64_t job);
kopt_status kopt_scale_slot_call(kopt_scale_slot **out, kopt_ctx *ctx, int device,
                                 kopt_scale_call_fn fn, void *user);

/* ---- the pool ----------------------------------------------------------------------------- */

typedef struct kopt_scale_pool kopt_scale_pool;

typedef struct kopt_scale_hooks {
    void *user;
    /* From a slot's thread, before job `index` is evaluated (may be NULL). */
    void (*ready)(void *user, int index);
    /* On the caller's thread, once per job, as its outcome arrives (out->where says
     * where it was measured). */
    void (*done)(void *user, int index, const kopt_tune_outcome *out);
    volatile sig_atomic_t *stop;   /* set: jobs not yet started are not started */
    int only_slot;            /* >= 0: every job on this slot (re-timing finalists) */
    const int *slot_of;       /* (may be NULL) slot_of[j] >= 0: job j on that slot only (a
                               * GPU's own work: getting it ready); < 0: on any */
} kopt_scale_hooks;

typedef struct kopt_scale_slot_stats {
    char kind[16];
    kopt_tune_where where;
    int jobs;                 /* evaluated */
    int lost;                 /* 1: the slot died (its job was given back) */
    int requeued;             /* jobs it gave back */
    double busy_s;            /* wall time spent evaluating */
} kopt_scale_slot_stats;

kopt_status kopt_scale_pool_create(kopt_scale_pool **out, kopt_ctx *ctx);
/* Start a thread for `slot` (owned by the pool from now, also on failure). */
kopt_status kopt_scale_pool_add(kopt_scale_pool *p, kopt_ctx *ctx, kopt_scale_slot *slot);
int kopt_scale_pool_size(const kopt_scale_pool *p);      /* slots */
int kopt_scale_pool_alive(const kopt_scale_pool *p);     /* slots not lost */
kopt_scale_slot *kopt_scale_pool_slot(kopt_scale_pool *p, int i);   /* borrowed */
/* Evaluate jobs[0..n): first free slot first; returns once every job has an outcome (or,
 * after a stop, once the started ones have). KOPT_E_NO_DEVICE when every slot was lost
 * with jobs left; a slot's error status stops the batch and is returned. */
kopt_status kopt_scale_pool_run(kopt_scale_pool *p, kopt_ctx *ctx, const kopt_scale_job *jobs,
                                int n, const kopt_scale_hooks *hooks);
/* The same, and once the jobs are handed to the slots, meanwhile(user) on the caller's thread
 * before any outcome is handed over (outcomes that arrive meanwhile wait for it to return):
 * the caller's own work beside the batch's (kopt optimize --overlap asks the model). */
kopt_status kopt_scale_pool_run_meanwhile(kopt_scale_pool *p, kopt_ctx *ctx,
                                          const kopt_scale_job *jobs, int n,
                                          const kopt_scale_hooks *hooks,
                                          void (*meanwhile)(void *user), void *user);
/* Per-slot counts since the pool was made (out has room for kopt_scale_pool_size). */
void kopt_scale_pool_stats(const kopt_scale_pool *p, kopt_scale_slot_stats *out);
/* 1 when the slots measure on different device models or clocks (names them in buf). */
int kopt_scale_pool_mixed(const kopt_scale_pool *p, char *buf, size_t n);
/* Stop every thread (each finishes its job), close the slots. */
void kopt_scale_pool_free(kopt_scale_pool *p);

/* A tuning evaluator over a pool, for one shape: evaluate_many dispatches a round's points
 * to the slots; evaluate (one point) does the same with one. `prepare` (may be NULL; kept
 * by the evaluator and freed with it) compiles ahead into the shared compile cache. */
kopt_status kopt_scale_tune_evaluator(kopt_tune_evaluator **out, kopt_ctx *ctx,
                                      kopt_scale_pool *pool, int shape,
                                      kopt_tune_evaluator *prepare);

/* Speed-up of a run on n slots that took tn seconds over one that took t1, and its
 * efficiency (speed-up / n; the goal is >= 0.85). 0 when a time is not positive. */
double kopt_scale_speedup(double t1, double tn, int n, double *efficiency);

/* ---- MPI ---------------------------------------------------------------------------------- */

typedef struct kopt_scale_mpi kopt_scale_mpi;

/* 1 when this process was started by mpirun or srun with more than one rank (its
 * environment says so) and KOPT_NO_MPI is not set. */
int kopt_scale_mpi_launched(void);
/* Load libmpi (KOPT_MPI_LIB, default libmpi.so.40: OpenMPI) with dlopen and initialize it
 * (MPI_THREAD_SERIALIZED: the pool's slot threads take turns). KOPT_E_NOT_FOUND when the
 * library cannot be loaded, KOPT_E_UNSUPPORTED when it lacks a symbol or thread support. */
kopt_status kopt_scale_mpi_open(kopt_scale_mpi **out, kopt_ctx *ctx);
int kopt_scale_mpi_rank(const kopt_scale_mpi *m);
int kopt_scale_mpi_size(const kopt_scale_mpi *m);
int kopt_scale_mpi_local_rank(const kopt_scale_mpi *m);  /* among the ranks of its host */
/* Finalize (unless a rank was lost: then the job's other processes may not answer) and
 * unload. */
void kopt_scale_mpi_close(kopt_scale_mpi *m);

/* Rank 0: a slot for every other rank, once it said hello with the same `spaces` (a hash
 * of the run's shapes, problem and template: every rank must tune the same thing). A rank
 * that does not say hello within `timeout_s`, or that differs, is refused with a warning.
 * Each slot's job waits at most lost_s without a word (heartbeat) from its rank before the
 * rank counts as lost. */
kopt_status kopt_scale_mpi_add_slots(kopt_scale_mpi *m, kopt_ctx *ctx, kopt_scale_pool *pool,
                                     const char *spaces, double timeout_s, double lost_s);
/* Ranks > 0: say hello, then evaluate what rank 0 sends with `local` until it says stop.
 * `shape_fn` (may be NULL) is called on this thread before the first job of each shape
 * (to give a GPU slot its evaluator). *served: jobs evaluated. */
kopt_status kopt_scale_mpi_serve(kopt_scale_mpi *m, kopt_ctx *ctx, const char *spaces,
                                 kopt_scale_slot *local,
                                 kopt_status (*shape_fn)(void *user, kopt_ctx *ctx, int shape),
                                 void *shape_user, int *served);
/* Rank 0, at the end: tell every remaining rank to stop. */
void kopt_scale_mpi_stop_all(kopt_scale_mpi *m);
/* The lost-rank timeout from KOPT_SCALE_LOST_S (default 60 s). */
double kopt_scale_lost_s(void);

#ifdef __cplusplus
}
#endif
#endif
