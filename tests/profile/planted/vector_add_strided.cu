/*@kopt
{
  "launches": [{"kernel": "vector_add_strided", "grid": ["cdiv(N, 1024 * 8)"], "block": [256],
                "args": ["a", "b", "c", "N"]}]
}
*/
// problem: examples/vector_add
// plants: uncoalesced_global, sector_efficiency
//
// Planted defect: each warp owns 1024 consecutive elements but lane L walks its own run of 32
// (elements L*32 .. L*32+31), so at every step the 32 lanes of a warp touch 32 addresses 128
// bytes apart: 32 sectors per request where a coalesced access needs 4, and only 4 useful
// bytes out of each 32-byte sector. Every element is still computed exactly once.

#define RUN 32   // elements per lane, and the stride between lanes

extern "C" __global__ void vector_add_strided(const float *a, const float *b, float *c,
                                              long long N)
{
    const long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x % 32;
    const long long base = warp * 32 * RUN + (long long)lane * RUN;
    for (int k = 0; k < RUN; ++k) {
        const long long i = base + k;
        if (i < N)
            c[i] = a[i] + b[i];
    }
}
