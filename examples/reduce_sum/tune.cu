/*@kopt
{
  "launches": [
    {"kernel": "reduce_sum_blocks", "grid": ["BLOCKS"], "block": ["THREADS"],
     "args": ["x", "block_sums", "N"]},
    {"kernel": "reduce_sum_finish", "grid": [1], "block": ["FIN_THREADS"],
     "args": ["block_sums", "y", "BLOCKS"]}
  ],
  "params": {
    "THREADS":     {"pow2": [64, 1024], "role": "threads"},
    "VEC":         {"values": [1, 2, 4], "role": "vector"},
    "UNROLL":      {"pow2": [1, 8], "role": "unroll"},
    "BLOCKS":      {"values": [264, 528, 1056, 2112, 4224, 256, 512, 1024, 2048, 4096],
                    "role": "work"},
    "FIN_THREADS": {"values": [256, 1024], "role": "other"}
  },
  "constraints": [
    "VEC * UNROLL <= 16",
    "BLOCKS * THREADS <= 2097152"
  ],
  "scratch": [{"name": "block_sums", "dtype": "f32", "shape": ["BLOCKS"]}]
}
*/
// reduce_sum, tunable: deterministic two-pass sum.
// Pass 1: BLOCKS blocks of THREADS threads stream x with VEC-wide loads (float, float2,
// float4), UNROLL independent loads in flight per thread (one accumulator each), then
// warp shuffles + a 32-entry shared array reduce each block to one value. Pass 2: one
// block of FIN_THREADS threads sums the BLOCKS partials. BLOCKS lists multiples of 132
// (the SM count of H100 SXM / H200) beside powers of two. Elements past the last full
// vector, and everything when x is not VEC-aligned, are summed by a scalar loop.

#define FULL_MASK 0xffffffffu

#if VEC == 4
typedef float4 vec_t;
__device__ __forceinline__ float vsum(vec_t v) { return (v.x + v.y) + (v.z + v.w); }
#elif VEC == 2
typedef float2 vec_t;
__device__ __forceinline__ float vsum(vec_t v) { return v.x + v.y; }
#else
typedef float vec_t;
__device__ __forceinline__ float vsum(vec_t v) { return v; }
#endif

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
    const long long tid = (long long)blockIdx.x * THREADS + threadIdx.x;
    const long long stride = (long long)gridDim.x * THREADS;
    float acc[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
        acc[u] = 0.f;

    long long tail_start = 0;   // first element not covered by the vector loop
    if ((((unsigned long long)x) % (4 * VEC)) == 0) {
        const long long nv = N / VEC;
        const vec_t *xv = reinterpret_cast<const vec_t *>(x);
        long long i = tid;
        for (; i + (UNROLL - 1) * stride < nv; i += UNROLL * stride) {
            vec_t v[UNROLL];
#pragma unroll
            for (int u = 0; u < UNROLL; ++u)
                v[u] = __ldcs(xv + i + u * stride);
#pragma unroll
            for (int u = 0; u < UNROLL; ++u)
                acc[u] += vsum(v[u]);
        }
        for (; i < nv; i += stride)
            acc[0] += vsum(__ldcs(xv + i));
        tail_start = VEC * nv;
    }
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

extern "C" __global__ void __launch_bounds__(FIN_THREADS)
reduce_sum_finish(const float *__restrict__ block_sums, float *__restrict__ y, int P)
{
    float s = 0.f;
    for (int i = threadIdx.x; i < P; i += FIN_THREADS)
        s += block_sums[i];
    s = block_sum(s);
    if (threadIdx.x == 0)
        y[0] = s;
}
