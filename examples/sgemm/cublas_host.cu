/*@kopt
{
  "mode": "host",
  "libraries": ["cublas"]
}
*/
// sgemm through cuBLAS, as a host-mode candidate: kopt compiles this file with nvcc into a
// shared object and calls kopt_candidate_run() with the tensors on the GPU. Row-major
// C = A @ B is column-major C^T = B^T A^T, so cuBLAS gets B and A in that order. Plain
// FP32 math (CUBLAS_DEFAULT_MATH, no TF32), as the problem asks.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "kopt/candidate.h"

extern "C" int kopt_candidate_run(const kopt_candidate_io *io)
{
    static cublasHandle_t handle;   /* created on the first (warm-up) call */
    const float alpha = 1.0f, beta = 0.0f;
    int M = (int)kopt_size(io, "M"), N = (int)kopt_size(io, "N"), K = (int)kopt_size(io, "K");
    const float *A = (const float *)kopt_tensor(io, "A"), *B = (const float *)kopt_tensor(io, "B");
    float *C = (float *)kopt_tensor(io, "C");

    if (!handle && cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS)
        return 1;
    if (cublasSetStream(handle, (cudaStream_t)io->stream) != CUBLAS_STATUS_SUCCESS ||
        cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH) != CUBLAS_STATUS_SUCCESS)
        return 2;
    if (cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &alpha, B, N, A, K, &beta, C,
                    N) != CUBLAS_STATUS_SUCCESS)
        return 3;
    return cudaGetLastError() == cudaSuccess ? 0 : 4;
}
