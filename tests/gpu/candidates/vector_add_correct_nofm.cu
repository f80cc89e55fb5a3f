// problem: vector_add
// CORRECT candidate with NO front matter: it defines the reference's kernel name and
// parameter list (vector_add_ref(a, b, c, long long N)), so kopt must fall back to the
// reference launch plan (grid cdiv(N,256), block 256).  Must pass at every size.
extern "C" __global__ void vector_add_ref(const float *__restrict__ a, const float *__restrict__ b,
                                          float *__restrict__ c, long long N)
{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N)
        c[i] = __ldg(a + i) + __ldg(b + i);
}
