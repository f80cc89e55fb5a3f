/* bank_conflicts: shared-memory accesses replay because threads of a warp hit the same
 * bank at different addresses (l1tex__data_bank_conflicts vs wavefronts, loads + stores). */
#include "analyze/analyze_int.h"

/* Weight of shared-memory time when neither L1 throughput nor MIO stalls are measured. */
#define KOPT_SHARED_WEIGHT_UNMEASURED 0.3

static const char *const metrics[] = {
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "smsp__sass_inst_executed_op_shared_ld.sum",
    "smsp__sass_inst_executed_op_shared_st.sum",
    "l1tex__throughput.avg.pct_of_peak_sustained_active",
    NULL,
};

static kopt_status one(const kopt_analysis_input *in, const kopt_kernel_view *k,
                       const kopt_thresholds *th, kopt_findings *out, kopt_ctx *ctx)
{
    double c[2] = {0, 0}, w[2] = {0, 0}, inst[2] = {0, 0}, conflicts, waves, pct, weight;
    double l1, mio = 0, ssb = 0;
    const char *weight_from;
    int any = 0, has_inst = 0;
    kopt__fb b;

    any |= kopt__metric(k, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", &c[0]);
    any |= kopt__metric(k, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum", &c[1]);
    kopt__metric(k, "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", &w[0]);
    kopt__metric(k, "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum", &w[1]);
    has_inst |= kopt__metric(k, "smsp__sass_inst_executed_op_shared_ld.sum", &inst[0]);
    has_inst |= kopt__metric(k, "smsp__sass_inst_executed_op_shared_st.sum", &inst[1]);
    conflicts = c[0] + c[1];
    waves = w[0] + w[1];
    if (!any || waves <= 0)
        return KOPT_OK;
    pct = 100.0 * conflicts / waves;
    if (pct < th->bank_conflict_pct)
        return KOPT_OK;
    if (kopt__metric(k, "l1tex__throughput.avg.pct_of_peak_sustained_active", &l1)) {
        weight = kopt__clamp01(l1 / 100.0);
        weight_from = "the L1/shared throughput";
    } else if (kopt__stall_share(k, "mio_throttle", &mio) |
               kopt__stall_share(k, "short_scoreboard", &ssb)) {
        weight = kopt__clamp01(mio + ssb);
        weight_from = "the mio_throttle + short_scoreboard stall share";
    } else {
        weight = KOPT_SHARED_WEIGHT_UNMEASURED;
        weight_from = "KOPT_SHARED_WEIGHT_UNMEASURED";
    }
    kopt__fb_init(&b, "bank_conflicts", kopt__kname(k),
                  "%.0f%% of shared-memory wavefronts are bank-conflict replays", pct);
    kopt__fb_evidence(&b, "bank conflicts / wavefronts (shared ld+st), %", pct, ">=",
                      th->bank_conflict_pct, "bank_conflict_pct");
    kopt__fb_text(&b, &b.seen, "Shared loads: %.0f conflicts in %.0f wavefronts; stores: %.0f "
                  "in %.0f (bank_conflict_pct: %.0f%%).", c[0], w[0], c[1], w[1],
                  th->bank_conflict_pct);
    if (has_inst && inst[0] + inst[1] > 0)
        kopt__fb_text(&b, &b.seen, " On average %.1f wavefronts per shared instruction (1 is "
                      "conflict-free for 32-bit accesses).", waves / (inst[0] + inst[1]));
    kopt__fb_text(&b, &b.why, "Shared memory has 32 banks of 4 bytes; when threads of a warp "
                  "address different words in the same bank the access is split into several "
                  "wavefronts, and the warp waits for all of them.");
    kopt__fb_text(&b, &b.change, "For a tile read down its columns (`tile[threadIdx.x][k]`), "
                  "pad the shared tile to [32][33] (one extra column moves each row one bank "
                  "over); where padding would break 16-byte alignment of vector accesses, "
                  "swizzle instead (`tile[r][c ^ (r %% 32)]`). For 64/128-bit accesses make "
                  "consecutive threads read consecutive 8/16-byte words; for MMA operands use "
                  "ldmatrix on a swizzled layout.");
    kopt__fb_text(&b, &b.how, "Replayed share of wavefronts (%.0f%%) times %s (%.0f%%).", pct,
                  weight_from, weight * 100);
    return kopt__fb_emit(&b, out, pct / 100.0 * weight, KOPT_CONF_MEASURED, ctx);
}

const kopt_tool kopt_tool_bank_conflicts = {
    .name = "bank_conflicts",
    .summary = "shared-memory bank conflicts replay accesses",
    .classes = KOPT_CLASS_ALL,
    .needs = KOPT_NEEDS_METRICS,
    .metrics = metrics,
    .run_kernel = one,
};
