/*@kopt
{"mode": "host"}
*/
// kopt-native candidate for KernelBench level 1 problem 5 (matrix-scalar multiplication),
// imported as 1_5_Matrix_scalar_multiplication: out = A * s. The Python float s arrives as
// a one-element f32 tensor on the GPU (tensor "s"), read by each thread from the cache;
// four floats a thread through streaming float4 loads and stores, a scalar tail.
#include <cuda_runtime.h>

#include "kopt/candidate.h"

__global__ void scale4(const float4 *__restrict__ a, const float *__restrict__ s,
                       float4 *__restrict__ c, long long n4)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        float k = __ldg(s);
        float4 v = __ldcs(a + i);
        v.x *= k;
        v.y *= k;
        v.z *= k;
        v.w *= k;
        __stcs(c + i, v);
    }
}

__global__ void scale_tail(const float *a, const float *s, float *c, long long from, long long n)
{
    long long i = from + (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] * *s;
}

extern "C" int kopt_candidate_run(const kopt_candidate_io *io)
{
    const float *a = (const float *)kopt_tensor(io, "A"), *s = (const float *)kopt_tensor(io, "s");
    float *c = (float *)kopt_tensor(io, "out");
    long long n = io->tensors[0].count, n4 = n / 4;
    cudaStream_t st = (cudaStream_t)io->stream;

    if (!a || !s || !c)
        return 1;
    if (n4)
        scale4<<<(unsigned)((n4 + 255) / 256), 256, 0, st>>>((const float4 *)a, s, (float4 *)c, n4);
    if (n > 4 * n4)
        scale_tail<<<1, 32, 0, st>>>(a, s, c, 4 * n4, n);
    return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
