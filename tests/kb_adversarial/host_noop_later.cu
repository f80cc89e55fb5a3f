/*@kopt
{"mode": "host"}
*/
// Host mode: computes on its first call only and returns success without doing anything
// afterwards (a result "cached" by pointer or size, taken to its end). kopt poisons the
// outputs (NaN) before every call, so trial 1 and the repeat of trial 0 leave NaN where
// trial 0 had values: a repeated call leaves outputs unwritten, STATEFUL (checked before
// the comparison with the reference, which would say WRONG).
// expect: STATEFUL
#include <cuda_runtime.h>

#include "kopt/candidate.h"

static int calls;

__global__ void scale_add(const float *x, const float *z, const float *alpha, float *out,
                          long long n)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        out[i] = *alpha * x[i] + z[i];
}

extern "C" int kopt_candidate_run(const kopt_candidate_io *io)
{
    if (calls++ > 0)
        return 0;
    scale_add<<<1056, 256, 0, (cudaStream_t)io->stream>>>(
        (const float *)kopt_tensor(io, "x"), (const float *)kopt_tensor(io, "z"),
        (const float *)kopt_tensor(io, "alpha"), (float *)kopt_tensor(io, "out"),
        io->tensors[0].count);
    return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
