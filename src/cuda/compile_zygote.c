/*
 * The compile helpers' zygote: one process that loads NVRTC and compiles a small kernel for
 * the run's target once, then forks every further compile helper, so each starts warm.
 * A helper started as a program of its own pays NVRTC's start in its first compile, and
 * many starting at once slow each other (bench/probe/nvrtc_threads.py --cold): on the
 * 4 x H100 host (64 CPUs, 2026-11-27) a first compile took 1.44 s in one fresh process and
 * 8.92 s in each of 60, against 0.7 s warm; a 4-GPU first tuning run (60 helpers) waited
 * 8.4-8.9 s for its first evaluation, and 1.8-1.9 s with the zygote
 * (bench/results/2026-11-27-h100x4-zygote).
 *
 * Parent side (compile_procs.c's start_helper): kopt__compile_zygote_fork() starts the zygote on
 * first use (`kopt-worker __worker --compile-zygote [--gpu-architecture=sm_XY]`, a socket
 * pair on its fd 0), waits for its "ready" byte, then per helper sends it one end of a new
 * socket pair (SCM_RIGHTS) and reads back the forked helper's pid. The helpers are the
 * zygote's children: it reaps them (SIGCHLD ignored); each ends at EOF on its socket as a
 * spawned one does. A zygote that cannot start or stops answering is dropped and helpers
 * are spawned as before, until kopt_compile_procs_set(0).
 */
#include "kopt/compile.h"
#include "cuda_int.h"
#include "compile_int.h"
#include "core/core_int.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define READY 'R'
#define FORK 'F'

/* ---- the zygote ---------------------------------------------------------------------------- */

/* One fork request on fd: the new helper's socket (a received descriptor) into *sock; 1 at
 * EOF, -1 on a broken request. */
static int recv_request(int fd, int *sock)
{
    char byte = 0;
    long r = kopt__recv_fds(fd, &byte, 1, sock, 1);

    if (r == 0)
        return 1;
    if (r != 1 || byte != FORK || *sock < 0) {
        if (*sock >= 0)
            close(*sock);
        return -1;
    }
    return 0;
}

int kopt__compile_zygote_main(const char *arch)
{
    static const char warm_src[] =
        "extern \"C\" __global__ void kopt_zygote_warm(float *p, int n)\n"
        "{ int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i < n) p[i] = p[i] * 2.0f + 1.0f; }\n";
    kopt_ctx *ctx = kopt_ctx_new();
    const kopt_nvrtc_api *nv = NULL;
    char opt[64], *argv[1] = {opt};
    kopt__nvrtc_req q;
    kopt__nvrtc_out o;
    char ready = READY;

    kopt__compile_lower_priority();      /* inherited by every helper it forks */
    if (!ctx || kopt__nvrtc_load(ctx, &nv) != KOPT_OK) {
        fprintf(stderr, "kopt compile zygote: %s\n", ctx ? kopt_errmsg(ctx) : "no memory");
        kopt_ctx_free(ctx);
        return 1;
    }
    /* NVRTC's start (its built-in headers, the back end for the target) happens here, once */
    memset(&q, 0, sizeof(q));
    q.source = warm_src;
    q.name = "kopt_zygote_warm.cu";
    snprintf(opt, sizeof(opt), "--gpu-architecture=%s", arch && *arch ? arch : "sm_90");
    q.argc = 1;
    q.argv = argv;
    if (kopt__nvrtc_build_here(nv, &q, &o) == KOPT_OK)
        kopt__nvrtc_out_free(&o, 0);
    signal(SIGCHLD, SIG_IGN);            /* the helpers are reaped as they end */
    if (write(0, &ready, 1) != 1)
        return 1;
    for (;;) {
        int sock = -1, got = recv_request(0, &sock);
        int32_t pid;
        pid_t p;
        if (got != 0)
            return got > 0 ? 0 : 2;
        if ((p = fork()) == 0) {          /* the helper: its socket on fd 0, the loop */
            signal(SIGCHLD, SIG_DFL);
            if (dup2(sock, 0) < 0)
                _exit(1);
            close(sock);
            _exit(kopt__compile_helper_serve(nv, 0));
        }
        close(sock);
        pid = p > 0 ? (int32_t)p : -1;
        if (write(0, &pid, sizeof(pid)) != (ssize_t)sizeof(pid))
            return 1;
    }
}

/* ---- the parent's side ------------------------------------------------------------------- */

static pthread_mutex_t zmu = PTHREAD_MUTEX_INITIALIZER;
static int zfd = -1;             /* our end of the zygote's socket; -1: none */
static pid_t zpid;
static int zfailed;              /* it could not start or stopped answering */

static void drop_locked(void)
{
    if (zfd >= 0)
        close(zfd);               /* EOF: the zygote exits */
    if (zpid > 0)
        while (waitpid(zpid, NULL, 0) < 0 && errno == EINTR) {
        }
    zfd = -1;
    zpid = 0;
}

static kopt_status start_locked(kopt_ctx *ctx, const char *worker, const char *arch)
{
    char opt[64], *argv[] = {(char *)worker, "__worker", "--compile-zygote", NULL, NULL};
    char ready = 0;
    kopt_status rc;

    if (arch && *arch && strlen(arch) < 32) {
        snprintf(opt, sizeof(opt), "--gpu-architecture=%s", arch);
        argv[3] = opt;
    }
    if ((rc = kopt__spawn_on_socket(ctx, "compile zygote", argv, &zpid, &zfd)) != KOPT_OK)
        return rc;
    if (kopt__fd_read_full(zfd, &ready, 1) != 0 || ready != READY) {
        drop_locked();
        return kopt_seterr(ctx, KOPT_E_IO, "compile zygote: %s did not start", worker);
    }
    return KOPT_OK;
}

kopt_status kopt__compile_zygote_fork(kopt_ctx *ctx, const char *worker, const char *arch,
                                      pid_t *pid, int *fd)
{
    char byte = FORK;
    int sv[2];
    int32_t got = -1;
    kopt_status rc = KOPT_OK;

    *pid = 0;
    *fd = -1;
    pthread_mutex_lock(&zmu);
    if (zfailed || (zfd < 0 && (rc = start_locked(ctx, worker, arch)) != KOPT_OK)) {
        zfailed = 1;
        pthread_mutex_unlock(&zmu);
        return rc != KOPT_OK ? rc : kopt_seterr(ctx, KOPT_E_IO, "compile zygote: not running");
    }
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        pthread_mutex_unlock(&zmu);
        return kopt_seterr(ctx, KOPT_E_IO, "compile zygote: socketpair: %s", strerror(errno));
    }
    if (kopt__send_fds(zfd, &byte, 1, &sv[1], 1, MSG_NOSIGNAL) != 1 ||
        kopt__fd_read_full(zfd, &got, sizeof(got)) != 0 || got <= 0) {
        close(sv[0]);
        close(sv[1]);
        drop_locked();
        zfailed = 1;
        pthread_mutex_unlock(&zmu);
        return kopt_seterr(ctx, KOPT_E_IO, "compile zygote: stopped answering");
    }
    close(sv[1]);
    pthread_mutex_unlock(&zmu);
    *pid = (pid_t)got;
    *fd = sv[0];
    return KOPT_OK;
}

void kopt__compile_zygote_stop(void)
{
    pthread_mutex_lock(&zmu);
    drop_locked();
    zfailed = 0;
    pthread_mutex_unlock(&zmu);
}
