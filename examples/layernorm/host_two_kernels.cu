/*@kopt
{
  "mode": "host",
  "scratch": [{"name": "stats", "dtype": "f32", "shape": ["B", 2]}]
}
*/
// layernorm as a host-mode candidate that launches two kernels on the given stream: one
// computes each row's mean and 1/stddev into a scratch buffer, the next normalizes. It is
// here to exercise host mode with several launches and scratch, not to be the fastest.
#include <cuda_runtime.h>

#include "kopt/candidate.h"

/* Sum of v over the block (256 threads); every thread gets the result. */
__device__ float block_sum(float v, float *s)
{
    s[threadIdx.x] = v;
    __syncthreads();
    for (int o = blockDim.x / 2; o > 0; o >>= 1) {
        if (threadIdx.x < o)
            s[threadIdx.x] += s[threadIdx.x + o];
        __syncthreads();
    }
    float total = s[0];
    __syncthreads();   /* s is reused by the next call */
    return total;
}

__global__ void row_stats(const float *x, float *stats, int N)
{
    __shared__ float s[256];
    const float *row = x + (long long)blockIdx.x * N;
    float a = 0.f, b = 0.f;
    for (int i = threadIdx.x; i < N; i += blockDim.x)
        a += row[i];
    float mean = block_sum(a, s) / N;
    for (int i = threadIdx.x; i < N; i += blockDim.x)
        b += (row[i] - mean) * (row[i] - mean);
    float var = block_sum(b, s) / N;
    if (threadIdx.x == 0) {
        stats[2 * blockIdx.x] = mean;
        stats[2 * blockIdx.x + 1] = rsqrtf(var + 1e-5f);
    }
}

__global__ void normalize(const float *x, const float *gamma, const float *beta,
                          const float *stats, float *y, int N)
{
    long long r = blockIdx.y;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        float v = (x[r * N + i] - stats[2 * r]) * stats[2 * r + 1];
        y[r * N + i] = v * gamma[i] + beta[i];
    }
}

extern "C" int kopt_candidate_run(const kopt_candidate_io *io)
{
    int B = (int)kopt_size(io, "B"), N = (int)kopt_size(io, "N");
    cudaStream_t s = (cudaStream_t)io->stream;
    const float *x = (const float *)kopt_tensor(io, "x");
    float *stats = (float *)kopt_tensor(io, "stats");

    row_stats<<<B, 256, 0, s>>>(x, stats, N);
    normalize<<<dim3((N + 255) / 256, B), 256, 0, s>>>(
        x, (const float *)kopt_tensor(io, "gamma"), (const float *)kopt_tensor(io, "beta"), stats,
        (float *)kopt_tensor(io, "y"), N);
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
