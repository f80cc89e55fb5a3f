/*@kopt
{"mode": "host",
 "params": {"THREADS": {"values": [64, 128, 256, 512, 1024], "role": "threads"}}}
*/
// A tuning template of the kopt-native 2_row_softmax candidate (candidates/2_row_softmax.cu
// with its block size a parameter): bench/kb_session.sh evalcost tunes it to measure what
// one evaluation costs inside a session on a problem with a PyTorch reference (the
// reference runs once per session). One block of THREADS threads per row; the row's
// maximum and the sum of exponentials are block reductions through warp shuffles.
#include <cuda_runtime.h>

#include "kopt/candidate.h"

__device__ float block_reduce(float v, float *s, bool is_max)
{
    for (int o = 16; o > 0; o >>= 1) {
        float w = __shfl_xor_sync(0xffffffffu, v, o);
        v = is_max ? fmaxf(v, w) : v + w;
    }
    if ((threadIdx.x & 31) == 0)
        s[threadIdx.x >> 5] = v;
    __syncthreads();
    v = s[0];
    for (int i = 1; i < (int)(blockDim.x >> 5); i++)
        v = is_max ? fmaxf(v, s[i]) : v + s[i];
    __syncthreads();
    return v;
}

__global__ void row_softmax(const float *x, float *y, int cols)
{
    __shared__ float s[32];
    const float *in = x + (long long)blockIdx.x * cols;
    float *out = y + (long long)blockIdx.x * cols;
    float m = -INFINITY, sum = 0.f;

    for (int i = threadIdx.x; i < cols; i += blockDim.x)
        m = fmaxf(m, in[i]);
    m = block_reduce(m, s, true);
    for (int i = threadIdx.x; i < cols; i += blockDim.x)
        sum += __expf(in[i] - m);
    sum = block_reduce(sum, s, false);
    float inv = 1.f / sum;
    for (int i = threadIdx.x; i < cols; i += blockDim.x)
        out[i] = __expf(in[i] - m) * inv;
}

extern "C" int kopt_candidate_run(const kopt_candidate_io *io)
{
    const kopt_candidate_tensor *x = &io->tensors[0];
    int rows = (int)x->shape[0], cols = (int)x->shape[1];

    row_softmax<<<rows, THREADS, 0, (cudaStream_t)io->stream>>>((const float *)x->data,
                                                            (float *)kopt_tensor(io, "out"), cols);
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
