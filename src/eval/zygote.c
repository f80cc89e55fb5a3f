/*
 * The PyTorch zygote of an evaluation session (libexec/kopt_torch_zygote.py): one Python
 * process that imported torch and kopt's worker once and forks a worker per request, so
 * that a session's PyTorch workers start in tens of milliseconds instead of the seconds of
 * `import torch` (docs/kernelbench.md, "Workers forked ready-imported").
 *
 * The zygote is started without waiting for it; until it says it is ready, and whenever it
 * cannot serve (it ended, the environment changed since it imported, a request failed),
 * kopt__zygote_fork answers KOPT_E_NOT_FOUND and the caller starts its worker by exec, as
 * without a zygote. A forked worker is the zygote's child, not ours: its exit status comes
 * over the socket ({"exit": pid, "status": s}), kept here until the worker's owner asks.
 * One session (one thread) uses a zygote; closing it ends the zygote and, through their
 * parent-death signal, any child still running.
 */
#include "worker_int.h"
#include "sandbox_int.h"
#include "../core/core_int.h"
#include "kopt/worker.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define EXITS_MAX 64
#define MSG_MAX (1 << 16)
#define FORK_REPLY_S 10.0

extern char **environ;

struct kopt__zygote {
    pid_t pid;
    int sock;
    int log_fd;
    int ready;               /* 1 ready, 0 importing, -1 unusable */
    int next_id;
    uint64_t env_hash;       /* the environment it imported with */
    char torch[64];
    char *lib;               /* libkopt, for the children's sandbox */
    struct { pid_t pid; int status; } exits[EXITS_MAX];
    char in[MSG_MAX];        /* the message being read */
    int nexits, exits_at;
};

/* A hash of the environment: the zygote serves only while it is the one it imported with
 * (variables read at import, OMP_NUM_THREADS and the like, are then in effect). */
uint64_t kopt__env_hash(void)
{
    uint64_t h = 1469598103934665603ull;

    for (char **e = environ; e && *e; e++) {
        uint64_t x = 1469598103934665603ull;
        for (const unsigned char *c = (const unsigned char *)*e; *c; c++)
            x = (x ^ *c) * 1099511628211ull;
        h += x * 0x9e3779b97f4a7c15ull;   /* order-free: the set of variables */
    }
    return h;
}

static json_t *env_json(void)
{
    json_t *env = json_object();

    for (char **e = environ; env && e && *e; e++) {
        const char *eq = strchr(*e, '=');
        char key[512];
        if (!eq || (size_t)(eq - *e) >= sizeof(key))
            continue;
        snprintf(key, sizeof(key), "%.*s", (int)(eq - *e), *e);
        json_object_set_new(env, key, json_string(eq + 1));
    }
    return env;
}

kopt_status kopt__zygote_start(kopt_ctx *ctx, const char *python, const char *worker_script,
                               kopt__zygote **out)
{
    kopt__zygote *z = calloc(1, sizeof(*z));
    int sv[2] = {-1, -1};
    char *dir = NULL, *script = NULL;

    *out = NULL;
    if (!z || !(dir = kopt_path_dir(worker_script)) ||
        !(script = kopt_path_join(dir, "kopt_torch_zygote.py"))) {
        free(z);
        free(dir);
        return kopt_seterr(ctx, KOPT_E_NOMEM, "zygote");
    }
    free(dir);
    z->pid = -1;
    z->sock = z->log_fd = -1;
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0 ||
        (z->log_fd = memfd_create("kopt-zygote-log", MFD_CLOEXEC)) < 0) {
        kopt_seterr(ctx, KOPT_E_IO, "zygote: %s", strerror(errno));
        goto fail;
    }
    if (kopt_lib_find(ctx, &z->lib) != KOPT_OK)
        z->lib = NULL;                 /* sandboxed requests then go by exec */
    z->env_hash = kopt__env_hash();
    z->pid = fork();
    if (z->pid < 0) {
        kopt_seterr(ctx, KOPT_E_ERROR, "zygote: fork: %s", strerror(errno));
        goto fail;
    }
    if (z->pid == 0) {
        int a = fcntl(sv[1], F_DUPFD, 20), l = fcntl(z->log_fd, F_DUPFD, 20);
        int nul = open("/dev/null", O_RDONLY);
        struct rlimit nocore = {0, 0};
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        setrlimit(RLIMIT_CORE, &nocore);
        if (a < 0 || l < 0 || nul < 0 || dup2(nul, 0) < 0 || dup2(l, 1) < 0 || dup2(l, 2) < 0 ||
            dup2(a, 3) < 0)
            _exit(120);
        for (int fd = 4; fd < 1024; fd++)
            close(fd);
        execlp(python, python, script, (char *)NULL);
        _exit(121);
    }
    setpgid(z->pid, z->pid);
    close(sv[1]);
    z->sock = sv[0];
    free(script);
    *out = z;
    return KOPT_OK;
fail:
    if (sv[0] >= 0)
        close(sv[0]);
    if (sv[1] >= 0)
        close(sv[1]);
    if (z->log_fd >= 0)
        close(z->log_fd);
    free(z->lib);
    free(z);
    free(script);
    return KOPT_E_IO;
}

static void note_exit(kopt__zygote *z, pid_t pid, int status)
{
    int i = z->nexits < EXITS_MAX ? z->nexits++ : (z->exits_at++ % EXITS_MAX);
    z->exits[i].pid = pid;
    z->exits[i].status = status;
}

/* One message from the zygote, waiting up to timeout_ms (0: not at all): 1 read into *msg
 * (exit reports are noted and also returned), 0 none in time, -1 the zygote is gone. */
static int read_msg(kopt__zygote *z, int timeout_ms, json_t **msg)
{
    struct pollfd p = {z->sock, POLLIN, 0};
    ssize_t n;
    json_t *m;

    *msg = NULL;
    if (z->sock < 0)
        return -1;
    if (poll(&p, 1, timeout_ms) <= 0)
        return 0;
    do
        n = recv(z->sock, z->in, MSG_MAX - 1, 0);
    while (n < 0 && errno == EINTR);
    if (n <= 0) {
        z->ready = -1;
        return -1;
    }
    z->in[n] = '\0';
    if (!(m = json_loads(z->in, 0, NULL)))
        return 0;
    if (json_is_integer(json_object_get(m, "exit")))
        note_exit(z, (pid_t)json_integer_value(json_object_get(m, "exit")),
                  (int)json_integer_value(json_object_get(m, "status")));
    if (json_object_get(m, "ready")) {
        z->ready = json_is_true(json_object_get(m, "ready")) ? 1 : -1;
        snprintf(z->torch, sizeof(z->torch), "%s",
                 json_string_value(json_object_get(m, "torch")) ?: "");
    }
    *msg = m;
    return 1;
}

/* Read what has arrived, without waiting. */
static void drain(kopt__zygote *z)
{
    json_t *m;

    while (read_msg(z, 0, &m) == 1)
        json_decref(m);
}

int kopt__zygote_usable(kopt__zygote *z)
{
    if (z && z->ready == 0)
        drain(z);
    return z && z->ready >= 0 && z->env_hash == kopt__env_hash();
}

int kopt__zygote_ready(kopt__zygote *z)
{
    return kopt__zygote_usable(z) && z->ready == 1;
}

kopt_status kopt__zygote_fork(kopt__zygote *z, kopt_ctx *ctx, json_t *args, json_t *env_set,
                              const kopt__sandbox_limits *sandbox, const int fds[4], pid_t *pid)
{
    json_t *req, *m = NULL, *env;
    char *text;
    double until;
    int id, got;

    *pid = -1;
    if (!kopt__zygote_ready(z) || (sandbox && !z->lib))
        return KOPT_E_NOT_FOUND;       /* still importing (or unusable): started by exec */
    id = ++z->next_id;
    env = env_json();                  /* the request's, `env_set` over it */
    if (env && env_set)
        json_object_update(env, env_set);
    req = json_pack("{s:i, s:O, s:o}", "id", id, "args", args, "env", env);
    if (req && sandbox) {
        json_object_set_new(req, "sandbox", json_pack("{s:s, s:f, s:f, s:b}", "tmpdir",
                                                      sandbox->tmpdir, "cpu_s", sandbox->cpu_s,
                                                      "fsize_mb", sandbox->fsize_mb,
                                                      "no_network", sandbox->no_network));
        json_object_set_new(req, "lib", json_string(z->lib));
    }
    text = req ? json_dumps(req, JSON_COMPACT) : NULL;
    json_decref(req);
    if (!text || strlen(text) >= MSG_MAX) {   /* out of memory, or a huge environment */
        free(text);
        kopt_log(ctx, KOPT_LOG_INFO, "the PyTorch zygote was not asked (request too large)");
        return KOPT_E_NOT_FOUND;
    }
    got = (int)kopt__send_fds(z->sock, text, strlen(text), fds, 4, MSG_NOSIGNAL);
    free(text);
    if (got < 0) {
        z->ready = -1;
        kopt_log(ctx, KOPT_LOG_INFO, "the PyTorch zygote ended: %s", strerror(errno));
        return KOPT_E_NOT_FOUND;
    }
    until = kopt_now_ms() + FORK_REPLY_S * 1000;
    while ((got = read_msg(z, (int)(until - kopt_now_ms()) > 0 ? (int)(until - kopt_now_ms()) : 0,
                           &m)) == 1) {
        json_t *mid = json_object_get(m, "id");
        if (json_is_integer(mid) && json_integer_value(mid) == id) {
            if (json_is_integer(json_object_get(m, "pid")))
                *pid = (pid_t)json_integer_value(json_object_get(m, "pid"));
            else
                kopt_log(ctx, KOPT_LOG_INFO, "the PyTorch zygote did not fork: %s",
                         json_string_value(json_object_get(m, "error")) ?: "?");
            json_decref(m);
            break;
        }
        json_decref(m);
    }
    if (*pid > 0)
        return KOPT_OK;
    z->ready = -1;                     /* no answer: not asked again */
    if (got != 1)
        kopt_log(ctx, KOPT_LOG_INFO, "the PyTorch zygote did not answer");
    return KOPT_E_NOT_FOUND;
}

int kopt__zygote_wait(kopt__zygote *z, pid_t pid, double timeout_s, int *status)
{
    double until = kopt_now_ms() + timeout_s * 1000;

    for (;;) {
        json_t *m;
        int left;
        for (int i = 0; i < z->nexits; i++)
            if (z->exits[i].pid == pid) {
                *status = z->exits[i].status;
                z->exits[i] = z->exits[--z->nexits];
                return 1;
            }
        left = (int)(until - kopt_now_ms());
        if (left <= 0 || read_msg(z, left, &m) < 0)
            return 0;
        json_decref(m);
    }
}

void kopt__zygote_forget(kopt__zygote *z, pid_t pid)
{
    if (!z)
        return;
    drain(z);
    for (int i = 0; i < z->nexits; i++)
        if (z->exits[i].pid == pid) {
            z->exits[i] = z->exits[--z->nexits];
            return;
        }
}

const char *kopt__zygote_torch(const kopt__zygote *z)
{
    return z ? z->torch : "";
}

void kopt__zygote_free(kopt__zygote *z)
{
    if (!z)
        return;
    if (z->sock >= 0)
        close(z->sock);                /* it reads EOF and ends */
    if (z->pid > 0) {
        kill(-z->pid, SIGKILL);
        kill(z->pid, SIGKILL);
        waitpid(z->pid, NULL, 0);
    }
    if (z->log_fd >= 0)
        close(z->log_fd);
    free(z->lib);
    free(z);
}
