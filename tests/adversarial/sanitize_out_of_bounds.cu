/*@kopt {"launches": [{"kernel": "add_oob", "grid": ["cdiv(N,256)"], "block": [256],
                       "args": ["a", "b", "c", "N"]}]} */
// problem: examples/vector_add
// options: --sanitize=memcheck
// expect: SANITIZER
// Right answers, but the last thread reads one element past the end of `a`: an
// out-of-bounds read that output checks cannot see (the value read is never used in
// practice) and compute-sanitizer's memcheck reports.
extern "C" __global__ void add_oob(const float *a, const float *b, float *c, long long n)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = a[i] + b[i];
        /* i + 1 == n for the last thread: past the end. (Only where n is odd-sized, so the
         * stray read stays inside the allocation's last page instead of crashing; kopt's
         * sanitizer run uses the problem's check_sizes, N = 1000003.) */
        if ((i + 1 < n || n % 64) && a[i + 1] == 1234.5f)
            v += 1.0f;
        c[i] = v;
    }
}
