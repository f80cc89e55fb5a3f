/*
 * Internal: the worker process and its protocol.
 *
 * The parent (which never creates a CUDA context) starts the worker program (kopt/worker.h:
 * kopt-worker, or `kopt __worker`) with the job as
 * one line of JSON on stdin (then "go" on a second line once the GPU is free), a pipe for events on fd 3 (one JSON object per line), and a shared
 * memory file on fd 4 into which the worker copies the outputs of each run. The worker's
 * own stdout/stderr go to a log file. Events:
 *   {"event":"idle","context":b,"shm_size":n}  an early worker (--early-device) waiting for
 *                                              its job: context made, buffer mapped (pool.c)
 *   {"event":"hello","device":{...}}           once the context is up
 *   {"event":"progress","phase":p,"what":"..."} a heartbeat after each synchronized step
 *   {"event":"result",...}                      the end: kernels, per-phase timings
 *   {"event":"error","kind":"crash|oom|launch|harness","message":...,"cuda":code}
 * A worker that dies by signal, stops talking, or exits without "result" or "error" is
 * classified by the parent (CRASH, TIMEOUT).
 */
#ifndef KOPT_WORKER_INT_H
#define KOPT_WORKER_INT_H

#include "kopt/core.h"
#include "kopt/eval.h"
#include "kopt/problem.h"

#define KOPT_WORKER_EVENT_FD 3
#define KOPT_WORKER_SHM_FD 4

/* Entry point of `kopt __worker` (used by the CLI's hidden verb). Returns the exit code. */
int kopt_worker_main(void);
/* The same, with the worker's arguments after "__worker" ("--early-device=N": make the
 * CUDA context on device N before reading the job). */
int kopt_worker_main_args(int argc, char **argv);


#include <jansson.h>
#include <sys/types.h>

/* What came back from one worker. */
typedef struct kopt__worker_run {
    json_t *device;          /* from "hello", or NULL */
    json_t *result;          /* the "result" event, or NULL */
    json_t *error;           /* the "error" event, or NULL */
    json_t *events;          /* "outputs" and "compared" events not yet taken
                              * (kopt__worker_next), or NULL */
    json_t *clock;           /* the PyTorch worker's "clock" events (libkopt's samples per
                              * phase, written by include/kopt/clock.h), or NULL */
    int timed_out;
    int signal;              /* the signal that ended it, or 0 */
    int exit_code;
    char *log;               /* the tail of its stdout/stderr */
    unsigned char *shm;      /* the outputs it copied (parent mapping), or NULL */
    size_t shm_size;
    int shm_borrowed;        /* a serving worker's buffer: the proc unmaps it, not the run */
    double wall_ms;
    char last_progress[128];
    int idle;                /* an early worker's last "idle" event: 1 its context made,
                              * -1 not (no GPU: its job's setup tries again), 0 none yet */
    size_t idle_shm;         /* the output buffer it had mapped then */
    int trials_done;         /* phases whose trials' outputs are in the buffer ("trials"
                              * events of this job: the phase before the timing) */
} kopt__worker_run;

/* Two-step use, so two workers can set up (process, context, modules) side by side while
 * only one runs on the GPU at a time: start writes the job; ready waits for "hello";
 * finish sends "go", collects the events until the worker exits, and frees the proc. */
/* The GPU a worker is pinned to (pin.c): CUDA_VISIBLE_DEVICES and KOPT_WORKER_PINNED for
 * its process. gpu = -1: not pinned (it sees what kopt sees). */
typedef struct kopt__worker_pin {
    int gpu;
    char visible[96];          /* the GPU's UUID (NVML's "GPU-...") */
    char gpu_text[16];         /* gpu as text */
} kopt__worker_pin;
/* The GPU a job is for: its "device" (kopt's worker) or its torch object's "cuda:N"; -1
 * when it names none ("cpu", "cuda"). */
int kopt__job_gpu(const json_t *job);
/* The pin of a worker for `gpu` (-1: none), unless it runs behind a wrapper (`wrapped`), it
 * is turned off (KOPT_PIN_WORKERS=0) or NVML cannot name the GPU. */
void kopt__worker_pin_for(int gpu, int wrapped, kopt__worker_pin *p);
/* In a worker: CUDA's ordinal for kopt's GPU `gpu` (0 where the process was pinned to it). */
int kopt__pinned_ordinal(int gpu);
typedef struct kopt__worker_proc kopt__worker_proc;
typedef struct kopt__zygote kopt__zygote;
kopt_status kopt__worker_start(kopt_ctx *ctx, json_t *job, size_t shm_size,
                               kopt__worker_proc **out);
/* The same, forked by `zygote` when it is ready (the PyTorch worker), else by exec. */
kopt_status kopt__worker_start_via(kopt_ctx *ctx, kopt__zygote *zygote, json_t *job,
                                   size_t shm_size, kopt__worker_proc **out);
kopt_status kopt__worker_ready(kopt_ctx *ctx, kopt__worker_proc *w);
/* Start a worker of `job`'s program, in `job`'s sandbox, ahead of the job: its program gets
 * "--ahead" (the PyTorch worker imports torch meanwhile); kopt__worker_give hands it a job
 * of the same program and sandbox later (an evaluation session's next candidate). */
kopt_status kopt__worker_start_ahead(kopt_ctx *ctx, kopt__zygote *zygote, const json_t *job,
                                     kopt__worker_proc **out);
kopt_status kopt__worker_give(kopt_ctx *ctx, kopt__worker_proc *w, json_t *job, size_t shm_size);
/* Start in two steps: prestart launches a worker with no job, which makes its CUDA context
 * on `device` meanwhile (--early-device); send gives it its job and output buffer. The
 * parent prepares the job (compiles, binds) while the context is made. Device code only:
 * host-mode and wrapped workers need their sandbox or wrapper from the start. */
kopt_status kopt__worker_prestart(kopt_ctx *ctx, int device, kopt__worker_proc **out);
kopt_status kopt__worker_send(kopt_ctx *ctx, kopt__worker_proc *w, json_t *job, size_t shm_size);
/* Make a prestarted worker's output buffer now (its pages faulted in by threads): send
 * uses it when the job's size matches, and makes another when not. */
kopt_status kopt__worker_buffer(kopt_ctx *ctx, kopt__worker_proc *w, size_t shm_size);
/* As finish, but returns as soon as the "result" is in (or the worker ended): the worker's
 * exit (unpinning its buffer, tearing its context down: ~100 ms) goes on while the caller
 * compares. The proc stays with the caller: free it with kopt__worker_proc_release. */
kopt_status kopt__worker_collect(kopt_ctx *ctx, kopt__worker_proc *w, double timeout_s,
                                 kopt__worker_run *out);
/* Free a proc without waiting for its process's end: one still exiting is reaped later
 * (by the next worker start or release). */
void kopt__worker_proc_release(kopt__worker_proc *w);
/* A prestarted worker's state, read without waiting: -1 ended, 0 still making its context
 * (or that failed), 1 context made, 2 context made and output buffer mapped at shm_size
 * (0: any size). */
int kopt__worker_early_state(kopt__worker_proc *w, size_t shm_size);
/* What its last "idle" event said, read without waiting: 1 context made, -1 it failed (no
 * GPU), 0 no "idle" event yet. */
int kopt__worker_early_context(kopt__worker_proc *w);
int kopt__worker_pid(const kopt__worker_proc *w);
/* A prestarted worker of the pool for `device`, or NULL (pool.c): the readiest (context
 * made and buffer mapped, else context made, else the longest starting), oldest first. Its
 * replacement starts at kopt__eval_pool_replace (its failure is logged on ctx). */
struct kopt_eval_pool;
kopt__worker_proc *kopt__eval_pool_take(struct kopt_eval_pool *p, kopt_ctx *ctx, int device);
/* The same worker, handed over for good (an evaluation session's first workers): nothing
 * replaces it. */
kopt__worker_proc *kopt__eval_pool_hand_over(struct kopt_eval_pool *p, int device);
/* The output buffer size the last evaluation needed: the pool's next workers get theirs
 * made ahead at that size (most evaluations of a loop are of one problem). */
void kopt__eval_pool_note_size(struct kopt_eval_pool *p, size_t shm_size);
/* Start the replacements of the workers taken since the last call (an evaluation calls it
 * once its workers are set up; KOPT_POOL_REPLACE=take starts them as they are taken). */
void kopt__eval_pool_replace(struct kopt_eval_pool *p, kopt_ctx *ctx);
/* The pool's serving reference worker for `device` when it is up and of this environment
 * (else NULL, dropped), the output size it was started with, dropping it (another size),
 * and handing it one that served an evaluation's reference (1 kept, 0 not: not alive). */
kopt__worker_proc *kopt__eval_pool_serving_ref(struct kopt_eval_pool *p, int device);
size_t kopt__eval_pool_serving_total(const struct kopt_eval_pool *p);
void kopt__eval_pool_drop_ref(struct kopt_eval_pool *p);
int kopt__eval_pool_keep_ref(struct kopt_eval_pool *p, kopt__worker_proc *w, size_t total);
/* The idle workers' process ids, oldest first (at most max; tests). */
int kopt__eval_pool_pids(const struct kopt_eval_pool *p, int *pids, int max);
kopt_status kopt__worker_finish(kopt_ctx *ctx, kopt__worker_proc *w, double timeout_s,
                                kopt__worker_run *out);
void kopt__worker_proc_free(kopt__worker_proc *w);

/* Serving workers (an evaluation session): a worker started with "serve": true in its job
 * stays up after its result and runs each further job line at once (device code only, the
 * same output buffer). kopt__worker_serve sends "go" (job NULL: the first job, after
 * kopt__worker_start) or the next job, and collects events until that job's "result", or
 * until the worker ends (an "error", a crash, a hang killed after timeout_s): then *out
 * also has its exit status and log, and kopt__worker_alive turns 0. out->shm is the proc's
 * buffer (shm_borrowed), valid until the next job or the proc is freed. */
kopt_status kopt__worker_serve(kopt_ctx *ctx, kopt__worker_proc *w, json_t *job,
                               double timeout_s, kopt__worker_run *out);
/* For the next kopt__worker_serve or kopt__worker_collect of `w` only: fn(arg, p, shm) for
 * each phase p whose trials' outputs are in the output buffer `shm`, called while the
 * worker goes on to time it (the parent checks those outputs meanwhile). */
typedef void (*kopt__trials_fn)(void *arg, int phase, const unsigned char *shm);
void kopt__worker_on_trials(kopt__worker_proc *w, kopt__trials_fn fn, void *arg);
int kopt__worker_alive(const kopt__worker_proc *w);

/* Streaming (the PyTorch path's comparison where the outputs are, torch_stream.c): the
 * next event of `kind` ("outputs" from a subject, "compared" from the reference), owned
 * by the caller; "go" is sent first if it was not. NULL when the worker ended, failed, or
 * (for "outputs") gave its result instead: its run then holds why. */
json_t *kopt__worker_next(kopt__worker_proc *w, double timeout_s, const char *kind);
/* Its "hello" device object (borrowed), or NULL before. */
json_t *kopt__worker_device(const kopt__worker_proc *w);
/* A line to the worker's stdin (a command, "next"). */
void kopt__worker_say(kopt__worker_proc *w, const char *line);
/* SIGSTOP (stop 1) or SIGCONT its process group: a subject holds still while the
 * reference reads its buffer. */
void kopt__worker_pause(kopt__worker_proc *w, int stop);
/* A path by which another process opens this worker's output buffer (this process's
 * /proc/PID/fd entry): 0 when it has none. */
int kopt__worker_buffer_path(const kopt__worker_proc *w, char *buf, size_t n);

/* Start a worker with `job`, wait for it (a step with no progress for timeout_s is a
 * hang: the worker's process group is killed), and collect its events. KOPT_OK when the
 * worker ran at all; its outcome is in *out. */
kopt_status kopt__worker_spawn(kopt_ctx *ctx, json_t *job, size_t shm_size, double timeout_s,
                               kopt__worker_run *out);
void kopt__worker_run_free(kopt__worker_run *r);

/* One size set of a streamed comparison (torch_stream.c): filled run by run. */
typedef struct kopt__stream_phase {
    const kopt_bound *b;         /* the reference's binding: the outputs, their tolerances */
    const char *label;
    int ntrials, timed, nout;
    const uint64_t *seeds;       /* ntrials */
    uint64_t timing_seed;
    size_t slot;                 /* bytes of one run's outputs */
    kopt_check *checks;          /* (ntrials + 2) x nout: trials, the repeat, the timed run */
    unsigned char done[18];      /* runs compared */
} kopt__stream_phase;
/* Run the ready streaming subject `subj` to its result (*out its run; the proc is
 * released, its exit not waited for), the streaming reference `ref` (after its result)
 * comparing each run's outputs in the subject's export buffer of `export_bytes` while the
 * subject is stopped. *compare_ms: the reference's time in its comparisons. An error when
 * the reference could not compare (its message); the subject's own failures are in *out. */
kopt_status kopt__torch_stream(kopt_ctx *ctx, kopt__worker_proc *ref, kopt__worker_proc *subj,
                               kopt__stream_phase *ph, int nphases, size_t export_bytes,
                               double timeout_s, kopt__worker_run *out, double *compare_ms);
/* 1 when every run of every phase was compared; else 0 and why in msg. */
int kopt__stream_complete(const kopt__stream_phase *ph, int nphases, char *msg, size_t n);

/* Device info from the worker's JSON. */
struct kopt_device_info;
void kopt__device_from_json(json_t *j, struct kopt_device_info *d);

/* ---- the PyTorch zygote (zygote.c) --------------------------------------------------- */
struct kopt__sandbox_limits;
/* Start python on libexec's kopt_torch_zygote.py (beside `worker_script`), not waiting for
 * its import. */
kopt_status kopt__zygote_start(kopt_ctx *ctx, const char *python, const char *worker_script,
                               kopt__zygote **out);
/* 1 when it has imported and the environment is still the one it imported with. */
int kopt__zygote_ready(kopt__zygote *z);
/* 1 unless it failed or ended, or the environment changed (a new one is then wanted). */
int kopt__zygote_usable(kopt__zygote *z);
/* Fork a worker with these arguments (after the script's), environment (kopt's, with
 * `env_set`'s variables over it; NULL: none), descriptors (job pipe's read end, event
 * pipe's write end, output buffer, log) and sandbox (NULL: none). KOPT_E_NOT_FOUND
 * when the zygote cannot (why, at INFO in ctx's log; ctx's error is left as it was): the
 * caller starts the worker by exec. */
kopt_status kopt__zygote_fork(kopt__zygote *z, kopt_ctx *ctx, json_t *args, json_t *env_set,
                              const struct kopt__sandbox_limits *sandbox, const int fds[4],
                              pid_t *pid);
/* The wait status of the zygote's child `pid`, waiting up to timeout_s: 1, or 0 none. */
int kopt__zygote_wait(kopt__zygote *z, pid_t pid, double timeout_s, int *status);
/* Its report of `pid`'s end is not wanted (the worker was released). */
void kopt__zygote_forget(kopt__zygote *z, pid_t pid);
/* The torch version it imported ("" before it said). */
const char *kopt__zygote_torch(const kopt__zygote *z);
/* End it (and, with it, any child still running). */
void kopt__zygote_free(kopt__zygote *z);
/* A hash of this process's environment (the set of its variables). */
uint64_t kopt__env_hash(void);

#endif
