/*
 * One NVRTC call and the compile helpers' side of it: the call made here
 * (kopt__nvrtc_build_here), the wire between kopt and a helper (a request: source, name,
 * options, name expressions; a reply: NVRTC's result, error, log, lowered names and cubin;
 * native-endian counts, strings as length + bytes), the helper's loop, its lower CPU
 * priority, and starting a program with a socket on its fd 0. The pool of helpers is
 * compile_procs.c; the zygote that forks them warm is compile_zygote.c.
 */
#include "kopt/compile.h"
#include "cuda_int.h"
#include "compile_int.h"

#include <errno.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

extern char **environ;

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

int kopt__fd_read_full(int fd, void *p, size_t n)
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

static int get_u32(int fd, uint32_t *v) { return kopt__fd_read_full(fd, v, sizeof(*v)); }

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
    return kopt__fd_read_full(fd, *s, n);
}

static int get_blob(int fd, void **p, size_t *size)
{
    uint64_t n;
    *p = NULL;
    *size = 0;
    if (kopt__fd_read_full(fd, &n, sizeof(n)) || n > ((uint64_t)1 << 34))
        return -1;
    if (!n)
        return 0;
    if (!(*p = malloc((size_t)n)))
        return -1;
    *size = (size_t)n;
    return kopt__fd_read_full(fd, *p, (size_t)n);
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

/* The helper's nice value: $KOPT_COMPILE_NICE or 10, never above the priority it has. */
void kopt__compile_lower_priority(void)
{
    const char *e = getenv("KOPT_COMPILE_NICE");
    int want = e && *e ? atoi(e) : 10, now;

    errno = 0;
    now = getpriority(PRIO_PROCESS, 0);
    if (errno != 0 || want <= now)
        return;
    if (setpriority(PRIO_PROCESS, 0, want > 19 ? 19 : want) != 0)
        fprintf(stderr, "kopt compile helper: cannot lower its priority: %s\n", strerror(errno));
}

int kopt__compile_helper_serve(const kopt_nvrtc_api *nv, int fd)
{
    for (;;) {
        kopt__nvrtc_req q;
        kopt__nvrtc_out o;
        int got = read_request(fd, &q);
        int bad;

        if (got != 0) {
            req_free(&q);
            return got > 0 ? 0 : 2;
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
        if (bad)
            return 1;
    }
}

int kopt__compile_helper_main(void)
{
    kopt_ctx *ctx = kopt_ctx_new();
    const kopt_nvrtc_api *nv = NULL;
    int rc;

    kopt__compile_lower_priority();
    if (!ctx || kopt__nvrtc_load(ctx, &nv) != KOPT_OK) {
        fprintf(stderr, "kopt compile helper: %s\n", ctx ? kopt_errmsg(ctx) : "no memory");
        kopt_ctx_free(ctx);
        return 1;
    }
    rc = kopt__compile_helper_serve(nv, 0);
    kopt_ctx_free(ctx);
    return rc;
}

int kopt__compile_helper_call(int fd, const kopt__nvrtc_req *q, kopt__nvrtc_out *o)
{
    return send_request(fd, q) || read_reply(fd, q->nnames, o);
}

kopt_status kopt__spawn_on_socket(kopt_ctx *ctx, const char *what, char *const argv[],
                                  pid_t *pid, int *fd)
{
    posix_spawn_file_actions_t fa;
    int sv[2], err;

    *pid = 0;
    *fd = -1;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        return kopt_seterr(ctx, KOPT_E_IO, "%s: socketpair: %s", what, strerror(errno));
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, sv[1], 0);   /* dup2 clears CLOEXEC */
    err = posix_spawn(pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(sv[1]);
    if (err != 0) {
        close(sv[0]);
        *pid = 0;
        return kopt_seterr(ctx, KOPT_E_IO, "%s: cannot start %s: %s", what, argv[0],
                           strerror(err));
    }
    *fd = sv[0];
    return KOPT_OK;
}
