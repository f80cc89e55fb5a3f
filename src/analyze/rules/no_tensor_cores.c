/* no_tensor_cores: a matmul-like problem computed without tensor-core instructions (no
 * HMMA/HGMMA/IMMA/QGMMA in SASS and/or no tensor-pipe instructions measured); and, on
 * Hopper, tensor cores used only through mma.sync (HMMA) where wgmma (HGMMA) is faster. */
#include "analyze/analyze_int.h"

/* Tensor over SIMT rate when the ceilings do not say (H100: TF32 2048 vs FP32 256 FLOP/clk
 * per SM). */
#define KOPT_TC_RATIO_DEFAULT 8.0
/* FP64: DMMA doubles the DFMA rate on A100/H100. */
#define KOPT_TC_RATIO_FP64 2.0
/* A rewrite onto tensor cores rarely realizes more than this speedup at once (KernelPro's
 * guidance quotes 3-5x). */
#define KOPT_TC_REALISTIC_SPEEDUP 4.0
/* Compute share assumed when unmeasured: compute-bound problem / other. */
#define KOPT_TC_COMPUTE_FRAC_COMPUTE 0.75
#define KOPT_TC_COMPUTE_FRAC_OTHER 0.5
/* Hopper: wgmma over mma.sync throughput. */
#define KOPT_WGMMA_OVER_MMA 1.5

static const char *const metrics[] = {
    "sm__inst_executed_pipe_tensor.sum",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    NULL,
};

static const char *how_to(int compute)
{
    switch (compute) {
    case KOPT_COMPUTE_FP16:
    case KOPT_COMPUTE_BF16:
        return "Compute the tile products on tensor cores: on Hopper wgmma "
               "(`wgmma.mma_async.sync.aligned.m64nNk16` on operands staged in shared memory "
               "by TMA, as CUTLASS's sm90 collective mainloop does), elsewhere `mma.sync "
               "m16n8k16` with ldmatrix-loaded fragments or nvcuda::wmma 16x16x16; "
               "accumulate in fp32. Or call cublasGemmEx / cublasLt if the candidate may use "
               "libraries.";
    case KOPT_COMPUTE_FP8:
        return "Use FP8 wgmma (QGMMA, `wgmma...e4m3`) on Hopper with per-tensor scales, or "
               "cublasLt's FP8 matmul.";
    case KOPT_COMPUTE_TF32:
    case KOPT_COMPUTE_FP32:
        return "The problem is fp32: TF32 tensor cores (nvcuda::wmma with "
               "precision::tf32, `mma.sync m16n8k8 .tf32`, or cuBLAS with "
               "CUBLAS_COMPUTE_32F_FAST_TF32) round inputs to a 10-bit mantissa, so use them "
               "only if the tolerance allows about 1e-3 relative error; the 3xTF32 split "
               "(big + small parts) keeps fp32 accuracy at a third of the TF32 rate.";
    case KOPT_COMPUTE_FP64:
        return "Use FP64 tensor cores (DMMA: `mma.sync m8n8k4 .f64`, or cublasDgemm), which "
               "double the DFMA rate on A100/H100 at full FP64 accuracy.";
    default:
        return "Use integer tensor cores (IMMA: `mma.sync ... .s8`, or cublasLt int8).";
    }
}

static double rate_ratio(const kopt_analysis_input *in, const char **src)
{
    double gbs, tc = 0, simt = 0;
    int c = in->compute;

    *src = "KOPT_TC_RATIO_DEFAULT";
    if (c == KOPT_COMPUTE_FP64) {
        *src = "KOPT_TC_RATIO_FP64";
        return KOPT_TC_RATIO_FP64;
    }
    if (c == KOPT_COMPUTE_INT)
        return KOPT_TC_RATIO_DEFAULT;
    if (kopt__rates(in, c == KOPT_COMPUTE_FP32 ? KOPT_COMPUTE_TF32 : c, &gbs, &tc) &&
        kopt__rates(in, KOPT_COMPUTE_FP32, &gbs, &simt) && tc > 0 && simt > 0 && tc > simt) {
        *src = "the device's tensor / FP32 rates";
        return tc / simt;
    }
    return KOPT_TC_RATIO_DEFAULT;
}

static kopt_status one(const kopt_analysis_input *in, const kopt_kernel_view *k,
                       const kopt_thresholds *th, kopt_findings *out, kopt_ctx *ctx)
{
    if (!in->matmul_like)
        return KOPT_OK;
    const kopt_sass_counts *s = k->sass;
    double pipe = 0, ratio, realistic, cfrac, gain;
    int has_pipe = kopt__metric(k, "sm__inst_executed_pipe_tensor.sum", &pipe);
    int tensor = 0, measured_sm;
    const char *src;
    kopt_classification c;
    kopt__fb b;

    if (s)
        tensor = s->hmma + s->hgmma + s->imma + s->igmma + s->qgmma +
                 (in->compute == KOPT_COMPUTE_FP64 ? s->dmma : 0);
    if ((!s && !has_pipe) || tensor > 0 || (has_pipe && pipe > 0))
        goto hopper;
    kopt_classify(in, &c);
    ratio = rate_ratio(in, &src);
    realistic = ratio < KOPT_TC_REALISTIC_SPEEDUP ? ratio : KOPT_TC_REALISTIC_SPEEDUP;
    measured_sm = kopt__metric(k, "sm__throughput.avg.pct_of_peak_sustained_elapsed", &cfrac);
    cfrac = kopt__sm_frac(k, c.analytic == KOPT_CLASS_COMPUTE ? KOPT_TC_COMPUTE_FRAC_COMPUTE
                                                              : KOPT_TC_COMPUTE_FRAC_OTHER);
    gain = (1.0 - 1.0 / realistic) * cfrac;
    kopt__fb_init(&b, "no_tensor_cores", kopt__kname(k),
                  "a matmul-like %s problem computed without tensor cores",
                  in->compute >= 0 && in->compute < KOPT_COMPUTE_COUNT
                      ? kopt_compute_name((kopt_compute)in->compute) : "");
    if (s) {
        kopt__fb_evidence(&b, "SASS HMMA+HGMMA+IMMA+IGMMA+QGMMA", tensor, "==", 0,
                          "no tensor instructions");
        kopt__fb_text(&b, &b.seen, "SASS has no tensor instructions; the math runs on %d "
                      "FFMA, %d HFMA2, %d DFMA.", s->ffma, s->hfma2, s->dfma);
    }
    if (has_pipe) {
        kopt__fb_evidence(&b, "sm__inst_executed_pipe_tensor.sum", pipe, "==", 0,
                          "no tensor-pipe instructions");
        kopt__fb_text(&b, &b.seen, "%sMeasured: 0 tensor-pipe instructions.",
                      s ? " " : "");
    }
    kopt__fb_text(&b, &b.why, "A contraction is what tensor cores are for: they deliver "
                  "%.1fx the SIMT rate here (%s), and the problem is %s.", ratio, src,
                  kopt_class_name(c.analytic));
    kopt__fb_text(&b, &b.change, "%s", how_to(in->compute));
    kopt__fb_text(&b, &b.how, "1 - 1/min(rate ratio %.1f, KOPT_TC_REALISTIC_SPEEDUP %.0f) "
                  "times the compute share (%s: %.2f).", ratio, KOPT_TC_REALISTIC_SPEEDUP,
                  measured_sm ? "SM throughput" : "assumed from the analytic class", cfrac);
    return kopt__fb_emit(&b, out, gain, s && has_pipe ? 0.8 : 0.7, ctx);

hopper:
    /* Hopper with mma.sync only: wgmma is the faster path. */
    if (!s || !in->dev || in->dev->cc_major != 9 || s->hmma == 0 || s->hgmma + s->qgmma > 0 ||
        !(in->compute == KOPT_COMPUTE_FP16 || in->compute == KOPT_COMPUTE_BF16 ||
          in->compute == KOPT_COMPUTE_FP8 || in->compute == KOPT_COMPUTE_TF32))
        return KOPT_OK;
    cfrac = kopt__sm_frac(k, KOPT_TC_COMPUTE_FRAC_OTHER);
    gain = (1.0 - 1.0 / KOPT_WGMMA_OVER_MMA) * cfrac;
    kopt__fb_init(&b, "no_tensor_cores", kopt__kname(k),
                  "tensor cores only through mma.sync (HMMA) on Hopper");
    kopt__fb_evidence(&b, "SASS HGMMA", s->hgmma, "==", 0, "no wgmma");
    kopt__fb_text(&b, &b.seen, "SASS: %d HMMA, 0 HGMMA on sm_%d%d.", s->hmma,
                  in->dev->cc_major, in->dev->cc_minor);
    kopt__fb_text(&b, &b.why, "On H100/H200 the warp-synchronous mma.sync path reaches only "
                  "part of the tensor-core peak; the asynchronous warpgroup instruction "
                  "(wgmma) reads operands from shared memory and keeps the units busy.");
    kopt__fb_text(&b, &b.change, "Move the main loop to wgmma: 128-thread warpgroups, "
                  "operands in shared memory in the 128B-swizzled layout loaded by TMA, "
                  "`wgmma.fence` / `commit_group` / `wait_group` around a multi-stage "
                  "pipeline (compile for sm_90a).");
    kopt__fb_text(&b, &b.how, "1 - 1/KOPT_WGMMA_OVER_MMA (%.1f) times the compute share "
                  "(%.2f).", KOPT_WGMMA_OVER_MMA, cfrac);
    return kopt__fb_emit(&b, out, gain, 0.5, ctx);
}

const kopt_tool kopt_tool_no_tensor_cores = {
    .name = "no_tensor_cores",
    .summary = "a matmul-like problem without tensor-core instructions",
    .classes = KOPT_CLASS_COMPUTE | KOPT_CLASS_MIXED,
    .needs = 0,
    .needs_any = KOPT_NEEDS_SASS | KOPT_NEEDS_METRICS,
    .metrics = metrics,
    .run_kernel = one,
};
