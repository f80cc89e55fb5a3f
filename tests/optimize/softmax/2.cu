// kopt-step: 2
// kopt-test: verdict=OK time=0.55 class=memory tool=vectorize advice=vectorize: loads are 4 bytes; use float4 and hold the row in registers (saves about 35% of the time)
// kopt-plan: online softmax: one read of the row for max and sum together (running max, rescaled sum), merged across warps, then one write pass
// kopt-kind: fusion
// kopt-tool: dram_traffic
// kopt-gain: 1.4
// Scripted stage 2: online softmax, two passes over the row instead of three.
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
    float m = NEG_INF, s = 0.f;
    for (int i = tid; i < N; i += THREADS) {
        const float v = xr[i];
        if (v > m) {
            s = s * __expf(m - v) + 1.f;
            m = v;
        } else {
            s += __expf(v - m);
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
    for (int i = tid; i < N; i += THREADS)
        yr[i] = __expf(xr[i] - m) * inv;
}
