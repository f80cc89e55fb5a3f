/*@kopt
{"mode": "host"}
*/
// kopt-step: 1
// kopt-test: verdict=OK time=0.5
// kopt-plan: one fused elementwise kernel for tanh(x) * n instead of PyTorch's two
// kopt-kind: fuse
// kopt-tool: none
// kopt-gain: 2
// Scripted stage 1 for kopt bench --optimize's test (tests/cli/test_kb.sh): a kopt-native
// host-mode candidate of its tanh problems (the scripted evaluator reads the line above).
#include <cuda_runtime.h>

#include "kopt/candidate.h"

__global__ void tanh_scale(const float *x, float *y, long long n, float k)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = tanhf(x[i]) * k;
}

extern "C" int kopt_candidate_run(const kopt_candidate_io *io)
{
    long long n = io->tensors[0].count;

    tanh_scale<<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)io->stream>>>(
        (const float *)io->tensors[0].data, (float *)kopt_tensor(io, "out"), n, 1.0f);
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
