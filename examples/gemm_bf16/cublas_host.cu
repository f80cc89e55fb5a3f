/*@kopt
{
  "mode": "host",
  "libraries": ["cublas"]
}
*/
// gemm_bf16 through cuBLAS (the baseline cute_wgmma.cu is measured against): bf16 A and B,
// f32 C, f32 accumulation (cublasGemmEx, CUBLAS_COMPUTE_32F). Row-major C = A @ B is
// column-major C^T = B^T A^T, so cuBLAS gets B and A in that order.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "kopt/candidate.h"

extern "C" int kopt_candidate_run(const kopt_candidate_io *io)
{
    static cublasHandle_t handle;   /* created on the first (warm-up) call */
    const float alpha = 1.0f, beta = 0.0f;
    int M = (int)kopt_size(io, "M"), N = (int)kopt_size(io, "N"), K = (int)kopt_size(io, "K");
    const void *A = kopt_tensor(io, "A"), *B = kopt_tensor(io, "B");
    void *C = kopt_tensor(io, "C");

    if (!handle && cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS)
        return 1;
    if (cublasSetStream(handle, (cudaStream_t)io->stream) != CUBLAS_STATUS_SUCCESS)
        return 2;
    if (cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &alpha, B, CUDA_R_16BF, N, A,
                     CUDA_R_16BF, K, &beta, C, CUDA_R_32F, N, CUBLAS_COMPUTE_32F,
                     CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS)
        return 3;
    return cudaGetLastError() == cudaSuccess ? 0 : 4;
}
