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
 */
#include "kopt/compile.h"
#include "kopt/worker.h"
#include "cuda_int.h"
#include "compile_int.h"

#include <errno.h>
#include <pthread.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define MAX_HELPERS 64
#define REQ_MAGIC 0x6b6f7043u        /* "kopC" */
#define NO_STRING UINT32_MAX

/* ---- the result of one NVRTC call ------------------------------------------------------ */

void kopt__nvrtc_out_free(kopt__nvrtc_out *o, int nnames)
{
    if (!o)
        return;
    free(o->error);
    free(o->log);
    if (o->lowered)
        for (int i = 0; i < nnames; i++)
            free(o->lowered[i]);
    free(o->lowered);
    free(o->cubin);
    memset(o, 0, sizeof(*o));
}

kopt_status kopt__nvrtc_build_here(const kopt_nvrtc_api *nv, const kopt__nvrtc_req *q,
                                   kopt__nvrtc_out *o)
{
    nvrtcProgram prog = NULL;
    size_t n = 0;

    memset(o, 0, sizeof(*o));
    if (!(o->lowered = calloc((size_t)q->nnames + 1, sizeof(char *))))
        return KOPT_E_NOMEM;
    if (nv->nvrtcCreateProgram(&prog, q->source, q->name, 0, NULL, NULL) != NVRTC_SUCCESS) {
        o->result = -1;
        o->error = strdup("nvrtcCreateProgram failed");
        return KOPT_OK;
    }
    for (int i = 0; i < q->nnames; i++)
        nv->nvrtcAddNameExpression(prog, q->names[i]);
    o->result = nv->nvrtcCompileProgram(prog, q->argc, (const char *const *)q->argv);
    nv->nvrtcGetProgramLogSize(prog, &n);
    o->log = calloc(n + 1, 1);
    if (o->log && n)
        nv->nvrtcGetProgramLog(prog, o->log);
    if (o->result != NVRTC_SUCCESS) {
        o->error = strdup(nv->nvrtcGetErrorString((nvrtcResult)o->result));
    } else {
        for (int i = 0; i < q->nnames; i++) {
            const char *lowered = NULL;
            if (nv->nvrtcGetLoweredName(prog, q->names[i], &lowered) == NVRTC_SUCCESS && lowered)
                o->lowered[i] = strdup(lowered);
        }
        if (nv->nvrtcGetCUBINSize(prog, &o->size) != NVRTC_SUCCESS || !o->size ||
            !(o->cubin = malloc(o->size)) || nv->nvrtcGetCUBIN(prog, o->cubin) != NVRTC_SUCCESS) {
            free(o->cubin);
            o->cubin = NULL;
            o->size = 0;
        }
    }
    nv->nvrtcDestroyProgram(&prog);
    return KOPT_OK;
}

/* ---- the wire: native-endian counts, strings as length + bytes --------------------------- */

static int put(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

static int get(int fd, void *p, size_t n)
{
    char *c = p;
    while (n) {
        ssize_t r = read(fd, c, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        c += r;
        n -= (size_t)r;
    }
    return 0;
}

static int put_u32(int fd, uint32_t v) { return put(fd, &v, sizeof(v)); }

static int put_str(int fd, const char *s)
{
    uint32_t n = s ? (uint32_t)strlen(s) : NO_STRING;
    return put_u32(fd, n) || (s && put(fd, s, n));
}

static int put_blob(int fd, const void *p, uint64_t n)
{
    return put(fd, &n, sizeof(n)) || (n && put(fd, p, (size_t)n));
}

static int get_u32(int fd, uint32_t *v) { return get(fd, v, sizeof(*v)); }

/* A string (malloc'd) into *s, NULL when none was sent. */
static int get_str(int fd, char **s)
{
    uint32_t n;
    *s = NULL;
    if (get_u32(fd, &n))
        return -1;
    if (n == NO_STRING)
        return 0;
    if (n > (1u << 30) || !(*s = malloc((size_t)n + 1)))
        return -1;
    (*s)[n] = '\0';
    return get(fd, *s, n);
}

static int get_blob(int fd, void **p, size_t *size)
{
    uint64_t n;
    *p = NULL;
    *size = 0;
    if (get(fd, &n, sizeof(n)) || n > ((uint64_t)1 << 34))
        return -1;
    if (!n)
        return 0;
    if (!(*p = malloc((size_t)n)))
        return -1;
    *size = (size_t)n;
    return get(fd, *p, (size_t)n);
}

static int send_request(int fd, const kopt__nvrtc_req *q)
{
    if (put_u32(fd, REQ_MAGIC) || put_str(fd, q->source) || put_str(fd, q->name) ||
        put_u32(fd, (uint32_t)q->argc) || put_u32(fd, (uint32_t)q->nnames))
        return -1;
    for (int i = 0; i < q->argc; i++)
        if (put_str(fd, q->argv[i]))
            return -1;
    for (int i = 0; i < q->nnames; i++)
        if (put_str(fd, q->names[i]))
            return -1;
    return 0;
}

static int read_reply(int fd, int nnames, kopt__nvrtc_out *o)
{
    uint32_t result, n;

    memset(o, 0, sizeof(*o));
    if (get_u32(fd, &result) || get_str(fd, &o->error) || get_str(fd, &o->log) ||
        get_u32(fd, &n) || (int)n != nnames ||
        !(o->lowered = calloc((size_t)nnames + 1, sizeof(char *))))
        return -1;
    o->result = (int)result;
    for (int i = 0; i < nnames; i++)
        if (get_str(fd, &o->lowered[i]))
            return -1;
    return get_blob(fd, &o->cubin, &o->size);
}

/* ---- the helper ---------------------------------------------------------------------------- */

static void req_free(kopt__nvrtc_req *q)
{
    free((char *)q->source);
    free((char *)q->name);
    kopt__strv_free_n(q->argc, q->argv);
    kopt__strv_free_n(q->nnames, (char **)q->names);
    memset(q, 0, sizeof(*q));
}

/* One request from fd into *q; 1 at EOF before a request, -1 on a broken one. */
static int read_request(int fd, kopt__nvrtc_req *q)
{
    uint32_t magic, argc, nnames;
    ssize_t r;

    memset(q, 0, sizeof(*q));
    do
        r = read(fd, &magic, sizeof(magic));
    while (r < 0 && errno == EINTR);
    if (r == 0)
        return 1;
    if (r != (ssize_t)sizeof(magic) || magic != REQ_MAGIC)
        return -1;
    if (get_str(fd, (char **)&q->source) || get_str(fd, (char **)&q->name) ||
        get_u32(fd, &argc) || get_u32(fd, &nnames) || argc > 4096 || nnames > 4096)
        return -1;
    q->argv = calloc((size_t)argc + 1, sizeof(char *));
    q->names = calloc((size_t)nnames + 1, sizeof(char *));
    if (!q->argv || !q->names)
        return -1;
    for (; q->argc < (int)argc; q->argc++)
        if (get_str(fd, &q->argv[q->argc]) || !q->argv[q->argc])
            return -1;
    for (; q->nnames < (int)nnames; q->nnames++)
        if (get_str(fd, (char **)&q->names[q->nnames]) || !q->names[q->nnames])
            return -1;
    return 0;
}

int kopt__compile_helper_main(void)
{
    kopt_ctx *ctx = kopt_ctx_new();
    const kopt_nvrtc_api *nv = NULL;
    int fd = 0, rc = 0;

    if (!ctx || kopt__nvrtc_load(ctx, &nv) != KOPT_OK) {
        fprintf(stderr, "kopt compile helper: %s\n", ctx ? kopt_errmsg(ctx) : "no memory");
        kopt_ctx_free(ctx);
        return 1;
    }
    for (;;) {
        kopt__nvrtc_req q;
        kopt__nvrtc_out o;
        int got = read_request(fd, &q);
        int bad;

        if (got != 0) {
            rc = got > 0 ? 0 : 2;
            req_free(&q);
            break;
        }
        bad = kopt__nvrtc_build_here(nv, &q, &o) != KOPT_OK;
        if (!bad) {
            bad = put_u32(fd, (uint32_t)o.result) || put_str(fd, o.error) ||
                  put_str(fd, o.log) || put_u32(fd, (uint32_t)q.nnames);
            for (int i = 0; !bad && i < q.nnames; i++)
                bad = put_str(fd, o.lowered[i]);
            bad = bad || put_blob(fd, o.cubin, o.size);
        }
        kopt__nvrtc_out_free(&o, q.nnames);
        req_free(&q);
        if (bad) {
            rc = 1;
            break;
        }
    }
    kopt_ctx_free(ctx);
    return rc;
}

/* ---- the pool ------------------------------------------------------------------------------ */

typedef struct helper {
    pid_t pid;
    int fd;                     /* the parent's end of the socket pair */
    int busy;
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
        close(h->fd);             /* EOF: the helper exits */
    if (h->pid > 0)
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

/* Start one helper (mu not held): its pid and the parent's end of its socket pair. */
static kopt_status start_helper(kopt_ctx *ctx, helper *h)
{
    char *path = NULL;
    int sv[2];
    posix_spawn_file_actions_t fa;
    kopt_status rc;

    h->fd = -1;
    h->pid = 0;
    h->busy = 1;
    if ((rc = kopt_worker_find(ctx, &path, NULL)) != KOPT_OK)
        return rc;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        free(path);
        return kopt_seterr(ctx, KOPT_E_IO, "compile helper: socketpair: %s", strerror(errno));
    }
    {
        char *argv[] = {path, "__worker", "--compile-helper", NULL};
        int err;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, sv[1], 0);   /* dup2 clears CLOEXEC */
        err = posix_spawn(&h->pid, path, &fa, NULL, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        close(sv[1]);
        if (err != 0) {
            close(sv[0]);
            h->pid = 0;
            rc = kopt_seterr(ctx, KOPT_E_IO, "compile helper: cannot start %s: %s", path,
                             strerror(err));
            free(path);
            return rc;
        }
    }
    free(path);
    h->fd = sv[0];
    return KOPT_OK;
}

/* A helper for one request (busy, owned by the caller until put back); 0 when helpers are
 * off or cannot start. Waits while every allowed helper is busy. */
static int take_helper(kopt_ctx *ctx, helper *out)
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
            rc = start_helper(ctx, out);
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
    helper h;

    if (take_helper(ctx, &h)) {
        int broken = send_request(h.fd, q) || read_reply(h.fd, q->nnames, o);
        give_helper(&h, broken);
        if (!broken)
            return KOPT_OK;
        kopt__nvrtc_out_free(o, q->nnames);
        warn_once(ctx, "a helper process stopped answering");
    }
    return kopt__nvrtc_build_here(nv, q, o);
}
