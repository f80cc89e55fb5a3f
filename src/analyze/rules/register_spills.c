/* register_spills: values that did not fit in registers live in local memory. Reads the
 * ptxas report (spill bytes, stack frame), SASS LDL/STL, and measured local-memory
 * sectors; tells spills apart from per-thread arrays indexed at run time. */
#include "analyze/analyze_int.h"

/* Static estimate: a base cost plus a share growing with spilled bytes, up to a maximum
 * (each spilled word costs a store and a reload at L1/L2 latency). */
#define KOPT_SPILL_GAIN_BASE 0.05
#define KOPT_SPILL_GAIN_PER_KB 0.25
#define KOPT_SPILL_GAIN_STATIC_MAX 0.30
#define KOPT_SPILL_CONF_STATIC 0.5
#define KOPT_SPILL_CONF_MEASURED 0.8

static const char *const metrics[] = {
    "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    NULL,
};

static kopt_status one(const kopt_analysis_input *in, const kopt_kernel_view *k,
                       const kopt_thresholds *th, kopt_findings *out, kopt_ctx *ctx)
{
    const kopt_kernel_info *r = k->res;
    int spill = r ? r->spill_stores + r->spill_loads : 0, stack = r ? r->stack_frame : 0;
    int local_insts = k->sass ? k->sass->ldl + k->sass->stl : 0;
    double lld = 0, lst = 0, gld = 0, local = 0, share = 0, gain, conf;
    int has_local = kopt__metric(k, "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum", &lld) |
                    kopt__metric(k, "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum", &lst);
    int is_spill;
    kopt__fb b;

    local = lld + lst;
    if (spill <= 0 && local_insts <= 0 && local <= 0)
        return KOPT_OK;
    /* LDL/STL without spill bytes but with a stack frame: a local array, not a spill. */
    is_spill = spill > 0 || (!r && local_insts > 0);
    kopt__fb_init(&b, "register_spills", kopt__kname(k), "%s",
                  is_spill ? "registers spill to local memory"
                           : "a per-thread array lives in local memory");
    if (r) {
        kopt__fb_evidence(&b, "ptxas spill bytes (stores + loads)", spill, ">", 0,
                          "no spills");
        kopt__fb_text(&b, &b.seen, "ptxas: %d registers, %d B spill stores, %d B spill "
                      "loads, %d B stack frame per thread.", r->registers, r->spill_stores,
                      r->spill_loads, stack);
        if (r->registers >= 255)
            kopt__fb_text(&b, &b.seen, " The kernel is at the 255-register maximum: it needs "
                          "more live values than a thread can hold.");
        else if (spill > 0)
            kopt__fb_text(&b, &b.seen, " It spills at %d registers, below the 255 maximum: a "
                          "__launch_bounds__ minimum-blocks argument or -maxrregcount is "
                          "holding the count down.", r->registers);
    }
    if (k->sass) {
        kopt__fb_evidence(&b, "SASS LDL+STL", local_insts, ">", 0, "no local accesses");
        kopt__fb_text(&b, &b.seen, "%sSASS: %d LDL and %d STL instructions.",
                      b.seen.len ? " " : "", k->sass->ldl, k->sass->stl);
    }
    if (has_local) {
        kopt__metric(k, "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", &gld);
        share = local + gld > 0 ? local / (local + gld) : 0;
        kopt__fb_evidence(&b, "local sectors / (local + global ld sectors)", share, ">", 0,
                          "no local traffic");
        kopt__fb_text(&b, &b.seen, "%sMeasured: %.0f local-memory sectors, %.0f%% of L1 "
                      "load/store sectors.", b.seen.len ? " " : "", local, share * 100);
    }
    kopt__fb_text(&b, &b.why, "Local memory is per-thread global memory: every spilled value "
                  "is written out and read back through L1 and L2 with global-memory latency, "
                  "and the extra traffic competes with the kernel's real loads.");
    if (is_spill)
        kopt__fb_text(&b, &b.change, "Cut live values: a smaller per-thread tile (e.g. 8x8 "
                      "accumulators -> 8x4), fewer values kept across the main loop, and "
                      "`#pragma unroll` on loops that index register arrays so every index is "
                      "a compile-time constant. If `__launch_bounds__(T, minBlocks)` or "
                      "-maxrregcount forces the cap, relax it: fewer resident blocks without "
                      "spills usually beat more blocks with them.");
    else
        kopt__fb_text(&b, &b.change, "A per-thread array indexed with a run-time value cannot "
                      "live in registers. Fully unroll the loops over it (`#pragma unroll` "
                      "with a compile-time trip count) so indices become constants, or move "
                      "the array to shared memory (`__shared__ float buf[BLOCK][N]`, indexed "
                      "by threadIdx.x).");
    if (has_local) {
        double memfrac = kopt__mem_frac(k, KOPT_EXPOSURE_UNKNOWN);
        gain = share * (memfrac > KOPT_EXPOSURE_UNKNOWN ? memfrac : KOPT_EXPOSURE_UNKNOWN);
        conf = KOPT_SPILL_CONF_MEASURED;
        kopt__fb_text(&b, &b.how, "Local share of L1 sectors (%.0f%%) times the larger of the "
                      "memory throughput share and %.1f.", share * 100, KOPT_EXPOSURE_UNKNOWN);
    } else {
        double bytes = spill > 0 ? spill : 4.0 * local_insts;
        gain = KOPT_SPILL_GAIN_BASE + KOPT_SPILL_GAIN_PER_KB * bytes / 1024.0;
        if (gain > KOPT_SPILL_GAIN_STATIC_MAX)
            gain = KOPT_SPILL_GAIN_STATIC_MAX;
        conf = is_spill ? KOPT_SPILL_CONF_STATIC : KOPT_CONF_STATIC;
        kopt__fb_text(&b, &b.how, "Static: KOPT_SPILL_GAIN_BASE (%.2f) + KOPT_SPILL_GAIN_PER_KB "
                      "(%.2f) per KB of local traffic per thread (%.0f B), at most %.2f; how "
                      "often the spill code runs is not measured.", KOPT_SPILL_GAIN_BASE,
                      KOPT_SPILL_GAIN_PER_KB, bytes, KOPT_SPILL_GAIN_STATIC_MAX);
    }
    return kopt__fb_emit(&b, out, gain, conf, ctx);
}

const kopt_tool kopt_tool_register_spills = {
    .name = "register_spills",
    .summary = "registers spill to local memory (or an array lives there)",
    .classes = KOPT_CLASS_ALL,
    .needs = 0,
    .needs_any = KOPT_NEEDS_RESOURCES | KOPT_NEEDS_SASS | KOPT_NEEDS_METRICS,
    .metrics = metrics,
    .run_kernel = one,
};
