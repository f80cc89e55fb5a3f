/* dlopen/dlsym loader for libcuda, NVRTC, cuRAND and NVML (see cuda_int.h). */
#include "cuda_int.h"
#include "kopt/proc.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define KOPT_STR2(x) #x
#define KOPT_STR(x) KOPT_STR2(x)

typedef struct lib_state {
    pthread_once_t once;
    kopt_status status;
    char msg[512];
} lib_state;

static kopt_cu_api cu_api;
static kopt_nvrtc_api nvrtc_api;
static kopt_curand_api curand_api;
static kopt_nvml_api nvml_api;
static lib_state cu_state = {PTHREAD_ONCE_INIT, KOPT_OK, ""};
static lib_state nvrtc_state = {PTHREAD_ONCE_INIT, KOPT_OK, ""};
static lib_state curand_state = {PTHREAD_ONCE_INIT, KOPT_OK, ""};
static lib_state nvml_state = {PTHREAD_ONCE_INIT, KOPT_OK, ""};

/* Each name in the folders of a ':'-separated list (NULL: none); the handle or NULL. */
static void *open_in_list(const char *const *names, const char *list)
{
    char path[1024];
    void *h;

    while (list && *list) {
        size_t n = strcspn(list, ":");
        for (const char *const *nm = names; n > 0 && n < 900 && *nm; nm++) {
            snprintf(path, sizeof(path), "%.*s/%s", (int)n, list, *nm);
            if ((h = dlopen(path, RTLD_NOW | RTLD_LOCAL)))
                return h;
        }
        list += n + (list[n] == ':');
    }
    return NULL;
}

/* Try each name, then each name under $CUDA_HOME/lib64 and /usr/local/cuda/lib64, then in
 * $KOPT_CUDA_LIBS (the Python package sets it to NVIDIA's pip packages' lib folders:
 * nvidia-cuda-nvrtc, nvidia-curand) and in those packages beside an installed wheel
 * (site-packages/kopt/lib/libkopt.so.0: ../../nvidia/cu13/lib). */
static void *open_any(const char *const *names, lib_state *st)
{
    const char *home = getenv("CUDA_HOME");
    const char *dirs[] = {home, "/usr/local/cuda/lib64", "/usr/local/cuda/lib", NULL};
    const char *lib = kopt_self_lib();
    char path[1024];
    void *h;

    for (const char *const *n = names; *n; n++)
        if ((h = dlopen(*n, RTLD_NOW | RTLD_LOCAL)))
            return h;
    for (int d = 0; d < 3; d++) {
        if (!dirs[d])
            continue;
        for (const char *const *n = names; *n; n++) {
            snprintf(path, sizeof(path), d == 0 ? "%s/lib64/%s" : "%s/%s", dirs[d], *n);
            if ((h = dlopen(path, RTLD_NOW | RTLD_LOCAL)))
                return h;
        }
    }
    if ((h = open_in_list(names, getenv("KOPT_CUDA_LIBS"))))
        return h;
    if (lib && strlen(lib) < 800) {
        const char *slash = strrchr(lib, '/');
        int n = slash ? (int)(slash - lib) : 0;
        snprintf(path, sizeof(path), "%.*s/../../nvidia/cu13/lib:%.*s/../../nvidia/cuda_nvrtc/"
                 "lib:%.*s/../../nvidia/curand/lib", n, lib, n, lib, n, lib);
        if (slash && (h = open_in_list(names, path)))
            return h;
    }
    snprintf(st->msg, sizeof(st->msg), "cannot load %s", names[0]);
    st->status = KOPT_E_NO_DEVICE;
    return NULL;
}

static int sym(void *h, const char *name, void **slot, lib_state *st, int required)
{
    *slot = dlsym(h, name);
    if (!*slot && required) {
        snprintf(st->msg, sizeof(st->msg), "symbol %s missing from the library", name);
        st->status = KOPT_E_NO_DEVICE;
        return -1;
    }
    return 0;
}

static void load_cu(void)
{
    static const char *const names[] = {"libcuda.so.1", "libcuda.so", NULL};
    void *h = open_any(names, &cu_state);
    if (!h)
        return;
#define X(name) if (sym(h, KOPT_STR(name), (void **)&cu_api.name, &cu_state, 1)) return;
    KOPT_CU_FUNCS(X)
#undef X
#define X(name) sym(h, KOPT_STR(name), (void **)&cu_api.name, &cu_state, 0);
    KOPT_CU_OPTIONAL_FUNCS(X)
#undef X
}

/* The file of the library that holds `sym` (dladdr), written to path; NULL when not known. */
static const char *file_of(void *sym, char *path, size_t size)
{
    Dl_info info;

    if (!sym || size == 0 || !dladdr(sym, &info) || !info.dli_fname || !info.dli_fname[0])
        return NULL;
    snprintf(path, size, "%s", info.dli_fname);
    return path;
}

/* Its folder, written to dir: the folder's length, 0 when not known. */
static size_t folder_of(void *sym, char *dir, size_t size)
{
    char *slash = file_of(sym, dir, size) ? strrchr(dir, '/') : NULL;

    if (!slash)
        return 0;
    *slash = '\0';
    return (size_t)(slash - dir);
}

/* NVRTC opens its built-in headers' library (libnvrtc-builtins.so.13.X) by name when it
 * first compiles. NVIDIA's pip package of NVRTC 13.0 gives the library no search path to
 * its own folder, so where no toolkit is installed (or where the loader's cache names a
 * toolkit that is gone) every compile failed with NVRTC_ERROR_BUILTIN_OPERATION_FAILURE
 * (a driver-only H200 machine with PyTorch's nvidia/cu13/lib, 2026-11-27). Loading the
 * builtins of its version that lie beside the NVRTC we loaded, by path, first makes NVRTC's
 * load by name find them (the dynamic loader matches a loaded library's soname). */
static void preload_builtins(void)
{
    int major = 0, minor = 0;
    char dir[1024], path[1100];

    if (!folder_of((void *)nvrtc_api.nvrtcVersion, dir, sizeof(dir)) ||
        nvrtc_api.nvrtcVersion(&major, &minor) != NVRTC_SUCCESS)
        return;
    snprintf(path, sizeof(path), "%s/libnvrtc-builtins.so.%d.%d", dir, major, minor);
    if (access(path, R_OK) == 0)
        dlopen(path, RTLD_NOW | RTLD_LOCAL);   /* kept loaded for the process */
}

static void load_nvrtc(void)
{
    static const char *const names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so", NULL};
    void *h;

    /* Where a GPU driver is installed, NVRTC answers a compile it has seen before from the
     * driver's compute cache (~/.nv/ComputeCache) without running ptxas, and its log then
     * lacks the resource report (registers, shared memory, spills) that kopt parses: seen on
     * the H100 machine, 2026-11-25 ("0 registers"); NVIDIA/cuda-python#1124 reports the same.
     * kopt caches compiles itself, by content, so it turns the driver's cache off for the
     * compiles of this process (set once, before the first compile; an explicit setting by
     * the user is kept). */
    setenv("CUDA_CACHE_DISABLE", "1", 0);
    h = open_any(names, &nvrtc_state);
    if (!h)
        return;
#define X(name) if (sym(h, KOPT_STR(name), (void **)&nvrtc_api.name, &nvrtc_state, 1)) return;
    KOPT_NVRTC_FUNCS(X)
#undef X
    preload_builtins();
}

static void load_curand(void)
{
    static const char *const names[] = {"libcurand.so.10", "libcurand.so", NULL};
    void *h = open_any(names, &curand_state);
    if (!h)
        return;
#define X(name) if (sym(h, KOPT_STR(name), (void **)&curand_api.name, &curand_state, 1)) return;
    KOPT_CURAND_FUNCS(X)
#undef X
}

static void load_nvml(void)
{
    static const char *const names[] = {"libnvidia-ml.so.1", "libnvidia-ml.so", NULL};
    void *h = open_any(names, &nvml_state);
    if (!h)
        return;
#define X(name) if (sym(h, #name, (void **)&nvml_api.name, &nvml_state, 1)) return;
    X(nvmlInit_v2) X(nvmlShutdown) X(nvmlDeviceGetCount_v2) X(nvmlDeviceGetHandleByIndex_v2)
    X(nvmlDeviceGetName) X(nvmlDeviceGetUUID) X(nvmlDeviceGetCudaComputeCapability)
    X(nvmlSystemGetDriverVersion)
#undef X
    nvml_api.nvmlDeviceGetHandleByUUID =
        (__typeof__(nvml_api.nvmlDeviceGetHandleByUUID))dlsym(h, "nvmlDeviceGetHandleByUUID");
    nvml_api.nvmlDeviceGetTotalEnergyConsumption =
        (__typeof__(nvml_api.nvmlDeviceGetTotalEnergyConsumption))dlsym(
            h, "nvmlDeviceGetTotalEnergyConsumption");
    nvml_api.nvmlDeviceGetMigMode =
        (__typeof__(nvml_api.nvmlDeviceGetMigMode))dlsym(h, "nvmlDeviceGetMigMode");
}

static kopt_status finish(kopt_ctx *ctx, lib_state *st)
{
    if (st->status != KOPT_OK)
        return kopt_seterr(ctx, st->status, "%s", st->msg);
    return KOPT_OK;
}

kopt_status kopt__cuda_load(kopt_ctx *ctx, const kopt_cu_api **out)
{
    pthread_once(&cu_state.once, load_cu);
    *out = &cu_api;
    return finish(ctx, &cu_state);
}

kopt_status kopt__nvrtc_load(kopt_ctx *ctx, const kopt_nvrtc_api **out)
{
    pthread_once(&nvrtc_state.once, load_nvrtc);
    *out = &nvrtc_api;
    return finish(ctx, &nvrtc_state);
}

kopt_status kopt__curand_load(kopt_ctx *ctx, const kopt_curand_api **out)
{
    pthread_once(&curand_state.once, load_curand);
    *out = &curand_api;
    return finish(ctx, &curand_state);
}

kopt_status kopt__nvml_load(kopt_ctx *ctx, const kopt_nvml_api **out)
{
    pthread_once(&nvml_state.once, load_nvml);
    *out = &nvml_api;
    return finish(ctx, &nvml_state);
}

/* Found once for the process: compile threads call this at once, and rewriting a shared
 * buffer while another thread read it gave some compiles a torn "-I" option, which took the
 * next option (a -D param) as its folder: "compile errors" as if the params were missing,
 * and cache keys that differed for one configuration (tests/unit/test_tune_templates.c). */
static const char *include_dir;
static pthread_once_t include_once = PTHREAD_ONCE_INIT;

/* `lib`/../include when it holds cuda_fp16.h (NVIDIA's pip layout: nvidia/cu13/lib and
 * nvidia/cu13/include, the headers from nvidia-cuda-runtime): written to dir, 1. */
static int include_beside(const char *lib, size_t n, char *dir, size_t size)
{
    char probe[1200];
    struct stat st;

    if (n == 0 || n > 1000)
        return 0;
    snprintf(probe, sizeof(probe), "%.*s/../include/cuda_fp16.h", (int)n, lib);
    if (stat(probe, &st) != 0)
        return 0;
    snprintf(dir, size, "%.*s/../include", (int)n, lib);
    return 1;
}

/* Where no toolkit is installed, the CUDA headers of NVIDIA's pip packages: beside the NVRTC
 * loaded from them (a wheel's nvidia/cu13), or in $KOPT_CUDA_LIBS' folders (the Python
 * package's list; CUDA 12's packages have a folder each). 1 when found. */
static int pip_include(char *dir, size_t size)
{
    const char *list = getenv("KOPT_CUDA_LIBS");
    char nvrtc[1024];
    size_t n = nvrtc_state.status == KOPT_OK
                   ? folder_of((void *)nvrtc_api.nvrtcVersion, nvrtc, sizeof(nvrtc)) : 0;

    if (include_beside(nvrtc, n, dir, size))
        return 1;
    while (list && *list) {
        n = strcspn(list, ":");
        if (include_beside(list, n, dir, size))
            return 1;
        list += n + (list[n] == ':');
    }
    return 0;
}

const char *kopt__nvrtc_file(char *path, size_t size)
{
    return nvrtc_state.status == KOPT_OK ? file_of((void *)nvrtc_api.nvrtcVersion, path, size)
                                         : NULL;
}

static void find_include_dir(void)
{
    static char dir[1024];
    const char *home = getenv("CUDA_HOME");
    struct stat st;

    if (home) {
        snprintf(dir, sizeof(dir), "%s/include", home);
        if (stat(dir, &st) == 0) {
            include_dir = dir;
            return;
        }
    }
    if (stat("/usr/local/cuda/include/cuda_fp16.h", &st) == 0) {
        include_dir = "/usr/local/cuda/include";
        return;
    }
    if (pip_include(dir, sizeof(dir))) {
        include_dir = dir;
        return;
    }
#ifdef KOPT_CUDA_INCLUDE
    snprintf(dir, sizeof(dir), "%s", KOPT_CUDA_INCLUDE);
    if (stat(dir, &st) == 0)
        include_dir = dir;
#endif
}

const char *kopt__cuda_include_dir(void)
{
    pthread_once(&include_once, find_include_dir);
    return include_dir;
}

const char *kopt__cu_errstr(CUresult r, char *buf, size_t n)
{
    const char *name = NULL, *text = NULL;

    if (cu_state.status == KOPT_OK && cu_api.cuGetErrorName) {
        cu_api.cuGetErrorName(r, &name);
        cu_api.cuGetErrorString(r, &text);
    }
    snprintf(buf, n, "%s (%d): %s", name ? name : "CUDA error", (int)r, text ? text : "");
    return buf;
}
