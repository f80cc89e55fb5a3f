/* fp64_in_fp32: FP64 instructions (DFMA/DMUL/DADD) in a problem whose math is not fp64,
 * usually from unsuffixed literals or double-precision library calls. Counts from the
 * measured smsp__sass_thread_inst_executed_op_d*_pred_on.sum or from SASS; the cost
 * follows the device's FP32 / FP64 rate ratio. */
#include "analyze/analyze_int.h"

/* FP32 over FP64 rate when the ceilings do not say (H100/H200: 2; consumer parts: 64). */
#define KOPT_FP64_RATIO_DEFAULT 2.0

static const char *const metrics[] = {
    "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
    NULL,
};

static int measured_counts(const kopt_kernel_view *k, double *dp, double *sp)
{
    static const char *const d[3] = {"smsp__sass_thread_inst_executed_op_dadd_pred_on.sum",
                                     "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum",
                                     "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum"};
    static const char *const f[3] = {"smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
                                     "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
                                     "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"};
    double v;
    int any = 0;

    *dp = *sp = 0;
    for (int i = 0; i < 3; i++) {
        if (kopt__metric(k, d[i], &v)) {
            *dp += v;
            any = 1;
        }
        if (kopt__metric(k, f[i], &v))
            *sp += v;
    }
    return any;
}

static kopt_status one(const kopt_analysis_input *in, const kopt_kernel_view *k,
                       const kopt_thresholds *th, kopt_findings *out, kopt_ctx *ctx)
{
    if (in->compute == KOPT_COMPUTE_FP64 || in->compute < 0 ||
        in->compute >= KOPT_COMPUTE_COUNT)
        return KOPT_OK;
    double dp, sp, share, ratio = KOPT_FP64_RATIO_DEFAULT, gbs, r32 = 0, r64 = 0, tshare;
    double cfrac = kopt__sm_frac(k, KOPT_EXPOSURE_UNKNOWN), gain;
    int measured = measured_counts(k, &dp, &sp);
    const char *ratio_src = "KOPT_FP64_RATIO_DEFAULT";
    kopt__fb b;

    if (!measured) {
        if (!k->sass)
            return KOPT_OK;
        dp = k->sass->dfma + k->sass->dmul + k->sass->dadd;
        sp = k->sass->ffma + k->sass->fmul + k->sass->fadd + k->sass->hfma2 +
             k->sass->hmul2 + k->sass->hadd2;
    }
    if (dp <= 0)
        return KOPT_OK;
    share = dp / (dp + sp);
    if (share < th->fp64_share_min)
        return KOPT_OK;
    if (kopt__rates(in, KOPT_COMPUTE_FP32, &gbs, &r32) &&
        kopt__rates(in, KOPT_COMPUTE_FP64, &gbs, &r64) && r32 > 0 && r64 > 0) {
        ratio = r32 / r64;
        ratio_src = "the device's FP32 / FP64 rates";
    }
    /* FP64 instructions take `ratio` times as long: their share of FP time. */
    tshare = share * ratio / (share * ratio + (1 - share));
    gain = tshare * (1.0 - 1.0 / ratio) * cfrac;
    kopt__fb_init(&b, "fp64_in_fp32", kopt__kname(k),
                  "FP64 math in a %s problem: %.0f%% of FP instructions",
                  kopt_compute_name((kopt_compute)in->compute), share * 100);
    kopt__fb_evidence(&b, measured ? "executed FP64 / FP instructions" : "SASS FP64 / FP",
                      share, ">=", th->fp64_share_min, "fp64_share_min");
    kopt__fb_text(&b, &b.seen, "%s: %.0f FP64 and %.0f FP32/FP16 instructions (fp64_share_min: "
                  "%.0f%%).", measured ? "Executed (measured)" : "SASS", dp, sp,
                  th->fp64_share_min * 100);
    if (k->sass && k->sass->conversions > 0)
        kopt__fb_text(&b, &b.seen, " SASS also has %d conversions (F2F/I2F/F2I), which "
                      "often come with them.", k->sass->conversions);
    kopt__fb_text(&b, &b.why, "The problem's math is %s, yet part of it runs in double "
                  "precision at 1/%.0f of the FP32 rate (%s), plus conversions each way.",
                  kopt_compute_name((kopt_compute)in->compute), ratio, ratio_src);
    kopt__fb_text(&b, &b.change, "Find where double creeps in: unsuffixed literals (`x * "
                  "0.5` -> `x * 0.5f`), `sqrt`/`exp`/`pow` resolving to the double versions "
                  "(use `sqrtf`, `expf`, `__expf`), `double` accumulators or temporaries. "
                  "`-Xptxas --warn-on-double-precision-use` names the kernels; "
                  "-Wdouble-promotion finds the expressions.");
    kopt__fb_text(&b, &b.how, "FP64 share of FP time (%.0f%% of instructions at %.0fx the "
                  "cost = %.0f%%) times (1 - 1/%.0f) times the SM throughput share (%.2f).",
                  share * 100, ratio, tshare * 100, ratio, cfrac);
    return kopt__fb_emit(&b, out, gain, measured ? KOPT_CONF_MEASURED : 0.6, ctx);
}

const kopt_tool kopt_tool_fp64_in_fp32 = {
    .name = "fp64_in_fp32",
    .summary = "double-precision math in a problem that is not fp64",
    .classes = KOPT_CLASS_ALL,          /* always a slip; the gain weighs the SM share */
    .needs = 0,
    .needs_any = KOPT_NEEDS_SASS | KOPT_NEEDS_METRICS,
    .metrics = metrics,
    .run_kernel = one,
};
