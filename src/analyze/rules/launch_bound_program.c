/* launch_bound_program: the GPU idles for a large share of a program's forward, between its
 * kernels and before the first or after the last: the host (Python, the PyTorch
 * dispatcher, launches, synchronizations) sets the pace, and faster kernels cannot win that
 * time back. Reads the program profile's host gaps (start times and durations of the
 * kernels, the forward's wall time). */
#include "analyze/analyze_int.h"

/* Confidence with start times (gaps measured) / without (forward minus kernel time). */
#define KOPT_GAPS_CONF 0.65
#define KOPT_GAPS_CONF_NO_STARTS 0.45

/* The longest gap between kernels in launch order, in us, and the kernel after it. */
static double longest_gap(const kopt_program *p, int *after)
{
    double end = 0, best = 0;

    *after = -1;
    for (int k = 0; k < p->nkernels; k++) {
        const kopt_program_kernel *kp = &p->kernels[k];
        if (k > 0 && kp->start_us - end > best) {
            best = kp->start_us - end;
            *after = k;
        }
        if (k == 0 || kp->start_us + kp->dur_us > end)
            end = kp->start_us + kp->dur_us;
    }
    return best;
}

static kopt_status run(const kopt_analysis_input *in, const kopt_thresholds *th,
                       kopt_findings *out, kopt_ctx *ctx)
{
    const kopt_program *p = in->program;
    double longest_us = 0;
    int after = -1;
    char shortname[256];
    kopt__fb b;

    if (!p || (!p->has_starts && p->forward_ms <= 0) || p->gap_share < th->host_gap_share)
        return KOPT_OK;
    if (p->has_starts)
        longest_us = longest_gap(p, &after);
    kopt__fb_init(&b, "launch_bound_program", "", "the GPU idles %.0f%% of the %s: %.4f ms "
                  "of host gaps", p->gap_share * 100, p->forward_ms > 0 ? "forward" : "kernels' span",
                  p->gap_ms);
    kopt__fb_evidence(&b, "host gaps / forward time", p->gap_share, ">=", th->host_gap_share,
                      "host_gap_share");
    kopt__fb_text(&b, &b.seen, "%d kernel(s) keep the GPU busy %.4f ms", p->nkernels,
                  p->busy_ms);
    if (p->forward_ms > 0)
        kopt__fb_text(&b, &b.seen, " of a %.4f ms forward", p->forward_ms);
    kopt__fb_text(&b, &b.seen, ": host gaps %.4f ms (%.0f%%; host_gap_share: %.0f%%)",
                  p->gap_ms, p->gap_share * 100, th->host_gap_share * 100);
    if (p->has_starts) {
        kopt__fb_text(&b, &b.seen, ", %.4f ms between kernels and %.4f ms before the first "
                      "and after the last", p->gap_between_ms, p->gap_outside_ms);
        if (after > 0) {
            const char *op = p->kernels[after].op;
            kopt_kernel_short_name(p->kernels[after].name, shortname, sizeof(shortname));
            kopt__fb_text(&b, &b.seen, "; the longest gap, %.1f us, comes before kernel #%d "
                          "(%s%s%s)", longest_us, after + 1, shortname,
                          op && op[0] ? ", " : "", op ? op : "");
        }
    } else {
        kopt__fb_text(&b, &b.seen, " (no start times: the forward's time less the kernels', "
                      "taken as back to back)");
    }
    kopt__fb_text(&b, &b.seen, ".");
    kopt__fb_text(&b, &b.why, "While the GPU waits the host is launching: Python and the "
                  "PyTorch dispatcher spend microseconds per op, every launch costs a few "
                  "more, and a synchronization (.item(), .cpu(), printing a tensor, a "
                  "host-created tensor) stops the pipeline; kernels shorter than that finish "
                  "before the next one arrives. Faster kernels do not shorten this part.");
    kopt__fb_text(&b, &b.change, "Launch less from the host: fuse the program into one (or a "
                  "few) custom kernels in the ModelNew; or capture the forward once in a CUDA "
                  "graph (torch.cuda.CUDAGraph, or torch.compile(mode=\"reduce-overhead\")) "
                  "and replay it with one launch; remove synchronizations and host work from "
                  "forward (create constants and buffers once in __init__, no .item() or "
                  ".cpu(), no torch.tensor(...) per call).");
    kopt__fb_text(&b, &b.how, "The host gaps' share of the %s (%.4f of %.4f ms): a program "
                  "whose work is launched at once (one kernel, or one graph) waits on the "
                  "host for about none of it.", p->forward_ms > 0 ? "forward" : "kernels' span",
                  p->gap_ms, p->forward_ms > 0 ? p->forward_ms : p->span_ms);
    return kopt__fb_emit(&b, out, p->gap_share,
                         p->has_starts ? KOPT_GAPS_CONF : KOPT_GAPS_CONF_NO_STARTS, ctx);
}

const kopt_tool kopt_tool_launch_bound_program = {
    .name = "launch_bound_program",
    .summary = "program: the GPU idles between kernels (host gaps)",
    /* Host gaps count as latency in a program's time-weighted class. */
    .classes = KOPT_CLASS_LATENCY,
    .needs = KOPT_NEEDS_PROGRAM,
    .metrics = NULL,
    .run = run,
};
