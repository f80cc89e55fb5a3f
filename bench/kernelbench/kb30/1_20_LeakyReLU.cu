/*@kopt
{"mode": "host"}
*/
// kopt-native candidate for KernelBench level 1 problem 20 (LeakyReLU), imported as
// 1_20_LeakyReLU: out = x > 0 ? x : 0.01 x (the module's default negative_slope), four
// floats a thread through float4 loads and stores with the streaming (evict-first) cache
// hint: the 6.4 GB tensor is read once; a scalar tail for counts not a multiple of 4.
#include <cuda_runtime.h>

#include "kopt/candidate.h"

__global__ void leaky4(const float4 *__restrict__ x, float4 *__restrict__ y, long long n4)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 v = __ldcs(x + i);
        v.x = v.x > 0.f ? v.x : 0.01f * v.x;
        v.y = v.y > 0.f ? v.y : 0.01f * v.y;
        v.z = v.z > 0.f ? v.z : 0.01f * v.z;
        v.w = v.w > 0.f ? v.w : 0.01f * v.w;
        __stcs(y + i, v);
    }
}

__global__ void leaky_tail(const float *x, float *y, long long from, long long n)
{
    long long i = from + (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = x[i] > 0.f ? x[i] : 0.01f * x[i];
}

extern "C" int kopt_candidate_run(const kopt_candidate_io *io)
{
    const float *x = (const float *)kopt_tensor(io, "x");
    float *y = (float *)kopt_tensor(io, "out");
    long long n = io->tensors[0].count, n4 = n / 4;
    cudaStream_t s = (cudaStream_t)io->stream;

    if (!x || !y)
        return 1;
    if (n4)
        leaky4<<<(unsigned)((n4 + 255) / 256), 256, 0, s>>>((const float4 *)x, (float4 *)y, n4);
    if (n > 4 * n4)
        leaky_tail<<<1, 32, 0, s>>>(x, y, 4 * n4, n);
    return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
