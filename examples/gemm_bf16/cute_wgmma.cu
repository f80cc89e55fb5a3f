/*@kopt
{
  "mode": "host",
  "params": {"STAGES": 4},
  "constraints": ["STAGES >= 2", "STAGES <= 6"]
}
*/
// gemm_bf16 with CuTe on Hopper (sm_90a): TMA loads into a STAGES-deep shared-memory ring,
// WGMMA (SS: both operands from shared memory) accumulating in f32 registers.
//
// Block tile 128 x 128 x 64, 256 threads = two warpgroups; each warpgroup owns 64 rows of
// the tile and issues SM90_64x128x16 bf16 WGMMAs (four per 64-wide k tile). A is row-major
// (M x K, K-major in CuTe's words), B is row-major (K x N), which seen as an (N, K) tensor
// is N-major: its shared tile uses the MN-major 128-byte swizzle and the WGMMA reads B as
// MN-major. Out-of-range rows/columns of a tile are zero-filled by TMA, so any M, N, K
// whose rows are 16-byte aligned (K and N multiples of 8) take this path; other sizes take
// a plain SIMT kernel (correct, slow: it exists for the problem's odd check sizes).
//
// The pipeline, per k tile kt (stage s = kt % STAGES, n = kt / STAGES its use of s):
//   all threads wait full[s] (parity n & 1): TMA has landed tile kt
//   both warpgroups issue their WGMMAs on stage s, commit, and wait until at most one
//   batch is in flight: then tile kt-1's WGMMAs are done and every thread arrives on
//   empty[(kt-1) % STAGES]
//   thread 0 then refills that stage with tile kt + STAGES - 1, after waiting until the
//   stage's previous use was released by all 256 threads (empty, parity (use-1) & 1)
// Thread 0 reconverges with its warp (__syncwarp) before the next WGMMA, which its whole
// warp must execute together. Blocks walk the tiles GROUP_M tile rows at a time (L2 reuse).
#include <kopt/candidate.h>

#include <cute/tensor.hpp>
#include <cutlass/arch/barrier.h>
#include <cutlass/numeric_types.h>

#include <cuda_runtime.h>

using namespace cute;

#ifndef STAGES
#define STAGES 4
#endif

namespace cute_gemm {   // named: an anonymous one clashes with CuTe's in nvcc's stubs

using T = cutlass::bfloat16_t;
constexpr int BM = 128, BN = 128, BK = 64, NTHREADS = 256, GROUP_M = 16;

using Tiler = decltype(make_shape(Int<BM>{}, Int<BN>{}, Int<BK>{}));
// (BM, BK, STAGES) and (BN, BK, STAGES) shared tiles in the layouts WGMMA reads
using SmemA = decltype(tile_to_shape(GMMA::Layout_K_SW128_Atom<T>{},
                                     make_shape(Int<BM>{}, Int<BK>{}, Int<STAGES>{})));
using SmemB = decltype(tile_to_shape(GMMA::Layout_MN_SW128_Atom<T>{},
                                     make_shape(Int<BN>{}, Int<BK>{}, Int<STAGES>{})));
using Mma = decltype(make_tiled_mma(SM90_64x128x16_F32BF16BF16_SS<GMMA::Major::K, GMMA::Major::MN>{},
                                    Layout<Shape<_2, _1, _1>>{}));

struct Shared {
    alignas(1024) T a[cosize_v<SmemA>];   // 128-byte swizzles want 1024-byte alignment
    alignas(1024) T b[cosize_v<SmemB>];
    alignas(8) uint64_t full[STAGES];     // TMA -> consumers: bytes landed
    alignas(8) uint64_t empty[STAGES];    // consumers -> producer: stage free again
};

template <class TmaA, class TmaB>
__global__ void __launch_bounds__(NTHREADS, 1)
gemm_tma_wgmma(int M, int N, int K, float *C, __grid_constant__ const TmaA tma_a,
               __grid_constant__ const TmaB tma_b)
{
    using Full = cutlass::arch::ClusterTransactionBarrier;
    using Empty = cutlass::arch::ClusterBarrier;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    Shared &sh = *reinterpret_cast<Shared *>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) &
                                             ~uintptr_t(1023));
    const int tid = threadIdx.x;

    // tile order: GROUP_M tile rows at a time, so the blocks running together share
    // their A and B strips in L2 (a 1-D grid of tiles_m * tiles_n blocks)
    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
    const int per_group = GROUP_M * tiles_n, group = blockIdx.x / per_group;
    const int first_m = group * GROUP_M, rows = min(tiles_m - first_m, GROUP_M);
    const int in_group = blockIdx.x % per_group;
    const int tile_m = first_m + in_group % rows, tile_n = in_group / rows;

    // global views (TMA coordinates for A and B), this block's tiles
    Tensor mA = tma_a.get_tma_tensor(make_shape(M, K));                       // (M, K)
    Tensor mB = tma_b.get_tma_tensor(make_shape(N, K));                       // (N, K)
    Tensor mC = make_tensor(make_gmem_ptr(C), make_shape(M, N), make_stride(N, Int<1>{}));
    auto blk = make_coord(tile_m, tile_n, _);
    Tensor gA = local_tile(mA, Tiler{}, blk, Step<_1, X, _1>{});              // (BM, BK, kt)
    Tensor gB = local_tile(mB, Tiler{}, blk, Step<X, _1, _1>{});              // (BN, BK, kt)
    Tensor gC = local_tile(mC, Tiler{}, blk, Step<_1, _1, X>{});              // (BM, BN)
    Tensor cC = local_tile(make_identity_tensor(make_shape(M, N)), Tiler{}, blk,
                           Step<_1, _1, X>{});                                // (m, n) of each
    Tensor sA = make_tensor(make_smem_ptr(sh.a), SmemA{});                    // (BM, BK, S)
    Tensor sB = make_tensor(make_smem_ptr(sh.b), SmemB{});                    // (BN, BK, S)

    // TMA's view: one copy per stage and per k tile
    auto tA = tma_partition(tma_a, Int<0>{}, Layout<_1>{}, group_modes<0, 2>(sA),
                            group_modes<0, 2>(gA));   // (TMA, kt), (TMA, S)
    auto tB = tma_partition(tma_b, Int<0>{}, Layout<_1>{}, group_modes<0, 2>(sB),
                            group_modes<0, 2>(gB));
    constexpr uint32_t stage_bytes = (BM * BK + BN * BK) * sizeof(T);
    const int ktiles = (K + BK - 1) / BK;

    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s) {
            Full::init(&sh.full[s], 1);
            Empty::init(&sh.empty[s], NTHREADS);
        }
        cutlass::arch::fence_barrier_init();
    }
    __syncthreads();

    auto load = [&](int kt) {   // thread 0 only
        const int s = kt % STAGES;
        Full::arrive_and_expect_tx(&sh.full[s], stage_bytes);
        copy(tma_a.with(sh.full[s]), get<0>(tA)(_, kt), get<1>(tA)(_, s));
        copy(tma_b.with(sh.full[s]), get<0>(tB)(_, kt), get<1>(tB)(_, s));
    };
    if (tid == 0)
        for (int kt = 0; kt < STAGES - 1 && kt < ktiles; ++kt)
            load(kt);

    Mma mma;
    auto thr = mma.get_thread_slice(tid);
    Tensor tCsA = thr.partition_A(sA);                // (MMA, MMA_M, MMA_K, S)
    Tensor tCsB = thr.partition_B(sB);                // (MMA, MMA_N, MMA_K, S)
    Tensor tCrA = thr.make_fragment_A(tCsA);          // shared-memory descriptors
    Tensor tCrB = thr.make_fragment_B(tCsB);
    Tensor tCgC = thr.partition_C(gC);                // (MMA, MMA_M, MMA_N)
    Tensor tCcC = thr.partition_C(cC);
    Tensor acc = thr.make_fragment_C(tCgC);           // f32 registers
    clear(acc);

    for (int kt = 0; kt < ktiles; ++kt) {
        const int s = kt % STAGES;
        Full::wait(&sh.full[s], (kt / STAGES) & 1);
        warpgroup_fence_operand(acc);
        warpgroup_arrive();
        gemm(mma, tCrA(_, _, _, s), tCrB(_, _, _, s), acc);
        warpgroup_commit_batch();
        warpgroup_wait<1>();                          // tile kt-1's WGMMAs are done
        warpgroup_fence_operand(acc);
        if (kt > 0)
            Empty::arrive(&sh.empty[(kt - 1) % STAGES]);
        if (tid == 0) {
            const int next = kt + STAGES - 1;         // goes to stage (kt-1) % STAGES
            if (next < ktiles) {
                if (next >= STAGES)
                    Empty::wait(&sh.empty[next % STAGES], ((next / STAGES) - 1) & 1);
                load(next);
            }
        }
        __syncwarp();
    }
    warpgroup_wait<0>();
    warpgroup_fence_operand(acc);

    // epilogue: registers -> C, guarded at the edges of the matrix
    CUTE_UNROLL
    for (int i = 0; i < size(acc); ++i)
        if (elem_less(tCcC(i), make_coord(M, N)))
            tCgC(i) = acc(i);
}

// Sizes TMA cannot describe (rows not 16-byte aligned): one thread per output.
__global__ void gemm_simt(int M, int N, int K, const T *A, const T *B, float *C)
{
    const int n = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y;
    if (n >= N)
        return;
    float s = 0.f;
    for (int k = 0; k < K; ++k)
        s += float(A[(long long)m * K + k]) * float(B[(long long)k * N + n]);
    C[(long long)m * N + n] = s;
}

} // namespace cute_gemm

using namespace cute_gemm;

extern "C" int kopt_candidate_run(const kopt_candidate_io *io)
{
    const int M = (int)kopt_size(io, "M"), N = (int)kopt_size(io, "N"), K = (int)kopt_size(io, "K");
    const T *A = (const T *)kopt_tensor(io, "A"), *B = (const T *)kopt_tensor(io, "B");
    float *C = (float *)kopt_tensor(io, "C");
    cudaStream_t stream = (cudaStream_t)io->stream;

    if (!A || !B || !C || M <= 0 || N <= 0 || K <= 0)
        return 1;
    if (K % 8 || N % 8) {
        gemm_simt<<<dim3((N + 127) / 128, M), 128, 0, stream>>>(M, N, K, A, B, C);
        return cudaGetLastError() != cudaSuccess;
    }
    // A as (M, K) with unit stride along K; B as (N, K) with unit stride along N
    Tensor gA = make_tensor(make_gmem_ptr(A), make_shape(M, K), make_stride(K, Int<1>{}));
    Tensor gB = make_tensor(make_gmem_ptr(B), make_shape(N, K), make_stride(Int<1>{}, N));
    auto tma_a = make_tma_atom(SM90_TMA_LOAD{}, gA, SmemA{}(_, _, 0), make_shape(Int<BM>{}, Int<BK>{}));
    auto tma_b = make_tma_atom(SM90_TMA_LOAD{}, gB, SmemB{}(_, _, 0), make_shape(Int<BN>{}, Int<BK>{}));
    auto kernel = gemm_tma_wgmma<decltype(tma_a), decltype(tma_b)>;
    const int smem = (int)sizeof(Shared) + 1024;   // + room to align the base
    if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem) !=
        cudaSuccess)
        return 2;
    kernel<<<((N + BN - 1) / BN) * ((M + BM - 1) / BM), NTHREADS, smem, stream>>>(
        M, N, K, C, tma_a, tma_b);
    return cudaGetLastError() != cudaSuccess ? 3 : 0;
}
