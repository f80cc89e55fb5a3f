/*@kopt {"mode": "host"} */
// problem: tests/adversarial/no_libraries
// expect: OK
// The control for library_forbidden.cu: host mode under "allow_libraries": false with only
// its own kernel (a plain tiled sgemm), which must pass.
#include <cuda_runtime.h>
#include "kopt/candidate.h"

#define T 16
__global__ void own_sgemm(const float *A, const float *B, float *C, int M, int N, int K)
{
    __shared__ float as[T][T], bs[T][T];
    int r = blockIdx.y * T + threadIdx.y, c = blockIdx.x * T + threadIdx.x;
    float acc = 0.f;
    for (int k0 = 0; k0 < K; k0 += T) {
        as[threadIdx.y][threadIdx.x] = r < M && k0 + threadIdx.x < K ? A[(long)r * K + k0 + threadIdx.x] : 0.f;
        bs[threadIdx.y][threadIdx.x] = c < N && k0 + threadIdx.y < K ? B[(long)(k0 + threadIdx.y) * N + c] : 0.f;
        __syncthreads();
        for (int k = 0; k < T; k++)
            acc += as[threadIdx.y][k] * bs[k][threadIdx.x];
        __syncthreads();
    }
    if (r < M && c < N)
        C[(long)r * N + c] = acc;
}

extern "C" int kopt_candidate_run(const kopt_candidate_io *io)
{
    int M = (int)kopt_size(io, "M"), N = (int)kopt_size(io, "N"), K = (int)kopt_size(io, "K");
    dim3 grid((N + T - 1) / T, (M + T - 1) / T), block(T, T);
    own_sgemm<<<grid, block, 0, (cudaStream_t)io->stream>>>((const float *)kopt_tensor(io, "A"),
        (const float *)kopt_tensor(io, "B"), (float *)kopt_tensor(io, "C"), M, N, K);
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
