/*@kopt
{"mode": "host"}
*/
// kopt-native candidate for 7_big_softmax: one block of 1024 threads per row; one pass for
// the row's running maximum and sum of exponentials (online softmax), one pass to write.
#include <cuda_runtime.h>

#include "kopt/candidate.h"

__device__ void combine(float &m, float &s, float m2, float s2)
{
    float mm = fmaxf(m, m2);
    s = (m == -INFINITY ? 0.f : s * __expf(m - mm)) + (m2 == -INFINITY ? 0.f : s2 * __expf(m2 - mm));
    m = mm;
}

__global__ void __launch_bounds__(1024) row_softmax(const float *x, float *y, long long cols)
{
    __shared__ float sm[32], ss[32];
    const float *in = x + (long long)blockIdx.x * cols;
    float *out = y + (long long)blockIdx.x * cols;
    float m = -INFINITY, s = 0.f;

    for (long long i = threadIdx.x; i < cols; i += blockDim.x) {
        float v = in[i];
        if (v > m) {
            s = s * __expf(m - v) + 1.f;
            m = v;
        } else {
            s += __expf(v - m);
        }
    }
    for (int o = 16; o > 0; o >>= 1)
        combine(m, s, __shfl_xor_sync(0xffffffffu, m, o), __shfl_xor_sync(0xffffffffu, s, o));
    if ((threadIdx.x & 31) == 0) {
        sm[threadIdx.x >> 5] = m;
        ss[threadIdx.x >> 5] = s;
    }
    __syncthreads();
    m = sm[0];
    s = ss[0];
    for (int w = 1; w < (int)(blockDim.x >> 5); w++)
        combine(m, s, sm[w], ss[w]);
    float inv = 1.f / s;
    for (long long i = threadIdx.x; i < cols; i += blockDim.x)
        out[i] = __expf(in[i] - m) * inv;
}

extern "C" int kopt_candidate_run(const kopt_candidate_io *io)
{
    const kopt_candidate_tensor *x = &io->tensors[0];
    long long rows = x->shape[0], cols = x->shape[1];

    row_softmax<<<(unsigned)rows, 1024, 0, (cudaStream_t)io->stream>>>(
        (const float *)x->data, (float *)kopt_tensor(io, "out"), cols);
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
