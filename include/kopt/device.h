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

/* Index by kopt_compute (fp32, fp64, fp16, bf16, tf32, fp8, int): GFLOP/s. Tensor-core
 * precisions (fp16..fp8) are dense rates with FP32 accumulation. gflops[fp64] is the
 * device's FP64 limit, the better of FMA and the FP64 tensor cores (DMMA): what no kernel
 * can beat (the SUSPECT guard); fp64_fma_gflops and fp64_tc_gflops name the two paths,
 * and a kernel without DMMA instructions is placed against the FMA rate (kopt__rates).
 * 0 means unknown (neither measured nor derivable). */
#define KOPT_NCOMPUTE 7
typedef struct kopt_ceilings {
    int valid;
    double dram_copy_gbs, dram_read_gbs, dram_write_gbs;   /* measured */
    double gflops[KOPT_NCOMPUTE];
    int measured[KOPT_NCOMPUTE];     /* 1: measured on this device; 0: spec-derived */
    char measured_at[32];            /* ISO time of the measurement */
    double l2_gbs, smem_gbs;         /* L2 read and shared-memory read bandwidth (all SMs) */
    int l2_measured, smem_measured;  /* 1: measured; 0: spec-derived (or 0 GB/s: unknown) */
    double fp64_fma_gflops;          /* FP64 FMA (DFMA) on the CUDA cores; 0: unknown */
    double fp64_tc_gflops;           /* FP64 tensor cores (DMMA, sm_80+); 0: unknown/none */
} kopt_ceilings;

/* The relative output tolerance from which an FP32 problem may be computed in a lower
 * precision on tensor cores and still pass its check: TF32 rounds inputs to a 10-bit
 * mantissa (unit roundoff 2^-11, about 4.9e-4), BF16 to 7 bits (2^-8, about 3.9e-3), both
 * accumulating in FP32. The speed-of-light guard holds FP32 problems with such tolerances
 * to the TF32 rate; the program tools say when a tolerance admits either. */
#define KOPT_TF32_ADMITTED_RTOL 1e-3
#define KOPT_BF16_ADMITTED_RTOL 1e-2

/* Name, UUID and compute capability of GPU `ordinal` through NVML (no CUDA context),
 * asked once a process for each ordinal (and CUDA_VISIBLE_DEVICES): kept after that.
 * KOPT_E_NO_DEVICE when there is no driver or no such GPU. */
kopt_status kopt_device_nvml(kopt_ctx *ctx, int ordinal, kopt_device_info *out, int *count);

/* Full properties of GPU `ordinal`, from a worker process. */
kopt_status kopt_device_query(kopt_ctx *ctx, int ordinal, kopt_device_info *out);

/* Measure the device's ceilings in a worker (about a second). */
kopt_status kopt_device_measure(kopt_ctx *ctx, int ordinal, const char *cache_dir,
                                kopt_device_info *dev, kopt_ceilings *out);

/* Fill the compute rates and cache bandwidths not measured from the architecture's per-SM
 * rates and the device's clock (spec-derived; measured[], l2_measured and smem_measured
 * stay 0 for them; what the architecture table lacks stays 0, unknown). */
void kopt_ceilings_fill_spec(kopt_ceilings *c, const kopt_device_info *dev);

/* The DRAM rate in GB/s: the fastest measured (copy, read, write; 0 when none), and the
 * spec-derived one (two transfers a memory clock over the bus; 0 when the device does not
 * say). */
double kopt_ceilings_dram_gbs(const kopt_ceilings *c);
double kopt_dram_spec_gbs(const kopt_device_info *dev);

/* Read the "ceilings" object of a measuring worker's answer (JSON text) into *out: each
 * rate present and positive is marked measured, the others stay 0 and unmeasured.
 * measured_at is left empty. KOPT_E_INVALID when the text is not a JSON object. */
kopt_status kopt_ceilings_parse(kopt_ctx *ctx, const char *json_text, kopt_ceilings *out);

#ifdef __cplusplus
}
#endif
#endif
