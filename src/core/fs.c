/* Files and paths: whole-file read, atomic write, mkdir -p, joins, the cache folder. */
#include "kopt/core.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

kopt_status kopt_file_read(kopt_ctx *ctx, const char *path, char **out, size_t *len)
{
    FILE *f = NULL;
    char *data = NULL;
    long size;
    kopt_status rc = KOPT_OK;

    *out = NULL;
    f = fopen(path, "rb");
    if (!f)
        return kopt_seterr(ctx, errno == ENOENT ? KOPT_E_NOT_FOUND : KOPT_E_IO,
                           "%s: %s", path, strerror(errno));
    if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        rc = kopt_seterr(ctx, KOPT_E_IO, "%s: cannot read: %s", path, strerror(errno));
        goto cleanup;
    }
    data = malloc((size_t)size + 1);
    if (!data) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "%s: %ld bytes", path, size);
        goto cleanup;
    }
    if (size > 0 && fread(data, 1, (size_t)size, f) != (size_t)size) {
        rc = kopt_seterr(ctx, KOPT_E_IO, "%s: short read", path);
        goto cleanup;
    }
    data[size] = '\0';
    if (len)
        *len = (size_t)size;
    *out = data;
    data = NULL;
cleanup:
    free(data);
    fclose(f);
    return rc;
}

kopt_status kopt_file_write(kopt_ctx *ctx, const char *path, const void *data, size_t len)
{
    char *tmp = NULL;
    FILE *f = NULL;
    kopt_status rc = KOPT_OK;

    /* unique per call, not just per process: threads of one process (the tuner's compile
     * workers) may write the same path at once */
    static _Atomic unsigned long seq;
    if (asprintf(&tmp, "%s.tmp.%ld.%lu", path, (long)getpid(), (unsigned long)++seq) < 0)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "path");
    f = fopen(tmp, "wb");
    if (!f) {
        rc = kopt_seterr(ctx, KOPT_E_IO, "%s: %s", tmp, strerror(errno));
        goto cleanup;
    }
    if (len && fwrite(data, 1, len, f) != len) {
        rc = kopt_seterr(ctx, KOPT_E_IO, "%s: write failed", tmp);
        goto cleanup;
    }
    if (fclose(f) != 0) {
        f = NULL;
        rc = kopt_seterr(ctx, KOPT_E_IO, "%s: %s", tmp, strerror(errno));
        goto cleanup;
    }
    f = NULL;
    if (rename(tmp, path) != 0)
        rc = kopt_seterr(ctx, KOPT_E_IO, "%s: %s", path, strerror(errno));
cleanup:
    if (f)
        fclose(f);
    if (rc != KOPT_OK)
        unlink(tmp);
    free(tmp);
    return rc;
}

kopt_status kopt_mkdirs(kopt_ctx *ctx, const char *path)
{
    char *p = strdup(path), *s;

    if (!p)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "path");
    for (s = p + 1; ; s++) {
        if (*s == '/' || *s == '\0') {
            char c = *s;
            *s = '\0';
            if (mkdir(p, 0755) != 0 && errno != EEXIST) {
                kopt_status rc = kopt_seterr(ctx, KOPT_E_IO, "%s: %s", p, strerror(errno));
                free(p);
                return rc;
            }
            *s = c;
            if (c == '\0')
                break;
        }
    }
    free(p);
    return KOPT_OK;
}

char *kopt_path_join(const char *dir, const char *rel)
{
    char *out = NULL;

    if (rel[0] == '/' || !dir || !dir[0])
        return strdup(rel);
    if (asprintf(&out, "%s/%s", dir, rel) < 0)
        return NULL;
    return out;
}

char *kopt_path_dir(const char *path)
{
    const char *slash = strrchr(path, '/');

    if (!slash)
        return strdup(".");
    if (slash == path)
        return strdup("/");
    return strndup(path, (size_t)(slash - path));
}

char *kopt_cache_dir(void)
{
    const char *v = getenv("KOPT_CACHE_DIR");
    char *out = NULL;

    if (v && v[0])
        return strdup(v);
    v = getenv("XDG_CACHE_HOME");
    if (v && v[0]) {
        if (asprintf(&out, "%s/kopt", v) < 0)
            return NULL;
        return out;
    }
    v = getenv("HOME");
    if (asprintf(&out, "%s/.cache/kopt", v && v[0] ? v : "/tmp") < 0)
        return NULL;
    return out;
}

double kopt_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int kopt_cpus_from_cpu_max(const char *text)
{
    long long quota, period;

    if (!text || strncmp(text, "max", 3) == 0)
        return 0;
    if (sscanf(text, "%lld %lld", &quota, &period) != 2 || quota <= 0 || period <= 0)
        return 0;
    return (int)((quota + period - 1) / period);
}

/* The cgroup CPU quota of this process in whole CPUs, 0 when none is set or none is found:
 * cgroup v2's cpu.max of the process's own group (under /sys/fs/cgroup), else of the
 * namespace's root (a container), else cgroup v1's cfs quota and period. */
static int cgroup_cpus(void)
{
    char line[512], path[640], text[64];
    const char *group = "";
    FILE *f = fopen("/proc/self/cgroup", "r");
    int cpus = 0;

    while (f && fgets(line, sizeof(line), f)) {
        if (strncmp(line, "0::", 3) == 0) {        /* v2: "0::/PATH" */
            line[strcspn(line, "\n")] = '\0';
            group = line + 3;
            break;
        }
    }
    if (f)
        fclose(f);
    for (int pass = 0; pass < 2 && !cpus; pass++) {
        FILE *m;
        snprintf(path, sizeof(path), "/sys/fs/cgroup%s/cpu.max",
                 pass == 0 && strcmp(group, "/") != 0 ? group : "");
        if ((m = fopen(path, "r"))) {
            if (fgets(text, sizeof(text), m))
                cpus = kopt_cpus_from_cpu_max(text);
            fclose(m);
        }
    }
    if (!cpus) {
        long long quota = 0, period = 0;
        FILE *q = fopen("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "r");
        FILE *p = fopen("/sys/fs/cgroup/cpu/cpu.cfs_period_us", "r");
        if (q && p && fscanf(q, "%lld", &quota) == 1 && fscanf(p, "%lld", &period) == 1 &&
            quota > 0 && period > 0) {
            snprintf(text, sizeof(text), "%lld %lld", quota, period);
            cpus = kopt_cpus_from_cpu_max(text);
        }
        if (q)
            fclose(q);
        if (p)
            fclose(p);
    }
    return cpus;
}

int kopt_cpus_usable(void)
{
    cpu_set_t set;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    int cpus = online > 0 ? (int)online : 1, quota = cgroup_cpus();

    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
        cpus = CPU_COUNT(&set);
    return quota > 0 && quota < cpus ? quota : cpus;
}

static unsigned long store_commits;

unsigned long kopt_store_commits(void)
{
    return __atomic_load_n(&store_commits, __ATOMIC_SEQ_CST);
}

void kopt__store_commit_seen(void)
{
    __atomic_fetch_add(&store_commits, 1, __ATOMIC_SEQ_CST);
}
