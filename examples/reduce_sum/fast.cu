/*@kopt
{
  "launches": [
    {"kernel": "reduce_sum_blocks", "grid": ["BLOCKS"], "block": ["THREADS"],
     "args": ["x", "block_sums", "N"]},
    {"kernel": "reduce_sum_finish", "grid": [1], "block": [1024],
     "args": ["block_sums", "y", "BLOCKS"]}
  ],
  "params": {"THREADS": 256, "BLOCKS": 1056, "UNROLL": 4},
  "constraints": ["THREADS % 32 == 0", "THREADS <= 1024", "BLOCKS >= 1"],
  "scratch": [{"name": "block_sums", "dtype": "f32", "shape": ["BLOCKS"]}]
}
*/
// reduce_sum fast: deterministic two-pass sum.
// Pass 1: one full wave of blocks (132 SMs x 8) streams x with float4 loads, UNROLL
// independent accumulators per thread, then warp shuffles + a 32-entry shared array
// reduce each block to one value.  Pass 2: a single 1024-thread block sums BLOCKS partials.

#define FULL_MASK 0xffffffffu

__device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(FULL_MASK, v, o);
    return v;
}

// Sum over the whole block; the result is valid in thread 0.
__device__ __forceinline__ float block_sum(float v)
{
    __shared__ float warp_part[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_sum(v);
    if (lane == 0)
        warp_part[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = (lane < (int)((blockDim.x + 31) >> 5)) ? warp_part[lane] : 0.f;
        v = warp_sum(v);
    }
    return v;
}

extern "C" __global__ void __launch_bounds__(THREADS)
reduce_sum_blocks(const float *__restrict__ x, float *__restrict__ block_sums, long long N)
{
    const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long stride = (long long)gridDim.x * blockDim.x;
    float acc[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
        acc[u] = 0.f;

    long long tail_start = 0;  // first element not covered by the float4 loop
    if ((((unsigned long long)x) & 15ull) == 0) {
        const long long n4 = N >> 2;
        const float4 *x4 = reinterpret_cast<const float4 *>(x);
        long long i = tid;
        for (; i + (UNROLL - 1) * stride < n4; i += UNROLL * stride) {
            float4 v[UNROLL];
#pragma unroll
            for (int u = 0; u < UNROLL; ++u)
                v[u] = __ldcs(x4 + i + u * stride);
#pragma unroll
            for (int u = 0; u < UNROLL; ++u)
                acc[u] += (v[u].x + v[u].y) + (v[u].z + v[u].w);
        }
        for (; i < n4; i += stride) {
            float4 v = __ldcs(x4 + i);
            acc[0] += (v.x + v.y) + (v.z + v.w);
        }
        tail_start = 4 * n4;
    }
    // Scalar part: the last N % 4 elements, or everything if x is misaligned.
    for (long long i = tail_start + tid; i < N; i += stride)
        acc[0] += x[i];

    float s = 0.f;
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
        s += acc[u];
    s = block_sum(s);
    if (threadIdx.x == 0)
        block_sums[blockIdx.x] = s;
}

extern "C" __global__ void __launch_bounds__(1024)
reduce_sum_finish(const float *__restrict__ block_sums, float *__restrict__ y, int P)
{
    float s = 0.f;
    for (int i = threadIdx.x; i < P; i += blockDim.x)
        s += block_sums[i];
    s = block_sum(s);
    if (threadIdx.x == 0)
        y[0] = s;
}
