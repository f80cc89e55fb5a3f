/* library_gemm_fp32: cuBLAS/cuBLASLt GEMM kernels that compute in FP32 on the CUDA cores
 * (no tensor-pipe instruction measured; or, unmeasured, an FP32 SIMT name such as sgemm,
 * "simt" or f32 xmma without a tensor-core tag) and take a large share of a program. Where
 * the problem's tolerance admits TF32 (or BF16), tensor cores run the same GEMM at the
 * device's TF32/FP32 rate ratio; with a tighter tolerance, 3xTF32 keeps FP32 accuracy at a
 * third of the TF32 rate. Reads the program profile (origins, names, tensor-pipe and FP
 * counters, durations) and the ceilings. */
#include "analyze/analyze_int.h"

#include <stdio.h>
#include <string.h>

/* Tensor over SIMT rate when neither ceilings nor device say (H100: TF32 2048 vs FP32 256
 * FLOP/clk per SM; BF16 twice TF32). */
#define KOPT_GEMM_TF32_RATIO_DEFAULT 8.0
#define KOPT_GEMM_BF16_RATIO_DEFAULT 16.0
/* Realized speedup of a library GEMM moved to tensor cores at most (KernelPro quotes 3-5x
 * for a rewrite onto tensor cores; no_tensor_cores uses the same 4). */
#define KOPT_GEMM_REALISTIC_SPEEDUP 4.0
/* 3xTF32: three TF32 products per FP32 product. */
#define KOPT_GEMM_3XTF32_PASSES 3.0
/* Below this speedup the change is not worth a finding. */
#define KOPT_GEMM_MIN_SPEEDUP 1.2
/* Share of a GEMM's time in its math when nothing measured says (large GEMMs are
 * compute-bound). */
#define KOPT_GEMM_COMPUTE_FRAC 0.75
/* Confidence: tolerance admits TF32 / unknown / only 3xTF32. */
#define KOPT_GEMM_CONF_ADMITTED 0.7
#define KOPT_GEMM_CONF_UNKNOWN 0.5
#define KOPT_GEMM_CONF_3XTF32 0.4

static const char *const metrics[] = {
    "sm__inst_executed_pipe_tensor.sum",
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__time_duration.sum",
    NULL,
};

static int any_ci(const char *name, const char *const *tags)
{
    for (int i = 0; tags[i]; i++)
        if (kopt__contains_ci(name, tags[i]))
            return 1;
    return 0;
}

static int gemm_name(const char *name)
{
    return (kopt__contains_ci(name, "gemm") && !kopt__contains_ci(name, "gemv") &&
            !kopt__contains_ci(name, "splitKreduce")) || kopt__contains_ci(name, "nvjet");
}

/* What a name says about a GEMM's precision. */
static const char *const tensor_tags[] = {
    "tf32", "tensorop", "hmma", "gmma", "bf16", "f16", "h16", "fp16", "e4m3", "e5m2", "fp8",
    "imma", "1688", "16816", "884", "nvjet", NULL};
static const char *const wide_tags[] = {"dgemm", "zgemm", "cgemm", "f64", "double", "complex",
                                        NULL};
static const char *const fp32_simt_tags[] = {"sgemm", "simt", "f32f32_f32f32_f32", NULL};

/* 1 when kernel k is a cuBLAS FP32 GEMM on the CUDA cores; *how: the evidence. */
static int fp32_simt_gemm(const kopt_program_kernel *kp, const char **how)
{
    double ffma = 0, dfma = 0;

    if (kp->origin != KOPT_ORIGIN_CUBLAS || !gemm_name(kp->name) || any_ci(kp->name, wide_tags))
        return 0;
    if (kp->tensor == 1)
        return 0;
    kopt_metrics_get(&kp->metrics, "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", &ffma);
    kopt_metrics_get(&kp->metrics, "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum", &dfma);
    if (dfma > ffma)
        return 0;
    if (kp->tensor == 0) {
        *how = "0 tensor-pipe instructions measured";
        return 1;
    }
    if (any_ci(kp->name, fp32_simt_tags) && !any_ci(kp->name, tensor_tags)) {
        *how = "its name: an FP32 SIMT GEMM, no tensor-core tag";
        return 1;
    }
    return 0;
}

/* Tensor-core over FP32 rate for `tc` (TF32 or BF16), from the ceilings or the device. */
static double ratio_of(const kopt_analysis_input *in, int tc, double dflt, double *fp32,
                       double *tc_rate, const char **src)
{
    double gbs, simt = 0, t = 0;

    *src = "KOPT_GEMM_*_RATIO_DEFAULT";
    kopt__rates(in, KOPT_COMPUTE_FP32, &gbs, &simt);
    kopt__rates(in, tc, &gbs, &t);
    *fp32 = simt;
    *tc_rate = t;
    if (simt > 0 && t > simt) {
        *src = in->ceil && in->ceil->valid && in->ceil->measured[tc] ? "measured rates"
                                                                     : "spec-derived rates";
        return t / simt;
    }
    return dflt;
}

static kopt_status run(const kopt_analysis_input *in, const kopt_thresholds *th,
                       kopt_findings *out, kopt_ctx *ctx)
{
    const kopt_program *p = in->program;
    double total_ms = kopt__total_ms(in), share = 0, weighted = 0, fp32 = 0, tf32 = 0,
           bf16 = 0, tf32_ratio, bf16_ratio, speedup, realistic, gain, conf;
    const char *tf32_src, *bf16_src, *how = "";
    int n = 0, admits_tf32 = in->rtol >= KOPT_TF32_ADMITTED_RTOL,
        admits_bf16 = in->rtol >= KOPT_BF16_ADMITTED_RTOL, unknown_tol = in->rtol <= 0;
    char shortname[256];
    kopt__fb b;

    if (!p || total_ms <= 0)
        return KOPT_OK;
    tf32_ratio = ratio_of(in, KOPT_COMPUTE_TF32, KOPT_GEMM_TF32_RATIO_DEFAULT, &fp32, &tf32,
                          &tf32_src);
    bf16_ratio = ratio_of(in, KOPT_COMPUTE_BF16, KOPT_GEMM_BF16_RATIO_DEFAULT, &fp32, &bf16,
                          &bf16_src);
    for (int k = 0; k < p->nkernels; k++) {
        const kopt_program_kernel *kp = &p->kernels[k];
        double s = kp->dur_us / 1e3 / total_ms, cfrac;
        if (!fp32_simt_gemm(kp, &how))
            continue;
        /* The share of its time in math: its FLOP rate over the FP32 peak when both are
         * known, else the SM throughput, else KOPT_GEMM_COMPUTE_FRAC. */
        if (kp->gflops > 0 && fp32 > 0)
            cfrac = kopt__clamp01(kp->gflops / fp32);
        else
            cfrac = kopt__sm_frac(k < in->nkernels ? &in->kernels[k] : NULL,
                                  KOPT_GEMM_COMPUTE_FRAC);
        share += s;
        weighted += s * cfrac;
        n++;
    }
    if (!n || share < th->library_gemm_share)
        return KOPT_OK;
    speedup = admits_tf32 || unknown_tol ? tf32_ratio : tf32_ratio / KOPT_GEMM_3XTF32_PASSES;
    if (speedup < KOPT_GEMM_MIN_SPEEDUP)
        return KOPT_OK;
    realistic = speedup < KOPT_GEMM_REALISTIC_SPEEDUP ? speedup : KOPT_GEMM_REALISTIC_SPEEDUP;
    gain = weighted * (1.0 - 1.0 / realistic);
    conf = admits_tf32 ? KOPT_GEMM_CONF_ADMITTED
                       : unknown_tol ? KOPT_GEMM_CONF_UNKNOWN : KOPT_GEMM_CONF_3XTF32;

    kopt__fb_init(&b, "library_gemm_fp32", "", "%d cuBLAS GEMM kernel(s) run FP32 on the CUDA "
                  "cores: %.0f%% of the program's time", n, share * 100);
    kopt__fb_evidence(&b, "FP32 SIMT library GEMM time / program time", share, ">=",
                      th->library_gemm_share, "library_gemm_share");
    kopt__fb_text(&b, &b.seen, "FP32 GEMMs on the CUDA cores:");
    for (int k = 0, said = 0; k < p->nkernels; k++) {
        const kopt_program_kernel *kp = &p->kernels[k];
        if (!fp32_simt_gemm(kp, &how))
            continue;
        kopt_kernel_short_name(kp->name, shortname, sizeof(shortname));
        kopt__fb_text(&b, &b.seen, "%s #%d %s%s%s%s, %.4f ms (%.0f%%)", said++ ? ";" : "",
                      k + 1, shortname, kp->op && kp->op[0] ? " (" : "", kp->op ? kp->op : "",
                      kp->op && kp->op[0] ? ")" : "",
                      kp->dur_us / 1e3, kp->dur_us / 1e3 / total_ms * 100);
        if (kp->gflops > 0)
            kopt__fb_text(&b, &b.seen, ", %.1f TFLOP/s", kp->gflops / 1e3);
        kopt__fb_text(&b, &b.seen, " (%s)", how);
    }
    kopt__fb_text(&b, &b.seen, ".");
    kopt__fb_text(&b, &b.why, "On the CUDA cores FP32 runs at %.1f TFLOP/s here; tensor cores "
                  "run TF32 at %.1fx that and BF16 at %.1fx (%s). ", fp32 / 1e3, tf32_ratio,
                  bf16_ratio, tf32_src);
    if (unknown_tol)
        kopt__fb_text(&b, &b.why, "If the problem's tolerance admits TF32 (relative error "
                      "about 1e-3: KOPT_TF32_ADMITTED_RTOL; inputs rounded to a 10-bit "
                      "mantissa, FP32 accumulation) the same GEMM runs %.1fx faster in "
                      "its math; BF16 (about 1e-2) %.1fx.", tf32_ratio, bf16_ratio);
    else if (admits_tf32)
        kopt__fb_text(&b, &b.why, "The problem's tolerance (rtol %.3g) admits TF32 "
                      "(KOPT_TF32_ADMITTED_RTOL %.0e)%s: the same GEMM runs %.1fx faster in "
                      "its math.", in->rtol, KOPT_TF32_ADMITTED_RTOL,
                      admits_bf16 ? " and BF16" : "", admits_bf16 ? bf16_ratio : tf32_ratio);
    else
        kopt__fb_text(&b, &b.why, "The problem's tolerance (rtol %.3g) is tighter than TF32 "
                      "admits (KOPT_TF32_ADMITTED_RTOL %.0e); 3xTF32 (each operand split into "
                      "a TF32 part and a TF32 residual, three products) keeps FP32 accuracy "
                      "at %.1fx the FP32 rate.", in->rtol, KOPT_TF32_ADMITTED_RTOL, speedup);
    kopt__fb_text(&b, &b.change, "%s", admits_tf32 || unknown_tol
        ? "Let the GEMM use tensor cores: in the ModelNew set "
          "torch.backends.cuda.matmul.allow_tf32 = True (or "
          "torch.set_float32_matmul_precision(\"high\")) so cuBLAS picks TF32 kernels; where "
          "the tolerance admits about 1e-2, run the GEMM on bfloat16 operands with FP32 "
          "accumulation (torch.autocast, or cublasGemmEx/cublasLt with BF16 inputs and "
          "CUBLAS_COMPUTE_32F); in a host-mode candidate, cublasGemmEx/cublasLtMatmul with "
          "CUBLAS_COMPUTE_32F_FAST_TF32. Check the result against the tolerance at the "
          "problem's largest K: the error grows with the reduction length."
        : "Keep FP32 accuracy on tensor cores with 3xTF32: a CUTLASS GEMM with "
          "OpMultiplyAddFastF32 (big + small TF32 parts, three tensor-core products), or the "
          "same split by hand around TF32 mma.sync; the FP32 result matches within FP32 "
          "rounding.");
    kopt__fb_text(&b, &b.how, "Over the FP32 SIMT GEMMs: time share x share of their time in "
                  "math (their FLOP rate over the FP32 peak, else the SM throughput, else "
                  "KOPT_GEMM_COMPUTE_FRAC %.2f) = %.3f, times 1 - 1/min(%s speedup %.1f, "
                  "KOPT_GEMM_REALISTIC_SPEEDUP %.0f).", KOPT_GEMM_COMPUTE_FRAC, weighted,
                  admits_tf32 || unknown_tol ? "TF32" : "3xTF32", speedup,
                  KOPT_GEMM_REALISTIC_SPEEDUP);
    return kopt__fb_emit(&b, out, gain, conf, ctx);
}

const kopt_tool kopt_tool_library_gemm_fp32 = {
    .name = "library_gemm_fp32",
    .summary = "program: cuBLAS FP32 GEMMs off the tensor cores (TF32/BF16 rate)",
    .classes = KOPT_CLASS_COMPUTE | KOPT_CLASS_MIXED,
    .needs = KOPT_NEEDS_PROGRAM,
    .metrics = metrics,
    .run = run,
};
