/* uncoalesced_global: global loads fetch more 32-byte sectors per request than the access
 * width needs. Measured: l1tex sectors / requests against the ideal for the kernel's LDG
 * widths (from SASS, else 32-bit assumed and cross-checked with bytes used per sector).
 * Static (no metrics): a memory-bound kernel far below the DRAM roof that reads global
 * memory directly, reported as a low-confidence lead to confirm with counters. */
#include "analyze/analyze_int.h"

/* Sectors a warp needs per request when its 32 threads access consecutive elements of
 * 8, 16, 32, 64, 128 bits. */
static const double ideal_sectors[KOPT_SASS_NWIDTH] = {1, 2, 4, 8, 16};
/* Without SASS widths: assume 32-bit accesses. */
#define KOPT_UNCOAL_ASSUMED_IDEAL 4.0
/* Static lead: the candidate runs below this % of its memory bound. */
#define KOPT_UNCOAL_STATIC_FAR_PCT 30.0
/* Static lead: memory share assumed busy when unmeasured. */
#define KOPT_UNCOAL_MEM_FRAC_UNKNOWN 0.6
#define KOPT_UNCOAL_CONF_STATIC 0.25

static const char *const metrics[] = {
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    NULL,
};

static const char *change_text =
    "Make consecutive threads (threadIdx.x) touch consecutive addresses: index the "
    "fastest-varying dimension with threadIdx.x (`a[row * ld + threadIdx.x]`, not "
    "`a[threadIdx.x * ld + col]`). When the algorithm needs the other order (a transpose, "
    "a column walk), load the tile coalesced into shared memory (`__shared__ float "
    "t[32][33]`) and read it transposed from there. Arrays of structs read one field at a "
    "time become a struct of arrays.";

static double sass_ideal(const kopt_sass_counts *s, int *known)
{
    double sum = 0;
    int n = 0;

    *known = 0;
    if (!s)
        return KOPT_UNCOAL_ASSUMED_IDEAL;
    for (int w = 0; w < KOPT_SASS_NWIDTH; w++) {
        sum += s->ldg[w] * ideal_sectors[w];
        n += s->ldg[w];
    }
    if (n == 0)
        return KOPT_UNCOAL_ASSUMED_IDEAL;
    *known = 1;
    return sum / n;
}

static kopt_status measured(const kopt_kernel_view *k, const kopt_thresholds *th,
                            kopt_findings *out, kopt_ctx *ctx, double sectors, double requests)
{
    kopt__fb b;
    int known;
    double ideal = sass_ideal(k->sass, &known), ratio = sectors / requests, used, excess;
    double limit = th->sectors_excess * ideal, memfrac = kopt__mem_frac(k, 0.5);

    if (ratio <= limit)
        return KOPT_OK;
    /* Sectors whose bytes are used are not wasted, whatever the ratio: without widths, wide
       (64/128-bit) loads look like excess, and the static width mix misleads when a scalar
       fallback path that never runs sits beside the float4 one. */
    if (kopt__metric(k, "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio",
                     &used) && used >= th->sector_bytes_used_min)
        return KOPT_OK;
    excess = 1.0 - ideal / ratio;
    kopt__fb_init(&b, "uncoalesced_global", kopt__kname(k),
                  "global loads fetch %.1f sectors per request where %.1f would do", ratio,
                  ideal);
    kopt__fb_evidence(&b, "l1tex__t_sectors / l1tex__t_requests (global ld)", ratio, ">",
                      limit, "sectors_excess x ideal");
    kopt__fb_text(&b, &b.seen, "%.0f sectors for %.0f load requests: %.2f per request, "
                  "against an ideal of %.1f (%s) times sectors_excess (%.2f) = %.2f.", sectors,
                  requests, ratio, ideal,
                  known ? "from the kernel's LDG widths" : "32-bit loads assumed, no SASS",
                  th->sectors_excess, limit);
    kopt__fb_text(&b, &b.why, "A warp's load is served in 32-byte sectors; scattered "
                  "addresses make it fetch %.0f%% more sectors than the data it uses, so DRAM "
                  "and L2 bandwidth are spent on bytes that are thrown away.", excess * 100);
    kopt__fb_text(&b, &b.change, "%s", change_text);
    kopt__fb_text(&b, &b.how, "Excess sectors (1 - %.1f/%.2f = %.0f%%) times the memory "
                  "throughput share (%.0f%%): the memory time that moves unused bytes.", ideal,
                  ratio, excess * 100, memfrac * 100);
    return kopt__fb_emit(&b, out, excess * memfrac, known ? 0.8 : 0.6, ctx);
}

static kopt_status lead(const kopt_analysis_input *in, const kopt_kernel_view *k,
                        kopt_findings *out, kopt_ctx *ctx)
{
    kopt_classification c;
    const kopt_sass_counts *s = k->sass;
    kopt__fb b;
    double gain;

    if (!s || kopt__sum(s->ldg) == 0 || kopt__sum(s->lds) + kopt__sum(s->sts) > 0)
        return KOPT_OK;
    kopt_classify(in, &c);
    if (c.analytic != KOPT_CLASS_MEMORY || c.pct_of_bound <= 0 ||
        c.pct_of_bound >= KOPT_UNCOAL_STATIC_FAR_PCT)
        return KOPT_OK;
    gain = (1.0 - c.pct_of_bound / 100.0) * KOPT_UNCOAL_MEM_FRAC_UNKNOWN * KOPT_FIX_FRACTION;
    kopt__fb_init(&b, "uncoalesced_global", kopt__kname(k),
                  "memory-bound at %.0f%% of its bound with direct global loads: check "
                  "coalescing", c.pct_of_bound);
    kopt__fb_evidence(&b, "roofline % of bound", c.pct_of_bound, "<",
                      KOPT_UNCOAL_STATIC_FAR_PCT, "KOPT_UNCOAL_STATIC_FAR_PCT");
    kopt__fb_text(&b, &b.seen, "The problem is memory-bound and the candidate reaches %.1f%% "
                  "of its bound (under KOPT_UNCOAL_STATIC_FAR_PCT, %.0f%%); the kernel issues "
                  "%d global loads and stages nothing through shared memory. No counters were "
                  "read, so the access pattern itself is not measured.", c.pct_of_bound,
                  KOPT_UNCOAL_STATIC_FAR_PCT, kopt__sum(s->ldg));
    kopt__fb_text(&b, &b.why, "A memory-bound kernel this far below the DRAM roof most often "
                  "fetches sectors it does not use (strided or scattered addresses). Confirm "
                  "with --ncu (l1tex__t_sectors / l1tex__t_requests).");
    kopt__fb_text(&b, &b.change, "%s", change_text);
    kopt__fb_text(&b, &b.how, "Room left under the roof (1 - %.2f) times an assumed memory "
                  "share (%.1f) times KOPT_FIX_FRACTION (%.1f); a lead, not a measurement.",
                  c.pct_of_bound / 100.0, KOPT_UNCOAL_MEM_FRAC_UNKNOWN, KOPT_FIX_FRACTION);
    return kopt__fb_emit(&b, out, gain, KOPT_UNCOAL_CONF_STATIC, ctx);
}

static kopt_status one(const kopt_analysis_input *in, const kopt_kernel_view *k,
                       const kopt_thresholds *th, kopt_findings *out, kopt_ctx *ctx)
{
    double sectors, requests;

    if (kopt__metric(k, "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", &sectors) &&
        kopt__metric(k, "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", &requests))
        return requests > 0 ? measured(k, th, out, ctx, sectors, requests) : KOPT_OK;
    return lead(in, k, out, ctx);
}

const kopt_tool kopt_tool_uncoalesced_global = {
    .name = "uncoalesced_global",
    .summary = "global loads fetch more sectors per request than their width needs",
    .classes = KOPT_CLASS_MEMORY | KOPT_CLASS_LATENCY | KOPT_CLASS_MIXED,
    .needs = 0,
    .needs_any = KOPT_NEEDS_METRICS | KOPT_NEEDS_SASS,
    .metrics = metrics,
    .run_kernel = one,
};
