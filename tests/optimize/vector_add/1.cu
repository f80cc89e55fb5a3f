// kopt-step: 1
// kopt-test: verdict=COMPILE_ERROR
// kopt-fix: 1-fixed.cu
// kopt-plan: 16-byte accesses: each thread adds one float4 of a and b (grid = cdiv(N, 4*256))
// kopt-kind: vectorize
// kopt-tool: vectorize
// kopt-gain: 1.05
/*@kopt-comment: the launch plan stays the reference's: grid cdiv(N,256) covers N/4 float4s */
// Scripted stage 1 (first attempt): a float pointer assigned to a float4 pointer -> compile error.
extern "C" __global__ void vector_add_ref(const float *a, const float *b, float *c, long long N)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const float4 *a4 = a;
    const float4 *b4 = reinterpret_cast<const float4 *>(b);
    float4 *c4 = reinterpret_cast<float4 *>(c);
    if (4 * i + 3 < N) {
        float4 x = a4[i], y = b4[i];
        c4[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
    }
}
