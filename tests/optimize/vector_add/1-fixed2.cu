// kopt-step: 1-fixed2
// kopt-test: verdict=OK time=0.97 class=memory tool=memory_latency advice=memory_latency: one load pair in flight per thread; keep several in flight (grid-stride loop, unroll) (saves about 8% of the time)
// kopt-plan: 16-byte accesses: each thread adds one float4 of a and b (grid = cdiv(N, 4*256))
// kopt-kind: vectorize
// kopt-tool: vectorize
// kopt-gain: 1.05
// Scripted stage 1, second repair: float4 accesses with a scalar tail, correct.
extern "C" __global__ void vector_add_ref(const float *a, const float *b, float *c, long long N)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const float4 *a4 = reinterpret_cast<const float4 *>(a);
    const float4 *b4 = reinterpret_cast<const float4 *>(b);
    float4 *c4 = reinterpret_cast<float4 *>(c);
    if (4 * i + 3 < N) {
        float4 x = a4[i], y = b4[i];
        c4[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
    } else if (4 * i < N) {
        for (long long k = 4 * i; k < N; ++k)
            c[k] = a[k] + b[k];
    }
}
