/* Theoretical occupancy computed from a kernel's resources and the SM's limits, the way the
 * hardware allocates them (no GPU needed): registers per warp rounded up to the allocation
 * unit and split over the SM's four sub-partitions, shared memory rounded up to its
 * allocation unit plus the driver's per-block reservation, warp slots, block slots. */
#include "analyze_int.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define KOPT_WARP 32
#define KOPT_REG_ALLOC_UNIT 256         /* registers per warp are allocated in this unit */
#define KOPT_SUB_PARTITIONS 4           /* schedulers per SM, each with its register file */
#define KOPT_MAX_REGS_PER_THREAD 255
#define KOPT_REGS_PER_BLOCK 65536
#define KOPT_NO_LIMIT (1 << 30)

/* Per-architecture SM limits, used where the device info has zeros (or no device). */
typedef struct arch_limits {
    int major, minor;                   /* minor -1: any */
    int max_warps, regs_per_sm, smem_per_sm, max_blocks;
    int smem_reserved, smem_unit;       /* per-block driver reservation, allocation unit */
} arch_limits;

static const arch_limits limits[] = {
    {9, 0, 64, 65536, 233472, 32, 1024, 128},   /* H100/H200: the default */
    {7, 0, 64, 65536, 98304, 32, 0, 256},
    {7, 5, 32, 65536, 65536, 16, 0, 256},
    {8, 0, 64, 65536, 167936, 32, 1024, 128},
    {8, 6, 48, 65536, 102400, 16, 1024, 128},
    {8, 7, 48, 65536, 167936, 16, 1024, 128},
    {8, 9, 48, 65536, 102400, 24, 1024, 128},
    {10, -1, 64, 65536, 233472, 32, 1024, 128},
    {12, -1, 48, 65536, 102400, 32, 1024, 128},
};

static arch_limits limits_for(const kopt_device_info *dev)
{
    arch_limits a = limits[0];

    if (dev && dev->cc_major > 0) {
        for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++)
            if (limits[i].major == dev->cc_major &&
                (limits[i].minor < 0 || limits[i].minor == dev->cc_minor)) {
                a = limits[i];
                break;
            }
    }
    if (dev) {
        if (dev->max_threads_per_sm > 0)
            a.max_warps = dev->max_threads_per_sm / KOPT_WARP;
        if (dev->regs_per_sm > 0)
            a.regs_per_sm = dev->regs_per_sm;
        if (dev->smem_per_sm > 0)
            a.smem_per_sm = dev->smem_per_sm;
    }
    return a;
}

static int round_up(int x, int unit)
{
    return unit > 0 ? (x + unit - 1) / unit * unit : x;
}

static int blocks_by_regs(const arch_limits *a, int warps_per_block, int regs)
{
    int per_warp, per_part;

    if (regs <= 0)
        return KOPT_NO_LIMIT;
    if (regs > KOPT_MAX_REGS_PER_THREAD)
        return 0;
    per_warp = round_up(regs * KOPT_WARP, KOPT_REG_ALLOC_UNIT);
    /* The launch check assumes the block's warps spread over all sub-partitions. */
    if (per_warp * round_up(warps_per_block, KOPT_SUB_PARTITIONS) > KOPT_REGS_PER_BLOCK)
        return 0;
    per_part = (a->regs_per_sm / KOPT_SUB_PARTITIONS) / per_warp;
    return per_part * KOPT_SUB_PARTITIONS / warps_per_block;
}

static int blocks_by_smem(const arch_limits *a, int smem)
{
    int per_block = round_up(smem + a->smem_reserved, a->smem_unit);
    return per_block > 0 ? a->smem_per_sm / per_block : KOPT_NO_LIMIT;
}

kopt_status kopt_occupancy_compute(kopt_occupancy *out, kopt_ctx *ctx,
                                   const kopt_device_info *dev, int threads_per_block,
                                   int regs_per_thread, int smem_per_block)
{
    arch_limits a = limits_for(dev);
    int lim[4];
    static const char *const names[4] = {"registers", "shared memory", "warps",
                                         "block slots"};
    int best = KOPT_NO_LIMIT;

    memset(out, 0, sizeof(*out));
    if (threads_per_block <= 0 || regs_per_thread < 0 || smem_per_block < 0)
        return kopt_seterr(ctx, KOPT_E_INVALID,
                           "occupancy: threads per block %d, registers %d, shared memory %d B",
                           threads_per_block, regs_per_thread, smem_per_block);
    out->warps_per_block = (threads_per_block + KOPT_WARP - 1) / KOPT_WARP;
    lim[0] = out->blocks_by_regs = blocks_by_regs(&a, out->warps_per_block, regs_per_thread);
    lim[1] = out->blocks_by_smem = blocks_by_smem(&a, smem_per_block);
    lim[2] = out->blocks_by_warps = a.max_warps / out->warps_per_block;
    lim[3] = out->blocks_by_slots = a.max_blocks;
    for (int i = 0; i < 4; i++)
        if (lim[i] < best)
            best = lim[i];
    out->blocks = best;
    for (int i = 0; i < 4; i++) {
        size_t used = strlen(out->limiter);
        if (lim[i] != best)
            continue;
        snprintf(out->limiter + used, sizeof(out->limiter) - used, "%s%s", used ? "+" : "",
                 names[i]);
    }
    out->max_warps = a.max_warps;
    out->warps = best * out->warps_per_block;
    if (out->warps > a.max_warps)
        out->warps = a.max_warps;
    out->pct = a.max_warps > 0 ? 100.0 * out->warps / a.max_warps : 0;
    out->regs_per_sm = a.regs_per_sm;
    out->smem_per_sm = a.smem_per_sm;
    out->max_blocks_per_sm = a.max_blocks;
    return KOPT_OK;
}

int kopt_occupancy_regs_for(const kopt_device_info *dev, int threads_per_block, int blocks)
{
    arch_limits a = limits_for(dev);
    int warps = (threads_per_block + KOPT_WARP - 1) / KOPT_WARP;

    if (threads_per_block <= 0 || blocks <= 0)
        return 0;
    if (blocks_by_regs(&a, warps, KOPT_MAX_REGS_PER_THREAD) >= blocks)
        return KOPT_MAX_REGS_PER_THREAD;
    for (int r = KOPT_MAX_REGS_PER_THREAD / 8 * 8; r >= 8; r -= 8)
        if (blocks_by_regs(&a, warps, r) >= blocks)
            return r;
    return 0;
}

int kopt_occupancy_smem_for(const kopt_device_info *dev, int blocks)
{
    arch_limits a = limits_for(dev);
    int per_block, s;

    if (blocks <= 0)
        return 0;
    per_block = a.smem_per_sm / blocks;
    per_block -= per_block % (a.smem_unit > 0 ? a.smem_unit : 1);
    s = per_block - a.smem_reserved;
    if (dev && dev->max_smem_per_block_optin > 0 && s > dev->max_smem_per_block_optin)
        s = dev->max_smem_per_block_optin;
    return s > 0 ? s : 0;
}
