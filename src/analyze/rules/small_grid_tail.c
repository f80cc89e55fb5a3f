/* small_grid_tail: the grid leaves SMs idle, either because it has fewer blocks than SMs
 * (ncu: speedup (SMs - grid) / SMs) or because its last wave is partial (idle share of
 * the waves: (ceil(w) - w) / ceil(w), w = blocks / (SMs x resident blocks per SM)). */
#include "analyze/analyze_int.h"

#include <math.h>

#define KOPT_GRID_CONF 0.6            /* assumes every block does the same work */

static kopt_status one(const kopt_analysis_input *in, const kopt_kernel_view *k,
                       const kopt_thresholds *th, kopt_findings *out, kopt_ctx *ctx)
{
    long long grid = kopt__blocks(k);
    int threads = kopt__threads(k), sms = in->dev->sm_count;
    kopt_occupancy o;
    double waves, idle;
    long long per_wave;
    kopt__fb b;
    kopt_status rc;

    if (grid <= 0 || threads <= 0 || sms <= 0)
        return KOPT_OK;
    if (grid < sms) {
        double gain = (double)(sms - grid) / sms;
        kopt__fb_init(&b, "small_grid_tail", kopt__kname(k),
                      "%lld blocks for %d SMs: %lld SMs idle", grid, sms, sms - grid);
        kopt__fb_evidence(&b, "grid blocks", (double)grid, "<", sms, "device SM count");
        kopt__fb_text(&b, &b.seen, "Grid of %lld blocks of %d threads on %d SMs.", grid,
                      threads, sms);
        kopt__fb_text(&b, &b.why, "A block runs on one SM; with fewer blocks than SMs the rest "
                      "of the GPU, its share of DRAM bandwidth and of the math units, does "
                      "nothing.");
        kopt__fb_text(&b, &b.change, "Launch at least one block per SM (here %d), better two "
                      "or more: split each block's work into smaller tiles, use split-K for a "
                      "GEMM-like contraction (blocks share a dot product and combine with "
                      "atomicAdd or a second pass), or size a grid-stride loop as 2 x %d "
                      "blocks instead of a fixed small grid.", sms, sms);
        kopt__fb_text(&b, &b.how, "Idle SMs over all SMs: (%d - %lld) / %d (ncu's Small Grid "
                      "estimate).", sms, grid, sms);
        return kopt__fb_emit(&b, out, gain, KOPT_GRID_CONF, ctx);
    }
    if ((rc = kopt_occupancy_compute(&o, ctx, in->dev, threads, k->res ? k->res->registers : 0,
                                     kopt__smem(k))) < 0)
        return rc;
    if (o.blocks <= 0)
        return KOPT_OK;
    per_wave = (long long)sms * o.blocks;
    waves = (double)grid / per_wave;
    if (waves <= 1.0)
        return KOPT_OK;
    idle = (ceil(waves) - waves) / ceil(waves);
    if (idle < th->waves_tail_min_gain)
        return KOPT_OK;
    kopt__fb_init(&b, "small_grid_tail", kopt__kname(k),
                  "%.2f waves: the last wave leaves %.0f%% of the SM slots idle", waves,
                  (ceil(waves) - waves) * 100);
    kopt__fb_evidence(&b, "idle share of the waves", idle, ">=", th->waves_tail_min_gain,
                      "waves_tail_min_gain");
    kopt__fb_text(&b, &b.seen, "%lld blocks, %d resident per SM (%s) x %d SMs = %lld per "
                  "wave: %.2f waves, %.0f full (waves_tail_min_gain: %.0f%%).", grid,
                  o.blocks, k->res ? "from registers, shared memory and block size"
                                   : "block size only, resources unknown",
                  sms, per_wave, waves, floor(waves), th->waves_tail_min_gain * 100);
    kopt__fb_text(&b, &b.why, "Blocks run in waves of %lld; the last, partial wave runs as "
                  "long as a full one while most SMs wait.", per_wave);
    kopt__fb_text(&b, &b.change, "Make the block count a whole number of waves (a multiple "
                  "of %lld, or just under it) by choosing the tile size, or go persistent: "
                  "launch exactly %lld blocks and loop `for (t = blockIdx.x; t < ntiles; t += "
                  "gridDim.x)`. Smaller tiles also shrink the tail relative to the whole.",
                  per_wave, per_wave);
    kopt__fb_text(&b, &b.how, "Idle share of the wave slots: (ceil(%.2f) - %.2f) / "
                  "ceil(%.2f), if every block takes the same time (ncu's bound is 1/(1 + "
                  "full waves) = %.0f%%).", waves, waves, waves, 100.0 / (1 + floor(waves)));
    return kopt__fb_emit(&b, out, idle, k->res ? KOPT_GRID_CONF : KOPT_CONF_STATIC, ctx);
}

const kopt_tool kopt_tool_small_grid_tail = {
    .name = "small_grid_tail",
    .summary = "fewer blocks than SMs, or a partial last wave",
    .classes = KOPT_CLASS_ALL,
    .needs = KOPT_NEEDS_DEVICE,
    .metrics = NULL,
    .run_kernel = one,
};
