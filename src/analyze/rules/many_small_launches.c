/* many_small_launches: a host-mode candidate launches many short kernels per call, so
 * launch gaps eat a visible share of its time. Reads the launch count per call and the
 * timed median. */
#include "analyze/analyze_int.h"

/* GPU-side gap per back-to-back stream launch (launch latency and ramp; a CUDA graph
 * roughly halves it). */
#define KOPT_LAUNCH_GAP_US 2.0
#define KOPT_LAUNCH_CONF 0.6

static kopt_status run(const kopt_analysis_input *in, const kopt_thresholds *th,
                       kopt_findings *out, kopt_ctx *ctx)
{
    int n = in->launches_per_call;
    double total_us = kopt__total_ms(in) * 1e3, avg_us, gain;
    kopt__fb b;

    if (!in->host_mode || n <= th->many_launches || total_us <= 0)
        return KOPT_OK;
    avg_us = total_us / n;
    if (avg_us >= th->small_launch_us)
        return KOPT_OK;
    gain = (n - 1) * KOPT_LAUNCH_GAP_US / total_us;
    kopt__fb_init(&b, "many_small_launches", "", "%d kernel launches per call, %.1f us each "
                  "on average", n, avg_us);
    kopt__fb_evidence(&b, "launches per call", n, ">", th->many_launches, "many_launches");
    kopt__fb_evidence(&b, "average time per launch, us", avg_us, "<", th->small_launch_us,
                      "small_launch_us");
    kopt__fb_text(&b, &b.seen, "One call takes %.1f us for %d launches (many_launches: %d; "
                  "small_launch_us: %.0f).", total_us, n, th->many_launches,
                  th->small_launch_us);
    kopt__fb_text(&b, &b.why, "Each launch costs a few microseconds of gap and ramp-up in "
                  "which the GPU does no useful work; with kernels this short the gaps are a "
                  "large part of the call.");
    kopt__fb_text(&b, &b.change, "Fuse consecutive kernels that pass data through memory "
                  "(elementwise chains, a reduction and its normalization) into one kernel; "
                  "capture the fixed launch sequence once in a CUDA Graph "
                  "(cudaStreamBeginCapture ... cudaGraphInstantiate, then cudaGraphLaunch per "
                  "call); drop cudaMemset/cudaMemcpy between kernels where a kernel can "
                  "initialize its own output.");
    kopt__fb_text(&b, &b.how, "(launches - 1) x KOPT_LAUNCH_GAP_US (%.1f us) over the call's "
                  "time: fusing into one launch removes those gaps.", KOPT_LAUNCH_GAP_US);
    return kopt__fb_emit(&b, out, gain, KOPT_LAUNCH_CONF, ctx);
}

const kopt_tool kopt_tool_many_small_launches = {
    .name = "many_small_launches",
    .summary = "host mode: many short kernel launches per call",
    .classes = KOPT_CLASS_ALL,
    .needs = KOPT_NEEDS_HOST | KOPT_NEEDS_TIMING,
    .metrics = NULL,
    .run = run,
};
