/*@kopt
{
  "launches": [{"kernel": "gemm_bf16_fast", "grid": ["cdiv(N,128)", "cdiv(M,128)"], "block": [256],
                "smem": "STAGES*(128*40+32*136)*2",
                "args": ["A", "B", "C", "M", "N", "K"]}],
  "params": {"STAGES": 4},
  "constraints": ["STAGES >= 2"]
}
*/
// gemm_bf16 fast: tensor cores via inline PTX mma.sync.m16n8k16 (bf16 x bf16 -> f32).
// 128x128x32 block tile, 8 warps in a 2 x 4 grid, each warp owns a 64x32 sub-tile
// (4 x 4 mma tiles, 64 f32 accumulators per thread).  Tiles stream global->shared with
// cp.async in a STAGES-deep ring; fragments come from shared memory with ldmatrix
// (.trans for the row-major B); rows are padded (+8 bf16) so ldmatrix is conflict-free.
// Out-of-range chunks are zero-filled (cp.async src-size 0); if K or N is not a multiple
// of 8 (or a pointer is misaligned) tiles are loaded with guarded scalar copies instead.
// bf16 data is handled as raw 16-bit words, so no header is needed.

#define BM 128
#define BN 128
#define BK 32
#define A_STRIDE (BK + 8)   // 40 bf16 = 80 bytes per A-tile row
#define B_STRIDE (BN + 8)   // 136 bf16 = 272 bytes per B-tile row
#define A_TILE (BM * A_STRIDE)
#define B_TILE (BK * B_STRIDE)
#define NTHREADS 256

typedef unsigned short bf16_t;  // raw bf16 bits

__device__ __forceinline__ unsigned smem_u32(const void *p)
{
    return (unsigned)__cvta_generic_to_shared(p);
}

// 16-byte async copy; src_bytes = 0 writes 16 zero bytes without reading global memory.
__device__ __forceinline__ void cp_async16(bf16_t *dst, const bf16_t *src, int src_bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                 :: "r"(smem_u32(dst)), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit()
{
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;\n" :: "n"(N) : "memory");
}

__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const bf16_t *p)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_u32(p)) : "memory");
}
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], const bf16_t *p)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_u32(p)) : "memory");
}

// D = A * B + D for one 16x8x16 tile.
__device__ __forceinline__ void mma_bf16_16816(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

extern "C" __global__ void __launch_bounds__(NTHREADS, 2)
gemm_bf16_fast(const bf16_t *__restrict__ A, const bf16_t *__restrict__ B, float *__restrict__ C,
               int M, int N, int K)
{
    extern __shared__ __align__(16) unsigned char smem_raw[];
    bf16_t *As = reinterpret_cast<bf16_t *>(smem_raw);   // [STAGES][BM][A_STRIDE]
    bf16_t *Bs = As + STAGES * A_TILE;                   // [STAGES][BK][B_STRIDE]

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int warp_m = warp >> 2;  // 0..1 -> rows warp_m*64
    const int warp_n = warp & 3;   // 0..3 -> cols warp_n*32
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;

    const bool a_vec = ((K & 7) == 0) && ((((unsigned long long)A) & 15ull) == 0);
    const bool b_vec = ((N & 7) == 0) && ((((unsigned long long)B) & 15ull) == 0);

    // Copy k-tile kt into ring slot `stage`.  Each tile is 512 16-byte chunks for A
    // (128 rows x 4) and 512 for B (32 rows x 16): two chunks of each per thread.
    auto load_tile = [&](int kt, int stage) {
        const int k0 = kt * BK;
        bf16_t *as = As + stage * A_TILE;
        bf16_t *bs = Bs + stage * B_TILE;
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            const int c = tid + i * NTHREADS;
            const int row = c >> 2, kc = (c & 3) * 8;       // A chunk: row, k offset
            const int gm = m0 + row, gk = k0 + kc;
            bf16_t *dst = as + row * A_STRIDE + kc;
            if (a_vec) {
                const bool ok = gm < M && gk < K;           // K % 8 == 0: chunk all in or all out
                cp_async16(dst, ok ? A + (long long)gm * K + gk : A, ok ? 16 : 0);
            } else {
#pragma unroll
                for (int e = 0; e < 8; ++e)
                    dst[e] = (gm < M && gk + e < K) ? A[(long long)gm * K + gk + e] : (bf16_t)0;
            }
        }
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            const int c = tid + i * NTHREADS;
            const int row = c >> 4, nc = (c & 15) * 8;      // B chunk: k row, n offset
            const int gk = k0 + row, gn = n0 + nc;
            bf16_t *dst = bs + row * B_STRIDE + nc;
            if (b_vec) {
                const bool ok = gk < K && gn < N;           // N % 8 == 0: chunk all in or all out
                cp_async16(dst, ok ? B + (long long)gk * N + gn : B, ok ? 16 : 0);
            } else {
#pragma unroll
                for (int e = 0; e < 8; ++e)
                    dst[e] = (gk < K && gn + e < N) ? B[(long long)gk * N + gn + e] : (bf16_t)0;
            }
        }
    };

    float acc[4][4][4];
#pragma unroll
    for (int mi = 0; mi < 4; ++mi)
#pragma unroll
        for (int nj = 0; nj < 4; ++nj)
#pragma unroll
            for (int e = 0; e < 4; ++e)
                acc[mi][nj][e] = 0.f;

    const int ktiles = (K + BK - 1) / BK;

    // Prologue: fill STAGES-1 slots (always commit so group counting stays uniform).
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < ktiles)
            load_tile(s, s);
        cp_async_commit();
    }

    // ldmatrix lane addressing (same pattern for A and B): lanes 0-15 -> rows 0-15 at
    // column 0, lanes 16-31 -> rows 0-15 at column 8 of a 16x16 sub-block.
    const int lrow = lane & 15, lcol = (lane >> 4) * 8;

    for (int kt = 0; kt < ktiles; ++kt) {
        cp_async_wait<STAGES - 2>();   // this thread's copies of tile kt have landed
        __syncthreads();               // ... and everyone's; slot (kt-1)%STAGES is free

        const int pf = kt + STAGES - 1;  // prefetch into the slot consumed at kt-1
        if (pf < ktiles)
            load_tile(pf, pf % STAGES);
        cp_async_commit();

        const bf16_t *as = As + (kt % STAGES) * A_TILE;
        const bf16_t *bs = Bs + (kt % STAGES) * B_TILE;
#pragma unroll
        for (int ks = 0; ks < BK; ks += 16) {
            // A fragments: regs {rows 0-7 k 0-7, rows 8-15 k 0-7, rows 0-7 k 8-15, rows 8-15 k 8-15}
            // = mma a0..a3 (row groupID / groupID+8, k pairs 2*tig / 2*tig+8).
            unsigned af[4][4];
#pragma unroll
            for (int mi = 0; mi < 4; ++mi)
                ldmatrix_x4(af[mi], as + (warp_m * 64 + mi * 16 + lrow) * A_STRIDE + ks + lcol);
            // B fragments via .trans from the k-major tile: regs {k 0-7 n 0-7, k 8-15 n 0-7,
            // k 0-7 n 8-15, k 8-15 n 8-15} = (b0, b1) of n-tile 2p, then (b0, b1) of n-tile 2p+1.
            unsigned bfr[4][2];
#pragma unroll
            for (int p = 0; p < 2; ++p) {
                unsigned r[4];
                ldmatrix_x4_trans(r, bs + (ks + lrow) * B_STRIDE + warp_n * 32 + p * 16 + lcol);
                bfr[2 * p][0] = r[0];
                bfr[2 * p][1] = r[1];
                bfr[2 * p + 1][0] = r[2];
                bfr[2 * p + 1][1] = r[3];
            }
#pragma unroll
            for (int mi = 0; mi < 4; ++mi)
#pragma unroll
                for (int nj = 0; nj < 4; ++nj)
                    mma_bf16_16816(acc[mi][nj], af[mi], bfr[nj][0], bfr[nj][1]);
        }
    }
    cp_async_wait<0>();  // drain (only empty groups can remain)

    // Epilogue: accumulator e of tile (mi, nj) is at row groupID (+8 for e >= 2),
    // column 2*threadID_in_group + (e & 1).
    const int g = lane >> 2, tig = lane & 3;
    const bool c_vec = ((N & 1) == 0) && ((((unsigned long long)C) & 7ull) == 0);
#pragma unroll
    for (int mi = 0; mi < 4; ++mi) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int row = m0 + warp_m * 64 + mi * 16 + g + h * 8;
            if (row >= M)
                continue;
            float *c_row = C + (long long)row * N;
#pragma unroll
            for (int nj = 0; nj < 4; ++nj) {
                const int col = n0 + warp_n * 32 + nj * 8 + tig * 2;
                const float v0 = acc[mi][nj][2 * h], v1 = acc[mi][nj][2 * h + 1];
                if (c_vec && col < N) {  // N even, col even -> col + 1 < N
                    *reinterpret_cast<float2 *>(c_row + col) = make_float2(v0, v1);
                } else {
                    if (col < N)
                        c_row[col] = v0;
                    if (col + 1 < N)
                        c_row[col + 1] = v1;
                }
            }
        }
    }
}
