/* Finding the worker program (kopt/worker.h has the search order). */
#include "kopt/worker.h"
#include "core/core_int.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WORKER_NAME "kopt-worker"
#define TORCH_WORKER_NAME "kopt_torch_worker.py"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char *set_path;               /* kopt_worker_set_path(), or NULL */
static char logged[PATH_MAX];        /* the last path logged at INFO */

kopt_status kopt_worker_set_path(kopt_ctx *ctx, const char *path)
{
    char *copy = NULL;

    if (path && path[0]) {
        if (!kopt__is_runnable(path, NULL))
            return kopt_seterr(ctx, KOPT_E_NOT_FOUND, "worker %s is not an executable file",
                               path);
        if (!(copy = kopt__absolute(path)))
            return kopt_seterr(ctx, KOPT_E_NOMEM, "worker path");
    }
    pthread_mutex_lock(&lock);
    free(set_path);
    set_path = copy;
    pthread_mutex_unlock(&lock);
    return KOPT_OK;
}

/* Rules 3 to 6: beside the program (or the kopt program itself), beside libkopt.so, the
 * install prefix, the build tree. */
static const kopt__shipped_place worker_places[] = {
    {KOPT__AT_EXE_DIR, WORKER_NAME, "beside the program", 0},
    {KOPT__AT_EXE, "kopt", "the kopt program", 0},
    {KOPT__AT_LIB_DIR, WORKER_NAME, "beside libkopt", 0},
    {KOPT__AT_LIB_DIR, KOPT_LIB_TO_LIBEXEC "/" WORKER_NAME, "beside libkopt", 0},
    {KOPT__AT_PATH, KOPT_INSTALL_WORKER, "install prefix", 0},
    {KOPT__AT_PATH, KOPT_BUILD_WORKER, "build tree", 0},
};

kopt_status kopt_worker_find(kopt_ctx *ctx, char **path, const char **source)
{
    const kopt__shipped_spec spec = {
        "kopt-worker program",
        "install kopt, or name it with $KOPT_WORKER or kopt_worker_set_path()",
        "KOPT_WORKER", "is not an executable file", kopt__is_runnable, NULL, worker_places,
        (int)(sizeof(worker_places) / sizeof(worker_places[0]))};
    const char *src = NULL;
    char *found = NULL;
    kopt_status rc;
    int fresh;

    *path = NULL;
    pthread_mutex_lock(&lock);
    found = set_path ? strdup(set_path) : NULL;
    pthread_mutex_unlock(&lock);
    if (found) {
        src = "kopt_worker_set_path";
        if (!kopt__is_runnable(found, NULL)) {
            kopt_seterr(ctx, KOPT_E_NOT_FOUND, "the worker set with kopt_worker_set_path (%s) "
                        "is no longer an executable file", found);
            free(found);
            return KOPT_E_NOT_FOUND;
        }
    } else if ((rc = kopt__find_shipped(ctx, &spec, &found, &src)) != KOPT_OK) {
        return rc;
    }
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

kopt_status kopt_torch_worker_find(kopt_ctx *ctx, char **path)
{
    char *installed = kopt_path_dir(KOPT_INSTALL_WORKER);
    char *beside_installed = installed ? kopt_path_join(installed, TORCH_WORKER_NAME) : NULL;
    /* an installed kopt (libkopt linked in): <bindir>/<bin to lib>/<lib to libexec> */
    const kopt__shipped_place places[] = {
        {KOPT__AT_EXE_DIR, TORCH_WORKER_NAME, NULL, 0},
        {KOPT__AT_EXE_DIR, KOPT_BIN_TO_LIB "/" KOPT_LIB_TO_LIBEXEC "/" TORCH_WORKER_NAME, NULL,
         0},
        {KOPT__AT_LIB_DIR, KOPT_LIB_TO_LIBEXEC "/" TORCH_WORKER_NAME, NULL, 0},
        {KOPT__AT_PATH, beside_installed, NULL, 0},
        {KOPT__AT_PATH, KOPT_SOURCE_LIBEXEC "/" TORCH_WORKER_NAME, NULL, 0},
    };
    const kopt__shipped_spec spec = {
        TORCH_WORKER_NAME, "install kopt, or name it with $KOPT_TORCH_WORKER",
        "KOPT_TORCH_WORKER", "is not a readable file", kopt__is_readable, NULL, places,
        (int)(sizeof(places) / sizeof(places[0]))};
    kopt_status rc = kopt__find_shipped(ctx, &spec, path, NULL);

    free(installed);
    free(beside_installed);
    return rc;
}

/* libkopt.so itself (quiet: only the places a moved or installed kopt has are named) */
static const kopt__shipped_place lib_places[] = {
    {KOPT__AT_LIB, NULL, NULL, 1},
    {KOPT__AT_EXE_DIR, KOPT_LIB_NAME, NULL, 0},
    {KOPT__AT_EXE_DIR, KOPT_BIN_TO_LIB "/" KOPT_LIB_NAME, NULL, 0},
    {KOPT__AT_PATH, KOPT_INSTALL_LIB, NULL, 0},
    {KOPT__AT_PATH, KOPT_BUILD_LIB, NULL, 0},
};

kopt_status kopt_lib_find(kopt_ctx *ctx, char **path)
{
    const kopt__shipped_spec spec = {
        KOPT_LIB_NAME, "name it with $KOPT_LIB", "KOPT_LIB", "is not a readable file",
        kopt__is_readable, NULL, lib_places,
        (int)(sizeof(lib_places) / sizeof(lib_places[0]))};

    return kopt__find_shipped(ctx, &spec, path, NULL);
}

const char *kopt_torch_python(void)
{
    const char *p = getenv("KOPT_PYTHON");
    return p && p[0] ? p : "python3";
}
