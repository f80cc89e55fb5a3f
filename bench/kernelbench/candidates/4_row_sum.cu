/*@kopt
{"mode": "host"}
*/
// kopt-native candidate for 4_row_sum: the sum of each row (keepdim), one warp per row.
#include <cuda_runtime.h>

#include "kopt/candidate.h"

__global__ void row_sum(const float *x, float *out, int rows, int cols)
{
    int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x & 31;
    if (row >= rows)
        return;
    const float *in = x + (long long)row * cols;
    float s = 0.f;
    for (int i = lane; i < cols; i += 32)
        s += in[i];
    for (int o = 16; o > 0; o >>= 1)
        s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0)
        out[row] = s;
}

extern "C" int kopt_candidate_run(const kopt_candidate_io *io)
{
    const kopt_candidate_tensor *x = &io->tensors[0];
    int rows = (int)x->shape[0], cols = (int)x->shape[1];

    row_sum<<<(rows + 7) / 8, 256, 0, (cudaStream_t)io->stream>>>(
        (const float *)x->data, (float *)kopt_tensor(io, "out"), rows, cols);
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
