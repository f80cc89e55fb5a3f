/*
 * kopt/analyze.h: from a profile to ranked, checkable advice.
 *
 * Two stages, as in KernelPro: first the roofline class of the candidate (compute-,
 * memory-, latency-bound or mixed), from the problem's analytic work and from measured
 * metrics, with the reasoning when the two disagree; then the micro-tools registered for
 * that class run, each turning metrics, SASS counts and resource use into findings in a
 * kernel engineer's words, with an estimated gain and how it was estimated. Findings are
 * ranked by estimated gain.
 *
 * A tool is a table of function pointers (kopt_tool) in its own file under
 * src/analyze/rules/; the registry lists them. Thresholds are named constants per
 * architecture (kopt_thresholds).
 *
 * Ownership: kopt_analysis from kopt_analyze_run() is owned by the caller
 * (kopt_analysis_free, NULL-safe); the input is borrowed and must outlive the call only.
 */
#ifndef KOPT_ANALYZE_H
#define KOPT_ANALYZE_H

#include "kopt/compile.h"
#include "kopt/device.h"
#include "kopt/profile.h"

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum kopt_class {
    KOPT_CLASS_UNKNOWN = 0,
    KOPT_CLASS_COMPUTE = 1,
    KOPT_CLASS_MEMORY = 2,
    KOPT_CLASS_LATENCY = 4,
    KOPT_CLASS_MIXED = 8
} kopt_class;
#define KOPT_CLASS_ALL (KOPT_CLASS_COMPUTE | KOPT_CLASS_MEMORY | KOPT_CLASS_LATENCY | KOPT_CLASS_MIXED)
const char *kopt_class_name(kopt_class c);

/* What a tool needs to run; a tool whose needs are not met is skipped and listed. */
enum {
    KOPT_NEEDS_SASS = 1,       /* SASS counts of the kernel */
    KOPT_NEEDS_RESOURCES = 2,  /* registers / shared memory / spills from the compile */
    KOPT_NEEDS_METRICS = 4,    /* measured metrics (CUPTI, ncu or a fixture) */
    KOPT_NEEDS_TIMING = 8,     /* a timed run */
    KOPT_NEEDS_DEVICE = 16,    /* device properties (SM count, limits) */
    KOPT_NEEDS_HOST = 32,      /* host-mode launch records */
    KOPT_NEEDS_PROGRAM = 64    /* a program profile (kopt_program: a PyTorch forward) */
};

/* One kernel of the candidate, with everything known about it. */
typedef struct kopt_kernel_view {
    const char *name;                   /* launch-plan name or profiler name */
    int grid[3], block[3];
    int dyn_smem;
    const kopt_kernel_info *res;        /* NULL when not compiled here */
    const kopt_sass_counts *sass;       /* NULL when not disassembled */
    const kopt_metrics *metrics;        /* NULL when not profiled */
    double ms;                          /* its share of the time; 0 when unknown */
} kopt_kernel_view;

typedef struct kopt_analysis_input {
    const kopt_device_info *dev;        /* NULL: no device (static analysis) */
    const kopt_ceilings *ceil;          /* NULL or !valid: no roofline position */
    const char *problem;                /* name, for messages */
    double flops, bytes;                /* the problem's work at these sizes (0: unknown) */
    int compute;                        /* kopt_compute of the problem's math */
    int matmul_like;                    /* the problem is a GEMM/convolution-like contraction */
    double median_ms;                   /* candidate's time; 0 when not timed */
    int host_mode;
    int launches_per_call;              /* host mode: kernel launches seen per call (0: unknown) */
    int nkernels;
    const kopt_kernel_view *kernels;
    const kopt_program *program;        /* a PyTorch forward's kernels, gaps and bytes (NULL:
                                           none); the program tools read it */
    double rtol;                        /* the tightest relative tolerance of the problem's
                                           outputs (0: unknown) */
} kopt_analysis_input;

typedef struct kopt_evidence {
    char metric[128];                   /* metric or count name */
    double value;
    char op[4];                         /* "<", ">", ">=", "<=" */
    double threshold;
    char threshold_name[64];            /* the named constant */
} kopt_evidence;

typedef struct kopt_finding {
    char tool[48];                      /* registry name, e.g. "uncoalesced_global" */
    char kernel[256];
    char title[160];                    /* one line */
    char *seen;                         /* what was seen: values against thresholds */
    char *why;                          /* why it matters */
    char *change;                       /* what to change in the code */
    double gain;                        /* estimated fraction of run time saved, 0..1: a tool
                                           writes the share of its kernel's time; the driver
                                           turns it into a share of the candidate's time and
                                           caps it by the roofline. Gains are not additive. */
    char *gain_how;                     /* how the gain was estimated */
    double confidence;                  /* 0..1 */
    int nevidence;
    kopt_evidence evidence[8];
} kopt_finding;

typedef struct kopt_findings {
    int n, cap;
    kopt_finding *f;
} kopt_findings;

/* Append a finding (strings copied). Used by tools. */
kopt_status kopt_findings_add(kopt_findings *fs, const kopt_finding *f);
void kopt_findings_clear(kopt_findings *fs);

/* Thresholds per architecture (named constants; see src/analyze/thresholds.c). */
typedef struct kopt_thresholds {
    int cc_major;                       /* 0: the default row */
    double sector_bytes_used_min;       /* of 32 bytes per sector */
    double bank_conflict_pct;           /* conflicts / wavefronts */
    double occupancy_theoretical_pct;   /* below this, name the limiter */
    double registers_high;              /* per thread */
    double waves_tail_min_gain;         /* tail effect worth reporting */
    double stall_share;                 /* a stall reason above this share of cycles */
    double divergence_threads;          /* active threads per instruction, of 32 */
    double unfused_ratio;               /* non-fused FP ops share */
    double dram_saturated_pct;          /* DRAM throughput % of peak */
    double latency_bound_pct;           /* both SM and memory throughput below this */
    double small_launch_us;             /* host mode: a launch shorter than this is small */
    int many_launches;                  /* host mode: more launches per call than this */
    int cc_minor;                       /* -1: any minor version of cc_major */
    double sectors_excess;              /* global sectors per request above this x ideal */
    double stall_share_critical;        /* a stall reason above this share is critical */
    double issue_active_low;            /* issue slots busy below this: stalls cost time */
    double scalar_access_share;         /* share of global accesses of 32 bits or less */
    double fp64_share_min;              /* FP64 share of FP instructions in a non-fp64 problem */
    double achieved_occupancy_gap_pts;  /* theoretical - achieved occupancy, in points */
    double dram_excess_ratio;           /* measured DRAM bytes over the problem's minimum */
    double host_gap_share;              /* program: host gaps over this share of the forward */
    double library_gemm_share;          /* program: FP32 library GEMMs over this share of it */
} kopt_thresholds;
const kopt_thresholds *kopt_thresholds_for(const kopt_device_info *dev);

typedef struct kopt_tool {
    const char *name;                   /* "bank_conflicts" */
    const char *summary;                /* one line for --list-tools */
    unsigned classes;                   /* KOPT_CLASS_* it applies to */
    unsigned needs;                     /* KOPT_NEEDS_* */
    const char *const *metrics;         /* metric names it reads (NULL-terminated), or NULL */
    /* One of the two: `run` sees the whole candidate (tools that sum over kernels);
     * `run_kernel` is called for each kernel in turn (most tools). */
    kopt_status (*run)(const kopt_analysis_input *in, const kopt_thresholds *th,
                       kopt_findings *out, kopt_ctx *ctx);
    unsigned needs_any;                 /* at least one of these KOPT_NEEDS_* (0: no such need) */
    kopt_status (*run_kernel)(const kopt_analysis_input *in, const kopt_kernel_view *k,
                              const kopt_thresholds *th, kopt_findings *out, kopt_ctx *ctx);
} kopt_tool;

/* The registry: all tools, in a stable order. */
const kopt_tool *const *kopt_tools(int *n);
const kopt_tool *kopt_tool_find(const char *name);

typedef struct kopt_classification {
    kopt_class analytic;                /* from flops/bytes against the ceilings' ridge */
    kopt_class measured;                /* from metrics; UNKNOWN without them */
    kopt_class final;
    double intensity;                   /* flops / byte */
    double ridge;                       /* ceiling flops / ceiling bytes */
    double pct_of_bound;                /* roofline position, % (0 when unknown) */
    char reasoning[1024];               /* why, including when analytic and measured disagree */
} kopt_classification;

typedef struct kopt_analysis {
    kopt_classification cls;
    kopt_findings findings;             /* ranked by gain, largest first */
    int nskipped;
    char skipped[64][160];              /* "tool: why" for tools not run */
    int nrun;
} kopt_analysis;

typedef struct kopt_analyze_opts {
    int version;
    int all_tools;                      /* ignore the class filter */
    const char *only_tool;              /* run just this one (NULL: all selected) */
    unsigned classes;                   /* KOPT_CLASS_* whose tools run besides those the
                                           classification selects (a program's kernels'
                                           classes); 0: none */
} kopt_analyze_opts;
#define KOPT_ANALYZE_OPTS_INIT {1, 0, NULL, 0}

/* Stage one: fill `out` from the input alone (never fails; UNKNOWN classes where nothing
 * is known). Rules in docs/internals/analyze.md. */
void kopt_classify(const kopt_analysis_input *in, kopt_classification *out);

/* Theoretical occupancy of one kernel on one SM, computed as the hardware allocates:
 * registers per warp rounded to 256 and split over 4 sub-partitions, shared memory rounded
 * to 128 B plus 1 KB reserved per block (cc >= 8), warp slots and the block-slot limit. */
typedef struct kopt_occupancy {
    int warps_per_block;
    int blocks_by_regs, blocks_by_smem, blocks_by_warps, blocks_by_slots;
    int blocks;                         /* resident blocks per SM: the smallest limit */
    int warps, max_warps;               /* resident warps per SM, and the device's maximum */
    double pct;                         /* warps / max_warps * 100 */
    char limiter[64];                   /* "registers", "shared memory", "warps", "block slots";
                                           ties joined with '+' */
    int regs_per_sm, smem_per_sm, max_blocks_per_sm;   /* device values used */
} kopt_occupancy;
/* KOPT_E_INVALID when threads_per_block <= 0 or regs/smem are negative. Device fields that
 * are 0 fall back to the architecture's values (H100/H200 when the device is NULL). */
kopt_status kopt_occupancy_compute(kopt_occupancy *out, kopt_ctx *ctx,
                                   const kopt_device_info *dev, int threads_per_block,
                                   int regs_per_thread, int smem_per_block);
/* The most registers per thread (a multiple of 8, <= 255) with which `blocks` blocks of
 * `threads_per_block` fit on one SM by registers; 0 when none does. */
int kopt_occupancy_regs_for(const kopt_device_info *dev, int threads_per_block, int blocks);
/* The most shared memory per block (static + dynamic, bytes) with which `blocks` blocks fit
 * on one SM; 0 when none does. */
int kopt_occupancy_smem_for(const kopt_device_info *dev, int blocks);

/* Classify, then run the tools selected by class (the union of the final, analytic and
 * measured classes and opts->classes; every tool when opts->all_tools; only opts->only_tool when set, class
 * ignored). A tool whose needs are not met is listed in `skipped` as "tool: needs ...";
 * one filtered out by class as "tool: not for a <class> kernel ...". Each finding's gain is
 * scaled by its kernel's share of the time and capped at 1 - pct_of_bound/100 when the
 * candidate was timed (a kernel at 95% of its bound cannot gain more than 5%). Findings are
 * ranked by gain, largest first. opts NULL: defaults. KOPT_E_NOT_FOUND for an unknown
 * only_tool, KOPT_E_INVALID for a malformed input, or a tool's error (KOPT_E_NOMEM). */
kopt_status kopt_analyze_run(kopt_analysis **out, kopt_ctx *ctx, const kopt_analysis_input *in,
                             const kopt_analyze_opts *opts);
void kopt_analysis_free(kopt_analysis *a);

/* ---- building the input (src/analyze/input.c) --------------------------------------- */

/* The kernel views of a candidate, as `kopt profile` builds them. With a device-mode
 * compile and a binding: one view per kernel launch of the bound plan (memsets left out),
 * in order, with the compile's resources, the SASS counts of its lowered symbol (sass may
 * be NULL), and the profiled kernel that matches it (prof may be NULL): the first whose
 * name contains the lowered symbol, else the one at the same position when the profile has
 * one kernel per launch, else the first whose name starts with the launch name up to '<'
 * or '('; its time (ms) from gpu__time_duration.sum. Host mode (or no binding): one view
 * per profiled kernel, as profiled. *out is caller-owned (free()) and *n its length; the
 * views point into comp, bound, sass and prof, which must outlive them. KOPT_E_NOMEM. */
kopt_status kopt_analyze_views(kopt_kernel_view **out, int *n, kopt_ctx *ctx,
                               const kopt_compiled *comp, const kopt_bound *bound,
                               const kopt_sass *sass, const kopt_profile *prof);
/* 1 when the problem counts as matmul-like for the tensor-core tools: its compute type is
 * fp16, bf16, tf32 or fp8, or its name or description contains "gemm" or "matmul" (any
 * case). */
int kopt_analyze_matmul_like(const kopt_problem *p);

/* ---- a PyTorch program (src/analyze/program.c, program_output.c) ------------------------ */

/* How to analyze a program profile. Start from KOPT_PROGRAM_ANALYZE_OPTS_INIT. */
typedef struct kopt_program_analyze_opts {
    int version;                        /* KOPT_PROGRAM_ANALYZE_OPTS_VERSION */
    const kopt_device_info *dev;        /* NULL: the program's own record of its device */
    const kopt_ceilings *ceil;          /* the device's measured ceilings; NULL or !valid:
                                           spec-derived where the device allows */
    const char *problem;                /* name, for messages (NULL: "program") */
    int compute;                        /* kopt_compute of the problem's math (default FP32;
                                           FP32 with rtol >= KOPT_TF32_ADMITTED_RTOL is held
                                           to the TF32 roof, as the speed-of-light guard) */
    int matmul_like;                    /* the problem is a contraction (no_tensor_cores) */
    double flops, bytes;                /* the problem's work; 0: the measured FLOP of all
                                           kernels, the program's compulsory_bytes */
    double rtol;                        /* the outputs' tightest relative tolerance; 0: unknown */
    kopt_analyze_opts analyze;          /* all_tools, only_tool (classes is set here) */
} kopt_program_analyze_opts;
#define KOPT_PROGRAM_ANALYZE_OPTS_VERSION 1
#define KOPT_PROGRAM_ANALYZE_OPTS_INIT {KOPT_PROGRAM_ANALYZE_OPTS_VERSION, NULL, NULL, NULL, 0, \
                                        0, 0, 0, 0, KOPT_ANALYZE_OPTS_INIT}

/* A kernel's label in a program analysis: "#<launch index from 1> <short name>". */
#define KOPT_PROGRAM_LABEL 160

/* Time of a program by class: each kernel's duration counts for its class, the host gaps
 * count as latency (the GPU waits on the host), in ms. */
typedef struct kopt_program_class_time {
    double compute, memory, latency, mixed, unknown;
    double host_gaps;                   /* included in latency */
} kopt_program_class_time;

typedef struct kopt_program_analysis {
    const kopt_program *prog;           /* borrowed: must outlive the analysis */
    kopt_device_info dev;               /* the device used (has_dev: known) */
    int has_dev;
    kopt_ceilings ceil;                 /* as given (valid 0: none) */
    double dram_gbs;                    /* the DRAM rate the fusion bytes are priced at */
    const char *dram_source;            /* "measured", "spec-derived", or NULL: no rate */
    double fusion_ms;                   /* prog->fusion_bytes at dram_gbs; -1: unknown */
    kopt_classification *kernel_cls;    /* one per kernel: kopt_classify of that kernel alone
                                           (its measured FLOP and DRAM bytes, its duration) */
    kopt_program_class_time by_time;
    kopt_class cls;                     /* the time-weighted class: the class with the most
                                           time (unknown when unknown time leads) */
    unsigned classes;                   /* classes holding >= 10 % of the time: their tools ran */
    kopt_kernel_view *views;            /* one per kernel, as the tools saw them, each named
                                           by its label (so findings name kernels uniquely) */
    char (*labels)[KOPT_PROGRAM_LABEL];  /* per kernel: "#k short name" ("#2 my_softmax") */
    kopt_kernel_info *res;              /* registers and static shared memory per kernel */
    kopt_analysis_input in;             /* the tools' input (median_ms: forward_ms) */
    kopt_analysis *an;                  /* the whole program's roofline position against the
                                           problem's work, and the findings, ranked */
} kopt_program_analysis;

/* Classify each kernel and the program, price the fusion bytes at the DRAM rate, and run
 * the tools (the kernel tools on every kernel; unfused_chain, launch_bound_program,
 * library_gemm_fp32 on the whole) selected by the classes of the analysis and of the
 * kernels. Gains are shares of the forward's time (forward_ms, else the kernels' time),
 * the time a later candidate's realized gain is measured on, capped by the program's
 * roofline headroom. opts NULL: defaults. *out is caller-owned
 * (kopt_program_analysis_free) and borrows `p`. KOPT_E_INVALID (no program), KOPT_E_NOMEM,
 * KOPT_E_NOT_FOUND (an unknown opts->analyze.only_tool). */
kopt_status kopt_program_analyze(kopt_program_analysis **out, kopt_ctx *ctx,
                                 const kopt_program *p, const kopt_program_analyze_opts *opts);
void kopt_program_analysis_free(kopt_program_analysis *a);

/* The analysis as text: the kernel table (#, short name, origin, op, grid, block, registers,
 * shared memory, time, share, GB/s, class), then the program lines (GPU time, forward, host
 * gaps, fusion bytes and ms, class) and the findings. Caller frees; NULL on allocation
 * failure. */
char *kopt_program_text(const kopt_program_analysis *a);
/* The same as a JSON object (full kernel names, null for what is unknown); caller frees;
 * NULL on allocation failure. Keys: docs/formats.md ("Program profile"). */
char *kopt_program_json(const kopt_program_analysis *a);
/* kopt_program_text written to `f` (the caller's stream). KOPT_E_NOMEM, KOPT_E_IO. */
kopt_status kopt_program_print(FILE *f, kopt_ctx *ctx, const kopt_program_analysis *a);

#ifdef __cplusplus
}
#endif
#endif
