/* Internal: the compile paths shared by candidates, host mode and kopt's runtime kernels. */
#ifndef KOPT_COMPILE_INT_H
#define KOPT_COMPILE_INT_H

#include "kopt/compile.h"
#include "kopt/cute.h"
#include "cuda_int.h"

#include <sys/types.h>

typedef struct kopt__nvrtc_job {
    const char *source;
    const char *path;               /* for messages and the log */
    const char *dir;                /* include folder for relative includes, or NULL */
    const kopt_vars *params;        /* -D macros */
    const char *const *options;
    int noptions;
    const char *const *includes;
    int nincludes;
    const char **names;             /* kernel name expressions */
    int nnames;
    const char *cutlass_include;    /* CuTe/CUTLASS include folder, or NULL */
    const char *cutlass_version;    /* its version (cache key), or NULL */
} kopt__nvrtc_job;

kopt_status kopt__compile_nvrtc(kopt_compiled **out, kopt_ctx *ctx, const kopt__nvrtc_job *job,
                                const kopt_compile_opts *o);
kopt_status kopt__compile_host(kopt_compiled **out, kopt_ctx *ctx, const kopt_candidate *cand,
                               const kopt_compile_opts *o, const kopt_cutlass *cl);
/* CUTLASS for a source that includes <cute/...> or <cutlass/...>: *cl is found (o's
 * cutlass_dir, $CUTLASS_PATH, the Python package) and *used set; otherwise *used is 0. */
kopt_status kopt__cutlass_for(kopt_ctx *ctx, const char *source, const kopt_compile_opts *o,
                              kopt_cutlass *cl, int *used);
void kopt__strv_free_n(int n, char **v);

/* One NVRTC call, in this process or in a compile helper (compile_procs.c). */
typedef struct kopt__nvrtc_req {
    const char *source;
    const char *name;               /* the program's name (the file's base name) */
    int argc;
    char **argv;                    /* options */
    const char **names;             /* name expressions to lower */
    int nnames;
} kopt__nvrtc_req;
typedef struct kopt__nvrtc_out {
    int result;                     /* nvrtcResult (-1: no program was created) */
    char *error;                    /* nvrtcGetErrorString's, on failure */
    char *log;                      /* the program log (ptxas' report included) */
    char **lowered;                 /* [nnames]: lowered names, NULL where NVRTC had none */
    void *cubin;                    /* NULL when NVRTC produced none */
    size_t size;
} kopt__nvrtc_out;
/* Run q: in a compile helper process when kopt_compile_procs_set()/$KOPT_COMPILE_PROCS
 * allow one, else (or when a helper fails) here. KOPT_OK means *o is filled (its result
 * may be a failure); free it with kopt__nvrtc_out_free. */
kopt_status kopt__nvrtc_build(kopt_ctx *ctx, const kopt_nvrtc_api *nv,
                              const kopt__nvrtc_req *q, kopt__nvrtc_out *o);
kopt_status kopt__nvrtc_build_here(const kopt_nvrtc_api *nv, const kopt__nvrtc_req *q,
                                   kopt__nvrtc_out *o);
void kopt__nvrtc_out_free(kopt__nvrtc_out *o, int nnames);
/* The helper's loop (`kopt-worker __worker --compile-helper`): requests on fd 0, replies on
 * fd 0, until EOF. */
int kopt__compile_helper_main(void);
/* The helper's loop on a socket (the zygote's forked helpers enter it directly); the
 * helpers' lower CPU priority ($KOPT_COMPILE_NICE, default 10). */
int kopt__compile_helper_serve(const kopt_nvrtc_api *nv, int fd);
void kopt__compile_lower_priority(void);
/* Read exactly n bytes from fd (EINTR retried): 0, or -1 at EOF or on an error. */
int kopt__fd_read_full(int fd, void *p, size_t n);
/* One request to the helper on fd and its reply into *o (compile_helper.c): nonzero when
 * the helper broke off. */
int kopt__compile_helper_call(int fd, const kopt__nvrtc_req *q, kopt__nvrtc_out *o);
/* Start argv[0] with one end of a new socket pair as its fd 0: its pid and our end. */
kopt_status kopt__spawn_on_socket(kopt_ctx *ctx, const char *what, char *const argv[],
                                  pid_t *pid, int *fd);
/* compile_zygote.c: `kopt-worker __worker --compile-zygote [--gpu-architecture=A]`, a
 * helper forked warm by it (started on first use), and stopping it. */
int kopt__compile_zygote_main(const char *arch);
kopt_status kopt__compile_zygote_fork(kopt_ctx *ctx, const char *worker, const char *arch,
                                      pid_t *pid, int *fd);
void kopt__compile_zygote_stop(void);
/* Add the names, sizes and modification times of the headers in `dir` to a cache key. */
void kopt__hash_headers(kopt_hash *h, const char *dir);
/* Before compiling what the cache lacks (compile_inflight.c): 1, this thread compiles `key`
 * (then kopt__compile_release); 0, another thread of this process compiled it meanwhile
 * (waited for): look in the cache again (and claim again if it is not there: that compile
 * failed). */
int kopt__compile_claim(const char *key);
void kopt__compile_release(const char *key);
/* Then, across processes that share the compile cache (a kopt serve and the step that sends
 * it candidates, each compiling ahead; two kopt bench runs): an exclusive lock on
 * "<binary_path>.lock" (flock), held while this process compiles and publishes the binary;
 * one that waited looks in the cache again. Two processes then never compile a candidate at
 * once, and none rewrites a binary another may be running: two nvcc runs of one source give
 * different bytes (nvcc names its temporary files in the .so), which the file guard of a
 * running host-mode candidate rightly calls a change (TAMPER). The descriptor (close it to
 * release), or -1 when no lock could be taken (then the compile goes on unlocked). */
int kopt__compile_lock(const char *binary_path);
/* "-L<nvcc's folder>/../lib" where nvcc is NVIDIA's pip package (cudart in ../lib, no
 * ../lib64), else NULL; malloc'd (compile_host.c). */
char *kopt__nvcc_pip_libs(const char *nvcc);
/* kopt's public include folder (for candidate.h), found next to the executable. */
const char *kopt__include_dir(void);

/* kopt's runtime kernels' source (runtime_kernels.c), for the build's prebuilt cubins. */
const char *kopt__runtime_source(void);
/* The build's or the install's prebuilt runtime cubin for `arch` (what kopt_compile_runtime
 * takes first), or NULL: no compiler runs (a worker started ahead loads it early). */
kopt_compiled *kopt__runtime_prebuilt(const char *arch);

#endif
