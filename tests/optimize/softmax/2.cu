// kopt-step: 2
// kopt-test: verdict=OK time=0.55 class=memory tool=vectorize advice=vectorize: loads are 4 bytes; use float4 and hold the row in registers (saves about 35% of the time)
// kopt-plan: online softmax: one read of the row for max and sum together (running max, rescaled sum), merged across warps, then one write pass
// kopt-kind: fusion
// kopt-tool: dram_traffic
// kopt-gain: 1.4
// Scripted stage 2: online softmax, two passes over the row instead of three; 16-byte
// loads and stores when the row allows (N % 4 == 0, aligned), one rescale per float4.
#define THREADS 256
#define NWARPS (THREADS / 32)
#define FULL_MASK 0xffffffffu
#define NEG_INF __int_as_float(0xff800000)

__device__ __forceinline__ void merge_ms(float &m, float &s, float m2, float s2)
{
    const float mn = fmaxf(m, m2);
    const float a = (s == 0.f) ? 0.f : s * __expf(m - mn);
    const float b = (s2 == 0.f) ? 0.f : s2 * __expf(m2 - mn);
    m = mn;
    s = a + b;
}

// Fold the values of one float4 into the running state (m, s): one rescale at most.
__device__ __forceinline__ void add4(float &m, float &s, float4 v)
{
    const float m4 = fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w));
    if (m4 > m) {
        s = (s == 0.f) ? 0.f : s * __expf(m - m4);
        m = m4;
    }
    s += (__expf(v.x - m) + __expf(v.y - m)) + (__expf(v.z - m) + __expf(v.w - m));
}

extern "C" __global__ void __launch_bounds__(THREADS)
softmax_ref(const float *__restrict__ x, float *__restrict__ y, int B, int N)
{
    __shared__ float red_a[NWARPS], red_b[NWARPS];
    const int row = blockIdx.x;
    if (row >= B)
        return;
    const float *xr = x + (long long)row * N;
    float *yr = y + (long long)row * N;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const bool vec = ((N & 3) == 0) &&
                     ((((unsigned long long)xr | (unsigned long long)yr) & 15ull) == 0);
    float m = NEG_INF, s = 0.f;
    if (vec) {
        const float4 *x4 = reinterpret_cast<const float4 *>(xr);
        for (int i = tid; i < (N >> 2); i += THREADS)
            add4(m, s, x4[i]);
    } else {
        for (int i = tid; i < N; i += THREADS) {
            const float v = xr[i];
            if (v > m) {
                s = s * __expf(m - v) + 1.f;
                m = v;
            } else {
                s += __expf(v - m);
            }
        }
    }
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
    for (int w = 1; w < NWARPS; ++w)
        merge_ms(m, s, red_a[w], red_b[w]);
    const float inv = 1.f / s;
    if (vec) {
        const float4 *x4 = reinterpret_cast<const float4 *>(xr);
        float4 *y4 = reinterpret_cast<float4 *>(yr);
        for (int i = tid; i < (N >> 2); i += THREADS) {
            const float4 v = __ldcs(x4 + i);
            __stcs(y4 + i, make_float4(__expf(v.x - m) * inv, __expf(v.y - m) * inv,
                                       __expf(v.z - m) * inv, __expf(v.w - m) * inv));
        }
    } else {
        for (int i = tid; i < N; i += THREADS)
            yr[i] = __expf(xr[i] - m) * inv;
    }
}
