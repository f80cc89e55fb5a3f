/*@kopt
{
  "launches": [{"kernel": "vector_add_hang", "grid": ["cdiv(N,256)"], "block": [256],
                "args": ["a", "b", "c", "N"]}]
}
*/
// problem: vector_add
// PLANTED BUG (hang): every thread spins until a volatile device flag becomes nonzero, and
// nothing ever sets it.  The volatile read keeps the compiler from removing the loop, so the
// kernel never finishes; kopt's timeout must catch it.
__device__ volatile int kopt_hang_flag = 0;

extern "C" __global__ void vector_add_hang(const float *a, const float *b, float *c, long long N)
{
    while (kopt_hang_flag == 0)  // BUG: never set
        __nanosleep(1000);       // keep the spin cheap
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N)
        c[i] = a[i] + b[i];
}
