/* divergence: warps execute with part of their lanes off (branch divergence, early exits,
 * predication): smsp__thread_inst_executed_per_inst_executed.ratio (and its pred_on form)
 * below divergence_threads of 32. Gain as ncu: (1 - threads/32) x SM throughput share. */
#include "analyze/analyze_int.h"

static const char *const metrics[] = {
    "smsp__thread_inst_executed_per_inst_executed.ratio",
    "smsp__thread_inst_executed_pred_on_per_inst_executed.ratio",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    NULL,
};

static kopt_status one(const kopt_analysis_input *in, const kopt_kernel_view *k,
                       const kopt_thresholds *th, kopt_findings *out, kopt_ctx *ctx)
{
    double active = 32, pred = 32, v, smfrac = kopt__sm_frac(k, KOPT_EXPOSURE_UNKNOWN);
    int has_a = kopt__metric(k, "smsp__thread_inst_executed_per_inst_executed.ratio", &active);
    int has_p = kopt__metric(k, "smsp__thread_inst_executed_pred_on_per_inst_executed.ratio",
                             &pred);
    kopt__fb b;

    if (!has_a && !has_p)
        return KOPT_OK;
    v = active < pred ? active : pred;
    if (v >= th->divergence_threads)
        return KOPT_OK;
    kopt__fb_init(&b, "divergence", kopt__kname(k),
                  "%.1f of 32 threads active per instruction", v);
    kopt__fb_evidence(&b, has_a && active <= pred
                              ? "smsp__thread_inst_executed_per_inst_executed.ratio"
                              : "smsp__thread_inst_executed_pred_on_per_inst_executed.ratio",
                      v, "<", th->divergence_threads, "divergence_threads");
    kopt__fb_text(&b, &b.seen, "Threads active per executed instruction: %.1f%s (divergence_"
                  "threads: %.0f)", has_a ? active : 32, has_p ? "" : " (predication unknown)",
                  th->divergence_threads);
    if (has_p)
        kopt__fb_text(&b, &b.seen, "; with predicated-off threads removed: %.1f", pred);
    if (k->sass)
        kopt__fb_text(&b, &b.seen, "; %d branch instructions in SASS", k->sass->branches);
    kopt__fb_text(&b, &b.seen, ".");
    kopt__fb_text(&b, &b.why, "A warp issues each instruction for all 32 lanes; lanes on the "
                  "other side of a branch, past an early exit or predicated off do no work "
                  "but cost the same issue slot.");
    kopt__fb_text(&b, &b.change, "Make branches uniform per warp: branch on a warp-level "
                  "quantity (`threadIdx.x / 32`) rather than the thread index, sort or bin "
                  "irregular work so a warp's lanes take the same path, handle a ragged "
                  "boundary in a separate small pass instead of an `if` in the hot loop, and "
                  "in reductions replace the `if (tid < s)` halving loop's last steps with "
                  "`__shfl_down_sync` over the full warp.");
    kopt__fb_text(&b, &b.how, "Idle lanes (1 - %.1f/32) times the SM throughput share "
                  "(%.0f%%), as ncu's ThreadDivergence estimate.", v, smfrac * 100);
    return kopt__fb_emit(&b, out, (1.0 - v / 32.0) * smfrac, 0.65, ctx);
}

const kopt_tool kopt_tool_divergence = {
    .name = "divergence",
    .summary = "warps run with lanes idle (divergent branches, predication)",
    .classes = KOPT_CLASS_COMPUTE | KOPT_CLASS_LATENCY | KOPT_CLASS_MIXED,
    .needs = KOPT_NEEDS_METRICS,
    .metrics = metrics,
    .run_kernel = one,
};
