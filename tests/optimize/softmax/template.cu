/*@kopt
{
  "launches": [{"kernel": "softmax_tuned", "grid": ["cdiv(B, RPB)"], "block": ["32 * WPR * RPB"],
                "args": ["x", "y", "B", "N"]}],
  "params": {
    "WPR":    {"pow2": [1, 32], "role": "threads"},
    "RPB":    {"pow2": [1, 8], "role": "work"},
    "VEC":    {"values": [1, 2, 4], "role": "vector"},
    "CHUNKS": {"pow2": [1, 32], "role": "unroll"},
    "STREAM": {"values": [0, 1], "role": "other"}
  },
  "constraints": [
    "32 * WPR * RPB <= 1024",
    "32 * WPR * VEC * CHUNKS >= N",
    "VEC * CHUNKS <= 64",
    "VEC * CHUNKS * WPR * RPB <= 512"
  ]
}
*/
// kopt-step: 3t
// kopt-test: verdict=OK time=0.35 tuned=0.33 class=memory
// Scripted templatizer answer: examples/softmax/tune.cu.
// softmax, tunable: RPB rows per block, WPR warps per row (block = 32*WPR*RPB threads).
// A row of up to 32*WPR*VEC*CHUNKS elements is read once into registers with VEC-wide
// loads (float / float2 / float4), max and sum are reduced with warp shuffles (and, when
// WPR > 1, one shared exchange each), then y is written from the registers. STREAM picks
// streaming cache hints (__ldcs/__stcs) over the read-only path. Rows that do not fit,
// or whose length or base is not VEC-aligned, take a correct online-softmax loop.
// The constraints keep the register path the one taken at the problem's sizes.

#define ROW_THREADS (32 * WPR)
#define BLOCK_THREADS (ROW_THREADS * RPB)
#define ROW_CAP (ROW_THREADS * VEC * CHUNKS)
#define FULL_MASK 0xffffffffu
#define NEG_INF __int_as_float(0xff800000)

#if STREAM
#define LOAD_F(p) __ldcs(p)
#define STORE_F(p, v) __stcs(p, v)
#else
#define LOAD_F(p) __ldg(p)
#define STORE_F(p, v) (*(p) = (v))
#endif

__device__ __forceinline__ void load_vec(const float *p, float *d)
{
#if VEC == 4
    const float4 t = LOAD_F(reinterpret_cast<const float4 *>(p));
    d[0] = t.x; d[1] = t.y; d[2] = t.z; d[3] = t.w;
#elif VEC == 2
    const float2 t = LOAD_F(reinterpret_cast<const float2 *>(p));
    d[0] = t.x; d[1] = t.y;
#else
    d[0] = LOAD_F(p);
#endif
}

__device__ __forceinline__ void store_vec(float *p, const float *d)
{
#if VEC == 4
    STORE_F(reinterpret_cast<float4 *>(p), make_float4(d[0], d[1], d[2], d[3]));
#elif VEC == 2
    STORE_F(reinterpret_cast<float2 *>(p), make_float2(d[0], d[1]));
#else
    STORE_F(p, d[0]);
#endif
}

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
    const float a = (s == 0.f) ? 0.f : s * __expf(m - mn);
    const float b = (s2 == 0.f) ? 0.f : s2 * __expf(m2 - mn);
    m = mn;
    s = a + b;
}

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS, 1)
softmax_tuned(const float *__restrict__ x, float *__restrict__ y, int B, int N)
{
#if WPR > 1
    __shared__ float red_a[RPB][WPR], red_b[RPB][WPR];
#endif
    const int rib = threadIdx.x / ROW_THREADS;          // row in block
    const int rt = threadIdx.x % ROW_THREADS;           // thread in row
    const int lane = rt & 31;
    const int row = blockIdx.x * RPB + rib;
    const bool active = row < B;
#if WPR == 1
    if (!active)
        return;   // no block barrier below when a row is one warp
#else
    const int wir = rt >> 5;                            // warp in row
#endif
    const long long off = (long long)(active ? row : 0) * N;
    const float *xr = x + off;
    float *yr = y + off;
    const bool vec = (N % VEC) == 0 &&
                     ((((unsigned long long)x) | ((unsigned long long)y)) % (4 * VEC)) == 0;

    if (vec && N <= ROW_CAP) {
        // ---- register path ----
        const int nv = N / VEC;
        float v[CHUNKS][VEC];
        float m = NEG_INF;
#pragma unroll
        for (int c = 0; c < CHUNKS; ++c) {
            const int idx = c * ROW_THREADS + rt;
            if (active && idx < nv) {
                load_vec(xr + (long long)idx * VEC, v[c]);
            } else {
#pragma unroll
                for (int e = 0; e < VEC; ++e)
                    v[c][e] = NEG_INF;    // exp -> 0
            }
#pragma unroll
            for (int e = 0; e < VEC; ++e)
                m = fmaxf(m, v[c][e]);
        }
        m = warp_max(m);
#if WPR > 1
        if (lane == 0)
            red_a[rib][wir] = m;
        __syncthreads();
        m = red_a[rib][0];
#pragma unroll
        for (int w = 1; w < WPR; ++w)
            m = fmaxf(m, red_a[rib][w]);
#endif
        const float msafe = (m == NEG_INF) ? 0.f : m;   // inactive rows stay finite
        float s = 0.f;
#pragma unroll
        for (int c = 0; c < CHUNKS; ++c)
#pragma unroll
            for (int e = 0; e < VEC; ++e) {
                v[c][e] = __expf(v[c][e] - msafe);
                s += v[c][e];
            }
        s = warp_sum(s);
#if WPR > 1
        if (lane == 0)
            red_b[rib][wir] = s;
        __syncthreads();
        s = 0.f;
#pragma unroll
        for (int w = 0; w < WPR; ++w)
            s += red_b[rib][w];
#endif
        const float inv = 1.f / s;
#pragma unroll
        for (int c = 0; c < CHUNKS; ++c) {
            const int idx = c * ROW_THREADS + rt;
            if (active && idx < nv) {
#pragma unroll
                for (int e = 0; e < VEC; ++e)
                    v[c][e] *= inv;
                store_vec(yr + (long long)idx * VEC, v[c]);
            }
        }
        return;
    }

    // ---- general path: online softmax (one read for max + sum), then write ----
    float m = NEG_INF, s = 0.f;
    for (int i = rt; active && i < N; i += ROW_THREADS) {
        const float v = xr[i];
        if (v > m) {
            s = s * __expf(m - v) + 1.f;
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
#if WPR > 1
    if (lane == 0) {
        red_a[rib][wir] = m;
        red_b[rib][wir] = s;
    }
    __syncthreads();
    m = red_a[rib][0];
    s = red_b[rib][0];
#pragma unroll
    for (int w = 1; w < WPR; ++w)
        merge_ms(m, s, red_a[rib][w], red_b[rib][w]);
#endif
    if (!active)
        return;
    const float inv = 1.f / s;
    for (int i = rt; i < N; i += ROW_THREADS)
        yr[i] = __expf(xr[i] - m) * inv;
}
