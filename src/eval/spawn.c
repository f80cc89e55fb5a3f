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
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define LOG_TAIL 8192
static void reap_pending(void);
struct kopt__worker_proc;
static void send_line(struct kopt__worker_proc *w, const char *text, size_t len);
#define FAULT_THREADS 4        /* prefaulting the output buffer: 4 threads, 2x one (H100 VM) */
#define FIRST_CONTACT_S 60.0   /* context creation can take a while on a cold GPU */

typedef struct unmap_job {
    void *p;
    size_t n;
} unmap_job;

static void *unmap_later(void *arg)
{
    unmap_job *j = arg;
    munmap(j->p, j->n);
    free(j);
    return NULL;
}

/* Unmap a large buffer on a detached thread: tearing down the page tables of a GB costs
 * ~70 ms that the caller need not wait for. */
static void unmap_buffer(void *p, size_t n)
{
    unmap_job *j = n >= (64u << 20) ? malloc(sizeof(*j)) : NULL;
    pthread_attr_t a;
    pthread_t t;

    if (j && pthread_attr_init(&a) == 0) {
        j->p = p;
        j->n = n;
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&t, &a, unmap_later, j) == 0) {
            pthread_attr_destroy(&a);
            return;
        }
        pthread_attr_destroy(&a);
    }
    free(j);
    munmap(p, n);
}

void kopt__worker_run_free(kopt__worker_run *r)
{
    if (!r)
        return;
    json_decref(r->device);
    json_decref(r->result);
    json_decref(r->error);
    json_decref(r->clock);
    json_decref(r->events);
    free(r->log);
    if (r->shm && !r->shm_borrowed)
        unmap_buffer(r->shm, r->shm_size);
    memset(r, 0, sizeof(*r));
}

/* argv for the worker: `<worker> __worker` (kopt/worker.h finds it; kopt-worker takes the
 * same argv as `kopt __worker`), or the same behind a wrapper (compute-sanitizer, ncu) */
static char **worker_argv(json_t *wrap, char *worker, char *early)
{
    size_t n = json_array_size(wrap), i;
    char **argv = calloc(n + 4, sizeof(char *));

    if (!argv)
        return NULL;
    for (i = 0; i < n; i++)
        argv[i] = (char *)json_string_value(json_array_get(wrap, i));
    argv[n] = worker;
    argv[n + 1] = "__worker";
    argv[n + 2] = early;       /* "--early-device=N" or NULL */
    return argv;
}

static void child(int job_r, int ev_w, int shm_fd, int log_fd, char **argv,
                  const kopt__sandbox_limits *sandbox, const kopt__worker_pin *pin)
{
    /* move everything above the target numbers first so dup2 cannot clobber a source */
    int a = fcntl(job_r, F_DUPFD, 20), b = fcntl(ev_w, F_DUPFD, 20);
    int c = fcntl(shm_fd, F_DUPFD, 20), d = fcntl(log_fd, F_DUPFD, 20);
    struct rlimit nocore = {0, 0};

    setpgid(0, 0);
    /* a kopt that is killed takes its worker (or the wrapper around it) along. Linux sends
     * this when the thread that forked ends: a program that starts workers from a thread
     * must keep that thread while they run (kopt forks from the calling thread) */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    setrlimit(RLIMIT_CORE, &nocore);
    if (a < 0 || b < 0 || c < 0 || d < 0 || dup2(a, 0) < 0 || dup2(d, 1) < 0 || dup2(d, 2) < 0 ||
        dup2(b, KOPT_WORKER_EVENT_FD) < 0 || dup2(c, KOPT_WORKER_SHM_FD) < 0)
        _exit(120);
    for (int fd = 5; fd < 1024; fd++)
        close(fd);
    if (pin->gpu >= 0 && (setenv("CUDA_VISIBLE_DEVICES", pin->visible, 1) != 0 ||
                          setenv("KOPT_WORKER_PINNED", pin->gpu_text, 1) != 0))
        _exit(120);
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
    } else if (strcmp(kind, "idle") == 0) {
        out->idle = json_is_true(json_object_get(ev, "context")) ? 1 : -1;
        out->idle_shm = (size_t)json_integer_value(json_object_get(ev, "shm_size"));
    } else if (strcmp(kind, "clock") == 0) {
        if (!out->clock)
            out->clock = json_array();
        json_array_append(out->clock, ev);
    } else if (strcmp(kind, "outputs") == 0 || strcmp(kind, "compared") == 0) {
        if (!out->events)              /* a streaming subject's or reference's, in order */
            out->events = json_array();
        json_array_append(out->events, ev);
    } else if (strcmp(kind, "trials") == 0) {
        int p = (int)json_integer_value(json_object_get(ev, "phase"));
        if (p >= out->trials_done)
            out->trials_done = p + 1;
    } else if (strcmp(kind, "progress") == 0) {
        snprintf(out->last_progress, sizeof(out->last_progress), "phase %d %s",
                 (int)json_integer_value(json_object_get(ev, "phase")),
                 json_string_value(json_object_get(ev, "what")) ?: "");
    }
    json_decref(ev);
}

/* The output buffer's pages, faulted in by threads of the parent while the worker starts:
 * in a VM first touch costs ~0.6 ms a MB, and the worker's pinning would pay it alone. */
typedef struct fault_part {
    char *p;
    size_t n;
} fault_part;

static void *fault_in(void *arg)
{
    fault_part *f = arg;

    if (madvise(f->p, f->n, MADV_POPULATE_WRITE) != 0)   /* before Linux 5.14: by hand */
        for (size_t i = 0; i < f->n; i += 4096)
            ((volatile char *)f->p)[i] = 0;
    return NULL;
}

#define REAP_ZYGOTE_S 30.0   /* a forked worker's end, as its zygote reports it */

struct kopt__worker_proc {
    pid_t pid;
    int job_w, ev_r, log_fd, shm_fd;
    int nfault;
    pthread_t fault_th[FAULT_THREADS];
    fault_part fault[FAULT_THREADS];
    int early;                 /* started before its job: its context is made meanwhile */
    kopt_buf acc;
    int eof;
    int went;                  /* "go" sent */
    int reaped;                /* waited for: exit status and log are in run */
    size_t shm_size;
    char tmpdir[PATH_MAX];     /* the sandbox's private folder, removed at the end */
    double t0;
    kopt__zygote *zygote;      /* forked by this zygote (borrowed), not by us */
    kopt__trials_fn on_trials; /* kopt__worker_on_trials: for the next serve or collect */
    void *on_trials_arg;
    int trials_seen;           /* phases handed to on_trials */
    kopt__worker_run run;
};

/* Pipes, the output buffer's file (empty until the job), the log, and the worker process
 * for GPU `gpu` (-1: the job names none), pinned to it (pin.c); `early` >= 0: the worker
 * makes its context on that device before its job comes. */
static kopt_status launch(kopt_ctx *ctx, json_t *wrap, json_t *program,
                          const kopt__sandbox_limits *sandbox, int early, int gpu,
                          kopt__zygote *zygote, kopt__worker_proc **out)
{
    int job_p[2] = {-1, -1}, ev_p[2] = {-1, -1};
    kopt__worker_proc *w = calloc(1, sizeof(*w));
    char **argv = NULL, *worker = NULL, early_arg[48];
    kopt__worker_pin pin;
    kopt_status rc = KOPT_OK;

    *out = NULL;
    if (!w)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "worker");
    kopt__worker_pin_for(gpu, json_array_size(wrap) > 0, &pin);
    reap_pending();
    w->pid = -1;
    w->job_w = w->ev_r = w->log_fd = w->shm_fd = -1;
    w->t0 = kopt_now_ms();
    w->early = early >= 0;
    snprintf(early_arg, sizeof(early_arg), "--early-device=%d", early);
    if (pipe2(job_p, O_CLOEXEC) != 0 || pipe2(ev_p, O_CLOEXEC) != 0) {
        rc = kopt_seterr(ctx, KOPT_E_IO, "pipe: %s", strerror(errno));
        goto cleanup;
    }
    w->shm_fd = memfd_create("kopt-outputs", MFD_CLOEXEC);
    w->log_fd = memfd_create("kopt-worker-log", MFD_CLOEXEC);
    if (w->shm_fd < 0 || w->log_fd < 0) {
        rc = kopt_seterr(ctx, KOPT_E_IO, "memfd: %s", strerror(errno));
        goto cleanup;
    }
    if (json_array_size(program)) {
        /* another worker program speaking the same protocol (the PyTorch worker) */
        size_t n = json_array_size(program);
        if (!(argv = calloc(n + 1, sizeof(char *)))) {
            rc = kopt_seterr(ctx, KOPT_E_NOMEM, "worker arguments");
            goto cleanup;
        }
        for (size_t i = 0; i < n; i++)
            argv[i] = (char *)json_string_value(json_array_get(program, i));
    } else if ((rc = kopt_worker_find(ctx, &worker, NULL)) != KOPT_OK) {
        goto cleanup;
    } else if (!(argv = worker_argv(wrap, worker, early >= 0 ? early_arg : NULL))) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "worker arguments");
        goto cleanup;
    }
    if (zygote && json_array_size(program) >= 3 && !json_array_size(wrap)) {
        /* the PyTorch worker, forked ready-imported: its arguments after the script's */
        int fds[4] = {job_p[0], ev_p[1], w->shm_fd, w->log_fd};
        json_t *args = json_array(), *env = NULL;
        for (size_t i = 2; args && i < json_array_size(program); i++)
            json_array_append(args, json_array_get(program, i));
        if (pin.gpu >= 0)
            env = json_pack("{s:s, s:s}", "CUDA_VISIBLE_DEVICES", pin.visible,
                            "KOPT_WORKER_PINNED", pin.gpu_text);
        if (args && kopt__zygote_fork(zygote, ctx, args, env, sandbox, fds, &w->pid) == KOPT_OK)
            w->zygote = zygote;
        json_decref(args);
        json_decref(env);
    }
    if (!w->zygote) {
        w->pid = fork();
        if (w->pid < 0) {
            rc = kopt_seterr(ctx, KOPT_E_ERROR, "fork: %s", strerror(errno));
            goto cleanup;
        }
        if (w->pid == 0)
            child(job_p[0], ev_p[1], w->shm_fd, w->log_fd, argv, sandbox, &pin);
        setpgid(w->pid, w->pid);
    }
    signal(SIGPIPE, SIG_IGN);
    w->job_w = job_p[1];
    job_p[1] = -1;
    w->ev_r = ev_p[0];
    ev_p[0] = -1;
    *out = w;
    w = NULL;
cleanup:
    free(argv);
    free(worker);
    for (int i = 0; i < 2; i++) {
        if (job_p[i] >= 0)
            close(job_p[i]);
        if (ev_p[i] >= 0)
            close(ev_p[i]);
    }
    if (w) {
        if (w->shm_fd >= 0)
            close(w->shm_fd);
        if (w->log_fd >= 0)
            close(w->log_fd);
        free(w);
    }
    return rc;
}

static void join_faults(kopt__worker_proc *w)
{
    for (int i = 0; i < w->nfault; i++)
        pthread_join(w->fault_th[i], NULL);
    w->nfault = 0;
}

kopt_status kopt__worker_prestart(kopt_ctx *ctx, int device, kopt__worker_proc **out)
{
    return launch(ctx, NULL, NULL, NULL, device, device, NULL, out);
}

kopt_status kopt__worker_buffer(kopt_ctx *ctx, kopt__worker_proc *w, size_t shm_size)
{
    if (w->run.shm && w->run.shm_size == shm_size)
        return KOPT_OK;                /* made ahead, at this size */
    join_faults(w);
    if (w->run.shm)
        munmap(w->run.shm, w->run.shm_size);
    w->run.shm = NULL;
    w->run.shm_size = 0;
    if (ftruncate(w->shm_fd, 0) != 0 ||   /* no stale pages of another size */
        ftruncate(w->shm_fd, (off_t)(shm_size ? shm_size : 1)) != 0)
        return kopt_seterr(ctx, KOPT_E_IO, "shared memory for %zu bytes: %s", shm_size,
                           strerror(errno));
    if (shm_size) {
        /* read-write, so the parent's own page tables are filled too: the comparison reads
         * every byte of it */
        char *m = mmap(NULL, shm_size, PROT_READ | PROT_WRITE, MAP_SHARED, w->shm_fd, 0);
        size_t per = (shm_size / FAULT_THREADS + 4095) & ~(size_t)4095;
        if (m == MAP_FAILED)
            return kopt_seterr(ctx, KOPT_E_IO, "mmap %zu bytes: %s", shm_size, strerror(errno));
        /* huge pages where the kernel gives them to shared memory (shmem_enabled "advise"
         * or "always"): a GB-scale buffer is then faulted in 2 MB at a time */
        (void)madvise(m, shm_size, MADV_HUGEPAGE);
        w->run.shm = (unsigned char *)m;
        w->run.shm_size = shm_size;
        for (size_t off = 0; off < shm_size && w->nfault < FAULT_THREADS; off += per) {
            fault_part *f = &w->fault[w->nfault];
            f->p = m + off;
            f->n = off + per < shm_size ? per : shm_size - off;
            if (pthread_create(&w->fault_th[w->nfault], NULL, fault_in, f) == 0)
                w->nfault++;
            else
                fault_in(f);
        }
    }
    w->shm_size = shm_size;
    if (w->early) {                    /* it maps and pins it now, while it waits */
        char line[96];
        int n = snprintf(line, sizeof(line), "{\"op\": \"buffer\", \"shm_size\": %zu}\n", shm_size);
        send_line(w, line, (size_t)n);
    }
    return KOPT_OK;
}

kopt_status kopt__worker_send(kopt_ctx *ctx, kopt__worker_proc *w, json_t *job, size_t shm_size)
{
    char *text;
    size_t text_len, written = 0;
    kopt_status rc;

    if ((rc = kopt__worker_buffer(ctx, w, shm_size)) != KOPT_OK)
        return rc;
    json_object_set_new(job, "shm_size", json_integer((json_int_t)shm_size));
    text = json_dumps(job, JSON_COMPACT);   /* one line: jansson escapes newlines */
    if (!text)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "job");
    text_len = strlen(text);
    while (written < text_len + 1) {
        ssize_t n = written < text_len ? write(w->job_w, text + written, text_len - written)
                                       : write(w->job_w, "\n", 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;                     /* the worker is gone: the pump sees its end */
        written += (size_t)n;
    }
    free(text);
    return KOPT_OK;
}

/* Launch `job`'s program (with `extra` appended to it, if any) in its sandbox, if it has one:
 * a folder of its own made here and named in the job's "sandbox". No job sent yet. */
static kopt_status start_process(kopt_ctx *ctx, json_t *job, const char *extra,
                                 kopt__zygote *zygote, kopt__worker_proc **out)
{
    kopt__sandbox_limits lim;
    json_t *sb = json_object_get(job, "sandbox"), *program = json_object_get(job, "program");
    char tmpdir[PATH_MAX] = "";
    kopt_status rc;

    *out = NULL;
    memset(&lim, 0, sizeof(lim));
    if (sb) {
        const char *base = getenv("TMPDIR");
        snprintf(tmpdir, sizeof(tmpdir), "%s/kopt-sandbox-XXXXXX", base && base[0] ? base : "/tmp");
        if (!mkdtemp(tmpdir))
            return kopt_seterr(ctx, KOPT_E_IO, "sandbox folder %s: %s", tmpdir, strerror(errno));
        snprintf(lim.tmpdir, sizeof(lim.tmpdir), "%s", tmpdir);
        lim.cpu_s = json_number_value(json_object_get(sb, "cpu_s"));
        lim.fsize_mb = json_number_value(json_object_get(sb, "fsize_mb"));
        lim.no_network = json_is_true(json_object_get(sb, "no_network"));
        json_object_set_new(sb, "tmpdir", json_string(tmpdir));
    }
    if (extra && json_array_size(program)) {
        program = json_copy(program);
        json_array_append_new(program, json_string(extra));
    } else {
        json_incref(program);
    }
    rc = launch(ctx, json_object_get(job, "wrap"), program, sb ? &lim : NULL, -1,
                kopt__job_gpu(job), zygote, out);
    json_decref(program);
    if (rc != KOPT_OK) {
        if (tmpdir[0])
            kopt__rmtree(tmpdir);
        return rc;
    }
    snprintf((*out)->tmpdir, sizeof((*out)->tmpdir), "%s", tmpdir);
    return KOPT_OK;
}

kopt_status kopt__worker_start_via(kopt_ctx *ctx, kopt__zygote *zygote, json_t *job,
                                   size_t shm_size, kopt__worker_proc **out)
{
    kopt_status rc = start_process(ctx, job, NULL, zygote, out);

    if (rc == KOPT_OK && (rc = kopt__worker_send(ctx, *out, job, shm_size)) != KOPT_OK) {
        kopt__worker_proc_free(*out);
        *out = NULL;
    }
    return rc;
}

kopt_status kopt__worker_start(kopt_ctx *ctx, json_t *job, size_t shm_size,
                               kopt__worker_proc **out)
{
    return kopt__worker_start_via(ctx, NULL, job, shm_size, out);
}

kopt_status kopt__worker_start_ahead(kopt_ctx *ctx, kopt__zygote *zygote, const json_t *job,
                                     kopt__worker_proc **out)
{
    json_t *copy = json_deep_copy(job);   /* the sandbox folder is written into it */
    kopt_status rc;

    if (!copy)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "job");
    /* "--ahead=cuda:N": it makes its CUDA context too, after torch's import */
    const char *dev = json_string_value(json_object_get(json_object_get(job, "torch"), "device"));
    char arg[64];
    snprintf(arg, sizeof(arg), "--ahead=%s", dev && strlen(dev) < 40 ? dev : "");
    rc = start_process(ctx, copy, arg, zygote, out);
    json_decref(copy);
    return rc;
}

kopt_status kopt__worker_give(kopt_ctx *ctx, kopt__worker_proc *w, json_t *job, size_t shm_size)
{
    json_t *sb = json_object_get(job, "sandbox");

    if (sb && w->tmpdir[0])             /* the folder its sandbox was made with */
        json_object_set_new(sb, "tmpdir", json_string(w->tmpdir));
    return kopt__worker_send(ctx, w, job, shm_size);
}

/* Read what the event pipe has now (poll said so): 1 with the complete lines handled (the
 * count in *lines), 0 when interrupted, -1 at EOF (w->eof set). */
static int read_events(kopt__worker_proc *w, int *lines)
{
    char buf[8192];
    ssize_t n = read(w->ev_r, buf, sizeof(buf));

    *lines = 0;
    if (n < 0 && errno == EINTR)
        return 0;
    if (n <= 0) {
        w->eof = 1;
        return -1;
    }
    kopt_buf_append(&w->acc, buf, (size_t)n);
    for (char *nl; w->acc.ptr && (nl = memchr(w->acc.ptr, '\n', w->acc.len));) {
        size_t len = (size_t)(nl - w->acc.ptr) + 1;
        *nl = '\0';
        handle_line(&w->run, w->acc.ptr);
        memmove(w->acc.ptr, w->acc.ptr + len, w->acc.len - len + 1);
        w->acc.len -= len;
        (*lines)++;
    }
    return 1;
}

void kopt__worker_on_trials(kopt__worker_proc *w, kopt__trials_fn fn, void *arg)
{
    w->on_trials = fn;
    w->on_trials_arg = arg;
    w->trials_seen = 0;
}

/* Hand the phases whose trials came in since the last call to on_trials. */
static void deliver_trials(kopt__worker_proc *w)
{
    while (w->on_trials && w->run.shm && w->trials_seen < w->run.trials_done)
        w->on_trials(w->on_trials_arg, w->trials_seen++, w->run.shm);
}

/* Read events until `until` returns true, EOF, or no event for timeout_s (then kill). */
static void pump(kopt__worker_proc *w, double timeout_s, int (*until)(const kopt__worker_run *))
{
    double deadline = kopt_now_ms() + timeout_s * 1e3;

    while (!w->eof && !(until && until(&w->run))) {
        struct pollfd p = {w->ev_r, POLLIN, 0};
        int wait_ms = (int)(deadline - kopt_now_ms()), r, lines;
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
        if (read_events(w, &lines) < 0)
            break;
        deliver_trials(w);             /* the worker times meanwhile */
        if (lines)                     /* any line is progress */
            deadline = kopt_now_ms() + timeout_s * 1e3;
    }
}

/* Read the events a worker has sent so far, without waiting. */
static void drain(kopt__worker_proc *w)
{
    int lines;

    while (!w->eof) {
        struct pollfd p = {w->ev_r, POLLIN, 0};
        int r = poll(&p, 1, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0 || read_events(w, &lines) < 0)
            break;
    }
}

int kopt__worker_early_context(kopt__worker_proc *w)
{
    if (!w)
        return 0;
    drain(w);
    return w->run.idle;
}

/* A worker whose early context failed counts as still starting: its job's setup tries
 * again, and reports why it cannot. */
int kopt__worker_early_state(kopt__worker_proc *w, size_t shm_size)
{
    if (!w)
        return -1;
    drain(w);
    if (w->eof)
        return -1;
    if (w->run.idle != 1)
        return 0;
    return !shm_size || w->run.idle_shm == shm_size ? 2 : 1;
}

int kopt__worker_pid(const kopt__worker_proc *w)
{
    return w ? (int)w->pid : -1;
}

static int said_hello(const kopt__worker_run *r)
{
    return r->device != NULL;
}

kopt_status kopt__worker_ready(kopt_ctx *ctx, kopt__worker_proc *w)
{
    pump(w, FIRST_CONTACT_S, said_hello);
    join_faults(w);
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
    if (w->zygote) {                   /* the zygote's child: it says how it ended */
        if (!kopt__zygote_wait(w->zygote, w->pid, REAP_ZYGOTE_S, &status)) {
            kill(-w->pid, SIGKILL);
            kill(w->pid, SIGKILL);
            status = kopt__zygote_wait(w->zygote, w->pid, REAP_ZYGOTE_S, &status) ? status
                                                                                : SIGKILL;
        }
    } else {
        while (waitpid(w->pid, &status, 0) < 0 && errno == EINTR)
            ;
    }
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
    if (!w->eof && !w->went)
        send_line(w, "go\n", 3);
    w->went = 1;
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

kopt_status kopt__worker_collect(kopt_ctx *ctx, kopt__worker_proc *w, double timeout_s,
                                 kopt__worker_run *out)
{
    pump(w, FIRST_CONTACT_S, said_hello);
    if (!w->eof && !w->went)
        send_line(w, "go\n", 3);
    w->went = 1;
    /* stdin stays open: after its result the worker waits for its end, holding its output
     * buffer, so the pages are freed by its exit and not by the caller's unmapping */
    pump(w, timeout_s, has_result);
    w->on_trials = NULL;
    if (!w->run.result) {              /* it ended without one: its exit status and log */
        if (w->job_w >= 0)
            close(w->job_w);
        w->job_w = -1;
        reap(w);
    }
    w->run.wall_ms = kopt_now_ms() - w->t0;
    *out = w->run;
    memset(&w->run, 0, sizeof(w->run));
    (void)ctx;
    return KOPT_OK;
}

/* Workers released while still exiting, reaped without blocking when the next starts. */
static pthread_mutex_t pending_lock = PTHREAD_MUTEX_INITIALIZER;
static pid_t pending[64];
static int npending;

static void reap_pending(void)
{
    pthread_mutex_lock(&pending_lock);
    for (int i = 0; i < npending;)
        if (waitpid(pending[i], NULL, WNOHANG) != 0)
            pending[i] = pending[--npending];
        else
            i++;
    pthread_mutex_unlock(&pending_lock);
}

void kopt__worker_proc_release(kopt__worker_proc *w)
{
    if (!w)
        return;
    if (w->pid > 0 && !w->reaped && w->zygote) {
        kill(-w->pid, SIGKILL);        /* the zygote reaps it */
        kill(w->pid, SIGKILL);
        kopt__zygote_forget(w->zygote, w->pid);
        w->reaped = 1;
    } else if (w->pid > 0 && !w->reaped) {
        kill(-w->pid, SIGKILL);        /* nothing of it may outlive the evaluation */
        kill(w->pid, SIGKILL);
        if (waitpid(w->pid, NULL, WNOHANG) == 0) {
            pthread_mutex_lock(&pending_lock);
            if (npending < (int)(sizeof(pending) / sizeof(pending[0]))) {
                pending[npending++] = w->pid;
                w->reaped = 1;         /* it is the list's now */
            }
            pthread_mutex_unlock(&pending_lock);
        } else {
            w->reaped = 1;
        }
    }
    kopt__worker_proc_free(w);         /* waits only when the list was full */
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
    w->run.trials_done = 0;
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
    w->on_trials = NULL;
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

static int event_or_error(const kopt__worker_run *r)
{
    return json_array_size(r->events) > 0 || r->error;
}

static int event_or_end(const kopt__worker_run *r)
{
    return json_array_size(r->events) > 0 || r->error || r->result;
}

/* The first queued event of `kind`, taken off the queue (others before it dropped). */
static json_t *take_event(kopt__worker_run *r, const char *kind)
{
    while (json_array_size(r->events)) {
        json_t *ev = json_incref(json_array_get(r->events, 0));
        json_array_remove(r->events, 0);
        if (strcmp(json_string_value(json_object_get(ev, "event")) ?: "", kind) == 0)
            return ev;
        json_decref(ev);
    }
    return NULL;
}

json_t *kopt__worker_next(kopt__worker_proc *w, double timeout_s, const char *kind)
{
    /* a subject's result ends its outputs; a streaming reference answers after its own */
    int outputs = strcmp(kind, "outputs") == 0;

    if (!w->went) {                    /* a subject: told to go once it said hello */
        pump(w, FIRST_CONTACT_S, said_hello);
        if (!w->eof)
            send_line(w, "go\n", 3);
        w->went = 1;
    }
    for (;;) {
        json_t *ev = take_event(&w->run, kind);
        if (ev)
            return ev;
        if (w->eof || w->run.error || (outputs && w->run.result))
            return NULL;
        pump(w, timeout_s, outputs ? event_or_end : event_or_error);
    }
}

json_t *kopt__worker_device(const kopt__worker_proc *w)
{
    return w ? w->run.device : NULL;
}

void kopt__worker_say(kopt__worker_proc *w, const char *line)
{
    send_line(w, line, strlen(line));
}

void kopt__worker_pause(kopt__worker_proc *w, int stop)
{
    if (w && w->pid > 0 && !w->reaped) {
        kill(-w->pid, stop ? SIGSTOP : SIGCONT);
        kill(w->pid, stop ? SIGSTOP : SIGCONT);
    }
}

int kopt__worker_buffer_path(const kopt__worker_proc *w, char *buf, size_t n)
{
    if (!w || w->shm_fd < 0 || !w->shm_size)
        return 0;
    snprintf(buf, n, "/proc/%d/fd/%d", (int)getpid(), w->shm_fd);
    return 1;
}

int kopt__worker_alive(const kopt__worker_proc *w)
{
    return w && !w->eof;
}

void kopt__worker_proc_free(kopt__worker_proc *w)
{
    if (!w)
        return;
    join_faults(w);
    if (w->shm_fd >= 0)
        close(w->shm_fd);
    if (w->pid > 0 && !w->reaped) {
        int status;
        kill(-w->pid, SIGKILL);
        kill(w->pid, SIGKILL);
        if (w->zygote)                 /* its end, as the zygote saw it */
            kopt__zygote_wait(w->zygote, w->pid, REAP_ZYGOTE_S, &status);
        else
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
