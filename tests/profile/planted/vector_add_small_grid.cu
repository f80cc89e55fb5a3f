/*@kopt
{
  "launches": [{"kernel": "vector_add_small_grid", "grid": [8], "block": [128],
                "args": ["a", "b", "c", "N"]}]
}
*/
// problem: examples/vector_add
// plants: small_grid_tail
//
// Planted defect: a fixed grid of 8 blocks of 128 threads (1024 threads in all) walks the
// whole vector with a grid-stride loop: 8 SMs of the GPU's 132 have work, the rest idle, and
// each thread has too few loads in flight to cover DRAM latency. Coalesced and correct.

extern "C" __global__ void vector_add_small_grid(const float *a, const float *b, float *c,
                                                 long long N)
{
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < N; i += stride)
        c[i] = a[i] + b[i];
}
