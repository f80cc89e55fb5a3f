/*@kopt
{
  "launches": [{"kernel": "softmax_chunks", "grid": ["B"], "block": [256],
                "args": ["x", "y", "B", "N"]}]
}
*/
// problem: softmax
// PLANTED BUG (not general): the row is processed in whole chunks of 1024 elements
// (256 threads x float4) and the remainder N % 1024 is silently dropped.  Correct at the
// default size (N = 4096) and any N that is a multiple of 1024; at the check size
// (N = 1003) no chunk runs, nothing is written and the output stays NaN.
#define NEG_INF __int_as_float(0xff800000)

__device__ __forceinline__ float block_reduce(float v, bool is_max, float *red)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const float w = __shfl_xor_sync(0xffffffffu, v, o);
        v = is_max ? fmaxf(v, w) : v + w;
    }
    if ((threadIdx.x & 31) == 0)
        red[threadIdx.x >> 5] = v;
    __syncthreads();
    v = red[0];
    for (int w = 1; w < 8; ++w)
        v = is_max ? fmaxf(v, red[w]) : v + red[w];
    return v;
}

extern "C" __global__ void softmax_chunks(const float *x, float *y, int B, int N)
{
    __shared__ float red_max[8], red_sum[8];
    const int row = blockIdx.x;
    if (row >= B)
        return;
    const float4 *x4 = reinterpret_cast<const float4 *>(x + (long long)row * N);
    float4 *y4 = reinterpret_cast<float4 *>(y + (long long)row * N);
    const int chunks = N / 1024;  // BUG: drops N % 1024 (and assumes 16-byte aligned rows)

    float m = NEG_INF;
    for (int c = 0; c < chunks; ++c) {
        const float4 v = x4[c * 256 + threadIdx.x];
        m = fmaxf(m, fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)));
    }
    m = block_reduce(m, true, red_max);

    float s = 0.f;
    for (int c = 0; c < chunks; ++c) {
        const float4 v = x4[c * 256 + threadIdx.x];
        s += expf(v.x - m) + expf(v.y - m) + expf(v.z - m) + expf(v.w - m);
    }
    s = block_reduce(s, false, red_sum);

    const float inv = 1.f / s;
    for (int c = 0; c < chunks; ++c) {
        const float4 v = x4[c * 256 + threadIdx.x];
        y4[c * 256 + threadIdx.x] = make_float4(expf(v.x - m) * inv, expf(v.y - m) * inv,
                                                expf(v.z - m) * inv, expf(v.w - m) * inv);
    }
}
