/*
 * analyze_int.h: what the analysis files share and the tools use: the tool list, a finding
 * builder (growable text, evidence, then one add), and small readers of a kernel view
 * (metrics by ncu name, SASS sums, launch sizes, share of the run time).
 *
 * Adding a tool: write src/analyze/rules/<name>.c exporting `const kopt_tool
 * kopt_tool_<name>`, and add X(<name>) to KOPT_TOOL_LIST below (the registry's order).
 */
#ifndef KOPT_ANALYZE_INT_H
#define KOPT_ANALYZE_INT_H

#include "kopt/analyze.h"

#define KOPT_TOOL_LIST(X)        \
    X(uncoalesced_global)        \
    X(sector_efficiency)         \
    X(non_vectorized_loads)      \
    X(bank_conflicts)            \
    X(register_spills)           \
    X(occupancy_limiter)         \
    X(high_registers)            \
    X(small_grid_tail)           \
    X(block_size)                \
    X(warp_stalls)               \
    X(divergence)                \
    X(no_tensor_cores)           \
    X(unfused_fp)                \
    X(fp64_in_fp32)              \
    X(many_small_launches)       \
    X(dram_saturated)            \
    X(missing_async_copy)        \
    X(unfused_chain)             \
    X(launch_bound_program)      \
    X(library_gemm_fp32)

#define KOPT__TOOL_DECLARE(n) extern const kopt_tool kopt_tool_##n;
KOPT_TOOL_LIST(KOPT__TOOL_DECLARE)
#undef KOPT__TOOL_DECLARE

/* ---- estimates shared by several tools (documented in docs/internals/analyze.md) ----- */

/* Share of a stall that a targeted fix removes, when the fix is not a rewrite. */
#define KOPT_FIX_FRACTION 0.5
/* Fraction of time exposed to latency when nothing measured says (issue-active unknown). */
#define KOPT_EXPOSURE_UNKNOWN 0.5
/* Confidence of a finding backed by static evidence only / by measured counters. */
#define KOPT_CONF_STATIC 0.4
#define KOPT_CONF_MEASURED 0.75

/* ---- finding builder ------------------------------------------------------------------ */

typedef struct kopt__fb {
    kopt_finding f;                     /* tool, kernel, title, evidence */
    kopt_buf seen, why, change, how;
    int nomem;
} kopt__fb;

/* Start a finding of `tool` about `kernel` (NULL: none) with a printf title. */
void kopt__fb_init(kopt__fb *b, const char *tool, const char *kernel, const char *fmt, ...)
    KOPT_PRINTF(4, 5);
/* Append printf text to one of the four texts (b->seen, b->why, b->change, b->how). */
void kopt__fb_text(kopt__fb *b, kopt_buf *which, const char *fmt, ...) KOPT_PRINTF(3, 4);
/* Record `metric op threshold` with the threshold's named constant (kept up to 8). */
void kopt__fb_evidence(kopt__fb *b, const char *metric, double value, const char *op,
                       double threshold, const char *threshold_name);
/* Add the finding to `out` with its gain (0..1, clamped) and confidence, then release the
 * builder's texts. KOPT_E_NOMEM when any text could not grow. */
kopt_status kopt__fb_emit(kopt__fb *b, kopt_findings *out, double gain, double confidence,
                          kopt_ctx *ctx);
void kopt__fb_discard(kopt__fb *b);

/* ---- reading a kernel view ------------------------------------------------------------ */

const char *kopt__kname(const kopt_kernel_view *k);
/* 1 and *v when the kernel has the metric. */
int kopt__metric(const kopt_kernel_view *k, const char *name, double *v);
int kopt__sum(const int v[KOPT_SASS_NWIDTH]);
int kopt__threads(const kopt_kernel_view *k);       /* threads per block (0: unknown) */
long long kopt__blocks(const kopt_kernel_view *k);  /* blocks in the grid (0: unknown) */
int kopt__smem(const kopt_kernel_view *k);          /* static + dynamic bytes per block */
/* SM and memory throughput, % of peak, when measured (the memory one: the larger of
 * gpu__compute_memory_throughput and dram__throughput). */
int kopt__sm_pct(const kopt_kernel_view *k, double *pct);
int kopt__mem_pct(const kopt_kernel_view *k, double *pct);
/* Exposure to latency: 1 - issue slots busy per cycle when measured, else `dflt`. */
double kopt__exposure(const kopt_kernel_view *k, double dflt);
/* Stall reasons kopt reads ("long_scoreboard", ...), NULL-terminated, and the share of the
 * cycles between a warp's issues spent stalled on `reason` (the reason's
 * smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio over
 * smsp__average_warp_latency_per_inst_issued.ratio, else over the sum of the reasons). */
extern const char *const kopt__stall_reasons[];
int kopt__stall_share(const kopt_kernel_view *k, const char *reason, double *share);
/* Fraction of time the SM (compute) or memory is busy, from the throughput %, else dflt. */
double kopt__sm_frac(const kopt_kernel_view *k, double dflt);
double kopt__mem_frac(const kopt_kernel_view *k, double dflt);
/* The candidate's total time in ms (median, else the kernels' shares or durations; 0). */
double kopt__total_ms(const kopt_analysis_input *in);
/* The kernel's share of the candidate's time (1 when it cannot be told). */
double kopt__share(const kopt_analysis_input *in, int kernel_index);
/* 1 when a kernel's SASS has DMMA instructions, or when no SASS is known (classify.c). */
int kopt__uses_dmma(const kopt_analysis_input *in);
/* The roofline rates for the problem: DRAM GB/s and GFLOP/s of `compute` (the problem's
 * compute when < 0), from the measured ceilings, else spec-derived from the device; FP64
 * against the FMA rate when the kernels' SASS has no DMMA. Returns "measured...",
 * "spec-derived" or NULL (nothing known; both 0). */
const char *kopt__rates(const kopt_analysis_input *in, int compute, double *gbs, double *gflops);
/* A program's fusion bytes (kopt_program.fusion_bytes) in ms at the DRAM rate of the
 * input's ceilings or device (kopt__rates); -1 when either is unknown. *gbs (may be NULL):
 * the rate, 0 when unknown. */
double kopt__fusion_ms(const kopt_analysis_input *in, double *gbs);
/* Whether the input as a whole has what a KOPT_NEEDS_* bit asks for. */
int kopt__has_need(const kopt_analysis_input *in, unsigned need);
/* Human words for a KOPT_NEEDS_* bit ("measured metrics (run with a GPU or --ncu)"). */
const char *kopt__need_words(unsigned need);

static inline double kopt__clamp01(double x)
{
    return x < 0 ? 0 : x > 1 ? 1 : x;
}

/* Whether `needle` occurs in `hay` (NULL: no), case ignored (input.c). */
int kopt__contains_ci(const char *hay, const char *needle);

/* findings.c: a finding's texts freed (the finding itself is the caller's) */
void kopt__finding_release(kopt_finding *f);

#endif
