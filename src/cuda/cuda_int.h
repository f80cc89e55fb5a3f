/*
 * Internal: run-time loaded CUDA libraries. One X-macro list per library expands into a
 * table of function pointers filled by dlopen/dlsym, so kopt starts (and does all its
 * static work) on a machine without a driver. The symbol names come from cuda.h's own
 * macros (cuMemAlloc -> "cuMemAlloc_v2"), stringified after expansion.
 */
#ifndef KOPT_CUDA_INT_H
#define KOPT_CUDA_INT_H

#include <cuda.h>
#include <curand.h>
#include <nvrtc.h>

#include "kopt/core.h"

#define KOPT_CU_FUNCS(X) \
    X(cuInit) X(cuDriverGetVersion) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName) \
    X(cuDeviceGetAttribute) X(cuDeviceTotalMem) X(cuDeviceGetUuid) \
    X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent) \
    X(cuCtxSynchronize) X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction) \
    X(cuFuncGetAttribute) X(cuFuncSetAttribute) X(cuLaunchKernel) X(cuMemAlloc) X(cuMemFree) \
    X(cuMemcpyDtoH) X(cuMemcpyHtoD) X(cuMemGetInfo) X(cuStreamCreate) X(cuStreamDestroy) \
    X(cuStreamSynchronize) X(cuEventCreate) X(cuEventRecord) X(cuEventSynchronize) \
    X(cuEventElapsedTime) X(cuEventDestroy) X(cuGetErrorName) X(cuGetErrorString) \
    X(cuStreamQuery) X(cuEventQuery) X(cuMemcpyDtoD) X(cuMemcpyDtoDAsync) X(cuMemsetD8) X(cuMemHostRegister) X(cuMemHostUnregister) X(cuMemcpyDtoHAsync) X(cuMemsetD8Async)

/* Optional (newer drivers): looked up but not required. */
#define KOPT_CU_OPTIONAL_FUNCS(X) X(cuFuncGetParamInfo)

#define KOPT_NVRTC_FUNCS(X) \
    X(nvrtcVersion) X(nvrtcCreateProgram) X(nvrtcDestroyProgram) X(nvrtcCompileProgram) \
    X(nvrtcGetProgramLogSize) X(nvrtcGetProgramLog) X(nvrtcGetCUBINSize) X(nvrtcGetCUBIN) \
    X(nvrtcAddNameExpression) X(nvrtcGetLoweredName) X(nvrtcGetErrorString)

#define KOPT_CURAND_FUNCS(X) \
    X(curandCreateGenerator) X(curandDestroyGenerator) X(curandSetPseudoRandomGeneratorSeed) \
    X(curandSetGeneratorOffset) X(curandSetStream) X(curandGenerateUniform) \
    X(curandGenerateUniformDouble) X(curandGenerateNormal) X(curandGenerateNormalDouble)

/* NVML has no header in the toolkit: the few calls we use, declared here. */
typedef int kopt_nvml_ret;
typedef void *kopt_nvml_device;
typedef struct kopt_nvml_api {
    kopt_nvml_ret (*nvmlInit_v2)(void);
    kopt_nvml_ret (*nvmlShutdown)(void);
    kopt_nvml_ret (*nvmlDeviceGetCount_v2)(unsigned *);
    kopt_nvml_ret (*nvmlDeviceGetHandleByIndex_v2)(unsigned, kopt_nvml_device *);
    kopt_nvml_ret (*nvmlDeviceGetName)(kopt_nvml_device, char *, unsigned);
    kopt_nvml_ret (*nvmlDeviceGetUUID)(kopt_nvml_device, char *, unsigned);
    kopt_nvml_ret (*nvmlDeviceGetCudaComputeCapability)(kopt_nvml_device, int *, int *);
    kopt_nvml_ret (*nvmlSystemGetDriverVersion)(char *, unsigned);
    /* optional (NULL when the driver lacks them) */
    kopt_nvml_ret (*nvmlDeviceGetHandleByUUID)(const char *, kopt_nvml_device *);
    kopt_nvml_ret (*nvmlDeviceGetTotalEnergyConsumption)(kopt_nvml_device, unsigned long long *);
    kopt_nvml_ret (*nvmlDeviceGetMigMode)(kopt_nvml_device, unsigned *, unsigned *);
} kopt_nvml_api;

#define KOPT_X_MEMBER(name) __typeof__(&name) name;
typedef struct kopt_cu_api {
    KOPT_CU_FUNCS(KOPT_X_MEMBER)
    KOPT_CU_OPTIONAL_FUNCS(KOPT_X_MEMBER)
} kopt_cu_api;
typedef struct kopt_nvrtc_api {
    KOPT_NVRTC_FUNCS(KOPT_X_MEMBER)
} kopt_nvrtc_api;
typedef struct kopt_curand_api {
    KOPT_CURAND_FUNCS(KOPT_X_MEMBER)
} kopt_curand_api;

/* Load each library once (thread-safe); on failure the message says what is missing. */
kopt_status kopt__cuda_load(kopt_ctx *ctx, const kopt_cu_api **out);
kopt_status kopt__nvrtc_load(kopt_ctx *ctx, const kopt_nvrtc_api **out);
/* The file of the NVRTC loaded (after kopt__nvrtc_load) written to path; NULL when none. */
const char *kopt__nvrtc_file(char *path, size_t size);
kopt_status kopt__curand_load(kopt_ctx *ctx, const kopt_curand_api **out);
kopt_status kopt__nvml_load(kopt_ctx *ctx, const kopt_nvml_api **out);

/* The folder of CUDA headers for NVRTC (cuda_fp16.h, ...), or NULL. */
const char *kopt__cuda_include_dir(void);
/* "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered" */
const char *kopt__cu_errstr(CUresult r, char *buf, size_t n);

/* Check a driver call; on failure set the message and jump to `label`. */
#define KOPT_CU(ctx, api, rc, label, call)                                              \
    do {                                                                                \
        CUresult kopt_r_ = (api)->call;                                                 \
        if (kopt_r_ != CUDA_SUCCESS) {                                                  \
            char kopt_b_[256];                                                          \
            (rc) = kopt_seterr((ctx), KOPT_E_CUDA, "%s: %s", #call,                     \
                               kopt__cu_errstr(kopt_r_, kopt_b_, sizeof(kopt_b_)));     \
            goto label;                                                                 \
        }                                                                               \
    } while (0)

#endif
