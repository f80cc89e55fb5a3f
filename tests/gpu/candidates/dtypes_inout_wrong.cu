/*@kopt
{
  "launches": [{"kernel": "dtypes_inout_twice", "grid": ["cdiv(N,256)"], "block": [256],
                "args": ["a16", "ab", "a64", "ai", "al", "y16", "yb", "y64", "yi", "yl", "z64", "N"]}]
}
*/
// problem: tests/gpu/problems/dtypes
// Adds the input into the in-out tensor twice: in-out tensors are compared after the run
// (and restored before each run), so this must be WRONG.
#include <cuda_fp16.h>
#include <cuda_bf16.h>

extern "C" __global__ void dtypes_inout_twice(const __half *a16, const __nv_bfloat16 *ab, const double *a64,
                                      const int *ai, const long long *al, __half *y16,
                                      __nv_bfloat16 *yb, double *y64, int *yi, long long *yl,
                                      double *z64, int N)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N)
        return;
    y16[i] = __float2half(2.f * __half2float(a16[i]));
    yb[i] = __float2bfloat16(2.f * __bfloat162float(ab[i]));
    y64[i] = 2.0 * a64[i];
    yi[i] = 2 * ai[i] + 1;
    yl[i] = 2 * al[i] + 1;
    z64[i] += 2.0 * a64[i];
}
