/*@kopt
{
  "launches": [{"kernel": "transpose_fast", "grid": ["cdiv(N,32)", "cdiv(M,32)"], "block": [32, "ROWS"],
                "args": ["x", "y", "M", "N"]}],
  "params": {"ROWS": 8},
  "constraints": ["32 % ROWS == 0"]
}
*/
// transpose fast: classic 32x32 tile staged through shared memory.
// A 32 x ROWS block reads a 32x32 tile of x with coalesced row loads, then writes the
// transposed tile to y with coalesced row stores; the tile is padded to 32x33 so the
// column-wise shared-memory reads hit 32 different banks.  Edges are bounds-checked.

#define TILE 32

extern "C" __global__ void __launch_bounds__(TILE * ROWS)
transpose_fast(const float *__restrict__ x, float *__restrict__ y, int M, int N)
{
    __shared__ float tile[TILE][TILE + 1];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int col0 = blockIdx.x * TILE;  // tile origin: column of x
    const int row0 = blockIdx.y * TILE;  // tile origin: row of x

    // Load x[row0 .. row0+31][col0 .. col0+31] (coalesced along columns).
    const int j = col0 + tx;
#pragma unroll
    for (int r = ty; r < TILE; r += ROWS) {
        const int i = row0 + r;
        if (i < M && j < N)
            tile[r][tx] = __ldcs(x + (long long)i * N + j);
    }
    __syncthreads();

    // Store y[col0 .. col0+31][row0 .. row0+31] (coalesced along y's rows = x's rows).
    const int i = row0 + tx;
#pragma unroll
    for (int r = ty; r < TILE; r += ROWS) {
        const int jj = col0 + r;
        if (jj < N && i < M)
            __stcs(y + (long long)jj * M + i, tile[tx][r]);
    }
}
