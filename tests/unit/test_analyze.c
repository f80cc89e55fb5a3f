/*
 * Unit tests of the analysis (src/analyze/): roofline classification (memory-bound vector
 * add, compute-bound GEMM, latency-bound tiny kernel, disagreements whose reasoning names
 * both classes), the occupancy calculator against hand-computed H200 cases, thresholds per
 * architecture, the registry (names, metrics collected, skipped tools with reasons, class
 * filter, ranking, the roofline cap, kernel shares), and for every tool one synthetic input
 * that must make it fire and one that must leave it silent. Inputs are built by hand with
 * H200 numbers (132 SMs, 64 warps/SM, 65536 registers/SM, 233472 B shared memory/SM, 4000
 * GB/s DRAM, 60 TFLOP/s FP32); no GPU is needed.
 */
#include "ktest.h"

#include "kopt/analyze.h"

#include <dirent.h>
#include <math.h>

static kopt_ctx *ctx;

/* ---- fixtures ------------------------------------------------------------------------- */

typedef struct fx {
    kopt_device_info dev;
    kopt_ceilings ceil;
    kopt_kernel_info res;
    kopt_sass_counts sass;
    kopt_metrics m;
    kopt_kernel_view k[2];
    kopt_analysis_input in;
} fx;

static void h200(kopt_device_info *d)
{
    memset(d, 0, sizeof(*d));
    snprintf(d->name, sizeof(d->name), "NVIDIA H200");
    d->cc_major = 9;
    d->cc_minor = 0;
    d->sm_count = 132;
    d->max_threads_per_block = 1024;
    d->max_threads_per_sm = 2048;
    d->regs_per_sm = 65536;
    d->smem_per_sm = 233472;
    d->max_smem_per_block_optin = 232448;
    d->clock_khz = 1980000;
    d->mem_clock_khz = 3201000;
    d->mem_bus_width = 6144;
}

/* One kernel "k" of 4096 blocks x 256 threads on an H200 with measured ceilings; no
 * resources, SASS or metrics until a test adds them. */
static void fx_init(fx *f)
{
    memset(f, 0, sizeof(*f));
    h200(&f->dev);
    f->ceil.valid = 1;
    f->ceil.dram_copy_gbs = 4000;
    f->ceil.gflops[KOPT_COMPUTE_FP32] = 60000;
    f->ceil.gflops[KOPT_COMPUTE_FP64] = 30000;
    f->ceil.gflops[KOPT_COMPUTE_TF32] = 400000;
    f->ceil.gflops[KOPT_COMPUTE_BF16] = 800000;
    f->ceil.gflops[KOPT_COMPUTE_FP16] = 800000;
    f->ceil.measured[KOPT_COMPUTE_FP32] = 1;
    f->k[0].name = "k";
    f->k[0].grid[0] = 4096;
    f->k[0].grid[1] = f->k[0].grid[2] = 1;
    f->k[0].block[0] = 256;
    f->k[0].block[1] = f->k[0].block[2] = 1;
    f->in.dev = &f->dev;
    f->in.ceil = &f->ceil;
    f->in.problem = "p";
    f->in.compute = KOPT_COMPUTE_FP32;
    f->in.nkernels = 1;
    f->in.kernels = f->k;
}

static void with_res(fx *f, int regs, int smem)
{
    snprintf(f->res.name, sizeof(f->res.name), "k");
    f->res.registers = regs;
    f->res.static_smem = smem;
    f->k[0].res = &f->res;
}

static void with_sass(fx *f)
{
    snprintf(f->sass.kernel, sizeof(f->sass.kernel), "_Z1kv");
    f->k[0].sass = &f->sass;
}

static void metric(fx *f, const char *name, double v)
{
    CHECK_EQ_INT(kopt_metrics_set(&f->m, name, v), KOPT_OK);
    f->k[0].metrics = &f->m;
}

static void stall(fx *f, const char *reason, double v)
{
    char name[160];
    snprintf(name, sizeof(name), "smsp__average_warps_issue_stalled_%s_per_issue_active.ratio",
             reason);
    metric(f, name, v);
}

/* A vector add of n floats: 1 FLOP and 12 bytes per element. */
static void vecadd(fx *f, double n)
{
    f->in.flops = n;
    f->in.bytes = 12 * n;
}

/* An n x n x n fp32 GEMM: 2n^3 FLOP, three n x n matrices moved once. */
static void gemm(fx *f, double n)
{
    f->in.flops = 2 * n * n * n;
    f->in.bytes = 3 * 4 * n * n;
    f->in.matmul_like = 1;
}

static kopt_analysis *run_opts(fx *f, const kopt_analyze_opts *o)
{
    kopt_analysis *a = NULL;
    kopt_status rc = kopt_analyze_run(&a, ctx, &f->in, o);

    if (!CHECK_EQ_INT(rc, KOPT_OK))
        printf("  %s\n", kopt_errmsg(ctx));
    return a;
}

static kopt_analysis *run_tool(fx *f, const char *tool)
{
    kopt_analyze_opts o = KOPT_ANALYZE_OPTS_INIT;
    o.only_tool = tool;
    return run_opts(f, &o);
}

static int count(const kopt_analysis *a, const char *tool)
{
    int n = 0;
    for (int i = 0; a && i < a->findings.n; i++)
        n += strcmp(a->findings.f[i].tool, tool) == 0;
    return n;
}

static const kopt_finding *first(const kopt_analysis *a, const char *tool)
{
    for (int i = 0; a && i < a->findings.n; i++)
        if (strcmp(a->findings.f[i].tool, tool) == 0)
            return &a->findings.f[i];
    return NULL;
}

static int has_skip(const kopt_analysis *a, const char *text)
{
    for (int i = 0; a && i < a->nskipped; i++)
        if (strstr(a->skipped[i], text))
            return 1;
    return 0;
}

/* Every finding is complete: texts, a gain in 0..1, a confidence, evidence. */
static void check_complete(const kopt_finding *f)
{
    if (!CHECK(f != NULL))
        return;
    CHECK(f->title[0] != '\0');
    CHECK(f->seen && f->seen[0]);
    CHECK(f->why && f->why[0]);
    CHECK(f->change && f->change[0]);
    CHECK(f->gain_how && f->gain_how[0]);
    CHECK(f->gain >= 0 && f->gain <= 1);
    CHECK(f->confidence > 0 && f->confidence <= 1);
    CHECK(f->nevidence >= 1);
    if (f->nevidence >= 1)
        CHECK(f->evidence[0].threshold_name[0] != '\0');
}

/* Run `tool` alone on `f` and expect `want` findings of it (the first one complete). */
static kopt_analysis *expect(fx *f, const char *tool, int fire)
{
    kopt_analysis *a = run_tool(f, tool);
    int n = count(a, tool);

    if (fire) {
        if (!CHECK(n >= 1))
            printf("  %s did not fire\n", tool);
        else
            check_complete(first(a, tool));
    } else if (!CHECK_EQ_INT(n, 0)) {
        printf("  %s fired: %s\n", tool, first(a, tool)->title);
    }
    return a;
}

/* ---- classification ------------------------------------------------------------------- */

static void test_classify_vector_add_memory(void)
{
    fx f;
    kopt_classification c;

    fx_init(&f);
    vecadd(&f, 1 << 26);                  /* 805 MB: 0.201 ms at 4000 GB/s */
    f.in.median_ms = 0.25;
    metric(&f, "sm__throughput.avg.pct_of_peak_sustained_elapsed", 22);
    metric(&f, "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 86);
    kopt_classify(&f.in, &c);
    CHECK_EQ_INT(c.analytic, KOPT_CLASS_MEMORY);
    CHECK_EQ_INT(c.measured, KOPT_CLASS_MEMORY);
    CHECK_EQ_INT(c.final, KOPT_CLASS_MEMORY);
    CHECK_NEAR(c.intensity, 1.0 / 12, 1e-9);
    CHECK_NEAR(c.ridge, 15.0, 1e-9);
    CHECK_NEAR(c.pct_of_bound, 100.0 * (12.0 * (1 << 26) / 4e12 * 1e3) / 0.25, 1e-6);
    CHECK_STR_CONTAINS(c.reasoning, "agree");
    CHECK_EQ_STR(kopt_class_name(c.final), "memory-bound");
    kopt_metrics_clear(&f.m);
}

static void test_classify_gemm_compute(void)
{
    fx f;
    kopt_classification c;

    fx_init(&f);
    gemm(&f, 4096);                       /* 683 FLOP/B against a ridge of 15 */
    metric(&f, "sm__throughput.avg.pct_of_peak_sustained_elapsed", 91);
    metric(&f, "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 35);
    kopt_classify(&f.in, &c);
    CHECK_EQ_INT(c.analytic, KOPT_CLASS_COMPUTE);
    CHECK_EQ_INT(c.measured, KOPT_CLASS_COMPUTE);
    CHECK_EQ_INT(c.final, KOPT_CLASS_COMPUTE);
    CHECK(c.intensity > 600 && c.intensity < 700);
    CHECK_EQ_INT(c.pct_of_bound, 0);      /* not timed */
    kopt_metrics_clear(&f.m);
}

/* FP64: the device's FP64 limit is the DMMA rate, but a kernel whose SASS has no DMMA is
 * held to the FMA rate; without SASS the best rate stays the bound. */
static void test_classify_fp64_fma_vs_dmma(void)
{
    fx f;
    kopt_classification c;

    fx_init(&f);
    gemm(&f, 4096);
    f.in.compute = KOPT_COMPUTE_FP64;
    f.ceil.gflops[KOPT_COMPUTE_FP64] = 60000;
    f.ceil.measured[KOPT_COMPUTE_FP64] = 1;
    f.ceil.fp64_fma_gflops = 30000;
    f.ceil.fp64_tc_gflops = 60000;
    kopt_classify(&f.in, &c);               /* no SASS known: the best rate */
    CHECK_NEAR(c.ridge, 60000.0 / 4000, 1e-9);
    with_sass(&f);
    f.sass.dfma = 100;
    kopt_classify(&f.in, &c);               /* DFMA only: the FMA rate */
    CHECK_NEAR(c.ridge, 30000.0 / 4000, 1e-9);
    CHECK_STR_CONTAINS(c.reasoning, "FMA");
    f.sass.dmma = 8;
    kopt_classify(&f.in, &c);               /* DMMA present: the tensor-core rate */
    CHECK_NEAR(c.ridge, 60000.0 / 4000, 1e-9);
    kopt_metrics_clear(&f.m);
}

static void test_classify_tiny_latency(void)
{
    fx f;
    kopt_classification c;

    fx_init(&f);
    vecadd(&f, 4096);                     /* 48 KB: 12 ns of DRAM time */
    f.k[0].grid[0] = 16;
    metric(&f, "sm__throughput.avg.pct_of_peak_sustained_elapsed", 3);
    metric(&f, "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 5);
    kopt_classify(&f.in, &c);
    CHECK_EQ_INT(c.analytic, KOPT_CLASS_LATENCY);
    CHECK_EQ_INT(c.measured, KOPT_CLASS_LATENCY);
    CHECK_EQ_INT(c.final, KOPT_CLASS_LATENCY);
    CHECK_STR_CONTAINS(c.reasoning, "KOPT_TINY_BOUND_US");
    kopt_metrics_clear(&f.m);
}

/* A GEMM measured memory-bound (no tiling): the analytic class wins and the reasoning
 * names both and says why. */
static void test_classify_disagreement_gemm_measured_memory(void)
{
    fx f;
    kopt_classification c;

    fx_init(&f);
    gemm(&f, 4096);
    metric(&f, "sm__throughput.avg.pct_of_peak_sustained_elapsed", 30);
    metric(&f, "dram__throughput.avg.pct_of_peak_sustained_elapsed", 85);
    kopt_classify(&f.in, &c);
    CHECK_EQ_INT(c.analytic, KOPT_CLASS_COMPUTE);
    CHECK_EQ_INT(c.measured, KOPT_CLASS_MEMORY);
    CHECK_EQ_INT(c.final, KOPT_CLASS_COMPUTE);
    CHECK_STR_CONTAINS(c.reasoning, "disagree");
    CHECK_STR_CONTAINS(c.reasoning, "analytic (compute-bound)");
    CHECK_STR_CONTAINS(c.reasoning, "measured (memory-bound)");
    CHECK_STR_CONTAINS(c.reasoning, "trusting the analytic class");
    CHECK_STR_CONTAINS(c.reasoning, "tiling");
    kopt_metrics_clear(&f.m);
}

/* A memory-bound problem whose kernel keeps neither unit busy: the measurement wins. */
static void test_classify_disagreement_measured_latency(void)
{
    fx f;
    kopt_classification c;

    fx_init(&f);
    vecadd(&f, 1 << 26);
    f.in.median_ms = 2.0;
    metric(&f, "sm__throughput.avg.pct_of_peak_sustained_elapsed", 9);
    metric(&f, "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 14);
    kopt_classify(&f.in, &c);
    CHECK_EQ_INT(c.analytic, KOPT_CLASS_MEMORY);
    CHECK_EQ_INT(c.measured, KOPT_CLASS_LATENCY);
    CHECK_EQ_INT(c.final, KOPT_CLASS_LATENCY);
    CHECK_STR_CONTAINS(c.reasoning, "trusting the measurement");
    CHECK_STR_CONTAINS(c.reasoning, "memory-bound");
    CHECK(c.pct_of_bound > 9 && c.pct_of_bound < 11);
    kopt_metrics_clear(&f.m);
}

static void test_classify_without_ceilings(void)
{
    fx f;
    kopt_classification c;

    fx_init(&f);
    f.in.ceil = NULL;
    f.in.dev = NULL;
    vecadd(&f, 1 << 20);
    kopt_classify(&f.in, &c);
    CHECK_EQ_INT(c.analytic, KOPT_CLASS_MEMORY);      /* below any GPU's ridge */
    CHECK_EQ_INT(c.measured, KOPT_CLASS_UNKNOWN);
    CHECK_EQ_INT(c.final, KOPT_CLASS_MEMORY);
    CHECK_STR_CONTAINS(c.reasoning, "analytic only");
    gemm(&f, 4096);
    kopt_classify(&f.in, &c);
    CHECK_EQ_INT(c.final, KOPT_CLASS_UNKNOWN);        /* no ridge to compare with */
    /* Device but no measured ceilings: spec-derived, and said so. */
    f.in.dev = &f.dev;
    kopt_classify(&f.in, &c);
    CHECK_EQ_INT(c.analytic, KOPT_CLASS_COMPUTE);
    CHECK_STR_CONTAINS(c.reasoning, "spec-derived");
    /* No work counts at all. */
    f.in.flops = f.in.bytes = 0;
    kopt_classify(&f.in, &c);
    CHECK_EQ_INT(c.final, KOPT_CLASS_UNKNOWN);
}

static void test_classify_near_ridge_mixed(void)
{
    fx f;
    kopt_classification c;

    fx_init(&f);
    f.in.flops = 15e9;                    /* exactly the ridge: 15 FLOP/B */
    f.in.bytes = 1e9;
    kopt_classify(&f.in, &c);
    CHECK_EQ_INT(c.analytic, KOPT_CLASS_MIXED);
    metric(&f, "sm__throughput.avg.pct_of_peak_sustained_elapsed", 88);
    metric(&f, "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 60);
    kopt_classify(&f.in, &c);
    CHECK_EQ_INT(c.measured, KOPT_CLASS_COMPUTE);
    CHECK_EQ_INT(c.final, KOPT_CLASS_COMPUTE);       /* the measurement breaks the tie */
    CHECK_STR_CONTAINS(c.reasoning, "near the ridge");
    kopt_metrics_clear(&f.m);
}

/* ---- occupancy and thresholds --------------------------------------------------------- */

static void test_occupancy_h200(void)
{
    kopt_device_info d;
    kopt_occupancy o;

    h200(&d);
    /* 64 registers: 2048 per warp, 8 warps per sub-partition, 32 per SM: 4 blocks of 256. */
    CHECK_EQ_INT(kopt_occupancy_compute(&o, ctx, &d, 256, 64, 0), KOPT_OK);
    CHECK_EQ_INT(o.blocks_by_regs, 4);
    CHECK_EQ_INT(o.blocks, 4);
    CHECK_NEAR(o.pct, 50.0, 1e-9);
    CHECK_EQ_STR(o.limiter, "registers");
    /* 168 registers: 5376 per warp, 3 per sub-partition, 12 warps: one block of 8 warps. */
    CHECK_EQ_INT(kopt_occupancy_compute(&o, ctx, &d, 256, 168, 0), KOPT_OK);
    CHECK_EQ_INT(o.blocks, 1);
    CHECK_NEAR(o.pct, 12.5, 1e-9);
    CHECK_EQ_INT(kopt_occupancy_regs_for(&d, 256, 2), 128);
    /* 96 registers, one-warp blocks: 5 warps per sub-partition (16384 / 3072), so 20 per SM,
     * not the 21 that 65536 / 3072 would suggest. */
    CHECK_EQ_INT(kopt_occupancy_compute(&o, ctx, &d, 32, 96, 0), KOPT_OK);
    CHECK_EQ_INT(o.blocks_by_regs, 20);
    CHECK_EQ_INT(kopt_occupancy_regs_for(&d, 256, 8), 32);
    /* 100 KB of shared memory (+1 KB reserved): two blocks per 228 KB SM. */
    CHECK_EQ_INT(kopt_occupancy_compute(&o, ctx, &d, 256, 32, 102400), KOPT_OK);
    CHECK_EQ_INT(o.blocks_by_smem, 2);
    CHECK_EQ_STR(o.limiter, "shared memory");
    /* 76 KB: three would fit in 228 KB, but not with 1 KB reserved per block. */
    CHECK_EQ_INT(kopt_occupancy_compute(&o, ctx, &d, 256, 32, 77824), KOPT_OK);
    CHECK_EQ_INT(o.blocks_by_smem, 2);
    CHECK_EQ_INT(kopt_occupancy_smem_for(&d, 3), 233472 / 3 / 128 * 128 - 1024);
    CHECK_EQ_INT(kopt_occupancy_smem_for(&d, 1), 232448);   /* opt-in per-block maximum */
    /* One-warp blocks: 32 block slots fill half the SM. */
    CHECK_EQ_INT(kopt_occupancy_compute(&o, ctx, &d, 32, 16, 0), KOPT_OK);
    CHECK_EQ_INT(o.blocks, 32);
    CHECK_EQ_STR(o.limiter, "block slots");
    CHECK_NEAR(o.pct, 50.0, 1e-9);
    /* Full occupancy: warps limit, and ties are named together. */
    CHECK_EQ_INT(kopt_occupancy_compute(&o, ctx, &d, 256, 32, 0), KOPT_OK);
    CHECK_EQ_INT(o.blocks, 8);
    CHECK_EQ_STR(o.limiter, "registers+warps");
    CHECK_NEAR(o.pct, 100.0, 1e-9);
    /* Too many registers for a 1024-thread block: no block fits. */
    CHECK_EQ_INT(kopt_occupancy_compute(&o, ctx, &d, 1024, 128, 0), KOPT_OK);
    CHECK_EQ_INT(o.blocks, 0);
    CHECK_EQ_INT(kopt_occupancy_compute(&o, ctx, &d, 0, 32, 0), KOPT_E_INVALID);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "threads per block 0");
}

static void test_thresholds_per_arch(void)
{
    kopt_device_info d;
    const kopt_thresholds *t;

    t = kopt_thresholds_for(NULL);
    CHECK_EQ_INT(t->cc_major, 0);
    CHECK_NEAR(t->registers_high, 96, 0);
    h200(&d);
    t = kopt_thresholds_for(&d);
    CHECK_EQ_INT(t->cc_major, 9);
    CHECK(t->registers_high > 96);
    CHECK(t->dram_saturated_pct < kopt_thresholds_for(NULL)->dram_saturated_pct);
    d.cc_major = 8;
    d.cc_minor = 9;
    t = kopt_thresholds_for(&d);
    CHECK_EQ_INT(t->cc_major, 8);
    CHECK_EQ_INT(t->cc_minor, 9);
    d.cc_minor = 0;
    CHECK_EQ_INT(kopt_thresholds_for(&d)->cc_minor, 0);
    d.cc_minor = 6;                       /* no row: the default */
    CHECK_EQ_INT(kopt_thresholds_for(&d)->cc_major, 0);
    d.cc_major = 10;
    d.cc_minor = 0;
    CHECK_EQ_INT(kopt_thresholds_for(&d)->cc_major, 10);
    /* Every row is filled. */
    CHECK(t->sector_bytes_used_min > 0 && t->sector_bytes_used_min < 32);
    CHECK(t->stall_share > 0 && t->stall_share < t->stall_share_critical);
    CHECK(t->many_launches > 0 && t->sectors_excess > 1 && t->dram_excess_ratio > 1);
}

/* ---- registry and driver -------------------------------------------------------------- */

static int in_rules_set(const char *name)
{
    for (int i = 0; kopt_metrics_rules[i]; i++)
        if (strcmp(kopt_metrics_rules[i], name) == 0)
            return 1;
    return 0;
}

static void test_registry(void)
{
    int n = 0;
    const kopt_tool *const *t = kopt_tools(&n);
    kopt_analysis *a = NULL;
    kopt_analyze_opts o = KOPT_ANALYZE_OPTS_INIT;
    fx f;

    CHECK(n >= 16);
    for (int i = 0; i < n; i++) {
        CHECK(t[i]->name && t[i]->summary && !t[i]->run != !t[i]->run_kernel && t[i]->classes);
        CHECK(kopt_tool_find(t[i]->name) == t[i]);
        for (int j = 0; j < i; j++)
            CHECK(strcmp(t[i]->name, t[j]->name) != 0);
        /* What a tool reads is what the profiler collects. */
        for (int m = 0; t[i]->metrics && t[i]->metrics[m]; m++)
            if (!CHECK(in_rules_set(t[i]->metrics[m])))
                printf("  %s reads %s, not in kopt_metrics_rules\n", t[i]->name,
                       t[i]->metrics[m]);
    }
    CHECK(kopt_tool_find("no_such_tool") == NULL);
    CHECK(kopt_tool_find(NULL) == NULL);
    fx_init(&f);
    o.only_tool = "no_such_tool";
    CHECK_EQ_INT(kopt_analyze_run(&a, ctx, &f.in, &o), KOPT_E_NOT_FOUND);
    CHECK(a == NULL);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "no_such_tool");
    CHECK_EQ_INT(kopt_analyze_run(&a, ctx, NULL, NULL), KOPT_E_INVALID);
    f.in.nkernels = 2;
    f.in.kernels = NULL;
    CHECK_EQ_INT(kopt_analyze_run(&a, ctx, &f.in, NULL), KOPT_E_INVALID);
    kopt_analysis_free(NULL);
}

/* A static run (resources and SASS, no metrics, no timing): the tools that need counters
 * are skipped with the reason, the class filter skips the others, --all-tools lifts it. */
static void test_static_run_skips(void)
{
    fx f;
    kopt_analysis *a;
    kopt_analyze_opts all = KOPT_ANALYZE_OPTS_INIT;
    int n = 0;

    fx_init(&f);
    vecadd(&f, 1 << 26);
    with_res(&f, 32, 0);
    with_sass(&f);
    f.sass.ldg[2] = 2;
    f.sass.stg[2] = 1;
    a = run_opts(&f, NULL);
    if (!a)
        return;
    CHECK_EQ_INT(a->cls.final, KOPT_CLASS_MEMORY);
    for (int i = 0; getenv("KTEST_VERBOSE") && i < a->nskipped; i++)
        printf("  skipped %s\n", a->skipped[i]);
    CHECK(has_skip(a, "bank_conflicts: needs measured metrics (run with a GPU or --ncu)"));
    CHECK(has_skip(a, "warp_stalls: needs measured metrics"));
    CHECK(has_skip(a, "sector_efficiency: needs measured metrics"));
    CHECK(has_skip(a, "many_small_launches: needs host-mode launch records"));
    CHECK(has_skip(a, "dram_saturated: needs measured metrics (run with a GPU or --ncu) or a "
                      "timed run"));
    CHECK(has_skip(a, "no_tensor_cores: not for a memory-bound kernel"));
    CHECK(has_skip(a, "unfused_fp: not for a memory-bound kernel"));
    CHECK(!has_skip(a, "register_spills"));
    CHECK_EQ_INT(count(a, "bank_conflicts"), 0);
    CHECK_EQ_INT(count(a, "non_vectorized_loads"), 1);      /* static evidence suffices */
    kopt_tools(&n);
    CHECK_EQ_INT(a->nrun + a->nskipped, n);
    kopt_analysis_free(a);

    all.all_tools = 1;
    a = run_opts(&f, &all);
    if (!a)
        return;
    CHECK(!has_skip(a, "no_tensor_cores"));
    CHECK(has_skip(a, "bank_conflicts: needs measured metrics"));   /* needs still apply */
    kopt_analysis_free(a);
    kopt_metrics_clear(&f.m);
}

/* Findings from several tools come back ranked by gain, largest first. */
static void test_ranking(void)
{
    fx f;
    kopt_analysis *a;
    kopt_analyze_opts all = KOPT_ANALYZE_OPTS_INIT;

    fx_init(&f);
    vecadd(&f, 1 << 26);
    f.k[0].block[0] = 100;                /* block_size: small gain */
    f.k[0].grid[0] = 64;                  /* small_grid_tail: (132 - 64) / 132 */
    with_res(&f, 168, 0);                 /* occupancy_limiter, high_registers */
    metric(&f, "smsp__thread_inst_executed_per_inst_executed.ratio", 8);   /* divergence */
    metric(&f, "sm__throughput.avg.pct_of_peak_sustained_elapsed", 40);
    metric(&f, "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 30);
    all.all_tools = 1;
    a = run_opts(&f, &all);
    if (!a)
        return;
    CHECK(a->findings.n >= 4);
    CHECK(count(a, "small_grid_tail") == 1 && count(a, "block_size") == 1 &&
          count(a, "divergence") == 1);
    for (int i = 1; i < a->findings.n; i++)
        if (!CHECK(a->findings.f[i - 1].gain >= a->findings.f[i].gain))
            printf("  %s (%.3f) before %s (%.3f)\n", a->findings.f[i - 1].tool,
                   a->findings.f[i - 1].gain, a->findings.f[i].tool, a->findings.f[i].gain);
    CHECK_EQ_STR(a->findings.f[0].tool, "small_grid_tail");
    CHECK_NEAR(a->findings.f[0].gain, (132.0 - 64) / 132, 1e-9);
    kopt_analysis_free(a);
    kopt_metrics_clear(&f.m);
}

/* A candidate at 95% of its bound cannot be promised more than 5%. */
static void test_roofline_cap(void)
{
    fx f;
    kopt_analysis *a;
    const kopt_finding *g;

    fx_init(&f);
    vecadd(&f, 1 << 26);
    f.in.median_ms = 12.0 * (1 << 26) / 4e12 * 1e3 / 0.95;     /* 95 % of the bound */
    f.k[0].grid[0] = 64;
    a = run_tool(&f, "small_grid_tail");
    g = first(a, "small_grid_tail");
    if (CHECK(g != NULL)) {
        CHECK_NEAR(a->cls.pct_of_bound, 95.0, 1e-6);
        CHECK_NEAR(g->gain, 0.05, 1e-6);
        CHECK_STR_CONTAINS(g->gain_how, "Capped at 5.0% by the roofline");
    }
    kopt_analysis_free(a);
    /* Untimed: the tool's own estimate stands. */
    f.in.median_ms = 0;
    a = run_tool(&f, "small_grid_tail");
    g = first(a, "small_grid_tail");
    if (CHECK(g != NULL)) {
        CHECK_NEAR(g->gain, (132.0 - 64) / 132, 1e-9);
        CHECK(!strstr(g->gain_how, "Capped"));
    }
    kopt_analysis_free(a);
}

/* A finding on a kernel that takes a quarter of the time is worth a quarter as much. */
static void test_kernel_share(void)
{
    fx f;
    kopt_analysis *a;

    fx_init(&f);
    f.k[1] = f.k[0];
    f.k[1].name = "k2";
    f.k[0].ms = 1.0;
    f.k[1].ms = 3.0;
    f.k[0].grid[0] = 64;                  /* only k is small */
    f.in.nkernels = 2;
    a = run_tool(&f, "small_grid_tail");
    if (CHECK_EQ_INT(count(a, "small_grid_tail"), 1)) {
        const kopt_finding *g = first(a, "small_grid_tail");
        CHECK_EQ_STR(g->kernel, "k");
        CHECK_NEAR(g->gain, (132.0 - 64) / 132 * 0.25, 1e-9);
        CHECK_STR_CONTAINS(g->gain_how, "share of the run time (25%)");
    }
    kopt_analysis_free(a);
}

static void test_findings_copy(void)
{
    kopt_findings fs = {0, 0, NULL};
    kopt_finding f;
    char text[32];

    memset(&f, 0, sizeof(f));
    snprintf(f.tool, sizeof(f.tool), "t");
    snprintf(text, sizeof(text), "seen it");
    f.seen = text;
    f.why = "why";
    f.change = NULL;
    f.gain_how = "how";
    for (int i = 0; i < 40; i++)
        CHECK_EQ_INT(kopt_findings_add(&fs, &f), KOPT_OK);
    text[0] = 'X';                        /* the copy is the finding's own */
    CHECK_EQ_INT(fs.n, 40);
    CHECK_EQ_STR(fs.f[39].seen, "seen it");
    CHECK(fs.f[0].seen != text);
    CHECK(fs.f[0].change == NULL);
    CHECK_EQ_INT(kopt_findings_add(&fs, NULL), KOPT_E_INVALID);
    kopt_findings_clear(&fs);
    CHECK(fs.n == 0 && fs.f == NULL);
    kopt_findings_clear(&fs);             /* twice is fine */
    kopt_findings_clear(NULL);
}

/* ---- the tools: fire and stay silent -------------------------------------------------- */

static void test_uncoalesced_global(void)
{
    fx f;
    kopt_analysis *a;
    const kopt_finding *g;

    fx_init(&f);
    with_sass(&f);
    f.sass.ldg[2] = 4;                    /* 32-bit loads: ideal 4 sectors per request */
    metric(&f, "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 32e6);
    metric(&f, "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", 1e6);
    metric(&f, "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 80);
    a = expect(&f, "uncoalesced_global", 1);
    if ((g = first(a, "uncoalesced_global"))) {
        CHECK_NEAR(g->gain, (1 - 4.0 / 32) * 0.8, 1e-9);
        CHECK_EQ_STR(g->evidence[0].threshold_name, "sectors_excess x ideal");
        CHECK_STR_CONTAINS(g->change, "threadIdx.x");
    }
    kopt_analysis_free(a);
    metric(&f, "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 4.2e6);
    kopt_analysis_free(expect(&f, "uncoalesced_global", 0));
    /* 16 sectors per request from float4 loads is ideal, not excess. */
    metric(&f, "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 16e6);
    f.sass.ldg[2] = 0;
    f.sass.ldg[4] = 4;
    kopt_analysis_free(expect(&f, "uncoalesced_global", 0));
    /* Without SASS widths, full sectors say the loads are wide, not scattered. */
    f.k[0].sass = NULL;
    metric(&f, "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio", 32);
    kopt_analysis_free(expect(&f, "uncoalesced_global", 0));
    kopt_metrics_clear(&f.m);
}

static void test_uncoalesced_static_lead(void)
{
    fx f;
    kopt_analysis *a;
    const kopt_finding *g;

    fx_init(&f);
    vecadd(&f, 1 << 24);
    f.in.median_ms = 12.0 * (1 << 24) / 4e12 * 1e3 * 10;      /* 10 % of the bound */
    with_sass(&f);
    f.sass.ldg[2] = 2;
    f.sass.stg[2] = 1;
    a = expect(&f, "uncoalesced_global", 1);
    if ((g = first(a, "uncoalesced_global"))) {
        CHECK(g->confidence < 0.3);
        CHECK_STR_CONTAINS(g->why, "--ncu");
    }
    kopt_analysis_free(a);
    f.in.median_ms /= 5;                  /* 50 % of the bound: no lead */
    kopt_analysis_free(expect(&f, "uncoalesced_global", 0));
}

static void test_sector_efficiency(void)
{
    fx f;
    kopt_analysis *a;
    const kopt_finding *g;

    fx_init(&f);
    metric(&f, "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio", 8);
    metric(&f, "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.ratio", 32);
    metric(&f, "dram__bytes_read.sum", 3e9);
    metric(&f, "dram__bytes_write.sum", 1e9);
    metric(&f, "dram__throughput.avg.pct_of_peak_sustained_elapsed", 60);
    a = expect(&f, "sector_efficiency", 1);
    if ((g = first(a, "sector_efficiency"))) {
        CHECK_NEAR(g->gain, (1 - 8.0 / 32) * 0.75 * 0.6, 1e-9);
        CHECK_STR_CONTAINS(g->title, "loads use 8.0 of every 32 bytes");
    }
    kopt_analysis_free(a);
    metric(&f, "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio", 28);
    kopt_analysis_free(expect(&f, "sector_efficiency", 0));
    kopt_metrics_clear(&f.m);
}

static void test_non_vectorized_loads(void)
{
    fx f;
    kopt_analysis *a;

    fx_init(&f);
    with_sass(&f);
    f.sass.ldg[2] = 2;
    f.sass.stg[2] = 1;
    a = expect(&f, "non_vectorized_loads", 1);
    if (first(a, "non_vectorized_loads"))
        CHECK_STR_CONTAINS(first(a, "non_vectorized_loads")->change, "reinterpret_cast");
    kopt_analysis_free(a);
    f.sass.ldg[2] = 0;
    f.sass.stg[2] = 0;
    f.sass.ldg[4] = 2;
    f.sass.stg[4] = 1;
    kopt_analysis_free(expect(&f, "non_vectorized_loads", 0));
}

static void test_bank_conflicts(void)
{
    fx f;
    kopt_analysis *a;
    const kopt_finding *g;

    fx_init(&f);
    metric(&f, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", 3e6);
    metric(&f, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum", 0);
    metric(&f, "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", 3.5e6);
    metric(&f, "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum", 0.5e6);
    metric(&f, "l1tex__throughput.avg.pct_of_peak_sustained_active", 70);
    a = expect(&f, "bank_conflicts", 1);
    if ((g = first(a, "bank_conflicts"))) {
        CHECK_NEAR(g->evidence[0].value, 75.0, 1e-9);
        CHECK_NEAR(g->gain, 0.75 * 0.7, 1e-9);
        CHECK_STR_CONTAINS(g->change, "[32][33]");
    }
    kopt_analysis_free(a);
    metric(&f, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", 1e4);
    kopt_analysis_free(expect(&f, "bank_conflicts", 0));
    kopt_metrics_clear(&f.m);
}

static void test_register_spills(void)
{
    fx f;
    kopt_analysis *a;
    const kopt_finding *g;

    fx_init(&f);
    with_res(&f, 255, 0);
    f.res.spill_stores = 64;
    f.res.spill_loads = 64;
    f.res.stack_frame = 64;
    with_sass(&f);
    f.sass.ldl = 12;
    f.sass.stl = 10;
    a = expect(&f, "register_spills", 1);
    if ((g = first(a, "register_spills"))) {
        CHECK_STR_CONTAINS(g->title, "spill");
        CHECK_STR_CONTAINS(g->seen, "255-register maximum");
    }
    kopt_analysis_free(a);
    /* A run-time-indexed local array: LDL/STL and a stack frame, no spills. */
    f.res.spill_stores = f.res.spill_loads = 0;
    f.res.registers = 40;
    a = expect(&f, "register_spills", 1);
    if ((g = first(a, "register_spills")))
        CHECK_STR_CONTAINS(g->title, "per-thread array");
    kopt_analysis_free(a);
    f.sass.ldl = f.sass.stl = 0;
    f.res.stack_frame = 0;
    kopt_analysis_free(expect(&f, "register_spills", 0));
}

static void test_occupancy_limiter(void)
{
    fx f;
    kopt_analysis *a;
    const kopt_finding *g;

    fx_init(&f);
    with_res(&f, 168, 0);
    a = expect(&f, "occupancy_limiter", 1);
    if ((g = first(a, "occupancy_limiter"))) {
        CHECK_STR_CONTAINS(g->title, "12%");
        CHECK_STR_CONTAINS(g->title, "registers");
        CHECK_STR_CONTAINS(g->change, "__launch_bounds__(256, 2)");
        CHECK_STR_CONTAINS(g->change, "at 128 or fewer");
        CHECK_NEAR(g->gain, 0.5 * 0.5, 1e-9);         /* 1 -> 2 blocks, exposure unknown */
    }
    kopt_analysis_free(a);
    f.res.registers = 32;
    kopt_analysis_free(expect(&f, "occupancy_limiter", 0));
    /* Achieved far below theoretical. */
    metric(&f, "sm__warps_active.avg.pct_of_peak_sustained_active", 40);
    a = expect(&f, "occupancy_limiter", 1);
    if ((g = first(a, "occupancy_limiter")))
        CHECK_STR_CONTAINS(g->title, "achieved occupancy 40%");
    kopt_analysis_free(a);
    kopt_metrics_clear(&f.m);
}

static void test_high_registers(void)
{
    fx f;
    kopt_analysis *a;

    fx_init(&f);
    with_res(&f, 168, 0);
    a = expect(&f, "high_registers", 1);
    if (first(a, "high_registers"))
        CHECK_EQ_STR(first(a, "high_registers")->evidence[0].threshold_name, "registers_high");
    kopt_analysis_free(a);
    f.res.registers = 128;                /* Hopper's registers_high: not above */
    kopt_analysis_free(expect(&f, "high_registers", 0));
    f.res.registers = 100;
    kopt_analysis_free(expect(&f, "high_registers", 0));
    f.in.dev = NULL;                      /* the default row's 96 */
    kopt_analysis_free(expect(&f, "high_registers", 1));
}

static void test_small_grid_tail(void)
{
    fx f;
    kopt_analysis *a;
    const kopt_finding *g;

    fx_init(&f);
    with_res(&f, 32, 0);                  /* 8 blocks of 256 per SM: 1056 per wave */
    f.k[0].grid[0] = 1100;                /* 1.04 waves */
    a = expect(&f, "small_grid_tail", 1);
    if ((g = first(a, "small_grid_tail"))) {
        CHECK_NEAR(g->gain, (2 - 1100.0 / 1056) / 2, 1e-9);
        CHECK_STR_CONTAINS(g->change, "1056");
    }
    kopt_analysis_free(a);
    f.k[0].grid[0] = 4 * 1056;            /* whole waves */
    kopt_analysis_free(expect(&f, "small_grid_tail", 0));
    f.k[0].grid[0] = 40;                  /* fewer blocks than SMs */
    kopt_analysis_free(expect(&f, "small_grid_tail", 1));
}

static void test_block_size(void)
{
    fx f;
    kopt_analysis *a;

    fx_init(&f);
    f.k[0].block[0] = 100;
    a = expect(&f, "block_size", 1);
    if (first(a, "block_size"))
        CHECK_NEAR(first(a, "block_size")->gain, 0.25 * (1 - 4.0 / 32), 1e-9);
    kopt_analysis_free(a);
    f.k[0].block[0] = 128;
    kopt_analysis_free(expect(&f, "block_size", 0));
}

static void test_warp_stalls(void)
{
    fx f;
    kopt_analysis *a;
    const kopt_finding *g;

    fx_init(&f);
    metric(&f, "smsp__average_warp_latency_per_inst_issued.ratio", 10);
    metric(&f, "smsp__issue_active.avg.per_cycle_active", 0.3);
    stall(&f, "long_scoreboard", 6.5);
    stall(&f, "barrier", 1);
    stall(&f, "wait", 1);
    a = expect(&f, "warp_stalls", 1);
    CHECK_EQ_INT(count(a, "warp_stalls"), 1);
    if ((g = first(a, "warp_stalls"))) {
        CHECK_STR_CONTAINS(g->title, "critical: warps stall on long_scoreboard");
        CHECK_STR_CONTAINS(g->change, "shared memory");
        CHECK_NEAR(g->gain, 0.65 * 0.7 * 0.5, 1e-9);
    }
    kopt_analysis_free(a);
    /* Barrier above stall_share: its own advice. */
    stall(&f, "long_scoreboard", 1);
    stall(&f, "barrier", 4);
    a = expect(&f, "warp_stalls", 1);
    if ((g = first(a, "warp_stalls"))) {
        CHECK_STR_CONTAINS(g->title, "barrier");
        CHECK_STR_CONTAINS(g->change, "__shfl_down_sync");
    }
    kopt_analysis_free(a);
    stall(&f, "barrier", 1);
    kopt_analysis_free(expect(&f, "warp_stalls", 0));
    kopt_metrics_clear(&f.m);
}

static void test_divergence(void)
{
    fx f;
    kopt_analysis *a;

    fx_init(&f);
    metric(&f, "smsp__thread_inst_executed_per_inst_executed.ratio", 12);
    metric(&f, "sm__throughput.avg.pct_of_peak_sustained_elapsed", 60);
    a = expect(&f, "divergence", 1);
    if (first(a, "divergence"))
        CHECK_NEAR(first(a, "divergence")->gain, (1 - 12.0 / 32) * 0.6, 1e-9);
    kopt_analysis_free(a);
    metric(&f, "smsp__thread_inst_executed_per_inst_executed.ratio", 31.5);
    kopt_analysis_free(expect(&f, "divergence", 0));
    /* Predicated-off lanes count too. */
    metric(&f, "smsp__thread_inst_executed_pred_on_per_inst_executed.ratio", 14);
    kopt_analysis_free(expect(&f, "divergence", 1));
    kopt_metrics_clear(&f.m);
}

static void test_no_tensor_cores(void)
{
    fx f;
    kopt_analysis *a;
    const kopt_finding *g;

    fx_init(&f);
    gemm(&f, 4096);
    f.in.compute = KOPT_COMPUTE_BF16;
    with_sass(&f);
    f.sass.ffma = 2048;
    a = expect(&f, "no_tensor_cores", 1);
    if ((g = first(a, "no_tensor_cores"))) {
        CHECK_STR_CONTAINS(g->change, "wgmma");
        CHECK_NEAR(g->gain, 0.75 * 0.75, 1e-9);       /* 1 - 1/4, compute share 0.75 */
    }
    kopt_analysis_free(a);
    f.sass.hgmma = 64;
    kopt_analysis_free(expect(&f, "no_tensor_cores", 0));
    /* Hopper with mma.sync only. */
    f.sass.hgmma = 0;
    f.sass.hmma = 64;
    a = expect(&f, "no_tensor_cores", 1);
    if ((g = first(a, "no_tensor_cores")))
        CHECK_STR_CONTAINS(g->title, "mma.sync");
    kopt_analysis_free(a);
    /* Not a contraction: nothing to say. */
    f.sass.hmma = 0;
    f.in.matmul_like = 0;
    kopt_analysis_free(expect(&f, "no_tensor_cores", 0));
    /* The measured tensor pipe alone decides when there is no SASS. */
    f.in.matmul_like = 1;
    f.k[0].sass = NULL;
    metric(&f, "sm__inst_executed_pipe_tensor.sum", 0);
    kopt_analysis_free(expect(&f, "no_tensor_cores", 1));
    metric(&f, "sm__inst_executed_pipe_tensor.sum", 1e6);
    kopt_analysis_free(expect(&f, "no_tensor_cores", 0));
    kopt_metrics_clear(&f.m);
}

static void test_unfused_fp(void)
{
    fx f;
    kopt_analysis *a;

    fx_init(&f);
    with_sass(&f);
    f.sass.instructions = 400;
    f.sass.fmul = 100;
    f.sass.fadd = 100;
    f.sass.ffma = 10;
    a = expect(&f, "unfused_fp", 1);
    if (first(a, "unfused_fp"))
        CHECK_NEAR(first(a, "unfused_fp")->gain, (100.0 / 210) * (210.0 / 400) * 0.5, 1e-9);
    kopt_analysis_free(a);
    /* A sum reduction: adds with nothing to fuse them with (ncu's ratio would fire). */
    f.sass.fmul = 0;
    f.sass.ffma = 100;
    kopt_analysis_free(expect(&f, "unfused_fp", 0));
    /* Measured counts take precedence over SASS. */
    metric(&f, "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum", 1e9);
    metric(&f, "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum", 1e9);
    metric(&f, "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", 1e8);
    a = expect(&f, "unfused_fp", 1);
    if (first(a, "unfused_fp"))
        CHECK_STR_CONTAINS(first(a, "unfused_fp")->seen, "measured");
    kopt_analysis_free(a);
    kopt_metrics_clear(&f.m);
}

static void test_fp64_in_fp32(void)
{
    fx f;
    kopt_analysis *a;

    fx_init(&f);
    with_sass(&f);
    f.sass.ffma = 100;
    f.sass.dfma = 10;
    f.sass.conversions = 4;
    a = expect(&f, "fp64_in_fp32", 1);
    if (first(a, "fp64_in_fp32")) {
        CHECK_STR_CONTAINS(first(a, "fp64_in_fp32")->change, "0.5f");
        CHECK_STR_CONTAINS(first(a, "fp64_in_fp32")->why, "1/2 of the FP32 rate");
    }
    kopt_analysis_free(a);
    f.sass.dfma = 0;
    kopt_analysis_free(expect(&f, "fp64_in_fp32", 0));
    f.sass.dfma = 10;
    f.in.compute = KOPT_COMPUTE_FP64;     /* an fp64 problem may use FP64 */
    kopt_analysis_free(expect(&f, "fp64_in_fp32", 0));
}

static void test_many_small_launches(void)
{
    fx f;
    kopt_analysis *a;

    fx_init(&f);
    f.in.host_mode = 1;
    f.in.launches_per_call = 20;
    f.in.median_ms = 0.05;                /* 2.5 us per launch */
    a = expect(&f, "many_small_launches", 1);
    if (first(a, "many_small_launches"))
        CHECK_NEAR(first(a, "many_small_launches")->gain, 19 * 2.0 / 50, 1e-9);
    kopt_analysis_free(a);
    f.in.launches_per_call = 3;
    kopt_analysis_free(expect(&f, "many_small_launches", 0));
    f.in.launches_per_call = 20;
    f.in.median_ms = 5;                   /* 250 us per launch: not small */
    kopt_analysis_free(expect(&f, "many_small_launches", 0));
}

static void test_dram_saturated(void)
{
    fx f;
    kopt_analysis *a;
    const kopt_finding *g;

    fx_init(&f);
    vecadd(&f, 1 << 26);
    metric(&f, "dram__throughput.avg.pct_of_peak_sustained_elapsed", 90);
    metric(&f, "dram__bytes_read.sum", 2 * 8.0 * (1 << 26));
    metric(&f, "dram__bytes_write.sum", 2 * 4.0 * (1 << 26));
    a = expect(&f, "dram_saturated", 1);
    if ((g = first(a, "dram_saturated"))) {
        CHECK_NEAR(g->gain, 0.5, 1e-9);           /* twice the minimum traffic */
        CHECK_STR_CONTAINS(g->change, "fuse");
    }
    kopt_analysis_free(a);
    /* At the minimum traffic: reported, with no gain left in this problem. */
    metric(&f, "dram__bytes_read.sum", 8.0 * (1 << 26));
    metric(&f, "dram__bytes_write.sum", 4.0 * (1 << 26));
    a = expect(&f, "dram_saturated", 1);
    if ((g = first(a, "dram_saturated")))
        CHECK_NEAR(g->gain, 0, 0);
    kopt_analysis_free(a);
    metric(&f, "dram__throughput.avg.pct_of_peak_sustained_elapsed", 40);
    kopt_analysis_free(expect(&f, "dram_saturated", 0));
    kopt_metrics_clear(&f.m);
}

static void test_missing_async_copy(void)
{
    fx f;
    kopt_analysis *a;

    fx_init(&f);
    with_sass(&f);
    f.sass.ldg[4] = 2;
    f.sass.sts[4] = 2;
    f.sass.lds[4] = 8;
    f.sass.barriers = 2;
    a = expect(&f, "missing_async_copy", 1);
    if (first(a, "missing_async_copy"))
        CHECK_STR_CONTAINS(first(a, "missing_async_copy")->change, "TMA");
    kopt_analysis_free(a);
    f.sass.ldgsts = 2;
    kopt_analysis_free(expect(&f, "missing_async_copy", 0));
    f.sass.ldgsts = 0;
    f.dev.cc_major = 7;                   /* Volta: no async copy to suggest */
    kopt_analysis_free(expect(&f, "missing_async_copy", 0));
}

/* ---- recorded on the H200: planted kernels must trigger their tools ---------------------- */

/* "// <key>: value" from a planted kernel's header, copied into out. */
static int header_line(const char *text, const char *key, char *out, size_t size)
{
    const char *p = strstr(text, key), *end;

    if (!p)
        return 0;
    p += strlen(key);
    while (*p == ' ')
        p++;
    end = strchr(p, '\n');
    if (!end)
        end = p + strlen(p);
    snprintf(out, size, "%.*s", (int)(end - p), p);
    return 1;
}

/* A tool matches a plant by name, or when the plant names its prefix ("small_grid"). */
static int tool_matches(const char *tool, const char *plant)
{
    size_t n = strlen(plant);
    return strcmp(tool, plant) == 0 || (strncmp(tool, plant, n) == 0 && tool[n] == '_');
}

/* One planted kernel: its recorded raw CSV through the whole analysis, every planted tool
 * among the findings. Returns 0 when the fixture is missing. */
static int check_planted(const char *planted_dir, const char *file)
{
    char path[2048], problem[256], plants[256], raw[2048], stem[256];
    char *text = NULL, *csv = NULL;
    kopt_profile *prof = NULL;
    kopt_problem *prob = NULL;
    kopt_candidate *cand = NULL;
    kopt_bound *bound = NULL;
    kopt_vars sizes;
    kopt_kernel_view views[8];
    kopt_analysis_input in;
    kopt_device_info dev;
    kopt_ceilings ceil;
    kopt_analyze_opts o = KOPT_ANALYZE_OPTS_INIT;
    kopt_analysis *a = NULL;
    int found = 0;

    memset(&sizes, 0, sizeof(sizes));
    snprintf(path, sizeof(path), "%s/%s", planted_dir, file);
    snprintf(stem, sizeof(stem), "%.*s", (int)(strlen(file) - 3), file);
    if (!CHECK((text = ktest_read_file(path)) != NULL) ||
        !CHECK(header_line(text, "// problem:", problem, sizeof(problem))) ||
        !CHECK(header_line(text, "// plants:", plants, sizeof(plants))))
        goto done;
    snprintf(raw, sizeof(raw), "%s/ncu/h200/%s.%s.raw.csv", KOPT_TEST_DATA_DIR,
             strrchr(problem, '/') ? strrchr(problem, '/') + 1 : problem, stem);
    if (!(csv = ktest_read_file(raw))) {
        printf("  no fixture %s\n", raw);
        goto done;
    }
    found = 1;
    if (!CHECK_EQ_INT(kopt_ncu_parse_raw_csv(&prof, ctx, csv, raw), KOPT_OK)) {
        printf("  %s\n", kopt_errmsg(ctx));
        goto done;
    }
    snprintf(path, sizeof(path), "%s/%s", KOPT_EXAMPLES_DIR,
             strncmp(problem, "examples/", 9) == 0 ? problem + 9 : problem);
    if (!CHECK_EQ_INT(kopt_problem_load(&prob, ctx, path), KOPT_OK))
        goto done;
    snprintf(path, sizeof(path), "%s/%s", planted_dir, file);
    memset(&in, 0, sizeof(in));
    /* The problem's work at the sizes the recording ran at (its defaults). */
    if (kopt_sizes_resolve(&sizes, ctx, prob, NULL) == KOPT_OK &&
        kopt_candidate_load(&cand, ctx, path, prob) == KOPT_OK &&
        kopt_bind(&bound, ctx, prob, cand, &sizes) == KOPT_OK && bound->has_work) {
        in.flops = bound->flops;
        in.bytes = bound->bytes;
    }
    h200(&dev);
    memset(&ceil, 0, sizeof(ceil));
    ceil.valid = 1;
    ceil.dram_copy_gbs = 4000;
    kopt_ceilings_fill_spec(&ceil, &dev);
    in.dev = &dev;
    in.ceil = &ceil;
    in.problem = prob->name;
    in.compute = prob->compute;
    in.matmul_like = strstr(prob->name, "gemm") != NULL;
    in.nkernels = prof->nkernels < 8 ? prof->nkernels : 8;
    in.kernels = views;
    memset(views, 0, sizeof(views));
    for (int i = 0; i < in.nkernels; i++) {
        kopt_kernel_profile *kp = &prof->kernels[i];
        views[i].name = kp->kernel;
        memcpy(views[i].grid, kp->grid, sizeof(views[i].grid));
        memcpy(views[i].block, kp->block, sizeof(views[i].block));
        views[i].dyn_smem = kp->dyn_smem;
        views[i].metrics = &kp->metrics;
    }
    o.all_tools = 1;
    if (!CHECK_EQ_INT(kopt_analyze_run(&a, ctx, &in, &o), KOPT_OK))
        goto done;
    for (char *tok = plants, *next; *tok; tok = next) {
        int hit = 0;
        size_t len = strcspn(tok, ", ");
        next = tok + len + strspn(tok + len, ", ");
        tok[len] = '\0';
        for (int i = 0; i < a->findings.n; i++)
            hit |= tool_matches(a->findings.f[i].tool, tok);
        if (!CHECK(hit)) {
            printf("  %s: planted %s did not fire; class %s; findings:", file, tok,
                   kopt_class_name(a->cls.final));
            for (int i = 0; i < a->findings.n; i++)
                printf(" %s", a->findings.f[i].tool);
            printf("\n");
        }
    }
done:
    kopt_analysis_free(a);
    kopt_bound_free(bound);
    kopt_candidate_free(cand);
    kopt_problem_free(prob);
    kopt_vars_free(&sizes);
    kopt_profile_free(prof);
    free(csv);
    free(text);
    return found;
}

static void test_recorded_planted(void)
{
    char planted_dir[1024], h200_dir[1024];   /* under KOPT_TEST_DATA_DIR */
    DIR *d;
    struct dirent *e;
    int files = 0, recorded = 0;

    snprintf(planted_dir, sizeof(planted_dir), "%s/../profile/planted", KOPT_TEST_DATA_DIR);
    snprintf(h200_dir, sizeof(h200_dir), "%s/ncu/h200", KOPT_TEST_DATA_DIR);
    if (!(d = opendir(h200_dir))) {
        KTEST_SKIP("no tests/data/ncu/h200/ (record it with tests/data/ncu/record.sh planted)");
        return;
    }
    closedir(d);
    if (!(d = opendir(planted_dir))) {
        KTEST_SKIP("no tests/profile/planted/");
        return;
    }
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 4 || strcmp(e->d_name + n - 3, ".cu") != 0)
            continue;
        files++;
        recorded += check_planted(planted_dir, e->d_name);
    }
    closedir(d);
    printf("  %d planted kernels, %d recorded\n", files, recorded);
    CHECK(recorded > 0);
}

int main(int argc, char **argv)
{
    static const ktest_case cases[] = {
        KTEST(test_classify_vector_add_memory),
        KTEST(test_classify_gemm_compute),
        KTEST(test_classify_fp64_fma_vs_dmma),
        KTEST(test_classify_tiny_latency),
        KTEST(test_classify_disagreement_gemm_measured_memory),
        KTEST(test_classify_disagreement_measured_latency),
        KTEST(test_classify_without_ceilings),
        KTEST(test_classify_near_ridge_mixed),
        KTEST(test_occupancy_h200),
        KTEST(test_thresholds_per_arch),
        KTEST(test_registry),
        KTEST(test_static_run_skips),
        KTEST(test_ranking),
        KTEST(test_roofline_cap),
        KTEST(test_kernel_share),
        KTEST(test_findings_copy),
        KTEST(test_uncoalesced_global),
        KTEST(test_uncoalesced_static_lead),
        KTEST(test_sector_efficiency),
        KTEST(test_non_vectorized_loads),
        KTEST(test_bank_conflicts),
        KTEST(test_register_spills),
        KTEST(test_occupancy_limiter),
        KTEST(test_high_registers),
        KTEST(test_small_grid_tail),
        KTEST(test_block_size),
        KTEST(test_warp_stalls),
        KTEST(test_divergence),
        KTEST(test_no_tensor_cores),
        KTEST(test_unfused_fp),
        KTEST(test_fp64_in_fp32),
        KTEST(test_many_small_launches),
        KTEST(test_dram_saturated),
        KTEST(test_missing_async_copy),
        KTEST(test_recorded_planted),
    };
    int rc;

    ctx = kopt_ctx_new();
    rc = ktest_main(argc, argv, cases, KTEST_COUNT(cases));
    kopt_ctx_free(ctx);
    return rc;
}
