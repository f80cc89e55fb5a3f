/* Probe: which NVRTC does dlopen find, and does its program log carry ptxas's resource
 * report for --ptxas-options=-v? Build: cc -O2 -o nvrtc_log nvrtc_log.c -ldl
 * Run on the GPU machine: ./nvrtc_log [libnvrtc.so.N] [extra option...] */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>

typedef int (*create_fn)(void **, const char *, const char *, int, const char *const *,
                         const char *const *);
typedef int (*compile_fn)(void *, int, const char *const *);
typedef int (*logsize_fn)(void *, size_t *);
typedef int (*log_fn)(void *, char *);
typedef int (*version_fn)(int *, int *);

int main(int argc, char **argv)
{
    const char *lib = argc > 1 ? argv[1] : "libnvrtc.so.13";
    void *h = dlopen(lib, RTLD_NOW);
    struct link_map *lm = NULL;
    void *prog = NULL;
    const char *opts[8] = {"--gpu-architecture=sm_90a", "--ptxas-options=-v", "-lineinfo"};
    int nopt = 3, maj = 0, min = 0, rc;
    size_t n = 0;
    char *log;

    if (!h) {
        printf("dlopen %s: %s\n", lib, dlerror());
        return 1;
    }
    dlinfo(h, RTLD_DI_LINKMAP, &lm);
    ((version_fn)dlsym(h, "nvrtcVersion"))(&maj, &min);
    printf("loaded %s -> %s, NVRTC %d.%d\n", lib, lm ? lm->l_name : "?", maj, min);
    for (int i = 2; i < argc && nopt < 8; i++)
        opts[nopt++] = argv[i];
    ((create_fn)dlsym(h, "nvrtcCreateProgram"))(&prog,
        "extern \"C\" __global__ void k(float *x) { float a[64]; for (int i = 0; i < 64; i++) "
        "a[i] = x[i * threadIdx.x]; x[threadIdx.x] = a[threadIdx.x % 64]; }", "k.cu", 0, NULL, NULL);
    rc = ((compile_fn)dlsym(h, "nvrtcCompileProgram"))(prog, nopt, opts);
    ((logsize_fn)dlsym(h, "nvrtcGetProgramLogSize"))(prog, &n);
    log = calloc(n + 1, 1);
    ((log_fn)dlsym(h, "nvrtcGetProgramLog"))(prog, log);
    printf("compile rc %d, log %zu bytes:\n%s\n", rc, n, log);
    return 0;
}
