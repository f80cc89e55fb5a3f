/*@kopt
{
  "launches": [{"kernel": "vector_add_fast",
                "grid": ["max(1, min(cdiv(N, 4*THREADS), BLOCKS))"], "block": ["THREADS"],
                "args": ["a", "b", "c", "N"]}],
  "params": {"THREADS": 256, "BLOCKS": 1056, "UNROLL": 4},
  "constraints": ["THREADS % 32 == 0", "THREADS <= 1024", "UNROLL >= 1"]
}
*/
// kopt-step: 2
// kopt-test: verdict=OK time=0.92 class=memory tool=none advice=no micro-tool fired; the kernel is at 95% of the DRAM bound
// kopt-plan: grid-stride loop over one full wave of blocks, UNROLL float4 pairs in flight per thread, streaming loads and stores
// kopt-kind: occupancy
// kopt-tool: memory_latency
// kopt-gain: 1.05
// Scripted stage 2: examples/vector_add/fast.cu.
// vector_add fast: c = a + b with 16-byte (float4) loads/stores in a grid-stride loop.
// The grid is sized to one full wave (BLOCKS = 132 SMs x 8 blocks of 256 threads on H100)
// and each thread keeps UNROLL independent float4 pairs in flight to hide DRAM latency.
// A scalar path handles the last N % 4 elements and pointers that are not 16-byte aligned.

extern "C" __global__ void __launch_bounds__(THREADS)
vector_add_fast(const float *__restrict__ a, const float *__restrict__ b, float *__restrict__ c,
                long long N)
{
    const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long stride = (long long)gridDim.x * blockDim.x;
    const bool aligned = ((((unsigned long long)a) | ((unsigned long long)b) |
                           ((unsigned long long)c)) & 15ull) == 0;
    if (!aligned) {  // rare: fall back to a scalar grid-stride loop
        for (long long i = tid; i < N; i += stride)
            c[i] = a[i] + b[i];
        return;
    }
    const long long n4 = N >> 2;  // number of whole float4 groups
    const float4 *a4 = reinterpret_cast<const float4 *>(a);
    const float4 *b4 = reinterpret_cast<const float4 *>(b);
    float4 *c4 = reinterpret_cast<float4 *>(c);

    long long i = tid;
    // Main loop: UNROLL float4 per thread per iteration, all loads issued before any store.
    for (; i + (UNROLL - 1) * stride < n4; i += UNROLL * stride) {
        float4 va[UNROLL], vb[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            va[u] = __ldcs(a4 + i + u * stride);   // streaming: read once
            vb[u] = __ldcs(b4 + i + u * stride);
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            float4 r;
            r.x = va[u].x + vb[u].x; r.y = va[u].y + vb[u].y;
            r.z = va[u].z + vb[u].z; r.w = va[u].w + vb[u].w;
            __stcs(c4 + i + u * stride, r);
        }
    }
    // Remaining whole float4 groups (fewer than UNROLL per thread).
    for (; i < n4; i += stride) {
        float4 va = __ldcs(a4 + i), vb = __ldcs(b4 + i), r;
        r.x = va.x + vb.x; r.y = va.y + vb.y; r.z = va.z + vb.z; r.w = va.w + vb.w;
        __stcs(c4 + i, r);
    }
    // Scalar tail: the last N % 4 elements (at most 3), one thread each.
    const long long t = 4 * n4 + tid;
    if (t < N)
        c[t] = a[t] + b[t];
}
