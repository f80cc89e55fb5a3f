/* non_vectorized_loads: a memory-bound kernel moves global data with scalar (32-bit or
 * narrower) LDG/STG where 64- or 128-bit accesses would issue 2-4x fewer instructions.
 * Reads SASS widths; the lg_throttle stall share, when measured, sizes the gain. */
#include "analyze/analyze_int.h"

/* KernelPro's vectorization advice averaged 1.16x when it hit: 1 - 1/1.16 of the time. */
#define KOPT_VECTOR_GAIN_UNMEASURED 0.14
/* Fewer global instructions than this: nothing worth vectorizing. */
#define KOPT_VECTOR_MIN_ACCESSES 2

static const char *const metrics[] = {
    "smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio",
    NULL,
};

static kopt_status one(const kopt_analysis_input *in, const kopt_kernel_view *k,
                       const kopt_thresholds *th, kopt_findings *out, kopt_ctx *ctx)
{
    const kopt_sass_counts *s = k->sass;
    int scalar, total;
    double share, lg, weight;
    int has_lg;
    kopt__fb b;

    if (!s)
        return KOPT_OK;
    scalar = s->ldg[0] + s->ldg[1] + s->ldg[2] + s->stg[0] + s->stg[1] + s->stg[2];
    total = kopt__sum(s->ldg) + kopt__sum(s->stg);
    if (total < KOPT_VECTOR_MIN_ACCESSES)
        return KOPT_OK;
    share = (double)scalar / total;
    if (share < th->scalar_access_share)
        return KOPT_OK;
    has_lg = kopt__stall_share(k, "lg_throttle", &lg);
    weight = has_lg ? lg : KOPT_VECTOR_GAIN_UNMEASURED;
    kopt__fb_init(&b, "non_vectorized_loads", kopt__kname(k),
                  "%d of %d global accesses are 32-bit or narrower", scalar, total);
    kopt__fb_evidence(&b, "scalar LDG+STG share", share, ">=", th->scalar_access_share,
                      "scalar_access_share");
    kopt__fb_text(&b, &b.seen, "SASS: LDG by width (8/16/32/64/128 bit) %d/%d/%d/%d/%d, STG "
                  "%d/%d/%d/%d/%d: %.0f%% scalar (scalar_access_share: %.0f%%).", s->ldg[0],
                  s->ldg[1], s->ldg[2], s->ldg[3], s->ldg[4], s->stg[0], s->stg[1], s->stg[2],
                  s->stg[3], s->stg[4], share * 100, th->scalar_access_share * 100);
    if (has_lg)
        kopt__fb_text(&b, &b.seen, " Warps wait on the LSU queue (lg_throttle) %.0f%% of the "
                      "time between issues.", lg * 100);
    kopt__fb_text(&b, &b.why, "Each load instruction moves 4 bytes per thread; a 128-bit load "
                  "moves 16 with one instruction, so fewer instructions sit in the load/store "
                  "queue and more bytes are in flight per warp, which is what a memory-bound "
                  "kernel needs to approach the DRAM roof.");
    if (kopt__sum(s->sts) > 0)
        kopt__fb_text(&b, &b.change, "If the kernel stages tiles of global data in shared "
                      "memory (it stores to shared memory; SASS alone cannot tell tiles from "
                      "reduction scratch), have each "
                      "thread copy 16 bytes of the tile at a time (`float4 v = "
                      "reinterpret_cast<const float4*>(&A[row * lda + col4 * 4])[0];` then one "
                      "128-bit shared store), so a 128-thread block moves a 64x32 float tile "
                      "in 4 instructions per thread instead of 16; keep the leading dimension "
                      "a multiple of 4 floats so every row start is 16-byte aligned. "
                      "Otherwise load float4 via reinterpret_cast, each thread handling 4 "
                      "consecutive elements, and store the same way.");
    else
        kopt__fb_text(&b, &b.change, "Load float4 via reinterpret_cast: `float4 v = "
                      "reinterpret_cast<const float4*>(x)[i];` (half/bf16: 8 values per "
                      "`uint4`, or `__nv_bfloat162` pairs) and store the same way, each thread "
                      "handling 4 consecutive elements (the grid shrinks 4x). The base pointer "
                      "must be 16-byte aligned; finish the last n %% 4 elements with a scalar "
                      "loop.");
    kopt__fb_text(&b, &b.how, "Scalar share (%.0f%%) times %s (%.2f).", share * 100,
                  has_lg ? "the measured lg_throttle stall share"
                         : "KOPT_VECTOR_GAIN_UNMEASURED (KernelPro's mean vectorization gain)",
                  weight);
    return kopt__fb_emit(&b, out, share * weight, has_lg ? 0.6 : 0.35, ctx);
}

const kopt_tool kopt_tool_non_vectorized_loads = {
    .name = "non_vectorized_loads",
    .summary = "scalar LDG/STG in a memory-bound kernel where 128-bit accesses would do",
    .classes = KOPT_CLASS_MEMORY | KOPT_CLASS_LATENCY | KOPT_CLASS_MIXED,
    .needs = KOPT_NEEDS_SASS,
    .metrics = metrics,
    .run_kernel = one,
};
