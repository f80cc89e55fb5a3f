/* dram_saturated: the kernel streams at the practical DRAM ceiling (dram__throughput near
 * peak, or the candidate near its memory bound), so only moving fewer bytes helps. When the
 * measured DRAM bytes exceed the problem's minimum, the excess is the gain; otherwise the
 * finding says the candidate is done unless the problem changes. */
#include "analyze/analyze_int.h"

/* Without metrics: at or above this % of the memory bound is "at the roof". */
#define KOPT_NEAR_BOUND_PCT 80.0

static const char *const metrics[] = {
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    NULL,
};

static const char *change_text =
    "Move fewer bytes: fuse this kernel with its producer or consumer so intermediates stay "
    "in registers or shared memory; read each input once (one pass with an online max/sum "
    "instead of several passes; keep a reused tile in shared memory or L2-sized chunks); "
    "store in a narrower type (bf16/fp8 storage with fp32 math) where the tolerance allows.";

static kopt_status run(const kopt_analysis_input *in, const kopt_thresholds *th,
                       kopt_findings *out, kopt_ctx *ctx)
{
    double bytes = 0, pct = 0, v, gain = 0, excess = 0;
    int has_bytes = 0, has_pct = 0, hot = -1;
    kopt_classification c;
    kopt__fb b;

    for (int i = 0; i < in->nkernels; i++) {
        const kopt_kernel_view *k = &in->kernels[i];
        if (kopt__metric(k, "dram__bytes_read.sum", &v)) {
            bytes += v;
            has_bytes = 1;
        }
        if (kopt__metric(k, "dram__bytes_write.sum", &v)) {
            bytes += v;
            has_bytes = 1;
        }
        if (kopt__metric(k, "dram__throughput.avg.pct_of_peak_sustained_elapsed", &v) &&
            v > pct) {
            pct = v;
            has_pct = 1;
            hot = i;
        }
    }
    kopt_classify(in, &c);
    if (has_pct ? pct < th->dram_saturated_pct
                : !(c.analytic == KOPT_CLASS_MEMORY && c.pct_of_bound >= KOPT_NEAR_BOUND_PCT))
        return KOPT_OK;
    if (has_bytes && in->bytes > 0)
        excess = bytes / in->bytes;
    kopt__fb_init(&b, "dram_saturated", hot >= 0 ? kopt__kname(&in->kernels[hot]) : "",
                  "%s", has_pct ? "DRAM bandwidth is saturated"
                                : "the candidate runs at its memory bound");
    if (has_pct) {
        kopt__fb_evidence(&b, "dram__throughput.avg.pct_of_peak_sustained_elapsed", pct, ">=",
                          th->dram_saturated_pct, "dram_saturated_pct");
        kopt__fb_text(&b, &b.seen, "DRAM throughput %.0f%% of peak (dram_saturated_pct: "
                      "%.0f%%).", pct, th->dram_saturated_pct);
    } else {
        kopt__fb_evidence(&b, "roofline % of memory bound", c.pct_of_bound, ">=",
                          KOPT_NEAR_BOUND_PCT, "KOPT_NEAR_BOUND_PCT");
        kopt__fb_text(&b, &b.seen, "The memory-bound candidate runs at %.0f%% of its bound "
                      "(KOPT_NEAR_BOUND_PCT: %.0f%%).", c.pct_of_bound, KOPT_NEAR_BOUND_PCT);
    }
    if (excess > 0)
        kopt__fb_text(&b, &b.seen, " It moves %.3g B of DRAM traffic for a problem that needs "
                      "%.3g B (%.2fx; dram_excess_ratio: %.2f).", bytes, in->bytes, excess,
                      th->dram_excess_ratio);
    if (excess >= th->dram_excess_ratio) {
        gain = 1.0 - 1.0 / excess;
        kopt__fb_evidence(&b, "DRAM bytes / problem bytes", excess, ">=",
                          th->dram_excess_ratio, "dram_excess_ratio");
        kopt__fb_text(&b, &b.why, "At the bandwidth ceiling time is bytes over bandwidth, and "
                      "this kernel moves %.2fx the bytes the problem needs: it re-reads data "
                      "(several passes, no reuse through shared memory, L2 misses).", excess);
        kopt__fb_text(&b, &b.how, "Bringing the traffic down to the problem's minimum: 1 - "
                      "1/%.2f.", excess);
    } else {
        kopt__fb_text(&b, &b.why, "At the bandwidth ceiling time is bytes over bandwidth%s; "
                      "more tuning of this kernel cannot help, only a different problem "
                      "boundary (fusion, narrower storage) can.",
                      excess > 0 ? ", and the kernel already moves about the problem's minimum"
                                 : "");
        kopt__fb_text(&b, &b.how, "None within this problem: %s.",
                      excess > 0 ? "its traffic is at the minimum"
                                 : "no measured DRAM bytes to compare with the minimum");
    }
    kopt__fb_text(&b, &b.change, "%s", change_text);
    return kopt__fb_emit(&b, out, gain, has_pct ? KOPT_CONF_MEASURED : 0.6, ctx);
}

const kopt_tool kopt_tool_dram_saturated = {
    .name = "dram_saturated",
    .summary = "DRAM at its practical ceiling: only fewer bytes help",
    .classes = KOPT_CLASS_MEMORY | KOPT_CLASS_MIXED,
    .needs = 0,
    .needs_any = KOPT_NEEDS_METRICS | KOPT_NEEDS_TIMING,
    .metrics = metrics,
    .run = run,
};
