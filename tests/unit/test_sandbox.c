/* The sandbox without a GPU: each case forks a child that enters the sandbox (rlimits,
 * seccomp filter) the way a worker does, tries one thing, and reports back on a pipe
 * standing in for the worker's event fd; the public lockdown as the PyTorch worker calls it;
 * the file guard on temporary files (a store another process has open is not judged). */
#include "ktest.h"
#include "../../src/eval/sandbox_int.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>

typedef int (*attempt_fn)(void);

typedef struct outcome {
    int exited, code, signal;
    char events[1024];          /* what the child wrote on its event fd */
} outcome;

/* Run `attempt` in a sandboxed child; its return value is the exit code. */
static outcome sandboxed(attempt_fn attempt)
{
    outcome o;
    int p[2], status = 0;
    pid_t pid;
    ssize_t n;

    memset(&o, 0, sizeof(o));
    if (pipe(p) != 0)
        return o;
    pid = fork();
    if (pid == 0) {
        kopt_ctx *ctx = kopt_ctx_new();
        json_t *report = json_object();
        kopt_sandbox_opts so = {0, 0, 0, KOPT_SANDBOX_NO_WX, NULL};
        dup2(p[1], KOPT_SANDBOX_EVENT_FD);
        prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);   /* as kopt__sandbox_enter() does */
        if (kopt__sandbox_lockdown(ctx, &so, report) != KOPT_OK) {
            fprintf(stderr, "lockdown: %s\n", kopt_errmsg(ctx));
            _exit(90);
        }
        _exit(attempt());
    }
    close(p[1]);
    n = read(p[0], o.events, sizeof(o.events) - 1);
    o.events[n > 0 ? n : 0] = '\0';
    close(p[0]);
    waitpid(pid, &status, 0);
    o.exited = WIFEXITED(status);
    o.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    o.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    return o;
}

static int try_fork(void)
{
    pid_t pid = fork();
    if (pid == 0)
        _exit(0);
    return 0;   /* only reached when fork was allowed */
}
static int try_inet_socket(void) { return socket(AF_INET, SOCK_STREAM, 0) >= 0 ? 0 : 1; }
static int try_unix_socket(void) { return socket(AF_UNIX, SOCK_STREAM, 0) >= 0 ? 3 : 4; }
static int try_exec(void)
{
    char *argv[] = {"/bin/true", NULL};
    execv("/bin/true", argv);
    return 5;
}
static int try_mprotect_exec(void)
{
    void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return mprotect(m, 4096, PROT_READ | PROT_EXEC) == 0 ? 0 : 6;
}
static int try_mmap_rwx(void)
{
    void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    return m != MAP_FAILED ? 0 : 7;
}
static int try_kill_parent(void) { return kill(getppid(), 0) == 0 ? 0 : 8; }
static void *thread_body(void *arg) { return arg; }
static int try_thread(void)
{
    pthread_t t;
    void *ret = NULL;
    if (pthread_create(&t, NULL, thread_body, (void *)(intptr_t)11) != 0)
        return 12;
    pthread_join(t, &ret);
    return (int)(intptr_t)ret;       /* 11: threads work */
}
static int try_signal_self(void) { return kill(getpid(), 0) == 0 ? 13 : 14; }
static int try_settime(void)
{
    struct timespec ts = {0, 0};
    clock_settime(CLOCK_REALTIME, &ts);
    return 15;
}

static void expect_trapped(attempt_fn f, const char *name)
{
    outcome o = sandboxed(f);
    CHECK(o.exited);
    CHECK_EQ_INT(o.code, 97);
    CHECK_STR_CONTAINS(o.events, "\"kind\":\"tamper\"");
    CHECK_STR_CONTAINS(o.events, name);
}

static void test_forbidden_calls_are_trapped_and_named(void)
{
    expect_trapped(try_fork, "clone (a new process)");
    expect_trapped(try_inet_socket, "socket (network)");
    expect_trapped(try_exec, "execve");
    expect_trapped(try_mprotect_exec, "mprotect");
    expect_trapped(try_mmap_rwx, "mmap (writable and executable)");
    expect_trapped(try_kill_parent, "kill (another process)");
    expect_trapped(try_settime, "clock_settime");
}

static void test_allowed_calls_still_work(void)
{
    outcome o = sandboxed(try_unix_socket);
    CHECK_EQ_INT(o.code, 3);
    o = sandboxed(try_thread);
    CHECK_EQ_INT(o.code, 11);
    o = sandboxed(try_signal_self);
    CHECK_EQ_INT(o.code, 13);
    CHECK_EQ_STR(o.events, "");
}

static int change_handler(void)
{
    char msg[256];
    if (kopt_sandbox_check(msg, sizeof(msg)))
        return 20;            /* nothing changed yet: must not fire */
    signal(SIGSEGV, SIG_IGN);
    return kopt_sandbox_check(msg, sizeof(msg)) && strstr(msg, "signal 11") ? 21 : 22;
}

static unsigned char patchable[64] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
static int change_watched_code(void)
{
    char msg[256];
    kopt_sandbox_watch("the timer", patchable);
    if (kopt_sandbox_check(msg, sizeof(msg)))
        return 30;
    patchable[3] = 0xc3;
    return kopt_sandbox_check(msg, sizeof(msg)) && strstr(msg, "the timer") ? 31 : 32;
}

static void test_check_sees_handlers_and_patched_code(void)
{
    CHECK_EQ_INT(sandboxed(change_handler).code, 21);
    CHECK_EQ_INT(sandboxed(change_watched_code).code, 31);
}

static void test_enter_sets_folder_and_limits(void)
{
    char *dir = ktest_tmpdir("sandbox");
    int p[2], status = 0;
    pid_t pid;

    CHECK(pipe(p) == 0);
    pid = fork();
    if (pid == 0) {
        kopt__sandbox_limits lim;
        char cwd[4096] = "";
        struct rlimit r;
        memset(&lim, 0, sizeof(lim));
        snprintf(lim.tmpdir, sizeof(lim.tmpdir), "%s", dir);
        lim.cpu_s = 7;
        lim.fsize_mb = 1;
        lim.no_network = 1;
        kopt__sandbox_enter(&lim);
        if (!getcwd(cwd, sizeof(cwd)) || strcmp(cwd, dir) != 0 || !getenv("TMPDIR") ||
            strcmp(getenv("TMPDIR"), dir) != 0)
            _exit(40);
        if (getrlimit(RLIMIT_CPU, &r) != 0 || r.rlim_cur != 7)
            _exit(41);
        if (getrlimit(RLIMIT_FSIZE, &r) != 0 || r.rlim_cur != (rlim_t)1 << 20)
            _exit(42);
        if (!getenv("KOPT_SANDBOX_NETWORK"))
            _exit(43);
        {   /* a file past the limit: SIGXFSZ ends the process */
            FILE *f = fopen("big", "w");
            static char block[1 << 16];
            for (int i = 0; f && i < 40; i++)
                fwrite(block, 1, sizeof(block), f), fflush(f);
        }
        _exit(44);
    }
    close(p[0]);
    close(p[1]);
    waitpid(pid, &status, 0);
    CHECK(WIFSIGNALED(status));
    CHECK_EQ_INT(WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status), SIGXFSZ);
    ktest_rmtree(dir);
    free(dir);
}

/* kopt_sandbox_lockdown() as the PyTorch worker calls it: a process started before it is
 * ended and named, the limits count from now, making memory executable stays allowed
 * (PyTorch's code generators), and a trapped call's event carries the hint. */
static void test_public_lockdown_as_the_python_worker_calls_it(void)
{
    int p[2], status = 0;
    char events[1024];
    ssize_t n;
    pid_t pid;

    CHECK(pipe(p) == 0);
    pid = fork();
    if (pid == 0) {
        kopt_ctx *ctx = kopt_ctx_new();
        kopt_sandbox_opts so = {5, 1, 0, KOPT_SANDBOX_END_CHILDREN, "; a \"hint\""};
        char report[2048], want[64], *argv[] = {"/bin/true", NULL};
        struct rlimit r;
        struct rusage ru;
        void *m;
        pid_t helper = fork();
        if (helper == 0) {
            execlp("sleep", "sleep", "300", (char *)NULL);
            _exit(1);
        }
        dup2(p[1], KOPT_SANDBOX_EVENT_FD);
        usleep(100000);                                      /* it is sleep by now */
        if (kopt_sandbox_lockdown(ctx, &so, report, sizeof(report)) != KOPT_OK)
            _exit(50);
        snprintf(want, sizeof(want), "\"ended_processes\":[\"%d sleep\"]", (int)helper);
        if (!strstr(report, want) || !strstr(report, "\"seccomp\":true") ||
            !strstr(report, "\"no_wx\":false"))
            _exit(51);
        if (waitpid(helper, NULL, WNOHANG) != -1 || errno != ECHILD)
            _exit(52);                                       /* ended and reaped */
        getrusage(RUSAGE_SELF, &ru);
        if (getrlimit(RLIMIT_CPU, &r) != 0 || r.rlim_cur < (rlim_t)ru.ru_utime.tv_sec + 5 ||
            r.rlim_cur > (rlim_t)ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + 6)
            _exit(53);
        if (getrlimit(RLIMIT_FSIZE, &r) != 0 || r.rlim_cur != (rlim_t)1 << 20)
            _exit(54);
        m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED || mprotect(m, 4096, PROT_READ | PROT_EXEC) != 0)
            _exit(55);
        execv("/bin/true", argv);
        _exit(56);
    }
    close(p[1]);
    n = read(p[0], events, sizeof(events) - 1);
    events[n > 0 ? n : 0] = '\0';
    close(p[0]);
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status));
    CHECK_EQ_INT(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 97);
    CHECK_STR_CONTAINS(events, "execve (number ");
    CHECK_STR_CONTAINS(events, "); a hint\",");   /* quotes left out: the event stays JSON */
}

static void test_file_guard_restores_and_names(void)
{
    char *dir = ktest_tmpdir("guard"), msg[1024];
    char *src = ktest_write_file(dir, "reference.cu", "__global__ void k() {}\n");
    char *bin = ktest_write_file(dir, "abc.cubin", "ELF...");
    char *other = ktest_write_file(dir, "untouched.json", "{}");
    const char *paths[4] = {src, bin, other, NULL};
    kopt__file_guard *g = NULL;
    kopt_ctx *ctx = kopt_ctx_new();
    char *back = NULL;

    CHECK(kopt__guard_begin(&g, ctx, paths, 4) == KOPT_OK);
    CHECK_EQ_INT(kopt__guard_end(g, msg, sizeof(msg)), 0);
    free(ktest_write_file(dir, "reference.cu", "// tampered\n"));
    free(ktest_write_file(dir, "abc.cubin", "tampered"));
    CHECK_EQ_INT(kopt__guard_end(g, msg, sizeof(msg)), 2);
    CHECK_STR_CONTAINS(msg, "reference.cu (restored)");
    CHECK_STR_CONTAINS(msg, "abc.cubin (deleted, to be rebuilt)");
    back = ktest_read_file(src);
    CHECK_EQ_STR(back, "__global__ void k() {}\n");
    CHECK(access(bin, F_OK) != 0);
    free(back);
    free(src);
    free(bin);
    free(other);
    kopt__guard_free(g);
    kopt_ctx_free(ctx);
    ktest_rmtree(dir);
    free(dir);
}

/* The store is guarded but never rolled back: kopt's other threads commit to it while a
 * candidate runs (tune/bench/optimize --gpus), and a restore lost their rows; a change while
 * this process committed is kopt's own, any other is named. */
static void test_file_guard_store(void)
{
    char *dir = ktest_tmpdir("guardstore"), msg[1024];
    char *db = ktest_write_file(dir, "kopt.db", "rows 1-10");
    const char *none[1] = {NULL};
    kopt__file_guard *g = NULL;
    kopt_ctx *ctx = kopt_ctx_new();
    char *back = NULL;

    CHECK(kopt__guard_begin(&g, ctx, none, 1) == KOPT_OK);
    CHECK(kopt__guard_store(g, ctx, db) == KOPT_OK);
    free(ktest_write_file(dir, "kopt.db", "rows 1-10, vandalized"));
    CHECK_EQ_INT(kopt__guard_end(g, msg, sizeof(msg)), 1);
    CHECK_STR_CONTAINS(msg, "kopt.db (changed; a store is not rolled back");
    back = ktest_read_file(db);
    CHECK_EQ_STR(back, "rows 1-10, vandalized");          /* not restored */
    free(back);
    kopt__guard_free(g);

    CHECK(kopt__guard_begin(&g, ctx, none, 1) == KOPT_OK);
    CHECK(kopt__guard_store(g, ctx, db) == KOPT_OK);
    free(ktest_write_file(dir, "kopt.db", "rows 1-11"));  /* another slot's outcome */
    kopt__store_commit_seen();
    CHECK_EQ_INT(kopt__guard_end(g, msg, sizeof(msg)), 0);
    back = ktest_read_file(db);
    CHECK_EQ_STR(back, "rows 1-11");
    free(back);
    kopt__guard_free(g);
    free(db);
    kopt_ctx_free(ctx);
    ktest_rmtree(dir);
    free(dir);
}

/* A store another process has open (a second kopt, the sqlite3 shell) may change under the
 * guard (that kopt checkpoints its WAL into the file): not called tampering. The same change
 * with only a child of ours holding it (the candidate's worker is one) still is. */
static pid_t hold_open(const char *path, int detached, int *release)
{
    int ready[2], go[2];
    pid_t pid;
    char c;

    if (pipe(ready) != 0 || pipe(go) != 0)
        return -1;
    pid = fork();
    if (pid == 0) {
        /* detached: a grandchild, reparented away from us, holds it (not our child) */
        if (detached && fork() != 0)
            _exit(0);
        FILE *f = fopen(path, "r");
        close(ready[0]);
        close(go[1]);
        if (write(ready[1], f ? "y" : "n", 1) != 1 || read(go[0], &c, 1) < 0)
            _exit(1);
        _exit(0);
    }
    close(ready[1]);
    close(go[0]);
    if (detached)
        waitpid(pid, NULL, 0);
    if (read(ready[0], &c, 1) != 1 || c != 'y') {
        close(ready[0]);
        close(go[1]);
        return -1;
    }
    close(ready[0]);
    *release = go[1];
    return pid;
}

static void test_file_guard_store_shared(void)
{
    char *dir = ktest_tmpdir("guardshared"), msg[1024];
    char *db = ktest_write_file(dir, "kopt.db", "rows 1-10");
    const char *none[1] = {NULL};
    kopt__file_guard *g = NULL;
    kopt_ctx *ctx = kopt_ctx_new();
    int release = -1;
    pid_t pid;

    /* another process has it open */
    CHECK((pid = hold_open(db, 1, &release)) > 0);
    CHECK(kopt__guard_begin(&g, ctx, none, 1) == KOPT_OK);
    CHECK(kopt__guard_store(g, ctx, db) == KOPT_OK);
    free(ktest_write_file(dir, "kopt.db", "rows 1-10, and the other kopt's 11"));
    CHECK_EQ_INT(kopt__guard_end(g, msg, sizeof(msg)), 0);
    kopt__guard_free(g);
    if (release >= 0)
        close(release);      /* the holder reads EOF and ends */

    /* only a child of ours has it open: the candidate's worker could be that child */
    release = -1;
    CHECK((pid = hold_open(db, 0, &release)) > 0);
    CHECK(kopt__guard_begin(&g, ctx, none, 1) == KOPT_OK);
    CHECK(kopt__guard_store(g, ctx, db) == KOPT_OK);
    free(ktest_write_file(dir, "kopt.db", "rows 1-10, vandalized"));
    CHECK_EQ_INT(kopt__guard_end(g, msg, sizeof(msg)), 1);
    CHECK_STR_CONTAINS(msg, "kopt.db (changed; a store is not rolled back");
    kopt__guard_free(g);
    if (release >= 0)
        close(release);
    if (pid > 0)
        waitpid(pid, NULL, 0);
    free(db);
    kopt_ctx_free(ctx);
    ktest_rmtree(dir);
    free(dir);
}

int main(int argc, char **argv)
{
    static const ktest_case cases[] = {
        KTEST(test_forbidden_calls_are_trapped_and_named), KTEST(test_file_guard_store),
        KTEST(test_allowed_calls_still_work),
        KTEST(test_check_sees_handlers_and_patched_code),
        KTEST(test_enter_sets_folder_and_limits),
        KTEST(test_public_lockdown_as_the_python_worker_calls_it),
        KTEST(test_file_guard_restores_and_names),
        KTEST(test_file_guard_store_shared),
    };
    return ktest_main(argc, argv, cases, KTEST_COUNT(cases));
}
