/* Starting a worker process and collecting its events, outputs and log (worker_int.h). */
#include "worker_int.h"
#include "kopt/device.h"
#include "kopt/proc.h"

#include <errno.h>
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
    if (r->shm)
        munmap(r->shm, r->shm_size);
    memset(r, 0, sizeof(*r));
}

static void child(int job_r, int ev_w, int shm_fd, int log_fd)
{
    /* move everything above the target numbers first so dup2 cannot clobber a source */
    int a = fcntl(job_r, F_DUPFD, 20), b = fcntl(ev_w, F_DUPFD, 20);
    int c = fcntl(shm_fd, F_DUPFD, 20), d = fcntl(log_fd, F_DUPFD, 20);
    struct rlimit nocore = {0, 0};
    char *argv[] = {"kopt", "__worker", NULL};

    setpgid(0, 0);
    setrlimit(RLIMIT_CORE, &nocore);
    if (a < 0 || b < 0 || c < 0 || d < 0 || dup2(a, 0) < 0 || dup2(d, 1) < 0 || dup2(d, 2) < 0 ||
        dup2(b, KOPT_WORKER_EVENT_FD) < 0 || dup2(c, KOPT_WORKER_SHM_FD) < 0)
        _exit(120);
    for (int fd = 5; fd < 1024; fd++)
        close(fd);
    execv(kopt_self_exe(), argv);
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

kopt_status kopt__worker_spawn(kopt_ctx *ctx, json_t *job, size_t shm_size, double timeout_s,
                               kopt__worker_run *out)
{
    int job_p[2] = {-1, -1}, ev_p[2] = {-1, -1}, shm_fd = -1, log_fd = -1, status = 0;
    char *text = NULL;
    size_t text_len, written = 0;
    kopt_buf acc = KOPT_BUF_INIT;
    double t0 = kopt_now_ms(), deadline;
    kopt_status rc = KOPT_OK;
    pid_t pid = -1;

    memset(out, 0, sizeof(*out));
    if (pipe2(job_p, O_CLOEXEC) != 0 || pipe2(ev_p, O_CLOEXEC) != 0) {
        rc = kopt_seterr(ctx, KOPT_E_IO, "pipe: %s", strerror(errno));
        goto cleanup;
    }
    shm_fd = memfd_create("kopt-outputs", MFD_CLOEXEC);
    log_fd = memfd_create("kopt-worker-log", MFD_CLOEXEC);
    if (shm_fd < 0 || log_fd < 0 || ftruncate(shm_fd, (off_t)(shm_size ? shm_size : 1)) != 0) {
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
        out->shm = m;
        out->shm_size = shm_size;
    }
    json_object_set_new(job, "shm_size", json_integer((json_int_t)shm_size));
    text = json_dumps(job, JSON_COMPACT);
    if (!text) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "job");
        goto cleanup;
    }
    text_len = strlen(text);
    pid = fork();
    if (pid < 0) {
        rc = kopt_seterr(ctx, KOPT_E_ERROR, "fork: %s", strerror(errno));
        goto cleanup;
    }
    if (pid == 0)
        child(job_p[0], ev_p[1], shm_fd, log_fd);
    setpgid(pid, pid);
    close(job_p[0]);
    close(ev_p[1]);
    job_p[0] = ev_p[1] = -1;
    signal(SIGPIPE, SIG_IGN);
    while (written < text_len) {
        ssize_t n = write(job_p[1], text + written, text_len - written);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        written += (size_t)n;
    }
    close(job_p[1]);
    job_p[1] = -1;

    deadline = kopt_now_ms() + FIRST_CONTACT_S * 1e3;
    for (;;) {
        struct pollfd p = {ev_p[0], POLLIN, 0};
        int wait_ms = (int)(deadline - kopt_now_ms()), r;
        char buf[8192];
        ssize_t n;
        if (wait_ms <= 0) {
            out->timed_out = 1;
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            break;
        }
        r = poll(&p, 1, wait_ms);
        if (r < 0 && errno == EINTR)
            continue;
        if (r == 0)
            continue;
        n = read(ev_p[0], buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        kopt_buf_append(&acc, buf, (size_t)n);
        /* handle complete lines; any line is progress */
        for (char *nl; acc.ptr && (nl = memchr(acc.ptr, '\n', acc.len));) {
            size_t len = (size_t)(nl - acc.ptr) + 1;
            *nl = '\0';
            handle_line(out, acc.ptr);
            memmove(acc.ptr, acc.ptr + len, acc.len - len + 1);
            acc.len -= len;
            deadline = kopt_now_ms() + timeout_s * 1e3;
        }
    }
    /* the process group goes too: a host-mode candidate may have left children */
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    kill(-pid, SIGKILL);
    out->exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    out->signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    if (out->timed_out)
        out->signal = 0;
    {
        off_t size = lseek(log_fd, 0, SEEK_END), from = size > LOG_TAIL ? size - LOG_TAIL : 0;
        out->log = calloc(LOG_TAIL + 1, 1);
        if (out->log && size > 0 && pread(log_fd, out->log, (size_t)(size - from), from) < 0)
            out->log[0] = '\0';
    }
cleanup:
    out->wall_ms = kopt_now_ms() - t0;
    free(text);
    kopt_buf_free(&acc);
    for (int i = 0; i < 2; i++) {
        if (job_p[i] >= 0)
            close(job_p[i]);
        if (ev_p[i] >= 0)
            close(ev_p[i]);
    }
    if (shm_fd >= 0)
        close(shm_fd);
    if (log_fd >= 0)
        close(log_fd);
    return rc;
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
