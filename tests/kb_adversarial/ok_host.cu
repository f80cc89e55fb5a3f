/*@kopt
{"mode": "host"}
*/
// Correct: kopt-native host mode on the PyTorch problem (out = alpha * x + z; alpha, a
// Python float in the model's inputs, arrives as a one-element f32 tensor on the device),
// float4 for the bulk and a scalar tail for the odd check sizes, all on io->stream. OK,
// with a positive median.
// expect: OK
#include <cuda_runtime.h>

#include "kopt/candidate.h"

__global__ void scale_add4(const float4 *x, const float4 *z, const float *alpha, float4 *out,
                           long long n4)
{
    float a = *alpha;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4;
         i += (long long)gridDim.x * blockDim.x) {
        float4 u = x[i], v = z[i];
        out[i] = make_float4(a * u.x + v.x, a * u.y + v.y, a * u.z + v.z, a * u.w + v.w);
    }
}

__global__ void scale_add1(const float *x, const float *z, const float *alpha, float *out,
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

    if (!x || !z || !alpha || !out)
        return 1;
    if (n4)
        scale_add4<<<1056, 256, 0, st>>>((const float4 *)x, (const float4 *)z, alpha,
                                         (float4 *)out, n4);
    if (n > 4 * n4)
        scale_add1<<<1, 256, 0, st>>>(x, z, alpha, out, 4 * n4, n);
    return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
