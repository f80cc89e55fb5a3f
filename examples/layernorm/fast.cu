/*@kopt
{
  "launches": [{"kernel": "layernorm_fast", "grid": ["B"], "block": ["THREADS"],
                "args": ["x", "gamma", "beta", "y", "B", "N", {"f32": 0.00001}]}],
  "params": {"THREADS": 256, "CHUNKS": 4},
  "constraints": ["THREADS % 32 == 0", "THREADS <= 1024", "CHUNKS >= 1"]
}
*/
// layernorm fast: one block per row; the row is read from DRAM once and kept in registers
// as float4 when N % 4 == 0 and N <= 4*THREADS*CHUNKS (4096 by default).  Mean and the
// sum of squared deviations are exact two-pass statistics over the registers, reduced with
// warp shuffles + one 32-entry shared exchange each; gamma/beta come through the read-only
// cache (they are shared by all rows).  Other shapes use a three-pass scalar loop.

#define NWARPS (THREADS / 32)
#define FULL_MASK 0xffffffffu

__device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(FULL_MASK, v, o);
    return v;
}

// Block-wide sum, result in every thread.  Each call must use its own shared array
// (no barrier protects the array against the next call's writes).
__device__ __forceinline__ float block_allsum(float v, float *red)
{
    v = warp_sum(v);
    if ((threadIdx.x & 31) == 0)
        red[threadIdx.x >> 5] = v;
    __syncthreads();
    v = 0.f;
#pragma unroll
    for (int w = 0; w < NWARPS; ++w)
        v += red[w];
    return v;
}

extern "C" __global__ void __launch_bounds__(THREADS)
layernorm_fast(const float *__restrict__ x, const float *__restrict__ gamma,
               const float *__restrict__ beta, float *__restrict__ y, int B, int N, float eps)
{
    __shared__ float red_mean[NWARPS], red_var[NWARPS];
    const int row = blockIdx.x;
    if (row >= B)
        return;
    const long long off = (long long)row * N;
    const float *xr = x + off;
    float *yr = y + off;
    const int tid = threadIdx.x;
    const float inv_n = 1.f / (float)N;
    const unsigned long long ptrs = (unsigned long long)x | (unsigned long long)y |
                                    (unsigned long long)gamma | (unsigned long long)beta;
    const bool vec = ((N & 3) == 0) && ((ptrs & 15ull) == 0);

    if (vec && N <= 4 * THREADS * CHUNKS) {
        // ---- register path ----
        const int n4 = N >> 2;
        const float4 *x4 = reinterpret_cast<const float4 *>(xr);
        float4 v[CHUNKS];
        float s = 0.f;
#pragma unroll
        for (int c = 0; c < CHUNKS; ++c) {
            const int idx = c * THREADS + tid;
            v[c] = (idx < n4) ? __ldcs(x4 + idx) : make_float4(0.f, 0.f, 0.f, 0.f);
            s += (v[c].x + v[c].y) + (v[c].z + v[c].w);
        }
        const float mean = block_allsum(s, red_mean) * inv_n;

        float q = 0.f;
#pragma unroll
        for (int c = 0; c < CHUNKS; ++c) {
            const int idx = c * THREADS + tid;
            if (idx < n4) {  // padded slots would add mean^2
                const float dx = v[c].x - mean, dy = v[c].y - mean;
                const float dz = v[c].z - mean, dw = v[c].w - mean;
                q += (dx * dx + dy * dy) + (dz * dz + dw * dw);
            }
        }
        const float var = block_allsum(q, red_var) * inv_n;
        const float rstd = rsqrtf(var + eps);

        const float4 *g4 = reinterpret_cast<const float4 *>(gamma);
        const float4 *b4 = reinterpret_cast<const float4 *>(beta);
        float4 *y4 = reinterpret_cast<float4 *>(yr);
#pragma unroll
        for (int c = 0; c < CHUNKS; ++c) {
            const int idx = c * THREADS + tid;
            if (idx < n4) {
                const float4 g = __ldg(g4 + idx), b = __ldg(b4 + idx);
                float4 o;
                o.x = (v[c].x - mean) * rstd * g.x + b.x;
                o.y = (v[c].y - mean) * rstd * g.y + b.y;
                o.z = (v[c].z - mean) * rstd * g.z + b.z;
                o.w = (v[c].w - mean) * rstd * g.w + b.w;
                __stcs(y4 + idx, o);
            }
        }
        return;
    }

    // ---- general path: mean, variance of deviations, write (row re-read from L1/L2) ----
    float s = 0.f;
    for (int i = tid; i < N; i += THREADS)
        s += xr[i];
    const float mean = block_allsum(s, red_mean) * inv_n;
    float q = 0.f;
    for (int i = tid; i < N; i += THREADS) {
        const float d = xr[i] - mean;
        q += d * d;
    }
    const float var = block_allsum(q, red_var) * inv_n;
    const float rstd = rsqrtf(var + eps);
    for (int i = tid; i < N; i += THREADS)
        yr[i] = (xr[i] - mean) * rstd * __ldg(gamma + i) + __ldg(beta + i);
}
