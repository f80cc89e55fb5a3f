/*@kopt {"launches": [{"kernel": "add_and_clobber", "grid": ["cdiv(N,256)"], "block": [256],
                      "args": ["a", "b", "c", "N"]}]} */
// problem: examples/vector_add
// expect: INPUT_MUTATED
// Computes the right answer, then overwrites its input a (a later caller would see zeros).
extern "C" __global__ void add_and_clobber(float *a, const float *b, float *c, long long N)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        c[i] = a[i] + b[i];
        a[i] = 0.f;
    }
}
