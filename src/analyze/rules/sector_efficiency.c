/* sector_efficiency: global loads or stores use only part of each 32-byte sector they
 * move (smsp__sass_average_data_bytes_per_sector_mem_global_op_{ld,st}.ratio of 32). */
#include "analyze/analyze_int.h"

#define KOPT_SECTOR_BYTES 32.0

static const char *const metrics[] = {
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio",
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.ratio",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    NULL,
};

static kopt_status one(const kopt_analysis_input *in, const kopt_kernel_view *k,
                       const kopt_thresholds *th, kopt_findings *out, kopt_ctx *ctx)
{
    static const char *const dir_name[2] = {"loads", "stores"};
    static const char *const dir_metric[2] = {
        "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio",
        "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.ratio"};
    double used[2], weight[2] = {0.5, 0.5}, rd, wr, waste = 0, memfrac = kopt__mem_frac(k, 0.5);
    int has[2], low[2], worst = -1;
    kopt__fb b;

    for (int d = 0; d < 2; d++) {
        has[d] = kopt__metric(k, dir_metric[d], &used[d]);
        low[d] = has[d] && used[d] < th->sector_bytes_used_min;
        if (low[d] && (worst < 0 || used[d] < used[worst]))
            worst = d;
    }
    if (worst < 0)
        return KOPT_OK;
    /* Weigh each direction by its share of DRAM traffic when measured. */
    if (kopt__metric(k, "dram__bytes_read.sum", &rd) &&
        kopt__metric(k, "dram__bytes_write.sum", &wr) && rd + wr > 0) {
        weight[0] = rd / (rd + wr);
        weight[1] = wr / (rd + wr);
    } else if (has[0] != has[1]) {
        weight[0] = has[0];
        weight[1] = has[1];
    }
    kopt__fb_init(&b, "sector_efficiency", kopt__kname(k),
                  "global %s use %.1f of every 32 bytes they move", dir_name[worst],
                  used[worst]);
    for (int d = 0; d < 2; d++) {
        if (!low[d])
            continue;
        waste += (1.0 - used[d] / KOPT_SECTOR_BYTES) * weight[d];
        kopt__fb_evidence(&b, dir_metric[d], used[d], "<", th->sector_bytes_used_min,
                          "sector_bytes_used_min");
        kopt__fb_text(&b, &b.seen, "%sGlobal %s: %.1f useful bytes per 32-byte sector "
                      "(sector_bytes_used_min: %.0f).", b.seen.len ? " " : "", dir_name[d],
                      used[d], th->sector_bytes_used_min);
    }
    kopt__fb_text(&b, &b.why, "Memory moves whole 32-byte sectors; every byte the kernel "
                  "does not use is bandwidth lost, and a memory-bound kernel's time is its "
                  "bytes.");
    kopt__fb_text(&b, &b.change, "Usual causes: a stride between threads (`x[i * stride]`), "
                  "reading one field of an array of structs, or misaligned row starts. Lay the "
                  "data out so a warp's 32 accesses cover contiguous bytes (struct of arrays, "
                  "`x[blockIdx.x * blockDim.x + threadIdx.x]`), or load a whole struct with "
                  "one float4 and use every field; pad the leading dimension to a multiple of "
                  "8 floats so rows start 32-byte aligned.");
    kopt__fb_text(&b, &b.how, "Unused share of each sector, weighted by the direction's share "
                  "of DRAM bytes (%.0f%% loads, %.0f%% stores), times the memory throughput "
                  "share (%.0f%%).", weight[0] * 100, weight[1] * 100, memfrac * 100);
    return kopt__fb_emit(&b, out, waste * memfrac, KOPT_CONF_MEASURED, ctx);
}

const kopt_tool kopt_tool_sector_efficiency = {
    .name = "sector_efficiency",
    .summary = "global accesses use only part of each 32-byte sector",
    .classes = KOPT_CLASS_MEMORY | KOPT_CLASS_LATENCY | KOPT_CLASS_MIXED,
    .needs = KOPT_NEEDS_METRICS,
    .metrics = metrics,
    .run_kernel = one,
};
