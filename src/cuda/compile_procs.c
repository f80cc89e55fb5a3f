/*
 * NVRTC in helper processes (opt-in: $KOPT_COMPILE_PROCS=N or kopt_compile_procs_set(N)).
 * NVRTC compiles in parallel on threads of one process, but less well than in processes at
 * 16 ways (bench/results/2026-11-26-h200x4-scale: 0.061 s of wall per compile on 16 threads,
 * 0.042 s on 16 processes), and a 4-GPU first tuning run is compile-bound. With N > 0 each
 * NVRTC call goes to one of up to N helper processes: the worker program (kopt/worker.h)
 * started as `kopt-worker __worker --compile-helper`, one request at a time over a socket
 * pair. The parent keeps everything else (the cache key, the cache, the log's annotation,
 * the resource report): a helper returns NVRTC's result, log, lowered names and cubin.
 * $KOPT_COMPILE_PROCS, when set, wins over the setter (0 turns helpers off). Helpers start
 * when first needed and stop when N drops below their number (or at exit: they end at EOF).
 * A helper that cannot be started or fails is logged once and its request compiled here.
 * Helpers are forked warm by one zygote (compile_zygote.c; $KOPT_COMPILE_FORK=0 starts each
 * as a program of its own). The helper's side and the wire are compile_helper.c.
 * Helpers run at a lower CPU priority (nice 10; $KOPT_COMPILE_NICE=N sets it, 0 keeps the
 * parent's): where they fill every CPU, as in a first tuning run on several GPUs, the
 * evaluations' processes (the GPU workers starting, timing, comparing) come first.
 */
#include "kopt/compile.h"
#include "kopt/worker.h"
#include "cuda_int.h"
#include "compile_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_HELPERS 64

/* ---- the pool ------------------------------------------------------------------------------ */

typedef struct helper {
    pid_t pid;
    int fd;                     /* the parent's end of the socket pair */
    int busy;
    int forked;                 /* forked by the zygote: its child, not ours */
} helper;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static helper helpers[MAX_HELPERS];
static int nhelpers, starting;  /* started (busy or idle); being started now */
static int wanted;              /* kopt_compile_procs_set() */
static int warned;              /* a failure was logged once */
static int exit_hook;

/* $KOPT_COMPILE_PROCS when set, else the setter's value; clamped to [0, MAX_HELPERS]. */
static int limit_locked(void)
{
    const char *e = getenv("KOPT_COMPILE_PROCS");
    int n = e && *e ? atoi(e) : wanted;
    return n < 0 ? 0 : n > MAX_HELPERS ? MAX_HELPERS : n;
}

static void stop_helper(helper *h)
{
    if (h->fd >= 0)
        close(h->fd);             /* EOF: the helper exits (the zygote reaps its children) */
    if (h->pid > 0 && !h->forked)
        while (waitpid(h->pid, NULL, 0) < 0 && errno == EINTR) {
        }
    h->fd = -1;
    h->pid = 0;
}

/* Stop the idle helpers beyond the limit (mu held). */
static void trim_locked(void)
{
    int limit = limit_locked();
    for (int i = 0; i < nhelpers && nhelpers > limit;) {
        if (!helpers[i].busy) {
            stop_helper(&helpers[i]);
            helpers[i] = helpers[--nhelpers];
        } else {
            i++;
        }
    }
}

static void stop_all(void)
{
    pthread_mutex_lock(&mu);
    wanted = 0;
    for (int i = 0; i < nhelpers; i++)
        if (!helpers[i].busy)
            stop_helper(&helpers[i]);
    nhelpers = 0;
    pthread_mutex_unlock(&mu);
    kopt__compile_zygote_stop();
}

int kopt_compile_procs_set(int n)
{
    int old;
    pthread_mutex_lock(&mu);
    old = wanted;
    wanted = n < 0 ? 0 : n > MAX_HELPERS ? MAX_HELPERS : n;
    trim_locked();
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    if (wanted == 0)
        kopt__compile_zygote_stop();      /* and a later setting may try a zygote again */
    return old;
}

int kopt_compile_procs_running(void)
{
    int n;
    pthread_mutex_lock(&mu);
    n = nhelpers;
    pthread_mutex_unlock(&mu);
    return n;
}

static void warn_once(kopt_ctx *ctx, const char *what)
{
    int first;
    pthread_mutex_lock(&mu);
    first = !warned;
    warned = 1;
    pthread_mutex_unlock(&mu);
    if (first)
        kopt_log(ctx, KOPT_LOG_WARN, "compile helper: %s; compiling in this process instead",
                 what);
}

/* $KOPT_COMPILE_FORK=0 starts every helper as a program of its own (no zygote). */
static int fork_wanted(void)
{
    const char *e = getenv("KOPT_COMPILE_FORK");
    return !(e && strcmp(e, "0") == 0);
}

/* Start one helper (mu not held): forked warm by the zygote (started for `arch` on first
 * use), else a program of its own; its pid and the parent's end of its socket pair. */
static kopt_status start_helper(kopt_ctx *ctx, helper *h, const char *arch)
{
    char *path = NULL;
    kopt_status rc;

    h->fd = -1;
    h->pid = 0;
    h->busy = 1;
    h->forked = 0;
    if ((rc = kopt_worker_find(ctx, &path, NULL)) != KOPT_OK)
        return rc;
    if (fork_wanted() && kopt__compile_zygote_fork(ctx, path, arch, &h->pid, &h->fd) == KOPT_OK) {
        h->forked = 1;
    } else {
        char *argv[] = {path, "__worker", "--compile-helper", NULL};
        rc = kopt__spawn_on_socket(ctx, "compile helper", argv, &h->pid, &h->fd);
    }
    free(path);
    return rc;
}

/* A helper for one request (busy, owned by the caller until put back); 0 when helpers are
 * off or cannot start. Waits while every allowed helper is busy. */
static int take_helper(kopt_ctx *ctx, helper *out, const char *arch)
{
    pthread_mutex_lock(&mu);
    for (;;) {
        int limit = limit_locked();
        if (limit == 0) {
            pthread_mutex_unlock(&mu);
            return 0;
        }
        for (int i = 0; i < nhelpers; i++)
            if (!helpers[i].busy) {
                helpers[i].busy = 1;
                *out = helpers[i];
                pthread_mutex_unlock(&mu);
                return 1;
            }
        if (nhelpers + starting < limit) {
            kopt_status rc;
            starting++;
            if (!exit_hook) {
                exit_hook = 1;
                atexit(stop_all);
            }
            pthread_mutex_unlock(&mu);
            rc = start_helper(ctx, out, arch);
            pthread_mutex_lock(&mu);
            starting--;
            if (rc == KOPT_OK && nhelpers < MAX_HELPERS) {
                int count;
                helpers[nhelpers++] = *out;
                count = nhelpers;
                pthread_mutex_unlock(&mu);
                kopt_log(ctx, KOPT_LOG_INFO, "compile helper %d of up to %d started (pid %d)",
                         count, limit, (int)out->pid);
                return 1;
            }
            pthread_mutex_unlock(&mu);
            if (rc == KOPT_OK)
                stop_helper(out);
            else
                warn_once(ctx, kopt_errmsg(ctx));
            return 0;
        }
        pthread_cond_wait(&cv, &mu);
    }
}

/* Put a taken helper back: idle again, or stopped and dropped when `broken` (or beyond the
 * limit now). */
static void give_helper(const helper *h, int broken)
{
    pthread_mutex_lock(&mu);
    for (int i = 0; i < nhelpers; i++)
        if (helpers[i].pid == h->pid) {
            helpers[i].busy = 0;
            if (broken || nhelpers > limit_locked()) {
                stop_helper(&helpers[i]);
                helpers[i] = helpers[--nhelpers];
            }
            break;
        }
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
}

kopt_status kopt__nvrtc_build(kopt_ctx *ctx, const kopt_nvrtc_api *nv,
                              const kopt__nvrtc_req *q, kopt__nvrtc_out *o)
{
    const char *arch = NULL;
    helper h;

    for (int i = 0; i < q->argc && !arch; i++)   /* the target, for the zygote's warm-up */
        if (strncmp(q->argv[i], "--gpu-architecture=", 19) == 0)
            arch = q->argv[i] + 19;
    if (take_helper(ctx, &h, arch)) {
        int broken = kopt__compile_helper_call(h.fd, q, o);
        give_helper(&h, broken);
        if (!broken)
            return KOPT_OK;
        kopt__nvrtc_out_free(o, q->nnames);
        warn_once(ctx, "a helper process stopped answering");
    }
    return kopt__nvrtc_build_here(nv, q, o);
}
