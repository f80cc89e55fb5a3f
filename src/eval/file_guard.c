/*
 * The guard on files a host-mode candidate could change while it runs: the problem, the
 * reference and candidate sources, the compiled binaries, the store. The parent records
 * each file's content before the candidate's worker starts and compares afterwards; text
 * files are restored from the copy, changed binaries are deleted so they are rebuilt, and
 * the evaluation is rejected as TAMPER naming the file. The store is never restored (kopt
 * may have written to it meanwhile, from another thread: a restore would lose those rows)
 * and its change is kopt's own when this process committed to a store meanwhile, or
 * another's when another process (not this one's child, as the candidate's worker is) has
 * it open: a second kopt on the same store checkpoints its WAL into the file at any time.
 */
#include "sandbox_int.h"

#include <dirent.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define GUARD_KEEP_MAX (16u << 20)   /* keep a copy (to restore) of files up to 16 MiB */

typedef struct guarded {
    char *path;
    char hash[65];
    char *copy;               /* content, when small enough to restore */
    size_t len;
    int is_binary;            /* a compiled artefact: delete instead of restore */
    int is_store;             /* a kopt store: never restored (kopt__guard_store) */
    unsigned long commits;    /* kopt_store_commits() when it was hashed */
} guarded;

struct kopt__file_guard {
    int n, cap;
    guarded *f;
};

/* Hash a file and keep its content (when small enough) to restore it. */
static int hash_file(kopt_ctx *ctx, const char *path, char out[65], char **keep, size_t *len)
{
    char *data = NULL;
    size_t n = 0;

    if (kopt_file_read(ctx, path, &data, &n) != KOPT_OK)
        return 0;
    kopt_sha256_hex(data, n, out);
    if (keep && n <= GUARD_KEEP_MAX) {
        *keep = data;
        *len = n;
    } else {
        free(data);
    }
    return 1;
}

static int is_binary_path(const char *p)
{
    size_t n = strlen(p);
    return (n > 3 && strcmp(p + n - 3, ".so") == 0) || (n > 6 && strcmp(p + n - 6, ".cubin") == 0);
}

kopt_status kopt__guard_begin(kopt__file_guard **out, kopt_ctx *ctx, const char *const *paths,
                              int n)
{
    kopt__file_guard *g = calloc(1, sizeof(*g));

    *out = NULL;
    if (!g || !(g->f = calloc((size_t)n + 2, sizeof(*g->f)))) {
        free(g);
        return kopt_seterr(ctx, KOPT_E_NOMEM, "file guard");
    }
    for (int i = 0; i < n; i++) {
        guarded *f = &g->f[g->n];
        struct stat st;
        if (!paths[i] || stat(paths[i], &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        f->is_binary = is_binary_path(paths[i]);
        if (!hash_file(ctx, paths[i], f->hash, f->is_binary ? NULL : &f->copy, &f->len))
            continue;
        if (!(f->path = strdup(paths[i]))) {
            kopt__guard_free(g);
            return kopt_seterr(ctx, KOPT_E_NOMEM, "file guard");
        }
        g->n++;
    }
    g->cap = n + 2;
    *out = g;
    return KOPT_OK;
}

kopt_status kopt__guard_store(kopt__file_guard *g, kopt_ctx *ctx, const char *path)
{
    guarded *f;
    struct stat st;

    if (!g || !path || stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return KOPT_OK;
    if (g->n >= g->cap)
        return kopt_seterr(ctx, KOPT_E_INVALID, "file guard: full");
    f = &g->f[g->n];
    f->is_store = 1;
    f->commits = kopt_store_commits();
    if (!hash_file(ctx, path, f->hash, NULL, NULL))
        return KOPT_OK;
    if (!(f->path = strdup(path)))
        return kopt_seterr(ctx, KOPT_E_NOMEM, "file guard");
    g->n++;
    return KOPT_OK;
}

/* The parent of process `pid` (from /proc/PID/stat; -1 when it cannot be read). */
static long parent_of(long pid)
{
    char path[64], buf[512], *close_paren;
    long ppid = -1;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    if (!(f = fopen(path, "r")))
        return -1;
    /* "PID (COMM) STATE PPID ...": COMM may hold spaces and parentheses, so from the last ')' */
    if (fgets(buf, sizeof(buf), f) && (close_paren = strrchr(buf, ')')) != NULL)
        sscanf(close_paren + 1, " %*c %ld", &ppid);
    fclose(f);
    return ppid;
}

/* 1 when process `pid` has `real` or `wal` among its open files. */
static int has_open(long pid, const char *real, const char *wal)
{
    char fds[64], link[PATH_MAX], target[PATH_MAX];
    struct dirent *fe;
    int found = 0;
    DIR *d;

    snprintf(fds, sizeof(fds), "/proc/%ld/fd", pid);
    if (!(d = opendir(fds)))
        return 0;
    while (!found && (fe = readdir(d)) != NULL) {
        ssize_t n;
        if (fe->d_name[0] == '.')
            continue;
        snprintf(link, sizeof(link), "%s/%s", fds, fe->d_name);
        if ((n = readlink(link, target, sizeof(target) - 1)) <= 0)
            continue;
        target[n] = '\0';
        found = strcmp(target, real) == 0 || strcmp(target, wal) == 0;
    }
    closedir(d);
    return found;
}

/* Another process that has the store `path` (or its -wal) open: not this one, nor a child of
 * it (the candidate's worker is one; after its lockdown it can start no process). Its pid,
 * or 0 when none is seen (only the processes /proc lets us read). */
static long other_opener(const char *path)
{
    char real[PATH_MAX], wal[PATH_MAX + 8];
    long self = (long)getpid(), found = 0;
    struct dirent *e;
    DIR *proc;

    if (!realpath(path, real) || !(proc = opendir("/proc")))
        return 0;
    snprintf(wal, sizeof(wal), "%s-wal", real);
    while (!found && (e = readdir(proc)) != NULL) {
        long pid = atol(e->d_name);
        /* the parent is read only for a process that has the store open */
        if (e->d_name[0] >= '1' && e->d_name[0] <= '9' && pid != self &&
            has_open(pid, real, wal) && parent_of(pid) != self)
            found = pid;
    }
    closedir(proc);
    return found;
}

int kopt__guard_end(kopt__file_guard *g, char *msg, size_t cap)
{
    kopt_ctx *ctx = kopt_ctx_new();
    int changed = 0;
    size_t at = 0;

    if (cap)
        msg[0] = '\0';
    for (int i = 0; g && i < g->n; i++) {
        guarded *f = &g->f[i];
        char now[65];
        const char *fate;
        if (ctx && kopt_file_sha256(ctx, f->path, now) == KOPT_OK && strcmp(now, f->hash) == 0)
            continue;
        if (f->is_store && kopt_store_commits() != f->commits)
            continue;                /* kopt wrote to it meanwhile: its change, not the candidate's */
        if (f->is_store && other_opener(f->path) > 0)
            continue;                /* another process has it open: its change can't be told
                                      * from the candidate's, so none is called tampering */
        if (f->is_store) {
            fate = "changed; a store is not rolled back: check it";
        } else if (f->is_binary) {
            fate = unlink(f->path) == 0 ? "deleted, to be rebuilt" : "could not be deleted";
        } else if (f->copy) {
            fate = ctx && kopt_file_write(ctx, f->path, f->copy, f->len) == KOPT_OK
                       ? "restored" : "could not be restored";
        } else {
            fate = "too large to restore: check it";
        }
        if (at < cap)
            at += (size_t)snprintf(msg + at, cap - at, "%s%s (%s)", changed ? "; " : "", f->path,
                                   fate);
        changed++;
    }
    kopt_ctx_free(ctx);
    return changed;
}

void kopt__guard_free(kopt__file_guard *g)
{
    if (!g)
        return;
    for (int i = 0; i < g->n; i++) {
        free(g->f[i].path);
        free(g->f[i].copy);
    }
    free(g->f);
    free(g);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

void kopt__rmtree(const char *dir)
{
    if (dir && dir[0])
        nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}
