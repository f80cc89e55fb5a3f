/*@kopt
{"mode": "host"}
*/
// alpha * x + z computed in bf16 (HFMA2.BF16): own_sass_precision should say bf16
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include "kopt/candidate.h"
__global__ void k(const float *x, const float *z, const float *alpha, float *out, long long n)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        __nv_bfloat162 a = __float2bfloat162_rn(*alpha), u = __float2bfloat162_rn(x[i]), v = __float2bfloat162_rn(z[i]);
        out[i] = __low2float(__hfma2(a, u, v));
    }
}
extern "C" int kopt_candidate_run(const kopt_candidate_io *io)
{
    k<<<1056, 256, 0, (cudaStream_t)io->stream>>>((const float *)kopt_tensor(io, "x"), (const float *)kopt_tensor(io, "z"),
        (const float *)kopt_tensor(io, "alpha"), (float *)kopt_tensor(io, "out"), io->tensors[0].count);
    return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
