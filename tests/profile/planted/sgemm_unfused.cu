/*@kopt
{
  "launches": [{"kernel": "sgemm_unfused", "grid": ["cdiv(N,16)", "cdiv(M,16)"],
                "block": [16, 16], "args": ["A", "B", "C", "M", "N", "K"]}]
}
*/
// problem: examples/sgemm
// plants: unfused_fp
//
// Planted defect: the multiply-add is written with __fmul_rn and __fadd_rn, which the
// compiler may not contract, so every step is an FMUL plus an FADD instead of one FFMA
// (twice the instructions, and an extra rounding). 16x16 shared-memory tiles, k order.

#define T 16

extern "C" __global__ void __launch_bounds__(T * T)
sgemm_unfused(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C,
              int M, int N, int K)
{
    __shared__ float As[T][T + 1];
    __shared__ float Bs[T][T];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int m = blockIdx.y * T + ty, n = blockIdx.x * T + tx;
    float acc = 0.f;

    for (int k0 = 0; k0 < K; k0 += T) {
        As[ty][tx] = (m < M && k0 + tx < K) ? A[(long long)m * K + k0 + tx] : 0.f;
        Bs[ty][tx] = (k0 + ty < K && n < N) ? B[(long long)(k0 + ty) * N + n] : 0.f;
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < T; ++kk)
            acc = __fadd_rn(acc, __fmul_rn(As[ty][kk], Bs[kk][tx]));   // FMUL + FADD
        __syncthreads();
    }
    if (m < M && n < N)
        C[(long long)m * N + n] = acc;
}
