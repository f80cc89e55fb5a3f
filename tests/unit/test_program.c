/*
 * Unit tests of what a kernel's name tells (src/profile/kernel_name.c): which library
 * launched it (cuBLAS, cuDNN, Triton, aten, CUTLASS, CUB, or the program's own) and a short
 * readable name, from mangled (CUPTI) and demangled (PyTorch profiler) names. No GPU is
 * needed.
 */
#include "ktest.h"

#include "kopt/analyze.h"

#include <jansson.h>

static kopt_ctx *ctx;

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

int main(int argc, char **argv)
{
    static const ktest_case cases[] = {
        KTEST(test_origins),
        KTEST(test_short_names),
    };
    int rc;

    ctx = kopt_ctx_new();
    rc = ktest_main(argc, argv, cases, KTEST_COUNT(cases));
    kopt_ctx_free(ctx);
    return rc;
}
