/* warp_stalls: the reasons warps wait between instructions, from the WarpStateStats ratios
 * (smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio over the cycles
 * between issues); each reason above stall_share gets its own finding with advice for
 * that reason. */
#include "analyze/analyze_int.h"

static const char *const metrics[] = {
    "smsp__average_warp_latency_per_inst_issued.ratio",
    "smsp__issue_active.avg.per_cycle_active",
    "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio",
    NULL,
};

typedef struct stall_advice {
    const char *reason;
    int busy_means_good;    /* the stall shows a busy unit: gain from doing less work */
    const char *what;       /* what the warps wait for */
    const char *change;
} stall_advice;

static const stall_advice advice[] = {
    {"long_scoreboard", 0, "the result of a global or local memory load (L1TEX)",
     "Get more loads in flight before their results are used: unroll the loop so each "
     "thread issues several independent loads first (`#pragma unroll 4` over a block of "
     "elements), prefetch the next iteration's values into registers, stage reused data in "
     "shared memory (load a tile once, `__syncthreads()`, compute from it), and copy tiles "
     "asynchronously (cp.async / TMA). If the loads are spills, see register_spills."},
    {"barrier", 0, "other warps of the block at __syncthreads()",
     "Balance the work between barriers so warps arrive together; drop barriers that guard "
     "nothing; double-buffer the shared tile so one barrier per iteration suffices; do the "
     "last 32-element steps of a reduction with `__shfl_down_sync` instead of shared memory "
     "and barriers; smaller blocks wait for fewer warps."},
    {"mio_throttle", 0, "a slot in the memory-input/output queue (shared memory, special math)",
     "Issue fewer, wider shared-memory instructions (LDS.128: read float4 from shared), keep "
     "values reused by one thread in registers instead of re-reading shared memory, remove "
     "bank conflicts (see bank_conflicts), and prefer fast intrinsics (`__expf`) over "
     "MUFU-heavy precise math."},
    {"math_pipe_throttle", 1, "a busy math pipe (FMA, FP64, tensor or ALU)",
     "The math units are the limit, which is where a compute-bound kernel should be; to go "
     "faster do less math per result: move the work to tensor cores (mma/wgmma), fuse "
     "FMUL+FADD into FFMA, replace FP64 with FP32, hoist index math out of inner loops."},
    {"not_selected", 1, "their turn: another eligible warp was picked",
     "The scheduler always has a ready warp, so the kernel is issue-bound: cut instructions "
     "(vector loads, FFMA, less index math, tensor cores). Occupancy could even drop: "
     "`__launch_bounds__` with fewer blocks frees registers for more work per thread."},
    {"lg_throttle", 0, "a slot in the global/local load-store queue",
     "Issue fewer, wider global accesses: load float4 instead of float (see "
     "non_vectorized_loads), remove local-memory traffic (spills, run-time-indexed arrays), "
     "and coalesce so each request carries full sectors."},
    {"short_scoreboard", 0, "the result of shared memory or special math (MIO)",
     "Shorten the dependency on shared loads: load shared values for the next step before "
     "using the current ones (register double-buffering of fragments), remove bank "
     "conflicts, and use `__expf`/`__frcp_rn`-style intrinsics where precision allows."},
    {"wait", 0, "a fixed-latency dependency between consecutive instructions",
     "Give each warp independent instructions to interleave: several accumulators instead "
     "of one (`acc0 += ...; acc1 += ...`), unrolled loops, more elements per thread; more "
     "resident warps help too."},
};

static kopt_status one(const kopt_analysis_input *in, const kopt_kernel_view *k,
                       const kopt_thresholds *th, kopt_findings *out, kopt_ctx *ctx)
{
    double issue = 0, total = 0;
    int has_issue = kopt__metric(k, "smsp__issue_active.avg.per_cycle_active", &issue);
    kopt_status rc;

    kopt__metric(k, "smsp__average_warp_latency_per_inst_issued.ratio", &total);
    for (size_t i = 0; i < sizeof(advice) / sizeof(advice[0]); i++) {
        const stall_advice *a = &advice[i];
        double share, exposure, gain;
        int critical;
        kopt__fb b;

        if (!kopt__stall_share(k, a->reason, &share) || share < th->stall_share)
            continue;
        critical = share >= th->stall_share_critical;
        /* A stall that marks a busy unit costs in proportion to how busy issue is. */
        exposure = a->busy_means_good ? (has_issue ? issue : KOPT_EXPOSURE_UNKNOWN)
                                      : kopt__exposure(k, KOPT_EXPOSURE_UNKNOWN);
        gain = share * exposure * KOPT_FIX_FRACTION;
        kopt__fb_init(&b, "warp_stalls", kopt__kname(k), "%swarps stall on %s: %.0f%% of the "
                      "cycles between issues", critical ? "critical: " : "", a->reason,
                      share * 100);
        kopt__fb_evidence(&b, a->reason, share, ">=",
                          critical ? th->stall_share_critical : th->stall_share,
                          critical ? "stall_share_critical" : "stall_share");
        kopt__fb_text(&b, &b.seen, "%s stalls take %.0f%% of the cycles between a warp's "
                      "instructions (stall_share: %.0f%%, critical at %.0f%%)", a->reason,
                      share * 100, th->stall_share * 100, th->stall_share_critical * 100);
        if (total > 0)
            kopt__fb_text(&b, &b.seen, "; a warp issues every %.1f cycles", total);
        if (has_issue)
            kopt__fb_text(&b, &b.seen, "; issue slots busy %.0f%% of cycles (issue_active_low: "
                          "%.0f%%)", issue * 100, th->issue_active_low * 100);
        kopt__fb_text(&b, &b.seen, ".");
        kopt__fb_text(&b, &b.why, "Warps wait for %s. %s", a->what,
                      a->busy_means_good
                          ? "This marks a busy unit rather than idle time."
                          : has_issue && issue >= th->issue_active_low
                                ? "Other warps still keep the schedulers mostly busy, so "
                                  "part of this wait is hidden."
                                : "Too few other warps are ready to cover the wait, so the "
                                  "schedulers idle.");
        kopt__fb_text(&b, &b.change, "%s", a->change);
        kopt__fb_text(&b, &b.how, "Stall share (%.0f%%) times %s (%.2f) times "
                      "KOPT_FIX_FRACTION (%.1f: a targeted fix halves a stall).", share * 100,
                      a->busy_means_good ? "issue slots busy"
                                         : "the time exposed (1 - issue slots busy)",
                      exposure, KOPT_FIX_FRACTION);
        if ((rc = kopt__fb_emit(&b, out, gain, has_issue ? KOPT_CONF_MEASURED : 0.6, ctx)) < 0)
            return rc;
    }
    return KOPT_OK;
}

const kopt_tool kopt_tool_warp_stalls = {
    .name = "warp_stalls",
    .summary = "the dominant reasons warps stall, with reason-specific advice",
    .classes = KOPT_CLASS_ALL,
    .needs = KOPT_NEEDS_METRICS,
    .metrics = metrics,
    .run_kernel = one,
};
