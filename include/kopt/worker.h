/*
 * kopt/worker.h: which program runs kopt's GPU work. Evaluation, profiling and device
 * queries start a worker process (the calling process never creates a CUDA context): the
 * kopt-worker program installed with libkopt, or `kopt __worker`. Any program linking
 * libkopt finds it, looking in this order (the first that is an executable file wins):
 *   1. the path given to kopt_worker_set_path();
 *   2. $KOPT_WORKER;
 *   3. beside the running program: <its folder>/kopt-worker, then the program itself when
 *      it is kopt (`kopt __worker`);
 *   4. beside libkopt.so when the program uses the shared library: <its folder>/kopt-worker,
 *      then the install layout's libexec folder relative to it (<libdir>/../libexec/kopt);
 *   5. the install folder compiled in: <prefix>/libexec/kopt/kopt-worker;
 *   6. the build tree's kopt-worker (compiled in: tests and programs run from a build).
 * A path set by 1 or 2 that is not an executable file is an error, not a reason to look
 * further. Wrapped runs (compute-sanitizer, ncu) run the same program.
 *
 * Ownership: kopt_worker_set_path() copies its argument; kopt_worker_find()'s *path is
 * owned by the caller (free()) and its *source is a constant string.
 */
#ifndef KOPT_WORKER_H
#define KOPT_WORKER_H

#include "kopt/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Use `path` as the worker program, process-wide, from the next worker started on (NULL or
 * "": search again). KOPT_E_NOT_FOUND, leaving the setting as it was, when `path` is not
 * an executable file. Thread-safe. */
kopt_status kopt_worker_set_path(kopt_ctx *ctx, const char *path);

/* Find the worker program in the order above. On KOPT_OK *path is its absolute path and,
 * when `source` is not NULL, *source says which rule found it ("kopt_worker_set_path",
 * "KOPT_WORKER", "beside the program", "the kopt program", "beside libkopt",
 * "install prefix", "build tree"). KOPT_E_NOT_FOUND with a message naming every place it
 * looked. Logs the path at INFO level whenever it differs from the last one logged. */
kopt_status kopt_worker_find(kopt_ctx *ctx, char **path, const char **source);

/* The PyTorch worker (kopt_torch_worker.py: problems with a PyTorch reference, `kopt kb
 * import`), run by the Python of kopt_torch_python(). Looked for, the first readable file
 * winning: $KOPT_TORCH_WORKER; beside the running program; <libdir>/../libexec/kopt beside
 * libkopt.so; the install prefix's libexec/kopt; the source tree's libexec/. *path is the
 * caller's (free()). */
kopt_status kopt_torch_worker_find(kopt_ctx *ctx, char **path);
/* libkopt.so, which the PyTorch worker loads (ctypes) for kopt_sandbox_lockdown()
 * (kopt/sandbox.h). Looked for, the first readable file winning: $KOPT_LIB; the libkopt.so
 * the running program uses; beside the running program (a build tree); the install layout
 * relative to it (<bindir>/../lib); the install prefix's libdir; the build tree's. *path is
 * the caller's (free()). KOPT_E_NOT_FOUND with a message naming the places looked at. */
kopt_status kopt_lib_find(kopt_ctx *ctx, char **path);
/* $KOPT_PYTHON, or "python3" (looked up on PATH). */
const char *kopt_torch_python(void);

#ifdef __cplusplus
}
#endif
#endif
