/*
 * Internal: the sandbox of candidate code (sandbox.c; its lockdown is public in
 * kopt/sandbox.h) and the guard on the files a candidate could change (file_guard.c). See
 * docs/integrity.md for what each stops and what it does not.
 */
#ifndef KOPT_SANDBOX_INT_H
#define KOPT_SANDBOX_INT_H

#include "kopt/core.h"
#include "kopt/sandbox.h"

#include <jansson.h>
#include <limits.h>

#define KOPT_SANDBOX_EVENT_FD 3   /* the worker's event pipe (worker_int.h) */

typedef struct kopt__sandbox_limits {
    char tmpdir[PATH_MAX];        /* private working and temporary folder ("" = none) */
    double cpu_s;                 /* RLIMIT_CPU (0 = none) */
    double fsize_mb;              /* RLIMIT_FSIZE (0 = none) */
    int no_network;
} kopt__sandbox_limits;

/* In the forked child, before exec: folder, rlimits, no new privileges, no network, the
 * reaper of orphaned descendants. Sets KOPT_SANDBOX_NETWORK to what was achieved.
 * Async-signal-safe enough for a child of a single-threaded parent. */
void kopt__sandbox_enter(const kopt__sandbox_limits *lim);

/* In the worker, after CUDA is up, before the candidate runs: kopt_sandbox_lockdown()
 * (kopt/sandbox.h) with its report as a JSON object (what was applied goes into it). */
kopt_status kopt__sandbox_lockdown(kopt_ctx *ctx, const kopt_sandbox_opts *o, json_t *report);

/* ---- file guard (parent) ------------------------------------------------------------- */

typedef struct kopt__file_guard kopt__file_guard;
/* Record the content of each path (NULL entries and missing files are skipped). */
kopt_status kopt__guard_begin(kopt__file_guard **out, kopt_ctx *ctx, const char *const *paths,
                              int n);
/* Compare; restore changed text files we hold a copy of; delete changed cache binaries.
 * Returns the number changed and describes them in msg. */
/* Add a kopt store to the guard: it is never rolled back (a restore would lose what kopt
 * wrote meanwhile); a change while this process committed to a store (the pool's other
 * slots, the search's own writes) is kopt's; any other change is reported. */
kopt_status kopt__guard_store(kopt__file_guard *g, kopt_ctx *ctx, const char *path);
int kopt__guard_end(kopt__file_guard *g, char *msg, size_t cap);
void kopt__guard_free(kopt__file_guard *g);

/* Remove a folder and everything in it (the sandbox's temporary folder). */
void kopt__rmtree(const char *dir);

#endif
