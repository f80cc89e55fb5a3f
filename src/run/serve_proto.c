/* The `kopt serve` protocol (include/kopt/serve.h): the client side (kopt eval --server, the
 * run's served evaluations) and the server's read of a request. */
#include "kopt/serve.h"
#include "../core/core_int.h"

#include <jansson.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

extern char **environ;

const char *kopt_serve_default_socket(void)
{
    static char path[108];
    const char *env = getenv("KOPT_SERVER");

    if (env && env[0] == '/')
        return env;
    snprintf(path, sizeof(path), "/tmp/kopt-serve-%u.sock", (unsigned)getuid());
    return path;
}

int kopt_serve_recv(int conn, char **request, int fds[2])
{
    char buf[65536];
    size_t len = 0;
    ssize_t n;

    *request = NULL;
    if ((n = (ssize_t)kopt__recv_fds(conn, buf, sizeof(buf) - 1, fds, 2)) <= 0)
        return n == 0 ? 1 : -1;        /* 1: closed at once (kopt_serve_alive's probe) */
    len = (size_t)n;
    while (!memchr(buf, '\n', len) && len < sizeof(buf) - 1 &&
           (n = read(conn, buf + len, sizeof(buf) - 1 - len)) > 0)
        len += (size_t)n;
    buf[len] = '\0';
    *request = strdup(buf);
    return *request && fds[0] >= 0 && fds[1] >= 0 ? 0 : -1;
}

/* A socket connected to the server at `path`, or -1 (errno kept). */
static int connect_to(const char *path)
{
    struct sockaddr_un addr;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), e;

    memset(&addr, 0, sizeof(addr));
    addr.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof(addr.sun_path)) {
        errno = ENAMETOOLONG;
        if (fd >= 0)
            close(fd);
        return -1;
    }
    snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
        e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

int kopt_serve_alive(const char *path)
{
    int fd = connect_to(path);

    if (fd < 0)
        return 0;
    close(fd);                         /* the server reads an empty request and goes on */
    return 1;
}

kopt_status kopt_serve_socket_for(kopt_ctx *ctx, int asked, const char *path,
                                  const char **out)
{
    const char *env = getenv("KOPT_SERVER");

    *out = NULL;
    if (!asked && !(env && env[0] && strcmp(env, "0") != 0))
        return KOPT_OK;
    if (!path || !path[0])
        path = kopt_serve_default_socket();
    if (kopt_serve_alive(path)) {
        *out = path;
        return KOPT_OK;
    }
    if (!asked)                        /* $KOPT_SERVER with no server: evaluate here */
        return KOPT_OK;
    return kopt_seterr(ctx, KOPT_E_IO, "no kopt serve answers on %s (%s): start one with "
                       "`kopt serve`", path, strerror(errno));
}

int kopt_serve_forward(const char *path, int argc, char *const *argv, const int fds[2],
                       int *code)
{
    json_t *req = json_object(), *args = json_array(), *env = json_object();
    char cwd[4096], *text = NULL, answer[256];
    int fd = connect_to(path), out[2] = {fds[0], fds[1]}, rc = -1;
    size_t got = 0;
    ssize_t n;

    if (fd < 0)
        goto done;
    for (int i = 0; i < argc; i++)
        json_array_append_new(args, json_string(argv[i]));
    for (char **e = environ; *e; e++) {   /* the settings an evaluation reads */
        const char *eq = strchr(*e, '=');
        if (eq && (strncmp(*e, "KOPT_", 5) == 0 || strncmp(*e, "CUTLASS_PATH=", 13) == 0)) {
            char key[256];
            snprintf(key, sizeof(key), "%.*s", (int)(eq - *e), *e);
            json_object_set_new(env, key, json_string(eq + 1));
        }
    }
    json_object_set(req, "argv", args);
    json_object_set_new(req, "cwd", json_string(getcwd(cwd, sizeof(cwd)) ? cwd : "."));
    json_object_set(req, "env", env);
    if (!(text = json_dumps(req, JSON_COMPACT)))
        goto done;
    fflush(stdout);
    fflush(stderr);
    if (kopt__send_fds(fd, text, strlen(text), out, 2, 0) != (long)strlen(text) ||
        write(fd, "\n", 1) != 1)
        goto done;
    while (got < sizeof(answer) - 1 && (n = read(fd, answer + got, sizeof(answer) - 1 - got)) > 0)
        got += (size_t)n;
    answer[got] = '\0';
    if (sscanf(answer, "{\"exit\": %d}", code) == 1)
        rc = 0;
    else
        errno = EPROTO;
done:
    if (fd >= 0)
        close(fd);
    free(text);
    json_decref(req);
    json_decref(args);
    json_decref(env);
    return rc;
}

/* A memfd's whole text (NUL-terminated, malloc'd), or NULL. */
static char *read_all(int fd)
{
    off_t size = lseek(fd, 0, SEEK_END);
    char *text;
    size_t got = 0;
    ssize_t n;

    if (size < 0 || lseek(fd, 0, SEEK_SET) != 0 || !(text = malloc((size_t)size + 1)))
        return NULL;
    while (got < (size_t)size && (n = read(fd, text + got, (size_t)size - got)) > 0)
        got += (size_t)n;
    text[got] = '\0';
    return text;
}

kopt_status kopt_serve_call(kopt_ctx *ctx, const char *path, int argc, char *const *argv,
                            int *code, char **out, char **err)
{
    int fds[2] = {memfd_create("kopt-serve-out", MFD_CLOEXEC),
                  memfd_create("kopt-serve-err", MFD_CLOEXEC)};
    kopt_status rc = KOPT_OK;

    *out = *err = NULL;
    if (fds[0] < 0 || fds[1] < 0)
        rc = kopt_seterr(ctx, KOPT_E_IO, "memfd: %s", strerror(errno));
    else if (kopt_serve_forward(path, argc, argv, fds, code) != 0)
        rc = kopt_seterr(ctx, KOPT_E_IO, "no kopt serve answers on %s (%s): start one with "
                         "`kopt serve`", path, strerror(errno));
    else if (!(*out = read_all(fds[0])) || !(*err = read_all(fds[1])))
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "the served command's output");
    for (int i = 0; i < 2; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    if (rc != KOPT_OK) {
        free(*out);
        free(*err);
        *out = *err = NULL;
    }
    return rc;
}
