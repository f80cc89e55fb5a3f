/*
 * kopt/compile.h: compiling candidates for a GPU architecture.
 *
 * Device mode: NVRTC to a cubin (-arch=sm_XX[a], -lineinfo, params as -D macros, the
 * candidate's options and include folders), with the kernels' resource use (registers,
 * shared memory, stack frame, spills) read from ptxas' verbose report, so it is known
 * without a GPU. Host mode: nvcc into a shared object exporting kopt_candidate_run.
 * Results are cached on disk by content (source, options, architecture, compiler version,
 * and the CUTLASS version for sources that include CuTe/CUTLASS headers, which are compiled
 * with its include folder: kopt/cute.h), so a repeated evaluation skips compilation.
 *
 * Ownership: kopt_compile() returns a kopt_compiled owned by the caller
 * (kopt_compiled_free). On KOPT_E_COMPILE the compiler log, with the offending source
 * lines quoted, is in kopt_errdetail(ctx).
 */
#ifndef KOPT_COMPILE_H
#define KOPT_COMPILE_H

#include "kopt/problem.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kopt_kernel_info {
    char name[256];          /* as written in the launch plan ("k<128>") */
    char lowered[512];       /* the symbol in the cubin */
    int registers;           /* per thread */
    int static_smem;         /* bytes per block */
    int stack_frame;         /* bytes per thread (local memory) */
    int spill_stores, spill_loads;   /* bytes */
    int barriers;
} kopt_kernel_info;

typedef struct kopt_compiled {
    char key[65];            /* cache key */
    char arch[24];           /* "sm_90a" */
    int host_mode;
    char *binary_path;       /* cubin or .so in the cache */
    char *log;               /* compiler output (warnings, ptxas report) */
    int nkernels;
    kopt_kernel_info *kernels;
    int cache_hit;
    double compile_ms;       /* 0 on a cache hit */
    char compiler[64];       /* "nvrtc 13.0" / "nvcc" */
} kopt_compiled;

typedef struct kopt_compile_opts {
    int version;
    const char *arch;        /* NULL: "sm_90a" */
    const char *cache_dir;   /* NULL: kopt_cache_dir() */
    int no_cache;            /* compile even when cached */
    const char *cutlass_dir; /* NULL: $CUTLASS_PATH, then the Python package (kopt/cute.h);
                              * used only by sources that include <cute/...>/<cutlass/...> */
} kopt_compile_opts;
#define KOPT_COMPILE_OPTS_INIT {1, NULL, NULL, 0, NULL}

/* The architecture to build for a compute capability: "sm_90a" for 9.0, "sm_80", ... */
void kopt_arch_for_cc(int major, int minor, char out[24]);

kopt_status kopt_compile(kopt_compiled **out, kopt_ctx *ctx, const kopt_candidate *cand,
                         const kopt_compile_opts *opts);
void kopt_compiled_free(kopt_compiled *c);
/* Find the info of a kernel by its launch-plan name; NULL if absent. */
const kopt_kernel_info *kopt_compiled_kernel(const kopt_compiled *c, const char *name);

/* Compile helpers, process-wide and opt-in: with n > 0 each NVRTC call goes to one of up to
 * n helper processes (the worker program, kopt/worker.h), which run in parallel; 0 (the
 * default) compiles in the calling thread. $KOPT_COMPILE_PROCS, when set, overrides every
 * setting (0 turns helpers off). Helpers start when first needed and stop when n drops (or
 * at exit); a helper that cannot start or fails is logged once and the call compiled in
 * this process. Returns the previous setting. Thread-safe. */
int kopt_compile_procs_set(int n);
/* How many compile helpers are running now (tests, diagnostics). */
int kopt_compile_procs_running(void);

/* The version of the NVRTC kopt loads (KOPT_E_NO_DEVICE when it cannot be loaded). */
kopt_status kopt_compile_nvrtc_version(kopt_ctx *ctx, int *major, int *minor);

/* The file of the NVRTC kopt loads (a toolkit's, or the nvidia-cuda-nvrtc package's beside
 * an installed wheel): written to path (n bytes), "" when the loader cannot tell. */
kopt_status kopt_compile_nvrtc_path(kopt_ctx *ctx, char *path, size_t n);

/* The folder holding kopt/candidate.h (the host-mode candidate ABI) that host-mode compiles
 * give nvcc (-I): the first of $KOPT_INCLUDE_DIR, the running program's ../include, the
 * include folder beside libkopt.so, the install prefix's, the source tree's (the last even
 * when it is missing: check before reading; docs/install.md). Borrowed, process-wide. */
const char *kopt_compile_include_dir(void);

/* Compile kopt's own helper kernels (input generation, poisoning, L2 flush, ceilings). */
kopt_status kopt_compile_runtime(kopt_compiled **out, kopt_ctx *ctx, const kopt_compile_opts *o);

/* The folder of kopt's prebuilt runtime kernels (a cubin per architecture and the hash of
 * the source they were built from) that this program finds, malloc'd into *dir;
 * KOPT_E_NOT_FOUND when there is none (the runtime is then compiled with NVRTC). */
kopt_status kopt_runtime_prebuilt_dir(kopt_ctx *ctx, char **dir);

/* Parse a ptxas verbose report into kernel infos matched by lowered name (exposed for
 * tests). Unknown kernels are ignored. */
void kopt_parse_ptxas_report(const char *log, kopt_kernel_info *kernels, int n);

#ifdef __cplusplus
}
#endif
#endif
