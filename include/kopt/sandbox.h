/*
 * kopt/sandbox.h: the lockdown of a process that is about to run untrusted code. kopt's C
 * worker applies it before it loads a host-mode candidate; kopt's PyTorch worker
 * (libexec/kopt_torch_sandbox.py) calls it through ctypes once the candidate's model is
 * built and before its forward runs. docs/integrity.md says what it stops and what not.
 *
 * kopt_sandbox_lockdown() is one-way: resource limits lowered, capabilities dropped, and a
 * seccomp filter installed on every thread of the process (SECCOMP_FILTER_FLAG_TSYNC) that
 * traps fork/vfork/clone of a process, execve/execveat, ptrace and process_vm_*,
 * kill/tgkill/tkill of other processes, sockets other than AF_UNIX/AF_NETLINK, and clock
 * changes (clone3 returns ENOSYS, so threads fall back to clone, which is allowed). A
 * trapped call never runs: the process writes a JSON "tamper" event naming it on fd 3 (the
 * worker's event pipe) and ends with exit code 97.
 *
 * Ownership: nothing is kept from the arguments (names and the hint are copied).
 */
#ifndef KOPT_SANDBOX_H
#define KOPT_SANDBOX_H

#include "kopt/core.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
    KOPT_SANDBOX_NO_WX = 1,           /* also trap making memory executable after the fact
                                       * (mprotect/pkey_mprotect with PROT_EXEC, writable and
                                       * executable mmap): native candidates, not PyTorch's
                                       * own code generators (oneDNN, the CUDA driver) */
    KOPT_SANDBOX_END_CHILDREN = 2     /* first end every process this one started that still
                                       * runs (they would run outside the filter) */
};

typedef struct kopt_sandbox_opts {
    double cpu_s;        /* RLIMIT_CPU: this many more CPU seconds from now (0: unchanged) */
    double fsize_mb;     /* RLIMIT_FSIZE from now on, in MiB (0: unchanged) */
    double as_extra_mb;  /* RLIMIT_AS at the current size plus this many MiB (0: none) */
    int32_t flags;       /* KOPT_SANDBOX_* */
    const char *hint;    /* appended to the tamper event's message (NULL: none) */
} kopt_sandbox_opts;

/* Lock this process down. `report` (cap bytes; NULL or 0 for none) receives a JSON object
 * saying what was applied ("seccomp", "capabilities_dropped", the limits, "network" as the
 * worker's start achieved it, "ended_processes"). KOPT_E_UNSUPPORTED when the kernel or
 * the architecture refuses the filter: the process is then NOT locked down, and says so. */
kopt_status kopt_sandbox_lockdown(kopt_ctx *ctx, const kopt_sandbox_opts *opts, char *report,
                                  size_t cap);

/* What kopt's worker start applies before the worker's program runs (in the child of its
 * fork, before exec; the PyTorch zygote's child, forked ready-imported, calls it through
 * ctypes): `tmpdir` (NULL or "": none) as working and temporary folder ($TMPDIR, $TMP,
 * $TEMP), RLIMIT_CPU of cpu_s seconds and RLIMIT_FSIZE of fsize_mb MiB (0: none), no core
 * dumps, no new privileges, this process the reaper of its orphaned descendants, and with
 * no_network a network namespace of its own ($KOPT_SANDBOX_NETWORK says what was had).
 * For a single-threaded process (a user namespace needs one). */
void kopt_sandbox_enter(const char *tmpdir, double cpu_s, double fsize_mb, int no_network);

/* Remember the first bytes of a function the harness relies on (a timer), at most 8. */
void kopt_sandbox_watch(const char *name, const void *code);

/* After a candidate's call: 1, with a message in msg, when a signal handler differs from
 * those at the lockdown or a watched function's first bytes changed; else 0. */
int kopt_sandbox_check(char *msg, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
