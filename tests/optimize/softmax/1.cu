// kopt-step: 1
// kopt-test: verdict=COMPILE_ERROR
// kopt-fix: 1-fixed.cu
// kopt-plan: replace the shared-memory tree reductions by warp shuffles (__shfl_xor_sync) plus one 8-entry exchange
// kopt-kind: warp-reduce
// kopt-tool: barrier_stall
// kopt-gain: 1.3
// Scripted stage 1 (first attempt): warp_max is used but never defined -> compile error.
#define THREADS 256
#define NWARPS (THREADS / 32)

__device__ __forceinline__ float warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

extern "C" __global__ void softmax_ref(const float *x, float *y, int B, int N)
{
    __shared__ float red[NWARPS];
    const int row = blockIdx.x;
    if (row >= B)
        return;
    const float *xr = x + (long long)row * N;
    float *yr = y + (long long)row * N;
    const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
    float m = __int_as_float(0xff800000);
    for (int i = t; i < N; i += THREADS)
        m = fmaxf(m, xr[i]);
    m = warp_max(m);
    if (lane == 0)
        red[warp] = m;
    __syncthreads();
    m = red[0];
    for (int w = 1; w < NWARPS; ++w)
        m = fmaxf(m, red[w]);
    __syncthreads();
    float s = 0.f;
    for (int i = t; i < N; i += THREADS)
        s += expf(xr[i] - m);
    s = warp_sum(s);
    if (lane == 0)
        red[warp] = s;
    __syncthreads();
    s = 0.f;
    for (int w = 0; w < NWARPS; ++w)
        s += red[w];
    for (int i = t; i < N; i += THREADS)
        yr[i] = expf(xr[i] - m) / s;
}
