/*
 * CUPTI adapter (see cupti_int.h): kernel activity records, the Range Profiler and the
 * host-only pass count, over libcupti.so.13 loaded at run time through one X-macro table.
 *
 * Compiling as C: CUDA 13's cupti_profiler_host.h has a stray `#include <string>` (it uses
 * nothing from it), so this file, and only this file, gets src/profile/cupti_shim/ (an
 * empty `string`) on its include path (CMakeLists.txt, set_source_files_properties).
 * Without CUPTI's headers the file builds stubs that return KOPT_E_UNSUPPORTED.
 *
 * libcupti itself dlopens libnvperf_host.so / libnvperf_target.so; when libcupti is found
 * by path (not by the loader), those are preloaded from the same folder so its lookup by
 * soname finds them.
 */
#include "cupti_int.h"

#include <stdlib.h>
#include <string.h>

#if defined(__has_include)
#if __has_include(<cupti_profiler_host.h>) && __has_include(<cupti_range_profiler.h>) && \
    __has_include(<cupti_activity.h>)
#define KOPT_HAVE_CUPTI 1
#endif
#endif

#ifdef KOPT_HAVE_CUPTI

#include <cupti_activity.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_result.h>
#include <cupti_target.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/stat.h>

#include "../cuda/cuda_int.h"

/* ---- loading ------------------------------------------------------------------------ */

#define KOPT_CUPTI_FUNCS(X)                                                                  \
    X(cuptiGetResultString) X(cuptiProfilerInitialize) X(cuptiProfilerDeInitialize)          \
    X(cuptiDeviceGetChipName)                                                                \
    X(cuptiProfilerHostInitialize) X(cuptiProfilerHostDeinitialize)                          \
    X(cuptiProfilerHostConfigAddMetrics) X(cuptiProfilerHostGetConfigImageSize)              \
    X(cuptiProfilerHostGetConfigImage) X(cuptiProfilerHostGetNumOfPasses)                    \
    X(cuptiProfilerHostEvaluateToGpuValues) X(cuptiProfilerHostGetRangeName)                 \
    X(cuptiRangeProfilerEnable) X(cuptiRangeProfilerDisable) X(cuptiRangeProfilerSetConfig)  \
    X(cuptiRangeProfilerStart) X(cuptiRangeProfilerStop) X(cuptiRangeProfilerDecodeData)     \
    X(cuptiRangeProfilerGetCounterDataSize) X(cuptiRangeProfilerCounterDataImageInitialize)  \
    X(cuptiRangeProfilerGetCounterDataInfo)                                                  \
    X(cuptiActivityRegisterCallbacks) X(cuptiActivityEnable) X(cuptiActivityDisable)         \
    X(cuptiActivityFlushAll) X(cuptiActivityGetNextRecord) X(cuptiActivityGetNumDroppedRecords)

#define KOPT_CUPTI_MEMBER(name) __typeof__(&name) name;
typedef struct cupti_api {
    KOPT_CUPTI_FUNCS(KOPT_CUPTI_MEMBER)
} cupti_api;

static cupti_api api;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static kopt_status load_status = KOPT_OK;
static char load_msg[1024];

/* dlopen `file` in `dir` (or by name when dir is NULL). */
static void *open_in(const char *dir, const char *file, int flags)
{
    char path[1024];

    if (!dir)
        return dlopen(file, flags);
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    return dlopen(path, flags);
}

/* libcupti itself loads the nvperf libraries by soname; make those resolvable. */
static void preload_nvperf(const char *dir)
{
    if (!dir)
        return;
    open_in(dir, "libnvperf_host.so", RTLD_NOW | RTLD_GLOBAL);
    open_in(dir, "libnvperf_target.so", RTLD_NOW | RTLD_GLOBAL);
}

static void load_cupti(void)
{
    static const char *const dirs[] = {
        "/usr/local/cuda/lib64", "/usr/local/cuda/extras/CUPTI/lib64", "/usr/local/cuda/lib",
        "/usr/local/cuda/targets/x86_64-linux/lib", NULL};
    const char *env = getenv("KOPT_CUPTI");
    kopt_buf tried = KOPT_BUF_INIT;
    void *h = NULL;
    struct stat st;

    if (env && env[0]) {
        if (stat(env, &st) == 0 && S_ISDIR(st.st_mode)) {
            if ((h = open_in(env, "libcupti.so.13", RTLD_NOW | RTLD_LOCAL)))
                preload_nvperf(env);
        } else if ((h = dlopen(env, RTLD_NOW | RTLD_LOCAL))) {
            char *dir = kopt_path_dir(env);
            preload_nvperf(dir);
            free(dir);
        }
        if (!h)
            kopt_buf_printf(&tried, "$KOPT_CUPTI=%s (%s); ", env, dlerror());
    }
    if (!h && !(h = dlopen("libcupti.so.13", RTLD_NOW | RTLD_LOCAL)))
        kopt_buf_printf(&tried, "libcupti.so.13; ");
    for (int d = 0; !h && dirs[d]; d++) {
        if ((h = open_in(dirs[d], "libcupti.so.13", RTLD_NOW | RTLD_LOCAL)))
            preload_nvperf(dirs[d]);
        else
            kopt_buf_printf(&tried, "%s; ", dirs[d]);
    }
    if (!h) {
        snprintf(load_msg, sizeof(load_msg),
                 "cannot load libcupti.so.13 (set KOPT_CUPTI to the library or its folder); "
                 "tried %s", kopt_buf_cstr(&tried));
        load_status = KOPT_E_NO_DEVICE;
        kopt_buf_free(&tried);
        return;
    }
    kopt_buf_free(&tried);
#define X(name)                                                                               \
    if (!(*(void **)&api.name = dlsym(h, #name))) {                                           \
        snprintf(load_msg, sizeof(load_msg), "libcupti.so.13 lacks %s (CUPTI older than 12.6?)", \
                 #name);                                                                      \
        load_status = KOPT_E_NO_DEVICE;                                                       \
        return;                                                                               \
    }
    KOPT_CUPTI_FUNCS(X)
#undef X
}

#if defined(__SANITIZE_ADDRESS__)
#define KOPT_CUPTI_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KOPT_CUPTI_ASAN 1
#endif
#endif

/* Load libcupti. `perf`: the caller needs the profiler (host API, range profiler), for
 * which libcupti dlopens libnvperf_host.so with RTLD_DEEPBIND, which AddressSanitizer
 * aborts the process on: refused in such a build (activity tracing still works). */
static kopt_status load(kopt_ctx *ctx, int perf)
{
#ifdef KOPT_CUPTI_ASAN
    if (perf)
        return kopt_seterr(ctx, KOPT_E_UNSUPPORTED, "CUPTI profiling is unavailable in an "
                           "AddressSanitizer build (libcupti loads libnvperf_host.so with "
                           "RTLD_DEEPBIND, which ASan aborts on)");
#else
    (void)perf;
#endif
    pthread_once(&load_once, load_cupti);
    if (load_status != KOPT_OK)
        return kopt_seterr(ctx, load_status, "%s", load_msg);
    return KOPT_OK;
}

/* ---- errors --------------------------------------------------------------------------- */

/* Set the message for a failed CUPTI call `what`, with a hint for the failures a user can
 * fix (permissions, another profiler attached). */
static kopt_status cupti_fail(kopt_ctx *ctx, CUptiResult r, const char *what)
{
    const char *s = NULL;

    if (api.cuptiGetResultString)
        api.cuptiGetResultString(r, &s);
    if (!s)
        s = "unknown CUPTI error";
    switch (r) {
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
        return kopt_seterr(ctx, KOPT_E_UNSUPPORTED,
                           "%s: profiling permission denied: reading GPU performance counters "
                           "needs root or the driver option NVreg_RestrictProfilingToAdminUsers=0 "
                           "(CUPTI %d: %s)", what, (int)r, s);
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
    case CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED:
    case CUPTI_ERROR_HARDWARE_BUSY:
        return kopt_seterr(ctx, KOPT_E_UNSUPPORTED,
                           "%s: another profiler is attached to this process or owns the GPU's "
                           "counters (ncu, nsys, cuda-gdb, DCGM profiling): run kopt outside it "
                           "(CUPTI %d: %s)", what, (int)r, s);
    case CUPTI_ERROR_NOT_SUPPORTED:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED:
    case CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED:
        return kopt_seterr(ctx, KOPT_E_UNSUPPORTED, "%s: not supported on this device "
                           "(CUPTI %d: %s)", what, (int)r, s);
    case CUPTI_ERROR_INVALID_CHIP_NAME:
        return kopt_seterr(ctx, KOPT_E_INVALID, "%s: chip name not known to this CUPTI "
                           "(CUPTI %d: %s)", what, (int)r, s);
    case CUPTI_ERROR_OUT_OF_MEMORY:
        return kopt_seterr(ctx, KOPT_E_NOMEM, "%s: CUPTI %d: %s", what, (int)r, s);
    default:
        return kopt_seterr(ctx, KOPT_E_ERROR, "%s: CUPTI %d: %s", what, (int)r, s);
    }
}

/* Call api.fn(args); on failure set the message and jump to `label`. */
#define KOPT_CUPTI(ctx, rc, label, fn, ...)                                                  \
    do {                                                                                     \
        CUptiResult kopt_cr_ = api.fn(__VA_ARGS__);                                          \
        if (kopt_cr_ != CUPTI_SUCCESS) {                                                     \
            (rc) = cupti_fail((ctx), kopt_cr_, #fn);                                         \
            goto label;                                                                      \
        }                                                                                    \
    } while (0)

static size_t count_names(const char *const *names)
{
    size_t n = 0;
    while (names && names[n])
        n++;
    return n;
}

/* ---- host API: config image and pass count --------------------------------------------- */

typedef struct host_config {
    CUpti_Profiler_Host_Object *host;
    uint8_t *image;
    size_t image_size;
    size_t passes;
} host_config;

static void host_config_free(host_config *hc)
{
    if (hc->host) {
        CUpti_Profiler_Host_Deinitialize_Params p = {
            CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE, NULL, hc->host};
        api.cuptiProfilerHostDeinitialize(&p);
    }
    free(hc->image);
    memset(hc, 0, sizeof(*hc));
}

static kopt_status host_init(kopt_ctx *ctx, const char *chip, CUpti_Profiler_Host_Object **out)
{
    CUpti_Profiler_Host_Initialize_Params p;
    kopt_status rc = KOPT_OK;

    memset(&p, 0, sizeof(p));
    p.structSize = CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE;
    p.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    p.pChipName = chip;
    KOPT_CUPTI(ctx, rc, cleanup, cuptiProfilerHostInitialize, &p);
    *out = p.pHostObject;
cleanup:
    if (rc != KOPT_OK)
        kopt_adderr(ctx, rc, "chip %s", chip);
    return rc;
}

/* Which metric makes ConfigAddMetrics fail: try each alone in a fresh host object. */
static kopt_status name_bad_metric(kopt_ctx *ctx, const char *chip, const char *const *metrics,
                                   CUptiResult first)
{
    const char *s = NULL;
    kopt_buf bad = KOPT_BUF_INIT;
    kopt_status rc;

    for (size_t i = 0; metrics[i]; i++) {
        CUpti_Profiler_Host_Object *h = NULL;
        CUpti_Profiler_Host_ConfigAddMetrics_Params p;
        const char *one[1] = {metrics[i]};
        CUptiResult r;

        if (host_init(ctx, chip, &h) != KOPT_OK)
            break;
        memset(&p, 0, sizeof(p));
        p.structSize = CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE;
        p.pHostObject = h;
        p.ppMetricNames = one;
        p.numMetrics = 1;
        r = api.cuptiProfilerHostConfigAddMetrics(&p);
        {
            CUpti_Profiler_Host_Deinitialize_Params d = {
                CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE, NULL, h};
            api.cuptiProfilerHostDeinitialize(&d);
        }
        if (r != CUPTI_SUCCESS)
            kopt_buf_printf(&bad, "%s\"%s\"", bad.len ? ", " : "", metrics[i]);
    }
    api.cuptiGetResultString(first, &s);
    if (bad.len)
        rc = kopt_seterr(ctx, KOPT_E_INVALID, "metric%s %s not known on chip %s (CUPTI %d: %s)",
                         strchr(bad.ptr, ',') ? "s" : "", bad.ptr, chip, (int)first,
                         s ? s : "");
    else
        rc = kopt_seterr(ctx, KOPT_E_INVALID, "cuptiProfilerHostConfigAddMetrics: the metric "
                         "set is rejected on chip %s, though each metric alone is accepted "
                         "(CUPTI %d: %s)", chip, (int)first, s ? s : "");
    kopt_buf_free(&bad);
    return rc;
}

/* Build the config image of `metrics` on `chip` and count its passes. */
static kopt_status host_config_build(host_config *hc, kopt_ctx *ctx, const char *chip,
                                     const char *const *metrics)
{
    CUpti_Profiler_Host_ConfigAddMetrics_Params add;
    CUpti_Profiler_Host_GetConfigImageSize_Params size;
    CUpti_Profiler_Host_GetConfigImage_Params image;
    CUpti_Profiler_Host_GetNumOfPasses_Params passes;
    size_t n = count_names(metrics);
    kopt_status rc;
    CUptiResult r;

    memset(hc, 0, sizeof(*hc));
    if (n == 0)
        return kopt_seterr(ctx, KOPT_E_INVALID, "no metrics to collect");
    if ((rc = host_init(ctx, chip, &hc->host)) != KOPT_OK)
        goto cleanup;
    memset(&add, 0, sizeof(add));
    add.structSize = CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE;
    add.pHostObject = hc->host;
    add.ppMetricNames = (const char **)metrics;
    add.numMetrics = n;
    if ((r = api.cuptiProfilerHostConfigAddMetrics(&add)) != CUPTI_SUCCESS) {
        rc = name_bad_metric(ctx, chip, metrics, r);
        goto cleanup;
    }
    memset(&size, 0, sizeof(size));
    size.structSize = CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE;
    size.pHostObject = hc->host;
    KOPT_CUPTI(ctx, rc, cleanup, cuptiProfilerHostGetConfigImageSize, &size);
    if (!(hc->image = malloc(size.configImageSize ? size.configImageSize : 1))) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "CUPTI config image (%zu bytes)",
                         size.configImageSize);
        goto cleanup;
    }
    hc->image_size = size.configImageSize;
    memset(&image, 0, sizeof(image));
    image.structSize = CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE;
    image.pHostObject = hc->host;
    image.configImageSize = hc->image_size;
    image.pConfigImage = hc->image;
    KOPT_CUPTI(ctx, rc, cleanup, cuptiProfilerHostGetConfigImage, &image);
    memset(&passes, 0, sizeof(passes));
    passes.structSize = CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE;
    passes.configImageSize = hc->image_size;
    passes.pConfigImage = hc->image;
    KOPT_CUPTI(ctx, rc, cleanup, cuptiProfilerHostGetNumOfPasses, &passes);
    hc->passes = passes.numOfPasses;
cleanup:
    if (rc != KOPT_OK)
        host_config_free(hc);
    return rc;
}

kopt_status kopt__cupti_host_passes(kopt_ctx *ctx, const char *chip,
                                    const char *const *metrics, int *passes)
{
    host_config hc;
    kopt_status rc;

    if (!chip || !chip[0])
        return kopt_seterr(ctx, KOPT_E_INVALID, "no chip name (e.g. \"GH100\")");
    if ((rc = load(ctx, 1)) != KOPT_OK)
        return rc;
    if ((rc = host_config_build(&hc, ctx, chip, metrics)) != KOPT_OK)
        return rc;
    *passes = (int)hc.passes;
    host_config_free(&hc);
    return KOPT_OK;
}

/* ---- range profiler ------------------------------------------------------------------- */

struct kopt__cupti_rp {
    int profiler_initialized;
    CUcontext cu_context;
    CUpti_RangeProfiler_Object *object;
    host_config hc;
    char chip[64];
    const char **metrics;          /* NULL-terminated copy of the names */
    size_t nmetrics;
    int max_launches;
    uint8_t *counter_data;
    size_t counter_data_size;
    int started;
    double begin_ms;
    double step_ms[5];             /* last end: launches+sync, stop, decode, evaluate; begin */
};

static void free_names(const char **names)
{
    for (size_t i = 0; names && names[i]; i++)
        free((char *)names[i]);
    free(names);
}

kopt_status kopt__cupti_rp_open(kopt__cupti_rp **out, kopt_ctx *ctx, void *cu_context,
                                int device_ordinal, const char *const *metrics,
                                int max_launches, int *passes)
{
    CUpti_Profiler_Initialize_Params init = {CUpti_Profiler_Initialize_Params_STRUCT_SIZE, NULL};
    CUpti_Device_GetChipName_Params chip;
    CUpti_RangeProfiler_Enable_Params enable;
    CUpti_RangeProfiler_GetCounterDataSize_Params size;
    const kopt_cu_api *cu = NULL;
    kopt__cupti_rp *rp = NULL;
    kopt_status rc;

    *out = NULL;
    if (!cu_context || device_ordinal < 0 || max_launches < 1)
        return kopt_seterr(ctx, KOPT_E_INVALID, "range profiler: needs a CUDA context, a "
                           "device ordinal and max_launches >= 1 (got %d)", max_launches);
    if ((rc = kopt__cuda_load(ctx, &cu)) != KOPT_OK)
        return kopt_adderr(ctx, rc, "range profiler");
    if ((rc = load(ctx, 1)) != KOPT_OK)
        return rc;
    if (!(rp = calloc(1, sizeof(*rp))))
        return kopt_seterr(ctx, KOPT_E_NOMEM, "range profiler");
    rp->cu_context = (CUcontext)cu_context;
    rp->max_launches = max_launches;
    rp->nmetrics = count_names(metrics);
    if (!(rp->metrics = calloc(rp->nmetrics + 1, sizeof(*rp->metrics)))) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "range profiler");
        goto cleanup;
    }
    for (size_t i = 0; i < rp->nmetrics; i++)
        if (!(rp->metrics[i] = strdup(metrics[i]))) {
            rc = kopt_seterr(ctx, KOPT_E_NOMEM, "range profiler");
            goto cleanup;
        }

    KOPT_CUPTI(ctx, rc, cleanup, cuptiProfilerInitialize, &init);
    rp->profiler_initialized = 1;
    memset(&chip, 0, sizeof(chip));
    chip.structSize = CUpti_Device_GetChipName_Params_STRUCT_SIZE;
    chip.deviceIndex = (size_t)device_ordinal;
    KOPT_CUPTI(ctx, rc, cleanup, cuptiDeviceGetChipName, &chip);
    snprintf(rp->chip, sizeof(rp->chip), "%s", chip.pChipName ? chip.pChipName : "");
    if ((rc = host_config_build(&rp->hc, ctx, rp->chip, rp->metrics)) != KOPT_OK)
        goto cleanup;

    memset(&enable, 0, sizeof(enable));
    enable.structSize = CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE;
    enable.ctx = rp->cu_context;
    KOPT_CUPTI(ctx, rc, cleanup, cuptiRangeProfilerEnable, &enable);
    rp->object = enable.pRangeProfilerObject;

    memset(&size, 0, sizeof(size));
    size.structSize = CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE;
    size.pRangeProfilerObject = rp->object;
    size.pMetricNames = rp->metrics;
    size.numMetrics = rp->nmetrics;
    size.maxNumOfRanges = (size_t)max_launches;
    size.maxNumRangeTreeNodes = (uint32_t)max_launches;
    KOPT_CUPTI(ctx, rc, cleanup, cuptiRangeProfilerGetCounterDataSize, &size);
    rp->counter_data_size = size.counterDataSize;
    if (!(rp->counter_data = malloc(rp->counter_data_size ? rp->counter_data_size : 1))) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "CUPTI counter data (%zu bytes)",
                         rp->counter_data_size);
        goto cleanup;
    }
    if (passes)
        *passes = (int)rp->hc.passes;
    *out = rp;
    rp = NULL;
cleanup:
    kopt__cupti_rp_close(rp);
    return rc;
}

kopt_status kopt__cupti_rp_begin(kopt__cupti_rp *rp, kopt_ctx *ctx)
{
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params init;
    CUpti_RangeProfiler_SetConfig_Params config;
    CUpti_RangeProfiler_Start_Params start = {CUpti_RangeProfiler_Start_Params_STRUCT_SIZE,
                                              NULL, rp->object};
    kopt_status rc = KOPT_OK;

    if (rp->started)
        return kopt_seterr(ctx, KOPT_E_INVALID, "range profiler: begin twice without end");
    memset(&init, 0, sizeof(init));
    init.structSize = CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE;
    init.pRangeProfilerObject = rp->object;
    init.counterDataSize = rp->counter_data_size;
    init.pCounterData = rp->counter_data;
    KOPT_CUPTI(ctx, rc, cleanup, cuptiRangeProfilerCounterDataImageInitialize, &init);

    memset(&config, 0, sizeof(config));
    config.structSize = CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE;
    config.pRangeProfilerObject = rp->object;
    config.configSize = rp->hc.image_size;
    config.pConfig = rp->hc.image;
    config.counterDataImageSize = rp->counter_data_size;
    config.pCounterDataImage = rp->counter_data;
    config.range = CUPTI_AutoRange;
    config.replayMode = CUPTI_KernelReplay;
    config.maxRangesPerPass = (size_t)rp->max_launches;
    config.numNestingLevels = 1;
    config.minNestingLevel = 1;
    config.passIndex = 0;
    config.targetNestingLevel = 1;
    KOPT_CUPTI(ctx, rc, cleanup, cuptiRangeProfilerSetConfig, &config);
    rp->begin_ms = kopt_now_ms();
    rp->step_ms[4] = rp->begin_ms;
    KOPT_CUPTI(ctx, rc, cleanup, cuptiRangeProfilerStart, &start);
    rp->started = 1;
cleanup:
    return rc;
}

/* Append one kernel profile (range `index`) to `p`. */
static kopt_status append_range(kopt__cupti_rp *rp, kopt_ctx *ctx, size_t index,
                                kopt_profile *p, double *values)
{
    CUpti_Profiler_Host_GetRangeName_Params name;
    CUpti_Profiler_Host_EvaluateToGpuValues_Params eval;
    kopt_kernel_profile *k, *grown;
    kopt_status rc = KOPT_OK;

    memset(&name, 0, sizeof(name));
    name.structSize = CUpti_Profiler_Host_GetRangeName_Params_STRUCT_SIZE;
    name.pCounterDataImage = rp->counter_data;
    name.counterDataImageSize = rp->counter_data_size;
    name.rangeIndex = index;
    name.delimiter = "/";
    KOPT_CUPTI(ctx, rc, cleanup, cuptiProfilerHostGetRangeName, &name);

    memset(&eval, 0, sizeof(eval));
    eval.structSize = CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE;
    eval.pHostObject = rp->hc.host;
    eval.pCounterDataImage = rp->counter_data;
    eval.counterDataImageSize = rp->counter_data_size;
    eval.rangeIndex = index;
    eval.ppMetricNames = rp->metrics;
    eval.numMetrics = rp->nmetrics;
    eval.pMetricValues = values;
    KOPT_CUPTI(ctx, rc, cleanup, cuptiProfilerHostEvaluateToGpuValues, &eval);

    if (!(grown = realloc(p->kernels, (size_t)(p->nkernels + 1) * sizeof(*grown)))) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "profile");
        goto cleanup;
    }
    p->kernels = grown;
    k = &p->kernels[p->nkernels++];
    memset(k, 0, sizeof(*k));
    snprintf(k->kernel, sizeof(k->kernel), "%s", name.pRangeName ? name.pRangeName : "");
    for (size_t m = 0; m < rp->nmetrics; m++)
        if ((rc = kopt_metrics_set(&k->metrics, rp->metrics[m], values[m])) != KOPT_OK) {
            rc = kopt_seterr(ctx, rc, "profile");
            goto cleanup;
        }
cleanup:
    free((char *)name.pRangeName);   /* the header says the caller frees it */
    return rc;
}

kopt_status kopt__cupti_rp_end(kopt__cupti_rp *rp, kopt_ctx *ctx, kopt_profile *append_to)
{
    CUpti_RangeProfiler_Stop_Params stop;
    CUpti_RangeProfiler_DecodeData_Params decode;
    CUpti_RangeProfiler_GetCounterDataInfo_Params info;
    const kopt_cu_api *cu = NULL;
    double *values = NULL, t;
    kopt_status rc = KOPT_OK;

    if (!rp->started)
        return kopt_seterr(ctx, KOPT_E_INVALID, "range profiler: end without begin");
    if ((rc = kopt__cuda_load(ctx, &cu)) != KOPT_OK)
        return rc;
    /* A launch that faulted shows here; the session is then stopped by _close. */
    KOPT_CU(ctx, cu, rc, cleanup, cuCtxSynchronize());
    t = kopt_now_ms();
    rp->step_ms[0] = t - rp->begin_ms;

    memset(&stop, 0, sizeof(stop));
    stop.structSize = CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE;
    stop.pRangeProfilerObject = rp->object;
    rp->started = 0;
    KOPT_CUPTI(ctx, rc, cleanup, cuptiRangeProfilerStop, &stop);
    if (!stop.isAllPassSubmitted) {
        rc = kopt_seterr(ctx, KOPT_E_ERROR, "range profiler: not all %zu passes were "
                         "submitted (kernel replay should replay inside each launch)",
                         rp->hc.passes);
        goto cleanup;
    }
    rp->step_ms[1] = kopt_now_ms() - t;
    t = kopt_now_ms();
    memset(&decode, 0, sizeof(decode));
    decode.structSize = CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE;
    decode.pRangeProfilerObject = rp->object;
    KOPT_CUPTI(ctx, rc, cleanup, cuptiRangeProfilerDecodeData, &decode);
    if (decode.numOfRangeDropped) {
        rc = kopt_seterr(ctx, KOPT_E_ERROR, "range profiler: %zu launch(es) dropped: more "
                         "than max_launches = %d between begin and end",
                         decode.numOfRangeDropped, rp->max_launches);
        goto cleanup;
    }
    rp->step_ms[2] = kopt_now_ms() - t;
    t = kopt_now_ms();
    memset(&info, 0, sizeof(info));
    info.structSize = CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE;
    info.pCounterDataImage = rp->counter_data;
    info.counterDataImageSize = rp->counter_data_size;
    KOPT_CUPTI(ctx, rc, cleanup, cuptiRangeProfilerGetCounterDataInfo, &info);

    if (!(values = calloc(rp->nmetrics ? rp->nmetrics : 1, sizeof(*values)))) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "metric values");
        goto cleanup;
    }
    for (size_t i = 0; i < info.numTotalRanges; i++)
        if ((rc = append_range(rp, ctx, i, append_to, values)) != KOPT_OK)
            goto cleanup;
    rp->step_ms[3] = kopt_now_ms() - t;
    append_to->passes = (int)rp->hc.passes;
    append_to->collect_ms += kopt_now_ms() - rp->begin_ms;
    if (!append_to->source[0])
        snprintf(append_to->source, sizeof(append_to->source), "cupti");
cleanup:
    free(values);
    return rc;
}

void kopt__cupti_rp_steps(const kopt__cupti_rp *rp, double out[4])
{
    for (int i = 0; i < 4; i++)
        out[i] = rp ? rp->step_ms[i] : 0;
}

void kopt__cupti_rp_close(kopt__cupti_rp *rp)
{
    if (!rp)
        return;
    if (rp->object) {
        if (rp->started) {
            CUpti_RangeProfiler_Stop_Params stop = {
                CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE, NULL, rp->object, 0, 0, 0};
            api.cuptiRangeProfilerStop(&stop);
        }
        CUpti_RangeProfiler_Disable_Params d = {CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE,
                                                NULL, rp->object};
        api.cuptiRangeProfilerDisable(&d);
    }
    host_config_free(&rp->hc);
    if (rp->profiler_initialized) {
        CUpti_Profiler_DeInitialize_Params d = {CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE,
                                                NULL};
        api.cuptiProfilerDeInitialize(&d);
    }
    free(rp->counter_data);
    free_names(rp->metrics);
    free(rp);
}

/* ---- activity records ----------------------------------------------------------------- */

/* CUPTI hands buffers back on its own thread and its callbacks carry no user pointer, so
 * the recording lives here, guarded by a mutex. */
typedef struct kernel_rec {
    uint32_t correlation;
    uint64_t start;
    char *name;
} kernel_rec;

static struct {
    pthread_mutex_t mu;
    int active;
    int callbacks_registered;
    kernel_rec *recs;
    size_t n, cap;
    int nomem;
    size_t dropped;
} act = {PTHREAD_MUTEX_INITIALIZER, 0, 0, NULL, 0, 0, 0, 0};

#define ACTIVITY_BUFFER_BYTES (1u << 20)
#define ACTIVITY_ALIGN 8

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    *buffer = aligned_alloc(ACTIVITY_ALIGN, ACTIVITY_BUFFER_BYTES);
    *size = *buffer ? ACTIVITY_BUFFER_BYTES : 0;
    *max_records = 0;
    if (!*buffer) {
        pthread_mutex_lock(&act.mu);
        act.nomem = 1;
        pthread_mutex_unlock(&act.mu);
    }
}

static void add_record(uint32_t correlation, uint64_t start, const char *name)
{
    if (act.n == act.cap) {
        size_t cap = act.cap ? act.cap * 2 : 64;
        kernel_rec *r = realloc(act.recs, cap * sizeof(*r));
        if (!r) {
            act.nomem = 1;
            return;
        }
        act.recs = r;
        act.cap = cap;
    }
    act.recs[act.n].correlation = correlation;
    act.recs[act.n].start = start;
    if (!(act.recs[act.n].name = strdup(name ? name : "?"))) {
        act.nomem = 1;
        return;
    }
    act.n++;
}

static void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream, uint8_t *buffer,
                                      size_t size, size_t valid)
{
    CUpti_Activity *rec = NULL;
    size_t dropped = 0;

    (void)size;
    pthread_mutex_lock(&act.mu);
    while (valid && api.cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
        if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ||
            rec->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
            const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
            if (act.active)
                add_record(k->correlationId, k->start, k->name);
        }
    }
    if (api.cuptiActivityGetNumDroppedRecords(context, stream, &dropped) == CUPTI_SUCCESS)
        act.dropped += dropped;
    pthread_mutex_unlock(&act.mu);
    free(buffer);
}

static void clear_records(void)
{
    for (size_t i = 0; i < act.n; i++)
        free(act.recs[i].name);
    free(act.recs);
    act.recs = NULL;
    act.n = act.cap = 0;
    act.nomem = 0;
    act.dropped = 0;
}

static int by_launch(const void *a, const void *b)
{
    const kernel_rec *x = a, *y = b;
    if (x->correlation != y->correlation)
        return x->correlation < y->correlation ? -1 : 1;
    return x->start < y->start ? -1 : x->start > y->start;
}

kopt_status kopt__cupti_activity_begin(kopt_ctx *ctx)
{
    const kopt_cu_api *cu = NULL;
    kopt_status rc;
    int busy, registered;

    /* Without a driver CUPTI only says CUPTI_ERROR_UNKNOWN: say what is missing. */
    if ((rc = kopt__cuda_load(ctx, &cu)) != KOPT_OK)
        return kopt_adderr(ctx, rc, "kernel activity tracing");
    if ((rc = load(ctx, 0)) != KOPT_OK)
        return rc;
    pthread_mutex_lock(&act.mu);
    busy = act.active;
    registered = act.callbacks_registered;
    if (!busy) {
        clear_records();
        act.active = 1;
    }
    pthread_mutex_unlock(&act.mu);
    if (busy)
        return kopt_seterr(ctx, KOPT_E_INVALID, "activity recording already started");
    if (!registered) {
        KOPT_CUPTI(ctx, rc, cleanup, cuptiActivityRegisterCallbacks, buffer_requested,
                   buffer_completed);
        pthread_mutex_lock(&act.mu);
        act.callbacks_registered = 1;
        pthread_mutex_unlock(&act.mu);
    }
    KOPT_CUPTI(ctx, rc, cleanup, cuptiActivityEnable, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    return KOPT_OK;
cleanup:
    pthread_mutex_lock(&act.mu);
    act.active = 0;
    pthread_mutex_unlock(&act.mu);
    return kopt_adderr(ctx, rc, "kernel activity tracing");
}

kopt_status kopt__cupti_activity_end(kopt_ctx *ctx, char ***names, int *n)
{
    const kopt_cu_api *cu = NULL;
    kopt_status rc = KOPT_OK;
    char **out = NULL;
    size_t count = 0;
    int active;

    *names = NULL;
    *n = 0;
    pthread_mutex_lock(&act.mu);
    active = act.active;
    pthread_mutex_unlock(&act.mu);
    if (!active)
        return kopt_seterr(ctx, KOPT_E_INVALID, "activity recording not started");
    /* Kernels still running have no end time yet: finish them first. No current
     * context (nothing launched) is fine. */
    if (kopt__cuda_load(ctx, &cu) == KOPT_OK)
        cu->cuCtxSynchronize();
    KOPT_CUPTI(ctx, rc, cleanup, cuptiActivityFlushAll, CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    KOPT_CUPTI(ctx, rc, cleanup, cuptiActivityDisable, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);

    pthread_mutex_lock(&act.mu);
    act.active = 0;
    if (act.nomem) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "kernel activity records");
    } else if (act.dropped) {
        rc = kopt_seterr(ctx, KOPT_E_ERROR, "CUPTI dropped %zu kernel activity record(s)",
                         act.dropped);
    } else if (act.n && !(out = calloc(act.n, sizeof(*out)))) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "kernel activity records");
    } else {
        qsort(act.recs, act.n, sizeof(*act.recs), by_launch);
        for (size_t i = 0; i < act.n; i++) {
            out[i] = act.recs[i].name;   /* ownership moves to the caller */
            act.recs[i].name = NULL;
        }
        count = act.n;
    }
    clear_records();
    pthread_mutex_unlock(&act.mu);
    if (rc == KOPT_OK) {
        *names = out;
        *n = (int)count;
    }
    return rc;
cleanup:
    pthread_mutex_lock(&act.mu);
    act.active = 0;
    clear_records();
    pthread_mutex_unlock(&act.mu);
    api.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    return rc;
}

#else /* !KOPT_HAVE_CUPTI: built without CUPTI's headers */

static kopt_status no_cupti(kopt_ctx *ctx)
{
    return kopt_seterr(ctx, KOPT_E_UNSUPPORTED,
                       "kopt was built without CUPTI's headers (cupti_profiler_host.h)");
}

kopt_status kopt__cupti_activity_begin(kopt_ctx *ctx) { return no_cupti(ctx); }

kopt_status kopt__cupti_activity_end(kopt_ctx *ctx, char ***names, int *n)
{
    *names = NULL;
    *n = 0;
    return no_cupti(ctx);
}

kopt_status kopt__cupti_rp_open(kopt__cupti_rp **out, kopt_ctx *ctx, void *cu_context,
                                int device_ordinal, const char *const *metrics,
                                int max_launches, int *passes)
{
    *out = NULL;
    return no_cupti(ctx);
}

kopt_status kopt__cupti_rp_begin(kopt__cupti_rp *rp, kopt_ctx *ctx) { return no_cupti(ctx); }

kopt_status kopt__cupti_rp_end(kopt__cupti_rp *rp, kopt_ctx *ctx, kopt_profile *append_to)
{
    return no_cupti(ctx);
}

void kopt__cupti_rp_close(kopt__cupti_rp *rp) { (void)rp; }
void kopt__cupti_rp_steps(const kopt__cupti_rp *rp, double out[4])
{
    (void)rp;
    for (int i = 0; i < 4; i++)
        out[i] = 0;
}

kopt_status kopt__cupti_host_passes(kopt_ctx *ctx, const char *chip,
                                    const char *const *metrics, int *passes)
{
    return no_cupti(ctx);
}

#endif
