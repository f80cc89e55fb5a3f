/* unfused_chain: a program whose kernels together move more DRAM bytes than the problem's
 * compulsory traffic (its inputs read once, its outputs written once): the difference is
 * intermediates one kernel writes and the next reads back, which one fused kernel would
 * keep on chip. Priced at the DRAM rate, that traffic is the gain. Reads the program
 * profile (kernels' DRAM bytes, compulsory_bytes) and the DRAM rate. */
#include "analyze/analyze_int.h"

#include <string.h>

/* Kernels named one by one in the finding; the rest are counted. */
#define KOPT_CHAIN_LIST_MAX 8
/* Confidence with the traffic of every kernel measured and a DRAM rate / otherwise. */
#define KOPT_CHAIN_CONF 0.7
#define KOPT_CHAIN_CONF_PARTIAL 0.5

static const char *const metrics[] = {
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    NULL,
};

/* The distinct torch ops of the chain, in order, for the change text. */
static void list_ops(kopt__fb *b, const kopt_program *p)
{
    int said = 0;

    for (int k = 0; k < p->nkernels; k++) {
        const char *op = p->kernels[k].op;
        int seen = 0;
        if (p->kernels[k].dram_bytes <= 0 || !op || !op[0])
            continue;
        for (int j = 0; j < k && !seen; j++)
            seen = p->kernels[j].dram_bytes > 0 && p->kernels[j].op &&
                   strcmp(p->kernels[j].op, op) == 0;
        if (!seen)
            kopt__fb_text(b, &b->change, "%s%s", said++ ? ", " : " (", op);
    }
    if (said)
        kopt__fb_text(b, &b->change, ")");
}

static kopt_status run(const kopt_analysis_input *in, const kopt_thresholds *th,
                       kopt_findings *out, kopt_ctx *ctx)
{
    const kopt_program *p = in->program;
    double ratio, total_ms = kopt__total_ms(in), fusion_ms, gbs, chain_ms = 0, gain;
    int movers = 0, listed = 0, partial;
    char shortname[256];
    kopt__fb b;

    if (!p || p->fusion_bytes <= 0 || p->compulsory_bytes <= 0 || total_ms <= 0)
        return KOPT_OK;
    for (int k = 0; k < p->nkernels; k++)
        if (p->kernels[k].dram_bytes > 0) {
            movers++;
            chain_ms += p->kernels[k].dur_us / 1e3;
        }
    ratio = p->dram_bytes / p->compulsory_bytes;
    if (movers < 2 || ratio < th->dram_excess_ratio)
        return KOPT_OK;
    fusion_ms = kopt__fusion_ms(in, &gbs);
    partial = p->dram_measured < p->nkernels;

    kopt__fb_init(&b, "unfused_chain", "", "%d kernels move %.3g MB through DRAM, %.2fx the "
                  "%.3g MB the problem must move", movers, p->dram_bytes / 1e6, ratio,
                  p->compulsory_bytes / 1e6);
    kopt__fb_evidence(&b, "program DRAM bytes / compulsory bytes", ratio, ">=",
                      th->dram_excess_ratio, "dram_excess_ratio");
    kopt__fb_text(&b, &b.seen, "DRAM traffic by kernel, in launch order:");
    for (int k = 0; k < p->nkernels; k++) {
        const kopt_program_kernel *kp = &p->kernels[k];
        if (kp->dram_bytes <= 0)
            continue;
        if (listed++ == KOPT_CHAIN_LIST_MAX) {
            kopt__fb_text(&b, &b.seen, " and %d more", movers - KOPT_CHAIN_LIST_MAX);
            break;
        }
        kopt_kernel_short_name(kp->name, shortname, sizeof(shortname));
        kopt__fb_text(&b, &b.seen, "%s #%d %s%s%s%s %.4g B", listed > 1 ? ";" : "", k + 1,
                      shortname, kp->op && kp->op[0] ? " (" : "", kp->op ? kp->op : "",
                      kp->op && kp->op[0] ? ")" : "", kp->dram_bytes);
    }
    kopt__fb_text(&b, &b.seen, ". In all %.4g B against %.4g B compulsory (inputs read once, "
                  "outputs written once): %.4g B of intermediates", p->dram_bytes,
                  p->compulsory_bytes, p->fusion_bytes);
    if (fusion_ms >= 0)
        kopt__fb_text(&b, &b.seen, ", %.4f ms at %.0f GB/s", fusion_ms, gbs);
    kopt__fb_text(&b, &b.seen, ".");
    if (partial)
        kopt__fb_text(&b, &b.seen, " Only %d of %d kernels have DRAM bytes measured: the "
                      "traffic is a lower bound.", p->dram_measured, p->nkernels);
    kopt__fb_text(&b, &b.why, "Each intermediate tensor is written to DRAM by one kernel and "
                  "read back by the next: bandwidth spent on data the problem never asks "
                  "for, plus a launch per step. A memory-bound chain takes as long as its "
                  "bytes; one kernel that keeps the intermediates in registers or shared "
                  "memory moves only the compulsory bytes.");
    kopt__fb_text(&b, &b.change, "Write one kernel that computes the whole chain");
    list_ops(&b, p);
    kopt__fb_text(&b, &b.change, " from the inputs in a single pass, each thread carrying its "
                  "elements through every step in registers (a reduction step: one block per "
                  "row, the row in registers or shared memory). In a ModelNew: one custom "
                  "CUDA kernel (torch.utils.cpp_extension.load_inline) or one Triton kernel; "
                  "torch.compile fuses elementwise chains into one Triton kernel. After a "
                  "GEMM or convolution, fold the elementwise steps (bias, activation, scale, "
                  "residual) into its epilogue (cuBLASLt epilogues, CUTLASS epilogue "
                  "visitors).");
    if (fusion_ms >= 0) {
        gain = fusion_ms / total_ms;
        kopt__fb_evidence(&b, "fusion ms", fusion_ms, ">", 0, "intermediate bytes / DRAM rate");
        kopt__fb_text(&b, &b.how, "The intermediates' time at the DRAM rate (%.4g B / %.0f "
                      "GB/s = %.4f ms) over the program's %.4f ms (%s): what a fused kernel "
                      "would not spend moving them.", p->fusion_bytes, gbs, fusion_ms,
                      total_ms, in->median_ms > 0 ? "the forward" : "its kernels' time");
    } else {
        gain = p->fusion_bytes / p->dram_bytes * chain_ms / total_ms;
        kopt__fb_evidence(&b, "fusion bytes", p->fusion_bytes, ">", 0,
                          "compulsory_bytes");
        kopt__fb_text(&b, &b.how, "No DRAM rate known: the intermediates' share of the "
                      "traffic (%.4g / %.4g B) times the moving kernels' share of the "
                      "program's time (%.4f of %.4f ms), taking them as bandwidth-bound.",
                      p->fusion_bytes, p->dram_bytes, chain_ms, total_ms);
    }
    return kopt__fb_emit(&b, out, gain,
                         partial || fusion_ms < 0 ? KOPT_CHAIN_CONF_PARTIAL : KOPT_CHAIN_CONF,
                         ctx);
}

const kopt_tool kopt_tool_unfused_chain = {
    .name = "unfused_chain",
    .summary = "program: kernels pass intermediates through DRAM (fusion bytes)",
    .classes = KOPT_CLASS_MEMORY | KOPT_CLASS_LATENCY | KOPT_CLASS_MIXED,
    .needs = KOPT_NEEDS_PROGRAM,
    .metrics = metrics,
    .run = run,
};
