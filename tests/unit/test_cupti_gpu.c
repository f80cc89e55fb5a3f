/*
 * GPU checks of the CUPTI adapter (src/profile/cupti.c): the range profiler on a kernel
 * whose counts are known (one FFMA per element; 4 bytes read and written per element),
 * and activity records of a known launch sequence. Skips ("skipped: no GPU") without a
 * driver or device, and says why when profiling is not permitted here.
 */
#include "ktest.h"

#include "../../src/profile/cupti_int.h"

#include <dlfcn.h>

/* The few driver and NVRTC calls used here, loaded by hand so that the test needs no CUDA
 * header (the test targets do not get the toolkit's include folder). */
typedef int cu_res;
typedef int cu_dev;
typedef void *cu_handle;
typedef unsigned long long cu_ptr;
#define CU_ATTR_CC_MAJOR 75
#define CU_ATTR_CC_MINOR 76

static struct {
    cu_res (*init)(unsigned);
    cu_res (*count)(int *);
    cu_res (*get)(cu_dev *, int);
    cu_res (*attr)(int *, int, cu_dev);
    cu_res (*retain)(cu_handle *, cu_dev);
    cu_res (*release)(cu_dev);
    cu_res (*set_current)(cu_handle);
    cu_res (*load)(cu_handle *, const void *);
    cu_res (*unload)(cu_handle);
    cu_res (*function)(cu_handle *, cu_handle, const char *);
    cu_res (*alloc)(cu_ptr *, size_t);
    cu_res (*mfree)(cu_ptr);
    cu_res (*memset8)(cu_ptr, unsigned char, size_t);
    cu_res (*launch)(cu_handle, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                     unsigned, cu_handle, void **, void **);
} cu;

static struct {
    int (*create)(cu_handle *, const char *, const char *, int, const char *const *,
                  const char *const *);
    int (*compile)(cu_handle, int, const char *const *);
    int (*cubin_size)(cu_handle, size_t *);
    int (*cubin)(cu_handle, char *);
    int (*destroy)(cu_handle *);
} nv;

static kopt_ctx *ctx;
static cu_handle cuctx, mod, f_scale, f_zero;
static cu_dev dev;
static cu_ptr x, y;
static int gpu_ready;

enum { N = 1 << 26, BLOCK = 256 };   /* 256 MiB per buffer: well beyond the L2 */

static const char *source =
    "extern \"C\" __global__ void kopt_scale(const float *x, float *y, int n)\n"
    "{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i] * 2.0f + 1.0f; }\n"
    "extern \"C\" __global__ void kopt_zero(float *y, int n)\n"
    "{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 0.0f; }\n";

static void *open_lib(const char *const *names)
{
    void *h;
    char path[256];

    for (int i = 0; names[i]; i++) {
        if ((h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL)))
            return h;
        snprintf(path, sizeof(path), "/usr/local/cuda/lib64/%s", names[i]);
        if ((h = dlopen(path, RTLD_NOW | RTLD_LOCAL)))
            return h;
    }
    return NULL;
}

static int load_libs(void)
{
    static const char *const cuda[] = {"libcuda.so.1", NULL};
    static const char *const nvrtc[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so", NULL};
    void *hc = open_lib(cuda), *hn = open_lib(nvrtc);
    int ok = 1;

    if (!hc || !hn)
        return 0;
#define SYM(h, slot, name) ok &= (*(void **)&(slot) = dlsym((h), (name))) != NULL
    SYM(hc, cu.init, "cuInit");
    SYM(hc, cu.count, "cuDeviceGetCount");
    SYM(hc, cu.get, "cuDeviceGet");
    SYM(hc, cu.attr, "cuDeviceGetAttribute");
    SYM(hc, cu.retain, "cuDevicePrimaryCtxRetain");
    SYM(hc, cu.release, "cuDevicePrimaryCtxRelease_v2");
    SYM(hc, cu.set_current, "cuCtxSetCurrent");
    SYM(hc, cu.load, "cuModuleLoadData");
    SYM(hc, cu.unload, "cuModuleUnload");
    SYM(hc, cu.function, "cuModuleGetFunction");
    SYM(hc, cu.alloc, "cuMemAlloc_v2");
    SYM(hc, cu.mfree, "cuMemFree_v2");
    SYM(hc, cu.memset8, "cuMemsetD8_v2");
    SYM(hc, cu.launch, "cuLaunchKernel");
    SYM(hn, nv.create, "nvrtcCreateProgram");
    SYM(hn, nv.compile, "nvrtcCompileProgram");
    SYM(hn, nv.cubin_size, "nvrtcGetCUBINSize");
    SYM(hn, nv.cubin, "nvrtcGetCUBIN");
    SYM(hn, nv.destroy, "nvrtcDestroyProgram");
#undef SYM
    return ok;
}

static int compile_and_load(void)
{
    cu_handle prog = NULL;
    char arch[64], *cubin = NULL;
    size_t size = 0;
    int major = 0, minor = 0, ok = 0;

    cu.attr(&major, CU_ATTR_CC_MAJOR, dev);
    cu.attr(&minor, CU_ATTR_CC_MINOR, dev);
    snprintf(arch, sizeof(arch), "--gpu-architecture=sm_%d%d", major, minor);
    const char *opts[] = {arch};
    if (nv.create(&prog, source, "cupti_test.cu", 0, NULL, NULL) != 0 ||
        nv.compile(prog, 1, opts) != 0 || nv.cubin_size(prog, &size) != 0 ||
        !(cubin = malloc(size)) || nv.cubin(prog, cubin) != 0)
        goto out;
    ok = cu.load(&mod, cubin) == 0 && cu.function(&f_scale, mod, "kopt_scale") == 0 &&
         cu.function(&f_zero, mod, "kopt_zero") == 0;
out:
    free(cubin);
    if (prog)
        nv.destroy(&prog);
    return ok;
}

/* Driver, device 0, primary context, module, buffers; 0 (and a skip) when not here. */
static int setup(void)
{
    int count = 0;

    if (gpu_ready > 0)
        return 1;
    if (gpu_ready < 0) {
        KTEST_SKIP("no GPU (or the setup failed above)");
        return 0;
    }
    gpu_ready = -1;
    if (!load_libs() || cu.init(0) != 0 || cu.count(&count) != 0 || count < 1) {
        KTEST_SKIP("no GPU");
        return 0;
    }
    if (!CHECK(cu.get(&dev, 0) == 0 && cu.retain(&cuctx, dev) == 0 &&
               cu.set_current(cuctx) == 0))
        return 0;
    if (!CHECK(compile_and_load()))
        return 0;
    if (!CHECK(cu.alloc(&x, (size_t)N * 4) == 0 && cu.alloc(&y, (size_t)N * 4) == 0 &&
               cu.memset8(x, 0, (size_t)N * 4) == 0))
        return 0;
    gpu_ready = 1;
    return 1;
}

static int launch(cu_handle f, int scale)
{
    int n = N;
    void *args_scale[] = {&x, &y, &n};
    void *args_zero[] = {&y, &n};
    return cu.launch(f, N / BLOCK, 1, 1, BLOCK, 1, 1, 0, NULL,
                     scale ? args_scale : args_zero, NULL) == 0;
}

static void test_range_profiler_counts(void)
{
    kopt__cupti_rp *rp = NULL;
    kopt_profile prof;
    int passes = 0;
    kopt_status rc;

    memset(&prof, 0, sizeof(prof));
    if (!setup())
        return;
    rc = kopt__cupti_rp_open(&rp, ctx, cuctx, 0, kopt_metrics_roofline, 4, &passes);
    if (rc == KOPT_E_UNSUPPORTED) {
        KTEST_SKIP("range profiler not available here");
        printf("  (%s)\n", kopt_errmsg(ctx));
        return;
    }
    if (!CHECK_EQ_INT(rc, KOPT_OK)) {
        printf("  %s\n", kopt_errmsg(ctx));
        return;
    }
    CHECK(passes >= 1 && passes <= 2);
    if (CHECK_EQ_INT(kopt__cupti_rp_begin(rp, ctx), KOPT_OK)) {
        CHECK(launch(f_scale, 1));
        CHECK(launch(f_zero, 0));
        if (!CHECK_EQ_INT(kopt__cupti_rp_end(rp, ctx, &prof), KOPT_OK))
            printf("  %s\n", kopt_errmsg(ctx));
    }
    if (CHECK_EQ_INT(prof.nkernels, 2)) {
        const kopt_kernel_profile *k = &prof.kernels[0];
        double bytes = (double)N * 4;
        double rd = kopt_metrics_value(&k->metrics, "dram__bytes_read.sum", -1);
        double wr = kopt_metrics_value(&k->metrics, "dram__bytes_write.sum", -1);
        printf("  %s: %.0f ns, read %.4g B, write %.4g B, FFMA %.0f, SM clock %.3g Hz; "
               "%d passes, %.1f ms\n", k->kernel,
               kopt_metrics_value(&k->metrics, "gpu__time_duration.sum", -1), rd, wr,
               kopt_metrics_value(&k->metrics,
                                  "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", -1),
               kopt_metrics_value(&k->metrics, "sm__cycles_elapsed.avg.per_second", -1),
               prof.passes, prof.collect_ms);
        /* auto ranges are named by their index on CUDA 13 / driver 580 (seen on an H200):
         * the caller names them from its launch order */
        CHECK(strstr(k->kernel, "kopt_scale") || strcmp(k->kernel, "0") == 0);
        CHECK(strstr(prof.kernels[1].kernel, "kopt_zero") || strcmp(prof.kernels[1].kernel, "1") == 0);
        CHECK(kopt_metrics_value(&k->metrics, "gpu__time_duration.sum", 0) > 0);
        CHECK(rd > 0.7 * bytes && rd < 1.3 * bytes);
        CHECK(wr > 0.7 * bytes && wr < 1.3 * bytes);
        CHECK_NEAR(kopt_metrics_value(&k->metrics,
                   "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", -1), (double)N, 0);
        CHECK_NEAR(kopt_metrics_value(&prof.kernels[1].metrics,
                   "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", -1), 0, 0);
        CHECK_EQ_STR(prof.source, "cupti");
        CHECK_EQ_INT(prof.passes, passes);
    }
    /* More launches than max_launches: CUPTI keeps the first max_launches ranges (seen on an
     * H200); never more, and the caller sizes max_launches from its launch plan. */
    if (CHECK_EQ_INT(kopt__cupti_rp_begin(rp, ctx), KOPT_OK)) {
        int before = prof.nkernels;
        for (int i = 0; i < 6; i++)
            launch(f_zero, 0);
        rc = kopt__cupti_rp_end(rp, ctx, &prof);
        printf("  6 launches with max 4: %s\n", rc == KOPT_OK ? "ok" : kopt_errmsg(ctx));
        CHECK(rc != KOPT_OK || (prof.nkernels - before >= 1 && prof.nkernels - before <= 6));
    }
    kopt__cupti_rp_close(rp);
    for (int i = 0; i < prof.nkernels; i++)
        kopt_metrics_clear(&prof.kernels[i].metrics);
    free(prof.kernels);
}

static void test_activity_names_in_order(void)
{
    char **names = NULL;
    int n = 0;
    kopt_status rc;

    if (!setup())
        return;
    rc = kopt__cupti_activity_begin(ctx);
    if (rc == KOPT_E_UNSUPPORTED) {
        KTEST_SKIP("activity tracing not available here");
        printf("  (%s)\n", kopt_errmsg(ctx));
        return;
    }
    if (!CHECK_EQ_INT(rc, KOPT_OK)) {
        printf("  %s\n", kopt_errmsg(ctx));
        return;
    }
    CHECK(launch(f_zero, 0));
    CHECK(launch(f_scale, 1));
    CHECK(launch(f_zero, 0));
    if (!CHECK_EQ_INT(kopt__cupti_activity_end(ctx, &names, &n), KOPT_OK))
        printf("  %s\n", kopt_errmsg(ctx));
    if (CHECK_EQ_INT(n, 3)) {
        CHECK_EQ_STR(names[0], "kopt_zero");
        CHECK_EQ_STR(names[1], "kopt_scale");
        CHECK_EQ_STR(names[2], "kopt_zero");
    }
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
    /* A second bracket starts empty. */
    if (CHECK_EQ_INT(kopt__cupti_activity_begin(ctx), KOPT_OK)) {
        CHECK(launch(f_scale, 1));
        CHECK_EQ_INT(kopt__cupti_activity_end(ctx, &names, &n), KOPT_OK);
        CHECK_EQ_INT(n, 1);
        for (int i = 0; i < n; i++)
            free(names[i]);
        free(names);
    }
}

int main(int argc, char **argv)
{
    static const ktest_case cases[] = {
        KTEST(test_activity_names_in_order),
        KTEST(test_range_profiler_counts),
    };
    int rc;

    ctx = kopt_ctx_new();
    rc = ktest_main(argc, argv, cases, KTEST_COUNT(cases));
    if (gpu_ready > 0) {
        cu.mfree(x);
        cu.mfree(y);
        cu.unload(mod);
        cu.release(dev);
    }
    kopt_ctx_free(ctx);
    /* nothing ran without a GPU: tell CTest (SKIP_RETURN_CODE 77) rather than pass */
    return rc == 0 && gpu_ready <= 0 ? 77 : rc;
}
