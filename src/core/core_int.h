/* Internal: what the core offers the other folders of libkopt but not its users. */
#ifndef KOPT_CORE_INT_H
#define KOPT_CORE_INT_H

#include "kopt/core.h"

/* ---- finding kopt's shipped files (src/core/shipped.c) ------------------------------------
 * The worker, the PyTorch worker, libkopt.so itself, the prebuilt runtime kernels, the prompt
 * templates and the headers a host-mode candidate includes are found the same way: $ENV
 * when set; then a list of places, each relative to the running program, relative to
 * libkopt.so (an installed or moved prefix), or a path compiled in (the install prefix, the
 * build or source tree), looked at in order. The compiled-in paths come from the callers,
 * which alone see them (CMakeLists.txt); the core knows no folder of its own. */

typedef enum kopt__shipped_at {
    KOPT__AT_PATH,          /* `path` as it is (a compiled-in path); skipped when NULL */
    KOPT__AT_EXE_DIR,       /* <the running program's folder>/<path> */
    KOPT__AT_LIB_DIR,       /* <libkopt.so's folder>/<path>; skipped when libkopt is linked in */
    KOPT__AT_EXE,           /* the running program itself, when its file name is `path` */
    KOPT__AT_LIB            /* libkopt.so itself (`path` unused); skipped when linked in */
} kopt__shipped_at;

typedef struct kopt__shipped_place {
    kopt__shipped_at at;
    const char *path;
    const char *source;     /* how the caller's log names this place, or NULL */
    int quiet;              /* 1: not named in the "looked at" list */
} kopt__shipped_place;

typedef struct kopt__shipped_spec {
    const char *what;       /* the error: "no <what> found (looked at <places>); <hint>"; */
    const char *hint;       /*   what NULL: no error is set (the caller has a fallback) */
    const char *env;        /* the variable that names it, or NULL */
    const char *unfit;      /* the error when $env names something unfit, "<env>=<value>
                             * <unfit>" ("is not a readable file"); NULL: $env is only the
                             * first place looked at, and the search goes on */
    int (*fits)(const char *path, void *arg);   /* whether `path` is the file sought */
    void *arg;
    const kopt__shipped_place *places;
    int nplaces;
} kopt__shipped_spec;

/* The first place (after $env) where spec->fits holds: its absolute path (realpath, or
 * the path as looked at when that fails; malloc'd) in *path and, when `source` is not
 * NULL, the place's source (spec->env for $env) in *source. KOPT_E_NOT_FOUND, with the
 * error above, when none does. `ctx` may be NULL when spec->what is. */
kopt_status kopt__find_shipped(kopt_ctx *ctx, const kopt__shipped_spec *spec, char **path,
                               const char **source);

/* Predicates for kopt__find_shipped (arg unused): a regular file that can be run / read. */
int kopt__is_runnable(const char *path, void *arg);
int kopt__is_readable(const char *path, void *arg);
/* `path`'s absolute form (realpath), or a copy when it cannot be resolved; malloc'd. */
char *kopt__absolute(const char *path);

/* ---- descriptors over a Unix socket (src/core/proc.c) ------------------------------------
 * Send `len` bytes of `buf` on `sock` with `nfds` (at most 8) descriptors attached
 * (SCM_RIGHTS): sendmsg's result (-1, errno set, on failure). kopt serve's client hands its
 * stdout and stderr this way, the PyTorch zygote's parent a worker's pipes and buffers. */
/* `name` as an NVIDIA CUDA wheel installs it (nvidia/cu13/bin, nvidia/cuda_NAME/bin,
 * nvidia/cu12/bin under any folder of python3's `nvidia` namespace package): a malloc'd
 * path, or NULL. Runs python3 (tens of ms): callers keep the answer. */
char *kopt__find_pip_program(kopt_ctx *ctx, const char *name);
long kopt__send_fds(int sock, const void *buf, size_t len, const int *fds, int nfds, int flags);
/* Receive up to `len` bytes from `sock` (recvmsg, EINTR retried, descriptors close-on-exec)
 * and the `nfds` (at most 8) descriptors sent with them into fds (each -1 unless exactly
 * nfds came): recvmsg's result (0 at EOF, -1 with errno on failure). */
long kopt__recv_fds(int sock, void *buf, size_t len, int *fds, int nfds);

#endif
