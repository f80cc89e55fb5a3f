/*@kopt
{
  "mode": "host",
  "params": {"BN": 256, "BK": 64, "STAGES": 4, "CLUSTER": 2, "PERSISTENT": 1, "B_KFIRST": 1},
  "constraints": ["BN == 128 || BN == 256", "BK == 32 || BK == 64", "STAGES >= 2",
                  "CLUSTER == 1 || CLUSTER == 2", "PERSISTENT == 0 || PERSISTENT == 1",
                  "B_KFIRST == 0 || B_KFIRST == 1", "STAGES * (128 + BN) * BK * 2 + 2048 <= 232448"]
}
*/
// gemm_bf16 with CuTe on Hopper (sm_90a): warp-specialized TMA + WGMMA, STAGES-deep ring,
// persistent clusters. On an H100 at 8192^3: 1.44 ms, 765 TFLOP/s, about 5% faster than cuBLAS
// (bench/results/2026-11-25-h100-cute-gemm.md).
//
// Block tile 128 x BN x BK, 384 threads = three warpgroups. Warpgroup 0 is the producer:
// it gives most of its registers back (setmaxnreg) and one thread issues the TMA loads of
// A (128 x BK, K-major, 128-byte swizzle; 64-byte at BK 32) and B (BN x BK seen as an (N, K)
// tensor that is N-major, since B is row-major K x N: MN-major 128-byte swizzle) into the
// ring. Warpgroups 1 and 2 are the consumers: each owns 64 rows of the tile and issues
// SM90_64xBNx16_F32BF16BF16_SS WGMMAs (BK / 16 per k tile) into f32 registers (BN / 2 of
// them per thread), keeping one batch in flight.
//
// CLUSTER (2): blocks pair up along M; both need the same B tile, so each loads half of it
// and multicasts it to both. PERSISTENT (1): a grid of as many clusters as fit at once, each
// walking output tiles; the producer runs ahead into the next tile while the consumers store
// the last one. B_KFIRST (1): see SmemB; this one choice is worth 1.5x.
//
// Barriers (one mbarrier of each kind per stage s; k tiles are numbered across a block's
// output tiles, it, and n = it / STAGES is tile it's use of s):
//   full[s]  producer -> consumers: arrive_and_expect_tx(whole stage: own A, every share of
//            B), TMA completes it; consumers wait with parity n & 1
//   empty[s] consumers -> producers: lane 0 of each of the 8 consumer warps of every block
//            of the cluster arrives (remotely too) once tile it's WGMMAs are done (after the
//            next batch is issued and warpgroup_wait<1>); a producer waits with parity
//            (n - 1) & 1 before it refills s, and at the end waits for the last stages so
//            that no block exits while its partner may still arrive on its barriers
// TMA zero-fills out-of-range rows and columns (and counts them in the transaction bytes),
// so any M, N, K whose rows are 16-byte aligned (K and N multiples of 8) take this path;
// the epilogue stores float2s straight from registers, guarded only in edge tiles. Other
// sizes take a plain SIMT kernel (correct, slow: it exists for the problem's odd check
// sizes). Clusters walk the tiles GROUP_M tile rows at a time (L2 reuse).
#include <kopt/candidate.h>

#include <cute/tensor.hpp>
#include <cutlass/arch/barrier.h>
#include <cutlass/arch/reg_reconfig.h>
#include <cutlass/numeric_types.h>

#include <cuda_runtime.h>

using namespace cute;

#ifndef STAGES
#define STAGES 4
#endif
#ifndef BN
#define BN 256
#endif
#ifndef CLUSTER
#define CLUSTER 2
#endif
#ifndef BK
#define BK 64
#endif
#ifndef PERSISTENT
#define PERSISTENT 1
#endif
#ifndef B_KFIRST
#define B_KFIRST 1
#endif

namespace cute_gemm {   // named: an anonymous one clashes with CuTe's in nvcc's stubs

using T = cutlass::bfloat16_t;
constexpr int BM = 128, GROUP_M = 16;
constexpr int CONSUMERS = 2;                          // warpgroups, 64 tile rows each
constexpr int NTHREADS = 128 * (1 + CONSUMERS);
constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232;   // 128*40 + 256*232 <= 65536

static_assert(GROUP_M % CLUSTER == 0, "clusters stack whole tiles along M");

using Tiler = decltype(make_shape(Int<BM>{}, Int<BN>{}, Int<BK>{}));
// (BM, BK, STAGES) and (BN, BK, STAGES) shared tiles in the layouts WGMMA reads
// (a K-major row of 64 bf16 is 128 bytes: the 128-byte swizzle; 32 of them, the 64-byte one)
using SmemAtomA = conditional_t<BK == 64, GMMA::Layout_K_SW128_Atom<T>, GMMA::Layout_K_SW64_Atom<T>>;
using SmemA = decltype(tile_to_shape(SmemAtomA{},
                                     make_shape(Int<BM>{}, Int<BK>{}, Int<STAGES>{})));
// B's atoms (64 n x 8 k) are stacked along k first (B_KFIRST): each 64-column strip of a
// stage is then one contiguous 64 x BK block, which TMA fills with one box; stacked along n,
// the largest box is one 1 KiB atom (32 TMA instructions a stage instead of 4)
using SmemB = decltype(tile_to_shape(GMMA::Layout_MN_SW128_Atom<T>{},
                                     make_shape(Int<BN>{}, Int<BK>{}, Int<STAGES>{}),
                                     conditional_t<(B_KFIRST != 0), Step<_2, _1, _3>, Step<_1, _2, _3>>{}));
// one warpgroup: 64 x BN x 16 (A K-major, B MN-major), two of them stacked along M
using Atom = decltype(GMMA::ss_op_selector<T, T, float, Shape<_64, Int<BN>, Int<BK>>,
                                           GMMA::Major::K, GMMA::Major::MN>());
using Mma = decltype(make_tiled_mma(Atom{}, Layout<Shape<Int<CONSUMERS>, _1, _1>>{}));
static_assert(size(Mma{}) == 128 * CONSUMERS, "one warpgroup per 64 rows");

struct Shared {
    alignas(1024) T a[cosize_v<SmemA>];   // 128-byte swizzles want 1024-byte alignment
    alignas(1024) T b[cosize_v<SmemB>];
    alignas(8) uint64_t full[STAGES];     // TMA -> consumers: bytes landed
    alignas(8) uint64_t empty[STAGES];    // consumers -> producer: stage free again
};
constexpr int SMEM_BYTES = (int)sizeof(Shared) + 1024;   // + room to align the base

template <class TmaA, class TmaB>
__global__ void __launch_bounds__(NTHREADS, 1) __cluster_dims__(CLUSTER, 1, 1)
gemm_tma_wgmma(int M, int N, int K, float *C, __grid_constant__ const TmaA tma_a,
               __grid_constant__ const TmaB tma_b)
{
    using Full = cutlass::arch::ClusterTransactionBarrier;
    using Empty = cutlass::arch::ClusterBarrier;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    Shared &sh = *reinterpret_cast<Shared *>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) &
                                             ~uintptr_t(1023));
    const int tid = threadIdx.x, wg = tid / 128;

    // tile order: clusters of CLUSTER tiles stacked along M (block rank r takes row
    // CLUSTER * cluster row + r; all of them share one B tile), walked GROUP_M tile rows
    // at a time so that the blocks running together share their A and B strips in L2.
    // The grid may hold one row of tiles past M (CLUSTER not dividing the tile rows): those
    // blocks load zeros (TMA fills out-of-range boxes), help multicast B, and store nothing.
    // PERSISTENT: each cluster walks cluster tiles c, c + clusters, ...; otherwise one each.
    const int rank = (int)cute::block_rank_in_cluster();
    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
    const int crows = (tiles_m + CLUSTER - 1) / CLUSTER, group_rows = GROUP_M / CLUSTER;
    const int per_group = group_rows * tiles_n;
    const int first_c = blockIdx.x / CLUSTER, step_c = gridDim.x / CLUSTER;
    const int end_c = PERSISTENT ? crows * tiles_n : first_c + 1;
    auto tile_of = [&](int c) {   // cluster tile -> this block's (tile_m, tile_n, _)
        const int group = c / per_group, first = group * group_rows;
        const int rows = min(crows - first, group_rows), in_group = c % per_group;
        return make_coord((first + in_group % rows) * CLUSTER + rank, in_group / rows, _);
    };
    const int ktiles = (K + BK - 1) / BK;

    Tensor sA = make_tensor(make_smem_ptr(sh.a), SmemA{});                    // (BM, BK, S)
    Tensor sB = make_tensor(make_smem_ptr(sh.b), SmemB{});                    // (BN, BK, S)

    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s) {
            Full::init(&sh.full[s], 1);
            // one arrival per consumer warp of every block of the cluster: B lands in
            // all of them, so a stage is free only once all of them are done with it
            Empty::init(&sh.empty[s], CONSUMERS * 4 * CLUSTER);
        }
        cutlass::arch::fence_barrier_init();
    }
    cute::cluster_sync();   // barriers initialized in every block before any remote use

    // k tiles are numbered across this block's output tiles (it): stage it % STAGES, use
    // it / STAGES of that stage
    if (wg == 0) {   // producer warpgroup
        cutlass::arch::warpgroup_reg_dealloc<PRODUCER_REGS>();
        if (tid == 0) {
            cute::prefetch_tma_descriptor(tma_a.get_tma_descriptor());
            cute::prefetch_tma_descriptor(tma_b.get_tma_descriptor());
            Tensor mA = tma_a.get_tma_tensor(make_shape(M, K));   // TMA coordinates
            Tensor mB = tma_b.get_tma_tensor(make_shape(N, K));
            constexpr uint16_t everyone = (1u << CLUSTER) - 1;
            // the whole stage lands here: own A, own share of B and the others' shares
            constexpr uint32_t stage_bytes = (BM * BK + BN * BK) * sizeof(T);
            int it = 0;
            for (int c = first_c; c < end_c; c += step_c) {
                auto blk = tile_of(c);
                Tensor gA = local_tile(mA, Tiler{}, blk, Step<_1, X, _1>{});   // (BM, BK, kt)
                Tensor gB = local_tile(mB, Tiler{}, blk, Step<X, _1, _1>{});   // (BN, BK, kt)
                auto tA = tma_partition(tma_a, Int<0>{}, Layout<_1>{}, group_modes<0, 2>(sA),
                                        group_modes<0, 2>(gA));   // (TMA, kt), (TMA, S)
                // B: this block loads 1/CLUSTER of the tile and multicasts it to the cluster
                auto tB = tma_partition(tma_b, rank, Layout<Int<CLUSTER>>{},
                                        group_modes<0, 2>(sB), group_modes<0, 2>(gB));
                for (int kt = 0; kt < ktiles; ++kt, ++it) {
                    const int s = it % STAGES;
                    if (it >= STAGES)
                        Empty::wait(&sh.empty[s], ((it / STAGES) - 1) & 1);
                    Full::arrive_and_expect_tx(&sh.full[s], stage_bytes);
                    copy(tma_a.with(sh.full[s]), get<0>(tA)(_, kt), get<1>(tA)(_, s));
                    if constexpr (CLUSTER == 1)
                        copy(tma_b.with(sh.full[s]), get<0>(tB)(_, kt), get<1>(tB)(_, s));
                    else
                        copy(tma_b.with(sh.full[s], everyone), get<0>(tB)(_, kt),
                             get<1>(tB)(_, s));
                }
            }
            // tail: stay until every block of the cluster has released the last stages,
            // so no block exits while another may still arrive on its barriers
            for (int j = max(it - STAGES, 0); j < it; ++j)
                Empty::wait(&sh.empty[j % STAGES], (j / STAGES) & 1);
        }
        return;
    }

    // consumer warpgroups
    cutlass::arch::warpgroup_reg_alloc<CONSUMER_REGS>();
    const int ctid = tid - 128, lane = tid % 32;
    Mma mma;
    auto thr = mma.get_thread_slice(ctid);
    Tensor mC = make_tensor(make_gmem_ptr(C), make_shape(M, N), make_stride(N, Int<1>{}));
    Tensor cMN = make_identity_tensor(make_shape(M, N));
    Tensor tCsA = thr.partition_A(sA);                // (MMA, MMA_M, MMA_K, S)
    Tensor tCsB = thr.partition_B(sB);                // (MMA, MMA_N, MMA_K, S)
    Tensor tCrA = thr.make_fragment_A(tCsA);          // shared-memory descriptors
    Tensor tCrB = thr.make_fragment_B(tCsB);
    Tensor acc = partition_fragment_C(mma, Shape<Int<BM>, Int<BN>>{});   // f32 registers
    auto release = [&](int j) {   // stage of k tile j: free in every block of the cluster
        if (lane == 0)
            for (int r = 0; r < CLUSTER; ++r)
                Empty::arrive(&sh.empty[j % STAGES], r, 1);
    };

    int it = 0;
    for (int c = first_c; c < end_c; c += step_c) {
        auto blk = tile_of(c);
        const int tile_m = get<0>(blk), tile_n = get<1>(blk);
        clear(acc);
        for (int kt = 0; kt < ktiles; ++kt, ++it) {
            const int s = it % STAGES;
            Full::wait(&sh.full[s], (it / STAGES) & 1);
            warpgroup_fence_operand(acc);
            warpgroup_arrive();
            gemm(mma, tCrA(_, _, _, s), tCrB(_, _, _, s), acc);
            warpgroup_commit_batch();
            warpgroup_wait<1>();                      // k tile it-1's WGMMAs are done
            warpgroup_fence_operand(acc);
            if (kt > 0)
                release(it - 1);
        }
        warpgroup_wait<0>();
        warpgroup_fence_operand(acc);
        if (ktiles > 0)
            release(it - 1);

        // epilogue: registers -> C. Accumulator values 2i and 2i+1 are columns n and n+1
        // of one row (the WGMMA D layout), so an interior tile stores float2s (N is even).
        Tensor tCgC = thr.partition_C(local_tile(mC, Tiler{}, blk, Step<_1, _1, X>{}));
        Tensor tCcC = thr.partition_C(local_tile(cMN, Tiler{}, blk, Step<_1, _1, X>{}));
        if ((tile_m + 1) * BM <= M && (tile_n + 1) * BN <= N) {
            CUTE_UNROLL
            for (int i = 0; i < size(acc); i += 2) {
                const int m = get<0>(tCcC(i)), n = get<1>(tCcC(i));
                *reinterpret_cast<float2 *>(C + (long long)m * N + n) =
                    make_float2(acc(i), acc(i + 1));
            }
        } else {
            CUTE_UNROLL
            for (int i = 0; i < size(acc); ++i)
                if (elem_less(tCcC(i), make_coord(M, N)))
                    tCgC(i) = acc(i);
        }
    }
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

// The TMA descriptors for one (A, B, M, N, K), built on the host (cuTensorMapEncodeTiled).
// A is seen as (M, K) with unit stride along K; B as (N, K) with unit stride along N.
auto make_tma_a(const T *A, int M, int K)
{
    Tensor g = make_tensor(make_gmem_ptr(A), make_shape(M, K), make_stride(K, Int<1>{}));
    return make_tma_atom(SM90_TMA_LOAD{}, g, SmemA{}(_, _, 0), make_shape(Int<BM>{}, Int<BK>{}));
}
auto make_tma_b(const T *B, int N, int K)
{
    Tensor g = make_tensor(make_gmem_ptr(B), make_shape(N, K), make_stride(Int<1>{}, N));
    using Op = conditional_t<CLUSTER == 1, SM90_TMA_LOAD, SM90_TMA_LOAD_MULTICAST>;
    return make_tma_atom(Op{}, g, SmemB{}(_, _, 0), make_shape(Int<BN>{}, Int<BK>{}),
                         Int<CLUSTER>{});   // each block of a cluster loads 1/CLUSTER of it
}
using TmaA = decltype(make_tma_a(nullptr, 0, 0));
using TmaB = decltype(make_tma_b(nullptr, 0, 0));

} // namespace cute_gemm

using namespace cute_gemm;

extern "C" int kopt_candidate_run(const kopt_candidate_io *io)
{
    // the descriptors of the last inputs, kept so that timed calls skip the encoding
    static struct { const void *a, *b; int m, n, k; TmaA tma_a; TmaB tma_b; } *last;
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
    if (!last)
        last = new std::remove_pointer_t<decltype(last)>{nullptr, nullptr, 0, 0, 0,
                                                          make_tma_a(A, M, K), make_tma_b(B, N, K)};
    if (last->a != A || last->b != B || last->m != M || last->n != N || last->k != K) {
        last->tma_a = make_tma_a(A, M, K), last->tma_b = make_tma_b(B, N, K);
        last->a = A, last->b = B, last->m = M, last->n = N, last->k = K;
    }
    auto kernel = gemm_tma_wgmma<TmaA, TmaB>;
    static int max_clusters;   // clusters resident at once: a persistent grid's size
    if (!max_clusters) {
        int dev = 0, sms = 0, n = 0;
        if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 SMEM_BYTES) != cudaSuccess ||
            cudaGetDevice(&dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
            return 2;
        cudaLaunchConfig_t cfg = {};
        cudaLaunchAttribute attr = {};
        attr.id = cudaLaunchAttributeClusterDimension;
        attr.val.clusterDim.x = CLUSTER, attr.val.clusterDim.y = 1, attr.val.clusterDim.z = 1;
        cfg.gridDim = dim3(sms / CLUSTER * CLUSTER), cfg.blockDim = dim3(NTHREADS);
        cfg.dynamicSmemBytes = SMEM_BYTES, cfg.attrs = &attr, cfg.numAttrs = 1;
        if (cudaOccupancyMaxActiveClusters(&n, kernel, &cfg) != cudaSuccess || n <= 0) {
            (void)cudaGetLastError();   // not fatal: assume every SM holds one block
            n = sms / CLUSTER;
        }
        max_clusters = n;
    }
    const int crows = ((M + BM - 1) / BM + CLUSTER - 1) / CLUSTER;   // clusters along M
    const int clusters = ((N + BN - 1) / BN) * crows;
    const int blocks = (PERSISTENT ? min(clusters, max_clusters) : clusters) * CLUSTER;
    kernel<<<blocks, NTHREADS, SMEM_BYTES, stream>>>(M, N, K, C, last->tma_a, last->tma_b);
    return cudaGetLastError() != cudaSuccess ? 3 : 0;
}
