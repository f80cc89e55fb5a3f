/*@kopt
{
  "launches": [{"kernel": "softmax_fast", "grid": ["B"], "block": ["THREADS"],
                "args": ["x", "y", "B", "N"]}],
  "params": {"THREADS": 256, "CHUNKS": 4},
  "constraints": ["THREADS % 32 == 0", "THREADS <= 1024", "CHUNKS >= 1"]
}
*/
// kopt-step: 3
// kopt-test: verdict=OK time=0.35 class=memory tool=none advice=no micro-tool fired; the kernel is at 92% of the DRAM bound
// kopt-plan: hold the whole row in registers as float4 (16-byte streaming loads and stores), one DRAM read per element
// kopt-kind: vectorize
// kopt-tool: vectorize
// kopt-gain: 1.5
// Scripted stage 3: examples/softmax/fast.cu.
// softmax fast: one block per row, the row is read from DRAM exactly once.
// Rows with N % 4 == 0 and N <= 4*THREADS*CHUNKS (4096 by default) are held in registers
// as float4 (16-byte streaming loads/stores); max and sum use warp shuffles plus one
// 32-entry shared exchange each.  Any other row takes a one-pass online-softmax path
// (running max + rescaled sum, merged across the block), then a second pass writes y.

#define NWARPS (THREADS / 32)
#define FULL_MASK 0xffffffffu
#define NEG_INF __int_as_float(0xff800000)

__device__ __forceinline__ float warp_max(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(FULL_MASK, v, o));
    return v;
}

__device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(FULL_MASK, v, o);
    return v;
}

// Merge two online-softmax states (m, s): s is the sum of exp(x - m).
__device__ __forceinline__ void merge_ms(float &m, float &s, float m2, float s2)
{
    const float mn = fmaxf(m, m2);
    const float a = (s == 0.f) ? 0.f : s * __expf(m - mn);   // guard -inf - -inf
    const float b = (s2 == 0.f) ? 0.f : s2 * __expf(m2 - mn);
    m = mn;
    s = a + b;
}

extern "C" __global__ void __launch_bounds__(THREADS)
softmax_fast(const float *__restrict__ x, float *__restrict__ y, int B, int N)
{
    __shared__ float red_a[NWARPS], red_b[NWARPS];
    const int row = blockIdx.x;
    if (row >= B)
        return;
    const long long off = (long long)row * N;
    const float *xr = x + off;
    float *yr = y + off;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const bool vec = ((N & 3) == 0) &&
                     (((((unsigned long long)x) | ((unsigned long long)y)) & 15ull) == 0);

    if (vec && N <= 4 * THREADS * CHUNKS) {
        // ---- register path: whole row in registers ----
        const int n4 = N >> 2;
        const float4 *x4 = reinterpret_cast<const float4 *>(xr);
        float4 *y4 = reinterpret_cast<float4 *>(yr);
        float4 v[CHUNKS];
        float m = NEG_INF;
#pragma unroll
        for (int c = 0; c < CHUNKS; ++c) {
            const int idx = c * THREADS + tid;
            if (idx < n4) {
                v[c] = __ldcs(x4 + idx);
                m = fmaxf(m, fmaxf(fmaxf(v[c].x, v[c].y), fmaxf(v[c].z, v[c].w)));
            } else {
                v[c] = make_float4(NEG_INF, NEG_INF, NEG_INF, NEG_INF);  // exp -> 0
            }
        }
        m = warp_max(m);
        if (lane == 0)
            red_a[warp] = m;
        __syncthreads();
        m = red_a[0];
#pragma unroll
        for (int w = 1; w < NWARPS; ++w)
            m = fmaxf(m, red_a[w]);

        float s = 0.f;
#pragma unroll
        for (int c = 0; c < CHUNKS; ++c) {
            v[c].x = __expf(v[c].x - m); v[c].y = __expf(v[c].y - m);
            v[c].z = __expf(v[c].z - m); v[c].w = __expf(v[c].w - m);
            s += (v[c].x + v[c].y) + (v[c].z + v[c].w);
        }
        s = warp_sum(s);
        if (lane == 0)
            red_b[warp] = s;
        __syncthreads();
        s = 0.f;
#pragma unroll
        for (int w = 0; w < NWARPS; ++w)
            s += red_b[w];

        const float inv = 1.f / s;
#pragma unroll
        for (int c = 0; c < CHUNKS; ++c) {
            const int idx = c * THREADS + tid;
            if (idx < n4)
                __stcs(y4 + idx, make_float4(v[c].x * inv, v[c].y * inv, v[c].z * inv, v[c].w * inv));
        }
        return;
    }

    // ---- general path: online softmax (one read for max+sum), then write ----
    float m = NEG_INF, s = 0.f;
    for (int i = tid; i < N; i += THREADS) {
        const float v = xr[i];
        if (v > m) {
            s = s * __expf(m - v) + 1.f;   // first element: 0 * exp(-inf) + 1 = 1
            m = v;
        } else {
            s += __expf(v - m);
        }
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const float m2 = __shfl_xor_sync(FULL_MASK, m, o);
        const float s2 = __shfl_xor_sync(FULL_MASK, s, o);
        merge_ms(m, s, m2, s2);
    }
    if (lane == 0) {
        red_a[warp] = m;
        red_b[warp] = s;
    }
    __syncthreads();
    m = red_a[0];
    s = red_b[0];
#pragma unroll
    for (int w = 1; w < NWARPS; ++w)
        merge_ms(m, s, red_a[w], red_b[w]);

    const float inv = 1.f / s;
    for (int i = tid; i < N; i += THREADS)
        yr[i] = __expf(xr[i] - m) * inv;
}
