/* Thresholds of the micro-tools, as named constants: a default row and rows for the
 * architectures whose limits differ (sm_80, sm_89, Hopper sm_90, Blackwell sm_100).
 * Each finding names the constant it compared against, so a reader can find it here.
 * Sources: Nsight Compute's rule thresholds and KernelPro's trigger table (see
 * docs/internals/analyze.md), adjusted where the architecture changes what they mean. */
#include "analyze_int.h"

#include <stddef.h>

/* ---- the default row ------------------------------------------------------------------ */
/* Global loads/stores: bytes used of each 32-byte sector below this: wasted transfers. */
#define KOPT_TH_SECTOR_BYTES_USED_MIN 24.0
/* Shared memory: bank conflicts as % of wavefronts (ncu SharedMemoryConflicts: 10 %). */
#define KOPT_TH_BANK_CONFLICT_PCT 10.0
/* Theoretical occupancy below this %: name the limiter (KernelPro OccupancyLimiter: 50). */
#define KOPT_TH_OCCUPANCY_THEORETICAL_PCT 50.0
/* Registers per thread above this are high (KernelPro: 96; at 96 a 64-warp SM keeps 20
 * warps, 31 % occupancy). */
#define KOPT_TH_REGISTERS_HIGH 96.0
/* Tail effect: report when the idle share of the last wave is at least this (ncu: 20 %). */
#define KOPT_TH_WAVES_TAIL_MIN_GAIN 0.20
/* A stall reason above this share of the cycles between issues (ncu CPIStall: 30 %). */
#define KOPT_TH_STALL_SHARE 0.30
/* ... and above this it is critical (KernelPro WarpStall: 60 %). */
#define KOPT_TH_STALL_SHARE_CRITICAL 0.60
/* Active threads per executed instruction, of 32, below this: divergence (ncu: 24). */
#define KOPT_TH_DIVERGENCE_THREADS 24.0
/* Instructions saved by fusing FMUL+FADD pairs, as a share of FP instructions (ncu: 0.1). */
#define KOPT_TH_UNFUSED_RATIO 0.10
/* DRAM throughput % of peak at which the kernel streams at the practical ceiling. */
#define KOPT_TH_DRAM_SATURATED_PCT 80.0
/* Both SM and memory throughput below this %: latency-bound (KernelPro case A: 50). */
#define KOPT_TH_LATENCY_BOUND_PCT 50.0
/* Host mode: a kernel shorter than this (microseconds) is small next to launch cost. */
#define KOPT_TH_SMALL_LAUNCH_US 10.0
/* Host mode: more kernel launches per call than this are many. */
#define KOPT_TH_MANY_LAUNCHES 8
/* Global sectors per request above this times the ideal: uncoalesced (KernelPro: 1.2). */
#define KOPT_TH_SECTORS_EXCESS 1.2
/* Issue slots busy per cycle below this: stalls are not hidden (ncu IssueSlot: 0.6). */
#define KOPT_TH_ISSUE_ACTIVE_LOW 0.6
/* Share of global accesses of 32 bits or less above which loads are called scalar. */
#define KOPT_TH_SCALAR_ACCESS_SHARE 0.5
/* FP64 instructions above this share of FP instructions in a non-fp64 problem. */
#define KOPT_TH_FP64_SHARE_MIN 0.01
/* Achieved occupancy this many points below theoretical: imbalance (ncu uses 10; 20 keeps
 * run-to-run noise out). */
#define KOPT_TH_ACHIEVED_OCC_GAP_PTS 20.0
/* Measured DRAM bytes above this times the problem's minimum: the kernel re-reads (and, in
 * a program, its kernels pass intermediates through memory: unfused_chain). */
#define KOPT_TH_DRAM_EXCESS_RATIO 1.25
/* Program: the GPU idle between and around its kernels above this share of the forward
 * (ours: at 30 % the host, not the GPU, sets the pace of a third of the time). */
#define KOPT_TH_HOST_GAP_SHARE 0.30
/* Program: FP32 (SIMT) library GEMMs above this share of the forward are worth moving to
 * tensor cores (ours: at 20 % the TF32 rate, 4x realized, saves 15 %). */
#define KOPT_TH_LIBRARY_GEMM_SHARE 0.20

/* ---- per-architecture values ---------------------------------------------------------- */
/* sm_89 (Ada: 48 warps/SM): at 128 registers 16 of 48 warps fit (33 %), the same share as
 * 96 registers on a 64-warp SM. */
#define KOPT_TH_REGISTERS_HIGH_SM89 128.0
/* sm_90/sm_100: warp-specialized wgmma/tcgen05 kernels run one or two consumer warpgroups
 * per SM at 168+ registers by design; occupancy_limiter judges the occupancy itself. */
#define KOPT_TH_REGISTERS_HIGH_HOPPER 128.0
/* H200: a plain copy kernel reached 80 % of ncu's DRAM peak, so 75 % is at the ceiling. */
#define KOPT_TH_DRAM_SATURATED_PCT_HOPPER 75.0

#define KOPT_TH_ROW(major, minor, regs_high, dram_sat)                                      \
    {.cc_major = major, .cc_minor = minor,                                                  \
     .sector_bytes_used_min = KOPT_TH_SECTOR_BYTES_USED_MIN,                                \
     .bank_conflict_pct = KOPT_TH_BANK_CONFLICT_PCT,                                        \
     .occupancy_theoretical_pct = KOPT_TH_OCCUPANCY_THEORETICAL_PCT,                        \
     .registers_high = regs_high, .waves_tail_min_gain = KOPT_TH_WAVES_TAIL_MIN_GAIN,       \
     .stall_share = KOPT_TH_STALL_SHARE, .divergence_threads = KOPT_TH_DIVERGENCE_THREADS,  \
     .unfused_ratio = KOPT_TH_UNFUSED_RATIO, .dram_saturated_pct = dram_sat,                \
     .latency_bound_pct = KOPT_TH_LATENCY_BOUND_PCT,                                        \
     .small_launch_us = KOPT_TH_SMALL_LAUNCH_US, .many_launches = KOPT_TH_MANY_LAUNCHES,    \
     .sectors_excess = KOPT_TH_SECTORS_EXCESS,                                              \
     .stall_share_critical = KOPT_TH_STALL_SHARE_CRITICAL,                                  \
     .issue_active_low = KOPT_TH_ISSUE_ACTIVE_LOW,                                          \
     .scalar_access_share = KOPT_TH_SCALAR_ACCESS_SHARE,                                    \
     .fp64_share_min = KOPT_TH_FP64_SHARE_MIN,                                              \
     .achieved_occupancy_gap_pts = KOPT_TH_ACHIEVED_OCC_GAP_PTS,                            \
     .dram_excess_ratio = KOPT_TH_DRAM_EXCESS_RATIO,                                        \
     .host_gap_share = KOPT_TH_HOST_GAP_SHARE,                                              \
     .library_gemm_share = KOPT_TH_LIBRARY_GEMM_SHARE}

static const kopt_thresholds rows[] = {
    KOPT_TH_ROW(0, -1, KOPT_TH_REGISTERS_HIGH, KOPT_TH_DRAM_SATURATED_PCT),     /* default */
    KOPT_TH_ROW(8, 0, KOPT_TH_REGISTERS_HIGH, KOPT_TH_DRAM_SATURATED_PCT),      /* A100 */
    KOPT_TH_ROW(8, 9, KOPT_TH_REGISTERS_HIGH_SM89, KOPT_TH_DRAM_SATURATED_PCT), /* Ada */
    KOPT_TH_ROW(9, -1, KOPT_TH_REGISTERS_HIGH_HOPPER, KOPT_TH_DRAM_SATURATED_PCT_HOPPER),
    KOPT_TH_ROW(10, -1, KOPT_TH_REGISTERS_HIGH_HOPPER, KOPT_TH_DRAM_SATURATED_PCT_HOPPER),
};

/* The row for the device: exact (major, minor), else the major's row, else the default.
 * Never NULL; a static row, not to be freed. */
const kopt_thresholds *kopt_thresholds_for(const kopt_device_info *dev)
{
    size_t n = sizeof(rows) / sizeof(rows[0]);

    if (!dev || dev->cc_major <= 0)
        return &rows[0];
    for (size_t i = 1; i < n; i++)
        if (rows[i].cc_major == dev->cc_major && rows[i].cc_minor == dev->cc_minor)
            return &rows[i];
    for (size_t i = 1; i < n; i++)
        if (rows[i].cc_major == dev->cc_major && rows[i].cc_minor < 0)
            return &rows[i];
    return &rows[0];
}
