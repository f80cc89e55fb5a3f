/* occupancy_limiter: theoretical occupancy computed from the kernel's registers, shared
 * memory and block size against the SM's limits (kopt_occupancy_compute); names the
 * limiting resource and the value that admits one more block. Also compares achieved
 * occupancy (sm__warps_active) with theoretical when measured. */
#include "analyze/analyze_int.h"

#include <string.h>

#define KOPT_OCC_CONF_STATIC 0.5
#define KOPT_OCC_CONF_MEASURED 0.7

static const char *const metrics[] = {
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "smsp__issue_active.avg.per_cycle_active",
    NULL,
};

static void advise(kopt__fb *b, const kopt_analysis_input *in, const kopt_kernel_view *k,
                   const kopt_occupancy *o, int threads)
{
    int next = o->blocks + 1;

    if (strstr(o->limiter, "registers")) {
        int regs = kopt_occupancy_regs_for(in->dev, threads, next);
        if (regs > 0)
            kopt__fb_text(b, &b->change, "Registers: %d per thread allow %d block(s) of %d "
                          "threads; at %d or fewer, %d fit. Ask for it with "
                          "`__launch_bounds__(%d, %d)` and check the compile shows no spills, "
                          "or shrink the per-thread tile. ", k->res->registers, o->blocks,
                          threads, regs, next, threads, next);
    }
    if (strstr(o->limiter, "shared memory")) {
        int smem = kopt_occupancy_smem_for(in->dev, next);
        kopt__fb_text(b, &b->change, "Shared memory: %d B per block allow %d block(s); at "
                      "%d B or less, %d fit. Use a smaller tile, fewer pipeline stages, or "
                      "stage operands in bf16. ", kopt__smem(k), o->blocks, smem, next);
    }
    if (strstr(o->limiter, "block slots"))
        kopt__fb_text(b, &b->change, "Block slots: only %d blocks fit per SM and each has %d "
                      "warp(s); use at least %d threads per block so the slots fill the SM's "
                      "%d warps. ", o->max_blocks_per_sm, o->warps_per_block,
                      32 * ((o->max_warps + o->max_blocks_per_sm - 1) / o->max_blocks_per_sm),
                      o->max_warps);
    if (strstr(o->limiter, "warps"))
        kopt__fb_text(b, &b->change, "Warps: %d-warp blocks leave %d of %d warp slots unused; "
                      "pick a block size that divides %d warps (e.g. 256 or 512 threads). ",
                      o->warps_per_block, o->max_warps - o->warps, o->max_warps, o->max_warps);
}

static kopt_status one(const kopt_analysis_input *in, const kopt_kernel_view *k,
                       const kopt_thresholds *th, kopt_findings *out, kopt_ctx *ctx)
{
    kopt_occupancy o;
    kopt__fb b;
    int threads = kopt__threads(k);
    double exposure, gain, achieved;
    int measured_issue;
    kopt_status rc;

    if (!k->res || threads <= 0)
        return KOPT_OK;
    if ((rc = kopt_occupancy_compute(&o, ctx, in->dev, threads, k->res->registers,
                                     kopt__smem(k))) < 0)
        return rc;
    measured_issue = kopt__metric(k, "smsp__issue_active.avg.per_cycle_active", &exposure);
    exposure = kopt__exposure(k, KOPT_EXPOSURE_UNKNOWN);
    if (o.blocks == 0) {
        kopt__fb_init(&b, "occupancy_limiter", kopt__kname(k),
                      "a block of %d threads does not fit on an SM", threads);
        kopt__fb_text(&b, &b.seen, "%d registers per thread, %d B shared memory per block: "
                      "the %s limit admits no block.", k->res->registers, kopt__smem(k),
                      o.limiter);
        kopt__fb_text(&b, &b.why, "The launch fails.");
        kopt__fb_text(&b, &b.change, "Reduce the %s per block below the SM's limit.",
                      o.limiter);
        kopt__fb_text(&b, &b.how, "None: a launch that fails has no time to save.");
        return kopt__fb_emit(&b, out, 0, 1, ctx);
    }
    if (o.pct < th->occupancy_theoretical_pct) {
        gain = (1.0 - (double)o.blocks / (o.blocks + 1)) * exposure;
        kopt__fb_init(&b, "occupancy_limiter", kopt__kname(k),
                      "theoretical occupancy %.0f%%, limited by %s", o.pct, o.limiter);
        kopt__fb_evidence(&b, "theoretical occupancy, %", o.pct, "<",
                          th->occupancy_theoretical_pct, "occupancy_theoretical_pct");
        kopt__fb_text(&b, &b.seen, "%d threads/block, %d registers/thread, %d B shared "
                      "memory/block: %d block(s) per SM by registers, %d by shared memory, %d "
                      "by warps, %d by block slots -> %d blocks, %d of %d warps (%.0f%%, "
                      "occupancy_theoretical_pct: %.0f%%)%s.", threads, k->res->registers,
                      kopt__smem(k), o.blocks_by_regs > 9999 ? 9999 : o.blocks_by_regs,
                      o.blocks_by_smem > 9999 ? 9999 : o.blocks_by_smem, o.blocks_by_warps,
                      o.blocks_by_slots, o.blocks, o.warps, o.max_warps, o.pct,
                      th->occupancy_theoretical_pct,
                      in->dev ? "" : "; no device given, H100/H200 limits assumed");
        kopt__fb_text(&b, &b.why, "Few resident warps leave the schedulers with nothing to "
                      "issue while warps wait on memory or on long-latency math; more warps "
                      "hide that latency.");
        advise(&b, in, k, &o, threads);
        kopt__fb_text(&b, &b.how, "Going from %d to %d resident blocks adds 1/%d of the warps; "
                      "times the time exposed to latency (%s: %.2f).", o.blocks, o.blocks + 1,
                      o.blocks + 1,
                      measured_issue ? "1 - issue slots busy" : "KOPT_EXPOSURE_UNKNOWN",
                      exposure);
        if ((rc = kopt__fb_emit(&b, out, gain,
                                measured_issue ? KOPT_OCC_CONF_MEASURED : KOPT_OCC_CONF_STATIC,
                                ctx)) < 0)
            return rc;
    }
    if (kopt__metric(k, "sm__warps_active.avg.pct_of_peak_sustained_active", &achieved) &&
        o.pct - achieved >= th->achieved_occupancy_gap_pts) {
        gain = (o.pct - achieved) / o.pct * exposure * KOPT_FIX_FRACTION;
        kopt__fb_init(&b, "occupancy_limiter", kopt__kname(k),
                      "achieved occupancy %.0f%% of a theoretical %.0f%%", achieved, o.pct);
        kopt__fb_evidence(&b, "theoretical - achieved occupancy, points", o.pct - achieved,
                          ">=", th->achieved_occupancy_gap_pts, "achieved_occupancy_gap_pts");
        kopt__fb_text(&b, &b.seen, "sm__warps_active: %.0f%%; the resources allow %.0f%% "
                      "(achieved_occupancy_gap_pts: %.0f).", achieved, o.pct,
                      th->achieved_occupancy_gap_pts);
        kopt__fb_text(&b, &b.why, "The SMs hold fewer warps than they could: blocks finish at "
                      "different times (uneven work per block), the last wave is partial, or "
                      "the grid is too small to keep every SM full.");
        kopt__fb_text(&b, &b.change, "Give every block the same amount of work (split long "
                      "rows, sort or bin irregular work), make the grid a whole number of "
                      "waves (see small_grid_tail), or loop inside a persistent grid so SMs "
                      "pick up new tiles as they finish.");
        kopt__fb_text(&b, &b.how, "Missing share of warps ((%.0f - %.0f) / %.0f) times the "
                      "exposed time (%.2f) times KOPT_FIX_FRACTION (%.1f).", o.pct, achieved,
                      o.pct, exposure, KOPT_FIX_FRACTION);
        if ((rc = kopt__fb_emit(&b, out, gain, KOPT_OCC_CONF_STATIC, ctx)) < 0)
            return rc;
    }
    return KOPT_OK;
}

const kopt_tool kopt_tool_occupancy_limiter = {
    .name = "occupancy_limiter",
    .summary = "theoretical occupancy and the resource that limits it",
    .classes = KOPT_CLASS_ALL,
    .needs = KOPT_NEEDS_RESOURCES,
    .metrics = metrics,
    .run_kernel = one,
};
