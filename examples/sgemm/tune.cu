/*@kopt
{
  "launches": [{"kernel": "sgemm_tuned", "grid": ["cdiv(N, BN)", "cdiv(M, BM)"],
                "block": ["32 * (BM / (TM * LANES_M)) * (BN / (TN * (32 / LANES_M)))"],
                "smem": "4 * STAGES * BK * (BM + 4 + BN)",
                "args": ["A", "B", "C", "M", "N", "K"]}],
  "params": {
    "BM":      {"values": [32, 64, 128, 256], "role": "tile"},
    "BN":      {"values": [32, 64, 128, 256], "role": "tile"},
    "BK":      {"values": [8, 16, 32], "role": "tile"},
    "TM":      {"values": [4, 8, 16], "role": "work"},
    "TN":      {"values": [4, 8, 16], "role": "work"},
    "LANES_M": {"values": [2, 4, 8, 16], "role": "other"},
    "STAGES":  {"values": [1, 2], "role": "stages"},
    "MINB":    {"values": [1, 2], "role": "other"}
  },
  "constraints": [
    "BM % (TM * LANES_M) == 0",
    "BN % (TN * (32 / LANES_M)) == 0",
    "32 * (BM / (TM * LANES_M)) * (BN / (TN * (32 / LANES_M))) >= 64",
    "32 * (BM / (TM * LANES_M)) * (BN / (TN * (32 / LANES_M))) <= 512",
    "(BM * BK) % (128 * (BM / (TM * LANES_M)) * (BN / (TN * (32 / LANES_M)))) == 0",
    "(BN * BK) % (128 * (BM / (TM * LANES_M)) * (BN / (TN * (32 / LANES_M)))) == 0",
    "(BM + BN) * BK <= 1024 * (BM / (TM * LANES_M)) * (BN / (TN * (32 / LANES_M)))",
    "TM * TN <= 128",
    "MINB * (32 * (BM / (TM * LANES_M)) * (BN / (TN * (32 / LANES_M)))) * (TM * TN + 48) + MINB * (BM + BN) * BK <= 65536",
    "4 * STAGES * BK * (BM + 4 + BN) <= 232448"
  ]
}
*/
// sgemm, tunable (fp32 FMA on CUDA cores): C = A @ B, row-major, any M, N, K.
// A block computes a BM x BN tile of C, marching over K in BK steps. Its warps each own a
// warp tile of (TM*LANES_M) x (TN*32/LANES_M); a lane owns TM x TN outputs, made of 4x4
// pieces spaced LANES_M*4 rows and (32/LANES_M)*4 columns apart, so every shared-memory
// read is a float4 that lanes either share (broadcast) or read contiguously. The A tile is
// stored k-major (transposed, rows padded by 4 floats) so both operands are read as float4.
// STAGES = 2: the next k-tile's global loads are in registers while the FMAs on the current
// one run (double-buffered shared memory, one barrier per k-tile); STAGES = 1: load, barrier,
// compute, barrier. MINB is the launch bound's minimum resident blocks per SM (caps
// registers). Global loads are float4 when K (for A) or N (for B, C) is a multiple of 4 and
// the base is aligned; edges and other shapes use bounds-checked scalar accesses.

#define SG_LANES_N (32 / LANES_M)
#define SG_WM (TM * LANES_M)                  // warp tile rows
#define SG_WN (TN * SG_LANES_N)               // warp tile columns
#define SG_WARPS_N (BN / SG_WN)
#define SG_THREADS (32 * (BM / SG_WM) * SG_WARPS_N)
#define SG_AS (BM + 4)                        // row length of the k-major A tile
#define SG_KQ (BK / 4)                        // float4s per A-tile row
#define SG_NQ (BN / 4)                        // float4s per B-tile row
#define SG_LA (BM * BK / 4 / SG_THREADS)      // float4 loads of A per thread per k-tile
#define SG_LB (BN * BK / 4 / SG_THREADS)      // float4 loads of B per thread per k-tile

extern "C" __global__ void __launch_bounds__(SG_THREADS, MINB)
sgemm_tuned(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C,
            int M, int N, int K)
{
    extern __shared__ __align__(16) float smem[];
    float *const As = smem;                              // [STAGES][BK][SG_AS]
    float *const Bs = smem + STAGES * BK * SG_AS;        // [STAGES][BK][BN]

    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int a_off = (warp / SG_WARPS_N) * SG_WM + (lane / SG_LANES_N) * 4;
    const int b_off = (warp % SG_WARPS_N) * SG_WN + (lane % SG_LANES_N) * 4;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const bool a_vec = (K % 4) == 0 && (((unsigned long long)A) % 16) == 0;
    const bool b_vec = (N % 4) == 0 && (((unsigned long long)B) % 16) == 0;

    float4 ra[SG_LA], rb[SG_LB];   // the next k-tile, on its way to shared memory

    auto load_tile = [&](int k0) {
#pragma unroll
        for (int l = 0; l < SG_LA; ++l) {
            const int f = tid + l * SG_THREADS;
            const int gm = m0 + f / SG_KQ, gk = k0 + (f % SG_KQ) * 4;
            const float *p = A + (long long)gm * K + gk;
            if (a_vec && gm < M && gk < K) {
                ra[l] = *reinterpret_cast<const float4 *>(p);
            } else {
                const bool rok = gm < M;
                ra[l].x = (rok && gk + 0 < K) ? p[0] : 0.f;
                ra[l].y = (rok && gk + 1 < K) ? p[1] : 0.f;
                ra[l].z = (rok && gk + 2 < K) ? p[2] : 0.f;
                ra[l].w = (rok && gk + 3 < K) ? p[3] : 0.f;
            }
        }
#pragma unroll
        for (int l = 0; l < SG_LB; ++l) {
            const int f = tid + l * SG_THREADS;
            const int gk = k0 + f / SG_NQ, gn = n0 + (f % SG_NQ) * 4;
            const float *p = B + (long long)gk * N + gn;
            if (b_vec && gk < K && gn < N) {
                rb[l] = *reinterpret_cast<const float4 *>(p);
            } else {
                const bool rok = gk < K;
                rb[l].x = (rok && gn + 0 < N) ? p[0] : 0.f;
                rb[l].y = (rok && gn + 1 < N) ? p[1] : 0.f;
                rb[l].z = (rok && gn + 2 < N) ? p[2] : 0.f;
                rb[l].w = (rok && gn + 3 < N) ? p[3] : 0.f;
            }
        }
    };
    auto store_tile = [&](int buf) {
        float *as = As + buf * BK * SG_AS;
        float *bs = Bs + buf * BK * BN;
#pragma unroll
        for (int l = 0; l < SG_LA; ++l) {
            const int f = tid + l * SG_THREADS;
            const int row = f / SG_KQ, kq = (f % SG_KQ) * 4;
            as[(kq + 0) * SG_AS + row] = ra[l].x;   // transpose into k-major layout
            as[(kq + 1) * SG_AS + row] = ra[l].y;
            as[(kq + 2) * SG_AS + row] = ra[l].z;
            as[(kq + 3) * SG_AS + row] = ra[l].w;
        }
#pragma unroll
        for (int l = 0; l < SG_LB; ++l) {
            const int f = tid + l * SG_THREADS;
            *reinterpret_cast<float4 *>(bs + (f / SG_NQ) * BN + (f % SG_NQ) * 4) = rb[l];
        }
    };

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j)
            acc[i][j] = 0.f;

    auto compute_tile = [&](int buf) {
        const float *as = As + buf * BK * SG_AS + a_off;
        const float *bs = Bs + buf * BK * BN + b_off;
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a[TM], b[TN];
#pragma unroll
            for (int s = 0; s < TM / 4; ++s) {
                const float4 t = *reinterpret_cast<const float4 *>(as + k * SG_AS + s * LANES_M * 4);
                a[4 * s + 0] = t.x; a[4 * s + 1] = t.y; a[4 * s + 2] = t.z; a[4 * s + 3] = t.w;
            }
#pragma unroll
            for (int s = 0; s < TN / 4; ++s) {
                const float4 t = *reinterpret_cast<const float4 *>(bs + k * BN + s * SG_LANES_N * 4);
                b[4 * s + 0] = t.x; b[4 * s + 1] = t.y; b[4 * s + 2] = t.z; b[4 * s + 3] = t.w;
            }
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j)
                    acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
    };

    const int ktiles = (K + BK - 1) / BK;
#if STAGES >= 2
    if (ktiles > 0) {
        load_tile(0);
        store_tile(0);
    }
    __syncthreads();
    for (int kt = 0; kt < ktiles; ++kt) {
        const int cur = kt & 1;
        const bool more = kt + 1 < ktiles;
        if (more)
            load_tile((kt + 1) * BK);   // in flight during the FMAs below
        compute_tile(cur);
        if (more)
            store_tile(cur ^ 1);        // buffer cur^1 was last read before the previous barrier
        __syncthreads();
    }
#else
    for (int kt = 0; kt < ktiles; ++kt) {
        load_tile(kt * BK);
        store_tile(0);
        __syncthreads();
        compute_tile(0);
        __syncthreads();
    }
#endif

    // Epilogue: rows m0 + a_off + s*LANES_M*4 + i, columns n0 + b_off + t*LANES_N*4 + j.
    const bool c_vec = (N % 4) == 0 && (((unsigned long long)C) % 16) == 0;
#pragma unroll
    for (int s = 0; s < TM / 4; ++s)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int gr = m0 + a_off + s * LANES_M * 4 + i;
            if (gr >= M)
                continue;
            float *c_row = C + (long long)gr * N;
#pragma unroll
            for (int t = 0; t < TN / 4; ++t) {
                const int gc = n0 + b_off + t * SG_LANES_N * 4;
                const float *v = &acc[4 * s + i][4 * t];
                if (c_vec && gc < N) {
                    *reinterpret_cast<float4 *>(c_row + gc) = make_float4(v[0], v[1], v[2], v[3]);
                } else {
#pragma unroll
                    for (int j = 0; j < 4; ++j)
                        if (gc + j < N)
                            c_row[gc + j] = v[j];
                }
            }
        }
}
