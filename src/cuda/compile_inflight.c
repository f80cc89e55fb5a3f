/* Compiles under way, by cache key: a thread that would compile what another thread is
 * compiling (kopt optimize's compiles ahead and the evaluation that wants the same candidate)
 * waits for it and then finds it in the compile cache, instead of compiling it twice or
 * writing the same cached binary at once; and across processes that share the cache, the
 * same through a lock file beside the binary (kopt__compile_lock). */
#include "compile_int.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#define INFLIGHT_MAX 64

static char inflight[INFLIGHT_MAX][72];   /* keys being compiled; "" a free place */
static pthread_mutex_t inflight_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t inflight_done = PTHREAD_COND_INITIALIZER;

static int inflight_find(const char *key)
{
    for (int i = 0; i < INFLIGHT_MAX; i++)
        if (inflight[i][0] && strcmp(inflight[i], key) == 0)
            return i;
    return -1;
}

int kopt__compile_claim(const char *key)
{
    int waited = 0, free_at = -1;

    if (!key || !key[0] || strlen(key) >= sizeof(inflight[0]))
        return 1;                      /* nothing to share it by: compile */
    pthread_mutex_lock(&inflight_mu);
    while (inflight_find(key) >= 0) {
        waited = 1;
        pthread_cond_wait(&inflight_done, &inflight_mu);
    }
    if (!waited) {
        for (int i = 0; i < INFLIGHT_MAX && free_at < 0; i++)
            if (!inflight[i][0])
                free_at = i;
        if (free_at >= 0)              /* a full table: compiled unshared, as before */
            snprintf(inflight[free_at], sizeof(inflight[0]), "%s", key);
    }
    pthread_mutex_unlock(&inflight_mu);
    return !waited;
}

void kopt__compile_release(const char *key)
{
    int i;

    if (!key || !key[0])
        return;
    pthread_mutex_lock(&inflight_mu);
    if ((i = inflight_find(key)) >= 0)
        inflight[i][0] = '\0';
    pthread_cond_broadcast(&inflight_done);
    pthread_mutex_unlock(&inflight_mu);
}

int kopt__compile_lock(const char *binary_path)
{
    char *path = NULL;
    int fd;

    if (!binary_path || asprintf(&path, "%s.lock", binary_path) < 0)
        return -1;
    fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    free(path);
    while (fd >= 0 && flock(fd, LOCK_EX) != 0) {
        if (errno != EINTR) {
            close(fd);
            fd = -1;
        }
    }
    return fd;
}
