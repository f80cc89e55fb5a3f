/* Finding the worker program (kopt/worker.h has the search order). */
#include "kopt/worker.h"
#include "kopt/proc.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define WORKER_NAME "kopt-worker"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char *set_path;               /* kopt_worker_set_path(), or NULL */
static char logged[PATH_MAX];        /* the last path logged at INFO */

static int runnable(const char *p)
{
    struct stat st;
    return p && stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, X_OK) == 0;
}

/* The absolute form of `p` (malloc'd), or a copy when it cannot be resolved. */
static char *absolute(const char *p)
{
    char *r = realpath(p, NULL);
    return r ? r : strdup(p);
}

/* Look at <dir>/<rel> (rel may be NULL): note it in `looked`, and return its absolute
 * path (malloc'd) when it is runnable. */
static char *look(kopt_buf *looked, const char *dir, const char *rel)
{
    char *p = rel ? kopt_path_join(dir, rel) : strdup(dir);
    char *found = NULL;

    if (!p)
        return NULL;
    if (runnable(p))
        found = absolute(p);
    else
        kopt_buf_printf(looked, "%s%s", looked->len ? ", " : "", p);
    free(p);
    return found;
}

kopt_status kopt_worker_set_path(kopt_ctx *ctx, const char *path)
{
    char *copy = NULL;

    if (path && path[0]) {
        if (!runnable(path))
            return kopt_seterr(ctx, KOPT_E_NOT_FOUND, "worker %s is not an executable file",
                               path);
        if (!(copy = absolute(path)))
            return kopt_seterr(ctx, KOPT_E_NOMEM, "worker path");
    }
    pthread_mutex_lock(&lock);
    free(set_path);
    set_path = copy;
    pthread_mutex_unlock(&lock);
    return KOPT_OK;
}

/* Rules 3 and 4: beside the program, beside libkopt.so. */
static char *beside(kopt_buf *looked, const char **source)
{
    const char *exe = kopt_self_exe(), *base = strrchr(exe, '/'), *lib = kopt_self_lib();
    char *dir = kopt_path_dir(exe), *found = NULL;

    if (dir && (found = look(looked, dir, WORKER_NAME)))
        *source = "beside the program";
    else if (strcmp(base ? base + 1 : exe, "kopt") == 0 && (found = look(looked, exe, NULL)))
        *source = "the kopt program";
    else if (lib) {
        free(dir);
        dir = kopt_path_dir(lib);
        if (dir && ((found = look(looked, dir, WORKER_NAME)) ||
                    (found = look(looked, dir, KOPT_LIB_TO_LIBEXEC "/" WORKER_NAME))))
            *source = "beside libkopt";
    }
    free(dir);
    return found;
}

kopt_status kopt_worker_find(kopt_ctx *ctx, char **path, const char **source)
{
    kopt_buf looked = KOPT_BUF_INIT;
    const char *env = getenv("KOPT_WORKER"), *src = NULL;
    char *found = NULL;
    int fresh;

    *path = NULL;
    pthread_mutex_lock(&lock);
    found = set_path ? strdup(set_path) : NULL;
    pthread_mutex_unlock(&lock);
    if (found) {
        src = "kopt_worker_set_path";
        if (!runnable(found)) {
            kopt_seterr(ctx, KOPT_E_NOT_FOUND, "the worker set with kopt_worker_set_path (%s) "
                        "is no longer an executable file", found);
            free(found);
            return KOPT_E_NOT_FOUND;
        }
    } else if (env && env[0]) {
        src = "KOPT_WORKER";
        if (!runnable(env))
            return kopt_seterr(ctx, KOPT_E_NOT_FOUND, "KOPT_WORKER=%s is not an executable file",
                               env);
        found = absolute(env);
    } else if (!(found = beside(&looked, &src))) {
        if ((found = look(&looked, KOPT_INSTALL_WORKER, NULL)))
            src = "install prefix";
        else if ((found = look(&looked, KOPT_BUILD_WORKER, NULL)))
            src = "build tree";
    }
    if (!found) {
        kopt_seterr(ctx, KOPT_E_NOT_FOUND, "no kopt-worker program found (looked at %s); "
                    "install kopt, or name it with $KOPT_WORKER or kopt_worker_set_path()",
                    kopt_buf_cstr(&looked));
        kopt_buf_free(&looked);
        return KOPT_E_NOT_FOUND;
    }
    kopt_buf_free(&looked);
    pthread_mutex_lock(&lock);
    if ((fresh = strcmp(logged, found) != 0))
        snprintf(logged, sizeof(logged), "%s", found);
    pthread_mutex_unlock(&lock);
    if (fresh)
        kopt_log(ctx, KOPT_LOG_INFO, "worker: %s (%s)", found, src);
    *path = found;
    if (source)
        *source = src;
    return KOPT_OK;
}

/* ---- the PyTorch worker (kopt/worker.h) ---------------------------------------------------- */

#define TORCH_WORKER_NAME "kopt_torch_worker.py"

static int readable(const char *p)
{
    struct stat st;
    return p && stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, R_OK) == 0;
}

static char *look_file(kopt_buf *looked, const char *dir, const char *rel)
{
    char *p = kopt_path_join(dir, rel), *found = NULL;

    if (!p)
        return NULL;
    if (readable(p))
        found = absolute(p);
    else
        kopt_buf_printf(looked, "%s%s", looked->len ? ", " : "", p);
    free(p);
    return found;
}

kopt_status kopt_torch_worker_find(kopt_ctx *ctx, char **path)
{
    const char *env = getenv("KOPT_TORCH_WORKER"), *lib = kopt_self_lib();
    kopt_buf looked = KOPT_BUF_INIT;
    char *dir = kopt_path_dir(kopt_self_exe()), *found = NULL, *installed;

    *path = NULL;
    if (env && env[0]) {
        free(dir);
        if (!readable(env))
            return kopt_seterr(ctx, KOPT_E_NOT_FOUND, "KOPT_TORCH_WORKER=%s is not a readable "
                               "file", env);
        *path = absolute(env);
        return *path ? KOPT_OK : kopt_seterr(ctx, KOPT_E_NOMEM, "path");
    }
    if (dir)
        found = look_file(&looked, dir, TORCH_WORKER_NAME);
    /* an installed kopt (libkopt linked in): <bindir>/<bin to lib>/<lib to libexec> */
    if (!found && dir)
        found = look_file(&looked, dir, KOPT_BIN_TO_LIB "/" KOPT_LIB_TO_LIBEXEC "/" TORCH_WORKER_NAME);
    if (!found && lib) {
        free(dir);
        if ((dir = kopt_path_dir(lib)))
            found = look_file(&looked, dir, KOPT_LIB_TO_LIBEXEC "/" TORCH_WORKER_NAME);
    }
    free(dir);
    if (!found && (installed = kopt_path_dir(KOPT_INSTALL_WORKER))) {
        found = look_file(&looked, installed, TORCH_WORKER_NAME);
        free(installed);
    }
    if (!found)
        found = look_file(&looked, KOPT_SOURCE_LIBEXEC, TORCH_WORKER_NAME);
    if (!found) {
        kopt_seterr(ctx, KOPT_E_NOT_FOUND, "no %s found (looked at %s); install kopt, or name "
                    "it with $KOPT_TORCH_WORKER", TORCH_WORKER_NAME, kopt_buf_cstr(&looked));
        kopt_buf_free(&looked);
        return KOPT_E_NOT_FOUND;
    }
    kopt_buf_free(&looked);
    *path = found;
    return KOPT_OK;
}

kopt_status kopt_lib_find(kopt_ctx *ctx, char **path)
{
    const char *env = getenv("KOPT_LIB"), *lib = kopt_self_lib();
    kopt_buf looked = KOPT_BUF_INIT;
    char *dir = kopt_path_dir(kopt_self_exe()), *found = NULL;

    *path = NULL;
    if (env && env[0]) {
        free(dir);
        if (!readable(env))
            return kopt_seterr(ctx, KOPT_E_NOT_FOUND, "KOPT_LIB=%s is not a readable file", env);
        *path = absolute(env);
        return *path ? KOPT_OK : kopt_seterr(ctx, KOPT_E_NOMEM, "path");
    }
    if (lib && readable(lib))
        found = absolute(lib);
    if (!found && dir && !(found = look_file(&looked, dir, KOPT_LIB_NAME)))
        found = look_file(&looked, dir, KOPT_BIN_TO_LIB "/" KOPT_LIB_NAME);
    free(dir);
    if (!found && readable(KOPT_INSTALL_LIB))
        found = absolute(KOPT_INSTALL_LIB);
    if (!found && readable(KOPT_BUILD_LIB))
        found = absolute(KOPT_BUILD_LIB);
    if (!found) {
        kopt_seterr(ctx, KOPT_E_NOT_FOUND, "no %s found (looked at %s, %s, %s); name it with "
                    "$KOPT_LIB", KOPT_LIB_NAME, kopt_buf_cstr(&looked), KOPT_INSTALL_LIB,
                    KOPT_BUILD_LIB);
        kopt_buf_free(&looked);
        return KOPT_E_NOT_FOUND;
    }
    kopt_buf_free(&looked);
    *path = found;
    return KOPT_OK;
}

const char *kopt_torch_python(void)
{
    const char *p = getenv("KOPT_PYTHON");
    return p && p[0] ? p : "python3";
}
