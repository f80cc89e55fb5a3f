/* high_registers: registers per thread above the architecture's registers_high. Sizes the
 * cost by what the count does to occupancy: if registers are the occupancy limiter, the
 * warps that would fit at registers_high; otherwise a small constant (the cost is then
 * the compiler's lost room, not occupancy). */
#include "analyze/analyze_int.h"

#include <string.h>

/* Gain when registers are high but do not limit occupancy. */
#define KOPT_REGS_GAIN_NOT_LIMITING 0.02

static kopt_status one(const kopt_analysis_input *in, const kopt_kernel_view *k,
                       const kopt_thresholds *th, kopt_findings *out, kopt_ctx *ctx)
{
    kopt_occupancy now, at_th;
    int threads = kopt__threads(k), limiting = 0, cap = (int)th->registers_high;
    double gain = KOPT_REGS_GAIN_NOT_LIMITING, exposure = kopt__exposure(k, KOPT_EXPOSURE_UNKNOWN);
    kopt__fb b;

    if (!k->res || k->res->registers <= th->registers_high)
        return KOPT_OK;
    kopt__fb_init(&b, "high_registers", kopt__kname(k), "%d registers per thread",
                  k->res->registers);
    kopt__fb_evidence(&b, "registers per thread", k->res->registers, ">", th->registers_high,
                      "registers_high");
    kopt__fb_text(&b, &b.seen, "ptxas: %d registers per thread (registers_high for this "
                  "architecture: %.0f).", k->res->registers, th->registers_high);
    if (threads > 0 &&
        kopt_occupancy_compute(&now, ctx, in->dev, threads, k->res->registers,
                               kopt__smem(k)) == KOPT_OK &&
        kopt_occupancy_compute(&at_th, ctx, in->dev, threads, cap, kopt__smem(k)) == KOPT_OK &&
        strstr(now.limiter, "registers") && at_th.blocks > now.blocks && at_th.blocks > 0) {
        limiting = 1;
        gain = (1.0 - (double)now.blocks / at_th.blocks) * exposure * KOPT_FIX_FRACTION;
        kopt__fb_text(&b, &b.seen, " Registers limit the SM to %d block(s) of %d threads "
                      "(%.0f%% occupancy); at %d registers %d would fit (%.0f%%).", now.blocks,
                      threads, now.pct, cap, at_th.blocks, at_th.pct);
    }
    kopt__fb_text(&b, &b.why, "%s", limiting
                  ? "Every register a thread holds is taken from the SM's 64K-entry register "
                    "file, so fewer warps fit and less latency is hidden."
                  : "Registers do not limit occupancy here, but a kernel this close to the "
                    "255 maximum leaves the compiler no room to unroll or prefetch further "
                    "and is one change away from spilling.");
    kopt__fb_text(&b, &b.change, "Let the compiler trade registers for occupancy with "
                  "`__launch_bounds__(%d, minBlocksPerSM)`; shrink the per-thread tile or the "
                  "number of accumulators; keep index math in 32-bit `int` (64-bit pointers "
                  "cost two registers each); move read-only tables to shared or __constant__ "
                  "memory.", threads > 0 ? threads : 256);
    if (limiting)
        kopt__fb_text(&b, &b.how, "Warps gained at registers_high (1 - %d/%d blocks) times "
                      "the exposed time (%.2f) times KOPT_FIX_FRACTION (%.1f); overlaps "
                      "occupancy_limiter.", now.blocks, at_th.blocks, exposure,
                      KOPT_FIX_FRACTION);
    else
        kopt__fb_text(&b, &b.how, "KOPT_REGS_GAIN_NOT_LIMITING (%.2f): registers are not the "
                      "occupancy limiter.", KOPT_REGS_GAIN_NOT_LIMITING);
    return kopt__fb_emit(&b, out, gain, KOPT_CONF_STATIC, ctx);
}

const kopt_tool kopt_tool_high_registers = {
    .name = "high_registers",
    .summary = "registers per thread above the architecture's threshold",
    .classes = KOPT_CLASS_ALL,
    .needs = KOPT_NEEDS_RESOURCES,
    .metrics = NULL,
    .run_kernel = one,
};
