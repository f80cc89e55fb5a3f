/*@kopt
{"mode": "host"}
*/
// A deliberately broken CuTe candidate for gemm_bf16 (tests/data/cute/README.md): it tiles
// A by a 128x64 tile but copies into a shared-memory tile of 128x32, which CuTe rejects at
// compile time inside its headers. Its nvcc log is tests/data/cute/broken_cute.nvcc.log.
#include <cute/tensor.hpp>
#include <kopt/candidate.h>
#include <cuda_bf16.h>

using namespace cute;

__global__ void load_tile(const __nv_bfloat16 *A, int M, int K)
{
    __shared__ __nv_bfloat16 smem[128 * 32];
    Tensor gA = make_tensor(make_gmem_ptr(A), make_shape(M, K), make_stride(K, Int<1>{}));
    Tensor tile = local_tile(gA, make_shape(Int<128>{}, Int<64>{}), make_coord(blockIdx.y, 0));
    Tensor sA = make_tensor(make_smem_ptr(smem), make_layout(make_shape(Int<128>{}, Int<32>{})));
    copy(tile, sA);   // 128x64 into 128x32: the shapes disagree
}

extern "C" int kopt_candidate_run(const kopt_candidate_io *io)
{
    int M = (int)kopt_size(io, "M"), K = (int)kopt_size(io, "K");
    load_tile<<<dim3(1, M / 128), 128, 0, (cudaStream_t)io->stream>>>(
        (const __nv_bfloat16 *)kopt_tensor(io, "A"), M, K);
    return 0;
}
