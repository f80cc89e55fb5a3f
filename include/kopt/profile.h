/*
 * kopt/profile.h: what a kernel did, measured or read from its code.
 *
 * Three sources fill the same structures:
 *  - metrics: name -> value, named as Nsight Compute names them
 *    ("dram__bytes_read.sum", "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio"),
 *    from the CUPTI Range Profiler in a worker (kopt_cupti_*), from ncu's raw CSV
 *    (kopt_ncu_parse_raw_csv), or from a recorded fixture;
 *  - SASS counts: per kernel, from disassembling its cubin with nvdisasm (no GPU needed);
 *  - ncu's own rule results, imported from its details page so both can be shown.
 *
 * Ownership: every struct returned through an out-pointer is owned by the caller and freed
 * with its _free function (which accepts NULL). Strings inside are owned by the struct.
 */
#ifndef KOPT_PROFILE_H
#define KOPT_PROFILE_H

#include "kopt/core.h"
#include "kopt/device.h"
#include "kopt/expr.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- metrics ------------------------------------------------------------------------ */

typedef struct kopt_metric {
    char *name;              /* ncu metric name */
    double value;            /* in base units (bytes, ns, cycles, %, ratio) */
} kopt_metric;

typedef struct kopt_metrics {
    int n, cap;
    kopt_metric *m;
} kopt_metrics;

/* Set (insert or overwrite) a metric. KOPT_E_NOMEM on allocation failure. */
kopt_status kopt_metrics_set(kopt_metrics *ms, const char *name, double value);
/* 1 and *out = value when present, else 0 (and *out untouched). */
int kopt_metrics_get(const kopt_metrics *ms, const char *name, double *out);
/* The value, or `dflt` when absent. */
double kopt_metrics_value(const kopt_metrics *ms, const char *name, double dflt);
void kopt_metrics_clear(kopt_metrics *ms);     /* frees the entries; the struct is reusable */
/* FP32 and FP64 FLOP executed, from the SASS thread-instruction counters of the roofline
 * set (smsp__sass_thread_inst_executed_op_{f,d}{add,mul,fma}_pred_on.sum; an FMA counts
 * two). Tensor-core work is not in them. 1 and *flops when any of the six is present, else
 * 0 (and *flops untouched). */
int kopt_metrics_flops(const kopt_metrics *ms, double *flops);

/* One profiled kernel launch. */
typedef struct kopt_kernel_profile {
    char kernel[512];        /* name as the profiler reports it (mangled or demangled) */
    int grid[3], block[3];
    int dyn_smem;
    kopt_metrics metrics;
} kopt_kernel_profile;

/* ncu's own rule messages (from `--page details --csv`), kept to be shown beside ours. */
typedef struct kopt_ncu_rule {
    char kernel[512];
    char section[64];
    char rule[64];
    char type[16];           /* "OPT", "WRN", "INF" */
    char *description;
    char speedup_type[16];   /* "local" / "global" / "" */
    double speedup_pct;      /* estimated speedup, % (0 when none) */
} kopt_ncu_rule;

typedef struct kopt_profile {
    char source[16];         /* "cupti", "ncu", "fixture" */
    int nkernels;
    kopt_kernel_profile *kernels;
    int nrules;
    kopt_ncu_rule *rules;
    double collect_ms;       /* wall time to collect (0 when imported) */
    int passes;              /* replay passes used (0 when unknown) */
    /* kopt_profile_run: each metric set collected (CUPTI: one range-profiler bracket each;
     * ncu: one run), in order. Zero when filled otherwise. */
    int nsets;
    struct {
        char name[16];       /* "roofline", "rules", "custom", "ncu", "ncu-details" */
        int passes;
        double collect_ms;   /* the bracket's wall time (CUPTI), or ncu's whole run */
        double setup_ms;     /* CUPTI: configuring the profiler for the set */
        double steps_ms[5];  /* CUPTI: begin (counter data + config), launches with their
                              * replay passes and sync, stop, decode, evaluate */
        double repeat_ms;    /* CUPTI, opts.repeat > 1: median begin-to-end wall time of the
                              * later brackets (the profiler already set up); 0: none */
    } sets[4];
} kopt_profile;

void kopt_profile_free(kopt_profile *p);
/* The profile of the first kernel whose name contains `name` (NULL: the longest-running). */
const kopt_kernel_profile *kopt_profile_kernel(const kopt_profile *p, const char *name);

/* Metric sets. The roofline set (duration, DRAM bytes, FLOP counters by precision, tensor
 * ops) is small enough for one or two passes; the rules set is what the micro-tools read. */
extern const char *const kopt_metrics_roofline[];   /* NULL-terminated */
extern const char *const kopt_metrics_rules[];      /* NULL-terminated */
/* A PyTorch program's kernels: the roofline set and the SM/memory throughput percentages. */
extern const char *const kopt_metrics_program[];    /* NULL-terminated */

/* ---- ncu ---------------------------------------------------------------------------- */

/* Parse `ncu --csv --page raw` output (header row, units row, one row per kernel; values
 * may carry thousands separators). `path` names the text in errors ("file:line: ...").
 * Values are converted to base units (Kbyte -> bytes, usecond -> ns, Gbyte/second ->
 * bytes/s); ncu's own "==PROF==" lines are skipped, and a log holding one table per
 * profiled process gives all their kernels in order. No kernel row: KOPT_E_NOT_FOUND. */
kopt_status kopt_ncu_parse_raw_csv(kopt_profile **out, kopt_ctx *ctx, const char *text,
                                   const char *path);
/* Add the rule rows of `ncu --csv --page details` output to an existing profile. */
kopt_status kopt_ncu_parse_details_csv(kopt_profile *p, kopt_ctx *ctx, const char *text,
                                       const char *path);

/* How to run a program under ncu (kopt_ncu_argv). Start from KOPT_NCU_OPTS_INIT. */
typedef struct kopt_ncu_opts {
    int version;                     /* KOPT_NCU_OPTS_VERSION */
    const char *const *metrics;      /* --metrics a,b,c (NULL-terminated list), or NULL */
    const char *set;                 /* --set NAME ("basic", "detailed", "full"), or NULL */
    const char *const *sections;     /* --section ID, one each (NULL-terminated), or NULL */
    const char *kernel_regex;        /* -k regex:RE (e.g. "^softmax_fast"), NULL: all kernels */
    int launch_count;                /* -c N; 0: every matching launch */
    int launch_skip;                 /* -s N; 0: none */
    int lock_clocks;                 /* 0: --clock-control none (clocks as kopt times them);
                                        1: --clock-control base (ncu's own default) */
    const char *page;                /* "raw" (NULL too) or "details" */
    const char *log_file;            /* --log-file PATH: ncu's output (the CSV) apart from the
                                        program's own; NULL: ncu writes to stdout */
    const char *export_path;         /* -o PATH -f: write a report (.ncu-rep) instead of CSV;
                                        read it with kopt_ncu_import_argv */
    const char *nvtx_range;          /* --nvtx --nvtx-include NAME/: only the kernels
                                        launched inside the NVTX push/pop range NAME */
} kopt_ncu_opts;
#define KOPT_NCU_OPTS_VERSION 1
#define KOPT_NCU_OPTS_INIT {KOPT_NCU_OPTS_VERSION, NULL, NULL, NULL, NULL, 0, 0, 0, NULL, NULL, \
                            NULL, NULL}

/* The ncu executable: $KOPT_NCU, else `ncu` on PATH, else /usr/local/cuda/bin/ncu.
 * *out is caller-owned (free()). KOPT_E_NOT_FOUND (naming what was tried) when none. */
kopt_status kopt_ncu_find(char **out, kopt_ctx *ctx);
/* The argv prefix that runs a program under ncu: ncu's path and options (every process
 * the program starts is profiled: --target-processes all, as kopt's workers are child
 * processes). Append the program and its arguments, then NULL. *out is a NULL-terminated,
 * caller-owned array (kopt_ncu_argv_free); *argc (may be NULL) its length. */
kopt_status kopt_ncu_argv(char ***out, int *argc, kopt_ctx *ctx, const kopt_ncu_opts *opts);
/* The full argv that prints a saved report as CSV: ncu -i REPORT --csv --page PAGE
 * ("raw" or "details"; NULL: raw). KOPT_E_NOT_FOUND when REPORT cannot be read. */
kopt_status kopt_ncu_import_argv(char ***out, int *argc, kopt_ctx *ctx, const char *report,
                                 const char *page);
void kopt_ncu_argv_free(char **argv);

/* ---- profiling a PyTorch program (src/profile/program_run.c) ------------------------- */

struct kopt_eval_opts;
struct kopt_problem;
struct kopt_candidate;
/* What a PyTorch program (the problem's reference when `cand` is NULL, else a ModelNew or a
 * host-mode candidate) runs on the GPU, kernel by kernel, at the main sizes: the program
 * profile JSON (kopt_eval_torch_program's object), with ncu's roofline metrics joined to
 * each kernel ("metrics") when `with_ncu` and ncu is here, else "metrics_note" says why not.
 * *program is malloc'd. */
kopt_status kopt_profile_program(kopt_ctx *ctx, const struct kopt_problem *prob,
                                 const struct kopt_candidate *cand,
                                 const struct kopt_eval_opts *eo, int with_ncu, char **program);

/* ---- profiling a candidate (src/profile/profile_run.c) ------------------------------- */

enum { KOPT_PROFILE_SET_ROOFLINE = 1, KOPT_PROFILE_SET_RULES = 2 };

typedef struct kopt_profile_opts {
    int version;                     /* KOPT_PROFILE_OPTS_VERSION */
    const kopt_vars *sizes;          /* overrides of the problem's sizes, or NULL */
    int device;                      /* ordinal */
    const char *arch;                /* compile target; NULL: from the GPU */
    const char *cache_dir;
    double timeout_s;                /* per step of the worker (default 30; x10 under ncu) */
    unsigned sets;                   /* KOPT_PROFILE_SET_*; 0: both */
    const char *const *metrics;      /* an explicit list instead of the sets, or NULL */
    int ncu;                         /* run the worker under ncu instead of CUPTI in-process */
    int ncu_lock_clocks;             /* ncu --clock-control base (default: none) */
    int ncu_rules;                   /* ncu: also run its detailed sections, keep its rules */
    uint64_t seed;                   /* input seed; 0: 1 */
    int repeat;                      /* CUPTI: brackets per set (>1 measures the cost of a
                                      * set once the profiler is set up); 0: 1 */
} kopt_profile_opts;
#define KOPT_PROFILE_OPTS_VERSION 1
#define KOPT_PROFILE_OPTS_INIT {KOPT_PROFILE_OPTS_VERSION, NULL, 0, NULL, NULL, 30.0, 0, NULL, \
                                0, 0, 0, 0, 0}

/* Profile `cand` (NULL: the problem's reference) at the problem's main sizes: compile
 * (cached), start a worker (the calling process creates no CUDA context) that generates
 * inputs, runs the candidate once to warm up, then once per metric set under CUPTI's range
 * profiler; or, with opts->ncu, runs the same worker under ncu and parses its CSV log.
 * kopt's own kernels are left out. *out: one kopt_kernel_profile per kernel launch (grid,
 * block, dyn_smem from the launch plan in device mode), sets[] and collect_ms (sum).
 * Errors: KOPT_E_NO_DEVICE (no GPU), KOPT_E_UNSUPPORTED (CUPTI refused: no permission to
 * read the counters, another profiler attached; its message), KOPT_E_NOT_FOUND (no ncu),
 * KOPT_E_TIMEOUT, KOPT_E_ERROR (the worker failed otherwise). The caller checks
 * correctness first (kopt_eval_run): this does not compare outputs. */
struct kopt_problem;
struct kopt_candidate;
kopt_status kopt_profile_run(kopt_profile **out, kopt_ctx *ctx, const struct kopt_problem *prob,
                             const struct kopt_candidate *cand, const kopt_profile_opts *opts);
/* Read a saved ncu report (.ncu-rep) through `ncu -i` (kopt_ncu_import_argv): its raw page,
 * and with `with_rules` its details page's rules. */
kopt_status kopt_profile_import(kopt_profile **out, kopt_ctx *ctx, const char *report,
                                int with_rules);

/* ---- a profile saved as JSON (src/profile/profile_json.c) ------------------------------ */

/* Read back the per-kernel metrics that `kopt profile --json` prints under "metrics" (and
 * the store keeps as a profile's metrics_json): an array of {"kernel": name, "grid": [x,y,z],
 * "block": [x,y,z], "metrics": {ncu name: number}, optional "dyn_smem"}; `text` may be that
 * array or the whole report object holding it. *out gets one kopt_kernel_profile per entry,
 * in order, with source "fixture" (no sets, rules, passes or times). `path` names the text
 * in errors. Errors: KOPT_E_INVALID (not JSON, with line and column; a missing or
 * mistyped field, named as "metrics[i].field"), KOPT_E_NOT_FOUND (an empty array). */
kopt_status kopt_profile_from_json(kopt_profile **out, kopt_ctx *ctx, const char *text,
                                   const char *path);

/* ---- what a kernel's name tells (src/profile/kernel_name.c) ---------------------------- */

/* Who launched a kernel, by its name (mangled, as CUPTI gives it, or demangled, as the
 * PyTorch profiler does). */
typedef enum kopt_kernel_origin {
    KOPT_ORIGIN_OTHER = 0,   /* no library recognized: the program's own (inline CUDA, an
                              * extension, a host-mode candidate's kernels) */
    KOPT_ORIGIN_CUBLAS,      /* cuBLAS / cuBLASLt: *gemm, gemv, splitKreduce, nvjet, xmma GEMMs,
                              * arch-prefixed kernels (ampere_, sm90_, ...), and the generated
                              * CUTLASS instances cuBLAS ships (cutlass_80_..., cutlass3x_...) */
    KOPT_ORIGIN_CUDNN,       /* cuDNN: cudnn in the name, xmma fprop/dgrad/wgrad convolutions,
                              * *_convolve_sgemm */
    KOPT_ORIGIN_TRITON,      /* Triton, as torch.compile generates it: triton_... */
    KOPT_ORIGIN_ATEN,        /* PyTorch's own: at::native elementwise, reduce, softmax, norms;
                              * c10; pytorch_flash attention */
    KOPT_ORIGIN_CUTLASS,     /* CUTLASS templates outside cuBLAS (PyTorch's memory-efficient
                              * attention, grouped GEMMs) */
    KOPT_ORIGIN_CUB,         /* CUB / Thrust (sort, scan, select), also PyTorch's copy of CUB */
    KOPT_ORIGIN_COUNT
} kopt_kernel_origin;

/* The origin of a kernel by its name (NULL: OTHER). Rules, first match wins: triton_ prefix;
 * cuDNN; CUB/Thrust; aten/c10; cuBLAS; any other CUTLASS; else OTHER. */
kopt_kernel_origin kopt_kernel_origin_of(const char *name);
/* "cuBLAS", "cuDNN", "Triton", "aten", "CUTLASS", "CUB", "other". Never NULL. */
const char *kopt_kernel_origin_name(kopt_kernel_origin o);
/* 1 for a library's kernel (cuBLAS, cuDNN, aten, CUTLASS, CUB), 0 for the program's own and
 * for Triton (generated from the program by torch.compile, so the program's work). */
int kopt_kernel_origin_is_library(kopt_kernel_origin o);
/* A short readable name into out (n bytes, always terminated): the demangled name's last
 * "::" component without its template arguments and parameters ("void at::native::(anonymous
 * namespace)::softmax_warp_forward<float, ...>(float*, ...)" -> "softmax_warp_forward"), a
 * mangled name's last identifier ("_Z11my_softmaxPKfPfi" -> "my_softmax"); the name itself
 * when neither applies. */
void kopt_kernel_short_name(const char *name, char *out, size_t n);

/* ---- a PyTorch program: every kernel of one forward (src/profile/program.c) ---------------- */

/* One kernel launch of the forward, as recorded, and what follows from the record alone. */
typedef struct kopt_program_kernel {
    char *name;                  /* demangled, as the activity trace names it */
    char *op;                    /* the torch op that launched it ("aten::_softmax"); "" unknown */
    kopt_kernel_origin origin;   /* kopt_kernel_origin_of(name) */
    int grid[3], block[3];       /* 0 when not recorded */
    int registers;               /* per thread; 0: not recorded */
    int static_smem, dynamic_smem;   /* bytes per block; 0: not recorded */
    int has_start;               /* start_us was recorded */
    double start_us;             /* from the first kernel's start (activity trace) */
    double dur_us;               /* activity trace (unprofiled); without it the metric's
                                  * gpu__time_duration.sum */
    kopt_metrics metrics;        /* ncu names; empty when not measured, may be partial */
    /* Derived when read: */
    double share;                /* dur_us over the sum of the program's, 0..1 */
    double dram_bytes;           /* dram__bytes_read.sum + dram__bytes_write.sum; -1: not both */
    double flops;                /* kopt_metrics_flops; -1: not measured */
    int tensor;                  /* sm__inst_executed_pipe_tensor.sum > 0: 1, == 0: 0, absent: -1 */
    double gbs, gflops;          /* dram_bytes and flops over the metric's own duration
                                  * (gpu__time_duration.sum, the same replay), else over dur_us;
                                  * 0 when not measured */
} kopt_program_kernel;

/* A program profile: one forward of a PyTorch module (a KernelBench reference, a ModelNew)
 * or of a host-mode candidate, kernel by kernel (format: docs/formats.md, "Program
 * profile"). Derived fields are computed by kopt_program_from_json from the record alone;
 * the DRAM rate, the classes and the advice are the analysis's (kopt_program_analyze). */
typedef struct kopt_program {
    char subject[16];            /* "reference", "modelnew", "host"; "" when not recorded */
    int has_device;
    kopt_device_info device;     /* name, cc_major/minor, sm_count as recorded; rest 0 */
    double forward_ms;           /* one forward's wall time (CUDA events, not profiled);
                                  * 0: not recorded */
    double compulsory_bytes;     /* the problem's inputs read once + outputs written once;
                                  * -1: not recorded */
    int nkernels;
    kopt_program_kernel *kernels;    /* in launch order */
    /* Derived when read: */
    double gpu_ms;               /* sum of the kernels' durations */
    double busy_ms;              /* the union of their [start, start + dur) intervals: kernels
                                  * that overlap (several streams) count once */
    double span_ms;              /* first start to last end */
    int has_starts;              /* every kernel has start_us; without, busy and span are
                                  * gpu_ms (kernels taken as back to back) */
    double gap_between_ms;       /* GPU idle between kernels: span_ms - busy_ms */
    double gap_outside_ms;       /* before the first and after the last kernel within the
                                  * forward: max(0, forward_ms - span_ms); 0 without forward_ms */
    double gap_ms;               /* host gaps: the two together, at most forward_ms -
                                  * busy_ms (the traced forward, slower on the host under the
                                  * profiler, is scaled down to the unprofiled one) */
    double gap_share;            /* gap_ms / forward_ms (over span_ms without forward_ms) */
    int dram_measured;           /* kernels with DRAM bytes (dram_bytes >= 0) */
    double dram_bytes;           /* their sum: a lower bound when not every kernel has them */
    double fusion_bytes;         /* what a perfectly fused kernel would not move:
                                  * max(0, dram_bytes - compulsory_bytes); -1 when unknown
                                  * (no DRAM bytes or no compulsory_bytes) */
} kopt_program;

/* Read a program profile from its JSON text (`path` names it in errors). Tolerant of
 * missing optional fields (everything but "kernels" and each kernel's "name"; a kernel
 * needs "dur_us" or the metric gpu__time_duration.sum), strict about types: a field of the
 * wrong type or range is KOPT_E_INVALID naming it ("kernels[2].grid[1]: expected an integer
 * from 0 to 2^31-1"), as is text that is not JSON (line and column), a "subject" other than
 * reference/modelnew/host, or a metric whose value is not a number. No kernel:
 * KOPT_E_NOT_FOUND. *out is caller-owned (kopt_program_free). */
kopt_status kopt_program_from_json(kopt_program **out, kopt_ctx *ctx, const char *text,
                                   const char *path);
void kopt_program_free(kopt_program *p);

/* ---- SASS ----------------------------------------------------------------------------- */

/* Global/shared access widths: index 0: 8, 1: 16, 2: 32, 3: 64, 4: 128 bits. */
#define KOPT_SASS_NWIDTH 5

typedef struct kopt_sass_line {
    char *file;
    int line;
    int instructions;
    int global_loads, global_stores, shared_accesses, local_accesses;
    int tensor, branches;
} kopt_sass_line;

typedef struct kopt_sass_counts {
    char kernel[512];        /* mangled symbol */
    int instructions;
    int ldg[KOPT_SASS_NWIDTH], stg[KOPT_SASS_NWIDTH];   /* LDG / STG by width */
    int ldg_constant;        /* LDG ... .CONSTANT (read-only path) */
    int lds[KOPT_SASS_NWIDTH], sts[KOPT_SASS_NWIDTH];   /* LDS / STS by width */
    int ldsm;                /* LDSM (ldmatrix) */
    int ldl, stl;            /* local memory (spills, local arrays) */
    int hmma, hgmma, imma, igmma, qgmma, dmma;          /* tensor instructions */
    int ffma, fmul, fadd;
    int dfma, dmul, dadd;
    int hfma2, hmul2, hadd2;
    int ldgsts;              /* cp.async (LDGSTS) */
    int tma;                 /* UTMALDG / UTMASTG / UBLKCP */
    int atomics;             /* ATOM, ATOMG, RED, REDG, ATOMS */
    int barriers;            /* BAR */
    int branches;            /* BRA, BRX, JMP... */
    int conversions;         /* F2F, I2F, F2I, I2FP */
    int mufu;                /* MUFU (transcendentals, reciprocals) */
    int nlines;
    kopt_sass_line *lines;   /* per source line, when the cubin has line info */
} kopt_sass_counts;

typedef struct kopt_sass {
    int nkernels;
    kopt_sass_counts *kernels;
    char *text;              /* the disassembly */
} kopt_sass;

/* Disassemble a cubin with nvdisasm (found by $KOPT_NVDISASM, PATH, the CUDA toolkit, or
 * the nvidia-cuda-nvdisasm Python package) and count. KOPT_E_NOT_FOUND when no nvdisasm. */
kopt_status kopt_sass_from_cubin(kopt_sass **out, kopt_ctx *ctx, const char *cubin_path);
/* Count from disassembly text (nvdisasm, with or without line info; or cuobjdump -sass). */
kopt_status kopt_sass_parse(kopt_sass **out, kopt_ctx *ctx, const char *text,
                            const char *path);
void kopt_sass_free(kopt_sass *s);
/* The counts of a kernel by mangled or launch-plan name prefix; NULL if absent. */
const kopt_sass_counts *kopt_sass_kernel(const kopt_sass *s, const char *name);

#ifdef __cplusplus
}
#endif
#endif
