/*@kopt {"launches": [{"kernel": "add_uninit", "grid": ["cdiv(N,256)"], "block": [256],
                       "args": ["a", "b", "c", "tmp", "N"]}],
         "scratch": [{"name": "tmp", "dtype": "f32", "shape": ["N"]}]} */
// problem: examples/vector_add
// options: --sanitize=initcheck
// expect: SANITIZER
// slow: compute-sanitizer initcheck
// Right answers, but it reads a scratch buffer nobody initialized (the value only matters
// if it happens to equal 1234.5): compute-sanitizer's initcheck reports the read. One
// thread a block reads it: with every thread reading (a million errors at the check size)
// initcheck did not finish in 240 s on the H100 machine (2026-11-25).
extern "C" __global__ void add_uninit(const float *a, const float *b, float *c,
                                      const float *tmp, long long n)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = a[i] + b[i];
        if (threadIdx.x == 0 && tmp[i] == 1234.5f)
            v += 1.0f;
        c[i] = v;
    }
}
