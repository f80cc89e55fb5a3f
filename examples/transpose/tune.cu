/*@kopt
{
  "launches": [{"kernel": "transpose_tuned", "grid": ["cdiv(N, TILE)", "cdiv(M, TILE)"],
                "block": ["TILE / VEC", "ROWS"], "args": ["x", "y", "M", "N"]}],
  "params": {
    "TILE":   {"values": [16, 32, 64], "role": "tile"},
    "VEC":    {"values": [1, 2, 4], "role": "vector"},
    "ROWS":   {"pow2": [1, 64], "role": "threads"},
    "PAD":    {"values": [0, 1, 2, 4], "role": "other"},
    "STREAM": {"values": [0, 1], "role": "other"}
  },
  "constraints": [
    "ROWS <= TILE",
    "TILE / VEC * ROWS >= 32",
    "TILE / VEC * ROWS <= 1024"
  ]
}
*/
// transpose, tunable: a TILE x TILE tile of x is staged through shared memory (rows
// padded by PAD floats against bank conflicts). A block of (TILE/VEC) x ROWS threads
// reads the tile with VEC-wide row loads (float / float2 / float4), each thread covering
// TILE/ROWS rows, then writes the transposed tile to y with VEC-wide row stores (VEC
// consecutive rows of x at one column). STREAM picks streaming cache hints. Vector
// accesses are used only where the row length and base allow them; edges and odd shapes
// fall back to bounds-checked scalar accesses, so every configuration handles any M, N.

#define TPAD (TILE + PAD)

#if STREAM
#define LOAD_F(p) __ldcs(p)
#define STORE_F(p, v) __stcs(p, v)
#else
#define LOAD_F(p) __ldg(p)
#define STORE_F(p, v) (*(p) = (v))
#endif

extern "C" __global__ void __launch_bounds__(TILE / VEC * ROWS)
transpose_tuned(const float *__restrict__ x, float *__restrict__ y, int M, int N)
{
    __shared__ float tile[TILE][TPAD];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int col0 = blockIdx.x * TILE;   // tile origin: column of x
    const int row0 = blockIdx.y * TILE;   // tile origin: row of x
    const int c = tx * VEC;               // first tile column (load) / tile row (store)

    // Load x[row0 + r][col0 + c .. c + VEC - 1] into tile[r][c ..].
    const bool xvec = (N % VEC) == 0 && (((unsigned long long)x) % (4 * VEC)) == 0;
    const int j = col0 + c;
#pragma unroll
    for (int r = ty; r < TILE; r += ROWS) {
        const int i = row0 + r;
        if (i >= M)
            break;
        const float *src = x + (long long)i * N + j;
#if VEC == 4
        if (xvec && j + 3 < N) {
            const float4 t = LOAD_F(reinterpret_cast<const float4 *>(src));
            tile[r][c] = t.x; tile[r][c + 1] = t.y; tile[r][c + 2] = t.z; tile[r][c + 3] = t.w;
            continue;
        }
#elif VEC == 2
        if (xvec && j + 1 < N) {
            const float2 t = LOAD_F(reinterpret_cast<const float2 *>(src));
            tile[r][c] = t.x; tile[r][c + 1] = t.y;
            continue;
        }
#endif
#pragma unroll
        for (int e = 0; e < VEC; ++e)
            if (j + e < N)
                tile[r][c + e] = LOAD_F(src + e);
    }
    __syncthreads();

    // Store y[col0 + r][row0 + c .. c + VEC - 1] = tile[c ..][r].
    const bool yvec = (M % VEC) == 0 && (((unsigned long long)y) % (4 * VEC)) == 0;
    const int i = row0 + c;
#pragma unroll
    for (int r = ty; r < TILE; r += ROWS) {
        const int jj = col0 + r;
        if (jj >= N)
            break;
        float *dst = y + (long long)jj * M + i;
#if VEC == 4
        if (yvec && i + 3 < M) {
            STORE_F(reinterpret_cast<float4 *>(dst),
                    make_float4(tile[c][r], tile[c + 1][r], tile[c + 2][r], tile[c + 3][r]));
            continue;
        }
#elif VEC == 2
        if (yvec && i + 1 < M) {
            STORE_F(reinterpret_cast<float2 *>(dst), make_float2(tile[c][r], tile[c + 1][r]));
            continue;
        }
#endif
#pragma unroll
        for (int e = 0; e < VEC; ++e)
            if (i + e < M)
                STORE_F(dst + e, tile[c + e][r]);
    }
}
