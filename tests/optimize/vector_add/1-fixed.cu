// kopt-step: 1-fixed
// kopt-test: verdict=WRONG
// kopt-fix: 1-fixed2.cu
// kopt-plan: 16-byte accesses: each thread adds one float4 of a and b (grid = cdiv(N, 4*256))
// kopt-kind: vectorize
// kopt-tool: vectorize
// kopt-gain: 1.05
// Scripted stage 1, first repair: compiles, but the last N % 4 elements are never written -> WRONG
// (the check size N = 1000003 is not a multiple of 4).
extern "C" __global__ void vector_add_ref(const float *a, const float *b, float *c, long long N)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const float4 *a4 = reinterpret_cast<const float4 *>(a);
    const float4 *b4 = reinterpret_cast<const float4 *>(b);
    float4 *c4 = reinterpret_cast<float4 *>(c);
    if (4 * i + 3 < N) {
        float4 x = a4[i], y = b4[i];
        c4[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
    }
}
