/*@kopt
{"mode": "host", "libraries": ["cublas"]}
*/
// kopt-native candidate for KernelBench level 2 problem 9, imported as
// 2_9_Matmul_Subtract_Multiply_ReLU: out = relu((x @ W^T + b - 2.0) * 1.5), the module's
// subtract_value and multiply_value (get_init_inputs). The GEMM through cuBLAS on the
// TF32 tensor cores (FP32 in and out, FP32 accumulation; eager PyTorch runs it in plain
// FP32 since torch.backends.cuda.matmul.allow_tf32 is off by default): TF32's 10-bit
// mantissa gives errors near 1e-4 here, well inside KernelBench's atol = rtol = 1e-2.
// Then one fused pass: bias, subtract, multiply, ReLU, in place, float4.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "kopt/candidate.h"

#define SUBTRACT 2.0f
#define MULTIPLY 1.5f

__global__ void epilogue4(float4 *__restrict__ y, const float4 *__restrict__ bias, int cols4,
                          long long n4)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 v = y[i], b = __ldg(bias + i % cols4);
        v.x = fmaxf((v.x + b.x - SUBTRACT) * MULTIPLY, 0.f);
        v.y = fmaxf((v.y + b.y - SUBTRACT) * MULTIPLY, 0.f);
        v.z = fmaxf((v.z + b.z - SUBTRACT) * MULTIPLY, 0.f);
        v.w = fmaxf((v.w + b.w - SUBTRACT) * MULTIPLY, 0.f);
        y[i] = v;
    }
}

__global__ void epilogue(float *__restrict__ y, const float *__restrict__ bias, int cols,
                         long long n)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = fmaxf((y[i] + bias[i % cols] - SUBTRACT) * MULTIPLY, 0.f);
}

extern "C" int kopt_candidate_run(const kopt_candidate_io *io)
{
    static cublasHandle_t handle;   /* created on the first (untimed) call */
    const kopt_candidate_tensor *X = &io->tensors[0];
    const float *x = (const float *)X->data;
    const float *w = (const float *)kopt_tensor(io, "p_linear_weight");
    const float *b = (const float *)kopt_tensor(io, "p_linear_bias");
    float *out = (float *)kopt_tensor(io, "out");
    int m = (int)X->shape[0], k = (int)X->shape[1], n = -1;
    const float one = 1.0f, zero = 0.0f;
    cudaStream_t s = (cudaStream_t)io->stream;
    long long total;

    for (int i = 0; i < io->ntensors; i++)
        if (io->tensors[i].data == w)
            n = (int)io->tensors[i].shape[0];
    if (!w || !b || !out || n <= 0)
        return 1;
    if (!handle && cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS)
        return 2;
    if (cublasSetStream(handle, s) != CUBLAS_STATUS_SUCCESS)
        return 3;
    /* row-major out (m x n) = x (m x k) @ W^T, W row-major (n x k): column-major
     * out^T (n x m) = W (n x k, stored as k x n: op T) x^T (k x m) */
    if (cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &one, w, CUDA_R_32F, k, x,
                     CUDA_R_32F, k, &zero, out, CUDA_R_32F, n, CUBLAS_COMPUTE_32F_FAST_TF32,
                     CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS)
        return 4;
    total = (long long)m * n;
    if (n % 4 == 0)
        epilogue4<<<(unsigned)((total / 4 + 255) / 256), 256, 0, s>>>(
            (float4 *)out, (const float4 *)b, n / 4, total / 4);
    else
        epilogue<<<(unsigned)((total + 255) / 256), 256, 0, s>>>(out, b, n, total);
    return cudaGetLastError() == cudaSuccess ? 0 : 5;
}
