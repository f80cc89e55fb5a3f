/* Starting a worker process and collecting its events, outputs and log (worker_int.h). */
#include "worker_int.h"
#include "sandbox_int.h"
#include "kopt/device.h"
#include "kopt/proc.h"
#include "kopt/worker.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define LOG_TAIL 8192
#define FIRST_CONTACT_S 60.0   /* context creation can take a while on a cold GPU */

void kopt__worker_run_free(kopt__worker_run *r)
{
    if (!r)
        return;
    json_decref(r->device);
    json_decref(r->result);
    json_decref(r->error);
    free(r->log);
    if (r->shm && !r->shm_borrowed)
        munmap(r->shm, r->shm_size);
    memset(r, 0, sizeof(*r));
}

/* argv for the worker: `<worker> __worker` (kopt/worker.h finds it; kopt-worker takes the
 * same argv as `kopt __worker`), or the same behind a wrapper (compute-sanitizer, ncu) */
static char **worker_argv(json_t *wrap, char *worker)
{
    size_t n = json_array_size(wrap), i;
    char **argv = calloc(n + 3, sizeof(char *));

    if (!argv)
        return NULL;
    for (i = 0; i < n; i++)
        argv[i] = (char *)json_string_value(json_array_get(wrap, i));
    argv[n] = worker;
    argv[n + 1] = "__worker";
    return argv;
}

static void child(int job_r, int ev_w, int shm_fd, int log_fd, char **argv,
                  const kopt__sandbox_limits *sandbox)
{
    /* move everything above the target numbers first so dup2 cannot clobber a source */
    int a = fcntl(job_r, F_DUPFD, 20), b = fcntl(ev_w, F_DUPFD, 20);
    int c = fcntl(shm_fd, F_DUPFD, 20), d = fcntl(log_fd, F_DUPFD, 20);
    struct rlimit nocore = {0, 0};

    setpgid(0, 0);
    setrlimit(RLIMIT_CORE, &nocore);
    if (a < 0 || b < 0 || c < 0 || d < 0 || dup2(a, 0) < 0 || dup2(d, 1) < 0 || dup2(d, 2) < 0 ||
        dup2(b, KOPT_WORKER_EVENT_FD) < 0 || dup2(c, KOPT_WORKER_SHM_FD) < 0)
        _exit(120);
    for (int fd = 5; fd < 1024; fd++)
        close(fd);
    if (sandbox)
        kopt__sandbox_enter(sandbox);
    execvp(argv[0], argv);   /* a wrapper from PATH, or the worker's absolute path */
    _exit(121);
}

static void handle_line(kopt__worker_run *out, const char *line)
{
    json_t *ev = json_loads(line, 0, NULL);
    const char *kind = json_string_value(json_object_get(ev, "event"));

    if (!kind) {
        json_decref(ev);
        return;
    }
    if (strcmp(kind, "hello") == 0) {
        json_decref(out->device);
        out->device = json_incref(json_object_get(ev, "device"));
    } else if (strcmp(kind, "result") == 0) {
        json_decref(out->result);
        out->result = json_incref(ev);
    } else if (strcmp(kind, "error") == 0) {
        json_decref(out->error);
        out->error = json_incref(ev);
    } else if (strcmp(kind, "progress") == 0) {
        snprintf(out->last_progress, sizeof(out->last_progress), "phase %d %s",
                 (int)json_integer_value(json_object_get(ev, "phase")),
                 json_string_value(json_object_get(ev, "what")) ?: "");
    }
    json_decref(ev);
}

struct kopt__worker_proc {
    pid_t pid;
    int job_w, ev_r, log_fd;
    kopt_buf acc;
    int eof;
    int reaped;                /* waited for: exit status and log are in run */
    size_t shm_size;
    char tmpdir[PATH_MAX];     /* the sandbox's private folder, removed at the end */
    double t0;
    kopt__worker_run run;
};

kopt_status kopt__worker_start(kopt_ctx *ctx, json_t *job, size_t shm_size,
                               kopt__worker_proc **out)
{
    int job_p[2] = {-1, -1}, ev_p[2] = {-1, -1}, shm_fd = -1;
    kopt__worker_proc *w = calloc(1, sizeof(*w));
    char *text = NULL, **argv = NULL, *worker = NULL;
    size_t text_len, written = 0;
    kopt_status rc = KOPT_OK;
    kopt__sandbox_limits lim;
    json_t *sb = json_object_get(job, "sandbox");

    *out = NULL;
    if (!w)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "worker");
    w->pid = -1;
    w->job_w = w->ev_r = w->log_fd = -1;
    w->t0 = kopt_now_ms();
    if (pipe2(job_p, O_CLOEXEC) != 0 || pipe2(ev_p, O_CLOEXEC) != 0) {
        rc = kopt_seterr(ctx, KOPT_E_IO, "pipe: %s", strerror(errno));
        goto cleanup;
    }
    shm_fd = memfd_create("kopt-outputs", MFD_CLOEXEC);
    w->log_fd = memfd_create("kopt-worker-log", MFD_CLOEXEC);
    if (shm_fd < 0 || w->log_fd < 0 || ftruncate(shm_fd, (off_t)(shm_size ? shm_size : 1)) != 0) {
        rc = kopt_seterr(ctx, KOPT_E_IO, "shared memory for %zu bytes: %s", shm_size,
                         strerror(errno));
        goto cleanup;
    }
    if (shm_size) {
        void *m = mmap(NULL, shm_size, PROT_READ, MAP_SHARED, shm_fd, 0);
        if (m == MAP_FAILED) {
            rc = kopt_seterr(ctx, KOPT_E_IO, "mmap %zu bytes: %s", shm_size, strerror(errno));
            goto cleanup;
        }
        w->run.shm = m;
        w->run.shm_size = shm_size;
    }
    w->shm_size = shm_size;
    memset(&lim, 0, sizeof(lim));
    if (sb) {
        const char *base = getenv("TMPDIR");
        snprintf(w->tmpdir, sizeof(w->tmpdir), "%s/kopt-sandbox-XXXXXX",
                 base && base[0] ? base : "/tmp");
        if (!mkdtemp(w->tmpdir)) {
            rc = kopt_seterr(ctx, KOPT_E_IO, "sandbox folder %s: %s", w->tmpdir, strerror(errno));
            w->tmpdir[0] = '\0';
            goto cleanup;
        }
        snprintf(lim.tmpdir, sizeof(lim.tmpdir), "%s", w->tmpdir);
        lim.cpu_s = json_number_value(json_object_get(sb, "cpu_s"));
        lim.fsize_mb = json_number_value(json_object_get(sb, "fsize_mb"));
        lim.no_network = json_is_true(json_object_get(sb, "no_network"));
        json_object_set_new(sb, "tmpdir", json_string(w->tmpdir));
    }
    if ((rc = kopt_worker_find(ctx, &worker, NULL)) != KOPT_OK)
        goto cleanup;
    if (!(argv = worker_argv(json_object_get(job, "wrap"), worker))) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "worker arguments");
        goto cleanup;
    }
    json_object_set_new(job, "shm_size", json_integer((json_int_t)shm_size));
    text = json_dumps(job, JSON_COMPACT);   /* one line: jansson escapes newlines */
    if (!text) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "job");
        goto cleanup;
    }
    text_len = strlen(text);
    w->pid = fork();
    if (w->pid < 0) {
        rc = kopt_seterr(ctx, KOPT_E_ERROR, "fork: %s", strerror(errno));
        goto cleanup;
    }
    if (w->pid == 0)
        child(job_p[0], ev_p[1], shm_fd, w->log_fd, argv, sb ? &lim : NULL);
    setpgid(w->pid, w->pid);
    signal(SIGPIPE, SIG_IGN);
    while (written < text_len + 1) {
        ssize_t n = written < text_len ? write(job_p[1], text + written, text_len - written)
                                       : write(job_p[1], "\n", 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        written += (size_t)n;
    }
    w->job_w = job_p[1];
    job_p[1] = -1;
    w->ev_r = ev_p[0];
    ev_p[0] = -1;
    *out = w;
    w = NULL;
cleanup:
    free(text);
    free(argv);
    free(worker);
    for (int i = 0; i < 2; i++) {
        if (job_p[i] >= 0)
            close(job_p[i]);
        if (ev_p[i] >= 0)
            close(ev_p[i]);
    }
    if (shm_fd >= 0)
        close(shm_fd);
    if (w) {
        if (w->run.shm)
            munmap(w->run.shm, w->run.shm_size);
        if (w->log_fd >= 0)
            close(w->log_fd);
        kopt__rmtree(w->tmpdir);
        free(w);
    }
    return rc;
}

/* Read events until `until` returns true, EOF, or no event for timeout_s (then kill). */
static void pump(kopt__worker_proc *w, double timeout_s, int (*until)(const kopt__worker_run *))
{
    double deadline = kopt_now_ms() + timeout_s * 1e3;

    while (!w->eof && !(until && until(&w->run))) {
        struct pollfd p = {w->ev_r, POLLIN, 0};
        int wait_ms = (int)(deadline - kopt_now_ms()), r;
        char buf[8192];
        ssize_t n;
        if (wait_ms <= 0) {
            w->run.timed_out = 1;
            kill(-w->pid, SIGKILL);
            kill(w->pid, SIGKILL);
            w->eof = 1;
            break;
        }
        r = poll(&p, 1, wait_ms);
        if (r < 0 && errno == EINTR)
            continue;
        if (r == 0)
            continue;
        n = read(w->ev_r, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            w->eof = 1;
            break;
        }
        kopt_buf_append(&w->acc, buf, (size_t)n);
        /* handle complete lines; any line is progress */
        for (char *nl; w->acc.ptr && (nl = memchr(w->acc.ptr, '\n', w->acc.len));) {
            size_t len = (size_t)(nl - w->acc.ptr) + 1;
            *nl = '\0';
            handle_line(&w->run, w->acc.ptr);
            memmove(w->acc.ptr, w->acc.ptr + len, w->acc.len - len + 1);
            w->acc.len -= len;
            deadline = kopt_now_ms() + timeout_s * 1e3;
        }
    }
}

static int said_hello(const kopt__worker_run *r)
{
    return r->device != NULL;
}

kopt_status kopt__worker_ready(kopt_ctx *ctx, kopt__worker_proc *w)
{
    pump(w, FIRST_CONTACT_S, said_hello);
    (void)ctx;
    return KOPT_OK;
}

/* Wait for the worker's end (its process group goes too: a host-mode candidate may have
 * left children); its exit status and the tail of its log into w->run. */
static void reap(kopt__worker_proc *w)
{
    int status = 0;
    off_t size, from;

    if (w->reaped)
        return;
    while (waitpid(w->pid, &status, 0) < 0 && errno == EINTR)
        ;
    kill(-w->pid, SIGKILL);
    w->reaped = 1;
    w->run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    w->run.signal = WIFSIGNALED(status) && !w->run.timed_out ? WTERMSIG(status) : 0;
    size = lseek(w->log_fd, 0, SEEK_END);
    from = size > LOG_TAIL ? size - LOG_TAIL : 0;
    free(w->run.log);
    w->run.log = calloc(LOG_TAIL + 1, 1);
    if (w->run.log && size > 0 && pread(w->log_fd, w->run.log, (size_t)(size - from), from) < 0)
        w->run.log[0] = '\0';
}

static void send_line(kopt__worker_proc *w, const char *text, size_t len)
{
    size_t done = 0;

    while (w->job_w >= 0 && done < len) {
        ssize_t n = write(w->job_w, text + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;                     /* the worker is gone: the pump sees its end */
        done += (size_t)n;
    }
}

kopt_status kopt__worker_finish(kopt_ctx *ctx, kopt__worker_proc *w, double timeout_s,
                                kopt__worker_run *out)
{
    pump(w, FIRST_CONTACT_S, said_hello);
    if (!w->eof)
        send_line(w, "go\n", 3);
    if (w->job_w >= 0)
        close(w->job_w);
    w->job_w = -1;
    pump(w, timeout_s, NULL);
    reap(w);
    w->run.wall_ms = kopt_now_ms() - w->t0;
    *out = w->run;
    memset(&w->run, 0, sizeof(w->run));
    kopt__worker_proc_free(w);
    (void)ctx;
    return KOPT_OK;
}

static int has_result(const kopt__worker_run *r)
{
    return r->result != NULL;
}

kopt_status kopt__worker_serve(kopt_ctx *ctx, kopt__worker_proc *w, json_t *job,
                               double timeout_s, kopt__worker_run *out)
{
    double t0 = kopt_now_ms();

    memset(out, 0, sizeof(*out));
    json_decref(w->run.result);
    json_decref(w->run.error);
    w->run.result = w->run.error = NULL;
    w->run.last_progress[0] = '\0';
    if (!job) {
        pump(w, FIRST_CONTACT_S, said_hello);
        if (!w->eof)
            send_line(w, "go\n", 3);
    } else if (!w->eof) {
        char *text;
        json_object_set_new(job, "shm_size", json_integer((json_int_t)w->shm_size));
        if (!(text = json_dumps(job, JSON_COMPACT)))
            return kopt_seterr(ctx, KOPT_E_NOMEM, "job");
        send_line(w, text, strlen(text));
        send_line(w, "\n", 1);
        free(text);
    }
    pump(w, timeout_s, has_result);
    if (w->eof)
        reap(w);
    out->device = json_incref(w->run.device);
    out->result = w->run.result;
    out->error = w->run.error;
    w->run.result = w->run.error = NULL;
    out->timed_out = w->run.timed_out;
    out->signal = w->run.signal;
    out->exit_code = w->run.exit_code;
    out->log = w->eof && w->run.log ? strdup(w->run.log) : NULL;
    out->shm = w->run.shm;
    out->shm_size = w->run.shm_size;
    out->shm_borrowed = 1;
    out->wall_ms = kopt_now_ms() - t0;
    snprintf(out->last_progress, sizeof(out->last_progress), "%s", w->run.last_progress);
    return KOPT_OK;
}

int kopt__worker_alive(const kopt__worker_proc *w)
{
    return w && !w->eof;
}

void kopt__worker_proc_free(kopt__worker_proc *w)
{
    if (!w)
        return;
    if (w->pid > 0 && !w->reaped) {
        kill(-w->pid, SIGKILL);
        kill(w->pid, SIGKILL);
        waitpid(w->pid, NULL, 0);
    }
    if (w->job_w >= 0)
        close(w->job_w);
    if (w->ev_r >= 0)
        close(w->ev_r);
    if (w->log_fd >= 0)
        close(w->log_fd);
    kopt__rmtree(w->tmpdir);
    kopt_buf_free(&w->acc);
    kopt__worker_run_free(&w->run);
    free(w);
}

kopt_status kopt__worker_spawn(kopt_ctx *ctx, json_t *job, size_t shm_size, double timeout_s,
                               kopt__worker_run *out)
{
    kopt__worker_proc *w = NULL;
    kopt_status rc;

    memset(out, 0, sizeof(*out));
    if ((rc = kopt__worker_start(ctx, job, shm_size, &w)) != KOPT_OK)
        return rc;
    return kopt__worker_finish(ctx, w, timeout_s, out);
}

void kopt__device_from_json(json_t *j, kopt_device_info *d)
{
    memset(d, 0, sizeof(*d));
    snprintf(d->name, sizeof(d->name), "%s", json_string_value(json_object_get(j, "name")) ?: "");
    snprintf(d->uuid, sizeof(d->uuid), "%s", json_string_value(json_object_get(j, "uuid")) ?: "");
#define I(f) d->f = (int)json_integer_value(json_object_get(j, #f))
    I(cc_major); I(cc_minor); I(sm_count); I(l2_bytes); I(max_threads_per_block);
    I(max_smem_per_block_optin); I(smem_per_sm); I(regs_per_sm); I(max_threads_per_sm);
    I(clock_khz); I(mem_clock_khz); I(mem_bus_width); I(driver_version);
#undef I
    d->total_mem = json_integer_value(json_object_get(j, "total_mem"));
}
