// Test kernel for every dtype: doubles each input (integers also get +1) and adds a64 into
// the in-out z64. Used by tests/gpu/test_planted.sh with its wrong variants.
#include <cuda_fp16.h>
#include <cuda_bf16.h>

extern "C" __global__ void dtypes_ref(const __half *a16, const __nv_bfloat16 *ab, const double *a64,
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
    z64[i] += a64[i];
}
