/*@kopt
{
  "launches": [{"kernel": "vector_add_divergent", "grid": ["cdiv(N,256)"], "block": [256],
                "args": ["a", "b", "c", "N"]}]
}
*/
// problem: examples/vector_add
// plants: divergence
//
// Planted defect: even and odd lanes take different paths (threadIdx.x % 2). Odd lanes run a
// 32-step dependent chain whose value is multiplied by zero at the end, so the stored value
// is still a + b, but every warp runs the even path and the odd path one after the other with
// half of its lanes idle.

extern "C" __global__ void vector_add_divergent(const float *a, const float *b, float *c,
                                                long long N)
{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N)
        return;
    const float x = a[i], y = b[i];
    float r;
    if (threadIdx.x % 2 == 0) {
        r = x + y;
    } else {
        float t = x;
#pragma unroll 1
        for (int k = 0; k < 32; ++k)
            t = t * 0.5f + y;            // bounded: |t| <= |x| + 2|y|
        r = (x + y) + 0.0f * t;          // +-0 added: the same value as x + y
    }
    c[i] = r;
}
