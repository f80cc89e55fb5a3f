/*@kopt
{"mode": "host"}
*/
// A deliberately broken CuTe candidate for gemm_bf16 (tests/data/cute/README.md): its
// shared-memory B tile has K = 16 where A's has K = 32, so cute::gemm's shape check fails
// at compile time inside CuTe's headers. Its nvcc log is tests/data/cute/broken_cute.nvcc.log.
#include <cute/tensor.hpp>
#include <kopt/candidate.h>

using namespace cute;

__global__ void mma_tile(float *C, int N)
{
    __shared__ bfloat16_t smemA[64 * 32];
    __shared__ bfloat16_t smemB[64 * 16];
    auto mma = make_tiled_mma(SM80_16x8x16_F32BF16BF16F32_TN{});
    Tensor sA = make_tensor(make_smem_ptr(smemA), make_layout(make_shape(Int<64>{}, Int<32>{}), LayoutRight{}));
    Tensor sB = make_tensor(make_smem_ptr(smemB), make_layout(make_shape(Int<64>{}, Int<16>{}), LayoutRight{}));
    Tensor gC = make_tensor(make_gmem_ptr(C), make_shape(Int<64>{}, Int<64>{}), make_stride(N, Int<1>{}));
    auto thr = mma.get_slice(threadIdx.x);
    Tensor tCrA = thr.partition_fragment_A(sA);
    Tensor tCrB = thr.partition_fragment_B(sB);
    Tensor tCrC = thr.partition_fragment_C(gC);
    clear(tCrC);
    gemm(mma, tCrA, tCrB, tCrC);   // K = 32 against K = 16: rejected inside cute/algorithm/gemm.hpp
    copy(tCrC, thr.partition_C(gC));
}

extern "C" int kopt_candidate_run(const kopt_candidate_io *io)
{
    int N = (int)kopt_size(io, "N");
    mma_tile<<<1, 32, 0, (cudaStream_t)io->stream>>>((float *)kopt_tensor(io, "C"), N);
    return 0;
}
