/* block_size: a block size that is not a multiple of 32 leaves lanes of its last warp
 * idle while the warp still takes a full warp slot and issue slot (ncu's formula:
 * (1 / warps) x (1 - threads in the last warp / 32)). */
#include "analyze/analyze_int.h"

#define KOPT_BLOCK_CONF 0.6

static kopt_status one(const kopt_analysis_input *in, const kopt_kernel_view *k,
                       const kopt_thresholds *th, kopt_findings *out, kopt_ctx *ctx)
{
    int threads = kopt__threads(k), warps, last;
    double gain;
    kopt__fb b;

    if (threads <= 0 || threads % 32 == 0)
        return KOPT_OK;
    warps = (threads + 31) / 32;
    last = threads - (warps - 1) * 32;
    gain = (1.0 / warps) * (1.0 - last / 32.0);
    kopt__fb_init(&b, "block_size", kopt__kname(k),
                  "%d threads per block is not a multiple of 32", threads);
    kopt__fb_evidence(&b, "threads per block % 32", threads % 32, "!=", 0, "warp size");
    kopt__fb_text(&b, &b.seen, "Block (%d, %d, %d) = %d threads: %d warps, the last with %d "
                  "active lanes.", k->block[0], k->block[1], k->block[2], threads, warps, last);
    kopt__fb_text(&b, &b.why, "Hardware schedules whole warps: the last warp's %d empty lanes "
                  "still occupy a warp slot and every issue cycle it gets.", 32 - last);
    kopt__fb_text(&b, &b.change, "Use a multiple of 32 threads (128 or 256 are good starts) and "
                  "guard the surplus threads with `if (i < n)`; for 2D blocks make blockDim.x "
                  "a multiple of 32 (e.g. 32 x 8 instead of 10 x 10).");
    kopt__fb_text(&b, &b.how, "Idle lanes over all lanes: (1/%d) x (1 - %d/32).", warps, last);
    return kopt__fb_emit(&b, out, gain, KOPT_BLOCK_CONF, ctx);
}

const kopt_tool kopt_tool_block_size = {
    .name = "block_size",
    .summary = "block size not a multiple of the warp size",
    .classes = KOPT_CLASS_ALL,
    .needs = 0,
    .metrics = NULL,
    .run_kernel = one,
};
