/*@kopt
{
  "launches": [{"kernel": "gemm_bf16_cuda_cores", "grid": ["cdiv(N,16)", "cdiv(M,16)"],
                "block": [16, 16], "args": ["A", "B", "C", "M", "N", "K"]}]
}
*/
// problem: examples/gemm_bf16
// plants: no_tensor_cores
//
// Planted defect: a bf16 GEMM (the problem's compute is bf16, i.e. tensor cores) done on CUDA
// cores: 16x16 shared-memory tiles, every bf16 widened to f32 and accumulated with FFMA in k
// order. Correct, but no HMMA/HGMMA anywhere.

typedef unsigned short bf16_t;   // raw bf16 bits

__device__ __forceinline__ float bf16_to_f32(bf16_t h)
{
    return __uint_as_float(((unsigned int)h) << 16);
}

#define T 16

extern "C" __global__ void __launch_bounds__(T * T)
gemm_bf16_cuda_cores(const bf16_t *__restrict__ A, const bf16_t *__restrict__ B,
                     float *__restrict__ C, int M, int N, int K)
{
    __shared__ float As[T][T + 1];
    __shared__ float Bs[T][T];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int m = blockIdx.y * T + ty, n = blockIdx.x * T + tx;
    float acc = 0.f;

    for (int k0 = 0; k0 < K; k0 += T) {
        As[ty][tx] = (m < M && k0 + tx < K) ? bf16_to_f32(A[(long long)m * K + k0 + tx]) : 0.f;
        Bs[ty][tx] = (k0 + ty < K && n < N) ? bf16_to_f32(B[(long long)(k0 + ty) * N + n]) : 0.f;
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < T; ++kk)
            acc += As[ty][kk] * Bs[kk][tx];
        __syncthreads();
    }
    if (m < M && n < N)
        C[(long long)m * N + n] = acc;
}
