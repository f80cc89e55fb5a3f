/* Internal: what run_tune.c (tuning) and run_tune_setup.c (setting up, replays) share. */
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
} kopt__run_tune_priv;

/* 1 once the caller asked to stop. */
int kopt__run_tune_stopped(const kopt_run_tune *t);
/* The driver's progress hook: the caller's, with the shape. */
void kopt__run_tune_progress(void *user, const kopt_tune_progress *p);
/* Replay: read the recording (a cache file, or a stored run's outcomes) for the shape. */
kopt_status kopt__run_tune_load_recording(kopt_run_tune *t, kopt_ctx *ctx);

#endif
