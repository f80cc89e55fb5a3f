/*@kopt
{
  "launches": [{"kernel": "sgemm_fast", "grid": ["cdiv(N,128)", "cdiv(M,128)"], "block": [256],
                "args": ["A", "B", "C", "M", "N", "K"]}]
}
*/
// sgemm fast: 128x128 block tile, BK = 8, 256 threads each computing an 8x8 register block
// (rows {4ty..4ty+3, 64+4ty..}, cols {4tx..4tx+3, 64+4tx..}: conflict-free float4 shared reads).
// The A tile is stored k-major (transposed, padded to 132) so both operands are read as
// float4; global->register prefetch of the next tile overlaps the FMAs on the current one
// (double-buffered shared memory, one barrier per k-tile).  Edge tiles are zero-filled, and
// a scalar path covers K or N not divisible by 4.

#define BM 128
#define BN 128
#define BK 8
#define APAD 4

extern "C" __global__ void __launch_bounds__(256, 2)
sgemm_fast(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C,
           int M, int N, int K)
{
    __shared__ __align__(16) float As[2][BK][BM + APAD];
    __shared__ __align__(16) float Bs[2][BK][BN];

    const int tid = threadIdx.x;
    const int tx = tid & 15, ty = tid >> 4;  // 16 x 16 threads over the 128 x 128 tile
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;

    // Global-load mapping: A tile 128 x 8 (one float4 per thread), B tile 8 x 128 (same).
    const int a_row = tid >> 1, a_col = (tid & 1) * 4;
    const int b_row = tid >> 5, b_col = (tid & 31) * 4;
    const int gm = m0 + a_row, gn = n0 + b_col;
    const bool a_vec = ((K & 3) == 0) && ((((unsigned long long)A) & 15ull) == 0);
    const bool b_vec = ((N & 3) == 0) && ((((unsigned long long)B) & 15ull) == 0);
    // Row pointers advance by one k-tile per step; they are dereferenced only in bounds.
    const float *a_src = A + (long long)gm * K + a_col;   // &A[gm][k0 + a_col]
    const float *b_src = B + (long long)b_row * N + gn;   // &B[k0 + b_row][gn]
    const long long b_step = (long long)BK * N;

    float4 ra, rb;  // prefetch registers
    auto load_tile = [&](int k0) {
        const int ka = k0 + a_col;
        if (gm < M && a_vec && ka < K) {           // K % 4 == 0 -> ka + 3 < K
            ra = *reinterpret_cast<const float4 *>(a_src);
        } else {
            const bool rok = gm < M;
            ra.x = (rok && ka + 0 < K) ? a_src[0] : 0.f;
            ra.y = (rok && ka + 1 < K) ? a_src[1] : 0.f;
            ra.z = (rok && ka + 2 < K) ? a_src[2] : 0.f;
            ra.w = (rok && ka + 3 < K) ? a_src[3] : 0.f;
        }
        const int kb = k0 + b_row;
        if (kb < K && b_vec && gn < N) {           // N % 4 == 0 -> gn + 3 < N
            rb = *reinterpret_cast<const float4 *>(b_src);
        } else {
            const bool rok = kb < K;
            rb.x = (rok && gn + 0 < N) ? b_src[0] : 0.f;
            rb.y = (rok && gn + 1 < N) ? b_src[1] : 0.f;
            rb.z = (rok && gn + 2 < N) ? b_src[2] : 0.f;
            rb.w = (rok && gn + 3 < N) ? b_src[3] : 0.f;
        }
        a_src += BK;
        b_src += b_step;
    };
    auto store_tile = [&](int buf) {
        As[buf][a_col + 0][a_row] = ra.x;  // transpose A into k-major layout
        As[buf][a_col + 1][a_row] = ra.y;
        As[buf][a_col + 2][a_row] = ra.z;
        As[buf][a_col + 3][a_row] = ra.w;
        *reinterpret_cast<float4 *>(&Bs[buf][b_row][b_col]) = rb;
    };

    float acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j)
            acc[i][j] = 0.f;

    const int ktiles = (K + BK - 1) / BK;
    if (ktiles > 0) {
        load_tile(0);
        store_tile(0);
    }
    __syncthreads();

    for (int kt = 0; kt < ktiles; ++kt) {
        const int cur = kt & 1;
        const bool more = kt + 1 < ktiles;
        if (more)
            load_tile((kt + 1) * BK);  // global loads in flight during the FMAs below

#pragma unroll
        for (int k = 0; k < BK; ++k) {
            const float4 a0 = *reinterpret_cast<const float4 *>(&As[cur][k][ty * 4]);
            const float4 a1 = *reinterpret_cast<const float4 *>(&As[cur][k][64 + ty * 4]);
            const float4 b0 = *reinterpret_cast<const float4 *>(&Bs[cur][k][tx * 4]);
            const float4 b1 = *reinterpret_cast<const float4 *>(&Bs[cur][k][64 + tx * 4]);
            const float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            const float b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int j = 0; j < 8; ++j)
                    acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }

        if (more)
            store_tile(cur ^ 1);  // buffer cur^1 was last read before the previous barrier
        __syncthreads();
    }

    // Epilogue: thread owns rows m0 + {4ty+i, 64+4ty+i}, cols n0 + {4tx+j, 64+4tx+j}.
    const bool c_vec = ((N & 3) == 0) && ((((unsigned long long)C) & 15ull) == 0);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const int gr = m0 + (i < 4 ? ty * 4 + i : 64 + ty * 4 + (i - 4));
        if (gr >= M)
            continue;
        float *c_row = C + (long long)gr * N;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int gc = n0 + h * 64 + tx * 4;
            if (c_vec && gc < N) {
                *reinterpret_cast<float4 *>(c_row + gc) =
                    make_float4(acc[i][h * 4 + 0], acc[i][h * 4 + 1], acc[i][h * 4 + 2], acc[i][h * 4 + 3]);
            } else {
#pragma unroll
                for (int j = 0; j < 4; ++j)
                    if (gc + j < N)
                        c_row[gc + j] = acc[i][h * 4 + j];
            }
        }
    }
}
