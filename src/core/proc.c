/* Child processes with captured output and a timeout (compilers, profilers). */
#include "kopt/proc.h"
#include "core_int.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

kopt_status kopt_proc_run(kopt_ctx *ctx, const char *const *argv, double timeout_s,
                          int *exit_code, char **output)
{
    posix_spawn_file_actions_t fa;
    kopt_buf out = KOPT_BUF_INIT;
    int fds[2], status = 0, timed_out = 0;
    pid_t pid;
    double deadline = kopt_now_ms() + timeout_s * 1e3;

    *output = NULL;
    *exit_code = -1;
    if (pipe2(fds, O_CLOEXEC) != 0)
        return kopt_seterr(ctx, KOPT_E_IO, "pipe: %s", strerror(errno));
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
    if ((errno = posix_spawnp(&pid, argv[0], &fa, NULL, (char *const *)argv, environ)) != 0) {
        int e = errno;
        posix_spawn_file_actions_destroy(&fa);
        close(fds[0]);
        close(fds[1]);
        return kopt_seterr(ctx, KOPT_E_NOT_FOUND, "cannot run %s: %s", argv[0], strerror(e));
    }
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    for (;;) {
        struct pollfd p = {fds[0], POLLIN, 0};
        int wait_ms = -1, r;
        char buf[4096];
        ssize_t n;
        if (timeout_s > 0) {
            wait_ms = (int)(deadline - kopt_now_ms());
            if (wait_ms <= 0) {
                timed_out = 1;
                kill(pid, SIGKILL);
                break;
            }
        }
        r = poll(&p, 1, wait_ms);
        if (r < 0 && errno == EINTR)
            continue;
        if (r == 0)
            continue;
        n = read(fds[0], buf, sizeof(buf));
        if (n <= 0)
            break;
        kopt_buf_append(&out, buf, (size_t)n);
    }
    close(fds[0]);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    *output = kopt_buf_detach(&out);
    if (timed_out)
        return kopt_seterr(ctx, KOPT_E_TIMEOUT, "%s did not finish in %.0f s", argv[0], timeout_s);
    return KOPT_OK;
}

const char *kopt_self_exe(void)
{
    static char path[4096];
    ssize_t n;

    if (path[0])
        return path;
    n = readlink("/proc/self/exe", path, sizeof(path) - 1);
    if (n <= 0)
        return "kopt";
    path[n] = '\0';
    return path;
}

static const char lib_anchor;   /* an address inside libkopt, for dladdr */
static char lib_path[4096];
static pthread_once_t lib_once = PTHREAD_ONCE_INIT;

static void find_lib(void)
{
    Dl_info info;
    char *lib = NULL, *exe = NULL;

    /* a static libkopt is part of the program: dladdr names the program itself */
    if (dladdr(&lib_anchor, &info) && info.dli_fname && info.dli_fname[0] &&
        (lib = realpath(info.dli_fname, NULL)) && (exe = realpath(kopt_self_exe(), NULL)) &&
        strcmp(lib, exe) != 0)
        snprintf(lib_path, sizeof(lib_path), "%s", lib);
    free(lib);
    free(exe);
}

const char *kopt_self_lib(void)
{
    pthread_once(&lib_once, find_lib);
    return lib_path[0] ? lib_path : NULL;
}

static char *exec_at(const char *dir, const char *name)
{
    struct stat st;
    char *p = NULL;
    if (!dir || !dir[0] || asprintf(&p, "%s/%s", dir, name) < 0)
        return NULL;
    if (stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, X_OK) == 0)
        return p;
    free(p);
    return NULL;
}

char *kopt_find_program(const char *env_var, const char *name)
{
    const char *v = env_var ? getenv(env_var) : NULL, *path = getenv("PATH");
    const char *cuda_home = getenv("CUDA_HOME");
    char *found = NULL, dir[4096];

    if (v && v[0]) {
        if ((found = exec_at(v, name)))       /* a folder holding it */
            return found;
        if (access(v, X_OK) == 0)              /* the program itself */
            return strdup(v);
    }
    while (path && *path) {
        const char *end = strchr(path, ':');
        size_t n = end ? (size_t)(end - path) : strlen(path);
        if (n && n < sizeof(dir)) {
            memcpy(dir, path, n);
            dir[n] = '\0';
            if ((found = exec_at(dir, name)))
                return found;
        }
        path = end ? end + 1 : NULL;
    }
    if (cuda_home && snprintf(dir, sizeof(dir), "%s/bin", cuda_home) < (int)sizeof(dir) &&
        (found = exec_at(dir, name)))
        return found;
    return exec_at("/usr/local/cuda/bin", name);
}

char *kopt__find_pip_program(kopt_ctx *ctx, const char *name)
{
    /* the name is an argument, not part of the program text */
    const char *const argv[] = {
        "python3", "-c",
        "import os, sys\n"
        "name = sys.argv[1]\n"
        "try:\n"
        "    import nvidia\n"
        "    roots = list(nvidia.__path__)\n"
        "except Exception:\n"
        "    roots = []\n"
        "for r in roots:\n"
        "    for sub in ('cu13', 'cuda_' + name, 'cu12'):\n"
        "        print(os.path.join(r, sub, 'bin'))\n",
        name, NULL};
    char *output = NULL, *found = NULL, *line, *save = NULL;
    int code = -1;

    if (!name || !name[0] || strchr(name, '/') ||
        kopt_proc_run(ctx, argv, 30, &code, &output) != KOPT_OK || code != 0) {
        free(output);
        return NULL;
    }
    /* the folders where NVIDIA's wheels put their programs, in order */
    for (line = strtok_r(output, "\n", &save); line && !found; line = strtok_r(NULL, "\n", &save))
        found = exec_at(line, name);
    free(output);
    return found;
}

long kopt__send_fds(int sock, const void *buf, size_t len, const int *fds, int nfds, int flags)
{
    char ctl[CMSG_SPACE(8 * sizeof(int))];
    struct iovec iov = {(void *)buf, len};
    struct msghdr m;
    struct cmsghdr *c;

    if (nfds < 0 || nfds > 8) {
        errno = EINVAL;
        return -1;
    }
    memset(&m, 0, sizeof(m));
    memset(ctl, 0, sizeof(ctl));
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    if (nfds) {
        m.msg_control = ctl;
        m.msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int));
        c = CMSG_FIRSTHDR(&m);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
        memcpy(CMSG_DATA(c), fds, (size_t)nfds * sizeof(int));
    }
    return (long)sendmsg(sock, &m, flags);
}

long kopt__recv_fds(int sock, void *buf, size_t len, int *fds, int nfds)
{
    char ctl[CMSG_SPACE(8 * sizeof(int))];
    struct iovec iov = {buf, len};
    struct msghdr m;
    ssize_t n;

    for (int i = 0; i < nfds; i++)
        fds[i] = -1;
    if (nfds < 0 || nfds > 8) {
        errno = EINVAL;
        return -1;
    }
    memset(&m, 0, sizeof(m));
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = ctl;
    m.msg_controllen = sizeof(ctl);
    do
        n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    for (struct cmsghdr *c = n > 0 ? CMSG_FIRSTHDR(&m) : NULL; c; c = CMSG_NXTHDR(&m, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
            c->cmsg_len == CMSG_LEN((size_t)nfds * sizeof(int)))
            memcpy(fds, CMSG_DATA(c), (size_t)nfds * sizeof(int));
    return (long)n;
}
