/*@kopt
{
  "launches": [{"kernel": "transpose_bank_conflicts", "grid": ["cdiv(N,32)", "cdiv(M,32)"],
                "block": [32, 8], "args": ["x", "y", "M", "N"]}]
}
*/
// problem: examples/transpose
// plants: bank_conflicts
//
// Planted defect: the 32x32 shared tile is NOT padded. The store phase reads it column-wise
// (tile[tx][r]): the 32 lanes of a warp read addresses 32 floats apart, all in the same bank,
// so every shared load is a 32-way bank conflict. Otherwise the same tiled transpose as
// examples/transpose/fast.cu, and correct.

#define TILE 32
#define ROWS 8

extern "C" __global__ void __launch_bounds__(TILE * ROWS)
transpose_bank_conflicts(const float *__restrict__ x, float *__restrict__ y, int M, int N)
{
    __shared__ float tile[TILE][TILE];   // no +1 padding: the planted conflict
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int col0 = blockIdx.x * TILE;
    const int row0 = blockIdx.y * TILE;

    const int j = col0 + tx;
    for (int r = ty; r < TILE; r += ROWS) {
        const int i = row0 + r;
        if (i < M && j < N)
            tile[r][tx] = x[(long long)i * N + j];
    }
    __syncthreads();

    const int i = row0 + tx;
    for (int r = ty; r < TILE; r += ROWS) {
        const int jj = col0 + r;
        if (jj < N && i < M)
            y[(long long)jj * M + i] = tile[tx][r];   // column read: 32 lanes, one bank
    }
}
