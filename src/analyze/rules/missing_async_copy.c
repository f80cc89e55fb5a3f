/* missing_async_copy: a tiled kernel (BAR + STS/LDS + LDG in SASS) that copies global to
 * shared through registers with no LDGSTS (cp.async) or TMA, on sm_80 or newer, so loads
 * and math take turns instead of overlapping. */
#include "analyze/analyze_int.h"

/* Static gain when no stall metrics say how long warps wait for the tiles. */
#define KOPT_ASYNC_GAIN_STATIC 0.10

static const char *const metrics[] = {
    "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
    NULL,
};

static kopt_status one(const kopt_analysis_input *in, const kopt_kernel_view *k,
                       const kopt_thresholds *th, kopt_findings *out, kopt_ctx *ctx)
{
    const kopt_sass_counts *s = k->sass;
    int cc = in->dev ? in->dev->cc_major : 9, minor = in->dev ? in->dev->cc_minor : 0;
    int has_lsb, has_bar;
    double lsb = 0, bar = 0, exposure, gain;
    int has_stalls;
    kopt__fb b;

    if (!s || cc < 8 || s->barriers == 0 || kopt__sum(s->sts) == 0 ||
        kopt__sum(s->lds) + s->ldsm == 0 || kopt__sum(s->ldg) == 0 || s->ldgsts > 0 ||
        s->tma > 0)
        return KOPT_OK;
    has_lsb = kopt__stall_share(k, "long_scoreboard", &lsb);
    has_bar = kopt__stall_share(k, "barrier", &bar);
    has_stalls = has_lsb || has_bar;
    exposure = kopt__exposure(k, KOPT_EXPOSURE_UNKNOWN);
    gain = has_stalls ? (lsb + bar) * exposure * KOPT_FIX_FRACTION : KOPT_ASYNC_GAIN_STATIC;
    kopt__fb_init(&b, "missing_async_copy", kopt__kname(k),
                  "global data reaches shared memory through registers, no %s",
                  cc >= 9 ? "TMA or cp.async" : "cp.async");
    kopt__fb_evidence(&b, "SASS LDGSTS + TMA", s->ldgsts + s->tma, "==", 0, "no async copy");
    kopt__fb_text(&b, &b.seen, "SASS: %d LDG, %d STS, %d LDS/LDSM, %d BAR, 0 LDGSTS, 0 TMA on "
                  "sm_%d%d%s.", kopt__sum(s->ldg), kopt__sum(s->sts), kopt__sum(s->lds) + s->ldsm,
                  s->barriers, cc, minor, in->dev ? "" : " (no device: sm_90 assumed)");
    if (has_lsb)
        kopt__fb_text(&b, &b.seen, " Warps stall %.0f%% of the time on loads "
                      "(long_scoreboard).", lsb * 100);
    if (has_bar)
        kopt__fb_text(&b, &b.seen, " Warps stall %.0f%% of the time at barriers.", bar * 100);
    kopt__fb_text(&b, &b.why, "Each tile goes global -> registers -> shared, then a barrier, "
                  "then math: the warps that copy cannot compute, and nothing loads while "
                  "they compute. (SASS alone cannot tell tiles from reduction scratch: if "
                  "shared memory only holds partial results, this does not apply.)");
    if (cc >= 9)
        kopt__fb_text(&b, &b.change, "Stage tiles with TMA: describe the matrix once with "
                      "cuTensorMapEncodeTiled, issue `cp.async.bulk.tensor` from one thread "
                      "into a ring of 2-4 shared buffers, each guarded by an mbarrier "
                      "(cuda::barrier / cuda::memcpy_async in libcu++); compute on stage k "
                      "while stage k+1 lands. A smaller step that already overlaps: "
                      "cp.async double buffering (`__pipeline_memcpy_async` 16 bytes per "
                      "thread, `__pipeline_commit()`, `__pipeline_wait_prior(1)` and "
                      "`__syncthreads()` before use).");
    else
        kopt__fb_text(&b, &b.change, "Double-buffer with cp.async: two shared tiles; issue "
                      "tile k+1's copy (`__pipeline_memcpy_async`, 16 bytes per thread) and "
                      "`__pipeline_commit()`, compute on tile k, then "
                      "`__pipeline_wait_prior(1)` and `__syncthreads()` before swapping.");
    if (has_stalls)
        kopt__fb_text(&b, &b.how, "(long_scoreboard + barrier stall shares, %.2f) times the "
                      "exposed time (%.2f) times KOPT_FIX_FRACTION (%.1f).", lsb + bar,
                      exposure, KOPT_FIX_FRACTION);
    else
        kopt__fb_text(&b, &b.how, "KOPT_ASYNC_GAIN_STATIC (%.2f): no stall metrics to size "
                      "the overlap.", KOPT_ASYNC_GAIN_STATIC);
    return kopt__fb_emit(&b, out, gain, has_stalls ? 0.55 : 0.35, ctx);
}

const kopt_tool kopt_tool_missing_async_copy = {
    .name = "missing_async_copy",
    .summary = "tiled kernel without cp.async/TMA: copies and math do not overlap",
    .classes = KOPT_CLASS_ALL,
    .needs = KOPT_NEEDS_SASS,
    .metrics = metrics,
    .run_kernel = one,
};
