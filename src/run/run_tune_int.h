/* Internal: what run_tune.c (tuning), run_scale.c (its scale-out) and run_tune_setup.c
 * (setting up, replays, the live evaluator's options) share. Calls go one way: run_tune.c ->
 * run_scale.c -> run_tune_setup.c. */
#ifndef KOPT_RUN_TUNE_INT_H
#define KOPT_RUN_TUNE_INT_H

#include "run_int.h"

#include <limits.h>

/* The persist hook's sink of one shape (it must stay where it is while the cache lives). */
typedef struct kopt__run_tune_sink {
    kopt_store_tune_sink sink;
} kopt__run_tune_sink;

typedef struct kopt_run_tune_priv {
    kopt_run *run;                       /* borrowed */
    kopt_run_tune_opts o;                /* the caller's (strings borrowed) */
    kopt_eval_opts eval;                 /* live: the evaluator's, for the current shape */
    kopt_ceilings ceilings;              /* live: from the run (store or measured once) */
    kopt_tune_cache *recorded;           /* replay: the recording */
    kopt_tune_key recorded_key;
    int store_is_recording;              /* replay of a stored run: the store is only read */
    int shape;                           /* the shape being tuned */
    char tmpl_record_buf[PATH_MAX];      /* replay: the template path the recording names */
    kopt__run_tune_sink sinks[KOPT_RUN_TUNE_MAX_SHAPES];
    /* scale-out (run_scale.c): NULL pool: one GPU, the plain path */
    kopt_scale_pool *pool;
    double standin_ms;                   /* >= 0: CPU stand-ins instead of GPUs */
    int ndevs;                           /* local GPU (or stand-in) slots: pool slots 0.. */
    int devs[KOPT_SCALE_MAX_SLOTS];
    kopt_ceilings dev_ceil[KOPT_SCALE_MAX_SLOTS];
    char spaces[72];                     /* what every MPI rank must be tuning (a hash) */
    /* each local GPU's first two workers, started with the ceilings' measurement (the
     * sessions take them at their warm), and how many GPUs have them */
    kopt_eval_pool *prestart[KOPT_SCALE_MAX_SLOTS];
    int prestart_dev[KOPT_SCALE_MAX_SLOTS], nprestart;
    int procs_set, procs_before;         /* compile helpers turned on for the run, and the
                                          * setting to give back at its end */
} kopt__run_tune_priv;

/* 1 once the caller asked to stop. */
int kopt__run_tune_stopped(const kopt_run_tune *t);
/* The driver's progress hook: the caller's, with the shape. */
void kopt__run_tune_progress(void *user, const kopt_tune_progress *p);
/* The live evaluator's options for shape `index` on GPU `device` (eval is filled and
 * pointed to by lo; ceil: the device's, or NULL); run_tune_setup.c, for run_tune.c and
 * run_scale.c. */
void kopt__run_tune_live_opts(kopt_run_tune *t, int index, int device, const kopt_ceilings *ceil,
                              kopt_eval_opts *eval, kopt_tune_live_opts *lo);
/* Each local GPU's first two workers started with the ceilings' measurement, the pool of
 * GPU `device`'s (or NULL), and the end of those no session took (run_tune_setup.c). */
void kopt__run_tune_prestart(kopt_run_tune *t, kopt_ctx *ctx);
kopt_eval_pool *kopt__run_tune_prestarted(kopt_run_tune *t, int device);
void kopt__run_tune_prestart_close(kopt_run_tune *t);
/* Scale-out (run_scale.c): the pool of slots when the run spreads (--gpus, MPI rank 0,
 * KOPT_SCALE_STANDIN), else nothing; per shape, the pool's evaluator (GPU slots given
 * their shape's live evaluators); at the end, the slots' counts and the MPI ranks told to
 * stop; on MPI ranks > 0, serving rank 0 instead of tuning. */
kopt_status kopt__run_tune_scale_open(kopt_run_tune *t, kopt_ctx *ctx);
kopt_status kopt__run_tune_scale_shape(kopt_run_tune *t, kopt_ctx *ctx, int index,
                                       kopt_tune_evaluator **out);
/* Mixed GPUs: the best few of the shape re-timed on slot 0, the winner chosen among them. */
kopt_status kopt__run_tune_scale_retime(kopt_run_tune *t, kopt_ctx *ctx, int index);
/* The devices that evaluated the shape, into its tune_runs row. */
kopt_status kopt__run_tune_scale_record(kopt_run_tune *t, kopt_ctx *ctx, int index);
void kopt__run_tune_scale_close(kopt_run_tune *t);
/* The compile depth of a live run (after scale_open: the pool's slots count as GPUs): the
 * compile threads and the lookahead, each the default (kopt_tune_default_compile_threads
 * and _lookahead over the usable CPUs) unless given, into P->o and t; and one NVRTC helper
 * process per compile thread, on the one-GPU path too. Close gives the caller's helper
 * setting back (which stops the helpers), after noting how many ran. */
void kopt__run_tune_depth_open(kopt_run_tune *t, kopt_ctx *ctx);
void kopt__run_tune_depth_close(kopt_run_tune *t);
/* After the shapes ran (live): t->gpu_* and t->held_back from the slots' busy time (one GPU:
 * the time in evaluate), the compile waits and the rounds. */
void kopt__run_tune_held_back(kopt_run_tune *t);
kopt_status kopt__run_tune_serve(kopt_run_tune *t, kopt_ctx *ctx);
/* Replay: read the recording (a cache file, or a stored run's outcomes) for the shape. */
kopt_status kopt__run_tune_load_recording(kopt_run_tune *t, kopt_ctx *ctx);

#endif
