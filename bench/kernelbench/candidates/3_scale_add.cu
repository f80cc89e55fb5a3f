/*@kopt
{"mode": "host"}
*/
// kopt-native candidate for 3_scale_add: out = alpha * x + z, four elements per thread
// (float4). alpha, a Python float in the model's inputs, arrives as a one-element f32
// tensor on the device.
#include <cuda_runtime.h>

#include "kopt/candidate.h"

__global__ void scale_add(const float4 *x, const float4 *z, const float *alpha, float4 *out,
                          long long n4)
{
    float a = *alpha;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4;
         i += (long long)gridDim.x * blockDim.x) {
        float4 u = x[i], v = z[i];
        out[i] = make_float4(a * u.x + v.x, a * u.y + v.y, a * u.z + v.z, a * u.w + v.w);
    }
}

__global__ void scale_add_tail(const float *x, const float *z, const float *alpha, float *out,
                               long long from, long long n)
{
    long long i = from + blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = *alpha * x[i] + z[i];
}

extern "C" int kopt_candidate_run(const kopt_candidate_io *io)
{
    const float *x = (const float *)kopt_tensor(io, "x"), *z = (const float *)kopt_tensor(io, "z");
    const float *alpha = (const float *)kopt_tensor(io, "alpha");
    float *out = (float *)kopt_tensor(io, "out");
    long long n = io->tensors[0].count, n4 = n / 4;
    cudaStream_t st = (cudaStream_t)io->stream;

    if (n4)
        scale_add<<<1024, 256, 0, st>>>((const float4 *)x, (const float4 *)z, alpha,
                                        (float4 *)out, n4);
    if (n > 4 * n4)
        scale_add_tail<<<1, 256, 0, st>>>(x, z, alpha, out, 4 * n4, n);
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
