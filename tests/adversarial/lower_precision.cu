// problem: examples/softmax
// expect: WRONG
// Computes softmax with its exponentials and sums in half precision: about 3 significant
// digits, far outside the problem's f32 tolerance (rtol 1e-4), though it "looks" right.
#include <cuda_fp16.h>

extern "C" __global__ void softmax_ref(const float *x, float *y, int B, int N)
{
    int row = blockIdx.x;
    if (row >= B)
        return;
    const float *xr = x + (long long)row * N;
    float *yr = y + (long long)row * N;
    __shared__ float red[256];
    float m = __int_as_float(0xff800000);   // -inf
    for (int i = threadIdx.x; i < N; i += blockDim.x)
        m = fmaxf(m, xr[i]);
    red[threadIdx.x] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s)
            red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
        __syncthreads();
    }
    m = red[0];
    __syncthreads();
    __half sum = __float2half(0.f);
    for (int i = threadIdx.x; i < N; i += blockDim.x)
        sum = __hadd(sum, hexp(__float2half(xr[i] - m)));
    red[threadIdx.x] = __half2float(sum);
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s)
            red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();
    }
    __half inv = __float2half(1.f / red[0]);
    for (int i = threadIdx.x; i < N; i += blockDim.x)
        yr[i] = __half2float(__hmul(hexp(__float2half(xr[i] - m)), inv));
}
