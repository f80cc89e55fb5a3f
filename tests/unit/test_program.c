/*
 * Unit tests of program profiles (src/profile/kernel_name.c, src/profile/program.c,
 * src/analyze/program.c, program_output.c and the program tools unfused_chain,
 * launch_bound_program, library_gemm_fp32): kernel origins and short names from mangled
 * and demangled names; reading the synthetic fixtures of tests/data/program/ (see its
 * README) with exact shares, bytes, gaps and rates; errors that name the field and kernel;
 * per-kernel and time-weighted classes; each program tool firing on its fixture with the
 * exact bytes and gain, and none on the fused kernel; the text and JSON renderings. Ceilings
 * are set by hand (DRAM 3000 GB/s, FP32 50, TF32 400, BF16 800 TFLOP/s); no GPU is needed.
 */
#include "ktest.h"

#include <math.h>

#include "kopt/analyze.h"

#include <jansson.h>

static kopt_ctx *ctx;

/* ---- fixtures ------------------------------------------------------------------------- */

static kopt_program *load(const char *file)
{
    char path[1024];
    char *text;
    kopt_program *p = NULL;

    snprintf(path, sizeof(path), "%s/program/%s", KOPT_TEST_DATA_DIR, file);
    if (!CHECK((text = ktest_read_file(path)) != NULL))
        return NULL;
    if (!CHECK_EQ_INT(kopt_program_from_json(&p, ctx, text, path), KOPT_OK))
        printf("  %s\n", kopt_errmsg(ctx));
    free(text);
    return p;
}

static void ceilings(kopt_ceilings *c)
{
    memset(c, 0, sizeof(*c));
    c->valid = 1;
    c->dram_copy_gbs = 3000;
    c->gflops[KOPT_COMPUTE_FP32] = 50000;
    c->gflops[KOPT_COMPUTE_FP64] = 30000;
    c->gflops[KOPT_COMPUTE_TF32] = 400000;
    c->gflops[KOPT_COMPUTE_BF16] = 800000;
    c->gflops[KOPT_COMPUTE_FP16] = 800000;
    for (int k = 0; k < KOPT_NCOMPUTE; k++)
        c->measured[k] = c->gflops[k] > 0;
}

/* Analyzed at the unit test's ceilings; `matmul_like`: the problem is a contraction. */
static kopt_program_analysis *analyze_as(const kopt_program *p, double rtol, int matmul_like)
{
    kopt_program_analyze_opts o = KOPT_PROGRAM_ANALYZE_OPTS_INIT;
    kopt_ceilings c;
    kopt_program_analysis *a = NULL;

    ceilings(&c);
    o.ceil = &c;
    o.rtol = rtol;
    o.problem = "fixture";
    o.matmul_like = matmul_like;
    if (!CHECK_EQ_INT(kopt_program_analyze(&a, ctx, p, &o), KOPT_OK))
        printf("  %s\n", kopt_errmsg(ctx));
    return a;
}

static kopt_program_analysis *analyze(const kopt_program *p, double rtol)
{
    return analyze_as(p, rtol, 0);
}

static const kopt_finding *finding(const kopt_program_analysis *a, const char *tool)
{
    for (int i = 0; a && a->an && i < a->an->findings.n; i++)
        if (strcmp(a->an->findings.f[i].tool, tool) == 0)
            return &a->an->findings.f[i];
    return NULL;
}

static int skipped(const kopt_program_analysis *a, const char *text)
{
    for (int i = 0; a && a->an && i < a->an->nskipped; i++)
        if (strstr(a->an->skipped[i], text))
            return 1;
    return 0;
}

static const char *const program_tools[] = {"unfused_chain", "launch_bound_program",
                                            "library_gemm_fp32", NULL};

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
    CHECK(f->gain > 0 && f->gain <= 1);
    CHECK(f->confidence > 0 && f->confidence <= 1);
    CHECK(f->nevidence >= 1 && f->evidence[0].threshold_name[0]);
}

/* ---- names ---------------------------------------------------------------------------- */

static void test_origins(void)
{
    static const struct { const char *name; kopt_kernel_origin want; } cases[] = {
        {"ampere_sgemm_128x64_nn", KOPT_ORIGIN_CUBLAS},
        {"sm90_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_warpgroupsize1x1x1_"
         "execute_segment_k_off_kernel__5x_cublas", KOPT_ORIGIN_CUBLAS},
        {"nvjet_tst_128x256_64x4_1x2_h_bz_coopB_TNT", KOPT_ORIGIN_CUBLAS},
        {"void cutlass::Kernel2<cutlass_80_simt_sgemm_128x128_8x4_nn_align1>("
         "cutlass_80_simt_sgemm_128x128_8x4_nn_align1::Params)", KOPT_ORIGIN_CUBLAS},
        {"void gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 4, 4, false, "
         "false>(float, float)", KOPT_ORIGIN_CUBLAS},
        {"void cublasLt::splitKreduce_kernel<32, 16, int, float, float, float, float, false, "
         "false, false>(cublasLt::cublasSplitKParams<float>, float const*)", KOPT_ORIGIN_CUBLAS},
        {"_ZN8internal5gemvx6kernelIiifffLb0ELb1ELb1ELb0ELi7ELb0E", KOPT_ORIGIN_CUBLAS},
        {"sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x"
         "128x16_stage4_warpsize2x2x1_g1_tensor16x8x8_kernel", KOPT_ORIGIN_CUDNN},
        {"void cudnn::engines_precompiled::nchwToNhwcKernel<float, float, float, false, true, "
         "(cudnnKernelDataType_t)2>(cudnn::engines_precompiled::nchw2nhwc_params_t<float>, "
         "float const*, float*)", KOPT_ORIGIN_CUDNN},
        {"void implicit_convolve_sgemm<float, float, 128, 5, 5, 3, 3, 3, 1, false, false, "
         "true>(int, int, int, float const*)", KOPT_ORIGIN_CUDNN},
        {"_ZN5cudnn3ops18nchwToNhwcKernelIfffLb0ELb1EEEvNS0_16nchw2nhwc_params", KOPT_ORIGIN_CUDNN},
        {"void cutlass__5x_cudnn::Kernel<cutlass_tensorop_s1688fprop>(int)", KOPT_ORIGIN_CUDNN},
        {"triton_poi_fused_add_mul_relu_0", KOPT_ORIGIN_TRITON},
        {"triton_red_fused__softmax_0", KOPT_ORIGIN_TRITON},
        {"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float> >(float)",
         KOPT_ORIGIN_ATEN},
        {"_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EE"
         "EEviT0_T1_", KOPT_ORIGIN_ATEN},
        {"void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64> >(Flash_fwd_params)",
         KOPT_ORIGIN_ATEN},
        {"fmha_cutlassF_f32_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<float, "
         "cutlass::arch::Sm80, true, 64, 64, 64, true, true>::Params)", KOPT_ORIGIN_CUTLASS},
        {"_ZN7cutlass6KernelI", KOPT_ORIGIN_CUTLASS},
        {"void cub::DeviceRadixSortOnesweepKernel<cub::DeviceRadixSortPolicy<float> >(int)",
         KOPT_ORIGIN_CUB},
        {"void at_cuda_detail::cub::DeviceScanKernel<int>(int)", KOPT_ORIGIN_CUB},
        {"_ZN3cub17DeviceReduceKernelIiEEvi", KOPT_ORIGIN_CUB},
        {"vector_add", KOPT_ORIGIN_OTHER},
        {"_Z10my_softmaxPKfPfi", KOPT_ORIGIN_OTHER},
        {"my_tiled_gemm_kernel", KOPT_ORIGIN_OTHER},   /* a candidate's own GEMM */
        {"fused_scale_bias_relu_kernel(float const*, float*, int)", KOPT_ORIGIN_OTHER},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        kopt_kernel_origin got = kopt_kernel_origin_of(cases[i].name);
        if (!CHECK_EQ_STR(kopt_kernel_origin_name(got), kopt_kernel_origin_name(cases[i].want)))
            printf("  %s\n", cases[i].name);
    }
    CHECK_EQ_INT(kopt_kernel_origin_of(NULL), KOPT_ORIGIN_OTHER);
    CHECK(kopt_kernel_origin_is_library(KOPT_ORIGIN_CUBLAS));
    CHECK(kopt_kernel_origin_is_library(KOPT_ORIGIN_ATEN));
    CHECK(kopt_kernel_origin_is_library(KOPT_ORIGIN_CUB));
    CHECK(!kopt_kernel_origin_is_library(KOPT_ORIGIN_TRITON));
    CHECK(!kopt_kernel_origin_is_library(KOPT_ORIGIN_OTHER));
    CHECK(!kopt_kernel_origin_is_library(KOPT_ORIGIN_COUNT));
    CHECK_EQ_STR(kopt_kernel_origin_name(KOPT_ORIGIN_COUNT), "other");
}

static void test_short_names(void)
{
    static const struct { const char *name, *want; } cases[] = {
        {"_Z10my_softmaxPKfPfi", "my_softmax"},
        {"_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1E"
         "EEEviT0_T1_", "vectorized_elementwise_kernel"},
        {"void at::native::(anonymous namespace)::softmax_warp_forward<float, float, float, 10, "
         "false, false>(float*, float const*, int, int, int, bool const*, int, bool)",
         "softmax_warp_forward"},
        {"void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::"
         "launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar)::{lambda()#1}::operator()() "
         "const::{lambda(float)#1}, at::detail::Array<char*, 2> >(int, at::detail::Array<char*, "
         "2>)", "vectorized_elementwise_kernel"},
        {"void cutlass::Kernel2<cutlass_80_simt_sgemm_128x128_8x4_nn_align1>("
         "cutlass_80_simt_sgemm_128x128_8x4_nn_align1::Params)",
         "Kernel2<cutlass_80_simt_sgemm_128x128_8x4_nn_align1>"},
        {"sm90_xmma_gemm_f32f32_f32f32_f32_tn_n", "sm90_xmma_gemm_f32f32_f32f32_f32_tn_n"},
        {"fused_scale_bias_relu_kernel(float const*, float*, int)",
         "fused_scale_bias_relu_kernel"},
        {"triton_poi_fused_div_0", "triton_poi_fused_div_0"},
    };
    char out[128], tiny[6];

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        kopt_kernel_short_name(cases[i].name, out, sizeof(out));
        CHECK_EQ_STR(out, cases[i].want);
    }
    kopt_kernel_short_name(NULL, out, sizeof(out));
    CHECK_EQ_STR(out, "");
    kopt_kernel_short_name("softmax_warp_forward<float>(float*)", tiny, sizeof(tiny));
    CHECK_EQ_STR(tiny, "softm");                      /* cut, always terminated */
}

/* ---- reading -------------------------------------------------------------------------- */

/* kopt_metrics_flops: an FMA counts two, FP64 counts too, nothing counted is 0. */
static void test_metrics_flops(void)
{
    kopt_metrics m = {0, 0, NULL};
    double f = -7;

    CHECK(!kopt_metrics_flops(&m, &f));
    CHECK_NEAR(f, -7, 0);
    kopt_metrics_set(&m, "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", 10);
    kopt_metrics_set(&m, "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum", 3);
    kopt_metrics_set(&m, "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum", 4);
    kopt_metrics_set(&m, "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum", 1);
    CHECK(kopt_metrics_flops(&m, &f));
    CHECK_NEAR(f, 20 + 3 + 8 + 1, 0);
    kopt_metrics_clear(&m);
}

static void test_read_elementwise_chain(void)
{
    kopt_program *p = load("elementwise_chain.json");

    if (!p)
        return;
    CHECK_EQ_STR(p->subject, "reference");
    CHECK(p->has_device);
    CHECK_EQ_STR(p->device.name, "NVIDIA H100 80GB HBM3");
    CHECK_EQ_INT(p->device.cc_major, 9);
    CHECK_EQ_INT(p->device.sm_count, 132);
    CHECK_NEAR(p->forward_ms, 0.05, 1e-12);
    CHECK_NEAR(p->compulsory_bytes, 33554432, 0);
    CHECK_EQ_INT(p->nkernels, 3);
    for (int k = 0; k < 3; k++) {
        const kopt_program_kernel *kp = &p->kernels[k];
        CHECK_EQ_INT(kp->origin, KOPT_ORIGIN_ATEN);
        CHECK_NEAR(kp->share, 1.0 / 3, 1e-12);
        CHECK_NEAR(kp->dram_bytes, 33554432, 0);
        CHECK_NEAR(kp->gbs, 33554432 / 12000.0, 1e-9);   /* 2796.2 GB/s */
        CHECK_EQ_INT(kp->tensor, 0);
        CHECK_EQ_INT(kp->grid[0], 8192);
        CHECK_EQ_INT(kp->block[0], 128);
    }
    CHECK_EQ_STR(p->kernels[0].op, "aten::mul");
    CHECK_EQ_INT(p->kernels[1].registers, 20);
    CHECK_NEAR(p->kernels[0].flops, 4194304, 0);
    CHECK_NEAR(p->kernels[0].gflops, 4194304 / 12000.0, 1e-9);
    CHECK_NEAR(p->kernels[2].flops, 0, 0);
    CHECK_NEAR(p->gpu_ms, 0.036, 1e-12);
    CHECK(p->has_starts);
    CHECK_NEAR(p->busy_ms, 0.036, 1e-12);
    CHECK_NEAR(p->span_ms, 0.042, 1e-12);
    CHECK_NEAR(p->gap_between_ms, 0.006, 1e-12);
    CHECK_NEAR(p->gap_outside_ms, 0.008, 1e-12);
    CHECK_NEAR(p->gap_ms, 0.014, 1e-12);
    CHECK_NEAR(p->gap_share, 0.28, 1e-12);
    CHECK_EQ_INT(p->dram_measured, 3);
    CHECK_NEAR(p->dram_bytes, 100663296, 0);
    CHECK_NEAR(p->fusion_bytes, 67108864, 0);      /* two intermediates, written and read */
    kopt_program_free(p);
    kopt_program_free(NULL);
}

/* Optional fields left out: no metrics, no op, no registers, no compulsory bytes. */
static void test_read_tolerant(void)
{
    kopt_program *p = load("host_gaps.json");
    kopt_program *q = NULL;
    const char *bare = "{\"kernels\": [{\"name\": \"k\", \"dur_us\": 2},"
                       " {\"name\": \"k2\", \"metrics\": {\"gpu__time_duration.sum\": 3000}}]}";

    if (!p)
        return;
    CHECK_EQ_STR(p->subject, "modelnew");
    CHECK_NEAR(p->compulsory_bytes, -1, 0);
    CHECK_NEAR(p->fusion_bytes, -1, 0);
    CHECK_EQ_INT(p->dram_measured, 0);
    CHECK_EQ_STR(p->kernels[2].op, "");
    CHECK_EQ_INT(p->kernels[0].registers, 0);
    CHECK_NEAR(p->kernels[0].dram_bytes, -1, 0);
    CHECK_NEAR(p->kernels[0].flops, -1, 0);
    CHECK_EQ_INT(p->kernels[0].tensor, -1);
    CHECK_EQ_INT(p->kernels[1].origin, KOPT_ORIGIN_OTHER);
    CHECK_EQ_INT(p->kernels[4].origin, KOPT_ORIGIN_TRITON);
    CHECK_NEAR(p->busy_ms, 0.015, 1e-12);
    CHECK_NEAR(p->span_ms, 0.083, 1e-12);
    CHECK_NEAR(p->gap_between_ms, 0.068, 1e-12);
    CHECK_NEAR(p->gap_outside_ms, 0.037, 1e-12);
    CHECK_NEAR(p->gap_ms, 0.105, 1e-12);
    CHECK_NEAR(p->gap_share, 0.875, 1e-12);
    kopt_program_free(p);

    /* The least a program can say: names and times; one time from the metric. */
    if (CHECK_EQ_INT(kopt_program_from_json(&q, ctx, bare, "bare.json"), KOPT_OK)) {
        CHECK_EQ_STR(q->subject, "");
        CHECK(!q->has_device);
        CHECK_NEAR(q->forward_ms, 0, 0);
        CHECK(!q->has_starts);
        CHECK_NEAR(q->kernels[1].dur_us, 3.0, 1e-12);
        CHECK_NEAR(q->gpu_ms, 0.005, 1e-12);
        CHECK_NEAR(q->kernels[0].share, 0.4, 1e-12);
        CHECK_NEAR(q->busy_ms, 0.005, 1e-12);   /* back to back */
        CHECK_NEAR(q->gap_ms, 0, 0);
        CHECK_EQ_STR(q->kernels[1].op, "");
    }
    kopt_program_free(q);
}

/* Kernels on two streams overlap: the union counts once, the gaps are the real idle. */
static void test_read_overlap(void)
{
    const char *text = "{\"forward_ms\": 0.1, \"kernels\": ["
                       "{\"name\": \"a\", \"start_us\": 0, \"dur_us\": 50},"
                       "{\"name\": \"b\", \"start_us\": 10, \"dur_us\": 10},"
                       "{\"name\": \"c\", \"start_us\": 40, \"dur_us\": 20},"
                       "{\"name\": \"d\", \"start_us\": 70, \"dur_us\": 5}]}";
    kopt_program *p = NULL;

    if (!CHECK_EQ_INT(kopt_program_from_json(&p, ctx, text, "overlap.json"), KOPT_OK))
        return;
    CHECK_NEAR(p->gpu_ms, 0.085, 1e-12);
    CHECK_NEAR(p->busy_ms, 0.065, 1e-12);        /* [0,60) and [70,75) */
    CHECK_NEAR(p->span_ms, 0.075, 1e-12);
    CHECK_NEAR(p->gap_between_ms, 0.010, 1e-12);
    CHECK_NEAR(p->gap_outside_ms, 0.025, 1e-12);
    CHECK_NEAR(p->gap_share, 0.35, 1e-12);
    kopt_program_free(p);
}

static void expect_error(const char *text, kopt_status want, const char *needle)
{
    kopt_program *p = (kopt_program *)1;

    if (!CHECK_EQ_INT(kopt_program_from_json(&p, ctx, text, "bad.json"), want))
        printf("  %s\n", text);
    CHECK(p == NULL);
    if (!CHECK_STR_CONTAINS(kopt_errmsg(ctx), needle))
        printf("  for %s\n", text);
}

static void test_read_errors(void)
{
    expect_error("{\"kernels\": [{\"name\": \"k\", \"dur_us\": 1}", KOPT_E_INVALID,
                 "bad.json:1:");
    expect_error(NULL, KOPT_E_INVALID, "bad.json: no text");
    expect_error("[1, 2]", KOPT_E_INVALID, "bad.json: (top level): expected an object");
    expect_error("{}", KOPT_E_INVALID, "bad.json: kernels: expected an array");
    expect_error("{\"kernels\": []}", KOPT_E_NOT_FOUND, "no kernel");
    expect_error("{\"subject\": \"torch\", \"kernels\": [{\"name\": \"k\", \"dur_us\": 1}]}",
                 KOPT_E_INVALID, "subject: expected \"reference\", \"modelnew\" or \"host\"");
    expect_error("{\"forward_ms\": \"1.5\", \"kernels\": [{\"name\": \"k\", \"dur_us\": 1}]}",
                 KOPT_E_INVALID, "bad.json: forward_ms: expected a number >= 0");
    expect_error("{\"compulsory_bytes\": -4, \"kernels\": [{\"name\": \"k\", \"dur_us\": 1}]}",
                 KOPT_E_INVALID, "compulsory_bytes: expected a number >= 0");
    expect_error("{\"device\": {\"sm_count\": 1.5}, \"kernels\": [{\"name\": \"k\", "
                 "\"dur_us\": 1}]}", KOPT_E_INVALID, "device.sm_count: expected an integer");
    expect_error("{\"device\": \"H100\", \"kernels\": [{\"name\": \"k\", \"dur_us\": 1}]}",
                 KOPT_E_INVALID, "device: expected an object");
    expect_error("{\"kernels\": [{\"name\": \"k\", \"dur_us\": 1}, 7]}", KOPT_E_INVALID,
                 "kernels[1]: expected an object");
    expect_error("{\"kernels\": [{\"dur_us\": 1}]}", KOPT_E_INVALID,
                 "kernels[0].name: expected a non-empty string");
    expect_error("{\"kernels\": [{\"name\": \"a\", \"dur_us\": 1}, {\"name\": \"k\", "
                 "\"dur_us\": 1, \"grid\": [1, \"2\", 1]}]}", KOPT_E_INVALID,
                 "kernels[1].grid[1]: expected an integer from 0 to 2^31-1");
    expect_error("{\"kernels\": [{\"name\": \"k\", \"dur_us\": 1, \"block\": [1, 2]}]}",
                 KOPT_E_INVALID, "kernels[0].block: expected an array of 3 integers");
    expect_error("{\"kernels\": [{\"name\": \"k\", \"dur_us\": 1, \"registers\": -1}]}",
                 KOPT_E_INVALID, "kernels[0].registers: expected an integer");
    expect_error("{\"kernels\": [{\"name\": \"k\", \"dur_us\": 1, \"op\": 3}]}",
                 KOPT_E_INVALID, "kernels[0].op: expected a string");
    expect_error("{\"kernels\": [{\"name\": \"k\", \"dur_us\": -1}]}", KOPT_E_INVALID,
                 "kernels[0].dur_us: expected a number >= 0");
    expect_error("{\"kernels\": [{\"name\": \"k\"}]}", KOPT_E_INVALID,
                 "kernels[0].dur_us: expected a number >= 0 (it is missing, and so is the "
                 "metric gpu__time_duration.sum)");
    expect_error("{\"kernels\": [{\"name\": \"k\", \"dur_us\": 1, \"start_us\": true}]}",
                 KOPT_E_INVALID, "kernels[0].start_us: expected a number");
    expect_error("{\"kernels\": [{\"name\": \"k\", \"dur_us\": 1, \"metrics\": []}]}",
                 KOPT_E_INVALID, "kernels[0].metrics: expected an object");
    expect_error("{\"kernels\": [{\"name\": \"a\", \"dur_us\": 1}, {\"name\": \"b\", "
                 "\"dur_us\": 1}, {\"name\": \"k\", \"dur_us\": 1, \"metrics\": "
                 "{\"dram__bytes_read.sum\": \"1e6\"}}]}", KOPT_E_INVALID,
                 "kernels[2].metrics.dram__bytes_read.sum: expected a number");
}

/* ---- analysis and tools --------------------------------------------------------------- */

static void no_program_tool_but(const kopt_program_analysis *a, const char *tool)
{
    for (int i = 0; program_tools[i]; i++)
        if (!tool || strcmp(program_tools[i], tool) != 0)
            if (!CHECK(finding(a, program_tools[i]) == NULL))
                printf("  %s fired: %s\n", program_tools[i], finding(a, program_tools[i])->title);
}

/* Three aten kernels pass two intermediates through DRAM: unfused_chain, with the bytes. */
static void test_unfused_chain(void)
{
    kopt_program *p = load("elementwise_chain.json");
    kopt_program_analysis *a = p ? analyze(p, 0) : NULL;
    const kopt_finding *f;

    if (!a)
        goto done;
    CHECK_NEAR(a->dram_gbs, 3000, 0);
    CHECK_EQ_STR(a->dram_source, "measured");
    CHECK_NEAR(a->fusion_ms, 67108864 / 3e9, 1e-15);          /* 0.02237 ms */
    for (int k = 0; k < 3; k++)
        CHECK_EQ_INT(a->kernel_cls[k].final, KOPT_CLASS_MEMORY);
    CHECK_NEAR(a->kernel_cls[0].pct_of_bound, 100 * (33554432 / 3e9) / 0.012, 1e-9);
    CHECK_NEAR(a->by_time.memory, 0.036, 1e-12);
    CHECK_NEAR(a->by_time.latency, 0.014, 1e-12);
    CHECK_NEAR(a->by_time.host_gaps, 0.014, 1e-12);
    CHECK_EQ_INT(a->cls, KOPT_CLASS_MEMORY);
    CHECK_EQ_INT(a->classes, KOPT_CLASS_MEMORY | KOPT_CLASS_LATENCY);
    CHECK_EQ_INT(a->an->cls.final, KOPT_CLASS_MEMORY);
    CHECK_NEAR(a->an->cls.pct_of_bound, 100 * (33554432 / 3e9) / 0.05, 1e-9);   /* 22.4 % */
    f = finding(a, "unfused_chain");
    check_complete(f);
    if (f) {
        CHECK_NEAR(f->gain, (67108864 / 3e9) / 0.05, 1e-12);  /* 44.7 %, under the cap */
        CHECK_NEAR(f->confidence, 0.7, 1e-12);
        CHECK_EQ_STR(f->kernel, "");
        CHECK_EQ_STR(f->title, "3 kernels move 101 MB through DRAM, 3.00x the 33.6 MB the "
                               "problem must move");
        CHECK_STR_CONTAINS(f->seen, "#1 vectorized_elementwise_kernel (aten::mul) 3.355e+07 B");
        CHECK_STR_CONTAINS(f->seen, "#3 vectorized_elementwise_kernel (aten::relu)");
        CHECK_STR_CONTAINS(f->seen, "6.711e+07 B of intermediates, 0.0224 ms at 3000 GB/s");
        CHECK_STR_CONTAINS(f->change, "(aten::mul, aten::add, aten::relu)");
        CHECK_EQ_STR(f->evidence[0].threshold_name, "dram_excess_ratio");
        CHECK_NEAR(f->evidence[0].value, 3.0, 1e-12);
    }
    no_program_tool_but(a, "unfused_chain");
    CHECK(!skipped(a, "unfused_chain"));
done:
    kopt_program_analysis_free(a);
    kopt_program_free(p);
}

/* No DRAM rate (no ceilings, a device without clocks): the gain falls back to the
 * intermediates' share of the traffic times the moving kernels' share of the time. */
static void test_unfused_chain_without_rate(void)
{
    kopt_program *p = load("elementwise_chain.json");
    kopt_program_analysis *a = NULL;
    const kopt_finding *f;

    if (!p)
        return;
    if (!CHECK_EQ_INT(kopt_program_analyze(&a, ctx, p, NULL), KOPT_OK))
        goto done;
    CHECK_NEAR(a->fusion_ms, -1, 0);
    CHECK(a->dram_source == NULL);
    f = finding(a, "unfused_chain");
    check_complete(f);
    if (f) {
        CHECK_NEAR(f->gain, (2.0 / 3) * 0.036 / 0.05, 1e-12);   /* 48 % */
        CHECK_NEAR(f->confidence, 0.5, 1e-12);
        CHECK_STR_CONTAINS(f->gain_how, "No DRAM rate known");
    }
done:
    kopt_program_analysis_free(a);
    kopt_program_free(p);
}

/* Five 3 us kernels in a 120 us forward: launch_bound_program, gain = the gap share. */
static void test_launch_bound_program(void)
{
    kopt_program *p = load("host_gaps.json");
    kopt_program_analysis *a = p ? analyze(p, 0) : NULL;
    const kopt_finding *f;
    char *text = NULL;

    if (!a)
        goto done;
    for (int k = 0; k < p->nkernels; k++)
        CHECK_EQ_INT(a->kernel_cls[k].final, KOPT_CLASS_UNKNOWN);
    CHECK_STR_CONTAINS(a->kernel_cls[0].reasoning, "Kernel 1: its FLOP were not measured.");
    CHECK_NEAR(a->by_time.unknown, 0.015, 1e-12);
    CHECK_NEAR(a->by_time.latency, 0.105, 1e-12);
    CHECK_EQ_INT(a->cls, KOPT_CLASS_LATENCY);
    CHECK_NEAR(a->fusion_ms, -1, 0);
    f = finding(a, "launch_bound_program");
    check_complete(f);
    if (f) {
        CHECK_NEAR(f->gain, 0.875, 1e-12);
        CHECK_NEAR(f->confidence, 0.65, 1e-12);
        CHECK_EQ_STR(f->title, "the GPU idles 88% of the forward: 0.1050 ms of host gaps");
        CHECK_STR_CONTAINS(f->seen, "0.0680 ms between kernels and 0.0370 ms before the first");
        CHECK_STR_CONTAINS(f->seen, "the longest gap, 17.0 us, comes before kernel #2 "
                                    "(my_softmax)");
        CHECK_EQ_STR(f->evidence[0].threshold_name, "host_gap_share");
        CHECK_STR_CONTAINS(f->change, "CUDA graph");
    }
    no_program_tool_but(a, "launch_bound_program");
    text = kopt_program_text(a);
    if (CHECK(text != NULL)) {
        CHECK_STR_CONTAINS(text, "program    modelnew, 5 kernel(s) on NVIDIA H100 80GB HBM3 "
                                 "(sm_90, 132 SMs)");
        CHECK_STR_CONTAINS(text, "  2  my_softmax ");
        CHECK_STR_CONTAINS(text, "  5  triton_poi_fused_div_0           Triton  aten::div");
        CHECK_STR_CONTAINS(text, "host gaps  0.1050 ms, 87.5% of the forward");
        CHECK_STR_CONTAINS(text, "fusion     unknown (no compulsory_bytes)");
        CHECK_STR_CONTAINS(text, "class      latency-bound by time");
    }
done:
    free(text);
    kopt_program_analysis_free(a);
    kopt_program_free(p);
}

/* The same forward without start times: the idle time is the forward less the kernels'. */
static void test_launch_bound_without_starts(void)
{
    const char *text = "{\"forward_ms\": 0.12, \"kernels\": ["
                       "{\"name\": \"a\", \"dur_us\": 3}, {\"name\": \"b\", \"dur_us\": 3},"
                       "{\"name\": \"c\", \"dur_us\": 3}, {\"name\": \"d\", \"dur_us\": 3},"
                       "{\"name\": \"e\", \"dur_us\": 3}]}";
    kopt_program *p = NULL;
    kopt_program_analysis *a = NULL;
    const kopt_finding *f;

    if (!CHECK_EQ_INT(kopt_program_from_json(&p, ctx, text, "nostarts.json"), KOPT_OK))
        return;
    CHECK(!p->has_starts);
    CHECK_NEAR(p->gap_ms, 0.105, 1e-12);
    a = analyze(p, 0);
    f = finding(a, "launch_bound_program");
    check_complete(f);
    if (f) {
        CHECK_NEAR(f->gain, 0.875, 1e-12);
        CHECK_NEAR(f->confidence, 0.45, 1e-12);
        CHECK_STR_CONTAINS(f->seen, "no start times");
    }
    kopt_program_analysis_free(a);
    kopt_program_free(p);
}

/* An FP32 cuBLAS GEMM at 49 TFLOP/s takes 97 % of the forward: library_gemm_fp32, capped
 * by the FP32 roof when the tolerance is unknown, free under the TF32 roof it admits. */
static void test_library_gemm_fp32(void)
{
    kopt_program *p = load("sgemm_fp32.json");
    kopt_program_analysis *a = NULL;
    const kopt_finding *f;
    double gflops = 2 * 68719476736.0 / 2.8e6, weighted = 2.8 / 2.9 * gflops / 50000;
    double fp32_bound = 2 * 68719476736.0 / 5e10, tf32_bound = 2 * 68719476736.0 / 4e11;   /* ms */

    if (!p)
        return;
    CHECK_EQ_INT(p->kernels[0].origin, KOPT_ORIGIN_CUBLAS);
    CHECK_NEAR(p->kernels[0].gflops, gflops, 1e-6);           /* 49.1 TFLOP/s */
    CHECK_NEAR(p->kernels[0].dram_bytes, 200000000 + 67108864, 0);   /* read + write */
    CHECK_NEAR(p->kernels[0].gbs, 267108864 / 2.8e6, 1e-9);
    CHECK_NEAR(p->fusion_bytes, 200000000 + 3 * 67108864 - 201342976, 0);

    /* rtol 1e-2: TF32 admitted, the roof is TF32's, the gain is not capped. */
    if (!(a = analyze(p, 1e-2)))
        goto done;
    CHECK_EQ_INT(a->kernel_cls[0].final, KOPT_CLASS_COMPUTE);
    CHECK_EQ_INT(a->kernel_cls[1].final, KOPT_CLASS_MEMORY);
    CHECK_EQ_INT(a->cls, KOPT_CLASS_COMPUTE);
    CHECK_EQ_INT(a->classes, KOPT_CLASS_COMPUTE);
    CHECK_EQ_INT(a->in.compute, KOPT_COMPUTE_TF32);
    CHECK_NEAR(a->an->cls.pct_of_bound, 100 * tf32_bound / 2.9, 1e-9);   /* 11.8 % */
    f = finding(a, "library_gemm_fp32");
    check_complete(f);
    if (f) {
        CHECK_NEAR(f->gain, weighted * 0.75, 1e-12);          /* 71.1 % */
        CHECK_NEAR(f->confidence, 0.7, 1e-12);
        CHECK_EQ_STR(f->title, "1 cuBLAS GEMM kernel(s) run FP32 on the CUDA cores: 97% of the "
                               "program's time");
        CHECK_STR_CONTAINS(f->seen, "#1 sm90_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_"
                                    "warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas "
                                    "(aten::addmm), 2.8000 ms (97%), 49.1 TFLOP/s (0 tensor-pipe "
                                    "instructions measured)");
        CHECK_STR_CONTAINS(f->why, "TF32 at 8.0x that and BF16 at 16.0x (measured rates)");
        CHECK_STR_CONTAINS(f->why, "admits TF32 (KOPT_TF32_ADMITTED_RTOL 1e-03) and BF16");
        CHECK_STR_CONTAINS(f->change, "allow_tf32");
        CHECK_NEAR(f->evidence[0].value, 2.8 / 2.9, 1e-12);
        CHECK_EQ_STR(f->evidence[0].threshold_name, "library_gemm_share");
    }
    /* A kernel tool on cuBLAS's kernel says the program cannot change that code. */
    for (int i = 0; i < a->an->findings.n; i++) {
        const kopt_finding *g = &a->an->findings.f[i];
        if (strcmp(g->kernel, "#1 sm90_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_"
                              "warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas") == 0)
            CHECK_STR_CONTAINS(g->change, "This is cuBLAS's kernel (aten::addmm): the program "
                                          "cannot change it");
        else if (g->kernel[0])
            CHECK_STR_CONTAINS(g->change, "This is aten's kernel (aten::relu)");
    }
    CHECK(finding(a, "occupancy_limiter") != NULL);
    /* Its class filters the chain tool out, though the traffic is 2x the compulsory bytes. */
    CHECK(skipped(a, "unfused_chain: not for a compute-bound kernel"));
    no_program_tool_but(a, "library_gemm_fp32");
    kopt_program_analysis_free(a);

    /* Tolerance unknown: said as a condition, capped at the FP32 roof's headroom. */
    if (!(a = analyze(p, 0)))
        goto done;
    CHECK_EQ_INT(a->in.compute, KOPT_COMPUTE_FP32);
    f = finding(a, "library_gemm_fp32");
    check_complete(f);
    if (f) {
        CHECK_NEAR(f->gain, 1 - fp32_bound / 2.9, 1e-12);      /* 5.2 % */
        CHECK_NEAR(f->confidence, 0.5, 1e-12);
        CHECK_STR_CONTAINS(f->why, "If the problem's tolerance admits TF32");
        CHECK_STR_CONTAINS(f->gain_how, "Capped at 5.2% by the roofline");
    }
    kopt_program_analysis_free(a);

    /* Tighter than TF32 admits: 3xTF32 at a third of the ratio. */
    if (!(a = analyze(p, 1e-4)))
        goto done;
    f = finding(a, "library_gemm_fp32");
    check_complete(f);
    if (f) {
        CHECK_NEAR(f->confidence, 0.4, 1e-12);
        CHECK_STR_CONTAINS(f->why, "3xTF32");
        CHECK_STR_CONTAINS(f->gain_how, "3xTF32 speedup 2.7");
        CHECK_STR_CONTAINS(f->change, "OpMultiplyAddFastF32");
    }
    kopt_program_analysis_free(a);
    a = NULL;

    /* The same kernel on tensor cores: silent. */
    CHECK_EQ_INT(kopt_metrics_set(&p->kernels[0].metrics, "sm__inst_executed_pipe_tensor.sum",
                                  1e9), KOPT_OK);
    p->kernels[0].tensor = 1;
    if ((a = analyze(p, 1e-2)))
        CHECK(finding(a, "library_gemm_fp32") == NULL);
done:
    kopt_program_analysis_free(a);
    kopt_program_free(p);
}

/* Unmeasured: the name decides (an FP32 SIMT name fires, a TF32 or an FP64 one does not). */
static void test_library_gemm_by_name(void)
{
    static const struct { const char *name; int fire; } cases[] = {
        {"void cutlass::Kernel2<cutlass_80_simt_sgemm_128x128_8x4_nn_align1>(int)", 1},
        {"ampere_sgemm_128x64_nn", 1},
        {"sm80_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x16", 0},
        {"void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>(int)", 0},
        {"ampere_dgemm_64x64_nn", 0},
        {"void gemv2T_kernel_val<int, int, float, float, float, float, 128, 16>(float)", 0},
        {"my_sgemm_kernel", 0},                  /* the program's own, not a library's */
    };
    char text[512];

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        kopt_program *p = NULL;
        kopt_program_analysis *a = NULL;
        snprintf(text, sizeof(text), "{\"forward_ms\": 1.0, \"kernels\": [{\"name\": \"%s\", "
                 "\"start_us\": 0, \"dur_us\": 900}]}", cases[i].name);
        if (!CHECK_EQ_INT(kopt_program_from_json(&p, ctx, text, "name.json"), KOPT_OK))
            continue;
        a = analyze(p, 1e-2);
        if (!CHECK_EQ_INT(finding(a, "library_gemm_fp32") != NULL, cases[i].fire))
            printf("  %s\n", cases[i].name);
        if (cases[i].fire && finding(a, "library_gemm_fp32")) {
            const kopt_finding *f = finding(a, "library_gemm_fp32");
            CHECK_STR_CONTAINS(f->seen, "its name: an FP32 SIMT GEMM");
            /* 90 % of the forward x KOPT_GEMM_COMPUTE_FRAC 0.75 x (1 - 1/4) */
            CHECK_NEAR(f->gain, 0.9 * 0.75 * 0.75, 1e-12);
        }
        kopt_program_analysis_free(a);
        kopt_program_free(p);
    }
}

/* One fused kernel moving exactly the compulsory bytes, no gaps to speak of: none fire. */
static void test_fused_none_fire(void)
{
    kopt_program *p = load("fused.json");
    kopt_program_analysis *a = p ? analyze(p, 1e-2) : NULL;
    kopt_analyze_opts all = KOPT_ANALYZE_OPTS_INIT;
    kopt_program_analyze_opts o = KOPT_PROGRAM_ANALYZE_OPTS_INIT;
    kopt_ceilings c;

    if (!a)
        goto done;
    CHECK_NEAR(p->fusion_bytes, 0, 0);
    CHECK_NEAR(a->fusion_ms, 0, 0);
    CHECK_NEAR(p->gap_share, 0.001 / 0.013, 1e-12);
    CHECK_EQ_INT(p->kernels[0].origin, KOPT_ORIGIN_OTHER);
    CHECK_EQ_INT(a->cls, KOPT_CLASS_MEMORY);
    no_program_tool_but(a, NULL);
    kopt_program_analysis_free(a);
    a = NULL;
    /* Not even with the class filter lifted. */
    ceilings(&c);
    o.ceil = &c;
    all.all_tools = 1;
    o.analyze = all;
    if (CHECK_EQ_INT(kopt_program_analyze(&a, ctx, p, &o), KOPT_OK))
        no_program_tool_but(a, NULL);
done:
    kopt_program_analysis_free(a);
    kopt_program_free(p);
}

/* The program tools need a program: on a CUDA candidate's input they are skipped, named. */
static void test_tools_need_a_program(void)
{
    kopt_kernel_view v;
    kopt_metrics m = {0, 0, NULL};
    kopt_analysis_input in;
    kopt_analyze_opts o = KOPT_ANALYZE_OPTS_INIT;
    kopt_analysis *an = NULL;

    memset(&v, 0, sizeof(v));
    memset(&in, 0, sizeof(in));
    CHECK_EQ_INT(kopt_metrics_set(&m, "gpu__time_duration.sum", 1000), KOPT_OK);
    v.name = "k";
    v.metrics = &m;
    in.nkernels = 1;
    in.kernels = &v;
    o.all_tools = 1;
    if (CHECK_EQ_INT(kopt_analyze_run(&an, ctx, &in, &o), KOPT_OK)) {
        int found = 0;
        for (int i = 0; i < an->nskipped; i++)
            found += strstr(an->skipped[i], "needs a program profile") != NULL;
        CHECK_EQ_INT(found, 3);
    }
    for (int i = 0; program_tools[i]; i++) {
        const kopt_tool *t = kopt_tool_find(program_tools[i]);
        if (CHECK(t != NULL))
            CHECK(t->needs & KOPT_NEEDS_PROGRAM);
    }
    kopt_analysis_free(an);
    kopt_metrics_clear(&m);
    an = NULL;
    CHECK_EQ_INT(kopt_program_analyze(NULL, ctx, NULL, NULL), KOPT_E_INVALID);
    {
        kopt_program_analysis *a = (kopt_program_analysis *)1;
        CHECK_EQ_INT(kopt_program_analyze(&a, ctx, NULL, NULL), KOPT_E_INVALID);
        CHECK(a == NULL);
    }
    kopt_program_analysis_free(NULL);
}

/* ---- rendering ------------------------------------------------------------------------ */

static void test_text_and_json(void)
{
    kopt_program *p = load("elementwise_chain.json");
    kopt_program_analysis *a = p ? analyze(p, 0) : NULL;
    char *text = NULL, *js = NULL;
    json_t *o = NULL, *k0, *fs;
    char *tmp = NULL, path[1200], *printed = NULL;
    FILE *f;

    if (!a)
        goto done;
    text = kopt_program_text(a);
    if (CHECK(text != NULL)) {
        if (getenv("KTEST_VERBOSE"))
            printf("%s", text);
        CHECK_STR_CONTAINS(text, "program    reference, 3 kernel(s) on NVIDIA H100 80GB HBM3");
        CHECK_STR_CONTAINS(text, "  #  kernel                           origin  op");
        CHECK_STR_CONTAINS(text, "  1  vectorized_elementwise_kernel    aten    aten::mul");
        CHECK_STR_CONTAINS(text, "aten::mul              8192x1x1       128x1x1        18       "
                                 "0     0.0120   33.3%   2796.2  memory-bound\n");
        CHECK_STR_CONTAINS(text, "gpu        0.0360 ms in 3 kernel(s) (busy 0.0360 ms)");
        CHECK_STR_CONTAINS(text, "forward    0.0500 ms");
        CHECK_STR_CONTAINS(text, "host gaps  0.0140 ms, 28.0% of the forward (0.0060 ms "
                                 "between kernels, 0.0080 ms before the first and after the "
                                 "last)");
        CHECK_STR_CONTAINS(text, "dram       1.007e+08 B moved by 3 of 3 kernel(s)");
        CHECK_STR_CONTAINS(text, "fusion     6.711e+07 B beyond the compulsory 3.355e+07 B: "
                                 "0.0224 ms at 3000 GB/s (measured)");
        CHECK_STR_CONTAINS(text, "class      memory-bound by time (compute 0.0%, memory 72.0%, "
                                 "latency 28.0% of which host gaps 28.0%");
        CHECK_STR_CONTAINS(text, "roofline   22.4% of the problem's bound (memory-bound)");
        CHECK_STR_CONTAINS(text, "findings   1\n  1. [unfused_chain] 3 kernels move");
        CHECK_STR_CONTAINS(text, "gain 44.7%, confidence 0.70");
    }
    js = kopt_program_json(a);
    if (!CHECK(js != NULL) || !CHECK((o = json_loads(js, 0, NULL)) != NULL))
        goto done;
    CHECK_EQ_STR(json_string_value(json_object_get(o, "subject")), "reference");
    CHECK_NEAR(json_number_value(json_object_get(o, "forward_ms")), 0.05, 1e-12);
    CHECK_NEAR(json_number_value(json_object_get(json_object_get(o, "fusion"), "bytes")),
               67108864, 0);
    CHECK_NEAR(json_number_value(json_object_get(json_object_get(o, "fusion"), "ms")),
               67108864 / 3e9, 1e-11);                          /* 10 digits written */
    CHECK_NEAR(json_number_value(json_object_get(json_object_get(o, "host_gaps"), "share")),
               0.28, 1e-12);
    CHECK_EQ_STR(json_string_value(json_object_get(json_object_get(o, "class"), "program")),
                 "memory-bound");
    CHECK_EQ_STR(json_string_value(json_object_get(json_object_get(o, "roofline"), "final")),
                 "memory-bound");
    k0 = json_array_get(json_object_get(o, "kernels"), 0);
    CHECK_EQ_INT(json_array_size(json_object_get(o, "kernels")), 3);
    CHECK_EQ_STR(json_string_value(json_object_get(k0, "short_name")),
                 "vectorized_elementwise_kernel");
    CHECK_EQ_STR(json_string_value(json_object_get(k0, "name")), p->kernels[0].name);
    CHECK_EQ_STR(json_string_value(json_object_get(k0, "origin")), "aten");
    CHECK(json_is_true(json_object_get(k0, "library")));
    CHECK_EQ_STR(json_string_value(json_object_get(k0, "op")), "aten::mul");
    CHECK_EQ_INT(json_integer_value(json_array_get(json_object_get(k0, "grid"), 0)), 8192);
    CHECK_NEAR(json_number_value(json_object_get(k0, "share")), 1.0 / 3, 1e-9);
    CHECK_NEAR(json_number_value(json_object_get(k0, "gbs")), 33554432 / 12000.0, 1e-6);
    CHECK(json_is_false(json_object_get(k0, "tensor")));
    CHECK_EQ_STR(json_string_value(json_object_get(json_object_get(k0, "class"), "final")),
                 "memory-bound");
    CHECK_NEAR(json_number_value(json_object_get(json_object_get(k0, "metrics"),
               "dram__bytes_read.sum")), 16777216, 0);
    fs = json_object_get(o, "findings");
    CHECK_EQ_INT(json_array_size(fs), 1);
    CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(fs, 0), "tool")),
                 "unfused_chain");
    CHECK(json_is_array(json_object_get(o, "tools_skipped")));

    /* kopt_program_print writes the same text to the caller's stream. */
    if ((tmp = ktest_tmpdir("program"))) {
        snprintf(path, sizeof(path), "%s/out.txt", tmp);
        if (CHECK((f = fopen(path, "w")) != NULL)) {
            CHECK_EQ_INT(kopt_program_print(f, ctx, a), KOPT_OK);
            fclose(f);
            printed = ktest_read_file(path);
            CHECK(printed && text && strcmp(printed, text) == 0);
        }
        ktest_rmtree(tmp);
    }
done:
    free(printed);
    free(tmp);
    json_decref(o);
    free(js);
    free(text);
    kopt_program_analysis_free(a);
    kopt_program_free(p);
}

/* A program without any metrics renders unknowns as "-" and null. */
static void test_render_unknowns(void)
{
    kopt_program *p = load("host_gaps.json");
    kopt_program_analysis *a = p ? analyze(p, 0) : NULL;
    char *js = NULL;
    json_t *o = NULL, *k0;

    if (!a || !CHECK((js = kopt_program_json(a)) != NULL) ||
        !CHECK((o = json_loads(js, 0, NULL)) != NULL))
        goto done;
    k0 = json_array_get(json_object_get(o, "kernels"), 0);
    CHECK(json_is_null(json_object_get(k0, "dram_bytes")));
    CHECK(json_is_null(json_object_get(k0, "gbs")));
    CHECK(json_is_null(json_object_get(k0, "flops")));
    CHECK(json_is_null(json_object_get(k0, "tensor")));
    CHECK(json_is_null(json_object_get(o, "compulsory_bytes")));
    CHECK(json_is_null(json_object_get(json_object_get(o, "fusion"), "bytes")));
    CHECK(json_is_null(json_object_get(json_object_get(o, "fusion"), "ms")));
    CHECK_EQ_STR(json_string_value(json_object_get(json_object_get(k0, "class"), "final")),
                 "unknown");
done:
    json_decref(o);
    free(js);
    kopt_program_analysis_free(a);
    kopt_program_free(p);
}

/* Kernels whose FLOP the counters cannot give (tensor-pipe instructions outnumber the FP
 * ones: a BF16 tensor-core GEMM, and an elementwise mul with tensor-pipe counts as recorded
 * on Hopper) get their class from the measured SM and memory throughput. */
static void test_throughput_classes(void)
{
    kopt_program *p = load("throughput_classes.json");
    kopt_program_analysis *a = p ? analyze(p, 1e-2) : NULL;

    if (!a)
        goto done;
    CHECK_EQ_INT(p->kernels[0].tensor, 1);
    CHECK_EQ_INT(p->kernels[1].tensor, 1);     /* 1 M tensor-pipe vs 0.5 M FMUL (warps) */
    CHECK_EQ_INT(a->kernel_cls[0].final, KOPT_CLASS_COMPUTE);
    CHECK_STR_CONTAINS(a->kernel_cls[0].reasoning, "its FLOP are not known");
    CHECK_EQ_INT(a->kernel_cls[1].final, KOPT_CLASS_MEMORY);
    CHECK_EQ_INT(a->cls, KOPT_CLASS_COMPUTE);                  /* 95% of the time */
    CHECK(finding(a, "library_gemm_fp32") == NULL);            /* it runs on tensor cores */
done:
    kopt_program_analysis_free(a);
    kopt_program_free(p);
}

/* A contraction problem: no_tensor_cores speaks of the GEMM kernel, not of the ReLU after it
 * (the problem is matmul-like, its elementwise kernels are not). */
static void test_tensor_advice_on_the_contraction_only(void)
{
    kopt_program *p = load("sgemm_fp32.json");
    kopt_program_analysis *a = p ? analyze_as(p, 1e-2, 1) : NULL;
    int on_gemm = 0, on_other = 0;

    if (!a)
        goto done;
    for (int i = 0; i < a->an->findings.n; i++) {
        const kopt_finding *f = &a->an->findings.f[i];
        if (strcmp(f->tool, "no_tensor_cores") == 0) {
            on_gemm += strncmp(f->kernel, "#1 ", 3) == 0;
            on_other += strncmp(f->kernel, "#1 ", 3) != 0;
        }
    }
    CHECK_EQ_INT(on_gemm, 1);
    CHECK_EQ_INT(on_other, 0);
done:
    kopt_program_analysis_free(a);
    kopt_program_free(p);
}

/* ---- recorded on an H200 (tests/data/program/README.md) ------------------------------ */

/* The three references' records: origins from the real names, host gaps bounded by the
 * unprofiled forward (the traced forward's gaps are wider under the profiler), and the
 * program tools the data calls for: the small conv and matmul programs are launch-bound,
 * the linear + GELU + LayerNorm one is not (26% gaps, under host_gap_share); the conv's
 * four kernels move 2.3x the compulsory bytes (unfused_chain). */
static void test_recorded_h200(void)
{
    static const struct {
        const char *file;
        int nkernels;
        kopt_kernel_origin first;
        double gap_share;
        int launch_bound, unfused, gemm_fp32;
    } cases[] = {
        {"1_matmul_relu.json", 2, KOPT_ORIGIN_CUBLAS, 0.589, 1, 0, 1},
        {"5_linear_gelu_norm.json", 3, KOPT_ORIGIN_CUBLAS, 0.265, 0, 1, 1},
        {"6_conv_bias_relu.json", 4, KOPT_ORIGIN_CUDNN, 0.751, 1, 1, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        kopt_program *p = load(cases[i].file);
        kopt_program_analysis *a;
        if (!p)
            continue;
        CHECK_EQ_INT(p->nkernels, cases[i].nkernels);
        CHECK_EQ_INT(p->kernels[0].origin, cases[i].first);
        for (int k = 1; k < p->nkernels; k++)
            CHECK_EQ_INT(p->kernels[k].origin, KOPT_ORIGIN_ATEN);
        CHECK(p->gap_ms <= p->forward_ms - p->busy_ms + 1e-9);
        CHECK(fabs(p->gap_share - cases[i].gap_share) < 0.001);
        a = analyze(p, 1e-2);
        CHECK_EQ_INT(finding(a, "launch_bound_program") != NULL, cases[i].launch_bound);
        CHECK_EQ_INT(finding(a, "unfused_chain") != NULL, cases[i].unfused);
        /* The library's FP32 GEMM/convolution (SIMT: a few thousand tensor-pipe
         * instructions beside millions of FFMA) is no tensor-core kernel: its FLOP count,
         * its class is compute-bound, and an FP32 GEMM under rtol 1e-2 is told TF32. */
        CHECK_EQ_INT(p->kernels[0].tensor, 0);
        CHECK_EQ_INT(a->kernel_cls[0].final, KOPT_CLASS_COMPUTE);
        CHECK_EQ_INT(finding(a, "library_gemm_fp32") != NULL, cases[i].gemm_fp32);
        if (finding(a, "launch_bound_program"))
            CHECK(fabs(finding(a, "launch_bound_program")->gain - cases[i].gap_share) < 0.001);
        kopt_program_analysis_free(a);
        kopt_program_free(p);
    }
}

int main(int argc, char **argv)
{
    static const ktest_case cases[] = {
        KTEST(test_origins),
        KTEST(test_short_names),
        KTEST(test_metrics_flops),
        KTEST(test_read_elementwise_chain),
        KTEST(test_read_tolerant),
        KTEST(test_read_overlap),
        KTEST(test_read_errors),
        KTEST(test_unfused_chain),
        KTEST(test_unfused_chain_without_rate),
        KTEST(test_launch_bound_program),
        KTEST(test_launch_bound_without_starts),
        KTEST(test_library_gemm_fp32),
        KTEST(test_library_gemm_by_name),
        KTEST(test_fused_none_fire),
        KTEST(test_tools_need_a_program),
        KTEST(test_text_and_json),
        KTEST(test_render_unknowns),
        KTEST(test_throughput_classes),
        KTEST(test_tensor_advice_on_the_contraction_only),
        KTEST(test_recorded_h200),
    };
    int rc;

    ctx = kopt_ctx_new();
    rc = ktest_main(argc, argv, cases, KTEST_COUNT(cases));
    kopt_ctx_free(ctx);
    return rc;
}
