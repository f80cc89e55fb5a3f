/*
 * kopt/device.h: what the GPU is and what it can do.
 *
 * kopt_device_query() asks a worker process (the caller never creates a CUDA context);
 * kopt_device_nvml() reads name, UUID and compute capability through NVML, which needs
 * no context, to choose the compile target. Ceilings (bandwidth, FLOP/s) are measured
 * once per device by microbenchmarks in a worker and kept in the store; spec-derived
 * values fill in what is not measured and are labeled as such.
 */
#ifndef KOPT_DEVICE_H
#define KOPT_DEVICE_H

#include "kopt/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kopt_device_info {
    int ordinal;
    char name[256];
    char uuid[64];
    int cc_major, cc_minor;
    int sm_count;
    int64_t total_mem;
    int l2_bytes;
    int max_threads_per_block, max_smem_per_block_optin, smem_per_sm, regs_per_sm;
    int max_threads_per_sm;
    int clock_khz, mem_clock_khz, mem_bus_width;
    int driver_version;
} kopt_device_info;

/* Index by kopt_compute (fp32, fp64, fp16, bf16, tf32, fp8, int): GFLOP/s. */
#define KOPT_NCOMPUTE 7
typedef struct kopt_ceilings {
    int valid;
    double dram_copy_gbs, dram_read_gbs, dram_write_gbs;   /* measured */
    double gflops[KOPT_NCOMPUTE];
    int measured[KOPT_NCOMPUTE];     /* 1: measured on this device; 0: spec-derived */
    char measured_at[32];            /* ISO time of the measurement */
} kopt_ceilings;

/* Name, UUID and compute capability of GPU `ordinal` through NVML (no CUDA context).
 * KOPT_E_NO_DEVICE when there is no driver or no such GPU. */
kopt_status kopt_device_nvml(kopt_ctx *ctx, int ordinal, kopt_device_info *out, int *count);

/* Full properties of GPU `ordinal`, from a worker process. */
kopt_status kopt_device_query(kopt_ctx *ctx, int ordinal, kopt_device_info *out);

/* Measure the device's ceilings in a worker (about a second). */
kopt_status kopt_device_measure(kopt_ctx *ctx, int ordinal, const char *cache_dir,
                                kopt_device_info *dev, kopt_ceilings *out);

/* Fill the compute rates not measured from the architecture's per-SM rates and the
 * device's clock (spec-derived; measured[] stays 0 for them). */
void kopt_ceilings_fill_spec(kopt_ceilings *c, const kopt_device_info *dev);

#ifdef __cplusplus
}
#endif
#endif
