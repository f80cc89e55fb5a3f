/*
 * The sandbox of candidate code (docs/integrity.md says what it stops and what it does not).
 *
 * Two halves, because a CUDA context must exist (and, in the PyTorch worker, the candidate's
 * model be built) before the strictest rules can apply:
 *  - kopt__sandbox_enter() runs in the forked child before exec: its own working and
 *    temporary folder, resource limits (CPU time, file size, no core dumps), no new
 *    privileges, no network (a new network namespace where the kernel allows it), and the
 *    worker made the reaper of its orphaned descendants (so the lockdown can find them).
 *  - kopt__sandbox_lockdown() runs in the worker once the context is up, before a host-mode
 *    candidate's shared object is loaded (C worker) or a ModelNew's forward first runs
 *    (PyTorch worker, through kopt_sandbox_lockdown(), kopt/sandbox.h): processes it
 *    started that still run ended, limits lowered, an address-space limit above what CUDA
 *    has reserved, all capabilities dropped, and a seccomp filter (on every thread) that
 *    traps fork/exec, signals to other processes, ptrace, sockets other than local ones,
 *    clock changes and (native code) making memory executable. A trapped call ends the
 *    worker with a "tamper" event naming it. It also records the signal handlers and the
 *    first bytes of the timer functions, which kopt_sandbox_check() compares after every
 *    candidate call.
 */
#include "sandbox_int.h"

#include "kopt/sandbox.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

/* ---- before exec (child of fork: async-signal-safe calls only) ------------------------- */

static void write_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t n = write(fd, text, strlen(text));
        (void)n;
        close(fd);
    }
}

void kopt__sandbox_enter(const kopt__sandbox_limits *lim)
{
    struct rlimit r;
    const char *net = "none";

    if (lim->tmpdir[0] && chdir(lim->tmpdir) == 0) {
        setenv("TMPDIR", lim->tmpdir, 1);
        setenv("TMP", lim->tmpdir, 1);
        setenv("TEMP", lim->tmpdir, 1);
    }
    if (lim->cpu_s > 0) {
        r.rlim_cur = (rlim_t)lim->cpu_s;
        r.rlim_max = (rlim_t)lim->cpu_s + 2;    /* SIGXCPU first, then SIGKILL */
        setrlimit(RLIMIT_CPU, &r);
    }
    if (lim->fsize_mb > 0) {
        r.rlim_cur = r.rlim_max = (rlim_t)lim->fsize_mb << 20;
        setrlimit(RLIMIT_FSIZE, &r);
    }
    r.rlim_cur = r.rlim_max = 0;
    setrlimit(RLIMIT_CORE, &r);
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    /* kept across exec: orphans of the candidate's processes become the worker's children */
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    if (lim->no_network) {
        if (unshare(CLONE_NEWNET) == 0) {
            net = "namespace";
        } else {
            /* unprivileged: a user namespace mapping only ourselves, then the network one */
            uid_t uid = getuid();
            gid_t gid = getgid();
            if (unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0) {
                char map[64];
                snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)uid, (unsigned)uid);
                write_file("/proc/self/uid_map", map);
                write_file("/proc/self/setgroups", "deny");
                snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)gid, (unsigned)gid);
                write_file("/proc/self/gid_map", map);
                net = "user+network namespace";
            } else {
                net = "seccomp";     /* sockets other than local ones are trapped later */
            }
        }
    }
    setenv("KOPT_SANDBOX_NETWORK", net, 1);
}

void kopt_sandbox_enter(const char *tmpdir, double cpu_s, double fsize_mb, int no_network)
{
    kopt__sandbox_limits lim;

    memset(&lim, 0, sizeof(lim));
    snprintf(lim.tmpdir, sizeof(lim.tmpdir), "%s", tmpdir ? tmpdir : "");
    lim.cpu_s = cpu_s;
    lim.fsize_mb = fsize_mb;
    lim.no_network = no_network;
    kopt__sandbox_enter(&lim);
}

/* ---- in the worker, before the candidate runs ------------------------------------------ */

#define NSIGS 65
static struct sigaction saved_sig[NSIGS];
static int have_saved;
#define NWATCH 8
#define WATCH_BYTES 16
static const unsigned char *watch_at[NWATCH];
static unsigned char watch_bytes[NWATCH][WATCH_BYTES];
static char watch_name[NWATCH][64];
static int nwatch;
static char hint[256];           /* appended to the tamper message (JSON-safe) */

static const struct {
    long nr;
    const char *name;
} trapped_names[] = {
#ifdef __NR_fork
    {__NR_fork, "fork"},
#endif
#ifdef __NR_vfork
    {__NR_vfork, "vfork"},
#endif
    {__NR_clone, "clone (a new process)"},
    {__NR_execve, "execve"},
    {__NR_execveat, "execveat"},
    {__NR_kill, "kill (another process)"},
    {__NR_tgkill, "tgkill (another process)"},
    {__NR_tkill, "tkill"},
    {__NR_ptrace, "ptrace"},
    {__NR_process_vm_writev, "process_vm_writev"},
    {__NR_process_vm_readv, "process_vm_readv"},
    {__NR_socket, "socket (network)"},
    {__NR_clock_settime, "clock_settime"},
    {__NR_settimeofday, "settimeofday"},
    {__NR_adjtimex, "adjtimex"},
    {__NR_clock_adjtime, "clock_adjtime"},
    {__NR_mprotect, "mprotect (making memory executable)"},
    {__NR_pkey_mprotect, "pkey_mprotect (making memory executable)"},
    {__NR_mmap, "mmap (writable and executable)"},
};

static void put_str(char *buf, size_t *at, size_t cap, const char *s)
{
    while (*s && *at + 1 < cap)
        buf[(*at)++] = *s++;
}

/* SIGSYS from a trapped call: tell the parent which one, then end (async-signal-safe). */
static void on_sigsys(int sig, siginfo_t *si, void *uc)
{
    char buf[512], num[24];
    size_t at = 0;
    int nr = si->si_syscall, k = 0;
    const char *name = "a forbidden system call";

    (void)sig;
    (void)uc;
    for (size_t i = 0; i < sizeof(trapped_names) / sizeof(trapped_names[0]); i++)
        if (trapped_names[i].nr == nr)
            name = trapped_names[i].name;
    if (nr < 0)
        nr = 0;
    do
        num[k++] = (char)('0' + nr % 10);
    while ((nr /= 10) && k < 20);
    put_str(buf, &at, sizeof(buf), "{\"event\":\"error\",\"kind\":\"tamper\",\"message\":\"the "
            "candidate made a system call the sandbox forbids: ");
    put_str(buf, &at, sizeof(buf), name);
    put_str(buf, &at, sizeof(buf), " (number ");
    while (k > 0 && at + 1 < sizeof(buf))
        buf[at++] = num[--k];
    put_str(buf, &at, sizeof(buf), ")");
    put_str(buf, &at, sizeof(buf), hint);
    put_str(buf, &at, sizeof(buf), "\",\"step\":\"kopt_candidate_run\"}\n");
    if (write(KOPT_SANDBOX_EVENT_FD, buf, at) < 0)
        _exit(97);
    _exit(97);
}

#if defined(__x86_64__)
#define KOPT_SECCOMP_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define KOPT_SECCOMP_ARCH AUDIT_ARCH_AARCH64
#endif

#ifdef KOPT_SECCOMP_ARCH
#define LD_NR BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr))
#define LD_ARG(i) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[i]))
#define RET(v) BPF_STMT(BPF_RET | BPF_K, (v))
#define TRAP RET(SECCOMP_RET_TRAP)
#define ALLOW RET(SECCOMP_RET_ALLOW)

/* The filter is written in blocks: each tests the call number (in the accumulator) and
 * either returns or falls through to the next block with the number still loaded. */
typedef struct filter_buf {
    struct sock_filter f[96];
    unsigned short n;
} filter_buf;

static void put_block(filter_buf *p, const struct sock_filter *b, size_t n)
{
    if (p->n + n <= sizeof(p->f) / sizeof(p->f[0])) {
        memcpy(p->f + p->n, b, n * sizeof(*b));
        p->n = (unsigned short)(p->n + n);
    }
}

#define BLOCK(p, ...)                                                                        \
    do {                                                                                     \
        const struct sock_filter b_[] = {__VA_ARGS__};                                       \
        put_block((p), b_, sizeof(b_) / sizeof(b_[0]));                                      \
    } while (0)

static int install_filter(int32_t flags)
{
    const unsigned self = (unsigned)getpid();
    struct sock_fprog prog;
    filter_buf p;

    p.n = 0;
    BLOCK(&p, BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
          BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, KOPT_SECCOMP_ARCH, 1, 0),
          RET(SECCOMP_RET_KILL_PROCESS), LD_NR);
#ifdef __NR_fork
    BLOCK(&p, BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_fork, 0, 1), TRAP);
#endif
#ifdef __NR_vfork
    BLOCK(&p, BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_vfork, 0, 1), TRAP);
#endif
    BLOCK(&p, BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_execve, 0, 1), TRAP,
          BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_execveat, 0, 1), TRAP,
          BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_ptrace, 0, 1), TRAP,
          BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_process_vm_writev, 0, 1), TRAP,
          BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_process_vm_readv, 0, 1), TRAP,
          BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_tkill, 0, 1), TRAP,
          BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clock_settime, 0, 1), TRAP,
          BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_settimeofday, 0, 1), TRAP,
          BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_adjtimex, 0, 1), TRAP,
          BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clock_adjtime, 0, 1), TRAP);
    /* threads yes, processes no; clone3 hides its flags: glibc falls back to clone */
    BLOCK(&p, BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone3, 0, 1),
          RET(SECCOMP_RET_ERRNO | ENOSYS));
    BLOCK(&p, BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 0, 4),
          LD_ARG(0), BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD, 1, 0), TRAP, ALLOW);
    /* signals only to ourselves (kill(0) is our own process group) */
    BLOCK(&p, BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_kill, 0, 5),
          LD_ARG(0), BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, self, 2, 0),
          BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0), TRAP, ALLOW);
    BLOCK(&p, BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_tgkill, 0, 4),
          LD_ARG(0), BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, self, 1, 0), TRAP, ALLOW);
    /* local sockets only */
    BLOCK(&p, BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socket, 0, 5),
          LD_ARG(0), BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX, 2, 0),
          BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_NETLINK, 1, 0), TRAP, ALLOW);
    if (flags & KOPT_SANDBOX_NO_WX) {
        /* no memory made executable after the fact (patching code, e.g. the timer) */
        BLOCK(&p, BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mprotect, 1, 0),
              BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_pkey_mprotect, 0, 4),
              LD_ARG(2), BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, PROT_EXEC, 0, 1), TRAP, ALLOW);
        /* and no mapping both writable and executable */
        BLOCK(&p, BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mmap, 0, 5),
              LD_ARG(2), BPF_STMT(BPF_ALU | BPF_AND | BPF_K, PROT_WRITE | PROT_EXEC),
              BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PROT_WRITE | PROT_EXEC, 0, 1), TRAP, ALLOW);
    }
    BLOCK(&p, ALLOW);
    prog.len = p.n;
    prog.filter = p.f;
    return (int)syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog);
}
#endif

static int drop_capabilities(void)
{
    struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2];

    memset(data, 0, sizeof(data));
    return (int)syscall(SYS_capset, &hdr, data);
}

/* VmSize of this process in bytes (0 when unknown). */
static unsigned long long vm_size(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    unsigned long long kb = 0;

    if (!f)
        return 0;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "VmSize: %llu kB", &kb) == 1)
            break;
    fclose(f);
    return kb * 1024;
}

static void save_signals(void)
{
    for (int s = 1; s < NSIGS; s++)
        if (s != SIGKILL && s != SIGSTOP)
            sigaction(s, NULL, &saved_sig[s]);
    have_saved = 1;
}

void kopt_sandbox_watch(const char *name, const void *code)
{
    if (!code || !name || nwatch >= NWATCH)
        return;
    watch_at[nwatch] = code;
    snprintf(watch_name[nwatch], sizeof(watch_name[nwatch]), "%s", name);
    memcpy(watch_bytes[nwatch], code, WATCH_BYTES);
    nwatch++;
}

/* The parent of process `pid` from /proc (0 when unknown); *zombie when it has ended. */
static pid_t parent_of(pid_t pid, char *zombie)
{
    char path[64], line[512], *close_paren, state = '?';
    FILE *f;
    int ppid = 0;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    *zombie = 0;
    if (!(f = fopen(path, "r")))
        return 0;
    if (fgets(line, sizeof(line), f) && (close_paren = strrchr(line, ')')))
        if (sscanf(close_paren + 1, " %c %d", &state, &ppid) != 2)
            ppid = 0;
    fclose(f);
    *zombie = state == 'Z';
    return (pid_t)ppid;
}

/* Every process descended from this one (by /proc's parent links; orphans were reparented
 * to us, the subreaper), ended with SIGKILL and reaped: started before the lockdown, they
 * would run outside the filter. Named in the report ("pid name", the first 8). */
static void end_children(json_t *report)
{
    enum { MAXP = 4096 };
    static pid_t pid[MAXP], ppid[MAXP];
    static char mine[MAXP], ended_already[MAXP];
    json_t *names = json_array();
    struct dirent *e;
    DIR *d = opendir("/proc");
    int n = 0, grew = 1, ended = 0;
    pid_t self = getpid();

    while (d && (e = readdir(d)) && n < MAXP) {
        char *end;
        long v = strtol(e->d_name, &end, 10);
        if (*end || v <= 0 || (pid_t)v == self)
            continue;
        pid[n] = (pid_t)v;
        ppid[n] = parent_of(pid[n], &ended_already[n]);
        mine[n] = ppid[n] == self;
        n++;
    }
    if (d)
        closedir(d);
    while (grew) {              /* grandchildren of ours, to any depth */
        grew = 0;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n && !mine[i]; j++)
                if (mine[j] && ppid[i] == pid[j])
                    mine[i] = grew = 1;
    }
    for (int i = 0; i < n; i++) {
        char path[64], comm[64] = "?", item[96];
        FILE *f;
        if (!mine[i] || ended_already[i])
            continue;
        snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid[i]);
        if ((f = fopen(path, "r"))) {
            if (fgets(comm, sizeof(comm), f))
                comm[strcspn(comm, "\n")] = '\0';
            fclose(f);
        }
        if (kill(pid[i], SIGKILL) == 0 && ended++ < 8) {
            snprintf(item, sizeof(item), "%d %s", (int)pid[i], comm);
            json_array_append_new(names, json_string(item));
        }
    }
    for (int tries = 0; ended && tries < 50; tries++) {   /* reap them (50 ms at most) */
        while (waitpid(-1, NULL, WNOHANG) > 0)
            ;
        if (tries < 49)
            usleep(1000);
    }
    json_object_set_new(report, "ended_processes", names);
}

/* RLIMIT_CPU at what this process has used so far plus cpu_s (SIGXCPU, then SIGKILL 2 s
 * later), never above the hard limit it had. */
static void limit_cpu_from_now(double cpu_s, json_t *report)
{
    struct rusage ru;
    struct rlimit old, r;

    if (getrusage(RUSAGE_SELF, &ru) != 0 || getrlimit(RLIMIT_CPU, &old) != 0)
        return;
    r.rlim_cur = (rlim_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + 1) + (rlim_t)cpu_s;
    r.rlim_max = r.rlim_cur + 2;
    if (old.rlim_max != RLIM_INFINITY && r.rlim_max > old.rlim_max) {
        r.rlim_max = old.rlim_max;
        r.rlim_cur = r.rlim_max > 2 ? r.rlim_max - 2 : r.rlim_max;
    }
    if (setrlimit(RLIMIT_CPU, &r) == 0)
        json_object_set_new(report, "cpu_limit_s", json_integer((json_int_t)r.rlim_cur));
}

kopt_status kopt__sandbox_lockdown(kopt_ctx *ctx, const kopt_sandbox_opts *o, json_t *report)
{
    struct sigaction sa;
    const char *net = getenv("KOPT_SANDBOX_NETWORK");
    size_t at = 0;

    json_object_set_new(report, "network", json_string(net ? net : "none"));
    json_object_set_new(report, "cwd_private", json_boolean(getenv("TMPDIR") != NULL));
    if (o->flags & KOPT_SANDBOX_END_CHILDREN)
        end_children(report);
    if (o->cpu_s > 0)
        limit_cpu_from_now(o->cpu_s, report);
    if (o->fsize_mb > 0) {
        struct rlimit r;
        r.rlim_cur = r.rlim_max = (rlim_t)(o->fsize_mb * 1048576.0);
        if (setrlimit(RLIMIT_FSIZE, &r) == 0)
            json_object_set_new(report, "file_size_limit_mb", json_real(o->fsize_mb));
    }
    if (o->as_extra_mb > 0) {
        unsigned long long now = vm_size();
        struct rlimit r;
        if (now) {
            r.rlim_cur = r.rlim_max = (rlim_t)(now + (unsigned long long)(o->as_extra_mb * 1048576.0));
            if (setrlimit(RLIMIT_AS, &r) == 0)
                json_object_set_new(report, "address_space_limit_mb",
                                    json_real((double)r.rlim_cur / 1048576.0));
        }
    }
    json_object_set_new(report, "capabilities_dropped", json_boolean(drop_capabilities() == 0));
    /* the hint goes into a JSON string as it is: quotes, backslashes, controls left out */
    for (const char *h = o->hint ? o->hint : ""; *h && at + 1 < sizeof(hint); h++)
        if ((unsigned char)*h >= 0x20 && *h != '"' && *h != '\\')
            hint[at++] = *h;
    hint[at] = '\0';
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_sigsys;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSYS, &sa, NULL) != 0)
        return kopt_seterr(ctx, KOPT_E_ERROR, "sandbox: SIGSYS handler: %s", strerror(errno));
    save_signals();
    /* seccomp needs no_new_privs (set before exec too; here for callers that did not) */
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
#ifdef KOPT_SECCOMP_ARCH
    if (install_filter(o->flags) != 0) {
        json_object_set_new(report, "seccomp", json_false());
        return kopt_seterr(ctx, KOPT_E_UNSUPPORTED, "sandbox: seccomp filter refused: %s",
                           strerror(errno));
    }
    json_object_set_new(report, "seccomp", json_true());
    json_object_set_new(report, "no_wx", json_boolean(o->flags & KOPT_SANDBOX_NO_WX));
    return KOPT_OK;
#else
    json_object_set_new(report, "seccomp", json_false());
    return kopt_seterr(ctx, KOPT_E_UNSUPPORTED, "sandbox: no seccomp filter for this "
                       "architecture");
#endif
}

kopt_status kopt_sandbox_lockdown(kopt_ctx *ctx, const kopt_sandbox_opts *opts, char *report,
                                  size_t cap)
{
    kopt_sandbox_opts none;
    json_t *rep = json_object();
    kopt_status rc;
    char *text;

    memset(&none, 0, sizeof(none));
    if (!rep)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "sandbox report");
    rc = kopt__sandbox_lockdown(ctx, opts ? opts : &none, rep);
    if (report && cap) {
        text = json_dumps(rep, JSON_COMPACT);
        snprintf(report, cap, "%s", text ? text : "{}");
        free(text);
    }
    json_decref(rep);
    return rc;
}

int kopt_sandbox_check(char *msg, size_t cap)
{
    for (int i = 0; i < nwatch; i++)
        if (memcmp(watch_at[i], watch_bytes[i], WATCH_BYTES) != 0) {
            snprintf(msg, cap, "the candidate changed the code of %s, which kopt's timing uses",
                     watch_name[i]);
            return 1;
        }
    if (!have_saved)
        return 0;
    for (int s = 1; s < NSIGS; s++) {
        struct sigaction now;
        if (s == SIGKILL || s == SIGSTOP || sigaction(s, NULL, &now) != 0)
            continue;
        if ((void *)now.sa_sigaction != (void *)saved_sig[s].sa_sigaction ||
            (now.sa_flags & SA_SIGINFO) != (saved_sig[s].sa_flags & SA_SIGINFO)) {
            snprintf(msg, cap, "the candidate installed its own handler for signal %d (%s); "
                     "candidate code must leave the harness's signal handling alone", s,
                     strsignal(s));
            return 1;
        }
    }
    return 0;
}
