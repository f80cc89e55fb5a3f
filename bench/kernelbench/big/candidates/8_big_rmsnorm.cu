/*@kopt
{"mode": "host"}
*/
// kopt-native candidate for 8_big_rmsnorm: one thread per (batch, pixel) column; it reads
// the column's features (stride dim1*dim2, so each warp's loads are coalesced) once to sum
// the squares and once more to write x / rms.
#include <cuda_runtime.h>

#include "kopt/candidate.h"

__global__ void rmsnorm(const float *x, float *y, long long batch, int features,
                        long long plane, float eps)
{
    long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (t >= batch * plane)
        return;
    long long b = t / plane, p = t % plane;
    const float *in = x + b * features * plane + p;
    float *out = y + b * features * plane + p;
    float s = 0.f;
    for (int f = 0; f < features; f++) {
        float v = in[f * plane];
        s += v * v;
    }
    float inv = rsqrtf(s / features + eps);
    for (int f = 0; f < features; f++)
        out[f * plane] = in[f * plane] * inv;
}

extern "C" int kopt_candidate_run(const kopt_candidate_io *io)
{
    const kopt_candidate_tensor *x = &io->tensors[0];
    long long batch = x->shape[0], plane = 1;
    int features = (int)x->shape[1];

    for (int d = 2; d < x->ndim; d++)
        plane *= x->shape[d];
    long long n = batch * plane;
    rmsnorm<<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)io->stream>>>(
        (const float *)x->data, (float *)kopt_tensor(io, "out"), batch, features, plane, 1e-5f);
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
